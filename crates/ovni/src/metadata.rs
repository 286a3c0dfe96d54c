//! `stream.json` keys and the merge rules that build looms, processes, threads, CPUs, marks
//! and required models from all streams, as ovniemu applies them (`docs/ovni-format.md`,
//! *`stream.json`*).

use std::collections::{BTreeMap, HashMap, HashSet};

use serde_json::Value;

use crate::error::{Error, MetaProblem, Result};
use crate::events::EventTable;
use crate::read::meta::{CpusMeta, MarksMeta, Scalar, StreamMeta, Typed};
use crate::read::Trace;

/// A mark type merged over all threads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MarkType {
    /// Title.
    pub title: String,
    /// `"single"` or `"stack"`.
    pub chan_type: String,
    /// Labels by value.
    pub labels: BTreeMap<i64, String>,
}

/// Metadata of one thread stream.
#[derive(Debug, Clone, PartialEq)]
pub struct ThreadMeta {
    /// Stream relpath.
    pub stream: String,
    /// Thread id.
    pub tid: i64,
    /// Process id.
    pub pid: i64,
    /// Loom name.
    pub loom: String,
    /// Application id.
    pub app_id: Option<i64>,
    /// `(rank, nranks)`.
    pub rank: Option<(i64, i64)>,
    /// `(index, phyid)` of the loom CPUs this stream lists.
    pub cpus: Option<Vec<(i64, i64)>>,
    /// Required models and versions (`None` if `ovni.require` is absent: ovniemu only
    /// notices that when it probes the models, after building the system).
    pub require: Option<BTreeMap<String, String>>,
    /// Whether `ovni.finished` is 1 (always true from [`ThreadMeta::from_json`]).
    pub finished: bool,
    /// Mark types defined by this thread.
    pub marks: BTreeMap<i64, MarkType>,
    /// `ovni.lib.version`.
    pub lib_version: String,
    /// `ovni.lib.commit`.
    pub lib_commit: String,
}

/// A CPU of a loom.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cpu {
    /// Logical index in the loom.
    pub index: i64,
    /// Physical id.
    pub phyid: i64,
}

/// A process: the streams with the same pid in a loom.
#[derive(Debug, Clone, PartialEq)]
pub struct Process {
    /// Process id.
    pub pid: i64,
    /// Application id.
    pub app_id: Option<i64>,
    /// `(rank, nranks)`.
    pub rank: Option<(i64, i64)>,
    /// Thread ids, sorted.
    pub threads: Vec<i64>,
}

/// A loom: the streams with the same loom name.
#[derive(Debug, Clone, PartialEq)]
pub struct Loom {
    /// Name.
    pub name: String,
    /// Physical CPUs sorted by phyid.
    pub cpus: Vec<Cpu>,
    /// Processes sorted by pid.
    pub processes: Vec<Process>,
}

/// The whole system described by a trace's metadata.
#[derive(Debug, Clone, PartialEq)]
pub struct System {
    /// Looms sorted by name.
    pub looms: Vec<Loom>,
    /// All thread streams, in relpath order.
    pub threads: Vec<ThreadMeta>,
    /// Mark types merged over all threads.
    pub marks: BTreeMap<i64, MarkType>,
    /// Models enabled (required by any thread) with the highest version requested.
    pub require: BTreeMap<String, String>,
}

fn bad(stream: &str, key: &'static str, expected: &'static str) -> Error {
    Error::meta(stream, MetaProblem::BadValue { key, expected })
}

fn get<'a, T>(v: &'a Option<T>, stream: &str, key: &'static str) -> Result<&'a T> {
    v.as_ref()
        .ok_or_else(|| Error::meta(stream, MetaProblem::MissingKey(key)))
}

fn int(v: &Scalar, stream: &str, key: &'static str) -> Result<i64> {
    v.as_int().ok_or_else(|| bad(stream, key, "an integer"))
}

fn string(v: &Scalar, stream: &str, key: &'static str) -> Result<String> {
    v.as_str()
        .map(str::to_string)
        .ok_or_else(|| bad(stream, key, "a string"))
}

fn object<'a, T>(v: &'a Typed<T>, stream: &str, key: &'static str) -> Result<&'a T> {
    v.ok().ok_or_else(|| bad(stream, key, "an object"))
}

/// Parses `x.y.z` into numbers (anything after `-` in the patch is ignored).
pub fn parse_version(s: &str) -> Option<(u64, u64, u64)> {
    let mut it = s.splitn(3, '.');
    let major = it.next()?.parse().ok()?;
    let minor = it.next()?.parse().ok()?;
    let patch = it.next()?;
    let patch = patch.split(['-', '.']).next()?.parse().ok()?;
    Some((major, minor, patch))
}

