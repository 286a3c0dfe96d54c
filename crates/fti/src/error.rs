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
    /// A protected variable's size is not the size its checkpoint holds: the application
    /// resizes it (to `FTI_GetStoredSize`) and recovers again. Said as FTI 1.1 says it.
    #[error("Cannot recover {stored} bytes to protected variable (ID {id}) size: {size}")]
    SizeMismatch {
        /// Variable id.
        id: i32,
        /// The bytes the checkpoint holds.
        stored: u64,
        /// The variable's size.
        size: u64,
    },
    /// Recovery was asked for but no checkpoint could be used; each candidate says why.
    #[error("no usable checkpoint for rank {rank}{}", tried.iter().map(|t| format!("\n  {t}")).collect::<String>())]
    NothingToRecover {
        /// The rank.
        rank: u32,
        /// Every candidate tried, newest first, with why it could not be used.
        tried: Vec<Candidate>,
    },
    /// A call that is not valid in the runtime's current state.
    #[error(transparent)]
    State(Misuse),
    /// A head's post-processing for this application rank failed, or its message was
    /// malformed.
    #[error("post-processing by the head: {0}")]
    Head(String),
    /// A topology that cannot be built (no ranks, a node or group size of 0, a rank order
    /// that does not list every rank once).
    #[error("topology: {0}")]
    Topology(&'static str),
    /// The trace could not be started or finished.
    #[error("ovni trace: {0}")]
    Trace(ovni::Error),
    /// The application's libovni cannot take the runtime's marks (a mark type it uses for
    /// something else).
    #[error("tracing into the application's ovni stream: {0}")]
    AppTrace(String),
    /// The runtime broke one of its own rules (a bug): what it found.
    #[error("internal error: {0}")]
    Internal(&'static str),
    /// Other ranks failed during a collective step; the step was abandoned on every rank.
    #[error("{step}: rank{} {failed:?} failed", if failed.len() > 1 { "s" } else { "" })]
    Ranks {
        /// The step.
        step: Step,
        /// The ranks that failed it (this one did not; its own error is returned instead).
        failed: Vec<u32>,
    },
    /// This rank failed its part of a collective step.
    #[error("{step}: {err}")]
    InStep {
        /// The step.
        step: Step,
        /// What failed on this rank.
        err: Box<Error>,
    },
    /// A rank sent fewer or more bytes of a file than the transfer plan said.
    #[error(
        "rank {from} sent {got} bytes at offset {offset} of its file, {expected} were expected"
    )]
    Transfer {
        /// The sending rank.
        from: u32,
        /// Offset in the sent file of this message.
        offset: u64,
        /// Bytes received.
        got: u64,
        /// Bytes the plan said.
        expected: u64,
    },
    /// This rank's own checkpoint file, which its partner needed, could not be read (the
    /// read error was reported by the step that opened it).
    #[error("this rank's own file could not be read")]
    OwnFileUnreadable,
    /// A file rebuilt from Reed-Solomon code says it is larger than the group's largest file.
    #[error("rebuilt file {} has fs {fs} beyond maxFs {max_fs}", path.display())]
    RebuiltSize {
        /// The rebuilt file.
        path: PathBuf,
        /// Its FB's `fs`.
        fs: i64,
        /// The group's `maxFs`.
        max_fs: u64,
    },
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
    /// A file or directory is no longer the one a scan found (swapped for a symbolic link, or
    /// another directory moved in its place): nothing was done to it.
    #[error("{}: changed since it was scanned ({what}); nothing was deleted", path.display())]
    Changed {
        /// The file or directory.
        path: PathBuf,
        /// How it differs.
        what: &'static str,
    },
    /// A POSIX meta-data file (`sector<s>-group<g>.fti`) is unreadable as FTI writes it.
    #[error("{}: [{key}]: {what}", path.display())]
    Meta {
        /// The meta-data file.
        path: PathBuf,
        /// The key (`<group rank>:<key>`), empty when the whole file is wrong.
        key: String,
        /// What is wrong.
        what: String,
    },
    /// A POSIX checkpoint file is not the one its meta data describes.
    #[error("{}: {what}", path.display())]
    PosixFile {
        /// The checkpoint file (or partner copy, or `RSed` file).
        path: PathBuf,
        /// How it differs (size, MD5).
        what: String,
    },
    /// A setting or call the I/O mode cannot do, refused before anything is written.
    #[error("{mode}: {what}")]
    IoMode {
        /// The I/O mode.
        mode: crate::config::IoMode,
        /// What is refused, and what to do instead.
        what: &'static str,
    },
    /// L2 and L3 need several ranks over MPI.
    #[error("{0} needs a partner rank: run several ranks (over MPI, or fti::Threads) with group_size >= 2")]
    NeedsMpi(crate::Level),
}

