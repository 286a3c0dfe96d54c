//! `fti`: inspect, verify, extract and compare FTI-FF checkpoint files.
//!
//! Glue only: parsing, checking and rendering live in the `ftiff` crate.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context as _, Result};
use clap::{Parser, Subcommand, ValueEnum};
use ftiff::diff::Change;
use ftiff::{view, Checkpoint, MappedFile, RsedFile};

mod heatdis;
mod l3;
mod list;
mod timeline;

/// Inspect and check FTI-FF checkpoint files (FTI 1.1's `ckpt_io = 3` format).
///
/// Works on any level's files: `Ckpt<id>-Rank<r>.fti` (L1, L2, L3, L4), the L2 partner copies
/// `Ckpt<id>-Pcof<r>.fti` and the L3 Reed-Solomon files `Ckpt<id>-RSed<r>.fti`, whose 96-byte
/// file block is a trailer after the code (recognised by the name, or with `--kind rsed`).
///
/// Examples:
///   fti inspect Ckpt3-Rank0.fti                 readable view of every record
///   fti inspect --format doc Ckpt3-Rank0.fti    the layout of the FTI-FF design document
///   fti verify l1/*.fti                         exit 0 when all files are intact
///   fti extract Ckpt3-Rank0.fti --id 2 -o v2.bin
///   fti diff Ckpt2-Rank0.fti Ckpt3-Rank0.fti    what changed per variable
///   fti list run/                               every checkpoint: files, verified, survives losing a node?
///   fti prune run/ --keep 3 --dry-run           which archived checkpoints would be deleted
///   fti trace-summary run/trace                 checkpoint time per process, level and phase
#[derive(Parser)]
#[command(name = "fti", version, verbatim_doc_comment)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print the structure of a file: file block, blocks, containers, hashes.
    ///
    /// `text` (default) shows every record with its file offset, then the variables and notes
    /// on unusual bytes (e.g. the uninitialised VMD padding FTI 1.1 writes). `doc` prints the
    /// layout of the FTI-FF design document (no file block, offsets or hashes). `json` is for
    /// scripts: {"fb": {...}, "blocks": [{"offset", "numvars", "dbsize", "vars": [...]}]}.
    /// Inspect checks the structure, not the hashes: use `verify` for that. A path that is not
    /// a regular file (a FIFO, a directory) is refused (exit 1), never read.
    Inspect {
        /// The checkpoint file.
        file: PathBuf,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
        /// How to read the file; `auto` treats `Ckpt<id>-RSed<r>.fti` names as RSed files.
        #[arg(long, value_enum, default_value_t = Kind::Auto)]
        kind: Kind,
    },
    /// Check structure, every hash (file checksum, file block self-hash, every chunk's MD5),
    /// the zero fill of containers, and that nothing follows the file's end.
    ///
    /// Prints one line per problem, naming the file, the byte offset and what is wrong, and
    /// `<file>: ok` for intact files. Exits 0 when every file is intact, 1 otherwise. A path
    /// that is not a regular file (a FIFO, a socket, a directory) is a problem, never read.
    /// FB bytes 49..55 (struct padding) are covered by no hash and cannot be checked.
    Verify {
        /// Checkpoint files.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// How to read the files; `auto` treats `Ckpt<id>-RSed<r>.fti` names as RSed files.
        #[arg(long, value_enum, default_value_t = Kind::Auto)]
        kind: Kind,
        /// Print only problems.
        #[arg(short, long)]
        quiet: bool,
    },
    /// Write the current bytes of a variable (all its chunks, reassembled in order).
    ///
    /// The whole file is verified first, as `verify` does (a variable's id and length are
    /// covered only by the file checksum): a file with any problem is refused, exit 1.
    /// `-o -` writes the bytes to stdout.
    Extract {
        /// The checkpoint file.
        file: PathBuf,
        /// Skip the verification (faster on large files). The bytes written may then be
        /// another variable's, cut, or corrupt, without an error: a warning says so.
        #[arg(long)]
        no_verify: bool,
        /// Id of the variable (the id given to FTI_Protect).
        #[arg(
            long,
            required_unless_present = "all",
            requires = "output",
            allow_negative_numbers = true
        )]
        id: Option<i32>,
        /// Output file for `--id` (`-` for stdout).
        #[arg(short, long)]
        output: Option<PathBuf>,
        /// Write every variable as `DIR/var-<id>.bin` instead.
        #[arg(long, value_name = "DIR", conflicts_with_all = ["id", "output"])]
        all: Option<PathBuf>,
    },
    /// Compare two checkpoints variable by variable: unchanged, changed (which chunks),
    /// resized, added or removed.
    ///
    /// Both files are verified first. Exits 0 when every variable is unchanged, 1 when any is
    /// changed, resized, added or removed, 2 on any error (a file that does not verify
    /// included), as `diff` and `cmp` do.
    Diff {
        /// The older checkpoint.
        a: PathBuf,
        /// The newer checkpoint.
        b: PathBuf,
        /// Skip the verification of both files (faster on large files; a warning says the
        /// comparison may then be wrong).
        #[arg(long)]
        no_verify: bool,
    },
    #[command(about = list::LIST_ABOUT, long_about = list::LIST_HELP)]
    List(list::ListArgs),
    #[command(about = list::PRUNE_ABOUT, long_about = list::PRUNE_HELP)]
    Prune(list::PruneArgs),
    /// Run the heat-diffusion demo once, checkpointing into DIR; when DIR holds checkpoints of
    /// an earlier run that did not finish, it restarts from the newest that every rank can
    /// recover.
    ///
    /// Prints `recovered checkpoint <id> at iteration <n> (<level>, ...)` after a restart and
    /// `checksum <md5>` of the final grid (see docs/runtime.md, *The heat-diffusion demo*, for the
    /// exact definition). Built with the `mpi` feature and started with `mpirun -np N`, each
    /// process is one rank: the grid is split into bands of rows and even checkpoints go to L2
    /// (partner copies), so the run survives the loss of one node's checkpoint directory
    /// (`scripts/demo-mpi`).
    Heatdis {
        #[command(flatten)]
        demo: DemoArgs,
        /// Abort the process (a real crash) at the start of this iteration.
        #[arg(long)]
        crash_at: Option<i32>,
    },
    /// The whole demo story: run heat diffusion uninterrupted, run it again crashing (a real
    /// abort) at an iteration, restart it so that it recovers and finishes, and check that
    /// both final grids are bitwise identical. Checkpoint files stay in DIR for `fti inspect`
    /// and `fti list`. Ends by writing DIR/timeline.html, the runs' traces drawn by ovniview
    /// (the crashed run flagged), and printing `timeline: <path>`.
    Demo {
        #[command(flatten)]
        demo: DemoArgs,
        /// Iteration at which the second run crashes.
        #[arg(long, default_value_t = 1234)]
        crash_at: i32,
    },
    #[command(name = "trace-summary", about = timeline::ABOUT, long_about = timeline::HELP)]
    TraceSummary(timeline::SummaryArgs),
    #[command(name = "l3-encode", about = l3::ENCODE_ABOUT, long_about = l3::ENCODE_HELP)]
    L3Encode(l3::GroupArgs),
    #[command(name = "l3-rebuild", about = l3::REBUILD_ABOUT, long_about = l3::REBUILD_HELP)]
    L3Rebuild(l3::GroupArgs),
}

