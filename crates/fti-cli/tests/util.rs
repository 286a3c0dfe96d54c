//! Helpers shared by the integration tests: the fixtures, copies of fixture trees, and running
//! the `fti` binary with a time bound (a run that hangs, as on a FIFO opened for reading, which
//! blocks until a writer appears, is killed and fails the test).

use std::ffi::OsStr;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

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

/// Copies the directory tree `from` to `to`.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// Runs `fti` with `args`; a run still going after 20 s is killed and fails the test. Its
/// output is read while it runs, so a large one never blocks it.
pub fn fti(args: &[&OsStr]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_fti"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let read = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = r.read_to_end(&mut bytes);
            bytes
        })
    };
    let stdout = read(Box::new(child.stdout.take().unwrap()));
    let stderr = read(Box::new(child.stderr.take().unwrap()));
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > Duration::from_secs(20) {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("fti {args:?} hangs");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    Output {
        status,
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    }
}
