//! The tampi model (`T` events, version 1.0.0): the TAMPI subsystem each thread is in. Every
//! subsystem has an enter event (`T<category><lower>`) and a leave event
//! (`T<category><upper>`) that push and pop its value on the thread's subsystem stack
//! ([`super::stack`]).

use super::stack::{pair_op, StackModel, StackOp, Track};

/// `(category, enter, leave, subsystem)` of every TAMPI subsystem event pair.
const PAIRS: [(u8, u8, u8, i64); 12] = [
    (b'C', b'i', b'I', 1),
    (b'G', b'c', b'C', 2),
    (b'L', b'i', b'I', 3),
    (b'L', b'p', b'P', 4),
    (b'Q', b'a', b'A', 5),
    (b'Q', b't', b'T', 6),
    (b'R', b'c', b'C', 7),
    (b'R', b't', b'T', 8),
    (b'R', b'a', b'A', 9),
    (b'R', b's', b'S', 10),
    (b'T', b'c', b'C', 11),
    (b'T', b'w', b'W', 12),
];

/// The subsystem values and their names, in ovniemu's order (8 before 7, as it lists them).
const LABELS: [(i64, &str); 12] = [
    (1, "Communication: Issuing a non-blocking operation"),
    (2, "Global array: Checking pending requests"),
    (3, "Library code: Interface function"),
    (4, "Library code: Polling function"),
    (5, "Queue: Adding to a queue"),
    (6, "Queue: Transfering to global array"),
    (8, "Request: Testing a request"),
    (7, "Request: Processing a completed request"),
    (9, "Request: Testing all requests"),
    (10, "Request: Testing some requests"),
    (11, "Ticket: Creating a ticket"),
    (12, "Ticket: Waiting a ticket"),
];

fn op(c: u8, v: u8) -> Option<StackOp> {
    pair_op(&PAIRS, c, v)
}

/// The tampi model.
pub(crate) static TAMPI: StackModel = StackModel {
    id: b'T',
    name: "tampi",
    chan: "subsystem",
    op,
    event_failed: "error processing TAMPI event",
    unknown_event: |_| "process_ev: unknown TAMPI subsystem event",
    needs_running: true,
    stacked: Some("stacked tampi subsystems"),
    prv_type: 20,
    pcf_prefix: "TAMPI subsystem",
    labels: &LABELS,
    thread_track: Track::Active,
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_event_of_the_table_has_an_operation() {
        assert_eq!(super::super::stack::known_ops(b'T', op), 24);
    }
}
