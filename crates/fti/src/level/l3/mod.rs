//! L3 across the ranks of a group: FTI 1.1's Reed-Solomon encoding of the group's Rank files
//! into one `RSed` file per rank, and the rebuilding of up to k lost files of a group of k.
//!
//! Both work block by block: each rank reads a block of its files, the group exchanges blocks
//! in k-1 ring rounds (round s: send to group rank g+s, receive from g-s), and each rank computes
//! what it needs from the k blocks (`ftiff::l3::Code`). Memory is k blocks per rank, whatever the
//! file sizes. Blocks start at even offsets, so the 16-bit words of the code never straddle two.
//!
//! [`group`] does the same for one group's files side by side in one directory, in one
//! process: what the offline tools `fti l3-encode` and `fti l3-rebuild` use.

use std::borrow::Cow;
use std::convert::Infallible;
use std::path::Path;

use ftiff::hash::Md5Stream;
use ftiff::l3::Code;
use ftiff::raw::FileBlock;

use crate::comm::Comm;
use crate::error::{Error, Result};
use crate::storage::{Storage, StorageFile};

pub mod group;
use crate::collective::{agree, group_gather_u64};
use crate::config::Level;
use crate::error::Step;
use crate::files::{self, Pending};
use crate::schedule::Team;
use crate::topology::Place;

use super::{PostProcessed, Rebuild};

/// Bytes of each file per block (even).
const BLOCK: u64 = 4 << 20;

/// Reads `[at, at + len)` of a file of `fs` bytes, zero-extended past its end.
fn read_block(
    file: &dyn StorageFile,
    fs: u64,
    at: u64,
    len: u64,
    out: &mut Vec<u8>,
) -> std::io::Result<()> {
    out.clear();
    out.resize(len as usize, 0);
    let have = fs.saturating_sub(at).min(len) as usize;
    file.read_exact_at(&mut out[..have], at)
}

/// The blocks of every group rank, by group rank: this rank's `mine` (moved in when owned,
/// copied when borrowed), the others' received in k-1 ring rounds. Every received block is cut
/// or zero-extended to `len`.
fn gather_group<'a>(
    comm: &dyn Comm,
    place: &Place,
    mine: impl Into<Cow<'a, [u8]>>,
    len: usize,
) -> Vec<Vec<u8>> {
    let mine = mine.into();
    let k = place.group.len();
    let g = place.group_rank as usize;
    let mut all = vec![Vec::new(); k];
    for s in 1..k {
        let to = place.group[(g + s) % k];
        let from_g = (g + k - s) % k;
        let mut got = comm.exchange(to, &mine, place.group[from_g]);
        got.resize(len, 0);
        all[from_g] = got;
    }
    all[g] = mine.into_owned();
    all
}

/// Encodes this rank's `RSed` file for checkpoint data already in `own` (whose file block
/// already has `maxFs = max_fs`): bytes `[0, max_fs)` of code row `group_rank`, then the
/// trailer, into `rsed`. Collective over the group: a rank without a file (`own = None`)
/// or without an `RSed` file to write still takes part.
pub(crate) fn encode(
    comm: &dyn Comm,
    place: &Place,
    own: Option<(&dyn StorageFile, &Path, u64)>,
    (rsed, trailer): (Option<&Pending>, bool),
    max_fs: u64,
) -> Result<()> {
    let own_fs = own.map_or(0, |(_, _, fs)| fs);
    let code = Code::new(place.group.len()).map_err(Error::Format)?;
    let g = place.group_rank as usize;
    let row = code.encoder(&[g]);
    let mut md5 = Md5Stream::default();
    let mut first_error: Option<Error> = None;
    // This rank's block: lent to the group's blocks for each round and taken back, so that one
    // buffer serves the whole file.
    let mut mine = Vec::new();
    let mut at = 0;
    while at < max_fs {
        let len = BLOCK.min(max_fs - at);
        mine.clear();
        mine.resize(len as usize, 0);
        if let Some((file, path, fs)) = own {
            if let Err(e) = read_block(file, fs, at, len, &mut mine) {
                first_error.get_or_insert(Error::io(path, e));
            }
        }
        let mut blocks = gather_group(comm, place, std::mem::take(&mut mine), len as usize);
        let refs: Vec<&[u8]> = blocks.iter().map(Vec::as_slice).collect();
        // This rank's row of the code, hashed and written piece by piece as it is computed.
        let encoded = ftiff::l3::apply(&row, &refs, len as usize, |offset, piece| {
            md5.update(piece[0]);
            if let Some(rsed) = rsed {
                if let Err(e) = rsed.file.write_all_at(piece[0], at + offset as u64) {
                    first_error.get_or_insert(Error::io(&rsed.path, e));
                }
            }
            Ok::<(), Infallible>(())
        });
        let Ok(()) = encoded;
        mine = std::mem::take(&mut blocks[g]);
        at += len;
    }
    if let Some(rsed) = rsed.filter(|_| trailer) {
        let trailer =
            ftiff::l3::rsed_trailer(&md5.finish(), max_fs, own_fs, ftiff::write::now_ns());
        if let Err(e) = rsed.file.write_all_at(&trailer.encode(), max_fs) {
            first_error.get_or_insert(Error::io(&rsed.path, e));
        }
    }
    first_error.map_or(Ok(()), Err)
}

