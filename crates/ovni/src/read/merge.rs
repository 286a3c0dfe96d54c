//! K-way merge of streams by clock.
//!
//! Order: by clock read as a signed 64-bit value (as the C readers do), plus the stream's clock
//! offset if any, ties between streams broken by stream index (relpath order), events of one
//! stream in file order. A stream is stepped only after its previous event was returned, so
//! an error in a stream is reported right after the last good event that precedes it in
//! merged order, as the C tools do.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use crate::error::{Error, Result};
use crate::raw::Event;
use crate::read::stream::{EventIter, Stream};

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

/// Iterator over all events of a set of streams in merged order.
///
/// By default the first error ends the iteration. With [`Merger::keep_going`] a stream that
/// fails is dropped after its error is returned and the other streams continue.
#[derive(Debug)]
pub struct Merger<'a> {
    iters: Vec<EventIter<'a>>,
    heads: Vec<Option<(u64, Event<'a>)>>,
    heap: BinaryHeap<Key>,
    /// Key of the stream whose head was returned last; it is stepped before the next pick.
    current: Option<(i64, usize)>,
    started: bool,
    last_clock: Option<i64>,
    failed: bool,
    offsets: Vec<i64>,
    keep_going: bool,
    /// Errors found while picking in keep-going mode, returned before the picked event.
    deferred: VecDeque<Error>,
    /// A picked stream whose event waits for the deferred errors to be returned.
    ready: Option<usize>,
}

impl<'a> Merger<'a> {
    /// Merges `streams`.
    pub fn new(streams: &'a [Stream]) -> Self {
        Self {
            iters: streams.iter().map(Stream::events).collect(),
            heads: vec![None; streams.len()],
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

    fn step(&mut self, s: usize) -> Result<Option<i64>> {
        let off = self.offset_of(s);
        let Some(it) = self.iters.get_mut(s) else {
            return Ok(None);
        };
        match it.next() {
            None => Ok(None),
            Some(Err(e)) if self.keep_going => {
                self.deferred.push_back(e);
                Ok(None)
            }
            Some(Err(e)) => Err(e),
            Some(Ok((pos, ev))) => {
                let clock = ev.signed_clock().wrapping_add(off);
                if let Some(h) = self.heads.get_mut(s) {
                    *h = Some((pos, ev));
                }
                Ok(Some(clock))
            }
        }
    }

    fn pick(&mut self) -> Result<Option<usize>> {
        if !self.started {
            self.started = true;
            for s in 0..self.iters.len() {
                if let Some(clock) = self.step(s)? {
                    self.heap.push(Reverse((clock, s)));
                }
            }
            self.current = self.heap.pop().map(|Reverse(k)| k);
            return Ok(self.current.map(|(_, s)| s));
        }
        let Some((_, cur)) = self.current else {
            return Ok(None);
        };
        // The current stream is kept out of the heap: while its next event still comes
        // first (the common case, and always with one stream) no heap operation is needed.
        self.current = match self.step(cur)? {
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
        Ok(self.current.map(|(_, s)| s))
    }
}

impl<'a> Iterator for Merger<'a> {
    type Item = Result<Merged<'a>>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        if let Some(e) = self.deferred.pop_front() {
            return Some(Err(e));
        }
        let s = match self.ready.take() {
            Some(s) => s,
            None => match self.pick() {
                Ok(Some(s)) => s,
                Ok(None) => return self.deferred.pop_front().map(Err),
                Err(e) => {
                    self.failed = true;
                    return Some(Err(e));
                }
            },
        };
        if let Some(e) = self.deferred.pop_front() {
            self.ready = Some(s);
            return Some(Err(e));
        }
        let (offset, event) = self.heads.get(s).copied().flatten()?;
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
