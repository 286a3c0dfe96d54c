//! The pessimistic power-cut model (`fti::storage::CrashState`) over every level on 4 ranks:
//! one run of 3 checkpoints is logged, and for every operation of it, a power cut there leaves
//! what was synced plus any subset of the changes made since. Each crash state explored is
//! restarted with the real runtime on 4 ranks: it must recover exactly the last checkpoint
//! whose call had returned, or the one in flight, on every rank; at L2 and L3 it must do so
//! again with one node's files lost as well.
//!
//! The states explored per cut point: none of the unsynced changes, and `FTI_POWER_CUT_STATES`
//! (default 1) random subsets from a seed (`FTI_POWER_CUT_SEED`, default 1); identical images
//! are restarted once. `FTI_POWER_CUT_STATES=all` explores every subset of a cut point with at
//! most 10 pending changes, and 1,024 random ones beyond (`scripts/power-cut-exhaustive`).

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;

use crate::util::on_ranks;
use fti::report::{Priority, Reporter};
use fti::storage::{CrashState, PowerCut};
use fti::{Comm, Config, Fti, Level, Options, Role, Status, Var};

const RANKS: u32 = 4;

/// How the run is laid out: 4 ranks, one per node; or with dedicated heads (`head = 1`,
/// `node_size = 2`: 8 processes, a head and an application rank per node) post-processing
/// every level (`inline_lK = 0`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Layout {
    Ranks,
    Heads,
}

impl Layout {
    fn processes(self) -> u32 {
        match self {
            Layout::Ranks => RANKS,
            Layout::Heads => 2 * RANKS,
        }
    }
}

/// On a head: serves its node until the application finalizes or, as the application ranks
/// of these runs never finalize, until one is gone (as the job would end it).
fn serve_until_gone(fti: Fti) {
    let serve = std::panic::AssertUnwindSafe(|| fti.serve_as_head());
    assert!(
        std::panic::catch_unwind(serve).is_err(),
        "served past a crash"
    );
}
const COUNT: i32 = 3;

struct Quiet;

impl Reporter for Quiet {
    fn report(&self, _: Priority, _: u32, _: &str) {}
}

/// Checkpoint `k`'s data on `rank`: most bytes shared with its neighbours, so that a mix of
/// two checkpoints, or of two ranks, is visible.
fn content(rank: u32, k: i32) -> Vec<u8> {
    (0..3_000 + 500 * (k as usize % 3))
        .map(|j| (j % 251) as u8 ^ (rank as u8) << 4 ^ if j % 7 == 0 { k as u8 } else { 0 })
        .collect()
}

/// The run's config: FTI's I/O mode `ckpt_io` (3: FTI-FF, 1: POSIX, 2: MPI-IO).
fn write_config(root: &Path, ckpt_io: u8, layout: Layout) {
    let nodes = match layout {
        Layout::Ranks => "node_size = 1",
        Layout::Heads => "node_size = 2\nhead = 1\ninline_l2 = 0\ninline_l3 = 0\ninline_l4 = 0",
    };
    std::fs::write(
        root.join("config.fti"),
        format!(
            "[basic]\nckpt_dir = {0}/Local\nglbl_dir = {0}/Global\nmeta_dir = {0}/Meta\n\
             verbosity = 3\ngroup_size = 4\n{nodes}\nlocal_test = 1\nckpt_io = {ckpt_io}\n\n\
             [restart]\nfailure = 0\nexec_id = X\n",
            root.display()
        ),
    )
    .unwrap();
}

fn options(storage: Arc<dyn fti::storage::Storage>) -> Options {
    Options {
        reporter: Arc::new(Quiet),
        storage,
        ..Options::default()
    }
}

fn config(root: &Path) -> Config {
    Config::from_file(&root.join("config.fti")).unwrap()
}

/// One rank's run: `COUNT` checkpoints at `level`; after each returns, the storage's
/// operation count (the checkpoint had returned before that operation). Nothing on a head.
fn run_rank(root: &Path, level: Level, storage: &PowerCut, comm: Box<dyn Comm>) -> Vec<u64> {
    let rank = comm.rank();
    let mut fti =
        Fti::init_with_options(config(root), comm, options(Arc::new(storage.clone()))).unwrap();
    if fti.role() == Role::Head {
        serve_until_gone(fti);
        return Vec::new();
    }
    (1..=COUNT)
        .map(|k| {
            let mut id = k as u64;
            let mut data = content(rank, k);
            fti.checkpoint(k, level, &[Var::new(0, &mut id), Var::slice(1, &mut data)])
                .unwrap();
            storage.ops()
        })
        .collect()
}

