//! FTI 1.1 and this libfti side by side: the same C program (`tests/c/bench_ckpt.c`, compiled
//! once against FTI 1.1's `fti.h`) takes L1 checkpoints of FTI-FF files under `mpirun`, with
//! FTI 1.1's library or this one picked by `LD_LIBRARY_PATH` (libfti has FTI 1.1's ABI), and
//! the floor of those checkpoints is measured in the same run, rounds interleaved:
//!
//! * write + fsync: every rank's bytes written to a file of its own and synced, all ranks at once;
//! * MD5: every rank's bytes hashed once (`ftiff::hash::md5`, the format library's), all ranks
//!   at once on all cores. An FTI-FF file is two MD5 streams over its data (the chunk hashes
//!   and the file checksum), FTI 1.1's as ours, so two passes are printed beside.
//!
//! `cargo bench -p fti-capi --bench fti11_l1 -- FTI_LIB_DIR [--np 4] [--mib 64] [--rounds 7]
//! [--dir DIR] [--include FTI_INCLUDE_DIR]`: FTI_LIB_DIR holds FTI 1.1's `libfti.so` (built
//! apart, tag v1.1, `cmake -DCMAKE_BUILD_TYPE=Release`), its headers default to
//! FTI_LIB_DIR/../include. Every run takes 4 checkpoints of `--mib` MiB per rank (4 variables)
//! and the first is left out; a checkpoint's time is its slowest rank's. Before every measure
//! the file system is synced, so no measure pays for the previous one's writeback. FTI 1.1 does
//! not sync its files; this library does (fsync, rename, directory sync).
#[path = "../tests/capi/util.rs"]
mod util;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

const PER_RUN: usize = 4;

struct Args {
    fti_lib: PathBuf,
    fti_include: PathBuf,
    np: usize,
    mib: usize,
    rounds: usize,
    dir: PathBuf,
}

const USAGE: &str = "usage: cargo bench -p fti-capi --bench fti11_l1 -- FTI_LIB_DIR [--np 4] \
                     [--mib 64] [--rounds 7] [--dir DIR] [--include FTI_INCLUDE_DIR] \
                     (FTI_LIB_DIR/libfti.so: FTI 1.1's library)";

fn args() -> Result<Args, String> {
    let mut it = std::env::args().skip(1).filter(|a| a != "--bench");
    let fti_lib = PathBuf::from(it.next().ok_or("FTI_LIB_DIR is missing")?);
    if !fti_lib.join("libfti.so").exists() {
        return Err(format!("{}: no libfti.so", fti_lib.display()));
    }
    let mut a = Args {
        fti_include: fti_lib.join("../include"),
        fti_lib,
        np: 4,
        mib: 64,
        rounds: 7,
        dir: env!("CARGO_TARGET_TMPDIR").into(),
    };
    while let Some(flag) = it.next() {
        let value = it.next().ok_or(format!("{flag} needs a value"))?;
        let number = || {
            value
                .parse::<usize>()
                .map_err(|e| format!("{flag} {value}: {e}"))
        };
        match flag.as_str() {
            "--np" => a.np = number()?,
            "--mib" => a.mib = number()?,
            "--rounds" => a.rounds = number()?,
            "--dir" => a.dir = value.into(),
            "--include" => a.fti_include = value.into(),
            _ => return Err(format!("unknown argument {flag}")),
        }
    }
    if a.np == 0 || a.mib < 4 || a.rounds == 0 {
        return Err("--np and --rounds must be at least 1, --mib at least 4".into());
    }
    Ok(a)
}

/// bench_ckpt.c compiled against FTI 1.1's header, linked by name only (no rpath), so that
/// `LD_LIBRARY_PATH` picks the library of each run.
fn compile(a: &Args, out: &Path) {
    let src = util::crate_dir().join("tests/c/bench_ckpt.c");
    let status = Command::new(util::tool("MPICC", "mpicc"))
        .args(["-O2", "-o"])
        .arg(out)
        .arg(&src)
        .arg(format!("-I{}", a.fti_include.display()))
        .arg(format!("-L{}", a.fti_lib.display()))
        .arg("-lfti")
        .status()
        .expect("cannot run mpicc");
    assert!(status.success(), "compiling {} failed", src.display());
}

