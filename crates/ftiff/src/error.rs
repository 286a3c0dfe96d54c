//! The crate's one error type: what went wrong, in which file, at which byte.

use std::fmt;
use std::path::{Path, PathBuf};

/// The on-disk record an error refers to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Record {
    /// The 96-byte file block at offset 0 (or the trailer of an `RSed` file).
    FileBlock,
    /// The 12-byte block meta data that opens every variable chunk block.
    BlockMeta,
    /// A 64-byte variable chunk meta data record.
    VarMeta,
    /// The data bytes of a container.
    Container,
    /// The file as a whole (its length, trailing bytes).
    File,
}

impl fmt::Display for Record {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Record::FileBlock => "FB",
            Record::BlockMeta => "BMD",
            Record::VarMeta => "VMD",
            Record::Container => "container",
            Record::File => "file",
        })
    }
}

/// What is wrong. Every variant carries the values a user needs to act on it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The operating system refused a read or write.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// The file ends before a record or before the size its file block announces.
    #[error("file is {len} bytes but {what} needs {needed} bytes (truncated file?)")]
    Truncated {
        /// Actual length of the file.
        len: u64,
        /// Length required.
        needed: u64,
        /// What required it.
        what: &'static str,
    },
    /// A field holds a value the format does not allow at this place.
    #[error("{record}.{field} = {value}: {what}")]
    Malformed {
        /// Record holding the field.
        record: Record,
        /// Field name as in the format documentation.
        field: &'static str,
        /// The value found.
        value: i64,
        /// Why it is wrong.
        what: &'static str,
    },
    /// A stored hash differs from the hash of the bytes it covers.
    #[error("{record}.{field} mismatch: stored {stored}, computed {computed}")]
    HashMismatch {
        /// Record holding the hash.
        record: Record,
        /// `checksum`, `myHash` or `hash`.
        field: &'static str,
        /// Stored value, printable.
        stored: String,
        /// Value computed from the file.
        computed: String,
    },
    /// The zero fill after a chunk's data holds a non-zero byte (FTI always writes zeros).
    #[error("non-zero byte 0x{byte:02x} in the zero fill of the container of variable {id}")]
    NonZeroFill {
        /// Variable id of the container.
        id: i32,
        /// The byte found.
        byte: u8,
    },
    /// Bytes follow the end announced by `FB.fs`.
    #[error("{extra} byte(s) after the end of the checkpoint (FB.fs = {fs})")]
    TrailingBytes {
        /// `FB.fs`.
        fs: u64,
        /// Number of extra bytes.
        extra: u64,
    },
    /// The path names a FIFO, socket, device or directory, not a checkpoint file. It is
    /// refused before any read, so that a FIFO cannot block the reader.
    #[error("not a regular file (a {what})")]
    NotRegularFile {
        /// What it is: `FIFO`, `socket`, `directory`, `character device`, `block device`.
        what: &'static str,
    },
    /// The planner was given variables that do not continue the previous layout.
    #[error("variable at protect position {idx}: {what}")]
    Plan {
        /// Protect position (`idx`).
        idx: usize,
        /// What is inconsistent.
        what: String,
    },
    /// A variable's data buffer does not have the size the layout needs.
    #[error("variable {id}: buffer is {actual} bytes, the layout needs {expected}")]
    SizeMismatch {
        /// Variable id.
        id: i32,
        /// Size in the layout or the checkpoint.
        expected: u64,
        /// Size of the buffer given.
        actual: u64,
    },
    /// No variable with this id is in the checkpoint.
    #[error("no variable with id {id} in this checkpoint")]
    NoSuchVariable {
        /// The id asked for.
        id: i32,
    },
    /// An L3 group that cannot exist (size, ranks, losses given by the caller).
    #[error("L3 group: {what} (got {value})")]
    InvalidGroup {
        /// What is wrong.
        what: &'static str,
        /// The offending value.
        value: i64,
    },
    /// A directory holds no `Ckpt<id>-Rank<r>.fti` or `Ckpt<id>-RSed<r>.fti` file to work on.
    #[error("no L3 checkpoint files (Ckpt<id>-Rank<r>.fti, Ckpt<id>-RSed<r>.fti){}", match .id {
        Some(id) => format!(" of checkpoint {id}"),
        None => String::new(),
    })]
    NoGroupFiles {
        /// The checkpoint id asked for, if any.
        id: Option<i32>,
    },
    /// A directory holds files of several checkpoints and none was chosen.
    #[error("files of several checkpoints ({}): choose one", ids.iter().map(i32::to_string).collect::<Vec<_>>().join(", "))]
    SeveralCheckpoints {
        /// The checkpoint ids found.
        ids: Vec<i32>,
    },
    /// More files of an L3 group are lost than its code can rebuild.
    #[error("{lost} of the group's {} files are missing or unusable: Reed-Solomon over {k} ranks rebuilds at most {k}", 2 * k)]
    TooManyLost {
        /// Files missing or unusable.
        lost: usize,
        /// Group size.
        k: usize,
    },
    /// A file of an L3 group disagrees with the rest of its group.
    #[error("{record}.{field} = {value}, but the rest of the group says {expected}")]
    GroupMismatch {
        /// Record holding the field.
        record: Record,
        /// Field name as in the format documentation.
        field: &'static str,
        /// The value in this file.
        value: i64,
        /// The value the group's other files agree on.
        expected: i64,
    },
    /// An `RSed` file's code differs from the encoding of its group's Rank files (a stale
    /// file, or one of another group).
    #[error("the code differs from the encoding of the group's Rank files")]
    CodeMismatch,
    /// The code of every `RSed` file disagrees with the group's Rank files.
    #[error("no RSed file's code matches the group's Rank files: the group's ranks or their order are not the ones it was encoded with")]
    WrongGroup,
    /// A Rank file rebuilt from the code does not verify.
    #[error("the rebuilt file does not verify ({problem}); are the group's ranks and their order the ones it was encoded with?")]
    RebuiltInvalid {
        /// The first problem found in the rebuilt file.
        problem: Box<Error>,
    },
}

