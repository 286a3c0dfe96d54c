//! Checkpoint and recovery of 1 GiB of protected data (4 variables) at L1, against a plain
//! write + fsync and a plain read of the same bytes plus one MD5 pass, measured in the same
//! run; and the heat-diffusion demo with and without checkpoints.
//!
//! `cargo bench -p fti --bench runtime [-- SIZE_MIB [DIR [REPEATS]]]`

use std::fs::File;
use std::io::{Read, Write};
use std::time::Instant;

mod common;
/// The heat-diffusion demo of the `fti` tool.
#[path = "../../fti-cli/src/heatdis.rs"]
#[allow(dead_code)]
mod heatdis;

use common::{median, time};
use fti::{Config, Fti, Level, Status, Var};

fn main() {
    let common::Args { mib, dir, repeats } = common::args();
    let quarter = (mib << 20) / 4;
    let mut bufs = common::buffers(quarter, 31);
    let gb = (mib << 20) as f64 / 1e9;

    let plain = dir.join("bench-plain.bin");
    let write_fsync = time(repeats, || {
        let mut f = File::create(&plain).unwrap();
        for b in &bufs {
            f.write_all(b).unwrap();
        }
        f.sync_all().unwrap();
    });
    let mut back = vec![vec![0u8; quarter]; 4];
    let read = time(repeats, || {
        let mut f = File::open(&plain).unwrap();
        for b in back.iter_mut() {
            f.read_exact(b).unwrap();
        }
    });
    std::fs::remove_file(&plain).ok();
    let md5 = time(repeats, || {
        let mut h = ftiff::hash::Md5Stream::default();
        for b in &bufs {
            h.update(b);
        }
        std::hint::black_box(h.finish());
    });
    let two_md5 = time(repeats, || {
        let (a, b) = bufs.split_at(2);
        std::hint::black_box(rayon::join(
            || a.iter().map(|d| ftiff::hash::md5(d)).collect::<Vec<_>>(),
            || b.iter().map(|d| ftiff::hash::md5(d)).collect::<Vec<_>>(),
        ));
    });

    let root = dir.join("bench-fti");
    std::fs::remove_dir_all(&root).ok();
    let cfg = common::config(&root);
    let mut fti = Fti::init(cfg.clone()).unwrap();
    let layout = ftiff::Layout::plan(
        None,
        &(0..4)
            .map(|i| ftiff::VarSize {
                id: i,
                size: quarter as u64,
            })
            .collect::<Vec<_>>(),
    )
    .unwrap();
    let direct_path = dir.join("bench-direct.fti");
    // The format library's own write of the same data, interleaved with the runtime's
    // checkpoints so that both see the same disk.
    let (mut lib_times, mut ckpt_times) = (Vec::new(), Vec::new());
    // Seven rounds, alternating which of the two goes first, so that neither always follows
    // the other's write-back.
    for id in 1..=7 {
        for first in [id % 2 == 0, id % 2 != 0] {
            if first {
                let data: Vec<&[u8]> = bufs.iter().map(Vec::as_slice).collect();
                let t = Instant::now();
                std::fs::remove_file(&direct_path).ok();
                ftiff::write_path(
                    &direct_path,
                    &layout,
                    &data,
                    &ftiff::WriteOptions::default(),
                )
                .unwrap();
                // The format library never syncs: durability is the caller's.
                std::fs::File::open(&direct_path)
                    .and_then(|f| f.sync_all())
                    .unwrap();
                lib_times.push(t.elapsed().as_secs_f64());
            } else {
                let vars: Vec<Var> = bufs
                    .iter_mut()
                    .enumerate()
                    .map(|(i, b)| Var::slice(i as i32, b))
                    .collect();
                let t = Instant::now();
                fti.checkpoint(id, Level::L1, &vars).unwrap();
                ckpt_times.push(t.elapsed().as_secs_f64());
            }
        }
    }
    std::fs::remove_file(&direct_path).ok();
    // The minimum is reported beside the median: on this shared machine the same write varies
    // up to 2x from run to run (page cache reclaim, neighbours), and the fastest round is the
    // cost without interference.
    let min = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
    let (library_min, checkpoint_min) = (min(&lib_times), min(&ckpt_times));
    let (library, checkpoint) = (median(lib_times), median(ckpt_times));
    drop(fti);
    let recover = time(repeats, || {
        let mut fti = Fti::init(cfg.clone()).unwrap();
        assert!(matches!(fti.status(), Status::Restart(_)));
        let mut vars: Vec<Var> = back
            .iter_mut()
            .enumerate()
            .map(|(i, b)| Var::slice(i as i32, b))
            .collect();
        fti.recover(&mut vars).unwrap();
    });
    assert!(back == bufs);
    std::fs::remove_dir_all(&root).ok();

    let demo = |every: i32, trace: bool| {
        let d = dir.join("bench-demo");
        std::fs::remove_dir_all(&d).ok();
        let p = heatdis::Params {
            size: 1024,
            iters: 600,
            every,
            crash_at: None,
            ..Default::default()
        };
        let mut cfg = heatdis::config(&d);
        cfg.trace = trace;
        let t = Instant::now();
        heatdis::run(cfg, p, &mut |_| {}).unwrap();
        let s = t.elapsed().as_secs_f64();
        std::fs::remove_dir_all(&d).ok();
        s
    };
    let demo_off = median((0..repeats).map(|_| demo(1_000_000, false)).collect());
    let demo_on = median((0..repeats).map(|_| demo(100, false)).collect());
    let demo_traced = median((0..repeats).map(|_| demo(100, true)).collect());

    // Tracing: many small checkpoints (64 KiB), trace off and on in alternating rounds.
    let small = |trace: bool| {
        let d = dir.join("bench-trace");
        std::fs::remove_dir_all(&d).ok();
        let cfg = Config {
            trace,
            trace_dir: d.join("trace"),
            ..heatdis::config(&d)
        };
        let mut fti = Fti::init(cfg).unwrap();
        let mut x = vec![1u8; 64 << 10];
        let t = Instant::now();
        for id in 1..=100 {
            x[0] = id as u8;
            fti.checkpoint(id, Level::L1, &[Var::slice(0, &mut x)])
                .unwrap();
        }
        let s = t.elapsed().as_secs_f64() / 100.0;
        drop(fti);
        std::fs::remove_dir_all(&d).ok();
        s
    };
    let (mut off, mut on) = (Vec::new(), Vec::new());
    for _ in 0..5 {
        off.push(small(false));
        on.push(small(true));
    }
    let (small_off, small_on) = (median(off), median(on));

    println!(
        "data: {mib} MiB in 4 variables, dir {}, median of {repeats}",
        dir.display()
    );
    println!();
    println!("| measure | seconds | GB/s | ratio |");
    println!("|---|---:|---:|---|");
    let row = |name: &str, s: f64, ratio: String| {
        println!("| {name} | {s:.3} | {:.2} | {ratio} |", gb / s)
    };
    row("baseline: plain write + fsync", write_fsync, String::new());
    row("baseline: plain read (page cache)", read, String::new());
    row("baseline: MD5, 1 thread", md5, String::new());
    row("baseline: MD5, 2 threads", two_md5, String::new());
    row(
        "format library write (ftiff::write_path, fsync)",
        library,
        format!(
            "{:.2}x floor (2-thread + 1-thread MD5)",
            library / (md5 + two_md5)
        ),
    );
    row(
        "**L1 checkpoint**",
        checkpoint,
        format!(
            "{:.2}x the library's write (goal <= 1.1x); {:.2}x write+fsync",
            checkpoint / library,
            checkpoint / write_fsync
        ),
    );
    row("fastest library write of 7", library_min, String::new());
    row(
        "fastest L1 checkpoint of 7",
        checkpoint_min,
        format!(
            "{:.2}x the fastest library write",
            checkpoint_min / library_min
        ),
    );
    row(
        "**recovery (init + recover)**",
        recover,
        format!(
            "{:.2}x (read + one MD5 pass), goal <= 1.2x",
            recover / (read + md5)
        ),
    );
    println!();
    println!("heatdis 1024x1024, 600 iterations: {demo_off:.3} s without checkpoints, {demo_on:.3} s with one every 100 iterations (16 MiB each): {:+.1}%", 100.0 * (demo_on / demo_off - 1.0));
    println!(
        "same with the runtime's ovni trace on: {demo_traced:.3} s ({:+.2}% vs trace off)",
        100.0 * (demo_traced / demo_on - 1.0)
    );
    println!(
        "100 L1 checkpoints of 64 KiB, median of 5 alternating rounds: {:.1} us each with the trace off, {:.1} us on ({:+.2}%)",
        small_off * 1e6,
        small_on * 1e6,
        100.0 * (small_on / small_off - 1.0)
    );
}
