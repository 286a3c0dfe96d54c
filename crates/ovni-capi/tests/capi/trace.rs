//! Traces written through the C API: `tests/c/threads.c` (five pthreads) must give a trace
//! that passes the full metadata validation and the linter, with every event the program
//! logged, in order, plus the flush events libovni adds exactly where it adds them.

use std::fs;
use std::path::Path;

use ovni_rs::events::EventTable;
use ovni_rs::lint::{lint_dir, LintOptions};
use ovni_rs::metadata::System;
use ovni_rs::write::LIB_COMMIT;
use ovni_rs::Trace;
use serde_json::{json, Value};

use crate::util::{self, Link};

/// `OVNI_MAX_EV_BUF`.
const BUFFER: usize = 2 * 1024 * 1024;
const NSTREAMS: usize = 5;

/// One event as stored: MCV, byte 0, clock (`None`: set by the library) and payload.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Ev {
    mcv: String,
    flags: u8,
    clock: Option<u64>,
    payload: Vec<u8>,
}

impl Ev {
    fn normal(mcv: &str, clock: Option<u64>, payload: Vec<u8>) -> Self {
        let flags = if payload.is_empty() {
            0
        } else {
            (payload.len() - 1) as u8
        };
        Self {
            mcv: mcv.to_string(),
            flags,
            clock,
            payload,
        }
    }
}

/// `jumbo_data()` of threads.c: type id seed + 1, the label `type <seed>`, filling letters.
fn jumbo_data(seed: u32, size: u32) -> Vec<u8> {
    let mut d = (seed + 1).to_le_bytes().to_vec();
    d.extend((4..size.saturating_sub(1)).map(|i| b'a' + ((seed + i) % 26) as u8));
    d.push(0);
    if size > 16 {
        let label = format!("type {seed}");
        d[4..4 + label.len()].copy_from_slice(label.as_bytes());
        d[4 + label.len()] = 0;
    }
    d
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len() / 2)
        .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap())
        .collect()
}

/// The stream libovni's buffering makes of a thread's log: an event that would fill the
/// buffer is followed by `OF[`/`OF]` (the write happened before it), and an explicit flush
/// buffers `OF[`/`OF]` for the next write. Nothing is lost at the end.
fn expected(log: &str) -> Vec<Ev> {
    let flush = |out: &mut Vec<Ev>| {
        out.push(Ev::normal("OF[", None, Vec::new()));
        out.push(Ev::normal("OF]", None, Vec::new()));
    };
    let mut out = Vec::new();
    let mut used = 0;
    for line in log.lines() {
        let f: Vec<&str> = line.split(' ').collect();
        let ev = match f[..] {
            ["E", mcv, clock, hex] => Ev::normal(mcv, Some(clock.parse().unwrap()), unhex(hex)),
            ["J", mcv, clock, size, seed] => {
                let size: u32 = size.parse().unwrap();
                let mut payload = size.to_le_bytes().to_vec();
                payload.extend(jumbo_data(seed.parse().unwrap(), size));
                Ev {
                    mcv: mcv.to_string(),
                    flags: 0x13,
                    clock: Some(clock.parse().unwrap()),
                    payload,
                }
            }
            ["M", mcv, ty, value] => {
                let mut payload = value.parse::<i64>().unwrap().to_le_bytes().to_vec();
                payload.extend(ty.parse::<i32>().unwrap().to_le_bytes());
                Ev::normal(mcv, None, payload)
            }
            ["F"] => {
                flush(&mut out);
                used = 24;
                continue;
            }
            _ => panic!("bad log line {line:?}"),
        };
        let size = 12 + ev.payload.len();
        out.push(ev);
        if used + size >= BUFFER {
            flush(&mut out);
            used = size + 24;
        } else {
            used += size;
        }
    }
    out
}

