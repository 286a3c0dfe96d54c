//! Runs `ovniemu` on every fixture trace (on a copy: it writes into the trace) and compares
//! the exit status, stderr (without the lines that carry timings or progress) and the six
//! Paraver files byte for byte with the outputs of ovni 1.14's ovniemu.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::util::copy_dir;
use ovni::write::Process;
use ovni::Mcv;

const FILES: [&str; 6] = [
    "cpu.prv",
    "cpu.pcf",
    "cpu.row",
    "thread.prv",
    "thread.pcf",
    "thread.row",
];

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../ovni/tests/fixtures")
}

fn cases() -> Vec<PathBuf> {
    let mut v = Vec::new();
    for kind in ["traces", "invalid"] {
        for e in fs::read_dir(fixtures().join(kind)).unwrap() {
            let p = e.unwrap().path();
            if p.join("golden/ovniemu.rc").is_file() {
                v.push(p);
            }
        }
    }
    v.sort();
    assert_eq!(v.len(), 26, "fixture set changed");
    v
}

fn run(args: &[&str], cwd: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ovniemu"))
        .args(args)
        .current_dir(cwd)
        .output()
        .unwrap()
}

/// stderr with the numbers that depend on timing (event rate, seconds) replaced by `N`.
fn stable(stderr: &[u8]) -> String {
    String::from_utf8_lossy(stderr)
        .lines()
        .map(|l| {
            let l = match (l.find("% done at avg "), l.find(" kev/s")) {
                (Some(a), Some(b)) if a < b => format!("{}% done at avg N{}", &l[..a], &l[b..]),
                _ => l.to_string(),
            };
            match (l.find(" input events in "), l.rfind(" s")) {
                (Some(a), Some(b)) if a < b => {
                    format!("{} input events in N{}\n", &l[..a], &l[b..])
                }
                _ => format!("{l}\n"),
            }
        })
        .collect()
}

