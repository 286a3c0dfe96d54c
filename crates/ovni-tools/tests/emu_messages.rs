//! ovniemu's stderr where it differed from ovni 1.14's: the clock gate, CPU indices, `app_id`
//! and the clock offset table.

use std::fs;
use std::path::Path;

use ovni::write::Process;
use ovni::Mcv;

use crate::util::run;

const EMU: &str = env!("CARGO_BIN_EXE_ovniemu");

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// One thread per `(loom, pid, cpu phyid, first clock)`, each with CPU index 0, running from
/// its clock for 1000 ns.
fn trace(root: &Path, threads: &[(&str, i32, i32, u64)]) {
    for &(loom, pid, phyid, clock) in threads {
        let p = Process::init(root.join("ovni"), 1, loom, pid).unwrap();
        let mut t = p.thread_init(pid).unwrap();
        t.add_cpu(0, phyid).unwrap();
        let mut cpu = Vec::new();
        cpu.extend_from_slice(&0i32.to_le_bytes());
        cpu.extend_from_slice(&(-1i32).to_le_bytes());
        cpu.extend_from_slice(&0u64.to_le_bytes());
        t.emit_at(Mcv(*b"OHx"), clock, &cpu).unwrap();
        t.emit_at(Mcv(*b"OHe"), clock + 1000, &[]).unwrap();
        t.finish().unwrap();
    }
}

/// Runs ovniemu and returns its stderr, expecting exit status 1.
fn fails(root: &Path, args: &[&str]) -> String {
    let out = run(EMU, args, root);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    err
}

fn lines(v: &[&str]) -> String {
    v.iter().map(|l| format!("ovniemu: ERROR: {l}\n")).collect()
}

const HOUR: u64 = 3_600_000_000_000;

#[test]
fn the_clock_gate_lists_every_stream_too_far() {
    let tmp = tempfile::tempdir().unwrap();
    trace(
        tmp.path(),
        &[
            ("a", 1, 0, 1000),
            ("b", 2, 0, 2 * HOUR),
            ("c", 3, 0, 1000 + HOUR / 2),
            ("d", 4, 0, 3 * HOUR + HOUR / 4),
        ],
    );
    let err = fails(tmp.path(), &["ovni"]);
    let want = lines(&[
        "check_clock_gate: stream loom.b/proc.2/thread.2 has starting clock too far: delta=2.00 h",
        "check_clock_gate: stream loom.d/proc.4/thread.4 has starting clock too far: delta=3.25 h",
        "check_clock_gate: detected large clock gate, run 'ovnisync' to set the offsets",
        "player_init: check_clock_gate failed",
        "emu_init: cannot init player for trace 'ovni'",
        "main: emu_init failed",
    ]);
    assert!(err.ends_with(&want), "{err}");
}

#[test]
fn a_cpu_index_taken_twice_is_reported_in_the_original_words() {
    let tmp = tempfile::tempdir().unwrap();
    trace(tmp.path(), &[("a", 1, 0, 1000), ("a", 2, 1, 1000)]);
    let err = fails(tmp.path(), &["ovni"]);
    let want = lines(&[
        "loom_init_end: cpu with index 0 already taken",
        "init_end_system: loom_init_end failed",
        "system_init: init_end_system failed",
        "emu_init: cannot init system for trace 'ovni'",
        "main: emu_init failed",
    ]);
    assert!(err.ends_with(&want), "{err}");
}

/// Sets `ovni.app_id` of the stream `rel` to `value`.
fn set_app_id(root: &Path, rel: &str, value: i64) {
    let path = root.join("ovni").join(rel).join("stream.json");
    let mut json: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
    json["ovni"]["app_id"] = value.into();
    fs::write(&path, json.to_string()).unwrap();
}

#[test]
fn app_id_errors_are_reported_in_the_original_words() {
    let tail = |first: &str, stream: &str| {
        lines(&[
            &format!("load_appid: {first}"),
            &format!("proc_load_metadata: load_appid failed for stream: {stream}"),
            "create_proc: proc_load_metadata failed",
            "create_system: create_proc failed",
            "system_init: create system failed",
            "emu_init: cannot init system for trace 'ovni'",
            "main: emu_init failed",
        ])
    };
    // Two threads of one process with different app_id.
    let tmp = tempfile::tempdir().unwrap();
    let p = Process::init(tmp.path().join("ovni"), 1, "a", 1).unwrap();
    for tid in [1, 2] {
        let mut t = p.thread_init(tid).unwrap();
        t.add_cpu(0, 0).unwrap();
        t.finish().unwrap();
    }
    set_app_id(tmp.path(), "loom.a/proc.1/thread.2", 7);
    let err = fails(tmp.path(), &["ovni"]);
    let stream = "loom.a/proc.1/thread.2";
    let want = tail(
        &format!("mismatch previous appid 1 with stream: {stream}"),
        stream,
    );
    assert!(err.ends_with(&want), "{err}");
    // An app_id of 0.
    set_app_id(tmp.path(), "loom.a/proc.1/thread.1", 0);
    let err = fails(tmp.path(), &["ovni"]);
    let stream = "loom.a/proc.1/thread.1";
    let want = tail(&format!("appid must be >0, stream: {stream}"), stream);
    assert!(err.ends_with(&want), "{err}");
}