/// A collective step of the runtime: every rank takes part, and all abandon it when one fails
/// (see [`Error::Ranks`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Step {
    /// Opening the trace at init.
    StartTrace,
    /// Writing `Topology.fti` at init.
    WriteTopology,
    /// Copying the variables into staging memory (asynchronous checkpoints).
    Stage,
    /// Writing the checkpoint file.
    Write,
    /// Writing an incremental checkpoint's file.
    WriteIncremental,
    /// Publishing the written files under their final names.
    Publish,
    /// Exchanging L2 partner copies.
    L2Copy,
    /// Encoding the L3 Reed-Solomon files.
    L3Encode,
    /// Copying the checkpoint to global storage.
    L4Flush,
    /// Keeping the last checkpoint in L4 at finalize (`keep_last_ckpt`).
    KeepLast,
    /// Writing `failure = 1` for this execution in the config file (rank 0), or this
    /// config file when known.
    RecordRestart(Option<PathBuf>),
    /// Writing `failure = 0` at finalize.
    RecordEnd,
    /// Agreeing on the restart's checkpoint.
    Recovery,
    /// Sending lost L2 files back from their partners' copies.
    RebuildL2Files,
    /// Sending lost L2 partner copies back from their owners' files.
    RebuildL2Copies,
    /// Rebuilding lost L3 files from the group's code.
    RebuildL3,
    /// Writing the POSIX meta-data files.
    WriteMeta,
}

impl std::fmt::Display for Step {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Step::StartTrace => "starting the trace",
            Step::WriteTopology => "writing Topology.fti",
            Step::Stage => "staging the checkpoint",
            Step::Write => "writing the checkpoint",
            Step::WriteIncremental => "writing the incremental checkpoint",
            Step::Publish => "publishing the checkpoint",
            Step::L2Copy => "L2 partner copy",
            Step::L3Encode => "L3 encoding",
            Step::L4Flush => "flushing the checkpoint to L4",
            Step::WriteMeta => "writing the meta data",
            Step::KeepLast => "keeping the last checkpoint in L4",
            Step::RecordRestart(Some(path)) => {
                return write!(f, "recording the restart in {}", path.display())
            }
            Step::RecordRestart(None) => "recording the restart in the config file",
            Step::RecordEnd => "recording the end of the run",
            Step::Recovery => "recovery",
            Step::RebuildL2Files => "rebuilding lost L2 files",
            Step::RebuildL2Copies => "rebuilding lost L2 partner copies",
            Step::RebuildL3 => "rebuilding lost L3 files",
        })
    }
}

/// A checkpoint a call could not use, and why.
#[derive(Debug, thiserror::Error)]
#[error("checkpoint {id} at {level}: {err}")]
pub struct Candidate {
    /// Checkpoint id.
    pub id: i32,
    /// Level it was found at.
    pub level: crate::Level,
    /// The file tried.
    pub path: PathBuf,
    /// Why it could not be used.
    pub err: Box<Error>,
}

