//! The openmp model (`P` events, version 1.2.1) as ovniemu 1.14 emulates it: per thread a
//! stack of OpenMP subsystems, and stacks of the labels and ids of the tasks and
//! worksharings it runs; per process the task types (`POc`) and tasks (`PPc`).
//!
//! The rules are ovniemu's: subsystem events push and pop their subsystem (spin-wait events
//! change nothing); a task runs (`PPx`) only once created and not already running, and may
//! run again after it ended; running a task over another one is allowed with a warning; a
//! task ends (`PPe`) only on the thread running it, on top of its stack; a worksharing
//! (`PQx`, `PQe`) pushes and pops its type's label. Every event needs a running thread. The
//! stacks allow the same value twice in a row and hold at most 512 values.

use std::collections::HashMap;

use super::problem::{BodyOp, ChanFailure, EventProblem, OpenMpProblem, TaskState};
use super::stack::push_pop;
use super::task_type::{
    creation, label_values, LabelCollision, TaskDebug, TaskType, TaskTypes, TypeRefusal,
};
use crate::raw::Event;

/// Channel indices (ovniemu's order).
pub(crate) const CH_SUBSYSTEM: usize = 0;
pub(crate) const CH_LABEL: usize = 1;
pub(crate) const CH_TASKID: usize = 2;
/// Names of the channels (`openmp.thread<row>.<name>`).
const CHAN_NAMES: [&str; 3] = ["subsystem", "label", "task ID"];

/// The subsystem of each simple event, `None` for the spin-wait events (ignored).
fn subsystem(c: u8, v: u8) -> Option<Option<(bool, i64)>> {
    const PAIRS: [(u8, u8, u8, i64); 30] = [
        (b'B', b'b', b'B', 3),
        (b'B', b'j', b'J', 2),
        (b'B', b'f', b'F', 1),
        (b'B', b't', b'T', 5),
        (b'I', b'a', b'A', 6),
        (b'I', b'r', b'R', 7),
        (b'I', b'[', b']', 8),
        (b'W', b'd', b'D', 9),
        (b'W', b'c', b'C', 10),
        (b'W', b'y', b'Y', 11),
        (b'W', b's', b'S', 12),
        (b'W', b'e', b'E', 13),
        (b'W', b'i', b'I', 14),
        (b'T', b'a', b'A', 15),
        (b'T', b'c', b'C', 16),
        (b'T', b'd', b'D', 17),
        (b'T', b'r', b'R', 18),
        (b'T', b'[', b']', 19),
        (b'T', b'i', b'I', 20),
        (b'T', b's', b'S', 21),
        (b'T', b'g', b'G', 22),
        (b'T', b't', b'T', 23),
        (b'T', b'w', b'W', 24),
        (b'T', b'y', b'Y', 25),
        (b'A', b'[', b']', 26),
        (b'C', b'f', b'F', 27),
        (b'C', b'i', b'I', 28),
        (b'M', b'i', b'I', 29),
        (b'M', b'u', b'U', 30),
        (b'H', b'[', b']', 31),
    ];
    if c == b'B' && matches!(v, b's' | b'S') {
        return Some(None);
    }
    let &(_, enter, _, s) = PAIRS
        .iter()
        .find(|&&(cat, enter, leave, _)| cat == c && (v == enter || v == leave))?;
    Some(Some((v == enter, s)))
}

/// The subsystem values and their names, in ovniemu's order.
pub(crate) const SUBSYSTEM_LABELS: [(i64, &str); 31] = [
    (9, "Work-distribution: Distribute"),
    (10, "Work-distribution: Dynamic for chunk"),
    (11, "Work-distribution: Dynamic for initialization"),
    (12, "Work-distribution: Static for chunk"),
    (13, "Work-distribution: Section"),
    (14, "Work-distribution: Single"),
    (15, "Task: Allocation"),
    (16, "Task: Check deps"),
    (17, "Task: Duplicating"),
    (18, "Task: Releasing deps"),
    (19, "Task: Running task"),
    (20, "Task: Running task if0"),
    (21, "Task: Scheduling"),
    (22, "Task: Taskgroup"),
    (23, "Task: Taskwait"),
    (24, "Task: Taskwait deps"),
    (25, "Task: Taskyield"),
    (6, "Critical: Acquiring"),
    (7, "Critical: Releasing"),
    (8, "Critical: Section"),
    (1, "Barrier: Fork"),
    (2, "Barrier: Join"),
    (3, "Barrier: Plain"),
    (5, "Barrier: Task"),
    (4, "Barrier: Spin wait"),
    (26, "Runtime: Attached"),
    (27, "Runtime: Fork call"),
    (28, "Runtime: Initialization"),
    (29, "Runtime: Internal microtask"),
    (30, "Runtime: User microtask"),
    (31, "Runtime: Worker main loop"),
];

