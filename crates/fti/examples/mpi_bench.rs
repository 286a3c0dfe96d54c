//! Checkpoint time at L1, L2 and L4 over MPI, against baselines measured in the same run:
//!
//! * one MPI transfer of the file's bytes: sent to the right partner while the left partner's
//!   arrive, in 16 MiB messages, with the same `Comm::exchange` as L2's partner copy;
//! * a plain write + fsync of a file of the same size, in the rank's local checkpoint directory;
//! * L1 itself;
//!
//! and, for the record, the partner copy's work done outside the runtime: the same transfer with
//! every message written into a new file, then fsync. It prints the goal
//! `L2 <= L1 + transfer + write+fsync` as met or missed.
//!
//! ```text
//! mpirun --allow-run-as-root --oversubscribe -np N target/release/examples/mpi_bench \
//!     [--mib 64] [--reps 6] [--warmup 1] [--recycle 0] [--dir DIR]
//! ```
//!
//! Every rank protects `--mib` MiB in 4 `i32` arrays; the ranks form one L2 group (node_size 1,
//! group_size 4, local_test: one node directory per rank). Each measure is the time of the call
//! on each rank, between two barriers. Per rank: median over the reps; in total: the slowest
//! rank of each rep, median over the reps (and the fastest rep). The measures take turns in a
//! different order every rep, so that a noisy machine's drift spreads over all of them: the rows
//! of a Williams design, in which over 6 reps every measure comes right after every other one
//! once, so that what a measure leaves behind (files to retire, freed memory) favours none.
//! Files go to a new directory under `--dir` (default: the system's temporary directory),
//! removed at the end.
//!
//! `--recycle MIB`: before every measure, each rank writes a file of MIB MiB (no fsync) and
//! deletes it. On a virtual machine that hands free memory back to its host (free page
//! reporting), page-cache memory the guest has not used for a few seconds costs a host fault per
//! page when a write fills it (~0.25 GB/s, where just-freed page-cache memory fills at several
//! GB/s), and which measure meets such memory depends on what the measures before it freed.
//! Recycling gives every measure page-cache memory that was just in use, so that the comparison
//! is between the measures' own work. (Freed anonymous memory does not serve: the page cache
//! takes large folios.)

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use fti::comm::mpi::rsmpi::traits::Communicator;
use fti::comm::mpi::MpiComm;
use fti::{Comm, Config, Fti, Level, Var};

/// Size of the messages of a transfer, as L2 sends its partner copy.
const CHUNK: usize = 16 << 20;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Measure {
    L1,
    L2,
    L4,
    Transfer,
    WriteFsync,
    TransferToFile,
}

const MEASURES: [Measure; 6] = [
    Measure::L1,
    Measure::L2,
    Measure::L4,
    Measure::Transfer,
    Measure::WriteFsync,
    Measure::TransferToFile,
];

impl Measure {
    fn label(self) -> &'static str {
        match self {
            Measure::L1 => "**L1 checkpoint**",
            Measure::L2 => "**L2 checkpoint**",
            Measure::L4 => "**L4 checkpoint** (inline)",
            Measure::Transfer => "baseline: MPI transfer, 16 MiB messages",
            Measure::WriteFsync => "baseline: plain write + fsync",
            Measure::TransferToFile => "transfer written into a file + fsync",
        }
    }

    fn index(self) -> usize {
        MEASURES.iter().position(|&m| m == self).unwrap_or(0)
    }
}

struct Args {
    mib: usize,
    reps: usize,
    warmup: usize,
    recycle: usize,
    dir: PathBuf,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        mib: 64,
        reps: 6,
        warmup: 1,
        recycle: 0,
        dir: std::env::temp_dir(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().ok_or(format!("{flag} needs a value"))?;
        let number = || {
            value
                .parse::<usize>()
                .map_err(|e| format!("{flag} {value}: {e}"))
        };
        match flag.as_str() {
            "--mib" => args.mib = number()?,
            "--reps" => args.reps = number()?,
            "--warmup" => args.warmup = number()?,
            "--recycle" => args.recycle = number()?,
            "--dir" => args.dir = PathBuf::from(&value),
            _ => {
                return Err(format!(
                    "unknown argument {flag}; usage: mpi_bench [--mib 64] [--reps 6] [--warmup 1] [--recycle MIB] [--dir DIR]"
                ))
            }
        }
    }
    if args.mib == 0 || args.reps == 0 {
        return Err("--mib and --reps must be at least 1".into());
    }
    Ok(args)
}

