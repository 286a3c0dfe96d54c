//! Reading and verifying checkpoint files.
//!
//! [`Checkpoint::parse`] validates the whole structure before anything is trusted: every length
//! is checked against the bytes that exist, every loop advances, and nothing is allocated beyond
//! what the file's own size justifies (one record per 64 bytes of meta data at most).
//! [`Checkpoint::verify`] then checks the hashes; [`Checkpoint::read_var`] reassembles a variable
//! and checks each chunk's hash as it copies it.

mod file;
mod validate;
mod verify;

use std::collections::HashMap;

use crate::blocks::Integrity;
use crate::error::{Error, ErrorKind, Record, Result};
use crate::hash::Digest;
use crate::layout::{Block, Chunk, FileOffset, Layout, VarSize};
use crate::raw::{fb, Cursor, FileBlock};

pub use file::{map_at, open_regular, MappedFile};
pub(crate) use validate::check_layout;
use validate::{positive, Walk};

/// One VMD as read: the validated chunk plus what the file stores beside it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkRecord {
    /// File offset of the VMD itself.
    pub vmd_offset: u64,
    /// The validated structure.
    pub chunk: Chunk,
    /// Stored MD5 of the chunk bytes.
    pub hash: Digest,
    /// VMD padding bytes 13..15 as found (garbage in FTI 1.1 files).
    pub padding: [u8; 3],
}

/// A variable as stored: its id, protect position and current size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VarInfo {
    /// The user's id.
    pub id: i32,
    /// Position in protect order.
    pub idx: u32,
    /// Current size: the sum of its chunk sizes.
    pub size: u64,
    /// No longer protected: all its containers are empty (fti-rs extension; FTI 1.1 cannot
    /// restart such a file).
    pub removed: bool,
}

/// A structurally valid checkpoint file (hashes not yet checked), borrowing the bytes it was
/// parsed from: every later read (verify, variables, chunks) is of those same bytes.
#[derive(Clone, PartialEq, Eq)]
pub struct Checkpoint<'data> {
    bytes: &'data [u8],
    /// The file block.
    pub fb: FileBlock,
    /// Blocks in file order, each with its VMD records.
    pub blocks: Vec<Vec<ChunkRecord>>,
    /// Bytes after `FB.fs` (FTI ignores them; `verify` reports them).
    pub trailing: u64,
    /// MD5 (FTI 1.1) or fti-rs's fast block hashes, from FB bytes 49..55.
    pub integrity: Integrity,
    vars: Vec<VarInfo>,
    /// (block, position) of every container of each variable, by `idx`.
    chunks_of_var: Vec<Vec<(usize, usize)>>,
    idx_of_id: HashMap<i32, u32>,
}

impl std::fmt::Debug for Checkpoint<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Checkpoint")
            .field("len", &self.bytes.len())
            .field("fb", &self.fb)
            .field("blocks", &self.blocks)
            .field("trailing", &self.trailing)
            .field("integrity", &self.integrity)
            .finish_non_exhaustive()
    }
}

