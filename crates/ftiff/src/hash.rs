//! The three MD5 hashes of FTI-FF (`docs/ftiff-format.md`, *Hashes*).
//!
//! MD5 comes from `md5-simd`: its single-stream compressor is as fast as OpenSSL's, which
//! FTI 1.1 uses, and it hashes several independent messages at once in the lanes of one SIMD
//! register ([`md5_many`]), which the chunk hashes of a checkpoint's variables are.

use md5_simd::Md5;

use crate::raw::FileBlock;

/// A raw 16-byte MD5 digest.
pub type Digest = [u8; 16];

/// MD5 of the empty string: the hash of every container without content.
pub const EMPTY_MD5: Digest = [
    0xd4, 0x1d, 0x8c, 0xd9, 0x8f, 0x00, 0xb2, 0x04, 0xe9, 0x80, 0x09, 0x98, 0xec, 0xf8, 0x42, 0x7e,
];

/// MD5 of `data` (a chunk hash).
pub fn md5(data: &[u8]) -> Digest {
    md5_simd::digest(data)
}

/// MD5 of each of `messages`, in order. Messages of equal length are hashed together in the
/// lanes of the CPU's SIMD registers, up to [`lanes`] at a time (on one core, 4 messages of
/// 16 MiB take about 0.4 the time of hashing them one after the other); the others one by one.
pub fn md5_many(messages: &[&[u8]]) -> Vec<Digest> {
    let mut out = vec![EMPTY_MD5; messages.len()];
    for group in equal_length_groups(messages, lanes()) {
        if let [one] = group[..] {
            out[one] = md5(messages[one]);
        } else {
            let inputs: Vec<&[u8]> = group.iter().map(|&i| messages[i]).collect();
            let mut digests = vec![EMPTY_MD5; group.len()];
            md5_simd::md5_many(&inputs, &mut digests);
            for (&i, d) in group.iter().zip(digests) {
                out[i] = d;
            }
        }
    }
    out
}

/// MD5 of each of `messages`, in order, on the rayon pool of the calling thread: the groups
/// of equal length of [`md5_many`] (one register's lanes each) and the other messages are
/// spread over its threads.
pub fn md5_each(messages: &[&[u8]]) -> Vec<Digest> {
    use rayon::prelude::*;
    let groups = equal_length_groups(messages, lanes());
    let digests: Vec<Vec<Digest>> = groups
        .par_iter()
        .map(|g| md5_many(&g.iter().map(|&i| messages[i]).collect::<Vec<_>>()))
        .collect();
    let mut out = vec![EMPTY_MD5; messages.len()];
    for (g, d) in groups.iter().zip(digests) {
        for (&i, digest) in g.iter().zip(d) {
            out[i] = digest;
        }
    }
    out
}

/// How many messages [`md5_many`] hashes at once on this CPU (1 without SIMD).
pub fn lanes() -> usize {
    md5_simd::runtime_lanes().max(1)
}

/// The indexes of `messages` in groups of equal length of at most `max` each, every index
/// once; a length no other message has is a group of its own. Groups follow the first index
/// of each length; indexes keep their order within a group.
pub fn equal_length_groups(messages: &[&[u8]], max: usize) -> Vec<Vec<usize>> {
    let mut by_len: Vec<(usize, Vec<usize>)> = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        match by_len.iter_mut().find(|(len, _)| *len == m.len()) {
            Some((_, indexes)) => indexes.push(i),
            None => by_len.push((m.len(), vec![i])),
        }
    }
    by_len
        .into_iter()
        .flat_map(|(_, indexes)| {
            indexes
                .chunks(max.max(1))
                .map(<[usize]>::to_vec)
                .collect::<Vec<_>>()
        })
        .collect()
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
        self.0.finalize()
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
    h.update(&fb.checksum);
    h.update(&fb.timestamp.to_le_bytes());
    h.update(&fb.ckpt_size.to_le_bytes());
    h.update(&fb.fs.to_le_bytes());
    h.update(&fb.pt_fs.to_le_bytes());
    h.update(&fb.max_fs.to_le_bytes());
    h.finalize()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_md5_constant() {
        assert_eq!(md5(b""), EMPTY_MD5);
        assert_eq!(to_hex(&EMPTY_MD5), "d41d8cd98f00b204e9800998ecf8427e");
    }

    /// The RustCrypto `md-5` crate is the oracle: every message, alone and in groups of
    /// equal and unequal lengths (lanes partly filled, lengths around the 64-byte block and
    /// its padding boundary), hashes to what it says.
    #[test]
    fn md5_many_matches_an_independent_md5() {
        use md5::Digest as _;
        let oracle = |m: &[u8]| -> Digest { md5::Md5::digest(m).into() };
        let lens = [
            0usize, 1, 55, 56, 63, 64, 65, 119, 120, 128, 1000, 4096, 65_537,
        ];
        let data: Vec<u8> = (0..70_000u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        for &len in &lens {
            assert_eq!(md5(&data[..len]), oracle(&data[..len]), "{len} bytes");
        }
        // Equal lengths from different offsets (more than one register's lanes), then mixed.
        for &len in &lens {
            let same: Vec<&[u8]> = (0..19).map(|k| &data[k * 37..k * 37 + len]).collect();
            let want: Vec<Digest> = same.iter().map(|m| oracle(m)).collect();
            assert_eq!(md5_many(&same), want, "19 messages of {len} bytes");
        }
        let mixed: Vec<&[u8]> = (0..40)
            .map(|k| &data[k..k + lens[k % lens.len()]])
            .collect();
        let want: Vec<Digest> = mixed.iter().map(|m| oracle(m)).collect();
        assert_eq!(md5_many(&mixed), want);
        assert_eq!(md5_each(&mixed), want);
        assert!(md5_many(&[]).is_empty());
    }

    #[test]
    fn groups_hold_every_index_once_by_equal_length() {
        let a = [0u8; 8];
        let m: Vec<&[u8]> = vec![&a[..4], &a[..8], &a[..4], &a[..2], &a[..4], &a[..8]];
        assert_eq!(
            equal_length_groups(&m, 2),
            vec![vec![0, 2], vec![4], vec![1, 5], vec![3]]
        );
        assert_eq!(equal_length_groups(&m, 0).len(), 6);
    }

    #[test]
    fn zero_feed_equals_buffer() {
        let mut a = Md5Stream::default();
        a.update_zeros(200_000);
        assert_eq!(a.finish(), md5(&vec![0u8; 200_000]));
    }
}