/// The logged run, and for each checkpoint the first operation by which some rank's call had
/// returned.
fn logged_run(root: &Path, level: Level, ckpt_io: u8, layout: Layout) -> (PowerCut, Vec<u64>) {
    write_config(root, ckpt_io, layout);
    let storage = PowerCut::new(root, None).unwrap();
    let per_rank = on_ranks(layout.processes(), |comm| {
        run_rank(root, level, &storage, comm)
    });
    let apps: Vec<&Vec<u64>> = per_rank.iter().filter(|r| !r.is_empty()).collect();
    let returned = (0..COUNT as usize)
        .map(|k| apps.iter().map(|r| r[k]).min().unwrap())
        .collect();
    (storage, returned)
}

/// Restarts the tree at `root` as `layout`; checks every application rank recovers the same
/// checkpoint, from `oldest` to `done + 1` (`done` the last whose call had returned), with its
/// own data; `what` names the case. An `oldest` of 0 accepts a fresh start.
fn check_restart(root: &Path, (oldest, done): (i32, i32), what: &str, layout: Layout) {
    let ids = on_ranks(layout.processes(), |comm| {
        let rank = comm.rank();
        let cfg = config(root);
        let fresh = cfg.failure.unwrap_or(0) == 0 || oldest == 0;
        let mut fti = Fti::init_with_options(cfg, comm, options(Arc::new(fti::storage::Disk)))
            .unwrap_or_else(|e| panic!("{what}: rank {rank}: restart failed: {e}"));
        if fti.role() == Role::Head {
            serve_until_gone(fti);
            return None;
        }
        let Status::Restart(info) = fti.status().clone() else {
            assert!(
                fresh,
                "{what}: rank {rank}: the config says restart, nothing recoverable: {:?}",
                fti.skipped()
            );
            return Some(0);
        };
        let mut id = 0u64;
        let mut data = vec![0u8; fti.stored_size(1).unwrap() as usize];
        fti.recover(&mut [Var::new(0, &mut id), Var::slice(1, &mut data)])
            .unwrap_or_else(|e| panic!("{what}: rank {rank}: recover failed: {e}"));
        assert_eq!(id, info.id as u64, "{what}: rank {rank}: id variable");
        assert!(
            data == content(rank, info.id),
            "{what}: rank {rank}: checkpoint {} holds other data",
            info.id
        );
        Some(info.id)
    });
    let ids: Vec<i32> = ids.into_iter().flatten().collect();
    assert!(
        ids.iter().all(|id| *id == ids[0]),
        "{what}: ranks recovered different checkpoints: {ids:?}"
    );
    assert!(
        (oldest..=done + 1).contains(&ids[0]),
        "{what}: recovered checkpoint {} after checkpoint {done} returned",
        ids[0]
    );
}

/// A small seeded generator (splitmix64): the same sample on every run with the same seed.
struct Seeded(u64);

impl Seeded {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A random subset of `n` changes, as a bit per change.
    fn subset(&mut self, n: usize) -> Vec<bool> {
        (0..n).map(|_| self.next() & 1 == 1).collect()
    }
}

/// The subsets of a state's pending changes to explore: none of them, and a random sample
/// (`FTI_POWER_CUT_STATES`, default 1; `all`: every subset up to 10 changes, else all of them
/// and 1,024 random ones).
fn subsets(state: &CrashState, rng: &mut Seeded) -> Vec<Vec<bool>> {
    let n = state.pending();
    let mut out = vec![vec![false; n]];
    match std::env::var("FTI_POWER_CUT_STATES").as_deref() {
        Ok("all") if n <= 10 => {
            out = (0..1u32 << n)
                .map(|bits| (0..n).map(|i| bits >> i & 1 == 1).collect())
                .collect();
        }
        Ok("all") => {
            out.push(vec![true; n]);
            out.extend((0..1 << 10).map(|_| rng.subset(n)));
        }
        other => {
            let count = other.ok().and_then(|s| s.parse().ok()).unwrap_or(1);
            out.extend((0..count).map(|_| rng.subset(n)));
        }
    }
    out
}

/// A digest of every path (directories included) and file content under `dir`, to restart
/// each distinct image once.
fn digest(dir: &Path) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    let mut stack = vec![dir.to_owned()];
    let mut paths = Vec::new();
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p.clone());
            }
            paths.push(p);
        }
    }
    paths.sort();
    for p in paths {
        p.strip_prefix(dir).unwrap().hash(&mut h);
        if p.is_file() {
            std::fs::read(&p).unwrap().hash(&mut h);
        }
    }
    h.finish()
}

