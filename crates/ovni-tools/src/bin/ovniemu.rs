//! `ovniemu [-a] [-b] [-d] [-l] [-c FILE] DIR`: emulate an ovni trace and write its Paraver views.

use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser};
use ovni::emu::{emulate, model_list, EmuOptions, Level, Reporter};

/// Emulate an ovni trace (the ovni, nanos6, nosv, nodes, tampi, mpi, kernel and openmp
/// models, as ovniemu 1.14 does) and
/// write its Paraver views into the trace directory, replacing any there: cpu.prv, cpu.pcf,
/// cpu.row (one row per CPU: running thread's TID and PID, number of running threads,
/// flushes, marks, and the other models' channels) and thread.prv, thread.pcf, thread.row
/// (one row per thread: state, CPU, TID while active, flushes, marks, the other models'
/// channels).
///
/// Messages on stderr are the original's. Exits 0 when the emulation finishes ok, 1 on any
/// error (the files are still written once the emulation started), 2 on usage errors.
///
/// Differences from ovni 1.14's ovniemu: the Paraver configurations written in DIR/cfg/ (one
/// window per view) are this tool's own; -d prints the original's debug lines of the
/// emulator's own steps but not those of its channel machinery; a trace whose threads did not
/// finish (a crashed program) is refused, as the original does. See docs/ovniemu.md (installed as
/// share/doc/fti-rs/ovniemu.md).
#[derive(Parser, Debug)]
#[command(name = "ovniemu", version)]
struct Args {
    /// Linter mode: stricter end checks (also fail if a thread ends with marks still pushed,
    /// or inside an MPI function or a TAMPI, NODES, OpenMP, nOS-V or Nanos6 subsystem); the
    /// files are still written
    #[arg(short = 'l')]
    lint: bool,
    /// Clock offset table (default: DIR/clock-offsets.txt if present)
    #[arg(short = 'c', value_name = "FILE")]
    clock_offsets: Option<PathBuf>,
    /// Enable every model, whether the trace requires it or not
    #[arg(short = 'a')]
    all_models: bool,
    /// Also write the breakdown views of the nanos6, openmp and nosv models
    /// (MODEL-breakdown.prv, .pcf, .row)
    #[arg(short = 'b')]
    breakdown: bool,
    /// Debug output, as the original's (very verbose): the loading, the system, the models,
    /// each event and each task step by step (not the original's channel machinery lines)
    #[arg(short = 'd')]
    debug: bool,
    /// Trace directory
    dir: PathBuf,
}

struct Stderr<'a>(io::StderrLock<'a>);

impl Reporter for Stderr<'_> {
    fn line(&mut self, level: Level, text: &str) {
        let _ = writeln!(self.0, "ovniemu: {}: {text}", level.as_str());
    }

    fn progress(&mut self, text: &str) {
        let _ = write!(self.0, "ovniemu: INFO: {text}");
    }
}

fn main() -> ExitCode {
    let cmd = Args::command().after_help(format!("Available emulation models:\n{}", model_list()));
    let args = Args::from_arg_matches(&cmd.get_matches()).unwrap_or_else(|e| e.exit());
    let opts = EmuOptions {
        lint: args.lint,
        clock_offsets: args.clock_offsets,
        all_models: args.all_models,
        breakdown: args.breakdown,
        debug: args.debug,
    };
    let mut rep = Stderr(io::stderr().lock());
    if emulate(&args.dir, &opts, &mut rep).ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
