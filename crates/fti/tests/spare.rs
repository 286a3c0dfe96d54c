//! A retired local checkpoint file is kept as the rank's spare under `tmp/`, and the next
//! checkpoint overwrites it in place instead of creating a file (no blocks freed, none
//! allocated: `files::begin_overwriting`). What is checked: the spare (in `spare/`) is the retired file
//! (same inode), the next checkpoint is written into it, a restart reads exactly the new data
//! whether the new file is shorter or longer than the spare, and finalize leaves no spare.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use fti::{Config, Fti, IoMode, Level, Status, Var};

fn config(root: &Path, io: IoMode) -> Config {
    Config {
        io,
        ..crate::util::config(root)
    }
}

/// Every file under `dir`, recursively.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(files_under(&path));
        } else {
            out.push(path);
        }
    }
    out.sort();
    out
}

fn named(root: &Path, suffix: &str) -> Vec<PathBuf> {
    files_under(&root.join("Local"))
        .into_iter()
        .filter(|p| p.to_string_lossy().ends_with(suffix))
        .collect()
}

fn inode(path: &Path) -> u64 {
    std::fs::metadata(path).unwrap().ino()
}

/// Checkpoint `id` holds `len` values of `id * 1000 + j`.
fn values(id: i32, len: usize) -> Vec<f64> {
    (0..len)
        .map(|j| f64::from(id) * 1000.0 + j as f64)
        .collect()
}

fn spare_overwritten_in_place(io: IoMode, lens: [usize; 3]) {
    let root = tempfile::tempdir().unwrap();
    let mut fti = Fti::init(config(root.path(), io)).unwrap();
    let mut inodes = Vec::new();
    for (id, len) in (1..=3).zip(lens) {
        let mut data = values(id, len);
        let info = fti
            .checkpoint(id, Level::L1, &[Var::slice(0, &mut data)])
            .unwrap();
        inodes.push(inode(&info.path));
        let spares = named(root.path(), ".spare");
        if id == 1 {
            assert!(spares.is_empty(), "no spare before a file is retired");
            continue;
        }
        // The file of checkpoint id - 1 is the spare now, and checkpoint 3 took checkpoint
        // 1's file.
        assert_eq!(spares.len(), 1, "{spares:?}");
        assert!(
            spares[0].starts_with(root.path().join("Local")),
            "{spares:?}"
        );
        assert_eq!(
            inode(&spares[0]),
            inodes[id as usize - 2],
            "checkpoint {id}"
        );
        assert_eq!(named(root.path(), "-Rank0.fti"), vec![info.path.clone()]);
    }
    assert_eq!(
        inodes[2], inodes[0],
        "checkpoint 3 is written into checkpoint 1's file"
    );
    drop(fti); // a crash: no finalize

    let mut fti = Fti::init(config(root.path(), io)).unwrap();
    let Status::Restart(info) = fti.status().clone() else {
        panic!("not a restart")
    };
    assert_eq!((info.id, info.level), (3, Level::L1));
    let mut data = vec![0.0; lens[2]];
    fti.recover(&mut [Var::slice(0, &mut data)]).unwrap();
    assert_eq!(data, values(3, lens[2]));
    fti.finalize().unwrap();
    assert_eq!(
        files_under(&root.path().join("Local")),
        Vec::<PathBuf>::new()
    );
}

#[test]
fn ftiff_checkpoint_overwrites_the_retired_file() {
    // FTI-FF keeps containers once grown: a shorter variable leaves zero fill, written again.
    spare_overwritten_in_place(IoMode::Ftiff, [60_000, 20_000, 50_000]);
}

#[test]
fn posix_checkpoint_overwrites_a_longer_retired_file() {
    // A POSIX file is the data alone: checkpoint 3 is shorter than the spare it overwrites.
    spare_overwritten_in_place(IoMode::Posix, [60_000, 20_000, 10_000]);
}

/// L2 on 4 ranks (one per node, one group): the rank's file and the partner copy it keeps
/// each have a spare, and checkpoint 3 overwrites checkpoint 1's two files. The copies
/// written into spares still rebuild a lost node exactly.
#[test]
fn l2_file_and_partner_copy_overwrite_their_spares() {
    let root = tempfile::tempdir().unwrap();
    let cfg = |rank: u32| Config {
        node_size: 1,
        group_size: 4,
        local_test: true,
        rank,
        ..crate::util::config(root.path())
    };
    let lens = [30_000, 8_000, 20_000];
    crate::util::on_ranks(4, |comm| {
        let rank = comm.rank();
        let mut fti = Fti::init_with(cfg(rank), comm).unwrap();
        let mut first = None;
        for (id, len) in (1..=3).zip(lens) {
            let mut data = values(id * 10 + rank as i32, len);
            let info = fti
                .checkpoint(id, Level::L2, &[Var::slice(0, &mut data)])
                .unwrap();
            let copy = info.path.with_file_name(format!("Ckpt{id}-Pcof{rank}.fti"));
            let inodes = (inode(&info.path), inode(&copy));
            match id {
                1 => first = Some(inodes),
                3 => assert_eq!(Some(inodes), first, "rank {rank}: checkpoint 1's files"),
                _ => {}
            }
        }
    });
    let spares = named(root.path(), ".spare");
    assert_eq!(
        spares.len(),
        8,
        "a checkpoint file and a copy per rank: {spares:?}"
    );
    std::fs::remove_dir_all(root.path().join("Local/node1")).unwrap();
    crate::util::on_ranks(4, |comm| {
        let rank = comm.rank();
        let mut fti = Fti::init_with(cfg(rank), comm).unwrap();
        let mut data = vec![0.0; lens[2]];
        let info = fti.recover(&mut [Var::slice(0, &mut data)]).unwrap();
        assert_eq!((info.id, info.level), (3, Level::L2));
        assert_eq!(data, values(30 + rank as i32, lens[2]), "rank {rank}");
    });
}
