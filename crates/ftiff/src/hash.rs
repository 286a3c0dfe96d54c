//! The three MD5 hashes of FTI-FF (`docs/ftiff-format.md`, *Hashes*).

use md5::{Digest as _, Md5};

use crate::raw::FileBlock;

/// A raw 16-byte MD5 digest.
pub type Digest = [u8; 16];

/// MD5 of the empty string: the hash of every container without content.
pub const EMPTY_MD5: Digest = [
    0xd4, 0x1d, 0x8c, 0xd9, 0x8f, 0x00, 0xb2, 0x04, 0xe9, 0x80, 0x09, 0x98, 0xec, 0xf8, 0x42, 0x7e,
];

/// MD5 of `data` (a chunk hash).
pub fn md5(data: &[u8]) -> Digest {
    Md5::digest(data).into()
}

/// Incremental MD5, for the file checksum which is fed block by block.
#[derive(Default, Clone)]
pub struct Md5Stream(Md5);

impl Md5Stream {
    /// Feeds bytes.
    pub fn update(&mut self, data: &[u8]) {
        self.0.update(data);
    }

    /// Feeds `n` zero bytes (container fill) without a buffer of that size.
    pub fn update_zeros(&mut self, mut n: u64) {
        while n > 0 {
            let step = n.min(ZEROS.len() as u64);
            // `step` <= ZEROS.len(), so the cast and the slice are in range.
            self.0.update(&ZEROS[..step as usize]);
            n -= step;
        }
    }

    /// The digest.
    pub fn finish(self) -> Digest {
        self.0.finalize().into()
    }
}

/// A page of zeros for writing and hashing container fill.
pub(crate) static ZEROS: [u8; 64 * 1024] = [0; 64 * 1024];

/// The `FB.checksum` field for a digest: 32 lowercase hex digits and a NUL.
pub fn checksum_field(digest: &Digest) -> [u8; 33] {
    let mut out = [0u8; 33];
    out[..32].copy_from_slice(to_hex(digest).as_bytes());
    out
}

/// Lowercase hex of a digest.
pub fn to_hex(digest: &[u8]) -> String {
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// `FB.myHash`: MD5 of checksum (33 bytes) ‖ timestamp ‖ ckptSize ‖ fs ‖ ptFs ‖ maxFs,
/// each 8 bytes little-endian. The order is FTI's, not the struct's.
pub fn my_hash(fb: &FileBlock) -> Digest {
    let mut h = Md5::new();
    h.update(fb.checksum);
    h.update(fb.timestamp.to_le_bytes());
    h.update(fb.ckpt_size.to_le_bytes());
    h.update(fb.fs.to_le_bytes());
    h.update(fb.pt_fs.to_le_bytes());
    h.update(fb.max_fs.to_le_bytes());
    h.finalize().into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_md5_constant() {
        assert_eq!(md5(b""), EMPTY_MD5);
        assert_eq!(to_hex(&EMPTY_MD5), "d41d8cd98f00b204e9800998ecf8427e");
    }

    #[test]
    fn zero_feed_equals_buffer() {
        let mut a = Md5Stream::default();
        a.update_zeros(200_000);
        assert_eq!(a.finish(), md5(&vec![0u8; 200_000]));
    }
}
