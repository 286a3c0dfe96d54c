//! The logic of `ovnidump` and `ovnitop`, kept here so it is tested with the
//! library; the binaries only parse arguments and print.

use std::collections::{BTreeMap, HashMap};
use std::io::{self, Write};
use std::path::Path;

use crate::error::{Error, MetaProblem, Result, StreamProblem};
use crate::events::{EventTable, RenderError, TooLong};
use crate::raw::{self, Event, Mcv};
use crate::read::meta::Typed;
use crate::read::{Merged, Stream, Trace};

/// What `ovnidump` prints after the relpath.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DumpMode {
    /// The event's description.
    Describe,
    /// The payload bytes as `:xx` (`-x`).
    Hex,
    /// The description, with mark events (`OM[`, `OM]`, `OM=`) naming the label of their
    /// value and the title of their type when the trace's metadata defines them
    /// (`--labels`, an extension; other events print as with [`DumpMode::Describe`]).
    Labels,
}

/// Mark titles and labels from the `ovni.mark` metadata of every stream, for
/// [`DumpMode::Labels`]. The first definition of a type's title or of a value's label wins
/// (ovniemu rejects traces whose threads disagree; a dump does not).
#[derive(Debug, Default, Clone)]
pub struct MarkLabels {
    types: HashMap<i64, (String, BTreeMap<i64, String>)>,
}

impl MarkLabels {
    /// Collects the titles and labels of `trace`'s streams, ignoring malformed entries.
    pub fn from_trace(trace: &Trace) -> Self {
        let mut out = Self::default();
        for s in trace.streams() {
            let marks = s.metadata().marks();
            for (ty, m) in marks.into_iter().flat_map(|m| &m.types) {
                let Some(m) = m.ok() else { continue };
                let title = m
                    .title
                    .as_ref()
                    .and_then(|t| t.as_str())
                    .unwrap_or_default();
                let entry = out
                    .types
                    .entry(*ty)
                    .or_insert_with(|| (title.to_string(), BTreeMap::new()));
                if entry.0.is_empty() {
                    entry.0 = title.to_string();
                }
                let labels = m.labels.as_ref().and_then(Typed::ok);
                for (v, l) in labels.into_iter().flat_map(|l| l.iter()) {
                    entry.1.entry(v).or_insert_with(|| l.to_string());
                }
            }
        }
        out
    }

    /// Title of a mark type.
    pub fn title(&self, ty: i64) -> Option<&str> {
        self.types
            .get(&ty)
            .map(|t| t.0.as_str())
            .filter(|t| !t.is_empty())
    }

    /// Label of a value of a mark type.
    pub fn label(&self, ty: i64, value: i64) -> Option<&str> {
        self.types
            .get(&ty)
            .and_then(|t| t.1.get(&value))
            .map(String::as_str)
    }

    /// The labelled description of a mark event: `push mark with value 1 "init" from type 3
    /// "phase"` (label and title quoted and escaped, each only if defined). `None` for other
    /// events or a payload without the mark's value and type.
    fn describe(&self, ev: &Event<'_>) -> Option<String> {
        let verb = match &ev.mcv.0 {
            b"OM[" => "push",
            b"OM]" => "pop",
            b"OM=" => "set",
            _ => return None,
        };
        let p = ev.jumbo_data().unwrap_or(ev.payload);
        let value = i64::from_le_bytes(*p.first_chunk::<8>()?);
        let ty = i64::from(i32::from_le_bytes(*p.get(8..)?.first_chunk::<4>()?));
        let mut s = format!("{verb} mark with value {value}");
        if let Some(l) = self.label(ty, value) {
            s.push_str(&format!(" {l:?}"));
        }
        s.push_str(&format!(" from type {ty}"));
        if let Some(t) = self.title(ty) {
            s.push_str(&format!(" {t:?}"));
        }
        Some(s)
    }
}