#[derive(Debug)]
struct Task {
    ty: usize,
    /// `None` until it first runs.
    state: Option<TaskState>,
    /// Thread whose stack holds it while it runs.
    on: Option<usize>,
    /// Times it ran again after it ended.
    iteration: u32,
}

#[derive(Debug, Default)]
struct Proc {
    /// In creation order (the order of the `.pcf` labels).
    types: TaskTypes,
    tasks: HashMap<u32, Task>,
}

#[derive(Debug, Default)]
struct Thread {
    stacks: [Vec<i64>; 3],
    /// Tasks running on the thread, innermost last.
    tasks: Vec<u32>,
}

/// What an accepted event changed: up to two channels with their new top, in order, and
/// ovniemu's warning if it printed one.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Applied {
    pub(crate) changes: Vec<(usize, Option<i64>)>,
    pub(crate) warning: Option<String>,
}

/// The state of the openmp model.
#[derive(Debug)]
pub(crate) struct OpenMp {
    procs: Vec<Proc>,
    threads: Vec<Thread>,
    /// Process of each thread.
    proc_of: Vec<usize>,
    /// The original's debug lines of the tasks (`-d`).
    pub(crate) debug: TaskDebug,
}

fn u32_at(payload: &[u8], at: usize) -> Option<u32> {
    payload
        .get(at..at + 4)
        .and_then(|b| b.first_chunk::<4>())
        .map(|b| u32::from_le_bytes(*b))
}

impl OpenMp {
    /// A model for threads whose process is `proc_of[t]` (`nprocs` processes).
    pub(crate) fn new(proc_of: Vec<usize>, nprocs: usize) -> Self {
        Self {
            procs: (0..nprocs).map(|_| Proc::default()).collect(),
            threads: (0..proc_of.len()).map(|_| Thread::default()).collect(),
            proc_of,
            debug: TaskDebug::default(),
        }
    }

    /// The channel name ovniemu gives channel `ch` of the thread in row `row`.
    pub(crate) fn chan_name(row: usize, ch: usize) -> String {
        format!("openmp.thread{row}.{}", CHAN_NAMES.get(ch).unwrap_or(&""))
    }

    /// Types of every process, processes in order.
    pub(crate) fn types(&self) -> impl Iterator<Item = &TaskType> {
        self.procs.iter().flat_map(|p| p.types.iter())
    }

    /// The value labels of the type label view ([`label_values`]).
    pub(crate) fn label_values(&self) -> (Vec<(i64, String)>, Option<LabelCollision>) {
        label_values(self.types())
    }

    /// Values left on thread `t`'s subsystem stack.
    pub(crate) fn depth(&self, t: usize) -> usize {
        self.threads
            .get(t)
            .map_or(0, |th| th.stacks[CH_SUBSYSTEM].len())
    }

