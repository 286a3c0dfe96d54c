//! Validation of a trace the way ovniemu 1.14 checks it before and while emulating it
//! (`docs/ovni-format.md`, *ovnilint*: every step and the end check), so that a trace can be
//! checked without the emulator: [`lint_dir`] returns the problems that would make ovniemu reject
//! the trace.
//!
//! The stages follow ovniemu's order, so the first problem reported is the one ovniemu stops
//! at:
//!
//! 1. load every stream (`stream.json` version, `stream.obs` header);
//! 2. build the system from the metadata ([`ThreadMeta`], [`System::merge`]): thread keys,
//!    `finished`, looms, CPUs, processes, ranks, marks; streams whose `ovni.part` is not
//!    `"thread"` are skipped, and only their events are errors;
//! 3. clock offsets (`clock-offsets.txt` or [`LintOptions::clock_offsets`]);
//! 4. the first event of every stream, and the one-hour clock gate;
//! 5. the model probe: `ovni.require` versions against the embedded event table, then the
//!    mark values, which must stay distinct as Paraver's 32-bit values;
//! 6. every event in clock order: stream structure, per-stream clock order, registered and
//!    enabled model, then the ovni model's rules (`crate::model`) for `O` events, or for other
//!    models that the event exists and its payload fits its signature, and for the mpi,
//!    tampi, openmp, nosv and nanos6 models their rules (`crate::model::stack`,
//!    `crate::model::openmp`, `crate::model::nosv`, `crate::model::nanos6`);
//! 7. the end check: every thread is dead.
//!
//! With [`LintOptions::all`] the checks continue after a problem (a rejected event leaves the
//! state unchanged; a broken stream ends; the ovni model only runs when the metadata of every
//! stream is valid).
//!
//! This file holds the stages but the event loop (stage 6, `events`); what a lint reports
//! ([`Problem`], [`Report`]) is in `report`,
//! the trace-wide rules ([`TraceProblem`]) in `trace`, and the clock offset table in `offsets`.

mod events;
pub(crate) mod offsets;
mod report;
pub(crate) mod trace;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use crate::error::{Error, MetaProblem, ThreadState};
use crate::events::EventTable;
use crate::metadata::{check_mark_values, required_models, version_compatible, System, ThreadMeta};
use crate::read::{find_streams, Stream};
use events::Events;
use report::Sink;
use trace::TraceProblem;

pub use report::{Problem, Report};

use crate::model::nanos6::Nanos6;
use crate::model::nosv::{hwc_names, processes, Nosv};
use crate::model::openmp::OpenMp;
use crate::model::stack::{stack_model, Stacks};
use crate::model::task_type::label_values;
use crate::model::OvniModel;

/// Streams whose first clocks differ by more than this need a clock offset table.
const CLOCK_GATE_NS: u128 = 3_600_000_000_000;
/// Name of the optional clock offset table in the trace directory.
pub const CLOCK_OFFSETS_FILE: &str = "clock-offsets.txt";

/// What to check and how much to report.
#[derive(Debug, Clone, Default)]
pub struct LintOptions {
    /// Report every problem instead of stopping at the first.
    pub all: bool,
    /// With `all`, stop after this many problems (0: no limit).
    pub max_problems: usize,
    /// Clock offset table; `None` uses `<dir>/clock-offsets.txt` if it exists, as ovniemu.
    pub clock_offsets: Option<PathBuf>,
    /// ovniemu's linter mode (`-l`): the stricter end checks, a thread must not end with
    /// mark values still pushed nor inside a model's function or subsystem.
    pub linter_mode: bool,
}

/// Checks the trace under `dir` (a trace, a sub-directory or a stream directory).
pub fn lint_dir(dir: &Path, opts: &LintOptions) -> Report {
    let mut sink = Sink {
        all: opts.all,
        max: opts.max_problems,
        report: Report::default(),
    };
    let _ = run(dir, opts, &mut sink);
    sink.report
}

/// What a stream is to the emulator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    /// A thread: index in the system's threads.
    Thread(usize),
    /// `ovni.part` is not `"thread"`: skipped, its events are errors.
    Other,
    /// Its metadata could not be read.
    Broken,
}

