//! The logic of `ovnisort`: sorting, in each stream, the events enclosed by `OU[` … `OU]`
//! the way ovni 1.14's `ovnisort` does, and replacing the stream file atomically; and its
//! check mode (`-c`, [`check_stream`]).
//!
//! # The algorithm
//!
//! A stream is walked event by event while a window (ring) of the last `look_back − 1`
//! events is kept. A region opens at an `OU[`; its first event after the `OU[` is the first
//! event that may be out of order (an `OU]` right after the `OU[` makes the region empty:
//! it is only counted). At the `OU]` that closes a non-empty region:
//!
//! 1. `clock0` is the lowest clock (unsigned) of the region's events (from the first one
//!    after `OU[` up to the `OU]`, excluded);
//! 2. the window is searched from its newest event backwards for the first event whose
//!    clock is below `clock0`; if none is found and the window never dropped an event, the
//!    stream's first event is taken instead; otherwise the region cannot be sorted
//!    ([`SortProblem::NoDestination`]);
//! 3. every event from that event up to the `OU]` (excluded) is sorted by clock, compared as
//!    signed 64-bit values, keeping the order of events with equal clocks (the original's
//!    `qsort` is glibc's merge sort, which keeps it too), and written back in place;
//! 4. the window is checked to be sorted again, with clocks compared unsigned
//!    ([`SortProblem::WindowNotSorted`] when clocks of 2⁶³ and above make the two orders
//!    differ).
//!
//! Regions left open at the end of the stream are not sorted. The same stream bytes result
//! as with the original.
//!
//! # Crash safety
//!
//! The original rewrites the regions in the mapped file with `pwrite`, so a sort interrupted
//! mid-write leaves a stream with a half-written region. Here each stream is sorted in
//! memory and, only if its bytes changed, written to a new file in the stream's directory,
//! synced and renamed over `stream.obs`, and the directory is synced: at any instant the
//! stream is either as it was or sorted. A stream that cannot be sorted is left as it was
//! (the original keeps the regions it sorted before the failing one).

use std::collections::VecDeque;
use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::{chain_text, Error, Result, StreamProblem};
use crate::raw::{self, STREAM_HEADER_SIZE};
use crate::read::Stream;

/// The window size of `ovnisort` when `-n` is not given.
pub const DEFAULT_LOOK_BACK: usize = 1_000_000;

/// What sorting one stream did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SortReport {
    /// Regions with events that were sorted.
    pub regions: u64,
    /// Regions with no event between `OU[` and `OU]`.
    pub empty_regions: u64,
    /// True if the stream's bytes changed (and its file was replaced).
    pub changed: bool,
}

/// Why a stream could not be sorted ([`Error::Sort`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SortProblem {
    /// The stream holds no events (the original cannot step it).
    NoEvents,
    /// No event in the window has a clock below the region's lowest clock, and the window
    /// is full: the destination of the region's events lies further back than `look_back`.
    NoDestination {
        /// Lowest clock of the region.
        clock: u64,
        /// Events searched (the window's length).
        searched: u64,
        /// Clock of the oldest event searched (0 if none).
        oldest_clock: u64,
        /// Byte offset of the region's first event.
        offset: u64,
    },
    /// After sorting a region by signed clock, the window is not sorted by unsigned clock.
    WindowNotSorted {
        /// Position in the original's ring buffer (event number modulo `look_back`).
        index: u64,
        /// Clock of the event before.
        prev: u64,
        /// The lower clock.
        clock: u64,
    },
}

impl fmt::Display for SortProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::NoEvents => write!(f, "stream has no events"),
            Self::NoDestination {
                clock,
                searched,
                oldest_clock,
                offset,
            } => write!(
                f,
                "cannot sort the region at offset {offset}: no event before clock {clock} \
                 among the last {searched} events (oldest clock {oldest_clock}); \
                 a larger look back (-n) may help"
            ),
            Self::WindowNotSorted { index, prev, clock } => write!(
                f,
                "events not sorted after sorting a region (ring index {index}: clock {prev} \
                 then {clock}); clocks of 2^63 and above sort differently signed and unsigned"
            ),
        }
    }
}