fn stream_events(s: &ovni_rs::Stream) -> Vec<Ev> {
    s.events()
        .map(|e| {
            let (_, e) = e.unwrap();
            Ev {
                mcv: e.mcv.to_string(),
                flags: e.flags,
                clock: Some(e.clock),
                payload: e.payload.to_vec(),
            }
        })
        .collect()
}

/// Compares a stream with the events its thread logged, event for event.
fn check_stream(name: &str, got: &[Ev], mut want: Vec<Ev>) {
    assert_eq!(got.len(), want.len(), "{name}: number of events");
    for (i, (g, w)) in got.iter().zip(&mut want).enumerate() {
        if w.clock.is_none() {
            w.clock = g.clock;
        }
        assert_eq!(g, w, "{name}: event {i}");
    }
    let clocks: Vec<u64> = got.iter().filter_map(|e| e.clock).collect();
    assert!(
        clocks.windows(2).all(|w| w[0] <= w[1]),
        "{name}: clocks go backwards"
    );
}

/// Checks the trace in `dir` against the logs the program left in `logs`.
fn check_trace(dir: &Path, logs: &Path) {
    let trace = Trace::open(dir).unwrap();
    assert_eq!(trace.streams().len(), NSTREAMS);
    let sys = System::load(&trace, EventTable::builtin()).unwrap();
    assert_eq!(sys.threads.len(), NSTREAMS);
    let report = lint_dir(dir, &LintOptions::default());
    assert!(report.accepted(), "{:#}", report.to_json());

    let mut main = None;
    let mut total = 0;
    // Streams with automatic flushes: more OF[ than the thread's explicit flushes.
    let mut auto_flushed = Vec::new();
    for s in trace.streams() {
        // The whole file: user attributes are not among the keys `Stream::meta` keeps.
        let json_path = s.obs_path().with_file_name("stream.json");
        let meta: Value = serde_json::from_slice(&fs::read(json_path).unwrap()).unwrap();
        let meta = &meta;
        let tid = meta["ovni"]["tid"].as_i64().unwrap();
        let log = fs::read_to_string(logs.join(format!("log.{tid}"))).unwrap();
        let got = stream_events(s);
        check_stream(&s.name(), &got, expected(&log));
        total += got.len();
        let flushes = got.iter().filter(|e| e.mcv == "OF[").count();
        if flushes > log.lines().filter(|l| *l == "F").count() {
            let has = |mcv: &str| got.iter().any(|e| e.mcv == mcv);
            auto_flushed.push(if has("VYc") {
                "jumbo"
            } else if has("OB.") {
                "burst"
            } else {
                "other"
            });
        }
        assert_eq!(meta["ovni"]["finished"], 1);
        assert_eq!(
            meta["ovni"]["lib"],
            json!({"version": "1.14.0", "commit": LIB_COMMIT})
        );
        assert_eq!(meta["ovni"]["require"]["ovni"], "1.1.0");
        if meta["ovni"].get("rank").is_some() {
            main = Some(meta.clone());
        } else {
            assert_eq!(
                meta["worker"]["name"],
                format!("Worker {}", meta["worker"]["index"])
            );
        }
    }
    assert_eq!(report.events, total as u64);
    // The burst of small events and the jumbo events filled the buffer.
    auto_flushed.sort_unstable();
    assert_eq!(
        auto_flushed,
        ["burst", "jumbo"],
        "streams flushed automatically"
    );

    let main = main.expect("the main thread's stream has the rank");
    assert_eq!(main["ovni"]["rank"], 0);
    assert_eq!(main["ovni"]["nranks"], 1);
    let cpus: Vec<Value> = (0..=4).map(|i| json!({"index": i, "phyid": i})).collect();
    assert_eq!(main["ovni"]["loom_cpus"], Value::Array(cpus));
    assert_eq!(
        main["ovni"]["mark"]["1"],
        json!({"title": "Phase", "chan_type": "single", "labels": {"1": "init", "2": "work"}})
    );
    assert_eq!(main["ovni"]["mark"]["2"]["chan_type"], "stack");
    assert_eq!(
        main["myapp"],
        json!({
            "pi": 3.25, "answer": 42, "enabled": true, "disabled": false,
            "name": "threads, renamed", "list": [1, "two", {"three": 3}]
        })
    );
    // CPUs declared by two threads, merged.
    assert_eq!(sys.looms.len(), 1);
    assert_eq!(sys.looms[0].cpus.len(), 9);
}

