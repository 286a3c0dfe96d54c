//! The Paraver trace (`.prv`): a header whose duration is patched at close, then one line
//! per channel change, `2:0:1:1:<row>:<time>:<type>:<value>`.
//!
//! The emulating thread only stores each record as 16 bytes (time; value, row and type slot
//! packed, see [`Rec`]) in a batch. Full batches go to a [`Writer`] thread (one for both
//! files), which formats the lines by hand (`fmt` would dominate) into a buffer per file and
//! writes it, so that formatting and copying into the files overlap with the emulation; at
//! most [`BUFFERS`] batches per file exist at once. When the writer falls behind, the
//! emulating thread formats full batches itself (the writer only writes their text, in
//! order) instead of waiting for an emptied one.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;

use crate::error::{Error, Result};

mod format;
pub(crate) use format::header;
use format::*;

/// Bytes of text the writer thread buffers before writing them (64 KiB writes cost ~8% more
/// CPU in all than 256 KiB ones).
pub(super) const FLUSH_AT: usize = 1 << 18;
/// Batches per file: the one being filled and those queued or being formatted. Few, so that
/// the batches the emulating thread fills stay in the cache (its stores into them were its
/// hottest instructions with 8 batches of 16384 records per file).
const BUFFERS: usize = 4;
/// The emulating thread formats a full batch itself, instead of waiting for the writer thread
/// to return an emptied one, while fewer than this many jobs are queued: when the writer is
/// the slower of the two, the work is shared and both cores stay busy.
const HELP_JOBS: usize = 12;
/// Bytes of text of a whole batch formatted at once (every record fits in [`MAX_LINE`]).
const TEXT_LEN: usize = BATCH * MAX_LINE;
/// A sleeping writer thread is woken once this many batches (of all its files) wait for it, or
/// when the emulating thread needs an emptied batch back. A wake-up is a system call and an
/// interrupt to the other core, several microseconds of the emulating thread's time: woken at
/// every batch, the two writer threads of earlier versions cost it ~6% of its time.
const WAKE_AT: usize = 3;

/// One `.prv` file being written.
#[derive(Debug)]
pub(crate) struct Prv {
    path: PathBuf,
    /// Raw type of every slot registered with [`Prv::type_slot`], and its `<type>:` field.
    ty_text: Vec<(u32, Field<16>)>,
    /// Slots whose fields the writer thread has.
    types_sent: usize,
    /// The batch being filled: always [`BATCH`] records long, records in `recs[..len]`.
    recs: Vec<Rec>,
    len: usize,
    rows: usize,
    /// Time of the current event (the duration written in the header at close).
    time: i64,
    /// The writer thread's queue, and this file's index in it.
    handoff: Arc<Handoff>,
    index: usize,
    /// Batches in existence (at most [`BUFFERS`]).
    buffers: usize,
    /// Formats a batch here when the writer thread is behind (made at the first need).
    helper: Option<Formatter>,
    /// The first write error; records after it are dropped.
    error: Option<Error>,
}

impl std::fmt::Debug for Batch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Batch").field("len", &self.len).finish()
    }
}

/// What a writer thread is asked to do, in order.
#[derive(Debug)]
enum Job {
    /// Write file `index` (the next index), of `rows` rows.
    Open(File, usize),
    /// Format and write a batch of file `index`.
    Batch(usize, Batch),
    /// Write `text[..len]` to file `index` (a batch the emulating thread formatted itself),
    /// and take the `<type>:` fields if given.
    Text {
        index: usize,
        text: Vec<u8>,
        len: usize,
        types: Option<Vec<Field<16>>>,
    },
    /// Write what is left of file `index` and give it back.
    Close(usize),
}

/// The jobs between the emulating thread and a writer thread.
#[derive(Debug, Default)]
struct Handoff {
    queue: Mutex<Queue>,
    /// Signalled when batches wait for the writer or a file is closed.
    to_writer: Condvar,
    /// Signalled when the writer returns an emptied batch, gives a file back or stops.
    to_emulator: Condvar,
}

#[derive(Debug, Default)]
struct Queue {
    jobs: VecDeque<Job>,
    /// Batch jobs in `jobs`.
    batches: usize,
    /// Files opened.
    files: usize,
    /// Emptied batches of each file, to be filled again.
    empty: Vec<Vec<Vec<Rec>>>,
    /// Written texts of each file, to be filled again.
    texts: Vec<Vec<Vec<u8>>>,
    /// Each closed file once its text is written (or the first error writing it).
    closed: Vec<Option<io::Result<File>>>,
    writer_waits: bool,
    emulator_waits: bool,
    /// No more jobs will come.
    done: bool,
    /// The writer thread ended.
    stopped: bool,
}

