//! The ovni model (`O` events) as ovniemu 1.14 emulates it: thread states, CPUs, affinity,
//! flushes and marks (`docs/ovni-format.md`, *ovnilint*, step 6).
//!
//! Each event is checked in the emulator's order and applied only if it passes, so after a
//! rejected event (`--all`) the state is the one before it. The linter ([`crate::lint`]) only
//! needs the verdict; the emulator ([`crate::emu`]) reads the state after each accepted event
//! (thread states, CPUs, the thread running on each CPU, mark stacks) to drive its channels.

pub(crate) mod kernel;
pub(crate) mod mpi;
pub(crate) mod nanos6;
pub(crate) mod nodes;
pub(crate) mod nosv;
pub(crate) mod openmp;
pub(crate) mod problem;
pub(crate) mod procs;
pub(crate) mod stack;
pub(crate) mod tampi;
pub(crate) mod task_type;

use std::collections::HashMap;

use crate::metadata::System;
use crate::raw::Event;
use problem::{EventProblem, MarkOp, ThreadState, Transition};

const NO_CPU: u32 = u32::MAX;
const NO_MARK: u8 = u8::MAX;
/// Depth of a mark stack in the emulator (`MAX_CHAN_STACK`).
const MAX_MARK_STACK: usize = 512;
/// Mark types are in `[0, 100)` (checked when the metadata is read).
const MARK_TYPES: usize = 100;

#[derive(Debug)]
struct Thread {
    tid: i64,
    loom: u32,
    proc: u32,
    state: ThreadState,
    cpu: u32,
    flushing: bool,
    /// One stack per stack mark type, created on first use.
    stacks: Vec<Vec<i64>>,
}

#[derive(Debug)]
struct Cpu {
    /// Threads in state Running assigned to this CPU.
    running: u32,
    /// Sum of the indices of those threads: the running thread when `running == 1`.
    run_sum: u64,
    physical: bool,
    phyid: i64,
    loom: u32,
}

#[derive(Debug)]
struct Loom {
    name: String,
    /// Position in ovniemu's loom order, used in CPU names.
    gindex: usize,
    /// CPU of each logical index.
    by_index: Vec<u32>,
    vcpu: u32,
}

/// State of every thread and CPU of the trace.
#[derive(Debug)]
pub(crate) struct OvniModel {
    threads: Vec<Thread>,
    cpus: Vec<Cpu>,
    looms: Vec<Loom>,
    /// `(process, tid)` → thread.
    in_proc: HashMap<(u32, i64), u32>,
    /// `(loom, tid)` → first thread with that tid in pid order.
    in_loom: HashMap<(u32, i64), u32>,
    /// Mark type → index in `mark_stack`, or [`NO_MARK`].
    mark_index: [u8; MARK_TYPES],
    /// Whether each defined mark type is a stack.
    mark_stack: Vec<bool>,
}

fn i32_at(p: &[u8], at: usize) -> i64 {
    p.get(at..at + 4)
        .and_then(|b| b.first_chunk::<4>())
        .map_or(0, |b| i64::from(i32::from_le_bytes(*b)))
}

fn i64_at(p: &[u8], at: usize) -> i64 {
    p.get(at..at + 8)
        .and_then(|b| b.first_chunk::<8>())
        .map_or(0, |b| i64::from_le_bytes(*b))
}

