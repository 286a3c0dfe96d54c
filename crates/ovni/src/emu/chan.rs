//! Channels: the values the emulator tracks, and the Paraver records they produce.
//!
//! This reproduces what ovniemu 1.14 writes, record for record and in the same order within a
//! timestamp. In the original every value lives in a *channel*; setting a channel marks it
//! dirty (once per event, in the order they are set). After each event the dirty channels
//! run their callbacks in that order: the *muxes* that follow another channel (the marks of
//! a thread while it is active, the flush and marks of the thread running on a CPU) set their
//! output channels, which join the end of the dirty list. Then every dirty channel that has a
//! Paraver row writes one record, in dirty order, filtered by the row's duplicate rule.
//!
//! Channel ids are flat: per thread row `cpu, state, tid, flush, mark[k].., markout[k]..`,
//! then per CPU row `tid, pid, th_running, nrunning, flushout, markout[k]..`, then the
//! channels of the other models (`chan/track.rs`).

mod breakdown;
mod track;

use super::prv::Prv;
use breakdown::Stage;
pub(crate) use breakdown::View;
pub(crate) use track::TrackDef;

/// Paraver record types of the ovni model, as ovniemu 1.14 numbers them (the `.pcf` files
/// name them).
const TY_PID: u32 = 1;
const TY_TID: u32 = 2;
const TY_NRUN: u32 = 3;
const TY_STATE: u32 = 4;
const TY_CPU: u32 = 6;
const TY_FLUSH: u32 = 7;
/// Mark type `t` is written as record type `100 + t`.
pub(crate) const TY_MARK: u32 = 100;

const TH_CPU: usize = 0;
const TH_STATE: usize = 1;
const TH_TID: usize = 2;
const TH_FLUSH: usize = 3;
const TH_MARKS: usize = 4;

const CPU_TID: usize = 0;
const CPU_PID: usize = 1;
const CPU_THRUN: usize = 2;
const CPU_NRUN: usize = 3;
const CPU_FLUSH: usize = 4;
const CPU_MARKS: usize = 5;

/// How a Paraver row treats a value equal to the last one it wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rule {
    /// Written again.
    Emit,
    /// Not written.
    SkipDup,
    /// Not written if it is null, written again otherwise.
    SkipDupNull,
    /// Written again, with 1 added to non-null values (CPU indices are 1-based).
    Next,
}

/// What a channel is, so that its callbacks need no arithmetic on its id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// No callback (its value only goes to a Paraver row).
    Plain,
    /// A thread's state: selects its mark muxes.
    State(u32),
    /// A thread's flush channel: input of its CPU's flush mux.
    Flush(u32),
    /// A thread's mark channel `k`: input of its mark mux and of its CPU's.
    Mark(u32, u16),
    /// A CPU's running thread: selects its flush and mark muxes.
    Running(u32),
    /// A thread's channel `j` of another model: input of its thread and CPU muxes.
    Track(u32, u16),
    /// A channel of CPU row `.0` in a breakdown view (`chan/breakdown.rs`; `.1`: the view's
    /// index and the channel's role).
    Bd(u32, u16),
}

/// The Paraver file a channel writes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum File {
    /// No Paraver row.
    None,
    Cpu,
    Thread,
    /// A row of a breakdown view.
    Breakdown,
}

/// One channel: its value, what a change does and its Paraver row (all in one place, so that
/// a change touches one cache line).
#[derive(Debug, Clone, Copy)]
#[repr(align(64))]
struct Chan {
    value: Option<i64>,
    /// Last value written (meaningful once `written`).
    last: Option<i64>,
    kind: Kind,
    row: u32,
    /// Type slot in its file ([`Prv::type_slot`]).
    ty: u16,
    /// `row` and `ty` as a record key ([`Prv::key`]).
    key: u32,
    file: File,
    rule: Rule,
    written: bool,
    is_dirty: bool,
    /// Setting the value the channel already has does not make it dirty.
    ignore_dup: bool,
}

