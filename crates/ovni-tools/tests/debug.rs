//! `ovniemu -d` against the original's debug output (`stderr-d` of the model traces and of
//! `fixtures/debug`, `golden/ovniemu-d.stderr` of the reference traces: ovniemu 1.14's stderr
//! with `-d`).
//!
//! Every line of the original is compared, in order, except the debug lines of its channel
//! machinery (functions in [`NOT_PRINTED`], which ours does not print: docs/ovniemu.md,
//! *Debug output*), the progress and timing lines, and the order of the `stream_load` lines
//! (the original lists the streams in directory order, which depends on the file system).
//! `fixtures/debug` adds two traces whose tasks run again (nosv, openmp).

use std::fs;
use std::path::{Path, PathBuf};

use crate::models::{emu, stable, FILES};
use crate::util::copy_dir;

/// The original's debug functions whose lines ours does not print: its channels, their
/// callbacks and the Paraver writer (their lines hold memory addresses), and with `-b` the
/// breakdown views' muxes and sort.
const NOT_PRINTED: [&str; 12] = [
    "bay_register",
    "bay_propagate",
    "propagate_chan",
    "set_dirty",
    "cb_chan_is_dirty",
    "chan_set",
    "cb_input",
    "cb_select",
    "emit",
    "select_tr",
    "select_idle",
    "sort_cb_input",
];

/// The lines to compare: split at newlines and carriage returns (the progress line ends in
/// one and the next line follows it), without progress and timing lines and the functions
/// ours does not print; the `stream_load` lines first, sorted.
pub(crate) fn comparable(stderr: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(stderr);
    let mut loads = Vec::new();
    let mut lines = Vec::new();
    for l in text.split(['\n', '\r']).filter(|l| !l.is_empty()) {
        if l.contains("% done at") || l.contains(" input events in ") {
            continue;
        }
        let func = l
            .strip_prefix("ovniemu: DEBUG: ")
            .and_then(|r| r.split_once(": "))
            .map(|(f, _)| f);
        match func {
            Some(f) if NOT_PRINTED.contains(&f) => continue,
            Some("stream_load") => loads.push(l.to_string()),
            _ => lines.push(l.to_string()),
        }
    }
    loads.sort();
    loads.extend(lines);
    loads
}

/// `(trace directory, the original's stderr with -d, its exit status, its six files)`.
fn cases() -> Vec<(PathBuf, PathBuf, i32, PathBuf)> {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../ovni/tests/fixtures");
    let status = |p: PathBuf| -> i32 { fs::read_to_string(p).unwrap().trim().parse().unwrap() };
    let mut v = Vec::new();
    let cases = ["models", "debug"]
        .into_iter()
        .flat_map(|d| fs::read_dir(fixtures.join(d)).unwrap())
        .map(|e| e.unwrap().path());
    for case in cases.filter(|c| c.join("stderr-d").is_file()) {
        v.push((
            case.join("ovni"),
            case.join("stderr-d"),
            status(case.join("exit-status")),
            case.join("golden"),
        ));
    }
    for e in fs::read_dir(fixtures.join("traces")).unwrap() {
        let golden = e.unwrap().path().join("golden");
        if golden.join("ovniemu-d.stderr").is_file() {
            v.push((
                golden.parent().unwrap().join("ovni"),
                golden.join("ovniemu-d.stderr"),
                status(golden.join("ovniemu.rc")),
                golden.join("emu"),
            ));
        }
    }
    v.sort();
    assert_eq!(v.len(), 11, "fixture set changed");
    v
}

#[test]
fn debug_lines_are_the_originals() {
    let mut failures = Vec::new();
    for (trace, golden, want_status, files) in cases() {
        let name = trace
            .parent()
            .unwrap()
            .file_name()
            .unwrap()
            .to_string_lossy();
        let tmp = tempfile::tempdir().unwrap();
        copy_dir(&trace, &tmp.path().join("ovni"));
        let out = emu(&["-d", "ovni"], tmp.path());
        if out.status.code() != Some(want_status) {
            failures.push(format!(
                "{name}: exit {:?}, want {want_status}",
                out.status.code()
            ));
        }
        let want = comparable(&fs::read(&golden).unwrap());
        let got = comparable(&out.stderr);
        assert!(
            want.iter().filter(|l| l.contains(": DEBUG: ")).count() > 20,
            "{name}: golden without debug lines"
        );
        if got != want {
            let at = got.iter().zip(&want).take_while(|(g, w)| g == w).count();
            failures.push(format!(
                "{name}: stderr differs at comparable line {at}:\n got: {:?}\nwant: {:?}",
                got.get(at),
                want.get(at)
            ));
        }
        // -d changes nothing else.
        for f in FILES {
            if fs::read(tmp.path().join("ovni").join(f)).ok() != fs::read(files.join(f)).ok() {
                failures.push(format!("{name}: {f} differs"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// With `-b` too (`stderr-bd`: the original's stderr with `-b -d`).
#[test]
fn debug_lines_with_breakdowns_are_the_originals() {
    let case = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../ovni/tests/fixtures/models/emu-nanos6-sponge-breakdown");
    let tmp = tempfile::tempdir().unwrap();
    copy_dir(&case.join("ovni"), &tmp.path().join("ovni"));
    let out = emu(&["-b", "-d", "ovni"], tmp.path());
    assert_eq!(out.status.code(), Some(0));
    let want = comparable(&fs::read(case.join("stderr-bd")).unwrap());
    let got = comparable(&out.stderr);
    assert!(want.iter().any(|l| l.contains("DEBUG: emu_step")));
    assert_eq!(got, want);
}

#[test]
fn no_debug_lines_without_d() {
    let (trace, ..) = cases().swap_remove(0);
    let tmp = tempfile::tempdir().unwrap();
    copy_dir(&trace, &tmp.path().join("ovni"));
    let out = emu(&["ovni"], tmp.path());
    assert!(!stable(&out.stderr).contains("DEBUG"));
}
