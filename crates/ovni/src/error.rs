//! The crate's single error type.

use std::fmt;
use std::io;
use std::path::PathBuf;

use crate::raw::Mcv;

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
}

/// Structural problems of a `stream.obs` file (`docs/ovni-format.md`, *Reader checks*).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum StreamProblem {
    /// The file has zero bytes.
    Empty,
    /// Fewer than the 8 bytes of the stream header.
    IncompleteHeader {
        /// File size.
        len: u64,
    },
    /// Magic is not `ovni`.
    BadMagic([u8; 4]),
    /// Stream version is not 1.
    BadVersion(u32),
    /// An event does not fit in the rest of the file.
    IncompleteEvent {
        /// Bytes the event needs (12 if its header is cut).
        needed: u64,
        /// Bytes left in the file from the event's start.
        available: u64,
    },
    /// The event's clock is lower than the previous event's in the same stream.
    ClockBackwards {
        /// Previous clock (signed, as the readers compare them).
        prev: i64,
        /// This event's clock.
        clock: i64,
    },
    /// The payload is shorter than the event's signature needs.
    PayloadTooShort {
        /// Event MCV.
        mcv: Mcv,
        /// Bytes needed to decode the argument that does not fit.
        needed: u64,
        /// Payload bytes present.
        available: u64,
    },
    /// A `str` argument has no terminating NUL inside the payload.
    UnterminatedString {
        /// Event MCV.
        mcv: Mcv,
    },
}

impl fmt::Display for StreamProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::Empty => write!(f, "stream is empty"),
            Self::IncompleteHeader { len } => {
                write!(f, "incomplete stream header ({len} bytes, need 8)")
            }
            Self::BadMagic(m) => write!(
                f,
                "wrong stream magic '{}' (expected 'ovni')",
                m.escape_ascii()
            ),
            Self::BadVersion(v) => write!(f, "stream version mismatch {v} (expected 1)"),
            Self::IncompleteEvent { needed, available } => write!(
                f,
                "ends with incomplete event (event needs {needed} bytes, {available} left in file)"
            ),
            Self::ClockBackwards { prev, clock } => {
                write!(f, "clock goes backwards {prev} -> {clock}")
            }
            Self::PayloadTooShort {
                mcv,
                needed,
                available,
            } => write!(
                f,
                "payload of {mcv} too short for its signature (needs {needed} bytes, has {available})"
            ),
            Self::UnterminatedString { mcv } => {
                write!(f, "string argument of {mcv} has no terminating NUL")
            }
        }
    }
}

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
    /// A required model that the emulator does not emulate (it only emulates ovni).
    ModelNotEmulated(String),
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
            Self::ModelNotEmulated(m) => {
                write!(
                    f,
                    "requires the {m} model, which is not emulated (only ovni is)"
                )
            }
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

/// State of a thread in the ovni model (`docs/ovni-format.md`, *ovnilint*, step 6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ThreadState {
    /// Before its first `OHx`.
    Unknown,
    /// Running on a CPU.
    Running,
    /// Paused, still holding its CPU.
    Paused,
    /// Ended; holds no CPU.
    Dead,
    /// About to be paused.
    Cooling,
    /// About to run.
    Warming,
}

impl fmt::Display for ThreadState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Unknown => "unknown",
            Self::Running => "running",
            Self::Paused => "paused",
            Self::Dead => "dead",
            Self::Cooling => "cooling",
            Self::Warming => "warming",
        })
    }
}

/// A thread state transition of the ovni model (`OHe`, `OHp`, `OHr`, `OHc`, `OHw`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transition {
    /// `OHe`: allowed from running or cooling.
    End,
    /// `OHp`: allowed from running or cooling.
    Pause,
    /// `OHr`: allowed from paused or warming.
    Resume,
    /// `OHc`: allowed from running.
    Cool,
    /// `OHw`: allowed from paused.
    Warm,
}

impl Transition {
    fn verb(self) -> &'static str {
        match self {
            Self::End => "end",
            Self::Pause => "pause",
            Self::Resume => "resume",
            Self::Cool => "cool",
            Self::Warm => "warm",
        }
    }

    fn allowed(self) -> &'static str {
        match self {
            Self::End | Self::Pause => "running or cooling",
            Self::Resume => "paused or warming",
            Self::Cool => "running",
            Self::Warm => "paused",
        }
    }
}

/// A mark operation (`OM[`, `OM]`, `OM=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MarkOp {
    /// `OM[`: push on a stack type.
    Push,
    /// `OM]`: pop from a stack type.
    Pop,
    /// `OM=`: set a single type.
    Set,
}

