//! The event loop ([`Emu`]): each event through the ovni model, then the channels it sets,
//! which write the Paraver records; and the end checks once the streams are exhausted.

use super::chan::Channels;
use super::debug;
use super::failed::{clock_backwards, event_failed, merge_failed, write_failed};
use super::layout::MarkList;
use super::models::Models;
use super::output::Outputs;
use super::stat::{Bursts, Progress};
use super::{Layout, Out, Role, Setup};
use crate::error::{Error, EventProblem, ThreadState, TraceProblem};
use crate::events::EventTable;
use crate::model::OvniModel;
use crate::raw::Event;
use crate::read::{Merger, Stream};

/// An ovni event the model accepted: its thread, category and value, payload (the jumbo
/// data for a jumbo event), the thread whose CPU it moves and that thread's CPU before it.
#[derive(Clone, Copy)]
struct Accepted<'p> {
    t: usize,
    c: u8,
    v: u8,
    payload: &'p [u8],
    moved: Option<usize>,
    before: Option<u32>,
}

/// The event loop: the model, the channels and where each index goes.
pub(super) struct Emu {
    model: OvniModel,
    /// The other enabled models (nosv, tampi, mpi, kernel, openmp).
    models: Models,
    /// The kernel model is enabled (it can take threads out of their CPU).
    kernel: bool,
    chans: Channels,
    /// Channel index of each mark type (by type, `[0, 100)`).
    mark_k: [u8; 100],
    pub(super) events: u64,
    /// Time of the current event (relative to the first).
    dclock: i64,
    /// When each thread began its current flush.
    flush_start: Vec<i64>,
    /// Warnings of the current event, printed after it.
    notes: Vec<String>,
    /// ovniemu's jumbo flag of the current event: it keeps the last jumbo event's flag until an
    /// event without payload, as the original's event record does.
    jumbo: bool,
    pub(super) progress: Progress,
    bursts: Bursts,
    /// `-d`: the debug lines of the current event are collected in `dbg`.
    debug: bool,
    dbg: Vec<String>,
}

fn state_code(s: ThreadState) -> (i64, bool) {
    match s {
        ThreadState::Unknown => (0, false),
        ThreadState::Running => (1, true),
        ThreadState::Paused => (2, false),
        ThreadState::Dead => (3, false),
        ThreadState::Cooling => (4, true),
        ThreadState::Warming => (5, true),
    }
}

impl Emu {
    /// The other enabled models.
    pub(super) fn models(&self) -> &Models {
        &self.models
    }

    pub(super) fn new(
        setup: &Setup,
        marks: &MarkList,
        streams: &[Stream],
        models: Models,
        outputs: &mut Outputs,
    ) -> Self {
        let model = OvniModel::new(&setup.sys);
        let types: Vec<i64> = marks.types.iter().map(|m| m.0).collect();
        let mut chans = Channels::new(
            &setup.layout.th_ids,
            model.ncpus(),
            &types,
            &mut outputs.cpu,
            &mut outputs.thread,
        );
        models.add_channels(&mut chans, &mut outputs.cpu, &mut outputs.thread);
        // The views are enabled in the order of the outputs, so their indices match.
        for (name, prv, cpus) in &mut outputs.breakdowns {
            if let Some((view, ty)) = models.breakdown_view(name) {
                chans.enable_breakdown(view, cpus, ty, prv);
            }
        }
        let mut mark_k = [u8::MAX; 100];
        for (k, &ty) in types.iter().enumerate() {
            if let Some(slot) = usize::try_from(ty).ok().and_then(|t| mark_k.get_mut(t)) {
                *slot = k as u8;
            }
        }
        Self {
            flush_start: vec![0; setup.sys.threads.len()],
            model,
            kernel: models.index(b'K').is_some(),
            models,
            chans,
            mark_k,
            events: 0,
            dclock: 0,
            notes: Vec::new(),
            jumbo: false,
            progress: Progress::new(streams),
            bursts: Bursts::new(setup.sys.threads.len()),
            debug: false,
            dbg: Vec::new(),
        }
    }

