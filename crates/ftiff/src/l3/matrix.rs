//! Matrices over GF(2^16) and their product with byte buffers of 16-bit little-endian words.
//!
//! [`Matrix::mul_into`] is the one bulk operation of L3: encoding multiplies the group's Rank
//! files by rows of the Cauchy matrix, decoding multiplies the surviving files by a matrix
//! derived from its inverse. It uses AVX2 byte shuffles when the CPU has them (32 words per
//! step, four nibble lookups per output byte) and table lookups otherwise.

use std::sync::OnceLock;

use super::gf::{self, MulTable};

/// A `rows x cols` matrix over GF(2^16), with the multiplication tables of every entry.
#[derive(Clone, Debug)]
pub struct Matrix {
    rows: usize,
    cols: usize,
    coef: Vec<u16>,
    tables: Vec<MulTable>,
    /// Per entry: products with every low byte (0..256) and every high byte (256..512), built
    /// on first use by the portable path.
    byte_tables: OnceLock<Vec<[u16; 512]>>,
}

impl PartialEq for Matrix {
    fn eq(&self, other: &Self) -> bool {
        (self.rows, self.cols, &self.coef) == (other.rows, other.cols, &other.coef)
    }
}

impl Eq for Matrix {}

impl Matrix {
    /// A matrix from its entries in row-major order.
    ///
    /// # Panics
    /// If `coef.len() != rows * cols`.
    pub fn new(rows: usize, cols: usize, coef: Vec<u16>) -> Self {
        assert_eq!(coef.len(), rows * cols, "matrix entries");
        let tables = coef.iter().map(|&c| MulTable::new(c)).collect();
        Matrix {
            rows,
            cols,
            coef,
            tables,
            byte_tables: OnceLock::new(),
        }
    }

    /// The `n x n` identity.
    pub fn identity(n: usize) -> Self {
        let coef = (0..n * n).map(|i| u16::from(i % (n + 1) == 0)).collect();
        Matrix::new(n, n, coef)
    }

    /// Number of rows (outputs of [`Matrix::mul_into`]).
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Number of columns (inputs of [`Matrix::mul_into`]).
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// Entry `(r, c)`.
    ///
    /// # Panics
    /// If `r` or `c` is out of range.
    pub fn get(&self, r: usize, c: usize) -> u16 {
        assert!(r < self.rows && c < self.cols, "matrix index");
        self.coef[r * self.cols + c]
    }

    /// The sub-matrix of the given rows and columns, in the order given.
    pub fn select(&self, rows: &[usize], cols: &[usize]) -> Matrix {
        let coef = rows
            .iter()
            .flat_map(|&r| cols.iter().map(move |&c| self.get(r, c)))
            .collect();
        Matrix::new(rows.len(), cols.len(), coef)
    }

    /// The product `self * other`.
    ///
    /// # Panics
    /// If the shapes do not match.
    pub fn product(&self, other: &Matrix) -> Matrix {
        assert_eq!(self.cols, other.rows, "matrix product shapes");
        let mut coef = Vec::with_capacity(self.rows * other.cols);
        for r in 0..self.rows {
            for c in 0..other.cols {
                let v =
                    (0..self.cols).fold(0, |acc, i| acc ^ gf::mul(self.get(r, i), other.get(i, c)));
                coef.push(v);
            }
        }
        Matrix::new(self.rows, other.cols, coef)
    }

    /// The inverse by Gauss-Jordan elimination, or `None` if the matrix is singular or not
    /// square.
    pub fn inverse(&self) -> Option<Matrix> {
        let n = self.rows;
        if n != self.cols {
            return None;
        }
        let mut a = self.coef.clone();
        let mut b = Matrix::identity(n).coef;
        for col in 0..n {
            let pivot = (col..n).find(|&r| a[r * n + col] != 0)?;
            if pivot != col {
                for c in 0..n {
                    a.swap(pivot * n + c, col * n + c);
                    b.swap(pivot * n + c, col * n + c);
                }
            }
            let scale = gf::inv(a[col * n + col])?;
            for c in 0..n {
                a[col * n + c] = gf::mul(a[col * n + c], scale);
                b[col * n + c] = gf::mul(b[col * n + c], scale);
            }
            for r in (0..n).filter(|&r| r != col) {
                let f = a[r * n + col];
                if f == 0 {
                    continue;
                }
                for c in 0..n {
                    a[r * n + c] ^= gf::mul(f, a[col * n + c]);
                    b[r * n + c] ^= gf::mul(f, b[col * n + c]);
                }
            }
        }
        Some(Matrix::new(n, n, b))
    }

