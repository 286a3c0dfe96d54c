//! The nanos6 model (`6` events, version 1.1.0) as ovniemu 1.14 emulates it: per thread a
//! stack of Nanos6 subsystems, a stack of thread types, its idle state and the task it runs
//! (task id, type, rank); per process the task types (`6Yc`) and tasks (`6Tc`).
//!
//! The rules are ovniemu's: events come from an active thread; a task has one body, which
//! runs (`6Tx`) once, pauses (`6Tp`) and resumes (`6Tr`) on top of its thread's stack and ends
//! (`6Te`) there; running a task over a running one is accepted with a warning. Running and
//! ending push and pop the "running body" subsystem. The subsystem and thread type stacks
//! refuse a push of the value on top; the task id and idle channels refuse the value they
//! already have.

use std::collections::HashMap;

use super::problem::{BodyFailure, BodyOp, BodyState, ChanFailure, EventProblem, NosvProblem};
use super::stack::push_pop;
use super::task_type::{creation, TaskDebug, TaskType, TaskTypes, TypeRefusal};
use crate::raw::Event;

/// Channel indices (ovniemu's order).
pub(crate) const CH_TASKID: usize = 0;
pub(crate) const CH_TYPE: usize = 1;
pub(crate) const CH_SUBSYSTEM: usize = 2;
pub(crate) const CH_RANK: usize = 3;
pub(crate) const CH_THREAD: usize = 4;
pub(crate) const CH_IDLE: usize = 5;
pub(crate) const CHANNELS: usize = 6;
const CHAN_NAMES: [&str; CHANNELS] = [
    "taskid",
    "task_type",
    "subsystem",
    "rank",
    "thread_type",
    "idle",
];
/// "Task: Running body", pushed while a task runs.
const TASK_BODY: i64 = 1;
/// Idle states.
pub(crate) const PROGRESSING: i64 = 100;
pub(crate) const RESTING: i64 = 101;

/// What a simple event does: push or pop a subsystem (`false`) or thread type (`true`), set
/// the idle state, or nothing.
enum Simple {
    Push(bool, i64),
    Pop(bool, i64),
    Idle(i64),
    Ignore,
}

fn simple(c: u8, v: u8) -> Option<Simple> {
    use Simple::*;
    let pair = |s: i64| {
        Some(if v.is_ascii_uppercase() || v == b']' {
            Pop(false, s)
        } else {
            Push(false, s)
        })
    };
    match (c, v) {
        (b'W', b'[' | b']') => pair(19),
        (b'W', b't' | b'T') => pair(18),
        (b'W', b'w' | b'W') => pair(20),
        (b'W', b'm' | b'M') => pair(21),
        (b'W', b's' | b'S') => pair(22),
        (b'W', b'r' | b'R') => pair(23),
        (b'W', b'g' | b'G') => pair(24),
        (b'W', b'*') | (b't', b'[' | b']') | (b'S', b'@' | b'r' | b's') => Some(Ignore),
        (b'P', b'p') => Some(Idle(PROGRESSING)),
        (b'P', b'r') => Some(Idle(RESTING)),
        (b'P', b'a') => Some(Idle(102)),
        (b'C', b'[' | b']') => pair(3),
        (b'U', b'[' | b']') => pair(4),
        (b'F', b'[' | b']') => pair(5),
        (b'O', b'[' | b']') => pair(6),
        (b'M', b'a' | b'A') => pair(16),
        (b'M', b'f' | b'F') => pair(17),
        (b'D', b'r' | b'R') => pair(10),
        (b'D', b'u' | b'U') => pair(11),
        (b'S', b'[' | b']') => pair(9),
        (b'S', b'a' | b'A') => pair(7),
        (b'S', b'p' | b'P') => pair(8),
        (b'B', b'b' | b'B') => pair(14),
        (b'B', b'u' | b'U') => pair(15),
        (b'B', b'w' | b'W') => pair(12),
        (b'B', b'f' | b'F') => pair(13),
        (b'H', _) => {
            let ty = match v.to_ascii_lowercase() {
                b'e' => 4,
                b'w' => 3,
                b'l' => 1,
                b'm' => 2,
                _ => return None,
            };
            Some(if v.is_ascii_uppercase() {
                Pop(true, ty)
            } else {
                Push(true, ty)
            })
        }
        _ => None,
    }
}

