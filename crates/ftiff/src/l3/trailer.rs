//! What L3 adds to the format: the `RSed` trailer, and the last byte of a rebuilt Rank file of
//! odd size, which FTI 1.1's code loses and the file's own hashes restore.

use crate::blocks::Integrity;
use crate::error::{Error, ErrorKind, Record, Result};
use crate::hash::{self, Digest, Md5Stream};
use crate::raw::{fb, FileBlock};
use crate::read::Checkpoint;
use crate::write;

/// The trailer of an `RSed` file (`docs/ftiff-format.md`, *L3 Reed-Solomon*): `fs = maxFs`,
/// `ckptSize` = the rank's own Rank file size, `ptFs = -1`, checksum over the code, zero padding.
pub fn rsed_trailer(code_md5: &Digest, max_fs: u64, ckpt_size: u64, timestamp: i64) -> FileBlock {
    let mut trailer = write::file_block(code_md5, max_fs, max_fs as i64, -1, timestamp);
    trailer.ckpt_size = ckpt_size as i64;
    trailer.seal();
    trailer
}

/// The true last byte of a Rank file whose last byte is unknown (a rebuilt file of odd size
/// `maxFs`: the code keeps only the low half of its last word). The file's own hashes decide:
/// in FTI 1.1 files the checksum covers bytes `[96, fs)`, so the MD5 of all but the last byte
/// is computed once and finished with each of the 256 values; in fti-rs's fast files each
/// value is tried by verifying the whole file.
pub fn restore_last_byte(bytes: &[u8]) -> Result<u8> {
    let fb = FileBlock::read_at(bytes, 0)?;
    let Some(body) = bytes.get(fb::SIZE..bytes.len().saturating_sub(1)) else {
        return Err(Error::at(
            0,
            ErrorKind::Truncated {
                len: bytes.len() as u64,
                needed: fb::SIZE as u64 + 1,
                what: "a file block and at least one byte after it",
            },
        ));
    };
    let found = match Integrity::from_fb_mode(&fb.mode)? {
        Integrity::Md5 => {
            let mut stream = Md5Stream::default();
            stream.update(body);
            (0..=255u8).find(|&b| {
                let mut s = stream.clone();
                s.update(&[b]);
                hash::checksum_field(&s.finish()) == fb.checksum
            })
        }
        Integrity::Fast { .. } => {
            let mut copy = bytes.to_vec();
            (0..=255u8).find(|&b| {
                if let Some(last) = copy.last_mut() {
                    *last = b;
                }
                Checkpoint::parse(&copy).is_ok_and(|c| c.verify(&|_| {}).is_empty())
            })
        }
    };
    found.ok_or_else(|| {
        Error::at(
            fb::CHECKSUM as u64,
            ErrorKind::HashMismatch {
                record: Record::FileBlock,
                field: "checksum",
                stored: fb.checksum_display(),
                computed: "none of the 256 values of the last byte gives it".into(),
            },
        )
    })
}
