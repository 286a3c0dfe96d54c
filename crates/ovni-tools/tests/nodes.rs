//! The nodes model on traces written here (ovni's emulator tests have none): the subsystem
//! view of a thread that pauses inside a subsystem, the rejected events and the end check.
//! `crates/ovni/tests/fixtures/models/emu-nodes-subsystems` holds the original's outputs for
//! the first; with `OVNI_ORIGINAL_EMU` naming ovni 1.14's `ovniemu`, every trace here is also
//! checked against the original's files and messages.

use std::fs;
use std::path::Path;
use std::process::{Command, Output};

use crate::models::{emu, errors, run, stable, trace_with};
use crate::util::copy_dir;
use ovni::Mcv;

const NODES: (&str, &str) = ("nodes", "1.0.0");
const FILES: [&str; 6] = [
    "cpu.prv",
    "cpu.pcf",
    "cpu.row",
    "thread.prv",
    "thread.pcf",
    "thread.row",
];

/// A trace whose thread emits `events` at 2000, 3000, ...
pub(crate) fn nodes_trace(dir: &Path, events: &[&[u8; 3]]) {
    trace_with(dir, &[NODES], |t| {
        let mut clock = 1000;
        for e in events {
            clock += 1000;
            t.emit_at(Mcv(**e), clock, &[]).unwrap();
        }
        clock + 1000
    });
}

/// The subsystems of the fixture: nested, with the thread paused inside one.
pub(crate) const SUBSYSTEMS: [&[u8; 3]; 12] = [
    b"DC[", b"DR[", b"DR]", b"DC]", b"DS[", b"OHp", b"OHr", b"DS]", b"DT[", b"DI[", b"DI]", b"DT]",
];