fn run(dir: &Path, opts: &LintOptions, sink: &mut Sink) -> ControlFlow<()> {
    let dirs = match find_streams(dir) {
        Ok(d) => d,
        Err(e) => {
            let _ = sink.push(Problem::new(e));
            return ControlFlow::Break(());
        }
    };
    if dirs.is_empty() {
        let _ = sink.push(Problem::new(Error::NoStreams(dir.to_path_buf())));
        return ControlFlow::Break(());
    }
    sink.report.streams = dirs.len();
    let mut streams = Vec::with_capacity(dirs.len());
    let mut complete = true;
    for d in dirs {
        let name = String::from_utf8_lossy(&d.relpath).into_owned();
        match Stream::load(&d.dir, d.relpath) {
            Ok(s) => streams.push(s),
            Err(e) => {
                complete = false;
                let mut p = Problem::new(e);
                p.stream = Some(name);
                sink.push(p)?;
            }
        }
    }
    let (roles, system) = build_system(&streams, complete, sink)?;
    let offsets = clock_offsets(dir, opts, &streams, &roles, system.as_ref(), sink)?;
    let init_failed = first_events(&streams, &offsets, sink)?;
    let table = EventTable::builtin();
    let enabled = match &system {
        Some(sys) => Some(probe(sys, table, sink)?),
        None => None,
    };
    let mut ovni = match (&system, &enabled) {
        (Some(sys), Some(en)) if en[usize::from(b'O')] => Some(OvniModel::new(sys)),
        _ => None,
    };
    let stacks = match (&ovni, &enabled) {
        (Some(model), Some(en)) => stack_models(model, en),
        _ => Vec::new(),
    };
    let rows = ovni.as_ref().map(row_of_thread).unwrap_or_default();
    let openmp = match (&system, &ovni, &enabled) {
        (Some(sys), Some(model), Some(en)) if en[usize::from(b'P')] => {
            Some(openmp_model(sys, model))
        }
        _ => None,
    };
    let nosv = match (&system, &ovni, &enabled) {
        (Some(sys), Some(model), Some(en)) if en[usize::from(b'V')] => {
            Some(nosv_model(sys, model, &streams, &roles, sink)?)
        }
        _ => None,
    };
    let nanos6 = match (&system, &ovni, &enabled) {
        (Some(sys), Some(model), Some(en)) if en[usize::from(b'6')] => {
            let (procs, proc_of) = processes(sys, &model.end_order());
            let ranks: Vec<Option<i64>> = procs.iter().map(|p| p.1).collect();
            Some(Nanos6::new(proc_of, &ranks))
        }
        _ => None,
    };
    let mut ctx = Events {
        nosv,
        nanos6,
        streams: &streams,
        roles: &roles,
        table,
        stacks,
        openmp,
        rows,
        enabled,
        once: HashSet::new(),
        init_failed,
        by_path: HashMap::new(),
    };
    ctx.run(offsets, ovni.as_mut(), sink)?;
    if let (Some(sys), Some(model)) = (&system, &ovni) {
        if opts.linter_mode {
            ctx.stacks_left(true, model, sys, sink)?;
        }
        end_checks(sys, model, opts.linter_mode, sink)?;
        if opts.linter_mode {
            ctx.stacks_left(false, model, sys, sink)?;
        }
    }
    // ovniemu's nanos6, openmp and nosv models fail when they list the type labels, after
    // the events.
    let nanos6_labels = ctx.nanos6.as_ref().and_then(|n| label_values(n.types()).1);
    let nosv_labels = ctx.nosv.as_ref().and_then(|n| label_values(n.types()).1);
    let openmp_labels = ctx.openmp.as_ref().and_then(|o| o.label_values().1);
    for c in nanos6_labels
        .into_iter()
        .chain(openmp_labels)
        .chain(nosv_labels)
    {
        sink.push(Problem::new(Error::Trace(c.problem())))?;
    }
    ControlFlow::Continue(())
}

