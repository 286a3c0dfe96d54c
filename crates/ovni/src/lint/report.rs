//! What a lint reports: each [`Problem`] with where it is and a stable code per broken rule,
//! the [`Report`] of a whole trace, and the sink that decides when the checks stop.

use std::fmt;
use std::ops::ControlFlow;

use serde_json::{json, Value};

use super::trace::TraceProblem;
use crate::error::{Error, EventProblem, MetaProblem, StreamProblem};
use crate::raw::{Event, Mcv};
use crate::read::Stream;

/// One problem: the error and where it is.
#[derive(Debug)]
pub struct Problem {
    /// Relative path of the stream, if the problem is in one.
    pub stream: Option<String>,
    /// Loom name, for loom-wide problems.
    pub loom: Option<String>,
    /// Byte offset in the stream's `stream.obs`.
    pub offset: Option<u64>,
    /// MCV of the event.
    pub mcv: Option<Mcv>,
    /// Clock of the event (raw, signed).
    pub clock: Option<i64>,
    /// What is wrong.
    pub error: Error,
}

impl Problem {
    /// A problem located from what `error` says.
    pub fn new(error: Error) -> Self {
        let mut p = Self {
            stream: None,
            loom: None,
            offset: None,
            mcv: None,
            clock: None,
            error,
        };
        match &p.error {
            Error::Event {
                stream,
                offset,
                mcv,
                clock,
                ..
            } => {
                p.stream = Some(stream.clone());
                p.offset = Some(*offset);
                p.mcv = Some(*mcv);
                p.clock = Some(*clock);
            }
            Error::Stream { offset, .. } => p.offset = Some(*offset),
            Error::Metadata { stream, problem } => match problem {
                MetaProblem::LoomWithoutCpus
                | MetaProblem::CpuIndexOutOfBounds { .. }
                | MetaProblem::CpuIndexTaken(_)
                | MetaProblem::ProcessWithoutRank(_) => p.loom = Some(stream.clone()),
                _ => p.stream = Some(stream.clone()),
            },
            Error::Trace(
                TraceProblem::ClockGate { stream, .. } | TraceProblem::ThreadNotDead { stream, .. },
            ) => p.stream = Some(stream.clone()),
            _ => {}
        }
        p
    }

    pub(super) fn in_stream(mut self, stream: &Stream) -> Self {
        self.stream = Some(stream.name());
        self
    }

    pub(super) fn at_event(mut self, ev: &Event<'_>) -> Self {
        self.mcv = Some(ev.mcv);
        self.clock = Some(ev.signed_clock());
        self
    }

    /// A stable identifier of the rule that is broken, e.g. `thread-state`.
    pub fn code(&self) -> &'static str {
        code(&self.error)
    }

    /// What is wrong, without the location.
    pub fn message(&self) -> String {
        match &self.error {
            Error::Io { path, source } => format!("{}: {source}", path.display()),
            Error::Json { path, source } => format!("{}: invalid JSON: {source}", path.display()),
            Error::Stream { problem, .. } => problem.to_string(),
            Error::Metadata { problem, .. } => problem.to_string(),
            Error::Event { problem, .. } => problem.to_string(),
            other => other.to_string(),
        }
    }

    /// The problem as a JSON object (`code`, `message`, `stream`, `loom`, `offset`, `mcv`,
    /// `clock`; absent locations are null).
    pub fn to_json(&self) -> Value {
        json!({
            "code": self.code(),
            "message": self.message(),
            "stream": self.stream,
            "loom": self.loom,
            "offset": self.offset,
            "mcv": self.mcv.map(|m| m.to_string()),
            "clock": self.clock,
        })
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(s) = &self.stream {
            let s = if s.is_empty() { "." } else { s };
            write!(f, "{s}: ")?;
        } else if let Some(l) = &self.loom {
            write!(f, "loom {l}: ")?;
        }
        if let Some(o) = self.offset {
            write!(f, "offset {o}: ")?;
        }
        if let (Some(m), Some(c)) = (self.mcv, self.clock) {
            write!(f, "{m} at {c}: ")?;
        }
        write!(f, "{} [{}]", self.message(), self.code())
    }
}

