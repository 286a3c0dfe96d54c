//! The nanos6 model on traces written here: cases the traces of ovni's emulator tests leave
//! out (nesting without subsystem events, repeated thread types, the end check, the old task
//! creation event). With `OVNI_ORIGINAL_EMU` naming ovni 1.14's `ovniemu`, each trace is also
//! checked against the original's files and messages.

use std::fs;
use std::path::Path;
use std::process::Command;

use crate::models::{emu, errors, run, stable, trace_with};
use crate::util::copy_dir;
use ovni::write::ThreadStream;
use ovni::Mcv;

const NANOS6: (&str, &str) = ("nanos6", "1.1.0");
const FILES: [&str; 6] = [
    "cpu.prv",
    "cpu.pcf",
    "cpu.row",
    "thread.prv",
    "thread.pcf",
    "thread.row",
];

/// A trace whose thread emits `events` (MCV, payload) at 2000, 3000, ...; `6Yc` is jumbo.
fn nanos6_trace(dir: &Path, events: &[(&[u8; 3], Vec<u8>)]) {
    trace_with(dir, &[NANOS6], |t: &mut ThreadStream| {
        let mut clock = 1000;
        for (mcv, payload) in events {
            clock += 1000;
            if **mcv == *b"6Yc" {
                t.emit_jumbo_at(Mcv(**mcv), clock, payload).unwrap();
            } else {
                t.emit_at(Mcv(**mcv), clock, payload).unwrap();
            }
        }
        clock + 1000
    });
}

fn ids(v: &[u32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn task_type(id: u32, label: &str) -> Vec<u8> {
    [&id.to_le_bytes()[..], label.as_bytes(), b"\0"].concat()
}

/// ovniemu's verdict and messages on the trace in `tmp/ovni` (the original's too, if given).
fn emulate(tmp: &Path, args: &[&str]) -> std::process::Output {
    let mut all: Vec<&str> = args.to_vec();
    all.push("ovni");
    let original = std::env::var_os("OVNI_ORIGINAL_EMU");
    if original.is_some() {
        // The trace as it was, before ours writes into it.
        copy_dir(&tmp.join("ovni"), &tmp.join("theirs"));
    }
    let out = emu(&all, tmp);
    if let Some(original) = original {
        let mut all: Vec<&str> = args.to_vec();
        all.push("theirs");
        let theirs = Command::new(original)
            .args(&all)
            .current_dir(tmp)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), theirs.status.code());
        assert_eq!(
            stable(&out.stderr),
            stable(&theirs.stderr).replace("theirs", "ovni")
        );
        for f in FILES.iter().chain(&BREAKDOWN) {
            let ours = fs::read(tmp.join("ovni").join(f)).ok();
            assert_eq!(ours, fs::read(tmp.join("theirs").join(f)).ok(), "{f}");
        }
        fs::remove_dir_all(tmp.join("theirs")).unwrap();
    }
    out
}

fn lint(tmp: &Path) -> Option<i32> {
    run(env!("CARGO_BIN_EXE_ovnilint"), &["ovni"], tmp)
        .status
        .code()
}

#[test]
fn a_task_run_over_another_warns_then_needs_a_subsystem_in_between() {
    let tmp = tempfile::tempdir().unwrap();
    let nested = |between: bool| {
        let mut v = vec![
            (b"6Yc", task_type(1, "t")),
            (b"6Tc", ids(&[1, 1])),
            (b"6Tc", ids(&[2, 1])),
            (b"6Tx", ids(&[1])),
        ];
        if between {
            v.push((b"6U[", Vec::new()));
        }
        v.push((b"6Tx", ids(&[2])));
        v.push((b"6Te", ids(&[2])));
        if between {
            v.push((b"6U]", Vec::new()));
        }
        v.push((b"6Te", ids(&[1])));
        v
    };
    nanos6_trace(&tmp.path().join("ovni"), &nested(false));
    let out = emulate(tmp.path(), &[]);
    assert_eq!(out.status.code(), Some(1));
    let err = stable(&out.stderr);
    let warn = "ovniemu: WARN: deprecated nesting body(id=1,taskid=2) over already running body(id=1,taskid=1)\n";
    let push = "ovniemu: ERROR: chan_push: nanos6.thread0.subsystem: same value as last_value {int64_t 1}\n";
    let at = err.find(warn).expect(&err);
    assert_eq!(err.find(push), Some(at + warn.len()), "{err}");
    assert!(err.contains("panic:   is_jumbo=1\n"), "{err}");
    assert_eq!(lint(tmp.path()), Some(1));

    let tmp = tempfile::tempdir().unwrap();
    nanos6_trace(&tmp.path().join("ovni"), &nested(true));
    let out = emulate(tmp.path(), &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stable(&out.stderr));
    assert!(stable(&out.stderr).contains(warn));
    assert_eq!(lint(tmp.path()), Some(0));
}

