//! The logic of `ovnidump`, `ovnitop` and `ovnisort -c`, kept here so it is tested with the
//! library; the binaries only parse arguments and print.

use std::collections::HashMap;
use std::io::{self, Write};

use crate::error::{Error, Result};
use crate::events::{EventTable, RenderError, TooLong};
use crate::raw::{Event, Mcv};
use crate::read::{Merged, Stream, Trace};

/// What `ovnidump` prints after the relpath.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DumpMode {
    /// The event's description.
    Describe,
    /// The payload bytes as `:xx` (`-x`).
    Hex,
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
}

impl<'t> Dumper<'t> {
    /// A dumper rendering descriptions from `table`.
    pub fn new(table: &'t EventTable, mode: DumpMode) -> Self {
        Self {
            table,
            mode,
            line: Vec::with_capacity(256),
        }
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
            DumpMode::Describe => match self.table.render(ev, line) {
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

/// Verdict of `ovnisort -c` for one stream.
#[derive(Debug)]
pub enum SortCheck {
    /// Clocks never decrease.
    Sorted,
    /// The stream has no events (the C tool cannot step it and reports it unsorted).
    Empty,
    /// The clock decreases at `offset`.
    Backwards {
        /// Offset of the event whose clock is lower.
        offset: u64,
        /// Previous clock.
        prev: u64,
        /// Lower clock.
        clock: u64,
    },
    /// The stream is malformed.
    Malformed(Error),
}

impl SortCheck {
    /// True for [`SortCheck::Sorted`].
    pub fn is_sorted(&self) -> bool {
        matches!(self, Self::Sorted)
    }
}

/// Checks that the clocks of one stream never decrease. Clocks are compared as unsigned
/// 64-bit values, as `ovnisort` does (unlike the other tools, which compare them signed).
pub fn check_sorted(stream: &Stream) -> SortCheck {
    if stream.is_empty() {
        return SortCheck::Empty;
    }
    let mut prev: Option<u64> = None;
    for ev in stream.events() {
        let (offset, ev) = match ev {
            Ok(x) => x,
            Err(e) => return SortCheck::Malformed(e),
        };
        let clock = ev.clock;
        if let Some(p) = prev.filter(|&p| clock < p) {
            return SortCheck::Backwards {
                offset,
                prev: p,
                clock,
            };
        }
        prev = Some(clock);
    }
    SortCheck::Sorted
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
