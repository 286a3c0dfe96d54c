//! What all ranks do together: agree on a step's outcome, gather values, move files between
//! ranks in bounded messages, and agree on the candidates of a restart.
//!
//! Every function here is collective over the run's [`Comm`]: all ranks call it in the same
//! order, and a rank that fails locally still takes part, so that no rank waits forever for
//! one that gave up. What every rank must learn is reduced ([`Comm::all_reduce`]) or
//! broadcast, never gathered from every rank, except to say which ranks failed once a
//! reduction has found that some did; what a group needs is gathered in the group
//! ([`group_gather_u64`]).

use std::path::Path;

use crate::comm::Comm;
use crate::config::Level;
use crate::error::{Error, Result, Step};
use crate::restart_plan::Holds;
use crate::storage::StorageFile;
use crate::topology::Place;

/// A file being sent or received, and its path for errors.
pub(crate) type OpenFile<'a> = (&'a dyn StorageFile, &'a Path);

/// Files travel between ranks in messages of this size (FTI's default `transfer_size`, 16 MB).
pub(crate) const CHUNK: u64 = 16 << 20;

/// Whether `local` succeeded on every rank. A rank that failed returns its own error; the
/// others learn which ranks failed.
pub(crate) fn agree<T>(comm: &dyn Comm, step: Step, local: Result<T>) -> Result<T> {
    if all(comm, local.is_ok()) {
        return local;
    }
    // Some rank failed: which ones is gathered, every rank knowing it must.
    let flags = comm.all_gather(&[u8::from(local.is_ok())]);
    let failed: Vec<u32> = (0..flags.len() as u32)
        .filter(|&r| flags[r as usize].first() != Some(&1))
        .collect();
    match local {
        Err(e) => Err(e),
        Ok(_) if !failed.is_empty() => Err(Error::Ranks { step, failed }),
        ok => ok,
    }
}

/// Whether `mine` is true on every rank.
pub(crate) fn all(comm: &dyn Comm, mine: bool) -> bool {
    comm.all_reduce(&[u8::from(mine)], &|a, b| vec![a[0] & b[0]]) == [1]
}

/// Whether `mine` is true on some rank.
pub(crate) fn any(comm: &dyn Comm, mine: bool) -> bool {
    !all(comm, !mine)
}

fn u64_of(b: &[u8]) -> u64 {
    u64::from_le_bytes(b.get(..8).and_then(|b| b.try_into().ok()).unwrap_or([0; 8]))
}

/// The greatest `x` of any rank.
pub(crate) fn max_u64(comm: &dyn Comm, x: u64) -> u64 {
    let max = |a: &[u8], b: &[u8]| u64_of(a).max(u64_of(b)).to_le_bytes().to_vec();
    u64_of(&comm.all_reduce(&x.to_le_bytes(), &max))
}

/// Rank 0's `x`, on every rank.
pub(crate) fn broadcast_u64(comm: &dyn Comm, x: u64) -> u64 {
    u64_of(&comm.broadcast(&x.to_le_bytes()))
}

/// The `x` of every rank of this rank's group (`place`; every member calls it), in group
/// order: `len - 1` exchanges around the group.
pub(crate) fn group_gather_u64(comm: &dyn Comm, place: &Place, x: u64) -> Vec<u64> {
    let (group, me) = (&place.group, place.group_rank as usize);
    let g = group.len();
    let mut all = vec![0; g];
    all[me] = x;
    for k in 1..g {
        let (to, from) = (group[(me + k) % g], group[(me + g - k) % g]);
        all[(me + g - k) % g] = u64_of(&comm.exchange(to, &x.to_le_bytes(), from));
    }
    all
}

