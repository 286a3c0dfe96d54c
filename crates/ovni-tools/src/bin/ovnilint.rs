//! `ovnilint [-l] [--all] [--json] DIR`: check that ovniemu would accept an ovni trace.

use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use ovni::lint::{lint_dir, LintOptions, Report};

/// Check an ovni trace the way the ovni emulator (ovniemu 1.14) does: metadata and its merge
/// rules, required model versions, stream structure, clock order, the ovni model's thread
/// states, CPUs, affinity, flushes and marks, and that every thread ends dead.
///
/// Exits 0 if the trace would be accepted, 1 with the first problem otherwise (every problem
/// with --all), 2 on usage errors or when the report cannot be written.
#[derive(Parser, Debug)]
#[command(name = "ovnilint", version)]
struct Args {
    /// List every problem instead of stopping at the first
    #[arg(short, long)]
    all: bool,
    /// With --all, stop after this many problems (0: no limit)
    #[arg(long, value_name = "N", default_value_t = 10_000)]
    max_problems: usize,
    /// Print a JSON report on stdout
    #[arg(long)]
    json: bool,
    /// Clock offset table (default: DIR/clock-offsets.txt if present, as ovniemu)
    #[arg(short = 'c', long, value_name = "FILE")]
    clock_offsets: Option<PathBuf>,
    /// Linter mode, as ovniemu -l: also fail if a thread ends with marks still pushed, or
    /// inside an MPI function or a TAMPI, NODES, OpenMP, nOS-V or Nanos6 subsystem
    #[arg(short = 'l')]
    linter_mode: bool,
    /// Trace directory, any sub-directory of it, or a single stream directory
    dir: PathBuf,
}

fn print(args: &Args, report: &Report) -> io::Result<()> {
    let mut out = io::stdout().lock();
    if args.json {
        writeln!(out, "{:#}", report.to_json())?;
    } else {
        for p in &report.problems {
            writeln!(out, "{p}")?;
        }
    }
    out.flush()
}

fn main() -> ExitCode {
    let args = Args::parse();
    let opts = LintOptions {
        all: args.all,
        max_problems: args.max_problems,
        clock_offsets: args.clock_offsets.clone(),
        linter_mode: args.linter_mode,
    };
    let report = lint_dir(&args.dir, &opts);
    match print(&args, &report) {
        // A closed pipe (`ovnilint DIR | head -1`) does not change the verdict.
        Err(e) if e.kind() != io::ErrorKind::BrokenPipe => {
            eprintln!("ovnilint: ERROR: {e}");
            return ExitCode::from(2);
        }
        _ => {}
    }
    let n = report.problems.len();
    if report.accepted() {
        eprintln!(
            "ovnilint: trace accepted: {} streams, {} events",
            report.streams, report.events
        );
        return ExitCode::SUCCESS;
    }
    if args.all {
        let more = if report.truncated {
            " (stopped at --max-problems)"
        } else {
            ""
        };
        eprintln!("ovnilint: trace rejected: {n} problems{more}");
    } else {
        eprintln!("ovnilint: trace rejected (first problem only; --all lists every problem)");
    }
    ExitCode::FAILURE
}
