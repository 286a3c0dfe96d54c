//! The nosv model (`V` events, version 2.7.0) as ovniemu 1.14 emulates it: per thread a stack
//! of nOS-V subsystems, the task body it runs (body id, task id, type, application id, rank),
//! its idle state and its hardware counters; per process the task types (`VYc`) and tasks
//! (`VTc`, parallel `VTC`).
//!
//! The rules are ovniemu's: events come from an active thread that is on its CPU; a task body
//! runs (`VTx`) when created, or again after it ended if the task is not parallel; it never
//! runs over a running body; it pauses (`VTp`, not parallel tasks) and resumes (`VTr`) on top
//! of its thread's stack, and ends (`VTe`) there; running and ending push and pop the "in
//! body" subsystem. The task id and idle channels refuse the value they already have.

use std::collections::HashMap;

mod setup;

pub(crate) use setup::{hwc_names, processes};

use super::problem::{BodyFailure, BodyOp, BodyState, ChanFailure, EventProblem, NosvProblem};
use super::stack::push_pop;
use super::task_type::{creation, TaskDebug, TaskType, TaskTypes, TypeRefusal};
use crate::raw::Event;

/// Channel indices (ovniemu's order); hardware counter `i` is channel `CHANNELS + i`.
pub(crate) const CH_BODYID: usize = 0;
pub(crate) const CH_TASKID: usize = 1;
pub(crate) const CH_TYPE: usize = 2;
pub(crate) const CH_APPID: usize = 3;
pub(crate) const CH_SUBSYSTEM: usize = 4;
pub(crate) const CH_RANK: usize = 5;
pub(crate) const CH_IDLE: usize = 6;
pub(crate) const CHANNELS: usize = 7;
const CHAN_NAMES: [&str; CHANNELS] = [
    "bodyid",
    "taskid",
    "task_type",
    "appid",
    "subsystem",
    "rank",
    "idle",
];
/// "Task: In body", pushed while a body runs.
const TASK_BODY: i64 = 11;
/// Idle states.
pub(crate) const PROGRESSING: i64 = 100;
pub(crate) const RESTING: i64 = 101;

/// What a subsystem event does: push, pop, set the idle state, or nothing.
enum Simple {
    Push(i64),
    Pop(i64),
    Idle(i64),
    Ignore,
}

fn simple(c: u8, v: u8) -> Option<Simple> {
    use Simple::*;
    Some(match (c, v) {
        (b'S', b'h') => Push(6),
        (b'S', b'f') => Pop(6),
        (b'S', b'[' | b'N') => Push(7),
        (b'S', b']' | b'n') => Pop(7),
        (b'S', b'@' | b'r' | b's') | (b'H', b'a' | b'A') => Ignore,
        (b'U', b'[') => Push(8),
        (b'U', b']') => Pop(8),
        (b'M', b'a') => Push(9),
        (b'M', b'A') => Pop(9),
        (b'M', b'f') => Push(10),
        (b'M', b'F') => Pop(10),
        (b'H', b'w') => Push(32),
        (b'H', b'W') => Pop(32),
        (b'H', b'd') => Push(33),
        (b'H', b'D') => Pop(33),
        (b'P', b'p') => Idle(PROGRESSING),
        (b'P', b'r') => Idle(RESTING),
        (b'P', b'a') => Idle(102),
        (b'A', v) => {
            const API: &[u8; 20] = b"rdspywcaeltubogkjmin";
            let i = API.iter().position(|&x| x == v.to_ascii_lowercase())?;
            let s = 12 + i as i64;
            if v.is_ascii_lowercase() {
                Push(s)
            } else {
                Pop(s)
            }
        }
        _ => return None,
    })
}

