//! Reading traces: memory-mapped streams, the trace walker and the merge by clock.

mod merge;
pub mod meta;
pub(crate) mod stream;
mod trace;

pub use merge::{Merged, Merger};
pub use meta::StreamMeta;
pub use stream::{EventIter, Stream};
pub use trace::{find_streams, StreamDir, Trace};
