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
//!
//! The reader is split by job: [`Scalar`] and [`Typed`] and the object visitor in `json`, the
//! top-level, `ovni`, `ovni.lib` and `ovni.require` keys and the conversions of
//! [`StreamMeta`] here, the marks in `marks`, the CPU table in `cpus`, the comment filter in
//! `comments`, and the problems found ([`MetaProblem`](crate::MetaProblem)) in `problem`.

mod comments;
mod cpus;
mod json;
mod marks;
mod nosv;
pub(crate) mod problem;

use std::collections::BTreeMap;
use std::io::{self, BufRead};

use serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess};
use serde_json::{json, Map, Value};

use crate::events::EventTable;
use json::FromObject;

pub use comments::StripComments;
pub use cpus::CpusMeta;
pub use json::{Scalar, Typed};
pub use marks::{LabelsMeta, MarkMeta, MarksMeta};
pub use nosv::{HwcMeta, NosvMeta, MAX_HWC_KEPT};

/// Largest `stream.json` read (256 MiB); larger files are refused with
/// [`MetaProblem::FileTooLarge`](crate::MetaProblem::FileTooLarge). libovni writes a few KiB
/// per thread, plus about 40 bytes per CPU of the loom.
pub const MAX_STREAM_JSON: u64 = 256 << 20;

/// `ovni.require` entries kept for model names the event table does not know.
pub const MAX_OTHER_REQUIRES: usize = 64;

/// The keys of `stream.json` this crate reads.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StreamMeta {
    /// `version`.
    pub version: Option<Scalar>,
    /// `ovni`.
    pub ovni: Option<Typed<OvniMeta>>,
    /// `nosv`.
    pub nosv: Option<Typed<NosvMeta>>,
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
            "nosv" => self.nosv = Some(map.next_value()?),
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
    /// `ovni.mark`, when it and `ovni` are well typed.
    pub fn marks(&self) -> Option<&MarksMeta> {
        self.ovni
            .as_ref()
            .and_then(Typed::ok)
            .and_then(|o| o.mark.as_ref())
            .and_then(Typed::ok)
    }

    /// `nosv.hwc`, when it and `nosv` are objects.
    pub fn hwc(&self) -> Option<&HwcMeta> {
        self.nosv
            .as_ref()
            .and_then(Typed::ok)
            .and_then(|n| n.hwc.as_ref())
            .and_then(Typed::ok)
    }

    /// `nosv.can_breakdown`: `None` when absent, `Some(None)` when not a boolean.
    pub fn nosv_can_breakdown(&self) -> Option<Option<bool>> {
        let nosv = self.nosv.as_ref().and_then(Typed::ok)?;
        nosv.can_breakdown.as_ref().map(|v| match v {
            Scalar::Bool(b) => Some(*b),
            _ => None,
        })
    }

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

#[cfg(test)]
mod tests {
    use super::problem::MetaProblem;
    use super::*;

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
