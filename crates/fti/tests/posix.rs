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

/// The data of the trees: ids 1 and 2, `a[j] = r*1000000 + k*1000 + j%977`, `b = -a`.
fn data(rank: u32, k: i32) -> [(i32, Vec<i32>); 2] {
    let a: Vec<i32> = (0..N)
        .map(|j| rank as i32 * 1_000_000 + k * 1000 + (j % 977) as i32)
        .collect();
    let b = a.iter().map(|x| -x).collect();
    [(1, a), (2, b)]
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
/// `restart`, else a fresh run.
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
    on_ranks(4, |comm| {
        let rank = comm.rank();
        let mut fti = Fti::init_with(config(root.path(), true), comm).unwrap();
        assert!(matches!(fti.status(), Status::Restart(_)), "rank {rank}");
        assert_eq!(fti.stored_size(2), Some(4 * N as u64));
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
    let said = on_ranks(4, |comm| {
        let fti = Fti::init_with(config(root.path(), true), comm).unwrap();
        assert_eq!(fti.status(), &Status::Fresh);
        fti.skipped()
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\n")
    });
    assert!(
        said[2].contains("Ckpt2-Rank2.fti") && said[2].contains("ckpt_checksum"),
        "{}",
        said[2]
    );
}

/// The files of every level of a tree, by relative path (exec id as `EXEC`), without
/// `Topology.fti`.
fn level_files(root: &Path, exec: &str) -> BTreeMap<String, Vec<u8>> {
    tree(&root.join("run"), exec)
        .into_iter()
        .filter(|(k, _)| !k.ends_with("Topology.fti"))
        .collect()
}

/// Our POSIX L1 tree, from the same config and data, is FTI's: the same files, the data files
/// and the sector meta-data file byte for byte (`FTI_WriteMetadata` in `src/meta.c`: the
/// config's other sections first, then one section per group rank, dumped as iniparser does).
#[test]
fn posix_l1_tree_is_ftis() {
    let ours = tempfile::tempdir().unwrap();
    let execs = on_ranks(4, |comm| {
        let rank = comm.rank();
        let mut fti = Fti::init_with(config(ours.path(), false), comm).unwrap();
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
