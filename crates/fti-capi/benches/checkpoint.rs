//! The cost of an L1 checkpoint through the C API against the same checkpoint through the Rust
//! runtime, measured in the same run, rounds interleaved: the same four buffers, the same file
//! layout, the same directory, one MPI rank.
//!
//! * baseline: `Fti::checkpoint` (over `MpiComm`, as the C API uses);
//! * `FTI_Checkpoint` called from this process through the C ABI (the C API's own cost: the
//!   dataset registry turned into the runtime's variables);
//! * `FTI_Checkpoint` in a C program (`tests/c/bench_ckpt.c`, `gcc -O2`) linked with this build's
//!   libfti.so, in its own process.
//!
//! `cargo bench -p fti-capi --bench checkpoint [-- SIZE_MIB [DIR [ROUNDS]]]` (defaults: 256 MiB,
//! the target's tmp directory, 7 rounds). Each round starts a run, takes 4 checkpoints and
//! finalizes; the first checkpoint of a run (directories, thread pools of a new process) is
//! left out. Goal: C within 10% of Rust. The verdict uses each path's fastest round (the one
//! least disturbed by other work on the machine); medians are printed beside.
// Calling the C ABI from Rust takes raw pointers.
#![allow(unsafe_code)]

#[path = "../tests/capi/util.rs"]
mod util;

use std::ffi::CString;

use std::path::{Path, PathBuf};
use std::time::Instant;

use fti::comm::mpi::MpiComm;
use fti::{Config, Fti, Level, Var};

const PER_ROUND: usize = 4;

struct Args {
    mib: usize,
    dir: PathBuf,
    rounds: usize,
}

fn args() -> Args {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    Args {
        mib: args.first().and_then(|s| s.parse().ok()).unwrap_or(256),
        dir: args
            .get(1)
            .map_or_else(|| env!("CARGO_TARGET_TMPDIR").into(), PathBuf::from),
        rounds: args.get(2).and_then(|s| s.parse().ok()).unwrap_or(7),
    }
}

/// Four buffers of `quarter` bytes: byte i of buffer v is (i * 31) ^ v, as in bench_ckpt.c.
fn buffers(quarter: usize) -> Vec<Vec<u8>> {
    (0..4u8)
        .map(|v| {
            (0..quarter)
                .map(|i| (i as u8).wrapping_mul(31) ^ v)
                .collect()
        })
        .collect()
}

fn config(root: &Path) -> Config {
    Config {
        ckpt_dir: root.join("Local"),
        glbl_dir: root.join("Global"),
        meta_dir: root.join("Meta"),
        verbosity: 3,
        ..Config::default()
    }
}

/// One round through Rust: init, PER_ROUND checkpoints, finalize; seconds per checkpoint.
fn rust_round(
    world: &mpi::topology::SimpleCommunicator,
    root: &Path,
    bufs: &mut [Vec<u8>],
) -> Vec<f64> {
    let _ = std::fs::remove_dir_all(root);
    let mut fti = Fti::init_with(config(root), Box::new(MpiComm::new(world))).unwrap();
    let mut times = Vec::new();
    for k in 1..=PER_ROUND {
        let vars: Vec<Var<'_>> = bufs
            .iter_mut()
            .enumerate()
            .map(|(v, b)| Var::bytes(v as i32, b))
            .collect();
        let t = Instant::now();
        fti.checkpoint(k as i32, Level::L1, &vars).unwrap();
        times.push(t.elapsed().as_secs_f64());
    }
    fti.finalize().unwrap();
    times
}

