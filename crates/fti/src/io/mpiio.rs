//! MPI-IO (`ckpt_io = 2`): levels 1-3 as POSIX, L4 as one file shared by every rank,
//! `<glbl_dir>/<exec_id>/l4/Ckpt<id>-mpiio.fti`, each rank's data (its POSIX file's bytes) after
//! the lower ranks' (`FTI_WriteMPI` in FTI 1.1's `src/checkpoint.c`, `FTI_FlushMPI` in
//! `src/postckpt.c`). The meta data in `l4/` names each rank's `Ckpt<id>-Rank<r>.fti` as the POSIX
//! meta data does; a rank's offset is the sum of the lower ranks' `ckpt_file_size`
//! (`FTI_RecoverL4Mpi` in `src/postreco.c`).
//!
//! The shared file is written under `tmp/`, synced by every rank, and renamed into `l4/` by rank 0
//! once all have written: until then the previous checkpoint is untouched.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use ftiff::raw::FileBlock;
use ftiff::{FileKind, FileName};

use crate::collective::{agree, CHUNK};
use crate::comm::Comm;
use crate::config::Level;
use crate::error::{Error, Result, Step};
use crate::files::{self, Dirs, Found};
use crate::storage::StorageFile;

use super::posix::{self, RankMeta};

/// The shared file's name for checkpoint `id`.
pub(crate) fn name(id: i32) -> String {
    format!("Ckpt{id}-mpiio.fti")
}

/// The checkpoint id of a shared file's path (`Ckpt<id>-mpiio.fti`).
pub(crate) fn parse_name(path: &Path) -> Option<i32> {
    let name = path.file_name()?.to_str()?;
    name.strip_prefix("Ckpt")?
        .strip_suffix("-mpiio.fti")?
        .parse()
        .ok()
        .filter(|id| *id >= 0)
}

/// The shared file this rank's L4 meta data names (by the checkpoint id of its Rank file),
/// whether or not it is there: what a restart that finds no checkpoint file expected.
pub(crate) fn recorded(dirs: &Dirs) -> Option<PathBuf> {
    let super::Io::Posix(g) = &dirs.io else {
        return None;
    };
    if !g.shared_l4 {
        return None;
    }
    let meta = g.meta_path(&dirs.meta, Level::L4);
    let text = posix::read(&*dirs.storage, &meta).ok()?;
    let rank = posix::parse_rank(&meta, &text, g.rank).ok()?;
    let id = FileName::parse(&rank.name)?.id;
    Some(dirs.level_dir(Level::L4).join(name(id)))
}

/// The shared files in `l4/`, as this rank's L4 checkpoints (every rank holds its part of each).
pub(crate) fn find(dirs: &Dirs) -> Vec<Found> {
    if !dirs.io.shared(Level::L4) {
        return Vec::new();
    }
    let entries = dirs
        .storage
        .list(&dirs.level_dir(Level::L4))
        .unwrap_or_default();
    entries
        .into_iter()
        .filter(|e| e.kind == crate::storage::Kind::File)
        .filter_map(|e| {
            let id = parse_name(&e.path)?;
            Some(Found {
                path: e.path,
                id,
                level: Level::L4,
                archived: false,
            })
        })
        .collect()
}

/// What a rank writes into the shared file: the variables' bytes, or its published local file.
pub(crate) enum Source<'a> {
    /// The variables' bytes in protect order.
    Data(&'a [&'a [u8]]),
    /// A local POSIX file and its size.
    File(&'a dyn StorageFile, &'a Path, u64),
}

impl Source<'_> {
    fn len(&self) -> u64 {
        match self {
            Source::Data(d) => d.iter().map(|b| b.len() as u64).sum(),
            Source::File(_, _, len) => *len,
        }
    }
}

/// Writes every rank's part of checkpoint `id` into the shared file and publishes it
/// (collective; a rank whose `source` failed still takes part, and the step fails on every
/// rank). Returns the file and this rank's file block (its part's size and MD5).
pub(crate) fn write(
    comm: &dyn Comm,
    dirs: &Dirs,
    id: i32,
    source: Result<Source<'_>>,
) -> Result<(PathBuf, FileBlock)> {
    let (path, mut fbs) = write_parts(comm, dirs, id, vec![(owner(dirs), source)])?;
    let fb = fbs
        .pop()
        .ok_or(Error::Internal("a shared write without its part"))?;
    Ok((path, fb))
}