/// Why an event is rejected by the emulator (`docs/ovni-format.md`, *ovnilint*, step 6).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum EventProblem {
    /// The event's stream is not a thread stream (`ovni.part` is not `"thread"`).
    UnknownStream,
    /// No model is registered for the model character.
    ModelNotRegistered(u8),
    /// The model exists but no thread requires it.
    ModelNotEnabled {
        /// Model name.
        model: String,
        /// Version the emulator serves.
        version: String,
    },
    /// The model has no such event (models other than ovni).
    UnknownEvent {
        /// Model name.
        model: String,
    },
    /// The event's jumbo flag does not match its definition.
    Jumbo {
        /// Whether the definition is a jumbo event.
        expected: bool,
    },
    /// The payload has a size the event does not accept.
    PayloadSize {
        /// Bytes present.
        got: u64,
        /// Bytes expected.
        expected: u64,
    },
    /// The payload does not hold the event's arguments.
    Payload(StreamProblem),
    /// Unknown category in the ovni model.
    UnknownCategory(u8),
    /// Unknown value in a known category of the ovni model.
    UnknownValue {
        /// Category name (`thread`, `affinity`, ...).
        category: &'static str,
        /// Value character.
        value: u8,
    },
    /// `OHx` of a running thread.
    AlreadyRunning {
        /// Thread id.
        tid: i64,
    },
    /// `OHx` with less than 4 bytes of payload.
    MissingExecutePayload {
        /// Thread id.
        tid: i64,
    },
    /// `OHx` of a thread that still holds a CPU (paused, cooling or warming).
    AlreadyHasCpu {
        /// Thread id.
        tid: i64,
        /// Its state.
        state: ThreadState,
    },
    /// No CPU with that logical index in the loom (−1 is the virtual CPU).
    NoSuchCpu {
        /// Index.
        index: i64,
        /// Loom name.
        loom: String,
    },
    /// A state transition from a state that does not allow it.
    BadTransition {
        /// Thread id.
        tid: i64,
        /// Attempted transition.
        transition: Transition,
        /// Current state.
        state: ThreadState,
    },
    /// A physical CPU would run two threads at once.
    CpuOversubscribed {
        /// CPU name, `CPU <loom index>.<phyid>`.
        cpu: String,
        /// Threads running on it.
        running: u32,
    },
    /// `OAs` of a thread without a CPU.
    NoCpuSet {
        /// Thread id.
        tid: i64,
    },
    /// `OAs` of a thread that is not running, cooling or warming.
    NotActive {
        /// Thread id.
        tid: i64,
    },
    /// `OAr` names a thread that is in neither the process nor the loom.
    ThreadNotFound {
        /// Thread id.
        tid: i64,
    },
    /// `OAr` names a dead thread.
    ThreadDead {
        /// Thread id.
        tid: i64,
    },
    /// `OAr` names a thread that has not started.
    ThreadNotStarted {
        /// Thread id.
        tid: i64,
    },
    /// `OAr` moves a thread to the CPU it is already on.
    SameCpu {
        /// Thread id.
        tid: i64,
        /// CPU index.
        index: i64,
    },
    /// `OF[` while the thread is already flushing.
    FlushNested {
        /// Thread id.
        tid: i64,
    },
    /// `OF]` without an `OF[` before it.
    FlushNotStarted {
        /// Thread id.
        tid: i64,
    },
    /// A mark type not defined in any thread's metadata.
    MarkUnknownType(i64),
    /// A mark value of 0.
    MarkZeroValue(i64),
    /// A push or pop on a single type, or a set on a stack type.
    MarkWrongType {
        /// Mark type.
        mark: i64,
        /// Operation.
        op: MarkOp,
    },
    /// A pop on an empty stack.
    MarkStackEmpty {
        /// Mark type.
        mark: i64,
        /// Value popped.
        value: i64,
    },
    /// A pop of a value that is not on top of the stack.
    MarkPopMismatch {
        /// Mark type.
        mark: i64,
        /// Value popped.
        value: i64,
        /// Value on top.
        top: i64,
    },
    /// A push on a full stack (512 values).
    MarkStackFull {
        /// Mark type.
        mark: i64,
    },
}

