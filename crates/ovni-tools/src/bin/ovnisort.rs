//! `ovnisort -c DIR`: check that the events of every stream are sorted by clock.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use ovni::tools::{check_sorted, SortCheck};

/// Check that the clocks of every stream of an ovni trace never go backwards.
///
/// Exits 0 if all streams are sorted, 1 if any is not (or cannot be read).
/// Only the check mode (-c) is provided: sorting in place is not implemented.
#[derive(Parser, Debug)]
#[command(name = "ovnisort", version)]
struct Args {
    /// Only check whether the streams are sorted (required)
    #[arg(short = 'c', required = true)]
    check: bool,
    /// Trace directory, any sub-directory of it, or a single stream directory
    dir: PathBuf,
}

fn run(args: &Args) -> anyhow::Result<bool> {
    let trace = ovni_tools::load_trace("ovnisort", &args.dir)?;
    let mut all = true;
    for s in trace.streams() {
        let verdict = check_sorted(s);
        match &verdict {
            SortCheck::Sorted => continue,
            SortCheck::Empty => eprintln!("ovnisort: ERROR: stream '{}' has no events", s.name()),
            SortCheck::Backwards { offset, prev, clock } => eprintln!(
                "ovnisort: ERROR: backwards jump in time {prev} -> {clock} for stream {} at offset {offset}",
                s.name()
            ),
            SortCheck::Malformed(e) => eprintln!("ovnisort: ERROR: {e}"),
        }
        eprintln!("ovnisort: INFO: stream {} is not sorted", s.name());
        all = false;
    }
    if all {
        eprintln!("ovnisort: INFO: all streams sorted");
    } else {
        eprintln!("ovnisort: INFO: streams NOT sorted");
    }
    Ok(all)
}

fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => ovni_tools::report("ovnisort", &e),
    }
}