/// L3's post-processing of checkpoint `id` (collective): sets `maxFs` (the largest file of
/// the group) in this rank's file, then encodes the group's files into this rank's
/// `Ckpt<id>-RSed<r>.fti` (FTI 1.1's Reed-Solomon code).
pub(crate) fn post_process(
    team: Team<'_>,
    id: i32,
    pending: &Pending,
    fb: FileBlock,
) -> Result<PostProcessed> {
    let (comm, dirs) = (team.comm, team.dirs);
    let place = team.place()?;
    let (fb, max_fs) = set_max_fs(team, pending, fb);
    let rsed = files::begin_named(dirs, Level::L3, dirs.rsed_name(id), None);
    let own_fs = fb.as_ref().map_or(0, |b| b.fs as u64);
    // Every rank takes part in the encoding even after a local error, so that the group's
    // exchanges match; the error is reported after it.
    let encoded = encode(
        comm,
        place,
        Some((&*pending.file, pending.path.as_path(), own_fs)),
        (rsed.as_ref().ok(), dirs.io.rsed_trailer()),
        max_fs,
    );
    let local = fb.and_then(|fb| {
        encoded.and(rsed.map(|r| PostProcessed {
            redundancy: Some(r),
            fb,
            deferred: None,
        }))
    });
    agree(comm, Step::L3Encode, local)
}

/// Sets `maxFs` (the largest file of the group) in this rank's written file (collective over
/// the group's exchanges: every rank takes part even after a local error); returns the file
/// block and `maxFs`.
pub(crate) fn set_max_fs(
    team: Team<'_>,
    pending: &Pending,
    fb: FileBlock,
) -> (Result<FileBlock>, u64) {
    files::crash_point("partner");
    let max_fs = team.place().map_or(0, |place| {
        group_gather_u64(team.comm, place, fb.fs as u64)
            .into_iter()
            .max()
            .unwrap_or(0)
    });
    let fb = crate::io::set_size(&team.dirs.io, &*pending.file, &pending.path, fb, |b| {
        b.max_fs = max_fs as i64
    });
    (fb, max_fs)
}

/// The encoding of checkpoint `id` left for later, once every rank's own file (with `maxFs`
/// set) is published as `own` (collective on `comm`, `place` the rank's place among its
/// ranks): the `RSed` file is published, its MD5 added to the POSIX meta data, then older
/// checkpoints retired (keeping `keep`).
pub(crate) fn encode_deferred(
    (comm, place): (&dyn Comm, &Place),
    dirs: &crate::files::Dirs,
    (id, own): (i32, &Path),
    max_fs: u64,
    keep: usize,
) -> Result<()> {
    let file = dirs.storage.open(own, false).map_err(|e| Error::io(own, e));
    // An unopened file's error is the file's (below).
    let fs = match &file {
        Ok(f) => crate::io::published_size(&dirs.io, &**f, own),
        Err(_) => Ok(0),
    };
    let rsed = files::begin_named(dirs, Level::L3, dirs.rsed_name(id), None);
    // A rank whose file is unreadable still takes part (with no data): the group's
    // exchanges match, and its error fails the step.
    let encoded = encode(
        comm,
        place,
        (file.as_ref().ok().zip(fs.as_ref().ok())).map(|(f, fs)| (&**f, own, *fs)),
        (rsed.as_ref().ok(), dirs.io.rsed_trailer()),
        max_fs,
    );
    let published = file
        .and(fs)
        .and(encoded)
        .and(rsed)
        .and_then(|r| files::publish_pending(dirs, r));
    agree(comm, Step::L3Encode, published)?;
    crate::io::add_rsed_checksums((comm, place), dirs, id)?;
    files::retire(dirs, Level::L3, id, keep, true)
}

