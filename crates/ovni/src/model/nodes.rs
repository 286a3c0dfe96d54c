//! The nodes model (`D` events, version 1.0.0): the NODES subsystem each thread is in. Every
//! subsystem has an enter event (`D<category>[`) and a leave event (`D<category>]`) that push
//! and pop its value on the thread's subsystem stack ([`super::stack`]).

use super::stack::{StackModel, StackOp, Track};

/// The subsystem of each category, in ovniemu's value order.
const CATEGORIES: [u8; 8] = *b"RUWITCSP";

/// The subsystem values and their names, in ovniemu's order.
const LABELS: [(i64, &str); 8] = [
    (1, "Dependencies: Registering task accesses"),
    (2, "Dependencies: Unregistering task accesses"),
    (3, "If0: Waiting for an If0 task"),
    (4, "If0: Executing an If0 task inline"),
    (5, "Taskwait: Taskwait"),
    (6, "Add Task: Creating a task"),
    (7, "Add Task: Submitting a task"),
    (8, "Spawn Function: Spawning a function"),
];

fn op(c: u8, v: u8) -> Option<StackOp> {
    let s = CATEGORIES.iter().position(|&x| x == c)? as i64 + 1;
    match v {
        b'[' => Some(StackOp::Push(s)),
        b']' => Some(StackOp::Pop(s)),
        _ => None,
    }
}

/// The nodes model.
pub(crate) static NODES: StackModel = StackModel {
    id: b'D',
    name: "nodes",
    chan: "subsystem",
    op,
    event_failed: "error processing NODES event",
    unknown_event: |c| {
        if CATEGORIES.contains(&c) {
            "simple: unknown NODES subsystem event"
        } else {
            "process_ev: unknown NODES event category"
        }
    },
    needs_running: true,
    stacked: Some("stacked nodes subsystems"),
    prv_type: 30,
    pcf_prefix: "NODES subsystem",
    labels: &LABELS,
    thread_track: Track::Active,
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_event_of_the_table_has_an_operation() {
        assert_eq!(super::super::stack::known_ops(b'D', op), 16);
    }
}
