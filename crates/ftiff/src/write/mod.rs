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

mod incremental;
mod records;
mod streamed;
mod update;

pub use incremental::Incremental;
pub(crate) use records::var_meta;
pub use records::{encode_block_meta, file_block, file_block_mode};
use records::{layout_checksum, write_metas};
pub use streamed::{write_file_streamed, PutPiece};
pub use update::update_file;

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
        let (tx_sum, rx_sum) = mpsc::sync_channel::<BlockHashes>(1);
        let checksum = s.spawn(move || serial_checksum(layout, data, rx_sum, progress));
        // The chunk hashes run on the calling thread's rayon pool (the global one, or the one
        // the caller installed: a background write runs in a pool of its own).
        for block in &layout.blocks {
            let hashes = match table_blocking {
                None => chunk_hashes(block, data)
                    .into_iter()
                    .map(|h| (h, Vec::new()))
                    .collect(),
                Some(b) => block
                    .chunks
                    .par_iter()
                    .map(|c| {
                        let chunk = chunk_slice(data, c);
                        (
                            hash::md5(chunk),
                            b.container_hashes(chunk, c.container_size),
                        )
                    })
                    .collect(),
            };
            if tx_sum.send(hashes).is_err() || tx_write.send(block).is_err() {
                break;
            }
        }
        drop((tx_sum, tx_write));
        let written = writer
            .join()
            .unwrap_or_else(|_| Err(std::io::Error::other("writer thread panicked")));
        let (checksum, metas, tables) = checksum
            .join()
            .unwrap_or_else(|e| std::panic::resume_unwind(e));
        (checksum, metas, written, tables)
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

/// The chunk hashes of `block`, in order: chunks of equal length hashed together in SIMD
/// lanes, spread over the rayon pool ([`hash::md5_each`]).
fn chunk_hashes(block: &Block, data: &[&[u8]]) -> Vec<hash::Digest> {
    let chunks: Vec<&[u8]> = block.chunks.iter().map(|c| chunk_slice(data, c)).collect();
    hash::md5_each(&chunks)
}

/// Chunk hashes of one block and, with a block table, its containers' hashes.
type BlockHashes = Vec<(Digest, Vec<u128>)>;

/// The serial pass of [`write_file_with_progress`]: the file checksum over every block's
/// meta data (made from its chunk hashes, received block by block from `hashes`) and data.
/// Returns the checksum, the blocks' encoded meta data and the hashes received, in order.
fn serial_checksum(
    layout: &Layout,
    data: &[&[u8]],
    hashes: mpsc::Receiver<BlockHashes>,
    progress: &(dyn Fn(u64) + Sync),
) -> (Digest, Vec<Vec<u8>>, BlockHashes) {
    let mut md5 = Md5Stream::default();
    let mut metas = Vec::with_capacity(layout.blocks.len());
    let mut tables: BlockHashes = Vec::new();
    for (block, with_blocks) in layout.blocks.iter().zip(hashes) {
        let chunk_hashes: Vec<Digest> = with_blocks.iter().map(|(h, _)| *h).collect();
        tables.extend(with_blocks);
        let meta = encode_block_meta(block, &chunk_hashes);
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
    (md5.finish(), metas, tables)
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
