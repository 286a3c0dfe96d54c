//! Memory bound of metadata reading: for any `stream.json`, the peak of heap memory while a
//! stream is loaded stays within 4 times the file size plus a constant, and files above the
//! documented limit are refused before they are read.
//!
//! The test runs in a process of its own, so the counting allocator sees nothing else.

use std::fs;
use std::io::Write;
use std::path::Path;
use std::sync::atomic::Ordering;

use crate::util::{in_own_process, LIVE, PEAK};

const HEAD: &str = r#"{"version": 3, "ovni": {"lib": {"version": "1.14.0", "commit": "x"},
 "part": "thread", "tid": 1, "pid": 1, "loom": "n0", "app_id": 1,
 "require": {"ovni": "1.1.0"}, "finished": 1"#;

/// Writes a stream whose `stream.json` is `HEAD`, then `body` (written by the closure), then
/// `}}`; returns the file size.
fn stream(dir: &Path, body: impl FnOnce(&mut dyn Write)) -> u64 {
    fs::create_dir_all(dir).unwrap();
    let mut f = std::io::BufWriter::new(fs::File::create(dir.join("stream.json")).unwrap());
    f.write_all(HEAD.as_bytes()).unwrap();
    body(&mut f);
    f.write_all(b"}}").unwrap();
    f.flush().unwrap();
    drop(f);
    fs::write(dir.join("stream.obs"), ovni::raw::stream_header()).unwrap();
    fs::metadata(dir.join("stream.json")).unwrap().len()
}

/// Peak heap growth while loading the stream in `dir`, and whether it loaded.
fn peak_of_load(dir: &Path) -> (usize, Result<ovni::Stream, ovni::Error>) {
    let base = LIVE.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    let r = ovni::Stream::load(dir, b"s".to_vec());
    (PEAK.load(Ordering::Relaxed) - base, r)
}

fn repeat(w: &mut dyn Write, n: usize, item: &dyn Fn(usize) -> String) {
    for i in 0..n {
        if i > 0 {
            w.write_all(b",").unwrap();
        }
        w.write_all(item(i).as_bytes()).unwrap();
    }
}

/// Writes the hostile part of a `stream.json`.
type Body = Box<dyn Fn(&mut dyn Write)>;

#[test]
fn metadata_memory_is_bounded_by_four_times_the_file() {
    if !in_own_process("meta_memory::metadata_memory_is_bounded_by_four_times_the_file") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    const SLACK: usize = 1 << 20;
    // Entries of the other hostile shapes: enough for their cost per entry to dominate.
    const N: usize = 200_000;
    let cases: Vec<(&str, Body)> = vec![
        // The reported case: an extra array of 20 M numbers (38 MiB).
        (
            "extra array",
            Box::new(|w| {
                w.write_all(b", \"extra\": [0").unwrap();
                let chunk = ",0".repeat(1 << 16);
                for _ in 0..(20_000_000 >> 16) {
                    w.write_all(chunk.as_bytes()).unwrap();
                }
                w.write_all(b"]").unwrap();
            }),
        ),
        (
            "nested unknown objects",
            Box::new(|w| {
                w.write_all(b", \"x\": {").unwrap();
                repeat(w, N, &|i| {
                    format!("\"k{i}\": {{\"a\": [1, {{}}], \"b\": \"s\"}}")
                });
                w.write_all(b"}").unwrap();
            }),
        ),
        (
            "many loom CPUs",
            Box::new(|w| {
                w.write_all(b", \"loom_cpus\": [").unwrap();
                repeat(w, N, &|i| format!("{{\"index\":{i},\"phyid\":{i}}}"));
                w.write_all(b"]").unwrap();
            }),
        ),
        (
            "many mark labels",
            Box::new(|w| {
                w.write_all(b", \"mark\": {\"1\": {\"title\": \"t\", \"chan_type\": \"single\", \"labels\": {").unwrap();
                repeat(w, N, &|i| format!("\"{}\":\"a\"", i + 1));
                w.write_all(b"}}}").unwrap();
            }),
        ),
        (
            "many require entries",
            Box::new(|w| {
                w.write_all(b", \"require\": {").unwrap();
                repeat(w, N, &|i| format!("\"m{i}\":\"1.0.0\""));
                w.write_all(b"}").unwrap();
            }),
        ),
        (
            "many bad mark types",
            Box::new(|w| {
                w.write_all(b", \"mark\": {").unwrap();
                repeat(w, N, &|i| format!("\"{}\":{{}}", i + 100));
                w.write_all(b"}").unwrap();
            }),
        ),
    ];
    let mut failures = Vec::new();
    for (i, (name, body)) in cases.iter().enumerate() {
        let dir = tmp.path().join(format!("c{i}"));
        let size = stream(&dir, |w| body(w));
        let (peak, r) = peak_of_load(&dir);
        let bound = 4 * size as usize + SLACK;
        if r.is_err() || peak > bound {
            failures.push(format!(
                "{name}: {size} bytes, peak {peak} (bound {bound}), load {:?}",
                r.err()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));

    // Past the limit: refused before reading (a sparse file).
    let dir = tmp.path().join("huge");
    stream(&dir, |_| {});
    let f = fs::OpenOptions::new()
        .write(true)
        .open(dir.join("stream.json"))
        .unwrap();
    f.set_len(ovni::read::meta::MAX_STREAM_JSON + 1).unwrap();
    let (peak, r) = peak_of_load(&dir);
    assert!(peak < SLACK, "{peak}");
    let e = r.unwrap_err();
    assert!(
        matches!(
            e,
            ovni::Error::Metadata {
                problem: ovni::MetaProblem::FileTooLarge { .. },
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("larger than"), "{e}");
}