    /// Collects the debug lines of `-d`.
    pub(super) fn set_debug(&mut self, debug: bool) {
        self.debug = debug;
        self.models.set_debug(debug);
    }

    /// The debug lines of an event's step and of the model it goes to.
    #[cold]
    #[inline(never)]
    fn debug_step(&self, mcv: crate::raw::Mcv, dclock: i64, out: &mut Out<'_>) {
        let enabled = self.models.index(mcv.model()).is_some();
        out.debug_with(|| debug::step_lines(mcv, dclock, enabled));
    }

    /// Prints the debug lines of the event just played (after its warnings, which the
    /// original prints first).
    #[cold]
    #[inline(never)]
    fn debug_lines(&mut self, out: &mut Out<'_>) {
        self.models.take_debug(&mut self.dbg);
        for l in self.dbg.drain(..) {
            out.debug(&l);
        }
    }

    /// The ovni model's debug lines of an accepted event: the CPU a thread runs on and each
    /// CPU's running thread (`before`: the moved thread's CPU before the event).
    #[cold]
    #[inline(never)]
    fn debug_ovni(&mut self, ev: Accepted<'_>, setup: &Setup) {
        let (t, c, v, payload) = (ev.t, ev.c, ev.v, ev.payload);
        let (moved, before) = (ev.moved, ev.before);
        let layout = &setup.layout;
        let th_row = |t: usize| layout.th_row.get(t).copied().unwrap_or(0);
        let tid = |t: usize| setup.sys.threads.get(t).map_or(0, |m| m.tid);
        let label = |cpu: u32| {
            let r = self.cpu_row(layout, cpu);
            layout.cpu_labels.get(r).cloned().unwrap_or_default()
        };
        let update = |cpu: Option<u32>| {
            cpu.map(|cpu| {
                let running = self.model.running_on(cpu).1.map(th_row);
                format!(
                    "cpu_update: cpu{} sets th_running to {}",
                    self.cpu_row(layout, cpu),
                    debug::value(running)
                )
            })
        };
        let mut lines = Vec::new();
        match (c, v) {
            (b'H', b'C') => {
                let word = |i: usize| {
                    payload
                        .get(i * 4..i * 4 + 4)
                        .and_then(|b| b.first_chunk::<4>())
                        .map_or(0, |b| u32::from_le_bytes(*b))
                };
                lines.push(format!(
                    "pre_thread: thread {} creates a new thread at cpu={} with args={:x} {:x}",
                    tid(t),
                    word(0) as i32,
                    word(1),
                    word(2)
                ));
            }
            (b'H', b'x') => {
                if let Some(cpu) = self.model.cpu(t) {
                    lines.push(format!(
                        "pre_thread_execute: thread {} runs in {}",
                        tid(t),
                        label(cpu)
                    ));
                    lines.push(format!(
                        "thread_set_cpu: thread{} sets cpu{}",
                        th_row(t),
                        self.cpu_row(layout, cpu)
                    ));
                    lines.extend(update(Some(cpu)));
                }
            }
            (b'H', b'e') => {
                lines.extend(update(before));
                lines.push(format!("thread_unset_cpu: thread{} unsets cpu", th_row(t)));
            }
            (b'H', _) => lines.extend(update(self.model.cpu(t))),
            (b'A', _) => {
                let Some(mt) = moved else { return };
                let after = self.model.cpu(mt);
                // A thread set to its own CPU does not move; a remote one always does.
                if v == b's' && after == before {
                    return;
                }
                lines.extend(update(before));
                lines.extend(update(after));
                if let Some(cpu) = after {
                    lines.push(format!(
                        "thread_migrate_cpu: thread{} migrates to cpu{}",
                        th_row(mt),
                        self.cpu_row(layout, cpu)
                    ));
                    lines.push(if v == b's' {
                        format!(
                            "pre_affinity_set: thread {} now runs in {}",
                            tid(mt),
                            label(cpu)
                        )
                    } else {
                        let index = payload
                            .first_chunk::<4>()
                            .map_or(0, |b| i32::from_le_bytes(*b));
                        format!(
                            "pre_affinity_remote: remote_th {} remotely switches to cpu {index}",
                            tid(mt)
                        )
                    });
                }
            }
            _ => {}
        }
        self.dbg.extend(lines);
    }

