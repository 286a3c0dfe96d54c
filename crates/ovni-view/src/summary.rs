//! Time summaries: the page's JSON summary and the checkpoint table of fti-rs traces.
//!
//! A mark value's time is the time it is on top of its type's stack (or set, for single
//! types), summed over threads; a state's time is summed over threads too. Entries whose
//! total is 0 are left out. Times of a thread end at its last event.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use crate::model::{Model, Span, State};
use crate::runtime::{roles, Role};

/// The page's summary (`<script type="application/json" id="ovniview-summary">`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Summary {
    /// Thread streams.
    pub threads: u64,
    /// Events of every stream.
    pub events: u64,
    /// First raw clock.
    pub start_ns: u64,
    /// Last raw clock.
    pub end_ns: u64,
    /// Time per state name.
    pub states: BTreeMap<String, u64>,
    /// Time per mark type and value.
    pub marks: BTreeMap<i64, BTreeMap<i64, u64>>,
    /// Mark type titles.
    pub titles: BTreeMap<i64, String>,
    /// Mark labels by type and value.
    pub labels: BTreeMap<i64, BTreeMap<i64, String>>,
}

impl Summary {
    /// The summary of a model.
    pub fn of(model: &Model) -> Summary {
        let mut s = Summary {
            threads: model.threads.len() as u64,
            events: model.events,
            start_ns: model.start,
            end_ns: model.end,
            ..Summary::default()
        };
        for th in &model.threads {
            for st in State::ALL {
                let ns = th.state_ns[st as usize];
                if ns > 0 {
                    let e = s.states.entry(st.name().to_owned()).or_default();
                    *e = e.saturating_add(ns);
                }
            }
            for (&(ty, value), held) in &th.held {
                if held.total_ns > 0 {
                    let e = s.marks.entry(ty).or_default().entry(value).or_default();
                    *e = e.saturating_add(held.total_ns);
                }
            }
        }
        for (&ty, m) in &model.mark_types {
            s.titles.insert(ty, m.title.clone());
            if !m.labels.is_empty() {
                s.labels.insert(ty, m.labels.clone());
            }
        }
        s
    }

    /// The JSON form documented in `docs/ovniview.md`: types and values as decimal strings.
    pub fn to_json(&self) -> Value {
        fn keyed<T: Clone + Into<Value>>(m: &BTreeMap<i64, T>) -> Value {
            Value::Object(
                m.iter()
                    .map(|(k, v)| (k.to_string(), v.clone().into()))
                    .collect::<Map<_, _>>(),
            )
        }
        let marks: Map<String, Value> = self
            .marks
            .iter()
            .map(|(t, m)| (t.to_string(), keyed(m)))
            .collect();
        let labels: Map<String, Value> = self
            .labels
            .iter()
            .map(|(t, m)| (t.to_string(), keyed(m)))
            .collect();
        json!({
            "threads": self.threads,
            "events": self.events,
            "start_ns": self.start_ns,
            "end_ns": self.end_ns,
            "states": self.states,
            "marks": marks,
            "titles": keyed(&self.titles),
            "labels": labels,
        })
    }
}

/// The titles of the fti-rs runtime's mark types (crates/fti/src/trace.rs).
pub const FTI_LEVEL_TITLE: &str = "FTI level";
/// The runtime's phase mark type.
pub const FTI_PHASE_TITLE: &str = "FTI phase";

/// One row of the phase table: one process (a crash and its restart stay apart), one thread
/// role (the application's thread or the runtime's background thread), one level (or none:
/// work outside a checkpoint, such as a restart's verification), one phase. Whole checkpoints,
/// each counted once, are in [`crate::runtime::checkpoint_runs`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckpointRow {
    /// Process id.
    pub pid: i64,
    /// MPI rank, if the trace has it.
    pub rank: Option<i64>,
    /// The thread the phase ran on.
    pub thread: Role,
    /// Checkpoint level (1..4), if the phase ran inside a checkpoint.
    pub level: Option<i64>,
    /// The phase's label.
    pub phase: String,
    /// How many times.
    pub count: u64,
    /// Time on top of the phase stack.
    pub total_ns: u64,
}

impl CheckpointRow {
    /// `{"pid","rank","thread","level","phase","count","total_ns"}`.
    pub fn to_json(&self) -> Value {
        json!({
            "pid": self.pid,
            "rank": self.rank,
            "thread": self.thread.name(),
            "level": self.level,
            "phase": self.phase,
            "count": self.count,
            "total_ns": self.total_ns,
        })
    }
}

/// (pid, rank, thread role, level, phase value, phase label) of a phase table row.
type RowKey = (i64, Option<i64>, Role, Option<i64>, i64, String);

/// The phase table of an fti-rs runtime trace: per process, thread role, level and phase, the
/// count and time; empty when the trace has no mark type titled "FTI level" or "FTI phase".
pub fn checkpoint_table(model: &Model) -> Vec<CheckpointRow> {
    let level_ty = model.type_titled(FTI_LEVEL_TITLE);
    let phase_ty = model.type_titled(FTI_PHASE_TITLE);
    if level_ty.is_none() && phase_ty.is_none() {
        return Vec::new();
    }
    let mut rows: BTreeMap<RowKey, (u64, u64)> = BTreeMap::new();
    for (th, &role) in model.threads.iter().zip(&roles(model)) {
        let levels = by_depth(th, level_ty);
        let phases = by_depth(th, phase_ty);
        for (depth, list) in phases.iter().enumerate() {
            for p in list {
                // Time on top: the interval minus the phases nested in it.
                let nested: u64 = phases.get(depth + 1).map_or(0, |inner| {
                    let from = inner.partition_point(|q| q.t0 < p.t0);
                    inner[from..]
                        .iter()
                        .take_while(|q| q.t0 <= p.t1)
                        .filter(|q| q.t1 <= p.t1)
                        .map(|q| q.dur())
                        .sum()
                });
                // The innermost level interval around the phase.
                let level = levels.iter().rev().find_map(|list| {
                    let i = list.partition_point(|l| l.t0 <= p.t0);
                    let l = list.get(i.checked_sub(1)?)?;
                    (l.t1 >= p.t1).then_some(l.value)
                });
                let label = phase_ty
                    .and_then(|pt| model.label(pt, p.value))
                    .map_or_else(|| p.value.to_string(), str::to_owned);
                let e = rows
                    .entry((th.pid, th.rank, role, level, p.value, label))
                    .or_default();
                e.0 += 1;
                e.1 = e.1.saturating_add(p.dur().saturating_sub(nested));
            }
        }
    }
    rows.into_iter()
        .map(
            |((pid, rank, thread, level, _, phase), (count, total_ns))| CheckpointRow {
                pid,
                rank,
                thread,
                level,
                phase,
                count,
                total_ns,
            },
        )
        .collect()
}

/// A thread's intervals of mark type `ty`, by stack depth, each list sorted by start.
fn by_depth(th: &crate::model::Thread, ty: Option<i64>) -> Vec<Vec<Span>> {
    let mut out: Vec<Vec<Span>> = Vec::new();
    let Some(ty) = ty else { return out };
    for m in th.marks.iter().filter(|m| m.ty == ty) {
        let d = m.depth as usize;
        if out.len() <= d {
            out.resize_with(d + 1, Vec::new);
        }
        out[d].push(m.span);
    }
    for list in &mut out {
        list.sort_by_key(|s| s.t0);
    }
    out
}
