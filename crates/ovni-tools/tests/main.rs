//! The integration tests of the ovni tools, in one test binary: a module per subject, helpers
//! in [`util`].

mod debug;
mod emu_messages;
mod emu_outputs;
mod goldens;
mod hostile;
mod model_sequences;
mod models;
mod nanos6;
mod nodes;
mod nosv;
mod openmp;
mod ovniemu;
mod ovniview;
mod regressions;
mod sort;
mod util;