/// One round through the C ABI, called from this process.
fn abi_round(root: &Path, bufs: &mut [Vec<u8>]) -> Vec<f64> {
    let _ = std::fs::remove_dir_all(root);
    std::fs::create_dir_all(root).unwrap();
    let cfg = CString::new(util::config(root, "").to_str().unwrap()).unwrap();
    let mut times = Vec::new();
    // SAFETY: MPI is initialised; the config name is a C string; the buffers outlive the
    // session (FTI_Finalize ends it before they are touched again).
    unsafe {
        assert_eq!(
            fti_capi::FTI_Init(cfg.as_ptr().cast_mut(), mpi::ffi::RSMPI_COMM_WORLD),
            fti_capi::FTI_SCES
        );
        for (v, b) in bufs.iter_mut().enumerate() {
            let uchar = *std::ptr::addr_of!(fti_capi::FTI_UCHR);
            let rc = fti_capi::FTI_Protect(v as i32, b.as_mut_ptr().cast(), b.len() as _, uchar);
            assert_eq!(rc, fti_capi::FTI_SCES);
        }
        for k in 1..=PER_ROUND {
            let t = Instant::now();
            assert_eq!(fti_capi::FTI_Checkpoint(k as i32, 1), fti_capi::FTI_DONE);
            times.push(t.elapsed().as_secs_f64());
        }
        assert_eq!(fti_capi::FTI_Finalize(), fti_capi::FTI_SCES);
    }
    times
}

/// One round through the C program (its own process, its own MPI singleton).
fn c_round(exe: &Path, root: &Path, mib: usize) -> Vec<f64> {
    let _ = std::fs::remove_dir_all(root);
    std::fs::create_dir_all(root).unwrap();
    let cfg = util::config(root, "");
    let out = util::run(
        exe,
        &[
            cfg.to_str().unwrap(),
            &mib.to_string(),
            &PER_ROUND.to_string(),
        ],
        root,
    );
    let stdout = util::success("bench_ckpt", &out);
    util::results(&stdout)
        .iter()
        .map(|s| s.parse().unwrap())
        .collect()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Mean seconds per checkpoint of a round, its first checkpoint left out.
fn steady(v: &[f64]) -> f64 {
    let v = &v[1..];
    v.iter().sum::<f64>() / v.len() as f64
}

fn main() {
    let Args { mib, dir, rounds } = args();
    let universe = mpi::initialize().expect("MPI initialisation");
    let world = universe.world();
    let exe = util::compile("bench_ckpt", util::Link::Shared);
    let mut bufs = buffers((mib << 20) / 4);
    let roots = ["rust", "abi", "c"].map(|p| dir.join(format!("bench-capi-{p}")));
    println!(
        "L1 checkpoint of {mib} MiB in 4 variables, {rounds} rounds of {PER_ROUND}, dir {}",
        dir.display()
    );
    let (mut rust, mut abi, mut c) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        rust.push(steady(&rust_round(&world, &roots[0], &mut bufs)));
        abi.push(steady(&abi_round(&roots[1], &mut bufs)));
        c.push(steady(&c_round(&exe, &roots[2], mib)));
    }
    for root in &roots {
        let _ = std::fs::remove_dir_all(root);
    }
    let gb = (mib << 20) as f64 / 1e9;
    let fastest = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
    let (base, base_median) = (fastest(&rust), median(rust.clone()));
    println!();
    println!(
        "| path | fastest round (s/checkpoint) | GB/s | median round | ratio, fastest (median) |"
    );
    println!("|---|---:|---:|---:|---:|");
    let mut worst: f64 = 0.0;
    for (name, times) in [
        ("baseline: Rust `Fti::checkpoint`", rust),
        ("`FTI_Checkpoint` through the C ABI, same process", abi),
        ("**`FTI_Checkpoint` in a C program via libfti.so**", c),
    ] {
        let (f, m) = (fastest(&times), median(times));
        worst = worst.max(f / base);
        println!(
            "| {name} | {f:.4} | {:.2} | {m:.4} | {:.3} ({:.3}) |",
            gb / f,
            f / base,
            m / base_median
        );
    }
    println!();
    println!(
        "C API / Rust, fastest rounds: {worst:.3} at most (goal <= 1.10): {}",
        if worst <= 1.10 { "met" } else { "missed" }
    );
}