/// Stage 2: thread metadata of every stream and the merged system (`None` if any stream's
/// metadata is unusable, so the ovni model is not run on a partial system).
fn build_system(
    streams: &[Stream],
    complete: bool,
    sink: &mut Sink,
) -> ControlFlow<(), (Vec<Role>, Option<System>)> {
    let mut roles = vec![Role::Broken; streams.len()];
    let mut threads = Vec::new();
    let mut ok = complete;
    for (s, role) in streams.iter().zip(roles.iter_mut()) {
        match ThreadMeta::from_stream(&s.name(), s.metadata()) {
            Ok(t) => {
                *role = Role::Thread(threads.len());
                threads.push(t);
            }
            Err(Error::Metadata {
                problem: MetaProblem::UnknownPart(_),
                ..
            }) => *role = Role::Other,
            Err(
                e @ Error::Metadata {
                    problem: MetaProblem::NotFinished,
                    ..
                },
            ) => {
                ok = false;
                sink.push(Problem::new(e).in_stream(s))?;
                // The system is not built, so the model probe will not run: list the stream's
                // other problems here, a missing `ovni.require` included.
                match ThreadMeta::from_stream_unfinished(&s.name(), s.metadata()) {
                    Ok(t) if t.require.is_none() => {
                        let e = Error::meta(s.name(), MetaProblem::MissingKey("ovni.require"));
                        sink.push(Problem::new(e).in_stream(s))?;
                    }
                    Ok(_) => {}
                    Err(e) => sink.push(Problem::new(e).in_stream(s))?,
                }
            }
            Err(e) => {
                ok = false;
                sink.push(Problem::new(e).in_stream(s))?;
            }
        }
    }
    if !ok {
        return ControlFlow::Continue((roles, None));
    }
    match System::merge(threads) {
        Ok(sys) => ControlFlow::Continue((roles, Some(sys))),
        Err(e) => {
            sink.push(Problem::new(e))?;
            ControlFlow::Continue((roles, None))
        }
    }
}

/// Stage 3: the clock offset of every stream (that of its loom).
fn clock_offsets(
    dir: &Path,
    opts: &LintOptions,
    streams: &[Stream],
    roles: &[Role],
    system: Option<&System>,
    sink: &mut Sink,
) -> ControlFlow<(), Vec<i64>> {
    let mut out = vec![0i64; streams.len()];
    let Some(sys) = system else {
        return ControlFlow::Continue(out);
    };
    let path = match &opts.clock_offsets {
        Some(p) => p.clone(),
        None => {
            let p = dir.join(CLOCK_OFFSETS_FILE);
            if !p.is_file() {
                return ControlFlow::Continue(out);
            }
            p
        }
    };
    let names: Vec<String> = sys.looms.iter().map(|l| l.name.clone()).collect();
    let looms = match offsets::load(&path).and_then(|e| offsets::loom_offsets(&path, &e, &names)) {
        Ok(l) => l,
        Err(e) => {
            sink.push(Problem::new(e))?;
            return ControlFlow::Continue(out);
        }
    };
    let by_name: BTreeMap<&str, i64> = names.iter().map(String::as_str).zip(looms).collect();
    for (slot, role) in out.iter_mut().zip(roles) {
        if let Role::Thread(t) = role {
            let loom = sys.threads.get(*t).map(|t| t.loom.as_str());
            *slot = loom.and_then(|l| by_name.get(l)).copied().unwrap_or(0);
        }
    }
    ControlFlow::Continue(out)
}

/// Stage 4: the first event of every stream and the clock gate. Returns which streams
/// failed here, so their error is not reported twice.
fn first_events(
    streams: &[Stream],
    offsets: &[i64],
    sink: &mut Sink,
) -> ControlFlow<(), Vec<bool>> {
    let mut failed = vec![false; streams.len()];
    let mut first = Vec::with_capacity(streams.len());
    for ((s, off), f) in streams.iter().zip(offsets).zip(failed.iter_mut()) {
        match s.events().next() {
            None => {}
            Some(Ok((_, ev))) => first.push((s, ev.signed_clock().wrapping_add(*off))),
            Some(Err(e)) => {
                *f = true;
                sink.push(Problem::new(e).in_stream(s))?;
            }
        }
    }
    if failed.contains(&true) {
        return ControlFlow::Continue(failed);
    }
    let Some(&(_, t0)) = first.first() else {
        return ControlFlow::Continue(failed);
    };
    for (s, clock) in first {
        let delta = (i128::from(t0) - i128::from(clock)).unsigned_abs();
        if delta > CLOCK_GATE_NS {
            sink.push(Problem::new(Error::Trace(TraceProblem::ClockGate {
                stream: s.name(),
                delta,
            })))?;
        }
    }
    ControlFlow::Continue(failed)
}