fn warnings(stderr: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(stderr)
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn threads_trace_is_valid_and_holds_every_event() {
    let exe = util::compile("threads", Link::Shared);
    let tmp = tempfile::tempdir().unwrap();
    let out = util::run(&exe, &[], tmp.path(), &[]);
    util::check_success("threads", &out);
    // Each thread initialised itself twice: the second time only warns.
    let warns = warnings(&out.stderr);
    assert_eq!(warns.len(), NSTREAMS, "{warns:?}");
    assert!(warns
        .iter()
        .all(|w| w.starts_with("WARN: thread ") && w.ends_with(" already initialized, ignored")));
    check_trace(&tmp.path().join("ovni"), tmp.path());
}

#[test]
fn threads_trace_through_a_tmpdir() {
    let exe = util::compile("threads", Link::Static);
    let tmp = tempfile::tempdir().unwrap();
    let (stage, trace) = (tmp.path().join("stage"), tmp.path().join("final/trace"));
    let env = [
        ("OVNI_TMPDIR", stage.to_str().unwrap()),
        ("OVNI_TRACEDIR", trace.to_str().unwrap()),
    ];
    let out = util::run(&exe, &["host.staged"], tmp.path(), &env);
    util::check_success("threads", &out);
    check_trace(&trace, tmp.path());
    // Every stream moved, and the emptied temporary tree is gone.
    assert!(!stage.exists());
}

fn rerun_stream(tmp: &Path) -> (Vec<u8>, Value) {
    let dir = tmp.join("ovni/loom.host.rerun/proc.4242/thread.4243");
    let obs = fs::read(dir.join("stream.obs")).unwrap();
    let json = serde_json::from_str(&fs::read_to_string(dir.join("stream.json")).unwrap());
    (obs, json.unwrap())
}

#[test]
fn events_after_the_last_flush_are_kept_and_old_streams_truncated() {
    let exe = util::compile("rerun", Link::Shared);
    let tmp = tempfile::tempdir().unwrap();
    let ob = |clock: u64| {
        let mut e = vec![0, b'O', b'B', b'.'];
        e.extend(clock.to_le_bytes());
        e
    };

    // Never flushed: libovni leaves an 8-byte stream; every event is there.
    util::check_success("rerun 10", &util::run(&exe, &["10"], tmp.path(), &[]));
    let (obs, meta) = rerun_stream(tmp.path());
    let mut want = ovni_rs::raw::stream_header().to_vec();
    (0..10).for_each(|i| want.extend(ob(1000 + i)));
    assert_eq!(obs, want);
    assert_eq!(meta["ovni"]["finished"], 1);

    // The same pid and tid again with fewer events: no stale tail from the first run.
    util::check_success("rerun 2", &util::run(&exe, &["2"], tmp.path(), &[]));
    let (obs, _) = rerun_stream(tmp.path());
    assert_eq!(obs.len(), 8 + 2 * 12);
    assert_eq!(obs[8..], [ob(1000), ob(1001)].concat());

    // A thread that exits without ovni_thread_free keeps its events, and its stream stays
    // recognisably unfinished.
    let out = util::run(&exe, &["3", "nofree"], tmp.path(), &[]);
    util::check_success("rerun 3 nofree", &out);
    let (obs, meta) = rerun_stream(tmp.path());
    assert_eq!(obs.len(), 8 + 3 * 12);
    assert!(meta["ovni"].get("finished").is_none());
}
