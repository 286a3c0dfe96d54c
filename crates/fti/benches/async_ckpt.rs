//! Asynchronous checkpoints (`async_ckpt = 1`): how long the application is stopped by an L1
//! checkpoint of SIZE_MIB (4 variables), against a memcpy of the same data, and how long the
//! background work takes (application idle) against a synchronous checkpoint, all measured in
//! the same run. The first asynchronous checkpoint, which allocates and faults in the staging
//! memory, is reported separately. The same with a staging budget of a quarter of the data
//! (`async_mem_mib`: pipelined). Then the heat-diffusion demo (1024x1024, 600 iterations)
//! without checkpoints, with a checkpoint every 100 iterations, synchronous and asynchronous.
//!
//! `cargo bench -p fti --bench async_ckpt [-- SIZE_MIB [DIR [REPEATS]]]`

use std::time::Instant;

mod common;
/// The heat-diffusion demo of the `fti` tool.
#[path = "../../fti-cli/src/heatdis.rs"]
#[allow(dead_code)]
mod heatdis;

use common::{median, time};
use fti::{Config, Fti, Level, Var};

fn main() {
    let common::Args { mib, dir, repeats } = common::args();
    let quarter = (mib << 20) / 4;
    let mut bufs = common::buffers(quarter, 37);
    let mut copy = vec![vec![0u8; quarter]; 4];
    let memcpy = time(repeats, || {
        for (c, b) in copy.iter_mut().zip(&bufs) {
            c.copy_from_slice(std::hint::black_box(b));
        }
    });
    drop(copy);
    let config = |root: &std::path::Path, async_ckpt: bool| Config {
        ckpt_dir: root.join("L"),
        glbl_dir: root.join("G"),
        meta_dir: root.join("M"),
        async_ckpt,
        verbosity: 3,
        ..Config::default()
    };
    let root = dir.join("bench-async");
    std::fs::remove_dir_all(&root).ok();
    let mut sync = Fti::init(config(&root.join("sync"), false)).unwrap();
    let mut asynchronous = Fti::init(config(&root.join("async"), true)).unwrap();
    // Staging budget of a quarter of the data: pipelined.
    let budget = (mib as u64 / 4).max(1);
    let mut pipelined = Fti::init(Config {
        async_mem_mib: Some(budget),
        ..config(&root.join("pipelined"), true)
    })
    .unwrap();
    let (mut sync_t, mut call_t, mut background_t, mut first) = (vec![], vec![], vec![], 0.0);
    let (mut piped_call_t, mut piped_all_t) = (vec![], vec![]);
    for id in 1..=(repeats as i32 + 1) {
        let vars: Vec<Var> = bufs
            .iter_mut()
            .enumerate()
            .map(|(i, b)| Var::slice(i as i32, b))
            .collect();
        let t = Instant::now();
        sync.checkpoint(id, Level::L1, &vars).unwrap();
        let s = t.elapsed().as_secs_f64();
        let t = Instant::now();
        asynchronous.checkpoint(id, Level::L1, &vars).unwrap();
        let call = t.elapsed().as_secs_f64();
        let t = Instant::now();
        asynchronous.wait().unwrap();
        let background = t.elapsed().as_secs_f64() + call;
        let t = Instant::now();
        pipelined.checkpoint(id, Level::L1, &vars).unwrap();
        let piped_call = t.elapsed().as_secs_f64();
        pipelined.wait().unwrap();
        let piped_all = t.elapsed().as_secs_f64();
        if id == 1 {
            first = call;
            continue;
        }
        piped_call_t.push(piped_call);
        piped_all_t.push(piped_all);
        sync_t.push(s);
        call_t.push(call);
        background_t.push(background);
    }
    drop((sync, asynchronous, pipelined));
    std::fs::remove_dir_all(&root).ok();
    let demo = |every: i32, async_ckpt: bool| {
        let d = dir.join("bench-async-demo");
        std::fs::remove_dir_all(&d).ok();
        let p = heatdis::Params {
            size: 1024,
            iters: 600,
            every,
            crash_at: None,
            ..Default::default()
        };
        let cfg = Config {
            trace: false,
            async_ckpt,
            ..heatdis::config(&d)
        };
        let t = Instant::now();
        heatdis::run(cfg, p, &mut |_| {}).unwrap();
        let s = t.elapsed().as_secs_f64();
        std::fs::remove_dir_all(&d).ok();
        s
    };
    // Interleaved rounds, so that the three see the same machine.
    let (mut none, mut with_sync, mut with_async) = (vec![], vec![], vec![]);
    for _ in 0..repeats.max(3) {
        none.push(demo(1_000_000, false));
        with_sync.push(demo(100, false));
        with_async.push(demo(100, true));
    }
    let (none, with_sync, with_async) = (median(none), median(with_sync), median(with_async));
    let best = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
    let (sync_best, call_best, bg_best) = (best(&sync_t), best(&call_t), best(&background_t));
    let (sync_m, call_m, bg_m) = (median(sync_t), median(call_t), median(background_t));
    println!("{mib} MiB in 4 variables, L1; medians (best) of {repeats}");
    println!("memcpy of the data                {memcpy:.3} s");
    println!(
        "async checkpoint: stopped         {call_m:.3} s ({call_best:.3}) = {:.2}x memcpy ({:.2}x best)",
        call_m / memcpy,
        call_best / memcpy
    );
    println!(
        "async checkpoint: first call      {first:.3} s (staging memory allocated and faulted in)"
    );
    println!("sync checkpoint                   {sync_m:.3} s ({sync_best:.3})");
    println!(
        "async: call to complete (idle)    {bg_m:.3} s ({bg_best:.3}) = {:.2}x sync ({:.2}x best)",
        bg_m / sync_m,
        bg_best / sync_best
    );
    let (piped_call, piped_all) = (median(piped_call_t), median(piped_all_t));
    println!(
        "pipelined (async_mem_mib = {budget}, a quarter of the data): stopped {piped_call:.3} s = {:.2}x sync; call to complete {piped_all:.3} s = {:.2}x sync",
        piped_call / sync_m,
        piped_all / sync_m
    );
    println!(
        "heatdis 1024x1024, 600 iterations: {none:.3} s without checkpoints; a checkpoint every 100: sync {with_sync:.3} s (+{:.1}%), async {with_async:.3} s (+{:.1}%)",
        (with_sync / none - 1.0) * 100.0,
        (with_async / none - 1.0) * 100.0
    );
}
