//! Differential checkpoints of 1 GiB (4 variables) with 1%, 10% and 100% of the 16 KiB blocks
//! changed before each checkpoint, in compatible and fast integrity modes, against, in the same
//! run: a full compatible checkpoint, an xxh3-128 scan of all the data, and a plain write +
//! fsync of as many bytes as the differential checkpoint wrote.
//!
//! `cargo bench -p fti --bench dcp [-- SIZE_MIB [DIR]]`

use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::time::Instant;

mod common;

use common::median;
use fti::{Config, Fti, Level, Var};
use rayon::prelude::*;

const BLOCK: usize = 16384;

fn config(root: &Path, dcp: bool, fast: bool) -> Config {
    Config {
        ckpt_dir: root.join("L"),
        glbl_dir: root.join("G"),
        meta_dir: root.join("M"),
        dcp,
        fast_integrity: fast,
        dcp_block_size: BLOCK as u64,
        verbosity: 3,
        ..Config::default()
    }
}

/// Changes `fraction` of the blocks of every buffer (one byte each, spread evenly).
fn change(bufs: &mut [Vec<u8>], fraction: f64, round: usize) {
    for b in bufs.iter_mut() {
        let blocks = b.len() / BLOCK;
        let n = ((blocks as f64 * fraction).round() as usize).max(1);
        let stride = blocks / n;
        for i in 0..n {
            let block = (i * stride + round * 7) % blocks;
            b[block * BLOCK + round % BLOCK] ^= 0x5a;
        }
    }
}

fn checkpoint(fti: &mut Fti, id: i32, bufs: &mut [Vec<u8>]) -> (f64, u64) {
    let vars: Vec<Var> = bufs
        .iter_mut()
        .enumerate()
        .map(|(i, b)| Var::slice(i as i32, b))
        .collect();
    let t = Instant::now();
    let info = fti.checkpoint(id, Level::L1, &vars).unwrap();
    (t.elapsed().as_secs_f64(), info.bytes_written)
}

fn write_fsync(path: &Path, bytes: u64) -> f64 {
    let buf = vec![7u8; (bytes as usize).min(64 << 20)];
    let t = Instant::now();
    let mut f = File::create(path).unwrap();
    let mut left = bytes as usize;
    while left > 0 {
        let n = left.min(buf.len());
        f.write_all(&buf[..n]).unwrap();
        left -= n;
    }
    f.sync_all().unwrap();
    t.elapsed().as_secs_f64()
}

fn main() {
    let common::Args { mib, dir, .. } = common::args();
    let quarter = (mib << 20) / 4;
    let mut bufs = common::buffers(quarter, 13);
    let total = (mib << 20) as f64;

    let scan = median(
        (0..3)
            .map(|_| {
                let t = Instant::now();
                let h: Vec<u128> = bufs
                    .par_iter()
                    .flat_map_iter(|b| b.chunks(BLOCK).map(xxhash_rust::xxh3::xxh3_128))
                    .collect();
                std::hint::black_box(h);
                t.elapsed().as_secs_f64()
            })
            .collect(),
    );

    let root = dir.join("bench-dcp");
    std::fs::remove_dir_all(&root).ok();
    let mut full = Fti::init(config(&root.join("full"), false, false)).unwrap();
    let full_time = median(
        (1..=3)
            .map(|id| checkpoint(&mut full, id, &mut bufs).0)
            .collect(),
    );
    drop(full);

    println!(
        "data: {mib} MiB in 4 variables, {BLOCK}-byte blocks, dir {}",
        dir.display()
    );
    println!();
    println!("baselines (same run): full compatible L1 checkpoint {full_time:.3} s; xxh3-128 block scan of all data {scan:.3} s ({:.1} GB/s, 2 threads)", total / scan / 1e9);
    println!();
    println!("| mode | changed | checkpoint s | bytes written | % of full | vs full ckpt | write+fsync of those bytes s | vs (scan + write) |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    for fast in [false, true] {
        for fraction in [0.01, 0.10, 1.0] {
            let d = root.join(format!("dcp-{fast}-{fraction}"));
            let mut fti = Fti::init(config(&d, true, fast)).unwrap();
            // Two full checkpoints fill the keep window; later ones are differential.
            for id in 1..=2 {
                change(&mut bufs, fraction, id as usize);
                checkpoint(&mut fti, id, &mut bufs);
            }
            let mut times = Vec::new();
            let mut written = Vec::new();
            for id in 3..=5 {
                change(&mut bufs, fraction, id as usize);
                let (t, w) = checkpoint(&mut fti, id, &mut bufs);
                times.push(t);
                written.push(w as f64);
            }
            drop(fti);
            std::fs::remove_dir_all(&d).ok();
            let t = median(times);
            let w = median(written) as u64;
            let wf = write_fsync(&root.join("plain.bin"), w);
            println!(
                "| {} | {:.0}% | {t:.3} | {w} | {:.1}% | {:.2}x | {wf:.3} | {:.2}x |",
                if fast { "fast" } else { "compatible" },
                fraction * 100.0,
                100.0 * w as f64 / total,
                t / full_time,
                t / (scan + wf)
            );
        }
    }
    std::fs::remove_dir_all(&root).ok();
}