    /// `outputs[r] = XOR over c of self[r][c] * inputs[c]`, on 16-bit little-endian words.
    /// A `None` input is all zeros (and costs nothing).
    ///
    /// # Panics
    /// If there are not `cols` inputs and `rows` outputs, or the buffers do not all have the
    /// same even length.
    pub fn mul_into(&self, inputs: &[Option<&[u8]>], outputs: &mut [&mut [u8]]) {
        let len = self.check(inputs, outputs);
        let mut done = 0;
        #[cfg(target_arch = "x86_64")]
        if avx2::available() {
            done = avx2::mul_into(self, inputs, outputs, len);
        }
        if done < len {
            self.scalar_range(inputs, outputs, done, len);
        }
    }

    /// [`Matrix::mul_into`] without SIMD: the portable path, for tests and benchmarks.
    pub fn mul_into_scalar(&self, inputs: &[Option<&[u8]>], outputs: &mut [&mut [u8]]) {
        let len = self.check(inputs, outputs);
        self.scalar_range(inputs, outputs, 0, len);
    }

    fn check(&self, inputs: &[Option<&[u8]>], outputs: &[&mut [u8]]) -> usize {
        assert_eq!(inputs.len(), self.cols, "one input per column");
        assert_eq!(outputs.len(), self.rows, "one output per row");
        let Some(len) = outputs.first().map(|o| o.len()) else {
            return 0;
        };
        assert!(len % 2 == 0, "buffers hold whole 16-bit words");
        assert!(
            outputs.iter().all(|o| o.len() == len)
                && inputs.iter().flatten().all(|i| i.len() == len),
            "buffers of equal length"
        );
        len
    }

