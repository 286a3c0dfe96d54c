//! Dedicated heads (`head = 1`): the first rank of each node is a head, the others the
//! application's ranks, whose files keep their global rank numbers. FTI 1.1's own `head-L4-io3`
//! tree (`tests/fixtures/fti/head-L4-io3`) restarts here with exact data; our runs with heads
//! checkpoint at every level, crash, lose a node and restart.

use std::path::{Path, PathBuf};

use crate::util::on_ranks;
use crate::util::trees::copy_tree;
use fti::{Config, Fti, Level, Status, Var};

const FTI_EXEC: &str = "2026-11-27_16-39-49";
const N: usize = 1 << 18;

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/fti/head-L4-io3")
}

/// The data of the trees (`util::trees::pair`).
fn data(rank: u32, k: i32) -> [(i32, Vec<i32>); 2] {
    crate::util::trees::pair(rank, k, N)
}

/// FTI's tree in `root/run`: the fixture's config and meta data, each L4 file rebuilt from the
/// head FTI wrote and the data of its formula (with the rank in `FTI_COMM_WORLD`: global rank
/// `r` is application rank `r / 2`).
fn fti_tree(root: &Path) {
    copy_tree(&fixture().join("run"), &root.join("run"));
    let l4 = root.join(format!("run/Global/{FTI_EXEC}/l4"));
    std::fs::create_dir_all(&l4).unwrap();
    for rank in [1, 3, 5, 7] {
        let name = format!("Ckpt2-Rank{rank}.fti");
        let mut bytes = std::fs::read(fixture().join(format!("file-heads/{name}.head"))).unwrap();
        for (_, v) in data(rank / 2, 2) {
            bytes.extend(v.iter().flat_map(|x| x.to_le_bytes()));
        }
        std::fs::write(l4.join(name), bytes).unwrap();
    }
}

/// The fixture's config with its directories under `root` (a restart of FTI's execution).
fn fti_config(root: &Path) -> Config {
    std::fs::copy(fixture().join("config.fti"), root.join("config.fti")).unwrap();
    fti_config_at(root)
}

/// The config at `root/config.fti`, with its directories under `root`.
fn fti_config_at(root: &Path) -> Config {
    let mut cfg = Config::from_file(&root.join("config.fti")).unwrap();
    cfg.ckpt_dir = root.join("run/Local");
    cfg.glbl_dir = root.join("run/Global");
    cfg.meta_dir = root.join("run/Meta");
    cfg.verbosity = 3;
    cfg
}

/// 8 processes, `node_size = 2`, `group_size = 4`, heads on: 4 application ranks, one group.
fn heads_config(root: &Path) -> Config {
    Config {
        head: true,
        node_size: 2,
        group_size: 4,
        local_test: true,
        ..crate::util::config(root)
    }
}

fn checkpoint(fti: &mut Fti, rank: u32, k: i32, level: Level) {
    let mut d = data(rank, k);
    let vars: Vec<Var> = d.iter_mut().map(|(id, v)| Var::slice(*id, v)).collect();
    fti.checkpoint(k, level, &vars).unwrap();
}

fn recover_and_check(fti: &mut Fti, rank: u32, k: i32) -> fti::CheckpointInfo {
    let want = data(rank, k);
    let mut got = [(1, vec![0; N]), (2, vec![0; N])];
    let mut vars: Vec<Var> = got.iter_mut().map(|(id, v)| Var::slice(*id, v)).collect();
    let info = fti.recover(&mut vars).unwrap();
    drop(vars);
    assert!(got == want, "rank {rank}: recovered data");
    info
}

/// Runs `app` on the application ranks of an 8-process run with heads (`run_with_heads`).
fn run<T: Send>(cfg: &Config, crash: bool, app: impl Fn(Fti, u32) -> T + Sync) -> Vec<Option<T>> {
    crate::util::heads::run_with_heads(8, cfg, crash, app)
}

