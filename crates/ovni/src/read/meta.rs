//! Typed reading of `stream.json`: only the keys this crate uses are kept; every other value
//! is skipped while parsing ([`IgnoredAny`]), never built. The file is streamed through a
//! comment-stripping reader, so memory does not depend on the size of what is skipped.
//!
//! Each kept value records what it was when its JSON type is not the expected one, and the
//! collections record their first problem and skip the rest, so the checks of
//! [`crate::metadata`] report the same problems, in the same order, as on a full JSON tree.
//!
//! Bounds: a `stream.json` larger than [`MAX_STREAM_JSON`] is refused before it is read; at
//! most [`MAX_OTHER_REQUIRES`] `ovni.require` entries for models this crate does not know are
//! kept (ovniemu only looks up the models it has); mark types outside `[0, 100)` are problems
//! and are not kept, and mark labels are stored as one text buffer plus a fixed-size entry per
//! label.

use std::collections::BTreeMap;
use std::fmt;
use std::io::{self, BufRead, Read};

use serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{json, Map, Value};

use crate::error::MetaProblem;
use crate::events::EventTable;

/// Largest `stream.json` read (256 MiB); larger files are refused with
/// [`MetaProblem::FileTooLarge`]. libovni writes a few KiB per thread, plus about 40 bytes per
/// CPU of the loom.
pub const MAX_STREAM_JSON: u64 = 256 << 20;

/// `ovni.require` entries kept for model names the event table does not know.
pub const MAX_OTHER_REQUIRES: usize = 64;

/// A JSON value where a scalar is expected: arrays and objects are skipped, only their kind
/// is kept.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Scalar {
    /// `null`.
    #[default]
    Null,
    /// `true` / `false`.
    Bool(bool),
    /// An integer that fits in `i64`.
    Int(i64),
    /// Any other number.
    Float(f64),
    /// A string.
    Str(String),
    /// An array (skipped).
    Array,
    /// An object (skipped).
    Object,
}

impl Scalar {
    /// The number as `f64` (`serde_json::Value::as_f64`).
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            Self::Int(i) => Some(i as f64),
            Self::Float(f) => Some(f),
            _ => None,
        }
    }

    /// An integer, also from an integral float below 9e18.
    pub fn as_int(&self) -> Option<i64> {
        match *self {
            Self::Int(i) => Some(i),
            Self::Float(f) if f.fract() == 0.0 && f.abs() < 9.0e18 => Some(f as i64),
            _ => None,
        }
    }

    /// The string, if it is one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Self::Str(s) => Some(s),
            _ => None,
        }
    }

    fn to_value(&self) -> Value {
        match self {
            Self::Null => Value::Null,
            Self::Bool(b) => Value::Bool(*b),
            Self::Int(i) => json!(i),
            Self::Float(f) => json!(f),
            Self::Str(s) => Value::String(s.clone()),
            Self::Array => Value::Array(Vec::new()),
            Self::Object => Value::Object(Map::new()),
        }
    }
}

struct ScalarVisitor;

