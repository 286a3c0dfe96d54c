//! Helpers shared by the integration tests: the fixtures, copies of fixture trees, and running
//! the `fti` binary with a time bound (a run that hangs, as on a FIFO opened for reading, which
//! blocks until a writer appears, is killed and fails the test).

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

/// `&[&OsStr]` of the arguments, for [`fti`].
macro_rules! args {
    ($($a:expr),*) => { &[$(std::ffi::OsStr::new(&$a)),*] };
}

/// Root of the FTI test vectors.
pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/fti")
}

/// Checkpoint `k` of the seed example, as FTI 1.1 wrote it.
pub fn seed(k: u32) -> PathBuf {
    fixtures().join(format!("seed-example/ckpt{k}-rank0.fti"))
}

/// Output bytes as text (lossy).
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

pub use test_support::copy_dir;

/// Runs `fti` with `args`; a run still going after 20 s is killed and fails the test. Its
/// output is read while it runs, so a large one never blocks it.
pub fn fti(args: &[&OsStr]) -> Output {
    let child = Command::new(env!("CARGO_BIN_EXE_fti"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    test_support::output_within(child, Duration::from_secs(20), &format!("fti {args:?}"))
}
