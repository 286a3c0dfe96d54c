//! Power-loss tests: a run of checkpoints on [`PowerCut`] storage loses power after its n-th
//! file operation, for every n. What a disk keeps then (only what was synced: file contents at
//! their last `fsync`, directory entries at their directory's last `fsync`) is restarted
//! with the real runtime, and so is what a process crash keeps (everything written). Either way
//! the restart must recover exactly the last checkpoint whose call returned (for asynchronous
//! checkpoints: whose completion the run saw, the next call or `wait` having returned), or the
//! one in flight, and the config's restart record must agree: `failure = 1` only with a checkpoint
//! to recover, `failure = 0` only before the first checkpoint returned or once finalize began.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use fti::report::{Priority, Reporter};
use fti::storage::PowerCut;
use fti::{Config, Fti, IoMode, Level, Options, SelfComm, Status, Var};
use ftiff::VarSize;

/// How the run checkpoints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Full,
    /// Differential checkpoints (`keep_ckpts = 2`: each updates the older file in place).
    Dcp,
    Icp,
    /// Full checkpoints, then finalize (the files go, the record says "fresh").
    Finalize,
    /// Full checkpoints, then finalize with `keep_last_ckpt` (flushed to L4, record 2).
    KeepLast,
    /// Asynchronous full checkpoints (`async_ckpt = 1`): written and published by the
    /// background thread; checkpoint k is guaranteed once call k+1 (or `wait`) returned.
    Async,
    /// Asynchronous differential checkpoints (deferred: the background thread updates the
    /// older file, the next call publishes it).
    AsyncDcp,
    /// Full checkpoints as POSIX files (`ckpt_io = 1`: raw files and the sector meta data),
    /// then finalize with `keep_last_ckpt` (files and meta data into L4).
    PosixKeepLast,
    /// MPI-IO (`ckpt_io = 2`), then finalize with `keep_last_ckpt`: the last checkpoint into
    /// L4's shared file.
    MpiIoKeepLast,
}

impl Mode {
    fn asynchronous(self) -> bool {
        matches!(self, Mode::Async | Mode::AsyncDcp)
    }

    fn dcp(self) -> bool {
        matches!(self, Mode::Dcp | Mode::AsyncDcp)
    }

    fn keep_last(self) -> bool {
        matches!(
            self,
            Mode::KeepLast | Mode::PosixKeepLast | Mode::MpiIoKeepLast
        )
    }
}

/// Checkpoints per run.
const COUNT: i32 = 3;

/// Checkpoint `k`'s data: most 1 KiB blocks shared with its neighbours, so that a mix of two
/// checkpoints is visible.
fn content(k: i32) -> Vec<u8> {
    (0..6_000 + 700 * (k as usize % 3))
        .map(|j| {
            let b = j / 1024;
            (b % 251) as u8 ^ if b % 3 == k as usize % 3 { k as u8 } else { 0 }
        })
        .collect()
}

struct Quiet;

impl Reporter for Quiet {
    fn report(&self, _: Priority, _: u32, _: &str) {}
}

fn write_config(root: &Path) -> PathBuf {
    let path = root.join("config.fti");
    std::fs::write(
        &path,
        format!(
            "[basic]\nckpt_dir = {0}/Local\nglbl_dir = {0}/Global\nmeta_dir = {0}/Meta\nverbosity = 3\n\n[restart]\nfailure = 0\nexec_id = X\n",
            root.display()
        ),
    )
    .unwrap();
    path
}

fn config(root: &Path, mode: Mode) -> Config {
    let mut cfg = Config::from_file(&root.join("config.fti")).unwrap();
    cfg.dcp = mode.dcp();
    cfg.dcp_block_size = 1024;
    cfg.keep_ckpts = if mode.dcp() { 2 } else { 1 };
    cfg.async_ckpt = mode.asynchronous();
    cfg.keep_last_ckpt = mode.keep_last();
    if mode == Mode::PosixKeepLast {
        cfg.io = IoMode::Posix;
    }
    if mode == Mode::MpiIoKeepLast {
        cfg.io = IoMode::MpiIo;
    }
    cfg
}

/// What the run saw before the power went.
#[derive(Debug, Default)]
struct Seen {
    /// The last checkpoint whose call returned Ok.
    done: i32,
    /// Whether finalize was called.
    finalizing: bool,
}

