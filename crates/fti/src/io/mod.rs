//! How a level's files are laid out: FTI's I/O modes (`[basic] ckpt_io`). The levels know their
//! redundancy (copies, codes, a global copy), not the layout; what depends on the layout is
//! here, one function each:
//!
//! * writing a rank's file, and what describes it ([`FileBlock`]: in the file for FTI-FF, in
//!   the meta data for POSIX);
//! * verifying a rank's file, a partner copy or an `RSed` file at restart;
//! * the sizes L2 and L3 record (`ptFs`, `maxFs`: in the file block for FTI-FF, in the meta
//!   data for POSIX) and whether an `RSed` file ends with a trailer;
//! * publishing, copying and retiring the meta data (POSIX; FTI-FF files describe themselves);
//! * MPI-IO's shared L4 file (`mpiio`).

mod meta;
pub(crate) mod mpiio;
pub mod posix;

pub(crate) use meta::{add_rsed_checksums, commit, copy_meta, retire};

use std::path::Path;

use ftiff::raw::FileBlock;
use ftiff::{Checkpoint, FileKind, FileName, Layout, MappedFile, VarInfo, VarSize};

use crate::config::{Config, IoMode, Level};
use crate::error::{Error, Result};
use crate::files::{Dirs, Found};
use crate::storage::StorageFile;
use crate::topology::Place;

use posix::{Group, RankMeta};

/// The I/O mode of a run, with what it needs to know of the rank's place.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Io {
    /// FTI-FF (`ckpt_io = 3`): self-describing files.
    #[default]
    Ftiff,
    /// POSIX (`ckpt_io = 1`): raw files and the group's meta-data files.
    Posix(Group),
}

impl Io {
    /// The I/O mode `cfg` asks for, for a rank at `place` (a rank outside the topology is a
    /// group of its own).
    pub(crate) fn new(cfg: &Config, place: Option<&Place>) -> Io {
        match cfg.io {
            IoMode::Ftiff => Io::Ftiff,
            IoMode::Posix | IoMode::MpiIo => {
                let alone = Place {
                    node: 0,
                    position: 0,
                    group: vec![cfg.rank],
                    group_rank: 0,
                };
                Io::Posix(Group::new(cfg, place.unwrap_or(&alone)))
            }
        }
    }

    /// Which mode.
    pub fn mode(&self) -> IoMode {
        match self {
            Io::Ftiff => IoMode::Ftiff,
            Io::Posix(g) if g.shared_l4 => IoMode::MpiIo,
            Io::Posix(_) => IoMode::Posix,
        }
    }

    /// Whether checkpoints at `level` go into one file shared by every rank (MPI-IO's L4).
    pub(crate) fn shared(&self, level: Level) -> bool {
        matches!(self, Io::Posix(g) if g.shared_l4 && level == Level::L4)
    }

    /// Whether an L3 `RSed` file ends with FTI-FF's trailer (POSIX keeps its MD5 in the meta
    /// data instead: `FTI_RSenc` in `src/postckpt.c`).
    pub(crate) fn rsed_trailer(&self) -> bool {
        matches!(self, Io::Ftiff)
    }

    /// Writes a rank's checkpoint file of `layout` with `data` into `pending` (not collective:
    /// the caller agrees on the outcome). FTI-FF writes the self-describing file, or
    /// updates `base` (the previous file's layout and block table) in place for a differential
    /// checkpoint; POSIX writes the variables' raw bytes, described by the returned file block.
    pub(crate) fn write_file(
        &self,
        pending: &crate::files::Pending,
        (layout, data): (&Layout, &[&[u8]]),
        base: Option<(&Layout, &ftiff::BlockTable)>,
        opts: &ftiff::WriteOptions,
        progress: &(dyn Fn(u64) + Sync),
    ) -> Result<ftiff::Written> {
        let in_file = |e: ftiff::Error| Error::Format(e.with_path(&pending.path));
        match (self, base) {
            (Io::Posix(_), _) => write_posix(&*pending.file, &pending.path, data, progress),
            (Io::Ftiff, Some(old)) => {
                ftiff::update_file(&pending.file, Some(old), layout, data, opts, progress)
                    .map_err(in_file)
            }
            (Io::Ftiff, None) => {
                ftiff::write_file_with_progress(&pending.file, layout, data, opts, progress)
                    .map_err(in_file)
            }
        }
    }

