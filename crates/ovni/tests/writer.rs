//! The writer: libovni's metadata and flush behaviour, our differences (no lost events,
//! truncated streams), misuse errors, many threads, and write -> read round trips.

use std::fs;
use std::path::Path;

use ovni::events::EventTable;
use ovni::metadata::System;
use ovni::raw::Mcv;
use ovni::tools::{self, DumpMode};
use ovni::write::{Ev, Process, MARK_STACK};
use ovni::{Error, Trace, UsageError};
use proptest::prelude::*;
use serde_json::Value;

fn events_of(dir: &Path) -> Vec<(String, u64, Vec<u8>)> {
    let trace = Trace::open(dir).unwrap();
    let s = &trace.streams()[0];
    s.events()
        .map(|e| {
            let (_, e) = e.unwrap();
            (e.mcv.to_string(), e.clock, e.payload.to_vec())
        })
        .collect()
}

/// Key paths of a JSON value in document order, with leaf values.
fn key_paths(v: &Value, prefix: &str, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                let p = format!("{prefix}/{k}");
                out.push(p.clone());
                key_paths(v, &p, out);
            }
        }
        Value::Array(a) => {
            for (i, v) in a.iter().enumerate() {
                key_paths(v, &format!("{prefix}[{i}]"), out);
            }
        }
        other => out.push(format!("{prefix}={other}")),
    }
}

#[test]
fn metadata_has_libovni_keys_values_and_order() {
    // Rebuild the reference `marks` thread 403 and compare its stream.json with libovni's.
    let tmp = tempfile::tempdir().unwrap();
    let p = Process::init(tmp.path().join("ovni"), 1, "node0", 403).unwrap();
    let mut t = p.thread_init(403).unwrap();
    t.add_cpu(0, 0).unwrap();
    t.add_cpu(1, 1).unwrap();
    t.mark_type(1, 0, "Progress").unwrap();
    t.mark_type(2, MARK_STACK, "Colors").unwrap();
    t.mark_label(2, 1, "Blue").unwrap();
    t.mark_label(2, 2, "Gray").unwrap();
    t.attr_set("myapp.answer", 42.0).unwrap();
    t.attr_set("myapp.pi", 3.25).unwrap();
    t.attr_set("myapp.enabled", true).unwrap();
    t.attr_set("myapp.name", "ref-marks").unwrap();
    t.attr_set_json("myapp.list", r#"[1.0, "two", {"three": 3}]"#)
        .unwrap();
    t.emit(Mcv(*b"OHx"), &[0; 16]).unwrap();
    t.mark_set(1, 1).unwrap();
    t.emit(Mcv(*b"OHe"), &[]).unwrap();
    t.finish().unwrap();

    let dir = tmp.path().join("ovni/loom.node0/proc.403/thread.403");
    let ours = fs::read_to_string(dir.join("stream.json")).unwrap();
    assert!(ours.starts_with("{\n    \"version\": 3,\n    \"ovni\": {\n        \"lib\""));
    assert!(!ours.ends_with('\n'));
    let golden = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/traces/marks/ovni/loom.node0/proc.403/thread.403/stream.json");
    let mut want: Value = serde_json::from_str(&fs::read_to_string(golden).unwrap()).unwrap();
    let mut ours: Value = serde_json::from_str(&ours).unwrap();
    // Only the commit differs: it names this implementation.
    ours["ovni"]["lib"]["commit"] = "x".into();
    want["ovni"]["lib"]["commit"] = "x".into();
    let (mut a, mut b) = (Vec::new(), Vec::new());
    key_paths(&ours, "", &mut a);
    key_paths(&want, "", &mut b);
    assert_eq!(a, b);

    let trace = Trace::open(&tmp.path().join("ovni")).unwrap();
    let sys = System::load(&trace, EventTable::builtin()).unwrap();
    assert_eq!(sys.marks[&2].labels[&1], "Blue");
    let mut out = Vec::new();
    let r = tools::dump(&trace, DumpMode::Describe, &mut out, |_| {});
    assert!(r.error.is_none());
    let text = String::from_utf8(out).unwrap();
    assert!(
        text.contains("  OM=  loom.node0/proc.403/thread.403  set mark with value 1 from type 1\n")
    );
}

#[test]
fn initial_metadata_lacks_require_and_finished() {
    let tmp = tempfile::tempdir().unwrap();
    let p = Process::init(tmp.path(), 7, "n.x", 5).unwrap();
    let t = p.thread_init(6).unwrap();
    let v: Value = serde_json::from_slice(&fs::read(t.dir().join("stream.json")).unwrap()).unwrap();
    assert_eq!(v["ovni"]["app_id"], 7);
    assert!(v["ovni"].get("require").is_none());
    assert!(v["ovni"].get("finished").is_none());
    assert_eq!(
        fs::read(t.dir().join("stream.obs")).unwrap(),
        b"ovni\x01\0\0\0"
    );
    let dir = t.dir().to_path_buf();
    // Dropped without finish: the events are kept, the stream stays unfinished.
    let mut t = t;
    t.emit_at(Mcv(*b"OHx"), 10, &[0; 16]).unwrap();
    drop(t);
    assert_eq!(events_of(&dir).len(), 1);
    let v: Value = serde_json::from_slice(&fs::read(dir.join("stream.json")).unwrap()).unwrap();
    assert!(v["ovni"].get("finished").is_none());
}

#[test]
fn events_after_the_last_flush_are_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let p = Process::init(tmp.path(), 1, "n", 1).unwrap();
    let mut t = p.thread_init(1).unwrap();
    let ohx = Ev::new(b"OHx")
        .clock(100)
        .payload_add(&0i32.to_le_bytes())
        .unwrap()
        .payload_add(&[0xff; 12])
        .unwrap();
    t.emit_ev(&ohx).unwrap();
    t.flush().unwrap();
    t.emit_at(Mcv(*b"OHe"), 200, &[]).unwrap();
    let dir = t.dir().to_path_buf();
    t.finish().unwrap();
    let ev = events_of(&dir);
    let mcvs: Vec<&str> = ev.iter().map(|e| e.0.as_str()).collect();
    // As libovni, the flush's OF[/OF] pair follows the flushed events; unlike libovni, the
    // events after the last flush reach the file.
    assert_eq!(mcvs, ["OHx", "OF[", "OF]", "OHe"]);
    assert_eq!((ev[0].1, ev[0].2.len()), (100, 16));
    assert!(ev[1].1 <= ev[2].1);
}

