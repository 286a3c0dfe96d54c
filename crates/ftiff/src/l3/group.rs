//! One L3 group's files in one directory: writing its `RSed` files and rebuilding what is lost.
//!
//! This is what the offline tools need; which node directory a file lives in is the runtime's
//! business. Every file is written under a temporary name (`.<name>.l3tmp`), synced, and
//! renamed over its final name, then the directory is synced: a crash leaves either the old
//! file or the complete new one.

use std::collections::BTreeSet;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use super::code::{apply, Code, Shard};
use super::matrix::Matrix;
use crate::blocks::Integrity;
use crate::error::{Error, ErrorKind, Record, Result};
use crate::hash::{self, Digest, Md5Stream};
use crate::raw::{fb, Cursor, FileBlock};
use crate::read::{Checkpoint, MappedFile};
use crate::rsed::RsedFile;
use crate::write;

/// The two kinds of files of an L3 group.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FileKind {
    /// `Ckpt<id>-Rank<r>.fti`, the rank's checkpoint (with `maxFs` set).
    Rank,
    /// `Ckpt<id>-RSed<r>.fti`, the rank's Reed-Solomon code and trailer.
    Rsed,
}

/// Parses `Ckpt<id>-Rank<r>.fti` or `Ckpt<id>-RSed<r>.fti` into (id, kind, rank).
pub fn parse_name(name: &str) -> Option<(u32, FileKind, u32)> {
    let rest = name.strip_prefix("Ckpt")?.strip_suffix(".fti")?;
    let (id, kind, rank) = if let Some((id, rank)) = rest.split_once("-Rank") {
        (id, FileKind::Rank, rank)
    } else {
        let (id, rank) = rest.split_once("-RSed")?;
        (id, FileKind::Rsed, rank)
    };
    let number = |s: &str| {
        if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        s.parse::<u32>().ok()
    };
    Some((number(id)?, kind, number(rank)?))
}

/// The file name of a group member.
pub fn file_name(id: u32, kind: FileKind, rank: u32) -> String {
    match kind {
        FileKind::Rank => format!("Ckpt{id}-Rank{rank}.fti"),
        FileKind::Rsed => format!("Ckpt{id}-RSed{rank}.fti"),
    }
}

/// A group: its directory, checkpoint id and global ranks in group order (group rank = index).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Group {
    /// Directory holding the group's files.
    pub dir: PathBuf,
    /// Checkpoint id (from the file names).
    pub id: u32,
    /// Global ranks; position = group rank, i.e. row and column of the code matrix.
    pub ranks: Vec<u32>,
}

impl Group {
    /// The group in `dir`. Without `id`, the directory must hold files of one checkpoint
    /// only. Without `ranks`, the group is every rank with a Rank or `RSed` file of that
    /// checkpoint, in ascending order (a rank whose two files are both lost is then unknown:
    /// give `ranks` for it).
    pub fn find(dir: &Path, id: Option<u32>, ranks: Option<&[u32]>) -> Result<Group> {
        let mut found = Vec::new();
        let entries = std::fs::read_dir(dir).map_err(|e| Error::from(e).with_path(dir))?;
        for entry in entries {
            let entry = entry.map_err(|e| Error::from(e).with_path(dir))?;
            if let Some(parsed) = entry.file_name().to_str().and_then(parse_name) {
                found.push(parsed);
            }
        }
        if let Some(ranks) = ranks {
            let distinct: BTreeSet<&u32> = ranks.iter().collect();
            if ranks.is_empty() || distinct.len() != ranks.len() {
                return Err(Error::new(ErrorKind::InvalidGroup {
                    what: "the group's ranks must be distinct, and at least one",
                    value: ranks.len() as i64,
                })
                .with_path(dir));
            }
            found.retain(|(_, _, r)| ranks.contains(r));
        }
        let ids: BTreeSet<u32> = found.iter().map(|f| f.0).collect();
        let id = match (id, ids.len()) {
            (Some(id), _) if ids.contains(&id) => id,
            (Some(id), _) => {
                return Err(Error::new(ErrorKind::NoGroupFiles { id: Some(id) }).with_path(dir))
            }
            (None, 1) => ids.into_iter().next().unwrap_or_default(),
            (None, 0) => {
                return Err(Error::new(ErrorKind::NoGroupFiles { id: None }).with_path(dir))
            }
            (None, _) => {
                return Err(Error::new(ErrorKind::SeveralCheckpoints {
                    ids: ids.into_iter().collect(),
                })
                .with_path(dir))
            }
        };
        let ranks = match ranks {
            Some(r) => r.to_vec(),
            None => found
                .iter()
                .filter(|f| f.0 == id)
                .map(|f| f.2)
                .collect::<BTreeSet<u32>>()
                .into_iter()
                .collect(),
        };
        Ok(Group {
            dir: dir.to_path_buf(),
            id,
            ranks,
        })
    }

