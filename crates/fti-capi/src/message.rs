//! FTI's console messages: warnings and information on stdout, errors on stderr, filtered by
//! the config's `verbosity` (1 debug, 2 information, 3 warnings only); errors always print,
//! information only on rank 0.

use std::io::Write;
use std::sync::atomic::{AtomicI32, AtomicU8, Ordering};

/// Everything prints until a config file says otherwise, as in FTI.
static VERBOSITY: AtomicU8 = AtomicU8::new(1);
static RANK: AtomicI32 = AtomicI32::new(0);

/// Sets the verbosity and the rank that prefixes messages.
pub(crate) fn configure(verbosity: u8, rank: i32) {
    VERBOSITY.store(verbosity, Ordering::Relaxed);
    RANK.store(rank, Ordering::Relaxed);
}

fn shown(priority: u8) -> bool {
    priority >= VERBOSITY.load(Ordering::Relaxed)
}

/// A warning (priority 3).
pub(crate) fn warn(text: &str) {
    if shown(3) {
        let rank = RANK.load(Ordering::Relaxed);
        let _ = writeln!(std::io::stdout(), "[ FTI Warning {rank:06} ] : {text}");
    }
}

/// Information (priority 2), from rank 0 only.
pub(crate) fn info(text: &str) {
    if shown(2) && RANK.load(Ordering::Relaxed) == 0 {
        let _ = writeln!(std::io::stdout(), "[ FTI  Information ] : {text}");
    }
}

/// An error (priority 4): always printed.
pub(crate) fn error(text: &str) {
    let rank = RANK.load(Ordering::Relaxed);
    let _ = writeln!(std::io::stderr(), "[ FTI Error - {rank:06} ] : {text}");
}