/// ovniemu's run on the trace in `tmp/ovni` (checked against the original's, if given).
fn emulate(tmp: &Path, args: &[&str]) -> Output {
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
        for f in FILES {
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
fn nested_subsystems_show_while_the_thread_is_not_paused() {
    let tmp = tempfile::tempdir().unwrap();
    nodes_trace(&tmp.path().join("ovni"), &SUBSYSTEMS);
    let out = emulate(tmp.path(), &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stable(&out.stderr));
    let pcf = fs::read_to_string(tmp.path().join("ovni/thread.pcf")).unwrap();
    assert!(pcf.contains("0 30         NODES subsystem of the ACTIVE thread\n"));
    assert!(pcf.contains("\n8    Spawn Function: Spawning a function\n"));
    let cpu = fs::read_to_string(tmp.path().join("ovni/cpu.pcf")).unwrap();
    assert!(cpu.contains("0 30         NODES subsystem of the RUNNING thread\n"));
    assert_eq!(lint(tmp.path()), Some(0));
}

#[test]
fn rejected_events_get_the_originals_messages() {
    for (events, first) in [
        (
            &[b"DC[", b"DS]"][..],
            "chan_pop: nodes.thread0.subsystem: expected value {int64_t 7} different from top of stack {int64_t 6}",
        ),
        (
            &[b"DT[", b"DT["][..],
            "chan_push: nodes.thread0.subsystem: same value as last_value {int64_t 5}",
        ),
        (&[b"DP]"][..], "chan_pop: nodes.thread0.subsystem: channel stack empty"),
        (
            &[b"OHp", b"DR["][..],
            "process_ev: current thread 100 not running",
        ),
        (&[b"DRx"][..], "simple: unknown NODES subsystem event"),
        (&[b"DX["][..], "process_ev: unknown NODES event category"),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        nodes_trace(&tmp.path().join("ovni"), events);
        let out = emulate(tmp.path(), &[]);
        assert_eq!(out.status.code(), Some(1));
        let errors = errors(&out);
        assert_eq!(
            errors.get(..3).unwrap_or_default(),
            [
                first,
                "model_nodes_event: error processing NODES event",
                "model_event: event() failed for 'nodes' model",
            ],
            "{errors:?}"
        );
        assert_eq!(lint(tmp.path()), Some(1));
    }
}

#[test]
fn a_thread_ending_inside_a_subsystem_fails_in_lint_mode_only() {
    let tmp = tempfile::tempdir().unwrap();
    nodes_trace(&tmp.path().join("ovni"), &[b"DW["]);
    let out = emulate(tmp.path(), &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stable(&out.stderr));
    let out = emulate(tmp.path(), &["-l"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        errors(&out),
        [
            "end_lint: thread 100 ended with 1 stacked nodes subsystems",
            "model_nodes_finish: end_lint failed",
            "model_finish: finish failed for model 'D'",
            "emu_finish: model_finish failed",
            "main: emu_finish failed",
        ]
    );
}

/// `-a` enables every model: the same views and messages as a trace that requires them all,
/// but for the line that says so.
#[test]
fn all_models_flag_enables_every_model() {
    let all = [
        ("nanos6", "1.1.0"),
        ("nosv", "2.7.0"),
        ("nodes", "1.0.0"),
        ("tampi", "1.0.0"),
        ("mpi", "1.0.0"),
        ("kernel", "1.0.0"),
        ("openmp", "1.2.1"),
    ];
    let write = |dir: &Path, models: &[(&str, &str)]| {
        trace_with(dir, models, |t| {
            let mut clock = 1000;
            for e in SUBSYSTEMS {
                clock += 1000;
                t.emit_at(Mcv(*e), clock, &[]).unwrap();
            }
            clock + 1000
        })
    };
    let flagged = tempfile::tempdir().unwrap();
    write(&flagged.path().join("ovni"), &[NODES]);
    let out = emulate(flagged.path(), &["-a"]);
    assert_eq!(out.status.code(), Some(0), "{}", stable(&out.stderr));
    let required = tempfile::tempdir().unwrap();
    write(&required.path().join("ovni"), &all);
    let want = emu(&["ovni"], required.path());
    assert_eq!(want.status.code(), Some(0));
    assert_eq!(
        stable(&out.stderr),
        stable(&want.stderr).replace(
            "the following 8 models are enabled: ",
            "all 8 models are enabled (-a): "
        )
    );
    for f in FILES {
        let got = fs::read(flagged.path().join("ovni").join(f)).unwrap();
        let want = fs::read(required.path().join("ovni").join(f)).unwrap();
        assert!(got == want, "{f} differs");
    }
    let pcf = fs::read_to_string(flagged.path().join("ovni/thread.pcf")).unwrap();
    for ty in [10, 20, 25, 30, 35, 45, 50] {
        assert!(pcf.contains(&format!("\n0 {ty:<10} ")), "type {ty}");
    }
}

/// Every view gets a Paraver configuration: `cfg/{cpu,thread}/<model>/<name>.cfg`, one window
/// filtering its type, named after its `.pcf` label.
#[test]
fn every_view_has_a_paraver_configuration() {
    let tmp = tempfile::tempdir().unwrap();
    nodes_trace(&tmp.path().join("ovni"), &SUBSYSTEMS);
    let out = emu(&["ovni"], tmp.path());
    assert_eq!(out.status.code(), Some(0), "{}", stable(&out.stderr));
    let cfg = tmp.path().join("ovni/cfg");
    for (file, ty, title) in [
        (
            "thread/nodes/subsystem.cfg",
            30,
            "Thread: NODES subsystem of the ACTIVE thread",
        ),
        (
            "cpu/nodes/subsystem.cfg",
            30,
            "CPU: NODES subsystem of the RUNNING thread",
        ),
        ("thread/ovni/state.cfg", 4, "Thread: thread state"),
        ("cpu/ovni/tid.cfg", 2, "CPU: TID of the RUNNING thread"),
        (
            "cpu/ovni/flushing.cfg",
            7,
            "CPU: Flushing ovni buffer of the RUNNING thread",
        ),
    ] {
        let text = fs::read_to_string(cfg.join(file)).expect(file);
        assert!(text.starts_with("#ParaverCFG\n"), "{file}");
        assert!(
            text.contains(&format!("\nwindow_name {title}\n")),
            "{file}: {text}"
        );
        assert!(
            text.contains(&format!("\nwindow_filter_module evt_type 1 {ty}\n")),
            "{file}"
        );
    }
    // An existing folder is left alone, with the original's warning.
    fs::write(cfg.join("cpu/ovni/tid.cfg"), "mine").unwrap();
    let out = emu(&["ovni"], tmp.path());
    assert_eq!(out.status.code(), Some(0));
    let err = stable(&out.stderr);
    let warn = "ovniemu: WARN: directory 'ovni/cfg' already exists, skipping config copy\n";
    assert!(err.contains(warn), "{err}");
    assert_eq!(
        fs::read_to_string(cfg.join("cpu/ovni/tid.cfg")).unwrap(),
        "mine"
    );
}
