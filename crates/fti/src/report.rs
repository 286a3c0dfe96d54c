//! The runtime's messages to the user. The runtime never prints: it hands every message to a
//! [`Reporter`]. The default one, [`FtiPrint`], prints them as FTI 1.1's `FTI_Print` does, so
//! that logs, scripts and FTI's own test drivers that grep them keep working.

use std::io::{IsTerminal, Write};
use std::sync::Arc;

/// FTI's message priorities (`FTI_DBUG` 1 .. `FTI_EROR` 4). A message is shown when its
/// priority is at least the run's verbosity (1 debug, 2 information, 3 warnings only).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Priority {
    /// Details for debugging (`verbosity = 1`).
    Debug = 1,
    /// What the run does (`verbosity <= 2`).
    Info = 2,
    /// Something the user should know; the run goes on.
    Warning = 3,
    /// A failure; always shown.
    Error = 4,
}

/// Receives the runtime's messages at or above the run's verbosity, and the progress of its
/// long work (front ends draw it; the runtime draws nothing).
pub trait Reporter: Send + Sync {
    /// One message of rank `rank`. `text` is one line, without a newline.
    fn report(&self, priority: Priority, rank: u32, text: &str);

    /// Progress of rank `rank`'s long work `what` (writing or verifying a checkpoint):
    /// `done` of `total` bytes. Called with `done = 0` when the work starts, as it advances,
    /// and with `done = total` when it ends, also when it failed. Only at verbosity 2 or
    /// lower (information shown). The default ignores it.
    fn progress(&self, rank: u32, what: &str, done: u64, total: u64) {
        let _ = (rank, what, done, total);
    }
}

/// FTI 1.1's `FTI_Print`: information `[ FTI  Information ] : msg` on stdout from rank 0 only;
/// warnings `[ FTI Warning 000003 ] : msg` on stdout with the rank; errors
/// `[ FTI Error - 000003 ] : msg` on stderr (FTI appends `strerror(errno)`; here the cause,
/// an OS error included, is part of `msg`); debug `[FTI Debug - 000003] : msg` on stdout.
/// FTI colours the prefixes always; here only as [`colour_wanted`] says, so that files, pipes
/// and logs of `mpirun` jobs get plain text. Each line is written with one `write`, so
/// lines of different ranks sharing a terminal or a log never interleave within a line.
#[derive(Debug, Clone, Copy, Default)]
pub struct FtiPrint;

const RED: &str = "\x1b[31m";
const ORANGE: &str = "\x1b[38;5;202m";
const GREEN: &str = "\x1b[32m";
const RESET: &str = "\x1b[0m";

impl FtiPrint {
    /// The line FTI prints for this message (with its newline), or `None` for information
    /// of a rank other than 0.
    pub fn line(priority: Priority, rank: u32, text: &str, colour: bool) -> Option<String> {
        let paint = |c: &str, s: &str| {
            if colour {
                format!("{c}{s}{RESET}")
            } else {
                s.to_owned()
            }
        };
        Some(match priority {
            Priority::Info if rank != 0 => return None,
            Priority::Info => format!("[ {} ] : {text}\n", paint(GREEN, "FTI  Information")),
            Priority::Warning => format!(
                "[ {} ] : {text}\n",
                paint(ORANGE, &format!("FTI Warning {rank:06}"))
            ),
            Priority::Error => format!(
                "[ {} ] : {text}\n",
                paint(RED, &format!("FTI Error - {rank:06}"))
            ),
            Priority::Debug => format!("[FTI Debug - {rank:06}] : {text}\n"),
        })
    }
}

/// Whether to colour the prefixes on a stream that is (or is not) a terminal, given the
/// environment (`var`): `FTI_COLOR=always|never` decides; otherwise `NO_COLOR` (non-empty)
/// turns colour off, and so does a launcher's rank variable (`OMPI_COMM_WORLD_RANK`,
/// `PMI_RANK`, `PMIX_RANK`): under `mpirun` a rank's stdout is a pseudo-terminal even when the
/// job's output goes to a file (`mpirun ... > log`), so it says nothing of where lines end up.
pub fn colour_wanted(terminal: bool, var: impl Fn(&str) -> Option<std::ffi::OsString>) -> bool {
    match var("FTI_COLOR").as_ref().and_then(|v| v.to_str()) {
        Some("always") => return true,
        Some("never") => return false,
        _ => {}
    }
    let set = |name: &str| var(name).is_some_and(|v| !v.is_empty());
    let launched = ["OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"]
        .into_iter()
        .any(set);
    terminal && !set("NO_COLOR") && !launched
}

