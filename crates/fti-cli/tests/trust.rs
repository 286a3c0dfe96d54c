//! What the `fti` tool does with files and directories that could lose a user's data or hand
//! back wrong bytes: FIFOs named like checkpoints, files whose metadata lies, directories it
//! did not create.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/fti")
}

fn seed(k: u32) -> PathBuf {
    fixtures().join(format!("seed-example/ckpt{k}-rank0.fti"))
}

/// Runs `fti` with `args`; a run still going after 20 s is killed and fails the test (a FIFO
/// opened for reading blocks until a writer appears).
fn fti(args: &[&std::ffi::OsStr]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_fti"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(20) {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("fti {args:?} hangs");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

macro_rules! args {
    ($($a:expr),*) => { &[$(std::ffi::OsStr::new(&$a)),*] };
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn mkfifo(path: &Path) {
    let status = Command::new("mkfifo").arg(path).status().unwrap();
    assert!(status.success());
}

#[test]
fn a_fifo_named_like_a_checkpoint_is_reported_not_read() {
    let dir = tempfile::tempdir().unwrap();
    let l1 = dir.path().join("exec/l1");
    std::fs::create_dir_all(&l1).unwrap();
    let fifo = l1.join("Ckpt2-Rank0.fti");
    mkfifo(&fifo);
    std::fs::copy(seed(1), l1.join("Ckpt1-Rank1.fti")).unwrap();

    let out = fti(args!["verify", fifo]);
    assert_eq!(out.status.code(), Some(1));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("Ckpt2-Rank0.fti: not a regular file (a FIFO)"),
        "{stdout}"
    );

    let out = fti(args!["inspect", fifo]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("not a regular file (a FIFO)"));

    let out = fti(args!["list", dir.path()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("Ckpt2-Rank0.fti: not a regular file, skipped"));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("Ckpt1-Rank1.fti"), "{stdout}");
    assert!(!stdout.contains("Ckpt2-Rank0.fti"), "{stdout}");
}
