//! A run of `n` ranks as threads, each on its own counting storage (`fti::storage::Counting`),
//! counting what each rank does as the job grows: init, checkpoints at L1, L2 and L4, then a
//! second run that restarts, recovers, checkpoints once more at L1 and finalizes. Shared by
//! the growth test (`tests/scale.rs`) and the bench (`benches/scale.rs`).

use std::path::Path;
use std::sync::Arc;

use fti::storage::{Class, Counting, Counts, Disk, Op};
use fti::topology::Topology;
use fti::{Comm, Config, Fti, Level, Options, Threads, Var};

/// The phases counted, in order.
pub const PHASES: [&str; 4] = ["init", "checkpoints", "restart", "finalize"];

/// What one rank did in one phase.
#[derive(Debug, Clone, Default)]
pub struct Work {
    /// Storage operations, by kind and class.
    pub storage: Counts,
    /// Messages this rank sent.
    pub messages: u64,
    /// Their bytes.
    pub bytes: u64,
}

/// The config of a scaling run under `root`: one rank per node (`node<N>/`), groups of 4.
pub fn config(root: &Path) -> Config {
    Config {
        ckpt_dir: root.join("Local"),
        glbl_dir: root.join("Global"),
        meta_dir: root.join("Meta"),
        group_size: 4,
        node_size: 1,
        local_test: true,
        verbosity: 4,
        ..Config::default()
    }
}

/// Tiny data of checkpoint `id` on `rank`.
fn data(id: i32, rank: u32) -> Vec<u32> {
    (0..64).map(|i| i ^ rank ^ (id as u32) << 16).collect()
}

fn checkpoint(fti: &mut Fti, id: i32, level: Level, rank: u32) {
    let mut v = data(id, rank);
    fti.checkpoint(id, level, &[Var::slice(0, &mut v)]).unwrap();
}

/// One rank's phases, its work in each: what its storage and its communicator counted.
fn rank_run(root: &Path, (comm, again): (Threads, Threads), n: u32) -> Vec<Work> {
    let rank = comm.rank();
    let topology = Topology::new(&(0..n).collect::<Vec<_>>(), 1, 4).unwrap();
    let partners = topology.place(rank).unwrap().group.clone();
    let storage = Counting::new(Arc::new(Disk), rank, partners);
    let traffic = [comm.traffic(), again.traffic()];
    let options = || Options {
        storage: Arc::new(storage.clone()),
        ..Options::default()
    };
    let mut work = Vec::new();
    let mut end = || {
        work.push(Work {
            storage: storage.counts(),
            messages: traffic.iter().map(|t| t.messages()).sum(),
            bytes: traffic.iter().map(|t| t.bytes()).sum(),
        });
        storage.reset();
        traffic.iter().for_each(|t| t.reset());
    };
    let mut fti = Fti::init_with_options(config(root), Box::new(comm), options()).unwrap();
    end();
    checkpoint(&mut fti, 1, Level::L1, rank);
    checkpoint(&mut fti, 2, Level::L2, rank);
    checkpoint(&mut fti, 3, Level::L4, rank);
    end();
    // The run stops without finalize, as a failure would stop it.
    drop(fti);
    let mut fti = Fti::init_with_options(config(root), Box::new(again), options()).unwrap();
    let mut v = vec![0u32; 64];
    fti.recover(&mut [Var::slice(0, &mut v)]).unwrap();
    assert_eq!(v, data(3, rank), "rank {rank} recovers checkpoint 3");
    end();
    checkpoint(&mut fti, 4, Level::L1, rank);
    fti.finalize().unwrap();
    end();
    work
}

