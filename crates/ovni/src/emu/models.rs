//! The models the emulator runs besides ovni (kernel, mpi, nanos6, nosv, openmp, tampi), in
//! ovniemu's order: which are enabled, their channels, `.pcf` types, events, end checks and
//! messages. kernel, mpi and tampi are each described by a [`StackModel`]
//! (`crates/ovni/src/model/{kernel,mpi,tampi}.rs`) and run by the shared [`Stacks`]; openmp,
//! nosv and nanos6 are `crates/ovni/src/model/{openmp,nosv,nanos6}.rs` (their views and
//! messages in `emu/openmp.rs`, `emu/nosv.rs` and `emu/nanos6.rs`). This file only connects
//! them to the emulator.

use std::collections::BTreeMap;

use super::chan::{Channels, TrackDef, View};
use super::pcf::PcfType;
use super::prv::Prv;
use super::{nanos6, nosv, openmp};
use crate::error::{EventProblem, ThreadState, TraceProblem};
use crate::events::EventTable;
use crate::metadata::System;
use crate::model::nanos6::Nanos6;
use crate::model::nosv::{Nosv, CH_IDLE, PROGRESSING};
use crate::model::openmp::OpenMp;
use crate::model::stack::{stack_model, StackModel, Stacks, Track};
use crate::model::task_type::{label_values, LabelCollision, TaskDebug};
use crate::raw::{Event, Mcv};

/// The emulated models as `ovniemu -h` lists them (`  <id>  <name>  <version>` lines, in
/// ovniemu's registration order).
pub fn model_list() -> String {
    let table = EventTable::builtin();
    let mut s = String::new();
    for id in [b'O', b'6', b'V', b'D', b'T', b'M', b'K', b'P'] {
        if let Some(m) = table.model(id).filter(|_| emulated(id)) {
            s.push_str(&format!("  {}  {:<8}  {}\n", id as char, m.name, m.version));
        }
    }
    s
}

/// True if the emulator emulates model `id`.
pub(super) fn emulated(id: u8) -> bool {
    matches!(id, b'O' | b'P' | b'V' | b'6') || stack_model(id).is_some()
}

/// The state of one enabled model.
enum State {
    Stack(Stacks),
    OpenMp(OpenMp),
    /// The nosv model and the names of its hardware counters.
    Nosv(Nosv, Vec<String>),
    Nanos6(Nanos6),
}

/// One enabled model: its state and the index of its first channel.
struct Enabled {
    id: u8,
    state: State,
    base: usize,
}

/// The enabled models other than ovni, with their state, by model character.
pub(super) struct Models {
    models: Vec<Enabled>,
    /// Index in `models` of each model character, `u8::MAX` if not enabled.
    by_id: [u8; 256],
    /// The trace was played to its end (the nosv model then lists its task types).
    finished: bool,
}

/// The channels of the openmp model (subsystem, label, task id), all shown while the thread
/// is active.
const OPENMP_TYPES: [(u32, &str); 3] = [
    (50, "OpenMP subsystem"),
    (51, "OpenMP label"),
    (52, "OpenMP task ID"),
];

impl Models {
    /// The models of `required` (model name → version, from the probe) other than ovni;
    /// `hwc` names the nosv model's hardware counters.
    pub(super) fn new(
        required: &BTreeMap<String, String>,
        sys: &System,
        row_thread: &[usize],
        hwc: Vec<String>,
    ) -> Self {
        let mut hwc = Some(hwc);
        let mut ids: Vec<u8> = EventTable::builtin()
            .models()
            .iter()
            .filter(|m| required.contains_key(&m.name))
            .map(|m| m.id)
            .collect();
        ids.sort_unstable();
        let mut by_id = [u8::MAX; 256];
        let mut models = Vec::new();
        let mut base = 0;
        for id in ids {
            let (state, n) = match (stack_model(id), id) {
                (Some(m), _) => (State::Stack(Stacks::new(m, sys.threads.len())), 1),
                (None, b'P') => (
                    State::OpenMp(openmp_model(sys, row_thread)),
                    OPENMP_TYPES.len(),
                ),
                (None, b'V') => {
                    let hwc = hwc.take().unwrap_or_default();
                    let (procs, proc_of) = crate::model::nosv::processes(sys, row_thread);
                    let n = crate::model::nosv::CHANNELS + hwc.len();
                    (State::Nosv(Nosv::new(proc_of, &procs, hwc.len()), hwc), n)
                }
                (None, b'6') => {
                    let (procs, proc_of) = crate::model::nosv::processes(sys, row_thread);
                    let ranks: Vec<Option<i64>> = procs.iter().map(|p| p.1).collect();
                    let n = crate::model::nanos6::CHANNELS;
                    (State::Nanos6(Nanos6::new(proc_of, &ranks)), n)
                }
                _ => continue,
            };
            by_id[usize::from(id)] = models.len() as u8;
            models.push(Enabled { id, state, base });
            base += n;
        }
        Self {
            models,
            by_id,
            finished: false,
        }
    }