impl OvniModel {
    /// Builds the model from the merged metadata; thread `i` is `sys.threads[i]`.
    pub(crate) fn new(sys: &System) -> Self {
        // ovniemu sorts looms by the lowest rank of their processes when every loom has
        // ranks, else by name (the order of `sys.looms`).
        let mut order: Vec<usize> = (0..sys.looms.len()).collect();
        let min_rank = |l: &crate::metadata::Loom| {
            l.processes.iter().filter_map(|p| p.rank.map(|r| r.0)).min()
        };
        if sys.looms.iter().all(|l| min_rank(l).is_some()) {
            order.sort_by_key(|&i| sys.looms.get(i).and_then(min_rank));
        }
        // Position of each loom in that order.
        let mut gindex_of = vec![0; sys.looms.len()];
        for (pos, &li) in order.iter().enumerate() {
            if let Some(g) = gindex_of.get_mut(li) {
                *g = pos;
            }
        }
        let mut looms = Vec::with_capacity(sys.looms.len());
        let mut cpus = Vec::new();
        let mut loom_ix: HashMap<&str, u32> = HashMap::new();
        let mut proc_ix: HashMap<(u32, i64), u32> = HashMap::new();
        for (li, l) in sys.looms.iter().enumerate() {
            let id = li as u32;
            loom_ix.insert(&l.name, id);
            let mut by_index = vec![NO_CPU; l.cpus.len()];
            for c in &l.cpus {
                let slot = usize::try_from(c.index)
                    .ok()
                    .and_then(|i| by_index.get_mut(i));
                if let Some(slot) = slot {
                    *slot = cpus.len() as u32;
                }
                cpus.push(Cpu {
                    running: 0,
                    run_sum: 0,
                    physical: true,
                    phyid: c.phyid,
                    loom: id,
                });
            }
            let vcpu = cpus.len() as u32;
            cpus.push(Cpu {
                running: 0,
                run_sum: 0,
                physical: false,
                phyid: -1,
                loom: id,
            });
            for p in &l.processes {
                let n = proc_ix.len() as u32;
                proc_ix.insert((id, p.pid), n);
            }
            looms.push(Loom {
                name: l.name.clone(),
                gindex: gindex_of.get(li).copied().unwrap_or(li),
                by_index,
                vcpu,
            });
        }
        let mut threads = Vec::with_capacity(sys.threads.len());
        let mut in_proc = HashMap::new();
        for (ti, t) in sys.threads.iter().enumerate() {
            let loom = loom_ix.get(t.loom.as_str()).copied().unwrap_or(0);
            let proc = proc_ix.get(&(loom, t.pid)).copied().unwrap_or(0);
            in_proc.insert((proc, t.tid), ti as u32);
            threads.push(Thread {
                tid: t.tid,
                loom,
                proc,
                state: ThreadState::Unknown,
                cpu: NO_CPU,
                flushing: false,
                stacks: Vec::new(),
            });
        }
        // ovniemu searches the loom's processes in pid order: the first match wins.
        let mut in_loom = HashMap::new();
        for (li, l) in sys.looms.iter().enumerate() {
            for p in &l.processes {
                for &tid in &p.threads {
                    let proc = proc_ix.get(&(li as u32, p.pid)).copied().unwrap_or(0);
                    if let Some(&th) = in_proc.get(&(proc, tid)) {
                        in_loom.entry((li as u32, tid)).or_insert(th);
                    }
                }
            }
        }
        let mut mark_index = [NO_MARK; MARK_TYPES];
        let mut mark_stack = Vec::new();
        for (&ty, m) in &sys.marks {
            if let Some(slot) = usize::try_from(ty).ok().and_then(|t| mark_index.get_mut(t)) {
                *slot = mark_stack.len() as u8;
                mark_stack.push(m.chan_type == "stack");
            }
        }
        Self {
            threads,
            cpus,
            looms,
            in_proc,
            in_loom,
            mark_index,
            mark_stack,
        }
    }

    /// Tid and state of thread `t`.
    pub(crate) fn thread(&self, t: usize) -> Option<(i64, ThreadState)> {
        self.threads.get(t).map(|th| (th.tid, th.state))
    }

    /// Thread indices in ovniemu's order: looms, then processes by pid, then tids.
    pub(crate) fn end_order(&self) -> Vec<usize> {
        let mut order: Vec<usize> = (0..self.threads.len()).collect();
        order.sort_by_key(|&t| {
            self.threads.get(t).map(|th| {
                let l = self.looms.get(th.loom as usize).map_or(0, |l| l.gindex);
                (l, th.proc, th.tid)
            })
        });
        order
    }

    /// `loom_get_cpu`: −1 is the virtual CPU, `0..n` the physical ones by logical index.
    fn cpu_of(&self, loom: u32, index: i64) -> Result<u32, EventProblem> {
        let l = self.looms.get(loom as usize);
        let found = l.and_then(|l| {
            if index == -1 {
                Some(l.vcpu)
            } else {
                usize::try_from(index)
                    .ok()
                    .and_then(|i| l.by_index.get(i).copied())
                    .filter(|&c| c != NO_CPU)
            }
        });
        found.ok_or_else(|| EventProblem::NoSuchCpu {
            index,
            loom: l.map(|l| l.name.clone()).unwrap_or_default(),
        })
    }

