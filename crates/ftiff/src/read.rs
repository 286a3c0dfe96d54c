//! Reading and verifying checkpoint files.
//!
//! [`Checkpoint::parse`] validates the whole structure before anything is trusted: every length
//! is checked against the bytes that exist, every loop advances, and nothing is allocated beyond
//! what the file's own size justifies (one record per 64 bytes of meta data at most).
//! [`Checkpoint::verify`] then checks the hashes; [`Checkpoint::read_var`] reassembles a variable
//! and checks each chunk's hash as it copies it.

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use crate::blocks::{self, Integrity};
use crate::error::{Error, ErrorKind, Record, Result};
use crate::hash::{self, Digest, Md5Stream};
use crate::layout::{Block, Chunk, DataOffset, FileOffset, Layout, VarSize};
use crate::raw::{bmd, fb, vmd, BlockMeta, Cursor, FileBlock, VarMeta};

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

/// A structurally valid checkpoint file (hashes not yet checked).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkpoint {
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

/// Per-variable state while walking the blocks.
struct VarState {
    id: i32,
    reserved: u64,
    size: u64,
    /// A partly filled or empty container was seen: later ones must be empty.
    closed: bool,
    /// The variable is no longer protected (its first container is empty).
    removed: bool,
    /// (block, position in block) of each container, in order.
    chunks: Vec<(usize, usize)>,
}

fn positive(value: i64, offset: u64, record: Record, field: &'static str) -> Result<u64> {
    u64::try_from(value)
        .map_err(|_| Error::malformed(offset, record, field, value, "negative value"))
}