/// An FTI-FF error: the kind, and where (file, byte offset) when known.
#[derive(Debug)]
pub struct Error {
    path: Option<PathBuf>,
    offset: Option<u64>,
    // Boxed: errors travel inside `Result`s of every reader call, which stay small.
    kind: Box<ErrorKind>,
}

/// Result with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// An error at a byte offset of the file being read or written.
    pub fn at(offset: u64, kind: ErrorKind) -> Self {
        Error {
            path: None,
            offset: Some(offset),
            kind: Box::new(kind),
        }
    }

    /// An error with no particular offset.
    pub fn new(kind: ErrorKind) -> Self {
        Error {
            path: None,
            offset: None,
            kind: Box::new(kind),
        }
    }

    /// Shorthand for a [`ErrorKind::Malformed`] error at `offset`.
    pub fn malformed(
        offset: u64,
        record: Record,
        field: &'static str,
        value: i64,
        what: &'static str,
    ) -> Self {
        Error::at(
            offset,
            ErrorKind::Malformed {
                record,
                field,
                value,
                what,
            },
        )
    }

    /// Names the file the error is about (kept if already set).
    #[must_use]
    pub fn with_path(mut self, path: &Path) -> Self {
        if self.path.is_none() {
            self.path = Some(path.to_path_buf());
        }
        self
    }

    /// The kind of error.
    pub fn kind(&self) -> &ErrorKind {
        &self.kind
    }

    /// What is wrong, taken out of the error (an I/O error is handed on as it was).
    pub fn into_kind(self) -> ErrorKind {
        *self.kind
    }

    /// The file, when known.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// The byte offset in the file, when known.
    pub fn offset(&self) -> Option<u64> {
        self.offset
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(path) = &self.path {
            write!(f, "{}: ", path.display())?;
        }
        if let Some(offset) = self.offset {
            write!(f, "byte {offset}: ")?;
        }
        write!(f, "{}", self.kind)
    }
}

// The message already includes the I/O error, so it is not repeated as a source.
impl std::error::Error for Error {}

impl From<ErrorKind> for Error {
    fn from(kind: ErrorKind) -> Self {
        Error::new(kind)
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::new(ErrorKind::Io(e))
    }
}