impl<'de> Visitor<'de> for ScalarVisitor {
    type Value = Scalar;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Scalar, E> {
        Ok(Scalar::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Scalar, E> {
        Ok(Scalar::Int(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Scalar, E> {
        Ok(i64::try_from(v).map_or(Scalar::Float(v as f64), Scalar::Int))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Scalar, E> {
        Ok(Scalar::Float(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Scalar, E> {
        Ok(Scalar::Str(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> Result<Scalar, E> {
        Ok(Scalar::Str(v))
    }
    fn visit_unit<E>(self) -> Result<Scalar, E> {
        Ok(Scalar::Null)
    }
    fn visit_none<E>(self) -> Result<Scalar, E> {
        Ok(Scalar::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Scalar, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Scalar::Array)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Scalar, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Scalar::Object)
    }
}

impl<'de> Deserialize<'de> for Scalar {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ScalarVisitor)
    }
}

/// A value expected to be an object (or, for CPUs, an array): `Wrong` when it is not.
#[derive(Debug, Clone, PartialEq)]
pub enum Typed<T> {
    /// The expected kind, read.
    Ok(T),
    /// Another kind of JSON value (skipped).
    Wrong,
}

impl<T> Typed<T> {
    /// The value, if it has the expected kind.
    pub fn ok(&self) -> Option<&T> {
        match self {
            Self::Ok(t) => Some(t),
            Self::Wrong => None,
        }
    }
}

/// Builds `T` from a JSON object, key by key.
trait FromObject: Default {
    fn entry<'de, A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error>;
    /// Called once the object has ended.
    fn finish(&mut self) {}
}

struct ObjectVisitor<T>(std::marker::PhantomData<T>);

fn skip_any<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<(), A::Error> {
    while seq.next_element::<IgnoredAny>()?.is_some() {}
    Ok(())
}

fn skip_map<'de, A: MapAccess<'de>>(mut map: A) -> Result<(), A::Error> {
    while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
    Ok(())
}

/// Implements the visitor methods of a value that must be of one kind: every other kind is
/// skipped and gives `Typed::Wrong`.
macro_rules! wrong_kind_visits {
    ($t:ty) => {
        fn visit_bool<E>(self, _: bool) -> Result<Typed<$t>, E> {
            Ok(Typed::Wrong)
        }
        fn visit_i64<E>(self, _: i64) -> Result<Typed<$t>, E> {
            Ok(Typed::Wrong)
        }
        fn visit_u64<E>(self, _: u64) -> Result<Typed<$t>, E> {
            Ok(Typed::Wrong)
        }
        fn visit_f64<E>(self, _: f64) -> Result<Typed<$t>, E> {
            Ok(Typed::Wrong)
        }
        fn visit_str<E>(self, _: &str) -> Result<Typed<$t>, E> {
            Ok(Typed::Wrong)
        }
        fn visit_unit<E>(self) -> Result<Typed<$t>, E> {
            Ok(Typed::Wrong)
        }
        fn visit_none<E>(self) -> Result<Typed<$t>, E> {
            Ok(Typed::Wrong)
        }
    };
}

impl<'de, T: FromObject> Visitor<'de> for ObjectVisitor<T> {
    type Value = Typed<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    wrong_kind_visits!(T);
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Typed<T>, A::Error> {
        skip_any(seq)?;
        Ok(Typed::Wrong)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Typed<T>, A::Error> {
        let mut t = T::default();
        // Keys are read as owned strings: the reader streams, so nothing can be borrowed.
        while let Some(key) = map.next_key::<String>()? {
            t.entry(&key, &mut map)?;
        }
        t.finish();
        Ok(Typed::Ok(t))
    }
}

impl<'de, T: FromObject> Deserialize<'de> for Typed<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ObjectVisitor(std::marker::PhantomData))
    }
}

/// The keys of `stream.json` this crate reads.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StreamMeta {
    /// `version`.
    pub version: Option<Scalar>,
    /// `ovni`.
    pub ovni: Option<Typed<OvniMeta>>,
}

/// The keys under `ovni`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct OvniMeta {
    /// `ovni.lib`.
    pub lib: Option<Typed<LibMeta>>,
    /// `ovni.part`.
    pub part: Option<Scalar>,
    /// `ovni.tid`.
    pub tid: Option<Scalar>,
    /// `ovni.pid`.
    pub pid: Option<Scalar>,
    /// `ovni.loom`.
    pub loom: Option<Scalar>,
    /// `ovni.app_id`.
    pub app_id: Option<Scalar>,
    /// `ovni.rank`.
    pub rank: Option<Scalar>,
    /// `ovni.nranks`.
    pub nranks: Option<Scalar>,
    /// `ovni.finished`.
    pub finished: Option<Scalar>,
    /// `ovni.require`.
    pub require: Option<Typed<RequireMeta>>,
    /// `ovni.mark`.
    pub mark: Option<Typed<MarksMeta>>,
    /// `ovni.loom_cpus` (an array).
    pub loom_cpus: Option<Typed<CpusMeta>>,
}

impl FromObject for StreamMeta {
    fn entry<'de, A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        match key {
            "version" => self.version = Some(map.next_value()?),
            "ovni" => self.ovni = Some(map.next_value()?),
            _ => {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }
}

impl FromObject for OvniMeta {
    fn entry<'de, A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        let slot = match key {
            "lib" => {
                self.lib = Some(map.next_value()?);
                return Ok(());
            }
            "require" => {
                self.require = Some(map.next_value()?);
                return Ok(());
            }
            "mark" => {
                self.mark = Some(map.next_value()?);
                return Ok(());
            }
            "loom_cpus" => {
                self.loom_cpus = Some(map.next_value()?);
                return Ok(());
            }
            "part" => &mut self.part,
            "tid" => &mut self.tid,
            "pid" => &mut self.pid,
            "loom" => &mut self.loom,
            "app_id" => &mut self.app_id,
            "rank" => &mut self.rank,
            "nranks" => &mut self.nranks,
            "finished" => &mut self.finished,
            _ => {
                map.next_value::<IgnoredAny>()?;
                return Ok(());
            }
        };
        *slot = Some(map.next_value()?);
        Ok(())
    }
}

/// `ovni.lib`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LibMeta {
    /// `ovni.lib.version`.
    pub version: Option<Scalar>,
    /// `ovni.lib.commit`.
    pub commit: Option<Scalar>,
}

impl FromObject for LibMeta {
    fn entry<'de, A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        match key {
            "version" => self.version = Some(map.next_value()?),
            "commit" => self.commit = Some(map.next_value()?),
            _ => {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }
}

/// `ovni.require`: the string entries (others are "not required", as in ovniemu).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RequireMeta {
    /// Model name → requested version.
    pub models: BTreeMap<String, String>,
    others: usize,
}

impl FromObject for RequireMeta {
    fn entry<'de, A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        let known = EventTable::builtin().model_by_name(key).is_some();
        if !known && self.others >= MAX_OTHER_REQUIRES && !self.models.contains_key(key) {
            map.next_value::<IgnoredAny>()?;
            return Ok(());
        }
        match map.next_value::<Scalar>()? {
            Scalar::Str(v) => {
                if !known && !self.models.contains_key(key) {
                    self.others += 1;
                }
                self.models.insert(key.to_string(), v);
            }
            // A later non-string entry replaces an earlier one, as in a JSON object.
            _ => {
                self.models.remove(key);
            }
        }
        Ok(())
    }
}

