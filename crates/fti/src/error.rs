//! The runtime's one error type.

use std::path::{Path, PathBuf};

/// What went wrong in the runtime. Format problems carry the `ftiff` error, which names the
/// file, offset, record and field.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A configuration file line is wrong or asks for something unsupported.
    #[error("{}:{line}: {what}", path.display())]
    Config {
        /// The config file.
        path: PathBuf,
        /// 1-based line number (0 when not tied to a line).
        line: usize,
        /// What is wrong.
        what: String,
    },
    /// The operating system refused a file operation.
    #[error("{}: {err}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The OS error (shown in the message, so not repeated as a source).
        err: std::io::Error,
    },
    /// A checkpoint file is corrupt or not FTI-FF.
    #[error(transparent)]
    Format(#[from] ftiff::Error),
    /// The protected variables do not match the checkpoint.
    #[error("variable {id}: {what}")]
    Variable {
        /// Variable id.
        id: i32,
        /// What does not match.
        what: String,
    },
    /// Recovery was asked for but no checkpoint could be used; each candidate says why.
    #[error("no usable checkpoint for rank {rank}{}", tried.iter().map(|t| format!("\n  {t}")).collect::<String>())]
    NothingToRecover {
        /// The rank.
        rank: u32,
        /// One line per candidate tried.
        tried: Vec<String>,
    },
    /// A call that is not valid in the runtime's current state.
    #[error("{0}")]
    State(&'static str),
    /// The trace could not be started or finished.
    #[error("ovni trace: {0}")]
    Trace(ovni::Error),
    /// Another rank failed during a collective step; the step was abandoned on every rank.
    #[error("{0}")]
    Ranks(String),
    /// L2 and L3 need several ranks over MPI.
    #[error("{0} needs a partner rank: run several ranks (over MPI, or fti::Threads) with group_size >= 2")]
    NeedsMpi(crate::Level),
}

/// Result with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub(crate) fn io(path: &Path, err: std::io::Error) -> Self {
        Error::Io {
            path: path.to_path_buf(),
            err,
        }
    }

    pub(crate) fn config(path: &Path, line: usize, what: String) -> Self {
        Error::Config {
            path: path.to_path_buf(),
            line,
            what,
        }
    }
}
