//! The whole runtime on [`fti::storage::Memory`]: init, checkpoints at every level on 4
//! ranks, a crash, the loss of a node's files and the restart, with the run's directories
//! never made on disk. A read or write that bypassed the storage seam would not find the
//! run's files (or would leave some on disk), so this is the seam's test.

use std::path::Path;
use std::sync::Arc;

use crate::util::on_ranks;
use fti::storage::Memory;
use fti::{Config, Fti, Level, Options, Status, Var};

fn config(root: &Path, ckpt_io: fti::IoMode) -> Config {
    Config {
        ckpt_dir: root.join("Local"),
        glbl_dir: root.join("Global"),
        meta_dir: root.join("Meta"),
        group_size: 4,
        node_size: 1,
        local_test: true,
        verbosity: 3,
        io: ckpt_io,
        ..Config::default()
    }
}

fn data(rank: u32, k: i32) -> Vec<u64> {
    (0..3000)
        .map(|i| u64::from(rank) << 40 | (k as u64) << 20 | i)
        .collect()
}

fn options(memory: &Memory) -> Options {
    Options {
        storage: Arc::new(memory.clone()),
        ..Options::default()
    }
}

/// Checkpoints 1..=4 at L1..L4 (then 5 at `last`) on 4 ranks, and no finalize: a crash.
fn run(root: &Path, memory: &Memory, io: fti::IoMode, last: Level) {
    on_ranks(4, |comm| {
        let rank = comm.rank();
        let mut fti = Fti::init_with_options(config(root, io), comm, options(memory)).unwrap();
        for (k, level) in (1..).zip([Level::L1, Level::L2, Level::L3, Level::L4, last]) {
            let mut v = data(rank, k);
            fti.checkpoint(k, level, &[Var::slice(1, &mut v)]).unwrap();
        }
    });
}

/// Restarts on 4 ranks; every rank recovers checkpoint 5 with its data.
fn restart(root: &Path, memory: &Memory, io: fti::IoMode, what: &str) {
    on_ranks(4, |comm| {
        let rank = comm.rank();
        let mut fti = Fti::init_with_options(config(root, io), comm, options(memory)).unwrap();
        let Status::Restart(info) = fti.status().clone() else {
            panic!("{what}: rank {rank}: not a restart: {:?}", fti.skipped());
        };
        assert_eq!(info.id, 5, "{what}: rank {rank}");
        // The file's time: its own (FTI-FF) or the storage's (POSIX).
        assert_ne!(info.timestamp, 0, "{what}: rank {rank}");
        let mut got = vec![0u64; 3000];
        fti.recover(&mut [Var::slice(1, &mut got)]).unwrap();
        assert_eq!(got, data(rank, 5), "{what}: rank {rank}");
    });
}

#[test]
fn the_runtime_runs_in_memory_at_every_level_and_restarts_after_a_node_loss() {
    let dir = tempfile::tempdir().unwrap();
    // The run's root is never made on disk.
    let root = dir.path().join("in-memory");
    for io in [fti::IoMode::Ftiff, fti::IoMode::Posix] {
        for last in [Level::L2, Level::L3] {
            let what = format!("{io:?}, last checkpoint at {last}");
            let memory = Memory::new(&root);
            run(&root, &memory, io, last);
            assert!(
                memory
                    .files()
                    .iter()
                    .any(|(p, _)| p.starts_with(root.join("Global"))),
                "{what}: L4 files in memory"
            );
            restart(&root, &memory, io, &what);
            // Node 1's local files are lost: checkpoint 5 comes back from the others.
            memory.remove_tree(&root.join("Local/node1"));
            restart(&root, &memory, io, &format!("{what}, node 1 lost"));
            assert!(!root.exists(), "{what}: nothing of the run on disk");
        }
    }
}