    /// Plays every event; `Err` after an error was reported.
    pub(super) fn play(
        &mut self,
        streams: &[Stream],
        setup: &Setup,
        outputs: &mut Outputs,
        out: &mut Out<'_>,
    ) -> Result<(), Error> {
        let merger = Merger::new(streams).with_clock_offsets(setup.offsets.clone());
        let mut last = vec![0i64; streams.len()];
        let mut first: Option<i64> = None;
        // The error paths are out of line (cold), so that the loop keeps the merged event in
        // registers.
        for item in merger {
            let m = match item {
                Ok(ref m) => m,
                Err(e) => return Err(merge_failed(e, streams, out)),
            };
            let s = m.stream;
            if let Some(prev) = last.get_mut(s) {
                if m.sclock < *prev {
                    return Err(clock_backwards(m, *prev, streams, out, false));
                }
                *prev = m.sclock;
            }
            if let Some(from) = m.backwards_from {
                return Err(clock_backwards(m, from, streams, out, true));
            }
            let t0 = *first.get_or_insert(m.sclock);
            let dclock = m.sclock.wrapping_sub(t0);
            outputs.advance(dclock);
            self.dclock = dclock;
            self.events += 1;
            if let Some(line) = self.progress.tick(self.events) {
                out.progress(&line);
            }
            self.jumbo = !m.event.payload.is_empty() && (self.jumbo || m.event.is_jumbo());
            if self.debug {
                self.debug_step(m.event.mcv, dclock, out);
            }
            let played = match setup.roles.get(s) {
                Some(Role::Thread(t)) => self.event(*t, &m.event, setup, outputs),
                _ => Err(EventProblem::UnknownStream),
            };
            if let Err(problem) = played {
                // A warning of the rejected event comes before the error.
                for n in self.notes.drain(..) {
                    out.warn(&n);
                }
                if self.debug {
                    self.debug_lines(out);
                }
                let jumbo = self.jumbo;
                return Err(event_failed(m, problem, dclock, jumbo, streams, setup, out));
            }
            self.progress.played(m.event.size());
            if m.event.mcv.0 == *b"OB." {
                if let Some(Role::Thread(t)) = setup.roles.get(s) {
                    let loom = setup.sys.threads.get(*t).map_or("", |th| th.loom.as_str());
                    out.lines(&self.bursts.burst(*t, dclock, loom));
                }
            }
            if !self.notes.is_empty() {
                for n in self.notes.drain(..) {
                    out.warn(&n);
                }
            }
            if self.debug {
                self.debug_lines(out);
            }
            self.chans.propagate(&mut outputs.cpu, &mut outputs.thread);
            for (i, records) in self.chans.breakdown_records() {
                if let Some((_, prv, _)) = outputs.breakdowns.get_mut(i) {
                    for (key, row, ty, v) in records.drain(..) {
                        prv.record_keyed(key, row, ty, v);
                    }
                }
            }
            if outputs.cpu.failed() || outputs.thread.failed() {
                return Err(write_failed(outputs, out));
            }
        }
        Ok(())
    }