/// Every cut point of a logged run at `level` in I/O mode `ckpt_io`, each with its sample of
/// crash states.
fn explore(level: Level, ckpt_io: u8) {
    explore_as(level, ckpt_io, Layout::Ranks);
}

/// [`explore`] with the processes laid out as `layout`.
fn explore_as(level: Level, ckpt_io: u8, layout: Layout) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("run");
    std::fs::create_dir(&root).unwrap();
    let (storage, returned) = logged_run(&root, level, ckpt_io, layout);
    let total = storage.ops();
    let seed = std::env::var("FTI_POWER_CUT_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    let mut rng = Seeded(seed);
    let mut seen = HashSet::new();
    let image = dir.path().join("image");
    let mut max_pending = 0;
    for cut in 0..=total {
        let done = returned.iter().filter(|at| **at <= cut).count() as i32;
        let state = storage.crash_state(cut);
        max_pending = max_pending.max(state.pending());
        for subset in subsets(&state, &mut rng) {
            let _ = std::fs::remove_dir_all(&image);
            std::fs::create_dir(&image).unwrap();
            state.write_image(&image, |i| subset[i]).unwrap();
            // The image stands where the run was: its config names these paths.
            let _ = std::fs::remove_dir_all(&root);
            std::fs::rename(&image, &root).unwrap();
            if !seen.insert(digest(&root)) {
                continue;
            }
            let what = format!(
                "{level}, ckpt_io = {ckpt_io}, power cut at operation {cut} of {total}, {} of {} unsynced changes",
                subset.iter().filter(|b| **b).count(),
                subset.len()
            );
            // The node loss is checked on the same image as it was before any restart.
            let copy = dir.path().join("copy");
            let node_loss = matches!(level, Level::L2 | Level::L3);
            if node_loss {
                let _ = std::fs::remove_dir_all(&copy);
                std::fs::create_dir(&copy).unwrap();
                state.write_image(&copy, |i| subset[i]).unwrap();
            }
            check_restart(&root, (done, done), &what, layout);
            if node_loss {
                std::fs::remove_dir_all(&root).unwrap();
                std::fs::rename(&copy, &root).unwrap();
                let _ = std::fs::remove_dir_all(root.join("Local/node1"));
                // The heads' partner copies and encoding of a returned checkpoint may still
                // be under way: a node lost then leaves the one before, whose redundancy the
                // next checkpoint waited for (nothing, before the first is complete).
                let oldest = match layout {
                    Layout::Ranks => done,
                    Layout::Heads => done - 1,
                };
                let what = format!("{what}, node 1 lost");
                check_restart(&root, (oldest.max(0), done), &what, layout);
            }
        }
    }
    if std::env::var_os("FTI_POWER_CUT_STATS").is_some() {
        eprintln!(
            "{level}, ckpt_io = {ckpt_io}: {total} operations, {} distinct crash images restarted, up to {max_pending} unsynced changes at a cut",
            seen.len()
        );
    }
}

#[test]
fn pessimistic_power_cuts_at_l1_on_4_ranks() {
    explore(Level::L1, 3);
}

#[test]
fn pessimistic_power_cuts_at_l2_on_4_ranks() {
    explore(Level::L2, 3);
}

#[test]
fn pessimistic_power_cuts_at_l3_on_4_ranks() {
    explore(Level::L3, 3);
}

#[test]
fn pessimistic_power_cuts_at_l4_on_4_ranks() {
    explore(Level::L4, 3);
}

/// FTI's POSIX files: the group's meta-data file is the commit point.
#[test]
fn pessimistic_power_cuts_of_posix_files_at_l2_on_4_ranks() {
    explore(Level::L2, 1);
}

#[test]
fn pessimistic_power_cuts_of_posix_files_at_l3_on_4_ranks() {
    explore(Level::L3, 1);
}

/// MPI-IO: L4 is one file shared by every rank.
#[test]
fn pessimistic_power_cuts_of_mpiio_files_at_l4_on_4_ranks() {
    explore(Level::L4, 2);
}

/// Dedicated heads encoding POSIX files (`inline_l3 = 0`): the application ranks' meta data
/// is the commit point of their files; the heads' encoding follows, its `rsed_checksum` added
/// to the meta data afterwards.
#[test]
fn pessimistic_power_cuts_of_posix_files_encoded_by_heads_at_l3() {
    explore_as(Level::L3, 1, Layout::Heads);
}

/// Dedicated heads flushing MPI-IO checkpoints into one shared L4 file.
#[test]
fn pessimistic_power_cuts_of_mpiio_files_flushed_by_heads_at_l4() {
    explore_as(Level::L4, 2, Layout::Heads);
}