impl Chan {
    /// A channel without value, callback nor Paraver row.
    const BLANK: Self = Self {
        value: None,
        last: None,
        kind: Kind::Plain,
        row: 0,
        ty: 0,
        key: 0,
        file: File::None,
        rule: Rule::Emit,
        written: false,
        is_dirty: false,
        ignore_dup: false,
    };
}

/// A channel's Paraver row.
#[derive(Debug, Clone, Copy)]
struct Reg {
    file: File,
    row: u32,
    ty: u16,
    rule: Rule,
}

/// Every channel of the ovni model and the state of its muxes.
#[derive(Debug)]
pub(crate) struct Channels {
    chans: Vec<Chan>,
    dirty: Vec<u32>,
    /// The dirty channels with a callback, in dirty order. Callbacks only set channels without
    /// one, so running the callbacks of this list is running those of the dirty list.
    dirty_cb: Vec<u32>,
    nthreads: usize,
    nmarks: usize,
    th_stride: usize,
    cpu_stride: usize,
    /// Tid and pid of each thread row.
    tids: Vec<i64>,
    pids: Vec<i64>,
    /// The thread's mark muxes select their input (the thread is active).
    th_active: Vec<bool>,
    /// CPU row whose muxes select this thread.
    th_cpu_sel: Vec<Option<u32>>,
    /// Thread row selected by each CPU's muxes.
    cpu_sel: Vec<Option<u32>>,
    /// The channels of the other models ([`Channels::add_tracks`]).
    tracks: Vec<TrackDef>,
    /// Id of the first of them.
    track_base: usize,
    /// The breakdown views (`-b`).
    breakdown: Vec<Stage>,
}

impl Channels {
    /// Channels for threads with `(tid, pid)` per row, `ncpus` CPU rows and mark types with
    /// Paraver type offsets `marks` (stack or single does not matter here).
    pub(crate) fn new(
        threads: &[(i64, i64)],
        ncpus: usize,
        marks: &[i64],
        cpu_prv: &mut Prv,
        th_prv: &mut Prv,
    ) -> Self {
        let nthreads = threads.len();
        let nmarks = marks.len();
        let th_stride = TH_MARKS + 2 * nmarks;
        let cpu_stride = CPU_MARKS + nmarks;
        let n = nthreads * th_stride + ncpus * cpu_stride;
        let mut c = Self {
            chans: vec![Chan::BLANK; n],
            dirty: Vec::with_capacity(64),
            dirty_cb: Vec::with_capacity(64),
            nthreads,
            nmarks,
            th_stride,
            cpu_stride,
            tids: threads.iter().map(|t| t.0).collect(),
            pids: threads.iter().map(|t| t.1).collect(),
            th_active: vec![false; nthreads],
            th_cpu_sel: vec![None; nthreads],
            cpu_sel: vec![None; ncpus],
            tracks: Vec::new(),
            track_base: n,
            breakdown: Vec::new(),
        };
        let mark_ty = |k: usize| TY_MARK + marks.get(k).map_or(0, |&m| m as u32);
        for t in 0..nthreads {
            let row = t as u32;
            let mut reg = |ty, rule| Reg {
                file: File::Thread,
                row,
                ty: th_prv.type_slot(ty),
                rule,
            };
            let b = t * th_stride;
            c.set_reg(b + TH_CPU, reg(TY_CPU, Rule::Next));
            c.set_reg(b + TH_STATE, reg(TY_STATE, Rule::SkipDup));
            c.set_reg(b + TH_TID, reg(TY_TID, Rule::Emit));
            c.set_reg(b + TH_FLUSH, reg(TY_FLUSH, Rule::SkipDup));
            if let Some(ch) = c.chans.get_mut(b + TH_TID) {
                ch.ignore_dup = true;
            }
            for k in 0..nmarks {
                c.set_reg(
                    b + TH_MARKS + nmarks + k,
                    reg(mark_ty(k), Rule::SkipDupNull),
                );
                c.set_kind(b + TH_MARKS + k, Kind::Mark(row, k as u16));
            }
            c.set_kind(b + TH_STATE, Kind::State(row));
            c.set_kind(b + TH_FLUSH, Kind::Flush(row));
        }
        for cpu in 0..ncpus {
            let row = cpu as u32;
            let mut reg = |ty, rule| Reg {
                file: File::Cpu,
                row,
                ty: cpu_prv.type_slot(ty),
                rule,
            };
            let b = nthreads * th_stride + cpu * cpu_stride;
            c.set_reg(b + CPU_TID, reg(TY_TID, Rule::Emit));
            c.set_reg(b + CPU_PID, reg(TY_PID, Rule::Emit));
            c.set_reg(b + CPU_NRUN, reg(TY_NRUN, Rule::Emit));
            c.set_reg(b + CPU_FLUSH, reg(TY_FLUSH, Rule::SkipDup));
            for k in 0..nmarks {
                c.set_reg(b + CPU_MARKS + k, reg(mark_ty(k), Rule::SkipDupNull));
            }
            c.set_kind(b + CPU_THRUN, Kind::Running(row));
            for s in [CPU_TID, CPU_PID, CPU_THRUN, CPU_NRUN] {
                if let Some(ch) = c.chans.get_mut(b + s) {
                    ch.ignore_dup = true;
                }
            }
        }
        c
    }

