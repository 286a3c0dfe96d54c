//! The channels of the models other than ovni (nosv, tampi, mpi, kernel, openmp): one value
//! per thread and channel (a stack's top, a task's id, ...), shown in the thread's row while
//! the thread's state selects it and in the row of the CPU the thread runs on (or a default
//! when none does), through the same kind of muxes as the marks.
//!
//! Their ids follow all the ovni model's: per thread row `in[j].., out[j]..` interleaved as
//! `(in, out)` pairs, then per CPU row `out[j]..`.

use super::super::prv::Prv;
use super::{write, Chan, Channels, File, Kind, Reg, Rule, TH_STATE};
use crate::model::stack::Track;

/// One channel of another model, as the emulator shows it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TrackDef {
    /// Paraver record type (thread and CPU rows).
    pub(crate) prv_type: u32,
    /// Which states of the thread select it in the thread's row.
    pub(crate) thread_track: Track,
    /// A repeated null is not written again, a repeated value is (else no repeated value is
    /// written).
    pub(crate) skip_dup_null: bool,
    /// Every change is written, a repeated value or null too (overrides `skip_dup_null`).
    pub(crate) emit_dup: bool,
    /// What the CPU's row shows when no thread runs on it (else nothing).
    pub(crate) cpu_default: Option<i64>,
    /// The model comes before the ovni model in ovniemu's order (model character before
    /// `O`), so its muxes run before the ovni model's.
    pub(crate) before_ovni: bool,
}

impl Channels {
    /// Adds the channels of `defs` to every thread and CPU row.
    pub(crate) fn add_tracks(&mut self, defs: &[TrackDef], cpu_prv: &mut Prv, th_prv: &mut Prv) {
        let n = defs.len();
        let ncpus = self.cpu_sel.len();
        self.tracks = defs.to_vec();
        self.track_base = self.chans.len();
        self.chans.resize(
            self.track_base + self.nthreads * 2 * n + ncpus * n,
            Chan::BLANK,
        );
        for (j, d) in defs.iter().enumerate() {
            let rule = if d.emit_dup {
                Rule::Emit
            } else if d.skip_dup_null {
                Rule::SkipDupNull
            } else {
                Rule::SkipDup
            };
            for t in 0..self.nthreads {
                self.set_kind(self.track_in(t, j), Kind::Track(t as u32, j as u16));
                let reg = Reg {
                    file: File::Thread,
                    row: t as u32,
                    ty: th_prv.type_slot(d.prv_type),
                    rule,
                };
                self.set_reg(self.track_th_out(t, j), reg);
            }
            for c in 0..ncpus {
                let reg = Reg {
                    file: File::Cpu,
                    row: c as u32,
                    ty: cpu_prv.type_slot(d.prv_type),
                    rule,
                };
                self.set_reg(self.track_cpu_out(c, j), reg);
            }
        }
    }

    fn track_in(&self, t: usize, j: usize) -> usize {
        self.track_base + (t * self.tracks.len() + j) * 2
    }

    fn track_th_out(&self, t: usize, j: usize) -> usize {
        self.track_in(t, j) + 1
    }

    pub(super) fn track_cpu_out(&self, c: usize, j: usize) -> usize {
        self.track_base + self.nthreads * 2 * self.tracks.len() + c * self.tracks.len() + j
    }

    /// Channel `j` of thread `t` (the model's value, `None` when its stack is empty).
    pub(crate) fn track_set(&mut self, t: usize, j: usize, v: Option<i64>) {
        self.set(self.track_in(t, j), v);
    }

    /// Channel `j` of thread `t` set by an event that sets no other channel: as
    /// [`Channels::track_set`] then [`Channels::propagate`], but when nothing else is dirty
    /// and the mux outputs have no callback (no breakdown view reads them), the outputs are
    /// written as they are set, in the order the input's callback sets them (the thread's
    /// row, then its CPU's).
    pub(crate) fn track_event(
        &mut self,
        t: usize,
        j: usize,
        v: Option<i64>,
        cpu_prv: &mut Prv,
        th_prv: &mut Prv,
    ) {
        let th_out = self.track_th_out(t, j);
        let cpu_out = self
            .th_cpu_sel
            .get(t)
            .copied()
            .flatten()
            .map(|c| self.track_cpu_out(c as usize, j));
        let plain = |id: usize| self.chans.get(id).is_some_and(|c| c.kind == Kind::Plain);
        if !self.dirty.is_empty() || !plain(th_out) || !cpu_out.is_none_or(plain) {
            self.track_set(t, j, v);
            self.propagate(cpu_prv, th_prv);
            return;
        }
        let (selected, input) = (self.track_selected(t, j), self.track_in(t, j));
        if let Some(ch) = self.chans.get_mut(input) {
            ch.value = v;
        }
        for id in [selected.then_some(th_out), cpu_out].into_iter().flatten() {
            if let Some(ch) = self.chans.get_mut(id) {
                ch.value = v;
                write(ch, cpu_prv, th_prv);
            }
        }
    }

    /// The value channel `j` of every thread has before the first event (writes nothing: no
    /// row shows it yet).
    pub(crate) fn track_init_all(&mut self, j: usize, v: Option<i64>) {
        for t in 0..self.nthreads {
            let id = self.track_in(t, j);
            if let Some(ch) = self.chans.get_mut(id) {
                ch.value = v;
            }
        }
    }

    fn track_selected(&self, t: usize, j: usize) -> bool {
        let state = self.get(self.th(t, TH_STATE));
        self.tracks
            .get(j)
            .is_some_and(|d| d.thread_track.selects(state))
    }

    /// The state of thread `t` changed: the thread muxes of the models `before` (or after)
    /// the ovni model select their input or nothing.
    pub(super) fn select_thread_tracks(&mut self, t: usize, before: bool) {
        for j in 0..self.tracks.len() {
            // A row that always shows the thread's value has no mux to re-select.
            let muxed = |d: &TrackDef| d.before_ovni == before && d.thread_track != Track::Any;
            if self.tracks.get(j).is_some_and(muxed) {
                let v = if self.track_selected(t, j) {
                    self.get(self.track_in(t, j))
                } else {
                    None
                };
                self.set(self.track_th_out(t, j), v);
            }
        }
    }

    /// The running thread of CPU `c` is now `new`: the CPU muxes of the models `before` (or
    /// after) the ovni model follow it.
    pub(super) fn select_cpu_tracks(&mut self, c: usize, new: Option<usize>, before: bool) {
        for j in 0..self.tracks.len() {
            let Some(&d) = self.tracks.get(j).filter(|d| d.before_ovni == before) else {
                continue;
            };
            let v = match new {
                Some(t) => self.get(self.track_in(t, j)),
                None => d.cpu_default,
            };
            self.set(self.track_cpu_out(c, j), v);
        }
    }

    /// Channel `j` of thread `t` changed: the muxes that select it follow (the thread's
    /// first: it is always selected before its CPU's).
    pub(super) fn track_input(&mut self, t: usize, j: usize) {
        let v = self.get(self.track_in(t, j));
        if self.track_selected(t, j) {
            self.set(self.track_th_out(t, j), v);
        }
        if let Some(Some(c)) = self.th_cpu_sel.get(t).copied() {
            self.set(self.track_cpu_out(c as usize, j), v);
        }
    }
}
