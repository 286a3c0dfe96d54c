//! The three on-disk records, byte for byte, little-endian.
//!
//! FTI 1.1 wrote raw LP64 struct images; here every field is encoded explicitly into a zeroed
//! buffer at a named offset, so padding is always zero when written and ignored when read.
//! The offsets are chained: each is the previous one plus the previous field's size.

use crate::error::{Error, ErrorKind, Result};

/// Bounds-checked little-endian cursor over untrusted bytes. Every read returns a `Result`;
/// no method can panic. `base` is the file offset of `data[0]`, so errors name file offsets.
#[derive(Debug, Clone, Copy)]
pub struct Cursor<'a> {
    data: &'a [u8],
    offset: u64,
}

impl<'a> Cursor<'a> {
    /// A cursor over `data`, whose first byte is at file offset `offset`.
    pub fn new(data: &'a [u8], offset: u64) -> Self {
        Cursor { data, offset }
    }

    /// File offset of the next byte.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Reads `N` bytes.
    pub fn read_array<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N]> {
        match self.data.split_first_chunk::<N>() {
            Some((head, rest)) => {
                self.data = rest;
                self.offset += N as u64;
                Ok(*head)
            }
            None => Err(Error::at(
                self.offset,
                ErrorKind::Truncated {
                    len: self.offset + self.data.len() as u64,
                    needed: self.offset + N as u64,
                    what,
                },
            )),
        }
    }

    /// Reads a little-endian `i32`.
    pub fn read_i32(&mut self, what: &'static str) -> Result<i32> {
        self.read_array::<4>(what).map(i32::from_le_bytes)
    }

    /// Reads a little-endian `i64`.
    pub fn read_i64(&mut self, what: &'static str) -> Result<i64> {
        self.read_array::<8>(what).map(i64::from_le_bytes)
    }

    /// Reads one byte.
    pub fn read_u8(&mut self, what: &'static str) -> Result<u8> {
        self.read_array::<1>(what).map(|[b]| b)
    }
}

/// Offsets and size of the file block (FB).
pub mod fb {
    /// 32 lowercase hex digits of the file checksum and a NUL.
    pub const CHECKSUM: usize = 0;
    /// Raw MD5 over selected FB fields.
    pub const MY_HASH: usize = CHECKSUM + 33;
    /// Struct padding, covered by no hash.
    pub const PADDING: usize = MY_HASH + 16;
    /// `ckptSize` (equals `fs` in Rank, Pcof and L4 files).
    pub const CKPT_SIZE: usize = PADDING + 7;
    /// `fs`, the file size including the FB.
    pub const FS: usize = CKPT_SIZE + 8;
    /// `maxFs`, the largest file of the L3 group, or -1.
    pub const MAX_FS: usize = FS + 8;
    /// `ptFs`, the size of the partner's file held at L2, or -1.
    pub const PT_FS: usize = MAX_FS + 8;
    /// `timestamp`, ns since the Unix epoch.
    pub const TIMESTAMP: usize = PT_FS + 8;
    /// Size of the FB.
    pub const SIZE: usize = TIMESTAMP + 8;
    const _: () = assert!(SIZE == 96);
}

/// Offsets and size of the packed block meta data (BMD).
pub mod bmd {
    /// `numvars`, the number of VMDs in the block.
    pub const NUMVARS: usize = 0;
    /// `dbsize`, the block size in bytes including this BMD.
    pub const DBSIZE: usize = NUMVARS + 4;
    /// Size of the BMD (packed, no padding).
    pub const SIZE: usize = DBSIZE + 8;
    const _: () = assert!(SIZE == 12);
}

