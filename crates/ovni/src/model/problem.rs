//! The vocabulary of the ovni model's verdicts: thread states and transitions, mark
//! operations, and why an event is rejected ([`EventProblem`]). The model produces most
//! problems; the linter and the emulator add those of their shared dispatch (unknown stream,
//! model not enabled, payload not fitting a signature), so they are defined here, next to the
//! rules both run.

use std::fmt;

use crate::error::StreamProblem;

mod runtime;
pub use runtime::{
    BodyFailure, BodyOp, BodyState, ChanFailure, NosvProblem, OpenMpProblem, TaskState,
};

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
    /// An event of the mpi, tampi or openmp model from a thread that is not running.
    ThreadNotRunning {
        /// Thread id.
        tid: i64,
    },
    /// An event of the ovni or nOS-V model from a thread that the kernel model has out of
    /// its CPU (after `KCO`, before `KCI`).
    ThreadOutOfCpu {
        /// Thread id.
        tid: i64,
    },
    /// A push of the value already on top of a model's stack channel (mpi, tampi, kernel).
    ChannelSameValue {
        /// Channel name, e.g. `mpi.thread0.function`.
        chan: String,
        /// Value pushed.
        value: i64,
    },
    /// A pop from an empty stack channel.
    ChannelStackEmpty {
        /// Channel name.
        chan: String,
    },
    /// A pop of a value that is not on top of the stack channel.
    ChannelPopMismatch {
        /// Channel name.
        chan: String,
        /// Value popped.
        value: i64,
        /// Value on top.
        top: i64,
    },
    /// A push on a full stack channel (512 values).
    ChannelStackFull {
        /// Channel name.
        chan: String,
    },
    /// An event the openmp model rejects.
    OpenMp(OpenMpProblem),
    /// An event the nosv model rejects.
    Nosv(NosvProblem),
    /// An event the nanos6 model rejects.
    Nanos6(NosvProblem),
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
            Self::ThreadNotRunning { tid } => write!(f, "current thread {tid} not running"),
            Self::ThreadOutOfCpu { tid } => write!(f, "current thread {tid} out of CPU"),
            Self::ChannelSameValue { chan, value } => {
                write!(f, "{chan}: cannot push {value}: it is already on top")
            }
            Self::ChannelStackEmpty { chan } => write!(f, "{chan}: cannot pop: stack empty"),
            Self::ChannelPopMismatch { chan, value, top } => {
                write!(f, "{chan}: cannot pop {value}: top of stack is {top}")
            }
            Self::ChannelStackFull { chan } => write!(f, "{chan}: stack full (512 values)"),
            Self::OpenMp(p) => write!(f, "{p}"),
            Self::Nosv(p) | Self::Nanos6(p) => write!(f, "{p}"),
        }
    }
}