    /// Fails if adding one running thread to `cpu` would run two on a physical CPU.
    fn check_room(&self, cpu: u32) -> Result<(), EventProblem> {
        let Some(c) = self.cpus.get(cpu as usize) else {
            return Ok(());
        };
        if c.physical && c.running >= 1 {
            let gindex = self.looms.get(c.loom as usize).map_or(0, |l| l.gindex);
            return Err(EventProblem::CpuOversubscribed {
                cpu: format!("CPU {gindex}.{}", c.phyid),
                running: c.running + 1,
            });
        }
        Ok(())
    }

    fn add_running(&mut self, cpu: u32, t: usize, delta: i32) {
        if let Some(c) = self.cpus.get_mut(cpu as usize) {
            c.running = c.running.saturating_add_signed(delta);
            let t = t as u64;
            c.run_sum = match delta {
                1 => c.run_sum.wrapping_add(t),
                -1 => c.run_sum.wrapping_sub(t),
                _ => c.run_sum,
            };
        }
    }

    /// State of thread `t` (Unknown for an index out of range).
    #[inline]
    pub(crate) fn state(&self, t: usize) -> ThreadState {
        self.threads
            .get(t)
            .map_or(ThreadState::Unknown, |th| th.state)
    }

    /// CPU (global index in [`OvniModel::new`]'s order) that thread `t` holds.
    #[inline]
    pub(crate) fn cpu(&self, t: usize) -> Option<u32> {
        self.threads
            .get(t)
            .map(|th| th.cpu)
            .filter(|&c| c != NO_CPU)
    }

    /// The thread running on `cpu` when exactly one is, as ovniemu's `th_running`.
    #[inline]
    pub(crate) fn running_on(&self, cpu: u32) -> (u32, Option<usize>) {
        match self.cpus.get(cpu as usize) {
            Some(c) if c.running == 1 => (1, usize::try_from(c.run_sum).ok()),
            Some(c) => (c.running, None),
            None => (0, None),
        }
    }

    /// Number of CPUs, every loom's physical CPUs then its virtual one.
    pub(crate) fn ncpus(&self) -> usize {
        self.cpus.len()
    }

    /// Mark stack of thread `t` for the type at `index` in the order of [`System::marks`]
    /// (empty for single types).
    pub(crate) fn mark_stack(&self, t: usize, index: usize) -> &[i64] {
        self.threads
            .get(t)
            .and_then(|th| th.stacks.get(index))
            .map_or(&[], Vec::as_slice)
    }

    /// Index of mark type `ty` in the order of [`System::marks`].
    pub(crate) fn mark_index(&self, ty: i64) -> Option<usize> {
        usize::try_from(ty)
            .ok()
            .and_then(|m| self.mark_index.get(m).copied())
            .filter(|&i| i != NO_MARK)
            .map(usize::from)
    }

    /// Thread that `OAr` in thread `t` with payload `payload` targets (after a successful
    /// event, the one whose CPU changed).
    pub(crate) fn remote_target(&self, t: usize, payload: &[u8]) -> Option<usize> {
        let th = self.threads.get(t)?;
        let tid = i32_at(payload, 4);
        self.in_proc
            .get(&(th.proc, tid))
            .or_else(|| self.in_loom.get(&(th.loom, tid)))
            .map(|&r| r as usize)
    }

    /// Checks and applies one `O` event emitted by thread `t`.
    #[inline]
    pub(crate) fn event(&mut self, t: usize, ev: &Event<'_>) -> Result<(), EventProblem> {
        let [_, c, v] = ev.mcv.0;
        // The arguments of a jumbo-flagged event follow its size field, where ovnidump reads
        // them: the linter accepts the event only if the arguments are there.
        let payload = ev.jumbo_data().unwrap_or(ev.payload);
        match c {
            b'H' => self.thread_event(t, v, payload),
            b'A' => match v {
                b's' => self.affinity_set(t, payload),
                b'r' => self.affinity_remote(t, payload),
                _ => Err(EventProblem::UnknownValue {
                    category: "affinity",
                    value: v,
                }),
            },
            // Bursts only feed latency statistics.
            b'B' => Ok(()),
            // `OCn` is an old event ovniemu ignores with a warning.
            b'C' if v == b'n' => Ok(()),
            b'C' => Err(EventProblem::UnknownValue {
                category: "cpu",
                value: v,
            }),
            b'F' => self.flush(t, v),
            // Unordered-region markers are for ovnisort.
            b'U' => Ok(()),
            b'M' => self.mark(t, v, payload),
            _ => Err(EventProblem::UnknownCategory(c)),
        }
    }

