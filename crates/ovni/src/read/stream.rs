//! One stream: its `stream.json` and its memory-mapped `stream.obs`, and the structural
//! problems of a `stream.obs` ([`StreamProblem`]), which the codec ([`crate::raw`]) and the
//! payload decoder ([`crate::events`]) find and this reader reports with the stream's path.

use std::fmt;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde_json::Value;

use crate::error::{Error, MetaProblem, Result};
use crate::raw::{self, Event, Mcv, STREAM_HEADER_SIZE};
use crate::read::meta::{StreamMeta, MAX_STREAM_JSON};

/// The bytes of a `stream.obs`: a read-only mapping, or owned bytes (tests, tools).
#[derive(Debug)]
enum Bytes {
    Map(memmap2::Mmap),
    Owned(Vec<u8>),
}

impl Bytes {
    fn as_slice(&self) -> &[u8] {
        match self {
            Self::Map(m) => m,
            Self::Owned(v) => v,
        }
    }
}

/// A loaded stream: metadata and the event bytes, header already validated.
#[derive(Debug)]
pub struct Stream {
    relpath: Vec<u8>,
    obs_path: PathBuf,
    meta: StreamMeta,
    meta_value: OnceLock<Value>,
    bytes: Bytes,
}

impl Stream {
    /// Loads the stream in directory `dir`; `relpath` is its name in the trace.
    ///
    /// Loads `stream.json` first (version must be 3) then maps `stream.obs` and checks its
    /// header, in the order of the C tools.
    pub fn load(dir: &Path, relpath: Vec<u8>) -> Result<Self> {
        let json_path = dir.join("stream.json");
        let meta = load_json(&json_path, &relpath)?;
        let obs_path = dir.join("stream.obs");
        let file = File::open(&obs_path).map_err(|e| Error::io(&obs_path, e))?;
        let len = file.metadata().map_err(|e| Error::io(&obs_path, e))?.len();
        let bytes = if len == 0 {
            Bytes::Owned(Vec::new())
        } else {
            map_file(&file).map_err(|e| Error::io(&obs_path, e))?
        };
        Self::with_bytes(relpath, obs_path, meta, bytes)
    }

    /// Builds a stream from bytes already in memory.
    pub fn from_bytes(
        relpath: impl Into<Vec<u8>>,
        obs_path: impl Into<PathBuf>,
        meta: Value,
        bytes: Vec<u8>,
    ) -> Result<Self> {
        let meta = StreamMeta::from_value(&meta);
        Self::with_bytes(relpath.into(), obs_path.into(), meta, Bytes::Owned(bytes))
    }

    fn with_bytes(
        relpath: Vec<u8>,
        obs_path: PathBuf,
        meta: StreamMeta,
        bytes: Bytes,
    ) -> Result<Self> {
        raw::check_stream_header(bytes.as_slice()).map_err(|problem| Error::Stream {
            path: obs_path.clone(),
            offset: 0,
            problem,
        })?;
        Ok(Self {
            relpath,
            obs_path,
            meta,
            meta_value: OnceLock::new(),
            bytes,
        })
    }

    /// Path of the stream directory relative to the trace directory (may be empty).
    pub fn relpath(&self) -> &[u8] {
        &self.relpath
    }

    /// The relpath as text (lossy).
    pub fn name(&self) -> String {
        String::from_utf8_lossy(&self.relpath).into_owned()
    }

    /// Path of `stream.obs`.
    pub fn obs_path(&self) -> &Path {
        &self.obs_path
    }

    /// The keys of `stream.json` this crate reads (`version` and the `ovni` keys of
    /// `docs/ovni-format.md`, *`stream.json`*), as JSON. Other keys are skipped when the file is
    /// read and are not here, nor are ill-typed values ([`StreamMeta::to_value`]).
    pub fn meta(&self) -> &Value {
        self.meta_value.get_or_init(|| self.meta.to_value())
    }

    /// The keys of `stream.json` this crate reads, typed.
    pub fn metadata(&self) -> &StreamMeta {
        &self.meta
    }

    /// Whole file bytes, header included.
    pub fn bytes(&self) -> &[u8] {
        self.bytes.as_slice()
    }

    /// True if the stream holds only its header.
    pub fn is_empty(&self) -> bool {
        self.bytes().len() <= STREAM_HEADER_SIZE
    }

    /// Iterates over the events in file order.
    pub fn events(&self) -> EventIter<'_> {
        EventIter {
            data: self.bytes(),
            pos: STREAM_HEADER_SIZE,
            path: &self.obs_path,
        }
    }

    pub(crate) fn error(&self, offset: u64, problem: StreamProblem) -> Error {
        Error::Stream {
            path: self.obs_path.clone(),
            offset,
            problem,
        }
    }
}

#[allow(unsafe_code)]
fn map_file(file: &File) -> std::io::Result<Bytes> {
    // SAFETY: the mapping is read-only and private to this process. A trace is not modified
    // while it is read (the same assumption as the C tools); if another process truncates the
    // file anyway, accesses past the new end fault with SIGBUS, they cannot read other memory.
    let map = unsafe { memmap2::Mmap::map(file)? };
    Ok(Bytes::Map(map))
}