    /// Whether a full write ([`Io::write_file`] without a base) writes every byte, then sets
    /// the length: it may then overwrite an old file (the rank's spare) in place. FTI-FF's
    /// fast integrity writes by blocks and reads what it leaves.
    pub(crate) fn writes_every_byte(&self, opts: &ftiff::WriteOptions) -> bool {
        matches!(self, Io::Posix(_)) || opts.integrity == ftiff::Integrity::Md5
    }

    /// Whether files describe themselves (FTI-FF): the L2 partner copy can then be streamed
    /// while the file is written, its meta data and file block last.
    pub(crate) fn self_describing(&self) -> bool {
        matches!(self, Io::Ftiff)
    }

    /// FTI 1.1's line for the format a checkpoint file is written in at `write_level` (POSIX
    /// files at L1-L3 in MPI-IO mode, and at L4 when the head flushes them).
    pub(crate) fn mode_line(&self, write_level: Level) -> &'static str {
        match self {
            Io::Ftiff => "I/O mode: FTI File Format.",
            io if io.shared(write_level) => "I/O mode: MPI-IO.",
            Io::Posix(_) => "I/O mode: Posix.",
        }
    }
}

/// Refuses the extensions POSIX files cannot carry, before anything is written: each needs
/// what only FTI-FF files hold (block hashes, in-place updates, archived checkpoints'
/// self-description) or a write path POSIX does not have (asynchronous staging).
pub(crate) fn check_config(cfg: &Config) -> Result<()> {
    if cfg.io == IoMode::Ftiff {
        return Ok(());
    }
    let refused = [
        (cfg.async_ckpt, "asynchronous checkpoints (async_ckpt = 1) need ckpt_io = 3 (FTI-FF)"),
        (cfg.dcp, "differential checkpoints (enable_dcp = 1) update FTI-FF files in place: they need ckpt_io = 3"),
        (cfg.fast_integrity, "integrity = fast keeps block hashes in FTI-FF files: it needs ckpt_io = 3"),
        (cfg.keep_ckpts > 1, "keep_ckpts > 1 keeps archived checkpoints, which only FTI-FF files describe: it needs ckpt_io = 3"),
    ];
    match refused.into_iter().find(|(on, _)| *on) {
        Some((_, what)) => Err(Error::IoMode { mode: cfg.io, what }),
        None => Ok(()),
    }
}

/// Refuses an incremental checkpoint (`init_icp`) with POSIX files: it writes an FTI-FF file
/// variable by variable.
pub(crate) fn check_incremental(io: &Io) -> Result<()> {
    match io {
        Io::Ftiff => Ok(()),
        Io::Posix(_) => Err(Error::IoMode {
            mode: io.mode(),
            what: "incremental checkpoints (FTI_InitICP) need ckpt_io = 3 (FTI-FF)",
        }),
    }
}

/// Writes a POSIX file: the variables' bytes in protect order; returns the file block that
/// describes it (checksum, sizes, time), kept in the meta data rather than in the file.
fn write_posix(
    file: &dyn StorageFile,
    path: &Path,
    data: &[&[u8]],
    progress: &(dyn Fn(u64) + Sync),
) -> Result<ftiff::Written> {
    let digest = posix::write_data(file, path, data, progress)?;
    let fs: u64 = data.iter().map(|d| d.len() as u64).sum();
    Ok(ftiff::Written {
        fb: posix_fb(&digest, fs),
        table: None,
        bytes_written: fs,
    })
}

/// The file block that describes a POSIX file of `fs` bytes with MD5 `digest` (kept in the
/// meta data rather than in the file).
pub(crate) fn posix_fb(digest: &ftiff::hash::Digest, fs: u64) -> FileBlock {
    FileBlock {
        checksum: ftiff::hash::checksum_field(digest),
        my_hash: [0; 16],
        mode: [0; 7],
        ckpt_size: fs as i64,
        fs: fs as i64,
        max_fs: fs as i64,
        pt_fs: 0,
        timestamp: ftiff::write::now_ns(),
    }
}

