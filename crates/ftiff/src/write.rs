//! Writing checkpoint files.
//!
//! The file is streamed from the layout and the variables' own buffers: only the meta data is
//! built in memory, so the writer's memory does not grow with the data.
//!
//! Passes over the data: every data byte is read three times and written once, and no byte is
//! read back from the file:
//! 1. MD5 per chunk (the VMD hashes), the chunks of a block in parallel;
//! 2. MD5 of the file checksum, serially in file order. The checksum covers each block's VMDs,
//!    which hold the chunk hashes, so it starts on a block once that block's chunk hashes are
//!    done, while the chunk hashes of the next block are computed;
//! 3. copied into the file by a writer thread, block by block once hashed (so the copy uses
//!    the core the serial checksum leaves free), which then tells the sink the data are
//!    written ([`Sink::data_written`]: a durable sink syncs them there) while the checksum is
//!    still running.
//!
//! Two MD5 streams over every byte are the format's own cost (`docs/ftiff-format.md`); the
//! copy and the sink's sync overlap with them. The writer never syncs: durability is the
//! caller's policy.

use std::fs::OpenOptions;
use std::path::Path;
use std::sync::mpsc;
use std::time::{SystemTime, UNIX_EPOCH};

use rayon::prelude::*;

use crate::blocks::{self, Blocking, Integrity};
use crate::error::{Error, ErrorKind, Result};
use crate::hash::{self, Digest, Md5Stream, ZEROS};
use crate::layout::{Block, Chunk, Layout};
use crate::raw::{BlockMeta, FileBlock, VarMeta};
use crate::sink::Sink;

/// Progress is reported every this many bytes of checksum.
const PROGRESS_STEP: usize = 64 << 20;

/// Values of the file block that are not derived from the data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteOptions {
    /// `FB.timestamp`; `None` takes `CLOCK_REALTIME` after the data is written, as FTI does.
    pub timestamp: Option<i64>,
    /// `FB.maxFs` (-1 except in L3 Rank files).
    pub max_fs: i64,
    /// `FB.ptFs` (-1 except in L2 Rank files).
    pub pt_fs: i64,
    /// MD5 (FTI 1.1, default) or fti-rs's fast block hashes.
    pub integrity: Integrity,
    /// Also return the block hashes of every container with this blocking, for a later
    /// differential update ([`update_file`]). Fast files always use their own blocking.
    pub table: Option<Blocking>,
}

impl Default for WriteOptions {
    fn default() -> Self {
        WriteOptions {
            timestamp: None,
            max_fs: -1,
            pt_fs: -1,
            integrity: Integrity::Md5,
            table: None,
        }
    }
}

/// What a write produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    /// The file block written.
    pub fb: FileBlock,
    /// Block hashes of every container, when asked for (or in fast mode).
    pub table: Option<BlockTable>,
    /// Bytes written to the file (data, fill, meta data and file block).
    pub bytes_written: u64,
}

/// What a differential update needs to know of a file it did not read back: the block hashes
/// of every container (file order) and every chunk hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockTable {
    /// Block size and hash.
    pub blocking: Blocking,
    /// Block hashes per container, in file order.
    pub containers: Vec<Vec<u128>>,
    /// `VMD.hash` per container, in file order.
    pub chunk_hashes: Vec<Digest>,
}

/// Builds a file block for a body checksum, computing `myHash`.
pub fn file_block(
    checksum: &Digest,
    fs: u64,
    max_fs: i64,
    pt_fs: i64,
    timestamp: i64,
) -> FileBlock {
    file_block_mode(checksum, [0; 7], fs, max_fs, pt_fs, timestamp)
}

/// As [`file_block`], with FB bytes 49..55 set to `mode`.
pub fn file_block_mode(
    checksum: &Digest,
    mode: [u8; 7],
    fs: u64,
    max_fs: i64,
    pt_fs: i64,
    timestamp: i64,
) -> FileBlock {
    let mut fb = FileBlock {
        checksum: hash::checksum_field(checksum),
        my_hash: [0; 16],
        mode,
        ckpt_size: fs as i64,
        fs: fs as i64,
        max_fs,
        pt_fs,
        timestamp,
    };
    fb.seal();
    fb
}

