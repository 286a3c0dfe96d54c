//! A C client linked with this libovni.so runs clean under valgrind (memcheck): no invalid
//! access, no use of uninitialised memory, and no crash in the clock path.
//!
//! valgrind is required: without it the test fails, naming the Debian package to install.

use std::process::Command;

use crate::util::{check_success, compile, Link};

#[test]
fn c_client_runs_clean_under_valgrind() {
    let version = Command::new("valgrind").arg("--version").output();
    match version {
        Ok(o) if o.status.success() => {}
        _ => panic!(
            "valgrind is required by this test and was not found in PATH \
             (Debian/Ubuntu: `apt-get install -y valgrind`)"
        ),
    }
    let exe = compile("valgrind", Link::Shared);
    let tmp = tempfile::tempdir().unwrap();
    let out = Command::new("valgrind")
        .args([
            "--error-exitcode=1",
            "--errors-for-leak-kinds=none",
            "--quiet",
        ])
        .arg(&exe)
        .current_dir(tmp.path())
        .env("OVNI_TRACEDIR", tmp.path().join("ovni"))
        .env_remove("OVNI_TMPDIR")
        .output()
        .expect("run valgrind");
    check_success("valgrind", &out);
    let trace = ovni_rs::Trace::open(&tmp.path().join("ovni")).unwrap();
    let events = trace.merged().count();
    // OHx, OM[, OM], OU[ (jumbo), OU], OHe, then the flush's OF[ and OF].
    assert_eq!(events, 8);
}
