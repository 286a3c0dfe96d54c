//! The models the emulator runs besides ovni (mpi, tampi), in ovniemu's order: which are
//! enabled, their channels, `.pcf` types, events, end checks and messages. Each model is
//! described by its [`StackModel`] (`crates/ovni/src/model/{mpi,tampi}.rs`) and run by the
//! shared [`Stacks`]; this file only connects them to the emulator.

use std::collections::BTreeMap;

use super::chan::{Channels, TrackDef};
use super::pcf::PcfType;
use super::prv::Prv;
use crate::error::{EventProblem, ThreadState, TraceProblem};
use crate::events::EventTable;
use crate::metadata::System;
use crate::model::stack::{stack_model, StackModel, Stacks, Track};
use crate::raw::Mcv;

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
    id == b'O' || stack_model(id).is_some()
}

/// The enabled models other than ovni, with their state.
pub(super) struct Models {
    stacks: Vec<Stacks>,
    /// Index in `stacks` of each model character, `u8::MAX` if not enabled.
    by_id: [u8; 256],
}

impl Models {
    /// The models of `required` (model name → version, from the probe) that have stacks.
    pub(super) fn new(required: &BTreeMap<String, String>, nthreads: usize) -> Self {
        let mut ids: Vec<u8> = EventTable::builtin()
            .models()
            .iter()
            .filter(|m| required.contains_key(&m.name))
            .map(|m| m.id)
            .collect();
        ids.sort_unstable();
        let mut by_id = [u8::MAX; 256];
        let mut stacks = Vec::new();
        for id in ids {
            if let Some(m) = stack_model(id) {
                by_id[usize::from(id)] = stacks.len() as u8;
                stacks.push(Stacks::new(m, nthreads));
            }
        }
        Self { stacks, by_id }
    }

    /// Adds each model's channel to every thread and CPU.
    pub(super) fn add_channels(&self, chans: &mut Channels, cpu: &mut Prv, thread: &mut Prv) {
        let defs: Vec<TrackDef> = self
            .stacks
            .iter()
            .map(|s| TrackDef {
                prv_type: s.model().prv_type,
                thread_track: s.model().thread_track,
                before_ovni: s.model().id < b'O',
            })
            .collect();
        if !defs.is_empty() {
            chans.add_tracks(&defs, cpu, thread);
        }
    }

    /// Index of model `id`'s channel, if it is enabled.
    #[inline]
    pub(super) fn index(&self, id: u8) -> Option<usize> {
        let j = self.by_id[usize::from(id)];
        (j != u8::MAX).then_some(usize::from(j))
    }

    /// Plays event `c`,`v` of model channel `j` for thread `t`; sets the channel.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn event(
        &mut self,
        j: usize,
        t: usize,
        row: usize,
        tid: i64,
        state: ThreadState,
        c: u8,
        v: u8,
        chans: &mut Channels,
    ) -> Result<(), EventProblem> {
        let Some(stacks) = self.stacks.get_mut(j) else {
            return Ok(());
        };
        let top = stacks.event(t, row, tid, state == ThreadState::Running, c, v)?;
        chans.track_set(row, j, top);
        Ok(())
    }

    /// The `.pcf` types of the models before (`before`) or after the ovni model, for the
    /// thread view (`thread`) or the CPU view.
    pub(super) fn pcf_types(&self, before: bool, thread: bool) -> Vec<PcfType> {
        self.stacks
            .iter()
            .map(Stacks::model)
            .filter(|m| (m.id < b'O') == before)
            .map(|m| {
                let track = if thread {
                    m.thread_track
                } else {
                    Track::Running
                };
                PcfType {
                    ty: m.prv_type,
                    label: format!("{} {}", m.pcf_prefix, track.suffix()),
                    values: m.labels.iter().map(|&(v, l)| (v, l.to_string())).collect(),
                }
            })
            .collect()
    }

    /// ovniemu -l's end check of the models before (`before`) or after the ovni model, in
    /// its order: for each model, the first thread (in row order) that ends inside its
    /// stack. Adds the lines and returns the first problem.
    pub(super) fn end_checks(
        &self,
        before: bool,
        sys: &System,
        row_thread: &[usize],
        lines: &mut Vec<String>,
    ) -> Option<TraceProblem> {
        let mut first = None;
        for s in self
            .stacks
            .iter()
            .filter(|s| (s.model().id < b'O') == before)
        {
            let m = s.model();
            for &t in row_thread {
                let depth = s.depth(t);
                let Some(meta) = sys.threads.get(t).filter(|_| depth > 0) else {
                    continue;
                };
                lines.push(format!(
                    "end_lint: thread {} ended with {depth} {}",
                    meta.tid, m.stacked
                ));
                lines.push(format!("model_{}_finish: end_lint failed", m.name));
                lines.push(format!(
                    "model_finish: finish failed for model '{}'",
                    m.id as char
                ));
                first.get_or_insert(TraceProblem::StackLeftPushed {
                    stream: meta.stream.clone(),
                    tid: meta.tid,
                    what: m.stacked,
                    depth,
                });
                break;
            }
        }
        first
    }
}

/// The lines ovniemu prints when a model other than ovni rejects event `mcv` (before the
/// common ones), or `None` if `p` is not such a rejection.
pub(super) fn rejected_lines(mcv: Mcv, p: &EventProblem) -> Option<Vec<String>> {
    let m: &StackModel = stack_model(mcv.model())?;
    let cause = match p {
        EventProblem::ThreadNotRunning { tid } => {
            format!("process_ev: current thread {tid} not running")
        }
        EventProblem::UnknownEvent { .. } => format!("process_ev: {}", m.unknown_event),
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
pub(super) fn enabled_lines(required: &BTreeMap<String, String>) -> Vec<String> {
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
    let mut v = vec![format!(
        "the following {} models are enabled: ",
        models.len()
    )];
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
