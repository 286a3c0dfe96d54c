//! FTI's console messages, printed as FTI 1.1's `FTI_Print` does (the runtime's
//! [`fti::report::FtiPrint`]): warnings and information on stdout, errors on stderr, filtered
//! by the config's `verbosity` (1 debug, 2 information, 3 warnings only; `FTI_VERBOSITY` in the
//! environment overrides it); errors always print, information only on rank 0.

use std::sync::atomic::{AtomicI32, AtomicU8, Ordering};

use fti::report::{FtiPrint, Priority, Reporter};

/// Everything prints until a config file says otherwise, as in FTI.
static VERBOSITY: AtomicU8 = AtomicU8::new(1);
static RANK: AtomicI32 = AtomicI32::new(0);

/// Sets the verbosity and the rank that prefixes messages.
pub(crate) fn configure(verbosity: u8, rank: i32) {
    VERBOSITY.store(fti::report::verbosity(verbosity), Ordering::Relaxed);
    RANK.store(rank, Ordering::Relaxed);
}

fn say(priority: Priority, text: &str) {
    if priority as u8 >= VERBOSITY.load(Ordering::Relaxed) {
        let rank = u32::try_from(RANK.load(Ordering::Relaxed)).unwrap_or(0);
        FtiPrint.report(priority, rank, text);
    }
}

/// A warning (priority 3).
pub(crate) fn warn(text: &str) {
    say(Priority::Warning, text);
}

/// Information (priority 2), from rank 0 only.
pub(crate) fn info(text: &str) {
    say(Priority::Info, text);
}

/// Details (priority 1).
pub(crate) fn debug(text: &str) {
    say(Priority::Debug, text);
}

/// An error (priority 4): always printed.
pub(crate) fn error(text: &str) {
    say(Priority::Error, text);
}

/// Work of at least this many bytes gets a progress bar.
const PROGRESS_MIN: u64 = 256 << 20;

/// The runtime's reporter in C and Fortran programs: FTI's messages as [`FtiPrint`] prints
/// them, and a progress bar on stderr for long work (writing or verifying at least 256 MiB)
/// when stderr is a terminal.
#[derive(Default)]
pub(crate) struct Console {
    bars: std::sync::Mutex<std::collections::HashMap<String, indicatif::ProgressBar>>,
}

impl Reporter for Console {
    fn report(&self, priority: Priority, rank: u32, text: &str) {
        FtiPrint.report(priority, rank, text);
    }

    fn progress(&self, _rank: u32, what: &str, done: u64, total: u64) {
        use std::io::IsTerminal as _;
        if total < PROGRESS_MIN || !std::io::stderr().is_terminal() {
            return;
        }
        let Ok(mut bars) = self.bars.lock() else {
            return;
        };
        if done >= total {
            if let Some(bar) = bars.remove(what) {
                bar.finish_and_clear();
            }
            return;
        }
        bars.entry(what.to_owned())
            .or_insert_with(|| {
                let bar = indicatif::ProgressBar::new(total);
                if let Ok(style) = indicatif::ProgressStyle::with_template(
                    "{msg} [{bar:30}] {bytes}/{total_bytes} ({bytes_per_sec}, {eta})",
                ) {
                    bar.set_style(style);
                }
                bar.set_message(what.to_owned());
                bar
            })
            .set_position(done);
    }
}
