//! Dedicated heads post-processing POSIX (`ckpt_io = 1`) and MPI-IO (`ckpt_io = 2`) files with
//! `inline_l2 = inline_l3 = inline_l4 = 0`, as FTI 1.1's `configH1I0.fti`: two nodes of four
//! processes, a head and three application ranks each, groups of two nodes. The application
//! ranks write their files and the group meta data (`FTI_CreateMetadata`, `src/meta.c`); the
//! heads make the partner copies, the encoding (adding `rsed_checksum` to the meta data,
//! `FTI_WriteRSedChecksum`) and the L4 flush (`FTI_FlushPosix`, or `FTI_FlushMPI` into one
//! shared file, `src/postckpt.c`).

use std::collections::BTreeMap;
use std::path::Path;

use fti::{Config, Fti, IoMode, Level, Status, Var};

const N: usize = 1 << 14;
/// The application ranks by global rank: heads are 0 and 4.
const APPS: [u32; 6] = [1, 2, 3, 5, 6, 7];
/// A rank's file: two variables of `N` `i32`.
const FILE_SIZE: u64 = 2 * N as u64 * 4;

fn data(rank: u32, k: i32) -> [(i32, Vec<i32>); 2] {
    crate::util::trees::pair(rank, k, N)
}

/// 8 processes, `node_size = 4`, `group_size = 2`, heads on, every level post-processed by
/// the heads.
fn config(root: &Path, io: IoMode) -> Config {
    Config {
        head: true,
        node_size: 4,
        group_size: 2,
        local_test: true,
        inline_l2: false,
        inline_l3: false,
        inline_l4: false,
        io,
        ..crate::util::config(root)
    }
}

fn checkpoint(fti: &mut Fti, rank: u32, k: i32, level: Level) {
    let mut d = data(rank, k);
    let vars: Vec<Var> = d.iter_mut().map(|(id, v)| Var::slice(*id, v)).collect();
    fti.checkpoint(k, level, &vars).unwrap();
}

/// Runs `app` on the application ranks (by global rank) of an 8-process run; the heads serve
/// until the application finalizes or, when `crash`, until an application rank is gone.
fn run<T: Send>(cfg: &Config, crash: bool, app: impl Fn(Fti, u32) -> T + Sync) -> Vec<T> {
    run_on(8, cfg, crash, app)
}

/// [`run`] on `n` processes (nodes of 4).
fn run_on<T: Send>(
    n: u32,
    cfg: &Config,
    crash: bool,
    app: impl Fn(Fti, u32) -> T + Sync,
) -> Vec<T> {
    let got = crate::util::heads::run_with_heads(n, cfg, crash, app);
    got.into_iter().flatten().collect()
}

/// Restarts with `cfg`: every application rank recovers checkpoint 2 from `found` with exact
/// data, checkpoints once more at `level` and finalizes.
fn restart_and_check(cfg: &Config, found: Level, level: Level) {
    run(cfg, false, |mut fti, rank| {
        assert!(
            matches!(fti.status(), Status::Restart(_)),
            "rank {rank}: {:?}",
            fti.skipped()
        );
        let want = data(rank, 2);
        let mut got = [(1, vec![0; N]), (2, vec![0; N])];
        let mut vars: Vec<Var> = got.iter_mut().map(|(id, v)| Var::slice(*id, v)).collect();
        let info = fti.recover(&mut vars).unwrap();
        drop(vars);
        assert!(got == want, "rank {rank}: recovered data");
        assert_eq!((info.id, info.level), (2, found), "rank {rank}");
        checkpoint(&mut fti, rank, 3, level);
        fti.finalize().unwrap();
    });
}

/// A crashed run's checkpoints 1 and 2 at `level`; returns the execution id.
fn crashed_run(cfg: &Config, level: Level) -> String {
    let execs = run(cfg, true, |mut fti, rank| {
        checkpoint(&mut fti, rank, 1, level);
        checkpoint(&mut fti, rank, 2, level);
        fti.exec_id().to_owned()
    });
    execs[0].clone()
}

/// The sections of an iniparser dump, each with its keys in order.
fn sections(text: &str) -> BTreeMap<String, Vec<(String, String)>> {
    let mut out: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    let mut current = String::new();
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            current = name.to_owned();
            out.entry(current.clone()).or_default();
        } else if let Some((k, v)) = line.split_once('=') {
            let keys = out.entry(current.clone()).or_default();
            keys.push((k.trim().to_owned(), v.trim().to_owned()));
        }
    }
    out
}

