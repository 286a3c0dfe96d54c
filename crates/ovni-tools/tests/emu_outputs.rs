//! Differences from ovni 1.14's ovniemu found side by side with it: mark values above 32
//! bits, traces whose first clock is −1, and output paths that are not regular files.

use std::fs;
use std::path::Path;

use ovni::write::{Process, ThreadStream};
use ovni::Mcv;

use crate::util::run;

const EMU: &str = env!("CARGO_BIN_EXE_ovniemu");
const LINT: &str = env!("CARGO_BIN_EXE_ovnilint");

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn thread(root: &Path) -> ThreadStream {
    let p = Process::init(root.join("ovni"), 1, "node0", 100).unwrap();
    let mut t = p.thread_init(100).unwrap();
    t.add_cpu(0, 0).unwrap();
    t
}

/// A thread that starts at `clock`, runs, and ends 1000 ns later.
fn run_and_end(mut t: ThreadStream, clock: u64) {
    let mut cpu = Vec::new();
    cpu.extend_from_slice(&0i32.to_le_bytes());
    cpu.extend_from_slice(&(-1i32).to_le_bytes());
    cpu.extend_from_slice(&0u64.to_le_bytes());
    t.emit_at(Mcv(*b"OHx"), clock, &cpu).unwrap();
    t.emit_at(Mcv(*b"OHe"), clock.wrapping_add(1000), &[])
        .unwrap();
    t.finish().unwrap();
}

/// A trace with mark type 3 whose labels are `labels`.
fn marked_trace(root: &Path, labels: &[(i64, &str)]) {
    let mut t = thread(root);
    t.mark_type(3, 0, "Big values").unwrap();
    for &(v, l) in labels {
        t.mark_label(3, v, l).unwrap();
    }
    run_and_end(t, 1000);
}

#[test]
fn mark_values_above_32_bits_are_written_as_c_ints() {
    let tmp = tempfile::tempdir().unwrap();
    marked_trace(tmp.path(), &[(1 << 40, "2^40"), ((1 << 32) + 7, "2^32+7")]);
    let out = run(EMU, &["ovni"], tmp.path());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    for f in ["thread.pcf", "cpu.pcf"] {
        let pcf = fs::read_to_string(tmp.path().join("ovni").join(f)).unwrap();
        assert!(
            pcf.ends_with("EVENT_TYPE\n0 103        Big values\nVALUES\n0    2^40\n7    2^32+7\n"),
            "{f}: {pcf}"
        );
    }
}

#[test]
fn mark_values_equal_modulo_2_32_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    marked_trace(tmp.path(), &[(5, "five"), ((1 << 32) + 5, "2^32+5")]);
    let out = run(EMU, &["ovni"], tmp.path());
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    let want = "ovniemu: ERROR: pcf_add_value: PCF value 5 already in type 103\n\
                ovniemu: ERROR: create_type: pcf_add_value failed\n\
                ovniemu: ERROR: init_pcf: create_type failed\n\
                ovniemu: ERROR: connect_thread: init_pcf failed\n\
                ovniemu: ERROR: mark_connect: connect_thread() failed\n\
                ovniemu: ERROR: model_ovni_connect: mark_connect failed\n\
                ovniemu: ERROR: model_connect: connect failed for model 'O'\n\
                ovniemu: ERROR: emu_connect: model_connect failed\n\
                ovniemu: ERROR: main: emu_connect failed\n";
    assert!(err.ends_with(want), "{err}");
    // As in the original, the emulation never starts: the .pcf and .row files stay empty.
    for f in ["thread.pcf", "cpu.pcf", "thread.row", "cpu.row"] {
        assert_eq!(
            fs::read(tmp.path().join("ovni").join(f)).unwrap(),
            b"",
            "{f}"
        );
    }
    let lint = run(LINT, &["ovni"], tmp.path());
    assert_eq!(lint.status.code(), Some(1), "{}", text(&lint.stderr));
    let problems = text(&lint.stdout);
    assert!(problems.contains("[mark-value-collision]"), "{problems}");
    assert!(problems.contains("values 5 and 4294967301"), "{problems}");
}