/// The subsystem labels, in ovniemu's order.
pub(crate) const SUBSYSTEM_LABELS: [(i64, &str); 30] = [
    (2, "Unknown subsystem"),
    (1, "Task: Running body"),
    (3, "Task: Creating"),
    (4, "Task: Submitting"),
    (5, "Task: Spawning function"),
    (6, "Task: Running task for"),
    (9, "Scheduler: Serving tasks"),
    (7, "Scheduler: Adding ready tasks"),
    (8, "Scheduler: Processing ready tasks"),
    (10, "Dependency: Registering"),
    (11, "Dependency: Unregistering"),
    (12, "Blocking: Taskwait"),
    (14, "Blocking: Blocking current task"),
    (15, "Blocking: Unblocking remote task"),
    (13, "Blocking: Wait for deadline"),
    (18, "Worker: Handling task"),
    (19, "Worker: Looking for work"),
    (20, "Worker: Switching to another thread"),
    (21, "Worker: Migrating CPU"),
    (22, "Worker: Suspending thread"),
    (23, "Worker: Resuming another thread"),
    (24, "Worker: Sponge mode"),
    (16, "Memory: Allocating"),
    (17, "Memory: Freeing"),
    (61, "EV Scheduler: Send task"),
    (60, "EV Scheduler: Recv task"),
    (62, "EV Scheduler: Self-assign task"),
    (63, "EV CPU: Becomes idle"),
    (64, "EV CPU: Becomes active"),
    (65, "EV Worker: Waking another thread"),
];

/// The thread type labels.
pub(crate) const THREAD_LABELS: [(i64, &str); 4] =
    [(4, "External"), (3, "Worker"), (1, "Leader"), (2, "Main")];

/// The idle labels.
pub(crate) const IDLE_LABELS: [(i64, &str); 3] = [
    (PROGRESSING, "Progressing"),
    (RESTING, "Resting"),
    (102, "Absorbing noise"),
];

#[derive(Debug)]
struct Task {
    ty: usize,
    /// The state of its body, `None` before it first runs.
    state: Option<BodyState>,
    /// Thread whose stack holds it.
    on: Option<usize>,
}

#[derive(Debug, Default)]
struct Proc {
    types: TaskTypes,
    tasks: HashMap<u32, Task>,
    /// MPI rank, if the process has one.
    rank: Option<i64>,
}

#[derive(Debug)]
struct Thread {
    taskid: Option<i64>,
    idle: Option<i64>,
    subsystems: Vec<i64>,
    thread_types: Vec<i64>,
    /// Tasks on the thread, innermost last.
    tasks: Vec<u32>,
}

/// What an accepted event changed: channels with their new value, in ovniemu's order.
pub(crate) type Applied = Vec<(usize, Option<i64>)>;

/// The state of the nanos6 model.
#[derive(Debug)]
pub(crate) struct Nanos6 {
    procs: Vec<Proc>,
    threads: Vec<Thread>,
    proc_of: Vec<usize>,
    /// ovniemu's warning of the last event, if it printed one (an event may warn and then be
    /// rejected).
    warning: Option<String>,
    /// The original's debug lines of the tasks (`-d`).
    pub(crate) debug: TaskDebug,
}

fn u32_at(payload: &[u8], at: usize) -> Option<u32> {
    payload
        .get(at..at + 4)
        .and_then(|b| b.first_chunk::<4>())
        .map(|b| u32::from_le_bytes(*b))
}

type Result6 = Result<Applied, NosvProblem>;

impl Nanos6 {
    /// A model for threads whose process is `proc_of[t]`; `ranks` gives each process's rank.
    pub(crate) fn new(proc_of: Vec<usize>, ranks: &[Option<i64>]) -> Self {
        Self {
            procs: ranks
                .iter()
                .map(|&rank| Proc {
                    rank,
                    ..Proc::default()
                })
                .collect(),
            threads: (0..proc_of.len())
                .map(|_| Thread {
                    taskid: None,
                    idle: Some(PROGRESSING),
                    subsystems: Vec::new(),
                    thread_types: Vec::new(),
                    tasks: Vec::new(),
                })
                .collect(),
            proc_of,
            warning: None,
            debug: TaskDebug::default(),
        }
    }

