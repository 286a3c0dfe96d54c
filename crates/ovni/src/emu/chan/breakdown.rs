//! The nanos6 breakdown view (`-b`): per physical CPU, what its running thread does (the task
//! type while a task body runs, else the Nanos6 subsystem, "Unknown subsystem" when none)
//! unless its idle state is not "progressing" (then the idle state), sorted across the CPUs:
//! row `i` of `nanos6-breakdown.prv` holds the `i`-th smallest value.
//!
//! As in the original, two muxes per CPU build the value and a sorting stage orders them,
//! each a channel of the dirty list: `tr` follows the subsystem or the task type (chosen again
//! only when the subsystem channel changes), `tri` follows `tr` or the idle state (chosen
//! again when the idle state changes), and each change of a `tri` re-sorts the rows.

use super::{Chan, Channels, File, Kind, Rule};
use crate::emu::prv::Prv;

/// Paraver type of the breakdown rows.
pub(crate) const TY_BREAKDOWN: u32 = 41;
/// The subsystem value of a running task body.
const TASK_BODY: i64 = 1;
/// Shown when no subsystem is selected.
const UNKNOWN: i64 = 2;
const PROGRESSING: i64 = 100;

/// The state of the breakdown stage.
#[derive(Debug)]
pub(crate) struct Breakdown {
    /// Track index of the nanos6 task type channel.
    tt: usize,
    /// Channel ids of the first `tr`, `tri` and output channel (one per physical CPU each).
    tr: usize,
    tri: usize,
    out: usize,
    /// Input selected by each CPU's `tr` mux (0: subsystem, 1: task type) and `tri` mux (0:
    /// `tr`, 1: idle state), if any.
    sel_tr: Vec<Option<u8>>,
    sel_tri: Vec<Option<u8>>,
    /// Each CPU's sorted value, and all of them in order.
    values: Vec<i64>,
    sorted: Vec<i64>,
    /// The records of the breakdown rows: `(key, row, type slot, value)`.
    pub(crate) records: Vec<(u32, u32, u16, i64)>,
}

impl Channels {
    /// Adds the breakdown stage over the first `nphy` CPU rows, with the nanos6 channels at
    /// track indices `ss`, `tt` and `idle`; its rows are written to `prv`.
    pub(crate) fn enable_breakdown(
        &mut self,
        (ss, tt, idle): (usize, usize, usize),
        nphy: usize,
        prv: &mut Prv,
    ) {
        let nphy = nphy.min(self.cpu_sel.len());
        let base = self.chans.len();
        let slot = prv.type_slot(TY_BREAKDOWN);
        let blank = Chan {
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
        self.chans.resize(base + 3 * nphy, blank);
        for c in 0..nphy {
            let cpu = c as u32;
            self.set_kind(self.track_cpu_out(c, ss), Kind::BdSubsystem(cpu));
            self.set_kind(self.track_cpu_out(c, tt), Kind::BdType(cpu));
            self.set_kind(self.track_cpu_out(c, idle), Kind::BdIdle(cpu));
            self.set_kind(base + c, Kind::BdTr(cpu));
            self.set_kind(base + nphy + c, Kind::BdTri(cpu));
            if let Some(ch) = self.chans.get_mut(base + 2 * nphy + c) {
                ch.file = File::Breakdown;
                ch.row = cpu;
                ch.ty = slot;
                ch.key = Prv::key(cpu, slot);
                ch.rule = Rule::SkipDup;
            }
        }
        self.breakdown = Some(Box::new(Breakdown {
            tt,
            tr: base,
            tri: base + nphy,
            out: base + 2 * nphy,
            sel_tr: vec![None; nphy],
            sel_tri: vec![None; nphy],
            values: vec![0; nphy],
            sorted: vec![0; nphy],
            records: Vec::new(),
        }));
    }

    /// The breakdown records written since the last call, `(key, row, type slot, value)`.
    pub(crate) fn breakdown_records(&mut self) -> Option<&mut Vec<(u32, u32, u16, i64)>> {
        self.breakdown
            .as_mut()
            .map(|b| &mut b.records)
            .filter(|r| !r.is_empty())
    }

    /// The callbacks of the breakdown stage's channels (`kind`, channel `id`).
    pub(super) fn breakdown_callbacks(&mut self, kind: Kind, id: usize) {
        let Some(b) = self.breakdown.as_deref() else {
            return;
        };
        let (tt, tr0, tri0) = (b.tt, b.tr, b.tri);
        match kind {
            Kind::BdSubsystem(c) => {
                let c = c as usize;
                let ssv = self.get(id);
                let ttv = self.get(self.track_cpu_out(c, tt));
                let in_body = ssv == Some(TASK_BODY) && ttv.is_some();
                let (sel, v) = if in_body {
                    (Some(1), ttv)
                } else if ssv.is_none() {
                    (None, Some(UNKNOWN))
                } else {
                    (Some(0), ssv)
                };
                if let Some(s) = self.bd_mut().and_then(|b| b.sel_tr.get_mut(c)) {
                    *s = sel;
                }
                self.set(tr0 + c, v);
                if sel == Some(0) {
                    self.set(tr0 + c, ssv);
                }
            }
            Kind::BdType(c) => {
                let c = c as usize;
                if self.bd_sel(c, false) == Some(1) {
                    self.set(tr0 + c, self.get(id));
                }
            }
            Kind::BdIdle(c) => {
                let c = c as usize;
                let v = self.get(id);
                let sel = if v == Some(PROGRESSING) { 0 } else { 1 };
                if let Some(s) = self.bd_mut().and_then(|b| b.sel_tri.get_mut(c)) {
                    *s = Some(sel);
                }
                let out = if sel == 0 { self.get(tr0 + c) } else { v };
                self.set(tri0 + c, out);
                if sel == 1 {
                    self.set(tri0 + c, v);
                }
            }
            Kind::BdTr(c) => {
                let c = c as usize;
                if self.bd_sel(c, true) == Some(0) {
                    self.set(tri0 + c, self.get(id));
                }
            }
            Kind::BdTri(c) => self.sort_input(c as usize, self.get(id).unwrap_or(0)),
            _ => {}
        }
    }

    fn bd_mut(&mut self) -> Option<&mut Breakdown> {
        self.breakdown.as_deref_mut()
    }

    /// The input selected by CPU `c`'s `tri` mux (`tri`) or `tr` mux.
    fn bd_sel(&self, c: usize, tri: bool) -> Option<u8> {
        let b = self.breakdown.as_deref()?;
        let sel = if tri { &b.sel_tri } else { &b.sel_tr };
        sel.get(c).copied().flatten()
    }

    /// CPU `c`'s sorted value is now `new`: the rows whose value changes are set.
    fn sort_input(&mut self, c: usize, new: i64) {
        let Some(b) = self.breakdown.as_deref_mut() else {
            return;
        };
        let Some(old) = b.values.get_mut(c) else {
            return;
        };
        if *old == new {
            return;
        }
        *old = new;
        b.sorted.clone_from(&b.values);
        b.sorted.sort_unstable();
        let out = b.out;
        let sorted = std::mem::take(&mut b.sorted);
        for (i, &v) in sorted.iter().enumerate() {
            if self.get(out + i) != Some(v) {
                self.set(out + i, Some(v));
            }
        }
        if let Some(b) = self.breakdown.as_deref_mut() {
            b.sorted = sorted;
        }
    }
}