#[test]
fn time_is_linear_in_the_number_of_mark_labels() {
    // 100 000 labels took 2.5 s optimised (35 s unoptimised) when each label was compared
    // with every other; linear, it takes well under a second.
    let tmp = tempfile::tempdir().unwrap();
    let names: Vec<String> = (1..=100_000).map(|i| format!("label {i}")).collect();
    let labels: Vec<(i64, &str)> = names
        .iter()
        .enumerate()
        .map(|(i, l)| (i as i64 + 1, l.as_str()))
        .collect();
    marked_trace(tmp.path(), &labels);
    let start = std::time::Instant::now();
    let out = run(EMU, &["ovni"], tmp.path());
    let secs = start.elapsed().as_secs_f64();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(secs < 10.0, "{secs} s for 100 000 labels");
    let pcf = fs::read_to_string(tmp.path().join("ovni/thread.pcf")).unwrap();
    assert!(
        pcf.ends_with("\n100000 label 100000\n"),
        "{}",
        &pcf[pcf.len() - 100..]
    );
}

/// Runs ovniemu on `<root>/ovni`, killing it after 20 s (the original blocks forever on a
/// FIFO); returns the exit status and stderr, or `None` if it had to be killed.
fn emulate_with_deadline(root: &Path) -> Option<(Option<i32>, String)> {
    use std::io::Read;
    use std::process::{Command, Stdio};
    let mut child = Command::new(EMU)
        .arg("ovni")
        .current_dir(root)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let mut err = String::new();
            child
                .stderr
                .take()
                .unwrap()
                .read_to_string(&mut err)
                .unwrap();
            return Some((status.code(), err));
        }
        if std::time::Instant::now() > deadline {
            child.kill().unwrap();
            child.wait().unwrap();
            return None;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn outputs_are_not_written_through_a_symlink() {
    let tmp = tempfile::tempdir().unwrap();
    let t = thread(tmp.path());
    run_and_end(t, 1000);
    let elsewhere = tmp.path().join("precious.txt");
    fs::write(&elsewhere, b"keep me").unwrap();
    std::os::unix::fs::symlink(&elsewhere, tmp.path().join("ovni/thread.prv")).unwrap();
    let (code, err) = emulate_with_deadline(tmp.path()).expect("ovniemu hung");
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("thread.prv"), "{err}");
    assert_eq!(fs::read(&elsewhere).unwrap(), b"keep me");
    let link = fs::symlink_metadata(tmp.path().join("ovni/thread.prv")).unwrap();
    assert!(link.file_type().is_symlink());
}

#[test]
fn outputs_that_are_fifos_are_refused_without_blocking() {
    for name in ["thread.prv", "cpu.pcf"] {
        let tmp = tempfile::tempdir().unwrap();
        let t = thread(tmp.path());
        run_and_end(t, 1000);
        let fifo = tmp.path().join("ovni").join(name);
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        let (code, err) = emulate_with_deadline(tmp.path()).expect("ovniemu blocked on a FIFO");
        assert_eq!(code, Some(1), "{name}: {err}");
        assert!(err.contains(name), "{name}: {err}");
    }
}

#[test]
fn a_first_clock_of_minus_one_stops_before_the_emulation_starts() {
    let tmp = tempfile::tempdir().unwrap();
    let t = thread(tmp.path());
    run_and_end(t, u64::MAX);
    let out = run(EMU, &["ovni"], tmp.path());
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    let name = "loom.node0/proc.100/thread.100";
    let want = format!(
        "ovniemu: ERROR: stream_step: clock goes backwards 0 -> -1 in stream '{name}' at offset 8\n\
         ovniemu: ERROR: step_stream: cannot step stream '{name}'\n\
         ovniemu: ERROR: player_init: step_stream failed\n\
         ovniemu: ERROR: emu_init: cannot init player for trace 'ovni'\n\
         ovniemu: ERROR: main: emu_init failed\n"
    );
    assert!(err.ends_with(&want), "{err}");
    assert!(!err.contains("emulation starts"), "{err}");
    for f in ["thread.pcf", "cpu.pcf", "thread.row", "cpu.row"] {
        assert_eq!(
            fs::read(tmp.path().join("ovni").join(f)).unwrap(),
            b"",
            "{f}"
        );
    }
}
