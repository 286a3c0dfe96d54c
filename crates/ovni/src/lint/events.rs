//! Stage 6 of the lint: every event in clock order through the stream checks, the model
//! registry and each enabled model's rules.

use super::report::{event_code, Sink};
use super::trace::TraceProblem;
use super::{Problem, Role};
use crate::error::{Error, EventProblem, StreamProblem, ThreadState};
use crate::events::{ArgType, EventSpec, EventTable};
use crate::metadata::System;
use crate::model::nanos6::Nanos6;
use crate::model::nosv::Nosv;
use crate::model::openmp::OpenMp;
use crate::model::stack::Stacks;
use crate::model::OvniModel;
use crate::raw::{Event, JUMBO_SIZE_FIELD};
use crate::read::{Merged, Merger, Stream};
use std::collections::{HashMap, HashSet};
use std::ops::ControlFlow;
use std::path::Path;

/// A model's stack depth by thread.
type DepthOf<'a> = Box<dyn Fn(usize) -> usize + 'a>;

/// Stage 6: the event loop.
pub(super) struct Events<'a> {
    pub(super) streams: &'a [Stream],
    pub(super) roles: &'a [Role],
    pub(super) table: &'static EventTable,
    /// The stacks of the enabled mpi, tampi and kernel models.
    pub(super) stacks: Vec<Stacks>,
    /// The openmp model, if enabled.
    pub(super) openmp: Option<OpenMp>,
    /// The nosv model, if enabled.
    pub(super) nosv: Option<Nosv>,
    /// The nanos6 model, if enabled.
    pub(super) nanos6: Option<Nanos6>,
    /// ovniemu's row of each thread.
    pub(super) rows: Vec<usize>,
    /// Enabled models by model character; `None` when the metadata is unusable.
    pub(super) enabled: Option<[bool; 256]>,
    /// Problems reported once per stream and MCV, as every later event would repeat them.
    pub(super) once: HashSet<(usize, [u8; 3], &'static str)>,
    pub(super) init_failed: Vec<bool>,
    /// Stream index by `stream.obs` path, built at the first stream error.
    pub(super) by_path: HashMap<&'a Path, usize>,
}