/// Verifies an `RSed` file (trailer fields and hashes); returns its trailer.
pub(crate) fn verify_rsed(storage: &dyn Storage, path: &Path) -> Result<FileBlock> {
    let map = storage.map(path).map_err(Error::Format)?;
    let rsed = ftiff::RsedFile::parse(map.bytes()).map_err(|e| Error::Format(e.with_path(path)))?;
    if let Some(e) = rsed.verify(map.bytes(), &|_| {}).into_iter().next() {
        return Err(Error::Format(e.with_path(path)));
    }
    Ok(rsed.fb)
}

/// What this rank brings to a group rebuild.
pub(crate) struct Held<'a> {
    /// Where its files are read from.
    pub storage: &'a dyn Storage,
    /// Its verified Rank file and that file's size.
    pub own: Option<(&'a Path, u64)>,
    /// Its verified `RSed` file.
    pub rsed: Option<&'a Path>,
    /// POSIX: its file's size and MD5 (hex), from the meta data (an FTI-FF file says them in
    /// its block, an FTI-FF `RSed` file in its trailer).
    pub meta: Option<(u64, String)>,
}

/// Rebuilds the lost Rank and `RSed` files of this rank's group for checkpoint `id` (every
/// rank of the group calls it; at most k of the 2k files may be missing; `lost` says whether
/// the group lost Rank files, `RSed` files). Lost files are written into `new_own` /
/// `new_rsed` (pending files under `tmp/`); the caller publishes and verifies them.
///
/// Rank files come first (decoding), then lost `RSed` files are encoded again from the
/// complete Rank files: a rebuilt Rank file of odd size `maxFs` gets its last byte from its own
/// hashes only once it is whole, and the code depends on that byte.
pub(crate) fn rebuild(
    comm: &dyn Comm,
    place: &Place,
    held: &Held<'_>,
    max_fs: u64,
    (new_own, new_rsed): (Option<&Pending>, Option<&Pending>),
    (ranks_lost, rsed_lost): (bool, bool),
) -> Result<()> {
    let code = Code::new(place.group.len()).map_err(Error::Format)?;
    let open = |p: Option<&Path>| {
        p.map(|p| held.storage.open(p, false).map_err(|e| Error::io(p, e)))
            .transpose()
    };
    let mut first_error: Option<Error> = None;
    let own_file = open(held.own.map(|(p, _)| p)).unwrap_or_else(|e| {
        first_error = Some(e);
        None
    });
    let rsed_file = open(held.rsed).unwrap_or_else(|e| {
        first_error.get_or_insert(e);
        None
    });
    let own_fs = held.own.map_or(0, |(_, fs)| fs);
    if ranks_lost {
        let files = (own_file.as_deref(), rsed_file.as_deref());
        if let Err(e) = decode(comm, place, &code, held, files, max_fs, new_own) {
            first_error.get_or_insert(e);
        }
    }
    // A rebuilt Rank file is its own file zero-extended to maxFs: cut it to its fs; with an odd
    // maxFs its last byte was lost with the code's high half: its own hashes tell it.
    let mut fs = own_fs;
    if let (Some(p), None) = (new_own, &first_error) {
        match finish_rank_file(p, max_fs, held.meta.as_ref()) {
            Ok(n) => fs = n,
            Err(e) => first_error = Some(e),
        }
    }
    if rsed_lost {
        let own = match (new_own, &own_file, held.own) {
            (Some(p), _, _) => Some((&*p.file, p.path.as_path())),
            (None, Some(f), Some((path, _))) => Some((&**f, path)),
            _ => None,
        };
        // Without a file to read (already failed), this rank takes part with zeros.
        let trailer = held.meta.is_none();
        let own = own.map(|(f, p)| (f, p, fs));
        let encoded = encode(comm, place, own, (new_rsed, trailer), max_fs);
        if let Err(e) = encoded {
            first_error.get_or_insert(e);
        }
    }
    first_error.map_or(Ok(()), Err)
}

