//! `ovnidump [-x] DIR`: print every event of an ovni trace in clock order.

use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use ovni::tools::{self, DumpMode};

/// Print the events of an ovni trace, merged by clock, one per line:
/// clock, MCV, stream and the event's description (or its payload in hex with -x).
#[derive(Parser, Debug)]
#[command(name = "ovnidump", version)]
struct Args {
    /// Print the payload bytes in hex instead of the description
    #[arg(short = 'x')]
    hex: bool,
    /// Trace directory, any sub-directory of it, or a single stream directory
    dir: PathBuf,
}

fn run(args: &Args) -> anyhow::Result<()> {
    let trace = ovni_tools::load_trace("ovnidump", &args.dir)?;
    let mode = if args.hex {
        DumpMode::Hex
    } else {
        DumpMode::Describe
    };
    let stdout = io::stdout().lock();
    let mut out = io::BufWriter::with_capacity(1 << 16, stdout);
    let outcome = tools::dump(&trace, mode, &mut out, |n| {
        for l in n.lines() {
            eprintln!("ovnidump: ERROR: {l}");
        }
    });
    out.flush()?;
    match outcome.error {
        Some(e) => {
            Err(anyhow::Error::new(e).context(format!("stopped after {} events", outcome.events)))
        }
        None => Ok(()),
    }
}

fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => ovni_tools::report("ovnidump", &e),
    }
}