/// A problem `ovnidump` reports on stderr without stopping (the C tool's exit status is
/// still 0 for these).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// The merged clock went backwards.
    Backwards {
        /// Previous clock.
        prev: i64,
        /// New clock.
        clock: i64,
        /// Stream of the new event.
        stream: String,
    },
    /// No model registered for the event's model character.
    UnknownModel(Mcv),
    /// The model has no such event.
    UnknownEvent(Mcv),
    /// The description does not fit in the C tool's 1024-byte buffer: `UNKNOWN` is printed.
    TooLong {
        /// Event MCV.
        mcv: Mcv,
        /// What did not fit.
        why: TooLong,
    },
}

/// The bytes of an MCV up to its first NUL: what C's `%s` prints of it.
fn c_str(m: &Mcv) -> &[u8] {
    let end = m.0.iter().position(|&b| b == 0).unwrap_or(3);
    m.0.get(..end).unwrap_or_default()
}

/// An MCV as the C tools print it with `%s`: its bytes up to the first NUL.
pub fn c_mcv(m: Mcv) -> String {
    String::from_utf8_lossy(c_str(&m)).into_owned()
}

impl Notice {
    /// The lines ovni 1.14's `ovnidump` prints for this notice, each after `ovnidump: ERROR: `
    /// (`<function>: <text>`).
    pub fn lines(&self) -> Vec<String> {
        match self {
            Self::Backwards {
                prev,
                clock,
                stream,
            } => vec![format!(
                "update_clocks: backwards jump in time {prev} -> {clock} in stream '{stream}'"
            )],
            Self::UnknownModel(m) => vec![
                format!(
                    "model_event_print: no model registered for {}",
                    String::from_utf8_lossy(&[m.model()])
                ),
                format!("emit: failed to decode event {}", c_mcv(*m)),
            ],
            Self::UnknownEvent(m) => vec![
                format!(
                    "model_event_print: cannot find event definition for {}",
                    c_mcv(*m)
                ),
                format!("emit: failed to decode event {}", c_mcv(*m)),
            ],
            Self::TooLong { mcv, why } => {
                let mut v = match why {
                    TooLong::Text => {
                        vec!["ev_spec_print: description too long for buffer".to_string()]
                    }
                    TooLong::Arg { name, string } => vec![
                        if *string {
                            "print_arg: no space for string argument".to_string()
                        } else {
                            "print_arg: no space for argument".to_string()
                        },
                        format!("format_region: cannot print argument {name}"),
                        "ev_spec_print: format_region failed".to_string(),
                    ],
                };
                v.push(format!(
                    "model_event_print: cannot print event signature for {}",
                    c_mcv(*mcv)
                ));
                v.push(format!("emit: failed to decode event {}", c_mcv(*mcv)));
                v
            }
        }
    }
}

impl std::fmt::Display for Notice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.lines().join("\n"))
    }
}

/// Formats `ovnidump` lines: `%10lld  MCV  relpath  text\n`.
#[derive(Debug)]
pub struct Dumper<'t> {
    table: &'t EventTable,
    mode: DumpMode,
    line: Vec<u8>,
    labels: MarkLabels,
}

impl<'t> Dumper<'t> {
    /// A dumper rendering descriptions from `table` (no mark labels known).
    pub fn new(table: &'t EventTable, mode: DumpMode) -> Self {
        Self {
            table,
            mode,
            line: Vec::with_capacity(256),
            labels: MarkLabels::default(),
        }
    }

    /// The mark titles and labels used by [`DumpMode::Labels`].
    pub fn with_labels(mut self, labels: MarkLabels) -> Self {
        self.labels = labels;
        self
    }

