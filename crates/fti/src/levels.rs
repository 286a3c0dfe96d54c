//! What several ranks do together: L2 partner copies, agreement on the checkpoint to restart
//! from, and rebuilding a lost rank's files from its partner.
//!
//! Every function here is collective over the run's [`Comm`]: all ranks call it in the same
//! order, and a rank that fails locally still takes part, so that no rank waits forever for
//! one that gave up.

use std::path::{Path, PathBuf};

use ftiff::raw::FileBlock;

use crate::comm::Comm;
use crate::config::Level;
use crate::error::{Error, Result, Step};
use crate::storage::StorageFile;
use crate::store::{self, Dirs, Found};

/// An open file and its path (for errors).
pub(crate) type OpenFile<'a> = (&'a dyn StorageFile, &'a Path);
use crate::topology::Topology;

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

/// How a rank exchanges L2 partner copies: it sends its file (`own_fs` bytes) to its right
/// partner while receiving its left partner's (`left_fs` bytes), in `rounds` messages.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PartnerPlan {
    pub left: u32,
    pub right: u32,
    pub own_fs: u64,
    pub left_fs: u64,
    pub rounds: u64,
}

/// Sends this rank's file to its right partner while receiving its left partner's into a new
/// `Ckpt<id>-Pcof<r>.fti` under `tmp/` (returned, not yet published). Collective; a rank
/// without its file (`own = None`) or that cannot create the copy still takes part.
pub(crate) fn exchange_copies(
    comm: &dyn Comm,
    dirs: &Dirs,
    id: i32,
    plan: &PartnerPlan,
    own: Option<OpenFile<'_>>,
) -> Result<store::Pending> {
    let copy = store::begin_named(dirs, Level::L2, dirs.copy_name(id), None);
    let sent = transfer(
        comm,
        (plan.right, own, plan.own_fs),
        (
            plan.left,
            copy.as_ref().ok().map(|c| (&*c.file, c.path.as_path())),
            plan.left_fs,
        ),
        plan.rounds,
    );
    let copy = sent.and(copy)?;
    if own.is_none() {
        return Err(Error::OwnFileUnreadable);
    }
    Ok(copy)
}

/// Rounds of [`transfer`] for files of these sizes.
pub(crate) fn rounds_for(sizes: impl IntoIterator<Item = u64>) -> u64 {
    sizes
        .into_iter()
        .map(|s| s.div_ceil(CHUNK))
        .max()
        .unwrap_or(0)
}

/// Reads the file block of an open file.
pub(crate) fn read_fb(file: &dyn StorageFile, path: &Path) -> Result<FileBlock> {
    FileBlock::read_from(file, 0).map_err(|e| Error::Format(e.with_path(path)))
}

/// Changes fields of a written file's block (`ptFs` at L2, `maxFs` at L3) and the `myHash`
/// that covers them; data and checksum are unchanged.
pub(crate) fn set_fb(
    file: &dyn StorageFile,
    path: &Path,
    change: impl FnOnce(&mut FileBlock),
) -> Result<FileBlock> {
    let mut block = read_fb(file, path)?;
    change(&mut block);
    block.seal();
    file.write_all_at(&block.encode(), 0)
        .map_err(|e| Error::io(path, e))?;
    Ok(block)
}

/// What one rank holds of one candidate checkpoint.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Holds {
    /// Its own file is there and verifies.
    pub own: bool,
    /// Its redundancy file is there and verifies: the L2 partner copy it keeps for its left
    /// partner, or its L3 `RSed` file.
    pub copy: bool,
}

/// How the run recovers one candidate, decided identically on every rank.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Plan {
    /// Every rank has its own file.
    Own,
    /// L2: these ranks get their file back from their right partner's copy, and these get
    /// the copy they keep back from their left partner.
    Rebuild { files: Vec<u32>, copies: Vec<u32> },
}

/// Whether a candidate at `level` can be recovered by every rank, given what each holds.
pub(crate) fn plan(level: Level, holds: &[Holds], topology: &Topology) -> Option<Plan> {
    if holds.iter().all(|h| h.own) {
        return Some(Plan::Own);
    }
    if level == Level::L3 {
        // Each group of k ranks survives the loss of up to k of its 2k Rank and RSed files.
        for (r, _) in holds.iter().enumerate() {
            let group = &topology.place(r as u32)?.group;
            let lost = group
                .iter()
                .map(|&g| {
                    holds
                        .get(g as usize)
                        .map_or(2, |h| usize::from(!h.own) + usize::from(!h.copy))
                })
                .sum::<usize>();
            if group.len() < 2 || lost > group.len() {
                return None;
            }
        }
        let lacking = |f: fn(&Holds) -> bool| {
            (0..holds.len() as u32)
                .filter(|&r| f(&holds[r as usize]))
                .collect()
        };
        return Some(Plan::Rebuild {
            files: lacking(|h| !h.own),
            copies: lacking(|h| !h.copy),
        });
    }
    if level != Level::L2 {
        return None;
    }
    let mut files = Vec::new();
    for (r, h) in holds.iter().enumerate() {
        if !h.own {
            let right = topology.place(r as u32)?.right();
            if right == r as u32 || !holds.get(right as usize)?.copy {
                return None;
            }
            files.push(r as u32);
        }
    }
    let copies = (0..holds.len() as u32)
        .filter(|&r| !holds[r as usize].copy)
        .collect();
    Some(Plan::Rebuild { files, copies })
}

