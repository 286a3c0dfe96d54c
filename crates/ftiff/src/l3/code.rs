//! FTI 1.1's Reed-Solomon code over a group of k ranks (`docs/ftiff-format.md`, *L3 Reed-Solomon*).
//!
//! Group rank i's `RSed` code is `XOR over j of M[i][j] * Rank_j`, with the Cauchy matrix
//! `M[i][j] = 1 / (i XOR (k + j))`, each Rank file zero-extended to `maxFs` (the largest file of
//! the group) and to a whole number of 16-bit words, and the code cut to `maxFs` bytes.
//!
//! Every square sub-matrix of a Cauchy matrix is invertible, so any k of the 2k files (Rank
//! or code) determine the others: [`Code::decoder`] builds the matrix that maps k surviving
//! files to the lost Rank files.

use super::gf;
use super::matrix::Matrix;
use crate::error::{Error, ErrorKind, Result};

/// Bytes per shard processed at a time by [`apply`]: large enough for few calls, small
/// enough that the outputs stay in cache while they are hashed and written.
pub const CHUNK: usize = 1 << 20;

/// FTI 1.1's code for one group size.
#[derive(Clone, Debug)]
pub struct Code {
    k: usize,
    cauchy: Matrix,
}

/// One of a group's 2k files, by group rank.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Shard {
    /// The Rank file of group rank j.
    Data(usize),
    /// The `RSed` code of group rank i.
    Parity(usize),
}

/// How to compute lost Rank files from surviving files.
#[derive(Clone, Debug)]
pub struct Decoder {
    /// `lost.len() x inputs.len()`.
    pub matrix: Matrix,
    /// The surviving files the matrix reads, in column order.
    pub inputs: Vec<Shard>,
    /// The Rank files it rebuilds, in row order.
    pub lost: Vec<usize>,
}

impl Code {
    /// Largest group. The field would allow 32768 (the matrix needs 2k distinct elements),
    /// but the multiplication tables take k² x 256 bytes and the work per byte grows with k.
    pub const MAX_GROUP: usize = 1024;

    /// The code for a group of `k` ranks.
    pub fn new(k: usize) -> Result<Code> {
        if k == 0 || k > Self::MAX_GROUP {
            return Err(Error::new(ErrorKind::InvalidGroup {
                what: "an L3 group has 1 to 1024 ranks",
                value: k as i64,
            }));
        }
        // i < k <= k + j < 2k <= 2^16: the XOR is never 0 and fits in 16 bits.
        let coef = (0..k)
            .flat_map(|i| (0..k).map(move |j| (i ^ (k + j)) as u16))
            .map(|x| gf::inv(x).unwrap_or(0))
            .collect();
        Ok(Code {
            k,
            cauchy: Matrix::new(k, k, coef),
        })
    }

    /// The group size.
    pub fn k(&self) -> usize {
        self.k
    }

    /// The k x k Cauchy matrix.
    pub fn matrix(&self) -> &Matrix {
        &self.cauchy
    }

    /// The matrix producing the code of the given group ranks from the k Rank files.
    pub fn encoder(&self, rows: &[usize]) -> Matrix {
        let all: Vec<usize> = (0..self.k).collect();
        self.cauchy.select(rows, &all)
    }

    /// The decoder for the Rank files `lost`, given the group ranks whose code survives
    /// (`parity`, at least `lost.len()` of them; the first ones are used). The other Rank
    /// files must survive.
    pub fn decoder(&self, lost: &[usize], parity: &[usize]) -> Result<Decoder> {
        let bad = |what| {
            Error::new(ErrorKind::InvalidGroup {
                what,
                value: lost.len() as i64,
            })
        };
        if lost.iter().chain(parity).any(|&r| r >= self.k) {
            return Err(bad("a group rank is not below the group size"));
        }
        let Some(used) = parity.get(..lost.len()) else {
            return Err(bad("fewer surviving RSed files than lost Rank files"));
        };
        let known: Vec<usize> = (0..self.k).filter(|j| !lost.contains(j)).collect();
        // code_B = M[B][E] rank_E + M[B][A] rank_A, so rank_E = S^-1 code_B + S^-1 M[B][A] rank_A.
        let s_inv = self
            .cauchy
            .select(used, lost)
            .inverse()
            .ok_or_else(|| bad("repeated group ranks"))?;
        let via_known = s_inv.product(&self.cauchy.select(used, &known));
        let cols = used.len() + known.len();
        let coef = (0..lost.len())
            .flat_map(|r| {
                let s_inv = &s_inv;
                let via_known = &via_known;
                (0..used.len())
                    .map(move |c| s_inv.get(r, c))
                    .chain((0..known.len()).map(move |c| via_known.get(r, c)))
            })
            .collect();
        Ok(Decoder {
            matrix: Matrix::new(lost.len(), cols, coef),
            inputs: used
                .iter()
                .map(|&i| Shard::Parity(i))
                .chain(known.iter().map(|&j| Shard::Data(j)))
                .collect(),
            lost: lost.to_vec(),
        })
    }