impl<'data> Checkpoint<'data> {
    /// Parses and validates the structure of a checkpoint file held in `bytes`.
    pub fn parse(bytes: &'data [u8]) -> Result<Self> {
        let len = bytes.len() as u64;
        let mut cur = Cursor::new(bytes, 0);
        let fb = FileBlock::parse(&mut cur)?;
        let fs = positive(fb.fs, fb::FS as u64, Record::FileBlock, "fs")?;
        if fs < fb::SIZE as u64 {
            return Err(Error::malformed(
                fb::FS as u64,
                Record::FileBlock,
                "fs",
                fb.fs,
                "smaller than the 96-byte file block",
            ));
        }
        if fb.ckpt_size != fb.fs {
            return Err(Error::malformed(
                fb::CKPT_SIZE as u64,
                Record::FileBlock,
                "ckptSize",
                fb.ckpt_size,
                "differs from fs (they are equal in every checkpoint file)",
            ));
        }
        if fb.max_fs != -1 && fb.max_fs < fb.fs {
            return Err(Error::malformed(
                fb::MAX_FS as u64,
                Record::FileBlock,
                "maxFs",
                fb.max_fs,
                "neither -1 nor at least fs",
            ));
        }
        if fb.pt_fs != -1 && fb.pt_fs < fb::SIZE as i64 {
            return Err(Error::malformed(
                fb::PT_FS as u64,
                Record::FileBlock,
                "ptFs",
                fb.pt_fs,
                "neither -1 nor a file size (at least 96)",
            ));
        }
        if len < fs {
            return Err(Error::at(
                len,
                ErrorKind::Truncated {
                    len,
                    needed: fs,
                    what: "the size in FB.fs",
                },
            ));
        }
        // `fs <= len`, so it fits in usize; the body holds exactly the blocks.
        let body = bytes.get(fb::SIZE..fs as usize).unwrap_or_default();
        let mut ckpt = Checkpoint {
            bytes,
            fb,
            blocks: Vec::new(),
            trailing: len - fs,
            integrity: Integrity::from_fb_mode(&fb.mode)?,
            vars: Vec::new(),
            chunks_of_var: Vec::new(),
            idx_of_id: HashMap::new(),
        };
        ckpt.walk_blocks(body)?;
        Ok(ckpt)
    }

    /// Walks the blocks of `body` (file bytes `[96, fs)`), validating every record.
    fn walk_blocks(&mut self, body: &[u8]) -> Result<()> {
        let mut walk = Walk::default();
        let mut offset = fb::SIZE as u64;
        let mut rest = body;
        while !rest.is_empty() {
            let (records, after) = walk.block(rest, offset, self.blocks.len())?;
            offset += (rest.len() - after.len()) as u64;
            self.blocks.push(records);
            rest = after;
        }
        self.vars = walk
            .states
            .iter()
            .zip(0u32..)
            .map(|(s, idx)| VarInfo {
                id: s.id,
                idx,
                size: s.size,
                removed: s.removed,
            })
            .collect();
        self.chunks_of_var = walk.states.into_iter().map(|s| s.chunks).collect();
        self.idx_of_id = walk.idx_of_id;
        Ok(())
    }

    /// Parses a file opened with [`MappedFile`] (mapped or read).
    pub fn of(file: &'data MappedFile) -> Result<Self> {
        Checkpoint::parse(file.bytes()).map_err(|e| e.with_path(file.path()))
    }

    /// Parses and verifies a file ([`Checkpoint::verify`]: every hash, the zero fill): the way
    /// to read variable bytes that can be trusted. `VMD.id` and `VMD.chunksize` are covered by
    /// the file checksum only, so a variable's own chunk hashes cannot tell that its record
    /// was swapped or cut. Bytes after `FB.fs` are not an error here (FTI ignores them;
    /// [`Checkpoint::trailing`] counts them). Returns the first problem otherwise.
    pub fn verified(file: &'data MappedFile, progress: &(dyn Fn(u64) + Sync)) -> Result<Self> {
        let ckpt = Checkpoint::of(file)?;
        let first = ckpt
            .verify(progress)
            .into_iter()
            .find(|p| !matches!(p.kind(), ErrorKind::TrailingBytes { .. }));
        match first {
            Some(problem) => Err(problem.with_path(file.path())),
            None => Ok(ckpt),
        }
    }