    /// Bytes `[start, end)` by lookups in per-entry byte tables.
    fn scalar_range(
        &self,
        inputs: &[Option<&[u8]>],
        outputs: &mut [&mut [u8]],
        start: usize,
        end: usize,
    ) {
        let tables = self.byte_tables.get_or_init(|| {
            self.tables
                .iter()
                .map(|t| {
                    let mut bt = [0u16; 512];
                    for (b, slot) in (0..=255u16).zip(bt.iter_mut()) {
                        *slot = t.mul(b);
                    }
                    for (b, slot) in (0..=255u16).zip(bt[256..].iter_mut()) {
                        *slot = t.mul(b << 8);
                    }
                    bt
                })
                .collect()
        });
        for (r, out) in outputs.iter_mut().enumerate() {
            let out = &mut out[start..end];
            out.fill(0);
            for (c, input) in inputs.iter().enumerate() {
                let Some(input) = input else { continue };
                let t = &tables[r * self.cols + c];
                for (o, i) in out
                    .chunks_exact_mut(2)
                    .zip(input[start..end].chunks_exact(2))
                {
                    let p = t[usize::from(i[0])] ^ t[256 + usize::from(i[1])];
                    let [lo, hi] = p.to_le_bytes();
                    o[0] ^= lo;
                    o[1] ^= hi;
                }
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod avx2 {
    //! 32 words per step. The 64 input bytes are split into a vector of the words' low bytes and
    //! one of their high bytes; each byte's two nibbles index 16-entry tables with
    //! `vpshufb`; the eight lookups per output word are XORed into the low and high bytes of up
    //! to four outputs kept in registers, then interleaved back into little-endian words.
    use std::arch::x86_64::*;

    use super::Matrix;

    pub(super) fn available() -> bool {
        std::is_x86_feature_detected!("avx2")
    }

    /// Processes the longest prefix of whole 64-byte steps; returns its length.
    pub(super) fn mul_into(
        m: &Matrix,
        inputs: &[Option<&[u8]>],
        outputs: &mut [&mut [u8]],
        len: usize,
    ) -> usize {
        if !available() {
            return 0;
        }
        let steps = len / 64 * 64;
        // SAFETY: the CPU supports AVX2 (checked just above), the only requirement of the
        // target feature.
        unsafe { mul_into_avx2(m, inputs, outputs, steps) };
        steps
    }

    #[target_feature(enable = "avx2")]
    fn mul_into_avx2(m: &Matrix, inputs: &[Option<&[u8]>], outputs: &mut [&mut [u8]], len: usize) {
        let mut row = 0;
        for group in outputs.chunks_mut(4) {
            match group {
                [a, b, c, d] => rows::<4>(m, row, inputs, [a, b, c, d], len),
                [a, b, c] => rows::<3>(m, row, inputs, [a, b, c], len),
                [a, b] => rows::<2>(m, row, inputs, [a, b], len),
                [a] => rows::<1>(m, row, inputs, [a], len),
                _ => {}
            }
            row += group.len();
        }
    }

    /// One input's products with one output row's coefficient, from the input's four nibble
    /// vectors: the low and the high bytes of the 16-bit words.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn multiply(table: &super::MulTable, [n0, n1, n2, n3]: [__m256i; 4]) -> (__m256i, __m256i) {
        let t = &table.rows;
        macro_rules! tv {
            ($i:literal) => {
                // SAFETY: each table row is 32 bytes, aligned to 32 by `MulTable`'s repr.
                unsafe { _mm256_load_si256(t[$i].as_ptr().cast()) }
            };
        }
        let l = _mm256_xor_si256(
            _mm256_xor_si256(
                _mm256_shuffle_epi8(tv!(0), n0),
                _mm256_shuffle_epi8(tv!(1), n1),
            ),
            _mm256_xor_si256(
                _mm256_shuffle_epi8(tv!(2), n2),
                _mm256_shuffle_epi8(tv!(3), n3),
            ),
        );
        let h = _mm256_xor_si256(
            _mm256_xor_si256(
                _mm256_shuffle_epi8(tv!(4), n0),
                _mm256_shuffle_epi8(tv!(5), n1),
            ),
            _mm256_xor_si256(
                _mm256_shuffle_epi8(tv!(6), n2),
                _mm256_shuffle_epi8(tv!(7), n3),
            ),
        );
        (l, h)
    }

    /// Outputs `row .. row + R`, bytes `[0, len)` (`len` a multiple of 64, at most every
    /// buffer's length: checked by the caller).
    #[target_feature(enable = "avx2")]
    fn rows<const R: usize>(
        m: &Matrix,
        row: usize,
        inputs: &[Option<&[u8]>],
        outputs: [&mut &mut [u8]; R],
        len: usize,
    ) {
        let nibble = _mm256_set1_epi8(0x0f);
        // Per 128-bit lane: even bytes (low bytes of words) first, then odd bytes.
        let split = _mm256_setr_epi8(
            0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15, 0, 2, 4, 6, 8, 10, 12, 14, 1, 3,
            5, 7, 9, 11, 13, 15,
        );
        let cols = m.cols;
        let tables: [&[super::MulTable]; R] =
            std::array::from_fn(|r| &m.tables[(row + r) * cols..(row + r + 1) * cols]);
        let mut at = 0;
        while at + 64 <= len {
            let mut lo = [_mm256_setzero_si256(); R];
            let mut hi = [_mm256_setzero_si256(); R];
            for (c, input) in inputs.iter().enumerate() {
                let Some(input) = input else { continue };
                let input = &input[at..at + 64];
                // SAFETY: `input` has 64 bytes, so both unaligned 32-byte loads are in bounds.
                let (a, b) = unsafe {
                    (
                        _mm256_loadu_si256(input.as_ptr().cast()),
                        _mm256_loadu_si256(input.as_ptr().add(32).cast()),
                    )
                };
                let a = _mm256_shuffle_epi8(a, split);
                let b = _mm256_shuffle_epi8(b, split);
                // Words in the order 0-7, 16-23 | 8-15, 24-31; undone by the unpacks below.
                let wl = _mm256_unpacklo_epi64(a, b);
                let wh = _mm256_unpackhi_epi64(a, b);
                let n0 = _mm256_and_si256(wl, nibble);
                let n1 = _mm256_and_si256(_mm256_srli_epi16::<4>(wl), nibble);
                let n2 = _mm256_and_si256(wh, nibble);
                let n3 = _mm256_and_si256(_mm256_srli_epi16::<4>(wh), nibble);
                for r in 0..R {
                    let (l, h) = multiply(&tables[r][c], [n0, n1, n2, n3]);
                    lo[r] = _mm256_xor_si256(lo[r], l);
                    hi[r] = _mm256_xor_si256(hi[r], h);
                }
            }
            for r in 0..R {
                let out = &mut outputs[r][at..at + 64];
                let first = _mm256_unpacklo_epi8(lo[r], hi[r]);
                let second = _mm256_unpackhi_epi8(lo[r], hi[r]);
                // SAFETY: `out` has 64 bytes, so both unaligned 32-byte stores are in bounds.
                unsafe {
                    _mm256_storeu_si256(out.as_mut_ptr().cast(), first);
                    _mm256_storeu_si256(out.as_mut_ptr().add(32).cast(), second);
                }
            }
            at += 64;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pseudo_random(n: usize, seed: u64) -> Vec<u8> {
        let mut x = seed | 1;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x.to_le_bytes()[3]
            })
            .collect()
    }

    fn reference(m: &Matrix, inputs: &[Option<&[u8]>], len: usize) -> Vec<Vec<u8>> {
        (0..m.rows())
            .map(|r| {
                (0..len / 2)
                    .flat_map(|w| {
                        let mut acc = 0u16;
                        for (c, input) in inputs.iter().enumerate() {
                            if let Some(i) = input {
                                let x = u16::from_le_bytes([i[2 * w], i[2 * w + 1]]);
                                acc ^= gf::mul(m.get(r, c), x);
                            }
                        }
                        acc.to_le_bytes()
                    })
                    .collect()
            })
            .collect()
    }

    #[test]
    fn simd_and_scalar_agree_with_the_field_definition() {
        for (rows, cols) in [(1, 1), (4, 4), (3, 5), (5, 3), (9, 2)] {
            let coef: Vec<u16> = pseudo_random(rows * cols * 2, 7 + rows as u64)
                .chunks(2)
                .map(|b| u16::from_le_bytes([b[0], b[1]]))
                .collect();
            let m = Matrix::new(rows, cols, coef);
            for len in [0usize, 2, 62, 64, 66, 128, 1000, 4096 + 34] {
                let data: Vec<Vec<u8>> = (0..cols)
                    .map(|c| pseudo_random(len, 100 + c as u64))
                    .collect();
                let mut inputs: Vec<Option<&[u8]>> =
                    data.iter().map(|d| Some(d.as_slice())).collect();
                if cols > 2 {
                    inputs[1] = None;
                }
                let expected = reference(&m, &inputs, len);
                let mut fast = vec![vec![0xaau8; len]; rows];
                let mut outs: Vec<&mut [u8]> = fast.iter_mut().map(Vec::as_mut_slice).collect();
                m.mul_into(&inputs, &mut outs);
                assert_eq!(fast, expected, "{rows}x{cols} len {len}");
                let mut slow = vec![vec![0x55u8; len]; rows];
                let mut outs: Vec<&mut [u8]> = slow.iter_mut().map(Vec::as_mut_slice).collect();
                m.mul_into_scalar(&inputs, &mut outs);
                assert_eq!(slow, expected, "{rows}x{cols} len {len} scalar");
            }
        }
    }

    #[test]
    fn inverse_times_matrix_is_identity() {
        let coef: Vec<u16> = (0..25u16).map(|i| gf::inv(i ^ 0x40).unwrap()).collect();
        let m = Matrix::new(5, 5, coef);
        let inv = m.inverse().unwrap();
        assert_eq!(m.product(&inv), Matrix::identity(5));
        assert_eq!(inv.product(&m), Matrix::identity(5));
        let singular = Matrix::new(2, 2, vec![1, 2, 1, 2]);
        assert!(singular.inverse().is_none());
    }
}
