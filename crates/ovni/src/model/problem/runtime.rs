//! Why the openmp and nosv models reject an event: their task and body rules, and the stack
//! channels they share with the other runtime models.

use std::fmt;

/// Why a stack channel refuses a push or a pop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChanFailure {
    /// A pop from an empty stack.
    Empty {
        /// Channel name.
        chan: String,
    },
    /// A pop of a value that is not on top.
    Mismatch {
        /// Channel name.
        chan: String,
        /// Value popped.
        value: i64,
        /// Value on top.
        top: i64,
    },
    /// A push on a full stack (512 values).
    Full {
        /// Channel name.
        chan: String,
    },
    /// A push of the value already on top, on a stack that refuses it (nanos6).
    Same {
        /// Channel name.
        chan: String,
        /// Value pushed.
        value: i64,
    },
}

impl fmt::Display for ChanFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Empty { chan } => write!(f, "{chan}: cannot pop: stack empty"),
            Self::Mismatch { chan, value, top } => {
                write!(f, "{chan}: cannot pop {value}: top of stack is {top}")
            }
            Self::Full { chan } => write!(f, "{chan}: stack full (512 values)"),
            Self::Same { chan, value } => write!(f, "{chan}: {value} is already on top"),
        }
    }
}

/// State of an OpenMP task that has run at least once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskState {
    /// Running on a thread.
    Running,
    /// Ended (it may run again).
    Dead,
}

impl fmt::Display for TaskState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Running => "Running",
            Self::Dead => "Dead",
        })
    }
}

/// Why the openmp model rejects an event.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum OpenMpProblem {
    /// A category the model does not define.
    UnknownCategory,
    /// An unknown value in a subsystem category.
    UnknownSubsystemEvent,
    /// `PP<v>` with `v` not `c`, `x` or `e`.
    UnexpectedTaskValue,
    /// `PPc` without exactly 8 bytes of payload.
    CreatePayloadSize,
    /// Task id 0 (in `PPc` if `create`, else in `PPx`/`PPe`).
    TaskIdZero {
        /// In a create event.
        create: bool,
    },
    /// Type id 0 in `PPc` or `POc`.
    TypeIdZero,
    /// `PPc` of a task id already created.
    TaskExists(u32),
    /// `PPc` of a type never created.
    UnknownType(u32),
    /// `PPx`/`PPe` without a task id.
    MissingTaskId,
    /// `PPx`/`PPe` of a task never created.
    TaskNotFound(u32),
    /// `PPx` of a task that is running.
    NotCreated {
        /// Task id.
        task: u32,
        /// Its state.
        state: TaskState,
    },
    /// `PPe` of a task that never ran.
    NeverRan {
        /// Task id.
        task: u32,
    },
    /// `PPe` of a task that is not running.
    EndNotRunning {
        /// Task id.
        task: u32,
        /// Its state.
        state: TaskState,
    },
    /// `PPe` of a task running on another thread.
    EndOtherThread {
        /// Task id.
        task: u32,
    },
    /// `PPe` of a task that is not the innermost one of the thread.
    EndNotOnTop {
        /// Task id.
        task: u32,
    },
    /// The task id or label stack refuses a `PPx` (`execute`) or `PPe`.
    TaskChannel {
        /// In an execute event.
        execute: bool,
        /// The label stack (else the task id stack).
        label: bool,
        /// What the stack refused.
        failure: ChanFailure,
    },
    /// `PO<v>` with `v` not `c`.
    UnexpectedTypeValue(u8),
    /// `POc` is not a jumbo event.
    NotJumbo,
    /// `POc` without a type id and a NUL-terminated label.
    MalformedType,
    /// `POc` of a type id already created.
    TypeExists(u32),
    /// A type label of 512 bytes or more.
    LabelTooLong(u32),
    /// `PQ<v>` with `v` not `x` or `e`.
    UnexpectedWorksharingValue(u8),
    /// `PQx`/`PQe` without a type id.
    MissingWorksharingType,
    /// `PQx`/`PQe` of type 0.
    WorksharingTypeZero,
    /// `PQx`/`PQe` of a type never created.
    WorksharingTypeNotFound(u32),
    /// The label stack refuses a `PQx` (`enter`) or `PQe`.
    WorksharingChannel {
        /// In an enter event.
        enter: bool,
        /// What the stack refused.
        failure: ChanFailure,
    },
}

