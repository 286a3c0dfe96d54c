//! The fti-rs runtime's checkpoints in a trace, each counted once: the runtime marks every
//! checkpoint with its level ("FTI level") and id ("FTI checkpoint") on the application's
//! thread and, for an asynchronous checkpoint, on its background thread too. The time the
//! application was stopped (its calls: staging, or the whole synchronous checkpoint, and the
//! wait for the background's previous work) is kept apart from the background's work.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use crate::model::{Model, Span, Thread};
use crate::summary::{FTI_LEVEL_TITLE, FTI_PHASE_TITLE};

/// The title of the runtime's checkpoint-id mark type.
pub const FTI_CHECKPOINT_TITLE: &str = "FTI checkpoint";
/// The label of the phase a call spends waiting for the background's previous work.
const WAIT_PHASE: i64 = 8;

/// Which of a process's threads a stream is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Role {
    /// The thread that calls the runtime: the process's first stream to start.
    Application,
    /// Any later thread of the process: the runtime's background thread.
    Background,
}

impl Role {
    /// `application` or `background`.
    pub fn name(self) -> &'static str {
        match self {
            Role::Application => "application",
            Role::Background => "background",
        }
    }
}

/// Each thread's role, by index in `model.threads`: per process and rank (ranks may be threads
/// of one process), the thread whose first event comes first is the application's (the
/// runtime starts its background thread later, from the application's first call, and gives
/// its stream the rank).
pub fn roles(model: &Model) -> Vec<Role> {
    let mut first: BTreeMap<(i64, Option<i64>), (u64, usize)> = BTreeMap::new();
    for (i, th) in model.threads.iter().enumerate() {
        let key = (th.first.unwrap_or(u64::MAX), i);
        let e = first.entry((th.pid, th.rank)).or_insert(key);
        *e = (*e).min(key);
    }
    model
        .threads
        .iter()
        .enumerate()
        .map(|(i, th)| {
            if first
                .get(&(th.pid, th.rank))
                .is_some_and(|&(_, app)| app == i)
            {
                Role::Application
            } else {
                Role::Background
            }
        })
        .collect()
}

/// One checkpoint of one process and rank, counted once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckpointRun {
    /// Process id.
    pub pid: i64,
    /// MPI rank, if the trace has it.
    pub rank: Option<i64>,
    /// Level (1..4), when a level mark encloses it.
    pub level: Option<i64>,
    /// Checkpoint id.
    pub id: i64,
    /// Raw clock of its start (its first mark on any thread).
    pub start: u64,
    /// Time the application's thread spent in it, with the wait for the previous checkpoint's
    /// background work that the same call began with.
    pub stopped_ns: u64,
    /// Time the background thread worked on it.
    pub background_ns: u64,
}

impl CheckpointRun {
    /// `{"pid","rank","level","id","start","stopped_ns","background_ns"}`.
    pub fn to_json(&self) -> Value {
        json!({
            "pid": self.pid,
            "rank": self.rank,
            "level": self.level,
            "id": self.id,
            "start": self.start,
            "stopped_ns": self.stopped_ns,
            "background_ns": self.background_ns,
        })
    }
}

/// Every checkpoint of the trace, in process and start order; empty when the trace has no
/// "FTI checkpoint" mark type.
pub fn checkpoint_runs(model: &Model) -> Vec<CheckpointRun> {
    let Some(ckpt_ty) = model.type_titled(FTI_CHECKPOINT_TITLE) else {
        return Vec::new();
    };
    let level_ty = model.type_titled(FTI_LEVEL_TITLE);
    let phase_ty = model.type_titled(FTI_PHASE_TITLE);
    let roles = roles(model);
    let mut runs: BTreeMap<(i64, Option<i64>, Option<i64>, i64), CheckpointRun> = BTreeMap::new();
    for (th, &role) in model.threads.iter().zip(&roles) {
        let levels = spans(th, level_ty);
        let ckpts = spans(th, Some(ckpt_ty));
        let waits: Vec<Span> = spans(th, phase_ty)
            .into_iter()
            .filter(|p| p.value == WAIT_PHASE)
            .collect();
        for c in &ckpts {
            let level = levels
                .iter()
                .filter(|l| l.t0 <= c.t0 && c.t1 <= l.t1)
                .min_by_key(|l| l.dur())
                .map(|l| l.value);
            let run = runs
                .entry((th.pid, th.rank, level, c.value))
                .or_insert_with(|| CheckpointRun {
                    pid: th.pid,
                    rank: th.rank,
                    level,
                    id: c.value,
                    start: c.t0,
                    stopped_ns: 0,
                    background_ns: 0,
                });
            run.start = run.start.min(c.t0);
            match role {
                Role::Application => {
                    // The call's wait comes just before its checkpoint mark: after the end of
                    // the previous checkpoint on this thread.
                    let previous_end = ckpts
                        .iter()
                        .filter(|p| p.t1 <= c.t0)
                        .map(|p| p.t1)
                        .max()
                        .unwrap_or(0);
                    let waited: u64 = waits
                        .iter()
                        .filter(|w| w.t0 >= previous_end && w.t1 <= c.t0)
                        .map(Span::dur)
                        .sum();
                    run.stopped_ns = run
                        .stopped_ns
                        .saturating_add(c.dur())
                        .saturating_add(waited);
                }
                Role::Background => run.background_ns = run.background_ns.saturating_add(c.dur()),
            }
        }
    }
    let mut out: Vec<CheckpointRun> = runs.into_values().collect();
    out.sort_by_key(|r| (r.pid, r.rank, r.start, r.id));
    out
}

/// Checkpoints of one process, rank and level, each counted once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LevelRow {
    /// Process id.
    pub pid: i64,
    /// MPI rank, if the trace has it.
    pub rank: Option<i64>,
    /// Level (1..4), if known.
    pub level: Option<i64>,
    /// Distinct checkpoints.
    pub checkpoints: u64,
    /// Time the application was stopped by them.
    pub stopped_ns: u64,
    /// The background thread's time on them.
    pub background_ns: u64,
}

impl LevelRow {
    /// `{"pid","rank","level","checkpoints","stopped_ns","background_ns"}`.
    pub fn to_json(&self) -> Value {
        json!({
            "pid": self.pid,
            "rank": self.rank,
            "level": self.level,
            "checkpoints": self.checkpoints,
            "stopped_ns": self.stopped_ns,
            "background_ns": self.background_ns,
        })
    }
}

/// [`checkpoint_runs`] summed per process, rank and level.
pub fn level_table(runs: &[CheckpointRun]) -> Vec<LevelRow> {
    let mut rows: BTreeMap<(i64, Option<i64>, Option<i64>), LevelRow> = BTreeMap::new();
    for r in runs {
        let row = rows
            .entry((r.pid, r.rank, r.level))
            .or_insert_with(|| LevelRow {
                pid: r.pid,
                rank: r.rank,
                level: r.level,
                checkpoints: 0,
                stopped_ns: 0,
                background_ns: 0,
            });
        row.checkpoints += 1;
        row.stopped_ns = row.stopped_ns.saturating_add(r.stopped_ns);
        row.background_ns = row.background_ns.saturating_add(r.background_ns);
    }
    rows.into_values().collect()
}

/// A thread's intervals of mark type `ty`, at every stack depth, sorted by start.
fn spans(th: &Thread, ty: Option<i64>) -> Vec<Span> {
    let Some(ty) = ty else { return Vec::new() };
    let mut out: Vec<Span> = th
        .marks
        .iter()
        .filter(|m| m.ty == ty)
        .map(|m| m.span)
        .collect();
    out.sort_by_key(|s| s.t0);
    out
}