/// Sends `send` (`send_len` bytes) to rank `to` while receiving `recv_len` bytes from rank
/// `from` into `recv`, in [`CHUNK`]-sized exchanges; both sides of every pair make `rounds`
/// exchanges (empty ones when they have nothing left), so each group agrees on `rounds`
/// beforehand. A local read or write error is returned after the last round, never in the
/// middle, so that the partners' exchanges still match.
pub(crate) fn transfer(
    comm: &dyn Comm,
    (to, send, send_len): (u32, Option<OpenFile<'_>>, u64),
    (from, recv, recv_len): (u32, Option<OpenFile<'_>>, u64),
    rounds: u64,
) -> Result<()> {
    // One buffer for every round, filled by the read: no zeroing per message.
    let mut buf = vec![0u8; send.map_or(0, |_| send_len.min(CHUNK) as usize)];
    let mut first_error = None;
    for round in 0..rounds {
        let at = round * CHUNK;
        let mut n = 0;
        if let Some((file, path)) = send {
            n = send_len.saturating_sub(at).min(CHUNK) as usize;
            if let Err(e) = file.read_exact_at(&mut buf[..n], at) {
                first_error.get_or_insert(Error::io(path, e));
            }
        }
        let got = comm.exchange(to, &buf[..n], from);
        if let Some((file, path)) = recv {
            let want = recv_len.saturating_sub(at).min(CHUNK) as usize;
            if got.len() != want {
                first_error.get_or_insert(Error::Transfer {
                    from,
                    offset: at,
                    got: got.len() as u64,
                    expected: want as u64,
                });
            } else if let Err(e) = file.write_all_at(&got, at) {
                first_error.get_or_insert(Error::io(path, e));
            }
        }
    }
    first_error.map_or(Ok(()), Err)
}

/// Rounds of [`transfer`] for files of these sizes.
pub(crate) fn rounds_for(sizes: impl IntoIterator<Item = u64>) -> u64 {
    sizes
        .into_iter()
        .map(|s| s.div_ceil(CHUNK))
        .max()
        .unwrap_or(0)
}

/// Candidate checkpoints of the whole run, newest first (by id, then FTI's level order): every
/// `(id, level)` any rank holds a file or copy of. A reduction by union: its messages are as
/// long as the run's candidates, whatever the number of ranks.
pub(crate) fn candidates(comm: &dyn Comm, mine: &[(i32, Level)]) -> Vec<(i32, Level)> {
    let union = |a: &[u8], b: &[u8]| candidate_bytes(&sorted(decode(a).chain(decode(b))));
    decode(&comm.all_reduce(&candidate_bytes(&sorted(mine.iter().copied())), &union)).collect()
}

fn sorted(all: impl Iterator<Item = (i32, Level)>) -> Vec<(i32, Level)> {
    let mut all: Vec<(i32, Level)> = all.collect();
    all.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    all.dedup();
    all
}

fn candidate_bytes(all: &[(i32, Level)]) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(all.len() * 5);
    for &(id, level) in all {
        bytes.extend_from_slice(&id.to_le_bytes());
        bytes.push(level.number());
    }
    bytes
}

fn decode(bytes: &[u8]) -> impl Iterator<Item = (i32, Level)> + '_ {
    bytes.chunks_exact(5).filter_map(|c| {
        let id = i32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        Level::from_number(i32::from(c[4])).map(|l| (id, l))
    })
}

/// What every rank holds of one candidate.
pub(crate) fn gather_holds(comm: &dyn Comm, mine: Holds) -> Vec<Holds> {
    comm.all_gather(&[u8::from(mine.own), u8::from(mine.copy)])
        .iter()
        .map(|b| Holds {
            own: b.first() == Some(&1),
            copy: b.get(1) == Some(&1),
        })
        .collect()
}

/// Agrees on one string: the greatest any rank proposes (execution ids sort by time).
pub(crate) fn agree_newest(comm: &dyn Comm, mine: Option<&str>) -> Option<String> {
    let max = |a: &[u8], b: &[u8]| a.max(b).to_vec();
    String::from_utf8(comm.all_reduce(mine.unwrap_or("").as_bytes(), &max))
        .ok()
        .filter(|s| !s.is_empty())
}

/// Rank 0's checkpoints `(id, archived)`, on every rank.
pub(crate) fn broadcast_held(comm: &dyn Comm, held: &[(i32, bool)]) -> Vec<(i32, bool)> {
    let mut bytes = Vec::with_capacity(held.len() * 5);
    for &(id, archived) in held {
        bytes.extend_from_slice(&id.to_le_bytes());
        bytes.push(u8::from(archived));
    }
    comm.broadcast(&bytes)
        .chunks_exact(5)
        .map(|c| (i32::from_le_bytes([c[0], c[1], c[2], c[3]]), c[4] == 1))
        .collect()
}
