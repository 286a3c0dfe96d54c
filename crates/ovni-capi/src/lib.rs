//! libovni 1.14's C API (`libovni.so.1`, `libovni.a`, header `include/ovni.h`) on top of the
//! `ovni` crate's writer.
//!
//! Programs instrumented for libovni relink against this library with no source change:
//! every function of libovni's `ovni.h` with the same signature, the same `struct ovni_ev`
//! layout ([`OvniEv`]), constants and environment variables (`OVNI_TRACEDIR`,
//! `OVNI_TMPDIR`). State is kept as libovni keeps it: one process record (atomic state
//! uninit → init → ready → gone) and one record per thread in a thread-local, so emitting
//! takes no lock. Misuse prints `FATAL: <function>: <message>` on stderr and aborts, where
//! libovni does, naming the same function.
//!
//! Where libovni loses data, this library does not: `ovni_thread_free` writes the events
//! emitted after the last `ovni_flush`, and `stream.obs` is truncated when a thread starts.
//! The few other differences are listed in `docs/ovni-format.md` ("C API").
#![deny(missing_docs)]
// A C API takes raw pointers from C: dereferencing them needs `unsafe`. It is confined to
// this crate, and every block states why it is sound.
#![allow(unsafe_code)]
#![deny(unsafe_op_in_unsafe_fn)]

mod attr;
mod ev;
mod fatal;
mod runtime;

pub use attr::*;
pub use ev::*;
pub use runtime::*;
