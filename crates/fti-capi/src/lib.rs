//! FTI 1.1's C API — `libfti.so` and `libfti.a` with the header `include/fti.h` — on top of
//! the `fti` runtime, so that programs written for FTI recompile against our header, link with
//! `-lfti` and run unchanged, writing FTI-FF files.
//!
//! Every function of FTI 1.1's `fti.h` has its signature, return codes and semantics, as an
//! FTI 1.1 build without HDF5 and SIONlib behaves, plus the later incremental checkpoint
//! (`FTI_InitICP`, `FTI_AddVarICP`, `FTI_FinalizeICP`) and variable recovery
//! (`FTI_RecoverVarInit`, `FTI_RecoverVarFinalize`) functions. One session per process runs
//! from `FTI_Init` to `FTI_Finalize`: the runtime, the protected datasets (id → pointer, element
//! count, type) in protect order, FTI_Snapshot's clock and the restart flag. Each call builds the
//! runtime's `Var`s from the registered pointers for its duration. Where FTI would crash or
//! corrupt memory (NULL arguments, more than 256 of something), the call is refused with a
//! warning. `docs/c-api.md` lists the semantics and the few differences.
#![deny(missing_docs)]
// A C API takes raw pointers from C and exports mutable globals (FTI_COMM_WORLD, the predefined
// types): that needs `unsafe`. It is confined to this crate; every block says why it is sound.
#![allow(unsafe_code)]
#![deny(unsafe_op_in_unsafe_fn)]
// The exported names are FTI's.
#![allow(non_snake_case)]

mod api;
mod app_ovni;
mod comm;
mod data;
mod fortran;
mod injection;
mod message;
mod snapshot;
mod types;

use std::ffi::c_int;

pub use api::*;
pub use comm::FTI_COMM_WORLD;
pub use fortran::*;
pub use types::*;

/// `FTI_SCES`: success.
pub const FTI_SCES: c_int = 0;
/// `FTI_NSCS`: failure.
pub const FTI_NSCS: c_int = -1;
/// `FTI_NREC`: recovery failed.
pub const FTI_NREC: c_int = -2;
/// `FTI_DONE`: a checkpoint was taken (FTI_Checkpoint, FTI_Snapshot).
pub const FTI_DONE: c_int = 1;

/// Why a call did not succeed; printed as FTI prints it, then turned into the call's code.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Failure {
    /// FTI_Init has not succeeded.
    #[error("FTI is not initialized.")]
    NotInitialized,
    /// The call's arguments, or the session's state, do not allow it.
    #[error("{0}")]
    Refused(String),
    /// A protected dataset cannot be used.
    #[error("dataset {id}: {what}")]
    Dataset {
        /// The dataset's id.
        id: c_int,
        /// What is wrong with it.
        what: String,
    },
    /// The runtime failed.
    #[error("{doing}: {err}")]
    Runtime {
        /// What the call was doing.
        doing: &'static str,
        /// The runtime's error, with its own context (file, line, rank, variable).
        err: Box<fti::Error>,
    },
    /// MPI is not usable.
    #[error("{0}")]
    Mpi(&'static str),
}

impl Failure {
    /// FTI prints misuse as a warning and failures as errors.
    fn print(&self) {
        match self {
            Failure::NotInitialized | Failure::Refused(_) | Failure::Dataset { .. } => {
                message::warn(&self.to_string())
            }
            // A size mismatch is FTI's warning: the application resizes and recovers again.
            Failure::Runtime { err, .. } if matches!(**err, fti::Error::SizeMismatch { .. }) => {
                message::warn(&err.to_string())
            }
            Failure::Runtime { .. } | Failure::Mpi(_) => message::error(&self.to_string()),
        }
    }
}