/// FTI 1.1's head tree (heads 0, 2, 4, 6; application ranks 1, 3, 5, 7, FTI-FF, L4) restarts
/// here with exact data, each application rank reading the file of its global rank.
#[test]
fn fti_head_l4_tree_restarts_here() {
    let root = tempfile::tempdir().unwrap();
    fti_tree(root.path());
    let cfg = fti_config(root.path());
    let got = run(&cfg, false, |mut fti, rank| {
        let Status::Restart(info) = fti.status().clone() else {
            panic!("rank {rank}: not a restart");
        };
        assert_eq!((info.id, info.level), (2, Level::L4));
        assert!(info.path.ends_with(format!("Ckpt2-Rank{rank}.fti")));
        recover_and_check(&mut fti, rank / 2, 2);
        fti.finalize().unwrap();
    });
    assert_eq!(got.iter().flatten().count(), 4);
}

fn local_file(root: &Path, exec: &str, rank: u32, level: u8, name: &str) -> PathBuf {
    root.join(format!("Local/node{}/{exec}/l{level}/{name}", rank / 2))
}

/// At every level (inline, FTI's default), the application ranks checkpoint with files named by
/// their global rank; the job crashes (nobody finalizes) and restarts with the same config,
/// recovering exact data.
#[test]
fn heads_inline_levels_crash_and_restart() {
    for level in Level::ALL {
        levels_crash_and_restart(level, true);
    }
}

/// With `inline_l2 = inline_l3 = inline_l4 = 0` the heads make the partner copies, the L3
/// encoding and the L4 flushes while the application computes; a crash leaves checkpoints that
/// restart with exact data.
#[test]
fn heads_post_process_l2_to_l4_crash_and_restart() {
    for level in [Level::L2, Level::L3, Level::L4] {
        levels_crash_and_restart(level, false);
    }
}

fn levels_crash_and_restart(level: Level, inline: bool) {
    {
        let root = tempfile::tempdir().unwrap();
        let cfg = Config {
            inline_l2: inline,
            inline_l3: inline,
            inline_l4: inline,
            ..heads_config(root.path())
        };
        let execs = run(&cfg, true, |mut fti, rank| {
            checkpoint(&mut fti, rank, 1, level);
            checkpoint(&mut fti, rank, 2, level);
            let exec = fti.exec_id().to_owned();
            drop(fti);
            exec
        });
        let exec = execs.into_iter().flatten().next().unwrap();
        let n = level.number();
        for rank in [1, 3, 5, 7] {
            let own = match level {
                Level::L4 => root
                    .path()
                    .join(format!("Global/{exec}/l4/Ckpt2-Rank{rank}.fti")),
                _ => local_file(
                    root.path(),
                    &exec,
                    rank,
                    n,
                    &format!("Ckpt2-Rank{rank}.fti"),
                ),
            };
            assert!(own.is_file(), "{level:?}: {}", own.display());
        }
        for head in [0, 2, 4, 6] {
            let none = local_file(
                root.path(),
                &exec,
                head,
                n,
                &format!("Ckpt2-Rank{head}.fti"),
            );
            assert!(!none.exists(), "{level:?}: a head has no file");
        }
        if level == Level::L2 {
            let copy = local_file(root.path(), &exec, 3, 2, "Ckpt2-Pcof3.fti");
            assert!(copy.is_file(), "rank 3 keeps rank 1's copy");
        }
        if level == Level::L3 {
            for rank in [1, 3, 5, 7] {
                let rsed = local_file(
                    root.path(),
                    &exec,
                    rank,
                    3,
                    &format!("Ckpt2-RSed{rank}.fti"),
                );
                assert!(rsed.is_file(), "{}", rsed.display());
            }
        }
        restart_and_check(&cfg, level);
    }
}

/// Restarts with `cfg`, recovering checkpoint 2 with exact data from `level` (also an L4
/// checkpoint written at L1 and flushed, `inline_l4 = 0`, whose L1 files the flush retired as
/// FTI's `FTI_Clean(4)` does), then checkpoints again and finalizes.
fn restart_and_check(cfg: &Config, level: Level) {
    let found = level;
    run(cfg, false, |mut fti, rank| {
        assert!(
            matches!(fti.status(), Status::Restart(_)),
            "{level:?}: rank {rank} restarts"
        );
        let info = recover_and_check(&mut fti, rank, 2);
        assert_eq!((info.id, info.level), (2, found));
        checkpoint(&mut fti, rank, 3, level);
        fti.finalize().unwrap();
    });
}

