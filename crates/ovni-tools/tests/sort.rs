//! `ovnisort` in its sorting mode: the traces sorted by the original, and the cases of
//! ovni 1.14's own sort tests (sort, sort-flush, sort-into-previous-region, empty-sort,
//! sort-first-and-full-ring), written anew with this project's writer.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use ovni::write::{Process, ThreadStream};
use ovni::{Mcv, Trace};

use crate::util::{copy_dir, fixtures, run};

const SORT: &str = env!("CARGO_BIN_EXE_ovnisort");

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A thread of a one-thread trace under `<root>/ovni`, with CPU 0.
fn thread(root: &Path) -> ThreadStream {
    let p = Process::init(root.join("ovni"), 1, "node0", 100).unwrap();
    let mut t = p.thread_init(100).unwrap();
    t.add_cpu(0, 0).unwrap();
    t
}

/// `OHx` (runs on CPU 0, created by nobody, tag 0), as the original tests begin.
fn execute(t: &mut ThreadStream, clock: u64) {
    let mut payload = Vec::new();
    payload.extend_from_slice(&0i32.to_le_bytes());
    payload.extend_from_slice(&(-1i32).to_le_bytes());
    payload.extend_from_slice(&0u64.to_le_bytes());
    t.emit_at(Mcv(*b"OHx"), clock, &payload).unwrap();
}

fn emit(t: &mut ThreadStream, mcv: &[u8; 3], clock: u64) {
    t.emit_at(Mcv(*mcv), clock, &[]).unwrap();
}

fn obs(root: &Path) -> PathBuf {
    root.join("ovni/loom.node0/proc.100/thread.100/stream.obs")
}

/// `(mcv, clock, payload length)` of every event of the one stream, in file order.
fn events(root: &Path) -> Vec<(String, u64, usize)> {
    let trace = Trace::open(&root.join("ovni")).unwrap();
    trace.streams()[0]
        .events()
        .map(|e| {
            let (_, e) = e.unwrap();
            (e.mcv.to_string(), e.clock, e.payload.len())
        })
        .collect()
}

/// The events as `(mcv, clock)`, for comparing orders.
fn order(root: &Path) -> Vec<(String, u64)> {
    events(root).into_iter().map(|(m, c, _)| (m, c)).collect()
}

fn sorted_events(mut v: Vec<(String, u64, usize)>) -> Vec<(String, u64, usize)> {
    v.sort();
    v
}

/// Sorts `<root>/ovni`, expecting success, and checks the result with `-c`; returns stderr.
fn sort_ok(root: &Path) -> String {
    let before = sorted_events(events(root));
    let out = run(SORT, &["ovni"], root);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let check = run(SORT, &["-c", "ovni"], root);
    assert_eq!(check.status.code(), Some(0), "{}", text(&check.stderr));
    // Sorting only moves events.
    assert_eq!(sorted_events(events(root)), before);
    err
}

#[test]
fn sorts_the_original_traces_into_the_same_bytes() {
    let dir = fixtures().join("sort");
    for case in ["emu-ovni-sort", "emu-ovni-sort-into-previous-region"] {
        let tmp = tempfile::tempdir().unwrap();
        copy_dir(&dir.join(case).join("unsorted"), tmp.path());
        let out = run(SORT, &["."], tmp.path());
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        assert_eq!(text(&out.stderr), "ovnisort: INFO: loaded 1 streams\n");
        let stream = fs::read_dir(tmp.path().join("loom.vm.0")).unwrap();
        let proc = stream.map(|e| e.unwrap().file_name()).next().unwrap();
        let thread = fs::read_dir(tmp.path().join("loom.vm.0").join(&proc))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .next()
            .unwrap();
        let rel = Path::new("loom.vm.0").join(proc).join(thread);
        let want = fs::read(dir.join(case).join("sorted").join(&rel).join("stream.obs")).unwrap();
        let got = fs::read(tmp.path().join(&rel).join("stream.obs")).unwrap();
        assert_eq!(got, want, "{case}");
        // Nothing else is left in the stream's directory.
        let mut names: Vec<_> = fs::read_dir(tmp.path().join(&rel))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(names, ["stream.json", "stream.obs"]);
    }
}

