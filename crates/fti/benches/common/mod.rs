//! What the runtime's benchmarks share: arguments, test data and medians.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use fti::Config;
use std::time::Instant;

/// `[SIZE_MIB [DIR [REPEATS]]]` after `cargo bench -- `.
pub struct Args {
    pub mib: usize,
    pub dir: PathBuf,
    pub repeats: usize,
}

pub fn args() -> Args {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    Args {
        mib: args.first().and_then(|s| s.parse().ok()).unwrap_or(1024),
        dir: args
            .get(1)
            .map_or_else(|| env!("CARGO_TARGET_TMPDIR").into(), PathBuf::from),
        repeats: args.get(2).and_then(|s| s.parse().ok()).unwrap_or(3),
    }
}

/// Four variables of `quarter` bytes with a cheap pattern that depends on `mul`.
pub fn buffers(quarter: usize, mul: u8) -> Vec<Vec<u8>> {
    (0..4u8)
        .map(|v| {
            (0..quarter)
                .map(|i| (i as u8).wrapping_mul(mul) ^ v)
                .collect()
        })
        .collect()
}

pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Median seconds of `repeats` runs of `f`.
pub fn time(repeats: usize, mut f: impl FnMut()) -> f64 {
    median(
        (0..repeats)
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed().as_secs_f64()
            })
            .collect(),
    )
}

/// The runtime's config for a bench run under `root` (local, global and meta directories).
pub fn config(root: &Path) -> Config {
    Config {
        ckpt_dir: root.join("L"),
        glbl_dir: root.join("G"),
        meta_dir: root.join("M"),
        verbosity: 3,
        ..Config::default()
    }
}
