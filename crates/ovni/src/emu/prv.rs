//! The Paraver trace (`.prv`): a header whose duration is patched at close, then one line
//! per channel change, `2:0:1:1:<row>:<time>:<type>:<value>`.
//!
//! Lines are formatted by hand into a buffer flushed in large writes: the emulator writes
//! several lines per event and `fmt` would dominate its run time.

use std::fs::File;
use std::io::{self, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Bytes buffered before a write to the file.
const FLUSH_AT: usize = 1 << 16;

/// The header line, with the duration (ns, zero-padded to 20 digits) and the number of rows.
pub(crate) fn header(duration: i64, rows: usize) -> String {
    format!("#Paraver (19/01/38 at 03:14):{duration:020}_ns:0:1:1({rows}:1)\n")
}

/// Room for one record line: `2:0:1:1:` then a row, a time, a type and a value, each at most
/// 20 characters, with their separators and the newline (82 bytes), plus the 24-byte copy of
/// the time field.
const MAX_LINE: usize = 112;

/// Number of decimal digits of `v`.
#[inline(always)]
fn ndigits(v: u64) -> usize {
    let mut n = 1;
    let mut p = 10u64;
    while n < 20 && v >= p {
        n += 1;
        p = p.wrapping_mul(10);
    }
    n
}

/// Writes the digits of `v` at `line[at..]`; returns the position after them. The caller
/// leaves at least 20 bytes of room.
#[inline(always)]
fn put_u64(line: &mut [u8; MAX_LINE], at: usize, mut v: u64) -> usize {
    let end = at + ndigits(v);
    let mut i = end;
    while i > at {
        i -= 1;
        line[i] = b'0' + (v % 10) as u8;
        v /= 10;
    }
    end
}

/// One `.prv` file being written.
#[derive(Debug)]
pub(crate) struct Prv {
    path: PathBuf,
    file: File,
    buf: Vec<u8>,
    rows: usize,
    /// Time of the last event (the duration written in the header at close).
    time: i64,
    /// `time` in decimal, then `:` (the rest of the array is scratch).
    time_text: [u8; 24],
    time_len: usize,
}

impl Prv {
    /// Creates (truncates) `path` and writes the header with duration 0.
    pub(crate) fn create(path: &Path, rows: usize) -> Result<Self> {
        let mut file = File::create(path).map_err(|e| Error::io(path, e))?;
        file.write_all(header(0, rows).as_bytes())
            .map_err(|e| Error::io(path, e))?;
        let mut p = Self {
            path: path.to_path_buf(),
            file,
            buf: Vec::with_capacity(FLUSH_AT + 2 * MAX_LINE),
            rows,
            time: 0,
            time_text: [0; 24],
            time_len: 0,
        };
        p.format_time();
        Ok(p)
    }

    /// Moves to `time` (never backwards: the caller's clocks are non-decreasing). The time is
    /// formatted at the first record written at it.
    #[inline]
    pub(crate) fn advance(&mut self, time: i64) {
        if time != self.time {
            self.time = time;
            self.time_len = 0;
        }
    }

    #[inline]
    fn format_time(&mut self) {
        let mut v = self.time.max(0) as u64;
        let end = ndigits(v);
        let mut i = end;
        while i > 0 {
            i -= 1;
            if let Some(d) = self.time_text.get_mut(i) {
                *d = b'0' + (v % 10) as u8;
            }
            v /= 10;
        }
        if let Some(c) = self.time_text.get_mut(end) {
            *c = b':';
        }
        self.time_len = end + 1;
    }

    /// Writes one record at the current time; `row` is 0-based.
    #[inline]
    pub(crate) fn record(&mut self, row: usize, ty: u32, value: i64) -> Result<()> {
        // Formatted in place at the end of the buffer, in a window of MAX_LINE bytes that
        // every record fits in (fixed-size copies only: no call to memcpy per field).
        if self.time_len == 0 {
            self.format_time();
        }
        let start = self.buf.len();
        self.buf.resize(start + MAX_LINE, 0);
        let Some(line) = self
            .buf
            .get_mut(start..)
            .and_then(|t| t.first_chunk_mut::<MAX_LINE>())
        else {
            return Ok(());
        };
        line[..8].copy_from_slice(b"2:0:1:1:");
        let mut n = put_u64(line, 8, row as u64 + 1);
        line[n] = b':';
        n += 1;
        line[n..n + 24].copy_from_slice(&self.time_text);
        n += self.time_len;
        n = put_u64(line, n, u64::from(ty));
        line[n] = b':';
        n += 1;
        if value < 0 {
            line[n] = b'-';
            n += 1;
        }
        n = put_u64(line, n, value.unsigned_abs());
        line[n] = b'\n';
        self.buf.truncate(start + n + 1);
        if self.buf.len() >= FLUSH_AT {
            self.flush_buf()?;
        }
        Ok(())
    }

    fn flush_buf(&mut self) -> Result<()> {
        self.file
            .write_all(&self.buf)
            .map_err(|e| Error::io(&self.path, e))?;
        self.buf.clear();
        Ok(())
    }

    /// Writes the buffered records and patches the header with the final duration.
    pub(crate) fn close(mut self) -> Result<()> {
        self.flush_buf()?;
        let h = header(self.time, self.rows);
        let r: io::Result<()> = (|| {
            self.file.seek(SeekFrom::Start(0))?;
            self.file.write_all(h.as_bytes())?;
            self.file.flush()
        })();
        r.map_err(|e| Error::io(&self.path, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_format_like_printf() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.prv");
        let mut p = Prv::create(&path, 2).unwrap();
        let values = [0, 1, -1, 9, 10, 4657, -7, i64::MAX, i64::MIN];
        for v in values {
            p.record(1, 101, v).unwrap();
        }
        p.advance(19960);
        p.record(0, 4, 3).unwrap();
        p.close().unwrap();
        let mut want = header(19960, 2);
        for v in values {
            want.push_str(&format!("2:0:1:1:2:0:101:{v}\n"));
        }
        want.push_str("2:0:1:1:1:19960:4:3\n");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), want);
        let mut line = [0u8; MAX_LINE];
        assert_eq!(put_u64(&mut line, 0, u64::MAX), 20);
    }

    #[test]
    fn header_is_fixed_width() {
        assert_eq!(
            header(19960, 3),
            "#Paraver (19/01/38 at 03:14):00000000000000019960_ns:0:1:1(3:1)\n"
        );
        assert_eq!(header(0, 3).len(), header(19960, 3).len());
    }
}
