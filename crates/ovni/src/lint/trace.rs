//! Rules about the whole trace ([`TraceProblem`]): the clock gate and clock offsets (stages 3
//! and 4) and the end check (stage 7). They are the linter's stages, so the type lives here;
//! the emulator runs the same stages (and reads the clock offsets with `offsets`) and reports
//! them with this type, adding only the marks left pushed of `ovniemu -l`.

use std::fmt;
use std::path::PathBuf;

use crate::error::ThreadState;

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
        what: ClockOffsetProblem,
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
    /// A thread ends inside a model's stack, e.g. in an MPI function (`ovniemu -l`).
    StackLeftPushed {
        /// Relative path of its stream.
        stream: String,
        /// Thread id.
        tid: i64,
        /// What is stacked, as ovniemu words it ("stacked mpi functions").
        what: &'static str,
        /// Values left on the stack.
        depth: usize,
    },
    /// Two openmp task type labels have the same value in the label view (the emulator
    /// cannot label it).
    TypeLabelCollision {
        /// The value.
        value: i64,
        /// The two labels.
        labels: (String, String),
    },
}

/// What is wrong with a clock offset table (`clock-offsets.txt`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ClockOffsetProblem {
    /// The file is empty.
    MissingHeader,
    /// A line has fewer than the 5 fields `index hostname median mean stdev` that parse.
    Fields {
        /// Fields read before the first that is missing or does not parse.
        read: usize,
    },
    /// Two entries name the same host.
    DuplicateName(String),
    /// The table has no entries.
    NoEntries,
    /// The file is larger than any table.
    TooLarge,
    /// An entry matches a loom that already has an offset.
    LoomHasOffset {
        /// Entry number (0-based, in file order).
        entry: usize,
        /// Loom name.
        loom: String,
    },
    /// An entry matches no loom.
    NoLoom {
        /// Entry number (0-based, in file order).
        entry: usize,
        /// Hostname of the entry.
        host: String,
    },
}

impl fmt::Display for ClockOffsetProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::MissingHeader => write!(f, "missing header line"),
            Self::Fields { read } => write!(
                f,
                "expected 5 fields (index hostname median mean stdev), {read} read"
            ),
            Self::DuplicateName(n) => write!(f, "entry with name '{n}' already exists"),
            Self::NoEntries => write!(f, "no entries"),
            Self::TooLarge => write!(f, "file too large"),
            Self::LoomHasOffset { loom, .. } => write!(f, "loom {loom} already has a clock offset"),
            Self::NoLoom { host, .. } => write!(f, "cannot find loom with hostname '{host}'"),
        }
    }
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
            Self::TypeLabelCollision { value, labels } => write!(
                f,
                "task type labels '{}' and '{}' have the same value {value}",
                labels.0, labels.1
            ),
            Self::StackLeftPushed {
                tid, what, depth, ..
            } => write!(f, "thread {tid} ended with {depth} {what}"),
            Self::ThreadNotDead { tid, state, .. } => {
                write!(f, "thread {tid} is not dead at the end of the trace (state {state})")
            }
        }
    }
}