#[test]
fn a_thread_type_is_not_pushed_twice_in_a_row() {
    let tmp = tempfile::tempdir().unwrap();
    let events = [
        (b"6Hw", Vec::new()),
        (b"6Hm", Vec::new()),
        (b"6HM", Vec::new()),
        (b"6Hw", Vec::new()),
    ];
    nanos6_trace(&tmp.path().join("ovni"), &events);
    let out = emulate(tmp.path(), &[]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        errors(&out).first().map(String::as_str),
        Some("chan_push: nanos6.thread0.thread_type: same value as last_value {int64_t 3}")
    );
    assert_eq!(lint(tmp.path()), Some(1));
}

#[test]
fn a_thread_ending_inside_a_subsystem_fails_in_lint_mode_only() {
    let tmp = tempfile::tempdir().unwrap();
    let events = [
        (b"6TC", Vec::new()),
        (b"6W[", Vec::new()),
        (b"6Pr", Vec::new()),
    ];
    nanos6_trace(&tmp.path().join("ovni"), &events);
    let out = emulate(tmp.path(), &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stable(&out.stderr));
    assert!(stable(&out.stderr).contains("ovniemu: WARN: got old 6TC event, ignoring\n"));
    assert_eq!(lint(tmp.path()), Some(0));
    let out = emulate(tmp.path(), &["-l"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        errors(&out),
        [
            "end_lint: thread 100 ended with 1 stacked nanos6 subsystems",
            "model_nanos6_finish: end_lint failed",
            "model_finish: finish failed for model '6'",
            "emu_finish: model_finish failed",
            "main: emu_finish failed",
        ]
    );
}

#[test]
fn a_paused_task_resumes_and_its_type_is_written_again() {
    let tmp = tempfile::tempdir().unwrap();
    let events = [
        (b"6Yc", task_type(7, "")),
        (b"6Tc", ids(&[1, 7])),
        (b"6Tx", ids(&[1])),
        (b"6Tp", ids(&[1])),
        (b"6Tr", ids(&[1])),
        (b"6Pa", Vec::new()),
        (b"6Te", ids(&[1])),
        (b"6Tx", ids(&[1])),
    ];
    nanos6_trace(&tmp.path().join("ovni"), &events);
    let out = emulate(tmp.path(), &[]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        errors(&out).first().map(String::as_str),
        Some("body_execute: body(id=1,taskid=1) is not allowed to run again")
    );
    let pcf = fs::read_to_string(tmp.path().join("ovni/thread.pcf")).unwrap();
    assert!(pcf.contains(" (unlabeled task type 7)\n"), "{pcf}");
    let prv = fs::read_to_string(tmp.path().join("ovni/thread.prv")).unwrap();
    // The type is written when the thread starts running and at every start and stop, a
    // repeated value too.
    let types: Vec<String> = prv
        .lines()
        .skip(1)
        .flat_map(|l| {
            let f: Vec<&str> = l.split(':').skip(6).collect();
            f.chunks(2)
                .filter(|c| c.first() == Some(&"36"))
                .filter_map(|c| c.get(1).map(|v| v.to_string()))
                .collect::<Vec<_>>()
        })
        .collect();
    let gid = types.get(1).cloned().unwrap_or_default();
    assert_ne!(gid, "0");
    assert_eq!(
        types,
        ["0", &gid, "0", &gid, "0"].map(String::from),
        "{prv}"
    );
}

/// Three threads of one process, each on its own CPU, running tasks of two types with
/// subsystems and idle states in between, at interleaved times: the breakdown rows sort
/// their values. `crates/ovni/tests/fixtures/models/emu-nanos6-breakdown-cpus` is this trace
/// with the original's outputs.
pub(crate) fn three_cpus(dir: &Path) {
    let p = ovni::write::Process::init(dir, 1, "node0", 100).unwrap();
    let mut threads: Vec<ThreadStream> = (0..3).map(|k| p.thread_init(101 + k).unwrap()).collect();
    for (k, t) in threads.iter_mut().enumerate() {
        if k == 0 {
            for c in 0..3 {
                t.add_cpu(c, c).unwrap();
            }
        }
        t.require(NANOS6.0, NANOS6.1).unwrap();
        let k = k as u64;
        let at = |step: u64| 1000 + step * 100 + k * 7;
        let mut cpu = Vec::new();
        cpu.extend_from_slice(&(k as i32).to_le_bytes());
        cpu.extend_from_slice(&(-1i32).to_le_bytes());
        cpu.extend_from_slice(&0u64.to_le_bytes());
        t.emit_at(Mcv(*b"OHx"), at(0), &cpu).unwrap();
        let mut evs: Vec<(&[u8; 3], Vec<u8>)> = Vec::new();
        if k == 0 {
            evs.push((b"6Yc", task_type(1, "A")));
            evs.push((b"6Yc", task_type(2, "B")));
        } else {
            evs.push((b"6Pr", Vec::new()));
            evs.push((b"6Pp", Vec::new()));
        }
        evs.push((b"6Hw", Vec::new()));
        evs.push((b"6W[", Vec::new()));
        for j in 0..4u32 {
            let k = k as u32;
            if (j + k).is_multiple_of(2) {
                evs.push((b"6Pr", Vec::new()));
                evs.push((b"6Pp", Vec::new()));
            }
            let id = 10 * k + j + 1;
            evs.push((b"6Tc", ids(&[id, 1 + (j + k) % 2])));
            evs.push((b"6Tx", ids(&[id])));
            evs.push((b"6Sa", Vec::new()));
            evs.push((b"6SA", Vec::new()));
            if (j + k).is_multiple_of(3) {
                evs.push((b"6Tp", ids(&[id])));
                evs.push((b"6Tr", ids(&[id])));
            }
            evs.push((b"6Te", ids(&[id])));
        }
        evs.push((b"6W]", Vec::new()));
        evs.push((b"6HW", Vec::new()));
        evs.push((b"OHe", Vec::new()));
        for (step, (mcv, payload)) in evs.iter().enumerate() {
            let clock = at(step as u64 + 1);
            if **mcv == *b"6Yc" {
                t.emit_jumbo_at(Mcv(**mcv), clock, payload).unwrap();
            } else {
                t.emit_at(Mcv(**mcv), clock, payload).unwrap();
            }
        }
    }
    for t in threads {
        t.finish().unwrap();
    }
}

const BREAKDOWN: [&str; 3] = [
    "nanos6-breakdown.prv",
    "nanos6-breakdown.pcf",
    "nanos6-breakdown.row",
];

fn fixtures() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../ovni/tests/fixtures/models")
}

/// [`three_cpus`] writes the trace of the fixture `emu-nanos6-breakdown-cpus`.
#[test]
fn three_cpus_is_the_fixtures_trace() {
    let tmp = tempfile::tempdir().unwrap();
    three_cpus(&tmp.path().join("ovni"));
    let out = emulate(tmp.path(), &["-b"]);
    assert_eq!(out.status.code(), Some(0), "{}", stable(&out.stderr));
    let case = fixtures().join("emu-nanos6-breakdown-cpus/golden-b");
    for f in BREAKDOWN {
        let got = fs::read(tmp.path().join("ovni").join(f)).unwrap();
        assert!(got == fs::read(case.join(f)).unwrap(), "{f} differs");
    }
}