impl Checkpoint {
    /// Parses and validates the structure of a checkpoint file held in `bytes`.
    pub fn parse(bytes: &[u8]) -> Result<Self> {
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

    /// Parses the file at `path` (memory-mapped).
    pub fn open(path: &Path) -> Result<(Self, MappedFile)> {
        let map = MappedFile::open(path)?;
        let ckpt = Checkpoint::parse(map.bytes()).map_err(|e| e.with_path(path))?;
        Ok((ckpt, map))
    }

    /// Parses and verifies the file at `path` ([`Checkpoint::verify`]: every hash, the zero
    /// fill): the way to read variable bytes that can be trusted. `VMD.id` and
    /// `VMD.chunksize` are covered by the file checksum only, so a variable's own chunk hashes
    /// cannot tell that its record was swapped or cut. Bytes after `FB.fs` are not an error
    /// here (FTI ignores them; [`Checkpoint::trailing`] counts them). Returns the first
    /// problem otherwise.
    pub fn open_verified(
        path: &Path,
        progress: &(dyn Fn(u64) + Sync),
    ) -> Result<(Self, MappedFile)> {
        let (ckpt, map) = Checkpoint::open(path)?;
        let first = ckpt
            .verify(map.bytes(), progress)
            .into_iter()
            .find(|p| !matches!(p.kind(), ErrorKind::TrailingBytes { .. }));
        match first {
            Some(problem) => Err(problem.with_path(path)),
            None => Ok((ckpt, map)),
        }
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

    /// Checks every hash, the zero fill and the file length. `bytes` must be the bytes this
    /// checkpoint was parsed from. Returns every problem found (empty: the file is intact).
    /// The file checksum runs on one thread while the chunk hashes run on the others;
    /// `progress` receives the number of checksum bytes done so far.
    pub fn verify(&self, bytes: &[u8], progress: &(dyn Fn(u64) + Sync)) -> Vec<Error> {
        let mut problems = Vec::new();
        problems.extend(self.fb.check_my_hash(0).err());
        // `fs` was checked against the length by `parse`.
        let body = bytes.get(fb::SIZE..self.fs() as usize).unwrap_or_default();
        let (checksum, mut chunk_problems) = rayon::join(
            || match self.integrity {
                Integrity::Md5 => checksum_of(body, progress),
                Integrity::Fast { .. } => self.fast_checksum(bytes),
            },
            || self.verify_chunks(bytes),
        );
        if hash::checksum_field(&checksum) != self.fb.checksum {
            problems.push(Error::at(
                fb::CHECKSUM as u64,
                ErrorKind::HashMismatch {
                    record: Record::FileBlock,
                    field: "checksum",
                    stored: self.fb.checksum_display(),
                    computed: hash::to_hex(&checksum),
                },
            ));
        }
        problems.append(&mut chunk_problems);
        if self.trailing > 0 {
            problems.push(Error::at(
                self.fs(),
                ErrorKind::TrailingBytes {
                    fs: self.fs(),
                    extra: self.trailing,
                },
            ));
        }
        problems
    }

    /// The hash a chunk's VMD should hold, computed from the file's bytes: MD5 of the data,
    /// or in fast mode the hash over the block hashes of the whole container as stored.
    fn chunk_hash_of(&self, bytes: &[u8], r: &ChunkRecord) -> Digest {
        let c = &r.chunk;
        match self.integrity {
            Integrity::Md5 => hash::md5(slice_at(bytes, c.fptr.0, c.chunk_size)),
            Integrity::Fast { block_log2 } => {
                let container = slice_at(bytes, c.fptr.0, c.container_size);
                let hashes = blocks::fast_blocking(block_log2)
                    .container_hashes(container, container.len() as u64);
                blocks::fast_chunk_hash(c.chunk_size, c.container_size, &hashes)
            }
        }
    }

    /// Checks a chunk's stored hash against its bytes.
    fn check_chunk(&self, bytes: &[u8], r: &ChunkRecord) -> Result<()> {
        let computed = self.chunk_hash_of(bytes, r);
        if computed == r.hash {
            return Ok(());
        }
        Err(Error::at(
            r.vmd_offset + vmd::HASH as u64,
            ErrorKind::HashMismatch {
                record: Record::VarMeta,
                field: "hash",
                stored: hash::to_hex(&r.hash),
                computed: hash::to_hex(&computed),
            },
        ))
    }

    /// Fast mode's file checksum over the meta data as stored.
    fn fast_checksum(&self, bytes: &[u8]) -> Digest {
        let layout = self.layout();
        let metas = layout
            .blocks
            .iter()
            .map(|b| slice_at(bytes, b.offset.0, b.meta_size()));
        blocks::fast_checksum(&self.fb.mode, metas)
    }

    fn verify_chunks(&self, bytes: &[u8]) -> Vec<Error> {
        let records: Vec<&ChunkRecord> = self.records().collect();
        records
            .par_iter()
            .flat_map_iter(|r| {
                let mut problems = Vec::new();
                let c = &r.chunk;
                let fill = slice_at(
                    bytes,
                    c.fptr.0 + c.chunk_size,
                    c.container_size - c.chunk_size,
                );
                if let Err(e) = self.check_chunk(bytes, r) {
                    problems.push(e);
                }
                if let Some(pos) = fill.iter().position(|&b| b != 0) {
                    problems.push(Error::at(
                        c.fptr.0 + c.chunk_size + pos as u64,
                        ErrorKind::NonZeroFill {
                            id: c.id,
                            byte: fill[pos],
                        },
                    ));
                }
                problems
            })
            .collect()
    }

    /// `FB.fs`.
    pub fn fs(&self) -> u64 {
        self.fb.fs as u64
    }

    /// Copies the current bytes of variable `id` into `out`, which must have exactly the
    /// variable's size, checking each chunk's hash. On a hash mismatch `out` may be partly
    /// written.
    pub fn read_var_into(&self, bytes: &[u8], id: i32, out: &mut [u8]) -> Result<()> {
        self.copy_chunks(bytes, id, out, true)
    }

    /// Copies the current bytes of variable `id` into `out` without checking chunk hashes: for
    /// a checkpoint whose [`Checkpoint::verify`] found no problem on these same bytes, so that
    /// recovery does not hash the data a third time.
    pub fn copy_var_into(&self, bytes: &[u8], id: i32, out: &mut [u8]) -> Result<()> {
        self.copy_chunks(bytes, id, out, false)
    }

    /// Copies every chunk of variable `id` to its `dptr` in `out`, checking chunk hashes if
    /// `check`.
    fn copy_chunks(&self, bytes: &[u8], id: i32, out: &mut [u8], check: bool) -> Result<()> {
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
            // parse() proved that a chunk with data ends within the variable's size; the
            // checks only matter if `bytes` are not the ones parsed.
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
    pub fn read_var(&self, bytes: &[u8], id: i32) -> Result<Vec<u8>> {
        let mut out = vec![0u8; self.var(id)?.size as usize];
        self.read_var_into(bytes, id, &mut out)?;
        Ok(out)
    }

    /// The bytes of one chunk (no hash check).
    pub fn chunk_data<'a>(&self, bytes: &'a [u8], chunk: &Chunk) -> &'a [u8] {
        slice_at(bytes, chunk.fptr.0, chunk.chunk_size)
    }
}

/// `len` bytes of `bytes` at `start`, or fewer if the range is not all there (only possible
/// when called with other bytes than the checkpoint was parsed from).
fn slice_at(bytes: &[u8], start: u64, len: u64) -> &[u8] {
    let (Ok(start), Ok(len)) = (usize::try_from(start), usize::try_from(len)) else {
        return &[];
    };
    let end = start.saturating_add(len).min(bytes.len());
    bytes.get(start..end).unwrap_or_default()
}

/// One serial MD5 pass over the body, reporting progress every 64 MiB.
fn checksum_of(body: &[u8], progress: &(dyn Fn(u64) + Sync)) -> Digest {
    let mut md5 = Md5Stream::default();
    let mut done = 0u64;
    for piece in body.chunks(64 << 20) {
        md5.update(piece);
        done += piece.len() as u64;
        progress(done);
    }
    md5.finish()
}

/// Checks that a layout built by hand obeys the rules the reader enforces on files (the
/// writer calls it, so it never writes a file its own reader rejects). Offsets in errors are
/// those the file would have.
pub(crate) fn check_layout(layout: &Layout) -> Result<()> {
    let mut walk = Walk::default();
    let mut offset = fb::SIZE as u64;
    for (b, block) in layout.blocks.iter().enumerate() {
        if block.offset.0 != offset || block.chunks.is_empty() {
            return Err(Error::malformed(
                offset,
                Record::BlockMeta,
                "numvars",
                block.chunks.len() as i64,
                "a block must be non-empty and start where the previous one ends",
            ));
        }
        let mut fptr = offset + block.meta_size();
        let block_end = block
            .offset
            .0
            .checked_add(block.meta_size())
            .and_then(|e| {
                block
                    .chunks
                    .iter()
                    .try_fold(e, |e, c| e.checked_add(c.container_size))
            })
            .filter(|&e| e <= crate::layout::MAX_SIZE)
            .ok_or_else(|| {
                Error::malformed(
                    offset + 4,
                    Record::BlockMeta,
                    "dbsize",
                    -1,
                    "block size overflows",
                )
            })?;
        let mut last: Option<u32> = None;
        for (pos, c) in block.chunks.iter().enumerate() {
            let at = offset + (bmd::SIZE + vmd::SIZE * pos) as u64;
            let raw = crate::write::var_meta(c, [0; 16]);
            let chunk = check_vmd(&raw, at, fptr, block_end)?;
            if chunk != *c || last.is_some_and(|l| c.idx <= l) {
                return Err(Error::malformed(
                    at,
                    Record::VarMeta,
                    "idx",
                    c.idx.into(),
                    "not ascending within the block, or a field out of range",
                ));
            }
            last = Some(c.idx);
            walk.track(c, at, (b, pos))?;
            fptr += c.container_size;
        }
        offset = block_end;
    }
    Ok(())
}

/// State of the block walk: what is known of every variable so far.
#[derive(Default)]
struct Walk {
    states: Vec<VarState>,
    idx_of_id: HashMap<i32, u32>,
}

impl Walk {
    /// Parses and validates the block at the start of `rest` (file offset `offset`, block
    /// number `b`); returns its records and the bytes after it.
    fn block<'a>(
        &mut self,
        rest: &'a [u8],
        offset: u64,
        b: usize,
    ) -> Result<(Vec<ChunkRecord>, &'a [u8])> {
        if rest.len() < bmd::SIZE {
            return Err(Error::malformed(
                fb::FS as u64,
                Record::FileBlock,
                "fs",
                (offset + rest.len() as u64) as i64,
                "ends inside a block meta data record",
            ));
        }
        let meta = BlockMeta::parse(&mut Cursor::new(rest, offset))?;
        let numvars = u64::try_from(meta.numvars)
            .ok()
            .filter(|&n| n > 0)
            .ok_or_else(|| {
                Error::malformed(
                    offset,
                    Record::BlockMeta,
                    "numvars",
                    meta.numvars.into(),
                    "a block holds at least one variable",
                )
            })?;
        let dbsize = positive(meta.dbsize, offset + 4, Record::BlockMeta, "dbsize")?;
        let meta_size = (bmd::SIZE as u64) + (vmd::SIZE as u64) * numvars;
        let bad_dbsize =
            |what| Error::malformed(offset + 4, Record::BlockMeta, "dbsize", meta.dbsize, what);
        if dbsize < meta_size {
            return Err(bad_dbsize(
                "smaller than the block's meta data (12 + 64 * numvars)",
            ));
        }
        let (block_bytes, after) = usize::try_from(dbsize)
            .ok()
            .and_then(|n| rest.split_at_checked(n))
            .ok_or_else(|| bad_dbsize("block extends past FB.fs"))?;
        let mut cur = Cursor::new(block_bytes, offset);
        cur.read_array::<{ bmd::SIZE }>("block meta data")?;
        let mut records = Vec::new();
        let mut fptr = offset + meta_size;
        let block_end = offset + dbsize;
        for pos in 0..numvars {
            let vmd_offset = cur.offset();
            let raw = VarMeta::parse(&mut cur)?;
            let chunk = check_vmd(&raw, vmd_offset, fptr, block_end)?;
            if records
                .last()
                .is_some_and(|r: &ChunkRecord| chunk.idx <= r.chunk.idx)
            {
                return Err(Error::malformed(
                    vmd_offset + vmd::IDX as u64,
                    Record::VarMeta,
                    "idx",
                    raw.idx.into(),
                    "not ascending within the block",
                ));
            }
            self.track(&chunk, vmd_offset, (b, pos as usize))?;
            fptr += chunk.container_size;
            records.push(ChunkRecord {
                vmd_offset,
                chunk,
                hash: raw.hash,
                padding: raw.padding,
            });
        }
        if fptr != block_end {
            return Err(bad_dbsize(
                "differs from 12 + 64 * numvars + the sum of the containersizes",
            ));
        }
        Ok((records, after))
    }