impl Handoff {
    /// The queue, even if the other thread panicked while holding it (its state stays
    /// consistent: every change is a single push, pop or flag).
    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn wait_emulator<'a>(&self, mut q: MutexGuard<'a, Queue>) -> MutexGuard<'a, Queue> {
        q.emulator_waits = true;
        let mut q = self
            .to_emulator
            .wait(q)
            .unwrap_or_else(PoisonError::into_inner);
        q.emulator_waits = false;
        q
    }
}

/// Marks the writer thread as stopped when it ends, however it ends, so that the emulating
/// thread never waits for it in vain.
struct StopGuard<'h>(&'h Handoff);

impl Drop for StopGuard<'_> {
    fn drop(&mut self) {
        self.0.lock().stopped = true;
        self.0.to_emulator.notify_one();
    }
}

/// A writer thread: formats the batches of the files opened on it and writes them.
#[derive(Debug)]
pub(crate) struct Writer {
    handoff: Arc<Handoff>,
    thread: Option<JoinHandle<()>>,
}

impl Writer {
    pub(crate) fn new() -> io::Result<Self> {
        let mut w = Self::paused();
        w.start()?;
        Ok(w)
    }

    /// A writer whose thread is not started yet: jobs queue up until [`Writer::start`].
    fn paused() -> Self {
        Self {
            handoff: Arc::new(Handoff::default()),
            thread: None,
        }
    }

    fn start(&mut self) -> io::Result<()> {
        let h = Arc::clone(&self.handoff);
        let thread = std::thread::Builder::new()
            .name("ovniemu-prv".into())
            .spawn(move || write_loop(&h))?;
        self.thread = Some(thread);
        Ok(())
    }
}

