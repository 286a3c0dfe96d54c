//! The ovni trace format v3 (runtime traces of BSC's ovni, as written by libovni 1.14).
//!
//! A trace is a directory of *streams*; each stream is a directory with `stream.json`
//! (metadata) and `stream.obs` (binary events). This crate provides:
//!
//! * [`raw`]: the byte layout and the event codec (normal and jumbo events);
//! * [`read`]: memory-mapped, zero-copy stream reading with typed errors, the trace walker and
//!   a deterministic k-way merge of all streams by clock;
//! * [`metadata`]: `stream.json` keys and the merge rules across streams;
//! * [`events`]: the event table of ovni's models, payload decoding and descriptions;
//! * [`write`](mod@write): a writer with libovni's model (processes, threads, flushes, marks,
//!   attributes), which unlike libovni never loses buffered events;
//! * [`tools`]: the logic of `ovnidump` and `ovnitop`;
//! * [`sort`]: the logic of `ovnisort`: sorting the unordered regions of each stream, or
//!   checking that the streams are sorted (`-c`);
//! * [`emu`]: the emulator (`ovniemu`): the ovni model's channels and the Paraver files;
//! * [`lint`]: the checks ovniemu makes before and while emulating a trace (`ovnilint`).
//!
//! Untrusted bytes never panic and never drive an allocation: every length read from a file
//! is checked against the bytes that are actually there.
#![deny(missing_docs)]

pub mod emu;
pub mod error;
pub mod events;
pub mod lint;
pub mod metadata;
mod model;
mod printf;
pub mod raw;
pub mod read;
pub mod sort;
pub mod tools;
pub mod write;

pub use error::{
    BodyFailure, BodyOp, BodyState, ChanFailure, ClockOffsetProblem, Error, EventProblem, MarkOp,
    MetaProblem, NosvProblem, OpenMpProblem, Result, SortProblem, StreamProblem, TaskState,
    ThreadState, TraceProblem, Transition, UsageError,
};
pub use raw::{Event, Mcv};
pub use read::{Stream, Trace};