fn code(e: &Error) -> &'static str {
    match e {
        Error::Io { .. } => "io",
        Error::Json { .. } => "invalid-json",
        Error::NoStreams(_) => "no-streams",
        Error::Usage(_) => "usage",
        Error::Sort { .. } => "sort",
        Error::Stream { problem, .. } => match problem {
            StreamProblem::Empty => "empty-stream",
            StreamProblem::IncompleteHeader { .. } => "incomplete-header",
            StreamProblem::BadMagic(_) => "bad-magic",
            StreamProblem::BadVersion(_) => "bad-stream-version",
            StreamProblem::IncompleteEvent { .. } => "incomplete-event",
            StreamProblem::ClockBackwards { .. } => "clock-backwards",
            StreamProblem::PayloadTooShort { .. } | StreamProblem::UnterminatedString { .. } => {
                "payload"
            }
        },
        Error::Metadata { problem, .. } => match problem {
            MetaProblem::MissingKey(_) => "missing-key",
            MetaProblem::BadValue { .. } => "bad-value",
            MetaProblem::VersionMismatch(_) => "metadata-version",
            MetaProblem::NotFinished => "not-finished",
            MetaProblem::UnknownPart(_) => "unknown-part",
            MetaProblem::LoomHasSlash => "bad-loom-name",
            MetaProblem::EmptyCpus
            | MetaProblem::CpuIndexNegative(_)
            | MetaProblem::CpuPhyidNegative(_)
            | MetaProblem::CpuIndexMismatch { .. }
            | MetaProblem::CpuIndexOutOfBounds { .. }
            | MetaProblem::CpuIndexTaken(_) => "bad-cpus",
            MetaProblem::LoomWithoutCpus => "loom-without-cpus",
            MetaProblem::AppIdMismatch { .. } => "app-id-mismatch",
            MetaProblem::RankMismatch { .. }
            | MetaProblem::RankOutOfRange { .. }
            | MetaProblem::ProcessWithoutRank(_) => "bad-rank",
            MetaProblem::DuplicateThread(_) => "duplicate-thread",
            MetaProblem::MarkTypeMismatch(_) | MetaProblem::MarkLabelMismatch { .. } => {
                "mark-mismatch"
            }
            MetaProblem::MarkValueCollision { .. } => "mark-value-collision",
            MetaProblem::UnsupportedModelVersion { .. } | MetaProblem::BadVersionString(_) => {
                "require-version"
            }
            MetaProblem::FileTooLarge { .. } => "metadata-too-large",
        },
        Error::Event { problem, .. } => event_code(problem),
        Error::Trace(t) => match t {
            TraceProblem::ClockGate { .. } => "clock-gate",
            TraceProblem::ClockOffsets { .. } => "clock-offsets",
            TraceProblem::ThreadNotDead { .. } => "thread-not-dead",
            TraceProblem::MarksLeftPushed { .. } => "marks-left-pushed",
            TraceProblem::StackLeftPushed { .. } => "stack-left-pushed",
            TraceProblem::TypeLabelCollision { .. } => "label-collision",
        },
    }
}

pub(super) fn event_code(p: &EventProblem) -> &'static str {
    match p {
        EventProblem::UnknownStream => "unknown-stream",
        EventProblem::ModelNotRegistered(_) => "model-not-registered",
        EventProblem::ModelNotEnabled { .. } => "model-not-enabled",
        EventProblem::UnknownEvent { .. }
        | EventProblem::UnknownCategory(_)
        | EventProblem::UnknownValue { .. } => "unknown-event",
        EventProblem::Jumbo { .. }
        | EventProblem::PayloadSize { .. }
        | EventProblem::Payload(_)
        | EventProblem::MissingExecutePayload { .. } => "payload",
        EventProblem::AlreadyRunning { .. }
        | EventProblem::AlreadyHasCpu { .. }
        | EventProblem::BadTransition { .. } => "thread-state",
        EventProblem::NoSuchCpu { .. } => "no-such-cpu",
        EventProblem::CpuOversubscribed { .. } => "cpu-oversubscribed",
        EventProblem::NoCpuSet { .. }
        | EventProblem::NotActive { .. }
        | EventProblem::ThreadNotFound { .. }
        | EventProblem::ThreadDead { .. }
        | EventProblem::ThreadNotStarted { .. }
        | EventProblem::SameCpu { .. } => "affinity",
        EventProblem::FlushNested { .. } | EventProblem::FlushNotStarted { .. } => "flush",
        EventProblem::MarkUnknownType(_)
        | EventProblem::MarkZeroValue(_)
        | EventProblem::MarkWrongType { .. }
        | EventProblem::MarkStackEmpty { .. }
        | EventProblem::MarkPopMismatch { .. }
        | EventProblem::MarkStackFull { .. } => "mark",
        EventProblem::ThreadNotRunning { .. } | EventProblem::ThreadOutOfCpu { .. } => {
            "thread-state"
        }
        EventProblem::ChannelSameValue { .. }
        | EventProblem::ChannelStackEmpty { .. }
        | EventProblem::ChannelPopMismatch { .. }
        | EventProblem::ChannelStackFull { .. } => "stack",
        EventProblem::OpenMp(_) => "openmp",
        EventProblem::Nosv(_) => "nosv",
        EventProblem::Nanos6(_) => "nanos6",
    }
}

/// The result of a lint.
#[derive(Debug, Default)]
pub struct Report {
    /// Problems in the order found (at most one unless [`LintOptions::all`](super::LintOptions::all)).
    pub problems: Vec<Problem>,
    /// Streams found.
    pub streams: usize,
    /// Events checked.
    pub events: u64,
    /// True if [`LintOptions::max_problems`](super::LintOptions::max_problems) stopped the checks.
    pub truncated: bool,
}

impl Report {
    /// True if ovniemu would accept the trace.
    pub fn accepted(&self) -> bool {
        self.problems.is_empty()
    }

    /// The report as a JSON object.
    pub fn to_json(&self) -> Value {
        json!({
            "accepted": self.accepted(),
            "streams": self.streams,
            "events": self.events,
            "truncated": self.truncated,
            "problems": self.problems.iter().map(Problem::to_json).collect::<Vec<_>>(),
        })
    }
}

/// Collects problems; `Break` when the checks must stop.
pub(super) struct Sink {
    pub(super) all: bool,
    pub(super) max: usize,
    pub(super) report: Report,
}

impl Sink {
    pub(super) fn push(&mut self, p: Problem) -> ControlFlow<()> {
        if self.max != 0 && self.report.problems.len() >= self.max {
            self.report.truncated = true;
            return ControlFlow::Break(());
        }
        self.report.problems.push(p);
        if self.all {
            ControlFlow::Continue(())
        } else {
            ControlFlow::Break(())
        }
    }
}
