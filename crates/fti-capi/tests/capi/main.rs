//! FTI's C API seen from C: programs in `tests/c/` (and `examples/c/heatdis.c`) are compiled
//! with `mpicc` against `include/fti.h` only and linked with the libfti built for this run,
//! then run alone or under `mpirun`: the ABI, the seed example's seven checkpoints against the
//! FTI 1.1 vectors, every return code, restarts after a real crash, multi-rank levels, runs
//! started by FTI 1.1 itself continued through the C API, and the heat-diffusion demo.

mod abi;
mod codes;
mod crash;
mod fti11;
mod fti11_heads;
mod fti11_suite;
mod fti_tests;
mod heads;
mod heatdis;
mod seed;
mod traced;
mod util;