    fn set_kind(&mut self, id: usize, kind: Kind) {
        if let Some(ch) = self.chans.get_mut(id) {
            ch.kind = kind;
        }
    }

    fn set_reg(&mut self, id: usize, reg: Reg) {
        if let Some(c) = self.chans.get_mut(id) {
            c.file = reg.file;
            c.row = reg.row;
            c.ty = reg.ty;
            c.key = Prv::key(reg.row, reg.ty);
            c.rule = reg.rule;
        }
    }

    #[inline]
    fn th(&self, t: usize, slot: usize) -> usize {
        t * self.th_stride + slot
    }

    #[inline]
    fn cpu(&self, c: usize, slot: usize) -> usize {
        self.nthreads * self.th_stride + c * self.cpu_stride + slot
    }

    #[inline]
    fn get(&self, id: usize) -> Option<i64> {
        self.chans.get(id).and_then(|c| c.value)
    }

    #[inline]
    fn set(&mut self, id: usize, v: Option<i64>) {
        let Some(ch) = self.chans.get_mut(id) else {
            return;
        };
        if ch.ignore_dup && ch.value == v {
            return;
        }
        ch.value = v;
        if !ch.is_dirty {
            ch.is_dirty = true;
            self.dirty.push(id as u32);
            if !matches!(ch.kind, Kind::Plain) {
                self.dirty_cb.push(id as u32);
            }
        }
    }

    /// `thread_set_cpu` / `thread_unset_cpu` / `thread_migrate_cpu`: the CPU row of thread `t`.
    pub(crate) fn thread_cpu(&mut self, t: usize, cpu: Option<usize>) {
        self.set(self.th(t, TH_CPU), cpu.map(|c| c as i64));
    }

    /// `thread_set_state`: the state and the tid while active.
    pub(crate) fn thread_state(&mut self, t: usize, state: i64, active: bool) {
        self.set(self.th(t, TH_STATE), Some(state));
        let tid = self.tids.get(t).copied().filter(|_| active);
        self.set(self.th(t, TH_TID), tid);
    }

    /// `cpu_update`: running thread row (when exactly one runs) and the number running.
    pub(crate) fn cpu_update(&mut self, c: usize, running: Option<usize>, nrun: u32) {
        let tid = running.and_then(|t| self.tids.get(t).copied());
        let pid = running.and_then(|t| self.pids.get(t).copied());
        self.set(self.cpu(c, CPU_TID), tid);
        self.set(self.cpu(c, CPU_PID), pid);
        self.set(self.cpu(c, CPU_THRUN), running.map(|t| t as i64));
        self.set(self.cpu(c, CPU_NRUN), Some(i64::from(nrun)));
    }

    /// The flush channel of thread `t` (1 while flushing).
    pub(crate) fn flush(&mut self, t: usize, v: Option<i64>) {
        self.set(self.th(t, TH_FLUSH), v);
    }

