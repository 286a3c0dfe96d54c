//! FTI's POSIX I/O mode (`ckpt_io = 1`): raw data files and the sector meta-data files, against
//! FTI 1.1's own `posix-L1` tree (`tests/fixtures/fti/posix-L1`, whose data files are written
//! here from their formula and checked against FTI's recorded MD5s), and at L2-L4 as FTI 1.1's
//! code lays them out.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::util::on_ranks;
use crate::util::trees::{copy_tree, tree};
use fti::{Config, Fti, Level, Status, Var};

const FTI_EXEC: &str = "2026-11-27_16-39-21";
const N: usize = 1 << 18;

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/fti/posix-L1")
}

/// The data of the trees (`util::trees::pair`).
fn data(rank: u32, k: i32) -> [(i32, Vec<i32>); 2] {
    crate::util::trees::pair(rank, k, N)
}

/// A POSIX data file: the variables' bytes in protect order.
fn raw_file(rank: u32, k: i32) -> Vec<u8> {
    data(rank, k)
        .iter()
        .flat_map(|(_, v)| v.iter().flat_map(|x| x.to_le_bytes()))
        .collect()
}

fn local_file(root: &Path, exec: &str, rank: u32, level: u8, k: i32) -> PathBuf {
    root.join(format!(
        "run/Local/node{rank}/{exec}/l{level}/Ckpt{k}-Rank{rank}.fti"
    ))
}

/// FTI's tree in `root/run`: the fixture's config and meta data, the data files written from
/// their formula (each checked against the MD5 FTI recorded for it).
fn fti_tree(root: &Path) {
    copy_tree(&fixture().join("run"), &root.join("run"));
    std::fs::copy(fixture().join("config.fti"), root.join("config.fti")).unwrap();
    let meta =
        std::fs::read_to_string(root.join(format!("run/Meta/{FTI_EXEC}/l1/sector0-group0.fti")))
            .unwrap();
    for rank in 0..4 {
        let path = local_file(root, FTI_EXEC, rank, 1, 2);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let bytes = raw_file(rank, 2);
        let md5 = ftiff::hash::to_hex(&ftiff::hash::md5(&bytes));
        assert!(
            meta.contains(&md5),
            "rank {rank}: the formula gives FTI's file"
        );
        std::fs::write(path, bytes).unwrap();
    }
}