/// Restart's L3 rebuild of checkpoint `id`: every group with a lost file rebuilds it
/// (Reed-Solomon decoding of the surviving files); lost `RSed` files are encoded again.
/// Collective.
pub(crate) fn rebuild_checkpoint(team: Team<'_>, id: i32, plan: &Rebuild<'_>) -> Result<()> {
    let (comm, dirs, me) = (team.comm, team.dirs, team.rank);
    let (files, lost_copies, own) = (plan.files, plan.copies, plan.verified);
    let rsed = plan.copy.filter(|_| plan.copy_ok).map(|c| c.path.as_path());
    let place = team.place()?.clone();
    // maxFs: in every surviving Rank file of the group and RSed trailer.
    let meta = crate::io::meta_sizes(dirs, id, Level::L3);
    let rsed_max = match &meta {
        Some((max_fs, ..)) => *max_fs,
        None => rsed
            .and_then(|p| verify_rsed(&*dirs.storage, p).ok())
            .map_or(0, |fb| fb.fs.max(0) as u64),
    };
    let known_max_fs = own.map_or(0, |r| r.max_fs);
    let max_fs = group_gather_u64(comm, &place, known_max_fs.max(rsed_max))
        .into_iter()
        .max()
        .unwrap_or(0);
    let affected = place
        .group
        .iter()
        .any(|r| files.contains(r) || lost_copies.contains(r));
    let local = if affected {
        let new_own = files
            .contains(&me)
            .then(|| files::begin(dirs, Level::L3, id, None))
            .transpose();
        let new_rsed = lost_copies
            .contains(&me)
            .then(|| files::begin_named(dirs, Level::L3, dirs.rsed_name(id), None))
            .transpose();
        let held = Held {
            storage: &*dirs.storage,
            own: own.map(|r| (r.info.path.as_path(), r.info.size)),
            rsed,
            meta: meta.map(|(_, fs, checksum)| (fs, checksum)),
        };
        let (o, r) = (
            new_own.as_ref().ok().and_then(Option::as_ref),
            new_rsed.as_ref().ok().and_then(Option::as_ref),
        );
        let lost = (
            place.group.iter().any(|r| files.contains(r)),
            place.group.iter().any(|r| lost_copies.contains(r)),
        );
        let done = rebuild(comm, &place, &held, max_fs, (o, r), lost);
        done.and_then(|()| {
            let (o, r) = (new_own?, new_rsed?);
            if let Some(p) = o {
                files::publish_pending(dirs, p)?;
            }
            if let Some(p) = r {
                files::publish_pending(dirs, p)?;
            }
            Ok(())
        })
    } else {
        Ok(())
    };
    agree(comm, Step::RebuildL3, local)
}