    /// Mark channel `k` of thread `t` (a single value or the top of a stack).
    pub(crate) fn mark(&mut self, t: usize, k: usize, v: Option<i64>) {
        self.set(self.th(t, TH_MARKS + k), v);
    }

    /// Runs the muxes of the dirty channels, then writes the records of the event in dirty
    /// order.
    #[inline(always)]
    pub(crate) fn propagate(&mut self, cpu_prv: &mut Prv, th_prv: &mut Prv) {
        // Called after every event; most set no channel or write theirs directly.
        if !self.dirty.is_empty() {
            self.propagate_dirty(cpu_prv, th_prv);
        }
    }

    #[inline(never)]
    fn propagate_dirty(&mut self, cpu_prv: &mut Prv, th_prv: &mut Prv) {
        let mut i = 0;
        while let Some(&id) = self.dirty_cb.get(i) {
            self.callbacks(id as usize);
            i += 1;
        }
        self.dirty_cb.clear();
        for &id in &self.dirty {
            let Some(ch) = self.chans.get_mut(id as usize) else {
                continue;
            };
            ch.is_dirty = false;
            if ch.file == File::Breakdown {
                let id = id as usize;
                let stage = self.breakdown.iter_mut().find(|s| s.has_row(id));
                if let (Some(s), Some(r)) = (stage, breakdown_record(ch)) {
                    s.records.push(r);
                }
                continue;
            }
            write(ch, cpu_prv, th_prv);
        }
        self.dirty.clear();
    }

    /// Sets channel `id` and writes its record at once to `prv`, as [`Channels::propagate`]
    /// would if it were the next dirty channel: only for a channel without callback, set once
    /// in an event whose earlier channels were all written (the dirty list is empty).
    /// `ignore_dup` and `rule` are the channel's (as [`Channels::new`] registers it), passed
    /// as constants so that each call compiles to its own checks. Returns whether the channel
    /// changed (became dirty).
    #[inline(always)]
    fn set_write(
        &mut self,
        id: usize,
        v: Option<i64>,
        ignore_dup: bool,
        rule: Rule,
        prv: &mut Prv,
    ) -> bool {
        let Some(ch) = self.chans.get_mut(id) else {
            return false;
        };
        debug_assert!(ch.ignore_dup == ignore_dup && ch.rule == rule && ch.file != File::None);
        if ignore_dup && ch.value == v {
            return false;
        }
        ch.value = v;
        write_as(ch, rule, prv);
        true
    }

    /// A thread state event: [`Channels::thread_state`], then [`Channels::cpu_update`] of its
    /// CPU (`(row, running, nrun)`) if it has one, and [`Channels::propagate`]; the channels
    /// without callback are written as they are set (the order is the dirty order: each is
    /// set once, and the callbacks only set channels after them).
    pub(crate) fn thread_state_event(
        &mut self,
        t: usize,
        state: i64,
        active: bool,
        cpu: Option<(usize, Option<usize>, u32)>,
        cpu_prv: &mut Prv,
        th_prv: &mut Prv,
    ) {
        if !self.dirty.is_empty() || !self.tracks.is_empty() {
            self.thread_state(t, state, active);
            if let Some((c, running, nrun)) = cpu {
                self.cpu_update(c, running, nrun);
            }
            self.propagate(cpu_prv, th_prv);
            return;
        }
        // The state channel has a callback (run below) and no duplicate rule for setting.
        let sid = self.th(t, TH_STATE);
        if let Some(ch) = self.chans.get_mut(sid) {
            ch.value = Some(state);
            write_as(ch, Rule::SkipDup, th_prv);
        }
        let tid = self.tids.get(t).copied().filter(|_| active);
        self.set_write(self.th(t, TH_TID), tid, true, Rule::Emit, th_prv);
        let mut reselect = None;
        if let Some((c, running, nrun)) = cpu {
            let tid = running.and_then(|t| self.tids.get(t).copied());
            let pid = running.and_then(|t| self.pids.get(t).copied());
            self.set_write(self.cpu(c, CPU_TID), tid, true, Rule::Emit, cpu_prv);
            self.set_write(self.cpu(c, CPU_PID), pid, true, Rule::Emit, cpu_prv);
            let rid = self.cpu(c, CPU_THRUN);
            let r = running.map(|t| t as i64);
            if let Some(ch) = self.chans.get_mut(rid) {
                if ch.value != r {
                    ch.value = r;
                    reselect = Some((c, rid));
                }
            }
            let n = Some(i64::from(nrun));
            self.set_write(self.cpu(c, CPU_NRUN), n, true, Rule::Emit, cpu_prv);
        }
        // The callbacks in dirty order (the state's, then the running thread's), writing
        // their channels as they set them: each is set once, after the channels above.
        let active = matches!(state, 1 | 4 | 5);
        if let Some(a) = self.th_active.get_mut(t) {
            *a = active;
        }
        for k in 0..self.nmarks {
            let v = if active {
                self.get(self.th(t, TH_MARKS + k))
            } else {
                None
            };
            let out = self.th(t, TH_MARKS + self.nmarks + k);
            self.set_write(out, v, false, Rule::SkipDupNull, th_prv);
        }
        if let Some((c, rid)) = reselect {
            let new = self.reselect(c, rid);
            let flush = new.and_then(|t| self.get(self.th(t, TH_FLUSH)));
            self.set_write(self.cpu(c, CPU_FLUSH), flush, false, Rule::SkipDup, cpu_prv);
            for k in 0..self.nmarks {
                let v = new.and_then(|t| self.get(self.th(t, TH_MARKS + k)));
                let out = self.cpu(c, CPU_MARKS + k);
                self.set_write(out, v, false, Rule::SkipDupNull, cpu_prv);
            }
        }
    }

