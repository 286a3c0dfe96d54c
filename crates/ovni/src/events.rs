//! The event table of ovni 1.14's models (embedded `events.tsv`): payload signatures and
//! description templates, payload decoding and description rendering (as `ovnidump` prints them).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::OnceLock;

use crate::error::StreamProblem;
use crate::printf::{self, Spec};
use crate::raw::{Event, Mcv, JUMBO_SIZE_FIELD};

const EVENTS_TSV: &str = include_str!("events.tsv");

/// Longest rendered description, in bytes (the C buffer is 1024 with its NUL).
pub const MAX_DESCRIPTION: usize = 1023;

/// Type of a payload argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ArgType {
    /// `u8`
    #[default]
    U8,
    /// `u16`
    U16,
    /// `u32`
    U32,
    /// `u64`
    U64,
    /// `i8`
    I8,
    /// `i16`
    I16,
    /// `i32`
    I32,
    /// `i64`
    I64,
    /// `str`: NUL-terminated string.
    Str,
}

impl ArgType {
    fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "u8" => Self::U8,
            "u16" => Self::U16,
            "u32" => Self::U32,
            "u64" => Self::U64,
            "i8" => Self::I8,
            "i16" => Self::I16,
            "i32" => Self::I32,
            "i64" => Self::I64,
            "str" => Self::Str,
            _ => return None,
        })
    }

    /// Size in bytes (`None` for `str`).
    pub const fn size(self) -> Option<usize> {
        match self {
            Self::U8 | Self::I8 => Some(1),
            Self::U16 | Self::I16 => Some(2),
            Self::U32 | Self::I32 => Some(4),
            Self::U64 | Self::I64 => Some(8),
            Self::Str => None,
        }
    }
}

/// A decoded argument value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Value<'a> {
    /// Any integer type, widened.
    Int {
        /// The value.
        v: i128,
        /// Its declared type.
        ty: ArgType,
    },
    /// A string, without its NUL.
    Str(&'a [u8]),
}

#[derive(Debug, Clone)]
enum Piece {
    Lit(Vec<u8>),
    Arg { index: usize, spec: Option<Spec> },
}

/// One event definition.
#[derive(Debug, Clone)]
pub struct EventSpec {
    /// MCV.
    pub mcv: Mcv,
    /// Whether the event is jumbo (`+` in the signature).
    pub jumbo: bool,
    /// Arguments: name and type, in payload order.
    pub args: Vec<(String, ArgType)>,
    /// Description template as written in the table.
    pub description: String,
    pieces: Vec<Piece>,
}

/// A model: name, version and its events.
#[derive(Debug, Clone)]
pub struct Model {
    /// Name (`ovni`, `nosv`, ...).
    pub name: String,
    /// Model character.
    pub id: u8,
    /// Version served (`x.y.z`).
    pub version: String,
}

/// Why rendering a description failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RenderError {
    /// No model for the MCV's model character.
    UnknownModel(u8),
    /// The model has no such event.
    UnknownEvent(Mcv),
    /// The payload does not hold what the signature says.
    Payload(StreamProblem),
    /// The rendered text needs [`MAX_DESCRIPTION`] + 1 bytes or more (libovni's tools print
    /// `UNKNOWN` then, they do not truncate).
    TooLong(TooLong),
}

/// Where a description ran out of room, as the C renderer reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TooLong {
    /// Literal text of the template did not fit.
    Text,
    /// An argument did not fit (with its NUL: the C code needs one byte more than the text).
    Arg {
        /// Argument name.
        name: String,
        /// Whether it is a `str` argument (the C message differs).
        string: bool,
    },
}

/// Multiplicative hash for the 3-byte MCV keys: the lookup runs once per dumped event and
/// SipHash's flood resistance is not needed for a fixed embedded table.
#[derive(Default)]
struct McvHasher(u64);

impl Hasher for McvHasher {
    fn finish(&self) -> u64 {
        self.0.wrapping_mul(0x9e37_79b9_7f4a_7c15)
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8) | u64::from(b);
        }
    }
}

type McvMap<V> = HashMap<[u8; 3], V, BuildHasherDefault<McvHasher>>;

/// Table of all known models and events.
#[derive(Debug)]
pub struct EventTable {
    models: Vec<Model>,
    by_model: [Option<usize>; 256],
    events: McvMap<EventSpec>,
}