/// Carries out a [`Plan::Rebuild`] for checkpoint `id`: lost files come back from the right
/// partner's copy, lost copies from the left partner's (possibly just rebuilt) file. Every
/// rebuilt file is published like a new one and returned.
pub(crate) fn rebuild_l2(
    comm: &dyn Comm,
    dirs: &Dirs,
    topology: &Topology,
    id: i32,
    (files, copies): (&[u32], &[u32]),
    own: Option<&Found>,
    copy: Option<&Found>,
) -> Result<Vec<PathBuf>> {
    let me = comm.rank();
    let place = topology
        .place(me)
        .ok_or(Error::State("this rank is not in the topology"))?;
    let (left, right) = (place.left(), place.right());
    let mut rebuilt = Vec::new();
    // Round 1: the right partner's copy comes back as this rank's file.
    let copy_path = copy.map(|c| c.path.as_path());
    let round = (
        (left, files.contains(&left).then_some(copy_path).flatten()),
        (right, files.contains(&me).then(|| dirs.file_name(id))),
    );
    rebuilt.extend(move_file(comm, dirs, round, Step::RebuildL2Files)?);
    // Round 2: the left partner's file (possibly just rebuilt) comes back as the copy this rank
    // keeps.
    let own_path = if files.contains(&me) {
        Some(dirs.level_dir(Level::L2).join(dirs.file_name(id)))
    } else {
        own.map(|f| f.path.clone())
    };
    let round = (
        (
            right,
            copies
                .contains(&right)
                .then_some(own_path.as_deref())
                .flatten(),
        ),
        (left, copies.contains(&me).then(|| dirs.copy_name(id))),
    );
    rebuilt.extend(move_file(comm, dirs, round, Step::RebuildL2Copies)?);
    Ok(rebuilt)
}

/// The rank a round sends to, and the file it sends (if any).
type Outgoing<'a> = (u32, Option<&'a Path>);
/// The rank a round receives from, and the name the received file is published under (if any).
type Incoming = (u32, Option<String>);

/// One collective round of [`rebuild_l2`]: sends the file at `send` (if any) to rank `to` while
/// receiving, from rank `from`, the file this rank publishes as `L2/<recv>` (if any). Returns the
/// published path.
fn move_file(
    comm: &dyn Comm,
    dirs: &Dirs,
    ((to, send), (from, recv)): (Outgoing<'_>, Incoming),
    step: Step,
) -> Result<Option<PathBuf>> {
    let send_path = send;
    let file = send
        .map(|p| dirs.storage.open(p, false).map_err(|e| Error::io(p, e)))
        .transpose();
    let len = file
        .as_ref()
        .ok()
        .and_then(Option::as_ref)
        .and_then(|f| f.len().ok())
        .unwrap_or(0);
    // sizes[r] = what rank r sends.
    let sizes = gather_u64(comm, len);
    let rounds = rounds_for(sizes.iter().copied());
    let pending = recv
        .map(|name| store::begin_named(dirs, Level::L2, name, None))
        .transpose();
    // Every rank makes every exchange, also when it could not open its side: its partners
    // then see a short transfer instead of waiting forever.
    let moved = transfer(
        comm,
        (
            to,
            file.as_ref().ok().and_then(Option::as_deref).zip(send_path),
            len,
        ),
        (
            from,
            pending
                .as_ref()
                .ok()
                .and_then(Option::as_ref)
                .map(|p| (&*p.file, p.path.as_path())),
            sizes[from as usize],
        ),
        rounds,
    );
    let local = match (file, pending) {
        (Err(e), _) | (_, Err(e)) => Err(Error::InStep {
            step: step.clone(),
            err: Box::new(e),
        }),
        (Ok(_), Ok(recv)) => moved.and_then(|()| match recv {
            Some(p) => store::publish_pending(dirs, p).map(Some),
            None => Ok(None),
        }),
    };
    agree(comm, step, local)
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