/// Runs the scenario on `n` ranks under `root`: `work[phase][rank]`.
pub fn run(root: &Path, n: u32) -> Vec<Vec<Work>> {
    let by_rank: Vec<Vec<Work>> = std::thread::scope(|s| {
        let handles: Vec<_> = Threads::without_background(n, "host")
            .into_iter()
            .zip(Threads::without_background(n, "host"))
            .map(|comms| s.spawn(move || rank_run(root, comms, n)))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    (0..PHASES.len())
        .map(|p| by_rank.iter().map(|w| w[p].clone()).collect())
        .collect()
}

/// Storage operations on other ranks' files (should be none).
pub fn others(c: &Counts) -> u64 {
    c.of_class(Class::Other)
}

/// A figure of one rank's work.
pub type Figure = fn(&Work) -> u64;

/// The figures of the table: storage operations, operations on other ranks' files, directory
/// bytes listed, messages sent and their bytes.
pub const FIGURES: [(&str, Figure); 5] = [
    ("ops", |w| w.storage.total()),
    ("other", |w| others(&w.storage)),
    ("dir B", |w| w.storage.dir_bytes),
    ("msgs", |w| w.messages),
    ("msg B", |w| w.bytes),
];

/// Mean and maximum over the ranks of a figure.
pub fn mean_max(ranks: &[Work], f: Figure) -> (f64, u64) {
    let all: Vec<u64> = ranks.iter().map(f).collect();
    let mean = all.iter().sum::<u64>() as f64 / all.len().max(1) as f64;
    (mean, all.iter().copied().max().unwrap_or(0))
}

/// The whole scenario's work of each rank (every phase summed).
pub fn total(work: &[Vec<Work>]) -> Vec<Work> {
    let n = work.first().map_or(0, Vec::len);
    (0..n)
        .map(|r| {
            let mut sum = Work::default();
            for phase in work {
                let w = &phase[r];
                for (k, v) in &w.storage.ops {
                    *sum.storage.ops.entry(*k).or_default() += v;
                }
                sum.storage.dir_entries += w.storage.dir_entries;
                sum.storage.dir_bytes += w.storage.dir_bytes;
                sum.messages += w.messages;
                sum.bytes += w.bytes;
            }
            sum
        })
        .collect()
}

/// A Markdown table of per-rank figures (mean / max over the ranks) by rank count and phase.
pub fn table(runs: &[(u32, Vec<Vec<Work>>)]) -> String {
    let mut out = String::from("| ranks | phase |");
    for (name, _) in FIGURES {
        out.push_str(&format!(" {name} mean / max |"));
    }
    out.push_str("\n|---:|---|");
    out.push_str(&"---:|".repeat(FIGURES.len()));
    out.push('\n');
    for (n, work) in runs {
        let phases = PHASES.iter().zip(work.iter().cloned());
        for (phase, ranks) in phases.chain([(&"all", total(work))]) {
            out.push_str(&format!("| {n} | {phase} |"));
            for (_, f) in FIGURES {
                let (mean, max) = mean_max(&ranks, f);
                out.push_str(&format!(" {mean:.1} / {max} |"));
            }
            out.push('\n');
        }
    }
    out
}

/// The storage operations, in the order of [`ops_table`].
pub const OPS: [(Op, &str); 11] = [
    (Op::Stat, "stat"),
    (Op::List, "list"),
    (Op::CreateDir, "mkdir"),
    (Op::Create, "create"),
    (Op::Open, "open"),
    (Op::Map, "map"),
    (Op::Sync, "fsync"),
    (Op::Rename, "rename"),
    (Op::SyncDir, "dir fsync"),
    (Op::Remove, "unlink"),
    (Op::RemoveDir, "rmdir"),
];

/// A Markdown table of the busiest rank's storage operations by kind, by phase, for the run
/// of `n` ranks.
pub fn ops_table(n: u32, work: &[Vec<Work>]) -> String {
    let mut out = String::from("| ranks | phase |");
    for (_, name) in OPS {
        out.push_str(&format!(" {name} |"));
    }
    out.push_str("\n|---:|---|");
    out.push_str(&"---:|".repeat(OPS.len()));
    out.push('\n');
    for (phase, ranks) in PHASES.iter().zip(work) {
        out.push_str(&format!("| {n} | {phase} |"));
        for (op, _) in OPS {
            let max = ranks.iter().map(|w| w.storage.of_op(op)).max();
            out.push_str(&format!(" {} |", max.unwrap_or(0)));
        }
        out.push('\n');
    }
    out
}