impl EventTable {
    /// The table embedded in the crate (ovni 1.14.0's 8 models).
    pub fn builtin() -> &'static Self {
        static TABLE: OnceLock<EventTable> = OnceLock::new();
        TABLE.get_or_init(|| {
            // The embedded text is checked by a unit test, so this cannot fail at run time.
            Self::parse(EVENTS_TSV).expect("embedded events.tsv parses")
        })
    }

    /// Parses a table in `events.tsv` format (header line, then model, model id, model
    /// version, signature, description separated by tabs).
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut models: Vec<Model> = Vec::new();
        let mut by_model = [None; 256];
        let mut events = McvMap::default();
        for (n, line) in text.lines().enumerate().skip(1) {
            if line.is_empty() {
                continue;
            }
            let cols: Vec<&str> = line.split('\t').collect();
            let [name, id, version, sig, desc] = cols[..] else {
                return Err(format!("line {}: expected 5 columns", n + 1));
            };
            let &[id] = id.as_bytes() else {
                return Err(format!("line {}: model id must be one byte", n + 1));
            };
            if by_model[usize::from(id)].is_none() {
                by_model[usize::from(id)] = Some(models.len());
                models.push(Model {
                    name: name.to_string(),
                    id,
                    version: version.to_string(),
                });
            }
            let spec = parse_spec(sig, desc).map_err(|e| format!("line {}: {e}", n + 1))?;
            events.insert(spec.mcv.0, spec);
        }
        Ok(Self {
            models,
            by_model,
            events,
        })
    }

    /// All models.
    pub fn models(&self) -> &[Model] {
        &self.models
    }

    /// Model of a model character.
    pub fn model(&self, id: u8) -> Option<&Model> {
        self.by_model[usize::from(id)].and_then(|i| self.models.get(i))
    }

    /// Number of events defined for model character `id`.
    pub fn model_events(&self, id: u8) -> usize {
        self.events.keys().filter(|k| k[0] == id).count()
    }

    /// Model by name.
    pub fn model_by_name(&self, name: &str) -> Option<&Model> {
        self.models.iter().find(|m| m.name == name)
    }

    /// Definition of an event.
    pub fn event(&self, mcv: Mcv) -> Option<&EventSpec> {
        self.events.get(&mcv.0)
    }

    /// Appends the event's description to `out` (at most [`MAX_DESCRIPTION`] bytes).
    /// On error `out` is left unchanged.
    pub fn render(&self, ev: &Event<'_>, out: &mut Vec<u8>) -> Result<(), RenderError> {
        if self.model(ev.mcv.model()).is_none() {
            return Err(RenderError::UnknownModel(ev.mcv.model()));
        }
        let spec = self
            .event(ev.mcv)
            .ok_or(RenderError::UnknownEvent(ev.mcv))?;
        spec.render(ev, out)
    }
}

impl EventSpec {
    /// Decodes the arguments from the event's payload.
    pub fn decode<'a>(&self, ev: &Event<'a>) -> Result<Vec<Value<'a>>, StreamProblem> {
        let mut vals = Vec::with_capacity(self.args.len());
        let base = if self.jumbo || ev.is_jumbo() {
            JUMBO_SIZE_FIELD
        } else {
            0
        };
        let payload = ev.payload;
        let mut pos = base;
        let short = |needed: usize| StreamProblem::PayloadTooShort {
            mcv: ev.mcv,
            needed: needed as u64,
            available: payload.len() as u64,
        };
        for &(_, ty) in &self.args {
            let rest = payload.get(pos..).ok_or_else(|| short(pos))?;
            let v = match ty {
                ArgType::Str => {
                    let nul = rest
                        .iter()
                        .position(|&b| b == 0)
                        .ok_or(StreamProblem::UnterminatedString { mcv: ev.mcv })?;
                    pos += nul + 1;
                    Value::Str(rest.get(..nul).unwrap_or_default())
                }
                _ => {
                    let v =
                        read_int(rest, ty).ok_or_else(|| short(pos + ty.size().unwrap_or(0)))?;
                    pos += ty.size().unwrap_or(0);
                    Value::Int { v, ty }
                }
            };
            vals.push(v);
        }
        Ok(vals)
    }

    /// Appends the description to `out`. Like ovni's `ev_spec_print`, a description that
    /// does not fit in [`MAX_DESCRIPTION`] bytes is an error, not truncated: literal text may
    /// fill the buffer exactly, an argument must leave one byte free (the C code checks
    /// `snprintf`'s result against the room left, NUL excluded). On error `out` is unchanged.
    pub fn render(&self, ev: &Event<'_>, out: &mut Vec<u8>) -> Result<(), RenderError> {
        let vals = if self.args.is_empty() {
            Vec::new()
        } else {
            self.decode(ev).map_err(RenderError::Payload)?
        };
        let start = out.len();
        let res = self.render_pieces(&vals, out, start);
        if res.is_err() {
            out.truncate(start);
        }
        res
    }

    fn render_pieces(
        &self,
        vals: &[Value<'_>],
        out: &mut Vec<u8>,
        start: usize,
    ) -> Result<(), RenderError> {
        for piece in &self.pieces {
            let room = MAX_DESCRIPTION.saturating_sub(out.len() - start);
            match piece {
                Piece::Lit(s) => {
                    if s.len() > room {
                        return Err(RenderError::TooLong(TooLong::Text));
                    }
                    out.extend_from_slice(s);
                }
                Piece::Arg { index, spec } => {
                    let Some(v) = vals.get(*index) else {
                        continue;
                    };
                    let before = out.len();
                    printf::format_value(out, v, spec.as_ref());
                    if out.len() - before >= room {
                        let (name, ty) = self.args.get(*index).cloned().unwrap_or_default();
                        return Err(RenderError::TooLong(TooLong::Arg {
                            name,
                            string: ty == ArgType::Str,
                        }));
                    }
                }
            }
        }
        Ok(())
    }
}