    /// The code bytes `[0, maxFs)` of the group ranks `rows`, from the k Rank files in memory
    /// (`maxFs` = the longest). The trailer is added by [`super::rsed_trailer`].
    ///
    /// # Panics
    /// If `ranks` does not hold k files.
    pub fn encode(&self, ranks: &[&[u8]], rows: &[usize]) -> Vec<Vec<u8>> {
        assert_eq!(ranks.len(), self.k, "one Rank file per group rank");
        let max_fs = ranks.iter().map(|r| r.len()).max().unwrap_or(0);
        collect(&self.encoder(rows), ranks, max_fs)
    }

    /// Rebuilds lost files in memory. `ranks[j]` is Rank file j (any length up to `max_fs`) or
    /// `None`; `code[i]` is the `max_fs` code bytes of group rank i or `None`. Rebuilt Rank
    /// files come back zero-extended to `max_fs`: cut each to the `fs` of its own file block.
    /// When that is an odd `max_fs`, its last byte is one the code cannot determine:
    /// [`super::restore_last_byte`] finds it from the file's hashes.
    ///
    /// # Panics
    /// If `ranks` or `code` does not hold k entries.
    pub fn reconstruct(
        &self,
        ranks: &mut [Option<Vec<u8>>],
        code: &mut [Option<Vec<u8>>],
        max_fs: usize,
    ) -> Result<()> {
        assert!(
            ranks.len() == self.k && code.len() == self.k,
            "k Rank files and k code files"
        );
        let lost: Vec<usize> = (0..self.k).filter(|&j| ranks[j].is_none()).collect();
        let parity: Vec<usize> = (0..self.k).filter(|&i| code[i].is_some()).collect();
        if lost.len() + (self.k - parity.len()) > self.k {
            return Err(Error::new(ErrorKind::TooManyLost {
                lost: lost.len() + self.k - parity.len(),
                k: self.k,
            }));
        }
        if !lost.is_empty() {
            let dec = self.decoder(&lost, &parity)?;
            let inputs: Vec<&[u8]> = dec
                .inputs
                .iter()
                .map(|s| match *s {
                    Shard::Data(j) => ranks[j].as_deref().unwrap_or_default(),
                    Shard::Parity(i) => code[i].as_deref().unwrap_or_default(),
                })
                .collect();
            let rebuilt = collect(&dec.matrix, &inputs, max_fs);
            for (j, bytes) in lost.into_iter().zip(rebuilt) {
                ranks[j] = Some(bytes);
            }
        }
        let missing: Vec<usize> = (0..self.k).filter(|&i| code[i].is_none()).collect();
        if !missing.is_empty() {
            let all: Vec<&[u8]> = ranks
                .iter()
                .map(|r| r.as_deref().unwrap_or_default())
                .collect();
            for (i, bytes) in missing
                .iter()
                .zip(collect(&self.encoder(&missing), &all, max_fs))
            {
                code[*i] = Some(bytes);
            }
        }
        Ok(())
    }
}

/// [`apply`] into memory.
fn collect(m: &Matrix, inputs: &[&[u8]], len: usize) -> Vec<Vec<u8>> {
    let mut out = vec![Vec::with_capacity(len); m.rows()];
    let sink = |_: usize, chunk: &[&[u8]]| -> Result<()> {
        for (o, c) in out.iter_mut().zip(chunk) {
            o.extend_from_slice(c);
        }
        Ok(())
    };
    // The sink cannot fail.
    let _ = apply(m, inputs, len, sink);
    out
}