    /// The enabled models that have a breakdown view (nanos6, openmp, nosv), in ovniemu's
    /// order.
    pub(super) fn breakdown_models(&self) -> Vec<&'static str> {
        self.models
            .iter()
            .filter_map(|m| match m.state {
                State::Nanos6(_) => Some("nanos6"),
                State::OpenMp(_) => Some("openmp"),
                State::Nosv(..) => Some("nosv"),
                State::Stack(_) => None,
            })
            .collect()
    }

    /// The breakdown view of model `name` and its Paraver type.
    pub(super) fn breakdown_view(&self, name: &str) -> Option<(View, u32)> {
        self.models.iter().find_map(|m| {
            let b = m.base;
            match (&m.state, name) {
                (State::Nanos6(_), "nanos6") => {
                    use crate::model::nanos6::{CH_IDLE, CH_SUBSYSTEM, CH_TYPE};
                    let view = View::Tasks {
                        ss: b + CH_SUBSYSTEM,
                        tt: b + CH_TYPE,
                        idle: b + CH_IDLE,
                        task_body: 1,
                        unknown: 2,
                    };
                    Some((view, 41))
                }
                (State::Nosv(..), "nosv") => {
                    use crate::model::nosv::{CH_SUBSYSTEM, CH_TYPE};
                    let view = View::Tasks {
                        ss: b + CH_SUBSYSTEM,
                        tt: b + CH_TYPE,
                        idle: b + CH_IDLE,
                        task_body: 11,
                        unknown: 2,
                    };
                    Some((view, 17))
                }
                (State::OpenMp(_), "openmp") => Some((
                    View::Labels {
                        ss: b,
                        label: b + 1,
                    },
                    53,
                )),
                _ => None,
            }
        })
    }

    /// The `.pcf` types of the breakdown view of model `name`: its subsystems (and idle
    /// states), then its task types or labels (none if two labels collide: the original's
    /// finish fails before).
    pub(super) fn breakdown_pcf_types(&self, name: &str) -> Vec<PcfType> {
        let own = |v: &[(i64, &str)]| -> Vec<(i64, String)> {
            v.iter().map(|&(v, l)| (v, l.to_string())).collect()
        };
        let found = self.models.iter().find_map(|m| match (&m.state, name) {
            (State::Nanos6(n), "nanos6") => {
                use crate::model::nanos6::{IDLE_LABELS, SUBSYSTEM_LABELS};
                let mut v = own(&SUBSYSTEM_LABELS);
                v.extend(own(&IDLE_LABELS));
                let (types, collision) = label_values(n.types());
                Some((
                    41,
                    "CPU: Nanos6 Runtime/Idle/Task breakdown",
                    v,
                    types,
                    collision,
                ))
            }
            (State::Nosv(n, _), "nosv") => {
                use crate::model::nosv::{IDLE_LABELS, SUBSYSTEM_LABELS};
                let mut v = own(&SUBSYSTEM_LABELS);
                v.extend(own(&IDLE_LABELS));
                let (types, collision) = label_values(n.types());
                Some((
                    17,
                    "CPU: nOS-V Runtime/Idle/Task breakdown",
                    v,
                    types,
                    collision,
                ))
            }
            (State::OpenMp(o), "openmp") => {
                let (types, collision) = o.label_values();
                let v = openmp::subsystem_values();
                Some((
                    53,
                    "CPU: OpenMP Runtime/Label breakdown",
                    v,
                    types,
                    collision,
                ))
            }
            _ => None,
        });
        match found {
            Some((ty, label, mut values, types, None)) => {
                values.extend(types);
                vec![PcfType {
                    ty,
                    label: label.to_string(),
                    values,
                }]
            }
            _ => Vec::new(),
        }
    }

    /// The trace was played to its end.
    pub(super) fn set_finished(&mut self) {
        self.finished = true;
    }

    /// Adds each model's channels to every thread and CPU.
    pub(super) fn add_channels(&self, chans: &mut Channels, cpu: &mut Prv, thread: &mut Prv) {
        let mut defs = Vec::new();
        for m in &self.models {
            let before_ovni = m.id < b'O';
            match &m.state {
                State::Stack(s) => defs.push(TrackDef {
                    prv_type: s.model().prv_type,
                    thread_track: s.model().thread_track,
                    skip_dup_null: false,
                    emit_dup: false,
                    cpu_default: None,
                    before_ovni,
                }),
                State::OpenMp(_) => defs.extend(OPENMP_TYPES.iter().map(|&(ty, _)| TrackDef {
                    prv_type: ty,
                    thread_track: Track::Active,
                    skip_dup_null: true,
                    emit_dup: false,
                    cpu_default: None,
                    before_ovni,
                })),
                State::Nosv(_, hwc) => defs.extend(nosv::track_defs(hwc.len())),
                State::Nanos6(_) => defs.extend(nanos6::track_defs()),
            }
        }
        if !defs.is_empty() {
            chans.add_tracks(&defs, cpu, thread);
        }
        // Every thread starts progressing (before the first event, so no row shows it).
        for m in &self.models {
            match m.state {
                State::Nosv(..) => chans.track_init_all(m.base + CH_IDLE, Some(PROGRESSING)),
                State::Nanos6(_) => chans.track_init_all(
                    m.base + crate::model::nanos6::CH_IDLE,
                    Some(crate::model::nanos6::PROGRESSING),
                ),
                _ => {}
            }
        }
    }

    /// The task bookkeeping of the nanos6, nosv and openmp models, its debug lines (`-d`)
    /// collected or not.
    fn task_debug(&mut self) -> impl Iterator<Item = &mut TaskDebug> {
        self.models.iter_mut().filter_map(|m| match &mut m.state {
            State::Stack(_) => None,
            State::OpenMp(o) => Some(&mut o.debug),
            State::Nosv(n, _) => Some(&mut n.debug),
            State::Nanos6(n) => Some(&mut n.debug),
        })
    }

    /// Collects the debug lines of the task bookkeeping (`-d`).
    pub(super) fn set_debug(&mut self, on: bool) {
        for d in self.task_debug() {
            d.on = on;
        }
    }

    /// Moves the debug lines of the last event to `lines`.
    pub(super) fn take_debug(&mut self, lines: &mut Vec<String>) {
        for d in self.task_debug() {
            lines.append(&mut d.lines);
        }
    }

    /// True if the kernel model has thread `t` out of its CPU.
    pub(super) fn out_of_cpu(&self, t: usize) -> bool {
        self.models.iter().any(|m| match &m.state {
            State::Stack(s) => m.id == b'K' && s.depth(t) > 0,
            _ => false,
        })
    }

    /// Index of model `id`, if it is enabled.
    #[inline]
    pub(super) fn index(&self, id: u8) -> Option<usize> {
        let j = self.by_id[usize::from(id)];
        (j != u8::MAX).then_some(usize::from(j))
    }

    /// Plays event `ev` of enabled model `i` for thread `t` (in row `row`); sets its
    /// channels and adds ovniemu's warnings to `notes`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn event(
        &mut self,
        i: usize,
        t: usize,
        row: usize,
        tid: i64,
        state: ThreadState,
        ev: &Event<'_>,
        chans: &mut Channels,
        (cpu_prv, th_prv): (&mut Prv, &mut Prv),
        notes: &mut Vec<String>,
    ) -> Result<(), EventProblem> {
        let out = self.out_of_cpu(t);
        let Some(m) = self.models.get_mut(i) else {
            return Ok(());
        };
        let running = state == ThreadState::Running;
        match &mut m.state {
            State::Stack(stacks) => {
                let [_, c, v] = ev.mcv.0;
                let top = stacks.event(t, row, tid, running, c, v)?;
                chans.track_event(row, m.base, top, cpu_prv, th_prv);
            }
            State::OpenMp(omp) => {
                let applied = omp.event(t, row, tid, running, ev)?;
                notes.extend(applied.warning);
                for (ch, top) in applied.changes {
                    chans.track_set(row, m.base + ch, top);
                }
            }
            State::Nosv(model, _) => {
                let active = matches!(
                    state,
                    ThreadState::Running | ThreadState::Cooling | ThreadState::Warming
                );
                let changes = model.event(t, row, tid, active, out, ev)?;
                for (ch, v) in changes.0 {
                    chans.track_set(row, m.base + ch, v);
                }
            }
            State::Nanos6(model) => {
                let active = matches!(
                    state,
                    ThreadState::Running | ThreadState::Cooling | ThreadState::Warming
                );
                let changes = model.event(t, row, tid, active, ev);
                notes.extend(model.take_warning());
                for (ch, v) in changes? {
                    chans.track_set(row, m.base + ch, v);
                }
            }
        }
        Ok(())
    }

    /// The `.pcf` types of the models before (`before`) or after the ovni model, for the
    /// thread view (`thread`) or the CPU view; the lines of the errors met filling them, by
    /// model character.
    pub(super) fn pcf_types(
        &self,
        before: bool,
        thread: bool,
        errors: &mut Vec<(u8, String)>,
    ) -> Vec<PcfType> {
        let mut v = Vec::new();
        for m in self.models.iter().filter(|m| (m.id < b'O') == before) {
            match &m.state {
                State::Stack(s) => {
                    let m = s.model();
                    let track = if thread {
                        m.thread_track
                    } else {
                        Track::Running
                    };
                    v.push(PcfType {
                        ty: m.prv_type,
                        label: format!("{} {}", m.pcf_prefix, track.suffix()),
                        values: m.labels.iter().map(|&(v, l)| (v, l.to_string())).collect(),
                    });
                }
                State::OpenMp(omp) => {
                    let track = if thread {
                        Track::Active
                    } else {
                        Track::Running
                    };
                    let mut lines = Vec::new();
                    let labels = openmp::label_values(omp, thread, &mut lines);
                    errors.extend(lines.into_iter().map(|l| (m.id, l)));
                    for (&(ty, prefix), values) in
                        OPENMP_TYPES
                            .iter()
                            .zip([openmp::subsystem_values(), labels, Vec::new()])
                    {
                        v.push(PcfType {
                            ty,
                            label: format!("{prefix} {}", track.suffix()),
                            values,
                        });
                    }
                }
                State::Nosv(model, hwc) => {
                    let mut lines = Vec::new();
                    v.extend(nosv::pcf_types(
                        model,
                        hwc,
                        thread,
                        self.finished,
                        &mut lines,
                    ));
                    errors.extend(lines.into_iter().map(|l| (m.id, l)));
                }
                State::Nanos6(model) => {
                    let mut lines = Vec::new();
                    v.extend(nanos6::pcf_types(model, thread, &mut lines));
                    errors.extend(lines.into_iter().map(|l| (m.id, l)));
                }
            }
        }
        v
    }

    /// ovniemu -l's end check of the models before (`before`) or after the ovni model, in
    /// its order: for each model, the first thread (in row order) that ends inside its
    /// stack of functions or subsystems (only with `lint`), unless its finish failed before
    /// (`pcf_errors`, whose lines come in its place). Adds the lines and returns the first
    /// problem.
    pub(super) fn end_checks(
        &self,
        before: bool,
        lint: bool,
        sys: &System,
        row_thread: &[usize],
        pcf_errors: &[(u8, String)],
        lines: &mut Vec<String>,
    ) -> Option<TraceProblem> {
        let mut first = None;
        for m in self.models.iter().filter(|m| (m.id < b'O') == before) {
            let failed: Vec<String> = pcf_errors
                .iter()
                .filter(|(id, _)| *id == m.id)
                .map(|(_, l)| l.clone())
                .collect();
            if !failed.is_empty() {
                lines.extend(failed);
                continue;
            }
            if !lint {
                continue;
            }
            let (name, what, depth): (&str, &'static str, &dyn Fn(usize) -> usize) = match &m.state
            {
                State::Stack(s) => match s.model().stacked {
                    Some(what) => (s.model().name, what, &|t| s.depth(t)),
                    None => continue,
                },
                State::OpenMp(o) => ("openmp", "stacked openmp functions", &|t| o.depth(t)),
                State::Nosv(n, _) => ("nosv", "stacked nosv subsystems", &|t| n.depth(t)),
                State::Nanos6(n) => ("nanos6", "stacked nanos6 subsystems", &|t| n.depth(t)),
            };
            for &t in row_thread {
                let depth = depth(t);
                let Some(meta) = sys.threads.get(t).filter(|_| depth > 0) else {
                    continue;
                };
                lines.push(format!(
                    "end_lint: thread {} ended with {depth} {what}",
                    meta.tid
                ));
                lines.push(format!("model_{name}_finish: end_lint failed"));
                lines.push(format!(
                    "model_finish: finish failed for model '{}'",
                    m.id as char
                ));
                first.get_or_insert(TraceProblem::StackLeftPushed {
                    stream: meta.stream.clone(),
                    tid: meta.tid,
                    what,
                    depth,
                });
                break;
            }
        }
        first
    }

    /// ovniemu -l's end check of the nosv model, which also runs after a rejected event (the
    /// other models only check a trace played to its end).
    pub(super) fn abort_checks(&self, sys: &System, row_thread: &[usize], lines: &mut Vec<String>) {
        for m in &self.models {
            let State::Nosv(n, _) = &m.state else {
                continue;
            };
            let found = row_thread
                .iter()
                .find_map(|&t| Some((sys.threads.get(t)?, n.depth(t))).filter(|x| x.1 > 0));
            if let Some((meta, depth)) = found {
                lines.push(format!(
                    "end_lint: thread {} ended with {depth} stacked nosv subsystems",
                    meta.tid
                ));
                lines.push("model_nosv_finish: end_lint failed".to_string());
                lines.push("model_finish: finish failed for model 'V'".to_string());
            }
        }
    }

    /// The problem that makes a model's finish fail (two openmp type labels with the same
    /// value), if any.
    pub(super) fn finish_problem(&self) -> Option<TraceProblem> {
        self.models.iter().find_map(|m| match &m.state {
            State::OpenMp(omp) => omp.label_values().1.map(LabelCollision::problem),
            State::Nosv(n, _) if self.finished => nosv::finish_problem(n),
            State::Nanos6(n) => nanos6::finish_problem(n),
            State::Stack(_) | State::Nosv(..) => None,
        })
    }
}