    fn thread_event(&mut self, t: usize, v: u8, payload: &[u8]) -> Result<(), EventProblem> {
        let Some(th) = self.threads.get(t) else {
            return Ok(());
        };
        let (tid, state, cpu) = (th.tid, th.state, th.cpu);
        let bad = |transition| EventProblem::BadTransition {
            tid,
            transition,
            state,
        };
        use ThreadState as S;
        let (next, running_delta) = match v {
            b'x' => return self.execute(t, payload),
            b'C' => return Ok(()),
            b'e' => match state {
                S::Running | S::Cooling => (S::Dead, 0),
                _ => return Err(bad(Transition::End)),
            },
            b'p' => match state {
                S::Running | S::Cooling => (S::Paused, 0),
                _ => return Err(bad(Transition::Pause)),
            },
            b'r' => match state {
                S::Paused | S::Warming => {
                    self.check_room(cpu)?;
                    (S::Running, 1)
                }
                _ => return Err(bad(Transition::Resume)),
            },
            b'c' => match state {
                S::Running => (S::Cooling, 0),
                _ => return Err(bad(Transition::Cool)),
            },
            b'w' => match state {
                S::Paused => (S::Warming, 0),
                _ => return Err(bad(Transition::Warm)),
            },
            _ => {
                return Err(EventProblem::UnknownValue {
                    category: "thread",
                    value: v,
                })
            }
        };
        let delta = running_delta - i32::from(state == S::Running);
        self.add_running(cpu, t, delta);
        if let Some(th) = self.threads.get_mut(t) {
            th.state = next;
            if next == S::Dead {
                th.cpu = NO_CPU;
            }
        }
        Ok(())
    }

    fn execute(&mut self, t: usize, payload: &[u8]) -> Result<(), EventProblem> {
        let Some(th) = self.threads.get(t) else {
            return Ok(());
        };
        let (tid, state, loom, held) = (th.tid, th.state, th.loom, th.cpu);
        if state == ThreadState::Running {
            return Err(EventProblem::AlreadyRunning { tid });
        }
        if payload.len() < 4 {
            return Err(EventProblem::MissingExecutePayload { tid });
        }
        let cpu = self.cpu_of(loom, i32_at(payload, 0))?;
        if held != NO_CPU {
            return Err(EventProblem::AlreadyHasCpu { tid, state });
        }
        self.check_room(cpu)?;
        self.add_running(cpu, t, 1);
        if let Some(th) = self.threads.get_mut(t) {
            th.state = ThreadState::Running;
            th.cpu = cpu;
        }
        Ok(())
    }

    /// Moves thread `t` from its CPU to `to` (both already checked).
    fn migrate(&mut self, t: usize, to: u32) -> Result<(), EventProblem> {
        let Some(th) = self.threads.get(t) else {
            return Ok(());
        };
        let (from, running) = (th.cpu, th.state == ThreadState::Running);
        if running {
            self.check_room(to)?;
            self.add_running(from, t, -1);
            self.add_running(to, t, 1);
        }
        if let Some(th) = self.threads.get_mut(t) {
            th.cpu = to;
        }
        Ok(())
    }

    fn affinity_set(&mut self, t: usize, payload: &[u8]) -> Result<(), EventProblem> {
        let Some(th) = self.threads.get(t) else {
            return Ok(());
        };
        let (tid, loom, cpu) = (th.tid, th.loom, th.cpu);
        if cpu == NO_CPU {
            return Err(EventProblem::NoCpuSet { tid });
        }
        if !matches!(
            th.state,
            ThreadState::Running | ThreadState::Cooling | ThreadState::Warming
        ) {
            return Err(EventProblem::NotActive { tid });
        }
        if payload.len() != 4 {
            return Err(EventProblem::PayloadSize {
                got: payload.len() as u64,
                expected: 4,
            });
        }
        let to = self.cpu_of(loom, i32_at(payload, 0))?;
        if to == cpu {
            return Ok(());
        }
        self.migrate(t, to)
    }