impl fmt::Display for OpenMpProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UnknownCategory => write!(f, "unknown openmp event category"),
            Self::UnknownSubsystemEvent => write!(f, "unknown openmp subsystem event"),
            Self::UnexpectedTaskValue => write!(f, "unexpected task event value"),
            Self::CreatePayloadSize => write!(f, "task creation without 8 bytes of payload"),
            Self::TaskIdZero { .. } => write!(f, "task id cannot be 0"),
            Self::TypeIdZero => write!(f, "type id cannot be 0"),
            Self::TaskExists(t) => write!(f, "task {t} already exists"),
            Self::UnknownType(t) => write!(f, "unknown type id {t}"),
            Self::MissingTaskId => write!(f, "missing task id in payload"),
            Self::TaskNotFound(t) => write!(f, "cannot find task with id {t}"),
            Self::NotCreated { task, state } => {
                write!(f, "task {task} cannot run: it is {state}")
            }
            Self::NeverRan { task } => write!(f, "task {task} ends but never ran"),
            Self::EndNotRunning { task, state } => {
                write!(f, "task {task} cannot end: it is {state}")
            }
            Self::EndOtherThread { task } => {
                write!(f, "task {task} cannot end: it runs on another thread")
            }
            Self::EndNotOnTop { task } => {
                write!(f, "task {task} cannot end: it is not the innermost task")
            }
            Self::TaskChannel { failure, .. } | Self::WorksharingChannel { failure, .. } => {
                write!(f, "{failure}")
            }
            Self::UnexpectedTypeValue(v) => {
                write!(f, "unexpected type event value '{}'", v.escape_ascii())
            }
            Self::NotJumbo => write!(f, "a type creation must be a jumbo event"),
            Self::MalformedType => {
                write!(
                    f,
                    "a type creation needs a type id and a NUL-terminated label"
                )
            }
            Self::TypeExists(t) => write!(f, "a task type with id {t} already exists"),
            Self::LabelTooLong(t) => write!(f, "task type {t} label too long"),
            Self::UnexpectedWorksharingValue(v) => {
                write!(
                    f,
                    "unexpected worksharing event value '{}'",
                    v.escape_ascii()
                )
            }
            Self::MissingWorksharingType => write!(f, "missing worksharing type in payload"),
            Self::WorksharingTypeZero => write!(f, "worksharing type id cannot be 0"),
            Self::WorksharingTypeNotFound(t) => write!(f, "cannot find worksharing type {t}"),
        }
    }
}

/// State of a nOS-V task body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyState {
    /// Created, not running yet (or again).
    Created,
    /// Running on a thread.
    Running,
    /// Paused on a thread's stack.
    Paused,
    /// Ended.
    Dead,
}

impl fmt::Display for BodyState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Created => "Created",
            Self::Running => "Running",
            Self::Paused => "Paused",
            Self::Dead => "Dead",
        })
    }
}

/// A nOS-V task body transition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyOp {
    /// `VTx`.
    Execute,
    /// `VTe`.
    End,
    /// `VTp`.
    Pause,
    /// `VTr`.
    Resume,
}

impl BodyOp {
    /// ovniemu's name of the transition (`task_<name>`, `body_<name>`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Execute => "execute",
            Self::End => "end",
            Self::Pause => "pause",
            Self::Resume => "resume",
        }
    }
}

