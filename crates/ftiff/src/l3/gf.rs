//! GF(2^16) with FTI 1.1's primitive polynomial x^16 + x^12 + x^3 + x + 1 (`0x1100B`).
//!
//! Scalar operations only: they build matrices and their inverses, which have a few hundred
//! entries at most. Bulk multiplication of file data goes through [`MulTable`].

/// The field's primitive polynomial, bit 16 included.
pub const POLY: u32 = 0x1_100B;

/// `a * b` in GF(2^16): carry-less multiplication reduced modulo [`POLY`].
pub fn mul(a: u16, b: u16) -> u16 {
    let mut acc = 0u32;
    let mut a = u32::from(a);
    let mut b = b;
    while b != 0 {
        if b & 1 != 0 {
            acc ^= a;
        }
        b >>= 1;
        a <<= 1;
        if a & 0x1_0000 != 0 {
            a ^= POLY;
        }
    }
    // `a` is reduced below 2^16 after every shift, so `acc` fits in 16 bits.
    acc as u16
}

/// `1 / a`, or `None` for 0. The multiplicative group has order 65535, so a^-1 = a^65534.
pub fn inv(a: u16) -> Option<u16> {
    if a == 0 {
        return None;
    }
    let mut result = 1u16;
    let mut base = a;
    let mut e = 65534u32;
    while e != 0 {
        if e & 1 != 0 {
            result = mul(result, base);
        }
        base = mul(base, base);
        e >>= 1;
    }
    Some(result)
}

/// `a / b`, or `None` when `b` is 0.
pub fn div(a: u16, b: u16) -> Option<u16> {
    inv(b).map(|ib| mul(a, ib))
}

/// Multiplication by one constant, as lookup tables of its products with every nibble.
///
/// A 16-bit word is four nibbles; `c * x` is the XOR of `c * (nibble_n << 4n)`. Rows 0..4 hold
/// the low bytes of those products for nibbles 0..3, rows 4..8 the high bytes. Each 16-entry row
/// is stored twice so that one 32-byte load feeds a 256-bit byte shuffle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C, align(32))]
pub struct MulTable {
    pub(crate) rows: [[u8; 32]; 8],
}

impl MulTable {
    /// The tables of `c`.
    pub fn new(c: u16) -> Self {
        let mut rows = [[0u8; 32]; 8];
        for nibble in 0..4 {
            for v in 0..16u16 {
                let [lo, hi] = mul(c, v << (4 * nibble)).to_le_bytes();
                let at = usize::from(v);
                rows[nibble][at] = lo;
                rows[nibble][at + 16] = lo;
                rows[4 + nibble][at] = hi;
                rows[4 + nibble][at + 16] = hi;
            }
        }
        MulTable { rows }
    }

    /// `c * x` by table lookup.
    #[inline]
    pub fn mul(&self, x: u16) -> u16 {
        let mut lo = 0u8;
        let mut hi = 0u8;
        for nibble in 0..4 {
            let v = usize::from((x >> (4 * nibble)) & 0xf);
            lo ^= self.rows[nibble][v];
            hi ^= self.rows[4 + nibble][v];
        }
        u16::from_le_bytes([lo, hi])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_axioms_on_samples() {
        let samples = [0u16, 1, 2, 3, 4, 0x8000, 0xffff, 0x1234, 0xcc07, 0x100b];
        for &a in &samples {
            assert_eq!(mul(a, 1), a);
            assert_eq!(mul(a, 0), 0);
            for &b in &samples {
                assert_eq!(mul(a, b), mul(b, a));
                for &c in &samples {
                    assert_eq!(mul(a, b ^ c), mul(a, b) ^ mul(a, c));
                    assert_eq!(mul(mul(a, b), c), mul(a, mul(b, c)));
                }
            }
        }
    }

    #[test]
    fn every_nonzero_element_has_an_inverse() {
        assert_eq!(inv(0), None);
        for a in 1..=u16::MAX {
            let i = inv(a).unwrap();
            assert_eq!(mul(a, i), 1, "a = {a:#x}");
        }
    }

    #[test]
    fn x_generates_the_whole_group() {
        // The polynomial is primitive: the powers of x run through all 65535 non-zero elements.
        let mut seen = vec![false; 1 << 16];
        let mut p = 1u16;
        for _ in 0..65535 {
            assert!(!seen[usize::from(p)], "x has order below 65535");
            seen[usize::from(p)] = true;
            p = mul(p, 2);
        }
        assert_eq!(p, 1);
    }

    #[test]
    fn fti_matrix_row_for_four_ranks() {
        // The first row of FTI 1.1's matrix for a group of 4 (docs/ftiff-format.md, *L3
        // Reed-Solomon*).
        let row: Vec<u16> = (0..4u16).map(|j| inv(4 + j).unwrap()).collect();
        assert_eq!(row, [0xcc07, 0x5002, 0x7803, 0x6b6e]);
    }

    #[test]
    fn tables_agree_with_mul() {
        for c in [0u16, 1, 2, 0xcc07, 0xffff, 0x8001] {
            let t = MulTable::new(c);
            for x in (0..=u16::MAX).step_by(7).chain([u16::MAX]) {
                assert_eq!(t.mul(x), mul(c, x));
            }
        }
    }
}
