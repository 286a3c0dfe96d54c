//! K-way merge of streams by clock.
//!
//! Order: by clock read as a signed 64-bit value (as the C readers do), plus the stream's clock
//! offset if any, ties between streams broken by stream index (relpath order), events of one
//! stream in file order. A stream is stepped only after its previous event was returned, so
//! an error in a stream is reported right after the last good event that precedes it in
//! merged order, as the C tools do.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::path::Path;

use crate::error::{Error, Result};
use crate::raw::{self, Event, Mcv, STREAM_HEADER_SIZE};
use crate::read::stream::Stream;

/// An event in merged order.
#[derive(Debug, Clone, Copy)]
pub struct Merged<'a> {
    /// Index of the stream in the slice given to [`Merger::new`].
    pub stream: usize,
    /// Byte offset of the event in its `stream.obs`.
    pub offset: u64,
    /// The event.
    pub event: Event<'a>,
    /// The clock the merge orders by: the event's signed clock plus its stream's offset.
    pub sclock: i64,
    /// Clock of the previous merged event when this one is lower (a backwards jump).
    pub backwards_from: Option<i64>,
}

type Key = Reverse<(i64, usize)>;

/// Read position in one stream. The merge decodes with [`raw::decode_event`] directly: going
/// through [`crate::read::EventIter`] moves a large `Result` per event.
#[derive(Debug)]
struct Cursor<'a> {
    data: &'a [u8],
    pos: usize,
    path: &'a Path,
}

const NO_EVENT: Event<'static> = Event {
    flags: 0,
    mcv: Mcv([0; 3]),
    clock: 0,
    payload: &[],
};

/// Iterator over all events of a set of streams in merged order.
///
/// By default the first error ends the iteration. With [`Merger::keep_going`] a stream that
/// fails is dropped after its error is returned and the other streams continue.
#[derive(Debug)]
pub struct Merger<'a> {
    cursors: Vec<Cursor<'a>>,
    /// Offset and event at the head of each stream.
    heads: Vec<(u64, Event<'a>)>,
    heap: BinaryHeap<Key>,
    /// Key of the stream whose head was returned last; it is stepped before the next pick.
    current: Option<(i64, usize)>,
    started: bool,
    last_clock: Option<i64>,
    failed: bool,
    offsets: Vec<i64>,
    keep_going: bool,
    /// Errors found while stepping, returned before the picked event.
    deferred: VecDeque<Error>,
    /// A picked stream whose event waits for the deferred errors to be returned.
    ready: Option<usize>,
}

impl<'a> Merger<'a> {
    /// Merges `streams`.
    pub fn new(streams: &'a [Stream]) -> Self {
        Self {
            cursors: streams
                .iter()
                .map(|s| Cursor {
                    data: s.bytes(),
                    pos: STREAM_HEADER_SIZE,
                    path: s.obs_path(),
                })
                .collect(),
            heads: vec![(0, NO_EVENT); streams.len()],
            heap: BinaryHeap::with_capacity(streams.len()),
            current: None,
            started: false,
            last_clock: None,
            failed: false,
            offsets: Vec::new(),
            keep_going: false,
            deferred: VecDeque::new(),
            ready: None,
        }
    }

    /// Adds `offsets[i]` to every clock of stream `i` before ordering (ovniemu's per-loom
    /// clock offsets); missing entries count as 0.
    pub fn with_clock_offsets(mut self, offsets: Vec<i64>) -> Self {
        self.offsets = offsets;
        self
    }

    /// Keeps merging the other streams after a stream fails.
    pub fn keep_going(mut self) -> Self {
        self.keep_going = true;
        self
    }

    #[inline]
    fn offset_of(&self, s: usize) -> i64 {
        self.offsets.get(s).copied().unwrap_or(0)
    }

    /// Reads the next event of stream `s` into its head; returns its ordering clock, or
    /// `None` at the end of the stream or on an error (queued in `deferred`).
    #[inline]
    fn step(&mut self, s: usize) -> Option<i64> {
        let off = self.offset_of(s);
        let c = self.cursors.get_mut(s)?;
        let rest = c.data.get(c.pos..).filter(|r| !r.is_empty())?;
        let at = c.pos as u64;
        match raw::decode_event(rest) {
            Ok((ev, n)) => {
                c.pos += n;
                let clock = ev.signed_clock().wrapping_add(off);
                if let Some(h) = self.heads.get_mut(s) {
                    *h = (at, ev);
                }
                Some(clock)
            }
            Err(problem) => {
                c.pos = c.data.len();
                let path = c.path.to_path_buf();
                self.deferred.push_back(Error::Stream {
                    path,
                    offset: at,
                    problem,
                });
                None
            }
        }
    }

    #[inline]
    fn pick(&mut self) -> Option<usize> {
        if !self.started {
            return self.start();
        }
        let (_, cur) = self.current?;
        // The current stream is kept out of the heap: while its next event still comes
        // first (the common case, and always with one stream) no heap operation is needed.
        self.current = match self.step(cur) {
            Some(clock) => {
                let key = (clock, cur);
                match self.heap.peek() {
                    Some(Reverse(top)) if *top < key => {
                        let next = self.heap.pop().map(|Reverse(k)| k);
                        self.heap.push(Reverse(key));
                        next
                    }
                    _ => Some(key),
                }
            }
            None => self.heap.pop().map(|Reverse(k)| k),
        };
        self.current.map(|(_, s)| s)
    }

    #[cold]
    fn start(&mut self) -> Option<usize> {
        self.started = true;
        for s in 0..self.cursors.len() {
            if let Some(clock) = self.step(s) {
                self.heap.push(Reverse((clock, s)));
            }
        }
        self.current = self.heap.pop().map(|Reverse(k)| k);
        self.current.map(|(_, s)| s)
    }

    /// The next queued error; without keep-going it is the last item.
    #[inline]
    fn take_error(&mut self) -> Option<Error> {
        if self.deferred.is_empty() {
            return None;
        }
        let e = self.deferred.pop_front()?;
        if !self.keep_going {
            self.failed = true;
        }
        Some(e)
    }
}

impl<'a> Iterator for Merger<'a> {
    type Item = Result<Merged<'a>>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        if let Some(e) = self.take_error() {
            return Some(Err(e));
        }
        let picked = match self.ready.take() {
            Some(s) => Some(s),
            None => self.pick(),
        };
        if let Some(e) = self.take_error() {
            self.ready = picked;
            return Some(Err(e));
        }
        let s = picked?;
        let &(offset, event) = self.heads.get(s)?;
        let sclock = event.signed_clock().wrapping_add(self.offset_of(s));
        let backwards_from = self.last_clock.filter(|&last| sclock < last);
        self.last_clock = Some(sclock);
        Some(Ok(Merged {
            stream: s,
            offset,
            event,
            sclock,
            backwards_from,
        }))
    }
}