fn read_int(b: &[u8], ty: ArgType) -> Option<i128> {
    Some(match ty {
        ArgType::U8 => i128::from(u8::from_le_bytes(*b.first_chunk()?)),
        ArgType::U16 => i128::from(u16::from_le_bytes(*b.first_chunk()?)),
        ArgType::U32 => i128::from(u32::from_le_bytes(*b.first_chunk()?)),
        ArgType::U64 => i128::from(u64::from_le_bytes(*b.first_chunk()?)),
        ArgType::I8 => i128::from(i8::from_le_bytes(*b.first_chunk()?)),
        ArgType::I16 => i128::from(i16::from_le_bytes(*b.first_chunk()?)),
        ArgType::I32 => i128::from(i32::from_le_bytes(*b.first_chunk()?)),
        ArgType::I64 => i128::from(i64::from_le_bytes(*b.first_chunk()?)),
        ArgType::Str => return None,
    })
}

/// Parses `MCV[+][(type name, ...)]` and its description template.
fn parse_spec(sig: &str, desc: &str) -> Result<EventSpec, String> {
    let b = sig.as_bytes();
    let Some(&[m, c, v]) = b.first_chunk::<3>() else {
        return Err(format!("signature '{sig}' too short"));
    };
    let mut rest = sig.get(3..).ok_or("bad signature")?;
    let jumbo = rest.starts_with('+');
    if jumbo {
        rest = &rest[1..];
    }
    let mut args = Vec::new();
    if !rest.is_empty() {
        let inner = rest
            .strip_prefix('(')
            .and_then(|r| r.strip_suffix(')'))
            .ok_or_else(|| format!("bad argument list in '{sig}'"))?;
        for a in inner.split(',') {
            let mut it = a.split_whitespace();
            let (Some(ty), Some(name), None) = (it.next(), it.next(), it.next()) else {
                return Err(format!("bad argument '{a}' in '{sig}'"));
            };
            let ty = ArgType::parse(ty).ok_or_else(|| format!("unknown type '{ty}'"))?;
            args.push((name.to_string(), ty));
        }
    }
    let pieces = parse_template(desc, &args)?;
    Ok(EventSpec {
        mcv: Mcv([m, c, v]),
        jumbo,
        args,
        description: desc.to_string(),
        pieces,
    })
}

