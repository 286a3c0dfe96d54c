//! Per-rank work as the job grows (`docs/scale.md`): the scenario of the growth test (init,
//! checkpoints at L1, L2 and L4, restart and recover, a checkpoint at L1, finalize; tiny data)
//! on 4 to 1024 ranks as threads of this process, each rank on its own counting storage.
//! Prints a Markdown table of what each rank did, mean and busiest rank, by phase, and the
//! busiest rank's storage operations by kind at the largest run.
//!
//! `cargo bench -p fti --bench scale -- [MAX_RANKS [DIR]]` (default 1024, the target dir).

#[path = "../tests/util/scale.rs"]
mod scale;

use std::path::PathBuf;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let max: u32 = args.first().and_then(|s| s.parse().ok()).unwrap_or(1024);
    let dir: PathBuf = args
        .get(1)
        .map_or_else(|| env!("CARGO_TARGET_TMPDIR").into(), PathBuf::from);
    let mut runs = Vec::new();
    let mut n = 4;
    while n <= max {
        let root = tempfile::tempdir_in(&dir).expect("a directory for the run");
        let started = Instant::now();
        let work = scale::run(root.path(), n);
        eprintln!("{n} ranks: {:.1} s", started.elapsed().as_secs_f64());
        runs.push((n, work));
        n *= 4;
    }
    println!("{}", scale::table(&runs));
    if let Some((n, work)) = runs.last() {
        println!("{}", scale::ops_table(*n, work));
    }
}
