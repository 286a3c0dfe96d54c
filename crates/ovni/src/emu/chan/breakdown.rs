//! The breakdown views (`-b`): per physical CPU, what the thread running on it does, sorted
//! across the CPUs: row `i` of `<model>-breakdown.prv` holds the `i`-th smallest value.
//!
//! * nanos6 and nosv: the task type while a task body runs, else the subsystem ("Unknown
//!   subsystem" when none), unless the idle state is not "progressing" (then the idle state);
//! * openmp: the label while there is one, else the subsystem.
//!
//! As in the original, muxes per CPU build the value and a sorting stage orders them, each a
//! channel of the dirty list. For nanos6 and nosv, `tr` follows the subsystem or the task type
//! (chosen again only when the subsystem channel changes) and `tri` follows `tr` or the idle
//! state (chosen again when the idle state changes); for openmp one mux follows the label or
//! the subsystem (chosen again when the label changes). Each change of a CPU's value re-sorts
//! the rows.

use super::{Chan, Channels, File, Kind, Rule};
use crate::emu::prv::Prv;

const PROGRESSING: i64 = 100;

/// What a breakdown view shows.
#[derive(Debug, Clone, Copy)]
pub(crate) enum View {
    /// nanos6 or nosv: the track indices of the subsystem, task type and idle channels, the
    /// subsystem of a running task body and the value shown without subsystem.
    Tasks {
        ss: usize,
        tt: usize,
        idle: usize,
        task_body: i64,
        unknown: i64,
    },
    /// openmp: the track indices of the subsystem and label channels.
    Labels { ss: usize, label: usize },
}

/// Roles of the channels of a stage (the low 3 bits of a [`Kind::Bd`] code).
const SS: u16 = 0;
const TT: u16 = 1;
const IDLE: u16 = 2;
const TR: u16 = 3;
const TRI: u16 = 4;
const LABEL: u16 = 5;

/// One breakdown view.
#[derive(Debug)]
pub(crate) struct Stage {
    view: View,
    /// The CPU row of each physical CPU.
    cpus: Vec<usize>,
    /// Channel ids of the first `tr` and `tri` (for openmp, of the mux output and its copy)
    /// and output row channel (one per physical CPU each).
    tr: usize,
    tri: usize,
    out: usize,
    /// Input selected by each CPU's first and second mux, if any.
    sel_a: Vec<Option<u8>>,
    sel_b: Vec<Option<u8>>,
    /// Each CPU's sorted value, and all of them in order.
    values: Vec<i64>,
    pub(super) sorted: Vec<i64>,
    /// The records of the rows: `(key, row, type slot, value)`.
    pub(crate) records: Vec<(u32, u32, u16, i64)>,
}

impl Stage {
    /// True if channel `id` is one of its rows.
    pub(super) fn has_row(&self, id: usize) -> bool {
        (self.out..self.out + self.values.len()).contains(&id)
    }
}

impl Channels {
    /// Adds a breakdown view over the physical CPUs (their CPU rows `cpus`), its rows of type
    /// `ty` written to `prv`; returns its index (that of [`Channels::breakdown_records`]).
    pub(crate) fn enable_breakdown(
        &mut self,
        view: View,
        cpus: &[usize],
        ty: u32,
        prv: &mut Prv,
    ) -> usize {
        let stage = self.breakdown.len();
        let cpus: Vec<usize> = cpus
            .iter()
            .copied()
            .filter(|&c| c < self.cpu_sel.len())
            .collect();
        let nphy = cpus.len();
        let base = self.chans.len();
        let slot = prv.type_slot(ty);
        self.chans.resize(base + 3 * nphy, Chan::BLANK);
        let code = |role: u16| (stage as u16) << 3 | role;
        for (c, &row) in cpus.iter().enumerate() {
            let cpu = c as u32;
            let inputs: &[(usize, u16)] = match view {
                View::Tasks { ss, tt, idle, .. } => &[(ss, SS), (tt, TT), (idle, IDLE)],
                View::Labels { ss, label } => &[(ss, SS), (label, LABEL)],
            };
            for &(j, role) in inputs {
                self.set_kind(self.track_cpu_out(row, j), Kind::Bd(cpu, code(role)));
            }
            self.set_kind(base + c, Kind::Bd(cpu, code(TR)));
            if matches!(view, View::Tasks { .. }) {
                self.set_kind(base + nphy + c, Kind::Bd(cpu, code(TRI)));
            }
            if let Some(ch) = self.chans.get_mut(base + 2 * nphy + c) {
                ch.file = File::Breakdown;
                ch.row = cpu;
                ch.ty = slot;
                ch.key = Prv::key(cpu, slot);
                ch.rule = Rule::SkipDup;
            }
        }
        self.breakdown.push(Stage {
            view,
            cpus,
            tr: base,
            tri: base + nphy,
            out: base + 2 * nphy,
            sel_a: vec![None; nphy],
            sel_b: vec![None; nphy],
            values: vec![0; nphy],
            sorted: vec![0; nphy],
            records: Vec::new(),
        });
        stage
    }