/// The structure a new file continues: an FTI-FF file the previous one's (containers keep
/// their places, removed variables stay); a POSIX file none (it holds the variables of its
/// checkpoint call, in that call's order, as `FTI_WritePosix` writes them).
pub(crate) fn continued<'l>(io: &Io, previous: Option<&'l Layout>) -> Option<&'l Layout> {
    match io {
        Io::Ftiff => previous,
        Io::Posix(_) => None,
    }
}

/// The size of a file written with `layout` and described by `fb`.
pub(crate) fn file_size(io: &Io, layout: &Layout, fb: &FileBlock) -> u64 {
    match io {
        Io::Ftiff => layout.file_size(),
        Io::Posix(_) => fb.fs.max(0) as u64,
    }
}

/// Records a size L2 or L3 keeps of a written file (`ptFs`, `maxFs`): FTI-FF rewrites the
/// file's block; POSIX keeps it in the meta data, written at [`commit`].
pub(crate) fn set_size(
    io: &Io,
    file: &dyn StorageFile,
    path: &Path,
    fb: FileBlock,
    change: impl FnOnce(&mut FileBlock),
) -> Result<FileBlock> {
    match io {
        Io::Ftiff => crate::level::l2::set_fb(file, path, change),
        Io::Posix(_) => {
            let mut fb = fb;
            change(&mut fb);
            Ok(fb)
        }
    }
}

/// The size of a published rank file (`fs`, its own bytes): from its file block (FTI-FF) or
/// its length (POSIX; an L3 file is back to its size once encoded, as `FTI_RSenc` leaves it).
pub(crate) fn published_size(io: &Io, file: &dyn StorageFile, path: &Path) -> Result<u64> {
    match io {
        Io::Ftiff => crate::level::l2::read_fb(file, path).map(|fb| fb.fs.max(0) as u64),
        Io::Posix(_) => file.len().map_err(|e| Error::io(path, e)),
    }
}

/// A verified checkpoint's content: its bytes and where each variable is.
pub(crate) enum Stored<'a> {
    /// An FTI-FF file.
    Ftiff(Box<Checkpoint<'a>>),
    /// A POSIX file: its bytes, its variables `(id, size)` in order (from the meta data).
    Posix {
        bytes: &'a [u8],
        vars: &'a [(i32, u64)],
        timestamp: i64,
    },
}

impl Stored<'_> {
    /// The variables, in protect order.
    pub fn vars(&self) -> Vec<VarInfo> {
        match self {
            Stored::Ftiff(c) => c.vars().to_vec(),
            Stored::Posix { vars, .. } => vars
                .iter()
                .enumerate()
                .map(|(i, &(id, size))| VarInfo {
                    id,
                    idx: i as u32,
                    size,
                    removed: false,
                })
                .collect(),
        }
    }

    /// Variable `id`.
    pub fn var(&self, id: i32) -> Option<VarInfo> {
        self.vars().into_iter().find(|v| v.id == id)
    }

    /// Copies variable `id` into `out` (of its size); `path` names the file in errors.
    pub fn copy_var_into(&self, id: i32, out: &mut [u8], path: &Path) -> Result<()> {
        match self {
            Stored::Ftiff(c) => c
                .copy_var_into(id, out)
                .map_err(|e| Error::Format(e.with_path(path))),
            Stored::Posix { bytes, vars, .. } => {
                let at = vars.iter().position(|v| v.0 == id).ok_or(Error::Variable {
                    id,
                    what: "not in the checkpoint".into(),
                })?;
                let start: u64 = vars[..at].iter().map(|v| v.1).sum();
                let size = vars[at].1;
                let src = usize::try_from(start)
                    .ok()
                    .zip(usize::try_from(start + size).ok())
                    .and_then(|(a, b)| bytes.get(a..b))
                    .ok_or_else(|| Error::PosixFile {
                        path: path.to_path_buf(),
                        what: format!(
                            "variable {id} at {start}..{} is beyond the file",
                            start + size
                        ),
                    })?;
                if out.len() != src.len() {
                    return Err(Error::Variable {
                        id,
                        what: format!(
                            "the checkpoint holds {size} bytes, the variable has {}",
                            out.len()
                        ),
                    });
                }
                out.copy_from_slice(src);
                Ok(())
            }
        }
    }

    /// The structure a next FTI-FF checkpoint would continue.
    pub fn layout(&self) -> Result<Layout> {
        match self {
            Stored::Ftiff(c) => Ok(c.layout()),
            Stored::Posix { vars, .. } => {
                let sizes: Vec<VarSize> = vars
                    .iter()
                    .map(|&(id, size)| VarSize { id, size })
                    .collect();
                Ok(Layout::plan(None, &sizes)?)
            }
        }
    }

    /// File size.
    pub fn fs(&self) -> u64 {
        match self {
            Stored::Ftiff(c) => c.fs(),
            Stored::Posix { bytes, .. } => bytes.len() as u64,
        }
    }

    /// When it was written (ns since the epoch; a POSIX file's modification time).
    pub fn timestamp(&self) -> i64 {
        match self {
            Stored::Ftiff(c) => c.fb.timestamp,
            Stored::Posix { timestamp, .. } => *timestamp,
        }
    }
}

