//! Misuse of the writer API ([`UsageError`]): the cases where libovni prints FATAL and aborts
//! are errors here, found by the writer and by the event encoder of [`crate::raw`].

use std::fmt;

/// Misuse of the writer API: the cases where libovni prints FATAL and aborts.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum UsageError {
    /// A normal payload of 1 byte cannot be encoded.
    PayloadTooSmall(usize),
    /// A normal payload above 16 bytes.
    PayloadNoSpace {
        /// Bytes already in the payload.
        have: usize,
        /// Bytes being added.
        adding: usize,
    },
    /// Jumbo event larger than the buffer.
    JumboTooLarge(usize),
    /// `tid`/`pid` of zero.
    ZeroId(&'static str),
    /// A stream for this tid was already started in the process.
    ThreadExists(i32),
    /// Loom name empty, too long (≥ 512 bytes) or with `/`.
    BadLoom,
    /// Model name with space or dot, or ≤ 1 character.
    BadModelName(String),
    /// Version string not `x.y.z`.
    BadVersion(String),
    /// Attribute path empty, with an empty component, or through a non-object.
    BadAttrPath(String),
    /// Attribute not present (or not of the requested type).
    AttrNotFound(String),
    /// Mark type outside `[0, 100)`.
    MarkTypeRange(i32),
    /// Mark title or label empty.
    EmptyMarkText,
    /// Mark type defined twice in one thread.
    MarkTypeDefined(i32),
    /// Label on a mark type not defined in this thread.
    MarkTypeUndefined(i32),
    /// Label value ≤ 0 (labels) or 0 (push/pop/set).
    MarkValue(i64),
    /// Label already defined for the value.
    MarkLabelDefined {
        /// Mark type.
        mark: i32,
        /// Value.
        value: i64,
    },
    /// `rank` outside `[0, nranks)`.
    RankRange {
        /// Rank.
        rank: i32,
        /// Number of ranks.
        nranks: i32,
    },
    /// CPU index or phyid negative.
    CpuRange,
    /// An event image (`struct ovni_ev`) with the jumbo flag: its data is not in the image.
    JumboImage,
}

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::PayloadTooSmall(n) => write!(f, "payload size {n} too small"),
            Self::PayloadNoSpace { have, adding } => {
                write!(
                    f,
                    "no space left for {adding} bytes (payload has {have} of 16)"
                )
            }
            Self::JumboTooLarge(n) => write!(f, "jumbo event of {n} data bytes too large"),
            Self::ZeroId(what) => write!(f, "{what} must be non-zero"),
            Self::ThreadExists(t) => write!(f, "thread {t} already initialized"),
            Self::BadLoom => write!(f, "loom must be 1..511 bytes without '/'"),
            Self::BadModelName(m) => write!(f, "malformed model name '{m}'"),
            Self::BadVersion(v) => write!(f, "malformed version '{v}' (want x.y.z)"),
            Self::BadAttrPath(k) => write!(f, "cannot set attribute '{k}'"),
            Self::AttrNotFound(k) => write!(f, "key not found: {k}"),
            Self::MarkTypeRange(t) => write!(f, "mark type {t} must be in [0,100) range"),
            Self::EmptyMarkText => write!(f, "mark title or label is empty"),
            Self::MarkTypeDefined(t) => write!(f, "mark type {t} already defined"),
            Self::MarkTypeUndefined(t) => write!(f, "mark type {t} not defined"),
            Self::MarkValue(v) => write!(f, "bad mark value {v}"),
            Self::MarkLabelDefined { mark, value } => {
                write!(
                    f,
                    "label for value {value} of mark type {mark} already defined"
                )
            }
            Self::RankRange { rank, nranks } => {
                write!(f, "rank {rank} out of range [0, {nranks})")
            }
            Self::CpuRange => write!(f, "cpu index and phyid must be non-negative"),
            Self::JumboImage => write!(f, "event image has the jumbo flag"),
        }
    }
}