/// FTI 1.1's L1 setup for `np` ranks: FTI-FF, one rank per node, local test mode, a group of
/// `np` (or 1) ranks, no injected failure.
fn write_config(root: &Path, np: usize) -> PathBuf {
    let group = if np.is_multiple_of(4) { 4 } else { 1 };
    let text = format!(
        "[basic]\nhead = 0\nnode_size = 1\nckpt_dir = ./Local\nglbl_dir = ./Global\n\
         meta_dir = ./Meta\nckpt_l1 = 0\nckpt_l2 = 0\nckpt_l3 = 0\nckpt_l4 = 0\n\
         inline_l2 = 1\ninline_l3 = 1\ninline_l4 = 1\nkeep_last_ckpt = 0\n\
         group_size = {group}\nverbosity = 2\nckpt_io = 3\n\
         [restart]\nfailure = 0\nexec_id = NULL\n\
         [injection]\nrank = 0\nnumber = 0\nposition = 0\nfrequency = 0\n\
         [advanced]\nblock_size = 1024\ntransfer_size = 16\nmpi_tag = 2612\nlocal_test = 1\n"
    );
    let path = root.join("config.fti");
    std::fs::write(&path, text).unwrap();
    path
}

fn sync_all() {
    let status = Command::new("sync").status().expect("cannot run sync");
    assert!(status.success());
}

/// One run of bench_ckpt with the library in `lib_dir`: mean seconds per checkpoint, the
/// first left out.
fn checkpoint_run(a: &Args, exe: &Path, lib_dir: &Path, root: &Path) -> f64 {
    let _ = std::fs::remove_dir_all(root);
    std::fs::create_dir_all(root).unwrap();
    let cfg = write_config(root, a.np);
    sync_all();
    let out = Command::new(util::tool("MPIRUN", "mpirun"))
        .args(["--allow-run-as-root", "--oversubscribe", "-np"])
        .arg(a.np.to_string())
        .arg(exe)
        .arg(&cfg)
        .arg(a.mib.to_string())
        .arg(PER_RUN.to_string())
        .current_dir(root)
        .env("LD_LIBRARY_PATH", lib_dir)
        .output()
        .expect("cannot run mpirun");
    let stdout = util::success(&format!("bench_ckpt with {}", lib_dir.display()), &out);
    let times: Vec<f64> = util::results(&stdout)
        .iter()
        .map(|s| s.parse().expect("a time"))
        .collect();
    assert_eq!(times.len(), PER_RUN, "one time per checkpoint:\n{stdout}");
    let _ = std::fs::remove_dir_all(root);
    times[1..].iter().sum::<f64>() / (PER_RUN - 1) as f64
}

/// The same bytes as bench_ckpt.c's four buffers, one rank's worth.
fn rank_bytes(mib: usize) -> Vec<u8> {
    let quarter = (mib << 20) / 4;
    (0..4u8)
        .flat_map(|v| (0..quarter).map(move |i| (i as u8).wrapping_mul(31) ^ v))
        .collect()
}

/// Seconds until `np` threads have each done `work` on their rank's bytes, started together.
fn all_ranks(np: usize, bytes: &[u8], work: impl Fn(usize, &[u8]) + Sync) -> f64 {
    let barrier = std::sync::Barrier::new(np + 1);
    let mut start = None;
    // The scope ends once every rank's thread is done.
    std::thread::scope(|s| {
        for rank in 0..np {
            let (barrier, work) = (&barrier, &work);
            s.spawn(move || {
                barrier.wait();
                work(rank, bytes);
            });
        }
        barrier.wait();
        start = Some(Instant::now());
    });
    start.expect("the ranks started").elapsed().as_secs_f64()
}