#[test]
fn automatic_flush_follows_the_triggering_event() {
    let tmp = tempfile::tempdir().unwrap();
    let p = Process::with_buffer_size(tmp.path(), 1, "n", 1, 120).unwrap();
    let mut t = p.thread_init(1).unwrap();
    // 10 events of 12 bytes fill 120 bytes: the 10th triggers the flush.
    for c in 0..12 {
        t.emit_at(Mcv(*b"OHp"), c, &[]).unwrap();
    }
    let dir = t.dir().to_path_buf();
    t.finish().unwrap();
    let mcvs: Vec<String> = events_of(&dir).into_iter().map(|e| e.0).collect();
    let mut want = vec!["OHp"; 10];
    want.extend(["OF[", "OF]", "OHp", "OHp"]);
    assert_eq!(mcvs, want);
}

#[test]
fn rerun_truncates_the_stream() {
    let tmp = tempfile::tempdir().unwrap();
    for n in [10, 2] {
        let p = Process::init(tmp.path(), 1, "n", 1).unwrap();
        let mut t = p.thread_init(1).unwrap();
        for c in 0..n {
            t.emit_at(Mcv(*b"OHp"), c, &[]).unwrap();
        }
        t.finish().unwrap();
    }
    let ev = events_of(tmp.path());
    assert_eq!(ev.len(), 2);
}