/// Offsets and size of the variable chunk meta data (VMD).
pub mod vmd {
    /// `id`, the user's variable id.
    pub const ID: usize = 0;
    /// `idx`, the position in protect order.
    pub const IDX: usize = ID + 4;
    /// `containerid`, ordinal of the container for this variable.
    pub const CONTAINER_ID: usize = IDX + 4;
    /// `hascontent`, a C bool.
    pub const HAS_CONTENT: usize = CONTAINER_ID + 4;
    /// Struct padding (uninitialised in FTI 1.1 files; covered by the checksum).
    pub const PADDING: usize = HAS_CONTENT + 1;
    /// `dptr`, offset of the chunk in the variable.
    pub const DPTR: usize = PADDING + 3;
    /// `fptr`, absolute file offset of the container.
    pub const FPTR: usize = DPTR + 8;
    /// `chunksize`, valid bytes in the container.
    pub const CHUNK_SIZE: usize = FPTR + 8;
    /// `containersize`, reserved bytes of the container.
    pub const CONTAINER_SIZE: usize = CHUNK_SIZE + 8;
    /// `hash`, raw MD5 of the chunk bytes.
    pub const HASH: usize = CONTAINER_SIZE + 8;
    /// Size of the VMD.
    pub const SIZE: usize = HASH + 16;
    const _: () = assert!(SIZE == 64);
}

/// The file block, as stored (no field validated yet).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileBlock {
    /// 32 lowercase hex digits and a NUL, as stored.
    pub checksum: [u8; 33],
    /// Raw MD5 of checksum ‖ timestamp ‖ ckptSize ‖ fs ‖ ptFs ‖ maxFs.
    pub my_hash: [u8; 16],
    /// Bytes 49..55: struct padding in FTI 1.1 (zero in Rank files, garbage in RSed
    /// trailers); fti-rs's fast-integrity files keep their mode marker here
    /// (`docs/format-extensions.md`).
    pub mode: [u8; 7],
    /// `ckptSize`.
    pub ckpt_size: i64,
    /// `fs`.
    pub fs: i64,
    /// `maxFs`.
    pub max_fs: i64,
    /// `ptFs`.
    pub pt_fs: i64,
    /// `timestamp`.
    pub timestamp: i64,
}

impl FileBlock {
    /// Parses the 96 bytes at the cursor.
    pub fn parse(cur: &mut Cursor<'_>) -> Result<Self> {
        const WHAT: &str = "the 96-byte file block";
        let checksum = cur.read_array::<33>(WHAT)?;
        let my_hash = cur.read_array::<16>(WHAT)?;
        let mode = cur.read_array::<7>(WHAT)?;
        Ok(FileBlock {
            checksum,
            my_hash,
            mode,
            ckpt_size: cur.read_i64(WHAT)?,
            fs: cur.read_i64(WHAT)?,
            max_fs: cur.read_i64(WHAT)?,
            pt_fs: cur.read_i64(WHAT)?,
            timestamp: cur.read_i64(WHAT)?,
        })
    }

    /// Parses the block at file offset `offset` of `bytes` (a Rank file's is at 0, an RSed
    /// trailer's after the code); errors name file offsets.
    pub fn read_at(bytes: &[u8], offset: u64) -> Result<Self> {
        let rest = usize::try_from(offset)
            .ok()
            .and_then(|at| bytes.get(at..))
            .unwrap_or_default();
        FileBlock::parse(&mut Cursor::new(rest, offset))
    }

    /// Reads and parses the block at `offset` of an open file.
    pub fn read_from(file: &(impl crate::Sink + ?Sized), offset: u64) -> Result<Self> {
        let mut head = [0u8; fb::SIZE];
        file.read_exact_at(&mut head, offset)?;
        FileBlock::parse(&mut Cursor::new(&head, offset))
    }

    /// Checks `myHash` against the fields it covers; the error names the field's offset in
    /// a file whose block starts at `offset`.
    pub fn check_my_hash(&self, offset: u64) -> Result<()> {
        let computed = crate::hash::my_hash(self);
        if computed == self.my_hash {
            return Ok(());
        }
        Err(Error::at(
            offset + fb::MY_HASH as u64,
            ErrorKind::HashMismatch {
                record: crate::Record::FileBlock,
                field: "myHash",
                stored: crate::hash::to_hex(&self.my_hash),
                computed: crate::hash::to_hex(&computed),
            },
        ))
    }