    /// The bytes the checkpoint was parsed from.
    pub fn bytes(&self) -> &'data [u8] {
        self.bytes
    }

    /// The file's structure.
    pub fn layout(&self) -> Layout {
        let mut offset = fb::SIZE as u64;
        let blocks = self
            .blocks
            .iter()
            .map(|records| {
                let block = Block {
                    offset: FileOffset(offset),
                    chunks: records.iter().map(|r| r.chunk).collect(),
                };
                offset = block.end();
                block
            })
            .collect();
        Layout { blocks }
    }

    /// The variables, in protect order.
    pub fn vars(&self) -> &[VarInfo] {
        &self.vars
    }

    /// The protected (not removed) variables as planner input, in protect order.
    pub fn var_sizes(&self) -> Vec<VarSize> {
        self.vars
            .iter()
            .filter(|v| !v.removed)
            .map(|v| VarSize {
                id: v.id,
                size: v.size,
            })
            .collect()
    }

    /// The variable with user id `id`.
    pub fn var(&self, id: i32) -> Result<&VarInfo> {
        self.idx_of_id
            .get(&id)
            .and_then(|&idx| self.vars.get(idx as usize))
            .ok_or_else(|| Error::new(ErrorKind::NoSuchVariable { id }))
    }

    /// The records of the variable at protect position `idx`, in container order.
    pub fn records_of(&self, idx: u32) -> impl Iterator<Item = &ChunkRecord> {
        self.chunks_of_var
            .get(idx as usize)
            .into_iter()
            .flatten()
            .filter_map(|&(b, pos)| self.blocks.get(b)?.get(pos))
    }

    /// Every chunk record in file order.
    pub fn records(&self) -> impl Iterator<Item = &ChunkRecord> {
        self.blocks.iter().flatten()
    }

    /// `FB.fs`.
    pub fn fs(&self) -> u64 {
        self.fb.fs as u64
    }

    /// Copies the current bytes of variable `id` into `out`, which must have exactly the
    /// variable's size, checking each chunk's hash. On a hash mismatch `out` may be partly
    /// written.
    pub fn read_var_into(&self, id: i32, out: &mut [u8]) -> Result<()> {
        self.copy_chunks(id, out, true)
    }

    /// Copies the current bytes of variable `id` into `out` without checking chunk hashes: for
    /// a checkpoint whose [`Checkpoint::verify`] found no problem on these same bytes, so that
    /// recovery does not hash the data a third time.
    pub fn copy_var_into(&self, id: i32, out: &mut [u8]) -> Result<()> {
        self.copy_chunks(id, out, false)
    }

    /// Copies every chunk of variable `id` to its `dptr` in `out`, checking chunk hashes if
    /// `check`.
    fn copy_chunks(&self, id: i32, out: &mut [u8], check: bool) -> Result<()> {
        let bytes = self.bytes;
        let var = self.var(id)?;
        let actual = out.len() as u64;
        let mismatch = |expected| {
            Error::new(ErrorKind::SizeMismatch {
                id,
                expected,
                actual,
            })
        };
        if out.len() as u64 != var.size {
            return Err(mismatch(var.size));
        }
        for r in self.records_of(var.idx).filter(|r| r.chunk.chunk_size > 0) {
            let c = &r.chunk;
            if check {
                self.check_chunk(bytes, r)?;
            }
            let data = slice_at(bytes, c.fptr.0, c.chunk_size);
            // parse() proved that a chunk with data ends within the variable's size and the
            // file; the checks cost nothing and keep the copy panic-free.
            let end = c.dptr.0 + c.chunk_size;
            let target = usize::try_from(c.dptr.0)
                .ok()
                .and_then(|start| out.get_mut(start..start.checked_add(data.len())?))
                .filter(|t| t.len() as u64 == c.chunk_size)
                .ok_or_else(|| mismatch(end))?;
            target.copy_from_slice(data);
        }
        Ok(())
    }

    /// The current bytes of variable `id`, chunk hashes checked. The allocation is bounded by
    /// the file size (the chunks are in the file).
    pub fn read_var(&self, id: i32) -> Result<Vec<u8>> {
        let mut out = vec![0u8; self.var(id)?.size as usize];
        self.read_var_into(id, &mut out)?;
        Ok(out)
    }

    /// The bytes of one chunk (no hash check).
    pub fn chunk_data(&self, chunk: &Chunk) -> &'data [u8] {
        slice_at(self.bytes, chunk.fptr.0, chunk.chunk_size)
    }
}

/// `len` bytes of `bytes` at `start`, or fewer if the range is not all there (never, for the
/// ranges `parse` validated).
fn slice_at(bytes: &[u8], start: u64, len: u64) -> &[u8] {
    let (Ok(start), Ok(len)) = (usize::try_from(start), usize::try_from(len)) else {
        return &[];
    };
    let end = start.saturating_add(len).min(bytes.len());
    bytes.get(start..end).unwrap_or_default()
}