impl Reporter for FtiPrint {
    fn report(&self, priority: Priority, rank: u32, text: &str) {
        let colour = |terminal: bool| colour_wanted(terminal, |name| std::env::var_os(name));
        if priority == Priority::Error {
            let err = std::io::stderr();
            if let Some(line) = FtiPrint::line(priority, rank, text, colour(err.is_terminal())) {
                let _ = err.lock().write_all(line.as_bytes());
            }
        } else {
            let out = std::io::stdout();
            if let Some(line) = FtiPrint::line(priority, rank, text, colour(out.is_terminal())) {
                let mut out = out.lock();
                // Whatever the application left in the buffer goes first, so that this line
                // is one write of its own.
                let _ = out.flush();
                let _ = out.write_all(line.as_bytes());
                let _ = out.flush();
            }
        }
    }
}

/// The run's verbosity: `FTI_VERBOSITY` in the environment (1, 2 or 3) overrides the
/// config's, as FTI's test drivers expect.
pub fn verbosity(configured: u8) -> u8 {
    std::env::var("FTI_VERBOSITY")
        .ok()
        .and_then(|v| v.trim().parse::<u8>().ok())
        .filter(|v| (1..=3).contains(v))
        .unwrap_or(configured)
}

/// A rank's messages: filtered by verbosity, handed to the reporter.
#[derive(Clone)]
pub(crate) struct Messages {
    pub(crate) rank: u32,
    pub(crate) verbosity: u8,
    reporter: Arc<dyn Reporter>,
}

impl Messages {
    pub(crate) fn new(rank: u32, verbosity: u8, reporter: Arc<dyn Reporter>) -> Messages {
        Messages {
            rank,
            verbosity: self::verbosity(verbosity),
            reporter,
        }
    }

    pub(crate) fn say(&self, priority: Priority, text: &str) {
        if priority as u8 >= self.verbosity {
            self.reporter.report(priority, self.rank, text);
        }
    }

    pub(crate) fn info(&self, text: &str) {
        self.say(Priority::Info, text);
    }

    pub(crate) fn warn(&self, text: &str) {
        self.say(Priority::Warning, text);
    }

    pub(crate) fn debug(&self, text: &str) {
        self.say(Priority::Debug, text);
    }

    /// Starts reporting the progress of `total` bytes of work.
    pub(crate) fn progress(&self, what: String, total: u64) -> Progress {
        let progress = Progress {
            messages: self.clone(),
            what,
            total,
        };
        progress.set(0);
        progress
    }
}

/// Long work whose progress goes to the reporter; ends (`done = total`) when dropped.
pub(crate) struct Progress {
    messages: Messages,
    what: String,
    total: u64,
}

impl Progress {
    /// `done` bytes of the work are done.
    pub(crate) fn set(&self, done: u64) {
        let m = &self.messages;
        if Priority::Info as u8 >= m.verbosity {
            m.reporter.progress(m.rank, &self.what, done, self.total);
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.set(self.total);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_fti_s() {
        let line = |p, r, c| FtiPrint::line(p, r, "msg", c);
        assert_eq!(
            line(Priority::Info, 0, false).as_deref(),
            Some("[ FTI  Information ] : msg\n")
        );
        assert_eq!(line(Priority::Info, 3, false), None);
        assert_eq!(
            line(Priority::Warning, 3, false).as_deref(),
            Some("[ FTI Warning 000003 ] : msg\n")
        );
        assert_eq!(
            line(Priority::Error, 12, false).as_deref(),
            Some("[ FTI Error - 000012 ] : msg\n")
        );
        assert_eq!(
            line(Priority::Debug, 1, false).as_deref(),
            Some("[FTI Debug - 000001] : msg\n")
        );
        assert_eq!(
            line(Priority::Warning, 0, true).as_deref(),
            Some("[ \x1b[38;5;202mFTI Warning 000000\x1b[0m ] : msg\n")
        );
    }

    #[test]
    fn colour_only_on_a_terminal_outside_launchers_unless_told() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| std::ffi::OsString::from(v))
            }
        };
        assert!(colour_wanted(true, env(&[])));
        assert!(!colour_wanted(false, env(&[])));
        for launcher in ["OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"] {
            let pairs: &'static [(&str, &str)] = match launcher {
                "OMPI_COMM_WORLD_RANK" => &[("OMPI_COMM_WORLD_RANK", "3")],
                "PMI_RANK" => &[("PMI_RANK", "0")],
                _ => &[("PMIX_RANK", "1")],
            };
            assert!(!colour_wanted(true, env(pairs)), "{launcher}");
        }
        assert!(!colour_wanted(true, env(&[("NO_COLOR", "1")])));
        assert!(colour_wanted(true, env(&[("NO_COLOR", "")])));
        assert!(colour_wanted(
            false,
            env(&[("FTI_COLOR", "always"), ("PMI_RANK", "0")])
        ));
        assert!(!colour_wanted(true, env(&[("FTI_COLOR", "never")])));
        assert!(!colour_wanted(
            true,
            env(&[("FTI_COLOR", "auto"), ("PMIX_RANK", "2")])
        ));
    }
}