/// The fixture's config with its directories under `root`; a restart of FTI's execution with
/// `restart`, else a fresh run. Read once per run: the runtime records the restart in it.
fn config(root: &Path, restart: bool) -> Config {
    let text = std::fs::read_to_string(fixture().join("config.fti")).unwrap();
    let text = if restart {
        text
    } else {
        text.replace("failure                        = 1", "failure = 0")
            .replace(&format!("= {FTI_EXEC}"), "=")
    };
    let path = root.join("config.fti");
    std::fs::write(&path, text).unwrap();
    let mut cfg = Config::from_file(&path).unwrap();
    cfg.ckpt_dir = root.join("run/Local");
    cfg.glbl_dir = root.join("run/Global");
    cfg.meta_dir = root.join("run/Meta");
    cfg.verbosity = 3;
    cfg
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

/// FTI 1.1's POSIX L1 tree restarts here with exact data (`FTI_LoadMeta` in `src/meta.c`
/// reads section `[<group rank>]` of `Meta/<exec_id>/l1/sector<s>-group<g>.fti`; the file is
/// checked against `ckpt_checksum`), and one variable alone comes back too (`FTI_RecoverVar`).
#[test]
fn fti_posix_l1_tree_restarts_here() {
    let root = tempfile::tempdir().unwrap();
    fti_tree(root.path());
    let cfg = config(root.path(), true);
    on_ranks(4, |comm| {
        let rank = comm.rank();
        let mut fti = Fti::init_with(cfg.clone(), comm).unwrap();
        let Status::Restart(info) = fti.status().clone() else {
            panic!("rank {rank}: not a restart");
        };
        assert_eq!(fti.stored_size(2), Some(4 * N as u64));
        // What the C API sizes its scratch buffers and roll-back checks from.
        let sizes: Vec<(i32, u64)> = fti
            .stored_vars(&info)
            .unwrap()
            .iter()
            .map(|v| (v.id, v.size))
            .collect();
        assert_eq!(sizes, [(1, 4 * N as u64), (2, 4 * N as u64)]);
        let mut b = vec![0i32; N];
        fti.recover_var(&mut Var::slice(2, &mut b)).unwrap();
        assert!(b == data(rank, 2)[1].1, "rank {rank}: variable 2 alone");
        let info = recover_and_check(&mut fti, rank, 2);
        assert_eq!(
            (info.id, info.level, info.size),
            (2, Level::L1, 8 * N as u64)
        );
    });
}

/// Restarts FTI's execution in `root` on 4 ranks, each of which must start fresh; returns what
/// each said of the checkpoints it skipped.
fn restart_starts_fresh(root: &Path) -> Vec<String> {
    let cfg = config(root, true);
    on_ranks(4, |comm| {
        let fti = Fti::init_with(cfg.clone(), comm).unwrap();
        assert_eq!(fti.status(), &Status::Fresh);
        fti.skipped()
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\n")
    })
}

/// A data file whose bytes no longer match FTI's `ckpt_checksum` is refused, naming the file
/// and the checksum: with L1 only there is nothing else, so the run starts fresh.
#[test]
fn posix_file_not_matching_its_checksum_is_refused() {
    let root = tempfile::tempdir().unwrap();
    fti_tree(root.path());
    let victim = local_file(root.path(), FTI_EXEC, 2, 1, 2);
    let mut bytes = std::fs::read(&victim).unwrap();
    bytes[12345] ^= 1;
    std::fs::write(&victim, bytes).unwrap();
    let said = restart_starts_fresh(root.path());
    assert!(
        said[2].contains("Ckpt2-Rank2.fti") && said[2].contains("ckpt_checksum"),
        "{}",
        said[2]
    );
}

/// FTI 1.1's POSIX L1 tree after node 1's files are erased: L1 has no redundancy, so no rank
/// recovers (FTI's restart cannot either: "Cannot recover from any checkpoint level."); every
/// rank starts fresh, saying which rank's file is missing, and none is left half recovered.
#[test]
fn posix_l1_tree_without_a_node_starts_fresh_on_every_rank() {
    let root = tempfile::tempdir().unwrap();
    fti_tree(root.path());
    let node1 = root.path().join("run/Local/node1");
    assert!(node1.is_dir());
    std::fs::remove_dir_all(&node1).unwrap();
    let said = restart_starts_fresh(root.path());
    for (rank, said) in said.iter().enumerate() {
        assert!(
            said.contains("checkpoint 2 at L1 skipped: no usable file for rank(s) [1]"),
            "rank {rank}: {said}"
        );
    }
}

/// The files of every level of a tree, by relative path (exec id as `EXEC`).
fn level_files(root: &Path, exec: &str) -> BTreeMap<String, Vec<u8>> {
    tree(&root.join("run"), exec)
}

/// Our POSIX L1 tree, from the same config and data, is FTI's: the same files, the data files,
/// `Topology.fti` and the sector meta-data file byte for byte (`FTI_CreateTopoFile` in
/// `src/topo.c`: the config without `[basic]`, `[restart]`, `[advanced]`, then `[topology]`;
/// `FTI_WriteMetadata` in `src/meta.c`: that without `[topology]`, then one section per group
/// rank; both dumped as iniparser does).
#[test]
fn posix_l1_tree_is_ftis() {
    let ours = tempfile::tempdir().unwrap();
    let cfg = config(ours.path(), false);
    let execs = on_ranks(4, |comm| {
        let rank = comm.rank();
        let mut fti = Fti::init_with(cfg.clone(), comm).unwrap();
        checkpoint(&mut fti, rank, 1, Level::L1);
        checkpoint(&mut fti, rank, 2, Level::L1);
        fti.exec_id().to_owned()
    });
    let theirs = tempfile::tempdir().unwrap();
    fti_tree(theirs.path());
    let (ours, theirs) = (
        level_files(ours.path(), &execs[0]),
        level_files(theirs.path(), FTI_EXEC),
    );
    assert_eq!(
        ours.keys().collect::<Vec<_>>(),
        theirs.keys().collect::<Vec<_>>()
    );
    for (name, bytes) in &theirs {
        assert!(&ours[name] == bytes, "{name} differs");
    }
}

/// A run's POSIX config in code: 4 ranks in one group, directories under `root/run`.
fn code_config(root: &Path, restart: Option<&str>) -> Config {
    Config {
        ckpt_dir: root.join("run/Local"),
        glbl_dir: root.join("run/Global"),
        meta_dir: root.join("run/Meta"),
        io: fti::IoMode::Posix,
        group_size: 4,
        node_size: 1,
        verbosity: 3,
        failure: restart.map(|_| 1),
        exec_id: restart.map(str::to_owned),
        ..Config::default()
    }
}

/// The data of checkpoint `k` with a third variable of `rank * 10` ints, so that the group's
/// files differ in size (L3 pads them to the largest).
fn uneven(rank: u32, k: i32) -> Vec<(i32, Vec<i32>)> {
    let mut d: Vec<(i32, Vec<i32>)> = data(rank, k).into_iter().collect();
    d.push((3, (0..rank as i32 * 10).map(|j| j * k).collect()));
    d
}

fn uneven_file(rank: u32, k: i32) -> Vec<u8> {
    uneven(rank, k)
        .iter()
        .flat_map(|(_, v)| v.iter().flat_map(|x| x.to_le_bytes()))
        .collect()
}

/// Writes checkpoint 1 at L1 and 2 at `level` on 4 ranks, the L2 copies and the L4 flush
/// inline or not; returns the execution id.
fn run_levels(root: &Path, level: Level, inline: bool) -> String {
    let execs = on_ranks(4, |comm| {
        let rank = comm.rank();
        let cfg = Config {
            inline_l2: inline,
            inline_l4: inline,
            ..code_config(root, None)
        };
        let mut fti = Fti::init_with(cfg, comm).unwrap();
        for (k, level) in [(1, Level::L1), (2, level)] {
            let mut d = uneven(rank, k);
            let vars: Vec<Var> = d.iter_mut().map(|(id, v)| Var::slice(*id, v)).collect();
            fti.checkpoint(k, level, &vars).unwrap();
        }
        fti.exec_id().to_owned()
    });
    execs[0].clone()
}

/// Restarts on 4 ranks and checks that checkpoint 2 comes back exactly, at `level`.
fn restart_and_check(root: &Path, exec: &str, level: Level) {
    restart_and_check_with(code_config(root, Some(exec)), (2, level));
}

/// Restarts on 4 ranks with `cfg` and checks that checkpoint `k` comes back exactly, at
/// `level`.
fn restart_and_check_with(cfg: Config, (k, level): (i32, Level)) {
    on_ranks(4, |comm| {
        let rank = comm.rank();
        let mut fti = Fti::init_with(cfg.clone(), comm).unwrap();
        let want = uneven(rank, k);
        let mut got: Vec<(i32, Vec<i32>)> =
            want.iter().map(|(id, v)| (*id, vec![0; v.len()])).collect();
        let mut vars: Vec<Var> = got.iter_mut().map(|(id, v)| Var::slice(*id, v)).collect();
        let info = fti
            .recover(&mut vars)
            .unwrap_or_else(|e| panic!("rank {rank}: {e}; {:?}", fti.skipped()));
        drop(vars);
        assert_eq!((info.id, info.level), (k, level), "rank {rank}");
        assert!(got == want, "rank {rank}: recovered data");
    });
}

/// The meta-data file of a level, parsed: `(section, key) -> value`.
fn meta(root: &Path, exec: &str, level: u8) -> BTreeMap<(String, String), String> {
    let path = root.join(format!("run/Meta/{exec}/l{level}/sector0-group0.fti"));
    let text = std::fs::read_to_string(&path).unwrap();
    let (ini, _) = fti::IniFile::parse(&path, &text).unwrap();
    let mut out = BTreeMap::new();
    for g in 0..4 {
        for (k, v) in ini.section(&g.to_string()) {
            out.insert((g.to_string(), k.to_owned()), v.to_owned());
        }
    }
    out
}

fn md5_hex(bytes: &[u8]) -> String {
    ftiff::hash::to_hex(&ftiff::hash::md5(bytes))
}

/// L2 with POSIX files, as FTI 1.1 lays it out (`FTI_Ptner` in `src/postckpt.c`: the partner
/// copy `Ckpt<id>-Pcof<r>.fti` is the left partner's file byte for byte; `FTI_WriteMetadata` in
/// `src/meta.c`: `l2/sector0-group0.fti`); a lost node's files come back from its partners
/// (`FTI_RecoverL2` in `src/postreco.c`), byte for byte. The copies are sent inline or, with
/// `inline_l2 = 0`, in the background after the meta data is written.
#[test]
fn posix_l2_partner_copies_and_node_loss() {
    for inline in [true, false] {
        posix_l2(inline);
    }
}

fn posix_l2(inline: bool) {
    let root = tempfile::tempdir().unwrap();
    let exec = run_levels(root.path(), Level::L2, inline);
    let m = meta(root.path(), &exec, 2);
    for r in 0..4u32 {
        let left = (r + 3) % 4;
        let l2 = root.path().join(format!("run/Local/node{r}/{exec}/l2"));
        assert!(std::fs::read(l2.join(format!("Ckpt2-Rank{r}.fti"))).unwrap() == uneven_file(r, 2));
        assert!(
            std::fs::read(l2.join(format!("Ckpt2-Pcof{r}.fti"))).unwrap() == uneven_file(left, 2)
        );
        let g = r.to_string();
        assert_eq!(
            m[&(g.clone(), "ckpt_checksum".into())],
            md5_hex(&uneven_file(r, 2))
        );
        assert_eq!(
            m[&(g.clone(), "ckpt_file_maxs".into())],
            uneven_file(3, 2).len().to_string()
        );
        assert_eq!(m[&(g.clone(), "var2_size".into())], (r * 40).to_string());
    }
    // The L1 checkpoint before it is retired with its meta data, as FTI's FTI_Clean does.
    assert!(!root
        .path()
        .join(format!("run/Meta/{exec}/l1/sector0-group0.fti"))
        .exists());
    let node1 = root.path().join("run/Local/node1");
    let before = tree(&node1, &exec);
    std::fs::remove_dir_all(&node1).unwrap();
    restart_and_check(root.path(), &exec, Level::L2);
    assert!(
        tree(&node1, &exec) == before,
        "node 1's files rebuilt byte for byte"
    );
}

/// L3 with POSIX files, as FTI 1.1 lays it out (`FTI_RSenc` in `src/postckpt.c`: the group's
/// files zero-padded to `ckpt_file_maxs` are encoded into `Ckpt<id>-RSed<r>.fti` of that size,
/// without FTI-FF's trailer, and `FTI_WriteRSedChecksum` in `src/meta.c` adds `rsed_checksum`
/// to each section); a lost node's files are rebuilt (`FTI_RecoverL3` in `src/postreco.c`).
#[test]
fn posix_l3_code_and_node_loss() {
    let root = tempfile::tempdir().unwrap();
    let exec = run_levels(root.path(), Level::L3, true);
    let m = meta(root.path(), &exec, 3);
    let maxs = uneven_file(3, 2).len();
    for r in 0..4u32 {
        let l3 = root.path().join(format!("run/Local/node{r}/{exec}/l3"));
        assert!(std::fs::read(l3.join(format!("Ckpt2-Rank{r}.fti"))).unwrap() == uneven_file(r, 2));
        let rsed = std::fs::read(l3.join(format!("Ckpt2-RSed{r}.fti"))).unwrap();
        assert_eq!(
            rsed.len(),
            maxs,
            "rank {r}: RSed file of maxs bytes, no trailer"
        );
        let g = r.to_string();
        assert_eq!(m[&(g.clone(), "rsed_checksum".into())], md5_hex(&rsed));
        assert_eq!(m[&(g, "ckpt_file_maxs".into())], maxs.to_string());
    }
    // The code is FTI-FF's L3 code (checked against FTI's own L3 vector in `levels.rs`) over
    // the raw files: here the rebuild checks it.
    let node2 = root.path().join("run/Local/node2");
    let before = tree(&node2, &exec);
    std::fs::remove_dir_all(&node2).unwrap();
    restart_and_check(root.path(), &exec, Level::L3);
    assert!(
        tree(&node2, &exec) == before,
        "node 2's files rebuilt byte for byte"
    );
}

/// L4 with POSIX files, written in the global directory or (`inline_l4 = 0`) locally and
/// flushed (`FTI_Flush`, `FTI_FlushPosix` in `src/postckpt.c`; the meta data in `l4/`); every
/// local file lost, the run restarts from L4.
#[test]
fn posix_l4_inline_and_flushed() {
    for inline in [true, false] {
        let root = tempfile::tempdir().unwrap();
        let exec = run_levels(root.path(), Level::L4, inline);
        let m = meta(root.path(), &exec, 4);
        for r in 0..4u32 {
            let global = root
                .path()
                .join(format!("run/Global/{exec}/l4/Ckpt2-Rank{r}.fti"));
            assert!(
                std::fs::read(global).unwrap() == uneven_file(r, 2),
                "inline {inline}"
            );
            assert_eq!(
                m[&(r.to_string(), "ckpt_file_name".into())],
                format!("Ckpt2-Rank{r}.fti")
            );
        }
        std::fs::remove_dir_all(root.path().join("run/Local")).unwrap();
        restart_and_check(root.path(), &exec, Level::L4);
    }
}

/// Two groups, and a crash after the first group's meta-data file named the new checkpoint but
/// before the second group's did: each group's meta data describes a different checkpoint. The
/// meta-data file replaced is kept until the new checkpoint is retired, so the previous
/// checkpoint, still whole on every rank, is the restart's.
#[test]
fn posix_crash_between_two_groups_meta_data_keeps_the_previous_checkpoint() {
    let root = tempfile::tempdir().unwrap();
    let cfg = |restart: Option<&str>| Config {
        group_size: 2,
        ..code_config(root.path(), restart)
    };
    let saved = tempfile::tempdir().unwrap();
    let execs = on_ranks(4, |comm| {
        let rank = comm.rank();
        let mut fti = Fti::init_with(cfg(None), comm).unwrap();
        let write = |fti: &mut Fti, k: i32| {
            let mut d = uneven(rank, k);
            let vars: Vec<Var> = d.iter_mut().map(|(id, v)| Var::slice(*id, v)).collect();
            fti.checkpoint(k, Level::L1, &vars).unwrap();
        };
        write(&mut fti, 1);
        fti.comm().barrier();
        if rank == 0 {
            copy_tree(&root.path().join("run"), saved.path());
        }
        fti.comm().barrier();
        write(&mut fti, 2);
        fti.exec_id().to_owned()
    });
    let exec = &execs[0];
    // Checkpoint 1's files back beside checkpoint 2's (not yet retired), group 0's meta data
    // names checkpoint 2 and keeps checkpoint 1's beside it, group 1's still names checkpoint 1.
    for r in 0..4 {
        let name = format!("Local/node{r}/{exec}/l1/Ckpt1-Rank{r}.fti");
        std::fs::copy(
            saved.path().join(&name),
            root.path().join("run").join(&name),
        )
        .unwrap();
    }
    let meta = |dir: &Path, s: u32| dir.join(format!("Meta/{exec}/l1/sector{s}-group0.fti"));
    let run = root.path().join("run");
    let kept = run.join(format!("Meta/{exec}/l1/.sector0-group0.fti.prev"));
    std::fs::copy(meta(saved.path(), 0), kept).unwrap();
    std::fs::copy(meta(saved.path(), 1), meta(&run, 1)).unwrap();
    restart_and_check_with(cfg(Some(exec)), (1, Level::L1));
}

/// L3 with files of an odd size (`ckpt_file_maxs` odd): the code cut to that size loses the high
/// byte of its last word (`FTI_RSenc` in `src/postckpt.c` writes `maxFs` code bytes), and with
/// it the last byte of a lost file; the rebuild finds that byte from the file's
/// `ckpt_checksum`.
#[test]
fn posix_l3_odd_sized_files_are_rebuilt_exactly() {
    let root = tempfile::tempdir().unwrap();
    let bytes = |rank: u32| -> Vec<u8> {
        (0..1007)
            .map(|j| ((j * j * 31 + rank as usize * 17) % 251) as u8)
            .collect()
    };
    let execs = on_ranks(4, |comm| {
        let rank = comm.rank();
        let mut fti = Fti::init_with(code_config(root.path(), None), comm).unwrap();
        let mut b = bytes(rank);
        fti.checkpoint(1, Level::L3, &[Var::bytes(1, &mut b)])
            .unwrap();
        fti.exec_id().to_owned()
    });
    let exec = &execs[0];
    assert_eq!(
        meta(root.path(), exec, 3)[&("0".into(), "ckpt_file_maxs".into())],
        "1007"
    );
    // Rank 3's file (the largest) lost, alone or with its node's RSed file.
    let node3 = root.path().join("run/Local/node3");
    let before = tree(&node3, exec);
    for lost in [node3.join(exec).join("l3/Ckpt1-Rank3.fti"), node3.clone()] {
        if lost.is_dir() {
            std::fs::remove_dir_all(&lost).unwrap();
        } else {
            std::fs::remove_file(&lost).unwrap();
        }
        on_ranks(4, |comm| {
            let rank = comm.rank();
            let mut fti = Fti::init_with(code_config(root.path(), Some(exec)), comm).unwrap();
            let mut b = vec![0u8; bytes(rank).len()];
            fti.recover(&mut [Var::bytes(1, &mut b)]).unwrap();
            assert!(b == bytes(rank), "rank {rank}, {lost:?} lost");
        });
        assert!(
            tree(&node3, exec) == before,
            "{lost:?} rebuilt byte for byte"
        );
    }
}

/// The variables of a POSIX file are those of its checkpoint call, in that call's order: one no
/// longer protected is not in the file or the meta data, a reordered one moves
/// (`FTI_WritePosix` writes `FTI_Data` as it is at the call).
#[test]
fn posix_file_follows_the_protected_variables_of_each_checkpoint() {
    let root = tempfile::tempdir().unwrap();
    let (mut a, mut b, mut c) = (vec![1i32; 10], vec![2i32; 20], vec![3i32; 30]);
    let mut fti = Fti::init(Config {
        group_size: 1,
        ..code_config(root.path(), None)
    })
    .unwrap();
    let first = [
        Var::slice(1, &mut a),
        Var::slice(2, &mut b),
        Var::slice(3, &mut c),
    ];
    fti.checkpoint(1, Level::L1, &first).unwrap();
    let info = fti
        .checkpoint(
            2,
            Level::L1,
            &[Var::slice(2, &mut b), Var::slice(1, &mut a)],
        )
        .unwrap();
    let want: Vec<u8> = [2i32; 20]
        .iter()
        .chain(&[1i32; 10])
        .flat_map(|x| x.to_le_bytes())
        .collect();
    assert!(std::fs::read(&info.path).unwrap() == want);
    // One variable back from the file on disk, by its meta data (FTI_RecoverVar after a
    // checkpoint, and the C API's roll-back).
    let mut back = vec![0i32; 10];
    let from = fti
        .recover_var_from(Some(2), &mut Var::slice(1, &mut back))
        .unwrap();
    assert_eq!((from.id, back), (2, vec![1i32; 10]));
    let exec = fti.exec_id().to_owned();
    let text = std::fs::read_to_string(
        root.path()
            .join(format!("run/Meta/{exec}/l1/sector0-group0.fti")),
    )
    .unwrap();
    assert!(
        text.contains("var0_id                        = 2\nvar0_size                      = 80\nvar1_id                        = 1\nvar1_size                      = 40\n\n"),
        "{text}"
    );
}

/// `finalize` removes the run's files, the meta-data files included (FTI_Finalize's
/// `FTI_Clean` at level 5); with `keep_last_ckpt` the last checkpoint stays in L4 with its
/// meta data, and restarts from there (`failure = 2`).
#[test]
fn posix_finalize_removes_or_keeps_the_meta_data() {
    for keep in [false, true] {
        let root = tempfile::tempdir().unwrap();
        let cfg = Config {
            keep_last_ckpt: keep,
            ..code_config(root.path(), None)
        };
        let execs = on_ranks(4, |comm| {
            let rank = comm.rank();
            let mut fti = Fti::init_with(cfg.clone(), comm).unwrap();
            let mut d = uneven(rank, 2);
            let vars: Vec<Var> = d.iter_mut().map(|(id, v)| Var::slice(*id, v)).collect();
            fti.checkpoint(2, Level::L2, &vars).unwrap();
            let exec = fti.exec_id().to_owned();
            fti.finalize().unwrap();
            exec
        });
        let exec = &execs[0];
        let meta = root.path().join(format!("run/Meta/{exec}"));
        if keep {
            assert!(meta.join("l4/sector0-group0.fti").is_file());
            restart_and_check_with(
                Config {
                    failure: Some(2),
                    exec_id: Some(exec.clone()),
                    ..code_config(root.path(), None)
                },
                (2, Level::L4),
            );
        } else {
            assert!(
                !meta.exists(),
                "{:?}",
                tree(&root.path().join("run"), exec).keys()
            );
        }
    }
}

/// MPI-IO (`ckpt_io = 2`): L1-L3 as POSIX, L4 as one shared file `Ckpt<id>-mpiio.fti` in the
/// global directory, each rank's data at the sum of the lower ranks' sizes (`FTI_WriteMPI` in
/// `src/checkpoint.c`; flushed by `FTI_FlushMPI` in `src/postckpt.c` with `inline_l4 = 0`),
/// the meta data in `l4/` naming the ranks' `Ckpt<id>-Rank<r>.fti` as FTI's does. Every local
/// file lost, the run restarts from it (`FTI_RecoverL4Mpi` in `src/postreco.c` reads each
/// rank's part at the same offsets).
#[test]
fn mpiio_l4_is_one_shared_file() {
    for (inline, keep_last) in [(true, false), (false, false), (true, true)] {
        let root = tempfile::tempdir().unwrap();
        let cfg = Config {
            io: fti::IoMode::MpiIo,
            inline_l4: inline,
            keep_last_ckpt: keep_last,
            ..code_config(root.path(), None)
        };
        let execs = on_ranks(4, |comm| {
            let rank = comm.rank();
            let mut fti = Fti::init_with(cfg.clone(), comm).unwrap();
            for (k, level) in [
                (1, Level::L4),
                (2, if keep_last { Level::L2 } else { Level::L4 }),
            ] {
                let mut d = uneven(rank, k);
                let vars: Vec<Var> = d.iter_mut().map(|(id, v)| Var::slice(*id, v)).collect();
                fti.checkpoint(k, level, &vars).unwrap();
            }
            let exec = fti.exec_id().to_owned();
            if keep_last {
                fti.finalize().unwrap();
            }
            exec
        });
        let exec = &execs[0];
        let l4 = root.path().join(format!("run/Global/{exec}/l4"));
        let names: Vec<String> = std::fs::read_dir(&l4)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            names,
            ["Ckpt2-mpiio.fti"],
            "inline {inline}, keep {keep_last}"
        );
        let all: Vec<u8> = (0..4).flat_map(|r| uneven_file(r, 2)).collect();
        assert!(std::fs::read(l4.join("Ckpt2-mpiio.fti")).unwrap() == all);
        let m = meta(root.path(), exec, 4);
        for r in 0..4u32 {
            assert_eq!(
                m[&(r.to_string(), "ckpt_file_name".into())],
                format!("Ckpt2-Rank{r}.fti")
            );
            assert_eq!(
                m[&(r.to_string(), "ckpt_checksum".into())],
                md5_hex(&uneven_file(r, 2))
            );
        }
        // (finalize with keep_last_ckpt removed them already)
        let local = root.path().join("run/Local");
        if local.exists() {
            std::fs::remove_dir_all(local).unwrap();
        }
        restart_and_check_with(
            Config {
                failure: Some(if keep_last { 2 } else { 1 }),
                exec_id: Some(exec.clone()),
                ..cfg.clone()
            },
            (2, Level::L4),
        );
    }
}