    /// Plays event `ev` of thread `t` (`tid`, ovniemu row `row`, `running` or not).
    pub(crate) fn event(
        &mut self,
        t: usize,
        row: usize,
        tid: i64,
        running: bool,
        ev: &Event<'_>,
    ) -> Result<Applied, EventProblem> {
        if !running {
            return Err(EventProblem::ThreadNotRunning { tid });
        }
        let [_, c, v] = ev.mcv.0;
        let omp = |p| Err(EventProblem::OpenMp(p));
        match c {
            b'B' | b'I' | b'W' | b'T' | b'A' | b'M' | b'H' | b'C' => match subsystem(c, v) {
                None => omp(OpenMpProblem::UnknownSubsystemEvent),
                Some(None) => Ok(Applied::default()),
                Some(Some((push, s))) => {
                    let top = self.stack_op(t, row, CH_SUBSYSTEM, push, s);
                    let top = top.map_err(|f| match f {
                        ChanFailure::Empty { chan } => EventProblem::ChannelStackEmpty { chan },
                        ChanFailure::Full { chan } => EventProblem::ChannelStackFull { chan },
                        ChanFailure::Same { chan, value } => {
                            EventProblem::ChannelSameValue { chan, value }
                        }
                        ChanFailure::Mismatch { chan, value, top } => {
                            EventProblem::ChannelPopMismatch { chan, value, top }
                        }
                    })?;
                    Ok(Applied {
                        changes: vec![(CH_SUBSYSTEM, top)],
                        warning: None,
                    })
                }
            },
            b'P' => match v {
                b'c' => self
                    .create_task(t, ev.payload)
                    .map_err(EventProblem::OpenMp),
                b'x' | b'e' => self
                    .run_task(t, row, v == b'x', ev.payload)
                    .map_err(EventProblem::OpenMp),
                _ => omp(OpenMpProblem::UnexpectedTaskValue),
            },
            b'O' => self.create_type(t, v, ev).map_err(EventProblem::OpenMp),
            b'Q' => match v {
                b'x' | b'e' => self
                    .worksharing(t, row, v == b'x', ev.payload)
                    .map_err(EventProblem::OpenMp),
                _ => omp(OpenMpProblem::UnexpectedWorksharingValue(v)),
            },
            _ => omp(OpenMpProblem::UnknownCategory),
        }
    }

    fn proc_mut(&mut self, t: usize) -> Option<&mut Proc> {
        let p = self.proc_of.get(t).copied()?;
        self.procs.get_mut(p)
    }

    /// Pushes (or pops, checking the top) `value` on channel `ch` of thread `t`.
    fn stack_op(
        &mut self,
        t: usize,
        row: usize,
        ch: usize,
        push: bool,
        value: i64,
    ) -> Result<Option<i64>, ChanFailure> {
        let chan = || Self::chan_name(row, ch);
        let Some(stack) = self.threads.get_mut(t).and_then(|th| th.stacks.get_mut(ch)) else {
            return Ok(None);
        };
        push_pop(stack, push, value, false, chan)
    }

    fn create_task(&mut self, t: usize, payload: &[u8]) -> Result<Applied, OpenMpProblem> {
        if payload.len() != 8 {
            return Err(OpenMpProblem::CreatePayloadSize);
        }
        let task = u32_at(payload, 0).unwrap_or(0);
        let ty = u32_at(payload, 4).unwrap_or(0);
        if task == 0 {
            return Err(OpenMpProblem::TaskIdZero { create: true });
        }
        if ty == 0 {
            return Err(OpenMpProblem::TypeIdZero);
        }
        let Some(proc) = self.proc_mut(t) else {
            return Ok(Applied::default());
        };
        if proc.tasks.contains_key(&task) {
            return Err(OpenMpProblem::TaskExists(task));
        }
        let Some(ty) = proc.types.index(ty) else {
            return Err(OpenMpProblem::UnknownType(ty));
        };
        let new = Task {
            ty,
            state: None,
            on: None,
            iteration: 0,
        };
        proc.tasks.insert(task, new);
        self.debug.task_created(task, true);
        Ok(Applied::default())
    }