/// A file verified in full, mapped.
pub(crate) struct Verified {
    /// The file.
    pub map: MappedFile,
    /// The group's largest file (`maxFs`).
    pub max_fs: u64,
    /// A POSIX file's variables `(id, size)`.
    pub vars: Option<Vec<(i32, u64)>>,
    /// Where the rank's bytes are in the file, and how many (a shared MPI-IO file holds every
    /// rank's).
    pub part: (usize, usize),
}

/// Opens and verifies one of this rank's checkpoint files: FTI-FF's own hashes, or POSIX's
/// size and MD5 against the group's meta data.
pub(crate) fn verify_own(
    dirs: &Dirs,
    found: &Found,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<Verified> {
    match &dirs.io {
        Io::Ftiff => {
            let with_path = |e: ftiff::Error| Error::Format(e.with_path(&found.path));
            let map = dirs.storage.map(&found.path).map_err(with_path)?;
            let max_fs = Checkpoint::verified(&map, progress)
                .map_err(with_path)?
                .fb
                .max_fs
                .max(0) as u64;
            let part = (0, map.bytes().len());
            Ok(Verified {
                map,
                max_fs,
                vars: None,
                part,
            })
        }
        Io::Posix(g) => {
            let name = FileName::new(found.id, FileKind::Rank, dirs.rank).to_string();
            let (meta_path, meta, offset) = if mpiio::parse_name(&found.path).is_some() {
                mpiio::locate(dirs, found.id, &name)?
            } else {
                let (p, m) = find_meta(dirs, g, found.level, g.rank, &name)?;
                (p, m, 0)
            };
            let map = dirs
                .storage
                .map(&found.path)
                .map_err(|e| Error::Format(e.with_path(&found.path)))?;
            let part = mpiio::part(map.bytes(), &found.path, offset, meta.size)?;
            check_bytes(
                part.1,
                &found.path,
                (meta.size, &meta.checksum, "ckpt_checksum"),
                &meta_path,
            )?;
            progress(meta.size);
            let part = (part.0, part.1.len());
            Ok(Verified {
                map,
                max_fs: meta.maxs,
                vars: Some(meta.vars),
                part,
            })
        }
    }
}

/// Checks bytes against a size and MD5 of the meta data.
fn check_bytes(
    bytes: &[u8],
    path: &Path,
    (size, checksum, key): (u64, &str, &str),
    meta: &Path,
) -> Result<()> {
    if bytes.len() as u64 != size {
        return Err(Error::PosixFile {
            path: path.to_path_buf(),
            what: format!(
                "{} bytes, the meta data ({}) says {size}",
                bytes.len(),
                meta.display()
            ),
        });
    }
    let got = ftiff::hash::to_hex(&ftiff::hash::md5(bytes));
    if got != checksum {
        return Err(posix::checksum_mismatch(path, &got, (key, checksum), meta));
    }
    Ok(())
}

/// Section `section` of the group's meta data at `level` that describes the file `name`: in
/// the meta-data file, or in the one it replaced (kept until the checkpoint is complete on
/// every rank).
pub(crate) fn find_meta(
    dirs: &Dirs,
    g: &Group,
    level: Level,
    section: u32,
    name: &str,
) -> Result<(std::path::PathBuf, RankMeta)> {
    find_meta_naming(dirs, g, (level, section), name, |n| n == name)
}

/// [`find_meta`] for the section that describes a file whose name `wanted` accepts
/// (`name` says which in errors).
fn find_meta_naming(
    dirs: &Dirs,
    g: &Group,
    (level, section): (Level, u32),
    name: &str,
    wanted: impl Fn(&str) -> bool,
) -> Result<(std::path::PathBuf, RankMeta)> {
    let path = g.meta_path(&dirs.meta, level);
    let mut first_error = None;
    for p in [path.clone(), Group::previous(&path)] {
        let found =
            posix::read(&*dirs.storage, &p).and_then(|t| posix::parse_rank(&p, &t, section));
        match found {
            Ok(m) if wanted(&m.name) => return Ok((p, m)),
            Ok(m) => {
                first_error.get_or_insert(Error::meta(
                    &p,
                    &format!("{section}:ckpt_file_name"),
                    format!("names {}, not {name}", m.name),
                ));
            }
            Err(Error::Io { err, .. }) if err.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    Err(first_error.unwrap_or_else(|| {
        Error::io(
            &path,
            std::io::Error::new(
                std::io::ErrorKind::NotFound,
                format!("no meta data for {name}"),
            ),
        )
    }))
}

/// Verifies the redundancy file this rank keeps for checkpoint `id` at `level` (an L2
/// partner copy of its left partner's file, or its L3 `RSed` file).
pub(crate) fn verify_copy(dirs: &Dirs, id: i32, level: Level, copy: &Found) -> Result<()> {
    match (&dirs.io, level) {
        (Io::Ftiff, Level::L3) => {
            crate::level::l3::verify_rsed(&*dirs.storage, &copy.path).map(|_| ())
        }
        (Io::Ftiff, _) => (dirs.storage.map(&copy.path))
            .and_then(|map| Checkpoint::verified(&map, &|_| {}).map(|_| ()))
            .map_err(|e| Error::Format(e.with_path(&copy.path))),
        (Io::Posix(g), Level::L3) => {
            let name = FileName::new(id, FileKind::Rank, dirs.rank).to_string();
            let (meta_path, m) = find_meta(dirs, g, level, g.rank, &name)?;
            let rsed = m.rsed_checksum.as_deref().ok_or_else(|| {
                Error::meta(
                    &meta_path,
                    &format!("{}:rsed_checksum", g.rank),
                    "missing".into(),
                )
            })?;
            posix::check_file(
                &*dirs.storage,
                &copy.path,
                (m.maxs, rsed, "rsed_checksum"),
                &meta_path,
            )
        }
        (Io::Posix(g), _) => {
            let k = g.ranks.len() as u32;
            let left = (g.rank + k - 1) % k;
            // The left partner's section names its file (by its rank among all processes,
            // which with heads is not its rank in the group's communicator).
            let of_id = |name: &str| {
                FileName::parse(name).is_some_and(|n| n.kind == FileKind::Rank && n.id == id)
            };
            let name = format!("the left partner's file of checkpoint {id}");
            let (meta_path, m) = find_meta_naming(dirs, g, (level, left), &name, of_id)?;
            posix::check_file(
                &*dirs.storage,
                &copy.path,
                (m.size, &m.checksum, "ckpt_checksum"),
                &meta_path,
            )
        }
    }
}

/// The group's largest file, this rank's file size and its MD5 (hex) of checkpoint `id` at
/// `level`, from the meta data (POSIX; `None` for FTI-FF, whose files and trailers carry them).
pub(crate) fn meta_sizes(dirs: &Dirs, id: i32, level: Level) -> Option<(u64, u64, String)> {
    let Io::Posix(g) = &dirs.io else {
        return None;
    };
    let name = FileName::new(id, FileKind::Rank, dirs.rank).to_string();
    find_meta(dirs, g, level, g.rank, &name)
        .ok()
        .map(|(_, m)| (m.maxs, m.size, m.checksum))
}