    /// Writes the line of one event. Unknown models/events print `UNKNOWN` and return a
    /// notice; a payload that does not match the signature is an error naming the stream and
    /// offset (the C tool read out of bounds there), and nothing is written.
    pub fn write_event(
        &mut self,
        out: &mut impl Write,
        stream: &Stream,
        offset: u64,
        ev: &Event<'_>,
    ) -> Result<Option<Notice>> {
        let line = &mut self.line;
        line.clear();
        push_clock(line, ev.signed_clock());
        line.extend_from_slice(b"  ");
        line.extend_from_slice(&ev.mcv.0);
        line.extend_from_slice(b"  ");
        line.extend_from_slice(stream.relpath());
        line.extend_from_slice(b"  ");
        let text_start = line.len();
        let mut notice = None;
        match self.mode {
            DumpMode::Hex => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                for &b in ev.payload {
                    line.extend_from_slice(&[
                        b':',
                        HEX[usize::from(b >> 4)],
                        HEX[usize::from(b & 0xf)],
                    ]);
                }
            }
            DumpMode::Describe | DumpMode::Labels => match self.table.render(ev, line) {
                Ok(()) if self.mode == DumpMode::Labels => {
                    if let Some(d) = self.labels.describe(ev) {
                        line.truncate(text_start);
                        line.extend_from_slice(d.as_bytes());
                    }
                }
                Ok(()) => {}
                Err(RenderError::UnknownModel(_)) => {
                    line.extend_from_slice(b"UNKNOWN");
                    notice = Some(Notice::UnknownModel(ev.mcv));
                }
                Err(RenderError::UnknownEvent(_)) => {
                    line.extend_from_slice(b"UNKNOWN");
                    notice = Some(Notice::UnknownEvent(ev.mcv));
                }
                Err(RenderError::TooLong(why)) => {
                    line.extend_from_slice(b"UNKNOWN");
                    notice = Some(Notice::TooLong { mcv: ev.mcv, why });
                }
                Err(RenderError::Payload(p)) => return Err(stream.error(offset, p)),
            },
        }
        line.push(b'\n');
        out.write_all(line).map_err(|e| Error::io("<output>", e))?;
        Ok(notice)
    }
}

/// Appends `v` right-aligned in 10 columns (`%10lld`).
fn push_clock(out: &mut Vec<u8>, v: i64) {
    let mut buf = [b' '; 24];
    let mut i = buf.len();
    let mut n = v.unsigned_abs();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    if v < 0 {
        i -= 1;
        buf[i] = b'-';
    }
    let start = i.min(buf.len() - 10);
    out.extend_from_slice(&buf[start..]);
}

/// Result of a dump: how it ended.
#[derive(Debug)]
pub struct DumpOutcome {
    /// Lines printed.
    pub events: u64,
    /// Error that stopped the dump, after the events before it were printed.
    pub error: Option<Error>,
}

/// Dumps every event of `trace` in merged order to `out`; notices go to `notice`.
pub fn dump(
    trace: &Trace,
    mode: DumpMode,
    out: &mut impl Write,
    mut notice: impl FnMut(Notice),
) -> DumpOutcome {
    let mut d = Dumper::new(EventTable::builtin(), mode);
    if mode == DumpMode::Labels {
        d = d.with_labels(MarkLabels::from_trace(trace));
    }
    let streams = trace.streams();
    let mut events = 0;
    for m in trace.merged() {
        let m: Merged<'_> = match m {
            Ok(m) => m,
            Err(e) => {
                return DumpOutcome {
                    events,
                    error: Some(e),
                }
            }
        };
        let Some(stream) = streams.get(m.stream) else {
            continue;
        };
        if let Some(prev) = m.backwards_from {
            notice(Notice::Backwards {
                prev,
                clock: m.event.signed_clock(),
                stream: stream.name(),
            });
        }
        match d.write_event(out, stream, m.offset, &m.event) {
            Ok(Some(n)) => notice(n),
            Ok(None) => {}
            Err(e) => {
                return DumpOutcome {
                    events,
                    error: Some(e),
                }
            }
        }
        events += 1;
    }
    DumpOutcome {
        events,
        error: None,
    }
}

/// Event counts per MCV, as `ovnitop` prints them.
#[derive(Debug, Default)]
pub struct McvCounts {
    counts: HashMap<Mcv, u64>,
}

impl McvCounts {
    /// Counts one event.
    pub fn add(&mut self, mcv: Mcv) {
        *self.counts.entry(mcv).or_insert(0) += 1;
    }

    /// Counts sorted by count descending, then MCV ascending as `strcmp` compares it (up to
    /// its first NUL), then by all three bytes so the order is total.
    pub fn sorted(&self) -> Vec<(Mcv, u64)> {
        let mut v: Vec<(Mcv, u64)> = self.counts.iter().map(|(&m, &c)| (m, c)).collect();
        v.sort_by(|a, b| {
            b.1.cmp(&a.1)
                .then(c_str(&a.0).cmp(c_str(&b.0)))
                .then(a.0.cmp(&b.0))
        });
        v
    }