/// Runs the checkpoints (and finalize) of `mode` on `storage` until an operation fails.
fn run(root: &Path, mode: Mode, storage: &PowerCut) -> Seen {
    let mut seen = Seen::default();
    let options = Options {
        reporter: Arc::new(Quiet),
        storage: Arc::new(storage.clone()),
        ..Options::default()
    };
    let Ok(mut fti) = Fti::init_with_options(config(root, mode), Box::new(SelfComm), options)
    else {
        return seen;
    };
    for k in 1..=COUNT {
        let mut id = k as u64;
        let mut data = content(k);
        let ok = if mode == Mode::Icp {
            let sizes = [
                VarSize { id: 0, size: 8 },
                VarSize {
                    id: 1,
                    size: data.len() as u64,
                },
            ];
            fti.init_icp(k, Level::L1, &sizes).is_ok()
                && fti.add_var_icp(&Var::slice(1, &mut data)).is_ok()
                && fti.add_var_icp(&Var::new(0, &mut id)).is_ok()
                && fti.finalize_icp().is_ok()
        } else {
            fti.checkpoint(
                k,
                Level::L1,
                &[Var::new(0, &mut id), Var::slice(1, &mut data)],
            )
            // An asynchronous call returns before the file is complete (timestamp 0).
            .inspect(|info| assert!(!mode.asynchronous() || info.timestamp == 0))
            .is_ok()
        };
        if !ok {
            return seen;
        }
        // An asynchronous call returns once the one before it is complete.
        seen.done = if mode.asynchronous() { k - 1 } else { k };
    }
    if mode.asynchronous() {
        if fti.wait().is_err() {
            return seen;
        }
        seen.done = COUNT;
    }
    if mode == Mode::Finalize || mode.keep_last() {
        seen.finalizing = true;
        let _ = fti.finalize();
    }
    seen
}

/// Restarts from the tree at `root` as a user would (the config file says whether to) and
/// checks what it recovers against what the run saw. `what` names the case in failures.
fn check_restart(root: &Path, mode: Mode, seen: &Seen, what: &str) {
    let cfg = config(root, mode);
    let failure = cfg.failure.unwrap_or(0);
    if failure == 0 {
        assert!(
            seen.done == 0 || seen.finalizing,
            "{what}: the config says fresh start, but checkpoint {} had returned",
            seen.done
        );
        return;
    }
    let options = Options {
        reporter: Arc::new(Quiet),
        ..Options::default()
    };
    let mut fti = Fti::init_with_options(cfg, Box::new(SelfComm), options)
        .unwrap_or_else(|e| panic!("{what}: restart failed: {e}"));
    let Status::Restart(info) = fti.status().clone() else {
        panic!(
            "{what}: the config says restart (failure = {failure}) but nothing is recoverable: {:?}",
            fti.skipped()
        );
    };
    let in_flight = if seen.finalizing {
        seen.done
    } else {
        seen.done + 1
    };
    assert!(
        info.id == seen.done || info.id == in_flight,
        "{what}: recovered checkpoint {} after checkpoint {} returned",
        info.id,
        seen.done
    );
    let mut id = 0u64;
    let mut data = vec![0u8; fti.stored_size(1).unwrap() as usize];
    fti.recover(&mut [Var::new(0, &mut id), Var::slice(1, &mut data)])
        .unwrap_or_else(|e| panic!("{what}: recover failed: {e}"));
    assert_eq!(id, info.id as u64, "{what}: id variable and file disagree");
    assert!(
        data == content(info.id),
        "{what}: checkpoint {} holds other data",
        info.id
    );
}

/// Every operation index of `mode`'s run: power cut there, then both restarts.
fn cut_everywhere(mode: Mode) {
    // The whole run once, to count its operations.
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path());
    let whole = PowerCut::new(dir.path(), None).unwrap();
    let seen = run(dir.path(), mode, &whole);
    assert_eq!(
        seen.done, COUNT,
        "{mode:?}: the run without a power cut failed"
    );
    let total = whole.ops();
    assert!(
        total > 20,
        "{mode:?}: only {total} operations: not on the storage?"
    );
    for n in 0..=total {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("run");
        std::fs::create_dir(&root).unwrap();
        write_config(&root);
        let storage = PowerCut::new(&root, Some(n)).unwrap();
        let seen = run(&root, mode, &storage);
        // (At n = total the run's last reads may meet the cut too.)
        assert!(
            storage.is_cut() || n == total,
            "{mode:?}: power cut at {n} of {total} never happened"
        );
        // Power failure: the durable image takes the run directory's place.
        let image = dir.path().join("image");
        std::fs::create_dir(&image).unwrap();
        storage.durable_image(&image).unwrap();
        let live = dir.path().join("live");
        std::fs::rename(&root, &live).unwrap();
        std::fs::rename(&image, &root).unwrap();
        check_restart(
            &root,
            mode,
            &seen,
            &format!("{mode:?}, power cut at operation {n} of {total}"),
        );
        // Process crash: every write the run made, synced or not.
        std::fs::remove_dir_all(&root).unwrap();
        std::fs::rename(&live, &root).unwrap();
        check_restart(
            &root,
            mode,
            &seen,
            &format!("{mode:?}, crash at operation {n} of {total}"),
        );
    }
}