    /// A mark event: [`Channels::mark`] then [`Channels::propagate`], writing the mux
    /// outputs directly (the input has no row; the thread's mux output comes before the
    /// CPU's, as their callbacks set them).
    pub(crate) fn mark_event(
        &mut self,
        t: usize,
        k: usize,
        v: Option<i64>,
        cpu_prv: &mut Prv,
        th_prv: &mut Prv,
    ) {
        if !self.dirty.is_empty() || k >= self.nmarks {
            self.mark(t, k, v);
            self.propagate(cpu_prv, th_prv);
            return;
        }
        let id = self.th(t, TH_MARKS + k);
        let Some(ch) = self.chans.get_mut(id) else {
            return;
        };
        ch.value = v;
        if self.th_active.get(t) == Some(&true) {
            let out = self.th(t, TH_MARKS + self.nmarks + k);
            self.set_write(out, v, false, Rule::SkipDupNull, th_prv);
        }
        if let Some(Some(c)) = self.th_cpu_sel.get(t).copied() {
            let out = self.cpu(c as usize, CPU_MARKS + k);
            self.set_write(out, v, false, Rule::SkipDupNull, cpu_prv);
        }
    }

    #[inline]
    fn callbacks(&mut self, id: usize) {
        match self.chans.get(id).map(|c| c.kind) {
            None | Some(Kind::Plain) => {}
            Some(Kind::State(t)) => {
                let t = t as usize;
                let active = matches!(self.get(id), Some(1 | 4 | 5));
                if let Some(a) = self.th_active.get_mut(t) {
                    *a = active;
                }
                // ovniemu connects the models by model character: those before 'O' have
                // their callbacks before the ovni model's.
                self.select_thread_tracks(t, true);
                for k in 0..self.nmarks {
                    let v = if active {
                        self.get(self.th(t, TH_MARKS + k))
                    } else {
                        None
                    };
                    self.set(self.th(t, TH_MARKS + self.nmarks + k), v);
                }
                self.select_thread_tracks(t, false);
            }
            Some(Kind::Flush(t)) => {
                if let Some(Some(c)) = self.th_cpu_sel.get(t as usize).copied() {
                    self.set(self.cpu(c as usize, CPU_FLUSH), self.get(id));
                }
            }
            Some(Kind::Mark(t, k)) => {
                let (t, k) = (t as usize, usize::from(k));
                let v = self.get(id);
                if self.th_active.get(t) == Some(&true) {
                    self.set(self.th(t, TH_MARKS + self.nmarks + k), v);
                }
                if let Some(Some(c)) = self.th_cpu_sel.get(t).copied() {
                    self.set(self.cpu(c as usize, CPU_MARKS + k), v);
                }
            }
            Some(Kind::Running(c)) => self.select_running(c as usize, id),
            Some(Kind::Track(t, j)) => self.track_input(t as usize, usize::from(j)),
            Some(Kind::Bd(c, code)) => self.breakdown_callbacks(c, code, id),
        }
    }