impl Drop for Writer {
    /// Lets the writer thread finish the jobs queued and end.
    fn drop(&mut self) {
        self.handoff.lock().done = true;
        self.handoff.to_writer.notify_one();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A file being written by the writer thread.
struct Out {
    file: File,
    text: Formatter,
    /// The first error writing it.
    result: io::Result<()>,
}

/// The writer thread: runs the jobs in order until there are no more.
fn write_loop(handoff: &Handoff) {
    let _stop = StopGuard(handoff);
    let mut files: Vec<Option<Out>> = Vec::new();
    let mut q = handoff.lock();
    loop {
        match q.jobs.pop_front() {
            Some(Job::Open(file, rows)) => files.push(Some(Out {
                file,
                text: Formatter::new(rows, FLUSH_AT + MAX_LINE),
                result: Ok(()),
            })),
            Some(Job::Text {
                index,
                text,
                len,
                types,
            }) => {
                q.batches -= 1;
                drop(q);
                if let Some(Some(out)) = files.get_mut(index) {
                    if let Some(types) = types {
                        out.text.ty_text = types;
                    }
                    if out.result.is_ok() {
                        // After the text formatted here before it.
                        let before = out.text.buf.get(..out.text.pos).unwrap_or_default();
                        out.result = out
                            .file
                            .write_all(before)
                            .and_then(|()| out.file.write_all(text.get(..len).unwrap_or_default()));
                        out.text.pos = 0;
                    }
                }
                q = handoff.lock();
                if let Some(texts) = q.texts.get_mut(index) {
                    texts.push(text);
                }
                if q.emulator_waits {
                    handoff.to_emulator.notify_one();
                }
            }
            Some(Job::Batch(i, b)) => {
                q.batches -= 1;
                drop(q);
                if let Some(Some(out)) = files.get_mut(i) {
                    if let Some(types) = b.types {
                        out.text.ty_text = types;
                    }
                    if out.result.is_ok() {
                        let recs = b.recs.get(..b.len).unwrap_or_default();
                        out.result = out.text.format(recs, &mut out.file);
                    }
                }
                q = handoff.lock();
                if let Some(empty) = q.empty.get_mut(i) {
                    empty.push(b.recs);
                }
                if q.emulator_waits {
                    handoff.to_emulator.notify_one();
                }
            }
            Some(Job::Close(i)) => {
                drop(q);
                let closed = files.get_mut(i).and_then(Option::take).map(|mut out| {
                    let text = out.text.buf.get(..out.text.pos).unwrap_or_default();
                    out.result
                        .and_then(|()| out.file.write_all(text))
                        .map(|()| out.file)
                });
                q = handoff.lock();
                if let Some(slot) = q.closed.get_mut(i) {
                    *slot = closed;
                }
                if q.emulator_waits {
                    handoff.to_emulator.notify_one();
                }
            }
            None if q.done => break,
            None => {
                q.writer_waits = true;
                q = handoff
                    .to_writer
                    .wait(q)
                    .unwrap_or_else(PoisonError::into_inner);
                q.writer_waits = false;
            }
        }
    }
}

fn new_batch() -> Vec<Rec> {
    vec![Rec::default(); BATCH]
}

impl Prv {
    /// Creates (truncates) the regular file `path`, writes the header with duration 0, and opens it on `writer`.
    pub(crate) fn create(path: &Path, rows: usize, writer: &Writer) -> Result<Self> {
        let mut file = super::output::create_file(path)?;
        file.write_all(header(0, rows).as_bytes())
            .map_err(|e| Error::io(path, e))?;
        let handoff = Arc::clone(&writer.handoff);
        let index = {
            let mut q = handoff.lock();
            let index = q.files;
            q.files += 1;
            q.empty.push(Vec::new());
            q.texts.push(Vec::new());
            q.closed.push(None);
            q.jobs.push_back(Job::Open(file, rows));
            index
        };
        Ok(Self {
            path: path.to_path_buf(),
            ty_text: Vec::new(),
            types_sent: 0,
            recs: new_batch(),
            len: 0,
            rows,
            time: 0,
            handoff,
            index,
            buffers: 1,
            helper: None,
            error: None,
        })
    }

    /// Moves to `time` (never backwards: the caller's clocks are non-decreasing).
    #[inline]
    pub(crate) fn advance(&mut self, time: i64) {
        self.time = time;
    }

    /// True once writing failed (the error is returned by [`Prv::close`]).
    #[inline]
    pub(crate) fn failed(&self) -> bool {
        self.error.is_some()
    }

    /// The slot of record type `ty` for [`Prv::record_keyed`] (registered at the first call).
    pub(crate) fn type_slot(&mut self, ty: u32) -> u16 {
        if let Some(i) = self.ty_text.iter().position(|t| t.0 == ty) {
            return i as u16;
        }
        self.ty_text.push((ty, Field::new(b"", u64::from(ty))));
        (self.ty_text.len() - 1) as u16
    }

    /// Adds one record at the current time, for `row` (0-based) and the type of `slot`.
    #[cfg(test)]
    fn record(&mut self, row: u32, slot: u16, value: i64) {
        self.record_keyed(Self::key(row, slot), row, slot, value);
    }

    /// The key of `row` and `slot` in a record (see [`Rec`]), [`WIDE`] if they do not fit.
    pub(crate) fn key(row: u32, slot: u16) -> u32 {
        if row < KEY_ROWS && slot < KEY_SLOTS {
            row << 8 | u32::from(slot)
        } else {
            WIDE
        }
    }

    /// Adds one record at the current time, for `row` (0-based) and the type of `slot`, whose
    /// key is `key` (from [`Prv::key`], computed once per channel).
    #[inline]
    pub(crate) fn record_keyed(&mut self, key: u32, row: u32, slot: u16, value: i64) {
        let narrow = value as i32;
        if i64::from(narrow) == value && key != WIDE {
            self.push(Rec {
                time: self.time,
                entry: u64::from(key) << 32 | u64::from(narrow as u32),
            });
        } else {
            self.push_wide(row, slot, value);
        }
    }

    #[inline(always)]
    fn push(&mut self, r: Rec) {
        if let Some(slot) = self.recs.get_mut(self.len) {
            *slot = r;
            self.len += 1;
            if self.len < BATCH {
                return;
            }
        }
        self.flush_batch();
    }

    /// A record that needs two (see [`Rec`]), both in the same batch.
    #[cold]
    #[inline(never)]
    fn push_wide(&mut self, row: u32, slot: u16, value: i64) {
        if self.len + 2 > BATCH {
            self.flush_batch();
        }
        self.push(Rec {
            time: self.time,
            entry: u64::from(WIDE) << 32,
        });
        self.push(Rec {
            time: value,
            entry: u64::from(slot) << 32 | u64::from(row),
        });
    }

    /// Hands the batch to the writer thread and continues in an empty one.
    #[cold]
    #[inline(never)]
    fn flush_batch(&mut self) {
        if self.error.is_some() {
            self.len = 0;
            return;
        }
        let types = (self.types_sent != self.ty_text.len()).then(|| {
            self.types_sent = self.ty_text.len();
            self.ty_text.iter().map(|t| t.1).collect()
        });
        let len = std::mem::take(&mut self.len);
        let handoff = Arc::clone(&self.handoff);
        let mut q = handoff.lock();
        let next = loop {
            if q.stopped {
                drop(q);
                self.error = Some(self.writer_stopped());
                return;
            }
            if let Some(b) = q.empty.get_mut(self.index).and_then(Vec::pop) {
                break Some(b);
            }
            if self.buffers < BUFFERS {
                self.buffers += 1;
                break Some(new_batch());
            }
            // Every batch is queued or being formatted: the writer must run, whatever the
            // length of its queue.
            if q.writer_waits {
                handoff.to_writer.notify_one();
            }
            // The writer is behind: rather than wait for it, format this batch here (the
            // queue stays bounded).
            if q.jobs.len() < HELP_JOBS {
                break None;
            }
            q = handoff.wait_emulator(q);
        };
        let job = match next {
            Some(next) => {
                let recs = std::mem::replace(&mut self.recs, next);
                Job::Batch(self.index, Batch { recs, len, types })
            }
            None => {
                let text = q.texts.get_mut(self.index).and_then(Vec::pop);
                drop(q);
                let (text, len) = self.format_here(len, text);
                q = handoff.lock();
                Job::Text {
                    index: self.index,
                    text,
                    len,
                    types,
                }
            }
        };
        q.jobs.push_back(job);
        q.batches += 1;
        if q.writer_waits && q.batches >= WAKE_AT {
            handoff.to_writer.notify_one();
        }
    }

    /// Formats the first `len` records of the batch being filled into `text` (or a new
    /// one); returns the text and its length.
    #[cold]
    #[inline(never)]
    fn format_here(&mut self, len: usize, text: Option<Vec<u8>>) -> (Vec<u8>, usize) {
        let rows = self.rows;
        let f = self
            .helper
            .get_or_insert_with(|| Formatter::new(rows, TEXT_LEN));
        if f.ty_text.len() != self.ty_text.len() {
            f.ty_text = self.ty_text.iter().map(|t| t.1).collect();
        }
        if let Some(text) = text {
            f.buf = text;
        }
        if f.buf.len() < TEXT_LEN {
            f.buf = vec![0; TEXT_LEN];
        }
        f.pos = 0;
        f.format_all(self.recs.get(..len).unwrap_or_default());
        let n = f.pos;
        (std::mem::take(&mut f.buf), n)
    }

    fn writer_stopped(&self) -> Error {
        Error::io(&self.path, io::Error::other("the writer thread stopped"))
    }

    /// Writes the buffered records and patches the header with the final duration.
    pub(crate) fn close(mut self) -> Result<()> {
        if self.len > 0 || self.types_sent != self.ty_text.len() {
            self.flush_batch();
        }
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        let handoff = Arc::clone(&self.handoff);
        let mut q = handoff.lock();
        q.jobs.push_back(Job::Close(self.index));
        handoff.to_writer.notify_one();
        let closed = loop {
            if let Some(c) = q.closed.get_mut(self.index).and_then(Option::take) {
                break c;
            }
            if q.stopped {
                return Err(self.writer_stopped());
            }
            q = handoff.wait_emulator(q);
        };
        drop(q);
        let mut file = closed.map_err(|e| Error::io(&self.path, e))?;
        let h = header(self.time, self.rows);
        let r: io::Result<()> = (|| {
            file.seek(SeekFrom::Start(0))?;
            file.write_all(h.as_bytes())?;
            file.flush()
        })();
        r.map_err(|e| Error::io(&self.path, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_format_like_printf() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.prv");
        let writer = Writer::new().unwrap();
        let mut p = Prv::create(&path, 2, &writer).unwrap();
        let values = [0, 1, -1, 9, 10, 4657, -7, i64::MAX, i64::MIN];
        let h = p.type_slot(101);
        for v in values {
            p.record(1, h, v);
        }
        p.advance(19960);
        let t = p.type_slot(4);
        p.record(0, t, 3);
        assert!(!p.failed());
        p.close().unwrap();
        let mut want = header(19960, 2);
        for v in values {
            want.push_str(&format!("2:0:1:1:2:0:101:{v}\n"));
        }
        want.push_str("2:0:1:1:1:19960:4:3\n");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), want);
        let mut line = [0u8; MAX_LINE];
        assert_eq!(put_u64(&mut line, 0, u64::MAX), 20);
        assert_eq!(put_u64(&mut line[..5], 0, 123_456), 0);
    }

    #[test]
    fn wide_records_format_like_narrow_ones() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.prv");
        let writer = Writer::new().unwrap();
        let mut p = Prv::create(&path, 3, &writer).unwrap();
        // Slots from 255 on do not fit in a key; values beyond 32 bits do not fit either.
        let slots: Vec<u16> = (0..300).map(|ty| p.type_slot(1000 + ty)).collect();
        let mut want = header(7, 3);
        p.advance(7);
        // Enough records to fill batches, so that wide ones straddle a batch's end.
        for i in 0..3 * BATCH as i64 {
            let slot = slots[(i as usize * 7) % slots.len()];
            let value = match i % 3 {
                0 => i,
                1 => i << 33,
                _ => -i - (1 << 31),
            };
            let row = (i % 3) as u32;
            p.record(row, slot, value);
            want.push_str(&format!(
                "2:0:1:1:{}:7:{}:{value}\n",
                row + 1,
                1000 + u32::from(slot)
            ));
        }
        p.close().unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), want);
    }

    #[test]
    fn batches_formatted_here_keep_their_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.prv");
        let mut writer = Writer::paused();
        let mut p = Prv::create(&path, 2, &writer).unwrap();
        let slots = [p.type_slot(5), p.type_slot(6)];
        let mut want = header(0, 2);
        // The writer is not running: the first batches queue up, the next ones (until the
        // queue holds HELP_JOBS jobs) are formatted here, a type registered between them.
        let n = (HELP_JOBS - 2) * BATCH + 10;
        for i in 0..n {
            if i == (BUFFERS + 1) * BATCH + 3 {
                assert_eq!(p.type_slot(7), 2);
            }
            let slot = if i > (BUFFERS + 1) * BATCH + 3 && i % 5 == 0 {
                2
            } else {
                slots[i % 2]
            };
            p.advance(i as i64);
            p.record((i % 2) as u32, slot, i as i64);
            let ty = 5 + u32::from(slot);
            want.push_str(&format!("2:0:1:1:{}:{i}:{ty}:{i}\n", i % 2 + 1));
        }
        writer.start().unwrap();
        let mut p2 = Prv::create(&dir.path().join("u.prv"), 1, &writer).unwrap();
        let ty = p2.type_slot(1);
        p2.record(0, ty, 1);
        p.close().unwrap();
        p2.close().unwrap();
        let want = want.replacen(&header(0, 2), &header(n as i64 - 1, 2), 1);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), want);
    }

    #[test]
    fn digits_match_to_string() {
        let mut vals: Vec<u64> = (0..2000).collect();
        for p in POW10 {
            vals.extend([p - 1, p, p + 1, p.wrapping_mul(7)]);
        }
        vals.push(u64::MAX);
        for v in vals {
            let mut line = [0u8; MAX_LINE];
            let n = put_u64(&mut line, 3, v);
            assert_eq!(&line[3..n], v.to_string().as_bytes(), "{v}");
        }
    }

    #[test]
    fn times_match_to_string() {
        let mut vals: Vec<u64> = (0..2000).chain(99_999_000..100_002_000).collect();
        for p in POW10 {
            vals.extend([p - 1, p, p + 1, p.wrapping_mul(7), p / 3, p / 7 * 6]);
        }
        vals.extend([
            u64::MAX,
            u64::MAX - 1,
            12_345_678_901_234_567,
            1_000_000_007,
        ]);
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..100_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            vals.push(x >> (x % 64));
        }
        for v in vals {
            let mut line = [0u8; MAX_LINE];
            let n = put_time(&mut line, 3, v);
            assert_eq!(&line[3..n], v.to_string().as_bytes(), "{v}");
        }
    }

    #[test]
    fn header_is_fixed_width() {
        assert_eq!(
            header(19960, 3),
            "#Paraver (19/01/38 at 03:14):00000000000000019960_ns:0:1:1(3:1)\n"
        );
        assert_eq!(header(0, 3).len(), header(19960, 3).len());
    }
}