    /// Plays one event of thread `t`; the error lines if it is rejected.
    #[inline]
    fn event(
        &mut self,
        t: usize,
        ev: &Event<'_>,
        setup: &Setup,
        outputs: &mut Outputs,
    ) -> Result<(), EventProblem> {
        let id = ev.mcv.model();
        if id != b'O' {
            if let Some(j) = self.models.index(id) {
                let row = setup.layout.th_row.get(t).copied().unwrap_or(0);
                let tid = setup.sys.threads.get(t).map_or(0, |m| m.tid);
                let state = self.model.state(t);
                let (chans, notes) = (&mut self.chans, &mut self.notes);
                let prvs = (&mut outputs.cpu, &mut outputs.thread);
                return self
                    .models
                    .event(j, t, row, tid, state, ev, chans, prvs, notes);
            }
            return Err(match EventTable::builtin().model(id) {
                Some(m) => EventProblem::ModelNotEnabled {
                    model: m.name.clone(),
                    version: m.version.clone(),
                },
                None => EventProblem::ModelNotRegistered(id),
            });
        }
        if self.kernel && self.models.out_of_cpu(t) {
            let tid = setup.sys.threads.get(t).map_or(0, |m| m.tid);
            return Err(EventProblem::ThreadOutOfCpu { tid });
        }
        let [_, c, v] = ev.mcv.0;
        let payload = ev.jumbo_data().unwrap_or(ev.payload);
        // The thread whose CPU an affinity event moves, and its CPU before (only affinity
        // events and the end of a thread need them).
        let moved = match (c, v) {
            (b'A', b'r') => self.model.remote_target(t, payload),
            _ => Some(t),
        };
        let before = match (c, v) {
            (b'A', _) | (b'H', b'e') => moved.and_then(|m| self.model.cpu(m)),
            _ => None,
        };
        self.model.event(t, ev)?;
        let accepted = Accepted {
            t,
            c,
            v,
            payload,
            moved,
            before,
        };
        self.apply(accepted, setup, outputs);
        if self.debug {
            self.debug_ovni(accepted, setup);
        }
        Ok(())
    }

    /// Sets the channels an accepted event changes, in ovniemu's order.
    #[inline]
    fn apply(&mut self, ev: Accepted<'_>, setup: &Setup, outputs: &mut Outputs) {
        let Accepted {
            t,
            c,
            v,
            payload,
            moved,
            before,
        } = ev;
        let layout = &setup.layout;
        let row = |t: usize| layout.th_row.get(t).copied().unwrap_or(0);
        let r = row(t);
        match (c, v) {
            (b'H', b'C') => {}
            (b'H', b'x') => {
                let cpu = self.model.cpu(t);
                self.chans
                    .thread_cpu(r, cpu.map(|c| self.cpu_row(layout, c)));
                self.thread_state(t, r);
                self.cpu_update(layout, cpu);
            }
            (b'H', b'e') => {
                self.thread_state(t, r);
                self.cpu_update(layout, before);
                self.chans.thread_cpu(r, None);
            }
            (b'H', _) => {
                let (code, active) = state_code(self.model.state(t));
                let cpu = self.model.cpu(t).map(|c| {
                    let (n, running) = self.model.running_on(c);
                    let running = running.and_then(|t| layout.th_row.get(t).copied());
                    (self.cpu_row(layout, c), running, n)
                });
                self.chans.thread_state_event(
                    r,
                    code,
                    active,
                    cpu,
                    &mut outputs.cpu,
                    &mut outputs.thread,
                );
            }
            (b'A', _) => {
                let Some(mt) = moved else { return };
                let after = self.model.cpu(mt);
                if after != before {
                    self.cpu_update(layout, before);
                    self.cpu_update(layout, after);
                    self.chans
                        .thread_cpu(row(mt), after.map(|c| self.cpu_row(layout, c)));
                }
            }
            (b'F', b'[') => {
                if let Some(f) = self.flush_start.get_mut(t) {
                    *f = self.dclock;
                }
                self.chans.flush(r, Some(1));
            }
            (b'F', b']') => {
                self.chans.flush(r, None);
                let start = self.flush_start.get(t).copied().unwrap_or(self.dclock);
                let ms = self.dclock.wrapping_sub(start) as f64 * 1e-6;
                if ms > 10.0 && self.model.state(t) == ThreadState::Running {
                    let tid = setup.sys.threads.get(t).map_or(0, |m| m.tid);
                    self.notes.push(format!(
                        "large flush of {ms:.1} ms at dclock={} ns in tid={tid}",
                        self.dclock
                    ));
                }
            }
            (b'C', b'n') => self.notes.push("ignoring old event OCn".to_string()),
            (b'M', _) => {
                let value = payload
                    .first_chunk::<8>()
                    .map_or(0, |b| i64::from_le_bytes(*b));
                let ty = payload
                    .get(8..12)
                    .and_then(|b| b.first_chunk::<4>())
                    .map_or(0, |b| i64::from(i32::from_le_bytes(*b)));
                let Some(&k) = usize::try_from(ty).ok().and_then(|i| self.mark_k.get(i)) else {
                    return;
                };
                if k == u8::MAX {
                    return;
                }
                let v = if v == b'=' {
                    Some(value)
                } else {
                    self.model
                        .mark_index(ty)
                        .and_then(|i| self.model.mark_stack(t, i).last().copied())
                };
                self.chans
                    .mark_event(r, usize::from(k), v, &mut outputs.cpu, &mut outputs.thread);
            }
            _ => {}
        }
    }

