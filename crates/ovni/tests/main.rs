//! The integration tests of `ovni`, in one test binary: a module per subject, helpers in
//! [`util`].

mod emu;
mod lint;
mod meta_memory;
mod reader;
mod util;
mod writer;