type Res<T> = Result<T, Box<dyn std::error::Error>>;

fn main() -> ExitCode {
    let Some(universe) = fti::comm::mpi::rsmpi::initialize() else {
        eprintln!("MPI could not be initialised");
        return ExitCode::FAILURE;
    };
    let world = universe.world();
    // Barriers, baselines and results go over their own communicator, the runtime has its own.
    let bench = MpiComm::new(&world);
    let rank = bench.rank();
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            if rank == 0 {
                eprintln!("{e}");
            }
            return ExitCode::FAILURE;
        }
    };
    // Rank 0 names and creates the run's directory.
    let mine = args
        .dir
        .join(format!("fti-mpi-bench-{}", std::process::id()));
    let root = PathBuf::from(std::ffi::OsStr::from_bytes(
        &bench.all_gather(mine.as_os_str().as_bytes())[0],
    ));
    if rank == 0 {
        if let Err(e) = std::fs::create_dir_all(&root) {
            eprintln!("{}: {e}", root.display());
            world.abort(1);
        }
    }
    bench.barrier();
    let result = run(&args, &bench, &root, Box::new(MpiComm::new(&world)));
    if let Err(e) = result {
        eprintln!("rank {rank}: {e}");
        // The other ranks may be waiting in a collective call.
        world.abort(1);
    }
    bench.barrier();
    if rank == 0 {
        let _ = std::fs::remove_dir_all(&root);
    }
    ExitCode::SUCCESS
}

fn run(args: &Args, bench: &MpiComm, root: &Path, comm: Box<dyn Comm>) -> Res<()> {
    let rank = bench.rank();
    let cfg = Config {
        ckpt_dir: root.join("Local"),
        glbl_dir: root.join("Global"),
        meta_dir: root.join("Meta"),
        group_size: 4,
        node_size: 1,
        local_test: true,
        inline_l4: true,
        keep_ckpts: 1,
        verbosity: 3,
        ..Config::default()
    };
    let mut fti = Fti::init_with(cfg, comm)?;
    let place = fti
        .topology()
        .place(rank)
        .ok_or("this rank is not in the topology")?
        .clone();
    let (left, right) = (place.left(), place.right());
    let local = fti.dirs().local.clone();
    std::fs::create_dir_all(&local)?;
    let plain = local.join("bench-write-fsync.bin");
    let copy = local.join("bench-transfer-copy.bin");
    let recycled = local.join("bench-recycled.bin");

    let ints = (args.mib << 20) / 4 / 4;
    let mut data: Vec<Vec<i32>> = (0..4u32)
        .map(|v| {
            (0..ints as u32)
                .map(|i| (i.wrapping_mul(2_654_435_761) ^ (rank << 24) ^ (v << 20)) as i32)
                .collect()
        })
        .collect();
    let mut id = 0;
    let mut checkpoint = |fti: &mut Fti, level: Level, data: &mut [Vec<i32>]| -> Res<u64> {
        id += 1;
        let vars: Vec<Var> = data
            .iter_mut()
            .enumerate()
            .map(|(i, v)| Var::slice(i as i32, v))
            .collect();
        Ok(fti.checkpoint(id, level, &vars)?.size)
    };
    // The file's size (data and FTI-FF meta data) is the size of every baseline.
    let size = checkpoint(&mut fti, Level::L1, &mut data)? as usize;
    let payload: Vec<u8> = (0..size)
        .map(|i| (i as u8).wrapping_mul(31) ^ rank as u8)
        .collect();

    // times[measure][rep] on this rank, in seconds.
    let mut times = vec![vec![0f64; args.reps]; MEASURES.len()];
    for rep in 0..args.warmup + args.reps {
        for measure in order(rep) {
            recycle(&recycled, args.recycle, &payload)?;
            bench.barrier();
            let started = Instant::now();
            match measure {
                Measure::L1 => drop(checkpoint(&mut fti, Level::L1, &mut data)?),
                Measure::L2 => drop(checkpoint(&mut fti, Level::L2, &mut data)?),
                Measure::L4 => drop(checkpoint(&mut fti, Level::L4, &mut data)?),
                Measure::Transfer => transfer(bench, (right, &payload), left, |_, _| Ok(()))?,
                Measure::WriteFsync => write_fsync(&plain, &payload)?,
                Measure::TransferToFile => {
                    let f = new_file(&copy)?;
                    transfer(bench, (right, &payload), left, |at, got| {
                        f.write_all_at(got, at as u64)
                    })?;
                    f.sync_all()?;
                }
            }
            let took = started.elapsed().as_secs_f64();
            bench.barrier();
            for path in [&plain, &copy] {
                if path.exists() {
                    std::fs::remove_file(path)?;
                }
            }
            if let Some(r) = rep.checked_sub(args.warmup) {
                times[measure.index()][r] = took;
            }
        }
    }
    fti.finalize()?;

    // What each rank may run on (mpirun binds ranks to cores when there are enough), then its
    // times.
    let usable = std::thread::available_parallelism().map_or(1, |c| c.get()) as f64;
    let bytes: Vec<u8> = std::iter::once(&usable)
        .chain(times.iter().flatten())
        .flat_map(|t| t.to_le_bytes())
        .collect();
    let mut cpus = Vec::new();
    let all: Vec<Vec<Vec<f64>>> = bench
        .all_gather(&bytes)
        .iter()
        .map(|b| {
            let flat: Vec<f64> = b
                .chunks_exact(8)
                .map(|c| f64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
                .collect();
            cpus.push(flat[0] as usize);
            flat[1..].chunks(args.reps).map(<[f64]>::to_vec).collect()
        })
        .collect();
    if rank == 0 {
        report(args, (size, root), &cpus, &all);
    }
    Ok(())
}

/// The order of the measures in rep `rep`: row `rep % 6` of a Williams design (first row
/// 0, 1, 5, 2, 4, 3, the others shifted by one each), whose consecutive differences are all
/// distinct, so that over 6 reps each measure directly follows each other one exactly once.
fn order(rep: usize) -> [Measure; 6] {
    let n = MEASURES.len();
    std::array::from_fn(|j| {
        let first = match j {
            0 => 0,
            j if j % 2 == 1 => j.div_ceil(2),
            j => n - j / 2,
        };
        MEASURES[(first + rep) % n]
    })
}

/// A new file (it must not exist), for reading and writing.
fn new_file(path: &Path) -> std::io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(path)
}