/// Stage 5: which models are enabled (a compatible `require` in any thread).
fn probe(sys: &System, table: &EventTable, sink: &mut Sink) -> ControlFlow<(), [bool; 256]> {
    if let Err(e) = required_models(&sys.threads, table) {
        sink.push(Problem::new(e))?;
    }
    let mut enabled = [false; 256];
    for m in table.models() {
        enabled[usize::from(m.id)] = sys.threads.iter().any(|t| {
            t.require
                .as_ref()
                .and_then(|r| r.get(&m.name))
                .is_some_and(|w| version_compatible(w, &m.version) == Some(true))
        });
    }
    // The ovni model's marks become `.pcf` values when the model is connected.
    if enabled[usize::from(b'O')] {
        if let Err(e) = check_mark_values(&sys.threads) {
            sink.push(Problem::new(e))?;
        }
    }
    ControlFlow::Continue(enabled)
}

/// The stacks of the enabled mpi, tampi and kernel models.
fn stack_models(model: &OvniModel, enabled: &[bool; 256]) -> Vec<Stacks> {
    let n = model.end_order().len();
    (0..=255u8)
        .filter(|&id| enabled[usize::from(id)])
        .filter_map(stack_model)
        .map(|m| Stacks::new(m, n))
        .collect()
}

/// The openmp model, processes numbered in ovniemu's thread order.
fn openmp_model(sys: &System, model: &OvniModel) -> OpenMp {
    let (first, proc_of) = crate::model::procs::processes(sys, &model.end_order());
    OpenMp::new(proc_of, first.len())
}

/// The nosv model, processes numbered in ovniemu's thread order, with the hardware counters
/// of the threads' metadata (a problem if ovniemu refuses them).
fn nosv_model(
    sys: &System,
    model: &OvniModel,
    streams: &[Stream],
    roles: &[Role],
    sink: &mut Sink,
) -> ControlFlow<(), Nosv> {
    let mut meta = vec![None; sys.threads.len()];
    for (s, role) in streams.iter().zip(roles) {
        if let Some(m) = role_thread(role).and_then(|t| meta.get_mut(t)) {
            *m = s.metadata().hwc();
        }
    }
    let order = model.end_order();
    let threads: Vec<_> = order
        .iter()
        .filter_map(|&t| Some((sys.threads.get(t)?.stream.clone(), *meta.get(t)?)))
        .collect();
    let hwc = match hwc_names(&threads) {
        Ok(names) => names.len(),
        // ovniemu's lines say which entry; the problem names the key.
        Err(_) => {
            let stream = threads.first().map(|t| t.0.clone()).unwrap_or_default();
            sink.push(Problem::new(Error::meta(
                &stream,
                MetaProblem::BadValue {
                    key: "nosv.hwc",
                    expected: "hardware counters indexed 0 to n-1, each with a name",
                },
            )))?;
            0
        }
    };
    let (procs, proc_of) = processes(sys, &order);
    ControlFlow::Continue(Nosv::new(proc_of, &procs, hwc))
}

/// The thread of a stream, if it is one.
fn role_thread(role: &Role) -> Option<usize> {
    match role {
        Role::Thread(t) => Some(*t),
        Role::Other | Role::Broken => None,
    }
}

/// ovniemu's row of each thread (its channels are named after it).
fn row_of_thread(model: &OvniModel) -> Vec<usize> {
    let order = model.end_order();
    let mut rows = vec![0; order.len()];
    for (row, &t) in order.iter().enumerate() {
        if let Some(r) = rows.get_mut(t) {
            *r = row;
        }
    }
    rows
}

/// Stage 7: every thread must be dead, in ovniemu's thread order; in linter mode, also
/// without mark values pushed.
fn end_checks(
    sys: &System,
    model: &OvniModel,
    linter_mode: bool,
    sink: &mut Sink,
) -> ControlFlow<()> {
    for t in model.end_order() {
        let (Some((tid, state)), Some(meta)) = (model.thread(t), sys.threads.get(t)) else {
            continue;
        };
        if state != ThreadState::Dead {
            sink.push(Problem::new(Error::Trace(TraceProblem::ThreadNotDead {
                stream: meta.stream.clone(),
                tid,
                state,
            })))?;
        }
        if !linter_mode {
            continue;
        }
        for &ty in sys.marks.keys() {
            let Some(i) = model.mark_index(ty) else {
                continue;
            };
            let depth = model.mark_stack(t, i).len();
            if depth > 0 {
                sink.push(Problem::new(Error::Trace(TraceProblem::MarksLeftPushed {
                    stream: meta.stream.clone(),
                    tid,
                    mark: ty,
                    depth,
                })))?;
            }
        }
    }
    ControlFlow::Continue(())
}