impl fmt::Display for EventProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UnknownStream => {
                write!(f, "event from a stream that is not a thread (ovni.part is not \"thread\")")
            }
            Self::ModelNotRegistered(m) => {
                write!(f, "no model registered for model '{}'", m.escape_ascii())
            }
            Self::ModelNotEnabled { model, version } => write!(
                f,
                "model {model} not enabled (missing call to ovni_thread_require(\"{model}\", \"{version}\")?)"
            ),
            Self::UnknownEvent { model } => write!(f, "event not defined by model {model}"),
            Self::Jumbo { expected: true } => write!(f, "must be a jumbo event"),
            Self::Jumbo { expected: false } => write!(f, "must not be a jumbo event"),
            Self::PayloadSize { got, expected } => {
                write!(f, "unexpected payload size {got} (expected {expected})")
            }
            Self::Payload(p) => write!(f, "{p}"),
            Self::UnknownCategory(c) => {
                write!(f, "unknown ovni event category '{}'", c.escape_ascii())
            }
            Self::UnknownValue { category, value } => {
                write!(f, "unknown {category} event value '{}'", value.escape_ascii())
            }
            Self::AlreadyRunning { tid } => {
                write!(f, "cannot execute thread {tid}, is already running")
            }
            Self::MissingExecutePayload { tid } => {
                write!(f, "missing payload in thread {tid} execute event")
            }
            Self::AlreadyHasCpu { tid, state } => write!(
                f,
                "cannot execute thread {tid}: it already has a CPU (state {state})"
            ),
            Self::NoSuchCpu { index, loom } => {
                write!(f, "cannot find CPU with index {index} in loom {loom}")
            }
            Self::BadTransition {
                tid,
                transition,
                state,
            } => write!(
                f,
                "cannot {} thread {tid}: state not {} (is {state})",
                transition.verb(),
                transition.allowed()
            ),
            Self::CpuOversubscribed { cpu, running } => write!(
                f,
                "physical cpu {cpu} has {running} threads running at the same time"
            ),
            Self::NoCpuSet { tid } => write!(f, "thread {tid} doesn't have CPU set"),
            Self::NotActive { tid } => write!(f, "thread {tid} is not active"),
            Self::ThreadNotFound { tid } => write!(f, "thread {tid} not found"),
            Self::ThreadDead { tid } => write!(f, "thread {tid} is dead"),
            Self::ThreadNotStarted { tid } => write!(f, "thread {tid} in state unknown"),
            Self::SameCpu { tid, index } => write!(
                f,
                "thread {tid} is already on CPU {index} (a remote affinity change to its own CPU is rejected)"
            ),
            Self::FlushNested { tid } => {
                write!(f, "thread {tid} begins a flush while already flushing")
            }
            Self::FlushNotStarted { tid } => {
                write!(f, "thread {tid} ends a flush it did not begin")
            }
            Self::MarkUnknownType(t) => write!(f, "cannot find mark with type {t}"),
            Self::MarkZeroValue(t) => write!(f, "mark value cannot be zero, type {t}"),
            Self::MarkWrongType { mark, op } => match op {
                MarkOp::Push => write!(f, "cannot push on mark type {mark}: it is single, not stack"),
                MarkOp::Pop => write!(f, "cannot pop from mark type {mark}: it is single, not stack"),
                MarkOp::Set => write!(f, "cannot set mark type {mark}: it is stack, not single"),
            },
            Self::MarkStackEmpty { mark, value } => {
                write!(f, "cannot pop value {value} of mark type {mark}: stack empty")
            }
            Self::MarkPopMismatch { mark, value, top } => write!(
                f,
                "cannot pop value {value} of mark type {mark}: top of stack is {top}"
            ),
            Self::MarkStackFull { mark } => write!(f, "mark type {mark}: stack full (512 values)"),
        }
    }
}

/// Rules about the whole trace (`docs/ovni-format.md`, *ovnilint*: steps 3, 4 and 7).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum TraceProblem {
    /// A stream's first clock is more than one hour from the first stream's.
    ClockGate {
        /// Relative path of the stream.
        stream: String,
        /// Distance in nanoseconds.
        delta: u128,
    },
    /// The clock offset table cannot be used.
    ClockOffsets {
        /// Table path.
        path: PathBuf,
        /// Line number (1-based), if the problem is on one line.
        line: Option<usize>,
        /// What is wrong.
        what: String,
    },
    /// A thread is not dead when the trace ends.
    ThreadNotDead {
        /// Relative path of its stream.
        stream: String,
        /// Thread id.
        tid: i64,
        /// Its state.
        state: ThreadState,
    },
    /// A thread ends with values still pushed on a stack mark (`ovniemu -l`).
    MarksLeftPushed {
        /// Relative path of its stream.
        stream: String,
        /// Thread id.
        tid: i64,
        /// Mark type.
        mark: i64,
        /// Values left on the stack.
        depth: usize,
    },
}

impl fmt::Display for TraceProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ClockGate { stream, delta } => write!(
                f,
                "stream {stream} has starting clock too far: delta={:.2} h (more than 1 h; run ovnisync to set the clock offsets)",
                *delta as f64 / 3.6e12
            ),
            Self::ClockOffsets { path, line, what } => match line {
                Some(l) => write!(f, "clock offsets {}:{l}: {what}", path.display()),
                None => write!(f, "clock offsets {}: {what}", path.display()),
            },
            Self::MarksLeftPushed {
                tid, mark, depth, ..
            } => write!(
                f,
                "thread {tid} ends with {depth} values pushed on mark type {mark}"
            ),
            Self::ThreadNotDead { tid, state, .. } => {
                write!(f, "thread {tid} is not dead at the end of the trace (state {state})")
            }
        }
    }
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

impl From<UsageError> for Error {
    fn from(e: UsageError) -> Self {
        Self::Usage(e)
    }
}
