//! fti-rs: checkpoint/restart for HPC applications, with FTI's model and FTI-FF files.
//!
//! A run protects its variables by id, checkpoints them at a level (L1 local, L2 partner copy,
//! L4 global), and after a crash restarts from the newest checkpoint that verifies: files are published
//! atomically, so a crash at any instant leaves the previous checkpoint recoverable
//! (`docs/crash-safety.md`). Files are FTI 1.1's: same format, names and directories, so FTI
//! 1.1 can restart from ours and we from FTI's.
//!
//! ```no_run
//! use fti::{Config, Fti, Level, Status, Var};
//!
//! # fn main() -> fti::Result<()> {
//! let mut fti = Fti::init(Config::from_file("config.fti".as_ref())?)?;
//! let (mut step, mut grid) = (0u64, vec![0.0f64; 1 << 20]);
//! if let Status::Restart(_) = fti.status() {
//!     fti.recover(&mut [Var::new(0, &mut step), Var::slice(1, &mut grid)])?;
//! }
//! while step < 1000 {
//!     // ... compute ...
//!     step += 1;
//!     if step % 100 == 0 {
//!         fti.checkpoint(step as i32 / 100, Level::L1, &[Var::new(0, &mut step), Var::slice(1, &mut grid)])?;
//!     }
//! }
//! fti.finalize()
//! # }
//! ```
//!
//! A run of several ranks ([`Fti::init_with`] with a [`Comm`]: MPI with the `mpi` feature, or
//! [`Threads`]) also checkpoints at L2 (partner copies) and agrees on the checkpoint to restart
//! from, rebuilding a lost node's files from its partners (`docs/runtime.md`).
#![deny(missing_docs)]

mod collective;
pub mod comm;
mod config;
mod error;
pub mod files;
pub mod inventory;
pub mod io;
mod level;
pub mod report;
mod restart_plan;
mod runtime;
mod schedule;
pub mod storage;
pub mod topology;
mod trace;
mod var;

pub use comm::{Comm, SelfComm, Threads, Traffic};
pub use config::{check_exec_id, record_restart, restart_text, Config, IniFile, IoMode, Level};
pub use error::{Candidate, Error, Misuse, Result, Skipped, Step};
pub use level::l3;
pub use runtime::{
    format_utc, new_exec_id, CheckpointInfo, Fti, FtiMessages, Options, Role, Snapshot, Status,
};
pub use trace::AppOvni;
pub use var::Var;