/// The decoding part of [`rebuild`]: block by block, the group's surviving Rank and `RSed`
/// blocks are exchanged and the lost Rank files' blocks reconstructed; this rank's, if lost,
/// is written into `new_own`. Every rank makes every exchange; the first local error is
/// returned after the last.
fn decode(
    comm: &dyn Comm,
    place: &Place,
    code: &Code,
    held: &Held<'_>,
    (own_file, rsed_file): (Option<&dyn StorageFile>, Option<&dyn StorageFile>),
    max_fs: u64,
    new_own: Option<&Pending>,
) -> Result<()> {
    let (k, g) = (place.group.len(), place.group_rank as usize);
    let own_fs = held.own.map_or(0, |(_, fs)| fs);
    let own_path = held.own.map(|(p, _)| p);
    let mut first_error: Option<Error> = None;
    let (mut a, mut b) = (Vec::new(), Vec::new());
    let mut at = 0;
    while at < max_fs {
        let len = BLOCK.min(max_fs - at);
        let n = len as usize;
        // Message: [has Rank block, has RSed block] + Rank block + RSed block.
        let mut msg = vec![u8::from(own_file.is_some()), u8::from(rsed_file.is_some())];
        for (file, path, fs, buf) in [
            (own_file, own_path, own_fs, &mut a),
            (rsed_file, held.rsed, max_fs, &mut b),
        ] {
            buf.clear();
            buf.resize(n, 0);
            if let (Some(f), Some(path)) = (file, path) {
                if let Err(e) = read_block(f, fs, at, len, buf) {
                    first_error.get_or_insert(Error::io(path, e));
                }
            }
            msg.extend_from_slice(buf);
        }
        let msgs = gather_group(comm, place, &msg, 2 + 2 * n);
        let mut ranks: Vec<Option<Vec<u8>>> = Vec::with_capacity(k);
        let mut codes: Vec<Option<Vec<u8>>> = Vec::with_capacity(k);
        for m in &msgs {
            ranks.push((m[0] == 1).then(|| m[2..2 + n].to_vec()));
            codes.push((m[1] == 1).then(|| m[2 + n..2 + 2 * n].to_vec()));
        }
        match code.reconstruct(&mut ranks, &mut codes, n) {
            Err(e) => {
                first_error.get_or_insert(Error::Format(e));
            }
            Ok(()) => {
                if let (Some(p), Some(bytes)) = (new_own, &ranks[g]) {
                    if let Err(e) = p.file.write_all_at(bytes, at) {
                        first_error.get_or_insert(Error::io(&p.path, e));
                    }
                }
            }
        }
        at += len;
    }
    first_error.map_or(Ok(()), Err)
}

/// Cuts a rebuilt Rank file to its `fs` and restores its last byte when `fs` is an odd `maxFs`;
/// returns `fs`.
fn finish_rank_file(p: &Pending, max_fs: u64, meta: Option<&(u64, String)>) -> Result<u64> {
    if let Some((fs, checksum)) = meta {
        let fs = *fs;
        if fs > max_fs {
            return Err(Error::RebuiltSize {
                path: p.path.clone(),
                fs: fs as i64,
                max_fs,
            });
        }
        p.file.set_len(fs).map_err(|e| Error::io(&p.path, e))?;
        if fs == max_fs && fs % 2 == 1 {
            restore_last_byte_by_md5(p, fs, checksum)?;
        }
        return Ok(fs);
    }
    let fb = super::l2::read_fb(&*p.file, &p.path)?;
    let fs = u64::try_from(fb.fs)
        .ok()
        .filter(|&fs| fs <= max_fs)
        .ok_or_else(|| Error::RebuiltSize {
            path: p.path.clone(),
            fs: fb.fs,
            max_fs,
        })?;
    p.file.set_len(fs).map_err(|e| Error::io(&p.path, e))?;
    if fs == max_fs && fs % 2 == 1 {
        let map = p.map()?;
        let last = ftiff::l3::restore_last_byte(map.bytes())
            .map_err(|e| Error::Format(e.with_path(&p.path)))?;
        p.file
            .write_all_at(&[last], fs - 1)
            .map_err(|e| Error::io(&p.path, e))?;
    }
    Ok(fs)
}

/// The last byte of a rebuilt POSIX file of odd size `maxFs`, which the code loses: the one of
/// the 256 values that gives the file the MD5 of its meta data (`checksum`). None does: the file
/// is left as it is, and its verification says so.
fn restore_last_byte_by_md5(p: &Pending, fs: u64, checksum: &str) -> Result<()> {
    let mut md5 = ftiff::hash::Md5Stream::default();
    let mut buf = vec![0; crate::collective::CHUNK.min(fs) as usize];
    let mut at = 0;
    while at < fs - 1 {
        let n = (fs - 1 - at).min(buf.len() as u64) as usize;
        p.file
            .read_exact_at(&mut buf[..n], at)
            .map_err(|e| Error::io(&p.path, e))?;
        md5.update(&buf[..n]);
        at += n as u64;
    }
    for last in 0..=u8::MAX {
        let mut candidate = md5.clone();
        candidate.update(&[last]);
        if ftiff::hash::to_hex(&candidate.finish()) == checksum {
            return p
                .file
                .write_all_at(&[last], fs - 1)
                .map_err(|e| Error::io(&p.path, e));
        }
    }
    Ok(())
}
