//! Byte layout of `stream.obs`: stream header, normal and jumbo events (`docs/ovni-format.md`,
//! *`stream.obs`*).
//!
//! Everything is little-endian, explicitly: the C library writes host order, and every
//! trace it produced on x86-64 is little-endian.

use std::fmt;

use crate::error::{StreamProblem, UsageError};

/// Stream magic, bytes 0..4 of every `stream.obs`.
pub const MAGIC: [u8; 4] = *b"ovni";
/// Binary stream version, bytes 4..8.
pub const STREAM_VERSION: u32 = 1;
/// Size of the stream header.
pub const STREAM_HEADER_SIZE: usize = 8;
/// Size of every event's header: flags/size byte, MCV, u64 clock.
pub const EV_HEADER_SIZE: usize = 12;
/// The only defined flag: the event is jumbo.
pub const FLAG_JUMBO: u8 = 0x10;
/// Byte 0 libovni writes for jumbo events (flag + size code of the 4-byte size field).
pub const JUMBO_BYTE0: u8 = FLAG_JUMBO | 0x03;
/// Largest normal payload.
pub const MAX_PAYLOAD: usize = 16;
/// Size of the jumbo size field that starts a jumbo payload.
pub const JUMBO_SIZE_FIELD: usize = 4;
/// Size of a jumbo event's fixed part (header + size field).
pub const JUMBO_HEADER_SIZE: usize = EV_HEADER_SIZE + JUMBO_SIZE_FIELD;

/// The 8-byte stream header.
pub const fn stream_header() -> [u8; STREAM_HEADER_SIZE] {
    let v = STREAM_VERSION.to_le_bytes();
    [
        MAGIC[0], MAGIC[1], MAGIC[2], MAGIC[3], v[0], v[1], v[2], v[3],
    ]
}

/// Model, category and value characters of an event.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Mcv(pub [u8; 3]);

impl Mcv {
    /// Builds an MCV from its three bytes.
    pub const fn new(b: &[u8; 3]) -> Self {
        Self(*b)
    }
    /// Model character.
    pub const fn model(self) -> u8 {
        self.0[0]
    }
}

impl fmt::Display for Mcv {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0.escape_ascii())
    }
}

impl fmt::Debug for Mcv {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Mcv(\"{self}\")")
    }
}

/// One decoded event, borrowing its payload from the stream bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event<'a> {
    /// Byte 0 as stored (flags in the high nibble, size code in the low one).
    pub flags: u8,
    /// Model, category, value.
    pub mcv: Mcv,
    /// Raw clock in nanoseconds.
    pub clock: u64,
    /// Payload as the C readers see it: for jumbo events, the 4-byte size field followed by
    /// the data.
    pub payload: &'a [u8],
}

impl<'a> Event<'a> {
    /// True if the jumbo flag is set.
    pub const fn is_jumbo(&self) -> bool {
        self.flags & FLAG_JUMBO != 0
    }

    /// The clock as the readers order and print it (signed).
    pub const fn signed_clock(&self) -> i64 {
        i64::from_le_bytes(self.clock.to_le_bytes())
    }

    /// Encoded size of the event in bytes.
    pub const fn size(&self) -> usize {
        EV_HEADER_SIZE + self.payload.len()
    }

    /// The jumbo data (after the size field), or `None` for a normal event.
    pub fn jumbo_data(&self) -> Option<&'a [u8]> {
        if self.is_jumbo() {
            self.payload.get(JUMBO_SIZE_FIELD..)
        } else {
            None
        }
    }
}

/// Size code for a normal payload of `len` bytes (0 or 2..=16).
pub const fn size_code(len: usize) -> Result<u8, UsageError> {
    match len {
        0 => Ok(0),
        1 => Err(UsageError::PayloadTooSmall(1)),
        2..=MAX_PAYLOAD => Ok((len - 1) as u8),
        _ => Err(UsageError::PayloadNoSpace {
            have: 0,
            adding: len,
        }),
    }
}

/// Payload length of a normal event from byte 0 (flags ignored).
pub const fn normal_payload_len(byte0: u8) -> usize {
    let code = (byte0 & 0x0f) as usize;
    if code == 0 {
        0
    } else {
        code + 1
    }
}

/// Appends a normal event to `out`.
pub fn encode_normal(
    out: &mut Vec<u8>,
    mcv: Mcv,
    clock: u64,
    payload: &[u8],
) -> Result<(), UsageError> {
    let code = size_code(payload.len())?;
    let [m, c, v] = mcv.0;
    out.extend_from_slice(&[code, m, c, v]);
    out.extend_from_slice(&clock.to_le_bytes());
    out.extend_from_slice(payload);
    Ok(())
}

/// Appends a jumbo event (header, u32 size, data) to `out`.
pub fn encode_jumbo(
    out: &mut Vec<u8>,
    mcv: Mcv,
    clock: u64,
    data: &[u8],
) -> Result<(), UsageError> {
    let n = u32::try_from(data.len()).map_err(|_| UsageError::JumboTooLarge(data.len()))?;
    let [m, c, v] = mcv.0;
    out.extend_from_slice(&[JUMBO_BYTE0, m, c, v]);
    out.extend_from_slice(&clock.to_le_bytes());
    out.extend_from_slice(&n.to_le_bytes());
    out.extend_from_slice(data);
    Ok(())
}

/// Checks the stream header in `data` (the whole file).
pub fn check_stream_header(data: &[u8]) -> Result<(), StreamProblem> {
    if data.is_empty() {
        return Err(StreamProblem::Empty);
    }
    let Some((hdr, _)) = data.split_first_chunk::<STREAM_HEADER_SIZE>() else {
        return Err(StreamProblem::IncompleteHeader {
            len: data.len() as u64,
        });
    };
    let [m0, m1, m2, m3, v @ ..] = *hdr;
    let magic = [m0, m1, m2, m3];
    if magic != MAGIC {
        return Err(StreamProblem::BadMagic(magic));
    }
    let version = u32::from_le_bytes(v);
    if version != STREAM_VERSION {
        return Err(StreamProblem::BadVersion(version));
    }
    Ok(())
}