/// With heads, a node's files lost after an L2 or L3 checkpoint come back from the other nodes
/// (partners and encoding groups are the application ranks at the same position across nodes).
#[test]
fn heads_node_lost_at_l2_and_l3() {
    for level in [Level::L2, Level::L3] {
        for inline in [true, false] {
            node_lost(level, inline);
        }
    }
}

fn node_lost(level: Level, inline: bool) {
    {
        let root = tempfile::tempdir().unwrap();
        let cfg = Config {
            inline_l2: inline,
            inline_l3: inline,
            ..heads_config(root.path())
        };
        run(&cfg, true, |mut fti, rank| {
            checkpoint(&mut fti, rank, 2, level);
            drop(fti);
        });
        std::fs::remove_dir_all(root.path().join("Local/node1")).unwrap();
        restart_and_check(&cfg, level);
    }
}

/// What heads do not do yet is refused at init with a message naming it.
#[test]
fn heads_refuse_what_they_do_not_do() {
    let root = tempfile::tempdir().unwrap();
    for (what, cfg) in [
        (
            "node_size >= 2",
            Config {
                node_size: 1,
                ..heads_config(root.path())
            },
        ),
        (
            "full nodes",
            Config {
                inline_l4: false,
                node_size: 3,
                ..heads_config(root.path())
            },
        ),
        (
            "async_ckpt",
            Config {
                async_ckpt: true,
                ..heads_config(root.path())
            },
        ),
    ] {
        let said = on_ranks(8, |comm| match Fti::init_with(cfg.clone(), comm) {
            Ok(_) => panic!("{what}: accepted"),
            Err(e) => e.to_string(),
        });
        assert!(said.iter().all(|s| s.contains(what)), "{what}: {said:?}");
    }
    let alone = Fti::init(heads_config(root.path()))
        .err()
        .unwrap()
        .to_string();
    assert!(alone.contains("several processes"), "{alone}");
}

/// Our tree with heads, from FTI's config and data, is FTI's `head-L4-io3`: the same files
/// (named by global rank), `Topology.fti` byte for byte, the L4 files but for what FTI-FF
/// never reproduces (checksums of the file block, timestamp, padding).
#[test]
fn head_l4_tree_is_ftis() {
    let ours = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(fixture().join("config.fti"))
        .unwrap()
        .replace("failure                        = 1", "failure = 0")
        .replace(&format!("= {FTI_EXEC}"), "=");
    std::fs::write(ours.path().join("config.fti"), text).unwrap();
    let mut cfg = fti_config_at(ours.path());
    cfg.failure = Some(0);
    let execs = run(&cfg, true, |mut fti, rank| {
        checkpoint(&mut fti, rank / 2, 1, Level::L4);
        checkpoint(&mut fti, rank / 2, 2, Level::L4);
        fti.exec_id().to_owned()
    });
    let theirs = tempfile::tempdir().unwrap();
    fti_tree(theirs.path());
    let exec = execs.into_iter().flatten().next().unwrap();
    let ours = crate::util::trees::tree(&ours.path().join("run"), &exec);
    let theirs = crate::util::trees::tree(&theirs.path().join("run"), FTI_EXEC);
    assert_eq!(
        ours.keys().collect::<Vec<_>>(),
        theirs.keys().collect::<Vec<_>>()
    );
    for (name, bytes) in &theirs {
        if name.ends_with("Topology.fti") {
            assert!(&ours[name] == bytes, "{name} differs");
        } else {
            crate::util::trees::assert_same_but_unreproducible(name, &ours[name], bytes);
        }
    }
}

