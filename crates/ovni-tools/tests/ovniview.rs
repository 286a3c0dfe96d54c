//! `ovniview`: writes one page, accepts a crashed run's trace, and fails cleanly.

use std::path::Path;
use std::process::Command;

fn ovniview(args: &[&std::ffi::OsStr]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_ovniview"))
        .args(args)
        .output()
        .unwrap()
}

fn fixture(path: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path)
}

#[test]
fn writes_a_page_of_a_crashed_run() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("t.html");
    let dir = fixture("ovni-view/tests/fixtures/fti-demo-crashed");
    let o = ovniview(&[dir.as_os_str(), "-o".as_ref(), out.as_os_str()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("2 threads, 55 events (1 threads flagged"),
        "{err}"
    );
    let page = std::fs::read_to_string(&out).unwrap();
    assert!(page.starts_with("<!DOCTYPE html>"));
    assert!(page.contains("id=\"ovniview-summary\""));
    // Only the page: no temporary file left.
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 1);
}

#[test]
fn fails_on_what_is_not_a_trace() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("t.html");
    let o = ovniview(&[tmp.path().as_os_str(), "-o".as_ref(), out.as_os_str()]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("no streams found"), "{err}");
    assert!(!out.exists());
    // A stream whose header is not ovni's.
    let bad = fixture("ovni/tests/fixtures/invalid/bad-magic");
    let o = ovniview(&[bad.as_os_str(), "-o".as_ref(), out.as_os_str()]);
    assert_eq!(o.status.code(), Some(1));
    // No output path: a usage error.
    let o = ovniview(&[tmp.path().as_os_str()]);
    assert_eq!(o.status.code(), Some(2));
}
