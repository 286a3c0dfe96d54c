//! The integration tests of the `fti` tool, in one test binary: a module per subject, helpers
//! in [`util`] (declared first: its `args!` macro is used by the others).

#[macro_use]
mod util;

mod cli;
mod demo;
mod heads;
mod l3;
mod list;
mod mutants;
mod trust;