    fn affinity_remote(&mut self, t: usize, payload: &[u8]) -> Result<(), EventProblem> {
        let Some(th) = self.threads.get(t) else {
            return Ok(());
        };
        let (loom, proc) = (th.loom, th.proc);
        if payload.len() != 8 {
            return Err(EventProblem::PayloadSize {
                got: payload.len() as u64,
                expected: 8,
            });
        }
        let index = i32_at(payload, 0);
        let tid = i32_at(payload, 4);
        let remote = self
            .in_proc
            .get(&(proc, tid))
            .or_else(|| self.in_loom.get(&(loom, tid)))
            .copied()
            .ok_or(EventProblem::ThreadNotFound { tid })? as usize;
        let Some(r) = self.threads.get(remote) else {
            return Err(EventProblem::ThreadNotFound { tid });
        };
        match r.state {
            ThreadState::Dead => return Err(EventProblem::ThreadDead { tid }),
            ThreadState::Unknown => return Err(EventProblem::ThreadNotStarted { tid }),
            _ => {}
        }
        let from = r.cpu;
        let to = self.cpu_of(loom, index)?;
        // ovniemu removes and re-adds the thread and sets its CPU channel to the value it
        // already has, which its channels reject (duplicate value or double write).
        if to == from {
            return Err(EventProblem::SameCpu { tid, index });
        }
        self.migrate(remote, to)
    }

    fn flush(&mut self, t: usize, v: u8) -> Result<(), EventProblem> {
        let Some(th) = self.threads.get_mut(t) else {
            return Ok(());
        };
        // The flush channel rejects setting the value it already has.
        match v {
            b'[' if th.flushing => Err(EventProblem::FlushNested { tid: th.tid }),
            b'[' => {
                th.flushing = true;
                Ok(())
            }
            b']' if !th.flushing => Err(EventProblem::FlushNotStarted { tid: th.tid }),
            b']' => {
                th.flushing = false;
                Ok(())
            }
            _ => Err(EventProblem::UnknownValue {
                category: "flush",
                value: v,
            }),
        }
    }

    fn mark(&mut self, t: usize, v: u8, payload: &[u8]) -> Result<(), EventProblem> {
        if payload.len() != 12 {
            return Err(EventProblem::PayloadSize {
                got: payload.len() as u64,
                expected: 12,
            });
        }
        let value = i64_at(payload, 0);
        let mark = i32_at(payload, 8);
        let index = usize::try_from(mark)
            .ok()
            .and_then(|m| self.mark_index.get(m).copied())
            .filter(|&i| i != NO_MARK)
            .ok_or(EventProblem::MarkUnknownType(mark))?;
        if value == 0 {
            return Err(EventProblem::MarkZeroValue(mark));
        }
        let is_stack = self.mark_stack.get(usize::from(index)).copied() == Some(true);
        let op = match v {
            b'[' => MarkOp::Push,
            b']' => MarkOp::Pop,
            b'=' => MarkOp::Set,
            _ => {
                return Err(EventProblem::UnknownValue {
                    category: "mark",
                    value: v,
                })
            }
        };
        if is_stack == (op == MarkOp::Set) {
            return Err(EventProblem::MarkWrongType { mark, op });
        }
        if op == MarkOp::Set {
            // Single channels accept any value, repeated ones included.
            return Ok(());
        }
        let ntypes = self.mark_stack.len();
        let Some(th) = self.threads.get_mut(t) else {
            return Ok(());
        };
        if th.stacks.len() < ntypes {
            th.stacks.resize_with(ntypes, Vec::new);
        }
        let Some(stack) = th.stacks.get_mut(usize::from(index)) else {
            return Ok(());
        };
        match op {
            MarkOp::Push if stack.len() >= MAX_MARK_STACK => {
                Err(EventProblem::MarkStackFull { mark })
            }
            MarkOp::Push => {
                stack.push(value);
                Ok(())
            }
            _ => match stack.last() {
                None => Err(EventProblem::MarkStackEmpty { mark, value }),
                Some(&top) if top != value => {
                    Err(EventProblem::MarkPopMismatch { mark, value, top })
                }
                Some(_) => {
                    stack.pop();
                    Ok(())
                }
            },
        }
    }
}