/// One mark type as written, before its checks.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct MarkMeta {
    /// `title`.
    pub title: Option<Scalar>,
    /// `chan_type`.
    pub chan_type: Option<Scalar>,
    /// `labels`.
    pub labels: Option<Typed<LabelsMeta>>,
}

impl FromObject for MarkMeta {
    fn entry<'de, A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        match key {
            "title" => self.title = Some(map.next_value()?),
            "chan_type" => self.chan_type = Some(map.next_value()?),
            "labels" => self.labels = Some(map.next_value()?),
            _ => {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }
}

/// `ovni.mark.<type>.labels`: value → label, or the first problem (the rest is skipped).
///
/// Labels are stored compactly (16 bytes per label plus its text) because a hostile file can
/// hold millions of them.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LabelsMeta {
    /// All label texts, back to back.
    text: String,
    /// (value, start, end in `text`), in document order until the object ends, then sorted
    /// by value with only the last label of a repeated value kept.
    spans: Vec<(i64, u32, u32)>,
    /// The first label problem.
    pub problem: Option<MetaProblem>,
}

impl LabelsMeta {
    /// Labels by value, ascending.
    pub fn iter(&self) -> impl Iterator<Item = (i64, &str)> {
        self.spans.iter().map(|&(v, a, b)| {
            let text = self.text.get(a as usize..b as usize).unwrap_or_default();
            (v, text)
        })
    }
}

