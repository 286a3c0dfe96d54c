//! `ovni.loom_cpus`: the `(index, phyid)` table of the loom, an array (not an object), so it
//! has its own visitor; each entry is checked as it is read and the first problem is kept.

use std::fmt;

use serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::json::{skip_map, wrong_kind_visits, FromObject, Scalar, Typed};
use super::problem::MetaProblem;

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