#[test]
fn power_cut_at_every_operation_of_full_checkpoints() {
    cut_everywhere(Mode::Full);
}

#[test]
fn power_cut_at_every_operation_of_differential_checkpoints() {
    cut_everywhere(Mode::Dcp);
}

#[test]
fn power_cut_at_every_operation_of_incremental_checkpoints() {
    cut_everywhere(Mode::Icp);
}

#[test]
fn power_cut_at_every_operation_of_asynchronous_checkpoints() {
    cut_everywhere(Mode::Async);
}

#[test]
fn power_cut_at_every_operation_of_asynchronous_differential_checkpoints() {
    cut_everywhere(Mode::AsyncDcp);
}

#[test]
fn power_cut_at_every_operation_of_finalize() {
    cut_everywhere(Mode::Finalize);
}

#[test]
fn power_cut_at_every_operation_of_finalize_keeping_the_last_checkpoint() {
    cut_everywhere(Mode::KeepLast);
}

/// The simulated disk itself: unsynced data and unsynced names are lost, synced ones kept.
#[test]
fn durable_image_keeps_only_what_was_synced() {
    use fti::storage::Storage;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("r");
    std::fs::create_dir(&root).unwrap();
    std::fs::write(root.join("old"), b"before").unwrap();
    let st = PowerCut::new(&root, None).unwrap();
    st.create_dir(&root.join("d")).unwrap();
    let a = st.create(&root.join("d/a")).unwrap();
    a.write_all_at(b"synced", 0).unwrap();
    a.sync().unwrap();
    a.write_all_at(b"SYNCED, then changed", 0).unwrap();
    let b = st.create(&root.join("b")).unwrap();
    b.write_all_at(b"never synced", 0).unwrap();
    st.sync_dir(&root).unwrap();
    st.sync_dir(&root.join("d")).unwrap();
    st.rename(&root.join("old"), &root.join("new")).unwrap();
    let image = dir.path().join("img");
    std::fs::create_dir(&image).unwrap();
    st.durable_image(&image).unwrap();
    assert_eq!(std::fs::read(image.join("d/a")).unwrap(), b"synced");
    assert_eq!(std::fs::read(image.join("b")).unwrap(), b"");
    // The rename's directory was not synced after it: the old name survives.
    assert_eq!(std::fs::read(image.join("old")).unwrap(), b"before");
    assert!(!image.join("new").exists());
    // A directory made durable but whose parent was not: its files are unreachable.
    let st2 = PowerCut::new(&root, Some(3)).unwrap();
    st2.create_dir(&root.join("e")).unwrap();
    let c = st2.create(&root.join("e/c")).unwrap();
    c.sync().unwrap();
    assert!(
        st2.sync_dir(&root.join("e")).is_err(),
        "power is cut at op 3"
    );
    assert!(st2.is_cut());
    let image2 = dir.path().join("img2");
    std::fs::create_dir(&image2).unwrap();
    st2.durable_image(&image2).unwrap();
    assert!(!image2.join("e").exists());
}

/// The syncs of one checkpoint in a steady run (directories made, an older checkpoint to
/// retire), per rank, at L1, L2 and L3 with four ranks: one data sync per file written (the
/// rank's file, and its partner copy or code file), and the directory syncs batched per
/// checkpoint: one when the checkpoint's files are published, one when older ones are retired.
#[test]
fn one_data_sync_per_file_and_directory_syncs_batched_per_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let storage = PowerCut::new(root, None).unwrap();
    let cfg = Config {
        ckpt_dir: root.join("Local"),
        glbl_dir: root.join("Global"),
        meta_dir: root.join("Meta"),
        group_size: 4,
        node_size: 1,
        local_test: true,
        verbosity: 3,
        ..Config::default()
    };
    let levels = [1, 1, 1, 2, 2, 3, 3].map(|l| Level::from_number(l).unwrap());
    let phase = std::sync::Barrier::new(5);
    let counts = std::thread::scope(|s| {
        for comm in fti::Threads::new(4, "host") {
            let (cfg, storage, phase) = (cfg.clone(), storage.clone(), &phase);
            s.spawn(move || {
                let options = Options {
                    reporter: Arc::new(Quiet),
                    storage: Arc::new(storage),
                    ..Options::default()
                };
                let mut fti = Fti::init_with_options(cfg, Box::new(comm), options).unwrap();
                for (k, level) in (1..).zip(levels) {
                    let mut data = content(k);
                    fti.checkpoint(k, level, &[Var::slice(0, &mut data)])
                        .unwrap();
                    // Every rank is done; the counts are read; on to the next.
                    phase.wait();
                    phase.wait();
                }
            });
        }
        levels.map(|_| {
            phase.wait();
            let syncs = storage.syncs();
            phase.wait();
            syncs
        })
    });
    // Checkpoints 3, 5 and 7 follow one of the same level.
    for (k, level, files) in [(3, "L1", 1), (5, "L2", 2), (7, "L3", 2)] {
        let (before, after) = (counts[k - 2], counts[k - 1]);
        let (file_syncs, dir_syncs) = (after.files - before.files, after.dirs - before.dirs);
        assert_eq!(file_syncs, 4 * files, "{level}: file syncs of 4 ranks");
        assert!(
            dir_syncs <= 4 * 2,
            "{level}: {dir_syncs} directory syncs for 4 ranks"
        );
    }
}

