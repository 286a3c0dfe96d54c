//! Writing a file whose data arrive in pieces, in file order: a checkpoint larger than the
//! memory that may hold a copy of it. Each piece is hashed into its chunk's hash and written
//! once, then the caller may reuse its memory; the file checksum, which covers the meta data
//! (holding the chunk hashes) before the data, is computed afterwards from the file's own
//! bytes.

use super::{encode_block_meta, finish_file, WriteOptions, Written};
use crate::blocks::Integrity;
use crate::error::{Error, ErrorKind, Result};
use crate::hash::{Md5Stream, ZEROS};
use crate::layout::{Chunk, Layout};
use crate::Sink;

/// Where a piece goes: hashed into its chunk's hash and written at its place.
pub type PutPiece<'a> = dyn FnMut(&[u8]) -> std::io::Result<()> + 'a;

/// Writes an MD5 file (FTI 1.1's integrity, no block table) of `layout`, equal to what
/// [`super::write_file`] writes from the same bytes, taking each chunk's bytes from `source`:
/// for every chunk, in file order, `source(chunk, put)` hands the chunk's `chunk_size` bytes
/// (bytes `dptr..dptr + chunk_size` of variable `idx`) to `put`, in order, in pieces of any
/// size. The file is read back once for the checksum.
pub fn write_file_streamed(
    file: &(impl Sink + ?Sized),
    layout: &Layout,
    source: &mut dyn FnMut(&Chunk, &mut PutPiece<'_>) -> std::io::Result<()>,
    opts: &WriteOptions,
) -> Result<Written> {
    crate::read::check_layout(layout)?;
    if opts.integrity != Integrity::Md5 || opts.table.is_some() {
        return Err(Error::new(ErrorKind::Plan {
            idx: 0,
            what: "a file written from pieces is an MD5 file without a block table".into(),
        }));
    }
    let mut metas = Vec::with_capacity(layout.blocks.len());
    for block in &layout.blocks {
        let mut hashes = Vec::with_capacity(block.chunks.len());
        for c in &block.chunks {
            let mut md5 = Md5Stream::default();
            let end = c.fptr.0 + c.chunk_size;
            let mut at = c.fptr.0;
            source(c, &mut |piece: &[u8]| {
                if at + piece.len() as u64 > end {
                    return Err(std::io::Error::other(format!(
                        "variable {} gave more than the {} bytes of its chunk",
                        c.id, c.chunk_size
                    )));
                }
                md5.update(piece);
                file.write_all_at(piece, at)?;
                at += piece.len() as u64;
                Ok(())
            })?;
            if at != end {
                return Err(Error::new(ErrorKind::Plan {
                    idx: c.idx as usize,
                    what: format!(
                        "variable {} gave {} of the {} bytes of its chunk",
                        c.id,
                        at - c.fptr.0,
                        c.chunk_size
                    ),
                }));
            }
            let container_end = c.fptr.0 + c.container_size;
            while at < container_end {
                let n = (container_end - at).min(ZEROS.len() as u64);
                file.write_all_at(&ZEROS[..n as usize], at)?;
                at += n;
            }
            hashes.push(md5.finish());
        }
        metas.push(encode_block_meta(block, &hashes));
    }
    file.data_written()?;
    let mut checksum = Md5Stream::default();
    let mut buf = vec![0u8; 1 << 20];
    for (block, meta) in layout.blocks.iter().zip(&metas) {
        checksum.update(meta);
        for c in &block.chunks {
            let (mut at, end) = (c.fptr.0, c.fptr.0 + c.chunk_size);
            while at < end {
                let n = (end - at).min(buf.len() as u64) as usize;
                file.read_exact_at(&mut buf[..n], at)?;
                checksum.update(&buf[..n]);
                at += n as u64;
            }
            checksum.update_zeros(c.container_size - c.chunk_size);
        }
    }
    for (block, meta) in layout.blocks.iter().zip(&metas) {
        file.write_all_at(meta, block.offset.0)?;
    }
    let fb = finish_file(file, layout, &checksum.finish(), Integrity::Md5, opts)?;
    Ok(Written {
        fb,
        table: None,
        bytes_written: layout.file_size(),
    })
}
