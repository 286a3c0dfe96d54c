//! Models whose whole state is one stack of values per thread, pushed and popped by paired
//! events: mpi (the MPI function being called), tampi and nodes (their subsystem) and kernel
//! (out of the CPU after a context switch). ovniemu 1.14 keeps that stack in a stack channel, so
//! the checks are its channel's: a push of the value already on top is rejected ("same value
//! as last_value"), a pop must name the value on top, and a stack holds at most 512 values.
//! mpi and tampi only accept events from a running thread.
//!
//! A model is described once by a [`StackModel`] (its events, messages and Paraver view); the
//! linter and the emulator run the same [`Stacks`].

use super::problem::{ChanFailure, EventProblem};

/// Depth of a stack channel in ovniemu (`MAX_CHAN_STACK`).
const MAX_STACK: usize = 512;

/// What an event does to its thread's stack.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StackOp {
    /// Enter: push the value.
    Push(i64),
    /// Leave: pop the value, which must be on top.
    Pop(i64),
}

/// Which thread state lets the thread's Paraver row show the value (ovniemu's tracking mode).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Track {
    /// Only while the thread is running ("of the RUNNING thread").
    Running,
    /// While the thread is running, cooling or warming ("of the ACTIVE thread").
    Active,
    /// Always: the row shows the thread's own value, whatever its state.
    Any,
}

impl Track {
    /// The suffix ovniemu appends to the `.pcf` type label.
    pub(crate) fn suffix(self) -> &'static str {
        match self {
            Self::Running => "of the RUNNING thread",
            Self::Active => "of the ACTIVE thread",
            Self::Any => "",
        }
    }

    /// True if a thread in ovni state code `state` (0 unknown .. 5 warming) is selected.
    pub(crate) fn selects(self, state: Option<i64>) -> bool {
        match self {
            Self::Running => state == Some(1),
            Self::Active => matches!(state, Some(1 | 4 | 5)),
            Self::Any => true,
        }
    }
}

/// Everything that describes one stack model, as ovniemu 1.14 defines it.
#[derive(Debug)]
pub(crate) struct StackModel {
    /// Model character.
    pub(crate) id: u8,
    /// Model name (`ovni.require` key, channel prefix).
    pub(crate) name: &'static str,
    /// Channel name (`<name>.thread<row>.<chan>` in messages).
    pub(crate) chan: &'static str,
    /// The stack operation of event `<id><category><value>`, `None` if it has none.
    pub(crate) op: fn(u8, u8) -> Option<StackOp>,
    /// ovniemu's message when the operation fails.
    pub(crate) event_failed: &'static str,
    /// ovniemu's line (function and message) for an event of the model it does not know,
    /// by category.
    pub(crate) unknown_event: fn(u8) -> &'static str,
    /// Events are only accepted from a running thread.
    pub(crate) needs_running: bool,
    /// What the values are, in the `-l` end check message ("stacked mpi functions"); `None`
    /// if the model has no such check.
    pub(crate) stacked: Option<&'static str>,
    /// Paraver record type.
    pub(crate) prv_type: u32,
    /// `.pcf` type label before the tracking suffix.
    pub(crate) pcf_prefix: &'static str,
    /// `.pcf` value labels, in ovniemu's order.
    pub(crate) labels: &'static [(i64, &'static str)],
    /// Tracking of the thread view (the CPU view always shows the running thread).
    pub(crate) thread_track: Track,
}

impl StackModel {
    /// The name ovniemu gives the stack channel of the thread in row `row`.
    pub(crate) fn chan_name(&self, row: usize) -> String {
        format!("{}.thread{row}.{}", self.name, self.chan)
    }
}

/// The stack of every thread for one model.
#[derive(Debug)]
pub(crate) struct Stacks {
    model: &'static StackModel,
    stacks: Vec<Vec<i64>>,
}

impl Stacks {
    pub(crate) fn new(model: &'static StackModel, nthreads: usize) -> Self {
        Self {
            model,
            stacks: vec![Vec::new(); nthreads],
        }
    }

    pub(crate) fn model(&self) -> &'static StackModel {
        self.model
    }

    /// Applies event `c`,`v` of thread `t` (`tid`, ovniemu row `row`, `running` or not), in
    /// ovniemu's order of checks; returns the new top of the stack.
    pub(crate) fn event(
        &mut self,
        t: usize,
        row: usize,
        tid: i64,
        running: bool,
        c: u8,
        v: u8,
    ) -> Result<Option<i64>, EventProblem> {
        if self.model.needs_running && !running {
            return Err(EventProblem::ThreadNotRunning { tid });
        }
        let Some(op) = (self.model.op)(c, v) else {
            return Err(EventProblem::UnknownEvent {
                model: self.model.name.to_string(),
            });
        };
        let chan = || self.model.chan_name(row);
        let Some(stack) = self.stacks.get_mut(t) else {
            return Ok(None);
        };
        // The channel's last value is its top after the last event that changed it, which
        // is the top now: a push of it is refused.
        let (push, value) = match op {
            StackOp::Push(value) => (true, value),
            StackOp::Pop(value) => (false, value),
        };
        push_pop(stack, push, value, true, chan).map_err(channel_problem)
    }

    /// Values left on the stack of thread `t`.
    pub(crate) fn depth(&self, t: usize) -> usize {
        self.stacks.get(t).map_or(0, Vec::len)
    }
}

