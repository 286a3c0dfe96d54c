//! How the ranks of a run talk to each other: the few collective and point-to-point operations
//! multi-level checkpointing needs, behind one trait.
//!
//! [`SelfComm`] is a run of one rank. [`Threads`] runs several ranks as threads of one process
//! (tests, and programs that want L2/L3 semantics without MPI). With the `mpi` cargo feature,
//! `MpiComm` (in `fti::comm::mpi`) wraps an MPI communicator.
//!
//! Every rank must make the same sequence of collective calls ([`Comm::barrier`],
//! [`Comm::all_gather`], [`Comm::broadcast`], [`Comm::all_reduce`]), as with MPI.
//! [`Comm::exchange`] pairs a send to one rank with a receive from another, so rings of
//! exchanges never deadlock. A broadcast and a reduction take `log2(size)` steps of exchanges,
//! each rank sending one message per step: what a rank sends does not grow with the run as an
//! all-gather's does (`docs/scale.md`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Barrier};

/// How [`Comm::all_reduce`] folds two ranks' bytes into one.
pub type Fold = dyn Fn(&[u8], &[u8]) -> Vec<u8>;

/// The communication a multi-rank run needs.
pub trait Comm {
    /// This rank, `0..size`.
    fn rank(&self) -> u32;
    /// Number of ranks.
    fn size(&self) -> u32;
    /// Waits until every rank has called it.
    fn barrier(&self);
    /// Every rank's `bytes`, indexed by rank.
    fn all_gather(&self, bytes: &[u8]) -> Vec<Vec<u8>>;
    /// Sends `bytes` to rank `to` while receiving the message rank `from` sends to this rank
    /// (MPI_Sendrecv). `to` or `from` may be this rank.
    fn exchange(&self, to: u32, bytes: &[u8], from: u32) -> Vec<u8>;
    /// Whether a message from rank `from` is waiting to be received (so that an
    /// [`Comm::exchange`] with it would not wait for its send). The default says yes: the
    /// caller then waits in the exchange.
    fn has_message(&self, from: u32) -> bool {
        let _ = from;
        true
    }
    /// Rank 0's `bytes`, on every rank (a binomial tree of exchanges).
    fn broadcast(&self, bytes: &[u8]) -> Vec<u8> {
        tree_broadcast(self, bytes)
    }
    /// `op` folded over every rank's `bytes`, on every rank (recursive doubling). `op` must be
    /// associative and commutative (a maximum, a union); every rank gets the same bytes.
    fn all_reduce(&self, bytes: &[u8], op: &Fold) -> Vec<u8> {
        recursive_doubling(self, bytes, op)
    }
    /// A second communicator over the same ranks for work in a background thread, used while
    /// this one goes on being used by the application's thread (collective; `None` when the
    /// run cannot do that, e.g. MPI without `MPI_THREAD_MULTIPLE`).
    fn background(&self) -> Option<Box<dyn Comm + Send>> {
        None
    }
    /// The host this rank runs on (groups ranks into nodes when `local_test = 0`).
    fn host_name(&self) -> String {
        std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|h| h.trim().to_owned())
            .unwrap_or_else(|_| "localhost".to_owned())
    }
}

/// [`Comm::broadcast`] over exchanges: at step `k` the ranks below `2^k` that have the bytes
/// send them to the rank `2^k` above; the others send nothing.
fn tree_broadcast<C: Comm + ?Sized>(comm: &C, bytes: &[u8]) -> Vec<u8> {
    let (n, rank) = (comm.size(), comm.rank());
    let mut data = if rank == 0 {
        bytes.to_vec()
    } else {
        Vec::new()
    };
    let mut mask = 1u32;
    while mask < n {
        if rank < mask && rank + mask < n {
            comm.exchange(rank + mask, &data, rank + mask);
        } else if rank >= mask && rank < 2 * mask {
            data = comm.exchange(rank - mask, &[], rank - mask);
        }
        mask = mask.saturating_mul(2);
    }
    data
}

/// [`Comm::all_reduce`] over exchanges. The ranks beyond the largest power of two `p` first
/// hand their bytes to the rank `p` below; the first `p` ranks then exchange partial results
/// with the rank `2^k` apart at step `k`, each folding the lower ranks' part first; the result
/// goes back to the ranks beyond `p`.
fn recursive_doubling<C: Comm + ?Sized>(comm: &C, bytes: &[u8], op: &Fold) -> Vec<u8> {
    let (n, rank) = (comm.size(), comm.rank());
    let p = if n == 0 { 1 } else { 1u32 << n.ilog2() };
    let mut acc = bytes.to_vec();
    if rank >= p {
        comm.exchange(rank - p, &acc, rank - p);
        return comm.exchange(rank - p, &[], rank - p);
    }
    if rank + p < n {
        let extra = comm.exchange(rank + p, &[], rank + p);
        acc = op(&acc, &extra);
    }
    let mut mask = 1u32;
    while mask < p {
        let partner = rank ^ mask;
        let got = comm.exchange(partner, &acc, partner);
        acc = if partner < rank {
            op(&got, &acc)
        } else {
            op(&acc, &got)
        };
        mask *= 2;
    }
    if rank + p < n {
        comm.exchange(rank + p, &acc, rank + p);
    }
    acc
}