    /// Checks that a chunk continues its variable as FTI's container walk would have made
    /// it: ids stable, containers numbered in order, `dptr` at the end of the earlier
    /// containers, the first container with content, and after a partly filled or empty
    /// container only empty ones (so a reassembled variable has no holes).
    fn track(&mut self, c: &Chunk, at: u64, place: (usize, usize)) -> Result<()> {
        let bad = |off: usize, name: &'static str, value: i64, what: &'static str| {
            Error::malformed(at + off as u64, Record::VarMeta, name, value, what)
        };
        let idx = c.idx as usize;
        if idx == self.states.len() {
            if self.idx_of_id.insert(c.id, c.idx).is_some() {
                return Err(bad(
                    vmd::ID,
                    "id",
                    c.id.into(),
                    "the same id belongs to two variables",
                ));
            }
            self.states.push(VarState {
                id: c.id,
                reserved: 0,
                size: 0,
                closed: false,
                removed: false,
                chunks: Vec::new(),
            });
        }
        let Some(s) = self.states.get_mut(idx) else {
            return Err(bad(
                vmd::IDX,
                "idx",
                idx as i64,
                "skips a protect position (a new variable takes the next idx)",
            ));
        };
        if s.id != c.id {
            return Err(bad(
                vmd::ID,
                "id",
                c.id.into(),
                "differs from the id of the earlier containers of this idx",
            ));
        }
        if c.container_id as usize != s.chunks.len() {
            return Err(bad(
                vmd::CONTAINER_ID,
                "containerid",
                c.container_id.into(),
                "containers of a variable must be numbered 0, 1, 2, ... in file order",
            ));
        }
        if c.dptr.0 != s.reserved {
            return Err(bad(
                vmd::DPTR,
                "dptr",
                c.dptr.0 as i64,
                "differs from the sum of the variable's earlier containersizes",
            ));
        }
        // A first container without content marks a removed variable (an fti-rs extension):
        // all its containers are then empty, which the `closed` rule below enforces.
        if s.chunks.is_empty() && !c.has_content {
            s.removed = true;
        }
        if s.closed && c.has_content {
            return Err(bad(
                vmd::HAS_CONTENT,
                "hascontent",
                1,
                "a container after a partly filled or empty one of the same variable must be empty",
            ));
        }
        s.chunks.push(place);
        s.reserved += c.container_size;
        s.size += c.chunk_size;
        s.closed |= c.chunk_size < c.container_size || !c.has_content;
        Ok(())
    }
}