/// True if a model serving `have` can emulate a trace requiring `want`: same major,
/// requested minor not newer (patch ignored).
pub fn version_compatible(want: &str, have: &str) -> Option<bool> {
    let w = parse_version(want)?;
    let h = parse_version(have)?;
    Some(w.0 == h.0 && w.1 <= h.1)
}

impl ThreadMeta {
    /// Reads the thread keys of one stream and checks them (mandatory keys, types,
    /// `finished == 1`, `part == "thread"`), in ovniemu's order: `finished` is checked when the
    /// thread is created, before the CPUs, marks and library keys; a missing `ovni.require`
    /// is left to [`required_models`], as ovniemu's model probe finds it.
    pub fn from_json(stream: &str, meta: &Value) -> Result<Self> {
        Self::read(stream, &StreamMeta::from_value(meta), true)
    }

    /// As [`ThreadMeta::from_json`], on the keys a [`crate::Stream`] read.
    pub fn from_stream(stream: &str, meta: &StreamMeta) -> Result<Self> {
        Self::read(stream, meta, true)
    }

    /// As [`ThreadMeta::from_stream`], but a stream that is not finished is read on (with
    /// `finished` false), so its other problems can be listed too.
    pub fn from_stream_unfinished(stream: &str, meta: &StreamMeta) -> Result<Self> {
        Self::read(stream, meta, false)
    }

    fn read(stream: &str, meta: &StreamMeta, strict: bool) -> Result<Self> {
        let ovni = object(get(&meta.ovni, stream, "ovni")?, stream, "ovni")?;
        let part = string(get(&ovni.part, stream, "ovni.part")?, stream, "ovni.part")?;
        if part != "thread" {
            return Err(Error::meta(stream, MetaProblem::UnknownPart(part)));
        }
        let tid = int(get(&ovni.tid, stream, "ovni.tid")?, stream, "ovni.tid")?;
        let pid = int(get(&ovni.pid, stream, "ovni.pid")?, stream, "ovni.pid")?;
        if tid == 0 {
            return Err(bad(stream, "ovni.tid", "non-zero"));
        }
        if pid == 0 {
            return Err(bad(stream, "ovni.pid", "non-zero"));
        }
        let loom = string(get(&ovni.loom, stream, "ovni.loom")?, stream, "ovni.loom")?;
        if loom.contains('/') {
            return Err(Error::meta(stream, MetaProblem::LoomHasSlash));
        }
        let app_id = match &ovni.app_id {
            None => None,
            Some(v) => {
                let a = int(v, stream, "ovni.app_id")?;
                if a <= 0 {
                    return Err(bad(stream, "ovni.app_id", "greater than 0"));
                }
                Some(a)
            }
        };
        let rank = match &ovni.rank {
            None => None,
            Some(r) => {
                let rank = int(r, stream, "ovni.rank")?;
                let nranks = int(
                    get(&ovni.nranks, stream, "ovni.nranks")?,
                    stream,
                    "ovni.nranks",
                )?;
                if rank < 0 || rank >= nranks {
                    return Err(Error::meta(
                        stream,
                        MetaProblem::RankOutOfRange { rank, nranks },
                    ));
                }
                Some((rank, nranks))
            }
        };
        let finished = ovni.finished.as_ref().and_then(Scalar::as_f64) == Some(1.0);
        if strict && !finished {
            return Err(Error::meta(stream, MetaProblem::NotFinished));
        }
        let cpus = match &ovni.loom_cpus {
            None => None,
            Some(v) => Some(parse_cpus(v, stream)?),
        };
        let marks = match &ovni.mark {
            None => BTreeMap::new(),
            Some(v) => parse_marks(v, stream)?,
        };
        let lib = object(get(&ovni.lib, stream, "ovni.lib")?, stream, "ovni.lib")?;
        let lib_version = string(
            get(&lib.version, stream, "ovni.lib.version")?,
            stream,
            "ovni.lib.version",
        )?;
        let lib_commit = string(
            get(&lib.commit, stream, "ovni.lib.commit")?,
            stream,
            "ovni.lib.commit",
        )?;
        // ovniemu reads each model's entry as a string and treats anything else as "not
        // required": only string entries are kept.
        let require = match &ovni.require {
            None => None,
            Some(r) => Some(object(r, stream, "ovni.require")?.models.clone()),
        };
        Ok(Self {
            stream: stream.to_string(),
            tid,
            pid,
            loom,
            app_id,
            rank,
            cpus,
            require,
            finished,
            marks,
            lib_version,
            lib_commit,
        })
    }
}