/// Why a nOS-V task body cannot make a transition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BodyFailure {
    /// A body of a parallel task runs again after it ended.
    NotAllowedAgain,
    /// A paused body is executed instead of resumed.
    RunPaused,
    /// The body is not in the state the transition needs.
    WrongState {
        /// State needed.
        want: BodyState,
        /// Its state.
        is: BodyState,
    },
    /// A body would run over a running body.
    Nest {
        /// Task of the running body.
        task: u32,
        /// The running body.
        body: u32,
    },
    /// A body of a parallel task pauses.
    NotAllowedPause,
    /// The body is on no thread's stack.
    NoStack,
    /// The body is on another thread's stack.
    OtherStack,
    /// The body is not on top of its thread's stack.
    NotOnTop,
}

/// Why the nosv or the nanos6 model rejects an event (they share the task and body rules).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum NosvProblem {
    /// The thread is not running, cooling or warming.
    NotActive {
        /// Thread id.
        tid: i64,
    },
    /// A category the model does not define.
    UnknownCategory,
    /// An unknown value in a subsystem category.
    UnknownSubsystemEvent,
    /// The subsystem stack refuses a subsystem event.
    Subsystem(ChanFailure),
    /// The subsystem stack refuses the "in body" subsystem of `VTx` (`push`) or `VTe`.
    SubsystemForBody {
        /// In an execute event.
        push: bool,
        /// What the stack refused.
        failure: ChanFailure,
    },
    /// A channel that refuses repeated values gets the value it has (the idle state, or the
    /// task id when a body starts, `context: Some(true)`, or stops, `Some(false)`).
    SameValue {
        /// Channel name.
        chan: String,
        /// The value (`None`: no value).
        value: Option<i64>,
        /// Set by a body starting (`true`) or stopping (`false`).
        context: Option<bool>,
    },
    /// `VT<v>` with `v` not `c`, `C`, `x`, `e`, `p` or `r`.
    UnexpectedTaskValue,
    /// `VTc`/`VTC` without 8 bytes of payload.
    CreatePayloadSize,
    /// `VTc`/`VTC` of a task id already created.
    TaskExists(u32),
    /// `VTc`/`VTC` of a type never created.
    UnknownType(u32),
    /// A task event without a task id.
    MissingTaskId,
    /// A task event without a body id.
    MissingBodyId,
    /// A task event of a task never created.
    TaskNotFound(u32),
    /// Body id 0 for a parallel task.
    BodyIdZero(u32),
    /// A body id other than 0 for a task that is not parallel.
    BodyIdNotZero(u32),
    /// A body that never ran ends, pauses or resumes.
    NoBody {
        /// The transition.
        op: BodyOp,
        /// Task id.
        task: u32,
        /// Body id.
        body: u32,
    },
    /// A body cannot make the transition.
    Body {
        /// The transition.
        op: BodyOp,
        /// Task id.
        task: u32,
        /// Body id.
        body: u32,
        /// Why.
        failure: BodyFailure,
    },
    /// A body of task id 0 starts.
    TaskIdZero,
    /// A nanos6 thread switches to a body of task id 0 (nested start or end).
    SwitchTaskIdZero,
    /// A nanos6 thread switches to a task whose id its task id channel already has.
    SwitchSameValue {
        /// Channel name.
        chan: String,
        /// The value.
        value: i64,
    },
    /// A body starts in a process whose application id is not positive.
    AppIdNotPositive,
    /// A body starts while the top subsystem is not "in body".
    WrongSubsystem,
    /// `VY<v>` with `v` not `c`.
    UnexpectedTypeValue(u8),
    /// `VYc` is not a jumbo event.
    NotJumbo,
    /// `VYc` without a type id and a NUL-terminated label.
    MalformedType,
    /// `VYc` of a type id already created.
    TypeExists(u32),
    /// `VYc` of type 0.
    TypeIdZero,
    /// A type label of 512 bytes or more.
    LabelTooLong(u32),
    /// A hardware counter event in a trace without counters.
    NoCounters,
    /// `VW<v>` with `v` not `C`.
    UnknownCounterEvent,
    /// `VWC` is not a jumbo event.
    CountersNotJumbo,
    /// `VWC` without one 8-byte value per counter.
    CountersSize {
        /// Bytes present.
        got: usize,
        /// Bytes expected.
        want: usize,
    },
}

