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
    /// The restart record (`failure = 1` and `exec_id`) could not be written to the config
    /// file. The checkpoint's files are published, but a restart with this config would not
    /// look for them: the checkpoint fails until the record is written (each checkpoint
    /// tries again).
    #[error("{}: cannot record the restart (failure = 1, exec_id = {exec_id}) in this config file: {err}; without it a restart would not find the checkpoints: make the file and its directory writable (the next checkpoint tries again)", path.display())]
    RestartRecord {
        /// The config file.
        path: PathBuf,
        /// The execution whose checkpoints it should name.
        exec_id: String,
        /// Why it could not be written.
        err: Box<Error>,
    },
    /// The restart's checkpoint was written by a different number of ranks than this run has.
    /// Nothing was written: restart with the checkpoint's rank count.
    #[error("execution {exec_id} was checkpointed by {checkpoint} ranks, this run has {run}: restart it with {checkpoint} ranks (a restart on a different number of ranks is not supported); nothing was written")]
    RankCount {
        /// The execution whose checkpoints were found.
        exec_id: String,
        /// Ranks of the run that wrote them (from `Topology.fti` and the files' names).
        checkpoint: u32,
        /// Ranks of this run.
        run: u32,
    },
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
