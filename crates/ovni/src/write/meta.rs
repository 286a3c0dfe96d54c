//! The thread's `stream.json`, built in libovni's key order.

use std::fs;
use std::path::Path;

use serde_json::{Map, Number, Value};

use crate::error::{Error, Result, UsageError};
use crate::write::{LIB_COMMIT, LIB_VERSION};

#[derive(Debug)]
pub(super) struct Meta {
    root: Map<String, Value>,
    pub(super) cpus: Vec<(i32, i32)>,
    pub(super) rank: Option<(i32, i32)>,
}

/// Turns integral floating-point numbers into integers, recursively: libovni stores every
/// number as a double and prints integral ones without a decimal point.
pub fn normalize_numbers(v: Value) -> Value {
    match v {
        Value::Number(n) if n.is_f64() => match n.as_f64() {
            Some(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => {
                Value::Number(Number::from(f as i64))
            }
            _ => Value::Number(n),
        },
        Value::Array(a) => Value::Array(a.into_iter().map(normalize_numbers).collect()),
        Value::Object(o) => Value::Object(
            o.into_iter()
                .map(|(k, v)| (k, normalize_numbers(v)))
                .collect(),
        ),
        other => other,
    }
}

fn obj() -> Value {
    Value::Object(Map::new())
}

impl Meta {
    pub(super) fn new(tid: i32, pid: i32, loom: &str, app_id: i32) -> Self {
        let mut lib = Map::new();
        lib.insert("version".into(), LIB_VERSION.into());
        lib.insert("commit".into(), LIB_COMMIT.into());
        let mut ovni = Map::new();
        ovni.insert("lib".into(), Value::Object(lib));
        ovni.insert("part".into(), "thread".into());
        ovni.insert("tid".into(), tid.into());
        ovni.insert("pid".into(), pid.into());
        ovni.insert("loom".into(), loom.into());
        ovni.insert("app_id".into(), app_id.into());
        let mut root = Map::new();
        root.insert("version".into(), 3.into());
        root.insert("ovni".into(), Value::Object(ovni));
        Self {
            root,
            cpus: Vec::new(),
            rank: None,
        }
    }

    fn slot(&mut self, key: &str) -> Result<&mut Value> {
        let bad = || Error::from(UsageError::BadAttrPath(key.to_string()));
        let mut parts = key.split('.');
        let first = parts.next().filter(|p| !p.is_empty()).ok_or_else(bad)?;
        let mut cur = self.root.entry(first.to_string()).or_insert(Value::Null);
        for p in parts {
            if p.is_empty() {
                return Err(bad());
            }
            if cur.is_null() {
                *cur = obj();
            }
            let Value::Object(m) = cur else {
                return Err(bad());
            };
            cur = m.entry(p.to_string()).or_insert(Value::Null);
        }
        Ok(cur)
    }

    pub(super) fn set(&mut self, key: &str, value: Value) -> Result<()> {
        *self.slot(key)? = value;
        Ok(())
    }

    pub(super) fn get(&self, key: &str) -> Option<&Value> {
        let mut parts = key.split('.');
        let mut cur = self.root.get(parts.next()?)?;
        for p in parts {
            cur = cur.as_object()?.get(p)?;
        }
        Some(cur)
    }

    pub(super) fn require(&mut self, model: &str, version: &str) {
        // Both path components are validated by the caller; `ovni.require` is an object.
        if let Ok(slot) = self.slot(&format!("ovni.require.{model}")) {
            *slot = version.into();
        }
    }

    pub(super) fn mark_type(&mut self, ty: i32, stack: bool, title: &str) -> Result<()> {
        if !(0..100).contains(&ty) {
            return Err(UsageError::MarkTypeRange(ty).into());
        }
        if title.is_empty() {
            return Err(UsageError::EmptyMarkText.into());
        }
        // Like libovni, a type is defined when the metadata has it, however it got there.
        let base = format!("ovni.mark.{ty}");
        if self.get(&base).is_some() {
            return Err(UsageError::MarkTypeDefined(ty).into());
        }
        self.set(&format!("{base}.title"), title.into())?;
        let chan = if stack { "stack" } else { "single" };
        self.set(&format!("{base}.chan_type"), chan.into())
    }

    pub(super) fn mark_label(&mut self, ty: i32, value: i64, label: &str) -> Result<()> {
        if value <= 0 {
            return Err(UsageError::MarkValue(value).into());
        }
        if label.is_empty() {
            return Err(UsageError::EmptyMarkText.into());
        }
        if self.get(&format!("ovni.mark.{ty}")).is_none() {
            return Err(UsageError::MarkTypeUndefined(ty).into());
        }
        let key = format!("ovni.mark.{ty}.labels.{value}");
        if self.get(&key).is_some() {
            return Err(UsageError::MarkLabelDefined { mark: ty, value }.into());
        }
        self.set(&key, label.into())
    }

    /// Writes the JSON (4-space indent, no trailing newline) through a temporary file and a
    /// rename, so a crash never leaves a half-written `stream.json`.
    pub(super) fn write(&mut self, path: &Path, finished: bool) -> Result<()> {
        if finished {
            if let Some((rank, nranks)) = self.rank {
                self.set("ovni.rank", rank.into())?;
                self.set("ovni.nranks", nranks.into())?;
            }
            if !self.cpus.is_empty() {
                let cpus = self
                    .cpus
                    .iter()
                    .map(|&(index, phyid)| {
                        let mut m = Map::new();
                        m.insert("index".into(), index.into());
                        m.insert("phyid".into(), phyid.into());
                        Value::Object(m)
                    })
                    .collect();
                self.set("ovni.loom_cpus", Value::Array(cpus))?;
            }
            self.set("ovni.finished", 1.into())?;
        }
        let mut text = Vec::new();
        let fmt = serde_json::ser::PrettyFormatter::with_indent(b"    ");
        let mut ser = serde_json::Serializer::with_formatter(&mut text, fmt);
        serde::Serialize::serialize(&self.root, &mut ser).map_err(|source| Error::Json {
            path: path.to_path_buf(),
            source,
        })?;
        let tmp = path.with_extension("json.tmp");
        fs::write(&tmp, &text).map_err(|e| Error::io(&tmp, e))?;
        fs::rename(&tmp, path).map_err(|e| Error::io(path, e))
    }
}