/// Writes a file of `mib` MiB made of copies of `bytes` (no fsync), then deletes it.
fn recycle(path: &Path, mib: usize, bytes: &[u8]) -> std::io::Result<()> {
    if mib == 0 || bytes.is_empty() {
        return Ok(());
    }
    let mut f = new_file(path)?;
    let mut left = mib << 20;
    while left > 0 {
        let n = left.min(bytes.len());
        f.write_all(&bytes[..n])?;
        left -= n;
    }
    drop(f);
    std::fs::remove_file(path)
}

fn write_fsync(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut f = new_file(path)?;
    f.write_all(bytes)?;
    f.sync_all()
}

/// Sends `bytes` to rank `to` while receiving as many from rank `from`, in [`CHUNK`] messages,
/// handing each received message to `sink` with its offset.
fn transfer(
    comm: &dyn Comm,
    (to, bytes): (u32, &[u8]),
    from: u32,
    mut sink: impl FnMut(usize, &[u8]) -> std::io::Result<()>,
) -> Res<()> {
    for (i, chunk) in bytes.chunks(CHUNK).enumerate() {
        let got = comm.exchange(to, chunk, from);
        if got.len() != chunk.len() {
            return Err(
                format!("rank {from} sent {} bytes, not {}", got.len(), chunk.len()).into(),
            );
        }
        sink(i * CHUNK, &got)?;
    }
    Ok(())
}

/// The median (the mean of the two middle values for an even count).
fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    (v[(v.len() - 1) / 2] + v[v.len() / 2]) / 2.0
}

fn min(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::INFINITY, f64::min)
}

/// Processors of the machine (not only those this process may use).
fn machine_cpus() -> usize {
    std::fs::read_to_string("/proc/cpuinfo")
        .map(|s| s.lines().filter(|l| l.starts_with("processor")).count())
        .unwrap_or(0)
        .max(1)
}

