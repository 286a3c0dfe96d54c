//! The heat-diffusion demo (FTI's `heatdis`, one rank): a 2D Jacobi solver that checkpoints
//! on an interval, can crash itself at a given iteration, and on restart resumes from its
//! newest checkpoint. Its definition (so that other ports reproduce the checksum):
//!
//! * grid: `size` × `size` doubles (row-major), two arrays `h` (current) and `g` (next);
//! * initial values: every cell 0.0 except the first row, held at 100.0 (the heat source);
//!   the other border cells stay 0.0;
//! * iteration: for every interior cell, `g[i][j] = 0.25 * (h[i-1][j] + h[i+1][j] + h[i][j-1]
//!   + h[i][j+1])` (borders copied), then `h` and `g` swap roles; `iters` iterations;
//! * protected variables, in this order: id 0 = the number of completed iterations (i32),
//!   id 1 = `h`, id 2 = `g` (f64, little-endian);
//! * checkpoint at the start of every iteration `i > 0` with `i % every == 0`: id = `i / every`,
//!   level L4 when the id is a multiple of 4, else L1;
//! * result: `checksum <hex>` = MD5 of `h`'s bytes (f64 little-endian) after the last iteration.

use std::path::Path;

use crate::{Config, Fti, Level, Result, Status, Var};

/// Parameters of one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Params {
    /// Grid edge (cells).
    pub size: usize,
    /// Iterations.
    pub iters: i32,
    /// Checkpoint every this many iterations.
    pub every: i32,
    /// Abort the process at the start of this iteration (a real crash), if set.
    pub crash_at: Option<i32>,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            size: 512,
            iters: 3000,
            every: 250,
            crash_at: None,
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

/// One Jacobi iteration from `h` into `g`.
fn step(size: usize, h: &[f64], g: &mut [f64]) {
    g.copy_from_slice(h);
    for i in 1..size - 1 {
        let (up, row, down) = (
            &h[(i - 1) * size..i * size],
            &h[i * size..(i + 1) * size],
            &h[(i + 1) * size..(i + 2) * size],
        );
        let out = &mut g[i * size..(i + 1) * size];
        for j in 1..size - 1 {
            out[j] = 0.25 * (up[j] + down[j] + row[j - 1] + row[j + 1]);
        }
    }
}

/// Runs the demo in this process with the runtime configured by `cfg`; `report` receives
/// progress lines (recovery, checkpoints).
pub fn run(cfg: Config, p: Params, report: &mut dyn FnMut(&str)) -> Result<Outcome> {
    let size = p.size.max(3);
    let mut fti = Fti::init(cfg)?;
    let mut h = vec![0.0f64; size * size];
    h[..size].fill(100.0);
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
            "recovered checkpoint {} at iteration {i}",
            info.id
        ));
        recovered = Some((info.id, i));
    }
    let (mut computed, mut checkpoints) = (0, 0);
    while i < p.iters {
        if p.crash_at == Some(i) {
            report(&format!("crashing at iteration {i}"));
            std::process::abort();
        }
        if i > 0 && i % p.every.max(1) == 0 && recovered.is_none_or(|(_, at)| at != i) {
            let id = i / p.every.max(1);
            let level = if id % 4 == 0 { Level::L4 } else { Level::L1 };
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
        step(size, &h, &mut g);
        std::mem::swap(&mut h, &mut g);
        i += 1;
        computed += 1;
    }
    let bytes: Vec<u8> = h.iter().flat_map(|x| x.to_le_bytes()).collect();
    let checksum = ftiff::hash::to_hex(&ftiff::hash::md5(&bytes));
    Ok(Outcome {
        recovered,
        computed,
        checkpoints,
        checksum,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heat_flows_down_from_the_top_row() {
        let dir = tempfile::tempdir().unwrap();
        let p = Params {
            size: 16,
            iters: 50,
            every: 10,
            crash_at: None,
        };
        let out = run(config(dir.path()), p, &mut |_| {}).unwrap();
        assert_eq!(
            (out.computed, out.checkpoints, out.recovered),
            (50, 4, None)
        );
        assert_eq!(out.checksum.len(), 32);
        // Same parameters, fresh directory: same result.
        let dir2 = tempfile::tempdir().unwrap();
        assert_eq!(
            run(config(dir2.path()), p, &mut |_| {}).unwrap().checksum,
            out.checksum
        );
        // A run that restarts from checkpoint 4 (iteration 40) computes only 10 iterations and
        // ends bitwise identical.
        let again = run(config(dir.path()), p, &mut |_| {}).unwrap();
        assert_eq!(again.recovered, Some((4, 40)));
        assert_eq!(again.computed, 10);
        assert_eq!(again.checksum, out.checksum);
    }
}