#[derive(clap::Args, Clone)]
struct DemoArgs {
    /// Directory for checkpoints.
    #[arg(long, default_value = "target/demo")]
    dir: PathBuf,
    /// Grid edge in cells.
    #[arg(long, default_value_t = 512)]
    size: usize,
    /// Iterations.
    #[arg(long, default_value_t = 3000)]
    iters: i32,
    /// Checkpoint every this many iterations (every 4th checkpoint goes to L4).
    #[arg(long, default_value_t = 250)]
    every: i32,
    /// Level of the even checkpoints when several ranks run: 2 (partner copies) or 3
    /// (Reed-Solomon across each group).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u8).range(2..=3))]
    partner_level: u8,
}

impl DemoArgs {
    fn params(&self, crash_at: Option<i32>) -> heatdis::Params {
        heatdis::Params {
            size: self.size,
            iters: self.iters,
            every: self.every,
            crash_at,
            partner_level: if self.partner_level == 3 {
                fti::Level::L3
            } else {
                fti::Level::L2
            },
        }
    }

    fn args(&self) -> Vec<String> {
        vec![
            "--size".into(),
            self.size.to_string(),
            "--iters".into(),
            self.iters.to_string(),
            "--every".into(),
            self.every.to_string(),
            "--partner-level".into(),
            self.partner_level.to_string(),
        ]
    }
}