#[test]
fn clock_offset_errors_are_reported_in_the_original_words() {
    let tmp = tempfile::tempdir().unwrap();
    trace(tmp.path(), &[("a", 1, 0, 1000), ("b", 2, 0, 1000)]);
    let table = tmp.path().join("ovni/clock-offsets.txt");
    let system_tail = [
        "emu_init: cannot init system for trace 'ovni'",
        "main: emu_init failed",
    ];
    let parse_tail = [
        "clkoff_load: failed parsing clock table",
        "load_clock_offsets: clkoff_load failed",
        "system_init: load_clock_offsets() failed",
    ];
    let cases: Vec<(&str, Vec<String>)> = vec![
        (
            "",
            [
                &["cparse: missing header line in clock offset"][..],
                &parse_tail[..],
            ]
            .concat(),
        ),
        (
            "h\n0 a 1 1 1\n\n1 b 2 x 2\n",
            [
                &["cparse: fscanf() read 3 instead of 5 fields in line 3"][..],
                &parse_tail[..],
            ]
            .concat(),
        ),
        (
            "h\n0 a 1 1 1\n1 a 2 2 2\n",
            [
                &[
                    "cadd: entry with name 'a' already exists",
                    "cparse: cannot add entry of line 2",
                ][..],
                &parse_tail[..],
            ]
            .concat(),
        ),
        (
            "h\n",
            vec![
                "cindex: no entries",
                "clkoff_load: failed indexing table",
                "load_clock_offsets: clkoff_load failed",
                "system_init: load_clock_offsets() failed",
            ],
        ),
        (
            "h\n0 a 1 1 1\n1 z 2 2 2\n",
            vec![
                "parse_clkoff_entry: cannot find loom with hostname 'z'",
                "init_offsets: cannot parse clock offset entry 1",
                "system_init: init_offsets() failed",
            ],
        ),
    ]
    .into_iter()
    .map(|(t, v)| (t, v.into_iter().map(String::from).collect()))
    .collect();
    for (table_text, first) in cases {
        fs::write(&table, table_text).unwrap();
        let err = fails(tmp.path(), &["ovni"]);
        let mut want: Vec<&str> = first.iter().map(String::as_str).collect();
        want.extend(system_tail);
        assert!(err.ends_with(&lines(&want)), "{table_text:?}: {err}");
    }
    // A table that is used is announced.
    fs::write(&table, "h\n0 a 0 0 0\n1 b 10 10 0\n").unwrap();
    let out = run(EMU, &["ovni"], tmp.path());
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains(
            "ovniemu: INFO: loaded clock offset table from 'ovni/clock-offsets.txt' with 2 entries\n"
        ),
        "{err}"
    );
    // A table given with -c that does not exist.
    fs::remove_file(&table).unwrap();
    let err = fails(tmp.path(), &["-c", "missing.txt", "ovni"]);
    let want = lines(&[
        "load_clock_offsets: fopen missing.txt failed: No such file or directory",
        "system_init: load_clock_offsets() failed",
        "emu_init: cannot init system for trace 'ovni'",
        "main: emu_init failed",
    ]);
    assert!(err.ends_with(&want), "{err}");
}

#[test]
fn burst_statistics_every_100_bursts_of_a_thread() {
    let tmp = tempfile::tempdir().unwrap();
    let p = Process::init(tmp.path().join("ovni"), 1, "node7", 1).unwrap();
    let mut t = p.thread_init(1).unwrap();
    t.add_cpu(0, 0).unwrap();
    let mut cpu = Vec::new();
    cpu.extend_from_slice(&0i32.to_le_bytes());
    cpu.extend_from_slice(&(-1i32).to_le_bytes());
    cpu.extend_from_slice(&0u64.to_le_bytes());
    t.emit_at(Mcv(*b"OHx"), 1000, &cpu).unwrap();
    let mut clock = 2000;
    for i in 0..250 {
        // The second hundred is 200 ns apart.
        clock += if (100..200).contains(&i) { 200 } else { 33 };
        t.emit_at(Mcv(*b"OB."), clock, &[]).unwrap();
    }
    t.emit_at(Mcv(*b"OHe"), 100_000, &[]).unwrap();
    t.finish().unwrap();
    let out = run(EMU, &["ovni"], tmp.path());
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let stats: Vec<&str> = err.lines().filter(|l| l.contains("burst")).collect();
    assert_eq!(
        stats,
        [
            "ovniemu: INFO: node7 burst stats: median/avg/max =  33/ 33/ 33 ns",
            "ovniemu: INFO: node7 burst stats: median/avg/max = 200/200/200 ns",
            "ovniemu: WARN: large median burst time of 200 ns, expect overhead",
        ]
    );
    // The last progress line says all was played.
    assert!(err.contains("ovniemu: INFO: 100.0% done at avg "), "{err}");
}
