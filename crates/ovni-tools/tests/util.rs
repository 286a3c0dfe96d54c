//! Helpers shared by the integration tests: the fixture traces, copies of them with an edited
//! `stream.obs`, and running a tool.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The stream of the single-stream fixture traces.
pub const STREAM: &str = "ovni/loom.node0/proc.387/thread.387";

/// The ovni crate's fixture traces (`traces/`, `invalid/`).
pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../ovni/tests/fixtures")
}

/// One fixture trace, e.g. `traces/single`.
pub fn fixture(case: &str) -> PathBuf {
    fixtures().join(case)
}

/// Copies a fixture trace into a temporary directory and applies `edit` to its stream.obs.
pub fn corrupt(case: &str, edit: impl FnOnce(&mut Vec<u8>)) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let src = fixture(case).join(STREAM);
    let dst = tmp.path().join(STREAM);
    fs::create_dir_all(&dst).unwrap();
    fs::copy(src.join("stream.json"), dst.join("stream.json")).unwrap();
    let mut obs = fs::read(src.join("stream.obs")).unwrap();
    edit(&mut obs);
    fs::write(dst.join("stream.obs"), obs).unwrap();
    tmp
}

/// Runs `bin` with `args` in `cwd`.
pub fn run(bin: &str, args: &[&str], cwd: &Path) -> Output {
    Command::new(bin)
        .args(args)
        .current_dir(cwd)
        .output()
        .unwrap()
}

pub use test_support::copy_dir;