impl FromObject for LabelsMeta {
    fn entry<'de, A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        if self.problem.is_some() {
            map.next_value::<IgnoredAny>()?;
            return Ok(());
        }
        let Ok(value) = key.parse::<i64>() else {
            map.next_value::<IgnoredAny>()?;
            self.problem = Some(MetaProblem::BadValue {
                key: "ovni.mark.labels",
                expected: "keyed by integer values",
            });
            return Ok(());
        };
        match map.next_value::<Scalar>()? {
            Scalar::Str(s) => {
                // Files are at most MAX_STREAM_JSON (< 4 GiB) long, so offsets fit in u32.
                let start = u32::try_from(self.text.len()).unwrap_or(u32::MAX);
                self.text.push_str(&s);
                let end = u32::try_from(self.text.len()).unwrap_or(u32::MAX);
                self.spans.push((value, start, end));
            }
            _ => {
                self.problem = Some(MetaProblem::BadValue {
                    key: "ovni.mark.labels",
                    expected: "a string",
                });
            }
        }
        Ok(())
    }

    fn finish(&mut self) {
        // A repeated value keeps its last label, as in a JSON object.
        self.spans.reverse();
        self.spans.sort_by_key(|s| s.0);
        self.spans.dedup_by_key(|s| s.0);
    }
}

/// `ovni.mark`: mark types in `[0, 100)`, or the first problem with a key (the rest is
/// skipped).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct MarksMeta {
    /// Mark types by type, in document order of first appearance.
    pub types: Vec<(i64, Typed<MarkMeta>)>,
    /// A key that is not an integer type in `[0, 100)`.
    pub problem: Option<MetaProblem>,
}

impl FromObject for MarksMeta {
    fn entry<'de, A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        if self.problem.is_some() {
            map.next_value::<IgnoredAny>()?;
            return Ok(());
        }
        let bad = |expected| MetaProblem::BadValue {
            key: "ovni.mark",
            expected,
        };
        let ty = match key.parse::<i64>() {
            Ok(t) if (0..100).contains(&t) => t,
            Ok(_) => {
                self.problem = Some(bad("keyed by types in [0, 100)"));
                map.next_value::<IgnoredAny>()?;
                return Ok(());
            }
            Err(_) => {
                self.problem = Some(bad("keyed by integer types"));
                map.next_value::<IgnoredAny>()?;
                return Ok(());
            }
        };
        let m: Typed<MarkMeta> = map.next_value()?;
        // A repeated key replaces the earlier value in place, as in a JSON object.
        match self.types.iter_mut().find(|(t, _)| *t == ty) {
            Some(slot) => slot.1 = m,
            None => self.types.push((ty, m)),
        }
        Ok(())
    }
}

/// One entry of `ovni.loom_cpus` as written.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
struct CpuEntry {
    index: Option<i64>,
    phyid: Option<i64>,
    index_bad: bool,
    phyid_bad: bool,
}

impl FromObject for CpuEntry {
    fn entry<'de, A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        let (slot, bad) = match key {
            "index" => (&mut self.index, &mut self.index_bad),
            "phyid" => (&mut self.phyid, &mut self.phyid_bad),
            _ => {
                map.next_value::<IgnoredAny>()?;
                return Ok(());
            }
        };
        let v: Scalar = map.next_value()?;
        *slot = v.as_int();
        *bad = slot.is_none();
        Ok(())
    }
}

/// `ovni.loom_cpus`: `(index, phyid)` pairs, or the first problem (the rest is skipped).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CpusMeta {
    /// `(index, phyid)` in array order.
    pub cpus: Vec<(i64, i64)>,
    /// Entries seen (including a bad one).
    pub len: usize,
    /// The first problem with an entry.
    pub problem: Option<MetaProblem>,
}