/// The lines ovni 1.14's `ovnisort` prints (after `ovnisort: `) when sorting the stream
/// `relpath` fails with `err` ([`sort_stream`]): `ERROR: <function>: <text>`, or `FATAL: …`
/// where the original aborts ([`SortProblem::WindowNotSorted`]). Errors the original has no
/// words for (I/O while replacing the file) are given in this crate's words.
pub fn c_error_lines(err: &Error, relpath: &str) -> Vec<String> {
    let step_failed = |what: String| {
        vec![
            format!("ERROR: stream_step: {what}"),
            "ERROR: stream_winsort: stream_step failed".to_string(),
            format!("ERROR: process_trace: sort stream {relpath} failed"),
        ]
    };
    let mut lines = match err {
        Error::Sort {
            problem: SortProblem::NoEvents,
            ..
        } => return step_failed("stream is inactive, cannot step".to_string()),
        Error::Stream {
            problem: StreamProblem::IncompleteEvent { .. },
            ..
        } => return step_failed(format!("stream '{relpath}' ends with incomplete event")),
        Error::Sort {
            problem: SortProblem::WindowNotSorted { index, prev, clock },
            ..
        } => {
            return vec![format!(
                "FATAL: ring_check: ring not sorted at i={index}, last_clock={prev} clock={clock}"
            )]
        }
        Error::Sort {
            problem:
                SortProblem::NoDestination {
                    clock,
                    searched,
                    oldest_clock,
                    ..
                },
            ..
        } => vec![
            format!("ERROR: find_destination: cannot find a event previous to clock {clock}"),
            format!("ERROR: find_destination: nback={searched}, last_clock={oldest_clock}"),
            format!(
                "ERROR: execute_sort_plan: cannot find destination for region starting at clock {}",
                *clock as i64
            ),
            "ERROR: execute_sort_plan: consider increasing the look back size with -n".to_string(),
            format!("ERROR: stream_winsort: sort failed for stream {relpath}"),
        ],
        other => vec![format!("ERROR: {}", chain_text(other))],
    };
    lines.push(format!(
        "ERROR: process_trace: sort stream {relpath} failed"
    ));
    lines
}

/// A clock lower than the clock before it in the same stream ([`check_stream`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BackwardsJump {
    /// Byte offset of the event with the lower clock.
    pub offset: u64,
    /// The clock before.
    pub prev: u64,
    /// The lower clock.
    pub clock: u64,
}

impl BackwardsJump {
    /// The line ovni 1.14's `ovnisort -c` prints for it in the stream `relpath` (clocks
    /// printed signed, as the original does).
    pub fn c_line(&self, relpath: &str) -> String {
        format!(
            "stream_check: backwards jump in time {} -> {} for stream {relpath}",
            self.prev as i64, self.clock as i64
        )
    }
}

/// `ovnisort -c` on one stream: calls `on_jump` for every event whose clock is lower than the
/// clock before it (compared unsigned, as the original does) and returns whether there was
/// none. A stream without events ([`SortProblem::NoEvents`]) or with a cut event is an error.
pub fn check_stream(stream: &Stream, mut on_jump: impl FnMut(BackwardsJump)) -> Result<bool> {
    if stream.is_empty() {
        return Err(Error::Sort {
            stream: stream.name(),
            problem: SortProblem::NoEvents,
        });
    }
    let mut prev: Option<u64> = None;
    let mut sorted = true;
    for ev in stream.events() {
        let (offset, ev) = ev?;
        if let Some(p) = prev.filter(|&p| ev.clock < p) {
            sorted = false;
            on_jump(BackwardsJump {
                offset,
                prev: p,
                clock: ev.clock,
            });
        }
        prev = Some(ev.clock);
    }
    Ok(sorted)
}

/// The lines ovni 1.14's `ovnisort -c` prints (after `ovnisort: ERROR: `) when
/// [`check_stream`] fails with `err` on the stream `relpath`.
pub fn c_check_error_lines(err: &Error, relpath: &str) -> Vec<String> {
    let first = match err {
        Error::Sort {
            problem: SortProblem::NoEvents,
            ..
        } => "stream_step: stream is inactive, cannot step".to_string(),
        Error::Stream {
            problem: StreamProblem::IncompleteEvent { .. },
            ..
        } => format!("stream_step: stream '{relpath}' ends with incomplete event"),
        other => chain_text(other),
    };
    vec![first, "stream_check: stream_step failed".to_string()]
}

