//! Helpers shared by the integration tests of the workspace's crates: copying trees, listing
//! what a tree holds, running a test alone in its own process, and running a program with a
//! deadline. A dev-dependency only; its functions panic on any failure, as a test would.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};
use std::time::{Duration, Instant};

/// Copies the directory tree `from` to `to` (created if missing).
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

/// Every file below `dir`, sorted, with its length and a hash of its bytes: compared before
/// and after, it shows whether anything in the tree changed.
pub fn files_below(dir: &Path) -> Vec<(PathBuf, usize, u64)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            if e.file_type().unwrap().is_dir() {
                stack.push(e.path());
            } else {
                let bytes = std::fs::read(e.path()).unwrap_or_default();
                let mut h = std::collections::hash_map::DefaultHasher::new();
                std::hash::Hash::hash(&bytes, &mut h);
                out.push((e.path(), bytes.len(), std::hash::Hasher::finish(&h)));
            }
        }
    }
    out.sort();
    out
}

/// Runs the test `name` (its path in this binary) alone in a new process of this binary, so
/// that a process-wide observer (a counting allocator) sees no other test. Returns true in
/// that process, where the caller runs the test's body; false in the caller's, once the other
/// process passed.
pub fn in_own_process(name: &str) -> bool {
    const ALONE: &str = "RS_TEST_ALONE";
    if std::env::var_os(ALONE).is_some_and(|v| v == name) {
        return true;
    }
    let exe = std::env::current_exe().expect("the test binary");
    let out = Command::new(exe)
        .args([name, "--exact", "--test-threads=1"])
        .env(ALONE, name)
        .output()
        .expect("the test binary runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "{name} in its own process:\n{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    false
}

/// Waits for `child` (spawned with piped stdout and stderr), reading both while it runs so
/// that a large output never blocks it; kills it and fails the test once `deadline` passed.
pub fn output_within(mut child: Child, deadline: Duration, what: &str) -> Output {
    let read = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = r.read_to_end(&mut bytes);
            bytes
        })
    };
    let stdout = read(Box::new(child.stdout.take().expect("stdout piped")));
    let stderr = read(Box::new(child.stderr.take().expect("stderr piped")));
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: still running after {deadline:?}, killed");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    Output {
        status,
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    }
}