/// Encodes a block's BMD and VMDs (zero padding) with the given chunk hashes.
pub fn encode_block_meta(block: &Block, hashes: &[Digest]) -> Vec<u8> {
    let mut out = Vec::with_capacity(block.meta_size() as usize);
    let meta = BlockMeta {
        numvars: block.chunks.len() as i32,
        dbsize: block.dbsize() as i64,
    };
    out.extend_from_slice(&meta.encode());
    for (c, h) in block.chunks.iter().zip(hashes) {
        out.extend_from_slice(&var_meta(c, *h).encode());
    }
    out
}

pub(crate) fn var_meta(c: &Chunk, hash: Digest) -> VarMeta {
    VarMeta {
        id: c.id,
        idx: c.idx as i32,
        container_id: c.container_id as i32,
        has_content: u8::from(c.has_content),
        padding: [0; 3],
        dptr: c.dptr.0 as i64,
        fptr: c.fptr.0 as i64,
        chunk_size: c.chunk_size as i64,
        container_size: c.container_size as i64,
        hash,
    }
}

/// The bytes of `c` in its variable's buffer. Sizes were checked by `check_data`; an empty
/// chunk left behind by a shrink may have a `dptr` past the variable's end.
fn chunk_slice<'a>(data: &[&'a [u8]], c: &Chunk) -> &'a [u8] {
    if c.chunk_size == 0 {
        return &[];
    }
    let start = c.dptr.0 as usize;
    &data[c.idx as usize][start..start + c.chunk_size as usize]
}

/// Checks the layout as the reader would check the file, then that `data[idx]` has the size
/// the layout gives variable `idx`.
fn check_data(layout: &Layout, data: &[&[u8]]) -> Result<()> {
    crate::read::check_layout(layout)?;
    let vars = layout.vars();
    if vars.len() != data.len() {
        return Err(Error::new(ErrorKind::Plan {
            idx: vars.len().min(data.len()),
            what: format!(
                "the layout has {} variables, {} buffers were given",
                vars.len(),
                data.len()
            ),
        }));
    }
    for (v, d) in vars.iter().zip(data) {
        if v.size != d.len() as u64 {
            return Err(Error::new(ErrorKind::SizeMismatch {
                id: v.id,
                expected: v.size,
                actual: d.len() as u64,
            }));
        }
    }
    Ok(())
}

/// Writes the containers of a block: chunk data then zero fill.
fn write_containers(
    file: &(impl Sink + ?Sized),
    block: &Block,
    data: &[&[u8]],
) -> std::io::Result<()> {
    for c in &block.chunks {
        file.write_all_at(chunk_slice(data, c), c.fptr.0)?;
        let mut at = c.fptr.0 + c.chunk_size;
        let end = c.fptr.0 + c.container_size;
        while at < end {
            let n = (end - at).min(ZEROS.len() as u64);
            file.write_all_at(&ZEROS[..n as usize], at)?;
            at += n;
        }
    }
    Ok(())
}

/// Writes a whole checkpoint file for `layout` into `file`, whose current content is replaced.
/// `data[idx]` is the buffer of the variable at protect position `idx`; its length must be the
/// variable's size in the layout. Returns the file block written.
pub fn write_file(
    file: &(impl Sink + ?Sized),
    layout: &Layout,
    data: &[&[u8]],
    opts: &WriteOptions,
) -> Result<FileBlock> {
    write_file_with_progress(file, layout, data, opts, &|_| {}).map(|w| w.fb)
}