/// The group meta data of checkpoint 2 at `level`: one file per group, `sector0-group<g>.fti`
/// for the ranks at position `p` of both nodes, numbered by their position in the node with
/// the head counted (`g = p + 1`: FTI's `groupID = posInNode`, `FTI_Topology`, `src/topo.c`), a section per group rank with the keys of
/// `FTI_WriteMetadata` (`src/meta.c`, lowercased by iniparser) and at L3 `rsed_checksum`
/// (`FTI_WriteRSedChecksum`). No previous meta data is left once the checkpoint is retired.
fn check_meta(meta: &Path, level: Level) {
    let dir = meta.join(format!("l{}", level.number()));
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let want: Vec<String> = (0..3)
        .map(|p| format!("sector0-group{}.fti", p + 1))
        .collect();
    assert_eq!(names, want, "{}", dir.display());
    for p in 0..3u32 {
        let text = std::fs::read_to_string(dir.join(&want[p as usize])).unwrap();
        let all = sections(&text);
        for (g, rank) in [(0, 1 + p), (1, 5 + p)] {
            let keys = &all[&g.to_string()];
            let mut expected = vec![
                ("ckpt_file_name", format!("Ckpt2-Rank{rank}.fti")),
                ("ckpt_file_size", FILE_SIZE.to_string()),
                ("ckpt_file_maxs", FILE_SIZE.to_string()),
                ("ckpt_checksum", String::new()),
                ("var0_id", "1".into()),
                ("var0_size", (N * 4).to_string()),
                ("var1_id", "2".into()),
                ("var1_size", (N * 4).to_string()),
            ];
            if level == Level::L3 {
                expected.push(("rsed_checksum", String::new()));
            }
            let got: Vec<&str> = keys.iter().map(|(k, _)| k.as_str()).collect();
            let want_keys: Vec<&str> = expected.iter().map(|(k, _)| *k).collect();
            assert_eq!(got, want_keys, "{level:?} group {p} section {g}");
            for ((_, v), (k, want)) in keys.iter().zip(&expected) {
                if k.ends_with("checksum") {
                    assert!(
                        v.len() == 32 && v.bytes().all(|b| b.is_ascii_hexdigit()),
                        "{k}"
                    );
                } else {
                    assert_eq!(v, want, "{level:?} group {p} section {g}: {k}");
                }
            }
        }
    }
}

/// The files of checkpoint 2 at `level` are FTI's: the ranks' files in their node's `l<K>/`,
/// the partner copies (`Ckpt<id>-Pcof<r>.fti`, `FTI_Ptner`) or encoded files
/// (`Ckpt<id>-RSed<r>.fti`, `FTI_RSenc`), at L4 the ranks' files in the global `l4/` (POSIX,
/// `FTI_FlushPosix`) or one `Ckpt<id>-mpiio.fti` (MPI-IO, `FTI_FlushMPI`); heads have none.
fn check_tree(root: &Path, exec: &str, io: IoMode, level: Level) {
    // An L4 checkpoint is written at L1 and flushed (inline_l4 = 0); once flushed, its L1
    // files are retired with the lower levels' (FTI_PostCkpt's FTI_Clean(4), src/checkpoint.c).
    let n = match level {
        Level::L4 => 1,
        _ => level.number(),
    };
    let local =
        |rank: u32, name: String| root.join(format!("Local/node{}/{exec}/l{n}/{name}", rank / 4));
    let l4 = root.join(format!("Global/{exec}/l4"));
    for rank in APPS {
        let own = local(rank, format!("Ckpt2-Rank{rank}.fti"));
        assert_eq!(
            own.is_file(),
            level != Level::L4,
            "{io:?} {level:?}: {}",
            own.display()
        );
        let copy = match level {
            Level::L2 => Some(format!("Ckpt2-Pcof{rank}.fti")),
            Level::L3 => Some(format!("Ckpt2-RSed{rank}.fti")),
            _ => None,
        };
        if let Some(copy) = copy {
            let copy = local(rank, copy);
            assert!(copy.is_file(), "{io:?} {level:?}: {}", copy.display());
        }
        for old in ["Rank", "Pcof", "RSed"] {
            let old = local(rank, format!("Ckpt1-{old}{rank}.fti"));
            assert!(!old.exists(), "retired: {}", old.display());
        }
    }
    for head in [0, 4] {
        assert!(!local(head, format!("Ckpt2-Rank{head}.fti")).exists());
    }
    if level == Level::L4 {
        let mut names: Vec<String> = std::fs::read_dir(&l4)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        let want: Vec<String> = match io {
            IoMode::MpiIo => vec!["Ckpt2-mpiio.fti".into()],
            _ => APPS.iter().map(|r| format!("Ckpt2-Rank{r}.fti")).collect(),
        };
        assert_eq!(names, want, "{io:?}");
        let total: u64 = names
            .iter()
            .map(|f| std::fs::metadata(l4.join(f)).unwrap().len())
            .sum();
        assert_eq!(total, FILE_SIZE * 6, "{io:?}: the ranks' bytes");
    }
    let meta = root.join(format!("Meta/{exec}"));
    check_meta(&meta, level);
    let kept = crate::util::trees::tree(&root.join("Meta"), exec);
    assert!(
        kept.keys().all(|k| !k.ends_with(".prev")),
        "{io:?} {level:?}: {:?}",
        kept.keys().collect::<Vec<_>>()
    );
}