#[derive(Clone, Copy, ValueEnum)]
enum Format {
    Text,
    Doc,
    Json,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Kind {
    Auto,
    Ckpt,
    Rsed,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(err) => {
            if is_broken_pipe(&err) {
                return ExitCode::SUCCESS;
            }
            eprintln!("fti: {err:#}");
            ExitCode::FAILURE
        }
    }
}

fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain()
        .filter_map(|e| e.downcast_ref::<std::io::Error>())
        .any(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
}

fn run(cli: Cli) -> Result<ExitCode> {
    match cli.command {
        Command::Inspect { file, format, kind } => inspect(&file, format, kind),
        Command::Verify { files, kind, quiet } => verify(&files, kind, quiet),
        Command::Extract {
            file,
            no_verify,
            id,
            output,
            all,
        } => extract(&file, !no_verify, id, output.as_deref(), all.as_deref()),
        Command::Diff { a, b, no_verify } => Ok(match diff(&a, &b, !no_verify) {
            Ok(code) => code,
            Err(err) if is_broken_pipe(&err) => ExitCode::SUCCESS,
            Err(err) => {
                eprintln!("fti: {err:#}");
                ExitCode::from(2)
            }
        }),
        Command::List(args) => list::list(&args),
        Command::Prune(args) => list::prune(&args),
        Command::Heatdis { demo, crash_at } => heatdis(&demo, crash_at),
        Command::Demo { demo, crash_at } => demo_story(&demo, crash_at),
        Command::TraceSummary(args) => timeline::trace_summary(&args),
        Command::L3Encode(args) => l3::encode(&args),
        Command::L3Rebuild(args) => l3::rebuild(&args),
    }
}

