//! `ovnidump [-x | --labels] DIR`: print every event of an ovni trace in clock order.
//!
//! stderr and the exit status are the original's: the same `INFO`/`WARN`/`ERROR` lines for
//! load errors, broken events and undecodable events. Where the original crashed or printed
//! garbage, an error of ours names the file and offset instead. Usage errors exit 2.

use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use ovni::tools::{self, DumpMode};
use ovni::Trace;

/// Print the events of an ovni trace, merged by clock, one per line:
/// clock, MCV, stream and the event's description (or its payload in hex with -x).
#[derive(Parser, Debug)]
#[command(name = "ovnidump", version)]
struct Args {
    /// Print the payload bytes in hex instead of the description
    #[arg(short = 'x', conflicts_with = "labels")]
    hex: bool,
    /// Print mark events with the label of their value and the title of their type, when the
    /// trace defines them (not in the original ovnidump)
    #[arg(long)]
    labels: bool,
    /// Trace directory, any sub-directory of it, or a single stream directory
    dir: PathBuf,
}

fn error_lines(lines: &[String]) {
    let mut err = io::stderr().lock();
    for l in lines {
        let _ = writeln!(err, "ovnidump: ERROR: {l}");
    }
}

fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let trace = match Trace::open(&args.dir) {
        Ok(t) => t,
        Err(e) => {
            if let Some(lines) = tools::c_load_error_lines(&args.dir, &e) {
                error_lines(&lines);
                return Ok(ExitCode::FAILURE);
            }
            return Err(anyhow::Error::new(e)
                .context(format!("failed to load trace: {}", args.dir.display())));
        }
    };
    ovni_tools::report_loaded("ovnidump", &trace);
    let mode = if args.hex {
        DumpMode::Hex
    } else if args.labels {
        DumpMode::Labels
    } else {
        DumpMode::Describe
    };
    let stdout = io::stdout().lock();
    let mut out = io::BufWriter::with_capacity(1 << 16, stdout);
    let outcome = tools::dump(&trace, mode, &mut out, |n| error_lines(&n.lines()));
    out.flush()?;
    match outcome.error {
        Some(e) => {
            match tools::c_step_error_lines(&trace, &e) {
                Some(lines) => {
                    error_lines(&lines);
                    Ok(ExitCode::FAILURE)
                }
                None => Err(anyhow::Error::new(e)
                    .context(format!("stopped after {} events", outcome.events))),
            }
        }
        None => Ok(ExitCode::SUCCESS),
    }
}

fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args) {
        Ok(code) => code,
        Err(e) => ovni_tools::report("ovnidump", &e),
    }
}