impl CpusMeta {
    fn check(entry: Typed<CpuEntry>) -> Result<(i64, i64), MetaProblem> {
        let bad = |key, expected| MetaProblem::BadValue { key, expected };
        let Typed::Ok(e) = entry else {
            return Err(bad("ovni.loom_cpus", "an array of objects"));
        };
        let index = match (e.index, e.index_bad) {
            (Some(i), _) => i,
            (None, true) => return Err(bad("ovni.loom_cpus.index", "an integer")),
            (None, false) => return Err(MetaProblem::MissingKey("ovni.loom_cpus.index")),
        };
        let phyid = match (e.phyid, e.phyid_bad) {
            (Some(p), _) => p,
            (None, true) => return Err(bad("ovni.loom_cpus.phyid", "an integer")),
            (None, false) => return Err(MetaProblem::MissingKey("ovni.loom_cpus.phyid")),
        };
        if index < 0 {
            return Err(MetaProblem::CpuIndexNegative(index));
        }
        if phyid < 0 {
            return Err(MetaProblem::CpuPhyidNegative(phyid));
        }
        Ok((index, phyid))
    }
}

struct CpusVisitor;

impl<'de> Visitor<'de> for CpusVisitor {
    type Value = Typed<CpusMeta>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    wrong_kind_visits!(CpusMeta);
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Typed<CpusMeta>, A::Error> {
        skip_map(map)?;
        Ok(Typed::Wrong)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Typed<CpusMeta>, A::Error> {
        let mut out = CpusMeta::default();
        loop {
            if out.problem.is_some() {
                if seq.next_element::<IgnoredAny>()?.is_none() {
                    break;
                }
                out.len += 1;
                continue;
            }
            let Some(entry) = seq.next_element::<Typed<CpuEntry>>()? else {
                break;
            };
            out.len += 1;
            match CpusMeta::check(entry) {
                Ok(c) => out.cpus.push(c),
                Err(p) => out.problem = Some(p),
            }
        }
        Ok(Typed::Ok(out))
    }
}

impl<'de> Deserialize<'de> for Typed<CpusMeta> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(CpusVisitor)
    }
}

impl<'de> Deserialize<'de> for StreamMeta {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // A document that is not an object has none of the keys.
        Ok(match Typed::<StreamMeta>::deserialize(d)? {
            Typed::Ok(m) => m,
            Typed::Wrong => StreamMeta::default(),
        })
    }
}

impl StreamMeta {
    /// Reads `stream.json` text (comments allowed) from `r`, skipping every value this crate
    /// does not use.
    pub fn from_reader(r: impl BufRead) -> Result<Self, serde_json::Error> {
        let r = io::BufReader::with_capacity(8192, StripComments::new(r));
        let mut de = serde_json::Deserializer::from_reader(r);
        let m = StreamMeta::deserialize(&mut de)?;
        de.end()?;
        Ok(m)
    }

    /// Reads the keys from a JSON value already in memory.
    pub fn from_value(v: &Value) -> Self {
        StreamMeta::deserialize(v).unwrap_or_default()
    }