fn parse_cpus(v: &Typed<CpusMeta>, stream: &str) -> Result<Vec<(i64, i64)>> {
    let c = v
        .ok()
        .ok_or_else(|| bad(stream, "ovni.loom_cpus", "an array"))?;
    if c.len == 0 {
        return Err(Error::meta(stream, MetaProblem::EmptyCpus));
    }
    if let Some(p) = &c.problem {
        return Err(Error::meta(stream, p.clone()));
    }
    Ok(c.cpus.clone())
}

fn parse_marks(v: &Typed<MarksMeta>, stream: &str) -> Result<BTreeMap<i64, MarkType>> {
    let marks = object(v, stream, "ovni.mark")?;
    let mut out = BTreeMap::new();
    for (ty, m) in &marks.types {
        let m = m
            .ok()
            .ok_or_else(|| bad(stream, "ovni.mark", "an object of objects"))?;
        let title = string(
            get(&m.title, stream, "ovni.mark.title")?,
            stream,
            "ovni.mark.title",
        )?;
        let chan_type = string(
            get(&m.chan_type, stream, "ovni.mark.chan_type")?,
            stream,
            "ovni.mark.chan_type",
        )?;
        if chan_type != "single" && chan_type != "stack" {
            return Err(bad(
                stream,
                "ovni.mark.chan_type",
                "\"single\" or \"stack\"",
            ));
        }
        let mut labels = BTreeMap::new();
        if let Some(l) = &m.labels {
            let l = object(l, stream, "ovni.mark.labels")?;
            if let Some(p) = &l.problem {
                return Err(Error::meta(stream, p.clone()));
            }
            labels.extend(l.iter().map(|(v, s)| (v, s.to_string())));
        }
        out.insert(
            *ty,
            MarkType {
                title,
                chan_type,
                labels,
            },
        );
    }
    // A bad key is reported after the types before it, as a walk in document order would.
    if let Some(p) = &marks.problem {
        return Err(Error::meta(stream, p.clone()));
    }
    Ok(out)
}

fn merge_marks(into: &mut BTreeMap<i64, MarkType>, from: &ThreadMeta) -> Result<()> {
    for (&ty, m) in &from.marks {
        let Some(have) = into.get_mut(&ty) else {
            into.insert(ty, m.clone());
            continue;
        };
        if have.title != m.title || have.chan_type != m.chan_type {
            return Err(Error::meta(&from.stream, MetaProblem::MarkTypeMismatch(ty)));
        }
        for (&value, label) in &m.labels {
            match have.labels.get(&value) {
                Some(l) if l != label => {
                    return Err(Error::meta(
                        &from.stream,
                        MetaProblem::MarkLabelMismatch { mark: ty, value },
                    ))
                }
                Some(_) => {}
                None => {
                    have.labels.insert(value, label.clone());
                }
            }
        }
    }
    Ok(())
}

/// Refuses two values of one mark type that are equal modulo 2³², over `threads` in order
/// (values in increasing order within a thread): the emulator writes them to the `.pcf` as
/// 32-bit values, where their labels would collide.
pub(crate) fn check_mark_values<'a>(
    threads: impl IntoIterator<Item = &'a ThreadMeta>,
) -> Result<()> {
    let mut seen: HashMap<(i64, i32), i64> = HashMap::new();
    for t in threads {
        for (&mark, m) in &t.marks {
            for &value in m.labels.keys() {
                match seen.insert((mark, value as i32), value) {
                    Some(first) if first != value => {
                        let problem = MetaProblem::MarkValueCollision {
                            mark,
                            first,
                            second: value,
                        };
                        return Err(Error::meta(&t.stream, problem));
                    }
                    _ => {}
                }
            }
        }
    }
    Ok(())
}

/// A loom being merged.
#[derive(Default)]
struct LoomAcc {
    cpus: Vec<Cpu>,
    /// phyid → index of the CPUs in `cpus`.
    by_phyid: HashMap<i64, i64>,
    procs: BTreeMap<i64, Process>,
    /// (pid, tid) of the threads seen.
    tids: HashSet<(i64, i64)>,
}

impl System {
    /// Builds the system from every stream of `trace`, checking each stream's keys and the
    /// merge rules; required model versions are checked against `table`.
    pub fn load(trace: &Trace, table: &EventTable) -> Result<Self> {
        let threads = trace
            .streams()
            .iter()
            .map(|s| ThreadMeta::from_stream(&s.name(), s.metadata()))
            .collect::<Result<Vec<_>>>()?;
        Self::from_threads(threads, table)
    }