fn parse_template(desc: &str, args: &[(String, ArgType)]) -> Result<Vec<Piece>, String> {
    let mut pieces = Vec::new();
    let mut lit = Vec::new();
    let mut rest = desc;
    while let Some(p) = rest.find('%') {
        lit.extend_from_slice(&rest.as_bytes()[..p]);
        let after = &rest[p + 1..];
        if let Some(r) = after.strip_prefix('%') {
            lit.push(b'%');
            rest = r;
            continue;
        }
        let open = after
            .find('{')
            .ok_or_else(|| format!("'%' without '{{name}}' in '{desc}'"))?;
        let close = after[open..]
            .find('}')
            .map(|c| c + open)
            .ok_or_else(|| format!("unclosed '{{' in '{desc}'"))?;
        let fmt = &after[..open];
        let name = &after[open + 1..close];
        let index = args
            .iter()
            .position(|(n, _)| n == name)
            .ok_or_else(|| format!("unknown argument '{name}' in '{desc}'"))?;
        let spec = if fmt.is_empty() {
            None
        } else {
            Some(Spec::parse(fmt).ok_or_else(|| format!("bad format '%{fmt}' in '{desc}'"))?)
        };
        if !lit.is_empty() {
            pieces.push(Piece::Lit(std::mem::take(&mut lit)));
        }
        pieces.push(Piece::Arg { index, spec });
        rest = &after[close + 1..];
    }
    lit.extend_from_slice(rest.as_bytes());
    if !lit.is_empty() {
        pieces.push(Piece::Lit(lit));
    }
    Ok(pieces)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::raw::decode_event;

    fn render(mcv: &[u8; 3], payload: &[u8], jumbo: bool) -> Result<String, RenderError> {
        let mut buf = Vec::new();
        let m = Mcv(*mcv);
        if jumbo {
            crate::raw::encode_jumbo(&mut buf, m, 1, payload).unwrap();
        } else {
            crate::raw::encode_normal(&mut buf, m, 1, payload).unwrap();
        }
        let (ev, _) = decode_event(&buf).unwrap();
        let mut out = Vec::new();
        EventTable::builtin().render(&ev, &mut out)?;
        Ok(String::from_utf8(out).unwrap())
    }

    #[test]
    fn builtin_table_parses_all_rows() {
        let t = EventTable::builtin();
        assert_eq!(t.models().len(), 8);
        assert_eq!(t.events.len(), 365);
        assert_eq!(t.model(b'O').unwrap().version, "1.1.0");
    }

    #[test]
    fn renders_signed_and_hex_tag() {
        let mut p = Vec::new();
        p.extend_from_slice(&0i32.to_le_bytes());
        p.extend_from_slice(&(-1i32).to_le_bytes());
        p.extend_from_slice(&0x1234_abcdu64.to_le_bytes());
        assert_eq!(
            render(b"OHx", &p, false).unwrap(),
            "begins the execution on CPU 0 created from -1 with tag 0x1234abcd"
        );
        p[8..].fill(0);
        assert!(render(b"OHx", &p, false).unwrap().ends_with("with tag 0"));
    }

    #[test]
    fn renders_jumbo_string() {
        let mut p = 7u32.to_le_bytes().to_vec();
        p.extend_from_slice(b"my_task_type\0");
        assert_eq!(
            render(b"VYc", &p, true).unwrap(),
            "creates task type 7 with label \"my_task_type\""
        );
        p.pop();
        assert!(matches!(
            render(b"VYc", &p, true),
            Err(RenderError::Payload(
                StreamProblem::UnterminatedString { .. }
            ))
        ));
    }

    #[test]
    fn description_of_1024_bytes_is_refused_not_truncated() {
        let prefix = "creates task type 7 with label \"".len();
        let vyc = |len: usize| {
            let mut p = 7u32.to_le_bytes().to_vec();
            p.extend(std::iter::repeat_n(b'a', len));
            p.push(0);
            render(b"VYc", &p, true)
        };
        // Rendered text = prefix + label + closing quote.
        let fits = MAX_DESCRIPTION - prefix - 1;
        assert_eq!(vyc(fits).unwrap().len(), MAX_DESCRIPTION);
        assert_eq!(
            vyc(fits + 1),
            Err(RenderError::TooLong(TooLong::Arg {
                name: "label".into(),
                string: true
            }))
        );
    }

    #[test]
    fn short_payload_is_an_error() {
        assert_eq!(
            render(b"OHx", &[], false),
            Err(RenderError::Payload(StreamProblem::PayloadTooShort {
                mcv: Mcv(*b"OHx"),
                needed: 4,
                available: 0
            }))
        );
        assert!(matches!(
            render(b"OHx", &[0; 12], false),
            Err(RenderError::Payload(StreamProblem::PayloadTooShort {
                needed: 16,
                ..
            }))
        ));
    }

    #[test]
    fn unknown_model_and_event() {
        assert_eq!(
            render(b"Xab", &[], false),
            Err(RenderError::UnknownModel(b'X'))
        );
        assert_eq!(
            render(b"OHz", &[], false),
            Err(RenderError::UnknownEvent(Mcv(*b"OHz")))
        );
    }

    #[test]
    fn percent_escape_and_long_output() {
        let args = vec![("s".to_string(), ArgType::Str)];
        let pieces = parse_template("100%% %{s}", &args).unwrap();
        let spec = EventSpec {
            mcv: Mcv(*b"Zz1"),
            jumbo: true,
            args,
            description: String::new(),
            pieces,
        };
        let mut data = 0u32.to_le_bytes().to_vec();
        data.extend(std::iter::repeat_n(b'a', 2000));
        data.push(0);
        let mut buf = Vec::new();
        crate::raw::encode_jumbo(&mut buf, spec.mcv, 0, &data[4..]).unwrap();
        let (ev, _) = decode_event(&buf).unwrap();
        let mut out = b"x".to_vec();
        assert_eq!(
            spec.render(&ev, &mut out),
            Err(RenderError::TooLong(TooLong::Arg {
                name: "s".into(),
                string: true
            }))
        );
        assert_eq!(out, b"x");
    }
}