/// A head whose work fails (here its L4 flush: the global `l4` is a file) says so to its
/// application rank at the next call that waits for it, which fails with the head's error;
/// the checkpoint stays recoverable from the L1 files.
#[test]
fn a_head_s_failure_is_returned_by_the_next_checkpoint() {
    let root = tempfile::tempdir().unwrap();
    let cfg = Config {
        inline_l4: false,
        ..heads_config(root.path())
    };
    let global = root.path().join("Global");
    let said = run(&cfg, false, |mut fti, rank| {
        if fti.comm().rank() == 0 {
            let l4 = global.join(fti.exec_id()).join("l4");
            let _ = std::fs::remove_dir_all(&l4);
            std::fs::create_dir_all(l4.parent().unwrap()).unwrap();
            std::fs::write(&l4, b"not a directory").unwrap();
        }
        fti.comm().barrier();
        checkpoint(&mut fti, rank, 1, Level::L4);
        let mut d = data(rank, 2);
        let vars: Vec<Var> = d.iter_mut().map(|(id, v)| Var::slice(*id, v)).collect();
        let err = fti.checkpoint(2, Level::L1, &vars).unwrap_err().to_string();
        drop(vars);
        fti.finalize().unwrap();
        err
    });
    let said: Vec<String> = said.into_iter().flatten().collect();
    assert_eq!(said.len(), 4);
    for err in said {
        assert!(err.contains("post-processing by the head"), "{err}");
    }
}

/// FTI 1.1's own tree with heads at L2 (`tests/fixtures/fti/head-L2-io3`: FTI-FF, written by
/// FTI running `crash.c` on 8 processes) loses node 1, application rank 3's file and its copy
/// of rank 1's: every application rank recovers checkpoint 3 with exact data (rank 3 from the
/// copy rank 5 holds), and the restart makes node 1's two files again, byte for byte FTI's.
#[test]
fn fti_head_l2_tree_restarts_after_losing_a_node() {
    const EXEC: &str = "2026-11-28_00-14-48";
    let fixture = fixture().join("../head-L2-io3");
    let root = tempfile::tempdir().unwrap();
    let root = root.path();
    for dir in ["Local", "Meta"] {
        copy_tree(&fixture.join(dir), &root.join("run").join(dir));
    }
    std::fs::copy(fixture.join("config.fti"), root.join("config.fti")).unwrap();
    let node1 = root.join("run/Local/node1");
    std::fs::remove_dir_all(&node1).unwrap();
    let cfg = fti_config_at(root);
    // crash.c's data: the step, `n = 1000 + 37 r` doubles `r*1e6 + s*1e3 + i*0.5`, and
    // (r, s, n), with `r` the rank in FTI_COMM_WORLD. Nobody finalizes (`crash`), so that the
    // files stay for the check below.
    let got = run(&cfg, true, |mut fti, world| {
        let Status::Restart(info) = fti.status().clone() else {
            panic!("rank {world}: not a restart");
        };
        assert_eq!((info.id, info.level), (3, Level::L2), "rank {world}");
        let r = world / 2;
        let n = 1000 + 37 * r as usize;
        let mut step = [0i32];
        let mut data = vec![0f64; n];
        let mut meta = [0i64; 3];
        fti.recover(&mut [
            Var::slice(0, &mut step),
            Var::slice(1, &mut data),
            Var::slice(2, &mut meta),
        ])
        .unwrap();
        let want: Vec<f64> = (0..n)
            .map(|i| f64::from(r) * 1e6 + 3e3 + i as f64 * 0.5)
            .collect();
        assert_eq!(step, [3], "rank {world}: step");
        assert!(data == want, "rank {world}: data");
        assert_eq!(meta, [i64::from(r), 3, n as i64], "rank {world}: meta");
    });
    assert_eq!(got.iter().flatten().count(), 4);
    for name in ["Ckpt3-Rank3.fti", "Ckpt3-Pcof3.fti"] {
        let rel = format!("{EXEC}/l2/{name}");
        let made = std::fs::read(node1.join(&rel))
            .unwrap_or_else(|e| panic!("node1/{rel} not made again: {e}"));
        let fti_wrote = std::fs::read(fixture.join("Local/node1").join(&rel)).unwrap();
        assert!(made == fti_wrote, "{rel}: not FTI's bytes");
    }
}
