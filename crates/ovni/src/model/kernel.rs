//! The kernel model (`K` events, version 1.0.0): context switches. `KCO` (out of the CPU)
//! pushes a value on the thread's context switch stack and `KCI` (back) pops it; while it is
//! pushed the thread is out of its CPU, and the ovni and nOS-V models reject its events.
//! Kernel events are accepted in any thread state.

use super::stack::{StackModel, StackOp, Track};

/// The value of "out of the CPU".
const OUT_OF_CPU: i64 = 3;

fn op(c: u8, v: u8) -> Option<StackOp> {
    match (c, v) {
        (b'C', b'O') => Some(StackOp::Push(OUT_OF_CPU)),
        (b'C', b'I') => Some(StackOp::Pop(OUT_OF_CPU)),
        _ => None,
    }
}

fn unknown_event(c: u8) -> &'static str {
    if c == b'C' {
        "context_switch: unknown context switch event"
    } else {
        "process_ev: unknown Kernel event category"
    }
}

/// The kernel model.
pub(crate) static KERNEL: StackModel = StackModel {
    id: b'K',
    name: "kernel",
    chan: "context_switch",
    op,
    event_failed: "error processing Kernel event",
    unknown_event,
    needs_running: false,
    stacked: None,
    prv_type: 45,
    pcf_prefix: "Kernel context switch",
    labels: &[(OUT_OF_CPU, "Context switch: Out of the CPU")],
    thread_track: Track::Any,
};
