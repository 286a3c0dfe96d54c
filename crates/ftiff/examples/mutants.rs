//! The FTI-FF mutation campaign: tens of thousands of deterministic mutants of valid checkpoint
//! files, each checked against the promise of `fti verify`, `extract`, `diff` and `inspect`.
//!
//! For every mutant: if `Checkpoint::verified` accepts it, its variables (ids, protect
//! positions, sizes) and every variable's bytes must equal the original's, and `diff` both ways
//! must report every variable unchanged; parsing, the three views (and the `RSed` views), and
//! the unverified reads must not panic; and every mutant must finish within a time bound.
//! Mutants may have `FB.myHash` and their `VMD.hash`es recomputed, never `FB.checksum`
//! (see `tests/support/mutants.rs` for the inputs, the mutations and the threat model).
//!
//! Usage: `cargo run --release -p ftiff --example mutants -- [COUNT [SEED [INDEX]]]`
//! (default 24000 mutants, seed 1). With INDEX, only that mutant is made and checked, and
//! described in full. Exits 1 on any violation.

#[path = "../tests/support/mutants.rs"]
mod campaign;

use std::process::ExitCode;
use std::time::Duration;

/// Default number of mutants.
const COUNT: u64 = 24_000;
/// Longest time one mutant may take (files are at most ~110 KB: milliseconds are expected).
const BOUND: Duration = Duration::from_secs(10);

fn arg(n: usize, default: u64) -> Result<u64, String> {
    match std::env::args().nth(n) {
        None => Ok(default),
        Some(a) => a.parse().map_err(|_| {
            format!("argument {n} ({a:?}) is not a number; usage: mutants [COUNT [SEED [INDEX]]]")
        }),
    }
}

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("mutants: {e}");
            ExitCode::from(2)
        }
    }
}

fn run() -> Result<bool, String> {
    let count = arg(1, COUNT)?;
    let seed = arg(2, 1)?;
    let only = std::env::args().nth(3).map(|_| arg(3, 0)).transpose()?;
    let work = tempfile::tempdir().map_err(|e| format!("temporary directory: {e}"))?;
    if let Some(index) = only {
        return show(seed, index, work.path());
    }
    let mut shown = 0;
    let summary = campaign::run(seed, 0..count, work.path(), BOUND, &mut |line| {
        if shown < 50 {
            println!("{line}");
        }
        shown += 1;
    })?;
    print!("{}", summary.report(seed));
    Ok(summary.violations.is_empty())
}

/// Makes and checks one mutant, printing what it is and what the reader made of it.
fn show(seed: u64, index: u64, work: &std::path::Path) -> Result<bool, String> {
    let inputs = campaign::inputs(work)?;
    let m = campaign::make(seed, index, &inputs);
    println!("{}", m.describe(&inputs));
    let changed: Vec<usize> = (0..m.bytes.len().max(inputs[m.input].bytes.len()))
        .filter(|&i| m.bytes.get(i) != inputs[m.input].bytes.get(i))
        .collect();
    println!(
        "{} bytes (original {}), {} byte(s) differ{}",
        m.bytes.len(),
        inputs[m.input].bytes.len(),
        changed.len(),
        changed
            .first()
            .map_or(String::new(), |f| format!(", first at {f}"))
    );
    let outcome = campaign::check(&inputs[m.input], &m.bytes, &work.join("mutant.fti"));
    println!("{outcome:?}");
    Ok(outcome.is_ok())
}
