//! A runtime trace to look at with `ovniview`: `ranks` ranks as threads of this process (the
//! runtime's in-process communicator), each relaxing a vector and checkpointing every
//! `every` iterations through the fti-rs runtime with its ovni trace on, synchronously or
//! asynchronously (`async_ckpt`: one background thread stream per rank).
//!
//! ```sh
//! cargo run -p ovni-view --example runtime_trace -- /tmp/run [--async] [ranks] [iters] [every]
//! ovniview /tmp/run/trace -o /tmp/run/timeline.html
//! ```

use std::path::Path;

use fti::{Config, Fti, Level, Threads, Var};

/// One run of `ranks` ranks under `dir` (checkpoints in `dir/Local`…, the trace in
/// `dir/trace`); checkpoint `k` is at L1, every fourth at L4.
pub fn run(dir: &Path, async_ckpt: bool, ranks: u32, iters: u32, every: u32) -> fti::Result<()> {
    let config = Config {
        ckpt_dir: dir.join("Local"),
        glbl_dir: dir.join("Global"),
        meta_dir: dir.join("Meta"),
        trace: true,
        trace_dir: dir.join("trace"),
        async_ckpt,
        verbosity: 3,
        ..Config::default()
    };
    let handles: Vec<_> = Threads::new(ranks, "node0")
        .into_iter()
        .map(|comm| {
            let config = config.clone();
            std::thread::spawn(move || -> fti::Result<()> {
                let mut fti = Fti::init_with(config, Box::new(comm))?;
                let mut grid = vec![1.0f64; 1 << 16];
                for i in 1..=iters {
                    relax(&mut grid);
                    if i % every == 0 {
                        let id = (i / every) as i32;
                        let level = if id % 4 == 0 { Level::L4 } else { Level::L1 };
                        fti.checkpoint(id, level, &[Var::slice(0, &mut grid)])?;
                    }
                }
                fti.finalize()
            })
        })
        .collect();
    for h in handles {
        h.join().expect("a rank panicked")?;
    }
    Ok(())
}

/// Some work between checkpoints: a few smoothing sweeps.
fn relax(grid: &mut [f64]) {
    for _ in 0..8 {
        for j in 1..grid.len() - 1 {
            grid[j] = 0.25 * grid[j - 1] + 0.5 * grid[j] + 0.25 * grid[j + 1];
        }
    }
}

#[allow(dead_code)] // the tests include `run` only
fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let async_ckpt = args.iter().any(|a| a == "--async");
    args.retain(|a| a != "--async");
    let Some(dir) = args.first() else {
        eprintln!("usage: runtime_trace DIR [--async] [RANKS] [ITERS] [EVERY]");
        std::process::exit(2);
    };
    let num = |i: usize, default: u32| args.get(i).and_then(|a| a.parse().ok()).unwrap_or(default);
    if let Err(e) = run(
        Path::new(dir),
        async_ckpt,
        num(1, 4),
        num(2, 400),
        num(3, 10),
    ) {
        eprintln!("runtime_trace: {e}");
        std::process::exit(1);
    }
}
