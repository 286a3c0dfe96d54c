//! Turning records into `.prv` text: the fixed fields of each row and type, the digits of
//! times and values (by hand: `fmt` would dominate), and the 16-byte records the emulating
//! thread hands over.

use std::fs::File;
use std::io::{self, Write};

use super::FLUSH_AT;

/// The header line, with the duration (ns, zero-padded to 20 digits) and the number of rows.
pub(crate) fn header(duration: i64, rows: usize) -> String {
    format!("#Paraver (19/01/38 at 03:14):{duration:020}_ns:0:1:1({rows}:1)\n")
}

/// Room for one record line: `2:0:1:1:<row>:` (at most 29 bytes, copied as 32), the time
/// and `:` (at most 21, written digit by digit), `<type>:` (at most 11, copied as 16), then a value of
/// at most 20 characters and the newline: 83 bytes at most, 112 with the fixed-size copies.
pub(super) const MAX_LINE: usize = 112;

/// Powers of ten that fit in a `u64`.
pub(super) const POW10: [u64; 20] = {
    let mut t = [1u64; 20];
    let mut i = 1;
    while i < 20 {
        t[i] = t[i - 1] * 10;
        i += 1;
    }
    t
};

/// `"00" "01" ... "99"`: two digits at a time.
pub(super) const DIGITS2: [u8; 200] = {
    let mut t = [0u8; 200];
    let mut i = 0;
    while i < 100 {
        t[2 * i] = b'0' + (i / 10) as u8;
        t[2 * i + 1] = b'0' + (i % 10) as u8;
        i += 1;
    }
    t
};

/// Number of decimal digits of `v`.
#[inline(always)]
pub(super) fn ndigits(v: u64) -> usize {
    let bits = 64 - (v | 1).leading_zeros() as usize;
    // floor(log10(2^bits)), then one more if v reaches the next power of ten.
    let t = (bits * 1233) >> 12;
    let next = POW10.get(t).copied().unwrap_or(u64::MAX);
    (t + usize::from(v >= next)).max(1)
}

/// Writes the digits of `v` at `out[at..]`; returns the position after them, or `at` if they
/// do not fit.
#[inline(always)]
pub(super) fn put_u64(out: &mut [u8], at: usize, mut v: u64) -> usize {
    let end = at + ndigits(v);
    let Some(digits) = out.get_mut(at..end) else {
        return at;
    };
    let mut pairs = digits.rchunks_exact_mut(2);
    while v >= 100 {
        let r = (v % 100) as usize * 2;
        v /= 100;
        if let (Some(pair), Some(d)) = (pairs.next(), DIGITS2.get(r..r + 2)) {
            pair.copy_from_slice(d);
        }
    }
    if let Some(first) = digits.first_mut() {
        if v >= 10 {
            let r = v as usize * 2;
            if let (Some(pair), Some(d)) = (digits.first_chunk_mut::<2>(), DIGITS2.get(r..r + 2)) {
                pair.copy_from_slice(d);
            }
        } else {
            *first = b'0' + v as u8;
        }
    }
    end
}

/// The 8 digits of `x < 10^8`, zero-padded, as ASCII in a `u64` (first digit in the low
/// byte): the digits are split in parallel lanes (4+4, then 2+2 per lane, then 1+1).
#[inline(always)]
pub(super) fn eight_digits(x: u64) -> u64 {
    let v = (x / 10_000) | ((x % 10_000) << 32);
    let hi = ((v * 10486) >> 20) & 0x0000_007F_0000_007F;
    let v = hi | ((v - hi * 100) << 16);
    let hi = ((v * 103) >> 10) & 0x000F_000F_000F_000F;
    let v = hi | ((v - hi * 10) << 8);
    v + 0x3030_3030_3030_3030
}

/// As [`put_u64`], for times (mostly of 9 to 16 digits): the last 8 digits in one store.
#[inline(always)]
pub(super) fn put_time(out: &mut [u8], at: usize, t: u64) -> usize {
    if t < 100_000_000 {
        return put_u64(out, at, t);
    }
    let n = put_u64(out, at, t / 100_000_000);
    let Some(d) = out.get_mut(n..n + 8) else {
        return at;
    };
    d.copy_from_slice(&eight_digits(t % 100_000_000).to_le_bytes());
    n + 8
}

/// A field of a record fixed by its channel: `2:0:1:1:<row>:` (at most 29 bytes) or
/// `<type>:` (at most 11), stored with its length.
#[derive(Debug, Clone, Copy)]
pub(super) struct Field<const N: usize> {
    pub(super) text: [u8; N],
    pub(super) len: u8,
}

impl<const N: usize> Field<N> {
    pub(super) fn new(prefix: &[u8], v: u64) -> Self {
        let mut text = [0u8; N];
        let at = prefix.len().min(N);
        if let Some(p) = text.get_mut(..at) {
            p.copy_from_slice(prefix.get(..at).unwrap_or_default());
        }
        let n = put_u64(&mut text, at, v);
        if let Some(c) = text.get_mut(n) {
            *c = b':';
        }
        Self {
            text,
            len: (n + 1) as u8,
        }
    }
}

