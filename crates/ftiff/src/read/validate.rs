//! The structural rules of an FTI-FF file, shared by the reader (which enforces them on
//! untrusted bytes) and the writer (which checks its own plans against them, so it never
//! writes a file its reader rejects).

use std::collections::HashMap;

use super::ChunkRecord;
use crate::error::{Error, Record, Result};
use crate::layout::{Chunk, DataOffset, FileOffset, Layout};
use crate::raw::{bmd, fb, vmd, BlockMeta, Cursor, VarMeta};

/// Per-variable state while walking the blocks.
pub(super) struct VarState {
    pub(super) id: i32,
    pub(super) reserved: u64,
    pub(super) size: u64,
    /// A partly filled or empty container was seen: later ones must be empty.
    pub(super) closed: bool,
    /// The variable is no longer protected (its first container is empty).
    pub(super) removed: bool,
    /// (block, position in block) of each container, in order.
    pub(super) chunks: Vec<(usize, usize)>,
}

pub(super) fn positive(
    value: i64,
    offset: u64,
    record: Record,
    field: &'static str,
) -> Result<u64> {
    u64::try_from(value)
        .map_err(|_| Error::malformed(offset, record, field, value, "negative value"))
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
pub(super) struct Walk {
    pub(super) states: Vec<VarState>,
    pub(super) idx_of_id: HashMap<i32, u32>,
}

impl Walk {
    /// Parses and validates the block at the start of `rest` (file offset `offset`, block
    /// number `b`); returns its records and the bytes after it.
    pub(super) fn block<'a>(
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
    let sizes = (chunk_size, container_size, has_content);
    check_vmd_placement(raw, at, (expected_fptr, block_end), sizes)?;
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

/// The checks of [`check_vmd`] on where a VMD's container lies: at `expected_fptr`, within
/// its block (ending at `block_end`), and holding its chunk.
fn check_vmd_placement(
    raw: &VarMeta,
    at: u64,
    (expected_fptr, block_end): (u64, u64),
    (chunk_size, container_size, has_content): (u64, u64, bool),
) -> Result<()> {
    let bad = |off: usize, name: &'static str, value: i64, what: &'static str| {
        Error::malformed(at + off as u64, Record::VarMeta, name, value, what)
    };
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
    Ok(())
}