/// Reads `stream.json` (comments allowed, as the C tools do) into the typed keys and checks
/// `version`. Memory stays proportional to the keys kept: other values are skipped as they are
/// parsed. Files above [`MAX_STREAM_JSON`] are refused.
fn load_json(path: &Path, relpath: &[u8]) -> Result<StreamMeta> {
    let name = String::from_utf8_lossy(relpath);
    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    let size = file.metadata().map_err(|e| Error::io(path, e))?.len();
    if size > MAX_STREAM_JSON {
        return Err(Error::meta(
            name.as_ref(),
            MetaProblem::FileTooLarge {
                size,
                limit: MAX_STREAM_JSON,
            },
        ));
    }
    let meta = StreamMeta::from_reader(std::io::BufReader::with_capacity(1 << 16, file)).map_err(
        |source| {
            if source.is_io() {
                Error::io(path, std::io::Error::other(source))
            } else {
                Error::Json {
                    path: path.to_path_buf(),
                    source,
                }
            }
        },
    )?;
    let version = meta
        .version
        .as_ref()
        .ok_or_else(|| Error::meta(name.as_ref(), MetaProblem::MissingKey("version")))?;
    let v = version.as_f64().ok_or_else(|| {
        Error::meta(
            name.as_ref(),
            MetaProblem::BadValue {
                key: "version",
                expected: "a number",
            },
        )
    })?;
    // Only the integer part is compared, like the C tools.
    let v = v.trunc();
    if v != 3.0 {
        let shown = if v.abs() < 9.0e18 { v as i64 } else { i64::MAX };
        return Err(Error::meta(
            name.as_ref(),
            MetaProblem::VersionMismatch(shown),
        ));
    }
    Ok(meta)
}

/// Iterator over the events of one stream, yielding `(offset, event)`.
///
/// After an error it yields nothing more.
#[derive(Debug, Clone)]
pub struct EventIter<'a> {
    data: &'a [u8],
    pos: usize,
    path: &'a Path,
}

impl<'a> EventIter<'a> {
    /// Offset of the next event.
    pub fn offset(&self) -> u64 {
        self.pos as u64
    }
}

impl<'a> Iterator for EventIter<'a> {
    type Item = Result<(u64, Event<'a>)>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        let rest = self.data.get(self.pos..)?;
        if rest.is_empty() {
            return None;
        }
        let off = self.pos as u64;
        match raw::decode_event(rest) {
            Ok((ev, n)) => {
                self.pos += n;
                Some(Ok((off, ev)))
            }
            Err(problem) => {
                self.pos = self.data.len();
                Some(Err(Error::Stream {
                    path: self.path.to_path_buf(),
                    offset: off,
                    problem,
                }))
            }
        }
    }
}

/// Structural problems of a `stream.obs` file (`docs/ovni-format.md`, *Reader checks*).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum StreamProblem {
    /// The file has zero bytes.
    Empty,
    /// Fewer than the 8 bytes of the stream header.
    IncompleteHeader {
        /// File size.
        len: u64,
    },
    /// Magic is not `ovni`.
    BadMagic([u8; 4]),
    /// Stream version is not 1.
    BadVersion(u32),
    /// An event does not fit in the rest of the file.
    IncompleteEvent {
        /// Bytes the event needs (12 if its header is cut).
        needed: u64,
        /// Bytes left in the file from the event's start.
        available: u64,
    },
    /// The event's clock is lower than the previous event's in the same stream.
    ClockBackwards {
        /// Previous clock (signed, as the readers compare them).
        prev: i64,
        /// This event's clock.
        clock: i64,
    },
    /// The payload is shorter than the event's signature needs.
    PayloadTooShort {
        /// Event MCV.
        mcv: Mcv,
        /// Bytes needed to decode the argument that does not fit.
        needed: u64,
        /// Payload bytes present.
        available: u64,
    },
    /// A `str` argument has no terminating NUL inside the payload.
    UnterminatedString {
        /// Event MCV.
        mcv: Mcv,
    },
}

impl fmt::Display for StreamProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::Empty => write!(f, "stream is empty"),
            Self::IncompleteHeader { len } => {
                write!(f, "incomplete stream header ({len} bytes, need 8)")
            }
            Self::BadMagic(m) => write!(
                f,
                "wrong stream magic '{}' (expected 'ovni')",
                m.escape_ascii()
            ),
            Self::BadVersion(v) => write!(f, "stream version mismatch {v} (expected 1)"),
            Self::IncompleteEvent { needed, available } => write!(
                f,
                "ends with incomplete event (event needs {needed} bytes, {available} left in file)"
            ),
            Self::ClockBackwards { prev, clock } => {
                write!(f, "clock goes backwards {prev} -> {clock}")
            }
            Self::PayloadTooShort {
                mcv,
                needed,
                available,
            } => write!(
                f,
                "payload of {mcv} too short for its signature (needs {needed} bytes, has {available})"
            ),
            Self::UnterminatedString { mcv } => {
                write!(f, "string argument of {mcv} has no terminating NUL")
            }
        }
    }
}
