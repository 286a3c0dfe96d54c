//! `ovniemu` and `ovnilint` on traces of the openmp model written here: the event sequences
//! of ovni 1.14's `test/emu/openmp` tests (its `nested-task` trace is checked against the
//! original's outputs in `models.rs`) and the cases its rules reject.

use std::fs;
use std::path::Path;
use std::process::Output;

use crate::models::{emu, errors, first_errors, records, rejected, stable, trace_with};
use ovni::write::ThreadStream;
use ovni::Mcv;

const OPENMP: (&str, &str) = ("openmp", "1.2.1");

/// One event of a test program.
enum Ev<'a> {
    /// `POc`: a type and its label.
    Type(u32, &'a str),
    /// Any event with a payload of `u32`s.
    U32(&'a [u8; 3], &'a [u32]),
}

/// A one-thread openmp trace with `events` at 1000, 2000, ... after the thread's execute
/// event; runs `ovniemu [args] ovni` on it.
fn emulate(dir: &Path, args: &[&str], events: &[Ev<'_>]) -> Output {
    trace_with(&dir.join("ovni"), &[OPENMP], |t: &mut ThreadStream| {
        let mut clock = 1000;
        for e in events {
            clock += 1000;
            match e {
                Ev::Type(id, label) => {
                    let mut data = id.to_le_bytes().to_vec();
                    data.extend_from_slice(label.as_bytes());
                    data.push(0);
                    t.emit_jumbo_at(Mcv(*b"POc"), clock, &data).unwrap();
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
    crate::models::run(env!("CARGO_BIN_EXE_ovnilint"), &["ovni"], dir)
        .status
        .code()
}

/// The value labels of record type `ty` in a `.pcf` file.
fn pcf_values(dir: &Path, file: &str, ty: u32) -> Vec<String> {
    let pcf = fs::read_to_string(dir.join("ovni").join(file)).unwrap();
    let head = format!("EVENT_TYPE\n0 {ty:<10} ");
    let Some(at) = pcf.find(&head) else {
        return Vec::new();
    };
    pcf[at..]
        .lines()
        .skip(3)
        .take_while(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

/// ovni's `nested-ws`: worksharings nested ten deep, each pushing its type's label.
#[test]
fn nested_worksharings_push_their_labels() {
    let tmp = tempfile::tempdir().unwrap();
    let mut events: Vec<Ev<'_>> = Vec::new();
    let labels: Vec<String> = (1..=10).map(|i| format!("ws.{i}")).collect();
    for (i, l) in labels.iter().enumerate() {
        events.push(Ev::Type(i as u32 + 1, l));
    }
    let ids: Vec<[u32; 1]> = (1..=10).map(|i| [i]).collect();
    for id in &ids {
        events.push(Ev::U32(b"PQx", id));
    }
    for id in ids.iter().rev() {
        events.push(Ev::U32(b"PQe", id));
    }
    let out = emulate(tmp.path(), &["-l"], &events);
    assert_eq!(out.status.code(), Some(0), "{}", stable(&out.stderr));
    let values = pcf_values(tmp.path(), "thread.pcf", 51);
    assert_eq!(values.len(), 10);
    for (v, l) in values.iter().zip(&labels) {
        assert!(v.ends_with(&format!(" {l}")), "{v}");
    }
    // Every label value once on the way in, and again on the way out (the one below).
    let value = |v: &String| v.split_whitespace().next().unwrap().to_string();
    let got: Vec<String> = records(tmp.path(), "thread.prv")
        .into_iter()
        .filter(|r| r.split(':').nth(1) == Some("51"))
        .map(|r| r.rsplit(':').next().unwrap().to_string())
        .collect();
    let mut want = vec!["0".to_string()];
    want.extend(values.iter().map(value));
    want.extend(values.iter().rev().skip(1).map(value));
    want.push("0".to_string());
    assert_eq!(got, want);
    // The CPU view has the same labels.
    assert_eq!(pcf_values(tmp.path(), "cpu.pcf", 51), values);
    assert_eq!(lint(tmp.path()), Some(0));
}

/// ovni's `mix-task-ws`: worksharings inside a task, and a second task of the same type.
#[test]
fn worksharings_inside_tasks_and_tasks_again() {
    let tmp = tempfile::tempdir().unwrap();
    let mut events = vec![
        Ev::Type(1, "main task.1"),
        Ev::Type(2, "outer for.2"),
        Ev::Type(3, "inner for.3"),
        Ev::U32(b"PPc", &[1, 1]),
        Ev::U32(b"PPx", &[1]),
    ];
    for _ in 0..3 {
        events.extend([
            Ev::U32(b"PQx", &[2]),
            Ev::U32(b"PQx", &[3]),
            Ev::U32(b"PQe", &[3]),
            Ev::U32(b"PQe", &[2]),
        ]);
    }
    events.extend([
        Ev::U32(b"PPe", &[1]),
        Ev::U32(b"PPc", &[2, 1]),
        Ev::U32(b"PPx", &[2]),
        Ev::U32(b"PPe", &[2]),
        // A task may run again once it ended.
        Ev::U32(b"PPx", &[2]),
        Ev::U32(b"PPe", &[2]),
    ]);
    let out = emulate(tmp.path(), &["-l"], &events);
    assert_eq!(out.status.code(), Some(0), "{}", stable(&out.stderr));
    let ids: Vec<String> = records(tmp.path(), "thread.prv")
        .into_iter()
        .filter(|r| r.split(':').nth(1) == Some("52"))
        .map(|r| r.rsplit(':').next().unwrap().to_string())
        .collect();
    assert_eq!(ids, ["0", "1", "0", "2", "0", "2", "0"]);
    assert_eq!(pcf_values(tmp.path(), "thread.pcf", 51).len(), 3);
    assert_eq!(lint(tmp.path()), Some(0));
}

#[test]
fn subsystems_push_and_pop_and_spin_waits_change_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let events = [
        Ev::U32(b"PH[", &[]),
        Ev::U32(b"PBs", &[]),
        Ev::U32(b"PBb", &[]),
        Ev::U32(b"PBS", &[]),
        Ev::U32(b"PBB", &[]),
        Ev::U32(b"PH]", &[]),
    ];
    let out = emulate(tmp.path(), &["-l"], &events);
    assert_eq!(out.status.code(), Some(0), "{}", stable(&out.stderr));
    let subsystems: Vec<String> = records(tmp.path(), "cpu.prv")
        .into_iter()
        .filter(|r| r.split(':').nth(1) == Some("50"))
        .collect();
    assert_eq!(
        subsystems,
        [
            "0:50:0",
            "1000:50:31",
            "3000:50:3",
            "5000:50:31",
            "6000:50:0"
        ]
    );
    let values = pcf_values(tmp.path(), "cpu.pcf", 50);
    assert_eq!(
        values.first().map(String::as_str),
        Some("9    Work-distribution: Distribute")
    );
    assert_eq!(values.len(), 31);
}

#[test]
fn a_thread_ending_inside_a_subsystem_fails_in_lint_mode() {
    let tmp = tempfile::tempdir().unwrap();
    let out = emulate(tmp.path(), &[], &[Ev::U32(b"PCi", &[])]);
    assert_eq!(out.status.code(), Some(0), "{}", stable(&out.stderr));
    let out = emu(&["-l", "ovni"], tmp.path());
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        errors(&out),
        [
            "end_lint: thread 100 ended with 1 stacked openmp functions",
            "model_openmp_finish: end_lint failed",
            "model_finish: finish failed for model 'P'",
            "emu_finish: model_finish failed",
            "main: emu_finish failed",
        ]
    );
}

fn rejects(events: &[Ev<'_>], cause: &[&str]) {
    let tmp = tempfile::tempdir().unwrap();
    let out = emulate(tmp.path(), &[], events);
    assert_eq!(out.status.code(), Some(1));
    let mut want: Vec<String> = cause.iter().map(|l| l.to_string()).collect();
    let tail = rejected("", "openmp", "error processing openmp event");
    want.extend(tail.into_iter().skip(1));
    assert_eq!(first_errors(&out), want);
    assert_eq!(lint(tmp.path()), Some(1));
}

#[test]
fn a_running_task_cannot_run_again() {
    rejects(
        &[
            Ev::Type(1, "t"),
            Ev::U32(b"PPc", &[7, 1]),
            Ev::U32(b"PPx", &[7]),
            Ev::U32(b"PPx", &[7]),
        ],
        &[
            "body_execute: body(id=1,taskid=7) state must be Created but is Running",
            "task_execute: body_execute failed for task 7",
            "update_task: cannot change task state to running",
            "pre_task: cannot update task state",
        ],
    );
}

#[test]
fn only_the_innermost_task_can_end() {
    let tmp = tempfile::tempdir().unwrap();
    let events = [
        Ev::Type(1, "t"),
        Ev::U32(b"PPc", &[1, 1]),
        Ev::U32(b"PPc", &[2, 1]),
        Ev::U32(b"PPx", &[1]),
        Ev::U32(b"PPx", &[2]),
        Ev::U32(b"PPe", &[1]),
    ];
    let out = emulate(tmp.path(), &[], &events);
    assert_eq!(out.status.code(), Some(1));
    let err = stable(&out.stderr);
    assert!(
        err.contains("WARN: deprecated nesting body(id=1,taskid=2) over already running body(id=1,taskid=1)\n"),
        "{err}"
    );
    assert_eq!(
        first_errors(&out).first().map(String::as_str),
        Some("body_end: body(id=1,taskid=1) is not on top of the stack")
    );
}

#[test]
fn tasks_need_their_type_and_end_after_running() {
    rejects(
        &[Ev::U32(b"PPc", &[1, 4])],
        &[
            "task_create: unknown type id 4",
            "create_task: task_create failed",
            "pre_task: cannot update task state",
        ],
    );
    rejects(
        &[
            Ev::Type(1, "t"),
            Ev::U32(b"PPc", &[1, 1]),
            Ev::U32(b"PPe", &[1]),
        ],
        &[
            "task_end: cannot find body with id 1 in task 1",
            "update_task: cannot change task state to end",
            "pre_task: cannot update task state",
        ],
    );
    rejects(
        &[Ev::U32(b"PPx", &[3])],
        &[
            "update_task: cannot find task with id 3",
            "pre_task: cannot update task state",
        ],
    );
}

#[test]
fn types_are_created_once_and_worksharings_need_one() {
    rejects(
        &[Ev::Type(1, "a"), Ev::Type(1, "b")],
        &[
            "task_type_create: a task type with id 1 already exists",
            "pre_type: task_type_create failed",
        ],
    );
    rejects(
        &[Ev::U32(b"PQx", &[9])],
        &[
            "update_ws_state: cannot find ws with type 9",
            "pre_worksharing: cannot update worksharing channels",
        ],
    );
    // Leaving a worksharing that is not the innermost: the label values are those of the
    // `.pcf` file.
    let tmp = tempfile::tempdir().unwrap();
    let events = [
        Ev::Type(1, "a"),
        Ev::Type(2, "b"),
        Ev::U32(b"PQx", &[1]),
        Ev::U32(b"PQe", &[2]),
    ];
    let out = emulate(tmp.path(), &[], &events);
    assert_eq!(out.status.code(), Some(1));
    let values: Vec<String> = pcf_values(tmp.path(), "thread.pcf", 51)
        .iter()
        .map(|v| v.split_whitespace().next().unwrap().to_string())
        .collect();
    let [a, b] = values.as_slice() else {
        panic!("{values:?}")
    };
    assert_eq!(
        first_errors(&out).first().cloned(),
        Some(format!(
            "chan_pop: openmp.thread0.label: expected value {{int64_t {b}}} different from top of stack {{int64_t {a}}}"
        ))
    );
}

#[test]
fn events_of_a_thread_that_is_not_running_are_rejected() {
    rejects(
        &[Ev::U32(b"OHp", &[]), Ev::U32(b"PBb", &[])],
        &["process_ev: current thread 100 not running"],
    );
    rejects(
        &[Ev::U32(b"PBB", &[])],
        &["chan_pop: openmp.thread0.subsystem: channel stack empty"],
    );
}

/// Two type labels whose values collide (found by search): ovniemu fails when it lists them
/// at the end, keeping the first in the thread view and none in the CPU view.
#[test]
fn type_labels_with_the_same_value_fail_at_the_end() {
    let tmp = tempfile::tempdir().unwrap();
    let events = [Ev::Type(1, "t33675"), Ev::Type(2, "t61351")];
    let out = emulate(tmp.path(), &[], &events);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        errors(&out),
        [
            "task_create_pcf_types: collision occurred in task type labels: t33675 and t61351",
            "pcf_add_value: PCF value 2031890338 already in type 51",
            "task_create_pcf_types: pcf_add_value failed",
            "create_pcf_type: task_create_pcf_types failed",
            "finish_pvt: create_pcf_type failed",
            "model_openmp_finish: finish_pvt thread failed",
            "model_finish: finish failed for model 'P'",
            "emu_finish: model_finish failed",
            "main: emu_finish failed",
        ]
    );
    assert_eq!(
        pcf_values(tmp.path(), "thread.pcf", 51),
        ["2031890338 t33675"]
    );
    assert!(pcf_values(tmp.path(), "cpu.pcf", 51).is_empty());
    assert_eq!(lint(tmp.path()), Some(1));
}
