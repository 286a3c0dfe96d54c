//! What all ranks do together: agree on a step's outcome, gather values, move files between
//! ranks in bounded messages, and agree on the candidates of a restart.
//!
//! Every function here is collective over the run's [`Comm`]: all ranks call it in the same
//! order, and a rank that fails locally still takes part, so that no rank waits forever for
//! one that gave up.

use std::path::Path;

use crate::comm::Comm;
use crate::config::Level;
use crate::error::{Error, Result, Step};
use crate::restart_plan::Holds;
use crate::storage::StorageFile;

/// A file being sent or received, and its path for errors.
pub(crate) type OpenFile<'a> = (&'a dyn StorageFile, &'a Path);

/// Files travel between ranks in messages of this size (FTI's default `transfer_size`, 16 MB).
pub(crate) const CHUNK: u64 = 16 << 20;

/// Whether `local` succeeded on every rank. A rank that failed returns its own error; the
/// others learn which ranks failed.
pub(crate) fn agree<T>(comm: &dyn Comm, step: Step, local: Result<T>) -> Result<T> {
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

/// Every rank's `x`.
pub(crate) fn gather_u64(comm: &dyn Comm, x: u64) -> Vec<u64> {
    comm.all_gather(&x.to_le_bytes())
        .iter()
        .map(|b| u64::from_le_bytes(b.get(..8).and_then(|b| b.try_into().ok()).unwrap_or([0; 8])))
        .collect()
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
/// `(id, level)` any rank holds a file or copy of.
pub(crate) fn candidates(comm: &dyn Comm, mine: &[(i32, Level)]) -> Vec<(i32, Level)> {
    let mut bytes = Vec::with_capacity(mine.len() * 5);
    for &(id, level) in mine {
        bytes.extend_from_slice(&id.to_le_bytes());
        bytes.push(level.number());
    }
    let mut all: Vec<(i32, Level)> = comm
        .all_gather(&bytes)
        .iter()
        .flat_map(|b| {
            b.chunks_exact(5).filter_map(|c| {
                let id = i32::from_le_bytes([c[0], c[1], c[2], c[3]]);
                Level::from_number(i32::from(c[4])).map(|l| (id, l))
            })
        })
        .collect();
    all.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    all.dedup();
    all
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
    comm.all_gather(mine.unwrap_or("").as_bytes())
        .into_iter()
        .filter_map(|b| String::from_utf8(b).ok())
        .filter(|s| !s.is_empty())
        .max()
}