    /// ovniemu's warning of the last event, if any.
    pub(crate) fn take_warning(&mut self) -> Option<String> {
        self.warning.take()
    }

    /// The channel name ovniemu gives channel `ch` of the thread in row `row`.
    pub(crate) fn chan_name(row: usize, ch: usize) -> String {
        format!("nanos6.thread{row}.{}", CHAN_NAMES.get(ch).unwrap_or(&""))
    }

    /// Task types of every process, processes in order.
    pub(crate) fn types(&self) -> impl Iterator<Item = &TaskType> {
        self.procs.iter().flat_map(|p| p.types.iter())
    }

    /// Values left on thread `t`'s subsystem stack.
    pub(crate) fn depth(&self, t: usize) -> usize {
        self.threads.get(t).map_or(0, |th| th.subsystems.len())
    }

    /// Plays event `ev` of thread `t` (`tid`, ovniemu row `row`; `active` or not).
    pub(crate) fn event(
        &mut self,
        t: usize,
        row: usize,
        tid: i64,
        active: bool,
        ev: &Event<'_>,
    ) -> Result<Applied, EventProblem> {
        let wrap = EventProblem::Nanos6;
        if !active {
            return Err(wrap(NosvProblem::NotActive { tid }));
        }
        let [_, c, v] = ev.mcv.0;
        match c {
            b'C' | b'S' | b'U' | b'F' | b'O' | b't' | b'H' | b'D' | b'B' | b'W' | b'M' | b'P' => {
                self.simple(t, row, c, v).map_err(wrap)
            }
            b'T' => match v {
                b'C' => {
                    self.warning = Some("got old 6TC event, ignoring".to_string());
                    Ok(Vec::new())
                }
                b'c' => self.create_task(t, ev.payload).map_err(wrap),
                b'x' | b'e' | b'p' | b'r' => self.update_task(t, row, v, ev.payload).map_err(wrap),
                _ => Err(wrap(NosvProblem::UnexpectedTaskValue)),
            },
            b'Y' => self.create_type(t, v, ev).map_err(wrap),
            _ => Err(wrap(NosvProblem::UnknownCategory)),
        }
    }

    /// Pushes or pops `value` on a stack of thread `t` (the thread types' if `types`);
    /// returns the new top.
    fn stack_op(
        &mut self,
        t: usize,
        row: usize,
        types: bool,
        push: bool,
        value: i64,
    ) -> Result<Option<i64>, ChanFailure> {
        let chan = || Self::chan_name(row, if types { CH_THREAD } else { CH_SUBSYSTEM });
        let Some(th) = self.threads.get_mut(t) else {
            return Ok(None);
        };
        let stack = if types {
            &mut th.thread_types
        } else {
            &mut th.subsystems
        };
        push_pop(stack, push, value, true, chan)
    }

    fn simple(&mut self, t: usize, row: usize, c: u8, v: u8) -> Result6 {
        let Some(op) = simple(c, v) else {
            return Err(NosvProblem::UnknownSubsystemEvent);
        };
        let (types, push, value) = match op {
            Simple::Ignore => return Ok(Vec::new()),
            Simple::Idle(value) => {
                let Some(th) = self.threads.get_mut(t) else {
                    return Ok(Vec::new());
                };
                if th.idle == Some(value) {
                    return Err(NosvProblem::SameValue {
                        chan: Self::chan_name(row, CH_IDLE),
                        value: Some(value),
                        context: None,
                    });
                }
                th.idle = Some(value);
                return Ok(vec![(CH_IDLE, Some(value))]);
            }
            Simple::Push(types, s) => (types, true, s),
            Simple::Pop(types, s) => (types, false, s),
        };
        let top = self
            .stack_op(t, row, types, push, value)
            .map_err(NosvProblem::Subsystem)?;
        let ch = if types { CH_THREAD } else { CH_SUBSYSTEM };
        Ok(vec![(ch, top)])
    }

    fn proc(&mut self, t: usize) -> Option<&mut Proc> {
        self.proc_of.get(t).and_then(|&p| self.procs.get_mut(p))
    }