#[test]
fn ovniemu_matches_goldens() {
    let mut failures = Vec::new();
    for case in cases() {
        let tmp = tempfile::tempdir().unwrap();
        copy_dir(&case.join("ovni"), &tmp.path().join("ovni"));
        let out = run(&["ovni"], tmp.path());
        let golden = case.join("golden");
        let want_rc: i32 = fs::read_to_string(golden.join("ovniemu.rc"))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let name = case.file_name().unwrap().to_string_lossy().into_owned();
        if out.status.code() != Some(want_rc) {
            failures.push(format!(
                "{name}: exit {:?}, want {want_rc}",
                out.status.code()
            ));
        }
        let want_err = stable(&fs::read(golden.join("ovniemu.stderr")).unwrap());
        let got_err = stable(&out.stderr);
        if got_err != want_err {
            failures.push(format!(
                "{name}: stderr differs:\n--- got\n{got_err}--- want\n{want_err}"
            ));
        }
        if !out.stdout.is_empty() {
            failures.push(format!("{name}: wrote to stdout"));
        }
        for f in FILES {
            let got = fs::read(tmp.path().join("ovni").join(f)).ok();
            let want = fs::read(golden.join("emu").join(f)).ok();
            if got != want {
                failures.push(format!(
                    "{name}: {f} differs (present: {}, expected: {})",
                    got.is_some(),
                    want.is_some()
                ));
            }
        }
        // The Paraver configurations come with the `.pcf` files (once the emulation started).
        let pcf = fs::read(golden.join("emu/thread.pcf")).unwrap_or_default();
        let cfg = tmp.path().join("ovni/cfg/thread/ovni/state.cfg").is_file();
        if cfg == pcf.is_empty() {
            failures.push(format!("{name}: cfg/ written: {cfg}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn outputs_are_overwritten() {
    let case = fixtures().join("traces/single");
    let tmp = tempfile::tempdir().unwrap();
    copy_dir(&case.join("ovni"), &tmp.path().join("ovni"));
    for f in FILES {
        fs::write(
            tmp.path().join("ovni").join(f),
            "stale stale stale\n".repeat(100),
        )
        .unwrap();
    }
    assert_eq!(run(&["ovni"], tmp.path()).status.code(), Some(0));
    for f in FILES {
        assert_eq!(
            fs::read(tmp.path().join("ovni").join(f)).unwrap(),
            fs::read(case.join("golden/emu").join(f)).unwrap(),
            "{f}"
        );
    }
    // Twice in a row gives the same files.
    assert_eq!(run(&["-l", "ovni"], tmp.path()).status.code(), Some(0));
    assert_eq!(
        fs::read(tmp.path().join("ovni/cpu.prv")).unwrap(),
        fs::read(case.join("golden/emu/cpu.prv")).unwrap()
    );
}

/// A one-thread trace that pushes a stack mark it never pops.
fn unpopped_trace(dir: &Path) {
    let p = Process::init(dir, 1, "node0", 100).unwrap();
    let mut t = p.thread_init(100).unwrap();
    t.add_cpu(0, 0).unwrap();
    t.mark_type(5, 1, "Stack").unwrap();
    t.mark_label(5, 7, "seven").unwrap();
    let mut cpu = Vec::new();
    cpu.extend_from_slice(&0i32.to_le_bytes());
    cpu.extend_from_slice(&(-1i32).to_le_bytes());
    cpu.extend_from_slice(&0u64.to_le_bytes());
    t.emit_at(Mcv(*b"OHx"), 1000, &cpu).unwrap();
    t.emit_at(
        Mcv(*b"OM["),
        2000,
        &[&7i64.to_le_bytes()[..], &5i32.to_le_bytes()[..]].concat(),
    )
    .unwrap();
    t.emit_at(Mcv(*b"OHe"), 3000, &[]).unwrap();
    t.finish().unwrap();
}

#[test]
fn lint_mode_rejects_marks_left_pushed_and_still_writes() {
    let tmp = tempfile::tempdir().unwrap();
    unpopped_trace(&tmp.path().join("ovni"));
    let out = run(&["ovni"], tmp.path());
    assert_eq!(out.status.code(), Some(0), "{}", stable(&out.stderr));
    let prv = fs::read_to_string(tmp.path().join("ovni/thread.prv")).unwrap();
    assert!(prv.contains(":1000:105:7\n"), "{prv}");
    let pcf = fs::read_to_string(tmp.path().join("ovni/thread.pcf")).unwrap();
    assert!(
        pcf.contains("0 105        Stack\nVALUES\n7    seven\n"),
        "{pcf}"
    );
    for f in FILES {
        fs::remove_file(tmp.path().join("ovni").join(f)).unwrap();
    }
    let out = run(&["-l", "ovni"], tmp.path());
    assert_eq!(out.status.code(), Some(1));
    let err = stable(&out.stderr);
    assert!(err.contains("1 values pushed on mark type 5"), "{err}");
    assert!(
        err.ends_with("ovniemu: INFO: emulation finished with errors\n"),
        "{err}"
    );
    for f in FILES {
        assert!(tmp.path().join("ovni").join(f).is_file(), "{f}");
    }
    // ovnilint gives the same verdicts.
    let lint = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_ovnilint"))
            .args(args)
            .current_dir(tmp.path())
            .output()
            .unwrap()
    };
    assert_eq!(lint(&["ovni"]).status.code(), Some(0));
    let out = lint(&["-l", "ovni"]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("1 values pushed on mark type 5"), "{text}");
}

#[test]
fn usage() {
    let tmp = tempfile::tempdir().unwrap();
    assert_eq!(run(&[], tmp.path()).status.code(), Some(2));
    assert_eq!(run(&["-x", "ovni"], tmp.path()).status.code(), Some(2));
    let help = run(&["--help"], tmp.path());
    assert_eq!(help.status.code(), Some(0));
    let text = String::from_utf8_lossy(&help.stdout);
    assert!(text.contains("Usage") && text.contains("cfg/"), "{text}");
    assert!(
        text.contains("  -d\n") && text.contains("Debug output"),
        "{text}"
    );
    // No trace: a clear error.
    let out = run(&["missing"], tmp.path());
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("ERROR"));
}

#[test]
fn long_flushes_and_old_events_are_warned_about() {
    let tmp = tempfile::tempdir().unwrap();
    let p = Process::init(tmp.path().join("ovni"), 1, "node0", 100).unwrap();
    let mut t = p.thread_init(100).unwrap();
    t.add_cpu(0, 0).unwrap();
    let mut cpu = Vec::new();
    cpu.extend_from_slice(&0i32.to_le_bytes());
    cpu.extend_from_slice(&(-1i32).to_le_bytes());
    cpu.extend_from_slice(&0u64.to_le_bytes());
    t.emit_at(Mcv(*b"OHx"), 1000, &cpu).unwrap();
    t.emit_at(Mcv(*b"OCn"), 1500, &4i32.to_le_bytes()).unwrap();
    t.emit_at(Mcv(*b"OF["), 2000, &[]).unwrap();
    t.emit_at(Mcv(*b"OF]"), 2000 + 20_000_000, &[]).unwrap();
    t.emit_at(Mcv(*b"OHe"), 30_000_000, &[]).unwrap();
    t.finish().unwrap();
    let out = run(&["ovni"], tmp.path());
    let err = stable(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("ovniemu: WARN: ignoring old event OCn\n"),
        "{err}"
    );
    assert!(
        err.contains("ovniemu: WARN: large flush of 20.0 ms at dclock=20001000 ns in tid=100\n"),
        "{err}"
    );
    let prv = fs::read_to_string(tmp.path().join("ovni/thread.prv")).unwrap();
    assert!(
        prv.contains("2:0:1:1:1:1000:7:1\n2:0:1:1:1:20001000:7:0\n"),
        "{prv}"
    );
}