    /// A CPU's running thread changed: its muxes follow the new thread's channels.
    fn select_running(&mut self, c: usize, id: usize) {
        let new = self.reselect(c, id);
        self.select_cpu_tracks(c, new, true);
        let flush = new.and_then(|t| self.get(self.th(t, TH_FLUSH)));
        self.set(self.cpu(c, CPU_FLUSH), flush);
        for k in 0..self.nmarks {
            let v = new.and_then(|t| self.get(self.th(t, TH_MARKS + k)));
            self.set(self.cpu(c, CPU_MARKS + k), v);
        }
        self.select_cpu_tracks(c, new, false);
    }

    /// The muxes of CPU `c` select the thread row in its running channel `id` (returned).
    fn reselect(&mut self, c: usize, id: usize) -> Option<usize> {
        if let Some(Some(old)) = self.cpu_sel.get(c).copied() {
            if let Some(s) = self.th_cpu_sel.get_mut(old as usize) {
                if *s == Some(c as u32) {
                    *s = None;
                }
            }
        }
        let new = self
            .get(id)
            .and_then(|t| usize::try_from(t).ok())
            .filter(|&t| t < self.nthreads);
        if let Some(s) = self.cpu_sel.get_mut(c) {
            *s = new.map(|t| t as u32);
        }
        if let Some(t) = new {
            if let Some(s) = self.th_cpu_sel.get_mut(t) {
                *s = Some(c as u32);
            }
        }
        new
    }
}

/// [`write()`] for a channel of `prv` whose rule is `rule` (a constant at each call).
#[inline(always)]
fn write_as(ch: &mut Chan, rule: Rule, prv: &mut Prv) {
    let value = ch.value;
    // Only these rules read `written` and `last`.
    if matches!(rule, Rule::SkipDup | Rule::SkipDupNull) {
        if ch.written
            && ch.last == value
            && (rule == Rule::SkipDup || (rule == Rule::SkipDupNull && value.is_none()))
        {
            return;
        }
        ch.written = true;
        ch.last = value;
    }
    let v = match (value, rule) {
        (Some(v), Rule::Next) => v.wrapping_add(1),
        (Some(v), _) => v,
        (None, _) => 0,
    };
    prv.record_keyed(ch.key, ch.row, ch.ty, v);
}

/// The record of a dirty breakdown row `ch`, if its rule (skip a repeated value) lets it.
fn breakdown_record(ch: &mut Chan) -> Option<(u32, u32, u16, i64)> {
    if ch.written && ch.last == ch.value {
        return None;
    }
    ch.written = true;
    ch.last = ch.value;
    Some((ch.key, ch.row, ch.ty, ch.value.unwrap_or(0)))
}

/// Writes the record of a dirty channel `ch` (if it has a row and its rule lets it).
#[inline]
fn write(ch: &mut Chan, cpu_prv: &mut Prv, th_prv: &mut Prv) {
    if ch.file == File::None {
        return;
    }
    let value = ch.value;
    if ch.written
        && ch.last == value
        && (ch.rule == Rule::SkipDup || (ch.rule == Rule::SkipDupNull && value.is_none()))
    {
        return;
    }
    ch.written = true;
    ch.last = value;
    let v = match (value, ch.rule) {
        (Some(v), Rule::Next) => v.wrapping_add(1),
        (Some(v), _) => v,
        (None, _) => 0,
    };
    let prv = if ch.file == File::Thread {
        th_prv
    } else {
        cpu_prv
    };
    prv.record_keyed(ch.key, ch.row, ch.ty, v);
}

#[cfg(test)]
mod tests;
