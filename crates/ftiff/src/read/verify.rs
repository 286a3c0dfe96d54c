//! Checking a parsed checkpoint's hashes: `myHash`, the file checksum (one serial MD5 pass,
//! or fast mode's checksum over the meta data) and every chunk's hash, in parallel.

use rayon::prelude::*;

use super::{slice_at, Checkpoint, ChunkRecord};
use crate::blocks::{self, Integrity};
use crate::error::{Error, ErrorKind, Record, Result};
use crate::hash::{self, Digest, Md5Stream};
use crate::raw::{fb, vmd};

impl Checkpoint<'_> {
    /// Checks every hash, the zero fill and the file length. Returns every problem found
    /// (empty: the file is intact). The file checksum runs on one thread while the chunk hashes
    /// run on the others; `progress` receives the number of checksum bytes done so far.
    pub fn verify(&self, progress: &(dyn Fn(u64) + Sync)) -> Vec<Error> {
        let bytes = self.bytes;
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
    pub(super) fn check_chunk(&self, bytes: &[u8], r: &ChunkRecord) -> Result<()> {
        check_chunk_hash(r, self.chunk_hash_of(bytes, r))
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
        // MD5 chunk hashes of equal-length variables are computed together in SIMD lanes.
        let computed: Vec<Digest> = match self.integrity {
            Integrity::Md5 => hash::md5_each(
                &(records.iter())
                    .map(|r| slice_at(bytes, r.chunk.fptr.0, r.chunk.chunk_size))
                    .collect::<Vec<_>>(),
            ),
            Integrity::Fast { .. } => records
                .par_iter()
                .map(|r| self.chunk_hash_of(bytes, r))
                .collect(),
        };
        records
            .par_iter()
            .zip(computed)
            .flat_map_iter(|(r, computed)| {
                let mut problems = Vec::new();
                let c = &r.chunk;
                let fill = slice_at(
                    bytes,
                    c.fptr.0 + c.chunk_size,
                    c.container_size - c.chunk_size,
                );
                if let Err(e) = check_chunk_hash(r, computed) {
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
}

/// A chunk's stored hash against the one computed from its bytes.
fn check_chunk_hash(r: &ChunkRecord, computed: Digest) -> Result<()> {
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