/// As [`write_file`], reporting progress: `progress` receives the number of file bytes the
/// serial checksum (the last pass to finish) has covered so far.
pub fn write_file_with_progress(
    file: &(impl Sink + ?Sized),
    layout: &Layout,
    data: &[&[u8]],
    opts: &WriteOptions,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<Written> {
    check_data(layout, data)?;
    if let Integrity::Fast { .. } = opts.integrity {
        return update_file(file, None, layout, data, opts, progress);
    }
    let fs = layout.file_size();
    let table_blocking = opts.table;
    let (checksum, metas, written, tables) = std::thread::scope(|s| {
        // Block i's containers are copied only once its chunk hashes are done: the copy then
        // runs on the core the serial checksum leaves free, not against the parallel hashing.
        let (tx_write, rx_write) = mpsc::channel::<&Block>();
        let writer = s.spawn(move || -> std::io::Result<()> {
            for block in rx_write {
                write_containers(file, block, data)?;
            }
            file.data_written()
        });
        let (tx_sum, rx_sum) = mpsc::sync_channel::<Vec<(Digest, Vec<u128>)>>(1);
        s.spawn(move || {
            for block in &layout.blocks {
                let hashes = block
                    .chunks
                    .par_iter()
                    .map(|c| {
                        let chunk = chunk_slice(data, c);
                        let blocks = table_blocking
                            .map_or_else(Vec::new, |b| b.container_hashes(chunk, c.container_size));
                        (hash::md5(chunk), blocks)
                    })
                    .collect();
                if tx_sum.send(hashes).is_err() || tx_write.send(block).is_err() {
                    return;
                }
            }
        });
        let mut md5 = Md5Stream::default();
        let mut metas = Vec::with_capacity(layout.blocks.len());
        let mut tables: Vec<(Digest, Vec<u128>)> = Vec::new();
        for (block, with_blocks) in layout.blocks.iter().zip(rx_sum) {
            let hashes: Vec<Digest> = with_blocks.iter().map(|(h, _)| *h).collect();
            tables.extend(with_blocks);
            let meta = encode_block_meta(block, &hashes);
            md5.update(&meta);
            for c in &block.chunks {
                let mut done = 0u64;
                for piece in chunk_slice(data, c).chunks(PROGRESS_STEP) {
                    md5.update(piece);
                    done += piece.len() as u64;
                    progress(c.fptr.0 + done);
                }
                md5.update_zeros(c.container_size - c.chunk_size);
            }
            progress(block.end());
            metas.push(meta);
        }
        let written = writer
            .join()
            .unwrap_or_else(|_| Err(std::io::Error::other("writer thread panicked")));
        (md5.finish(), metas, written, tables)
    });
    written?;
    for (block, meta) in layout.blocks.iter().zip(&metas) {
        file.write_all_at(meta, block.offset.0)?;
    }
    let fb = finish_file(file, layout, &checksum, Integrity::Md5, opts)?;
    let table = table_blocking.map(|blocking| {
        let (chunk_hashes, containers) = tables.into_iter().unzip();
        BlockTable {
            blocking,
            containers,
            chunk_hashes,
        }
    });
    Ok(Written {
        fb,
        table,
        bytes_written: fs,
    })
}

/// Writes the file block and cuts the file at `fs`.
fn finish_file(
    file: &(impl Sink + ?Sized),
    layout: &Layout,
    checksum: &Digest,
    integrity: Integrity,
    opts: &WriteOptions,
) -> Result<FileBlock> {
    let timestamp = opts.timestamp.unwrap_or_else(now_ns);
    let fs = layout.file_size();
    let fb = file_block_mode(
        checksum,
        integrity.fb_mode(),
        fs,
        opts.max_fs,
        opts.pt_fs,
        timestamp,
    );
    file.write_all_at(&fb.encode(), 0)?;
    file.set_len(fs)?;
    Ok(fb)
}

/// Writes bytes `[start, end)` of a container (its chunk `chunk` followed by zeros) at its
/// place in the file.
fn write_container_range(
    file: &(impl Sink + ?Sized),
    c: &Chunk,
    chunk: &[u8],
    start: u64,
    end: u64,
) -> std::io::Result<()> {
    let len = chunk.len() as u64;
    if start < len {
        // start < end <= ... and start < len, so the range is inside `chunk`.
        file.write_all_at(
            &chunk[start as usize..end.min(len) as usize],
            c.fptr.0 + start,
        )?;
    }
    let mut at = start.max(len);
    while at < end {
        let n = (end - at).min(ZEROS.len() as u64);
        file.write_all_at(&ZEROS[..n as usize], c.fptr.0 + at)?;
        at += n;
    }
    Ok(())
}

/// Checks that `layout` continues `old`: the same blocks and containers in the same places
/// (only chunk sizes and `hascontent` may differ), new blocks appended.
fn check_continues(old: &Layout, layout: &Layout) -> Result<()> {
    let same = old.blocks.len() <= layout.blocks.len()
        && old.blocks.iter().zip(&layout.blocks).all(|(a, b)| {
            a.offset == b.offset
                && a.chunks.len() == b.chunks.len()
                && a.chunks.iter().zip(&b.chunks).all(|(x, y)| {
                    (
                        x.id,
                        x.idx,
                        x.container_id,
                        x.dptr,
                        x.fptr,
                        x.container_size,
                    ) == (
                        y.id,
                        y.idx,
                        y.container_id,
                        y.dptr,
                        y.fptr,
                        y.container_size,
                    )
                })
        });
    if same {
        Ok(())
    } else {
        Err(Error::new(ErrorKind::Plan {
            idx: 0,
            what: "the new layout does not continue the old file's layout".into(),
        }))
    }
}

/// Updates `file`, which holds the checkpoint described by `old` (its layout and block
/// table), in place into the checkpoint of `layout` and `data`, writing only the blocks whose
/// hash changed, the meta data and the file block. With `old = None` the whole file is
/// written (the path of full fast-integrity writes). The table's blocking must be the one the
/// update uses: the fast blocking in fast mode, `opts.table` otherwise.
///
/// Passes over the data: one block-hash scan (xxh3 by default: cheap); in MD5 mode also MD5
/// of each chunk that changed and one MD5 of the whole file for the checksum, which
/// dominates; in fast mode chunk and file hashes are over block hashes, so nothing else.
pub fn update_file(
    file: &(impl Sink + ?Sized),
    old: Option<(&Layout, &BlockTable)>,
    layout: &Layout,
    data: &[&[u8]],
    opts: &WriteOptions,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<Written> {
    check_data(layout, data)?;
    let blocking = update_blocking(opts)?;
    let empty = BlockTable {
        blocking,
        containers: Vec::new(),
        chunk_hashes: Vec::new(),
    };
    let (old_layout, old_table) = match old {
        Some((l, t)) => {
            check_continues(l, layout)?;
            if t.blocking != blocking {
                return Err(Error::new(ErrorKind::Plan {
                    idx: 0,
                    what: "the old file's block table uses another block size or hash".into(),
                }));
            }
            (Some(l), t)
        }
        None => (None, &empty),
    };
    let chunks: Vec<&Chunk> = layout.chunks().collect();
    let old_sizes: Vec<u64> =
        old_layout.map_or_else(Vec::new, |l| l.chunks().map(|c| c.chunk_size).collect());
    // Block hashes of every container, in parallel; then what changed.
    let containers: Vec<Vec<u128>> = chunks
        .par_iter()
        .map(|c| blocking.container_hashes(chunk_slice(data, c), c.container_size))
        .collect();
    let rewrites: Vec<(bool, u64)> = chunks
        .par_iter()
        .enumerate()
        .map(|(i, c)| {
            let resized = old_sizes.get(i) != Some(&c.chunk_size);
            let old_hashes = old_table.containers.get(i).map_or(&[][..], Vec::as_slice);
            let written = write_changed_blocks(
                file,
                c,
                chunk_slice(data, c),
                blocking.size.max(1),
                old_hashes,
                &containers[i],
            )?;
            Ok((resized || written > 0, written))
        })
        .collect::<std::io::Result<_>>()?;
    let chunk_hashes: Vec<Digest> = chunks
        .par_iter()
        .enumerate()
        .map(|(i, c)| match opts.integrity {
            Integrity::Fast { .. } => {
                blocks::fast_chunk_hash(c.chunk_size, c.container_size, &containers[i])
            }
            Integrity::Md5 => match old_table.chunk_hashes.get(i) {
                Some(h) if !rewrites[i].0 => *h,
                _ => hash::md5(chunk_slice(data, c)),
            },
        })
        .collect();
    let metas = write_metas(file, layout, &chunk_hashes)?;
    let checksum = layout_checksum(layout, data, &metas, opts.integrity, progress);
    let fb = finish_file(file, layout, &checksum, opts.integrity, opts)?;
    let meta_bytes: u64 = metas.iter().map(|m| m.len() as u64).sum();
    let data_bytes: u64 = rewrites.iter().map(|r| r.1).sum();
    Ok(Written {
        fb,
        table: Some(BlockTable {
            blocking,
            containers,
            chunk_hashes,
        }),
        bytes_written: data_bytes + meta_bytes + crate::raw::fb::SIZE as u64,
    })
}

/// The blocking of a differential update: the file's own in fast mode, else `opts.table`.
fn update_blocking(opts: &WriteOptions) -> Result<Blocking> {
    match opts.integrity {
        Integrity::Fast { block_log2 } => Ok(blocks::fast_blocking(block_log2)),
        Integrity::Md5 => opts.table.ok_or_else(|| {
            Error::new(ErrorKind::Plan {
                idx: 0,
                what: "a differential update needs a block size and hash (WriteOptions::table)"
                    .into(),
            })
        }),
    }
}

/// Writes the runs of blocks of one container whose hash differs from `old` (all of them
/// where `old` has none); returns the bytes written.
fn write_changed_blocks(
    file: &(impl Sink + ?Sized),
    c: &Chunk,
    chunk: &[u8],
    block_size: u64,
    old: &[u128],
    new: &[u128],
) -> std::io::Result<u64> {
    let mut written = 0;
    let mut run: Option<u64> = None;
    let n = new.len() as u64;
    for j in 0..=n {
        let differs = j < n && old.get(j as usize) != new.get(j as usize);
        match (differs, run) {
            (true, None) => run = Some(j),
            (false, Some(first)) => {
                let (start, end) = (first * block_size, (j * block_size).min(c.container_size));
                write_container_range(file, c, chunk, start, end)?;
                written += end - start;
                run = None;
            }
            _ => {}
        }
    }
    Ok(written)
}

/// The file checksum of a layout from the data in memory: MD5 over every byte in file order,
/// or in fast mode xxh3 over the meta data.
fn layout_checksum(
    layout: &Layout,
    data: &[&[u8]],
    metas: &[Vec<u8>],
    integrity: Integrity,
    progress: &(dyn Fn(u64) + Sync),
) -> Digest {
    let digest = match integrity {
        Integrity::Fast { .. } => {
            blocks::fast_checksum(&integrity.fb_mode(), metas.iter().map(Vec::as_slice))
        }
        Integrity::Md5 => {
            let mut md5 = Md5Stream::default();
            for (block, meta) in layout.blocks.iter().zip(metas) {
                md5.update(meta);
                for c in &block.chunks {
                    md5.update(chunk_slice(data, c));
                    md5.update_zeros(c.container_size - c.chunk_size);
                }
                progress(block.end());
            }
            md5.finish()
        }
    };
    progress(layout.file_size());
    digest
}

/// Encodes and writes every block's meta data with the chunk hashes (file order); returns the
/// encoded bytes, which fast checksums cover.
fn write_metas(
    file: &(impl Sink + ?Sized),
    layout: &Layout,
    chunk_hashes: &[Digest],
) -> Result<Vec<Vec<u8>>> {
    let mut metas = Vec::with_capacity(layout.blocks.len());
    let mut rest = chunk_hashes;
    for block in &layout.blocks {
        let (mine, after) = rest.split_at(block.chunks.len().min(rest.len()));
        let meta = encode_block_meta(block, mine);
        file.write_all_at(&meta, block.offset.0)?;
        metas.push(meta);
        rest = after;
    }
    Ok(metas)
}

/// Creates (or replaces) the file at `path` and writes the checkpoint into it.
pub fn write_path(
    path: &Path,
    layout: &Layout,
    data: &[&[u8]],
    opts: &WriteOptions,
) -> Result<FileBlock> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(|e| Error::from(e).with_path(path))?;
    write_file(&file, layout, data, opts).map_err(|e| e.with_path(path))
}

/// `CLOCK_REALTIME` in ns since the Unix epoch.
pub fn now_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

/// Writes a checkpoint one variable at a time (incremental checkpointing, FTI's iCP): each
/// variable's containers are written as soon as it is added, so the I/O of one variable
/// overlaps the application's work on the next; [`Incremental::finish`] then writes the meta
/// data and the file block.
#[derive(Debug)]
pub struct Incremental {
    layout: Layout,
    opts: WriteOptions,
    /// `VMD.hash` per container in file order, once its variable is added.
    hashes: Vec<Option<Digest>>,
    added: Vec<bool>,
    bytes_written: u64,
}

impl Incremental {
    /// Starts an incremental write of `layout` (checked as the reader would check it).
    pub fn new(layout: Layout, opts: WriteOptions) -> Result<Self> {
        crate::read::check_layout(&layout)?;
        let vars = layout.vars();
        let added = (0..vars.len() as u32)
            .map(|idx| layout.is_removed(idx))
            .collect();
        let hashes = layout
            .chunks()
            .map(|c| {
                layout
                    .is_removed(c.idx)
                    .then(|| empty_chunk_hash(c, opts.integrity))
            })
            .collect();
        Ok(Incremental {
            layout,
            opts,
            hashes,
            added,
            bytes_written: 0,
        })
    }

    /// The layout being written.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// Whether the variable at `idx` has been added.
    pub fn is_added(&self, idx: u32) -> bool {
        self.added.get(idx as usize).copied().unwrap_or(false)
    }

    /// Writes the containers of the variable at protect position `idx` from `data`.
    pub fn add(&mut self, file: &(impl Sink + ?Sized), idx: u32, data: &[u8]) -> Result<()> {
        let vars = self.layout.vars();
        let var = vars.get(idx as usize).ok_or_else(|| {
            Error::new(ErrorKind::Plan {
                idx: idx as usize,
                what: "no variable at this protect position".into(),
            })
        })?;
        if self.is_added(idx) {
            return Err(Error::new(ErrorKind::Plan {
                idx: idx as usize,
                what: format!("variable {} was already added", var.id),
            }));
        }
        if var.size != data.len() as u64 {
            return Err(Error::new(ErrorKind::SizeMismatch {
                id: var.id,
                expected: var.size,
                actual: data.len() as u64,
            }));
        }
        for (i, c) in self
            .layout
            .chunks()
            .enumerate()
            .filter(|(_, c)| c.idx == idx)
        {
            let chunk = if c.chunk_size == 0 {
                &[][..]
            } else {
                &data[c.dptr.0 as usize..(c.dptr.0 + c.chunk_size) as usize]
            };
            write_container_range(file, c, chunk, 0, c.container_size)?;
            self.bytes_written += c.container_size;
            self.hashes[i] = Some(match self.opts.integrity {
                Integrity::Md5 => hash::md5(chunk),
                Integrity::Fast { block_log2 } => {
                    let blocks =
                        blocks::fast_blocking(block_log2).container_hashes(chunk, c.container_size);
                    blocks::fast_chunk_hash(c.chunk_size, c.container_size, &blocks)
                }
            });
        }
        self.added[idx as usize] = true;
        Ok(())
    }

    /// Writes the meta data and the file block. Every protected variable must have been
    /// added. In MD5 mode the file checksum needs every byte in file order, so the data are
    /// read back from the file (from the page cache, normally) in one serial MD5 pass.
    pub fn finish(
        self,
        file: &(impl Sink + ?Sized),
        progress: &(dyn Fn(u64) + Sync),
    ) -> Result<Written> {
        if let Some(idx) = self.added.iter().position(|a| !a) {
            let id = self.layout.vars()[idx].id;
            return Err(Error::new(ErrorKind::Plan {
                idx,
                what: format!("variable {id} was never added to the incremental checkpoint"),
            }));
        }
        let hashes: Vec<Digest> = self
            .hashes
            .into_iter()
            .map(|h| h.unwrap_or(hash::EMPTY_MD5))
            .collect();
        let metas = write_metas(file, &self.layout, &hashes)?;
        let fs = self.layout.file_size();
        let checksum = match self.opts.integrity {
            Integrity::Fast { .. } => blocks::fast_checksum(
                &self.opts.integrity.fb_mode(),
                metas.iter().map(Vec::as_slice),
            ),
            Integrity::Md5 => {
                let mut md5 = Md5Stream::default();
                let mut buf = vec![0u8; 8 << 20];
                let mut at = crate::raw::fb::SIZE as u64;
                while at < fs {
                    let n = (fs - at).min(buf.len() as u64) as usize;
                    file.read_exact_at(&mut buf[..n], at)?;
                    md5.update(&buf[..n]);
                    at += n as u64;
                    progress(at);
                }
                md5.finish()
            }
        };
        let fb = finish_file(
            file,
            &self.layout,
            &checksum,
            self.opts.integrity,
            &self.opts,
        )?;
        let meta_bytes: u64 = metas.iter().map(|m| m.len() as u64).sum();
        Ok(Written {
            fb,
            table: None,
            bytes_written: self.bytes_written + meta_bytes + crate::raw::fb::SIZE as u64,
        })
    }
}

/// The hash of a container without data (a removed variable's): its fill is all zeros.
fn empty_chunk_hash(c: &Chunk, integrity: Integrity) -> Digest {
    match integrity {
        Integrity::Md5 => hash::EMPTY_MD5,
        Integrity::Fast { block_log2 } => {
            let blocks = blocks::fast_blocking(block_log2).container_hashes(&[], c.container_size);
            blocks::fast_chunk_hash(0, c.container_size, &blocks)
        }
    }
}
