//! `ovnisort DIR`: sort the unordered regions (`OU[` … `OU]`) of every stream in place;
//! `ovnisort -c DIR`: check that the events of every stream are sorted by clock.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use ovni::sort::{
    c_check_error_lines, c_error_lines, check_stream, sort_stream, DEFAULT_LOOK_BACK,
};
use ovni::Trace;

/// Sort the events in each stream of an ovni trace, so they are suitable for ovniemu.
///
/// Only the events enclosed by OU[ and OU] are sorted. At most N events are looked back to
/// insert them, so sorting can fail with an error. Each sorted stream replaces its
/// stream.obs atomically: an interrupted sort leaves it either as it was or sorted.
///
/// Exits 0 if every stream is sorted (with -c: already sorted), 1 otherwise.
#[derive(Parser, Debug)]
#[command(name = "ovnisort", version)]
struct Args {
    /// Check mode: do not sort, only check that every stream is already sorted
    #[arg(short = 'c')]
    check: bool,
    /// Number of events to look back
    #[arg(short = 'n', value_name = "N", default_value_t = DEFAULT_LOOK_BACK,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    look_back: usize,
    /// Trace directory, any sub-directory of it, or a single stream directory
    dir: PathBuf,
}

/// Checks every stream, reporting each backwards jump, as the original does.
fn check(trace: &Trace) -> bool {
    let mut all = true;
    for s in trace.streams() {
        let name = s.name();
        let sorted = check_stream(s, |jump| {
            eprintln!("ovnisort: ERROR: {}", jump.c_line(&name))
        });
        let sorted = sorted.unwrap_or_else(|e| {
            for line in c_check_error_lines(&e, &name) {
                eprintln!("ovnisort: ERROR: {line}");
            }
            false
        });
        if !sorted {
            eprintln!("ovnisort: INFO: stream {name} is not sorted");
            all = false;
        }
    }
    if all {
        eprintln!("ovnisort: INFO: all streams sorted");
    } else {
        eprintln!("ovnisort: INFO: streams NOT sorted");
    }
    all
}

/// Sorts stream after stream and stops at the first that cannot be sorted.
fn sort(trace: &Trace, look_back: usize) -> bool {
    for s in trace.streams() {
        match sort_stream(s, look_back) {
            Ok(report) if report.empty_regions > 0 => eprintln!(
                "ovnisort: WARN: stream {} contains {} empty sort regions",
                s.name(),
                report.empty_regions
            ),
            Ok(_) => {}
            Err(e) => {
                for line in c_error_lines(&e, &s.name()) {
                    eprintln!("ovnisort: {line}");
                }
                return false;
            }
        }
    }
    true
}

fn run(args: &Args) -> anyhow::Result<bool> {
    let Some(trace) = ovni_tools::load_trace_as_original("ovnisort", &args.dir)? else {
        return Ok(false);
    };
    Ok(if args.check {
        check(&trace)
    } else {
        sort(&trace, args.look_back)
    })
}

fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => ovni_tools::report("ovnisort", &e),
    }
}