    /// Sets `myHash` for the current fields (after changing any of them).
    pub fn seal(&mut self) {
        self.my_hash = crate::hash::my_hash(self);
    }

    /// Encodes into 96 bytes (bytes 49..55 from `mode`, zero for FTI 1.1 files).
    pub fn encode(&self) -> [u8; fb::SIZE] {
        let mut out = [0u8; fb::SIZE];
        out[fb::CHECKSUM..fb::MY_HASH].copy_from_slice(&self.checksum);
        out[fb::MY_HASH..fb::PADDING].copy_from_slice(&self.my_hash);
        out[fb::PADDING..fb::CKPT_SIZE].copy_from_slice(&self.mode);
        out[fb::CKPT_SIZE..fb::FS].copy_from_slice(&self.ckpt_size.to_le_bytes());
        out[fb::FS..fb::MAX_FS].copy_from_slice(&self.fs.to_le_bytes());
        out[fb::MAX_FS..fb::PT_FS].copy_from_slice(&self.max_fs.to_le_bytes());
        out[fb::PT_FS..fb::TIMESTAMP].copy_from_slice(&self.pt_fs.to_le_bytes());
        out[fb::TIMESTAMP..fb::SIZE].copy_from_slice(&self.timestamp.to_le_bytes());
        out
    }

    /// The checksum as text, if it is 32 hex digits and a NUL.
    pub fn checksum_hex(&self) -> Option<&str> {
        let (hex, nul) = self.checksum.split_at(32);
        if nul != [0] || !hex.iter().all(u8::is_ascii_hexdigit) {
            return None;
        }
        std::str::from_utf8(hex).ok()
    }

    /// The checksum field printed as FTI prints it (up to the first NUL, non-printable bytes
    /// escaped).
    pub fn checksum_display(&self) -> String {
        match self.checksum_hex() {
            Some(hex) => hex.to_owned(),
            None => self
                .checksum
                .iter()
                .take_while(|&&b| b != 0)
                .flat_map(|&b| std::ascii::escape_default(b))
                .map(char::from)
                .collect(),
        }
    }
}

/// Block meta data, as stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockMeta {
    /// `numvars`.
    pub numvars: i32,
    /// `dbsize`.
    pub dbsize: i64,
}

impl BlockMeta {
    /// Parses 12 bytes at the cursor.
    pub fn parse(cur: &mut Cursor<'_>) -> Result<Self> {
        const WHAT: &str = "a 12-byte block meta data record";
        Ok(BlockMeta {
            numvars: cur.read_i32(WHAT)?,
            dbsize: cur.read_i64(WHAT)?,
        })
    }

    /// Encodes into 12 bytes.
    pub fn encode(&self) -> [u8; bmd::SIZE] {
        let mut out = [0u8; bmd::SIZE];
        out[bmd::NUMVARS..bmd::DBSIZE].copy_from_slice(&self.numvars.to_le_bytes());
        out[bmd::DBSIZE..bmd::SIZE].copy_from_slice(&self.dbsize.to_le_bytes());
        out
    }
}

/// Variable chunk meta data, as stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VarMeta {
    /// `id`.
    pub id: i32,
    /// `idx`.
    pub idx: i32,
    /// `containerid`.
    pub container_id: i32,
    /// `hascontent`, the raw byte.
    pub has_content: u8,
    /// Padding bytes 13..15 as found (FTI 1.1 leaves heap garbage there).
    pub padding: [u8; 3],
    /// `dptr`.
    pub dptr: i64,
    /// `fptr`.
    pub fptr: i64,
    /// `chunksize`.
    pub chunk_size: i64,
    /// `containersize`.
    pub container_size: i64,
    /// `hash`.
    pub hash: [u8; 16],
}

