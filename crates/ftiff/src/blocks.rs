//! Fixed-size blocks of containers: the unit of change detection for differential
//! checkpoints, and of hashing in fti-rs's fast-integrity files
//! (`docs/format-extensions.md`).
//!
//! A container's content is its chunk's data followed by zeros up to `containersize`; it is
//! cut into blocks of `block_size` bytes (the last one shorter). Hashing works on that virtual
//! content without materialising the zero fill.

use xxhash_rust::xxh3::xxh3_128;

use crate::error::{Error, ErrorKind, Record, Result};
use crate::hash::ZEROS;
use crate::raw::fb;

/// Marker of a fast-integrity file in FB bytes 49..52.
pub const FAST_MAGIC: [u8; 4] = *b"FRSF";
/// Version of the fast-integrity extension (FB byte 53).
pub const FAST_VERSION: u8 = 1;
/// Block hash algorithm id of xxh3-128 (FB byte 54).
pub const FAST_ALGO_XXH3_128: u8 = 1;
/// Smallest and largest block sizes (as log2) a fast file may declare.
pub const FAST_BLOCK_LOG2: std::ops::RangeInclusive<u8> = 9..=26;

/// How a file's integrity is protected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Integrity {
    /// FTI 1.1: MD5 per chunk, MD5 file checksum. Readable by FTI 1.1.
    Md5,
    /// fti-rs fast mode: xxh3-128 per block of `1 << block_log2` bytes, chunk and file hashes
    /// over block hashes. FTI 1.1 rejects such files (its MD5 check fails).
    Fast {
        /// log2 of the block size.
        block_log2: u8,
    },
}

impl Integrity {
    /// The mode a file block declares. Anything but the fast marker is an FTI 1.1 file (whose
    /// padding may hold garbage); a marker with an unknown version, algorithm or block size
    /// is an error rather than a guess.
    pub fn from_fb_mode(mode: &[u8; 7]) -> Result<Integrity> {
        if mode[..4] != FAST_MAGIC {
            return Ok(Integrity::Md5);
        }
        let bad = |off: usize, what| {
            Error::malformed(
                (fb::PADDING + off) as u64,
                Record::FileBlock,
                "mode",
                mode[off].into(),
                what,
            )
        };
        if mode[4] != FAST_VERSION {
            return Err(bad(4, "fast-integrity marker with an unknown version"));
        }
        if mode[5] != FAST_ALGO_XXH3_128 {
            return Err(bad(5, "fast-integrity marker with an unknown block hash"));
        }
        if !FAST_BLOCK_LOG2.contains(&mode[6]) {
            return Err(bad(
                6,
                "fast-integrity block size out of range (2^9 .. 2^26)",
            ));
        }
        Ok(Integrity::Fast {
            block_log2: mode[6],
        })
    }

    /// FB bytes 49..55 for this mode.
    pub fn fb_mode(self) -> [u8; 7] {
        match self {
            Integrity::Md5 => [0; 7],
            Integrity::Fast { block_log2 } => {
                let [a, b, c, d] = FAST_MAGIC;
                [a, b, c, d, FAST_VERSION, FAST_ALGO_XXH3_128, block_log2]
            }
        }
    }

    /// A fast mode for a block size, which must be a power of two in range.
    pub fn fast(block_size: u64) -> Result<Integrity> {
        let log2 = block_size.trailing_zeros();
        if !block_size.is_power_of_two() || !FAST_BLOCK_LOG2.contains(&(log2 as u8)) {
            return Err(Error::new(ErrorKind::Plan {
                idx: 0,
                what: format!(
                    "fast-integrity block size {block_size} is not a power of two in 512 .. 64 MiB"
                ),
            }));
        }
        Ok(Integrity::Fast {
            block_log2: log2 as u8,
        })
    }
}

/// The hash used to detect changed blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockHash {
    /// xxh3-128: fast, and the block hash of fast-integrity files.
    Xxh3,
    /// MD5 (FTI's `dcp_mode = 1`).
    Md5,
    /// CRC32 (FTI's `dcp_mode = 2`).
    Crc32,
}

/// Block size and hash of a block table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Blocking {
    /// Bytes per block (> 0).
    pub size: u64,
    /// Hash of each block.
    pub hash: BlockHash,
}

impl Blocking {
    /// Hash of one block's bytes.
    pub fn hash(&self, bytes: &[u8]) -> u128 {
        match self.hash {
            BlockHash::Xxh3 => xxh3_128(bytes),
            BlockHash::Md5 => u128::from_le_bytes(crate::hash::md5(bytes)),
            BlockHash::Crc32 => crc32fast::hash(bytes).into(),
        }
    }