/// Multiplies `m` with its inputs, each zero-extended to `len` bytes and then to a whole number
/// of words, [`CHUNK`] bytes at a time. `sink(offset, outputs)` receives each piece of the
/// outputs, cut to `len` (so the last one may have an odd length). Inputs longer than `len`
/// are read up to `len`.
///
/// # Panics
/// If there is not one input per column of `m`.
pub fn apply<E>(
    m: &Matrix,
    inputs: &[&[u8]],
    len: usize,
    mut sink: impl FnMut(usize, &[&[u8]]) -> Result<(), E>,
) -> Result<(), E> {
    assert_eq!(inputs.len(), m.cols(), "one input per column");
    let mut outputs = vec![vec![0u8; CHUNK.min(len + 1)]; m.rows()];
    // Only the end of a file shorter than `len` needs a zero-extended copy.
    let mut scratch = vec![Vec::new(); inputs.len()];
    let mut offset = 0;
    while offset < len {
        let n = CHUNK.min(len - offset);
        let even = n + n % 2;
        let mut pieces: Vec<Option<&[u8]>> = Vec::with_capacity(inputs.len());
        for (input, scratch) in inputs.iter().zip(scratch.iter_mut()) {
            let have = input.len().min(len).saturating_sub(offset);
            pieces.push(if have >= even {
                Some(&input[offset..offset + even])
            } else if have == 0 {
                None
            } else {
                // The end of a shorter file: zero-extend a copy.
                scratch.clear();
                scratch.extend_from_slice(&input[offset..offset + have]);
                scratch.resize(even, 0);
                Some(scratch.as_slice())
            });
        }
        let mut outs: Vec<&mut [u8]> = outputs.iter_mut().map(|o| &mut o[..even]).collect();
        m.mul_into(&pieces, &mut outs);
        let cut: Vec<&[u8]> = outputs.iter().map(|o| &o[..n]).collect();
        sink(offset, &cut)?;
        offset += n;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(n: usize, seed: u8) -> Vec<u8> {
        (0..n).map(|i| (i as u8).wrapping_mul(31) ^ seed).collect()
    }

    #[test]
    fn cauchy_rows_of_fti_for_four_ranks() {
        let code = Code::new(4).unwrap();
        let rows: Vec<Vec<u16>> = (0..4)
            .map(|i| (0..4).map(|j| code.matrix().get(i, j)).collect())
            .collect();
        // rs-verification.txt of the shared L3 vectors.
        assert_eq!(rows[0], [0xcc07, 0x5002, 0x7803, 0x6b6e]);
        assert_eq!(rows[1], [0x5002, 0xcc07, 0x6b6e, 0x7803]);
        assert_eq!(rows[2], [0x7803, 0x6b6e, 0xcc07, 0x5002]);
        assert_eq!(rows[3], [0x6b6e, 0x7803, 0x5002, 0xcc07]);
    }

    #[test]
    fn group_size_limits() {
        assert!(Code::new(0).is_err());
        assert!(Code::new(Code::MAX_GROUP + 1).is_err());
        assert_eq!(
            Code::new(1).unwrap().matrix().get(0, 0),
            gf::inv(1).unwrap()
        );
    }

    #[test]
    fn every_loss_of_up_to_k_shards_in_memory() {
        for k in 1..=5 {
            let code = Code::new(k).unwrap();
            // Uneven, even-length files: rebuilt files equal the originals zero-extended.
            let ranks: Vec<Vec<u8>> = (0..k).map(|j| bytes(3000 + 200 * j, j as u8)).collect();
            let max_fs = ranks.iter().map(Vec::len).max().unwrap();
            let refs: Vec<&[u8]> = ranks.iter().map(Vec::as_slice).collect();
            let all: Vec<usize> = (0..k).collect();
            let parity = code.encode(&refs, &all);
            for mask in 0u32..1 << (2 * k) {
                if mask.count_ones() as usize > k {
                    continue;
                }
                let mut r: Vec<Option<Vec<u8>>> = (0..k)
                    .map(|j| (mask & (1 << j) == 0).then(|| ranks[j].clone()))
                    .collect();
                let mut p: Vec<Option<Vec<u8>>> = (0..k)
                    .map(|i| (mask & (1 << (k + i)) == 0).then(|| parity[i].clone()))
                    .collect();
                code.reconstruct(&mut r, &mut p, max_fs).unwrap();
                for j in 0..k {
                    let got = r[j].as_ref().unwrap();
                    assert_eq!(
                        &got[..ranks[j].len()],
                        ranks[j].as_slice(),
                        "k {k} mask {mask:b}"
                    );
                    assert!(got[ranks[j].len()..].iter().all(|&b| b == 0));
                    assert_eq!(p[j].as_ref().unwrap(), &parity[j], "k {k} mask {mask:b}");
                }
            }
            let mut r: Vec<Option<Vec<u8>>> = vec![None; k];
            let mut p: Vec<Option<Vec<u8>>> = parity.iter().cloned().map(Some).collect();
            p[0] = None;
            assert!(code.reconstruct(&mut r, &mut p, max_fs).is_err());
        }
    }

    #[test]
    fn chunked_application_equals_one_piece() {
        let code = Code::new(3).unwrap();
        let long = bytes(2 * CHUNK + 777, 9);
        let short = bytes(CHUNK + 3, 1);
        let empty = Vec::new();
        let inputs = [long.as_slice(), short.as_slice(), empty.as_slice()];
        let all = [0, 1, 2];
        let streamed = code.encode(&inputs, &all);
        let len = long.len() + 1;
        let mut padded: Vec<Vec<u8>> = inputs.iter().map(|i| i.to_vec()).collect();
        padded.iter_mut().for_each(|p| p.resize(len, 0));
        let mut whole = vec![vec![0u8; len]; 3];
        let refs: Vec<Option<&[u8]>> = padded.iter().map(|p| Some(p.as_slice())).collect();
        let mut outs: Vec<&mut [u8]> = whole.iter_mut().map(Vec::as_mut_slice).collect();
        code.matrix().mul_into(&refs, &mut outs);
        for (s, w) in streamed.iter().zip(&whole) {
            assert_eq!(s.as_slice(), &w[..long.len()]);
        }
    }
}