    /// Merges already parsed thread metadata and checks the required model versions.
    pub fn from_threads(threads: Vec<ThreadMeta>, table: &EventTable) -> Result<Self> {
        let mut sys = Self::merge(threads)?;
        sys.require = required_models(&sys.threads, table)?;
        Ok(sys)
    }

    /// Merges already parsed thread metadata (looms, CPUs, processes, marks) without looking
    /// at `require`, which ovniemu checks later ([`required_models`]); `require` is empty.
    pub fn merge(threads: Vec<ThreadMeta>) -> Result<Self> {
        // Every step is a hash or tree lookup, so merging is O(n log n) in the number of
        // CPUs, threads and processes (a loom may list hundreds of thousands of CPUs).
        let mut looms: BTreeMap<String, LoomAcc> = BTreeMap::new();
        let mut marks = BTreeMap::new();
        for t in &threads {
            let LoomAcc {
                cpus,
                by_phyid,
                procs,
                tids,
            } = looms.entry(t.loom.clone()).or_default();
            for &(index, phyid) in t.cpus.iter().flatten() {
                match by_phyid.get(&phyid) {
                    Some(&known) if known != index => {
                        return Err(Error::meta(
                            &t.stream,
                            MetaProblem::CpuIndexMismatch {
                                phyid,
                                index: known,
                                other: index,
                            },
                        ))
                    }
                    Some(_) => {}
                    None => {
                        by_phyid.insert(phyid, index);
                        cpus.push(Cpu { index, phyid });
                    }
                }
            }
            let p = procs.entry(t.pid).or_insert_with(|| Process {
                pid: t.pid,
                app_id: t.app_id,
                rank: t.rank,
                threads: Vec::new(),
            });
            match (p.app_id, t.app_id) {
                (Some(a), Some(b)) if a != b => {
                    return Err(Error::meta(
                        &t.stream,
                        MetaProblem::AppIdMismatch { prev: a, other: b },
                    ))
                }
                (None, Some(b)) => p.app_id = Some(b),
                _ => {}
            }
            match (p.rank, t.rank) {
                (Some(a), Some(b)) if a != b => {
                    return Err(Error::meta(
                        &t.stream,
                        MetaProblem::RankMismatch { prev: a, other: b },
                    ))
                }
                (None, Some(b)) => p.rank = Some(b),
                _ => {}
            }
            if !tids.insert((t.pid, t.tid)) {
                return Err(Error::meta(&t.stream, MetaProblem::DuplicateThread(t.tid)));
            }
            p.threads.push(t.tid);
            merge_marks(&mut marks, t)?;
        }
        let looms = looms
            .into_iter()
            .map(|(name, acc)| {
                let LoomAcc {
                    mut cpus, procs, ..
                } = acc;
                finish_loom(name, &mut cpus, procs)
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Self {
            looms,
            threads,
            marks,
            require: BTreeMap::new(),
        })
    }
}

/// The models required by any thread, with the highest version requested, after checking
/// each request against the model of `table` that serves it (same major, minor not newer),
/// model by model as ovniemu's probe does. Entries for models `table` does not know are kept
/// unchecked: ovniemu only looks at the names of the models it has.
pub fn required_models(
    threads: &[ThreadMeta],
    table: &EventTable,
) -> Result<BTreeMap<String, String>> {
    let mut models: Vec<_> = table.models().iter().collect();
    models.sort_by_key(|m| m.id);
    for m in models {
        for t in threads {
            let Some(require) = &t.require else {
                return Err(Error::meta(
                    &t.stream,
                    MetaProblem::MissingKey("ovni.require"),
                ));
            };
            let Some(want) = require.get(&m.name) else {
                continue;
            };
            if parse_version(want).is_none() {
                return Err(Error::meta(
                    &t.stream,
                    MetaProblem::BadVersionString(want.clone()),
                ));
            }
            if version_compatible(want, &m.version) != Some(true) {
                return Err(Error::meta(
                    &t.stream,
                    MetaProblem::UnsupportedModelVersion {
                        model: m.name.clone(),
                        want: want.clone(),
                        have: m.version.clone(),
                    },
                ));
            }
        }
    }
    let mut require: BTreeMap<String, String> = BTreeMap::new();
    for t in threads {
        for (model, want) in t.require.iter().flatten() {
            let e = require.entry(model.clone()).or_insert_with(|| want.clone());
            if parse_version(want) > parse_version(e) {
                *e = want.clone();
            }
        }
    }
    Ok(require)
}

fn finish_loom(name: String, cpus: &mut Vec<Cpu>, procs: BTreeMap<i64, Process>) -> Result<Loom> {
    if cpus.is_empty() {
        return Err(Error::meta(&name, MetaProblem::LoomWithoutCpus));
    }
    let n = cpus.len();
    let mut taken = vec![false; n];
    for c in cpus.iter() {
        let slot = usize::try_from(c.index)
            .ok()
            .and_then(|i| taken.get_mut(i))
            .ok_or_else(|| {
                Error::meta(
                    &name,
                    MetaProblem::CpuIndexOutOfBounds {
                        index: c.index,
                        ncpus: n,
                    },
                )
            })?;
        if *slot {
            return Err(Error::meta(&name, MetaProblem::CpuIndexTaken(c.index)));
        }
        *slot = true;
    }
    cpus.sort_by_key(|c| c.phyid);
    let mut processes: Vec<Process> = procs.into_values().collect();
    if processes.iter().any(|p| p.rank.is_some()) {
        if let Some(p) = processes.iter().find(|p| p.rank.is_none()) {
            return Err(Error::meta(&name, MetaProblem::ProcessWithoutRank(p.pid)));
        }
    }
    for p in &mut processes {
        p.threads.sort_unstable();
    }
    Ok(Loom {
        name,
        cpus: std::mem::take(cpus),
        processes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn thread(tid: i64, cpus: Value) -> Value {
        json!({"version": 3, "ovni": {"lib": {"version": "1.14.0", "commit": "x"},
            "part": "thread", "tid": tid, "pid": 1, "loom": "n0", "app_id": 1,
            "require": {"ovni": "1.1.0"}, "loom_cpus": cpus, "finished": 1}})
    }

    fn load(metas: &[Value]) -> Result<System> {
        let t = metas
            .iter()
            .enumerate()
            .map(|(i, m)| ThreadMeta::from_json(&format!("s{i}"), m))
            .collect::<Result<Vec<_>>>()?;
        System::from_threads(t, EventTable::builtin())
    }

    #[test]
    fn cpus_merge_by_phyid() {
        let a = thread(1, json!([{"index": 0, "phyid": 4}]));
        let b = thread(
            2,
            json!([{"index": 1, "phyid": 6}, {"index": 0, "phyid": 4}]),
        );
        let s = load(&[a.clone(), b]).unwrap();
        assert_eq!(s.looms[0].cpus.len(), 2);
        assert_eq!(s.looms[0].processes[0].threads, vec![1, 2]);
        let c = thread(3, json!([{"index": 1, "phyid": 4}]));
        assert!(matches!(
            load(&[a.clone(), c]),
            Err(Error::Metadata {
                problem: MetaProblem::CpuIndexMismatch { .. },
                ..
            })
        ));
        let d = thread(3, json!([{"index": 5, "phyid": 7}]));
        assert!(matches!(
            load(&[a.clone(), d]),
            Err(Error::Metadata {
                problem: MetaProblem::CpuIndexOutOfBounds { .. },
                ..
            })
        ));
        assert!(matches!(
            load(&[a.clone(), a]),
            Err(Error::Metadata {
                problem: MetaProblem::DuplicateThread(1),
                ..
            })
        ));
    }

    #[test]
    fn thread_keys_are_checked() {
        let mut m = thread(1, json!([{"index": 0, "phyid": 0}]));
        m["ovni"]["finished"] = json!(0);
        assert!(matches!(
            load(&[m.clone()]),
            Err(Error::Metadata {
                problem: MetaProblem::NotFinished,
                ..
            })
        ));
        m["ovni"]["finished"] = json!(1);
        m["ovni"]["require"]["ovni"] = json!("2.0.0");
        assert!(matches!(
            load(&[m.clone()]),
            Err(Error::Metadata {
                problem: MetaProblem::UnsupportedModelVersion { .. },
                ..
            })
        ));
        let mut m = thread(1, json!([{"index": 0, "phyid": 0}]));
        m["ovni"].as_object_mut().unwrap().remove("loom_cpus");
        assert!(matches!(
            load(&[m]),
            Err(Error::Metadata {
                problem: MetaProblem::LoomWithoutCpus,
                ..
            })
        ));
    }

    #[test]
    fn versions() {
        assert_eq!(version_compatible("1.0.9", "1.1.0"), Some(true));
        assert_eq!(version_compatible("1.2.0", "1.1.0"), Some(false));
        assert_eq!(version_compatible("2.0.0", "1.1.0"), Some(false));
        assert_eq!(version_compatible("1.x", "1.1.0"), None);
    }
}
