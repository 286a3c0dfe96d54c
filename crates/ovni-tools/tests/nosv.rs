//! `ovniemu` and `ovnilint` on traces of the nosv and kernel models written here: the event
//! sequences of ovni 1.14's `test/emu/nosv` tests that have no trace in the fixtures, and the
//! cases the models reject.

use std::path::Path;
use std::process::Output;

use crate::models::{emu, errors, first_errors, records, rejected, run, stable, trace_with};
use ovni::write::ThreadStream;
use ovni::Mcv;

const NOSV: (&str, &str) = ("nosv", "2.7.0");
const KERNEL: (&str, &str) = ("kernel", "1.0.0");

/// One event of a test program.
enum Ev<'a> {
    /// `VYc`: a type and its label.
    Type(u32, &'a str),
    /// A jumbo event with `i64` values.
    Jumbo(&'a [u8; 3], &'a [i64]),
    /// Any event with a payload of `u32`s.
    U32(&'a [u8; 3], &'a [u32]),
}

/// A one-thread trace requiring `models`, with `meta` set (key, JSON) and `events` at 1000,
/// 2000, ... after the thread's execute event; runs `ovniemu [args] ovni` on it.
fn emulate(
    dir: &Path,
    models: &[(&str, &str)],
    meta: &[(&str, &str)],
    args: &[&str],
    events: &[Ev<'_>],
) -> Output {
    trace_with(&dir.join("ovni"), models, |t: &mut ThreadStream| {
        for (k, v) in meta {
            t.attr_set_json(k, v).unwrap();
        }
        let mut clock = 1000;
        for e in events {
            clock += 1000;
            match e {
                Ev::Type(id, label) => {
                    let mut data = id.to_le_bytes().to_vec();
                    data.extend_from_slice(label.as_bytes());
                    data.push(0);
                    t.emit_jumbo_at(Mcv(*b"VYc"), clock, &data).unwrap();
                }
                Ev::Jumbo(mcv, values) => {
                    let data: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
                    t.emit_jumbo_at(Mcv(**mcv), clock, &data).unwrap();
                }
                Ev::U32(mcv, args) => {
                    let payload: Vec<u8> = args.iter().flat_map(|a| a.to_le_bytes()).collect();
                    t.emit_at(Mcv(**mcv), clock, &payload).unwrap();
                }
            }
        }
        clock + 1000
    });
    let mut all = args.to_vec();
    all.push("ovni");
    emu(&all, dir)
}

fn lint(dir: &Path) -> Option<i32> {
    run(env!("CARGO_BIN_EXE_ovnilint"), &["ovni"], dir)
        .status
        .code()
}

/// The `<time>:<value>` of the records of type `ty`.
fn values(dir: &Path, file: &str, ty: u32) -> Vec<String> {
    records(dir, file)
        .into_iter()
        .filter_map(|r| {
            let mut f = r.split(':');
            let (time, t, v) = (f.next()?, f.next()?, f.next()?);
            (t == ty.to_string()).then(|| format!("{time}:{v}"))
        })
        .collect()
}

/// The model rejects the events with `cause` (its lines before the common ones), and so
/// does `ovnilint`.
fn rejects(models: &[(&str, &str)], events: &[Ev<'_>], cause: &[&str], model: &str) {
    let tmp = tempfile::tempdir().unwrap();
    let out = emulate(tmp.path(), models, &[], &[], events);
    assert_eq!(out.status.code(), Some(1), "{}", stable(&out.stderr));
    let mut want: Vec<String> = cause.iter().map(|l| l.to_string()).collect();
    let failed = match model {
        "nosv" => "error processing nOS-V event",
        _ => "error processing Kernel event",
    };
    want.extend(rejected("", model, failed).into_iter().skip(1));
    assert_eq!(first_errors(&out), want);
    assert_eq!(lint(tmp.path()), Some(1));
}

const BODY_FAILED: [&str; 3] = [
    "update_task_state: cannot change task state",
    "update_task: update_task_state failed",
    "pre_task: cannot update task state",
];

/// ovni's `parallel-tasks` and `nest-to-parallel`: the bodies of a parallel task run one
/// after another, and never again.
#[test]
fn parallel_bodies_run_once_each() {
    let tmp = tempfile::tempdir().unwrap();
    let events = [
        Ev::Type(1, "par"),
        Ev::U32(b"VTC", &[1, 1]),
        Ev::U32(b"VTx", &[1, 1]),
        Ev::U32(b"VTe", &[1, 1]),
        Ev::U32(b"VTx", &[1, 2]),
        Ev::U32(b"VTe", &[1, 2]),
    ];
    let out = emulate(tmp.path(), &[NOSV], &[], &["-l"], &events);
    assert_eq!(out.status.code(), Some(0), "{}", stable(&out.stderr));
    assert_eq!(
        values(tmp.path(), "thread.prv", 15),
        ["0:0", "3000:1", "4000:0", "5000:2", "6000:0"]
    );
    assert_eq!(lint(tmp.path()), Some(0));
    let mut again: Vec<&str> = vec![
        "body_execute: body(id=1,taskid=1) is not allowed to run again",
        "task_execute: body_execute failed for task 1",
    ];
    again.extend(BODY_FAILED);
    rejects(
        &[NOSV],
        &[
            Ev::Type(1, "par"),
            Ev::U32(b"VTC", &[1, 1]),
            Ev::U32(b"VTx", &[1, 1]),
            Ev::U32(b"VTe", &[1, 1]),
            Ev::U32(b"VTx", &[1, 1]),
        ],
        &again,
        "nosv",
    );
}

/// ovni's `bad-nest-same-task`: a paused task is resumed, not run again.
#[test]
fn a_paused_task_cannot_run_again() {
    let mut cause: Vec<&str> = vec![
        "body_execute: refusing to run body(id=1,taskid=1) in Paused state, needs to resume intead",
        "task_execute: body_execute failed for task 1",
    ];
    cause.extend(BODY_FAILED);
    rejects(
        &[NOSV],
        &[
            Ev::Type(1, "t"),
            Ev::U32(b"VTc", &[1, 1]),
            Ev::U32(b"VTx", &[1, 0]),
            Ev::U32(b"VTp", &[1, 0]),
            Ev::U32(b"VTx", &[1, 0]),
        ],
        &cause,
        "nosv",
    );
}

/// ovni's `pause` and `task-pause-from-submit`: a paused task leaves the task rows and keeps
/// its "in body" subsystem; resumed, it is back.
#[test]
fn a_paused_task_leaves_the_task_rows() {
    let tmp = tempfile::tempdir().unwrap();
    let events = [
        Ev::Type(1, "t"),
        Ev::U32(b"VTc", &[7, 1]),
        Ev::U32(b"VTx", &[7, 0]),
        Ev::U32(b"VAs", &[]),
        Ev::U32(b"VTp", &[7, 0]),
        Ev::U32(b"VAS", &[]),
        Ev::U32(b"VTr", &[7, 0]),
        Ev::U32(b"VTe", &[7, 0]),
    ];
    let out = emulate(tmp.path(), &[NOSV], &[], &["-l"], &events);
    assert_eq!(out.status.code(), Some(0), "{}", stable(&out.stderr));
    assert_eq!(
        values(tmp.path(), "thread.prv", 10),
        ["0:0", "3000:7", "5000:0", "7000:7", "8000:0"]
    );
    assert_eq!(
        values(tmp.path(), "thread.prv", 13),
        ["0:0", "3000:11", "4000:14", "6000:11", "8000:0"]
    );
    // The application id (1) while a body runs.
    assert_eq!(
        values(tmp.path(), "cpu.prv", 12),
        ["0:0", "3000:1", "5000:0", "7000:1", "8000:0"]
    );
}

/// The idle state starts as progressing and refuses the state it has; the CPU row shows the
/// running thread's, and resting when none runs.
#[test]
fn the_idle_state_refuses_the_state_it_has() {
    let tmp = tempfile::tempdir().unwrap();
    let out = emulate(tmp.path(), &[NOSV], &[], &[], &[Ev::U32(b"VPr", &[])]);
    assert_eq!(out.status.code(), Some(0), "{}", stable(&out.stderr));
    assert_eq!(
        values(tmp.path(), "cpu.prv", 16),
        ["0:100", "1000:101", "2000:101"]
    );
    assert_eq!(
        values(tmp.path(), "thread.prv", 16),
        ["0:100", "1000:101", "2000:0"]
    );
    rejects(
        &[NOSV],
        &[Ev::U32(b"VPp", &[])],
        &["chan_set: nosv.thread0.idle: same value as last_value {int64_t 100}"],
        "nosv",
    );
}

#[test]
fn hardware_counters_come_from_the_metadata() {
    let tmp = tempfile::tempdir().unwrap();
    let hwc = r#"{"0": {"name": "CYCLES"}, "1": {"name": "INSTR"}}"#;
    let events = [Ev::Jumbo(b"VWC", &[10, 0]), Ev::Jumbo(b"VWC", &[10, 30])];
    let out = emulate(tmp.path(), &[NOSV], &[("nosv.hwc", hwc)], &[], &events);
    assert_eq!(out.status.code(), Some(0), "{}", stable(&out.stderr));
    // A repeated value is written again; 0 is a value.
    assert_eq!(
        values(tmp.path(), "thread.prv", 200),
        ["0:0", "1000:10", "2000:10", "3000:0"]
    );
    assert_eq!(
        values(tmp.path(), "thread.prv", 201),
        ["0:0", "1000:0", "2000:30", "3000:0"]
    );
    let pcf = std::fs::read_to_string(tmp.path().join("ovni/cpu.pcf")).unwrap();
    assert!(
        pcf.ends_with(
            "EVENT_TYPE\n0 200        CYCLES\nVALUES\n\n\nEVENT_TYPE\n0 201        INSTR\nVALUES\n"
        ),
        "{pcf}"
    );
    assert_eq!(lint(tmp.path()), Some(0));

    // Two values for three counters.
    let tmp = tempfile::tempdir().unwrap();
    let three = r#"{"0": {"name": "A"}, "1": {"name": "B"}, "2": {"name": "C"}}"#;
    let out = emulate(
        tmp.path(),
        &[NOSV],
        &[("nosv.hwc", three)],
        &[],
        &events[..1],
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        first_errors(&out).first().map(String::as_str),
        Some("event_hwc_count: unexpected hwc event with jumbo payload size 16 (expecting 24)")
    );
    assert_eq!(lint(tmp.path()), Some(1));

    // Counter events without counters.
    rejects(
        &[NOSV],
        &[Ev::Jumbo(b"VWC", &[1])],
        &["hwc_event: got hwc event VWC but no counters enabled"],
        "nosv",
    );
}

#[test]
fn counter_indices_must_number_the_counters() {
    let tmp = tempfile::tempdir().unwrap();
    let hwc = r#"{"0": {"name": "A"}, "5": {"name": "B"}}"#;
    let out = emulate(tmp.path(), &[NOSV], &[("nosv.hwc", hwc)], &[], &[]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        errors(&out),
        [
            "parse_hwc: hwc index 5 exceeds allocated counters 2",
            "scan_thread: cannot parse HWC",
            "hwc_create: scan_thread failed",
            "model_nosv_create: hwc_create failed",
            "model_create: create failed for model 'V'",
            "emu_init: model_create failed",
            "main: emu_init failed",
        ]
    );
    assert_eq!(lint(tmp.path()), Some(1));
}

/// ovni's `events-from-outside-cpu` and the kernel model: while a context switch has the
/// thread out of its CPU, its nOS-V and ovni events are rejected; its own row shows it in any
/// state.
#[test]
fn a_thread_out_of_its_cpu_emits_no_ovni_or_nosv_events() {
    let tmp = tempfile::tempdir().unwrap();
    let events = [Ev::U32(b"KCO", &[]), Ev::U32(b"KCI", &[])];
    let out = emulate(tmp.path(), &[NOSV, KERNEL], &[], &["-l"], &events);
    assert_eq!(out.status.code(), Some(0), "{}", stable(&out.stderr));
    assert_eq!(values(tmp.path(), "thread.prv", 45), ["1000:3", "2000:0"]);
    assert_eq!(
        values(tmp.path(), "cpu.prv", 45),
        ["0:0", "1000:3", "2000:0"]
    );
    rejects(
        &[NOSV, KERNEL],
        &[Ev::U32(b"KCO", &[]), Ev::U32(b"VHw", &[])],
        &["process_ev: current thread 100 out of CPU"],
        "nosv",
    );
    rejects(
        &[NOSV, KERNEL],
        &[Ev::U32(b"KCO", &[]), Ev::U32(b"KCO", &[])],
        &["chan_push: kernel.thread0.context_switch: same value as last_value {int64_t 3}"],
        "kernel",
    );
    let tmp = tempfile::tempdir().unwrap();
    let events = [Ev::U32(b"KCO", &[]), Ev::U32(b"OHp", &[])];
    let out = emulate(tmp.path(), &[KERNEL], &[], &[], &events);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        first_errors(&out),
        [
            "model_ovni_event: current thread 100 out of CPU",
            "model_event: event() failed for 'ovni' model",
            "emu_step: model_event failed",
        ]
    );
    assert_eq!(lint(tmp.path()), Some(1));
}

/// ovni's `require-missing`: nOS-V events need the model required.
#[test]
fn nosv_events_need_the_model_required() {
    let tmp = tempfile::tempdir().unwrap();
    let out = emulate(tmp.path(), &[], &[], &[], &[Ev::U32(b"VHw", &[])]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        errors(&out).first().map(String::as_str),
        Some("model_event: model nosv not enabled for event VHw")
    );
}

/// After a rejected event, in linter mode, the nosv model still checks its stacks (the other
/// models only check a trace played to its end).
#[test]
fn after_a_rejected_event_lint_mode_still_checks_the_nosv_stacks() {
    let tmp = tempfile::tempdir().unwrap();
    let events = [Ev::U32(b"VHw", &[]), Ev::U32(b"VTx", &[9, 0])];
    let out = emulate(tmp.path(), &[NOSV], &[], &["-l"], &events);
    assert_eq!(out.status.code(), Some(1));
    let err = errors(&out);
    let tail: Vec<&str> = err.iter().rev().take(5).rev().map(String::as_str).collect();
    assert_eq!(
        tail,
        [
            "end_lint: thread 100 ended with 1 stacked nosv subsystems",
            "model_nosv_finish: end_lint failed",
            "model_finish: finish failed for model 'V'",
            "emu_finish: model_finish failed",
            "main: emu_finish failed",
        ]
    );
    // Not in default mode.
    let out = emu(&["ovni"], tmp.path());
    assert_eq!(
        errors(&out).last().map(String::as_str),
        Some("main: emu_step failed")
    );
}
