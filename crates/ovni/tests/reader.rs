//! The reader, merge, metadata and dump logic against the fixture traces made by libovni
//! 1.14 and the outputs of its tools.

use std::fs;

use ovni::events::EventTable;
use ovni::metadata::System;
use ovni::tools::{self, DumpMode, Notice};
use ovni::{Error, MetaProblem, StreamProblem, Trace};

use crate::util::fixture;

fn dump(case: &str, mode: DumpMode) -> (Vec<u8>, Vec<Notice>, Option<Error>) {
    let trace = Trace::open(&fixture(case).join("ovni")).unwrap();
    let mut out = Vec::new();
    let mut notices = Vec::new();
    let r = tools::dump(&trace, mode, &mut out, |n| notices.push(n));
    (out, notices, r.error)
}

#[test]
fn valid_traces_dump_like_the_goldens() {
    for case in ["single", "multi", "payloads", "marks"] {
        let c = format!("traces/{case}");
        for (mode, golden) in [
            (DumpMode::Describe, "ovnidump.stdout"),
            (DumpMode::Hex, "ovnidump-x.stdout"),
        ] {
            let (out, _, err) = dump(&c, mode);
            assert!(err.is_none(), "{case}: {err:?}");
            let want = fs::read(fixture(&c).join("golden").join(golden)).unwrap();
            assert_eq!(out, want, "{case} {golden}");
        }
    }
}

#[test]
fn payloads_trace_reports_unknown_models() {
    let (_, notices, _) = dump("traces/payloads", DumpMode::Describe);
    assert_eq!(notices.len(), 10);
    assert!(notices
        .iter()
        .all(|n| matches!(n, Notice::UnknownModel(m) if m.0[0] == b'X')));
}

#[test]
fn load_errors_are_typed() {
    let open = |c: &str| Trace::open(&fixture(c).join("ovni")).unwrap_err();
    let stream_problem = |e: Error| match e {
        Error::Stream {
            problem,
            offset,
            path,
        } => {
            assert!(
                path.ends_with("thread.387/stream.obs"),
                "{}",
                path.display()
            );
            (offset, problem)
        }
        other => panic!("unexpected {other:?}"),
    };
    assert_eq!(
        stream_problem(open("invalid/bad-magic")),
        (0, StreamProblem::BadMagic(*b"ovnx"))
    );
    assert_eq!(
        stream_problem(open("invalid/bad-stream-version")),
        (0, StreamProblem::BadVersion(2))
    );
    assert_eq!(
        stream_problem(open("invalid/short-header")),
        (0, StreamProblem::IncompleteHeader { len: 6 })
    );
    assert_eq!(
        stream_problem(open("invalid/empty-obs")),
        (0, StreamProblem::Empty)
    );
    assert!(matches!(open("invalid/json-invalid"), Error::Json { .. }));
    assert!(matches!(
        open("invalid/json-version-2"),
        Error::Metadata {
            problem: MetaProblem::VersionMismatch(2),
            ..
        }
    ));
    assert!(matches!(open("invalid/missing-obs"), Error::Io { .. }));
}

#[test]
fn broken_events_stop_after_the_good_ones() {
    for (case, printed, offset, needed) in [
        ("invalid/truncated-last-event", 10, 148, 12),
        ("invalid/truncated-payload", 0, 8, 28),
        ("invalid/jumbo-size-overflow", 2, 52, 16 + 0x10000),
    ] {
        let (out, _, err) = dump(case, DumpMode::Describe);
        let golden = fs::read(fixture(case).join("golden/ovnidump.stdout")).unwrap();
        assert_eq!(out, golden, "{case}");
        assert_eq!(out.iter().filter(|&&b| b == b'\n').count(), printed);
        match err {
            Some(Error::Stream {
                offset: o,
                problem: StreamProblem::IncompleteEvent { needed: n, .. },
                ..
            }) => assert_eq!((o, n), (offset, needed), "{case}"),
            other => panic!("{case}: {other:?}"),
        }
    }
}

#[test]
fn backwards_clock_is_a_notice_in_merge_and_an_error_in_check() {
    let (_, notices, err) = dump("invalid/clock-backwards", DumpMode::Describe);
    assert!(err.is_none());
    assert_eq!(
        notices,
        vec![Notice::Backwards {
            prev: 736496145330,
            clock: 736496144330,
            stream: "loom.node0/proc.387/thread.387".into()
        }]
    );
    let trace = Trace::open(&fixture("invalid/clock-backwards/ovni")).unwrap();
    let mut jumps = Vec::new();
    let sorted = ovni::sort::check_stream(&trace.streams()[0], |j| jumps.push(j)).unwrap();
    assert!(!sorted);
    assert_eq!(
        jumps,
        [ovni::sort::BackwardsJump {
            offset: 52,
            prev: 736496145330,
            clock: 736496144330
        }]
    );
    let trace = Trace::open(&fixture("invalid/clock-equal/ovni")).unwrap();
    assert!(ovni::sort::check_stream(&trace.streams()[0], |_| {}).unwrap());
}

