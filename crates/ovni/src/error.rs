//! The crate's single error type, [`Error`], and its [`Result`] alias.
//!
//! Each kind of problem an [`Error`] carries is defined next to the code that finds it and
//! re-exported here, so `ovni::error::StreamProblem` and `ovni::StreamProblem` keep naming it:
//! [`StreamProblem`] in the stream reader, [`MetaProblem`] in the `stream.json` reader,
//! [`UsageError`] in the writer, [`EventProblem`] and the thread states and transitions it
//! names in the ovni model, [`TraceProblem`] in the linter, [`SortProblem`] in the sorter.

use std::io;
use std::path::PathBuf;

use crate::raw::Mcv;

pub use crate::lint::trace::{ClockOffsetProblem, TraceProblem};
pub use crate::model::problem::{
    BodyFailure, BodyOp, BodyState, ChanFailure, EventProblem, MarkOp, NosvProblem, OpenMpProblem,
    TaskState, ThreadState, Transition,
};
pub use crate::read::meta::problem::MetaProblem;
pub use crate::read::stream::StreamProblem;
pub use crate::sort::SortProblem;
pub use crate::write::usage::UsageError;

/// Result alias for this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Every failure of the ovni crate.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An I/O operation on `path` failed.
    #[error("{}", path.display())]
    Io {
        /// File or directory involved.
        path: PathBuf,
        /// Underlying error.
        #[source]
        source: io::Error,
    },
    /// A binary stream (`stream.obs`) is malformed at `offset`.
    #[error("stream '{}' at offset {offset}: {problem}", path.display())]
    Stream {
        /// Path of the `stream.obs` file.
        path: PathBuf,
        /// Byte offset of the header or event that is malformed.
        offset: u64,
        /// What is wrong.
        problem: StreamProblem,
    },
    /// A `stream.json` file is not valid JSON.
    #[error("{}: invalid JSON", path.display())]
    Json {
        /// Path of the `stream.json` file.
        path: PathBuf,
        /// Parser error (with line and column).
        #[source]
        source: serde_json::Error,
    },
    /// Metadata is missing, ill-typed or inconsistent (`docs/ovni-format.md`, *`stream.json`*).
    #[error("metadata of stream '{stream}': {problem}")]
    Metadata {
        /// Relative path of the stream (or the loom name for loom-wide problems).
        stream: String,
        /// What is wrong.
        problem: MetaProblem,
    },
    /// The directory holds no `stream.json` at all.
    #[error("no streams found under {} (no stream.json file)", .0.display())]
    NoStreams(PathBuf),
    /// The writer API was misused (the cases where libovni aborts).
    #[error("{0}")]
    Usage(UsageError),
    /// An event breaks a rule of the emulator (`docs/ovni-format.md`, *ovnilint*, step 6).
    #[error("stream '{stream}' at offset {offset}: {mcv} at clock {clock}: {problem}")]
    Event {
        /// Relative path of the stream.
        stream: String,
        /// Byte offset of the event in its `stream.obs`.
        offset: u64,
        /// Event MCV.
        mcv: Mcv,
        /// Event clock (raw, signed).
        clock: i64,
        /// What is wrong.
        problem: EventProblem,
    },
    /// A rule about the whole trace is broken (clock gate, clock offsets, end state).
    #[error("{0}")]
    Trace(TraceProblem),
    /// A stream's unordered regions cannot be sorted (`ovnisort`).
    #[error("stream '{stream}': {problem}")]
    Sort {
        /// Relative path of the stream.
        stream: String,
        /// What is wrong.
        problem: SortProblem,
    },
}

impl Error {
    pub(crate) fn io(path: impl Into<PathBuf>, source: io::Error) -> Self {
        Self::Io {
            path: path.into(),
            source,
        }
    }

    pub(crate) fn meta(stream: impl Into<String>, problem: MetaProblem) -> Self {
        Self::Metadata {
            stream: stream.into(),
            problem,
        }
    }
}

/// `err` followed by each of its sources, `: `-separated (the `Display` of [`Error::Io`] is
/// only the path).
pub(crate) fn chain_text(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(e) = source {
        text = format!("{text}: {e}");
        source = e.source();
    }
    text
}

impl From<UsageError> for Error {
    fn from(e: UsageError) -> Self {
        Self::Usage(e)
    }
}
