//! The subset of C `printf` conversions used by description templates (`%#llx{tag}`), applied
//! to one decoded argument.

use std::io::Write as _;

use crate::events::{ArgType, Value};

/// A parsed conversion specification, without the leading `%`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spec {
    left: bool,
    zero: bool,
    plus: bool,
    space: bool,
    alt: bool,
    width: usize,
    precision: Option<usize>,
    /// Width in bits the length modifier selects (`hh` 8, `h` 16, none 32, `l`/`ll`/`j`/`z` 64).
    bits: u32,
    conv: u8,
}

impl Spec {
    /// Parses e.g. `#llx`, `08d`, `-10s`.
    pub fn parse(s: &str) -> Option<Self> {
        let b = s.as_bytes();
        let mut i = 0;
        let mut spec = Spec {
            left: false,
            zero: false,
            plus: false,
            space: false,
            alt: false,
            width: 0,
            precision: None,
            bits: 32,
            conv: 0,
        };
        while let Some(&c) = b.get(i) {
            match c {
                b'-' => spec.left = true,
                b'0' => spec.zero = true,
                b'+' => spec.plus = true,
                b' ' => spec.space = true,
                b'#' => spec.alt = true,
                _ => break,
            }
            i += 1;
        }
        let num = |i: &mut usize| {
            let mut n = 0usize;
            while let Some(d) = b.get(*i).filter(|c| c.is_ascii_digit()) {
                n = n
                    .saturating_mul(10)
                    .saturating_add(usize::from(d - b'0'))
                    .min(1000);
                *i += 1;
            }
            n
        };
        spec.width = num(&mut i);
        if b.get(i) == Some(&b'.') {
            i += 1;
            spec.precision = Some(num(&mut i));
        }
        let rest = s.get(i..)?;
        let (bits, conv) = match rest.len() {
            0 => return None,
            _ => {
                let (m, c) = rest.split_at(rest.len() - 1);
                let bits = match m {
                    "" => 32,
                    "hh" => 8,
                    "h" => 16,
                    "l" | "ll" | "j" | "z" | "t" => 64,
                    _ => return None,
                };
                (bits, *c.as_bytes().first()?)
            }
        };
        if !b"diuxXocs".contains(&conv) {
            return None;
        }
        spec.bits = bits;
        spec.conv = conv;
        Some(spec)
    }
}

/// Appends `v` formatted with `spec`, or with its type's default (`%d`/`%u` family, `%s`).
pub fn format_value(out: &mut Vec<u8>, v: &Value<'_>, spec: Option<&Spec>) {
    match (v, spec) {
        (Value::Int { v, .. }, None) => {
            let _ = write!(out, "{v}");
        }
        (Value::Str(s), None) => out.extend_from_slice(s),
        (Value::Int { v, ty }, Some(spec)) => format_int(out, *v, *ty, spec),
        (Value::Str(s), Some(spec)) => {
            let s = match spec.precision {
                Some(p) => s.get(..p).unwrap_or(s),
                None => s,
            };
            pad(out, s, b"", spec.width, spec.left, false);
        }
    }
}

fn format_int(out: &mut Vec<u8>, v: i128, ty: ArgType, spec: &Spec) {
    let bits = spec.bits;
    let mask: u128 = (1u128 << bits) - 1;
    // C passes the argument in its own type and the conversion reinterprets it at the
    // length modifier's width.
    let arg_bits = ty.size().map_or(64, |s| (s * 8) as u32).max(32);
    let raw = (v as u128) & ((1u128 << arg_bits) - 1);
    let unsigned = raw & mask;
    let (neg, digits): (bool, Vec<u8>) = match spec.conv {
        b'd' | b'i' => {
            let sign_bit = 1u128 << (bits - 1);
            let signed = if unsigned & sign_bit != 0 {
                -((((!unsigned) & mask) + 1) as i128)
            } else {
                unsigned as i128
            };
            (signed < 0, signed.unsigned_abs().to_string().into_bytes())
        }
        b'u' => (false, unsigned.to_string().into_bytes()),
        b'x' => (false, format!("{unsigned:x}").into_bytes()),
        b'X' => (false, format!("{unsigned:X}").into_bytes()),
        b'o' => (false, format!("{unsigned:o}").into_bytes()),
        b'c' => {
            let byte = [(unsigned & 0xff) as u8];
            pad(out, &byte, b"", spec.width, spec.left, false);
            return;
        }
        _ => (false, unsigned.to_string().into_bytes()),
    };
    let mut digits = digits;
    if let Some(p) = spec.precision {
        if p == 0 && unsigned == 0 {
            digits.clear();
        }
        if digits.len() < p {
            let mut d = vec![b'0'; p - digits.len()];
            d.extend_from_slice(&digits);
            digits = d;
        }
    }
    let prefix: &[u8] = match spec.conv {
        b'd' | b'i' if neg => b"-",
        b'd' | b'i' if spec.plus => b"+",
        b'd' | b'i' if spec.space => b" ",
        b'x' if spec.alt && unsigned != 0 => b"0x",
        b'X' if spec.alt && unsigned != 0 => b"0X",
        _ => b"",
    };
    if spec.conv == b'o' && spec.alt && digits.first() != Some(&b'0') {
        digits.insert(0, b'0');
    }
    let zero = spec.zero && !spec.left && spec.precision.is_none();
    pad(out, &digits, prefix, spec.width, spec.left, zero);
}

fn pad(out: &mut Vec<u8>, body: &[u8], prefix: &[u8], width: usize, left: bool, zero: bool) {
    let len = body.len() + prefix.len();
    let fill = width.saturating_sub(len);
    if left {
        out.extend_from_slice(prefix);
        out.extend_from_slice(body);
        out.extend(std::iter::repeat_n(b' ', fill));
    } else if zero {
        out.extend_from_slice(prefix);
        out.extend(std::iter::repeat_n(b'0', fill));
        out.extend_from_slice(body);
    } else {
        out.extend(std::iter::repeat_n(b' ', fill));
        out.extend_from_slice(prefix);
        out.extend_from_slice(body);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(spec: &str, v: i128, ty: ArgType) -> String {
        let mut out = Vec::new();
        format_value(&mut out, &Value::Int { v, ty }, Spec::parse(spec).as_ref());
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn c_like_integer_conversions() {
        assert_eq!(f("#llx", 0x1234abcd, ArgType::U64), "0x1234abcd");
        assert_eq!(f("#llx", 0, ArgType::U64), "0");
        assert_eq!(f("#llx", 0xff, ArgType::U64), "0xff");
        assert_eq!(f("5d", -3, ArgType::I32), "   -3");
        assert_eq!(f("-5d", 7, ArgType::I32), "7    ");
        assert_eq!(f("05d", -3, ArgType::I32), "-0003");
        assert_eq!(f("x", -1, ArgType::I32), "ffffffff");
        assert_eq!(f("u", -1, ArgType::I32), "4294967295");
        assert_eq!(f("lld", -1, ArgType::I64), "-1");
        assert_eq!(f("#o", 8, ArgType::U32), "010");
        assert_eq!(f(".3d", 5, ArgType::U32), "005");
        assert_eq!(f("+d", 5, ArgType::U32), "+5");
    }

    #[test]
    fn bad_specs_are_rejected() {
        for s in ["", "q", "llq", "lllx"] {
            assert!(Spec::parse(s).is_none(), "{s}");
        }
    }
}
