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

/// Appends the decimal digits of `v` to `out`.
#[inline]
pub(crate) fn push_i64(out: &mut Vec<u8>, v: i64) {
    if v < 0 {
        out.push(b'-');
    }
    push_u64(out, v.unsigned_abs());
}

/// Appends the decimal digits of `v` to `out`.
#[inline]
pub(crate) fn push_u64(out: &mut Vec<u8>, mut v: u64) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        if let Some(d) = buf.get_mut(i) {
            *d = b'0' + (v % 10) as u8;
        }
        v /= 10;
        if v == 0 || i == 0 {
            break;
        }
    }
    out.extend_from_slice(buf.get(i..).unwrap_or_default());
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
    /// `time` as text, refreshed when it changes.
    time_text: Vec<u8>,
}

impl Prv {
    /// Creates (truncates) `path` and writes the header with duration 0.
    pub(crate) fn create(path: &Path, rows: usize) -> Result<Self> {
        let mut file = File::create(path).map_err(|e| Error::io(path, e))?;
        file.write_all(header(0, rows).as_bytes())
            .map_err(|e| Error::io(path, e))?;
        Ok(Self {
            path: path.to_path_buf(),
            file,
            buf: Vec::with_capacity(FLUSH_AT + 256),
            rows,
            time: 0,
            time_text: b"0".to_vec(),
        })
    }

    /// Moves to `time` (never backwards: the caller's clocks are non-decreasing).
    #[inline]
    pub(crate) fn advance(&mut self, time: i64) {
        if time != self.time {
            self.time = time;
            self.time_text.clear();
            push_i64(&mut self.time_text, time);
        }
    }

    /// Writes one record at the current time; `row` is 0-based.
    #[inline]
    pub(crate) fn record(&mut self, row: usize, ty: u32, value: i64) -> Result<()> {
        let b = &mut self.buf;
        b.extend_from_slice(b"2:0:1:1:");
        push_u64(b, row as u64 + 1);
        b.push(b':');
        b.extend_from_slice(&self.time_text);
        b.push(b':');
        push_u64(b, u64::from(ty));
        b.push(b':');
        push_i64(b, value);
        b.push(b'\n');
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
    fn integers_format_like_printf() {
        for v in [0, 1, -1, 9, 10, 4657, -7, i64::MAX, i64::MIN] {
            let mut o = Vec::new();
            push_i64(&mut o, v);
            assert_eq!(String::from_utf8(o).unwrap(), v.to_string());
        }
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
