//! How the ranks of a run talk to each other: the few collective and point-to-point operations
//! multi-level checkpointing needs, behind one trait.
//!
//! [`SelfComm`] is a run of one rank. [`Threads`] runs several ranks as threads of one process
//! (tests, and programs that want L2/L3 semantics without MPI). With the `mpi` cargo feature,
//! `MpiComm` (in `fti::comm::mpi`) wraps an MPI communicator.
//!
//! Every rank must make the same sequence of collective calls ([`Comm::barrier`],
//! [`Comm::all_gather`]), as with MPI. [`Comm::exchange`] pairs a send to one rank with a receive
//! from another, so rings of exchanges never deadlock.

use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Barrier};

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

/// Collective helpers built on [`Comm::all_gather`].
pub(crate) trait CommExt: Comm {
    /// Rank 0's `bytes`, on every rank.
    fn broadcast(&self, bytes: &[u8]) -> Vec<u8> {
        self.all_gather(bytes).swap_remove(0)
    }
}

impl<C: Comm + ?Sized> CommExt for C {}

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
}

impl Threads {
    /// The `n` ranks of a new run, all on one host named `host`.
    pub fn new(n: u32, host: &str) -> Vec<Threads> {
        let siblings = Threads::channels(n, host);
        Threads::channels(n, host)
            .into_iter()
            .zip(siblings)
            .map(|(t, sibling)| Threads {
                sibling: std::sync::Mutex::new(Some(Box::new(sibling))),
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
            })
            .collect()
    }

    fn send(&self, to: u32, bytes: &[u8]) {
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
}
