//! L2: each rank sends its file to its right partner, which keeps it as
//! `Ckpt<id>-Pcof<r>.fti`; a lost file comes back from that copy, a lost copy from its owner.
//! The file-block edits of L2 and L3 (`ptFs`, `maxFs`) are here too.

use std::path::{Path, PathBuf};

use ftiff::raw::FileBlock;

use crate::collective::{agree, group_gather_u64, max_u64, rounds_for, transfer, OpenFile};
use crate::comm::Comm;
use crate::config::Level;
use crate::error::{Error, Misuse, Result, Step};
use crate::files::{self, Dirs, Pending};
use crate::schedule::Team;
use crate::storage::StorageFile;

use super::{PostProcessed, Rebuild};

/// How a rank exchanges L2 partner copies: it sends its file (`own_fs` bytes) to its right
/// partner while receiving its left partner's (`left_fs` bytes), in `rounds` messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PartnerPlan {
    pub left: u32,
    pub right: u32,
    pub own_fs: u64,
    pub left_fs: u64,
    pub rounds: u64,
}

/// L2's post-processing of checkpoint `id` (collective): records the left partner's file
/// size in `ptFs` and plans the exchange; then sends this rank's file to its right partner
/// while receiving its left partner's copy, unless `defer` leaves that to the caller
/// ([`PostProcessed::deferred`], run by [`copy_deferred`]).
pub(crate) fn post_process(
    team: Team<'_>,
    pending: &Pending,
    fb: FileBlock,
    id: i32,
    defer: bool,
) -> Result<PostProcessed> {
    let (plan, fb) = partner_plan(team, pending, fb)?;
    if defer {
        return Ok(PostProcessed {
            redundancy: None,
            fb,
            deferred: Some(plan),
        });
    }
    let own = Some((&*pending.file, pending.path.as_path()));
    let copy = exchange_copies(team.comm, team.dirs, id, &plan, own);
    let copy = agree(team.comm, Step::L2Copy, copy)?;
    Ok(PostProcessed {
        redundancy: Some(copy),
        fb,
        deferred: None,
    })
}

/// Records the left partner's file size in `ptFs` and plans the exchange of files within the
/// group (collective).
fn partner_plan(
    team: Team<'_>,
    pending: &Pending,
    fb: FileBlock,
) -> Result<(PartnerPlan, FileBlock)> {
    let place = team.place()?;
    files::crash_point("partner");
    // sizes[i] = the file size of the group's i-th rank.
    let sizes = group_gather_u64(team.comm, place, fb.fs as u64);
    let k = place.group.len();
    let plan = PartnerPlan {
        left: place.left(),
        right: place.right(),
        own_fs: fb.fs as u64,
        left_fs: sizes[(place.group_rank as usize + k - 1) % k],
        rounds: rounds_for(sizes.iter().copied()),
    };
    let fb = crate::io::set_size(&team.dirs.io, &*pending.file, &pending.path, fb, |b| {
        b.pt_fs = plan.left_fs as i64
    });
    agree(team.comm, Step::L2Copy, fb.map(|fb| (plan, fb)))
}

/// The partner copies of checkpoint `id` that [`post_process`] left for later, once every
/// rank's own file is published as `own` (collective on `comm`): the copy is published, then
/// older checkpoints retired (keeping `keep`).
pub(crate) fn copy_deferred(
    comm: &dyn Comm,
    dirs: &Dirs,
    id: i32,
    plan: &PartnerPlan,
    own: &Path,
    keep: usize,
) -> Result<()> {
    let file = dirs.storage.open(own, false).map_err(|e| Error::io(own, e));
    let own_file = file.as_ref().ok().map(|f| (&**f, own));
    let copy = exchange_copies(comm, dirs, id, plan, own_file);
    let published = file.and(copy).and_then(|c| files::publish_pending(dirs, c));
    agree(comm, Step::L2Copy, published)?;
    files::retire(dirs, Level::L2, id, keep, true)
}

/// Sends this rank's file to its right partner while receiving its left partner's into a new
/// `Ckpt<id>-Pcof<r>.fti` under `tmp/` (returned, not yet published). Collective; a rank
/// without its file (`own = None`) or that cannot create the copy still takes part.
fn exchange_copies(
    comm: &dyn Comm,
    dirs: &Dirs,
    id: i32,
    plan: &PartnerPlan,
    own: Option<OpenFile<'_>>,
) -> Result<Pending> {
    let copy = files::begin_named(dirs, Level::L2, dirs.copy_name(id), None);
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

/// Carries out a restart plan's rebuild of checkpoint `id`: lost files come back from the right
/// partner's copy, lost copies from the left partner's (possibly just rebuilt) file. Every
/// rebuilt file is published like a new one and returned.
pub(crate) fn rebuild(team: Team<'_>, id: i32, plan: &Rebuild<'_>) -> Result<Vec<PathBuf>> {
    let (comm, dirs) = (team.comm, team.dirs);
    let (files, copies, own, copy) = (plan.files, plan.copies, plan.own, plan.copy);
    let me = comm.rank();
    let place = team
        .topology
        .place(me)
        .ok_or(Error::State(Misuse::NotInTopology))?;
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

/// One collective round of [`rebuild`]: sends the file at `send` (if any) to rank `to` while
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
    // What `from` sends this rank, over the same pairs as the transfer; the rounds are the
    // largest file's.
    let from_len = u64::from_le_bytes(
        comm.exchange(to, &len.to_le_bytes(), from)
            .get(..8)
            .and_then(|b| b.try_into().ok())
            .unwrap_or([0; 8]),
    );
    let rounds = rounds_for([max_u64(comm, len)]);
    let pending = recv
        .map(|name| files::begin_named(dirs, Level::L2, name, None))
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
            from_len,
        ),
        rounds,
    );
    let local = match (file, pending) {
        (Err(e), _) | (_, Err(e)) => Err(Error::InStep {
            step: step.clone(),
            err: Box::new(e),
        }),
        (Ok(_), Ok(recv)) => moved.and_then(|()| match recv {
            Some(p) => files::publish_pending(dirs, p).map(Some),
            None => Ok(None),
        }),
    };
    agree(comm, step, local)
}
