//! The emulator on hostile input: truncated and corrupted streams, absurd sizes, endless mark
//! pushes. It must never panic, must report a typed error that names the file (or stream) and
//! the byte offset, and must not grow its memory with what the file claims.

use std::fs;
use std::path::{Path, PathBuf};

use crate::util::copy_dir;
use ovni::emu::{emulate, Collect, EmuOptions, Level, Outcome};
use ovni::write::{Process, MARK_STACK};
use ovni::{Error, EventProblem, Mcv, StreamProblem};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/traces")
        .join(name)
        .join("ovni")
}

fn run(dir: &Path) -> (Outcome, Collect) {
    let mut rep = Collect::default();
    let out = emulate(dir, &EmuOptions::default(), &mut rep);
    (out, rep)
}

/// A failed emulation has a typed error and printed at least one ERROR line; a stream error
/// names the `stream.obs` and an offset inside it.
fn check_failure(out: &Outcome, rep: &Collect, obs: &Path, len: u64) {
    if out.ok {
        assert!(out.error.is_none());
        return;
    }
    let e = out.error.as_ref().expect("a failed emulation says why");
    assert!(rep.0.iter().any(|(l, _)| *l == Level::Error), "{e}");
    match e {
        Error::Stream { path, offset, .. } => {
            assert_eq!(path, obs);
            assert!(*offset <= len, "{e}: offset past the end ({len})");
        }
        Error::Event { stream, offset, .. } => {
            assert!(!stream.is_empty());
            assert!(*offset < len, "{e}");
        }
        _ => {}
    }
}

const OBS: &str = "loom.node0/proc.387/thread.387/stream.obs";

#[test]
fn truncated_streams_are_typed_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("ovni");
    copy_dir(&fixture("single"), &dir);
    let obs = dir.join(OBS);
    let full = fs::read(&obs).unwrap();
    for len in 0..full.len() {
        fs::write(&obs, &full[..len]).unwrap();
        let (out, rep) = run(&dir);
        assert!(!out.ok, "cut at {len} accepted");
        check_failure(&out, &rep, &obs, len as u64);
        // Cut inside an event (after the header): the error is the incomplete event.
        if len > 8 {
            match &out.error {
                Some(Error::Stream {
                    problem: StreamProblem::IncompleteEvent { .. },
                    ..
                })
                | Some(Error::Trace(_)) => {}
                other => panic!("cut at {len}: {other:?}"),
            }
        }
    }
}

#[test]
fn corrupted_bytes_never_panic() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("ovni");
    copy_dir(&fixture("single"), &dir);
    let obs = dir.join(OBS);
    let full = fs::read(&obs).unwrap();
    for at in 0..full.len() {
        for v in [0x00u8, 0x0f, 0x13, 0x80, 0xff] {
            let mut bytes = full.clone();
            bytes[at] = v;
            fs::write(&obs, &bytes).unwrap();
            let (out, rep) = run(&dir);
            check_failure(&out, &rep, &obs, bytes.len() as u64);
        }
    }
}

#[test]
fn corrupted_multi_stream_trace_never_panics() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("ovni");
    copy_dir(&fixture("multi"), &dir);
    let obs = dir.join("loom.nodeB/proc.398/thread.398/stream.obs");
    let full = fs::read(&obs).unwrap();
    // A cheap generator: every 7th byte gets a pseudo-random value.
    let mut x = 0x2545_f491_4f6c_dd1du64;
    for at in (0..full.len()).step_by(7) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let mut bytes = full.clone();
        bytes[at] = x as u8;
        fs::write(&obs, &bytes).unwrap();
        let (out, rep) = run(&dir);
        check_failure(&out, &rep, &obs, bytes.len() as u64);
    }
}

#[test]
fn a_huge_jumbo_size_is_an_incomplete_event() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("ovni");
    copy_dir(&fixture("single"), &dir);
    let obs = dir.join(OBS);
    let mut bytes = fs::read(&obs).unwrap();
    // Insert a jumbo OU[ claiming 4 GiB of data after the first event (OHx, 28 bytes).
    let at = 8 + 28;
    let clock = u64::from_le_bytes(bytes[at + 4..at + 12].try_into().unwrap());
    let mut ev = vec![0x13, b'O', b'U', b'['];
    ev.extend_from_slice(&clock.to_le_bytes());
    ev.extend_from_slice(&0xffff_fff0u32.to_le_bytes());
    bytes.splice(at..at, ev);
    fs::write(&obs, &bytes).unwrap();
    let (out, rep) = run(&dir);
    check_failure(&out, &rep, &obs, bytes.len() as u64);
    match out.error {
        Some(Error::Stream {
            offset,
            problem: StreamProblem::IncompleteEvent { .. },
            ..
        }) => assert_eq!(offset, at as u64),
        other => panic!("{other:?}"),
    }
    // The records of the events before it are written.
    let prv = fs::read_to_string(dir.join("thread.prv")).unwrap();
    assert!(prv.contains("2:0:1:1:1:0:4:1\n"), "{prv}");
}

#[test]
fn endless_mark_pushes_stop_at_the_stack_limit() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("ovni");
    let p = Process::init(&dir, 1, "node0", 10).unwrap();
    let mut t = p.thread_init(10).unwrap();
    t.add_cpu(0, 0).unwrap();
    t.mark_type(3, MARK_STACK, "deep").unwrap();
    let mut x = [0u8; 16];
    x[4..8].copy_from_slice(&(-1i32).to_le_bytes());
    t.emit_at(Mcv(*b"OHx"), 100, &x).unwrap();
    let mut m = [0u8; 12];
    m[8..].copy_from_slice(&3i32.to_le_bytes());
    for i in 0..10_000u64 {
        m[..8].copy_from_slice(&(i as i64 + 1).to_le_bytes());
        t.emit_at(Mcv(*b"OM["), 200 + i, &m).unwrap();
    }
    t.emit_at(Mcv(*b"OHe"), 20_000, &[]).unwrap();
    t.finish().unwrap();
    let (out, _) = run(&dir);
    match out.error {
        Some(Error::Event {
            problem: EventProblem::MarkStackFull { mark: 3 },
            ..
        }) => {}
        other => panic!("{other:?}"),
    }
    // The emulation stopped at the 513th push, after writing the others.
    assert_eq!(out.events, 1 + 513);
    assert!(out.written);
}

#[test]
fn an_unwritable_trace_directory_is_an_io_error() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("ovni");
    copy_dir(&fixture("single"), &dir);
    // A directory where an output file goes.
    fs::create_dir(dir.join("cpu.prv")).unwrap();
    let (out, rep) = run(&dir);
    assert!(!out.ok);
    match &out.error {
        Some(Error::Io { path, .. }) => assert!(path.ends_with("cpu.prv")),
        other => panic!("{other:?}"),
    }
    assert!(rep
        .0
        .iter()
        .any(|(l, t)| *l == Level::Error && t.contains("cpu.prv")));
}
