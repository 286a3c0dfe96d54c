//! An application that traces itself with libovni (ours, `libovni.so`) and sets `trace = 1`:
//! the runtime finds the application's libovni in the process and emits its marks into the
//! application's stream, so each rank's thread has one stream, valid for `ovnilint`, holding
//! both the application's marks and FTI's.

use std::path::Path;
use std::process::Command;

use crate::util;

/// Compiles `tests/c/traced_app.c` against fti.h and ovni.h, linked with -lfti -lovni.
fn compile(dir: &Path) -> std::path::PathBuf {
    let lib = util::lib_dir();
    // Its SONAME is libovni.so.1, as libovni's.
    for name in ["libovni.so", "libovni.so.1"] {
        std::fs::copy(util::built_lib_dir().join("libovni.so"), lib.join(name)).unwrap();
    }
    let exe = dir.join("traced_app");
    let out = Command::new(util::tool("MPICC", "mpicc"))
        .args(["-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", "-I"])
        .arg(util::crate_dir().join("include"))
        .arg("-I")
        .arg(util::crate_dir().join("../ovni-capi/include"))
        .arg(util::crate_dir().join("tests/c/traced_app.c"))
        .arg("-o")
        .arg(&exe)
        .arg(format!("-L{}", lib.display()))
        .args(["-lfti", "-lovni"])
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    exe
}

#[test]
fn an_application_s_own_trace_holds_fti_s_marks() {
    let dir = tempfile::tempdir().unwrap();
    let exe = compile(dir.path());
    let cfg = util::config(dir.path(), "trace = 1\ntrace_dir = fti-own-trace");
    let cfg_arg = cfg.to_str().unwrap();
    let trace = dir.path().join("ovni");
    std::env::set_var("OVNI_TRACEDIR", &trace);
    let out = util::mpirun(2, &exe, &[cfg_arg], dir.path());
    let stdout = util::success("traced_app", &out);
    let mut results = util::results(&stdout);
    results.sort_unstable();
    assert_eq!(results, ["rank 0 ok 1", "rank 1 ok 1"], "{stdout}");
    // No second writer: the runtime wrote no trace of its own.
    assert!(!dir.path().join("fti-own-trace").exists());
    let report = ovni_rs::lint::lint_dir(
        &trace,
        &ovni_rs::lint::LintOptions {
            all: true,
            ..Default::default()
        },
    );
    assert!(report.accepted(), "{:?}", report.problems);
    assert_eq!(report.streams, 2);
    let t = ovni_rs::Trace::open(&trace).unwrap();
    for stream in t.streams() {
        let meta = stream.meta();
        assert_eq!(meta["ovni"]["mark"]["1"]["title"], "app phase");
        assert_eq!(meta["ovni"]["mark"]["40"]["title"], "FTI level");
        assert_eq!(
            meta["ovni"]["mark"]["41"]["labels"]["2"],
            "checkpoint 2 at L1: 1196 bytes"
        );
        let mut types = std::collections::BTreeSet::new();
        for e in stream.events() {
            let (_, ev) = e.unwrap();
            if &ev.mcv.0 == b"OM[" {
                types.insert(i32::from_le_bytes(ev.payload[8..12].try_into().unwrap()));
            }
        }
        assert_eq!(types.into_iter().collect::<Vec<_>>(), [1, 40, 41, 42]);
    }
}