/// The stack models ovniemu emulates here, by model character.
pub(crate) fn stack_model(id: u8) -> Option<&'static StackModel> {
    match id {
        b'M' => Some(&super::mpi::MPI),
        b'T' => Some(&super::tampi::TAMPI),
        b'K' => Some(&super::kernel::KERNEL),
        b'D' => Some(&super::nodes::NODES),
        _ => None,
    }
}

/// The operation of event `c`,`v` in a table of `(category, enter value, leave value,
/// stacked value)`: the enter event pushes the value, the leave event pops it.
#[inline]
pub(crate) fn pair_op(pairs: &[(u8, u8, u8, i64)], c: u8, v: u8) -> Option<StackOp> {
    let &(_, enter, _, value) = pairs
        .iter()
        .find(|&&(cat, enter, leave, _)| cat == c && (v == enter || v == leave))?;
    Some(if v == enter {
        StackOp::Push(value)
    } else {
        StackOp::Pop(value)
    })
}

/// Checks that `op` knows exactly the events of model `m` in the event table; returns how
/// many there are.
#[cfg(test)]
pub(crate) fn known_ops(m: u8, op: fn(u8, u8) -> Option<StackOp>) -> usize {
    let table = crate::events::EventTable::builtin();
    let mut n = 0;
    for c in 0..=255u8 {
        for v in 0..=255u8 {
            let known = table.event(crate::Mcv([m, c, v])).is_some();
            assert_eq!(
                known,
                op(c, v).is_some(),
                "{}{}{}",
                m as char,
                c as char,
                v as char
            );
            n += usize::from(known);
        }
    }
    n
}

/// A push (`push`) or a pop of `value` on a channel's stack, as ovniemu's channels do: a pop
/// must name the value on top, a push fails on a full stack (512 values) and, when
/// `refuse_same` (the channel checks duplicates), if `value` is already on top. Returns the
/// new top; `chan` names the channel in a failure.
#[inline]
pub(crate) fn push_pop(
    stack: &mut Vec<i64>,
    push: bool,
    value: i64,
    refuse_same: bool,
    chan: impl FnOnce() -> String,
) -> Result<Option<i64>, ChanFailure> {
    if push {
        if refuse_same && stack.last() == Some(&value) {
            return Err(ChanFailure::Same {
                chan: chan(),
                value,
            });
        }
        if stack.len() >= MAX_STACK {
            return Err(ChanFailure::Full { chan: chan() });
        }
        stack.push(value);
    } else {
        match stack.last() {
            None => return Err(ChanFailure::Empty { chan: chan() }),
            Some(&top) if top != value => {
                return Err(ChanFailure::Mismatch {
                    chan: chan(),
                    value,
                    top,
                })
            }
            Some(_) => {
                stack.pop();
            }
        }
    }
    Ok(stack.last().copied())
}

/// A channel failure in the words of the stack models' problems.
#[cold]
fn channel_problem(f: ChanFailure) -> EventProblem {
    match f {
        ChanFailure::Same { chan, value } => EventProblem::ChannelSameValue { chan, value },
        ChanFailure::Full { chan } => EventProblem::ChannelStackFull { chan },
        ChanFailure::Empty { chan } => EventProblem::ChannelStackEmpty { chan },
        ChanFailure::Mismatch { chan, value, top } => {
            EventProblem::ChannelPopMismatch { chan, value, top }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stacks() -> Stacks {
        Stacks::new(stack_model(b'M').unwrap(), 1)
    }

    #[test]
    fn pushes_and_pops_in_order() {
        let mut s = stacks();
        assert_eq!(s.event(0, 0, 7, true, b'U', b'i'), Ok(Some(1)));
        assert_eq!(s.event(0, 0, 7, true, b'W', b'['), Ok(Some(4)));
        assert_eq!(s.event(0, 0, 7, true, b'W', b']'), Ok(Some(1)));
        assert_eq!(s.event(0, 0, 7, true, b'U', b'I'), Ok(None));
        assert_eq!(s.depth(0), 0);
    }

    #[test]
    fn rejects_what_the_channel_rejects() {
        let mut s = stacks();
        assert_eq!(
            s.event(0, 0, 7, false, b'U', b'i'),
            Err(EventProblem::ThreadNotRunning { tid: 7 })
        );
        assert!(matches!(
            s.event(0, 0, 7, true, b'U', b'I'),
            Err(EventProblem::ChannelStackEmpty { .. })
        ));
        s.event(0, 0, 7, true, b'U', b't').unwrap();
        assert_eq!(
            s.event(0, 3, 7, true, b'U', b't'),
            Err(EventProblem::ChannelSameValue {
                chan: "mpi.thread3.function".into(),
                value: 2
            })
        );
        assert!(matches!(
            s.event(0, 0, 7, true, b'U', b'F'),
            Err(EventProblem::ChannelPopMismatch {
                value: 3,
                top: 2,
                ..
            })
        ));
        assert!(matches!(
            s.event(0, 0, 7, true, b'U', b'x'),
            Err(EventProblem::UnknownEvent { .. })
        ));
        assert_eq!(s.depth(0), 1);
    }

    #[test]
    fn a_stack_holds_512_values() {
        let mut s = stacks();
        for i in 0..512 {
            let (c, v) = if i % 2 == 0 {
                (b'W', b'[')
            } else {
                (b'T', b'[')
            };
            s.event(0, 0, 7, true, c, v).unwrap();
        }
        assert!(matches!(
            s.event(0, 0, 7, true, b'U', b'i'),
            Err(EventProblem::ChannelStackFull { .. })
        ));
    }
}