    fn create_task(&mut self, t: usize, payload: &[u8]) -> Result6 {
        let (Some(task), Some(ty), 8) = (u32_at(payload, 0), u32_at(payload, 4), payload.len())
        else {
            return Err(NosvProblem::CreatePayloadSize);
        };
        let Some(proc) = self.proc(t) else {
            return Ok(Vec::new());
        };
        if proc.tasks.contains_key(&task) {
            return Err(NosvProblem::TaskExists(task));
        }
        let Some(ty) = proc.types.index(ty) else {
            return Err(NosvProblem::UnknownType(ty));
        };
        proc.tasks.insert(
            task,
            Task {
                ty,
                state: None,
                on: None,
            },
        );
        self.debug.task_created(task, false);
        Ok(Vec::new())
    }

    fn create_type(&mut self, t: usize, v: u8, ev: &Event<'_>) -> Result6 {
        let debug = self.debug.on;
        let (id, label) = creation(v, ev).map_err(TypeRefusal::nosv)?;
        let Some(proc) = self.proc(t) else {
            return Ok(Vec::new());
        };
        let created = proc.types.create(id, label).map_err(TypeRefusal::nosv)?;
        let label = debug.then(|| created.label.clone());
        if let Some(label) = label {
            self.debug.type_created(id, &label);
        }
        Ok(Vec::new())
    }

