//! The heat-diffusion demo (FTI's `heatdis`): a 2D Jacobi solver that checkpoints on an
//! interval, can crash itself at a given iteration, and on restart resumes from its newest
//! checkpoint. It runs on any number of ranks, each owning a band of rows, and computes the
//! same grid whatever their number. Its definition (so that other ports reproduce the
//! checksum):
//!
//! * grid: `size` × `size` doubles (row-major), two arrays `h` (current) and `g` (next);
//! * initial values: every cell 0.0 except the first row, held at 100.0 (the heat source);
//!   the other border cells stay 0.0;
//! * iteration: for every interior cell,
//!   `g[i][j] = 0.25 * (h[i-1][j] + h[i+1][j] + h[i][j-1] + h[i][j+1])` (borders copied),
//!   then `h` and `g` swap roles; `iters` iterations;
//! * ranks: with `n` ranks, rank `r` owns `size / n` consecutive rows (one more for the first
//!   `size % n` ranks), in rank order, and keeps one halo row above and below them; before
//!   each iteration every rank sends its first owned row to the rank above and its last to the
//!   rank below (the halos of the first and last rank are never read);
//! * protected variables, in this order: id 0 = the number of completed iterations (i32),
//!   id 1 = `h`, id 2 = `g` (this rank's rows with their halos, f64, little-endian);
//! * checkpoint at the start of every iteration `i > 0` with `i % every == 0`: id = `i / every`,
//!   level L4 when the id is a multiple of 4, else L2 (or L3, `partner_level`) when it is even
//!   and the run has several ranks, else L1;
//! * result: `checksum <hex>` = MD5 of the whole grid `h` (all ranks' rows in order, f64
//!   little-endian) after the last iteration.

use std::path::Path;

use fti::comm::{Comm, SelfComm};
use fti::{Config, Fti, Level, Result, Status, Var};

/// Parameters of one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Params {
    /// Grid edge (cells).
    pub size: usize,
    /// Iterations.
    pub iters: i32,
    /// Checkpoint every this many iterations.
    pub every: i32,
    /// Kill the process at the start of this iteration (a real crash), if set.
    pub crash_at: Option<i32>,
    /// Level of the even checkpoints of a multi-rank run: L2 (partner copies) or L3
    /// (Reed-Solomon across the group).
    pub partner_level: Level,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            size: 512,
            iters: 3000,
            every: 250,
            crash_at: None,
            partner_level: Level::L2,
        }
    }
}

/// What a run did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// `Some((checkpoint id, iteration))` when the run restarted from a checkpoint.
    pub recovered: Option<(i32, i32)>,
    /// Iterations computed by this process.
    pub computed: i32,
    /// Checkpoints written by this process.
    pub checkpoints: u32,
    /// MD5 of the final grid, lowercase hex.
    pub checksum: String,
}

/// The demo's runtime configuration: everything under `dir`, with an ovni trace of the
/// runtime's work in `dir/trace` (one process directory per run, so a crashed run and its
/// restart appear side by side).
pub fn config(dir: &Path) -> Config {
    Config {
        ckpt_dir: dir.join("Local"),
        glbl_dir: dir.join("Global"),
        meta_dir: dir.join("Meta"),
        trace: true,
        trace_dir: dir.join("trace"),
        verbosity: 3,
        ..Config::default()
    }
}

/// The rows `[first, first + count)` of a `size`-row grid that `rank` of `n` owns.
pub fn rows_of(size: usize, n: usize, rank: usize) -> (usize, usize) {
    let (base, extra) = (size / n, size % n);
    (
        rank * base + rank.min(extra),
        base + usize::from(rank < extra),
    )
}

/// One Jacobi iteration from `h` into `g`, on a band of `rows` owned rows starting at global
/// row `first`, stored with one halo row above and below.
fn step(size: usize, first: usize, rows: usize, h: &[f64], g: &mut [f64]) {
    g.copy_from_slice(h);
    for k in 1..=rows {
        let global = first + k - 1;
        if global == 0 || global == size - 1 {
            continue;
        }
        let (up, row, down) = (
            &h[(k - 1) * size..k * size],
            &h[k * size..(k + 1) * size],
            &h[(k + 1) * size..(k + 2) * size],
        );
        let out = &mut g[k * size..(k + 1) * size];
        for j in 1..size - 1 {
            out[j] = 0.25 * (up[j] + down[j] + row[j - 1] + row[j + 1]);
        }
    }
}