/// A run of one rank.
#[derive(Debug, Default, Clone, Copy)]
pub struct SelfComm;

impl Comm for SelfComm {
    fn rank(&self) -> u32 {
        0
    }
    fn size(&self) -> u32 {
        1
    }
    fn barrier(&self) {}
    fn all_gather(&self, bytes: &[u8]) -> Vec<Vec<u8>> {
        vec![bytes.to_vec()]
    }
    fn exchange(&self, _to: u32, bytes: &[u8], _from: u32) -> Vec<u8> {
        bytes.to_vec()
    }
    fn background(&self) -> Option<Box<dyn Comm + Send>> {
        Some(Box::new(SelfComm))
    }
}

/// One rank of a run whose ranks are threads of this process. Messages between a pair of ranks
/// arrive in the order they were sent, as with MPI.
pub struct Threads {
    rank: u32,
    /// `to[r]` sends to rank `r`.
    to: Vec<Sender<Vec<u8>>>,
    /// `from[r]` receives what rank `r` sent to this rank.
    from: Vec<Receiver<Vec<u8>>>,
    barrier: Arc<Barrier>,
    host: String,
    /// The same rank on a second set of channels, for [`Comm::background`].
    sibling: std::sync::Mutex<Option<Box<Threads>>>,
    /// What this rank sent (on both sets of channels).
    traffic: Arc<Traffic>,
}

/// What one rank of [`Threads`] sent: messages (a barrier counts as none) and their bytes.
#[derive(Debug, Default)]
pub struct Traffic {
    messages: AtomicU64,
    bytes: AtomicU64,
}

impl Traffic {
    /// Messages sent so far.
    pub fn messages(&self) -> u64 {
        self.messages.load(Ordering::Relaxed)
    }

    /// Bytes sent so far.
    pub fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }

    /// Starts counting again from zero.
    pub fn reset(&self) {
        self.messages.store(0, Ordering::Relaxed);
        self.bytes.store(0, Ordering::Relaxed);
    }
}

impl Threads {
    /// The `n` ranks of a new run, all on one host named `host`.
    pub fn new(n: u32, host: &str) -> Vec<Threads> {
        let siblings = Threads::channels(n, host);
        Threads::channels(n, host)
            .into_iter()
            .zip(siblings)
            .map(|(t, sibling)| Threads {
                sibling: std::sync::Mutex::new(Some(Box::new(Threads {
                    traffic: Arc::clone(&t.traffic),
                    ..sibling
                }))),
                ..t
            })
            .collect()
    }

    /// As [`Threads::new`], for a run that cannot communicate from a second thread (as MPI
    /// initialised without `MPI_THREAD_MULTIPLE`): [`Comm::background`] gives `None`.
    pub fn without_background(n: u32, host: &str) -> Vec<Threads> {
        Threads::channels(n, host)
    }

    fn channels(n: u32, host: &str) -> Vec<Threads> {
        let n = n.max(1) as usize;
        // channels[from][to]
        let mut senders: Vec<Vec<Option<Sender<Vec<u8>>>>> = (0..n).map(|_| Vec::new()).collect();
        let mut receivers: Vec<Vec<Option<Receiver<Vec<u8>>>>> =
            (0..n).map(|_| (0..n).map(|_| None).collect()).collect();
        for (from, row) in senders.iter_mut().enumerate() {
            for inbox in receivers.iter_mut() {
                let (tx, rx) = channel();
                row.push(Some(tx));
                inbox[from] = Some(rx);
            }
        }
        let barrier = Arc::new(Barrier::new(n));
        senders
            .into_iter()
            .zip(receivers)
            .enumerate()
            .map(|(rank, (to, from))| Threads {
                rank: rank as u32,
                to: to.into_iter().flatten().collect(),
                from: from.into_iter().flatten().collect(),
                barrier: Arc::clone(&barrier),
                host: host.to_owned(),
                sibling: std::sync::Mutex::new(None),
                traffic: Arc::default(),
            })
            .collect()
    }

    /// What this rank sends, counted as it goes.
    pub fn traffic(&self) -> Arc<Traffic> {
        Arc::clone(&self.traffic)
    }

    fn send(&self, to: u32, bytes: &[u8]) {
        if to != self.rank {
            self.traffic.messages.fetch_add(1, Ordering::Relaxed);
            self.traffic
                .bytes
                .fetch_add(bytes.len() as u64, Ordering::Relaxed);
        }
        // A peer that is gone (its thread ended or panicked) fails the run at its next receive.
        let _ = self.to[to as usize].send(bytes.to_vec());
    }

