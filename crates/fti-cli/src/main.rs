//! `fti`: inspect, verify, extract and compare FTI-FF checkpoint files.
//!
//! Glue only: parsing, checking and rendering live in the `ftiff` crate.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Parser, Subcommand, ValueEnum};

use demo::{demo_story, heatdis, DemoArgs};
use files::{diff, extract, inspect, verify};
pub use files::{file_name, load, PROGRESS_THRESHOLD};

mod demo;
mod files;
mod heatdis;
mod l3;
mod list;
mod output;
mod prune;
mod sigbus;
mod timeline;

/// Inspect and check FTI-FF checkpoint files (FTI 1.1's `ckpt_io = 3` format).
///
/// Works on any level's files: `Ckpt<id>-Rank<r>.fti` (L1, L2, L3, L4), the L2 partner copies
/// `Ckpt<id>-Pcof<r>.fti` and the L3 Reed-Solomon files `Ckpt<id>-RSed<r>.fti`, whose 96-byte
/// file block is a trailer after the code (recognised by the name, or with `--kind rsed`).
/// Trees of FTI's POSIX and MPI-IO modes (`ckpt_io = 1, 2`: raw data, meta data in sector
/// files) are refused with a message: the runtime and libfti restart from them.
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
    /// Check structure, every hash (file checksum, file block self-hash, every chunk's MD5)
    /// and the zero fill of containers: the verdict the restart, `list`, `extract`, `diff` and
    /// `l3-rebuild` give too.
    ///
    /// Prints one line per problem, naming the file, the byte offset and what is wrong, and
    /// `<file>: ok` for intact files. Bytes after the end `FB.fs` gives are covered by no hash
    /// and ignored by FTI 1.1 and the restart: `<file>: ok (N byte(s) after ...)` says so. Exits 0 when every file is intact, 1 otherwise. A path
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
    #[command(about = prune::PRUNE_ABOUT, long_about = prune::PRUNE_HELP)]
    Prune(prune::PruneArgs),
    /// Run the heat-diffusion demo once, checkpointing into DIR; when DIR holds checkpoints of
    /// an earlier run that did not finish, it restarts from the newest that every rank can
    /// recover.
    ///
    /// Prints `recovered checkpoint <id> at iteration <n> (<level>, ...)` after a restart and
    /// `checksum <md5>` of the final grid (see docs/runtime.md, installed as
    /// share/doc/fti-rs/runtime.md, *The heat-diffusion demo*, for the exact definition). Built with the `mpi` feature and started with `mpirun -np N`, each
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

#[derive(Clone, Copy, ValueEnum)]
pub enum Format {
    Text,
    Doc,
    Json,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Kind {
    Auto,
    Ckpt,
    Rsed,
}

fn main() -> ExitCode {
    sigbus::install();
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

/// The files and directories a command reads.
fn paths(command: &Command) -> Vec<&std::path::Path> {
    match command {
        Command::Inspect { file, .. } | Command::Extract { file, .. } => vec![file],
        Command::Verify { files, .. } => files.iter().map(PathBuf::as_path).collect(),
        Command::Diff { a, b, .. } => vec![a, b],
        Command::List(args) => vec![&args.dir],
        Command::Prune(args) => vec![&args.dir],
        Command::L3Encode(args) | Command::L3Rebuild(args) => vec![args.dir()],
        Command::Heatdis { .. } | Command::Demo { .. } | Command::TraceSummary(_) => Vec::new(),
    }
}

/// Refuses POSIX checkpoints (`ckpt_io = 1`): these tools read FTI-FF files, and a POSIX
/// file's raw bytes would read as a corrupt FTI-FF file.
fn refuse_posix(command: &Command) -> Result<()> {
    for path in paths(command) {
        if let Some(meta) = fti::io::posix::meta_near(path) {
            anyhow::bail!(
                "{}: a POSIX checkpoint tree (ckpt_io = 1 or 2; meta data in {}): this tool reads FTI-FF files (ckpt_io = 3) only; the runtime restarts from POSIX trees",
                path.display(),
                meta.display()
            );
        }
    }
    Ok(())
}

fn run(cli: Cli) -> Result<ExitCode> {
    refuse_posix(&cli.command)?;
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
        Command::Prune(args) => prune::prune(&args),
        Command::Heatdis { demo, crash_at } => heatdis(&demo, crash_at),
        Command::Demo { demo, crash_at } => demo_story(&demo, crash_at),
        Command::TraceSummary(args) => timeline::trace_summary(&args),
        Command::L3Encode(args) => l3::encode(&args),
        Command::L3Rebuild(args) => l3::rebuild(&args),
    }
}
