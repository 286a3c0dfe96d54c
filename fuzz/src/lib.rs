//! The bodies of the fuzz targets (`fuzz_targets/*.rs` call them, `tests/corpus.rs` runs them
//! over the committed seeds and regressions). Each takes arbitrary bytes and must neither
//! panic, hang nor allocate without bound; where a property holds for every input (a value
//! read back after it was written, a view that can be built for every parsed file), it is
//! asserted.

use std::path::Path;

use ovni::events::EventTable;
use ovni::metadata::{System, ThreadMeta};
use ovni::read::{Merger, StreamMeta};
use ovni::Stream;

/// A target's body.
pub type Target = fn(&[u8]);

/// The targets, by name: the directory names under `seeds/` and `regressions/`.
pub const TARGETS: &[(&str, Target)] = &[
    ("ftiff_read", ftiff_read),
    ("rsed_trailer", rsed_trailer),
    ("ovni_event", ovni_event),
    ("ovni_stream", ovni_stream),
    ("ovni_stream_json", ovni_stream_json),
    ("fti_config", fti_config),
    ("ovni_view", ovni_view),
    ("fti_posix_meta", fti_posix_meta),
];

/// A POSIX sector meta-data file (`ckpt_io = 1`): every section that reads is consistent (the
/// variables add up to the file size, the group's largest file is no smaller), and writing it
/// back gives the same section.
pub fn fti_posix_meta(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let path = Path::new("sector0-group0.fti");
    for g in 0..8 {
        let Ok(m) = fti::io::posix::parse_rank(path, text, g) else {
            continue;
        };
        let total: u64 = m.vars.iter().map(|v| v.1).sum();
        assert_eq!(total, m.size, "section {g}: variables add up to the size");
        assert!(m.maxs >= m.size, "section {g}: maxs below size");
        // Comment and quote characters in a name are the reader's to strip, not the writer's
        // to quote: FTI writes plain `Ckpt<id>-Rank<r>.fti` names.
        if m.name.contains([';', '#', '"', '\'']) {
            continue;
        }
        let again = fti::io::posix::encode("", std::slice::from_ref(&m));
        assert_eq!(
            fti::io::posix::parse_rank(path, &again, 0).ok().as_ref(),
            Some(&m),
            "section {g} written back:\n{again}"
        );
    }
}

/// An FTI-FF checkpoint file (Rank, Pcof or L4): structure, verification (every hash), the
/// variables read back with their chunk hashes checked, and the views `fti inspect` prints.
pub fn ftiff_read(data: &[u8]) {
    let Ok(ckpt) = ftiff::Checkpoint::parse(data) else {
        return;
    };
    let problems = ckpt.verify(&|_| {});
    for var in ckpt.vars() {
        let read = ckpt.read_var(var.id);
        if problems.is_empty() {
            let bytes = read.unwrap_or_else(|e| panic!("verified file, var {}: {e}", var.id));
            assert_eq!(bytes.len() as u64, var.size);
        }
    }
    let layout = ckpt.layout();
    let _ = ftiff::view::doc_format(&layout);
    let _ = ftiff::view::text("fuzz.fti", data.len() as u64, &ckpt);
    let _ = ftiff::view::json(&ckpt);
}

/// An L3 `RSed` file: its trailer, the checksum of the code, and its views.
pub fn rsed_trailer(data: &[u8]) {
    let Ok(rsed) = ftiff::RsedFile::parse(data) else {
        return;
    };
    let _ = rsed.verify(data, &|_| {});
    let _ = ftiff::view::rsed_text("fuzz.fti", data, &rsed);
    let _ = ftiff::view::rsed_json(&rsed);
}

/// Events back to back (no stream header): each is decoded, its payload decoded against the
/// event table and its description rendered as `ovnidump` prints it.
pub fn ovni_event(data: &[u8]) {
    let table = EventTable::builtin();
    let mut rest = data;
    let mut out = Vec::new();
    while let Ok((ev, n)) = ovni::raw::decode_event(rest) {
        assert!(
            n > 0 && n <= rest.len(),
            "decode_event must consume the event"
        );
        assert_eq!(ev.size(), n);
        if let Some(spec) = table.event(ev.mcv) {
            let _ = spec.decode(&ev);
        }
        out.clear();
        let _ = table.render(&ev, &mut out);
        rest = rest.get(n..).unwrap_or_default();
    }
}

