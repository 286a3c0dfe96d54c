//! Regressions found by review: each test names the problem it guards against.

use std::path::Path;
use std::time::Duration;

use fti::{Config, Fti, Level, Snapshot, Status, Var};
use ftiff::VarSize;

fn config(root: &Path) -> Config {
    Config {
        dcp_block_size: 4096,
        ..crate::util::config(root)
    }
}

/// A differential L4 checkpoint must not rewrite the only L4 file in place.
#[test]
fn dcp_never_rewrites_the_last_checkpoint_of_a_level() {
    let root = tempfile::tempdir().unwrap();
    let mut fti = Fti::init(Config {
        dcp: true,
        ..config(root.path())
    })
    .unwrap();
    let mut x = vec![1u8; 100_000];
    let full = fti
        .checkpoint(1, Level::L4, &[Var::slice(0, &mut x)])
        .unwrap()
        .bytes_written;
    fti.checkpoint(2, Level::L1, &[Var::slice(0, &mut x)])
        .unwrap();
    x[5] = 2;
    let third = fti
        .checkpoint(3, Level::L4, &[Var::slice(0, &mut x)])
        .unwrap();
    assert_eq!(
        third.bytes_written, full,
        "checkpoint 1 was the only L4 file: no in-place update"
    );
}

/// Restarting from a chosen older checkpoint abandons the newer ones, so a later restart
/// continues the new timeline.
#[test]
fn restart_from_an_older_checkpoint_abandons_newer_ones() {
    let root = tempfile::tempdir().unwrap();
    let cfg = Config {
        keep_ckpts: 4,
        ..config(root.path())
    };
    let mut fti = Fti::init(cfg.clone()).unwrap();
    for id in 1..=4 {
        let mut v = id as u32 * 100;
        fti.checkpoint(id, Level::L1, &[Var::new(0, &mut v)])
            .unwrap();
    }
    drop(fti);
    let mut fti = Fti::init(Config {
        restart_id: Some(2),
        ..cfg.clone()
    })
    .unwrap();
    let mut v = 0u32;
    fti.recover(&mut [Var::new(0, &mut v)]).unwrap();
    assert_eq!(v, 200);
    v = 333;
    fti.checkpoint(3, Level::L1, &[Var::new(0, &mut v)])
        .unwrap();
    drop(fti);
    let mut fti = Fti::init(cfg).unwrap();
    let Status::Restart(info) = fti.status().clone() else {
        panic!()
    };
    assert_eq!(info.id, 3);
    fti.recover(&mut [Var::new(0, &mut v)]).unwrap();
    assert_eq!(v, 333);
}

#[test]
fn checkpoint_is_refused_while_an_incremental_one_is_open() {
    let root = tempfile::tempdir().unwrap();
    let mut fti = Fti::init(config(root.path())).unwrap();
    let mut x = 1u64;
    fti.init_icp(5, Level::L1, &[VarSize { id: 0, size: 8 }])
        .unwrap();
    assert!(matches!(
        fti.checkpoint(6, Level::L1, &[Var::new(0, &mut x)]),
        Err(fti::Error::State(_))
    ));
    fti.add_var_icp(&Var::new(0, &mut x)).unwrap();
    assert_eq!(fti.finalize_icp().unwrap().id, 5);
}

/// An incremental checkpoint that fails or is abandoned leaves nothing under `tmp/`.
#[test]
fn failed_or_abandoned_incremental_checkpoint_leaves_no_file() {
    let root = tempfile::tempdir().unwrap();
    let mut fti = Fti::init(config(root.path())).unwrap();
    let tmp = fti.dirs().tmp_dir(Level::L1);
    fti.init_icp(1, Level::L1, &[VarSize { id: 0, size: 8 }])
        .unwrap();
    assert!(fti.finalize_icp().is_err());
    assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0);
    fti.init_icp(2, Level::L1, &[VarSize { id: 0, size: 8 }])
        .unwrap();
    drop(fti);
    assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0);
}

