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
//!    the core the serial checksum leaves free), which then `fsync`s the data while the
//!    checksum is still running.
//!
//! Two MD5 streams over every byte are the format's own cost (SPEC §3); the copy and the
//! `fsync` overlap with them.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::mpsc;
use std::time::{SystemTime, UNIX_EPOCH};

use rayon::prelude::*;

use crate::error::{Error, ErrorKind, Result};
use crate::hash::{self, Digest, Md5Stream, ZEROS};
use crate::layout::{Block, Chunk, Layout};
use crate::raw::{BlockMeta, FileBlock, VarMeta};

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
    /// `fsync` the data before returning (on by default; turn off only for scratch files).
    pub sync: bool,
}

impl Default for WriteOptions {
    fn default() -> Self {
        WriteOptions {
            timestamp: None,
            max_fs: -1,
            pt_fs: -1,
            sync: true,
        }
    }
}

/// Builds a file block for a body checksum, computing `myHash`.
pub fn file_block(
    checksum: &Digest,
    fs: u64,
    max_fs: i64,
    pt_fs: i64,
    timestamp: i64,
) -> FileBlock {
    let mut fb = FileBlock {
        checksum: hash::checksum_field(checksum),
        my_hash: [0; 16],
        ckpt_size: fs as i64,
        fs: fs as i64,
        max_fs,
        pt_fs,
        timestamp,
    };
    fb.my_hash = hash::my_hash(&fb);
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
fn write_containers(file: &File, block: &Block, data: &[&[u8]]) -> std::io::Result<()> {
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
    file: &File,
    layout: &Layout,
    data: &[&[u8]],
    opts: &WriteOptions,
) -> Result<FileBlock> {
    write_file_with_progress(file, layout, data, opts, &|_| {})
}

/// As [`write_file`], reporting progress: `progress` receives the number of file bytes the
/// serial checksum (the last pass to finish) has covered so far.
pub fn write_file_with_progress(
    file: &File,
    layout: &Layout,
    data: &[&[u8]],
    opts: &WriteOptions,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<FileBlock> {
    check_data(layout, data)?;
    let fs = layout.file_size();
    let (checksum, metas, written) = std::thread::scope(|s| {
        // Block i's containers are copied only once its chunk hashes are done: the copy then
        // runs on the core the serial checksum leaves free, not against the parallel hashing.
        let (tx_write, rx_write) = mpsc::channel::<&Block>();
        let writer = s.spawn(move || -> std::io::Result<()> {
            for block in rx_write {
                write_containers(file, block, data)?;
            }
            if opts.sync {
                file.sync_data()?;
            }
            Ok(())
        });
        let (tx_sum, rx_sum) = mpsc::sync_channel::<Vec<Digest>>(1);
        s.spawn(move || {
            for block in &layout.blocks {
                let hashes = block
                    .chunks
                    .par_iter()
                    .map(|c| hash::md5(chunk_slice(data, c)))
                    .collect();
                if tx_sum.send(hashes).is_err() || tx_write.send(block).is_err() {
                    return;
                }
            }
        });
        let mut md5 = Md5Stream::default();
        let mut metas = Vec::with_capacity(layout.blocks.len());
        for (block, hashes) in layout.blocks.iter().zip(rx_sum) {
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
        (md5.finish(), metas, written)
    });
    written?;
    for (block, meta) in layout.blocks.iter().zip(&metas) {
        file.write_all_at(meta, block.offset.0)?;
    }
    let timestamp = opts.timestamp.unwrap_or_else(now_ns);
    let fb = file_block(&checksum, fs, opts.max_fs, opts.pt_fs, timestamp);
    file.write_all_at(&fb.encode(), 0)?;
    file.set_len(fs)?;
    if opts.sync {
        file.sync_data()?;
    }
    Ok(fb)
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
