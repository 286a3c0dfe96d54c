//! libovni's C API seen from C: programs in `tests/c/` are compiled against `include/ovni.h`
//! and linked with the libovni built for this run. ABI checks, traces written by several
//! pthreads read back event for event, and every FATAL path in a child process.

mod abi;
mod fatal;
mod trace;
mod util;
mod valgrind;