/// Validates one VMD against its expected position; returns it as a chunk.
fn check_vmd(raw: &VarMeta, at: u64, expected_fptr: u64, block_end: u64) -> Result<Chunk> {
    let field = |off: usize| at + off as u64;
    let bad = |off: usize, name: &'static str, value: i64, what: &'static str| {
        Error::malformed(field(off), Record::VarMeta, name, value, what)
    };
    let idx = u32::try_from(raw.idx)
        .map_err(|_| bad(vmd::IDX, "idx", raw.idx.into(), "negative value"))?;
    let container_id = u32::try_from(raw.container_id).map_err(|_| {
        bad(
            vmd::CONTAINER_ID,
            "containerid",
            raw.container_id.into(),
            "negative value",
        )
    })?;
    let has_content = match raw.has_content {
        0 => false,
        1 => true,
        b => {
            return Err(bad(
                vmd::HAS_CONTENT,
                "hascontent",
                b.into(),
                "a bool must be 0 or 1",
            ))
        }
    };
    let dptr = positive(raw.dptr, field(vmd::DPTR), Record::VarMeta, "dptr")?;
    let chunk_size = positive(
        raw.chunk_size,
        field(vmd::CHUNK_SIZE),
        Record::VarMeta,
        "chunksize",
    )?;
    let container_size = positive(
        raw.container_size,
        field(vmd::CONTAINER_SIZE),
        Record::VarMeta,
        "containersize",
    )?;
    if raw.fptr < 0 || raw.fptr as u64 != expected_fptr {
        return Err(bad(
            vmd::FPTR,
            "fptr",
            raw.fptr,
            "not where the container must start (after the previous container of the block)",
        ));
    }
    if container_size > block_end - expected_fptr {
        return Err(bad(
            vmd::CONTAINER_SIZE,
            "containersize",
            raw.container_size,
            "container extends past the end of its block",
        ));
    }
    if chunk_size > container_size {
        return Err(bad(
            vmd::CHUNK_SIZE,
            "chunksize",
            raw.chunk_size,
            "larger than containersize",
        ));
    }
    if !has_content && chunk_size != 0 {
        return Err(bad(
            vmd::CHUNK_SIZE,
            "chunksize",
            raw.chunk_size,
            "non-zero in a container without content",
        ));
    }
    Ok(Chunk {
        id: raw.id,
        idx,
        container_id,
        has_content,
        dptr: DataOffset(dptr),
        fptr: FileOffset(expected_fptr),
        chunk_size,
        container_size,
    })
}

