//! The communicators of a session: `FTI_COMM_WORLD` for the application, a private one for the
//! C API's own collectives (FTI_Snapshot's allreduce, FTI_Finalize's barrier), and the runtime's
//! (`MpiComm` duplicates what it is given), so no message of FTI mixes with the application's.

use std::mem::ManuallyDrop;

use mpi::collective::SystemOperation;
use mpi::ffi::{self, MPI_Comm};
use mpi::raw::FromRaw;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;

use fti::comm::mpi::MpiComm;

use crate::Failure;

/// The handle of no communicator: all bits zero, as a C global is before it is set. Open MPI's
/// handles are pointers (this one is NULL), MPICH's are integers (0 is none of its handles:
/// they carry a kind in their high bits, and its MPI_COMM_NULL is 0x04000000).
// SAFETY: MPI_Comm wraps a raw pointer or a C int, for which all-zero bits are a valid value.
pub(crate) const NO_COMM: MPI_Comm = unsafe { std::mem::zeroed() };

/// `MPI_Comm FTI_COMM_WORLD`: the communicator of the application's ranks, which applications
/// use instead of `MPI_COMM_WORLD`. Zero (NULL with Open MPI) until `FTI_Init`, then a
/// duplicate of the communicator passed to it. As in FTI it is never freed by the library
/// (MPI_Finalize releases it), so an application may still use it after FTI_Finalize.
// SAFETY (of every access): written only by FTI_Init under the session lock; C reads it after
// FTI_Init returns.
#[no_mangle]
pub static mut FTI_COMM_WORLD: MPI_Comm = NO_COMM;

/// The C API's side of a session.
pub(crate) struct Comms {
    /// For the C API's own collectives; freed with the session.
    private: SimpleCommunicator,
    /// This rank in FTI_COMM_WORLD, and the number of ranks.
    pub rank: i32,
    pub size: i32,
}

/// Whether MPI can still be used (initialised and not finalised).
pub(crate) fn mpi_usable() -> bool {
    let (mut initialized, mut finalized) = (0, 0);
    // SAFETY: both may be called at any time, before MPI_Init and after MPI_Finalize.
    unsafe {
        ffi::MPI_Initialized(&mut initialized);
        ffi::MPI_Finalized(&mut finalized);
    }
    initialized != 0 && finalized == 0
}

/// Duplicates `global` into `FTI_COMM_WORLD` and makes the library's communicators: the C
/// API's and the runtime's.
pub(crate) fn setup(global: MPI_Comm) -> Result<(Comms, MpiComm), Failure> {
    let (mut initialized, mut finalized) = (0, 0);
    // SAFETY: both may be called at any time, before MPI_Init and after MPI_Finalize.
    unsafe {
        ffi::MPI_Initialized(&mut initialized);
        ffi::MPI_Finalized(&mut finalized);
    }
    if initialized == 0 || finalized != 0 {
        return Err(Failure::Mpi(
            "MPI is not initialized: call MPI_Init before FTI_Init",
        ));
    }
    // SAFETY: reading a handle constant of the MPI library.
    if global == NO_COMM || global == unsafe { ffi::RSMPI_COMM_NULL } {
        return Err(Failure::Mpi(
            "the communicator passed to FTI_Init is MPI_COMM_NULL",
        ));
    }
    let mut world = NO_COMM;
    // SAFETY: `global` is a live communicator (the caller's contract, as with FTI); an invalid
    // one makes MPI's error handler abort, as it would in FTI.
    let rc = unsafe { ffi::MPI_Comm_dup(global, &mut world) };
    if rc != ffi::MPI_SUCCESS as i32 {
        return Err(Failure::Mpi(
            "MPI_Comm_dup of the application's communicator failed",
        ));
    }
    // SAFETY: a live user intra-communicator we just created. ManuallyDrop: it becomes
    // FTI_COMM_WORLD, which the library never frees.
    let app = ManuallyDrop::new(unsafe { SimpleCommunicator::from_raw(world) });
    let comms = Comms {
        private: app.duplicate(),
        rank: app.rank(),
        size: app.size(),
    };
    let runtime = MpiComm::new(&*app);
    // SAFETY: see FTI_COMM_WORLD.
    unsafe { std::ptr::addr_of_mut!(FTI_COMM_WORLD).write(world) };
    Ok((comms, runtime))
}