/// ovni's `sort`: a region of 100 events that go back 10 µs, and a jumbo event.
#[test]
fn sorts_a_region_with_a_jumbo_event() {
    let tmp = tempfile::tempdir().unwrap();
    let mut t = thread(tmp.path());
    execute(&mut t, 1_000);
    let t0 = 200_000;
    emit(&mut t, b"OU[", t0);
    let mut clock = t0 - 10_000;
    for _ in 0..100 {
        emit(&mut t, b"OB.", clock);
        clock += 33;
    }
    let data: Vec<u8> = (0..128u8).collect();
    t.emit_jumbo_at(Mcv(*b"OUj"), clock, &data).unwrap();
    emit(&mut t, b"OU]", t0 + 50);
    emit(&mut t, b"OHe", t0 + 60);
    t.finish().unwrap();

    sort_ok(tmp.path());
    let got = order(tmp.path());
    let mut want = vec![("OHx".to_string(), 1_000)];
    want.extend((0..100).map(|i| ("OB.".to_string(), t0 - 10_000 + 33 * i)));
    want.push(("OUj".to_string(), clock));
    for (m, c) in [("OU[", t0), ("OU]", t0 + 50), ("OHe", t0 + 60)] {
        want.push((m.to_string(), c));
    }
    assert_eq!(got, want);
    // The jumbo event moved whole.
    let trace = Trace::open(&tmp.path().join("ovni")).unwrap();
    let jumbo = trace.streams()[0]
        .events()
        .map(|e| e.unwrap().1)
        .find(|e| e.is_jumbo())
        .unwrap();
    assert_eq!(jumbo.jumbo_data(), Some(&data[..]));
    // The emulator accepts the sorted trace.
    let emu = run(env!("CARGO_BIN_EXE_ovniemu"), &["ovni"], tmp.path());
    assert_eq!(emu.status.code(), Some(0), "{}", text(&emu.stderr));
}

/// ovni's `sort-flush`: flush events (`OF[`/`OF]`) inside regions, and regions whose
/// events belong before the previous region.
#[test]
fn sorts_regions_with_flush_events_and_overlaps() {
    let tmp = tempfile::tempdir().unwrap();
    let mut t = thread(tmp.path());
    t.require("kernel", "1.0.0").unwrap();
    execute(&mut t, 1_000);
    // A flush right after OU[.
    let t1 = 100_000;
    for (m, c) in [
        (b"OU[", t1),
        (b"OF[", t1 + 1_000),
        (b"OF]", t1 + 2_000),
        (b"KCO", t1 + 1 - 100),
        (b"KCI", t1 + 2 - 100),
        (b"OU]", t1 + 3_000),
    ] {
        emit(&mut t, m, c);
    }
    // Two events out of order.
    let t2 = 200_000;
    for (m, c) in [
        (b"OU[", t2),
        (b"KCI", t2 + 2 - 100),
        (b"KCO", t2 + 1 - 100),
        (b"OU]", t2 + 3),
    ] {
        emit(&mut t, m, c);
    }
    // The second region's events belong inside the first.
    let t3 = 300_000;
    for (m, c) in [
        (b"OU[", t3 + 20),
        (b"KCO", t3 + 10),
        (b"KCI", t3 + 11),
        (b"OU]", t3 + 21),
        (b"OU[", t3 + 22),
        (b"KCO", t3 + 12),
        (b"KCI", t3 + 13),
        (b"OU]", t3 + 23),
    ] {
        emit(&mut t, m, c);
    }
    // The same with a flush in the second region.
    let t4 = 400_000;
    for (m, c) in [
        (b"OU[", t4 + 20),
        (b"KCO", t4 + 10),
        (b"KCI", t4 + 11),
        (b"OU]", t4 + 21),
        (b"OU[", t4 + 30),
        (b"OF[", t4 + 40),
        (b"OF]", t4 + 50),
        (b"KCO", t4 + 12),
        (b"KCI", t4 + 13),
        (b"OU]", t4 + 60),
    ] {
        emit(&mut t, m, c);
    }
    emit(&mut t, b"OHe", 500_000);
    t.finish().unwrap();

    sort_ok(tmp.path());
    let got = order(tmp.path());
    let want: Vec<(String, u64)> = [
        ("OHx", 1_000),
        ("KCO", t1 + 1 - 100),
        ("KCI", t1 + 2 - 100),
        ("OU[", t1),
        ("OF[", t1 + 1_000),
        ("OF]", t1 + 2_000),
        ("OU]", t1 + 3_000),
        ("KCO", t2 + 1 - 100),
        ("KCI", t2 + 2 - 100),
        ("OU[", t2),
        ("OU]", t2 + 3),
        ("KCO", t3 + 10),
        ("KCI", t3 + 11),
        ("KCO", t3 + 12),
        ("KCI", t3 + 13),
        ("OU[", t3 + 20),
        ("OU]", t3 + 21),
        ("OU[", t3 + 22),
        ("OU]", t3 + 23),
        ("KCO", t4 + 10),
        ("KCI", t4 + 11),
        ("KCO", t4 + 12),
        ("KCI", t4 + 13),
        ("OU[", t4 + 20),
        ("OU]", t4 + 21),
        ("OU[", t4 + 30),
        ("OF[", t4 + 40),
        ("OF]", t4 + 50),
        ("OU]", t4 + 60),
        ("OHe", 500_000),
    ]
    .iter()
    .map(|&(m, c)| (m.to_string(), c))
    .collect();
    assert_eq!(got, want);
}

