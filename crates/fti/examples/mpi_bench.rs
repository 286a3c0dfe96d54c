//! Checkpoint time at L1, L2, L3 and L4 over MPI, and of L2 with its post-processing in the
//! background, against baselines measured in the same run:
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
//! L3 encodes the group's files with FTI 1.1's Reed-Solomon code (group = all ranks, up to 4):
//! its encoding rate inside the runtime is `k x file size / (L3 - L1) / cores used`, printed
//! against the goal of 2 GB/s per core, with two more baselines on the same bytes in memory, at
//! the end of every rep: one MD5 pass over the file's bytes (the `RSed` file's checksum) and
//! the code kernel alone (`ftiff::l3::apply`, this rank's row of k blocks of 4 MiB).
//!
//! L2 with background post-processing (`inline_l2 = 0`, MPI initialised with
//! `MPI_THREAD_MULTIPLE`) runs on a second runtime with its own directories: the time until
//! `checkpoint` returns (the application's critical path) and until `wait` returns (the partner
//! copy, its publication and the retirement of the older files done), as two rows of one
//! measure.
//!
//! ```text
//! mpirun --allow-run-as-root --oversubscribe -np N target/release/examples/mpi_bench \
//!     [--mib 64] [--reps 8] [--warmup 1] [--recycle 0] [--dir DIR]
//! ```
//!
//! Every rank protects `--mib` MiB in 4 `i32` arrays; the ranks form one group (node_size 1,
//! group_size 4, local_test: one node directory per rank). Each measure is the time of the call
//! on each rank, between two barriers. Per rank: median over the reps; in total: the slowest
//! rank of each rep, median over the reps (and the fastest rep). The measures take turns in a
//! different order every rep, so that a noisy machine's drift spreads over all of them: the rows
//! of a Williams design, in which over 8 reps every measure comes right after every other one
//! once, so that what a measure leaves behind (files to retire, freed memory) favours none.
//! Files go to a new directory under `--dir` (default: the system's temporary directory),
//! removed at the end.
//!
//! `--recycle MIB`: before every measure but the in-memory ones, each rank writes a file of MIB
//! MiB (no fsync) and deletes it. On a virtual machine that hands free memory back to its host
//! (free page reporting), page-cache memory the guest has not used for a few seconds costs a
//! host fault per page when a write fills it (~0.25 GB/s, where just-freed page-cache memory
//! fills at several GB/s), and which measure meets such memory depends on what the measures
//! before it freed. Recycling gives every measure page-cache memory that was just in use, so
//! that the comparison is between the measures' own work. (Freed anonymous memory does not
//! serve: the page cache takes large folios.) L2 and L3 each need page cache for two new files
//! before the older ones are deleted: with 4 ranks, 160 MiB still left L2's partner copy in
//! such memory in most reps, 320 MiB did not.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use fti::comm::mpi::rsmpi::topology::SimpleCommunicator;
use fti::comm::mpi::rsmpi::traits::Communicator;
use fti::comm::mpi::rsmpi::{self, Threading};
use fti::comm::mpi::MpiComm;
use fti::{Comm, Config, Fti, Level, Var};
use ftiff::hash::Md5Stream;

/// Size of the messages of a transfer, as L2 sends its partner copy.
const CHUNK: usize = 16 << 20;

/// Bytes of each file per block of the L3 encoding (as the runtime's).
const L3_BLOCK: usize = 4 << 20;

/// The L3 encoding rate the issue asks for, in GB/s of the group's files per core.
const L3_GOAL: f64 = 2.0;

/// FTI 1.1's L3 step in GB/s per core (measured on this kind of machine: 4 ranks on 2 cores).
const FTI_L3: f64 = 0.3;

/// Every row of the results. The background L2 measure gives two rows (`L2BgReturn`,
/// `L2BgDone`); `Md5` and `Encode` close every rep.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Measure {
    L1,
    L2,
    L3,
    L4,
    L2BgReturn,
    L2BgDone,
    Transfer,
    WriteFsync,
    TransferToFile,
    Md5,
    Encode,
}

const MEASURES: [Measure; 11] = [
    Measure::L1,
    Measure::L2,
    Measure::L3,
    Measure::L4,
    Measure::L2BgReturn,
    Measure::L2BgDone,
    Measure::Transfer,
    Measure::WriteFsync,
    Measure::TransferToFile,
    Measure::Md5,
    Measure::Encode,
];

/// The measures that take turns in every rep (`L2BgReturn` also records `L2BgDone`).
const ROTATION: [Measure; 8] = [
    Measure::L1,
    Measure::L2,
    Measure::L3,
    Measure::L4,
    Measure::L2BgReturn,
    Measure::Transfer,
    Measure::WriteFsync,
    Measure::TransferToFile,
];