/// Write + fsync of every rank's bytes to its own file, all ranks at once.
fn write_fsync(a: &Args, root: &Path, bytes: &[u8]) -> f64 {
    let _ = std::fs::remove_dir_all(root);
    std::fs::create_dir_all(root).unwrap();
    sync_all();
    let secs = all_ranks(a.np, bytes, |rank, bytes| {
        let mut f = std::fs::File::create(root.join(format!("rank{rank}"))).unwrap();
        f.write_all(bytes).unwrap();
        f.sync_all().unwrap();
    });
    let _ = std::fs::remove_dir_all(root);
    secs
}

/// One MD5 pass over every rank's bytes, all ranks at once.
fn md5_pass(a: &Args, bytes: &[u8]) -> f64 {
    all_ranks(a.np, bytes, |_, bytes| {
        std::hint::black_box(ftiff::hash::md5(bytes));
    })
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let a = match args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}\n{USAGE}");
            std::process::exit(2);
        }
    };
    let work = a.dir.join("bench-fti11-l1");
    std::fs::create_dir_all(&work).unwrap();
    let exe = work.join("bench_ckpt");
    compile(&a, &exe);
    let ours = util::lib_dir();
    let bytes = rank_bytes(a.mib);
    println!(
        "L1 checkpoints (FTI-FF) of {} MiB per rank in 4 variables, {} ranks, {} rounds, dir {}",
        a.mib,
        a.np,
        a.rounds,
        work.display()
    );
    let (mut fti, mut rs, mut wf, mut md5) = (vec![], vec![], vec![], vec![]);
    for round in 0..a.rounds {
        // Each round starts with a different measure, so none always follows the same one.
        for step in 0..4 {
            match (round + step) % 4 {
                0 => fti.push(checkpoint_run(&a, &exe, &a.fti_lib, &work.join("fti"))),
                1 => rs.push(checkpoint_run(&a, &exe, &ours, &work.join("ours"))),
                2 => wf.push(write_fsync(&a, &work.join("floor"), &bytes)),
                _ => md5.push(md5_pass(&a, &bytes)),
            }
        }
        eprintln!("round {} of {}", round + 1, a.rounds);
    }
    report(&a, &fti, &rs, &wf, &md5);
}

/// The medians, the ratios the goals ask for (of the medians, and the median of each round's
/// own ratio in brackets), and what they say.
fn report(a: &Args, fti: &[f64], ours: &[f64], write_fsync: &[f64], md5: &[f64]) {
    let m = |v: &[f64]| median(v.to_vec());
    let fastest = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
    let floors: Vec<f64> = write_fsync
        .iter()
        .zip(md5)
        .map(|(w, h)| w.max(*h))
        .collect();
    let per_round = |x: &[f64], y: &[f64]| median(x.iter().zip(y).map(|(x, y)| x / y).collect());
    let gb = (a.np * (a.mib << 20)) as f64 / 1e9;
    println!();
    println!(
        "| measure (median of {} rounds) | s | fastest s | GB/s in total | vs FTI 1.1 |",
        a.rounds
    );
    println!("|---|---:|---:|---:|---:|");
    for (name, v) in [
        ("FTI 1.1 `FTI_Checkpoint` L1", fti),
        ("**libfti (this build) `FTI_Checkpoint` L1**", ours),
        ("baseline: write + fsync, all ranks at once", write_fsync),
        ("baseline: one MD5 pass, all ranks at once", md5),
        ("floor: the larger of the two, per round", &floors),
    ] {
        println!(
            "| {name} | {:.3} | {:.3} | {:.2} | {:.2}x |",
            m(v),
            fastest(v),
            gb / m(v),
            m(v) / m(fti)
        );
    }
    let ratio = |x: &[f64], y: &[f64]| format!("{:.2}x ({:.2}x)", m(x) / m(y), per_round(x, y));
    let two_passes: Vec<f64> = md5.iter().map(|h| 2.0 * h).collect();
    println!();
    println!("ours / FTI 1.1 = {} (goal <= 1.0)", ratio(ours, fti));
    println!("ours / floor = {} (goal <= 1.5)", ratio(ours, &floors));
    println!("FTI 1.1 / floor = {}", ratio(fti, &floors));
    println!("ours / two MD5 passes = {}", ratio(ours, &two_passes));
    println!("FTI 1.1 / two MD5 passes = {}", ratio(fti, &two_passes));
}
