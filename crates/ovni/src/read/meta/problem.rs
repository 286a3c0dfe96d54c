//! Problems of `stream.json` ([`MetaProblem`]): the keys this reader checks while parsing
//! (mark labels, mark types, CPU entries) and the merge rules of [`crate::metadata`] across
//! the streams of a trace. The reader keeps the first problem of a collection with the values
//! it parsed, so the type is defined with the reader rather than with the merge rules.

use std::fmt;

/// Metadata problems (`docs/ovni-format.md`, *`stream.json`*: keys and merge rules).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum MetaProblem {
    /// A mandatory key is absent.
    MissingKey(&'static str),
    /// A key has the wrong JSON type or an out-of-range value.
    BadValue {
        /// Dotted key.
        key: &'static str,
        /// What was expected.
        expected: &'static str,
    },
    /// `version` is not 3.
    VersionMismatch(i64),
    /// `ovni.finished` is missing or not 1.
    NotFinished,
    /// `ovni.part` is not `"thread"`.
    UnknownPart(String),
    /// Loom name contains `/`.
    LoomHasSlash,
    /// `ovni.loom_cpus` is an empty array.
    EmptyCpus,
    /// Negative CPU index.
    CpuIndexNegative(i64),
    /// Negative CPU phyid.
    CpuPhyidNegative(i64),
    /// Same phyid listed with two indices.
    CpuIndexMismatch {
        /// Physical id.
        phyid: i64,
        /// First index seen.
        index: i64,
        /// Conflicting index.
        other: i64,
    },
    /// Index outside `[0, ncpus)`.
    CpuIndexOutOfBounds {
        /// Index.
        index: i64,
        /// Number of CPUs of the loom.
        ncpus: usize,
    },
    /// Two CPUs with the same index.
    CpuIndexTaken(i64),
    /// The loom lists no CPU in any stream.
    LoomWithoutCpus,
    /// `app_id` differs between streams of a process.
    AppIdMismatch {
        /// First value.
        prev: i64,
        /// Conflicting value.
        other: i64,
    },
    /// `rank`/`nranks` differ between streams of a process.
    RankMismatch {
        /// First (rank, nranks).
        prev: (i64, i64),
        /// Conflicting (rank, nranks).
        other: (i64, i64),
    },
    /// `rank` outside `[0, nranks)`.
    RankOutOfRange {
        /// Rank.
        rank: i64,
        /// Number of ranks.
        nranks: i64,
    },
    /// Some process of the loom has a rank and this one has none.
    ProcessWithoutRank(i64),
    /// Two streams with the same tid in one process.
    DuplicateThread(i64),
    /// A mark type defined with different title or channel type.
    MarkTypeMismatch(i64),
    /// A mark value labelled differently.
    MarkLabelMismatch {
        /// Mark type.
        mark: i64,
        /// Value.
        value: i64,
    },
    /// Two values of a mark type that are equal modulo 2³²: Paraver's `.pcf` holds 32-bit
    /// values, so their labels would collide.
    MarkValueCollision {
        /// Mark type.
        mark: i64,
        /// The value seen first.
        first: i64,
        /// The value that collides with it.
        second: i64,
    },
    /// A required model version the reader's model cannot serve.
    UnsupportedModelVersion {
        /// Model name.
        model: String,
        /// Requested version.
        want: String,
        /// Available version.
        have: String,
    },
    /// A version string that is not `x.y.z`.
    BadVersionString(String),
    /// `stream.json` is larger than the reader accepts.
    FileTooLarge {
        /// File size in bytes.
        size: u64,
        /// Largest size read.
        limit: u64,
    },
}

impl fmt::Display for MetaProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::MissingKey(k) => write!(f, "missing key {k}"),
            Self::BadValue { key, expected } => write!(f, "key {key} must be {expected}"),
            Self::VersionMismatch(v) => write!(f, "metadata version mismatch {v} (expected 3)"),
            Self::NotFinished => write!(f, "ovni.finished is missing or not 1"),
            Self::UnknownPart(p) => write!(f, "unknown stream part '{p}'"),
            Self::LoomHasSlash => write!(f, "loom name contains '/'"),
            Self::EmptyCpus => write!(f, "empty ovni.loom_cpus array"),
            Self::CpuIndexNegative(i) => write!(f, "cpu index {i} out of bounds"),
            Self::CpuPhyidNegative(p) => write!(f, "cannot use negative cpu phyid {p}"),
            Self::CpuIndexMismatch {
                phyid,
                index,
                other,
            } => write!(
                f,
                "cpu phyid {phyid} has index {index} and index {other} in another stream"
            ),
            Self::CpuIndexOutOfBounds { index, ncpus } => {
                write!(f, "cpu index {index} out of bounds [0, {ncpus})")
            }
            Self::CpuIndexTaken(i) => write!(f, "cpu with index {i} already taken"),
            Self::LoomWithoutCpus => write!(f, "loom has no physical CPUs"),
            Self::AppIdMismatch { prev, other } => {
                write!(f, "mismatch previous appid {prev} with {other}")
            }
            Self::RankMismatch { prev, other } => write!(
                f,
                "mismatch previous rank {}/{} with {}/{}",
                prev.0, prev.1, other.0, other.1
            ),
            Self::RankOutOfRange { rank, nranks } => {
                write!(f, "rank {rank} out of range [0, {nranks})")
            }
            Self::ProcessWithoutRank(pid) => {
                write!(f, "process proc.{pid} has no rank information")
            }
            Self::DuplicateThread(tid) => write!(f, "duplicate thread {tid} in process"),
            Self::MarkTypeMismatch(t) => {
                write!(f, "mark type {t} defined with different title or chan_type")
            }
            Self::MarkLabelMismatch { mark, value } => {
                write!(f, "mark type {mark} value {value} has different labels")
            }
            Self::MarkValueCollision {
                mark,
                first,
                second,
            } => write!(
                f,
                "mark type {mark} values {first} and {second} are both {} in Paraver's 32-bit values",
                *second as i32
            ),
            Self::UnsupportedModelVersion { model, want, have } => write!(
                f,
                "unsupported {model} model version (want {want}, have {have})"
            ),
            Self::BadVersionString(s) => write!(f, "malformed version '{s}' (want x.y.z)"),
            Self::FileTooLarge { size, limit } => write!(
                f,
                "stream.json of {size} bytes is larger than the {limit} bytes read"
            ),
        }
    }
}