/// One rank's finalize removes its own files only: ranks share the global directory (and the
/// local one when they share a node).
#[test]
fn finalize_leaves_other_ranks_files_alone() {
    let root = tempfile::tempdir().unwrap();
    let base = Config {
        failure: Some(0),
        node_size: 2,
        ..config(root.path())
    };
    // Two one-rank runtimes stand for the two ranks of a run: they share an execution id when
    // started within the same second, rank 1 first (rank 0 writes Topology.fti at init, which
    // makes the id taken for a later fresh run).
    let mut ranks: Vec<Fti> = loop {
        let mut ranks: Vec<Fti> = (0..2)
            .rev()
            .map(|rank| {
                Fti::init(Config {
                    rank,
                    ..base.clone()
                })
                .unwrap()
            })
            .collect();
        ranks.reverse();
        if ranks[0].exec_id() == ranks[1].exec_id() {
            break ranks;
        }
    };
    let e = ranks[0].exec_id().to_owned();
    for (rank, fti) in ranks.iter_mut().enumerate() {
        let mut x = rank as u8;
        fti.checkpoint(1, Level::L4, &[Var::new(0, &mut x)])
            .unwrap();
        fti.checkpoint(2, Level::L1, &[Var::new(0, &mut x)])
            .unwrap();
    }
    let rank1 = ranks.pop().unwrap();
    ranks.pop().unwrap().finalize().unwrap();
    let at = |p: String| root.path().join(p);
    assert!(at(format!("Global/{e}/l4/Ckpt1-Rank1.fti")).is_file());
    assert!(at(format!("Local/node0/{e}/l1/Ckpt2-Rank1.fti")).is_file());
    assert!(!at(format!("Local/node0/{e}/l1/Ckpt2-Rank0.fti")).exists());
    rank1.finalize().unwrap();
    assert!(!at(format!("Global/{e}")).exists());
    assert!(!at(format!("Local/node0/{e}")).exists());
}

/// With `inline_l4 = 0` the L1 file stays an L1 checkpoint after its L4 copy, so differential
/// checkpoints keep working.
#[test]
fn dcp_with_l4_flushed_from_local() {
    let root = tempfile::tempdir().unwrap();
    let mut fti = Fti::init(Config {
        dcp: true,
        inline_l4: false,
        ..config(root.path())
    })
    .unwrap();
    let mut x = vec![7u8; 200_000];
    let mut written = Vec::new();
    for id in 1..=5 {
        x[id as usize * 10] = id as u8;
        written.push(
            fti.checkpoint(id, Level::L4, &[Var::slice(0, &mut x)])
                .unwrap()
                .bytes_written,
        );
    }
    assert!(written[2..].iter().all(|&w| w < 20_000), "{written:?}");
    drop(fti);
    let mut fti = Fti::init(config(root.path())).unwrap();
    let mut back = vec![0u8; 200_000];
    fti.recover(&mut [Var::slice(0, &mut back)]).unwrap();
    assert_eq!(back, x);
}

/// After a stall of several intervals, one checkpoint is taken, not one per missed interval.
#[test]
fn snapshot_does_not_catch_up_missed_intervals() {
    let root = tempfile::tempdir().unwrap();
    let mut cfg = config(root.path());
    cfg.intervals[0] = Some(Duration::from_millis(20));
    let mut fti = Fti::init(cfg).unwrap();
    let mut x = 0u32;
    std::thread::sleep(Duration::from_millis(110));
    assert!(matches!(
        fti.snapshot(&mut [Var::new(0, &mut x)]).unwrap(),
        Snapshot::Checkpointed(_)
    ));
    assert_eq!(
        fti.snapshot(&mut [Var::new(0, &mut x)]).unwrap(),
        Snapshot::Nothing
    );
}

/// keep_last_ckpt before recovering a restart keeps the restart's checkpoint.
#[test]
fn finalize_before_recover_keeps_the_restart_checkpoint() {
    let root = tempfile::tempdir().unwrap();
    let cfg = Config {
        keep_last_ckpt: true,
        ..config(root.path())
    };
    let mut fti = Fti::init(cfg.clone()).unwrap();
    let mut x = 9u16;
    fti.checkpoint(1, Level::L1, &[Var::new(0, &mut x)])
        .unwrap();
    drop(fti);
    let fti = Fti::init(cfg.clone()).unwrap();
    assert!(matches!(fti.status(), Status::Restart(_)));
    fti.finalize().unwrap();
    let mut fti = Fti::init(cfg).unwrap();
    let mut back = 0u16;
    fti.recover(&mut [Var::new(0, &mut back)]).unwrap();
    assert_eq!(back, 9);
}
