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

mod report;
use report::report;

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

/// What the measures of a rank work on.
struct Bench<'a> {
    args: &'a Args,
    comm: &'a MpiComm,
    /// Inline post-processing, and the second runtime's in the background.
    fti: Fti,
    bg: Fti,
    /// L2's partners: this rank sends to `right` and receives from `left`.
    left: u32,
    right: u32,
    data: Vec<Vec<i32>>,
    /// The last checkpoint's id.
    id: i32,
    /// The bytes of the baselines: as many as the checkpoint file's.
    payload: Vec<u8>,
    plain: PathBuf,
    copy: PathBuf,
    recycled: PathBuf,
}

impl Bench<'_> {
    /// A checkpoint of the data at `level` (by the second runtime with `background`);
    /// returns the file's size.
    fn checkpoint(&mut self, level: Level, background: bool) -> Res<u64> {
        self.id += 1;
        let vars: Vec<Var> = self
            .data
            .iter_mut()
            .enumerate()
            .map(|(i, v)| Var::slice(i as i32, v))
            .collect();
        let fti = if background {
            &mut self.bg
        } else {
            &mut self.fti
        };
        Ok(fti.checkpoint(self.id, level, &vars)?.size)
    }

    /// Runs `measure` between two barriers; returns its time, and for `L2BgReturn` the time
    /// `checkpoint` returned after.
    fn measure(&mut self, measure: Measure, in_memory: &InMemory) -> Res<(f64, Option<f64>)> {
        if !matches!(measure, Measure::Md5 | Measure::Encode) {
            recycle(&self.recycled, self.args.recycle, &self.payload)?;
        }
        self.comm.barrier();
        let started = Instant::now();
        let mut returned = None;
        match measure {
            Measure::L1 => drop(self.checkpoint(Level::L1, false)?),
            Measure::L2 => drop(self.checkpoint(Level::L2, false)?),
            Measure::L3 => drop(self.checkpoint(Level::L3, false)?),
            Measure::L4 => drop(self.checkpoint(Level::L4, false)?),
            Measure::L2BgReturn => {
                self.checkpoint(Level::L2, true)?;
                returned = Some(started.elapsed().as_secs_f64());
                self.bg.wait()?;
            }
            Measure::Transfer => {
                transfer(self.comm, (self.right, &self.payload), self.left, |_, _| {
                    Ok(())
                })?
            }
            Measure::WriteFsync => write_fsync(&self.plain, &self.payload)?,
            Measure::TransferToFile => {
                let f = new_file(&self.copy)?;
                transfer(
                    self.comm,
                    (self.right, &self.payload),
                    self.left,
                    |at, got| f.write_all_at(got, at as u64),
                )?;
                f.sync_all()?;
            }
            Measure::Md5 | Measure::Encode => in_memory.run(measure, &self.payload)?,
            Measure::L2BgDone => {}
        }
        let took = started.elapsed().as_secs_f64();
        self.comm.barrier();
        for path in [&self.plain, &self.copy] {
            if path.exists() {
                std::fs::remove_file(path)?;
            }
        }
        Ok((took, returned))
    }

    /// `times[measure][rep]` of this rank, in seconds, after the warm-up reps.
    fn reps(&mut self, in_memory: &InMemory) -> Res<Vec<Vec<f64>>> {
        let reps = self.args.reps;
        let mut times = vec![vec![0f64; reps]; MEASURES.len()];
        for rep in 0..self.args.warmup + reps {
            // The in-memory baselines leave nothing behind: they close every rep, in turns.
            let last = if rep % 2 == 0 {
                [Measure::Md5, Measure::Encode]
            } else {
                [Measure::Encode, Measure::Md5]
            };
            for measure in order(rep).into_iter().chain(last) {
                let (took, returned) = self.measure(measure, in_memory)?;
                let Some(r) = rep.checked_sub(self.args.warmup) else {
                    continue;
                };
                match returned {
                    Some(t) => {
                        times[Measure::L2BgReturn.index()][r] = t;
                        times[Measure::L2BgDone.index()][r] = took;
                    }
                    None => times[measure.index()][r] = took,
                }
            }
        }
        Ok(times)
    }
}