    /// The kept keys as a JSON value (`version` and the `ovni` keys this crate reads). Values
    /// the reader found ill-typed are left out, and `loom_cpus` ends before its first bad
    /// entry, so checks belong on the typed keys (as [`ThreadMeta::from_stream`] does).
    ///
    /// [`ThreadMeta::from_stream`]: crate::metadata::ThreadMeta::from_stream
    pub fn to_value(&self) -> Value {
        let mut top = Map::new();
        if let Some(v) = &self.version {
            top.insert("version".into(), v.to_value());
        }
        let Some(ovni) = &self.ovni else {
            return Value::Object(top);
        };
        let Typed::Ok(o) = ovni else {
            top.insert("ovni".into(), Value::Null);
            return Value::Object(top);
        };
        let mut m = Map::new();
        if let Some(lib) = &o.lib {
            let mut l = Map::new();
            if let Some(Typed::Ok(lib)) = Some(lib) {
                for (k, v) in [("version", &lib.version), ("commit", &lib.commit)] {
                    if let Some(v) = v {
                        l.insert(k.into(), v.to_value());
                    }
                }
            }
            m.insert("lib".into(), Value::Object(l));
        }
        for (k, v) in [
            ("part", &o.part),
            ("tid", &o.tid),
            ("pid", &o.pid),
            ("loom", &o.loom),
            ("app_id", &o.app_id),
        ] {
            if let Some(v) = v {
                m.insert(k.into(), v.to_value());
            }
        }
        if let Some(Typed::Ok(r)) = &o.require {
            let r: Map<String, Value> = r
                .models
                .iter()
                .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                .collect();
            m.insert("require".into(), Value::Object(r));
        }
        if let Some(Typed::Ok(marks)) = &o.mark {
            let mut mm = Map::new();
            for (ty, mark) in &marks.types {
                let Typed::Ok(mark) = mark else { continue };
                let mut x = Map::new();
                for (k, v) in [("title", &mark.title), ("chan_type", &mark.chan_type)] {
                    if let Some(v) = v {
                        x.insert(k.into(), v.to_value());
                    }
                }
                if let Some(Typed::Ok(l)) = &mark.labels {
                    let l: Map<String, Value> = l
                        .iter()
                        .map(|(v, s)| (v.to_string(), Value::String(s.to_string())))
                        .collect();
                    x.insert("labels".into(), Value::Object(l));
                }
                mm.insert(ty.to_string(), Value::Object(x));
            }
            m.insert("mark".into(), Value::Object(mm));
        }
        for (k, v) in [("rank", &o.rank), ("nranks", &o.nranks)] {
            if let Some(v) = v {
                m.insert(k.into(), v.to_value());
            }
        }
        if let Some(Typed::Ok(c)) = &o.loom_cpus {
            let c: Vec<Value> = c
                .cpus
                .iter()
                .map(|(i, p)| json!({"index": i, "phyid": p}))
                .collect();
            m.insert("loom_cpus".into(), Value::Array(c));
        }
        if let Some(v) = &o.finished {
            m.insert("finished".into(), v.to_value());
        }
        top.insert("ovni".into(), Value::Object(m));
        Value::Object(top)
    }
}

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

    #[test]
    fn unknown_values_are_skipped_and_kinds_kept() {
        let t = br#"{"version": 3, "extra": [1, [2, {"a": 3}]], "ovni": {"tid": [1],
            "loom": "n", "require": {"ovni": "1.1.0", "x": 3},
            "loom_cpus": [{"index": 0, "phyid": 1}, {"index": -1, "phyid": 2}, 7],
            "mark": {"1": {"title": "t", "chan_type": "single", "labels": {"5": "five"}}}}}"#;
        let m = StreamMeta::from_reader(&t[..]).unwrap();
        assert_eq!(m.version, Some(Scalar::Int(3)));
        let Some(Typed::Ok(o)) = &m.ovni else {
            panic!("ovni")
        };
        assert_eq!(o.tid, Some(Scalar::Array));
        let r = o.require.as_ref().and_then(Typed::ok).unwrap();
        assert_eq!(r.models.len(), 1);
        let c = o.loom_cpus.as_ref().and_then(Typed::ok).unwrap();
        assert_eq!(c.cpus, vec![(0, 1)]);
        assert_eq!(c.problem, Some(MetaProblem::CpuIndexNegative(-1)));
        assert_eq!(c.len, 3);
        let v = m.to_value();
        assert_eq!(v["ovni"]["mark"]["1"]["labels"]["5"], "five");
    }
}