impl fmt::Display for NosvProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let body = |task: &u32, b: &u32| format!("body {b} of task {task}");
        match self {
            Self::NotActive { tid } => write!(f, "current thread {tid} not active"),
            Self::UnknownCategory => write!(f, "unknown event category"),
            Self::UnknownSubsystemEvent => write!(f, "unknown subsystem event"),
            Self::Subsystem(c) | Self::SubsystemForBody { failure: c, .. } => write!(f, "{c}"),
            Self::SameValue { chan, value, .. } => match value {
                Some(v) => write!(f, "{chan}: already {v}"),
                None => write!(f, "{chan}: already without value"),
            },
            Self::UnexpectedTaskValue => write!(f, "unexpected task event value"),
            Self::CreatePayloadSize => write!(f, "task creation without 8 bytes of payload"),
            Self::TaskExists(t) => write!(f, "task {t} already exists"),
            Self::UnknownType(t) => write!(f, "unknown type id {t}"),
            Self::MissingTaskId => write!(f, "missing task id in payload"),
            Self::MissingBodyId => write!(f, "missing body id in payload"),
            Self::TaskNotFound(t) => write!(f, "cannot find task with id {t}"),
            Self::BodyIdZero(t) => write!(f, "the body id must be > 0 for parallel task {t}"),
            Self::BodyIdNotZero(t) => {
                write!(f, "the body id must be 0 for non-parallel task {t}")
            }
            Self::NoBody { op, task, body: b } => {
                write!(f, "{} cannot {}: it never ran", body(task, b), op.name())
            }
            Self::Body {
                op,
                task,
                body: b,
                failure,
            } => {
                let what = match failure {
                    BodyFailure::NotAllowedAgain => "it is parallel and cannot run again".into(),
                    BodyFailure::RunPaused => "it is paused (resume it instead)".into(),
                    BodyFailure::WrongState { want, is } => format!("it is {is}, not {want}"),
                    BodyFailure::Nest { task, body: o } => {
                        format!("{} is already running", body(task, o))
                    }
                    BodyFailure::NotAllowedPause => "it is parallel and cannot pause".into(),
                    BodyFailure::NoStack => "it is on no thread".into(),
                    BodyFailure::OtherStack => "it is on another thread".into(),
                    BodyFailure::NotOnTop => "it is not the innermost body".into(),
                };
                write!(f, "{} cannot {}: {what}", body(task, b), op.name())
            }
            Self::TaskIdZero | Self::SwitchTaskIdZero => write!(f, "task id cannot be 0"),
            Self::SwitchSameValue { chan, value } => write!(f, "{chan}: already {value}"),
            Self::AppIdNotPositive => write!(f, "app id must be positive"),
            Self::WrongSubsystem => write!(f, "wrong subsystem state on task begin"),
            Self::UnexpectedTypeValue(v) => {
                write!(f, "unexpected type event value '{}'", v.escape_ascii())
            }
            Self::NotJumbo => write!(f, "a type creation must be a jumbo event"),
            Self::MalformedType => {
                write!(
                    f,
                    "a type creation needs a type id and a NUL-terminated label"
                )
            }
            Self::TypeExists(t) => write!(f, "a task type with id {t} already exists"),
            Self::TypeIdZero => write!(f, "invalid task type id 0"),
            Self::LabelTooLong(t) => write!(f, "task type {t} label too long"),
            Self::NoCounters => write!(f, "hardware counter event but no counters enabled"),
            Self::UnknownCounterEvent => write!(f, "unknown hardware counter event"),
            Self::CountersNotJumbo => write!(f, "hardware counters must be a jumbo event"),
            Self::CountersSize { got, want } => {
                write!(f, "hardware counters of {got} bytes (expecting {want})")
            }
        }
    }
}
