//! The inventory (`fti::inventory`, what `fti list` and `fti prune` show and do) against the
//! restart itself: the same verdict on whether a checkpoint can be restored, over random
//! damage to real trees; and a prune that never follows a directory swapped in after its scan.

use std::path::{Path, PathBuf};

use crate::util::on_ranks;
use fti::inventory::{self, Ckpt, Sizes};
use fti::{Config, Error, Fti, Level, Status, Var};
use proptest::prelude::*;

fn config(root: &Path, group_size: u32) -> Config {
    Config {
        ckpt_dir: root.join("run/Local"),
        glbl_dir: root.join("run/Global"),
        meta_dir: root.join("run/Meta"),
        group_size,
        node_size: 1,
        local_test: true,
        verbosity: 3,
        ..Config::default()
    }
}

fn data(rank: u32) -> Vec<i32> {
    (0..64).map(|i| rank as i32 * 1000 + i).collect()
}

/// Writes checkpoint 1 at `level` on `n` ranks.
fn write_checkpoint(root: &Path, n: u32, group_size: u32, level: Level) {
    on_ranks(n, |comm| {
        let mut v = data(comm.rank());
        let mut fti = Fti::init_with(config(root, group_size), comm).unwrap();
        fti.checkpoint(1, level, &[Var::slice(1, &mut v)]).unwrap();
    });
}

/// The inventory's checkpoints below `root/run`, every file verified.
fn inventory_of(root: &Path, group_size: u32) -> (inventory::Scan, Vec<Ckpt>) {
    let scan = inventory::scan(&root.join("run")).unwrap();
    let sizes = Sizes {
        node_size: Some(1),
        group_size,
        head: false,
    };
    let mut ckpts = inventory::checkpoints(&scan, sizes, &mut Vec::new()).unwrap();
    for c in &mut ckpts {
        for (kind, slot) in c.slots_mut() {
            slot.verify(kind, &|_| {});
        }
    }
    (scan, ckpts)
}

/// Whether the restart recovers checkpoint 1 on every rank with the data written.
fn restart_recovers(root: &Path, n: u32, group_size: u32) -> bool {
    let per_rank = on_ranks(n, |comm| {
        let rank = comm.rank();
        let Ok(mut fti) = Fti::init_with(config(root, group_size), comm) else {
            return false;
        };
        if !matches!(fti.status(), Status::Restart(info) if info.id == 1) {
            return false;
        }
        let mut got = vec![0i32; 64];
        let recovered = fti.recover(&mut [Var::slice(1, &mut got)]).is_ok();
        recovered && got == data(rank)
    });
    assert!(
        per_rank.iter().all(|&r| r == per_rank[0]),
        "the ranks disagree: {per_rank:?}"
    );
    per_rank[0]
}

/// What happens to one file of the checkpoint.
#[derive(Debug, Clone, Copy)]
enum Damage {
    Keep,
    Delete,
    Corrupt,
}

fn damage() -> impl Strategy<Value = Damage> {
    prop_oneof![
        6 => Just(Damage::Keep),
        2 => Just(Damage::Delete),
        1 => Just(Damage::Corrupt),
    ]
}