#[test]
fn misuse_is_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    assert!(matches!(
        Process::init(tmp.path(), 1, "a/b", 1),
        Err(Error::Usage(UsageError::BadLoom))
    ));
    assert!(Process::init(tmp.path(), 1, "n", 0).is_err());
    let p = Process::with_buffer_size(tmp.path(), 1, "n", 1, 1024).unwrap();
    assert!(p.thread_init(0).is_err());
    let mut t = p.thread_init(1).unwrap();
    assert!(matches!(
        p.thread_init(1),
        Err(Error::Usage(UsageError::ThreadExists(1)))
    ));
    let m = Mcv(*b"XAa");
    assert!(matches!(
        t.emit(m, &[1]),
        Err(Error::Usage(UsageError::PayloadTooSmall(1)))
    ));
    assert!(t.emit(m, &[0; 17]).is_err());
    assert!(matches!(
        t.emit_jumbo(m, &[0; 1024]),
        Err(Error::Usage(UsageError::JumboTooLarge(1024)))
    ));
    assert!(Ev::new(b"XAa").payload_add(&[1]).is_err());
    assert!(Ev::new(b"XAa")
        .payload_add(&[0; 10])
        .unwrap()
        .payload_add(&[0; 8])
        .is_err());
    assert!(t.require("x", "1.0.0").is_err());
    assert!(t.require("no.dot", "1.0.0").is_err());
    assert!(t.require("nosv", "2.7").is_err());
    assert!(t.mark_type(100, 0, "t").is_err());
    t.mark_type(3, 0, "t").unwrap();
    assert!(t.mark_type(3, 0, "t").is_err());
    assert!(t.mark_label(4, 1, "l").is_err());
    assert!(t.mark_label(3, 0, "l").is_err());
    t.mark_label(3, 1, "l").unwrap();
    assert!(t.mark_label(3, 1, "l").is_err());
    assert!(t.mark_push(3, 0).is_err());
    assert!(t.set_rank(2, 2).is_err());
    t.attr_set("a.b", 1).unwrap();
    assert!(t.attr_set("a.b.c", 1).is_err());
    assert!(t.attr_set("a..c", 1).is_err());
    assert!(t.attr_has("a.b") && !t.attr_has("a.c"));
    // Nothing invalid reached the stream.
    let dir = t.dir().to_path_buf();
    t.finish().unwrap();
    assert!(events_of(&dir).is_empty());
}

#[test]
fn many_threads_keep_every_event_in_order() {
    const THREADS: i32 = 4;
    const EVENTS: u64 = 20_000;
    let tmp = tempfile::tempdir().unwrap();
    let p = Process::with_buffer_size(tmp.path(), 1, "n", 9, 4096).unwrap();
    std::thread::scope(|s| {
        for tid in 1..=THREADS {
            let p = p.clone();
            s.spawn(move || {
                let mut t = p.thread_init(tid).unwrap();
                t.add_cpu(tid - 1, tid - 1).unwrap();
                t.emit(Mcv(*b"OHx"), &[0; 16]).unwrap();
                for seq in 0..EVENTS {
                    let mut payload = [0u8; 12];
                    payload[..4].copy_from_slice(&tid.to_le_bytes());
                    payload[4..].copy_from_slice(&seq.to_le_bytes());
                    t.emit(Mcv(*b"XSq"), &payload).unwrap();
                }
                t.emit(Mcv(*b"OHe"), &[]).unwrap();
                t.finish().unwrap();
            });
        }
    });
    let trace = Trace::open(tmp.path()).unwrap();
    assert_eq!(trace.streams().len(), THREADS as usize);
    System::load(&trace, EventTable::builtin()).unwrap();
    let mut next = [0u64; THREADS as usize];
    let mut flushes = 0;
    for m in trace.merged() {
        let m = m.unwrap();
        assert!(m.backwards_from.is_none());
        match &m.event.mcv.0 {
            b"XSq" => {
                let tid = i32::from_le_bytes(m.event.payload[..4].try_into().unwrap());
                let seq = u64::from_le_bytes(m.event.payload[4..].try_into().unwrap());
                let slot = &mut next[(tid - 1) as usize];
                assert_eq!(seq, *slot, "thread {tid}");
                *slot += 1;
            }
            b"OF[" => flushes += 1,
            _ => {}
        }
    }
    assert_eq!(next, [EVENTS; THREADS as usize]);
    assert!(flushes >= THREADS as usize * 100);
}