/// ovni's `sort-into-previous-region`: events of the second region, two of them with a
/// 16-byte payload, go before the first region, whose events have already moved.
#[test]
fn sorts_events_into_a_previous_region() {
    let tmp = tempfile::tempdir().unwrap();
    let mut t = thread(tmp.path());
    execute(&mut t, 1);
    let t0 = 100;
    let emitted = [
        (b"OU[", 6, 0),
        (b"OB.", 0, 0),
        (b"OB.", 1, 0),
        (b"OB.", 2, 0),
        (b"OB.", 3, 0),
        (b"OU]", 7, 0),
        (b"OU[", 10, 0),
        (b"OB.", 4, 16),
        (b"OB.", 5, 16),
        (b"OB.", 8, 0),
        (b"OB.", 9, 0),
        (b"OU]", 11, 0),
    ];
    for (m, c, len) in emitted {
        t.emit_at(Mcv(*m), t0 + c, &vec![0u8; len]).unwrap();
    }
    emit(&mut t, b"OHe", 200);
    t.finish().unwrap();

    sort_ok(tmp.path());
    let got = events(tmp.path());
    let mut want = vec![("OHx".to_string(), 1, 16)];
    for (m, c, len) in [
        ("OB.", 0, 0),
        ("OB.", 1, 0),
        ("OB.", 2, 0),
        ("OB.", 3, 0),
        ("OB.", 4, 16),
        ("OB.", 5, 16),
        ("OU[", 6, 0),
        ("OU]", 7, 0),
        ("OB.", 8, 0),
        ("OB.", 9, 0),
        ("OU[", 10, 0),
        ("OU]", 11, 0),
    ] {
        want.push((m.to_string(), t0 + c, len));
    }
    want.push(("OHe".to_string(), 200, 0));
    assert_eq!(got, want);
    let emu = run(env!("CARGO_BIN_EXE_ovniemu"), &["ovni"], tmp.path());
    assert_eq!(emu.status.code(), Some(0), "{}", text(&emu.stderr));
}

/// ovni's `empty-sort`, and regions with no event at all, which are counted.
#[test]
fn sorts_a_region_without_jumbo_events_and_counts_empty_regions() {
    let tmp = tempfile::tempdir().unwrap();
    let mut t = thread(tmp.path());
    execute(&mut t, 1_000);
    let t0 = 200_000;
    emit(&mut t, b"OU[", t0);
    for i in 0..100 {
        emit(&mut t, b"OB.", t0 - 10_000 + 33 * i);
    }
    emit(&mut t, b"OU]", t0 + 1);
    for i in 0..2 {
        emit(&mut t, b"OU[", t0 + 10 + 2 * i);
        emit(&mut t, b"OU]", t0 + 11 + 2 * i);
    }
    emit(&mut t, b"OHe", t0 + 20);
    t.finish().unwrap();

    let err = sort_ok(tmp.path());
    assert_eq!(
        err,
        "ovnisort: INFO: loaded 1 streams\n\
         ovnisort: WARN: stream loom.node0/proc.100/thread.100 contains 2 empty sort regions\n"
    );
    let got = order(tmp.path());
    assert_eq!(got.len(), 108);
    assert_eq!(got[1], ("OB.".to_string(), t0 - 10_000));
    assert_eq!(got[101], ("OU[".to_string(), t0));
    let emu = run(env!("CARGO_BIN_EXE_ovniemu"), &["ovni"], tmp.path());
    assert_eq!(emu.status.code(), Some(0), "{}", text(&emu.stderr));
}