fn apply(path: &Path, damage: Damage) {
    match damage {
        Damage::Keep => {}
        Damage::Delete => std::fs::remove_file(path).unwrap(),
        Damage::Corrupt => {
            let mut bytes = std::fs::read(path).unwrap();
            let middle = bytes.len() / 2;
            bytes[middle] ^= 0x5a;
            std::fs::write(path, bytes).unwrap();
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// `fti list`'s "restorable now" is the restart's own verdict, whatever files are lost or
    /// corrupt, at every level.
    #[test]
    fn inventory_and_restart_agree(
        n in 2u32..=5,
        group in 2u32..=5,
        level in prop_oneof![Just(Level::L1), Just(Level::L2), Just(Level::L3), Just(Level::L4)],
        damages in proptest::collection::vec(damage(), 10),
    ) {
        let group_size = group.min(n);
        let root = tempfile::tempdir().unwrap();
        write_checkpoint(root.path(), n, group_size, level);
        let (_, ckpts) = inventory_of(root.path(), group_size);
        prop_assert_eq!(ckpts.len(), 1);
        let files: Vec<PathBuf> = ckpts[0]
            .slots()
            .filter_map(|(_, s)| s.file.as_ref().map(|f| f.path.clone()))
            .collect();
        for (path, &d) in files.iter().zip(damages.iter().cycle()) {
            apply(path, d);
        }
        let (_, after) = inventory_of(root.path(), group_size);
        let listed = after.first().is_some_and(|c| c.verdict().restorable);
        let restarted = restart_recovers(root.path(), n, group_size);
        prop_assert_eq!(
            listed,
            restarted,
            "{} ranks, {}, group {}: inventory says {:?}",
            n,
            level,
            group_size,
            after.first().map(Ckpt::verdict)
        );
    }
}

/// Archived checkpoints 1 and 2 and checkpoint 3 in `l1/` of one rank.
fn three_checkpoints(root: &Path) {
    on_ranks(1, |comm| {
        let mut v = data(0);
        let cfg = Config {
            keep_ckpts: 3,
            ..config(root, 1)
        };
        let mut fti = Fti::init_with(cfg, comm).unwrap();
        for id in 1..=3 {
            fti.checkpoint(id, Level::L1, &[Var::slice(1, &mut v)])
                .unwrap();
        }
    });
}

fn archive_dir(root: &Path) -> PathBuf {
    let local = root.join("run/Local/node0");
    let exec = std::fs::read_dir(&local).unwrap().next().unwrap().unwrap();
    exec.path().join("l1_archive")
}

/// `l1_archive` replaced by a symbolic link to another directory between the scan and the
/// deletion (the moment a racing attacker needs): nothing there or anywhere is deleted.
#[test]
fn prune_never_follows_a_directory_swapped_after_the_scan() {
    let root = tempfile::tempdir().unwrap();
    three_checkpoints(root.path());
    let (scan, mut ckpts) = inventory_of(root.path(), 1);
    let plan = inventory::prune_plan(&mut ckpts, 1, &mut |c| c.verdict().restorable);
    assert_eq!(plan.delete.len(), 2, "checkpoints 1 and 2 are to go");

    // The swap: the archive moves away, a link to an outside directory holding files of the
    // same names takes its place.
    let archive = archive_dir(root.path());
    let outside = root.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    for name in ["Ckpt1-Rank0.fti", "Ckpt2-Rank0.fti", "precious"] {
        std::fs::write(outside.join(name), b"not yours").unwrap();
    }
    let moved = root.path().join("moved");
    std::fs::rename(&archive, &moved).unwrap();
    std::os::unix::fs::symlink(&outside, &archive).unwrap();

    for &i in &plan.delete {
        let err = inventory::delete_checkpoint(&scan, &ckpts[i]).unwrap_err();
        assert!(matches!(err, Error::Changed { .. }), "{err}");
        assert!(err.to_string().contains("l1_archive"), "{err}");
    }
    let mut left: Vec<String> = std::fs::read_dir(&outside)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["Ckpt1-Rank0.fti", "Ckpt2-Rank0.fti", "precious"]);
    assert_eq!(std::fs::read_dir(&moved).unwrap().count(), 2);

    // Put back, the same plan deletes both checkpoints whole.
    std::fs::remove_file(&archive).unwrap();
    std::fs::rename(&moved, &archive).unwrap();
    for &i in &plan.delete {
        let deleted = inventory::delete_checkpoint(&scan, &ckpts[i]).unwrap();
        assert_eq!(deleted.len(), 1);
    }
    assert_eq!(std::fs::read_dir(&archive).unwrap().count(), 0);
}

/// A directory further up (the node directory) swapped for a link to a copy of itself: the
/// copy's files are not the ones scanned, so nothing is deleted.
#[test]
fn prune_refuses_a_swapped_parent_and_a_swapped_file() {
    let root = tempfile::tempdir().unwrap();
    three_checkpoints(root.path());
    let (scan, mut ckpts) = inventory_of(root.path(), 1);
    let plan = inventory::prune_plan(&mut ckpts, 1, &mut |c| c.verdict().restorable);
    let node = root.path().join("run/Local/node0");
    let copy = root.path().join("copy");
    let status = std::process::Command::new("cp")
        .arg("-a")
        .arg(&node)
        .arg(&copy)
        .status()
        .unwrap();
    assert!(status.success());
    let moved = root.path().join("node0-moved");
    std::fs::rename(&node, &moved).unwrap();
    std::os::unix::fs::symlink(&copy, &node).unwrap();
    let err = inventory::delete_checkpoint(&scan, &ckpts[plan.delete[0]]).unwrap_err();
    assert!(matches!(err, Error::Changed { .. }), "{err}");

    // Back in place, but one file replaced by another of the same name.
    std::fs::remove_file(&node).unwrap();
    std::fs::rename(&moved, &node).unwrap();
    let c = &ckpts[plan.delete[0]];
    let file = c.slots().find_map(|(_, s)| s.file.clone()).unwrap().path;
    let twin = file.with_extension("twin");
    std::fs::copy(&file, &twin).unwrap();
    std::fs::rename(&twin, &file).unwrap();
    let err = inventory::delete_checkpoint(&scan, c).unwrap_err();
    assert!(err.to_string().contains("not the file scanned"), "{err}");
    assert!(file.exists());
}
