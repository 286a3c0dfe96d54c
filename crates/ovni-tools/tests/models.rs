//! `ovniemu` and `ovnilint` on traces of the models other than ovni: the traces
//! of ovni 1.14's own emulator tests against the original's outputs (files, exit statuses,
//! stderr), and traces written here with the event sequences of the other tests of
//! `test/emu/{mpi,tampi}` and of the cases those leave out.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::util::copy_dir;
use ovni::write::{Process, ThreadStream};
use ovni::Mcv;

pub(crate) const FILES: [&str; 6] = [
    "cpu.prv",
    "cpu.pcf",
    "cpu.row",
    "thread.prv",
    "thread.pcf",
    "thread.row",
];

fn cases() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../ovni/tests/fixtures/models");
    let mut v: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("golden").is_dir())
        .collect();
    v.sort();
    assert_eq!(v.len(), 26, "fixture set changed");
    v
}

pub(crate) fn run(bin: &str, args: &[&str], cwd: &Path) -> Output {
    Command::new(bin)
        .args(args)
        .current_dir(cwd)
        .output()
        .unwrap()
}

pub(crate) fn emu(args: &[&str], cwd: &Path) -> Output {
    run(env!("CARGO_BIN_EXE_ovniemu"), args, cwd)
}

/// stderr without the lines whose text depends on timing (progress and event rate).
pub(crate) fn stable(stderr: &[u8]) -> String {
    String::from_utf8_lossy(stderr)
        .lines()
        .filter(|l| !l.contains("% done at avg") && !l.contains(" input events in "))
        .map(|l| format!("{l}\n"))
        .collect()
}