    /// Writes `%s %10ld` lines: the MCV is printed up to its first NUL, as C's `%s` does.
    pub fn write(&self, out: &mut impl Write) -> io::Result<()> {
        for (m, c) in self.sorted() {
            out.write_all(c_str(&m))?;
            writeln!(out, " {c:10}")?;
        }
        Ok(())
    }
}

/// Counts all events of `trace` in merged order; stops at the first error, returning the
/// counts so far with it. Backwards jumps are passed to `notice`.
pub fn top(trace: &Trace, mut notice: impl FnMut(Notice)) -> (McvCounts, Option<Error>) {
    let mut counts = McvCounts::default();
    for m in trace.merged() {
        match m {
            Ok(m) => {
                if let Some(prev) = m.backwards_from {
                    notice(Notice::Backwards {
                        prev,
                        clock: m.event.signed_clock(),
                        stream: trace
                            .streams()
                            .get(m.stream)
                            .map(Stream::name)
                            .unwrap_or_default(),
                    });
                }
                counts.add(m.event.mcv);
            }
            Err(e) => return (counts, Some(e)),
        }
    }
    (counts, None)
}

/// The C tools' text for a system error: `strerror`, without Rust's ` (os error N)`.
pub(crate) fn strerror(e: &io::Error) -> String {
    let t = e.to_string();
    match t.rfind(" (os error ") {
        Some(i) if t.ends_with(')') => t.get(..i).unwrap_or(&t).to_string(),
        _ => t,
    }
}

/// The trace directory as the C tools print it: trailing slashes removed.
pub(crate) fn c_root(root: &Path) -> String {
    let r = root.to_string_lossy();
    let t = r.trim_end_matches('/');
    if t.is_empty() {
        r.into_owned()
    } else {
        t.to_string()
    }
}

/// A stream directory as the C tools print it: `<root>/<relpath>`, no trailing slash.
fn c_dir(root: &Path, relpath: &str) -> String {
    if relpath.is_empty() {
        c_root(root)
    } else {
        format!("{}/{relpath}", c_root(root))
    }
}

fn parent_display(p: &Path) -> String {
    p.parent()
        .map(|d| d.display().to_string())
        .unwrap_or_default()
}

/// The lines (`<function>: <text>`) that ovni 1.14's tools print when loading the trace under
/// `root` fails with `err` (`Trace::open`), or `None` where the original's behaviour is not
/// known (no streams, unreadable directory): the caller then prints its own message.
pub fn c_load_error_lines(root: &Path, err: &Error) -> Option<Vec<String>> {
    let json_failed = |json: String| format!("stream_load: load_json failed for: {json}");
    let mut v = match err {
        Error::Json { path, .. } => vec![
            "load_json: json_parse_file_with_comments() failed".to_string(),
            json_failed(path.display().to_string()),
        ],
        Error::Io { path, .. } if path.file_name() == Some("stream.json".as_ref()) => vec![
            "load_json: json_parse_file_with_comments() failed".to_string(),
            json_failed(path.display().to_string()),
        ],
        Error::Metadata { stream, problem } => {
            let first = match problem {
                MetaProblem::MissingKey("version") => {
                    "check_version: missing attribute \"version\"".to_string()
                }
                // parson reads a version that is not a number as 0.
                MetaProblem::BadValue { key: "version", .. } => {
                    "check_version: metadata version mismatch 0 (expected 3)".to_string()
                }
                MetaProblem::VersionMismatch(v) => {
                    format!("check_version: metadata version mismatch {v} (expected 3)")
                }
                _ => return None,
            };
            vec![
                first,
                "load_json: check_version failed".to_string(),
                json_failed(format!("{}/stream.json", c_dir(root, stream))),
            ]
        }
        Error::Io { path, source } if path.file_name() == Some("stream.obs".as_ref()) => vec![
            format!(
                "load_obs: open {} failed: {}",
                path.display(),
                strerror(source)
            ),
            "stream_load: load_obs failed".to_string(),
        ],
        Error::Stream {
            path,
            offset: 0,
            problem,
        } => {
            let dir = parent_display(path);
            let obs = path.display();
            let mut v = match problem {
                StreamProblem::Empty => vec![
                    format!("load_stream_fd: stream {dir} is empty"),
                    format!("load_obs: load_stream_fd failed for: {obs}"),
                ],
                StreamProblem::IncompleteHeader { .. } => vec![format!(
                    "check_stream_header: stream '{dir}': incomplete stream header"
                )],
                StreamProblem::BadMagic(m) => {
                    let end = m.iter().position(|&b| b == 0).unwrap_or(4);
                    let shown = String::from_utf8_lossy(m.get(..end).unwrap_or_default());
                    let mut v = vec![format!(
                        "check_stream_header: stream '{dir}': wrong stream magic '{shown}' (expected 'ovni')"
                    )];
                    // The C check reports a wrong version too; the reader stops at the magic.
                    if let Some(ver) = header_version(path).filter(|&v| v != raw::STREAM_VERSION)
                    {
                        v.push(format!(
                            "check_stream_header: stream '{dir}': stream version mismatch {ver} (expected 1)"
                        ));
                    }
                    v
                }
                StreamProblem::BadVersion(ver) => vec![format!(
                    "check_stream_header: stream '{dir}': stream version mismatch {ver} (expected 1)"
                )],
                _ => return None,
            };
            if !matches!(problem, StreamProblem::Empty) {
                v.push(format!("load_obs: stream has bad header: {obs}"));
            }
            v.push("stream_load: load_obs failed".to_string());
            v
        }
        _ => return None,
    };
    v.push("load_stream: emu_steam_load failed".to_string());
    v.push("trace_load: nftw failed".to_string());
    v.push(format!("main: failed to load trace: {}", c_root(root)));
    Some(v)
}