/// A region at the very start of the stream whose events precede every event before them
/// is sorted from the stream's first event.
#[test]
fn sorts_a_region_at_the_start_of_the_stream() {
    let tmp = tempfile::tempdir().unwrap();
    let mut t = thread(tmp.path());
    emit(&mut t, b"OU[", 500);
    emit(&mut t, b"OB.", 300);
    emit(&mut t, b"OB.", 200);
    emit(&mut t, b"OU]", 600);
    t.finish().unwrap();
    sort_ok(tmp.path());
    let got = order(tmp.path());
    let want: Vec<(String, u64)> = [("OB.", 200), ("OB.", 300), ("OU[", 500), ("OU]", 600)]
        .iter()
        .map(|&(m, c)| (m.to_string(), c))
        .collect();
    assert_eq!(got, want);
}

/// A stream that opens with a region of `n` events after `OU[`, each 33 ns after the
/// previous one and all before the `OU[`.
fn first_region_trace(root: &Path, n: u64) -> u64 {
    let mut t = thread(root);
    let t1 = 100_000_000;
    emit(&mut t, b"OU[", t1);
    let first = 10_000;
    for i in 0..n {
        emit(&mut t, b"OB.", first + 33 * i);
    }
    emit(&mut t, b"OU]", t1 + 1);
    t.finish().unwrap();
    first
}

/// ovni's `sort-first-and-full-ring`, with a window of 1000 events instead of a million:
/// the region fills the window, so its destination cannot be found.
#[test]
fn a_region_longer_than_the_window_cannot_be_sorted() {
    let tmp = tempfile::tempdir().unwrap();
    let first = first_region_trace(tmp.path(), 1000 + 10);
    let before = fs::read(obs(tmp.path())).unwrap();
    let out = run(SORT, &["-n", "1000", "ovni"], tmp.path());
    assert_eq!(out.status.code(), Some(1));
    let name = "loom.node0/proc.100/thread.100";
    // The window holds the last 999 events before OU]: OU[ and the first 11 OB. are gone.
    let oldest = first + 33 * 11;
    let want = format!(
        "ovnisort: INFO: loaded 1 streams\n\
         ovnisort: ERROR: find_destination: cannot find a event previous to clock {first}\n\
         ovnisort: ERROR: find_destination: nback=999, last_clock={oldest}\n\
         ovnisort: ERROR: execute_sort_plan: cannot find destination for region starting at clock {first}\n\
         ovnisort: ERROR: execute_sort_plan: consider increasing the look back size with -n\n\
         ovnisort: ERROR: stream_winsort: sort failed for stream {name}\n\
         ovnisort: ERROR: process_trace: sort stream {name} failed\n"
    );
    assert_eq!(text(&out.stderr), want);
    assert_eq!(fs::read(obs(tmp.path())).unwrap(), before);
    // One event fewer fits: the window still holds the stream's first event.
    let tmp = tempfile::tempdir().unwrap();
    first_region_trace(tmp.path(), 1000 - 3);
    let out = run(SORT, &["-n", "1000", "ovni"], tmp.path());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = run(SORT, &["-c", "ovni"], tmp.path());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

/// ovni's `sort-first-and-full-ring` as it is: 1 000 010 events with the default window.
#[test]
fn a_region_longer_than_the_default_window_cannot_be_sorted() {
    let tmp = tempfile::tempdir().unwrap();
    let first = first_region_trace(tmp.path(), 1_000_000 + 10);
    let out = run(SORT, &["ovni"], tmp.path());
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    // The writer's flushes add OF[/OF] events inside the region, so the oldest clock in the
    // window depends on its buffer size.
    let want = format!(
        "ovnisort: ERROR: find_destination: cannot find a event previous to clock {first}\n\
         ovnisort: ERROR: find_destination: nback=999999, last_clock="
    );
    assert!(err.contains(&want), "{err}");
}

#[test]
fn a_full_window_fails_from_exactly_its_size() {
    // With n events between OU[ and OU], the stream's first event (OU[) is a destination
    // only while the window of look back − 1 events is not full: n + 1 < look back − 1.
    for (n, ok) in [(7, true), (8, false)] {
        let tmp = tempfile::tempdir().unwrap();
        first_region_trace(tmp.path(), n);
        let out = run(SORT, &["-n", "10", "ovni"], tmp.path());
        assert_eq!(out.status.code(), Some(if ok { 0 } else { 1 }), "n = {n}");
    }
}

#[test]
fn stops_at_the_first_stream_that_cannot_be_sorted() {
    let tmp = tempfile::tempdir().unwrap();
    let p = Process::init(tmp.path().join("ovni"), 1, "node0", 100).unwrap();
    // Streams are processed in name order: thread.1, thread.2, thread.3.
    for tid in 1..=3 {
        let mut t = p.thread_init(tid).unwrap();
        emit(&mut t, b"OB.", 1);
        emit(&mut t, b"OU[", 50);
        let back = if tid == 2 { 10 } else { 1 };
        for i in 0..back {
            emit(&mut t, b"OB.", 10 + i);
        }
        emit(&mut t, b"OU]", 60);
        t.finish().unwrap();
    }
    let dir = tmp.path().join("ovni/loom.node0/proc.100");
    let read = |tid: u32| fs::read(dir.join(format!("thread.{tid}/stream.obs"))).unwrap();
    let before: Vec<_> = (1..=3).map(read).collect();
    let out = run(SORT, &["-n", "5", "ovni"], tmp.path());
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.ends_with("sort stream loom.node0/proc.100/thread.2 failed\n"),
        "{err}"
    );
    assert_ne!(read(1), before[0], "thread.1 was sorted");
    assert_eq!(read(2), before[1], "thread.2 is left as it was");
    assert_eq!(read(3), before[2], "thread.3 is not reached");
}