/// The subsystem and idle labels, in ovniemu's order.
pub(crate) const SUBSYSTEM_LABELS: [(i64, &str); 32] = [
    (2, "Unknown subsystem"),
    (6, "Scheduler: Hungry"),
    (7, "Scheduler: Serving"),
    (8, "Scheduler: Submitting"),
    (9, "Memory: Allocating"),
    (10, "Memory: Freeing"),
    (11, "Task: In body"),
    (12, "API: Create"),
    (13, "API: Destroy"),
    (14, "API: Submit"),
    (15, "API: Pause"),
    (16, "API: Yield"),
    (17, "API: Waitfor"),
    (18, "API: Scheduling point"),
    (19, "API: Attach"),
    (20, "API: Detach"),
    (21, "API: Mutex lock"),
    (22, "API: Mutex trylock"),
    (23, "API: Mutex unlock"),
    (24, "API: Barrier wait"),
    (25, "API: Cond wait"),
    (26, "API: Cond signal"),
    (27, "API: Cond broadcast"),
    (28, "API: Join"),
    (29, "API: Join all"),
    (30, "API: Wait"),
    (31, "API: Wait all"),
    (32, "Thread: Worker"),
    (33, "Thread: Delegate"),
    (35, "EV Scheduler: Send task"),
    (34, "EV Scheduler: Recv task"),
    (36, "EV Scheduler: Self-assign task"),
];

/// The idle labels.
pub(crate) const IDLE_LABELS: [(i64, &str); 3] = [
    (PROGRESSING, "Progressing"),
    (RESTING, "Resting"),
    (102, "Absorbing noise"),
];

#[derive(Debug)]
struct Body {
    state: BodyState,
    /// Thread whose stack holds it.
    on: Option<usize>,
    /// Times it ran again after it ended.
    iteration: u32,
}

#[derive(Debug)]
struct Task {
    ty: usize,
    parallel: bool,
    /// By body id.
    bodies: HashMap<u32, Body>,
}

#[derive(Debug, Default)]
struct Proc {
    types: TaskTypes,
    tasks: HashMap<u32, Task>,
    app_id: i64,
    /// MPI rank, if the process has one.
    rank: Option<i64>,
}

#[derive(Debug)]
struct Thread {
    /// Value of each single channel (the subsystem's is its stack's top).
    values: [Option<i64>; CHANNELS],
    subsystems: Vec<i64>,
    /// Bodies on the thread, `(task, body)`, innermost last.
    bodies: Vec<(u32, u32)>,
}

/// What an accepted event changed: channels with their new value, in ovniemu's order.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Changes(pub(crate) Vec<(usize, Option<i64>)>);

/// The state of the nosv model.
#[derive(Debug)]
pub(crate) struct Nosv {
    procs: Vec<Proc>,
    threads: Vec<Thread>,
    proc_of: Vec<usize>,
    /// Number of hardware counters.
    hwc: usize,
    /// The original's debug lines of the tasks (`-d`).
    pub(crate) debug: TaskDebug,
}

fn u32_at(payload: &[u8], at: usize) -> Option<u32> {
    payload
        .get(at..at + 4)
        .and_then(|b| b.first_chunk::<4>())
        .map(|b| u32::from_le_bytes(*b))
}

impl Nosv {
    /// A model for threads whose process is `proc_of[t]`; `procs` gives each process's
    /// application id and rank; `hwc` hardware counters.
    pub(crate) fn new(proc_of: Vec<usize>, procs: &[(i64, Option<i64>)], hwc: usize) -> Self {
        Self {
            procs: procs
                .iter()
                .map(|&(app_id, rank)| Proc {
                    app_id,
                    rank,
                    ..Proc::default()
                })
                .collect(),
            threads: (0..proc_of.len())
                .map(|_| Thread {
                    values: [None, None, None, None, None, None, Some(PROGRESSING)],
                    subsystems: Vec::new(),
                    bodies: Vec::new(),
                })
                .collect(),
            proc_of,
            hwc,
            debug: TaskDebug::default(),
        }
    }

    /// The channel name ovniemu gives channel `ch` of the thread in row `row`.
    pub(crate) fn chan_name(row: usize, ch: usize) -> String {
        format!("nosv.thread{row}.{}", CHAN_NAMES.get(ch).unwrap_or(&""))
    }

    /// Task types of every process, processes in order.
    pub(crate) fn types(&self) -> impl Iterator<Item = &TaskType> {
        self.procs.iter().flat_map(|p| p.types.iter())
    }

    /// Values left on thread `t`'s subsystem stack.
    pub(crate) fn depth(&self, t: usize) -> usize {
        self.threads.get(t).map_or(0, |th| th.subsystems.len())
    }

