//! Rewriting a file in place for a differential checkpoint: only changed blocks and the
//! meta data are written.

use super::*;

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
            check_old(l, t, layout, blocking)?;
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

/// Refuses to update a file whose layout `layout` does not continue, or whose block table
/// uses another blocking than the update's.
fn check_old(
    old_layout: &Layout,
    old_table: &BlockTable,
    layout: &Layout,
    blocking: Blocking,
) -> Result<()> {
    check_continues(old_layout, layout)?;
    if old_table.blocking != blocking {
        return Err(Error::new(ErrorKind::Plan {
            idx: 0,
            what: "the old file's block table uses another block size or hash".into(),
        }));
    }
    Ok(())
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