    fn cpu_row(&self, layout: &Layout, c: u32) -> usize {
        layout.cpu_row.get(c as usize).copied().unwrap_or(0)
    }

    fn thread_state(&mut self, t: usize, r: usize) {
        let (code, active) = state_code(self.model.state(t));
        self.chans.thread_state(r, code, active);
    }

    fn cpu_update(&mut self, layout: &Layout, cpu: Option<u32>) {
        let Some(c) = cpu else { return };
        let (n, running) = self.model.running_on(c);
        let running = running.and_then(|t| layout.th_row.get(t).copied());
        let row = self.cpu_row(layout, c);
        self.chans.cpu_update(row, running, n);
    }

    /// The end checks of every enabled model, in ovniemu's order (by model character): for
    /// the ovni model every thread dead (and, in linter mode, no mark left pushed), in row
    /// order; in linter mode, no thread inside another model's stack. `pcf_errors` are the
    /// errors of the models that failed filling their `.pcf` labels (which end their checks).
    pub(super) fn end_checks(
        &self,
        setup: &Setup,
        lint: bool,
        pcf_errors: &[(u8, String)],
    ) -> (Vec<String>, Option<Error>) {
        let mut lines = Vec::new();
        let (rows, sys) = (&setup.layout.row_thread, &setup.sys);
        let before = self
            .models
            .end_checks(true, lint, sys, rows, pcf_errors, &mut lines);
        let mut first = before.map(Error::Trace);
        let (ovni, e) = self.ovni_end_checks(setup, lint);
        if !ovni.is_empty() {
            lines.extend(ovni);
            lines.push("model_finish: finish failed for model 'O'".to_string());
        }
        first = first.or(e);
        let after = self
            .models
            .end_checks(false, lint, sys, rows, pcf_errors, &mut lines);
        (lines, first.or(after.map(Error::Trace)))
    }

    /// The end checks that still run after an event was rejected: the nosv model's stacks
    /// in linter mode (its lines added to `lines`).
    pub(super) fn abort_checks(&self, setup: &Setup, lines: &mut Vec<String>) {
        let (rows, sys) = (&setup.layout.row_thread, &setup.sys);
        self.models.abort_checks(sys, rows, lines);
    }

    /// The trace was played to its end.
    pub(super) fn set_finished(&mut self) {
        self.models.set_finished();
    }

    fn ovni_end_checks(&self, setup: &Setup, lint: bool) -> (Vec<String>, Option<Error>) {
        let mut lines = Vec::new();
        let mut first = None;
        for &t in &setup.layout.row_thread {
            let Some(meta) = setup.sys.threads.get(t) else {
                continue;
            };
            let tid = meta.tid;
            let state = self.model.state(t);
            if state != ThreadState::Dead {
                lines.push(format!(
                    "model_ovni_finish: thread {tid} is not dead (thread.{tid})"
                ));
                first.get_or_insert_with(|| {
                    Error::Trace(TraceProblem::ThreadNotDead {
                        stream: meta.stream.clone(),
                        tid,
                        state,
                    })
                });
            }
            if lint {
                for &ty in setup.sys.marks.keys() {
                    let Some(i) = self.model.mark_index(ty) else {
                        continue;
                    };
                    let n = self.model.mark_stack(t, i).len();
                    if n > 0 {
                        lines.push(format!(
                            "model_ovni_finish: thread {tid} ends with {n} values pushed on mark type {ty} (thread.{tid})"
                        ));
                        first.get_or_insert_with(|| {
                            Error::Trace(TraceProblem::MarksLeftPushed {
                                stream: meta.stream.clone(),
                                tid,
                                mark: ty,
                                depth: n,
                            })
                        });
                    }
                }
            }
        }
        (lines, first)
    }
}