/// Sorts the regions of `stream` with a window of `look_back` events and, if its bytes
/// changed, replaces its `stream.obs` atomically (see the module documentation).
pub fn sort_stream(stream: &Stream, look_back: usize) -> Result<SortReport> {
    let mut bytes = stream.bytes().to_vec();
    let mut report = sort_events(&mut bytes, look_back, stream.obs_path(), &stream.name())?;
    if bytes != stream.bytes() {
        replace_file(stream.obs_path(), &bytes)?;
        report.changed = true;
    }
    Ok(report)
}

/// Sorts the regions of the stream file image `bytes` (header included) in place.
/// `path` and `relpath` only name the stream in errors. `look_back` must be at least 1;
/// with 1 no region can be sorted, as in the original.
pub fn sort_events(
    bytes: &mut [u8],
    look_back: usize,
    path: &Path,
    relpath: &str,
) -> Result<SortReport> {
    let sort_error = |problem| Error::Sort {
        stream: relpath.to_string(),
        problem,
    };
    if bytes.len() <= STREAM_HEADER_SIZE {
        return Err(sort_error(SortProblem::NoEvents));
    }
    let mut window = Window::new(look_back);
    let mut report = SortReport::default();
    let mut state = Region::Outside;
    let mut pos = STREAM_HEADER_SIZE;
    while pos < bytes.len() {
        let (mcv, size) = event_at(bytes, pos, path)?;
        state = match (state, &mcv.0) {
            (Region::Outside, b"OU[") => Region::Opened,
            (Region::Opened, b"OU]") => {
                report.empty_regions += 1;
                Region::Outside
            }
            (Region::Opened, _) => Region::Unsorted { first: pos },
            (Region::Unsorted { first }, b"OU]") => {
                sort_region(bytes, &mut window, first, pos, path).map_err(|e| match e {
                    RegionError::Problem(p) => sort_error(p),
                    RegionError::Malformed(e) => e,
                })?;
                report.regions += 1;
                Region::Outside
            }
            (s, _) => s,
        };
        window.push(pos);
        pos += size;
    }
    Ok(report)
}

/// Where the walk is with respect to `OU[` … `OU]`.
#[derive(Debug, Clone, Copy)]
enum Region {
    Outside,
    /// Just after an `OU[`.
    Opened,
    /// Inside a region whose first event is at `first`.
    Unsorted {
        first: usize,
    },
}

enum RegionError {
    Problem(SortProblem),
    Malformed(Error),
}

impl From<Error> for RegionError {
    fn from(e: Error) -> Self {
        Self::Malformed(e)
    }
}

/// The original's ring buffer of `size` slots, which holds at most `size − 1` events.
/// Only the events actually held are allocated.
struct Window {
    size: usize,
    /// Offsets of the events, oldest first.
    offsets: VecDeque<usize>,
    /// Events pushed so far: the ring position of the newest is `(pushed − 1) mod size`.
    pushed: u64,
}

impl Window {
    fn new(size: usize) -> Self {
        Self {
            size,
            offsets: VecDeque::new(),
            pushed: 0,
        }
    }

    fn capacity(&self) -> usize {
        self.size.saturating_sub(1)
    }

    fn push(&mut self, offset: usize) {
        self.pushed += 1;
        if self.capacity() == 0 {
            return;
        }
        if self.offsets.len() == self.capacity() {
            self.offsets.pop_front();
        }
        self.offsets.push_back(offset);
    }

    /// Ring position (in the original's buffer) of the event at `i` (0 = oldest held).
    fn ring_index(&self, i: usize) -> u64 {
        let oldest = self.pushed - self.offsets.len() as u64;
        (oldest + i as u64) % self.size.max(1) as u64
    }
}