/// The application rank whose file `dirs` names: the shared file holds the parts by it.
pub(crate) fn owner(dirs: &Dirs) -> u32 {
    match &dirs.io {
        super::Io::Posix(g) => g.ranks.get(g.rank as usize).copied().unwrap_or(g.rank),
        super::Io::Ftiff => dirs.rank,
    }
}

/// [`write`] with several parts per process (a head writes those of its node's application
/// ranks, as `FTI_FlushMPI`), each `(application rank, source)`: a part goes after the parts
/// of the lower application ranks, whichever process writes them. Returns the file and each
/// part's file block, in order.
pub(crate) fn write_parts(
    comm: &dyn Comm,
    dirs: &Dirs,
    id: i32,
    parts: Vec<(u32, Result<Source<'_>>)>,
) -> Result<(PathBuf, Vec<FileBlock>)> {
    let sizes: Vec<(u32, u64)> = parts
        .iter()
        .map(|(r, s)| (*r, s.as_ref().map_or(0, Source::len)))
        .collect();
    let offsets = offsets(comm, &sizes);
    let st = &*dirs.storage;
    let (tmp_dir, level_dir) = (dirs.tmp_dir(Level::L4), dirs.level_dir(Level::L4));
    let (tmp, target) = (tmp_dir.join(name(id)), level_dir.join(name(id)));
    let created = if comm.rank() == 0 {
        files::create_dir_durable(st, &tmp_dir)
            .and_then(|()| files::create_dir_durable(st, &level_dir))
            .and_then(|()| st.create(&tmp).map(drop).map_err(|e| Error::io(&tmp, e)))
    } else {
        Ok(())
    };
    let sources: Result<Vec<Source<'_>>> = parts.into_iter().map(|(_, s)| s).collect();
    let sources = agree(comm, Step::Write, sources.and_then(|s| created.map(|()| s)))?;
    let written = st
        .open(&tmp, true)
        .map_err(|e| Error::io(&tmp, e))
        .and_then(|f| {
            let mut fbs = Vec::new();
            for ((source, offset), (_, fs)) in sources.into_iter().zip(&offsets).zip(&sizes) {
                let digest = write_part(&*f, &tmp, *offset, source)?;
                fbs.push(super::posix_fb(&digest, *fs));
            }
            f.sync().map_err(|e| Error::io(&tmp, e))?;
            Ok(fbs)
        });
    let fbs = agree(comm, Step::Write, written)?;
    let published = if comm.rank() == 0 {
        st.rename(&tmp, &target)
            .map_err(|e| Error::io(&target, e))
            .and_then(|()| files::sync_dir(st, &level_dir))
    } else {
        Ok(())
    };
    agree(comm, Step::Publish, published)?;
    Ok((target, fbs))
}

/// Each part's offset in the shared file (collective): the sum of the sizes of the parts of
/// lower application ranks, from every process's `(application rank, size)` list,
/// all-gathered as FTI's MPI-IO writers do (`MPI_Allgather` of the sizes in `FTI_WriteMPI`
/// and `FTI_FlushMPI`): O(ranks) bytes per process.
fn offsets(comm: &dyn Comm, mine: &[(u32, u64)]) -> Vec<u64> {
    let bytes: Vec<u8> = mine
        .iter()
        .flat_map(|(r, s)| r.to_le_bytes().into_iter().chain(s.to_le_bytes()))
        .collect();
    let all: Vec<(u32, u64)> = comm
        .all_gather(&bytes)
        .iter()
        .flat_map(|b| b.chunks_exact(12))
        .map(|c| {
            let (r, s) = c.split_at(4);
            let r = u32::from_le_bytes([r[0], r[1], r[2], r[3]]);
            let mut size = [0u8; 8];
            size.copy_from_slice(s);
            (r, u64::from_le_bytes(size))
        })
        .collect();
    mine.iter()
        .map(|(me, _)| {
            all.iter()
                .filter(|(r, _)| r < me)
                .fold(0u64, |sum, (_, s)| sum.saturating_add(*s))
        })
        .collect()
}

/// Writes `source` at `offset` of the shared file; returns its MD5.
fn write_part(
    file: &dyn StorageFile,
    path: &Path,
    offset: u64,
    source: Source<'_>,
) -> Result<ftiff::hash::Digest> {
    let mut md5 = ftiff::hash::Md5Stream::default();
    let mut at = offset;
    let mut put = |piece: &[u8]| -> Result<()> {
        file.write_all_at(piece, at)
            .map_err(|e| Error::io(path, e))?;
        md5.update(piece);
        at += piece.len() as u64;
        Ok(())
    };
    match source {
        Source::Data(data) => {
            for piece in data.iter().flat_map(|d| d.chunks(CHUNK as usize)) {
                put(piece)?;
            }
        }
        Source::File(local, local_path, len) => {
            let mut buf = vec![0; CHUNK.min(len) as usize];
            let mut done = 0;
            while done < len {
                let n = (len - done).min(buf.len() as u64) as usize;
                local
                    .read_exact_at(&mut buf[..n], done)
                    .map_err(|e| Error::io(local_path, e))?;
                put(&buf[..n])?;
                done += n as u64;
            }
        }
    }
    Ok(md5.finish())
}

/// This rank's section of checkpoint `id`'s L4 meta data (describing `name`) and its offset in
/// the shared file: the sum of the lower ranks' `ckpt_file_size`, from every group's meta-data
/// file in `l4/` (`FTI_RecoverL4Mpi`, `src/postreco.c`).
pub(crate) fn locate(dirs: &Dirs, id: i32, name: &str) -> Result<(PathBuf, RankMeta, u64)> {
    let super::Io::Posix(g) = &dirs.io else {
        return Err(Error::Internal("a shared L4 file outside MPI-IO"));
    };
    let (own_path, own) = super::find_meta(dirs, g, Level::L4, g.rank, name)?;
    let meta_dir = own_path.parent().map(Path::to_path_buf).unwrap_or_default();
    let mut sizes: BTreeMap<u32, u64> = BTreeMap::new();
    for entry in dirs
        .storage
        .list(&meta_dir)
        .map_err(|e| Error::io(&meta_dir, e))?
    {
        let file = entry.name.to_string_lossy();
        if !(file.starts_with("sector") && file.ends_with(".fti")) {
            continue;
        }
        let text = posix::read(&*dirs.storage, &entry.path)?;
        for section in 0.. {
            let Ok(m) = posix::parse_rank(&entry.path, &text, section) else {
                break;
            };
            if let Some(n) = FileName::parse(&m.name).filter(|n| n.kind == FileKind::Rank) {
                if n.id == id {
                    sizes.insert(n.rank, m.size);
                }
            }
        }
    }
    // Files are named by rank among all processes (heads included): the lower application
    // ranks are the lower names, as many as this rank's number among the application ranks.
    let lower: Vec<u64> = sizes.range(..dirs.rank).map(|(_, s)| *s).collect();
    let below = owner(dirs) as usize;
    if lower.len() != below {
        return Err(Error::meta(
            &meta_dir,
            "",
            format!(
                "meta data of {} lower ranks for checkpoint {id}, {below} expected: the offset of rank {} in {} is unknown",
                lower.len(),
                dirs.rank,
                self::name(id)
            ),
        ));
    }
    let offset = lower.iter().fold(0u64, |sum, s| sum.saturating_add(*s));
    Ok((own_path, own, offset))
}

/// This rank's `size` bytes at `offset` of the shared file `bytes` (the whole file for a
/// rank's own file, `offset` 0), or why they are not there.
pub(crate) fn part<'a>(
    bytes: &'a [u8],
    path: &Path,
    offset: u64,
    size: u64,
) -> Result<(usize, &'a [u8])> {
    if offset == 0 && parse_name(path).is_none() {
        return Ok((0, bytes));
    }
    let range = usize::try_from(offset)
        .ok()
        .zip(usize::try_from(offset.saturating_add(size)).ok());
    match range.and_then(|(a, b)| Some((a, bytes.get(a..b)?))) {
        Some(found) => Ok(found),
        None => Err(Error::PosixFile {
            path: path.to_path_buf(),
            what: format!(
                "{} bytes, this rank's part is at {offset}..{}",
                bytes.len(),
                offset.saturating_add(size)
            ),
        }),
    }
}