/// `all[rank][measure][rep]`; `cpus[rank]`: the processors the rank may run on.
fn report(args: &Args, (size, root): (usize, &Path), cpus: &[usize], all: &[Vec<Vec<f64>>]) {
    let n = all.len() as u32;
    let cores = machine_cpus();
    let reps = args.reps;
    // The slowest rank of each rep.
    let totals: Vec<Vec<f64>> = (0..MEASURES.len())
        .map(|m| {
            (0..reps)
                .map(|r| all.iter().map(|t| t[m][r]).fold(0.0, f64::max))
                .collect()
        })
        .collect();
    let per_rank = |rank: usize, m: Measure| -> f64 { median(&all[rank][m.index()]) };
    let total = |m: Measure| median(&totals[m.index()]);
    let (lo, hi) = (
        cpus.iter().copied().min().unwrap_or(0),
        cpus.iter().copied().max().unwrap_or(0),
    );
    println!(
        "{n} ranks on {cores} cores{}, each may run on {}; {} MiB per rank in 4 i32 arrays (file {size} bytes), one L2 group: rank r sends to r+1",
        if n as usize > cores { " (the ranks share them)" } else { "" },
        if lo == hi { format!("{lo}") } else { format!("{lo} to {hi}") },
        args.mib,
    );
    println!(
        "{reps} reps after {} warm-up, measures in a different order every rep; {}; dir {}",
        args.warmup,
        if args.recycle > 0 {
            format!(
                "a file of {} MiB written and deleted before every measure",
                args.recycle
            )
        } else {
            "nothing recycled between measures".to_owned()
        },
        root.display()
    );
    println!();
    let mut head = String::from("| measure |");
    let mut rule = String::from("|---|");
    for r in 0..n {
        head.push_str(&format!(" rank {r} s |"));
        rule.push_str("---:|");
    }
    head.push_str(" total s (slowest rank) | fastest total s | GB/s in total | vs L1 |");
    rule.push_str("---:|---:|---:|---|");
    println!("{head}\n{rule}");
    let l1 = total(Measure::L1);
    for m in MEASURES {
        let mut line = format!("| {} |", m.label());
        for r in 0..n as usize {
            line.push_str(&format!(" {:.3} |", per_rank(r, m)));
        }
        let t = total(m);
        line.push_str(&format!(
            " {t:.3} | {:.3} | {:.2} | {:.2}x |",
            min(&totals[m.index()]),
            (size as f64 * f64::from(n)) / t / 1e9,
            t / l1
        ));
        println!("{line}");
    }
    println!();

    let bound_parts = [Measure::L1, Measure::Transfer, Measure::WriteFsync];
    let l2 = total(Measure::L2);
    let bound: f64 = bound_parts.iter().map(|&m| total(m)).sum();
    println!(
        "goal: L2 <= L1 + transfer + write+fsync, in total: L2 {l2:.3} s vs {bound:.3} s (L1 {l1:.3} + transfer {:.3} + write+fsync {:.3}) = {:.2}x the bound: {}",
        total(Measure::Transfer),
        total(Measure::WriteFsync),
        l2 / bound,
        verdict(l2 <= bound)
    );
    for r in 0..n as usize {
        let l2 = per_rank(r, Measure::L2);
        let bound: f64 = bound_parts.iter().map(|&m| per_rank(r, m)).sum();
        println!(
            "  rank {r}: L2 {l2:.3} s vs {bound:.3} s = {:.2}x: {}",
            l2 / bound,
            verdict(l2 <= bound)
        );
    }
    let met = (0..reps)
        .filter(|&r| {
            totals[Measure::L2.index()][r]
                <= bound_parts
                    .iter()
                    .map(|m| totals[m.index()][r])
                    .sum::<f64>()
        })
        .count();
    println!("  reps whose own totals meet it: {met} of {reps}");
    println!(
        "L2 - L1 = {:.3} s in total; transfer into a file + fsync: {:.3} s",
        l2 - l1,
        total(Measure::TransferToFile),
    );
}

fn verdict(met: bool) -> &'static str {
    if met {
        "met"
    } else {
        "missed"
    }
}