/// Opens `path` for reading if it is a regular file (symbolic links followed), and refuses
/// anything else with [`ErrorKind::NotRegularFile`]. The open does not block: a FIFO named like
/// a checkpoint would otherwise hang the reader until a writer appears. `O_NONBLOCK` has no
/// effect on reads of a regular file.
pub fn open_regular(path: &Path) -> Result<File> {
    use std::os::unix::fs::{FileTypeExt as _, OpenOptionsExt as _};
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| Error::from(e).with_path(path))?;
    let kind = file
        .metadata()
        .map_err(|e| Error::from(e).with_path(path))?
        .file_type();
    if kind.is_file() {
        return Ok(file);
    }
    let what = if kind.is_fifo() {
        "FIFO"
    } else if kind.is_socket() {
        "socket"
    } else if kind.is_dir() {
        "directory"
    } else if kind.is_char_device() {
        "character device"
    } else if kind.is_block_device() {
        "block device"
    } else {
        "special file"
    };
    Err(Error::new(ErrorKind::NotRegularFile { what }).with_path(path))
}

/// A read-only memory map of a checkpoint file.
#[derive(Debug)]
pub struct MappedFile {
    path: PathBuf,
    // `None` for an empty file, which cannot be mapped.
    map: Option<memmap2::Mmap>,
}

impl MappedFile {
    /// Maps `path` read-only. Anything but a regular file is refused (see [`open_regular`]).
    pub fn open(path: &Path) -> Result<Self> {
        let file = open_regular(path)?;
        let meta = file
            .metadata()
            .map_err(|e| Error::from(e).with_path(path))?;
        let map = if meta.len() == 0 {
            None
        } else {
            #[allow(unsafe_code)]
            // SAFETY: the map is read-only and private to this process. If another process
            // truncates the file while it is mapped, reads fault (SIGBUS); checkpoint files are
            // written once under a temporary name and renamed, never modified in place, so a
            // published file does not change under its readers.
            let map =
                unsafe { memmap2::Mmap::map(&file) }.map_err(|e| Error::from(e).with_path(path))?;
            Some(map)
        };
        Ok(MappedFile {
            path: path.to_path_buf(),
            map,
        })
    }

    /// The file's bytes.
    pub fn bytes(&self) -> &[u8] {
        self.map.as_deref().unwrap_or_default()
    }

    /// The path it was opened from.
    pub fn path(&self) -> &Path {
        &self.path
    }
}
