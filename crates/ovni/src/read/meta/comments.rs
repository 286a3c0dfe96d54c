//! [`StripComments`]: `stream.json` may hold C comments (parson accepts them), so the file is
//! read through a filter that blanks them out while streaming, with constant state.

use std::io::{self, BufRead, Read};

/// A reader that replaces `//` and `/* */` comments outside strings by spaces (keeping
/// newlines), as parson accepts them; it holds a constant amount of state.
#[derive(Debug)]
pub struct StripComments<R> {
    inner: R,
    state: State,
    /// A byte decided but not yet returned (the caller's buffer was full).
    pending: Option<u8>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Code,
    /// Inside a string; `true` right after a backslash.
    Str(bool),
    /// A `/` was seen in code: comment or not depends on the next byte.
    Slash,
    Line,
    Block,
    /// A `*` inside a block comment.
    BlockStar,
}

impl<R: BufRead> StripComments<R> {
    /// Wraps `inner`.
    pub fn new(inner: R) -> Self {
        Self {
            inner,
            state: State::Code,
            pending: None,
        }
    }
}

impl<R: BufRead> Read for StripComments<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let mut n = 0;
        while n < out.len() {
            if let Some(p) = self.pending.take() {
                if let Some(o) = out.get_mut(n) {
                    *o = p;
                }
                n += 1;
                continue;
            }
            let buf = self.inner.fill_buf()?;
            // Fast path: copy a run of bytes that cannot change the state.
            let special: &[u8] = match self.state {
                State::Code => b"\"/",
                State::Str(false) => b"\"\\",
                _ => b"",
            };
            if !special.is_empty() {
                let room = out.len() - n;
                let run = buf
                    .iter()
                    .take(room)
                    .position(|b| special.contains(b))
                    .unwrap_or(buf.len().min(room));
                if run > 0 {
                    if let (Some(dst), Some(src)) = (out.get_mut(n..n + run), buf.get(..run)) {
                        dst.copy_from_slice(src);
                    }
                    self.inner.consume(run);
                    n += run;
                    continue;
                }
            }
            let buf = self.inner.fill_buf()?;
            let Some(&b) = buf.first() else {
                if self.state == State::Slash {
                    // A lone '/' at the end: the parser rejects it.
                    self.state = State::Code;
                    self.pending = Some(b'/');
                    continue;
                }
                break;
            };
            self.inner.consume(1);
            let (first, second, next) = match (self.state, b) {
                (State::Code, b'"') => (Some(b), None, State::Str(false)),
                (State::Code, b'/') => (None, None, State::Slash),
                (State::Code, _) => (Some(b), None, State::Code),
                (State::Str(false), b'\\') => (Some(b), None, State::Str(true)),
                (State::Str(false), b'"') => (Some(b), None, State::Code),
                (State::Str(_), _) => (Some(b), None, State::Str(false)),
                (State::Slash, b'/') => (None, None, State::Line),
                (State::Slash, b'*') => (None, None, State::Block),
                (State::Slash, b'"') => (Some(b'/'), Some(b), State::Str(false)),
                (State::Slash, _) => (Some(b'/'), Some(b), State::Code),
                (State::Line, b'\n') => (Some(b), None, State::Code),
                (State::Line, _) => (None, None, State::Line),
                (State::Block, b'*') => (None, None, State::BlockStar),
                (State::Block | State::BlockStar, b'\n') => (Some(b), None, State::Block),
                (State::Block, _) => (None, None, State::Block),
                (State::BlockStar, b'/') => (Some(b' '), None, State::Code),
                (State::BlockStar, b'*') => (None, None, State::BlockStar),
                (State::BlockStar, _) => (None, None, State::Block),
            };
            self.state = next;
            if let Some(f) = first {
                if let Some(o) = out.get_mut(n) {
                    *o = f;
                }
                n += 1;
            }
            self.pending = second;
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn strip(t: &[u8]) -> String {
        let mut s = String::new();
        StripComments::new(t).read_to_string(&mut s).unwrap();
        s
    }

    #[test]
    fn comments_are_stripped_outside_strings() {
        let t = br#"{ // c
  "a": "x//y", /* z */ "b": "q\"/*"
}"#;
        let v: Value = serde_json::from_str(&strip(t)).unwrap();
        assert_eq!(v["a"], "x//y");
        assert_eq!(v["b"], "q\"/*");
        assert_eq!(strip(b"1/2"), "1/2");
        assert_eq!(strip(b"/**/1/*a\nb*/"), " 1\n ");
    }
}