#[test]
fn replaces_only_the_streams_that_change() {
    let tmp = tempfile::tempdir().unwrap();
    copy_dir(&fixtures().join("sort/emu-ovni-sort/unsorted"), tmp.path());
    let path = tmp
        .path()
        .join("loom.vm.0/proc.5762/thread.5762/stream.obs");
    let mut perms = fs::metadata(&path).unwrap().permissions();
    perms.set_readonly(true);
    fs::set_permissions(&path, perms).unwrap();
    let before = fs::metadata(&path).unwrap();
    assert_eq!(run(SORT, &["."], tmp.path()).status.code(), Some(0));
    let after = fs::metadata(&path).unwrap();
    // A new file took the old one's place, with its permissions.
    assert_ne!(after.ino(), before.ino());
    assert_eq!(after.mode(), before.mode());
    // Sorting again changes nothing, so the file stays.
    assert_eq!(run(SORT, &["."], tmp.path()).status.code(), Some(0));
    assert_eq!(fs::metadata(&path).unwrap().ino(), after.ino());
}

#[test]
fn streams_it_cannot_step_fail_with_the_original_messages() {
    let name = "loom.node0/proc.387/thread.387";
    for (case, first) in [
        (
            "invalid/header-only",
            "stream_step: stream is inactive, cannot step".to_string(),
        ),
        (
            "invalid/truncated-last-event",
            format!("stream_step: stream '{name}' ends with incomplete event"),
        ),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        copy_dir(&fixtures().join(case), tmp.path());
        let before = fs::read(tmp.path().join("ovni").join(name).join("stream.obs")).unwrap();
        let out = run(SORT, &["ovni"], tmp.path());
        assert_eq!(out.status.code(), Some(1), "{case}");
        let err = text(&out.stderr);
        let tail = format!(
            "ovnisort: ERROR: {first}\n\
             ovnisort: ERROR: stream_winsort: stream_step failed\n\
             ovnisort: ERROR: process_trace: sort stream {name} failed\n"
        );
        assert!(err.ends_with(&tail), "{case}: {err}");
        let after = fs::read(tmp.path().join("ovni").join(name).join("stream.obs")).unwrap();
        assert_eq!(after, before, "{case}");
    }
}

#[test]
fn a_look_back_of_zero_is_a_usage_error() {
    let tmp = tempfile::tempdir().unwrap();
    let out = run(SORT, &["-n", "0", "ovni"], tmp.path());
    assert_eq!(out.status.code(), Some(2));
}