/// Sorts the events from the destination found in `window` up to `end` (the `OU]`).
fn sort_region(
    bytes: &mut [u8],
    window: &mut Window,
    first: usize,
    end: usize,
    path: &Path,
) -> std::result::Result<(), RegionError> {
    let mut clock0 = clock_at(bytes, first);
    let mut pos = first;
    while pos < end {
        clock0 = clock0.min(clock_at(bytes, pos));
        pos += event_at(bytes, pos, path)?.1;
    }
    let start = find_destination(bytes, window, clock0).ok_or_else(|| {
        let oldest_clock = window
            .offsets
            .front()
            .map_or(0, |&off| clock_at(bytes, off));
        RegionError::Problem(SortProblem::NoDestination {
            clock: clock0,
            searched: window.offsets.len() as u64,
            oldest_clock,
            offset: first as u64,
        })
    })?;
    let from = window.offsets[start];

    // (signed clock, offset, size) of every event to sort.
    let mut events = Vec::with_capacity(window.offsets.len() - start);
    let mut pos = from;
    while pos < end {
        let size = event_at(bytes, pos, path)?.1;
        events.push((clock_at(bytes, pos) as i64, pos, size));
        pos += size;
    }
    events.sort_by_key(|&(clock, _, _)| clock);
    let mut sorted = Vec::with_capacity(end - from);
    for &(_, off, size) in &events {
        sorted.extend_from_slice(&bytes[off..off + size]);
    }
    bytes[from..end].copy_from_slice(&sorted);

    // The window held exactly the events from `from` to `end`: point it at their new places.
    let mut off = from;
    for (slot, &(_, _, size)) in window.offsets.iter_mut().skip(start).zip(&events) {
        *slot = off;
        off += size;
    }
    let mut prev = 0;
    for i in start..window.offsets.len() {
        let clock = clock_at(bytes, window.offsets[i]);
        if clock < prev {
            return Err(RegionError::Problem(SortProblem::WindowNotSorted {
                index: window.ring_index(i),
                prev,
                clock,
            }));
        }
        prev = clock;
    }
    Ok(())
}

/// The window position of the newest event with a clock below `clock`, or of the stream's
/// first event if there is none and the window never dropped an event.
fn find_destination(bytes: &[u8], window: &Window, clock: u64) -> Option<usize> {
    let found = (0..window.offsets.len())
        .rev()
        .find(|&i| clock_at(bytes, window.offsets[i]) < clock);
    match found {
        Some(i) => Some(i),
        None if !window.offsets.is_empty() && window.offsets.len() < window.capacity() => Some(0),
        None => None,
    }
}

/// MCV and size of the event at `pos`, which the walk has not necessarily decoded yet.
fn event_at(bytes: &[u8], pos: usize, path: &Path) -> Result<(raw::Mcv, usize)> {
    let rest = bytes.get(pos..).unwrap_or_default();
    raw::decode_event(rest)
        .map(|(ev, size)| (ev.mcv, size))
        .map_err(|problem: StreamProblem| Error::Stream {
            path: path.to_path_buf(),
            offset: pos as u64,
            problem,
        })
}

/// Clock of an event already decoded at `pos` (so its 12-byte header is there).
fn clock_at(bytes: &[u8], pos: usize) -> u64 {
    let field = bytes
        .get(pos + 4..pos + 12)
        .and_then(|b| <[u8; 8]>::try_from(b).ok())
        .unwrap_or_default();
    u64::from_le_bytes(field)
}