    /// `6Tx`, `6Te`, `6Tp`, `6Tr`: the body's state, then the subsystem stack, then the task
    /// channels, in ovniemu's order.
    fn update_task(&mut self, t: usize, row: usize, v: u8, payload: &[u8]) -> Result6 {
        let Some(task_id) = u32_at(payload, 0) else {
            return Err(NosvProblem::MissingTaskId);
        };
        let op = match v {
            b'x' => BodyOp::Execute,
            b'e' => BodyOp::End,
            b'p' => BodyOp::Pause,
            _ => BodyOp::Resume,
        };
        let Some(p) = self.proc_of.get(t).copied() else {
            return Ok(Vec::new());
        };
        let (Some(proc), Some(thread)) = (self.procs.get_mut(p), self.threads.get_mut(t)) else {
            return Ok(Vec::new());
        };
        let running_top = |tasks: &HashMap<u32, Task>, stack: &[u32]| {
            stack
                .last()
                .copied()
                .filter(|id| tasks.get(id).and_then(|k| k.state) == Some(BodyState::Running))
        };
        let prev = running_top(&proc.tasks, &thread.tasks);
        let on_top = thread.tasks.last() == Some(&task_id);
        let Some(task) = proc.tasks.get_mut(&task_id) else {
            return Err(NosvProblem::TaskNotFound(task_id));
        };
        let fail = |failure| NosvProblem::Body {
            op,
            task: task_id,
            body: 1,
            failure,
        };
        let wrong = |want: BodyState, is: BodyState| BodyFailure::WrongState { want, is };
        let placed = |task: &Task| match task.on {
            None => Err(BodyFailure::NoStack),
            Some(o) if o != t => Err(BodyFailure::OtherStack),
            Some(_) if !on_top => Err(BodyFailure::NotOnTop),
            Some(_) => Ok(()),
        };
        let warning = &mut self.warning;
        match (op, task.state) {
            (BodyOp::Execute, state) => {
                match state.unwrap_or(BodyState::Created) {
                    BodyState::Created => {}
                    BodyState::Dead => return Err(fail(BodyFailure::NotAllowedAgain)),
                    BodyState::Paused => return Err(fail(BodyFailure::RunPaused)),
                    is => return Err(fail(wrong(BodyState::Created, is))),
                }
                if let Some(top) = prev {
                    *warning = Some(format!(
                        "deprecated nesting body(id=1,taskid={task_id}) over already running body(id=1,taskid={top})"
                    ));
                }
                task.state = Some(BodyState::Running);
                task.on = Some(t);
                thread.tasks.push(task_id);
            }
            (_, None) => {
                return Err(NosvProblem::NoBody {
                    op,
                    task: task_id,
                    body: 1,
                })
            }
            (BodyOp::End | BodyOp::Pause, Some(state)) => {
                if state != BodyState::Running {
                    return Err(fail(wrong(BodyState::Running, state)));
                }
                placed(task).map_err(fail)?;
                if op == BodyOp::End {
                    task.state = Some(BodyState::Dead);
                    task.on = None;
                    thread.tasks.pop();
                } else {
                    task.state = Some(BodyState::Paused);
                }
            }
            (BodyOp::Resume, Some(state)) => {
                if state != BodyState::Paused {
                    return Err(fail(wrong(BodyState::Paused, state)));
                }
                placed(task).map_err(fail)?;
                task.state = Some(BodyState::Running);
            }
        }
        self.debug.body(op, task_id, 1, 0);
        let next = running_top(&proc.tasks, &thread.tasks);
        let rank = proc.rank;
        let gid = |id: u32| {
            let ty = proc.tasks.get(&id).map(|k| k.ty);
            ty.and_then(|i| proc.types.get(i))
                .map(|ty| i64::from(ty.value))
        };
        let next_info = next.map(|id| (id, gid(id)));
        let mut changes = Vec::new();
        if matches!(op, BodyOp::Execute | BodyOp::End) {
            let push = op == BodyOp::Execute;
            let top = self
                .stack_op(t, row, false, push, TASK_BODY)
                .map_err(|failure| NosvProblem::SubsystemForBody { push, failure })?;
            changes.push((CH_SUBSYSTEM, top));
        }
        let Some(thread) = self.threads.get_mut(t) else {
            return Ok(changes);
        };
        // Nested transitions switch to the next task; the others start or stop one.
        let switch = match op {
            BodyOp::Execute => prev.is_some(),
            BodyOp::End => next.is_some(),
            _ => false,
        };
        let running = matches!(op, BodyOp::Execute | BodyOp::Resume);
        let values = if switch || running {
            let Some((id, ty)) = next_info else {
                return Ok(changes);
            };
            if id == 0 {
                return Err(if switch {
                    NosvProblem::SwitchTaskIdZero
                } else {
                    NosvProblem::TaskIdZero
                });
            }
            [Some(i64::from(id)), ty, rank.map(|r| r + 1)]
        } else {
            [None; 3]
        };
        let taskid = values[0];
        if thread.taskid == taskid {
            let chan = Self::chan_name(row, CH_TASKID);
            return Err(match (switch, taskid) {
                (true, Some(value)) => NosvProblem::SwitchSameValue { chan, value },
                _ => NosvProblem::SameValue {
                    chan,
                    value: taskid,
                    context: Some(running),
                },
            });
        }
        thread.taskid = taskid;
        for (ch, value) in [CH_TASKID, CH_TYPE, CH_RANK].into_iter().zip(values) {
            if ch != CH_RANK || rank.is_some() {
                changes.push((ch, value));
            }
        }
        Ok(changes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::EventTable;

    #[test]
    fn every_simple_event_of_the_table_is_known() {
        let table = EventTable::builtin();
        for c in *b"CSUFOtHDBWMP" {
            for v in 0..=255u8 {
                let known = table.event(crate::Mcv([b'6', c, v])).is_some();
                assert_eq!(known, simple(c, v).is_some(), "6{}{}", c as char, v as char);
            }
        }
    }

    #[test]
    fn enter_and_leave_events_push_and_pop_the_same_value() {
        let table = EventTable::builtin();
        for c in *b"CSUFOHDBWM" {
            for v in 0..=255u8 {
                if let Some(Simple::Push(ty, a)) = simple(c, v) {
                    let up = if v == b'[' {
                        b']'
                    } else {
                        v.to_ascii_uppercase()
                    };
                    let Some(Simple::Pop(ty2, b)) = simple(c, up) else {
                        panic!("6{}{}", c as char, v as char);
                    };
                    assert_eq!((ty, a), (ty2, b));
                    assert!(table.event(crate::Mcv([b'6', c, up])).is_some());
                    let labels: &[(i64, &str)] = if ty {
                        &THREAD_LABELS
                    } else {
                        &SUBSYSTEM_LABELS
                    };
                    assert!(labels.iter().any(|&(s, _)| s == a));
                }
            }
        }
    }
}
