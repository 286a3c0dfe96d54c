//! [`Comm`] over MPI (the `mpi` cargo feature), with the system's MPI library through rsmpi.

use mpi::datatype::PartitionMut;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;

use super::Comm;

/// The rsmpi crate this module is built on, for programs that initialise MPI themselves.
pub use ::mpi as rsmpi;

/// A run's ranks over MPI. It works on its own duplicate of the application's communicator, so
/// its messages never mix with the application's.
pub struct MpiComm {
    comm: SimpleCommunicator,
}

impl MpiComm {
    /// Communicates over a duplicate of `comm` (usually the world communicator).
    pub fn new<C: Communicator>(comm: &C) -> MpiComm {
        MpiComm {
            comm: comm.duplicate(),
        }
    }

    /// The communicator used (for an application that wants to share it).
    pub fn communicator(&self) -> &SimpleCommunicator {
        &self.comm
    }
}

// SAFETY: an MPI communicator handle may be used from any thread once MPI provides
// MPI_THREAD_MULTIPLE; `background` hands a communicator to another thread only then, and the
// runtime never uses one communicator from two threads at the same time.
#[allow(unsafe_code)]
unsafe impl Send for MpiComm {}

impl Comm for MpiComm {
    fn rank(&self) -> u32 {
        self.comm.rank() as u32
    }

    fn size(&self) -> u32 {
        self.comm.size() as u32
    }

    fn barrier(&self) {
        self.comm.barrier();
    }

    fn all_gather(&self, bytes: &[u8]) -> Vec<Vec<u8>> {
        let pad = [0u8; 1];
        let bytes = real_pointer(bytes, &pad);
        let n = self.comm.size() as usize;
        let mut counts = vec![0i32; n];
        self.comm
            .all_gather_into(&(bytes.len() as i32), &mut counts[..]);
        let displs: Vec<i32> = counts
            .iter()
            .scan(0i32, |at, &c| {
                let d = *at;
                *at += c;
                Some(d)
            })
            .collect();
        let total: usize = counts.iter().map(|&c| c as usize).sum();
        // One spare byte: an empty Vec's pointer would read as MPI_IN_PLACE too.
        let mut all = vec![0u8; total + 1];
        {
            let mut parts = PartitionMut::new(&mut all[..total], &counts[..], &displs[..]);
            self.comm.all_gather_varcount_into(bytes, &mut parts);
        }
        counts
            .iter()
            .zip(&displs)
            .map(|(&c, &d)| all[d as usize..(d + c) as usize].to_vec())
            .collect()
    }

    fn has_message(&self, from: u32) -> bool {
        self.comm
            .process_at_rank(from as i32)
            .immediate_probe()
            .is_some()
    }

    fn exchange(&self, to: u32, bytes: &[u8], from: u32) -> Vec<u8> {
        let pad = [0u8; 1];
        let bytes = real_pointer(bytes, &pad);
        // A non-blocking send while this rank receives: no ring of exchanges can deadlock.
        mpi::request::scope(|scope| {
            let sent = self
                .comm
                .process_at_rank(to as i32)
                .immediate_send(scope, bytes);
            let (got, _) = self.comm.process_at_rank(from as i32).receive_vec::<u8>();
            sent.wait();
            got
        })
    }

    fn background(&self) -> Option<Box<dyn Comm + Send>> {
        // Every rank asks: the level MPI provides is the same on all of them.
        (mpi::environment::threading_support() == mpi::Threading::Multiple).then(|| {
            Box::new(MpiComm {
                comm: self.comm.duplicate(),
            }) as Box<dyn Comm + Send>
        })
    }

    fn host_name(&self) -> String {
        mpi::environment::processor_name().unwrap_or_else(|_| "localhost".to_owned())
    }
}

/// `bytes`, or an empty slice of `pad` when it is empty: an empty slice's dangling pointer is
/// 0x1, which OpenMPI reads as `MPI_IN_PLACE`.
fn real_pointer<'a>(bytes: &'a [u8], pad: &'a [u8; 1]) -> &'a [u8] {
    if bytes.is_empty() {
        &pad[..0]
    } else {
        bytes
    }
}