/// Decodes the event at the start of `data`; returns it and its encoded size.
///
/// Every length is checked against `data` before use, so a hostile jumbo size can only
/// produce [`StreamProblem::IncompleteEvent`].
#[inline]
pub fn decode_event(data: &[u8]) -> Result<(Event<'_>, usize), StreamProblem> {
    let incomplete = |needed: u64| StreamProblem::IncompleteEvent {
        needed,
        available: data.len() as u64,
    };
    let Some((hdr, rest)) = data.split_first_chunk::<EV_HEADER_SIZE>() else {
        return Err(incomplete(EV_HEADER_SIZE as u64));
    };
    let [flags, m, c, v, k @ ..] = *hdr;
    let clock = u64::from_le_bytes(k);
    let plen = if flags & FLAG_JUMBO != 0 {
        let Some((n, _)) = rest.split_first_chunk::<JUMBO_SIZE_FIELD>() else {
            return Err(incomplete(JUMBO_HEADER_SIZE as u64));
        };
        let n = u64::from(u32::from_le_bytes(*n));
        let plen = JUMBO_SIZE_FIELD as u64 + n;
        match usize::try_from(plen) {
            Ok(p) if p <= rest.len() => p,
            _ => return Err(incomplete(EV_HEADER_SIZE as u64 + plen)),
        }
    } else {
        normal_payload_len(flags)
    };
    let Some(payload) = rest.get(..plen) else {
        return Err(incomplete((EV_HEADER_SIZE + plen) as u64));
    };
    let ev = Event {
        flags,
        mcv: Mcv([m, c, v]),
        clock,
        payload,
    };
    Ok((ev, EV_HEADER_SIZE + plen))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_examples_decode() {
        let ohe = [
            0x00, 0x4f, 0x48, 0x65, 0x01, 0xc5, 0xcf, 0x1d, 0x96, 0xd0, 0x12, 0x00,
        ];
        let (ev, n) = decode_event(&ohe).unwrap();
        assert_eq!(n, 12);
        assert_eq!(ev.mcv, Mcv(*b"OHe"));
        assert_eq!(ev.clock, 0x0012_d096_1dcf_c501);
        assert!(ev.payload.is_empty());

        let vyc = [
            0x13, 0x56, 0x59, 0x63, 0xeb, 0xc1, 0x4b, 0x1a, 0x96, 0xd0, 0x12, 0x00, 0x0e, 0x00,
            0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x74, 0x65, 0x73, 0x74, 0x74, 0x79, 0x70, 0x65,
            0x31, 0x00,
        ];
        let (ev, n) = decode_event(&vyc).unwrap();
        assert_eq!(n, 30);
        assert!(ev.is_jumbo());
        assert_eq!(ev.payload.len(), 18);
        assert_eq!(ev.jumbo_data().unwrap(), b"\x01\0\0\0testtype1\0");
    }

    #[test]
    fn encode_matches_decode() {
        let mut out = Vec::new();
        encode_normal(&mut out, Mcv(*b"OHx"), 42, &[1; 16]).unwrap();
        assert_eq!(out.first(), Some(&0x0f));
        let (ev, n) = decode_event(&out).unwrap();
        assert_eq!((n, ev.clock, ev.payload), (28, 42, &[1u8; 16][..]));
        assert_eq!(
            encode_normal(&mut out, Mcv(*b"OHx"), 0, &[1]),
            Err(UsageError::PayloadTooSmall(1))
        );
        assert!(encode_normal(&mut out, Mcv(*b"OHx"), 0, &[1; 17]).is_err());
    }

    #[test]
    fn hostile_jumbo_sizes_are_incomplete() {
        for n in [0x7fff_ffffu32, 0xffff_fff8, u32::MAX, 1] {
            let mut ev = vec![0x13, b'O', b'U', b'['];
            ev.extend_from_slice(&7u64.to_le_bytes());
            ev.extend_from_slice(&n.to_le_bytes());
            match decode_event(&ev) {
                Err(StreamProblem::IncompleteEvent { needed, available }) => {
                    assert_eq!(needed, 16 + u64::from(n));
                    assert_eq!(available, 16);
                }
                other => panic!("unexpected {other:?}"),
            }
        }
    }

    #[test]
    fn unknown_flag_bits_are_ignored() {
        let mut a = Vec::new();
        encode_normal(&mut a, Mcv(*b"OAs"), 9, &[1, 0, 0, 0]).unwrap();
        let mut b = a.clone();
        if let Some(x) = b.first_mut() {
            *x |= 0xe0;
        }
        let (ea, _) = decode_event(&a).unwrap();
        let (eb, nb) = decode_event(&b).unwrap();
        assert_eq!((ea.payload, ea.clock, nb), (eb.payload, eb.clock, 16));
    }

    #[test]
    fn header_checks() {
        assert_eq!(check_stream_header(&[]), Err(StreamProblem::Empty));
        assert_eq!(
            check_stream_header(b"ovni\x01\0"),
            Err(StreamProblem::IncompleteHeader { len: 6 })
        );
        assert_eq!(
            check_stream_header(b"ovnx\x01\0\0\0"),
            Err(StreamProblem::BadMagic(*b"ovnx"))
        );
        assert_eq!(
            check_stream_header(b"ovni\x02\0\0\0"),
            Err(StreamProblem::BadVersion(2))
        );
        assert_eq!(check_stream_header(&stream_header()), Ok(()));
    }
}