/// What L3 does besides writing the file, on the same bytes, in memory: the RSed file's MD5
/// and this rank's row of the code (the other ranks' blocks stood in for by other blocks of
/// this rank's bytes).
struct InMemory {
    k: usize,
    encoder: ftiff::l3::Matrix,
}

impl InMemory {
    fn run(&self, measure: Measure, payload: &[u8]) -> Res<()> {
        if measure == Measure::Md5 {
            let mut md5 = Md5Stream::default();
            md5.update(payload);
            std::hint::black_box(md5.finish());
            return Ok(());
        }
        let blocks: Vec<&[u8]> = payload.chunks(L3_BLOCK).collect();
        for (b, block) in blocks.iter().enumerate() {
            let inputs: Vec<&[u8]> = (0..self.k)
                .map(|j| blocks[(b + j) % blocks.len()])
                .collect();
            ftiff::l3::apply(&self.encoder, &inputs, block.len(), |_, out| {
                std::hint::black_box(out);
                Ok::<(), ()>(())
            })
            .map_err(|()| "encoding failed")?;
        }
        Ok(())
    }
}

fn run(args: &Args, comm: &MpiComm, root: &Path, world: &SimpleCommunicator) -> Res<()> {
    let rank = comm.rank();
    let fti = Fti::init_with(config(root, true), Box::new(MpiComm::new(world)))?;
    // L2 with its post-processing in the background: a second runtime, its own directories.
    let bg = Fti::init_with(
        config(&root.join("background"), false),
        Box::new(MpiComm::new(world)),
    )?;
    let background = bg.background_post_processing();
    let place = fti
        .topology()
        .place(rank)
        .ok_or("this rank is not in the topology")?
        .clone();
    let k = place.group.len();
    let local = fti.dirs().local.clone();
    std::fs::create_dir_all(&local)?;
    let ints = (args.mib << 20) / 4 / 4;
    let data: Vec<Vec<i32>> = (0..4u32)
        .map(|v| {
            (0..ints as u32)
                .map(|i| (i.wrapping_mul(2_654_435_761) ^ (rank << 24) ^ (v << 20)) as i32)
                .collect()
        })
        .collect();
    let mut bench = Bench {
        args,
        comm,
        fti,
        bg,
        left: place.left(),
        right: place.right(),
        data,
        id: 0,
        payload: Vec::new(),
        plain: local.join("bench-write-fsync.bin"),
        copy: local.join("bench-transfer-copy.bin"),
        recycled: local.join("bench-recycled.bin"),
    };
    // The file's size (data and FTI-FF meta data) is the size of every baseline.
    let size = bench.checkpoint(Level::L1, false)? as usize;
    bench.payload = (0..size)
        .map(|i| (i as u8).wrapping_mul(31) ^ rank as u8)
        .collect();
    let code = ftiff::l3::Code::new(k)?;
    let in_memory = InMemory {
        k,
        encoder: code.encoder(&[place.group_rank as usize]),
    };
    let times = bench.reps(&in_memory)?;
    bench.bg.finalize()?;
    bench.fti.finalize()?;
    let (cpus, all) = gather(comm, &times, args.reps);
    if rank == 0 {
        report(args, (size, k, background, root), &cpus, &all);
    }
    Ok(())
}

/// Every rank's processors it may run on (mpirun binds ranks to cores when there are
/// enough), and its `times`: `(cpus[rank], all[rank][measure][rep])`.
fn gather(comm: &MpiComm, times: &[Vec<f64>], reps: usize) -> (Vec<usize>, Vec<Vec<Vec<f64>>>) {
    let usable = std::thread::available_parallelism().map_or(1, |c| c.get()) as f64;
    let bytes: Vec<u8> = std::iter::once(&usable)
        .chain(times.iter().flatten())
        .flat_map(|t| t.to_le_bytes())
        .collect();
    let mut cpus = Vec::new();
    let all = comm
        .all_gather(&bytes)
        .iter()
        .map(|b| {
            let flat: Vec<f64> = b
                .chunks_exact(8)
                .map(|c| f64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
                .collect();
            cpus.push(flat[0] as usize);
            flat[1..].chunks(reps).map(<[f64]>::to_vec).collect()
        })
        .collect();
    (cpus, all)
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