    /// Plays event `ev` of thread `t` (`tid`, ovniemu row `row`; `active` or not, `out` of
    /// its CPU or not).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn event(
        &mut self,
        t: usize,
        row: usize,
        tid: i64,
        active: bool,
        out: bool,
        ev: &Event<'_>,
    ) -> Result<Changes, EventProblem> {
        let nosv = |p| EventProblem::Nosv(p);
        if !active {
            return Err(nosv(NosvProblem::NotActive { tid }));
        }
        if out {
            return Err(EventProblem::ThreadOutOfCpu { tid });
        }
        let [_, c, v] = ev.mcv.0;
        match c {
            b'S' | b'U' | b'M' | b'H' | b'A' | b'P' => self.simple(t, row, c, v).map_err(nosv),
            b'T' => match v {
                b'c' | b'C' => self.create_task(t, v == b'C', ev.payload).map_err(nosv),
                b'x' | b'e' | b'p' | b'r' => self.update_task(t, row, v, ev.payload).map_err(nosv),
                _ => Err(nosv(NosvProblem::UnexpectedTaskValue)),
            },
            b'Y' => self.create_type(t, v, ev).map_err(nosv),
            b'W' => self.counters(ev).map_err(nosv),
            _ => Err(nosv(NosvProblem::UnknownCategory)),
        }
    }

    fn thread(&mut self, t: usize) -> Option<&mut Thread> {
        self.threads.get_mut(t)
    }

    fn stack_op(
        &mut self,
        t: usize,
        row: usize,
        push: bool,
        value: i64,
    ) -> Result<Option<i64>, ChanFailure> {
        let chan = || Self::chan_name(row, CH_SUBSYSTEM);
        let Some(th) = self.thread(t) else {
            return Ok(None);
        };
        let stack = &mut th.subsystems;
        push_pop(stack, push, value, false, chan)
    }

    fn simple(&mut self, t: usize, row: usize, c: u8, v: u8) -> Result<Changes, NosvProblem> {
        let Some(op) = simple(c, v) else {
            return Err(NosvProblem::UnknownSubsystemEvent);
        };
        let (push, value) = match op {
            Simple::Ignore => return Ok(Changes::default()),
            Simple::Idle(value) => {
                let Some(th) = self.thread(t) else {
                    return Ok(Changes::default());
                };
                if th.values[CH_IDLE] == Some(value) {
                    return Err(NosvProblem::SameValue {
                        chan: Self::chan_name(row, CH_IDLE),
                        value: Some(value),
                        context: None,
                    });
                }
                th.values[CH_IDLE] = Some(value);
                return Ok(Changes(vec![(CH_IDLE, Some(value))]));
            }
            Simple::Push(s) => (true, s),
            Simple::Pop(s) => (false, s),
        };
        let top = self
            .stack_op(t, row, push, value)
            .map_err(NosvProblem::Subsystem)?;
        Ok(Changes(vec![(CH_SUBSYSTEM, top)]))
    }

    fn create_task(
        &mut self,
        t: usize,
        parallel: bool,
        payload: &[u8],
    ) -> Result<Changes, NosvProblem> {
        let (Some(task), Some(ty)) = (u32_at(payload, 0), u32_at(payload, 4)) else {
            return Err(NosvProblem::CreatePayloadSize);
        };
        let Some(proc) = self.proc_of.get(t).and_then(|&p| self.procs.get_mut(p)) else {
            return Ok(Changes::default());
        };
        if proc.tasks.contains_key(&task) {
            return Err(NosvProblem::TaskExists(task));
        }
        let Some(ty) = proc.types.index(ty) else {
            return Err(NosvProblem::UnknownType(ty));
        };
        let new = Task {
            ty,
            parallel,
            bodies: HashMap::new(),
        };
        proc.tasks.insert(task, new);
        self.debug.task_created(task, true);
        Ok(Changes::default())
    }

    fn create_type(&mut self, t: usize, v: u8, ev: &Event<'_>) -> Result<Changes, NosvProblem> {
        let debug = self.debug.on;
        let (id, label) = creation(v, ev).map_err(TypeRefusal::nosv)?;
        let Some(proc) = self.proc_of.get(t).and_then(|&p| self.procs.get_mut(p)) else {
            return Ok(Changes::default());
        };
        let created = proc.types.create(id, label).map_err(TypeRefusal::nosv)?;
        let label = debug.then(|| created.label.clone());
        if let Some(label) = label {
            self.debug.type_created(id, &label);
        }
        Ok(Changes::default())
    }

    /// `VTx`, `VTe`, `VTp`, `VTr`: the body's state, then the subsystem stack, then the task
    /// channels, in ovniemu's order.
    fn update_task(
        &mut self,
        t: usize,
        row: usize,
        v: u8,
        payload: &[u8],
    ) -> Result<Changes, NosvProblem> {
        let Some(task_id) = u32_at(payload, 0) else {
            return Err(NosvProblem::MissingTaskId);
        };
        let Some(raw_body) = u32_at(payload, 4) else {
            return Err(NosvProblem::MissingBodyId);
        };
        let op = match v {
            b'x' => BodyOp::Execute,
            b'e' => BodyOp::End,
            b'p' => BodyOp::Pause,
            _ => BodyOp::Resume,
        };
        let Some(p) = self.proc_of.get(t).copied() else {
            return Ok(Changes::default());
        };
        let (Some(proc), Some(thread)) = (self.procs.get_mut(p), self.threads.get_mut(t)) else {
            return Ok(Changes::default());
        };
        let state_of = |tasks: &HashMap<u32, Task>, (task, body): (u32, u32)| {
            tasks
                .get(&task)
                .and_then(|k| k.bodies.get(&body))
                .map(|b| b.state)
        };
        let running_top = |tasks: &HashMap<u32, Task>, bodies: &[(u32, u32)]| {
            bodies
                .last()
                .copied()
                .filter(|&top| state_of(tasks, top) == Some(BodyState::Running))
        };
        let prev = running_top(&proc.tasks, &thread.bodies);
        let Some(task) = proc.tasks.get_mut(&task_id) else {
            return Err(NosvProblem::TaskNotFound(task_id));
        };
        let body_id = match (task.parallel, raw_body) {
            (true, 0) => return Err(NosvProblem::BodyIdZero(task_id)),
            (true, b) => b,
            (false, 0) => 1,
            (false, _) => return Err(NosvProblem::BodyIdNotZero(task_id)),
        };
        let fail = |failure| NosvProblem::Body {
            op,
            task: task_id,
            body: body_id,
            failure,
        };
        if op == BodyOp::Execute {
            task.bodies.entry(body_id).or_insert(Body {
                state: BodyState::Created,
                on: None,
                iteration: 0,
            });
        }
        let parallel = task.parallel;
        let Some(body) = task.bodies.get_mut(&body_id) else {
            return Err(NosvProblem::NoBody {
                op,
                task: task_id,
                body: body_id,
            });
        };
        let on_top = thread.bodies.last() == Some(&(task_id, body_id));
        let wrong = |want: BodyState, is: BodyState| BodyFailure::WrongState { want, is };
        let placed = |body: &Body| match body.on {
            None => Err(BodyFailure::NoStack),
            Some(o) if o != t => Err(BodyFailure::OtherStack),
            Some(_) if !on_top => Err(BodyFailure::NotOnTop),
            Some(_) => Ok(()),
        };
        match op {
            BodyOp::Execute => {
                if body.state == BodyState::Dead {
                    if parallel {
                        return Err(fail(BodyFailure::NotAllowedAgain));
                    }
                    body.state = BodyState::Created;
                    body.iteration += 1;
                    self.debug.runs_again(task_id, body_id);
                }
                match body.state {
                    BodyState::Created => {}
                    BodyState::Paused => return Err(fail(BodyFailure::RunPaused)),
                    is => return Err(fail(wrong(BodyState::Created, is))),
                }
                if let Some((task, body)) = prev {
                    return Err(fail(BodyFailure::Nest { task, body }));
                }
                body.state = BodyState::Running;
                body.on = Some(t);
                thread.bodies.push((task_id, body_id));
            }
            BodyOp::End | BodyOp::Pause => {
                if op == BodyOp::Pause && parallel {
                    return Err(fail(BodyFailure::NotAllowedPause));
                }
                if body.state != BodyState::Running {
                    return Err(fail(wrong(BodyState::Running, body.state)));
                }
                placed(body).map_err(fail)?;
                if op == BodyOp::End {
                    body.state = BodyState::Dead;
                    body.on = None;
                    thread.bodies.pop();
                } else {
                    body.state = BodyState::Paused;
                }
            }
            BodyOp::Resume => {
                if body.state != BodyState::Paused {
                    return Err(fail(wrong(BodyState::Paused, body.state)));
                }
                placed(body).map_err(fail)?;
                body.state = BodyState::Running;
            }
        }
        self.debug.body(op, task_id, body_id, body.iteration);
        let next = running_top(&proc.tasks, &thread.bodies);
        let (app_id, rank) = (proc.app_id, proc.rank);
        let label = |task: u32| {
            let ty = proc.tasks.get(&task).map(|k| k.ty);
            ty.and_then(|i| proc.types.get(i))
                .map(|ty| i64::from(ty.value))
        };
        let next_info = next.map(|(task, body)| (task, body, label(task)));
        let mut changes = Vec::new();
        match op {
            BodyOp::Execute | BodyOp::End => {
                let push = op == BodyOp::Execute;
                let top = self
                    .stack_op(t, row, push, TASK_BODY)
                    .map_err(|failure| NosvProblem::SubsystemForBody { push, failure })?;
                changes.push((CH_SUBSYSTEM, top));
            }
            _ => {}
        }
        let Some(thread) = self.threads.get_mut(t) else {
            return Ok(Changes(changes));
        };
        // Nested transitions switch to the next body; the others start or stop one.
        let nested = match op {
            BodyOp::Execute => prev.is_some(),
            BodyOp::End => next.is_some(),
            _ => false,
        };
        let running = matches!(op, BodyOp::Execute | BodyOp::Resume) || nested;
        let values = if running {
            let Some((task, body, label)) = next_info else {
                return Ok(Changes(changes));
            };
            if task == 0 {
                return Err(NosvProblem::TaskIdZero);
            }
            if app_id <= 0 {
                return Err(NosvProblem::AppIdNotPositive);
            }
            let rank = rank.map(|r| r + 1);
            [
                Some(i64::from(body)),
                Some(i64::from(task)),
                label,
                Some(app_id),
                rank,
            ]
        } else {
            [None; 5]
        };
        let taskid = values[1];
        if thread.values[CH_TASKID] == taskid {
            return Err(NosvProblem::SameValue {
                chan: Self::chan_name(row, CH_TASKID),
                value: taskid,
                context: Some(running),
            });
        }
        let chans = [CH_BODYID, CH_TASKID, CH_TYPE, CH_APPID, CH_RANK];
        for (ch, value) in chans.into_iter().zip(values) {
            if ch == CH_RANK && rank.is_none() {
                continue;
            }
            thread.values[ch] = value;
            changes.push((ch, value));
        }
        if op == BodyOp::Execute {
            let top = thread.subsystems.last().copied();
            if top.is_some_and(|s| s != TASK_BODY) {
                return Err(NosvProblem::WrongSubsystem);
            }
        }
        Ok(Changes(changes))
    }

    fn counters(&mut self, ev: &Event<'_>) -> Result<Changes, NosvProblem> {
        if self.hwc == 0 {
            return Err(NosvProblem::NoCounters);
        }
        if ev.mcv.0[2] != b'C' {
            return Err(NosvProblem::UnknownCounterEvent);
        }
        let Some(data) = ev.jumbo_data() else {
            return Err(NosvProblem::CountersNotJumbo);
        };
        let want = self.hwc * 8;
        if data.len() != want {
            return Err(NosvProblem::CountersSize {
                got: data.len(),
                want,
            });
        }
        let changes = data
            .chunks_exact(8)
            .enumerate()
            .map(|(i, b)| {
                let v = b.first_chunk::<8>().map(|b| i64::from_le_bytes(*b));
                (CHANNELS + i, v)
            })
            .collect();
        Ok(Changes(changes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::EventTable;

    #[test]
    fn every_subsystem_event_of_the_table_is_known() {
        let table = EventTable::builtin();
        for c in [b'S', b'U', b'M', b'H', b'A', b'P'] {
            for v in 0..=255u8 {
                let known = table.event(crate::Mcv([b'V', c, v])).is_some();
                assert_eq!(known, simple(c, v).is_some(), "V{}{}", c as char, v as char);
            }
        }
    }

    #[test]
    fn api_enter_and_leave_events_push_and_pop_the_same_subsystem() {
        for v in b"rdspywcaeltubogkjmin" {
            let (Some(Simple::Push(a)), Some(Simple::Pop(b))) =
                (simple(b'A', *v), simple(b'A', v.to_ascii_uppercase()))
            else {
                panic!("VA{}", *v as char);
            };
            assert_eq!(a, b);
            assert!(SUBSYSTEM_LABELS.iter().any(|&(s, _)| s == a));
        }
    }
}
