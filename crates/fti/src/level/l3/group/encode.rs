//! Encoding a group: its Rank files get `maxFs`, its `RSed` files are written.

use std::path::{Path, PathBuf};

use ftiff::hash::{self, Md5Stream};
use ftiff::l3::{apply, rsed_trailer, Code, Matrix};
use ftiff::raw::{fb, FileBlock};
use ftiff::{write, Checkpoint, Integrity, MappedFile, Sink as _};
use ftiff::{Error, ErrorKind, FileKind, Record, Result};
use rayon::prelude::*;

use crate::storage::{Storage, StorageFile};

use super::Group;

/// Values of the files written that are not derived from the data, and durability.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Options {
    /// Timestamp of the `RSed` trailers written; `None`: the time of encoding, as FTI does.
    pub timestamp: Option<i64>,
    /// `fsync` every file before it is renamed into place, and the directory after (on by
    /// default; turn off only for scratch files).
    pub sync: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            timestamp: None,
            sync: true,
        }
    }
}

impl Options {
    fn timestamp(&self) -> i64 {
        self.timestamp.unwrap_or_else(write::now_ns)
    }
}

/// What [`encode_group`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Encoded {
    /// The group's largest Rank file.
    pub max_fs: u64,
    /// Rank files whose `FB.maxFs` (and hence `myHash`) was rewritten.
    pub max_fs_set: Vec<PathBuf>,
    /// `RSed` files written, in group order.
    pub written: Vec<PathBuf>,
}

/// Writes the `RSed` files of a group from its Rank files, as FTI 1.1 does at L3: every Rank
/// file must verify; those whose `FB.maxFs` is not the group's largest file size get it set
/// first (the code covers the file block, so this comes before encoding).
pub fn encode_group(storage: &dyn Storage, group: &Group, opts: &Options) -> Result<Encoded> {
    let code = Code::new(group.k())?;
    // One MD5 stream per file: check them in parallel.
    let mut files = (0..group.k())
        .into_par_iter()
        .map(|g| {
            let path = group.path(FileKind::Rank, g);
            let (fb, map) = open_rank(&path).map_err(|e| e.with_path(&path))?;
            Ok((path, fb, map))
        })
        .collect::<Result<Vec<_>>>()?;
    let max_fs = files.iter().map(|f| f.1.fs as u64).max().unwrap_or(0);
    let mut max_fs_set = Vec::new();
    for (path, fb, map) in &mut files {
        if fb.max_fs != max_fs as i64 {
            *map =
                set_max_fs(storage, path, fb, max_fs, opts.sync).map_err(|e| e.with_path(path))?;
            max_fs_set.push(path.clone());
        }
    }
    let inputs: Vec<&[u8]> = files
        .iter()
        .map(|(_, fb, map)| prefix(map.bytes(), fb.fs as u64))
        .collect();
    let targets: Vec<(PathBuf, u64)> = files
        .iter()
        .enumerate()
        .map(|(g, (_, fb, _))| (group.path(FileKind::Rsed, g), fb.fs as u64))
        .collect();
    let all: Vec<usize> = (0..group.k()).collect();
    let temps = write_code(
        storage,
        &code.encoder(&all),
        &inputs,
        max_fs,
        &targets,
        opts,
    )?;
    drop(files);
    let written = temps.iter().map(|t| t.target.clone()).collect();
    publish(storage, temps, &group.dir, opts.sync)?;
    Ok(Encoded {
        max_fs,
        max_fs_set,
        written,
    })
}

/// The first `n` bytes (all of them if shorter).
pub(super) fn prefix(bytes: &[u8], n: u64) -> &[u8] {
    bytes.get(..n as usize).unwrap_or(bytes)
}

/// Opens a Rank file and checks that it is intact: `myHash`, and the checksum, which covers
/// every byte after the file block (in FTI 1.1 files the chunk hashes only repeat that check,
/// at the cost of a second MD5 pass). Fast files, whose checksum covers the meta data only,
/// get their chunk hashes checked too. Bytes after `fs` are ignored, as FTI does.
pub(super) fn open_rank(path: &Path) -> Result<(FileBlock, MappedFile)> {
    let map = MappedFile::open(path)?;
    let bytes = map.bytes();
    let ckpt = Checkpoint::parse(bytes)?;
    let fb = ckpt.fb;
    let problem = match ckpt.integrity {
        Integrity::Md5 => {
            let body = bytes.get(fb::SIZE..ckpt.fs() as usize).unwrap_or_default();
            fb_problem(&ckpt.fb, 0, body)
        }
        Integrity::Fast { .. } => ckpt
            .verify(&|_| {})
            .into_iter()
            .find(|p| !matches!(p.kind(), ErrorKind::TrailingBytes { .. })),
    };
    match problem {
        Some(p) => Err(p),
        None => Ok((fb, map)),
    }
}

/// The first problem with a file block at `fb_offset`: its `myHash`, then its checksum as the
/// MD5 of `covered`.
pub(super) fn fb_problem(fb: &FileBlock, fb_offset: u64, covered: &[u8]) -> Option<Error> {
    if let Err(e) = fb.check_my_hash(fb_offset) {
        return Some(e);
    }
    let checksum = hash::md5(covered);
    (hash::checksum_field(&checksum) != fb.checksum).then(|| {
        Error::at(
            fb_offset + fb::CHECKSUM as u64,
            ErrorKind::HashMismatch {
                record: Record::FileBlock,
                field: "checksum",
                stored: fb.checksum_display(),
                computed: hash::to_hex(&checksum),
            },
        )
    })
}