impl Measure {
    fn label(self) -> &'static str {
        match self {
            Measure::L1 => "**L1 checkpoint**",
            Measure::L2 => "**L2 checkpoint** (inline)",
            Measure::L3 => "**L3 checkpoint**",
            Measure::L4 => "**L4 checkpoint** (inline)",
            Measure::L2BgReturn => "**L2, background post-processing: `checkpoint` returns**",
            Measure::L2BgDone => "L2, background post-processing: `wait` returns",
            Measure::Transfer => "baseline: MPI transfer, 16 MiB messages",
            Measure::WriteFsync => "baseline: plain write + fsync",
            Measure::TransferToFile => "transfer written into a file + fsync",
            Measure::Md5 => "baseline: MD5 of the file's bytes, in memory",
            Measure::Encode => "baseline: RS kernel, own row of k blocks in memory",
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
        reps: ROTATION.len(),
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
                    "unknown argument {flag}; usage: mpi_bench [--mib 64] [--reps 8] [--warmup 1] [--recycle MIB] [--dir DIR]"
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
    // L2's background post-processing communicates from a second thread.
    let Some((universe, provided)) = rsmpi::initialize_with_threading(Threading::Multiple) else {
        eprintln!("MPI could not be initialised");
        return ExitCode::FAILURE;
    };
    let world = universe.world();
    // Barriers, baselines and results go over their own communicator, the runtimes have theirs.
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
    if rank == 0 {
        println!(
            "MPI threading: asked MPI_THREAD_MULTIPLE, provided {provided:?} (threading_support() = {:?})",
            rsmpi::environment::threading_support()
        );
    }
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
    let result = run(&args, &bench, &root, &world);
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

/// The runtime's configuration for a run under `dir`.
fn config(dir: &Path, inline_l2: bool) -> Config {
    Config {
        ckpt_dir: dir.join("Local"),
        glbl_dir: dir.join("Global"),
        meta_dir: dir.join("Meta"),
        group_size: 4,
        node_size: 1,
        local_test: true,
        inline_l2,
        inline_l4: true,
        keep_ckpts: 1,
        verbosity: 3,
        ..Config::default()
    }
}

fn run(args: &Args, bench: &MpiComm, root: &Path, world: &SimpleCommunicator) -> Res<()> {
    let rank = bench.rank();
    let mut fti = Fti::init_with(config(root, true), Box::new(MpiComm::new(world)))?;
    // L2 with its post-processing in the background: a second runtime, its own directories.
    let mut bg = Fti::init_with(
        config(&root.join("background"), false),
        Box::new(MpiComm::new(world)),
    )?;
    let background = bg.background_post_processing();
    let place = fti
        .topology()
        .place(rank)
        .ok_or("this rank is not in the topology")?
        .clone();
    let (left, right) = (place.left(), place.right());
    let k = place.group.len();
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

    // What L3 does besides writing the file, on the same bytes, in memory: the RSed file's MD5
    // and this rank's row of the code (the other ranks' blocks stood in for by other blocks of
    // this rank's bytes).
    let code = ftiff::l3::Code::new(k)?;
    let encoder = code.encoder(&[place.group_rank as usize]);
    let blocks: Vec<&[u8]> = payload.chunks(L3_BLOCK).collect();
    let in_memory = |measure: Measure| -> Res<()> {
        if measure == Measure::Md5 {
            let mut md5 = Md5Stream::default();
            md5.update(&payload);
            std::hint::black_box(md5.finish());
            return Ok(());
        }
        for (b, block) in blocks.iter().enumerate() {
            let inputs: Vec<&[u8]> = (0..k).map(|j| blocks[(b + j) % blocks.len()]).collect();
            ftiff::l3::apply(&encoder, &inputs, block.len(), |_, out| {
                std::hint::black_box(out);
                Ok::<(), ()>(())
            })
            .map_err(|()| "encoding failed")?;
        }
        Ok(())
    };

    // times[measure][rep] on this rank, in seconds.
    let mut times = vec![vec![0f64; args.reps]; MEASURES.len()];
    for rep in 0..args.warmup + args.reps {
        // The in-memory baselines leave nothing behind: they close every rep, in turns.
        let last = if rep % 2 == 0 {
            [Measure::Md5, Measure::Encode]
        } else {
            [Measure::Encode, Measure::Md5]
        };
        for measure in order(rep).into_iter().chain(last) {
            if !matches!(measure, Measure::Md5 | Measure::Encode) {
                recycle(&recycled, args.recycle, &payload)?;
            }
            bench.barrier();
            let started = Instant::now();
            let mut returned = None;
            match measure {
                Measure::L1 => drop(checkpoint(&mut fti, Level::L1, &mut data)?),
                Measure::L2 => drop(checkpoint(&mut fti, Level::L2, &mut data)?),
                Measure::L3 => drop(checkpoint(&mut fti, Level::L3, &mut data)?),
                Measure::L4 => drop(checkpoint(&mut fti, Level::L4, &mut data)?),
                Measure::L2BgReturn => {
                    checkpoint(&mut bg, Level::L2, &mut data)?;
                    returned = Some(started.elapsed().as_secs_f64());
                    bg.wait()?;
                }
                Measure::Transfer => transfer(bench, (right, &payload), left, |_, _| Ok(()))?,
                Measure::WriteFsync => write_fsync(&plain, &payload)?,
                Measure::TransferToFile => {
                    let f = new_file(&copy)?;
                    transfer(bench, (right, &payload), left, |at, got| {
                        f.write_all_at(got, at as u64)
                    })?;
                    f.sync_all()?;
                }
                Measure::Md5 | Measure::Encode => in_memory(measure)?,
                Measure::L2BgDone => {}
            }
            let took = started.elapsed().as_secs_f64();
            bench.barrier();
            for path in [&plain, &copy] {
                if path.exists() {
                    std::fs::remove_file(path)?;
                }
            }
            if let Some(r) = rep.checked_sub(args.warmup) {
                match returned {
                    Some(t) => {
                        times[Measure::L2BgReturn.index()][r] = t;
                        times[Measure::L2BgDone.index()][r] = took;
                    }
                    None => times[measure.index()][r] = took,
                }
            }
        }
    }
    bg.finalize()?;
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
        report(args, (size, k, background, root), &cpus, &all);
    }
    Ok(())
}

/// The order of the measures in rep `rep`: row `rep % 8` of a Williams design (first row
/// 0, 1, 7, 2, 6, 3, 5, 4, the others shifted by one each), whose consecutive differences are
/// all distinct, so that over 8 reps each measure directly follows each other one exactly once.
fn order(rep: usize) -> [Measure; ROTATION.len()] {
    let n = ROTATION.len();
    std::array::from_fn(|j| {
        let first = match j {
            0 => 0,
            j if j % 2 == 1 => j.div_ceil(2),
            j => n - j / 2,
        };
        ROTATION[(first + rep) % n]
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

/// `all[rank][measure][rep]`; `cpus[rank]`: the processors the rank may run on; `k`: the
/// group's size; `background`: whether the second runtime's L2 post-processing ran in the
/// background.
fn report(
    args: &Args,
    (size, k, background, root): (usize, usize, bool, &Path),
    cpus: &[usize],
    all: &[Vec<Vec<f64>>],
) {
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
        "{n} ranks on {cores} cores{}, each may run on {}; {} MiB per rank in 4 i32 arrays (file {size} bytes), one group of k = {k}: L2 rank r sends to r+1",
        if n as usize > cores { " (the ranks share them)" } else { "" },
        if lo == hi { format!("{lo}") } else { format!("{lo} to {hi}") },
        args.mib,
    );
    println!(
        "{reps} reps after {} warm-up, measures in a different order every rep{}; {}; L2 post-processing in the background: {}; dir {}",
        args.warmup,
        if reps.is_multiple_of(ROTATION.len()) {
            ""
        } else {
            " (not a whole Williams square: the order is not balanced)"
        },
        if args.recycle > 0 {
            format!(
                "a file of {} MiB written and deleted before every measure",
                args.recycle
            )
        } else {
            "nothing recycled between measures".to_owned()
        },
        if background {
            "yes"
        } else {
            "NO (no MPI_THREAD_MULTIPLE: it ran inline)"
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

    ratios(&totals, reps);

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
    println!();

    // L3: the group's k files encoded, on the cores the ranks share.
    let l3 = total(Measure::L3);
    let used = (n as usize).min(cores) as f64;
    let group_bytes = (k * size) as f64;
    let rate = |t: f64| group_bytes / t / used / 1e9;
    let encode = total(Measure::Encode);
    let md5 = total(Measure::Md5);
    println!(
        "L3 {l3:.3} s in total = {:.2}x L1, {:.2}x L2; L3 - L1 = {:.3} s",
        l3 / l1,
        l3 / l2,
        l3 - l1
    );
    println!(
        "goal: L3 encoding >= {L3_GOAL} GB/s per core: k x file / (L3 - L1) / {used} cores = {:.3} GB/s per core: {} ({:.2}x FTI 1.1's ~{FTI_L3}); in this run the kernel alone: {:.2} GB/s per core ({encode:.3} s), the RSed file's MD5 alone: {:.2} GB/s per core ({md5:.3} s)",
        rate(l3 - l1),
        verdict(rate(l3 - l1) >= L3_GOAL),
        rate(l3 - l1) / FTI_L3,
        rate(encode),
        rate(md5),
    );
    let unsynced = l3 - l1 - total(Measure::WriteFsync);
    println!(
        "  without the RSed file's write + fsync (FTI 1.1 does not fsync; indicative): k x file / {unsynced:.3} s / {used} cores = {:.3} GB/s per core ({:.2}x FTI 1.1's)",
        rate(unsynced),
        rate(unsynced) / FTI_L3
    );
    for r in 0..n as usize {
        let t = per_rank(r, Measure::L3) - per_rank(r, Measure::L1);
        println!(
            "  rank {r}: L3 - L1 = {t:.3} s: {:.3} GB/s per core",
            rate(t)
        );
    }
    let parts = [
        ("L1", l1),
        (
            "transfer x (k-1)",
            total(Measure::Transfer) * (k - 1) as f64,
        ),
        ("RS kernel", encode),
        ("MD5", md5),
        ("write+fsync", total(Measure::WriteFsync)),
    ];
    println!(
        "L3's work from its parts (same run): {} = {:.3} s; L3 = {:.2}x that",
        parts
            .iter()
            .map(|(what, t)| format!("{what} {t:.3}"))
            .collect::<Vec<_>>()
            .join(" + "),
        parts.iter().map(|p| p.1).sum::<f64>(),
        l3 / parts.iter().map(|p| p.1).sum::<f64>(),
    );
    println!();

    // L2 with its post-processing in the background.
    let (ret, done) = (total(Measure::L2BgReturn), total(Measure::L2BgDone));
    println!(
        "L2 with background post-processing: checkpoint returns after {ret:.3} s ({:.2}x L1, {:.2}x inline L2), wait returns after {done:.3} s ({:.2}x inline L2)",
        ret / l1,
        ret / l2,
        done / l2
    );
    println!(
        "  off the critical path: {:.3} s of inline L2's {:.3} s beyond L1 ({:.0}%); left on it: returns - L1 = {:+.3} s",
        l2 - ret,
        l2 - l1,
        100.0 * (l2 - ret) / (l2 - l1),
        ret - l1
    );
    for r in 0..n as usize {
        let (ret, done, l2) = (
            per_rank(r, Measure::L2BgReturn),
            per_rank(r, Measure::L2BgDone),
            per_rank(r, Measure::L2),
        );
        println!("  rank {r}: returns {ret:.3} s, wait returns {done:.3} s, inline L2 {l2:.3} s");
    }
}

/// The issue's ratios, of the medians of the totals and, in brackets, the median of the
/// reps' own ratios: L2/L1 (goal <= 1.2), L3/L1, and L1 against its floor, the larger of the
/// write + fsync of the same bytes and one MD5 pass over them on all ranks at once (goal <= 1.5).
fn ratios(totals: &[Vec<f64>], reps: usize) {
    let total = |m: Measure| median(&totals[m.index()]);
    let per_rep = |a: Measure, b: &dyn Fn(usize) -> f64| -> f64 {
        median(
            &(0..reps)
                .map(|r| totals[a.index()][r] / b(r))
                .collect::<Vec<_>>(),
        )
    };
    let rep_of = |m: Measure| move |r: usize| totals[m.index()][r];
    let floor_of =
        |r: usize| totals[Measure::WriteFsync.index()][r].max(totals[Measure::Md5.index()][r]);
    let l1 = total(Measure::L1);
    let floor = total(Measure::WriteFsync).max(total(Measure::Md5));
    let (l2, l3) = (total(Measure::L2) / l1, total(Measure::L3) / l1);
    println!(
        "ratios (medians of the totals; median of the reps' own ratios in brackets): L2/L1 = {l2:.2}x ({:.2}x): goal <= 1.2: {}; L3/L1 = {l3:.2}x ({:.2}x)",
        per_rep(Measure::L2, &rep_of(Measure::L1)),
        verdict(l2 <= 1.2),
        per_rep(Measure::L3, &rep_of(Measure::L1)),
    );
    println!(
        "L1 floor = max(write+fsync {:.3} s, MD5 of the same bytes on all ranks at once {:.3} s) = {floor:.3} s; L1/floor = {:.2}x ({:.2}x): goal <= 1.5: {}",
        total(Measure::WriteFsync),
        total(Measure::Md5),
        l1 / floor,
        per_rep(Measure::L1, &floor_of),
        verdict(l1 <= 1.5 * floor)
    );
    println!();
}

fn verdict(met: bool) -> &'static str {
    if met {
        "met"
    } else {
        "missed"
    }
}