#[test]
fn metadata_of_reference_traces_is_valid() {
    let table = EventTable::builtin();
    let t = Trace::open(&fixture("traces/multi/ovni")).unwrap();
    let sys = System::load(&t, table).unwrap();
    assert_eq!(sys.looms.len(), 2);
    assert_eq!(sys.threads.len(), 8);
    assert_eq!(sys.looms[0].name, "nodeA");
    assert_eq!(sys.looms[0].processes.len(), 2);
    let t = Trace::open(&fixture("traces/marks/ovni")).unwrap();
    let sys = System::load(&t, table).unwrap();
    assert_eq!(sys.marks.len(), 2);
    assert_eq!(sys.marks[&2].chan_type, "stack");
    assert_eq!(sys.marks[&2].labels[&2], "Gray");
    for case in ["single", "payloads"] {
        let t = Trace::open(&fixture(&format!("traces/{case}/ovni"))).unwrap();
        System::load(&t, table).unwrap();
    }
}

#[test]
fn metadata_errors_of_invalid_cases() {
    let table = EventTable::builtin();
    for (case, want) in [
        ("missing-finished", MetaProblem::NotFinished),
        ("finished-0", MetaProblem::NotFinished),
        ("missing-loom-cpus", MetaProblem::LoomWithoutCpus),
    ] {
        let t = Trace::open(&fixture(&format!("invalid/{case}/ovni"))).unwrap();
        match System::load(&t, table) {
            Err(Error::Metadata { problem, .. }) => assert_eq!(problem, want, "{case}"),
            other => panic!("{case}: {other:?}"),
        }
    }
    let t = Trace::open(&fixture("invalid/require-bad-version/ovni")).unwrap();
    assert!(matches!(
        System::load(&t, table),
        Err(Error::Metadata {
            problem: MetaProblem::UnsupportedModelVersion { .. },
            ..
        })
    ));
}

#[test]
fn merge_ties_follow_relpath_order() {
    use ovni::raw::{encode_normal, stream_header, Mcv};
    let mk = |name: &str, clocks: &[u64]| {
        let mut b = stream_header().to_vec();
        for &c in clocks {
            encode_normal(&mut b, Mcv(*b"OHp"), c, &[]).unwrap();
        }
        ovni::Stream::from_bytes(name, name, serde_json::json!({"version": 3}), b).unwrap()
    };
    let trace = Trace::from_streams(vec![
        mk("b", &[1, 5, 5]),
        mk("a", &[5, 6]),
        mk("c", &[0, 5]),
    ]);
    let order: Vec<(String, u64)> = trace
        .merged()
        .map(|m| {
            let m = m.unwrap();
            (trace.streams()[m.stream].name(), m.event.clock)
        })
        .collect();
    let want = [
        ("c", 0),
        ("b", 1),
        ("a", 5),
        ("b", 5),
        ("b", 5),
        ("c", 5),
        ("a", 6),
    ];
    let want: Vec<(String, u64)> = want.iter().map(|&(s, c)| (s.to_string(), c)).collect();
    assert_eq!(order, want);
}

#[test]
fn walker_sorts_relpaths_bytewise_and_survives_symlink_loops() {
    let tmp = tempfile::tempdir().unwrap();
    for d in ["b", "a/x", "a.b", "A"] {
        let p = tmp.path().join(d);
        fs::create_dir_all(&p).unwrap();
        fs::write(p.join("stream.json"), "{}").unwrap();
    }
    std::os::unix::fs::symlink(tmp.path(), tmp.path().join("a/loop")).unwrap();
    let found = ovni::read::find_streams(tmp.path()).unwrap();
    let names: Vec<&[u8]> = found.iter().map(|d| d.relpath.as_slice()).collect();
    assert_eq!(names, [&b"A"[..], b"a.b", b"a/x", b"b"]);
}

/// Fuzzing (ovni_stream_json): the keys as JSON leave ill-typed values out, so a `loom_cpus`
/// entry without `phyid` reads as a shorter array there; the typed keys keep the problem, and
/// the thread metadata built from them reports it.
#[test]
fn keys_as_json_leave_bad_values_out_and_the_typed_keys_keep_them() {
    let text = r#"{"version": 3, "ovni": {"lib": {"version": "1.14.0", "commit": "x"},
        "part": "thread", "tid": 1, "pid": 1, "loom": "n0", "app_id": 1,
        "require": {"ovni": "1.1.0"}, "finished": 1,
        "loom_cpus": [{"index": 0, "phyiovnid": 0}, {"index": 1, "phyid": 1}]}}"#;
    let meta = ovni::read::StreamMeta::from_reader(text.as_bytes()).unwrap();
    let err = ovni::metadata::ThreadMeta::from_stream("s", &meta).unwrap_err();
    assert!(
        matches!(
            err,
            Error::Metadata {
                problem: MetaProblem::MissingKey("ovni.loom_cpus.phyid"),
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(meta.to_value()["ovni"]["loom_cpus"], serde_json::json!([]));
}
