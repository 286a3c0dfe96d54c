//! Differences from the original tools found after the first release, each reproduced on a
//! trace built for it.

use std::fs;
use std::path::PathBuf;

use crate::util::{corrupt, fixture, run, STREAM};

/// A copy of traces/single with `obs` applied to its stream.obs.
fn trace(obs: impl FnOnce(&mut Vec<u8>)) -> tempfile::TempDir {
    corrupt("traces/single", obs)
}

fn event(mcv: &[u8; 3], clock: u64) -> Vec<u8> {
    let mut e = vec![0, mcv[0], mcv[1], mcv[2]];
    e.extend_from_slice(&clock.to_le_bytes());
    e
}

fn with_events(events: &[Vec<u8>]) -> tempfile::TempDir {
    trace(|o| {
        o.truncate(8);
        for e in events {
            o.extend_from_slice(e);
        }
    })
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn ovnisort_compares_clocks_unsigned() {
    let sort = env!("CARGO_BIN_EXE_ovnisort");
    // A last clock of 2^64 - 1 is after every other clock.
    let t = with_events(&[event(b"OHp", 10), event(b"OHr", u64::MAX)]);
    let out = run(sort, &["-c", "ovni"], t.path());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // 2^63 followed by a small clock goes backwards.
    let t = with_events(&[event(b"OHp", 1 << 63), event(b"OHr", 10)]);
    let out = run(sort, &["-c", "ovni"], t.path());
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("streams NOT sorted"));
}

#[test]
fn ovnitop_cuts_an_event_type_at_its_nul() {
    let t = with_events(&[
        event(b"O\0x", 1),
        event(b"OHp", 2),
        event(b"OHp", 3),
        event(b"\0ab", 4),
    ]);
    let out = run(env!("CARGO_BIN_EXE_ovnitop"), &["ovni"], t.path());
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        out.stdout,
        b"OHp          2\n          1\nO          1\n".to_vec()
    );
}

#[test]
fn ovnidump_refuses_a_jumbo_mark_without_room_for_its_arguments() {
    // Jumbo OM]: size field 8, then 8 data bytes; the arguments (i64, i32) follow the size
    // field and need 12. ovnilint refuses the same event (crates/ovni/tests/lint.rs).
    let mut e = vec![0x13, b'O', b'M', b']'];
    e.extend_from_slice(&5u64.to_le_bytes());
    e.extend_from_slice(&8u32.to_le_bytes());
    e.extend_from_slice(&2i64.to_le_bytes());
    let t = with_events(&[e]);
    let out = run(env!("CARGO_BIN_EXE_ovnidump"), &["ovni"], t.path());
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(out.stdout.is_empty());
}

/// Every ovnidump golden stderr, byte for byte (the originals print no timing lines).
#[test]
fn ovnidump_stderr_matches_goldens() {
    let mut failures = Vec::new();
    for kind in ["traces", "invalid"] {
        let mut cases: Vec<PathBuf> = fs::read_dir(fixture(kind))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.join("golden").is_dir())
            .collect();
        cases.sort();
        for case in cases {
            for (args, name) in [
                (&["ovni"][..], "ovnidump"),
                (&["-x", "ovni"][..], "ovnidump-x"),
            ] {
                let out = run(env!("CARGO_BIN_EXE_ovnidump"), args, &case);
                let want = fs::read(case.join("golden").join(format!("{name}.stderr"))).unwrap();
                if out.stderr != want {
                    failures.push(format!(
                        "{} {name}:\n--- got\n{}--- want\n{}",
                        case.display(),
                        text(&out.stderr),
                        text(&want)
                    ));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn ovnidump_stderr_for_a_missing_version() {
    let t = trace(|_| {});
    let json = t.path().join(STREAM).join("stream.json");
    let v = fs::read_to_string(&json)
        .unwrap()
        .replace("\"version\": 3,", "");
    fs::write(&json, v).unwrap();
    let out = run(env!("CARGO_BIN_EXE_ovnidump"), &["ovni"], t.path());
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        text(&out.stderr),
        format!(
            "ovnidump: ERROR: check_version: missing attribute \"version\"\n\
             ovnidump: ERROR: load_json: check_version failed\n\
             ovnidump: ERROR: stream_load: load_json failed for: {STREAM}/stream.json\n\
             ovnidump: ERROR: load_stream: emu_steam_load failed\n\
             ovnidump: ERROR: trace_load: nftw failed\n\
             ovnidump: ERROR: main: failed to load trace: ovni\n"
        )
    );
}

#[test]
fn ovnidump_reports_both_header_problems() {
    let t = trace(|o| o[..8].copy_from_slice(b"ovnx\x02\0\0\0"));
    let out = run(env!("CARGO_BIN_EXE_ovnidump"), &["ovni"], t.path());
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    let lines: Vec<&str> = err.lines().take(3).collect();
    assert_eq!(
        lines,
        [
            format!("ovnidump: ERROR: check_stream_header: stream '{STREAM}': wrong stream magic 'ovnx' (expected 'ovni')"),
            format!("ovnidump: ERROR: check_stream_header: stream '{STREAM}': stream version mismatch 2 (expected 1)"),
            format!("ovnidump: ERROR: load_obs: stream has bad header: {STREAM}/stream.obs"),
        ]
    );
}

#[test]
fn ovnidump_labels_names_mark_labels_and_titles() {
    let case = fixture("traces/marks");
    let golden = fs::read_to_string(case.join("golden/ovnidump.stdout")).unwrap();
    let out = run(env!("CARGO_BIN_EXE_ovnidump"), &["--labels", "ovni"], &case);
    assert_eq!(out.status.code(), Some(0));
    let got = text(&out.stdout);
    assert_eq!(got.lines().count(), golden.lines().count());
    let mut marks = 0;
    for (g, w) in got.lines().zip(golden.lines()) {
        let want = w
            .replace(
                "value 1 from type 2",
                "value 1 \"Blue\" from type 2 \"Colors\"",
            )
            .replace(
                "value 2 from type 2",
                "value 2 \"Gray\" from type 2 \"Colors\"",
            )
            .replace(
                "value 3 from type 2",
                "value 3 \"Red\" from type 2 \"Colors\"",
            )
            .replace(" from type 1", " from type 1 \"Progress\"");
        marks += usize::from(want != w);
        assert_eq!(g, want);
    }
    assert!(marks > 10, "{marks}");
    // -x and --labels do not combine.
    let out = run(
        env!("CARGO_BIN_EXE_ovnidump"),
        &["-x", "--labels", "ovni"],
        &case,
    );
    assert_eq!(out.status.code(), Some(2));
}