impl VarMeta {
    /// Parses 64 bytes at the cursor.
    pub fn parse(cur: &mut Cursor<'_>) -> Result<Self> {
        const WHAT: &str = "a 64-byte variable chunk meta data record";
        Ok(VarMeta {
            id: cur.read_i32(WHAT)?,
            idx: cur.read_i32(WHAT)?,
            container_id: cur.read_i32(WHAT)?,
            has_content: cur.read_u8(WHAT)?,
            padding: cur.read_array::<3>(WHAT)?,
            dptr: cur.read_i64(WHAT)?,
            fptr: cur.read_i64(WHAT)?,
            chunk_size: cur.read_i64(WHAT)?,
            container_size: cur.read_i64(WHAT)?,
            hash: cur.read_array::<16>(WHAT)?,
        })
    }

    /// Encodes into 64 bytes. The padding is written as stored in `self.padding`
    /// (zero for everything this crate writes).
    pub fn encode(&self) -> [u8; vmd::SIZE] {
        let mut out = [0u8; vmd::SIZE];
        out[vmd::ID..vmd::IDX].copy_from_slice(&self.id.to_le_bytes());
        out[vmd::IDX..vmd::CONTAINER_ID].copy_from_slice(&self.idx.to_le_bytes());
        out[vmd::CONTAINER_ID..vmd::HAS_CONTENT].copy_from_slice(&self.container_id.to_le_bytes());
        out[vmd::HAS_CONTENT] = self.has_content;
        out[vmd::PADDING..vmd::DPTR].copy_from_slice(&self.padding);
        out[vmd::DPTR..vmd::FPTR].copy_from_slice(&self.dptr.to_le_bytes());
        out[vmd::FPTR..vmd::CHUNK_SIZE].copy_from_slice(&self.fptr.to_le_bytes());
        out[vmd::CHUNK_SIZE..vmd::CONTAINER_SIZE].copy_from_slice(&self.chunk_size.to_le_bytes());
        out[vmd::CONTAINER_SIZE..vmd::HASH].copy_from_slice(&self.container_size.to_le_bytes());
        out[vmd::HASH..vmd::SIZE].copy_from_slice(&self.hash);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn fb_round_trip(checksum in proptest::array::uniform32(any::<u8>()), my_hash in any::<[u8; 16]>(),
                         a in any::<i64>(), b in any::<i64>(), c in any::<i64>(), d in any::<i64>(), e in any::<i64>()) {
            let mut cs = [0u8; 33];
            cs[..32].copy_from_slice(&checksum);
            let fb = FileBlock { checksum: cs, my_hash, mode: [0; 7], ckpt_size: a, fs: b, max_fs: c, pt_fs: d, timestamp: e };
            let bytes = fb.encode();
            prop_assert_eq!(&bytes[49..56], &[0u8; 7]);
            prop_assert_eq!(FileBlock::parse(&mut Cursor::new(&bytes, 0))?, fb);
        }

        #[test]
        fn bmd_round_trip(numvars in any::<i32>(), dbsize in any::<i64>()) {
            let b = BlockMeta { numvars, dbsize };
            prop_assert_eq!(BlockMeta::parse(&mut Cursor::new(&b.encode(), 0))?, b);
        }

        #[test]
        fn vmd_round_trip(id in any::<i32>(), idx in any::<i32>(), cid in any::<i32>(), hc in any::<u8>(),
                          dptr in any::<i64>(), fptr in any::<i64>(), cs in any::<i64>(), ct in any::<i64>(),
                          hash in any::<[u8; 16]>()) {
            let v = VarMeta { id, idx, container_id: cid, has_content: hc, padding: [0; 3], dptr, fptr,
                              chunk_size: cs, container_size: ct, hash };
            prop_assert_eq!(VarMeta::parse(&mut Cursor::new(&v.encode(), 0))?, v);
        }
    }

    #[test]
    fn short_input_is_an_error_with_offset() {
        let bytes = [0u8; 11];
        let err = BlockMeta::parse(&mut Cursor::new(&bytes, 500)).unwrap_err();
        assert_eq!(err.offset(), Some(504));
        assert!(matches!(
            err.kind(),
            ErrorKind::Truncated {
                len: 511,
                needed: 512,
                ..
            }
        ));
    }
}
