//! The integration tests of `ftiff`, in one test binary: a module per subject, helpers in
//! [`util`].

mod dcp;
mod hostile;
mod mutants;
mod roundtrip;
mod util;
mod vectors;
