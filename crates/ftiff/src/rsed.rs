//! L3 `RSed` files: Reed-Solomon code followed by a 96-byte file block used as a trailer
//! (`docs/ftiff-format.md`, *L3 Reed-Solomon*). Bytes `[0, maxFs)` are the code; the trailer has
//! `fs = maxFs`, `ckptSize` = the size of this rank's own Rank file, `ptFs = -1`, and a checksum
//! over the code bytes.

use crate::error::{Error, ErrorKind, Record, Result};
use crate::hash::{self, Md5Stream};
use crate::raw::{fb, Cursor, FileBlock};

/// A structurally valid `RSed` file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RsedFile {
    /// The trailer.
    pub fb: FileBlock,
    /// Offset of the trailer (= `maxFs`, the length of the code).
    pub trailer_offset: u64,
}

impl RsedFile {
    /// Parses the trailer at the end of `bytes` and checks its fields against the length.
    pub fn parse(bytes: &[u8]) -> Result<Self> {
        let len = bytes.len() as u64;
        let Some(trailer_offset) = len.checked_sub(fb::SIZE as u64) else {
            return Err(Error::at(
                0,
                ErrorKind::Truncated {
                    len,
                    needed: fb::SIZE as u64,
                    what: "the 96-byte RSed trailer",
                },
            ));
        };
        let trailer = bytes.get(trailer_offset as usize..).unwrap_or_default();
        let fb = FileBlock::parse(&mut Cursor::new(trailer, trailer_offset))?;
        let at = |off: usize| trailer_offset + off as u64;
        if fb.fs < 0 || fb.fs as u64 != trailer_offset {
            return Err(Error::malformed(
                at(fb::FS),
                Record::FileBlock,
                "fs",
                fb.fs,
                "an RSed trailer's fs must equal the length of the code before it",
            ));
        }
        if fb.max_fs != fb.fs {
            return Err(Error::malformed(
                at(fb::MAX_FS),
                Record::FileBlock,
                "maxFs",
                fb.max_fs,
                "an RSed trailer's maxFs must equal its fs",
            ));
        }
        if fb.ckpt_size < fb::SIZE as i64 || fb.ckpt_size > fb.max_fs {
            return Err(Error::malformed(
                at(fb::CKPT_SIZE),
                Record::FileBlock,
                "ckptSize",
                fb.ckpt_size,
                "an RSed trailer's ckptSize is the rank's file size: between 96 and maxFs",
            ));
        }
        if fb.pt_fs != -1 {
            return Err(Error::malformed(
                at(fb::PT_FS),
                Record::FileBlock,
                "ptFs",
                fb.pt_fs,
                "an RSed trailer's ptFs is -1",
            ));
        }
        Ok(RsedFile { fb, trailer_offset })
    }

    /// Checks the trailer's `myHash` and the checksum of the code bytes.
    pub fn verify(&self, bytes: &[u8], progress: &(dyn Fn(u64) + Sync)) -> Vec<Error> {
        let mut problems = Vec::new();
        problems.extend(self.fb.check_my_hash(self.trailer_offset).err());
        let code = bytes
            .get(..self.trailer_offset as usize)
            .unwrap_or_default();
        let mut md5 = Md5Stream::default();
        let mut done = 0u64;
        for piece in code.chunks(64 << 20) {
            md5.update(piece);
            done += piece.len() as u64;
            progress(done);
        }
        let checksum = md5.finish();
        if hash::checksum_field(&checksum) != self.fb.checksum {
            problems.push(Error::at(
                self.trailer_offset + fb::CHECKSUM as u64,
                ErrorKind::HashMismatch {
                    record: Record::FileBlock,
                    field: "checksum",
                    stored: self.fb.checksum_display(),
                    computed: hash::to_hex(&checksum),
                },
            ));
        }
        problems
    }
}
