//! L2's partner copy streamed while the rank's file is written: the file's bytes go to the
//! right partner in pieces as the writer puts them in the file, and the left partner's pieces
//! are written into the copy meanwhile, so the copy's disk writes overlap the writer's hashing.
//!
//! The writer runs in a thread of its own and writes through a [`Tee`], which keeps the
//! *front*, the end of the highest write so far. The calling thread, the only one to use the
//! communicator, makes a fixed number of rounds agreed by the group beforehand: round `i`
//! waits until the front passes the end of the file's `i`-th piece, reads it back (page cache)
//! and exchanges it with the partners; the last round, once the write is over, carries
//! whether it succeeded and every write that landed behind the front (the meta data and the
//! file block, written last), which the partner applies on top. The copy is then the same
//! bytes as the file. Nothing here publishes: the copy's data are flushed early
//! ([`ftiff::Sink::data_written`]) while the writer finishes, and the copy is published with
//! the rank's file ([`crate::files::publish_all`]), which syncs both first.

use std::sync::{Condvar, Mutex, MutexGuard};

use crate::collective::{group_gather_u64, OpenFile};
use crate::comm::Comm;
use crate::error::{Error, Result};
use crate::schedule::Team;
use crate::storage::StorageFile;

use super::l2::PartnerPlan;

/// The pieces of the file sent in one round. Smaller than a plain transfer's messages: the
/// last piece can only go once the whole data is written, and it is what the stream lags.
pub(crate) const PIECE: u64 = 4 << 20;

/// The partners of this rank and the sizes of the files to be written (`own_fs` here, the
/// group's others gathered), for a stream of [`PIECE`]s (collective in the group). Its
/// `rounds` are the data rounds of the group's largest file; the stream adds one.
pub(crate) fn plan(team: Team<'_>, own_fs: u64) -> Result<PartnerPlan> {
    let place = team.place()?;
    let sizes = group_gather_u64(team.comm, place, own_fs);
    let k = place.group.len();
    Ok(PartnerPlan {
        left: place.left(),
        right: place.right(),
        own_fs,
        left_fs: sizes[(place.group_rank as usize + k - 1) % k],
        rounds: sizes.iter().map(|s| s.div_ceil(PIECE)).max().unwrap_or(0),
    })
}

/// Runs `write` (the rank's file, into the sink it is given) in a thread of its own while
/// sending what it writes to the right partner and writing the left partner's file into
/// `copy` (collective over the pair: every rank makes `plan.rounds + 1` exchanges, also when
/// its write fails). Returns the write's outcome and the copy's.
pub(crate) fn write_streamed<T: Send>(
    comm: &dyn Comm,
    plan: &PartnerPlan,
    own: OpenFile<'_>,
    copy: OpenFile<'_>,
    write: impl FnOnce(&dyn ftiff::Sink) -> Result<T> + Send,
) -> (Result<T>, Result<()>) {
    let tee = Tee::new(own.0);
    std::thread::scope(|s| {
        let tee = &tee;
        let writer = s.spawn(move || {
            // Marks the write over even if it panics, so that the rounds never wait forever.
            let over = Over(tee);
            let written = write(tee);
            over.0.finish(written.is_ok());
            written
        });
        let copied = exchange_rounds(comm, plan, tee, own, copy);
        let written = writer
            .join()
            .unwrap_or_else(|e| std::panic::resume_unwind(e));
        (written, copied)
    })
}

/// The rounds of [`write_streamed`] on the calling thread. A local error is returned after the
/// last round, never in the middle, so that the partners' exchanges still match.
fn exchange_rounds(
    comm: &dyn Comm,
    plan: &PartnerPlan,
    tee: &Tee<'_>,
    (own, own_path): OpenFile<'_>,
    (copy, copy_path): OpenFile<'_>,
) -> Result<()> {
    let mut buf = vec![0u8; plan.own_fs.min(PIECE) as usize];
    let mut first_error = None;
    for round in 0..plan.rounds {
        let at = round * PIECE;
        let mut n = plan.own_fs.saturating_sub(at).min(PIECE) as usize;
        if !tee.wait_for(at + n as u64) {
            // The write failed: the last round says so; until then, empty pieces.
            n = 0;
        } else if let Err(e) = own.read_exact_at(&mut buf[..n], at) {
            first_error.get_or_insert(Error::io(own_path, e));
        }
        let got = comm.exchange(plan.right, &buf[..n], plan.left);
        let want = plan.left_fs.saturating_sub(at).min(PIECE) as usize;
        if got.len() != want {
            first_error.get_or_insert(Error::Transfer {
                from: plan.left,
                offset: at,
                got: got.len() as u64,
                expected: want as u64,
            });
        } else if let Err(e) = copy.write_all_at(&got, at) {
            first_error.get_or_insert(Error::io(copy_path, e));
        }
    }
    // The copy's data go to disk while this rank's writer finishes its checksum (the last
    // round waits for it); publishing syncs the copy again, with what is left.
    if first_error.is_none() {
        if let Err(e) = copy.data_written() {
            first_error = Some(Error::io(copy_path, e));
        }
    }
    let last = tee.behind_front();
    let got = comm.exchange(plan.right, &last, plan.left);
    let applied = apply_last(copy, &got, plan.left_fs)
        .map_err(|e| e.map_or(Error::OwnFileUnreadable, |e| Error::io(copy_path, e)));
    match first_error {
        Some(e) => Err(e),
        None => applied,
    }
}