/// A FIFO in place of the meta-data file does not hang the restart: the file is never opened,
/// the checkpoint is skipped naming it.
#[test]
fn posix_meta_data_fifo_is_not_opened() {
    let root = tempfile::tempdir().unwrap();
    let mut fti = Fti::init(code_config(root.path(), None)).unwrap();
    let mut x = 5u64;
    fti.checkpoint(1, Level::L1, &[Var::new(0, &mut x)])
        .unwrap();
    let exec = fti.exec_id().to_owned();
    drop(fti);
    let meta = root
        .path()
        .join(format!("run/Meta/{exec}/l1/sector0-group0.fti"));
    std::fs::remove_file(&meta).unwrap();
    assert!(std::process::Command::new("mkfifo")
        .arg(&meta)
        .status()
        .unwrap()
        .success());
    let (tx, rx) = std::sync::mpsc::channel();
    let cfg = code_config(root.path(), Some(&exec));
    std::thread::spawn(move || {
        let fti = Fti::init(cfg).unwrap();
        let said: Vec<String> = fti.skipped().iter().map(ToString::to_string).collect();
        tx.send((fti.status().clone(), said)).unwrap();
    });
    let (status, said) = rx
        .recv_timeout(std::time::Duration::from_secs(30))
        .expect("the restart hangs on a FIFO");
    assert_eq!(status, Status::Fresh);
    assert!(said[0].contains("not a regular file"), "{said:?}");
}