/// The openmp model for the threads of `sys`, their processes numbered in ovniemu's order
/// (that of the thread rows, `row_thread`).
fn openmp_model(sys: &System, row_thread: &[usize]) -> OpenMp {
    let (first, proc_of) = crate::model::procs::processes(sys, row_thread);
    OpenMp::new(proc_of, first.len())
}

/// The lines ovniemu prints when a model other than ovni rejects event `mcv` (before the
/// common ones), or `None` if `p` is not such a rejection.
pub(super) fn rejected_lines(mcv: Mcv, p: &EventProblem) -> Option<Vec<String>> {
    if let (EventProblem::ThreadOutOfCpu { tid }, b'O') = (p, mcv.model()) {
        return Some(vec![
            format!("model_ovni_event: current thread {tid} out of CPU"),
            "model_event: event() failed for 'ovni' model".to_string(),
        ]);
    }
    match mcv.model() {
        b'P' => return openmp::rejected_lines(mcv, p),
        b'V' => return nosv::rejected_lines(mcv, p),
        b'6' => return nanos6::rejected_lines(mcv, p),
        _ => {}
    }
    let m: &StackModel = stack_model(mcv.model())?;
    let cause = match p {
        EventProblem::ThreadNotRunning { tid } => {
            format!("process_ev: current thread {tid} not running")
        }
        EventProblem::UnknownEvent { .. } => (m.unknown_event)(mcv.0[1]).to_string(),
        EventProblem::ChannelSameValue { chan, value } => {
            format!("chan_push: {chan}: same value as last_value {{int64_t {value}}}")
        }
        EventProblem::ChannelStackFull { chan } => format!("chan_push: {chan}: channel stack full"),
        EventProblem::ChannelStackEmpty { chan } => {
            format!("chan_pop: {chan}: channel stack empty")
        }
        EventProblem::ChannelPopMismatch { chan, value, top } => format!(
            "chan_pop: {chan}: expected value {{int64_t {value}}} different from top of stack {{int64_t {top}}}"
        ),
        _ => return None,
    };
    Some(vec![
        cause,
        format!("model_{}_event: {}", m.name, m.event_failed),
        format!("model_event: event() failed for '{}' model", m.name),
    ])
}

/// ovniemu's list of the enabled models, by model character.
pub(super) fn enabled_lines(required: &BTreeMap<String, String>, all: bool) -> Vec<String> {
    let table = EventTable::builtin();
    let mut models: Vec<_> = table
        .models()
        .iter()
        .filter(|m| required.contains_key(&m.name))
        .collect();
    models.sort_by_key(|m| m.id);
    if models.is_empty() {
        return Vec::new();
    }
    let mut v = vec![if all {
        format!("all {} models are enabled (-a): ", models.len())
    } else {
        format!("the following {} models are enabled: ", models.len())
    }];
    for m in models {
        v.push(format!(
            " {:>8} {} '{}' ({} events)",
            m.name,
            m.version,
            m.id as char,
            table.model_events(m.id)
        ));
    }
    v
}