/// Applies the last round's message to the copy and cuts it at the partner's file size.
/// `Err(None)`: the partner's write failed (or the message is malformed).
fn apply_last(
    copy: &dyn StorageFile,
    msg: &[u8],
    fs: u64,
) -> std::result::Result<(), Option<std::io::Error>> {
    let (&ok, mut rest) = msg.split_first().ok_or(None)?;
    if ok != 1 {
        return Err(None);
    }
    while !rest.is_empty() {
        let head = rest.get(..16).ok_or(None)?;
        let at = u64::from_le_bytes(head[..8].try_into().map_err(|_| None)?);
        let len = u64::from_le_bytes(head[8..].try_into().map_err(|_| None)?) as usize;
        let bytes = rest.get(16..16 + len).ok_or(None)?;
        copy.write_all_at(bytes, at).map_err(Some)?;
        rest = &rest[16 + len..];
    }
    copy.set_len(fs).map_err(Some)
}

/// The writer's sink: writes go to the file, and the stream learns how far they reached.
struct Tee<'a> {
    file: &'a dyn StorageFile,
    state: Mutex<TeeState>,
    moved: Condvar,
}

#[derive(Default)]
struct TeeState {
    /// The end of the highest write so far: every round below it was written, or will be
    /// written again in `behind`.
    front: u64,
    /// Writes that started behind the front, in order: offset and bytes.
    behind: Vec<(u64, Vec<u8>)>,
    /// The write is over: `Some(true)` done, `Some(false)` failed.
    over: Option<bool>,
}

/// Marks the write over (failed, unless the writer said otherwise first) when dropped.
struct Over<'t, 'a>(&'t Tee<'a>);

impl Drop for Over<'_, '_> {
    fn drop(&mut self) {
        self.0.finish(false);
    }
}

impl<'a> Tee<'a> {
    fn new(file: &'a dyn StorageFile) -> Self {
        Tee {
            file,
            state: Mutex::new(TeeState::default()),
            moved: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, TeeState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The write is over (the first call decides how).
    fn finish(&self, ok: bool) {
        let mut state = self.lock();
        state.over.get_or_insert(ok);
        self.moved.notify_all();
    }

    /// Waits until the bytes below `end` are written (true), or the write failed (false).
    fn wait_for(&self, end: u64) -> bool {
        let mut state = self.lock();
        loop {
            match state.over {
                Some(ok) => return ok,
                None if state.front >= end => return true,
                None => state = self.moved.wait(state).unwrap_or_else(|e| e.into_inner()),
            }
        }
    }

    /// Once the write is over, the last round's message: 1 and the writes behind the front
    /// (offset, length, bytes), or 0 if the write failed.
    fn behind_front(&self) -> Vec<u8> {
        let mut state = self.lock();
        while state.over.is_none() {
            state = self.moved.wait(state).unwrap_or_else(|e| e.into_inner());
        }
        if state.over != Some(true) {
            return vec![0];
        }
        let len = state
            .behind
            .iter()
            .map(|(_, b)| 16 + b.len())
            .sum::<usize>();
        let mut msg = Vec::with_capacity(1 + len);
        msg.push(1);
        for (at, bytes) in &state.behind {
            msg.extend_from_slice(&at.to_le_bytes());
            msg.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
            msg.extend_from_slice(bytes);
        }
        msg
    }
}

impl ftiff::Sink for Tee<'_> {
    fn write_all_at(&self, buf: &[u8], offset: u64) -> std::io::Result<()> {
        // The file is written under the lock, so that the writes kept behind the front are in
        // the order they reached the file.
        let mut state = self.lock();
        self.file.write_all_at(buf, offset)?;
        if offset < state.front {
            state.behind.push((offset, buf.to_vec()));
        } else {
            state.front = offset + buf.len() as u64;
            self.moved.notify_all();
        }
        Ok(())
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
        self.file.read_exact_at(buf, offset)
    }

    fn set_len(&self, len: u64) -> std::io::Result<()> {
        // The copy is cut at the size the plan gave; a longer file would not match its ptFs.
        self.file.set_len(len)
    }

    fn data_written(&self) -> std::io::Result<()> {
        self.file.data_written()
    }
}

#[cfg(test)]
#[path = "l2_stream_tests.rs"]
mod tests;
