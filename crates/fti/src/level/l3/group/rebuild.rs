//! Surveying a group's files and rebuilding the lost or damaged ones.

use std::path::{Path, PathBuf};

use ftiff::l3::{apply, restore_last_byte, Code, Shard};
use ftiff::raw::{fb, FileBlock};
use ftiff::{Checkpoint, MappedFile, RsedFile, Sink as _};
use ftiff::{Error, ErrorKind, FileKind, Record, Result};
use rayon::prelude::*;

use crate::storage::Storage;

use super::encode::{for_each_output, open_rank, prefix, publish, write_code, Options, TempFile};
use super::Group;

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
        let mut max_fs = self.ranks_max_fs()?;
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

    /// The `maxFs` the intact Rank files agree on, with the group rank of the first that
    /// says it; with every Rank file present, it must be their largest size (a file with valid
    /// hashes but a larger maxFs would otherwise make the rebuild write that much).
    fn ranks_max_fs(&self) -> Result<Option<(u64, usize)>> {
        let mismatch = |g: usize, value: u64, expected: u64| {
            Error::at(
                fb::MAX_FS as u64,
                ErrorKind::GroupMismatch {
                    record: Record::FileBlock,
                    field: "maxFs",
                    value: value as i64,
                    expected: expected as i64,
                },
            )
            .with_path(&self.files[g].path)
        };
        let mut max_fs: Option<(u64, usize)> = None;
        for g in 0..self.group.k() {
            let Some((_, map)) = &self.ranks[g] else {
                continue;
            };
            let fs = FileBlock::read_at(map.bytes(), 0)?.max_fs as u64;
            match max_fs {
                None => max_fs = Some((fs, g)),
                Some((m, _)) if m == fs => {}
                Some((m, _)) => return Err(mismatch(g, fs, m)),
            }
        }
        let largest = self.ranks.iter().flatten().map(|(fs, _)| *fs).max();
        if let (Some((m, g)), Some(largest), true) =
            (max_fs, largest, self.ranks.iter().all(Option::is_some))
        {
            if m != largest {
                return Err(mismatch(g, m, largest));
            }
        }
        Ok(max_fs)
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
    pub fn rebuild(mut self, storage: &dyn Storage, opts: &Options) -> Result<Rebuilt> {
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
        let mut report = Rebuilt::default();
        let mut rank_temps = self.decode_ranks(storage, opts, &code, max_fs, &mut report)?;
        let mut code_temps = self.encode_lost_code(storage, opts, &code, max_fs, &mut report)?;
        // Unmap the temporary Rank files before renaming them.
        self.ranks.clear();
        rank_temps.append(&mut code_temps);
        publish(storage, rank_temps, &self.group.dir, opts.sync)?;
        Ok(report)
    }

    /// Rebuilds the lost Rank files by decoding (into temporary files, returned), then checks
    /// the code files the decoder did not use against them; stale ones count as lost.
    fn decode_ranks<'s>(
        &mut self,
        storage: &'s dyn Storage,
        opts: &Options,
        code: &Code,
        max_fs: u64,
        report: &mut Rebuilt,
    ) -> Result<Vec<TempFile<'s>>> {
        let k = self.group.k();
        let lost_ranks: Vec<usize> = (0..k).filter(|&g| self.ranks[g].is_none()).collect();
        let mut rank_temps = Vec::new();
        if lost_ranks.is_empty() {
            return Ok(rank_temps);
        }
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
            .map(|&g| TempFile::create(storage, &self.group.path(FileKind::Rank, g)))
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
        Ok(rank_temps)
    }

    /// Encodes the lost (or stale) code files again from the complete Rank files, into
    /// temporary files (returned).
    fn encode_lost_code<'s>(
        &self,
        storage: &'s dyn Storage,
        opts: &Options,
        code: &Code,
        max_fs: u64,
        report: &mut Rebuilt,
    ) -> Result<Vec<TempFile<'s>>> {
        let k = self.group.k();
        let lost_code: Vec<usize> = (0..k).filter(|&g| self.rseds[g].is_none()).collect();
        if lost_code.is_empty() {
            return Ok(Vec::new());
        }
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
        let code_temps = write_code(
            storage,
            &code.encoder(&lost_code),
            &inputs,
            max_fs,
            &targets,
            opts,
        )?;
        for (path, _) in targets {
            let stale_code = report.stale.contains(&path);
            report.files.push(RebuiltFile {
                path,
                kind: FileKind::Rsed,
                last_byte: None,
                stale_code,
            });
        }
        Ok(code_temps)
    }
}

/// A surveyed file and, when intact, its size (Rank: `fs`; `RSed`: `ckptSize`) and map.
type Checked = (FileState, Option<(u64, MappedFile)>);

fn rank_state(group: &Group, g: usize) -> Checked {
    let path = group.path(FileKind::Rank, g);
    let (status, map) = match open_rank(&path) {
        Ok((fb, _)) if fb.max_fs == -1 => (
            FileStatus::Unusable(Error::malformed(
                fb::MAX_FS as u64,
                Record::FileBlock,
                "maxFs",
                -1,
                "not an L3 Rank file (maxFs is set when the group is encoded)",
            )),
            None,
        ),
        Ok((fb, map)) => (FileStatus::Intact, Some((fb.fs as u64, map))),
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
    temp: &TempFile<'_>,
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
    let fb = FileBlock::read_from(&temp.file, 0).map_err(|e| e.with_path(&temp.path))?;
    fb.check_my_hash(0).map_err(invalid)?;
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
        temp.file.sync().map_err(io)?;
    }
    let map = MappedFile::open(&temp.path)?;
    let ckpt = Checkpoint::parse(map.bytes()).map_err(invalid)?;
    if let Some(p) = ckpt.verify(&|_| {}).into_iter().next() {
        return Err(invalid(p));
    }
    Ok((fs, last_byte))
}