/// A restart candidate passed over at init (see [`crate::Fti::skipped`]); newer checkpoints
/// come first.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Skipped {
    /// A path in a checkpoint directory that is not a regular file (never read).
    #[error("{} skipped: not a regular file", path.display())]
    NotRegular {
        /// The path.
        path: PathBuf,
    },
    /// This rank's own file of the checkpoint did not verify.
    #[error("checkpoint {} at {} skipped: {}", .0.id, .0.level, .0.err)]
    Unverified(Candidate),
    /// The redundancy file this rank keeps (L2 partner copy, L3 RSed file) did not verify.
    #[error("{} skipped: {}", .0.path.display(), .0.err)]
    RedundancyUnverified(Candidate),
    /// Some ranks hold no usable file, and their partners' redundancy cannot make up for it.
    #[error("checkpoint {id} at {level} skipped: no usable file for rank(s) {missing:?}")]
    Missing {
        /// Checkpoint id.
        id: i32,
        /// Level.
        level: crate::Level,
        /// The ranks without a usable file.
        missing: Vec<u32>,
    },
    /// Recovering the checkpoint failed on some rank (a rebuild, or the agreement).
    #[error("checkpoint {id} at {level} skipped: {err}")]
    Failed {
        /// Checkpoint id.
        id: i32,
        /// Level.
        level: crate::Level,
        /// What failed.
        err: Box<Error>,
    },
}

impl Skipped {
    /// The checkpoint id, when the skipped thing belongs to one.
    pub fn id(&self) -> Option<i32> {
        match self {
            Skipped::NotRegular { .. } => None,
            Skipped::Unverified(c) | Skipped::RedundancyUnverified(c) => Some(c.id),
            Skipped::Missing { id, .. } | Skipped::Failed { id, .. } => Some(*id),
        }
    }

    /// The level, when the skipped thing belongs to a checkpoint.
    pub fn level(&self) -> Option<crate::Level> {
        match self {
            Skipped::NotRegular { .. } => None,
            Skipped::Unverified(c) | Skipped::RedundancyUnverified(c) => Some(c.level),
            Skipped::Missing { level, .. } | Skipped::Failed { level, .. } => Some(*level),
        }
    }

    /// The file, when one file was at fault.
    pub fn path(&self) -> Option<&Path> {
        match self {
            Skipped::NotRegular { path } => Some(path),
            Skipped::Unverified(c) | Skipped::RedundancyUnverified(c) => Some(&c.path),
            Skipped::Missing { .. } | Skipped::Failed { .. } => None,
        }
    }
}

/// Why a call is not valid in the runtime's current state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Misuse {
    /// Recovery was asked of a run that is not a restart (the call named).
    #[error("{0}: this run is not a restart")]
    NotARestart(&'static str),
    /// A checkpoint was asked for before the restart's checkpoint was recovered.
    #[error("recover the restart's checkpoint before writing a new one")]
    NotRecovered,
    /// A checkpoint was asked for while an incremental checkpoint is open.
    #[error("an incremental checkpoint is open: finalize it first")]
    IncrementalOpen,
    /// An incremental checkpoint was opened while one is open.
    #[error("an incremental checkpoint is already open")]
    IncrementalAlreadyOpen,
    /// An incremental checkpoint call without an open incremental checkpoint.
    #[error("no incremental checkpoint is open")]
    NoIncremental,
    /// This rank has no place in the run's topology.
    #[error("this rank is not in the topology")]
    NotInTopology,
    /// The run's background communicator is gone (with a background job that panicked).
    #[error("no background communicator")]
    NoBackgroundComm,
    /// The background thread panicked: its job's outcome is lost.
    #[error("the background thread panicked")]
    BackgroundPanicked,
    /// Application work was asked of a dedicated head.
    #[error("this process is a dedicated head (head = 1): it serves its node (serve_as_head) and checkpoints nothing")]
    Head,
    /// `serve_as_head` was called on a process that is not a head.
    #[error("serve_as_head: this process is not a dedicated head")]
    NotAHead,
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

    pub(crate) fn meta(path: &Path, key: &str, what: String) -> Self {
        Error::Meta {
            path: path.to_path_buf(),
            key: key.to_owned(),
            what,
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