    fn recv(&self, from: u32) -> Vec<u8> {
        self.from[from as usize]
            .recv()
            .unwrap_or_else(|_| panic!("rank {from} ended while rank {} waited for it", self.rank))
    }
}

impl Comm for Threads {
    fn rank(&self) -> u32 {
        self.rank
    }
    fn size(&self) -> u32 {
        self.to.len() as u32
    }
    fn barrier(&self) {
        self.barrier.wait();
    }
    fn all_gather(&self, bytes: &[u8]) -> Vec<Vec<u8>> {
        for r in 0..self.size() {
            self.send(r, bytes);
        }
        (0..self.size()).map(|r| self.recv(r)).collect()
    }
    fn exchange(&self, to: u32, bytes: &[u8], from: u32) -> Vec<u8> {
        self.send(to, bytes);
        self.recv(from)
    }
    fn host_name(&self) -> String {
        self.host.clone()
    }
    fn background(&self) -> Option<Box<dyn Comm + Send>> {
        let sibling = self.sibling.lock().ok()?.take()?;
        Some(sibling)
    }
}

mod members;
pub use members::Members;

#[cfg(feature = "mpi")]
pub mod mpi;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_gather_and_exchange_among_themselves() {
        // Ranks 1, 3, 4 of 5 form a communicator; 0 and 2 stay out.
        let ranks = Threads::new(5, "h");
        type Seen = Option<(u32, Vec<Vec<u8>>, Vec<u8>)>;
        let got: Vec<Seen> = std::thread::scope(|s| {
            let handles: Vec<_> = ranks
                .into_iter()
                .map(|c| {
                    s.spawn(move || {
                        let parent: std::rc::Rc<dyn Comm> = std::rc::Rc::new(c);
                        let m = Members::new(parent, vec![1, 3, 4])?;
                        let r = m.rank();
                        let all = m.all_gather(&[r as u8 + 10]);
                        m.barrier();
                        Some((r, all, m.exchange((r + 1) % 3, &[r as u8], (r + 2) % 3)))
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(got[0].is_none() && got[2].is_none());
        for (world, r) in [(1, 0u32), (3, 1), (4, 2)] {
            let (rank, all, from_left) = got[world].clone().unwrap();
            assert_eq!(rank, r);
            assert_eq!(all, vec![vec![10], vec![11], vec![12]]);
            assert_eq!(from_left, vec![((r + 2) % 3) as u8]);
        }
    }

    #[test]
    fn threads_gather_and_ring_exchange() {
        let ranks = Threads::new(4, "h");
        type Seen = (Vec<Vec<u8>>, Vec<u8>, Vec<u8>);
        let results: Vec<Seen> = std::thread::scope(|s| {
            let handles: Vec<_> = ranks
                .into_iter()
                .map(|c| {
                    s.spawn(move || {
                        let r = c.rank();
                        let all = c.all_gather(&[r as u8; 3]);
                        let got = c.exchange((r + 1) % 4, &[r as u8], (r + 3) % 4);
                        c.barrier();
                        (all, got, c.broadcast(&[r as u8 + 7]))
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for (r, (all, got, min)) in results.into_iter().enumerate() {
            assert_eq!(all, (0..4u8).map(|i| vec![i; 3]).collect::<Vec<_>>());
            assert_eq!(got, vec![((r + 3) % 4) as u8]);
            assert_eq!(min, [7]);
        }
    }

    /// A broadcast and a sum on every run size up to 9 (powers of two and the ranks beyond
    /// one), each rank sending one message per step of the tree.
    #[test]
    fn threads_broadcast_and_reduce() {
        for n in 1..=9u32 {
            let got: Vec<(Vec<u8>, Vec<u8>, u64)> = std::thread::scope(|s| {
                let handles: Vec<_> = Threads::new(n, "h")
                    .into_iter()
                    .map(|c| {
                        s.spawn(move || {
                            let r = c.rank() as u8;
                            let b = c.broadcast(&[r + 10, 1]);
                            let sum = c.all_reduce(&[r], &|a, b| vec![a[0] + b[0]]);
                            (b, sum, c.traffic().messages())
                        })
                    })
                    .collect();
                handles.into_iter().map(|h| h.join().unwrap()).collect()
            });
            let steps = u64::from(n.next_power_of_two().ilog2());
            for (b, sum, messages) in got {
                assert_eq!(b, [10, 1], "{n} ranks");
                assert_eq!(sum, [(0..n as u8).sum::<u8>()], "{n} ranks");
                assert!(messages <= 2 * steps + 2, "{n} ranks: {messages} messages");
            }
        }
    }
}