/// The stream version in the header of the file at `path`, if it has 8 bytes.
fn header_version(path: &Path) -> Option<u32> {
    use std::io::Read;
    let mut h = [0u8; raw::STREAM_HEADER_SIZE];
    std::fs::File::open(path).ok()?.read_exact(&mut h).ok()?;
    let (_, v) = h.split_first_chunk::<4>()?;
    Some(u32::from_le_bytes(*v.first_chunk::<4>()?))
}

/// The lines ovni 1.14's `ovnidump` prints when reading the events of `trace` stops with
/// `err`, or `None` where the original crashed or printed garbage (a jumbo size its `int`
/// arithmetic wraps, a payload shorter than the event's signature): the caller then prints
/// its own message, which names the file and offset.
pub fn c_step_error_lines(trace: &Trace, err: &Error) -> Option<Vec<String>> {
    let Error::Stream {
        path,
        offset,
        problem: StreamProblem::IncompleteEvent { needed, .. },
    } = err
    else {
        return None;
    };
    if *needed > i32::MAX as u64 {
        return None;
    }
    let stream = trace.streams().iter().find(|s| s.obs_path() == path)?;
    let rel = stream.name();
    let mut v = vec![
        format!("stream_step: stream '{rel}' ends with incomplete event"),
        format!("step_stream: cannot step stream '{rel}'"),
    ];
    // The first event of every stream is read before any is printed.
    if *offset == raw::STREAM_HEADER_SIZE as u64 {
        v.push("player_init: step_stream failed".to_string());
        v.push("main: player_init failed".to_string());
    } else {
        v.push("player_step: step_stream() failed".to_string());
        v.push("main: player_step failed".to_string());
    }
    Some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_column() {
        let f = |v| {
            let mut o = Vec::new();
            push_clock(&mut o, v);
            String::from_utf8(o).unwrap()
        };
        assert_eq!(f(5), "         5");
        assert_eq!(f(-5), "        -5");
        assert_eq!(f(736496140673), "736496140673");
        assert_eq!(f(i64::MIN), "-9223372036854775808");
        assert_eq!(f(0), "         0");
    }

    #[test]
    fn counts_sort_by_count_then_mcv() {
        let mut c = McvCounts::default();
        for m in [b"OHr", b"OHp", b"OHp", b"OAs", b"OHr"] {
            c.add(Mcv(*m));
        }
        let mut out = Vec::new();
        c.write(&mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "OHp          2\nOHr          2\nOAs          1\n"
        );
    }
}