#[derive(Debug, Clone)]
enum Gen {
    Normal(u8, Vec<u8>),
    Jumbo(u8, Vec<u8>),
}

fn gen_event() -> impl Strategy<Value = Gen> {
    prop_oneof![
        (
            any::<u8>(),
            prop_oneof![Just(0usize), 2usize..=16]
                .prop_flat_map(|n| proptest::collection::vec(any::<u8>(), n))
        )
            .prop_map(|(v, p)| Gen::Normal(v, p)),
        (any::<u8>(), proptest::collection::vec(any::<u8>(), 0..600))
            .prop_map(|(v, p)| Gen::Jumbo(v, p)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn write_then_read_round_trips(
        threads in proptest::collection::vec(proptest::collection::vec(gen_event(), 0..200), 1..4),
        buffer in 700usize..4096,
    ) {
        let tmp = tempfile::tempdir().unwrap();
        let p = Process::with_buffer_size(tmp.path(), 1, "n", 1, buffer).unwrap();
        std::thread::scope(|s| {
            for (i, evs) in threads.iter().enumerate() {
                let p = p.clone();
                s.spawn(move || {
                    let mut t = p.thread_init(i as i32 + 1).unwrap();
                    t.add_cpu(i as i32, i as i32).unwrap();
                    for (c, e) in evs.iter().enumerate() {
                        match e {
                            Gen::Normal(v, pl) => t.emit_at(Mcv([b'Y', b'N', *v]), c as u64, pl).unwrap(),
                            Gen::Jumbo(v, d) => t.emit_jumbo_at(Mcv([b'Y', b'J', *v]), c as u64, d).unwrap(),
                        }
                    }
                    t.finish().unwrap();
                });
            }
        });
        let trace = Trace::open(tmp.path()).unwrap();
        System::load(&trace, EventTable::builtin()).unwrap();
        for (i, evs) in threads.iter().enumerate() {
            let s = &trace.streams()[i];
            let got: Vec<Gen> = s
                .events()
                .map(|e| e.unwrap().1)
                .filter(|e| e.mcv.0[0] == b'Y')
                .map(|e| match e.jumbo_data() {
                    Some(d) => Gen::Jumbo(e.mcv.0[2], d.to_vec()),
                    None => Gen::Normal(e.mcv.0[2], e.payload.to_vec()),
                })
                .collect();
            prop_assert_eq!(format!("{got:?}"), format!("{evs:?}"));
            let clocks: Vec<u64> = s.events().map(|e| e.unwrap().1)
                .filter(|e| e.mcv.0[0] == b'Y').map(|e| e.clock).collect();
            prop_assert_eq!(clocks, (0..evs.len() as u64).collect::<Vec<_>>());
        }
        let mut out = Vec::new();
        let r = tools::dump(&trace, DumpMode::Hex, &mut out, |_| {});
        prop_assert!(r.error.is_none());
    }

    #[test]
    fn decoding_arbitrary_bytes_never_panics(data in proptest::collection::vec(any::<u8>(), 0..300)) {
        let mut b = ovni::raw::stream_header().to_vec();
        b.extend_from_slice(&data);
        let s = ovni::Stream::from_bytes("s", "s", serde_json::json!({"version": 3}), b).unwrap();
        let mut total = 8u64;
        let mut failed = false;
        for e in s.events() {
            match e {
                Ok((off, ev)) => {
                    prop_assert_eq!(off, total);
                    total += ev.size() as u64;
                }
                Err(Error::Stream { offset, .. }) => {
                    prop_assert_eq!(offset, total);
                    failed = true;
                }
                Err(other) => prop_assert!(false, "{other}"),
            }
        }
        prop_assert!(failed || total == 8 + data.len() as u64);
        let trace = Trace::from_streams(vec![s]);
        let mut out = Vec::new();
        let _ = tools::dump(&trace, DumpMode::Describe, &mut out, |_| {});
    }
}
