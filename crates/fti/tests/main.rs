//! The integration tests of the runtime, in one test binary: a module per subject, helpers in
//! [`util`]. The multi-rank tests under `mpirun` (`mpi`) need `--features mpi` and the
//! examples built (`cargo build -p fti --features mpi --examples`).

mod async_ckpt;
mod crash;
mod dcp;
mod fti_configs;
mod heads;
mod heads_posix;
mod inventory;
mod l3_group;
mod levels;
mod memory;
mod mpi;
mod posix;
mod power_cut_ranks;
mod power_loss;
mod regression;
mod repair;
mod runtime;
mod scale;
mod spare;
mod topology;
mod trace;
mod trust;
mod util;