/// A `stream.obs` file: header, every event in file order (decoded and rendered), then the
/// same bytes as two streams merged by clock.
pub fn ovni_stream(data: &[u8]) {
    let stream = |name: &str| {
        Stream::from_bytes(
            name.as_bytes().to_vec(),
            Path::new(name).join("stream.obs"),
            serde_json::Value::Null,
            data.to_vec(),
        )
    };
    let (Ok(a), Ok(b)) = (stream("a"), stream("b")) else {
        return;
    };
    let table = EventTable::builtin();
    let mut out = Vec::new();
    for item in a.events() {
        let Ok((_, ev)) = item else { break };
        if let Some(spec) = table.event(ev.mcv) {
            let _ = spec.decode(&ev);
        }
        out.clear();
        let _ = table.render(&ev, &mut out);
    }
    let streams = [a, b];
    for item in Merger::new(&streams).keep_going() {
        let _ = item;
    }
}

/// A `stream.json` file: the typed keys, the thread metadata and merge rules ovniemu applies,
/// and, for valid metadata, the same thread read back from the keys as JSON
/// (`Stream::meta()`, which leaves ill-typed values out).
pub fn ovni_stream_json(data: &[u8]) {
    let Ok(meta) = StreamMeta::from_reader(data) else {
        return;
    };
    let value = meta.to_value();
    let _ = StreamMeta::from_value(&value);
    let _ = ThreadMeta::from_stream_unfinished("fuzz", &meta);
    if let Ok(thread) = ThreadMeta::from_stream("fuzz", &meta) {
        let again = ThreadMeta::from_json("fuzz", &value);
        assert_eq!(
            again.as_ref().ok(),
            Some(&thread),
            "valid metadata as JSON: {value}"
        );
        let _ = System::from_threads(vec![thread.clone(), thread], EventTable::builtin());
    }
}

/// An FTI configuration file: parsed; when it parses, recording a restart into it (what the
/// runtime writes after the first checkpoint) gives text that parses to that restart.
pub fn fti_config(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let path = Path::new("fuzz.cfg");
    let Ok(cfg) = fti::Config::from_ini_text(path, text) else {
        return;
    };
    let exec_id = "2026-11-26_12-00-00";
    let recorded = fti::restart_text(text, 1, exec_id);
    let again = fti::Config::from_ini_text(path, &recorded)
        .unwrap_or_else(|e| panic!("recorded restart does not parse: {e}\n{recorded}"));
    assert_eq!(again.failure, Some(1), "failure recorded:\n{recorded}");
    assert_eq!(
        again.exec_id.as_deref(),
        Some(exec_id),
        "exec_id recorded:\n{recorded}"
    );
    assert_eq!(again.restart_id, None, "ckpt_id dropped:\n{recorded}");
    // Every other setting is kept (warnings, notes and the raw keys carry line numbers, which
    // move, and the raw keys hold the restart record just written).
    let mut expected = cfg;
    expected.keys = again.keys.clone();
    expected.failure = again.failure;
    expected.exec_id = again.exec_id.clone();
    expected.restart_id = None;
    expected.warnings = again.warnings.clone();
    expected.notes = again.notes.clone();
    assert_eq!(again, expected, "other settings kept:\n{recorded}");
}

/// A `stream.obs` drawn by `ovniview`: the thread model (traces of crashed runs accepted: any
/// cut or corrupted stream is drawn up to its last good event), the summary, the checkpoint
/// table (the runtime's mark titles are defined) and the page, with a budget small enough
/// that levels of detail are cut.
pub fn ovni_view(data: &[u8]) {
    let meta = serde_json::json!({"version": 3, "ovni": {"tid": 1, "pid": 1, "loom": "l",
        "rank": 0, "nranks": 1, "mark": {
            "40": {"title": "FTI level", "chan_type": "stack", "labels": {"1": "L1 checkpoint"}},
            "42": {"title": "FTI phase", "chan_type": "stack", "labels": {"1": "write"}}}}});
    let Ok(stream) = Stream::from_bytes(
        b"t".to_vec(),
        Path::new("t/stream.obs"),
        meta,
        data.to_vec(),
    ) else {
        return;
    };
    let model = ovni_view::Model::build(&ovni::Trace::from_streams(vec![stream]));
    let summary = ovni_view::Summary::of(&model);
    assert_eq!(summary.events, model.events);
    assert!(summary.start_ns <= summary.end_ns);
    let _ = ovni_view::summary::checkpoint_table(&model);
    let opts = ovni_view::PageOptions {
        max_bytes: 16 << 10,
        ..ovni_view::PageOptions::default()
    };
    let html = ovni_view::page::render(&model, &opts);
    assert!(html.ends_with("</html>\n"));
}