fn file_name(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

fn is_rsed(path: &Path, kind: Kind) -> bool {
    match kind {
        Kind::Auto => ftiff::FileName::parse(&file_name(path))
            .is_some_and(|n| n.kind == ftiff::FileKind::Rsed),
        Kind::Ckpt => false,
        Kind::Rsed => true,
    }
}

/// Opens a checkpoint whose variable bytes are about to be used: verified in full (with a
/// progress bar for large files) unless `verify` is off, which is said loudly.
fn open(path: &Path, verify: bool) -> Result<MappedFile> {
    let file = load(path)?;
    if !verify {
        eprintln!(
            "fti: warning: {}: not verified (--no-verify): the bytes used may be another variable's, cut or corrupt",
            path.display()
        );
        Checkpoint::of(&file)?;
        return Ok(file);
    }
    let bar = progress_bar(path, file.bytes().len() as u64);
    let verified = Checkpoint::verified(&file, &|done| bar.set_position(done)).map(|_| ());
    bar.finish_and_clear();
    verified.context(
        "the file does not verify; nothing was read from it (fti verify lists every problem)",
    )?;
    Ok(file)
}

pub use fti::inventory::load;

fn inspect(path: &Path, format: Format, kind: Kind) -> Result<ExitCode> {
    let map = load(path)?;
    let bytes = map.bytes();
    let out = if is_rsed(path, kind) {
        let rsed = RsedFile::parse(bytes).map_err(|e| e.with_path(path))?;
        match format {
            Format::Text => view::rsed_text(&file_name(path), bytes, &rsed),
            Format::Doc => bail!(
                "{}: an RSed file holds Reed-Solomon code, not blocks; use --format text or json",
                path.display()
            ),
            Format::Json => format!("{:#}\n", view::rsed_json(&rsed)),
        }
    } else {
        let ckpt = Checkpoint::parse(bytes).map_err(|e| e.with_path(path))?;
        match format {
            Format::Text => view::text(&file_name(path), bytes.len() as u64, &ckpt),
            Format::Doc => view::doc_format(&ckpt.layout()),
            Format::Json => format!("{:#}\n", view::json(&ckpt)),
        }
    };
    std::io::stdout().lock().write_all(out.as_bytes())?;
    Ok(ExitCode::SUCCESS)
}

/// Files at least this large get a progress bar while their hashes are checked.
const PROGRESS_THRESHOLD: u64 = 256 << 20;

fn verify(files: &[PathBuf], kind: Kind, quiet: bool) -> Result<ExitCode> {
    let mut stdout = std::io::stdout().lock();
    let mut intact = true;
    for path in files {
        let problems = verify_one(path, kind);
        if problems.is_empty() {
            if !quiet {
                writeln!(stdout, "{}: ok", path.display())?;
            }
        } else {
            intact = false;
            for p in problems {
                writeln!(stdout, "{p}")?;
            }
        }
    }
    Ok(if intact {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// Every problem of one file, each naming the file.
fn verify_one(path: &Path, kind: Kind) -> Vec<ftiff::Error> {
    let map = match load(path) {
        Ok(map) => map,
        Err(e) => return vec![e],
    };
    let bytes = map.bytes();
    let bar = progress_bar(path, bytes.len() as u64);
    let progress = |done: u64| bar.set_position(done);
    let problems = if is_rsed(path, kind) {
        match RsedFile::parse(bytes) {
            Ok(rsed) => rsed.verify(bytes, &progress),
            Err(e) => vec![e],
        }
    } else {
        match Checkpoint::parse(bytes) {
            Ok(ckpt) => ckpt.verify(&progress),
            Err(e) => vec![e],
        }
    };
    bar.finish_and_clear();
    problems.into_iter().map(|e| e.with_path(path)).collect()
}

fn progress_bar(path: &Path, len: u64) -> indicatif::ProgressBar {
    if len < PROGRESS_THRESHOLD {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(len);
    let style = indicatif::ProgressStyle::with_template(
        "{msg} [{bar:30}] {bytes}/{total_bytes} ({bytes_per_sec}, {eta})",
    )
    .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar());
    bar.set_style(style);
    bar.set_message(format!("verifying {}", file_name(path)));
    bar
}

fn extract(
    path: &Path,
    verify: bool,
    id: Option<i32>,
    output: Option<&Path>,
    all: Option<&Path>,
) -> Result<ExitCode> {
    let map = open(path, verify)?;
    let ckpt = Checkpoint::of(&map)?;
    if ckpt.trailing > 0 {
        eprintln!(
            "fti: warning: {}: {} byte(s) after the end given by FB.fs are ignored (FTI 1.1 ignores them too)",
            path.display(),
            ckpt.trailing
        );
    }
    let write = |id: i32, out: &Path| -> Result<()> {
        let data = ckpt.read_var(id).map_err(|e| e.with_path(path))?;
        if out == Path::new("-") {
            return Ok(std::io::stdout().lock().write_all(&data)?);
        }
        std::fs::write(out, data).with_context(|| format!("writing {}", out.display()))
    };
    match (id, output, all) {
        (Some(id), Some(out), None) => write(id, out)?,
        (None, None, Some(dir)) => {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
            for var in ckpt.vars() {
                write(var.id, &dir.join(format!("var-{}.bin", var.id)))?;
            }
        }
        _ => bail!("give --id N -o OUT, or --all DIR"),
    }
    Ok(ExitCode::SUCCESS)
}

fn diff(a: &Path, b: &Path, verify: bool) -> Result<ExitCode> {
    let (ma, mb) = (open(a, verify)?, open(b, verify)?);
    let (ca, cb) = (Checkpoint::of(&ma)?, Checkpoint::of(&mb)?);
    let mut same = true;
    let changes = ftiff::diff::diff(&ca, &cb)
        .with_context(|| format!("comparing {} and {}", a.display(), b.display()))?;
    let mut stdout = std::io::stdout().lock();
    for d in changes {
        same &= matches!(d.change, Change::Unchanged { .. });
        let line = match d.change {
            Change::Unchanged { size } => format!("unchanged ({size} bytes)"),
            Change::Changed { size, chunks } => {
                let list: Vec<String> = chunks.iter().map(u32::to_string).collect();
                format!(
                    "changed ({size} bytes; containers {} differ)",
                    list.join(", ")
                )
            }
            Change::Resized { from, to } => format!("resized ({from} -> {to} bytes)"),
            Change::Added { size } => format!("added ({size} bytes)"),
            Change::Removed { size } => format!("removed ({size} bytes)"),
        };
        writeln!(stdout, "id {}: {line}", d.id)?;
    }
    Ok(if same {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn heatdis(demo: &DemoArgs, crash_at: Option<i32>) -> Result<ExitCode> {
    // Under mpirun (a build with the `mpi` feature), every process is one rank of the run.
    #[cfg(feature = "mpi")]
    let universe = mpi::initialize();
    #[cfg(feature = "mpi")]
    let comm: Box<dyn fti::Comm> = match &universe {
        Some(u) => Box::new(fti::comm::mpi::MpiComm::new(&u.world())),
        None => Box::new(fti::SelfComm),
    };
    #[cfg(not(feature = "mpi"))]
    let comm: Box<dyn fti::Comm> = Box::new(fti::SelfComm);
    let (rank, ranks) = (comm.rank(), comm.size());
    let cfg = heatdis::config(&demo.dir);
    let out = heatdis::run_with(cfg, comm, demo.params(crash_at), &mut |line| {
        if rank == 0 {
            println!("{line}");
        }
    })?;
    if rank == 0 {
        println!(
            "ranks: {ranks}, iterations computed: {}, checkpoints written: {}",
            out.computed, out.checkpoints
        );
        println!("checksum {}", out.checksum);
    }
    Ok(ExitCode::SUCCESS)
}

/// Runs `fti heatdis` in a child process; returns its exit status and stdout.
fn heatdis_child(
    demo: &DemoArgs,
    dir: &Path,
    crash_at: Option<i32>,
) -> Result<(std::process::ExitStatus, String)> {
    let mut cmd = std::process::Command::new(std::env::current_exe()?);
    cmd.arg("heatdis").arg("--dir").arg(dir).args(demo.args());
    if let Some(at) = crash_at {
        cmd.arg("--crash-at").arg(at.to_string());
    }
    let out = cmd
        .stderr(std::process::Stdio::inherit())
        .output()
        .context("starting the demo process")?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    for line in stdout.lines() {
        println!("    {line}");
    }
    Ok((out.status, stdout))
}

fn checksum_line(stdout: &str) -> Option<&str> {
    stdout.lines().find_map(|l| l.strip_prefix("checksum "))
}

/// The file `fti demo` writes into each directory it creates: only directories holding it
/// are ever removed by a later `fti demo`.
const DEMO_MARKER: &str = ".fti-demo";

/// Makes `dir` an empty directory of the demo: a directory an earlier `fti demo` created (it
/// holds [`DEMO_MARKER`]) is removed first; any other existing entry is left alone and the
/// demo refuses to run.
fn fresh_demo_dir(dir: &Path) -> Result<()> {
    if dir.symlink_metadata().is_ok() {
        let ours = dir.is_dir() && !dir.is_symlink() && dir.join(DEMO_MARKER).is_file();
        if !ours {
            bail!(
                "{} exists and was not created by `fti demo` (no {DEMO_MARKER} file in it): it is left alone; choose another --dir, or remove it yourself",
                dir.display()
            );
        }
        std::fs::remove_dir_all(dir).with_context(|| format!("cleaning {}", dir.display()))?;
    }
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    std::fs::write(
        dir.join(DEMO_MARKER),
        "created by `fti demo`, which removes this directory when it runs again\n",
    )
    .with_context(|| format!("writing {}", dir.join(DEMO_MARKER).display()))
}

fn demo_story(demo: &DemoArgs, crash_at: i32) -> Result<ExitCode> {
    let (plain, crashed) = (demo.dir.join("uninterrupted"), demo.dir.join("crashed"));
    for d in [&plain, &crashed] {
        fresh_demo_dir(d)?;
    }
    println!(
        "1. uninterrupted run ({0}x{0} grid, {1} iterations, checkpoint every {2}):",
        demo.size, demo.iters, demo.every
    );
    let (status, out) = heatdis_child(demo, &plain, None)?;
    if !status.success() {
        bail!("the uninterrupted run failed ({status})");
    }
    let reference = checksum_line(&out)
        .context("no checksum line from the uninterrupted run")?
        .to_owned();
    println!("2. the same run, crashing at iteration {crash_at}:");
    let (status, _) = heatdis_child(demo, &crashed, Some(crash_at))?;
    if status.success() {
        bail!("the run meant to crash finished (is --crash-at below --iters?)");
    }
    println!("    (process died: {status})");
    println!("3. restart:");
    let (status, out) = heatdis_child(demo, &crashed, None)?;
    if !status.success() {
        bail!("the restarted run failed ({status})");
    }
    let restarted = checksum_line(&out).context("no checksum line from the restarted run")?;
    let same = restarted == reference;
    println!(
        "4. final grids {}: {reference} vs {restarted}",
        if same { "bitwise identical" } else { "DIFFER" }
    );
    println!("   checkpoint files: fti list {}", crashed.display());
    println!(
        "   runtime trace:    ovnidump {}",
        crashed.join("trace").display()
    );
    println!(
        "   checkpoint time:  fti trace-summary {}",
        crashed.join("trace").display()
    );
    let timeline = timeline::write_timeline(
        &demo.dir,
        &[plain.join("trace"), crashed.join("trace")],
        "fti demo: uninterrupted run, crashed run and its restart",
    )?;
    println!("timeline: {}", timeline.display());
    Ok(if same {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
