//! `ovnitop DIR`: count the events of an ovni trace per MCV.

use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

/// Count the events of an ovni trace by MCV (model, category, value) and print one line per
/// MCV, most frequent first.
#[derive(Parser, Debug)]
#[command(name = "ovnitop", version)]
struct Args {
    /// Trace directory, any sub-directory of it, or a single stream directory
    dir: PathBuf,
}

fn run(args: &Args) -> anyhow::Result<()> {
    let trace = ovni_tools::load_trace("ovnitop", &args.dir)?;
    let (counts, err) = ovni::tools::top(&trace, |n| {
        for l in n.lines() {
            eprintln!("ovnitop: ERROR: {l}");
        }
    });
    // Like the original, the counts read before an error are still printed.
    let mut out = io::stdout().lock();
    counts.write(&mut out)?;
    out.flush()?;
    match err {
        Some(e) => Err(e.into()),
        None => Ok(()),
    }
}

fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => ovni_tools::report("ovnitop", &e),
    }
}