fn status(case: &Path, file: &str) -> i32 {
    fs::read_to_string(case.join(file))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

#[test]
fn ovniemu_matches_the_originals_outputs() {
    let mut failures = Vec::new();
    for case in cases() {
        let name = case.file_name().unwrap().to_string_lossy().into_owned();
        let tmp = tempfile::tempdir().unwrap();
        copy_dir(&case.join("ovni"), &tmp.path().join("ovni"));
        let out = emu(&["ovni"], tmp.path());
        let want = status(&case, "exit-status");
        if out.status.code() != Some(want) {
            failures.push(format!("{name}: exit {:?}, want {want}", out.status.code()));
        }
        let want_err = stable(&fs::read(case.join("stderr")).unwrap());
        let got_err = stable(&out.stderr);
        if got_err != want_err {
            failures.push(format!(
                "{name}: stderr differs:\n--- got\n{got_err}--- want\n{want_err}"
            ));
        }
        for f in FILES {
            let got = fs::read(tmp.path().join("ovni").join(f)).ok();
            let want = fs::read(case.join("golden").join(f)).ok();
            if got != want {
                failures.push(format!("{name}: {f} differs"));
            }
        }
        let want = status(&case, "exit-status-l");
        // The original's -l run was on a fresh copy (no `cfg/` yet).
        let _ = fs::remove_dir_all(tmp.path().join("ovni/cfg"));
        let out = emu(&["-l", "ovni"], tmp.path());
        if out.status.code() != Some(want) {
            failures.push(format!(
                "{name}: -l: exit {:?}, want {want}",
                out.status.code()
            ));
        }
        let want_err = stable(&fs::read(case.join("stderr-l")).unwrap());
        let got_err = stable(&out.stderr);
        if got_err != want_err {
            failures.push(format!(
                "{name}: -l: stderr differs:\n--- got\n{got_err}--- want\n{want_err}"
            ));
        }
        // ovnilint accepts what ovniemu accepts, in default mode and with -l.
        for (args, file) in [
            (&["ovni"][..], "exit-status"),
            (&["-l", "ovni"], "exit-status-l"),
        ] {
            let lint = run(env!("CARGO_BIN_EXE_ovnilint"), args, tmp.path());
            let want = status(&case, file);
            if lint.status.code() != Some(want) {
                failures.push(format!(
                    "{name}: ovnilint {args:?}: exit {:?}, want {want}",
                    lint.status.code()
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// `-b` on every nanos6, nosv and openmp fixture: the original's exit status, messages
/// (`stderr-b`), six files and breakdown views (`golden-b/`, absent when the original wrote
/// none, as for a nosv trace whose threads do not all allow it).
#[test]
fn breakdown_matches_the_originals_outputs() {
    let cases: Vec<PathBuf> = cases()
        .into_iter()
        .filter(|c| c.join("stderr-b").is_file())
        .collect();
    assert_eq!(cases.len(), 21, "fixture set changed");
    let mut failures = Vec::new();
    for case in cases {
        let name = case.file_name().unwrap().to_string_lossy().into_owned();
        let tmp = tempfile::tempdir().unwrap();
        copy_dir(&case.join("ovni"), &tmp.path().join("ovni"));
        let out = emu(&["-b", "ovni"], tmp.path());
        let want = status(&case, "exit-status");
        if out.status.code() != Some(want) {
            failures.push(format!("{name}: exit {:?}, want {want}", out.status.code()));
        }
        let want_err = stable(&fs::read(case.join("stderr-b")).unwrap());
        let got_err = stable(&out.stderr);
        if got_err != want_err {
            failures.push(format!(
                "{name}: stderr differs:\n--- got\n{got_err}--- want\n{want_err}"
            ));
        }
        let mut files: Vec<(PathBuf, String)> = FILES
            .iter()
            .map(|f| (case.join("golden").join(f), f.to_string()))
            .collect();
        let golden_b = case.join("golden-b");
        for model in ["nanos6", "nosv", "openmp"] {
            for ext in ["prv", "pcf", "row"] {
                let f = format!("{model}-breakdown.{ext}");
                files.push((golden_b.join(&f), f));
            }
        }
        for (want, f) in files {
            if fs::read(tmp.path().join("ovni").join(&f)).ok() != fs::read(want).ok() {
                failures.push(format!("{name}: {f} differs"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A one-thread trace (tid 100, CPU 0) requiring `models`; `events` are emitted at
/// 1000, 2000, ... between the thread's execute and end events.
pub(crate) fn trace(dir: &Path, models: &[(&str, &str)], events: &[&[u8; 3]]) {
    trace_with(dir, models, |t| {
        for (i, e) in events.iter().enumerate() {
            t.emit_at(Mcv(**e), 1000 * (i as u64 + 2), &[]).unwrap();
        }
        1000 * (events.len() as u64 + 2)
    });
}

/// As [`trace`], with `body` emitting the events and returning the clock of the end event.
pub(crate) fn trace_with(
    dir: &Path,
    models: &[(&str, &str)],
    body: impl FnOnce(&mut ThreadStream) -> u64,
) {
    let p = Process::init(dir, 1, "node0", 100).unwrap();
    let mut t = p.thread_init(100).unwrap();
    t.add_cpu(0, 0).unwrap();
    for (m, v) in models {
        t.require(m, v).unwrap();
    }
    let mut cpu = Vec::new();
    cpu.extend_from_slice(&0i32.to_le_bytes());
    cpu.extend_from_slice(&(-1i32).to_le_bytes());
    cpu.extend_from_slice(&0u64.to_le_bytes());
    t.emit_at(Mcv(*b"OHx"), 1000, &cpu).unwrap();
    let end = body(&mut t);
    t.emit_at(Mcv(*b"OHe"), end, &[]).unwrap();
    t.finish().unwrap();
}

const MPI: (&str, &str) = ("mpi", "1.0.0");
const TAMPI: (&str, &str) = ("tampi", "1.0.0");

/// The error lines of stderr.
pub(crate) fn errors(out: &Output) -> Vec<String> {
    stable(&out.stderr)
        .lines()
        .filter_map(|l| l.strip_prefix("ovniemu: ERROR: "))
        .map(str::to_string)
        .collect()
}

/// ovni's `func-mismatch` and `ss-mismatch`: a thread that ends inside a function or
/// subsystem fails in linter mode only.
#[test]
fn a_thread_ending_inside_a_stack_fails_in_lint_mode() {
    for (model, enter, what, id) in [
        (MPI, b"MUt", "stacked mpi functions", 'M'),
        (TAMPI, b"TLi", "stacked tampi subsystems", 'T'),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        trace(&tmp.path().join("ovni"), &[model], &[enter]);
        let out = emu(&["ovni"], tmp.path());
        assert_eq!(out.status.code(), Some(0), "{}", stable(&out.stderr));
        let lint = run(env!("CARGO_BIN_EXE_ovnilint"), &["ovni"], tmp.path());
        assert_eq!(lint.status.code(), Some(0));
        let lint = run(env!("CARGO_BIN_EXE_ovnilint"), &["-l", "ovni"], tmp.path());
        assert_eq!(lint.status.code(), Some(1));
        assert_eq!(
            String::from_utf8_lossy(&lint.stdout),
            format!("thread 100 ended with 1 {what} [stack-left-pushed]\n")
        );
        let out = emu(&["-l", "ovni"], tmp.path());
        assert_eq!(out.status.code(), Some(1));
        assert_eq!(
            errors(&out),
            [
                format!("end_lint: thread 100 ended with 1 {what}"),
                format!("model_{}_finish: end_lint failed", model.0),
                format!("model_finish: finish failed for model '{id}'"),
                "emu_finish: model_finish failed".to_string(),
                "main: emu_finish failed".to_string(),
            ]
        );
        for f in FILES {
            assert!(tmp.path().join("ovni").join(f).is_file(), "{f}");
        }
    }
}

/// The lines of a rejected event of `model` up to the emulator's panic block.
pub(crate) fn rejected(cause: &str, model: &str, failed: &str) -> Vec<String> {
    vec![
        cause.to_string(),
        format!("model_{model}_event: {failed}"),
        format!("model_event: event() failed for '{model}' model"),
        "emu_step: model_event failed".to_string(),
    ]
}

/// The error lines up to the emulator's panic block.
pub(crate) fn first_errors(out: &Output) -> Vec<String> {
    errors(out)
        .into_iter()
        .take_while(|l| !l.starts_with("panic: "))
        .collect()
}

#[test]
fn a_pop_must_name_the_function_on_top() {
    let tmp = tempfile::tempdir().unwrap();
    trace(&tmp.path().join("ovni"), &[MPI], &[b"MUi", b"MUF"]);
    let out = emu(&["ovni"], tmp.path());
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        first_errors(&out),
        rejected(
            "chan_pop: mpi.thread0.function: expected value {int64_t 3} different from top of stack {int64_t 1}",
            "mpi",
            "error processing mpi event"
        )
    );
    let lint = run(env!("CARGO_BIN_EXE_ovnilint"), &["ovni"], tmp.path());
    assert_eq!(lint.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&lint.stdout).contains("MUF"));
}

#[test]
fn a_pop_from_an_empty_stack_is_rejected() {
    let tmp = tempfile::tempdir().unwrap();
    trace(&tmp.path().join("ovni"), &[TAMPI], &[b"TLI"]);
    let out = emu(&["ovni"], tmp.path());
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        first_errors(&out),
        rejected(
            "chan_pop: tampi.thread0.subsystem: channel stack empty",
            "tampi",
            "error processing TAMPI event"
        )
    );
}

#[test]
fn events_of_a_thread_that_is_not_running_are_rejected() {
    for (model, ev, failed) in [
        (MPI, b"MUi", "error processing mpi event"),
        (TAMPI, b"TLi", "error processing TAMPI event"),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        trace(&tmp.path().join("ovni"), &[model], &[b"OHp", ev]);
        let out = emu(&["ovni"], tmp.path());
        assert_eq!(out.status.code(), Some(1));
        assert_eq!(
            first_errors(&out),
            rejected(
                "process_ev: current thread 100 not running",
                model.0,
                failed
            )
        );
        let lint = run(env!("CARGO_BIN_EXE_ovnilint"), &["ovni"], tmp.path());
        assert_eq!(lint.status.code(), Some(1));
    }
}

#[test]
fn an_unsupported_model_version_stops_the_emulation_before_it_starts() {
    let tmp = tempfile::tempdir().unwrap();
    trace(
        &tmp.path().join("ovni"),
        &[("mpi", "1.1.0")],
        &[b"MUi", b"MUI"],
    );
    let out = emu(&["ovni"], tmp.path());
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        errors(&out),
        [
            "should_enable: unsupported mpi model version (want 1.1.0, have 1.0.0) in thread.100",
            "model_version_probe: cannot determine if model mpi must be enabled",
            "model_probe: probe failed for model 'M'",
            "emu_init: model_probe failed",
            "main: emu_init failed",
        ]
    );
}

#[test]
fn model_events_need_their_model_required() {
    let tmp = tempfile::tempdir().unwrap();
    trace(&tmp.path().join("ovni"), &[TAMPI], &[b"MUi", b"MUI"]);
    let out = emu(&["ovni"], tmp.path());
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        errors(&out).first().map(String::as_str),
        Some("model_event: model mpi not enabled for event MUi")
    );
}

/// Records of a `.prv` file after its header, without the fields every record shares
/// (`<time>:<type>:<value>`, the time from the first event).
pub(crate) fn records(dir: &Path, file: &str) -> Vec<String> {
    fs::read_to_string(dir.join("ovni").join(file))
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| l.trim_start_matches("2:0:1:1:1:").to_string())
        .collect()
}

/// mpi's view follows the RUNNING thread, tampi's the ACTIVE one (running, cooling or
/// warming) in the thread view and the running one in the CPU view; in a timestamp the mpi
/// model's records come before the ovni model's (its flushes and marks) and tampi's after,
/// as ovniemu connects the models by model character.
#[test]
fn views_follow_the_running_or_active_thread_in_model_order() {
    let tmp = tempfile::tempdir().unwrap();
    let mark = |op: &[u8; 3], t: &mut ThreadStream, clock| {
        let payload = [&7i64.to_le_bytes()[..], &5i32.to_le_bytes()[..]].concat();
        t.emit_at(Mcv(*op), clock, &payload).unwrap();
    };
    trace_with(&tmp.path().join("ovni"), &[MPI, TAMPI], |t| {
        t.mark_type(5, 1, "Stack").unwrap();
        t.emit_at(Mcv(*b"MUi"), 2000, &[]).unwrap();
        t.emit_at(Mcv(*b"TLi"), 3000, &[]).unwrap();
        mark(b"OM[", t, 3500);
        for (i, ev) in [b"OHc", b"OHp", b"OHw", b"OHr", b"TLI", b"MUI"]
            .iter()
            .enumerate()
        {
            t.emit_at(Mcv(**ev), 4000 + 1000 * i as u64, &[]).unwrap();
        }
        mark(b"OM]", t, 9500);
        10_000
    });
    let out = emu(&["-l", "ovni"], tmp.path());
    assert_eq!(out.status.code(), Some(0), "{}", stable(&out.stderr));
    let thread = [
        "0:6:1",
        "0:4:1",
        "0:2:100",
        "0:25:0",
        "0:105:0",
        "0:20:0",
        "1000:25:1",
        "2000:20:3",
        "2500:105:7",
        // Cooling: no longer running, still active.
        "3000:4:4",
        "3000:25:0",
        "3000:105:7",
        // Paused: neither.
        "4000:4:2",
        "4000:2:0",
        "4000:105:0",
        "4000:20:0",
        // Warming: active again.
        "5000:4:5",
        "5000:2:100",
        "5000:105:7",
        "5000:20:3",
        "6000:4:1",
        "6000:25:1",
        "6000:105:7",
        "7000:20:0",
        "8000:25:0",
        "8500:105:0",
        "9000:4:3",
        "9000:2:0",
        "9000:6:0",
    ];
    assert_eq!(records(tmp.path(), "thread.prv"), thread);
    let cpu = [
        "0:2:100",
        "0:1:100",
        "0:3:1",
        "0:25:0",
        "0:7:0",
        "0:105:0",
        "0:20:0",
        "1000:25:1",
        "2000:20:3",
        "2500:105:7",
        "3000:2:0",
        "3000:1:0",
        "3000:3:0",
        "3000:25:0",
        "3000:105:0",
        "3000:20:0",
        "6000:2:100",
        "6000:1:100",
        "6000:3:1",
        "6000:25:1",
        "6000:105:7",
        "6000:20:3",
        "7000:20:0",
        "8000:25:0",
        "8500:105:0",
        "9000:2:0",
        "9000:1:0",
        "9000:3:0",
    ];
    assert_eq!(records(tmp.path(), "cpu.prv"), cpu);
    let pcf = fs::read_to_string(tmp.path().join("ovni/thread.pcf")).unwrap();
    let lines: Vec<&str> = pcf.lines().collect();
    let types: Vec<&str> = lines
        .windows(2)
        .filter(|w| w[0] == "EVENT_TYPE")
        .map(|w| w[1].trim_start_matches("0 "))
        .collect();
    assert_eq!(
        types,
        [
            "6          Thread: CPU affinity",
            "2          Thread: TID of the ACTIVE thread",
            "4          Thread: thread state",
            "25         MPI function of the RUNNING thread",
            "7          Flushing ovni buffer ",
            "105        Stack",
            "20         TAMPI subsystem of the ACTIVE thread",
        ]
    );
    let err = stable(&out.stderr);
    assert!(
        err.contains(
            "INFO: the following 3 models are enabled: \n\
             ovniemu: INFO:       mpi 1.0.0 'M' (98 events)\n\
             ovniemu: INFO:      ovni 1.1.0 'O' (18 events)\n\
             ovniemu: INFO:     tampi 1.0.0 'T' (24 events)\n"
        ),
        "{err}"
    );
}

#[test]
fn help_lists_the_emulated_models() {
    let tmp = tempfile::tempdir().unwrap();
    let out = emu(&["--help"], tmp.path());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("Available emulation models:\n  O  ovni      1.1.0\n  6  nanos6    1.1.0\n  V  nosv      2.7.0\n  D  nodes     1.0.0\n  T  tampi     1.0.0\n  M  mpi       1.0.0\n  K  kernel    1.0.0\n  P  openmp    1.2.1\n"),
        "{text}"
    );
}
