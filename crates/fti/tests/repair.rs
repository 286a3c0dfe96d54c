//! Redundancy repaired at restart, as FTI 1.1's recovery does: a restart whose every own file
//! is there, but whose L2 partner copies or L3 `RSed` files were lost or are corrupt, makes
//! them again before init returns, so that the checkpoint survives losing a node again.

use std::path::{Path, PathBuf};

use crate::util::on_ranks;
use fti::{Config, Fti, Level, Status, Var};

fn config(root: &Path) -> Config {
    Config {
        ckpt_dir: root.join("run/Local"),
        glbl_dir: root.join("run/Global"),
        meta_dir: root.join("run/Meta"),
        group_size: 4,
        node_size: 1,
        local_test: true,
        verbosity: 3,
        ..Config::default()
    }
}

fn data(rank: u32) -> Vec<u64> {
    (0..5000).map(|i| u64::from(rank) << 32 | i).collect()
}

/// Every file below `dir` whose name holds `kind` (`Pcof`, `RSed`, `Rank`).
fn files(dir: &Path, kind: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries {
        let path = e.unwrap().path();
        if path.is_dir() {
            out.extend(files(&path, kind));
        } else if path.file_name().unwrap().to_string_lossy().contains(kind) {
            out.push(path);
        }
    }
    out.sort();
    out
}

/// Restarts on 4 ranks; returns each rank's recovery note after checking its data.
fn restart(root: &Path) -> Vec<String> {
    on_ranks(4, |comm| {
        let rank = comm.rank();
        let mut fti = Fti::init_with(config(root), comm).unwrap();
        assert!(matches!(fti.status(), Status::Restart(info) if info.id == 1));
        let note = fti.recovery_note().unwrap_or_default().to_owned();
        let mut got = vec![0u64; 5000];
        fti.recover(&mut [Var::slice(1, &mut got)]).unwrap();
        assert_eq!(got, data(rank), "rank {rank}");
        note
    })
}

/// The inventory's verdict on the tree: every file verifies, and the checkpoint survives the
/// loss of any node.
pub fn intact_and_redundant(root: &Path) -> bool {
    let scan = fti::inventory::scan(&root.join("run")).unwrap();
    let sizes = fti::inventory::Sizes {
        node_size: Some(1),
        group_size: 4,
        head: false,
    };
    let mut ckpts = fti::inventory::checkpoints(&scan, sizes, &mut Vec::new()).unwrap();
    assert_eq!(ckpts.len(), 1);
    for (kind, slot) in ckpts[0].slots_mut() {
        slot.verify(kind, &|_| {});
    }
    !ckpts[0].has_corrupt() && ckpts[0].verdict().survives
}

/// How the redundancy files of a checkpoint are damaged before the restart.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Damage {
    /// Every file erased.
    AllLost,
    /// Three erased, one corrupt.
    LostAndCorrupt,
}

#[test]
fn lost_and_corrupt_redundancy_is_made_again_at_restart() {
    for damage in [Damage::AllLost, Damage::LostAndCorrupt] {
        redundancy_made_again(damage);
    }
}

fn redundancy_made_again(damage: Damage) {
    for (level, kind) in [(Level::L2, "Pcof"), (Level::L3, "RSed")] {
        let root = tempfile::tempdir().unwrap();
        let root = root.path();
        on_ranks(4, |comm| {
            let mut v = data(comm.rank());
            let mut fti = Fti::init_with(config(root), comm).unwrap();
            fti.checkpoint(1, level, &[Var::slice(1, &mut v)]).unwrap();
        });
        let local = root.join("run/Local");
        let written: Vec<(PathBuf, Vec<u8>)> = files(&local, kind)
            .into_iter()
            .map(|p| {
                let bytes = std::fs::read(&p).unwrap();
                (p, bytes)
            })
            .collect();
        assert_eq!(written.len(), 4, "{level} {damage:?}");
        for (i, (path, bytes)) in written.iter().enumerate() {
            if i == 2 && damage == Damage::LostAndCorrupt {
                let mut b = bytes.clone();
                b[100] ^= 0x10;
                std::fs::write(path, b).unwrap();
            } else {
                std::fs::remove_file(path).unwrap();
            }
        }
        assert!(!intact_and_redundant(root), "{level} {damage:?}: damaged");

        let notes = restart(root);
        assert!(
            notes[0].contains("made again"),
            "{level} {damage:?}: {}",
            notes[0]
        );
        assert_eq!(
            files(&local, kind).len(),
            4,
            "{level} {damage:?}: redundancy files back"
        );
        assert!(intact_and_redundant(root), "{level} {damage:?}: repaired");
        if level == Level::L2 {
            // Partner copies are byte copies: back exactly as written.
            for (path, bytes) in &written {
                assert_eq!(&std::fs::read(path).unwrap(), bytes, "{}", path.display());
            }
        }

        // A node's Rank files lost now: the repaired redundancy brings them back.
        for r in files(&local.join("node1"), "Rank") {
            std::fs::remove_file(r).unwrap();
        }
        let notes = restart(root);
        assert!(notes[0].contains("[1]"), "{level} {damage:?}: {}", notes[0]);
    }
}