    /// Bytes per block (a zero size is taken as 1, so a block always advances).
    fn step(&self) -> u64 {
        self.size.max(1)
    }

    /// Number of blocks of a container.
    pub fn count(&self, container_size: u64) -> u64 {
        container_size.div_ceil(self.step())
    }

    /// The hash of block `i` of a container holding `data` then zeros up to
    /// `container_size`; `scratch` holds a block that straddles the data's end.
    fn hash_block(&self, data: &[u8], container_size: u64, i: u64, scratch: &mut Vec<u8>) -> u128 {
        let start = i * self.step();
        let end = (start + self.step()).min(container_size);
        let len = data.len() as u64;
        if end <= len {
            // In range: end <= data.len().
            return self.hash(&data[start as usize..end as usize]);
        }
        scratch.clear();
        if start < len {
            scratch.extend_from_slice(&data[start as usize..]);
        }
        let mut missing = (end - start) as usize - scratch.len();
        while missing > 0 {
            let n = missing.min(ZEROS.len());
            scratch.extend_from_slice(&ZEROS[..n]);
            missing -= n;
        }
        self.hash(scratch)
    }

    /// Hashes of every block of a container (data then zero fill).
    pub fn container_hashes(&self, data: &[u8], container_size: u64) -> Vec<u128> {
        let mut scratch = Vec::new();
        (0..self.count(container_size))
            .map(|i| self.hash_block(data, container_size, i, &mut scratch))
            .collect()
    }
}

/// The block size of a fast-integrity file.
pub fn fast_blocking(block_log2: u8) -> Blocking {
    Blocking {
        size: 1u64 << block_log2,
        hash: BlockHash::Xxh3,
    }
}

/// Fast mode's `VMD.hash`: xxh3-128 of chunksize ‖ containersize (i64 LE) ‖ the container's
/// block hashes (u128 LE). It covers data and zero fill.
pub fn fast_chunk_hash(chunk_size: u64, container_size: u64, block_hashes: &[u128]) -> [u8; 16] {
    let mut input = Vec::with_capacity(16 + 16 * block_hashes.len());
    input.extend_from_slice(&(chunk_size as i64).to_le_bytes());
    input.extend_from_slice(&(container_size as i64).to_le_bytes());
    for h in block_hashes {
        input.extend_from_slice(&h.to_le_bytes());
    }
    xxh3_128(&input).to_le_bytes()
}

/// Fast mode's file checksum: xxh3-128 of FB bytes 49..55 ‖ every block's meta data (BMD and
/// VMDs, whose hashes cover the containers) in file order.
pub fn fast_checksum<'a>(mode: &[u8; 7], metas: impl IntoIterator<Item = &'a [u8]>) -> [u8; 16] {
    let mut input = mode.to_vec();
    for m in metas {
        input.extend_from_slice(m);
    }
    xxh3_128(&input).to_le_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn virtual_zero_fill_hashes_like_real_zeros() {
        let b = Blocking {
            size: 1000,
            hash: BlockHash::Xxh3,
        };
        let data: Vec<u8> = (0..2500u32).map(|i| i as u8).collect();
        let mut real = data.clone();
        real.resize(4200, 0);
        let expect: Vec<u128> = real.chunks(1000).map(|c| b.hash(c)).collect();
        assert_eq!(b.container_hashes(&data, 4200), expect);
        assert_eq!(b.container_hashes(&[], 0), Vec::<u128>::new());
        for hash in [BlockHash::Md5, BlockHash::Crc32] {
            let b = Blocking { size: 512, hash };
            assert_ne!(b.hash(b"a"), b.hash(b"b"));
        }
    }

    #[test]
    fn fb_mode_round_trip_and_rejections() {
        let fast = Integrity::fast(16384).unwrap();
        assert_eq!(fast, Integrity::Fast { block_log2: 14 });
        assert_eq!(Integrity::from_fb_mode(&fast.fb_mode()).unwrap(), fast);
        assert_eq!(
            Integrity::from_fb_mode(&[0x92, 0x2a, 0xa4, 0x5e, 0x7f, 0, 0]).unwrap(),
            Integrity::Md5
        );
        let mut bad = fast.fb_mode();
        bad[4] = 9;
        assert!(Integrity::from_fb_mode(&bad).is_err());
        bad = fast.fb_mode();
        bad[6] = 40;
        assert!(Integrity::from_fb_mode(&bad).is_err());
        assert!(Integrity::fast(1000).is_err());
        assert!(Integrity::fast(256).is_err());
    }
}