/// POSIX and MPI-IO, L2 to L4, every level post-processed by the heads: the tree and its meta
/// data are FTI's, and a crashed run restarts with exact data (an L4 checkpoint from the
/// global files: its L1 files are retired once flushed, as FTI's `FTI_Clean(4)` does).
#[test]
fn heads_post_process_posix_and_mpiio_files() {
    for io in [IoMode::Posix, IoMode::MpiIo] {
        for level in [Level::L2, Level::L3, Level::L4] {
            let root = tempfile::tempdir().unwrap();
            let cfg = config(root.path(), io);
            let exec = crashed_run(&cfg, level);
            check_tree(root.path(), &exec, io, level);
            restart_and_check(&cfg, level, level);
        }
    }
}

/// POSIX and MPI-IO: a node's files lost after an L2 or L3 checkpoint post-processed by the
/// heads come back from the other node's (partners and groups span the nodes).
#[test]
fn heads_posix_node_lost_at_l2_and_l3() {
    for io in [IoMode::Posix, IoMode::MpiIo] {
        for level in [Level::L2, Level::L3] {
            let root = tempfile::tempdir().unwrap();
            let cfg = config(root.path(), io);
            crashed_run(&cfg, level);
            std::fs::remove_dir_all(root.path().join("Local/node1")).unwrap();
            restart_and_check(&cfg, level, level);
        }
    }
}

/// FTI 1.1's own `test/configs/configH1I0.fti` (heads, `node_size = 4`, `group_size = 4`,
/// `inline_lK = 0`, POSIX, `keep_last_ckpt = 1`, `local_test = 1`), and the same with MPI-IO,
/// runs unchanged on 16 processes: a checkpoint at each level, a crash, a restart of that
/// execution (`failure = 1`) with exact data, and the last checkpoint kept in `l4/` at finalize.
#[test]
fn fti_config_h1i0_runs_on_sixteen_processes() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/fti/configs/configH1I0.fti");
    for (io, kept) in [("1", "Ckpt5-Rank15.fti"), ("2", "Ckpt5-mpiio.fti")] {
        let root = tempfile::tempdir().unwrap();
        let text = std::fs::read_to_string(&fixture)
            .unwrap()
            .replace("./", &format!("{}/", root.path().display()))
            .replace("Ckpt_io = 1", &format!("Ckpt_io = {io}"));
        let path = root.path().join("config.fti");
        std::fs::write(&path, text).unwrap();
        let mut cfg = Config::from_file(&path).unwrap();
        cfg.verbosity = 3;
        let levels = [Level::L1, Level::L2, Level::L3, Level::L4];
        let execs = run_on(16, &cfg, true, |mut fti, rank| {
            for (k, level) in (1..).zip(levels) {
                checkpoint(&mut fti, rank, k, level);
            }
            fti.exec_id().to_owned()
        });
        cfg.failure = Some(1);
        cfg.exec_id = Some(execs[0].clone());
        run_on(16, &cfg, false, |mut fti, rank| {
            let want = data(rank, 4);
            let mut got = [(1, vec![0; N]), (2, vec![0; N])];
            let mut vars: Vec<Var> = got.iter_mut().map(|(id, v)| Var::slice(*id, v)).collect();
            let info = fti.recover(&mut vars).unwrap();
            drop(vars);
            assert!(got == want, "ckpt_io = {io}, rank {rank}: recovered data");
            // Written at L1 and flushed (inline_l4 = 0), its L1 files then retired as FTI does:
            // recovered from L4, as FTI's L4Clean4_H1I0 pattern says.
            assert_eq!((info.id, info.level), (4, Level::L4), "rank {rank}");
            checkpoint(&mut fti, rank, 5, Level::L2);
            fti.finalize().unwrap();
        });
        let l4 = root.path().join(format!("Global/{}/l4/{kept}", execs[0]));
        assert!(l4.is_file(), "ckpt_io = {io}: {}", l4.display());
    }
}

/// MPI-IO with heads and `inline_l4 = 1`: the application ranks write the shared L4 file
/// themselves (`FTI_WriteMPI`); a restart with the nodes' files gone reads each rank's part at
/// the sum of the lower application ranks' sizes, although files name ranks among all
/// processes (`FTI_RecoverL4Mpi`, `src/postreco.c`).
#[test]
fn heads_inline_mpiio_l4_restarts_from_the_shared_file() {
    let root = tempfile::tempdir().unwrap();
    let cfg = Config {
        inline_l4: true,
        ..config(root.path(), IoMode::MpiIo)
    };
    let exec = crashed_run(&cfg, Level::L4);
    let shared = root
        .path()
        .join(format!("Global/{exec}/l4/Ckpt2-mpiio.fti"));
    assert_eq!(std::fs::metadata(&shared).unwrap().len(), FILE_SIZE * 6);
    // Nothing but the global files is left to restart from.
    let local = root.path().join("Local");
    if local.exists() {
        std::fs::remove_dir_all(local).unwrap();
    }
    restart_and_check(&cfg, Level::L4, Level::L4);
}