/// Fills the halo rows of `h` from the neighbouring ranks (a ring: the first and last ranks
/// receive rows they never read).
fn exchange_halos(comm: &dyn Comm, size: usize, rows: usize, h: &mut [f64]) {
    let (r, n) = (comm.rank(), comm.size());
    let (up, down) = ((r + n - 1) % n, (r + 1) % n);
    let row_bytes = |k: usize, h: &[f64]| -> Vec<u8> {
        h[k * size..(k + 1) * size]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect()
    };
    let store = |k: usize, bytes: &[u8], h: &mut [f64]| {
        for (x, b) in h[k * size..(k + 1) * size]
            .iter_mut()
            .zip(bytes.chunks_exact(8))
        {
            *x = f64::from_le_bytes(b.try_into().unwrap_or([0; 8]));
        }
    };
    let below = comm.exchange(up, &row_bytes(1, h), down);
    let above = comm.exchange(down, &row_bytes(rows, h), up);
    if r + 1 < n {
        store(rows + 1, &below, h);
    }
    if r > 0 {
        store(0, &above, h);
    }
}

/// Runs the demo in this process (one rank) with the runtime configured by `cfg`; `report`
/// receives progress lines (recovery, checkpoints).
// The tests and benchmarks run it; the tool itself uses `run_with`.
#[allow(dead_code)]
pub fn run(cfg: Config, p: Params, report: &mut dyn FnMut(&str)) -> Result<Outcome> {
    run_with(cfg, Box::new(SelfComm), p, report)
}

/// Runs the demo as one rank of `comm` (every rank calls it).
pub fn run_with(
    cfg: Config,
    comm: Box<dyn Comm>,
    p: Params,
    report: &mut dyn FnMut(&str),
) -> Result<Outcome> {
    let size = p.size.max(3);
    let (n, rank) = (comm.size() as usize, comm.rank() as usize);
    let (first, rows) = rows_of(size, n.min(size), rank.min(size - 1));
    let mut fti = Fti::init_with(cfg, comm)?;
    let mut h = vec![0.0f64; (rows + 2) * size];
    if first == 0 {
        h[size..2 * size].fill(100.0);
    }
    let mut g = h.clone();
    let mut i: i32 = 0;
    let mut recovered = None;
    if let Status::Restart(info) = fti.status().clone() {
        fti.recover(&mut [
            Var::new(0, &mut i),
            Var::slice(1, &mut h),
            Var::slice(2, &mut g),
        ])?;
        report(&format!(
            "recovered checkpoint {} at iteration {i} ({})",
            info.id,
            fti.recovery_note().unwrap_or("")
        ));
        recovered = Some((info.id, i));
    }
    let partner = n > 1
        && fti
            .topology()
            .place(rank as u32)
            .is_some_and(|p| p.group.len() > 1);
    let (mut computed, mut checkpoints) = (0, 0);
    while i < p.iters {
        if p.crash_at == Some(i) {
            report(&format!("crashing at iteration {i}"));
            crash();
        }
        if i > 0 && i % p.every.max(1) == 0 && recovered.is_none_or(|(_, at)| at != i) {
            let id = i / p.every.max(1);
            let level = match id {
                _ if id % 4 == 0 => Level::L4,
                _ if id % 2 == 0 && partner => p.partner_level,
                _ => Level::L1,
            };
            fti.checkpoint(
                id,
                level,
                &[
                    Var::new(0, &mut i),
                    Var::slice(1, &mut h),
                    Var::slice(2, &mut g),
                ],
            )?;
            checkpoints += 1;
        }
        exchange_halos(fti.comm(), size, rows, &mut h);
        step(size, first, rows, &h, &mut g);
        std::mem::swap(&mut h, &mut g);
        i += 1;
        computed += 1;
    }
    let mine: Vec<u8> = h[size..(rows + 1) * size]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    let grid = fti.comm().all_gather(&mine).concat();
    let checksum = ftiff::hash::to_hex(&ftiff::hash::md5(&grid));
    Ok(Outcome {
        recovered,
        computed,
        checkpoints,
        checksum,
    })
}

/// Dies as a crashed node's process does: killed (SIGKILL), with no chance to flush or clean
/// anything, and without the backtrace an MPI library's signal handlers would print for what
/// is an intended crash (SIGKILL cannot be caught).
fn crash() -> ! {
    let _ = rustix::process::kill_process(rustix::process::getpid(), rustix::process::Signal::KILL);
    // Not reached: the kill of oneself is delivered before the call returns.
    std::process::abort()
}