    /// Group size k.
    pub fn k(&self) -> usize {
        self.ranks.len()
    }

    /// Path of the file of group rank `g`.
    pub fn path(&self, kind: FileKind, g: usize) -> PathBuf {
        let rank = self.ranks.get(g).copied().unwrap_or_default();
        self.dir.join(file_name(self.id, kind, rank))
    }
}

/// The trailer of an `RSed` file (`docs/ftiff-format.md`, *L3 Reed-Solomon*): `fs = maxFs`,
/// `ckptSize` = the rank's own Rank file size, `ptFs = -1`, checksum over the code, zero padding.
pub fn rsed_trailer(code_md5: &Digest, max_fs: u64, ckpt_size: u64, timestamp: i64) -> FileBlock {
    let mut trailer = write::file_block(code_md5, max_fs, max_fs as i64, -1, timestamp);
    trailer.ckpt_size = ckpt_size as i64;
    trailer.my_hash = hash::my_hash(&trailer);
    trailer
}

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
pub fn encode_group(group: &Group, opts: &Options) -> Result<Encoded> {
    let code = Code::new(group.k())?;
    // One MD5 stream per file: check them in parallel.
    let mut files = (0..group.k())
        .into_par_iter()
        .map(|g| {
            let path = group.path(FileKind::Rank, g);
            let (ckpt, map) = open_rank(&path).map_err(|e| e.with_path(&path))?;
            Ok((path, ckpt.fb, map))
        })
        .collect::<Result<Vec<_>>>()?;
    let max_fs = files.iter().map(|f| f.1.fs as u64).max().unwrap_or(0);
    let mut max_fs_set = Vec::new();
    for (path, fb, map) in &mut files {
        if fb.max_fs != max_fs as i64 {
            *map = set_max_fs(path, fb, max_fs, opts.sync).map_err(|e| e.with_path(path))?;
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
    let temps = write_code(&code.encoder(&all), &inputs, max_fs, &targets, opts)?;
    drop(files);
    let written = temps.iter().map(|t| t.target.clone()).collect();
    publish(temps, &group.dir, opts.sync)?;
    Ok(Encoded {
        max_fs,
        max_fs_set,
        written,
    })
}

/// The first `n` bytes (all of them if shorter).
fn prefix(bytes: &[u8], n: u64) -> &[u8] {
    bytes.get(..n as usize).unwrap_or(bytes)
}

/// Opens a Rank file and checks that it is intact: `myHash`, and the checksum, which covers
/// every byte after the file block (in FTI 1.1 files the chunk hashes only repeat that check,
/// at the cost of a second MD5 pass). Fast files, whose checksum covers the meta data only,
/// get their chunk hashes checked too. Bytes after `fs` are ignored, as FTI does.
fn open_rank(path: &Path) -> Result<(Checkpoint, MappedFile)> {
    let map = MappedFile::open(path)?;
    let bytes = map.bytes();
    let ckpt = Checkpoint::parse(bytes)?;
    let problem = match ckpt.integrity {
        Integrity::Md5 => {
            let body = bytes.get(fb::SIZE..ckpt.fs() as usize).unwrap_or_default();
            fb_problem(&ckpt.fb, 0, body)
        }
        Integrity::Fast { .. } => ckpt
            .verify(bytes, &|_| {})
            .into_iter()
            .find(|p| !matches!(p.kind(), ErrorKind::TrailingBytes { .. })),
    };
    match problem {
        Some(p) => Err(p),
        None => Ok((ckpt, map)),
    }
}

/// The first problem with a file block at `fb_offset`: its `myHash`, then its checksum as the
/// MD5 of `covered`.
fn fb_problem(fb: &FileBlock, fb_offset: u64, covered: &[u8]) -> Option<Error> {
    let my_hash = hash::my_hash(fb);
    if my_hash != fb.my_hash {
        return Some(Error::at(
            fb_offset + fb::MY_HASH as u64,
            ErrorKind::HashMismatch {
                record: Record::FileBlock,
                field: "myHash",
                stored: hash::to_hex(&fb.my_hash),
                computed: hash::to_hex(&my_hash),
            },
        ));
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
fn set_max_fs(path: &Path, fb: &mut FileBlock, max_fs: u64, sync: bool) -> Result<MappedFile> {
    fb.max_fs = max_fs as i64;
    fb.my_hash = hash::my_hash(fb);
    let temp = TempFile::create(path)?;
    std::fs::copy(path, &temp.path).map_err(|e| Error::from(e).with_path(&temp.path))?;
    let io = |e| Error::from(e).with_path(&temp.path);
    temp.file.write_all_at(&fb.encode(), 0).map_err(io)?;
    if sync {
        temp.file.sync_all().map_err(io)?;
    }
    let dir = path.parent().unwrap_or(Path::new("."));
    publish(vec![temp], dir, sync)?;
    MappedFile::open(path)
}

/// A file being written under a temporary name next to its target; removed unless published.
struct TempFile {
    path: PathBuf,
    target: PathBuf,
    file: File,
    published: bool,
}

impl TempFile {
    fn create(target: &Path) -> Result<TempFile> {
        let name = target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let path = target.with_file_name(format!(".{name}.l3tmp"));
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .map_err(|e| Error::from(e).with_path(&path))?;
        Ok(TempFile {
            path,
            target: target.to_path_buf(),
            file,
            published: false,
        })
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        if !self.published {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Renames synced temporary files over their targets, then syncs the directory.
fn publish(temps: Vec<TempFile>, dir: &Path, sync: bool) -> Result<()> {
    for mut t in temps {
        std::fs::rename(&t.path, &t.target).map_err(|e| Error::from(e).with_path(&t.target))?;
        t.published = true;
    }
    if !sync {
        return Ok(());
    }
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| Error::from(e).with_path(dir))
}

/// Pieces at least this long are hashed and written in parallel; for shorter ones waking
/// other threads costs more than it saves.
const PARALLEL_PIECE: usize = 64 << 10;

/// Runs `f` on each output and its piece, in parallel when the pieces are large.
fn for_each_output<T: Send>(
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
fn write_code(
    m: &Matrix,
    inputs: &[&[u8]],
    max_fs: u64,
    targets: &[(PathBuf, u64)],
    opts: &Options,
) -> Result<Vec<TempFile>> {
    let timestamp = opts.timestamp();
    let mut outs = targets
        .iter()
        .map(|(path, _)| Ok((TempFile::create(path)?, Md5Stream::default())))
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
            temp.file.sync_all().map_err(io)?;
        }
        temps.push(temp);
    }
    Ok(temps)
}

/// The state of one file of a group.
#[derive(Debug)]
pub enum FileStatus {
    /// Present, every hash verifies, consistent with the group.
    Intact,
    /// Not in the directory.
    Missing,
    /// Present but not usable: the first problem found. Treated as lost.
    Unusable(Error),
}

/// One file of a group and its state.
#[derive(Debug)]
pub struct FileState {
    /// Where it is (or belongs).
    pub path: PathBuf,
    /// Rank or `RSed`.
    pub kind: FileKind,
    /// Group rank.
    pub group_rank: usize,
    /// What was found.
    pub status: FileStatus,
}

/// Every file of a group checked, before anything is rebuilt.
#[derive(Debug)]
pub struct Survey {
    /// The group.
    pub group: Group,
    /// The group's largest file size, as the intact files say (`None`: no intact file).
    pub max_fs: Option<u64>,
    /// Rank files then `RSed` files, each in group order.
    pub files: Vec<FileState>,
    ranks: Vec<Option<(u64, MappedFile)>>,
    rseds: Vec<Option<(u64, MappedFile)>>,
    /// `RSed` files whose code was compared with the Rank files.
    checked: Vec<bool>,
}

impl Survey {
    /// Checks every file of `group`: hashes, the group's `maxFs`, each `RSed` trailer's
    /// `ckptSize` against its Rank file and, when every Rank file is intact, the code itself.
    /// A file that fails is [`FileStatus::Unusable`]; it does not stop the survey.
    pub fn new(group: &Group) -> Result<Survey> {
        let k = group.k();
        Code::new(k)?;
        // One MD5 stream per file: check them in parallel.
        let (rank_states, rsed_states) = rayon::join(
            || {
                (0..k)
                    .into_par_iter()
                    .map(|g| rank_state(group, g))
                    .collect::<Vec<_>>()
            },
            || {
                (0..k)
                    .into_par_iter()
                    .map(|g| rsed_state(group, g))
                    .collect::<Vec<_>>()
            },
        );
        let (mut files, ranks): (Vec<_>, Vec<_>) = rank_states.into_iter().unzip();
        let (rsed_files, rseds): (Vec<_>, Vec<_>) = rsed_states.into_iter().unzip();
        files.extend(rsed_files);
        let mut survey = Survey {
            group: group.clone(),
            max_fs: None,
            files,
            ranks,
            rseds,
            checked: vec![false; k],
        };
        survey.agree_on_sizes()?;
        if survey.ranks.iter().all(Option::is_some) {
            let intact: Vec<usize> = (0..k).filter(|&g| survey.rseds[g].is_some()).collect();
            let stale = survey.compare_code(&intact)?;
            if !intact.is_empty() && stale.len() == intact.len() {
                return Err(Error::new(ErrorKind::WrongGroup).with_path(&group.dir));
            }
            survey.mark_stale(&stale);
        }
        Ok(survey)
    }

    /// Files missing or unusable.
    pub fn lost(&self) -> usize {
        self.files
            .iter()
            .filter(|f| !matches!(f.status, FileStatus::Intact))
            .count()
    }

    /// The group's `maxFs`: Rank files define it and must agree; an `RSed` file with another
    /// `maxFs`, or whose `ckptSize` differs from its intact Rank file's size, is unusable.
    fn agree_on_sizes(&mut self) -> Result<()> {
        let k = self.group.k();
        let mut max_fs: Option<(u64, usize)> = None;
        for g in 0..k {
            let Some((_, map)) = &self.ranks[g] else {
                continue;
            };
            let fs = read_fb(map.bytes(), 0)?.max_fs as u64;
            match max_fs {
                None => max_fs = Some((fs, g)),
                Some((m, _)) if m == fs => {}
                Some((m, _)) => {
                    return Err(Error::at(
                        fb::MAX_FS as u64,
                        ErrorKind::GroupMismatch {
                            record: Record::FileBlock,
                            field: "maxFs",
                            value: fs as i64,
                            expected: m as i64,
                        },
                    )
                    .with_path(&self.files[g].path))
                }
            }
        }
        // With every Rank file present, maxFs is their largest size (a file with valid hashes
        // but a larger maxFs would otherwise make the rebuild write that much).
        let largest = self.ranks.iter().flatten().map(|(fs, _)| *fs).max();
        if let (Some((m, g)), Some(largest), true) =
            (max_fs, largest, self.ranks.iter().all(Option::is_some))
        {
            if m != largest {
                return Err(Error::at(
                    fb::MAX_FS as u64,
                    ErrorKind::GroupMismatch {
                        record: Record::FileBlock,
                        field: "maxFs",
                        value: m as i64,
                        expected: largest as i64,
                    },
                )
                .with_path(&self.files[g].path));
            }
        }
        for g in 0..k {
            let Some((ckpt_size, map)) = &self.rseds[g] else {
                continue;
            };
            let code_len = map.bytes().len() as u64 - fb::SIZE as u64;
            let expected = match max_fs {
                Some((m, _)) => m,
                None => {
                    max_fs = Some((code_len, k + g));
                    code_len
                }
            };
            let rank_fs = self.ranks[g].as_ref().map(|(fs, _)| *fs);
            let problem = if code_len != expected {
                Some((fb::MAX_FS, "maxFs", code_len, expected))
            } else if rank_fs.is_some_and(|fs| fs != *ckpt_size) {
                Some((
                    fb::CKPT_SIZE,
                    "ckptSize",
                    *ckpt_size,
                    rank_fs.unwrap_or_default(),
                ))
            } else {
                None
            };
            if let Some((field_offset, field, value, expected)) = problem {
                self.files[k + g].status = FileStatus::Unusable(Error::at(
                    code_len + field_offset as u64,
                    ErrorKind::GroupMismatch {
                        record: Record::FileBlock,
                        field,
                        value: value as i64,
                        expected: expected as i64,
                    },
                ));
                self.rseds[g] = None;
            }
        }
        self.max_fs = max_fs.map(|(m, _)| m);
        Ok(())
    }

    /// Encodes the code of the `RSed` files `rows` from the Rank files (all present) and
    /// returns those whose code differs, with the first differing offset.
    fn compare_code(&mut self, rows: &[usize]) -> Result<Vec<(usize, u64)>> {
        let Some(max_fs) = self.max_fs.filter(|_| !rows.is_empty()) else {
            return Ok(Vec::new());
        };
        let code = Code::new(self.group.k())?;
        let inputs: Vec<&[u8]> = self
            .ranks
            .iter()
            .map(|r| r.as_ref().map_or(&[][..], |(fs, m)| prefix(m.bytes(), *fs)))
            .collect();
        let stored: Vec<&[u8]> = rows
            .iter()
            .map(|&g| self.rseds[g].as_ref().map_or(&[][..], |(_, m)| m.bytes()))
            .collect();
        let mut first_diff: Vec<Option<u64>> = vec![None; rows.len()];
        let sink = |offset: usize, pieces: &[&[u8]]| -> Result<()> {
            for ((diff, piece), stored) in first_diff.iter_mut().zip(pieces).zip(&stored) {
                if diff.is_some() {
                    continue;
                }
                let have = stored.get(offset..offset + piece.len()).unwrap_or_default();
                if let Some(at) = piece.iter().zip(have).position(|(a, b)| a != b) {
                    *diff = Some((offset + at) as u64);
                }
            }
            Ok(())
        };
        apply(&code.encoder(rows), &inputs, max_fs as usize, sink)?;
        for &g in rows {
            self.checked[g] = true;
        }
        Ok(rows
            .iter()
            .zip(first_diff)
            .filter_map(|(&g, d)| Some((g, d?)))
            .collect())
    }

    fn mark_stale(&mut self, stale: &[(usize, u64)]) {
        let k = self.group.k();
        for &(g, offset) in stale {
            self.files[k + g].status =
                FileStatus::Unusable(Error::at(offset, ErrorKind::CodeMismatch));
            self.rseds[g] = None;
        }
    }

    /// Rebuilds every missing or unusable file, if at most k are, and publishes them.
    pub fn rebuild(mut self, opts: &Options) -> Result<Rebuilt> {
        let k = self.group.k();
        let lost = self.lost();
        let max_fs = match self.max_fs {
            Some(m) if lost <= k => m,
            _ => {
                return Err(
                    Error::new(ErrorKind::TooManyLost { lost, k }).with_path(&self.group.dir)
                )
            }
        };
        if lost == 0 {
            return Ok(Rebuilt::default());
        }
        let code = Code::new(k)?;
        let lost_ranks: Vec<usize> = (0..k).filter(|&g| self.ranks[g].is_none()).collect();
        let mut report = Rebuilt::default();
        let mut rank_temps = Vec::new();
        if !lost_ranks.is_empty() {
            let parity: Vec<usize> = (0..k).filter(|&g| self.rseds[g].is_some()).collect();
            let dec = code.decoder(&lost_ranks, &parity)?;
            let inputs: Vec<&[u8]> = dec
                .inputs
                .iter()
                .map(|s| match *s {
                    Shard::Data(j) => self.ranks[j].as_ref().map(|(fs, m)| prefix(m.bytes(), *fs)),
                    Shard::Parity(i) => self.rseds[i]
                        .as_ref()
                        .map(|(_, m)| prefix(m.bytes(), max_fs)),
                })
                .map(Option::unwrap_or_default)
                .collect();
            let mut temps = dec
                .lost
                .iter()
                .map(|&g| TempFile::create(&self.group.path(FileKind::Rank, g)))
                .collect::<Result<Vec<_>>>()?;
            apply(&dec.matrix, &inputs, max_fs as usize, |offset, pieces| {
                for_each_output(&mut temps, pieces, |temp, piece| {
                    temp.file
                        .write_all_at(piece, offset as u64)
                        .map_err(|e| Error::from(e).with_path(&temp.path))
                })
            })?;
            for (temp, &g) in temps.into_iter().zip(&dec.lost) {
                let expected_fs = self.rseds[g].as_ref().map(|(size, _)| *size);
                let (fs, last_byte) = finish_rank(&temp, max_fs, expected_fs, opts.sync)
                    .map_err(|e| e.with_path(&temp.target))?;
                self.ranks[g] = Some((fs, MappedFile::open(&temp.path)?));
                report.files.push(RebuiltFile {
                    path: temp.target.clone(),
                    kind: FileKind::Rank,
                    last_byte,
                    stale_code: false,
                });
                rank_temps.push(temp);
            }
            // The decoder used the first surviving code files; check the others now.
            let unchecked: Vec<usize> = parity
                .iter()
                .copied()
                .filter(|&g| !self.checked[g] && !dec.inputs.contains(&Shard::Parity(g)))
                .collect();
            let stale = self.compare_code(&unchecked)?;
            self.mark_stale(&stale);
            for (g, _) in stale {
                report.stale.push(self.group.path(FileKind::Rsed, g));
            }
        }
        let lost_code: Vec<usize> = (0..k).filter(|&g| self.rseds[g].is_none()).collect();
        let mut code_temps = Vec::new();
        if !lost_code.is_empty() {
            let inputs: Vec<&[u8]> = self
                .ranks
                .iter()
                .map(|r| r.as_ref().map_or(&[][..], |(fs, m)| prefix(m.bytes(), *fs)))
                .collect();
            let targets: Vec<(PathBuf, u64)> = lost_code
                .iter()
                .map(|&g| {
                    let fs = self.ranks[g].as_ref().map_or(0, |(fs, _)| *fs);
                    (self.group.path(FileKind::Rsed, g), fs)
                })
                .collect();
            code_temps = write_code(&code.encoder(&lost_code), &inputs, max_fs, &targets, opts)?;
            for (path, _) in targets {
                let stale_code = report.stale.contains(&path);
                report.files.push(RebuiltFile {
                    path,
                    kind: FileKind::Rsed,
                    last_byte: None,
                    stale_code,
                });
            }
        }
        // Unmap the temporary Rank files before renaming them.
        self.ranks.clear();
        rank_temps.append(&mut code_temps);
        publish(rank_temps, &self.group.dir, opts.sync)?;
        Ok(report)
    }
}

/// A surveyed file and, when intact, its size (Rank: `fs`; `RSed`: `ckptSize`) and map.
type Checked = (FileState, Option<(u64, MappedFile)>);

fn rank_state(group: &Group, g: usize) -> Checked {
    let path = group.path(FileKind::Rank, g);
    let (status, map) = match open_rank(&path) {
        Ok((ckpt, _)) if ckpt.fb.max_fs == -1 => (
            FileStatus::Unusable(Error::malformed(
                fb::MAX_FS as u64,
                Record::FileBlock,
                "maxFs",
                -1,
                "not an L3 Rank file (maxFs is set when the group is encoded)",
            )),
            None,
        ),
        Ok((ckpt, map)) => (FileStatus::Intact, Some((ckpt.fs(), map))),
        Err(e) => (missing_or(e), None),
    };
    let state = FileState {
        path,
        kind: FileKind::Rank,
        group_rank: g,
        status,
    };
    (state, map)
}

fn rsed_state(group: &Group, g: usize) -> Checked {
    let path = group.path(FileKind::Rsed, g);
    let (status, map) = match open_rsed(&path) {
        Ok((rsed, map)) => (FileStatus::Intact, Some((rsed.fb.ckpt_size as u64, map))),
        Err(e) => (missing_or(e), None),
    };
    let state = FileState {
        path,
        kind: FileKind::Rsed,
        group_rank: g,
        status,
    };
    (state, map)
}

/// An I/O "not found" is a missing file; anything else makes it unusable.
fn missing_or(e: Error) -> FileStatus {
    match e.kind() {
        ErrorKind::Io(io) if io.kind() == std::io::ErrorKind::NotFound => FileStatus::Missing,
        _ => FileStatus::Unusable(e),
    }
}

/// Opens an `RSed` file and checks its trailer and checksum.
fn open_rsed(path: &Path) -> Result<(RsedFile, MappedFile)> {
    let map = MappedFile::open(path)?;
    let rsed = RsedFile::parse(map.bytes())?;
    match rsed.verify(map.bytes(), &|_| {}).into_iter().next() {
        Some(p) => Err(p),
        None => Ok((rsed, map)),
    }
}

fn read_fb(bytes: &[u8], offset: u64) -> Result<FileBlock> {
    FileBlock::parse(&mut Cursor::new(
        bytes.get(offset as usize..).unwrap_or_default(),
        offset,
    ))
}

/// The last byte of a rebuilt Rank file, when the code could not determine it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LastByte {
    /// What the code gives when the dropped half of its last word is taken as zero (what
    /// FTI 1.1 restores).
    pub decoded: u8,
    /// The value the file's hashes confirm.
    pub restored: u8,
}

/// A file written by [`Survey::rebuild`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RebuiltFile {
    /// Its path.
    pub path: PathBuf,
    /// Rank or `RSed`.
    pub kind: FileKind,
    /// For a Rank file of odd size `maxFs`: its last byte.
    pub last_byte: Option<LastByte>,
    /// An `RSed` file that verified but whose code did not match the rebuilt Rank files.
    pub stale_code: bool,
}

/// What [`Survey::rebuild`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Rebuilt {
    /// Files written, Rank files first.
    pub files: Vec<RebuiltFile>,
    /// `RSed` files that verified but were found stale once the Rank files were rebuilt.
    pub stale: Vec<PathBuf>,
}

/// Cuts a decoded Rank file (written as `max_fs` bytes) to the size its own file block gives,
/// restores its last byte when the code lost it, and verifies it.
fn finish_rank(
    temp: &TempFile,
    max_fs: u64,
    expected_fs: Option<u64>,
    sync: bool,
) -> Result<(u64, Option<LastByte>)> {
    let invalid = |problem: Error| {
        Error::new(ErrorKind::RebuiltInvalid {
            problem: Box::new(problem),
        })
    };
    let io = |e| Error::from(e).with_path(&temp.path);
    let mut head = [0u8; fb::SIZE];
    temp.file.read_exact_at(&mut head, 0).map_err(io)?;
    let fb = read_fb(&head, 0)?;
    let my_hash = hash::my_hash(&fb);
    if my_hash != fb.my_hash {
        return Err(invalid(Error::at(
            fb::MY_HASH as u64,
            ErrorKind::HashMismatch {
                record: Record::FileBlock,
                field: "myHash",
                stored: hash::to_hex(&fb.my_hash),
                computed: hash::to_hex(&my_hash),
            },
        )));
    }
    let fs = fb.fs as u64;
    let mismatch = |offset: usize, field, value: i64, expected: i64| {
        invalid(Error::at(
            offset as u64,
            ErrorKind::GroupMismatch {
                record: Record::FileBlock,
                field,
                value,
                expected,
            },
        ))
    };
    if fb.max_fs != max_fs as i64 {
        return Err(mismatch(fb::MAX_FS, "maxFs", fb.max_fs, max_fs as i64));
    }
    if fb.fs < fb::SIZE as i64 || fs > max_fs {
        return Err(invalid(Error::malformed(
            fb::FS as u64,
            Record::FileBlock,
            "fs",
            fb.fs,
            "not between 96 and the group's maxFs",
        )));
    }
    if let Some(e) = expected_fs.filter(|&e| e != fs) {
        return Err(mismatch(fb::FS, "fs", fb.fs, e as i64));
    }
    temp.file.set_len(fs).map_err(io)?;
    let last_byte = if fs == max_fs && fs % 2 == 1 {
        let map = MappedFile::open(&temp.path)?;
        let decoded = map.bytes().last().copied().unwrap_or_default();
        let restored = restore_last_byte(map.bytes()).map_err(invalid)?;
        drop(map);
        if restored != decoded {
            temp.file.write_all_at(&[restored], fs - 1).map_err(io)?;
        }
        Some(LastByte { decoded, restored })
    } else {
        None
    };
    if sync {
        temp.file.sync_all().map_err(io)?;
    }
    let map = MappedFile::open(&temp.path)?;
    let ckpt = Checkpoint::parse(map.bytes()).map_err(invalid)?;
    if let Some(p) = ckpt.verify(map.bytes(), &|_| {}).into_iter().next() {
        return Err(invalid(p));
    }
    Ok((fs, last_byte))
}

/// The true last byte of a Rank file whose last byte is unknown (a rebuilt file of odd size
/// `maxFs`: the code keeps only the low half of its last word). The file's own hashes decide:
/// in FTI 1.1 files the checksum covers bytes `[96, fs)`, so the MD5 of all but the last byte
/// is computed once and finished with each of the 256 values; in fti-rs's fast files each
/// value is tried by verifying the whole file.
pub fn restore_last_byte(bytes: &[u8]) -> Result<u8> {
    let fb = read_fb(bytes, 0)?;
    let Some(body) = bytes.get(fb::SIZE..bytes.len().saturating_sub(1)) else {
        return Err(Error::at(
            0,
            ErrorKind::Truncated {
                len: bytes.len() as u64,
                needed: fb::SIZE as u64 + 1,
                what: "a file block and at least one byte after it",
            },
        ));
    };
    let found = match Integrity::from_fb_mode(&fb.mode)? {
        Integrity::Md5 => {
            let mut stream = Md5Stream::default();
            stream.update(body);
            (0..=255u8).find(|&b| {
                let mut s = stream.clone();
                s.update(&[b]);
                hash::checksum_field(&s.finish()) == fb.checksum
            })
        }
        Integrity::Fast { .. } => {
            let mut copy = bytes.to_vec();
            (0..=255u8).find(|&b| {
                if let Some(last) = copy.last_mut() {
                    *last = b;
                }
                Checkpoint::parse(&copy).is_ok_and(|c| c.verify(&copy, &|_| {}).is_empty())
            })
        }
    };
    found.ok_or_else(|| {
        Error::at(
            fb::CHECKSUM as u64,
            ErrorKind::HashMismatch {
                record: Record::FileBlock,
                field: "checksum",
                stored: fb.checksum_display(),
                computed: "none of the 256 values of the last byte gives it".into(),
            },
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(parse_name("Ckpt1-Rank0.fti"), Some((1, FileKind::Rank, 0)));
        assert_eq!(
            parse_name("Ckpt12-RSed31.fti"),
            Some((12, FileKind::Rsed, 31))
        );
        for bad in [
            "Ckpt1-Rank0.fti.l3tmp",
            ".Ckpt1-Rank0.fti.l3tmp",
            "Ckpt-Rank0.fti",
            "Ckpt1-Rank.fti",
            "Ckpt1-Pcof0.fti",
            "Ckpt+1-Rank0.fti",
            "Ckpt1-Rank-1.fti",
            "Ckpt99999999999-Rank0.fti",
        ] {
            assert_eq!(parse_name(bad), None, "{bad}");
        }
        assert_eq!(file_name(3, FileKind::Rsed, 7), "Ckpt3-RSed7.fti");
    }
}