impl Events<'_> {
    /// Linter mode's end check of the models whose id sorts before (`before`) or after the
    /// ovni model's `O`, in id order as ovniemu finishes them: the first thread, in ovniemu's
    /// order, that ends inside a function or subsystem of the model.
    pub(super) fn stacks_left(
        &self,
        before: bool,
        model: &OvniModel,
        sys: &System,
        sink: &mut Sink,
    ) -> ControlFlow<()> {
        let mut models: Vec<(u8, &'static str, DepthOf<'_>)> = Vec::new();
        for s in &self.stacks {
            if let Some(what) = s.model().stacked {
                models.push((s.model().id, what, Box::new(|t| s.depth(t))));
            }
        }
        if let Some(o) = &self.openmp {
            models.push((b'P', "stacked openmp functions", Box::new(|t| o.depth(t))));
        }
        if let Some(n) = &self.nosv {
            models.push((b'V', "stacked nosv subsystems", Box::new(|t| n.depth(t))));
        }
        if let Some(n) = &self.nanos6 {
            models.push((b'6', "stacked nanos6 subsystems", Box::new(|t| n.depth(t))));
        }
        models.sort_by_key(|m| m.0);
        let order = model.end_order();
        for (_, what, depth) in models.iter().filter(|m| (m.0 < b'O') == before) {
            let left = order.iter().find_map(|&t| {
                let d = depth(t);
                let meta = sys.threads.get(t).filter(|_| d > 0)?;
                Some((meta, d))
            });
            if let Some((meta, depth)) = left {
                sink.push(Problem::new(Error::Trace(TraceProblem::StackLeftPushed {
                    stream: meta.stream.clone(),
                    tid: meta.tid,
                    what,
                    depth,
                })))?;
            }
        }
        ControlFlow::Continue(())
    }

    pub(super) fn run(
        &mut self,
        offsets: Vec<i64>,
        mut ovni: Option<&mut OvniModel>,
        sink: &mut Sink,
    ) -> ControlFlow<()> {
        let mut merger = Merger::new(self.streams).with_clock_offsets(offsets);
        if sink.all {
            merger = merger.keep_going();
        }
        // ovniemu starts every stream with a last clock of 0, so a first event whose clock
        // (plus its loom's offset) is negative already goes backwards.
        let mut last = vec![0i64; self.streams.len()];
        let mut events = 0u64;
        let mut flow = ControlFlow::Continue(());
        for item in merger {
            let m = match item {
                Ok(m) => m,
                Err(e) => {
                    let s = self.stream_of(&e);
                    if s.is_some_and(|s| self.init_failed.get(s) == Some(&true)) {
                        continue;
                    }
                    let mut p = Problem::new(e);
                    p.stream = s.and_then(|s| self.streams.get(s)).map(Stream::name);
                    flow = sink.push(p);
                    if flow.is_break() {
                        break;
                    }
                    continue;
                }
            };
            events += 1;
            flow = self.event(&m, &mut last, ovni.as_deref_mut(), sink);
            if flow.is_break() {
                break;
            }
        }
        sink.report.events = events;
        flow
    }

    fn stream_of(&mut self, e: &Error) -> Option<usize> {
        let Error::Stream { path, .. } = e else {
            return None;
        };
        if self.by_path.is_empty() {
            let streams = self.streams;
            self.by_path = streams
                .iter()
                .enumerate()
                .map(|(i, s)| (s.obs_path(), i))
                .collect();
        }
        self.by_path.get(path.as_path()).copied()
    }

    #[inline]
    fn event(
        &mut self,
        m: &Merged<'_>,
        last: &mut [i64],
        ovni: Option<&mut OvniModel>,
        sink: &mut Sink,
    ) -> ControlFlow<()> {
        let s = m.stream;
        let ev = &m.event;
        // Compared with the loom's offset applied, as ovniemu's `stream_step` does.
        let clock = m.sclock;
        if let Some(prev) = last.get_mut(s) {
            if clock < *prev {
                let e = self.stream(s).error(
                    m.offset,
                    StreamProblem::ClockBackwards { prev: *prev, clock },
                );
                sink.push(Problem::new(e).in_stream(self.stream(s)).at_event(ev))?;
            }
            *prev = clock;
        }
        let thread = match self.roles.get(s) {
            Some(Role::Thread(t)) => Some(*t),
            Some(Role::Other) => return self.once(m, EventProblem::UnknownStream, sink),
            _ => None,
        };
        let id = ev.mcv.model();
        let Some(model) = self.table.model(id) else {
            return self.once(m, EventProblem::ModelNotRegistered(id), sink);
        };
        if let Some(en) = &self.enabled {
            if !en[usize::from(id)] {
                let p = EventProblem::ModelNotEnabled {
                    model: model.name.clone(),
                    version: model.version.clone(),
                };
                return self.once(m, p, sink);
            }
        }
        if id == b'O' {
            if let (Some(ovni), Some(t)) = (ovni, thread) {
                // The kernel model's context switches take a thread out of its CPU.
                let out = self
                    .stacks
                    .iter()
                    .any(|s| s.model().id == b'K' && s.depth(t) > 0);
                if out {
                    let tid = ovni.thread(t).map_or(0, |(tid, _)| tid);
                    return sink.push(self.problem(m, EventProblem::ThreadOutOfCpu { tid }));
                }
                if let Err(p) = ovni.event(t, ev) {
                    return sink.push(self.problem(m, p));
                }
            }
            return ControlFlow::Continue(());
        }
        // ovniemu's nanos6 model still accepts the old task creation event, with a warning.
        let old = ev.mcv.0 == *b"6TC" && self.nanos6.is_some();
        let spec = self.table.event(ev.mcv);
        if spec.is_none() && !old {
            let p = EventProblem::UnknownEvent {
                model: model.name.clone(),
            };
            return self.once(m, p, sink);
        }
        // `VWC` holds one value per hardware counter, which the nosv model checks.
        let counters = ev.mcv.0 == *b"VWC" && self.nosv.is_some();
        if let (Some(spec), false) = (spec, counters) {
            if let Err(p) = check_payload(spec, ev) {
                return sink.push(self.problem(m, p));
            }
        }
        let (Some(ovni), Some(t)) = (ovni, thread) else {
            return ControlFlow::Continue(());
        };
        let [_, c, v] = ev.mcv.0;
        let row = self.rows.get(t).copied().unwrap_or(0);
        let (tid, state) = ovni.thread(t).unwrap_or((0, ThreadState::Unknown));
        let running = state == ThreadState::Running;
        let active = matches!(
            state,
            ThreadState::Running | ThreadState::Cooling | ThreadState::Warming
        );
        let out = self
            .stacks
            .iter()
            .any(|s| s.model().id == b'K' && s.depth(t) > 0);
        let verdict = match (self.stacks.iter_mut().find(|s| s.model().id == id), id) {
            (Some(stacks), _) => stacks.event(t, row, tid, running, c, v).map(|_| ()),
            (None, b'P') => match &mut self.openmp {
                Some(omp) => omp.event(t, row, tid, running, ev).map(|_| ()),
                None => Ok(()),
            },
            (None, b'6') => match &mut self.nanos6 {
                Some(n) => n.event(t, row, tid, active, ev).map(|_| ()),
                None => Ok(()),
            },
            (None, b'V') => match &mut self.nosv {
                Some(nosv) => nosv.event(t, row, tid, active, out, ev).map(|_| ()),
                None => Ok(()),
            },
            _ => Ok(()),
        };
        match verdict {
            Ok(()) => ControlFlow::Continue(()),
            Err(p) => sink.push(self.problem(m, p)),
        }
    }

    fn stream(&self, s: usize) -> &Stream {
        // `s` comes from the merger over these very streams.
        &self.streams[s]
    }

    fn problem(&self, m: &Merged<'_>, problem: EventProblem) -> Problem {
        Problem::new(Error::Event {
            stream: self.stream(m.stream).name(),
            offset: m.offset,
            mcv: m.event.mcv,
            clock: m.event.signed_clock(),
            problem,
        })
    }

    fn once(&mut self, m: &Merged<'_>, p: EventProblem, sink: &mut Sink) -> ControlFlow<()> {
        let c = event_code(&p);
        let key = match p {
            EventProblem::UnknownStream => (m.stream, [0; 3], c),
            _ => (m.stream, m.event.mcv.0, c),
        };
        if !self.once.insert(key) {
            return ControlFlow::Continue(());
        }
        sink.push(self.problem(m, p))
    }
}

/// For models other than ovni: the jumbo flag and the payload size must match the event's
/// signature (ovniemu's models read the arguments where the signature puts them).
fn check_payload(spec: &EventSpec, ev: &Event<'_>) -> Result<(), EventProblem> {
    if spec.jumbo != ev.is_jumbo() {
        return Err(EventProblem::Jumbo {
            expected: spec.jumbo,
        });
    }
    let base = if spec.jumbo { JUMBO_SIZE_FIELD } else { 0 };
    let mut fixed = base;
    for (_, ty) in &spec.args {
        match ty.size() {
            Some(n) => fixed += n,
            None => {
                debug_assert_eq!(*ty, ArgType::Str);
                return spec.decode(ev).map(|_| ()).map_err(EventProblem::Payload);
            }
        }
    }
    if ev.payload.len() != fixed {
        return Err(EventProblem::PayloadSize {
            got: ev.payload.len() as u64,
            expected: fixed as u64,
        });
    }
    Ok(())
}