/// The pessimistic model: at a cut, any subset of the unsynced changes may be on the disk, in
/// program order; a rename inside one directory is all or nothing, one between directories is
/// two changes; what was synced is always there.
#[test]
fn crash_states_hold_any_subset_of_unsynced_changes() {
    use fti::storage::Storage;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("r");
    std::fs::create_dir_all(root.join("a")).unwrap();
    std::fs::create_dir(root.join("b")).unwrap();
    std::fs::write(root.join("a/old"), b"old").unwrap();
    let st = PowerCut::new(&root, None).unwrap();
    let f = st.create(&root.join("a/tmp")).unwrap(); // op 0
    f.write_all_at(b"new data", 0).unwrap(); // op 1
    f.sync().unwrap(); // op 2
    st.rename(&root.join("a/tmp"), &root.join("a/old")).unwrap(); // op 3: same directory
    f.write_all_at(b"NEW", 0).unwrap(); // op 4: unsynced content
    st.rename(&root.join("a/old"), &root.join("b/moved"))
        .unwrap(); // op 5: two directories
    let image = |cut: u64, reached: &dyn Fn(usize) -> bool| {
        let out = tempfile::tempdir().unwrap();
        st.crash_state(cut)
            .write_image(out.path(), reached)
            .unwrap();
        let read = |p: &str| std::fs::read(out.path().join(p)).ok();
        (read("a/old"), read("a/tmp"), read("b/moved"))
    };
    let text = |s: &str| Some(s.as_bytes().to_vec());
    // Before the sync: the file's name and content are pending (create, write).
    assert_eq!(st.crash_state(2).pending(), 2);
    assert_eq!(image(2, &|_| false), (text("old"), None, None));
    assert_eq!(image(2, &|i| i == 0), (text("old"), Some(vec![]), None));
    // After the same-directory rename: all or nothing (pending: create, rename).
    let state = st.crash_state(4);
    assert_eq!(state.pending(), 2);
    assert_eq!(image(4, &|i| i == 1), (text("new data"), None, None));
    assert_eq!(image(4, &|i| i == 0), (text("old"), text("new data"), None));
    // The last write either reached the disk or not; the move between directories may have
    // reached one directory only: the file under both names, or under none. (Pending: the
    // create, the rename in `a`, the write, the move's change in `a`, then in `b`.)
    let state = st.crash_state(6);
    assert_eq!(state.pending(), 5);
    let all = image(6, &|_| true);
    assert_eq!(all, (None, None, text("NEW data")));
    assert_eq!(
        image(6, &|i| i != 2 && i != 3),
        (text("new data"), None, text("new data"))
    );
    assert_eq!(
        image(6, &|i| i == 1 || i == 3),
        (None, None, None),
        "the old name removed, the new one not there"
    );
}

/// POSIX files (`ckpt_io = 1`): the sector meta-data file is the commit point; the one it
/// replaces is kept until the new checkpoint is retired, so a cut anywhere leaves the last
/// checkpoint whose call returned (or the one in flight) described and whole. The run ends with
/// finalize and `keep_last_ckpt`, so the cuts cover the checkpoints and the flush to L4.
#[test]
fn power_cut_at_every_operation_of_posix_checkpoints() {
    cut_everywhere(Mode::PosixKeepLast);
}

/// MPI-IO (`ckpt_io = 2`): as POSIX, the last checkpoint kept in L4's shared file at finalize.
#[test]
fn power_cut_at_every_operation_of_mpiio_checkpoints() {
    cut_everywhere(Mode::MpiIoKeepLast);
}