/// Replaces `path` with `contents`: a new file in the same directory (with the old file's
/// permissions), synced, renamed over `path`, then the directory synced.
pub(crate) fn replace_file(path: &Path, contents: &[u8]) -> Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let write = || -> std::io::Result<()> {
        let create = || OpenOptions::new().write(true).create_new(true).open(&tmp);
        let mut f = match create() {
            // Left by a run with the same process id that was interrupted: never read.
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                fs::remove_file(&tmp)?;
                create()?
            }
            other => other?,
        };
        if let Ok(meta) = fs::metadata(path) {
            f.set_permissions(meta.permissions())?;
        }
        f.write_all(contents)?;
        f.sync_all()
    };
    if let Err(e) = write() {
        let _ = fs::remove_file(&tmp);
        return Err(Error::io(&tmp, e));
    }
    if let Err(e) = fs::rename(&tmp, path) {
        let _ = fs::remove_file(&tmp);
        return Err(Error::io(path, e));
    }
    File::open(&dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| Error::io(&dir, e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::raw::{encode_normal, stream_header, Mcv};

    fn stream(events: &[(&[u8; 3], u64, &[u8])]) -> Vec<u8> {
        let mut v = stream_header().to_vec();
        for &(mcv, clock, payload) in events {
            encode_normal(&mut v, Mcv(*mcv), clock, payload).unwrap();
        }
        v
    }

    fn sort(bytes: &mut [u8], look_back: usize) -> Result<SortReport> {
        sort_events(bytes, look_back, Path::new("s/stream.obs"), "s")
    }

    #[test]
    fn equal_clocks_keep_their_order() {
        let mut bytes = stream(&[
            (b"OHx", 1, &[]),
            (b"OU[", 50, &[]),
            (b"OB.", 20, &[1, 1]),
            (b"OB.", 10, &[]),
            (b"OB.", 20, &[2, 2]),
            (b"OB.", 10, &[3, 3]),
            (b"OU]", 60, &[]),
        ]);
        let report = sort(&mut bytes, 100).unwrap();
        assert_eq!(report.regions, 1);
        let want = stream(&[
            (b"OHx", 1, &[]),
            (b"OB.", 10, &[]),
            (b"OB.", 10, &[3, 3]),
            (b"OB.", 20, &[1, 1]),
            (b"OB.", 20, &[2, 2]),
            (b"OU[", 50, &[]),
            (b"OU]", 60, &[]),
        ]);
        assert_eq!(bytes, want);
    }

    #[test]
    fn clocks_above_2_63_sort_signed_and_are_then_found_unsorted() {
        const TOP: u64 = 1 << 63;
        // Signed, 2^63 is the lowest clock: it moves first and the window is then out of
        // order for the unsigned check, where the original aborts.
        let mut bytes = stream(&[
            (b"OHx", 1, &[]),
            (b"OU[", 50, &[]),
            (b"OB.", TOP, &[]),
            (b"OB.", 10, &[]),
            (b"OU]", 60, &[]),
        ]);
        let err = sort(&mut bytes, 100).unwrap_err();
        assert!(
            matches!(
                err,
                Error::Sort {
                    problem: SortProblem::WindowNotSorted {
                        index: 1,
                        prev: TOP,
                        clock: 1
                    },
                    ..
                }
            ),
            "{err:?}"
        );
    }

    #[test]
    fn regions_left_open_and_unmatched_ends_are_not_sorted() {
        let events: &[(&[u8; 3], u64, &[u8])] = &[
            (b"OHx", 5, &[]),
            (b"OU]", 4, &[]),
            (b"OB.", 3, &[]),
            (b"OU[", 2, &[]),
            (b"OB.", 1, &[]),
        ];
        let mut bytes = stream(events);
        let report = sort(&mut bytes, 100).unwrap();
        assert_eq!(report, SortReport::default());
        assert_eq!(bytes, stream(events));
    }

    #[test]
    fn a_look_back_of_one_sorts_nothing() {
        let mut bytes = stream(&[(b"OU[", 50, &[]), (b"OB.", 10, &[]), (b"OU]", 60, &[])]);
        let err = sort(&mut bytes, 1).unwrap_err();
        assert!(matches!(
            err,
            Error::Sort {
                problem: SortProblem::NoDestination {
                    clock: 10,
                    searched: 0,
                    oldest_clock: 0,
                    offset: 20
                },
                ..
            }
        ));
    }

    #[test]
    fn replacing_a_file_removes_a_stale_temporary_and_leaves_symlink_targets_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("stream.obs");
        let stale = dir
            .path()
            .join(format!(".stream.obs.{}.tmp", std::process::id()));
        fs::write(&stale, b"stale").unwrap();
        let target = dir.path().join("elsewhere");
        fs::write(&target, b"kept").unwrap();
        std::os::unix::fs::symlink(&target, &path).unwrap();
        replace_file(&path, b"sorted").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"sorted");
        assert!(!fs::symlink_metadata(&path)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(fs::read(&target).unwrap(), b"kept");
        assert!(!stale.exists());
    }

    #[test]
    fn a_cut_event_is_reported_with_its_offset() {
        let mut bytes = stream(&[(b"OU[", 50, &[])]);
        bytes.extend_from_slice(&[0, b'O', b'B']);
        let err = sort(&mut bytes, 100).unwrap_err();
        assert!(
            matches!(
                err,
                Error::Stream {
                    offset: 20,
                    problem: StreamProblem::IncompleteEvent { .. },
                    ..
                }
            ),
            "{err:?}"
        );
    }
}