    fn run_task(
        &mut self,
        t: usize,
        row: usize,
        execute: bool,
        payload: &[u8],
    ) -> Result<Applied, OpenMpProblem> {
        let Some(id) = u32_at(payload, 0) else {
            return Err(OpenMpProblem::MissingTaskId);
        };
        if id == 0 {
            return Err(OpenMpProblem::TaskIdZero { create: false });
        }
        let Some(p) = self.proc_of.get(t).copied() else {
            return Ok(Applied::default());
        };
        let Some(proc) = self.procs.get_mut(p) else {
            return Ok(Applied::default());
        };
        let Some(task) = proc.tasks.get_mut(&id) else {
            return Err(OpenMpProblem::TaskNotFound(id));
        };
        let label = i64::from(proc.types.get(task.ty).map_or(0, |ty| ty.value));
        let Some(thread) = self.threads.get_mut(t) else {
            return Ok(Applied::default());
        };
        let mut warning = None;
        if execute {
            match task.state {
                None => {}
                Some(TaskState::Dead) => {
                    task.iteration += 1;
                    self.debug.runs_again(id, 1);
                }
                Some(state) => return Err(OpenMpProblem::NotCreated { task: id, state }),
            }
            if let Some(&top) = thread.tasks.last() {
                warning = Some(format!(
                    "deprecated nesting body(id=1,taskid={id}) over already running body(id=1,taskid={top})"
                ));
            }
            task.state = Some(TaskState::Running);
            task.on = Some(t);
            thread.tasks.push(id);
        } else {
            match task.state {
                None => return Err(OpenMpProblem::NeverRan { task: id }),
                Some(TaskState::Running) => {}
                Some(state) => return Err(OpenMpProblem::EndNotRunning { task: id, state }),
            }
            if task.on != Some(t) {
                return Err(OpenMpProblem::EndOtherThread { task: id });
            }
            if thread.tasks.last() != Some(&id) {
                return Err(OpenMpProblem::EndNotOnTop { task: id });
            }
            task.state = Some(TaskState::Dead);
            task.on = None;
            thread.tasks.pop();
        }
        let op = if execute {
            BodyOp::Execute
        } else {
            BodyOp::End
        };
        self.debug.body(op, id, 1, task.iteration);
        let fail = |label: bool| {
            move |failure| OpenMpProblem::TaskChannel {
                execute,
                label,
                failure,
            }
        };
        let top_id = self
            .stack_op(t, row, CH_TASKID, execute, i64::from(id))
            .map_err(fail(false))?;
        let top_label = self
            .stack_op(t, row, CH_LABEL, execute, label)
            .map_err(fail(true))?;
        Ok(Applied {
            changes: vec![(CH_TASKID, top_id), (CH_LABEL, top_label)],
            warning,
        })
    }

    fn create_type(&mut self, t: usize, v: u8, ev: &Event<'_>) -> Result<Applied, OpenMpProblem> {
        let debug = self.debug.on;
        let (id, label) = creation(v, ev).map_err(TypeRefusal::openmp)?;
        let Some(proc) = self.proc_mut(t) else {
            return Ok(Applied::default());
        };
        let created = proc.types.create(id, label).map_err(TypeRefusal::openmp)?;
        let label = debug.then(|| created.label.clone());
        if let Some(label) = label {
            self.debug.type_created(id, &label);
        }
        Ok(Applied::default())
    }

    fn worksharing(
        &mut self,
        t: usize,
        row: usize,
        enter: bool,
        payload: &[u8],
    ) -> Result<Applied, OpenMpProblem> {
        let Some(ty) = u32_at(payload, 0) else {
            return Err(OpenMpProblem::MissingWorksharingType);
        };
        if ty == 0 {
            return Err(OpenMpProblem::WorksharingTypeZero);
        }
        let Some(proc) = self.proc_mut(t) else {
            return Ok(Applied::default());
        };
        let Some(i) = proc.types.index(ty) else {
            return Err(OpenMpProblem::WorksharingTypeNotFound(ty));
        };
        let label = i64::from(proc.types.get(i).map_or(0, |ty| ty.value));
        let top = self
            .stack_op(t, row, CH_LABEL, enter, label)
            .map_err(|failure| OpenMpProblem::WorksharingChannel { enter, failure })?;
        Ok(Applied {
            changes: vec![(CH_LABEL, top)],
            warning: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_simple_event_of_the_table_is_known() {
        let table = crate::events::EventTable::builtin();
        for (c, v) in (0..=255u8).flat_map(|c| (0..=255u8).map(move |v| (c, v))) {
            if matches!(c, b'P' | b'O' | b'Q') {
                continue;
            }
            let known = table.event(crate::Mcv([b'P', c, v])).is_some();
            assert_eq!(
                known,
                subsystem(c, v).is_some(),
                "P{}{}",
                c as char,
                v as char
            );
        }
    }
}