/// What POSIX and MPI-IO files cannot carry is refused at init, before anything is written,
/// each naming `ckpt_io = 3` (`docs/io-modes.md`, *Extensions*); an incremental checkpoint is
/// refused when it is opened, and the run goes on.
#[test]
fn extensions_posix_files_cannot_carry_are_refused() {
    type Set = fn(&mut Config);
    let extensions: [(&str, Set); 4] = [
        ("asynchronous checkpoints (async_ckpt = 1)", |c| {
            c.async_ckpt = true
        }),
        ("differential checkpoints (enable_dcp = 1)", |c| {
            c.dcp = true
        }),
        ("integrity = fast", |c| c.fast_integrity = true),
        ("keep_ckpts > 1", |c| c.keep_ckpts = 2),
    ];
    for io in [fti::IoMode::Posix, fti::IoMode::MpiIo] {
        for (what, set) in extensions {
            let root = tempfile::tempdir().unwrap();
            let mut cfg = Config {
                io,
                ..code_config(root.path(), None)
            };
            set(&mut cfg);
            let refusals = on_ranks(4, |comm| {
                Fti::init_with(cfg.clone(), comm)
                    .err()
                    .map(|e| e.to_string())
            });
            for (rank, refusal) in refusals.into_iter().enumerate() {
                let e = refusal.unwrap_or_else(|| panic!("{io:?}, {what}: rank {rank} accepted"));
                assert!(
                    e.contains(what) && e.contains("ckpt_io = 3"),
                    "{io:?}, {what}: {e}"
                );
            }
            assert!(
                tree(root.path(), "EXEC").is_empty(),
                "{io:?}, {what}: files written"
            );
        }
        let root = tempfile::tempdir().unwrap();
        let cfg = Config {
            io,
            ..code_config(root.path(), None)
        };
        on_ranks(4, |comm| {
            let rank = comm.rank();
            let mut fti = Fti::init_with(cfg.clone(), comm).unwrap();
            let var = ftiff::VarSize { id: 1, size: 8 };
            let e = fti.init_icp(1, Level::L1, &[var]).unwrap_err().to_string();
            assert!(
                e.contains("FTI_InitICP") && e.contains("ckpt_io = 3"),
                "{io:?}: {e}"
            );
            checkpoint(&mut fti, rank, 1, Level::L1);
            fti.finalize().unwrap();
        });
    }
}