impl Comms {
    /// With heads (collective over all processes): `FTI_COMM_WORLD` becomes the application's
    /// ranks (in the order of their ranks), and so do the C API's own collectives. Returns
    /// `false` on a head, which gets no communicator.
    pub(crate) fn keep_application_ranks(&mut self, application: bool) -> Result<bool, Failure> {
        // SAFETY: see FTI_COMM_WORLD; FTI_Init set it and holds the session lock.
        let world = unsafe { std::ptr::addr_of!(FTI_COMM_WORLD).read() };
        // SAFETY: reading a constant of the MPI library.
        let undefined = unsafe { ffi::RSMPI_UNDEFINED };
        let color = if application { 0 } else { undefined };
        let mut app = NO_COMM;
        // SAFETY: `world` is the live communicator FTI_Init duplicated; every process calls
        // this (heads included), as MPI_Comm_split requires.
        let rc = unsafe { ffi::MPI_Comm_split(world, color, self.rank, &mut app) };
        if rc != ffi::MPI_SUCCESS as i32 {
            return Err(Failure::Mpi(
                "MPI_Comm_split of the application's ranks failed",
            ));
        }
        if !application {
            return Ok(false);
        }
        // SAFETY: a live communicator we just created; never freed, as FTI_COMM_WORLD.
        let comm = ManuallyDrop::new(unsafe { SimpleCommunicator::from_raw(app) });
        *self = Comms {
            private: comm.duplicate(),
            rank: comm.rank(),
            size: comm.size(),
        };
        // SAFETY: see FTI_COMM_WORLD.
        unsafe { std::ptr::addr_of_mut!(FTI_COMM_WORLD).write(app) };
        Ok(true)
    }

    /// The mean of `x` over all ranks (collective).
    pub(crate) fn mean(&self, x: f64) -> f64 {
        let mut sum = 0.0f64;
        self.private
            .all_reduce_into(&x, &mut sum, SystemOperation::sum());
        sum / f64::from(self.size.max(1))
    }

    /// Waits for every rank (collective).
    pub(crate) fn barrier(&self) {
        self.private.barrier();
    }

    /// Whether `ok` holds on every rank (collective).
    pub(crate) fn all(&self, ok: bool) -> bool {
        let mut min = 0i32;
        self.private
            .all_reduce_into(&i32::from(ok), &mut min, SystemOperation::min());
        min == 1
    }
}

/// MPI_Wtime.
pub(crate) fn now() -> f64 {
    mpi::time()
}

/// `FTI_ENDW` of fti.h.
const FTI_ENDW: i32 = 995;

/// FTI 1.1's own messages between application ranks and their head (one int each, with the
/// config's `mpi_tag`, on the communicator given to `FTI_Init`): FTI's test programs send
/// `FTI_ENDW` to their head to end a run without `FTI_Finalize` and take the outcome of the
/// head's last post-processing themselves. Ints are sent eagerly by every MPI, so a send never
/// waits for its receive.
pub(crate) struct FtiWire {
    global: MPI_Comm,
    tag: i32,
}

impl FtiWire {
    pub(crate) fn new(global: MPI_Comm, tag: i64) -> FtiWire {
        FtiWire {
            global,
            tag: i32::try_from(tag).unwrap_or(2612),
        }
    }

    fn send(&self, to: u32, value: i32) {
        let Ok(dest) = i32::try_from(to) else {
            return;
        };
        // SAFETY: one int from `value` on the live communicator FTI_Init was given.
        unsafe {
            ffi::MPI_Send(
                (&value as *const i32).cast(),
                1,
                ffi::RSMPI_INT32_T,
                dest,
                self.tag,
                self.global,
            );
        }
    }

    fn receive(&self, from: i32) -> i32 {
        let mut value: i32 = 0;
        // SAFETY: one int into `value` on the live communicator FTI_Init was given.
        unsafe {
            ffi::MPI_Recv(
                (&mut value as *mut i32).cast(),
                1,
                ffi::RSMPI_INT32_T,
                from,
                self.tag,
                self.global,
                ffi::RSMPI_STATUS_IGNORE,
            );
        }
        value
    }
}

impl fti::FtiMessages for FtiWire {
    fn ended(&self, app: u32) -> bool {
        let Ok(source) = i32::try_from(app) else {
            return false;
        };
        let mut flag = 0;
        // SAFETY: `global` is the live communicator FTI_Init was given; the status is ignored.
        unsafe {
            ffi::MPI_Iprobe(
                source,
                self.tag,
                self.global,
                &mut flag,
                ffi::RSMPI_STATUS_IGNORE,
            );
        }
        flag != 0 && self.receive(source) == FTI_ENDW
    }

    fn close(&self) {
        // SAFETY: a barrier on the live communicator FTI_Init was given.
        unsafe {
            ffi::MPI_Barrier(self.global);
        }
    }

    fn post_processed(&self, app: u32, ok: bool) {
        self.send(app, if ok { crate::FTI_SCES } else { crate::FTI_NSCS });
    }

    fn take_post_processed(&self, head: u32) {
        if let Ok(source) = i32::try_from(head) {
            self.receive(source);
        }
    }
}