    /// The records of each breakdown view written since the last call, by view index.
    pub(crate) fn breakdown_records(
        &mut self,
    ) -> impl Iterator<Item = (usize, &mut Vec<(u32, u32, u16, i64)>)> {
        self.breakdown
            .iter_mut()
            .enumerate()
            .map(|(i, s)| (i, &mut s.records))
            .filter(|(_, r)| !r.is_empty())
    }

    /// The callbacks of breakdown channel `id` of CPU `c` (`code`: view and role).
    pub(super) fn breakdown_callbacks(&mut self, c: u32, code: u16, id: usize) {
        let c = c as usize;
        let Some(s) = self.breakdown.get(usize::from(code >> 3)) else {
            return;
        };
        let (view, tr, tri) = (s.view, s.tr + c, s.tri + c);
        let row = s.cpus.get(c).copied().unwrap_or(0);
        let stage = usize::from(code >> 3);
        let v = self.get(id);
        match (view, code & 7) {
            (
                View::Tasks {
                    tt,
                    task_body,
                    unknown,
                    ..
                },
                SS,
            ) => {
                let ttv = self.get(self.track_cpu_out(row, tt));
                let in_body = v == Some(task_body) && ttv.is_some();
                let (sel, out) = if in_body {
                    (Some(1), ttv)
                } else if v.is_none() {
                    (None, Some(unknown))
                } else {
                    (Some(0), v)
                };
                self.select(stage, c, false, sel);
                self.set(tr, out);
                if sel == Some(0) {
                    self.set(tr, v);
                }
            }
            (View::Tasks { .. }, TT) if self.selected(stage, c, false) == Some(1) => {
                self.set(tr, v);
            }
            (View::Tasks { .. }, IDLE) => {
                let sel = if v == Some(PROGRESSING) { 0 } else { 1 };
                self.select(stage, c, true, Some(sel));
                let out = if sel == 0 { self.get(tr) } else { v };
                self.set(tri, out);
                if sel == 1 {
                    self.set(tri, v);
                }
            }
            (View::Tasks { .. }, TR) if self.selected(stage, c, true) == Some(0) => {
                self.set(tri, v);
            }
            (View::Tasks { .. }, TRI) | (View::Labels { .. }, TR) => {
                self.sort_input(stage, c, v.unwrap_or(0));
            }
            (View::Labels { ss, .. }, LABEL) => {
                let sel = if v.is_some() { 0 } else { 1 };
                self.select(stage, c, false, Some(sel));
                let out = if sel == 0 {
                    v
                } else {
                    self.get(self.track_cpu_out(row, ss))
                };
                self.set(tr, out);
                if sel == 0 {
                    self.set(tr, v);
                }
            }
            (View::Labels { .. }, SS) if self.selected(stage, c, false) == Some(1) => {
                self.set(tr, v);
            }
            _ => {}
        }
    }

    fn select(&mut self, stage: usize, c: usize, second: bool, sel: Option<u8>) {
        if let Some(s) = self.breakdown.get_mut(stage) {
            let v = if second { &mut s.sel_b } else { &mut s.sel_a };
            if let Some(x) = v.get_mut(c) {
                *x = sel;
            }
        }
    }

    fn selected(&self, stage: usize, c: usize, second: bool) -> Option<u8> {
        let s = self.breakdown.get(stage)?;
        let v = if second { &s.sel_b } else { &s.sel_a };
        v.get(c).copied().flatten()
    }

    /// CPU `c`'s value in view `stage` is now `new`: the rows whose value changes are set.
    pub(super) fn sort_input(&mut self, stage: usize, c: usize, new: i64) {
        let Some(s) = self.breakdown.get_mut(stage) else {
            return;
        };
        let Some(old) = s.values.get_mut(c) else {
            return;
        };
        if *old == new {
            return;
        }
        let was = *old;
        *old = new;
        // The sorted values hold `was` once for this CPU: replace it by `new`, keeping the
        // order (linear, as the rows are compared one by one below anyway).
        let sorted = &mut s.sorted;
        if let Ok(i) = sorted.binary_search(&was) {
            let j = sorted.partition_point(|&v| v < new);
            if j > i {
                sorted.copy_within(i + 1..j, i);
                if let Some(x) = sorted.get_mut(j - 1) {
                    *x = new;
                }
            } else {
                sorted.copy_within(j..i, j + 1);
                if let Some(x) = sorted.get_mut(j) {
                    *x = new;
                }
            }
        } else {
            sorted.clone_from(&s.values);
            sorted.sort_unstable();
        }
        let out = s.out;
        let sorted = std::mem::take(&mut s.sorted);
        for (i, &v) in sorted.iter().enumerate() {
            if self.get(out + i) != Some(v) {
                self.set(out + i, Some(v));
            }
        }
        if let Some(s) = self.breakdown.get_mut(stage) {
            s.sorted = sorted;
        }
    }
}
