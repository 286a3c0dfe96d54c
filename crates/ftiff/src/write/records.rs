//! The meta data records as the writer builds them: file block, block meta data, VMDs.

use super::*;

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

/// The file checksum of a layout from the data in memory: MD5 over every byte in file order,
/// or in fast mode xxh3 over the meta data.
pub(super) fn layout_checksum(
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
pub(super) fn write_metas(
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