/// Rewrites a Rank file with `FB.maxFs = max_fs` (new `myHash`, same data and timestamp).
pub(super) fn set_max_fs(
    storage: &dyn Storage,
    path: &Path,
    fb: &mut FileBlock,
    max_fs: u64,
    sync: bool,
) -> Result<MappedFile> {
    fb.max_fs = max_fs as i64;
    fb.seal();
    let temp = TempFile::create(storage, path)?;
    let source = storage
        .open(path, false)
        .map_err(|e| Error::from(e).with_path(path))?;
    let io = |e| Error::from(e).with_path(&temp.path);
    crate::storage::copy(&*source, &*temp.file).map_err(io)?;
    temp.file.write_all_at(&fb.encode(), 0).map_err(io)?;
    if sync {
        temp.file.sync().map_err(io)?;
    }
    let dir = path.parent().unwrap_or(Path::new("."));
    publish(storage, vec![temp], dir, sync)?;
    MappedFile::open(path)
}

/// A file being written under a temporary name next to its target; removed unless published.
pub(super) struct TempFile<'s> {
    storage: &'s dyn Storage,
    pub(super) path: PathBuf,
    pub(super) target: PathBuf,
    pub(super) file: Box<dyn StorageFile>,
    published: bool,
}

impl<'s> TempFile<'s> {
    /// A new temporary file for `target` (one left by an interrupted run is replaced).
    pub(super) fn create(storage: &'s dyn Storage, target: &Path) -> Result<TempFile<'s>> {
        let name = target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let path = target.with_file_name(format!(".{name}.l3tmp"));
        let _ = storage.remove_file(&path);
        let file = storage
            .create(&path)
            .map_err(|e| Error::from(e).with_path(&path))?;
        Ok(TempFile {
            storage,
            path,
            target: target.to_path_buf(),
            file,
            published: false,
        })
    }
}

impl Drop for TempFile<'_> {
    fn drop(&mut self) {
        if !self.published {
            let _ = self.storage.remove_file(&self.path);
        }
    }
}

/// Renames synced temporary files over their targets, then syncs the directory.
pub(super) fn publish(
    storage: &dyn Storage,
    temps: Vec<TempFile<'_>>,
    dir: &Path,
    sync: bool,
) -> Result<()> {
    for mut t in temps {
        storage
            .rename(&t.path, &t.target)
            .map_err(|e| Error::from(e).with_path(&t.target))?;
        t.published = true;
    }
    if !sync {
        return Ok(());
    }
    storage
        .sync_dir(dir)
        .map_err(|e| Error::from(e).with_path(dir))
}

/// Pieces at least this long are hashed and written in parallel; for shorter ones waking
/// other threads costs more than it saves.
pub(super) const PARALLEL_PIECE: usize = 64 << 10;

/// Runs `f` on each output and its piece, in parallel when the pieces are large.
pub(super) fn for_each_output<T: Send>(
    outs: &mut [T],
    pieces: &[&[u8]],
    f: impl Fn(&mut T, &[u8]) -> Result<()> + Sync,
) -> Result<()> {
    if pieces.first().is_some_and(|p| p.len() >= PARALLEL_PIECE) {
        outs.par_iter_mut()
            .zip(pieces.par_iter())
            .try_for_each(|(o, p)| f(o, p))
    } else {
        outs.iter_mut().zip(pieces).try_for_each(|(o, p)| f(o, p))
    }
}

/// Encodes the rows of `m` into new `RSed` files: code, MD5 of the code (one stream per file,
/// in parallel), trailer, sync. `targets` = (final path, the rank's Rank file size).
pub(super) fn write_code<'s>(
    storage: &'s dyn Storage,
    m: &Matrix,
    inputs: &[&[u8]],
    max_fs: u64,
    targets: &[(PathBuf, u64)],
    opts: &Options,
) -> Result<Vec<TempFile<'s>>> {
    let timestamp = opts.timestamp();
    let mut outs = targets
        .iter()
        .map(|(path, _)| Ok((TempFile::create(storage, path)?, Md5Stream::default())))
        .collect::<Result<Vec<_>>>()?;
    apply(m, inputs, max_fs as usize, |offset, pieces| {
        for_each_output(&mut outs, pieces, |(temp, md5), piece| {
            md5.update(piece);
            temp.file
                .write_all_at(piece, offset as u64)
                .map_err(|e| Error::from(e).with_path(&temp.path))
        })
    })?;
    let mut temps = Vec::with_capacity(outs.len());
    for ((temp, md5), (_, ckpt_size)) in outs.into_iter().zip(targets) {
        let trailer = rsed_trailer(&md5.finish(), max_fs, *ckpt_size, timestamp);
        let io = |e| Error::from(e).with_path(&temp.path);
        temp.file
            .write_all_at(&trailer.encode(), max_fs)
            .map_err(io)?;
        if opts.sync {
            temp.file.sync().map_err(io)?;
        }
        temps.push(temp);
    }
    Ok(temps)
}
