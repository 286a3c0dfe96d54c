//! The mpi model (`M` events, version 1.0.0): the MPI function each thread is in. Every
//! function has an enter event (`M<category><lower>`) and a leave event (`M<category><upper>`)
//! that push and pop its value on the thread's function stack ([`super::stack`]).

use super::stack::{pair_op, StackModel, StackOp, Track};

/// `(category, enter, leave, function)` of every MPI function event pair.
const PAIRS: [(u8, u8, u8, i64); 49] = [
    (b'U', b'i', b'I', 1),
    (b'U', b't', b'T', 2),
    (b'U', b'f', b'F', 3),
    (b'W', b'[', b']', 4),
    (b'W', b'a', b'A', 5),
    (b'W', b'y', b'Y', 6),
    (b'W', b's', b'S', 7),
    (b'T', b'[', b']', 8),
    (b'T', b'a', b'A', 9),
    (b'T', b'y', b'Y', 10),
    (b'T', b's', b'S', 11),
    (b'R', b'[', b']', 12),
    (b'S', b'[', b']', 13),
    (b'S', b'b', b'B', 14),
    (b'S', b'r', b'R', 15),
    (b'S', b's', b'S', 16),
    (b'R', b's', b'S', 17),
    (b'R', b'o', b'O', 18),
    (b'r', b'[', b']', 19),
    (b's', b'[', b']', 20),
    (b's', b'b', b'B', 21),
    (b's', b'r', b'R', 22),
    (b's', b's', b'S', 23),
    (b'r', b's', b'S', 24),
    (b'r', b'o', b'O', 25),
    (b'A', b'g', b'G', 26),
    (b'A', b'r', b'R', 27),
    (b'A', b'a', b'A', 28),
    (b'C', b'b', b'B', 29),
    (b'D', b'b', b'B', 30),
    (b'D', b'g', b'G', 31),
    (b'E', b'[', b']', 32),
    (b'E', b's', b'S', 33),
    (b'E', b'b', b'B', 34),
    (b'D', b's', b'S', 35),
    (b'C', b's', b'S', 36),
    (b'C', b'e', b'E', 37),
    (b'a', b'g', b'G', 38),
    (b'a', b'r', b'R', 39),
    (b'a', b'a', b'A', 40),
    (b'c', b'b', b'B', 41),
    (b'd', b'b', b'B', 42),
    (b'd', b'g', b'G', 43),
    (b'e', b'[', b']', 44),
    (b'e', b's', b'S', 45),
    (b'e', b'b', b'B', 46),
    (b'd', b's', b'S', 47),
    (b'c', b's', b'S', 48),
    (b'c', b'e', b'E', 49),
];

/// The function values and their names, in ovniemu's order.
const LABELS: [(i64, &str); 49] = [
    (1, "MPI_Init"),
    (2, "MPI_Init_thread"),
    (3, "MPI_Finalize"),
    (4, "MPI_Wait"),
    (5, "MPI_Waitall"),
    (6, "MPI_Waitany"),
    (7, "MPI_Waitsome"),
    (8, "MPI_Test"),
    (9, "MPI_Testall"),
    (10, "MPI_Testany"),
    (11, "MPI_Testsome"),
    (12, "MPI_Recv"),
    (13, "MPI_Send"),
    (14, "MPI_Bsend"),
    (15, "MPI_Rsend"),
    (16, "MPI_Ssend"),
    (17, "MPI_Sendrecv"),
    (18, "MPI_Sendrecv_replace"),
    (19, "MPI_Irecv"),
    (20, "MPI_Isend"),
    (21, "MPI_Ibsend"),
    (22, "MPI_Irsend"),
    (23, "MPI_Issend"),
    (24, "MPI_Isendrecv"),
    (25, "MPI_Isendrecv_replace"),
    (26, "MPI_Allgather"),
    (27, "MPI_Allreduce"),
    (28, "MPI_Alltoall"),
    (29, "MPI_Barrier"),
    (30, "MPI_Bcast"),
    (31, "MPI_Gather"),
    (32, "MPI_Reduce"),
    (33, "MPI_Reduce_scatter"),
    (34, "MPI_Reduce_scatter_block"),
    (35, "MPI_Scatter"),
    (36, "MPI_Scan"),
    (37, "MPI_Exscan"),
    (38, "MPI_Iallgather"),
    (39, "MPI_Iallreduce"),
    (40, "MPI_Ialltoall"),
    (41, "MPI_Ibarrier"),
    (42, "MPI_Ibcast"),
    (43, "MPI_Igather"),
    (44, "MPI_Ireduce"),
    (45, "MPI_Ireduce_scatter"),
    (46, "MPI_Ireduce_scatter_block"),
    (47, "MPI_Iscatter"),
    (48, "MPI_Iscan"),
    (49, "MPI_Iexscan"),
];

fn op(c: u8, v: u8) -> Option<StackOp> {
    pair_op(&PAIRS, c, v)
}

/// The mpi model.
pub(crate) static MPI: StackModel = StackModel {
    id: b'M',
    name: "mpi",
    chan: "function",
    op,
    event_failed: "error processing mpi event",
    unknown_event: |_| "process_ev: unknown mpi function event",
    needs_running: true,
    stacked: Some("stacked mpi functions"),
    prv_type: 25,
    pcf_prefix: "MPI function",
    labels: &LABELS,
    thread_track: Track::Running,
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_event_of_the_table_has_an_operation() {
        assert_eq!(super::super::stack::known_ops(b'M', op), 98);
    }
}