/// One record as the emulating thread hands it over (16 bytes: two stores): the writer thread
/// formats it. `entry` holds the value in its low 32 bits and the key `row << 8 | slot` in its
/// high 32 bits; a record whose value, row or slot does not fit there has the key [`WIDE`] and
/// is followed by a [`Rec`] holding the value in `time` and `slot << 32 | row` in `entry`.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Rec {
    pub(super) time: i64,
    pub(super) entry: u64,
}

/// The key of a record continued in the next one.
pub(super) const WIDE: u32 = u32::MAX;
/// Rows and slots that fit in a key (the key [`WIDE`] excluded).
pub(super) const KEY_ROWS: u32 = 1 << 24;
pub(super) const KEY_SLOTS: u16 = 0xFF;

/// Records handed to the writer thread at once (16 bytes each). Smaller batches stay in the
/// cache but need more hand-overs (each a lock, and a wake-up if the writer sleeps); 8192 with
/// 4 batches per file and a wake-up every 3 batches: ~250 context switches for 10 M events,
/// against ~2000 with a writer thread per file woken at every batch; 12288 records or 5-6
/// batches per file were slower.
pub(super) const BATCH: usize = 1 << 13;

/// What the writer thread receives: a batch of records (the first `len` are valid) and, when
/// types were registered since the last batch, the `<type>:` field of every type slot.
pub(super) struct Batch {
    pub(super) recs: Vec<Rec>,
    pub(super) len: usize,
    pub(super) types: Option<Vec<Field<16>>>,
}

/// The writer thread's state: the fixed fields and the text being built.
pub(super) struct Formatter {
    /// `2:0:1:1:<row>:` of every row.
    pub(super) row_text: Vec<Field<32>>,
    /// `<type>:` of every type slot.
    pub(super) ty_text: Vec<Field<16>>,
    /// Always `FLUSH_AT + MAX_LINE` bytes long, text in `buf[..pos]`.
    pub(super) buf: Vec<u8>,
    pub(super) pos: usize,
}

impl std::fmt::Debug for Formatter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Formatter").field("pos", &self.pos).finish()
    }
}

impl Formatter {
    pub(super) fn new(rows: usize, text_len: usize) -> Self {
        Self {
            row_text: (0..rows as u64)
                .map(|r| Field::new(b"2:0:1:1:", r + 1))
                .collect(),
            ty_text: Vec::new(),
            buf: vec![0; text_len],
            pos: 0,
        }
    }

    /// Formats `recs`, writing the text to `file` each time [`FLUSH_AT`] bytes are ready.
    pub(super) fn format(&mut self, recs: &[Rec], file: &mut File) -> io::Result<()> {
        self.format_with(recs, FLUSH_AT, |text| file.write_all(text))
    }

    /// Formats `recs` into `buf` alone (it must hold [`BATCH`] records: [`TEXT_LEN`] bytes).
    pub(super) fn format_all(&mut self, recs: &[Rec]) {
        let _ = self.format_with(recs, usize::MAX, |_| Ok(()));
    }

    /// Formats `recs`, handing the text to `flush` each time `flush_at` bytes are ready.
    #[inline(always)]
    pub(super) fn format_with(
        &mut self,
        recs: &[Rec],
        flush_at: usize,
        mut flush: impl FnMut(&[u8]) -> io::Result<()>,
    ) -> io::Result<()> {
        let mut recs = recs.iter();
        while let Some(r) = recs.next() {
            let key = (r.entry >> 32) as u32;
            if key != WIDE {
                let value = i64::from(r.entry as u32 as i32);
                self.record(r.time, key >> 8, key & 0xFF, value);
            } else if let Some(wide) = recs.next() {
                let (row, slot) = (wide.entry as u32, (wide.entry >> 32) as u32);
                self.record(r.time, row, slot, wide.time);
            }
            if self.pos >= flush_at {
                flush(self.buf.get(..self.pos).unwrap_or_default())?;
                self.pos = 0;
            }
        }
        Ok(())
    }

    /// Formats one record at the current time, for `row` (0-based) and the type of `slot`.
    #[inline(always)]
    pub(super) fn record(&mut self, time: i64, row: u32, slot: u32, value: i64) {
        let (Some(row), Some(ty)) = (
            self.row_text.get(row as usize),
            self.ty_text.get(slot as usize),
        ) else {
            return;
        };
        // Fixed-size copies into a window that every record fits in (see MAX_LINE).
        let Some(line) = self
            .buf
            .get_mut(self.pos..)
            .and_then(|t| t.first_chunk_mut::<MAX_LINE>())
        else {
            return;
        };
        line[..32].copy_from_slice(&row.text);
        let mut n = usize::from(row.len);
        // Formatted again for every record: the text of a cached time, written a byte or two
        // at a time just before, would be read back before the stores complete (a
        // store-forwarding stall that costs more than the digits). Times are never negative
        // (relative to the first event).
        n = put_time(line, n, time.max(0) as u64);
        line[n] = b':';
        n += 1;
        line[n..n + 16].copy_from_slice(&ty.text);
        n += usize::from(ty.len);
        if value < 0 {
            line[n] = b'-';
            n += 1;
        }
        if (0..10).contains(&value) {
            line[n] = b'0' + value as u8;
            n += 1;
        } else {
            n = put_u64(line, n, value.unsigned_abs());
        }
        line[n] = b'\n';
        self.pos += n + 1;
    }
}
