//! Unit tests of the writer parts libovni's C API builds on: event images, staged
//! (`OVNI_TMPDIR`) processes and mark types found in the metadata.

use std::fs;
use std::path::Path;

use super::*;
use crate::read::Trace;

/// An event image; the payload bytes past `payload` are filled with 0xee, which must never
/// reach the stream.
fn image(byte0: u8, mcv: &[u8; 3], clock: u64, payload: &[u8]) -> [u8; EV_IMAGE_SIZE] {
    let mut e = [0xee; EV_IMAGE_SIZE];
    let (head, rest) = e.split_at_mut(4);
    head.copy_from_slice(&[byte0, mcv[0], mcv[1], mcv[2]]);
    let (clk, pl) = rest.split_at_mut(8);
    clk.copy_from_slice(&clock.to_le_bytes());
    pl[..payload.len()].copy_from_slice(payload);
    e
}

fn obs(dir: &Path) -> Vec<u8> {
    fs::read(dir.join("stream.obs")).unwrap()
}

#[test]
fn emit_image_writes_the_same_bytes_as_emit_at() {
    let tmp = tempfile::tempdir().unwrap();
    let p = Process::init(tmp.path(), 1, "n", 1).unwrap();
    let (mut a, mut b) = (p.thread_init(1).unwrap(), p.thread_init(2).unwrap());
    let payload: Vec<u8> = (1..=16).collect();
    for (i, n) in [0usize, 2, 3, 7, 8, 15, 16].into_iter().enumerate() {
        let pl = &payload[..n];
        let clock = 1000 + i as u64;
        a.emit_at(Mcv(*b"XAb"), clock, pl).unwrap();
        let code = raw::size_code(n).unwrap();
        b.emit_image(&image(code, b"XAb", clock, pl)).unwrap();
    }
    let (da, db) = (a.dir().to_path_buf(), b.dir().to_path_buf());
    a.finish().unwrap();
    b.finish().unwrap();
    assert_eq!(obs(&da), obs(&db));
}

#[test]
fn emit_image_keeps_unknown_flag_bits_and_rejects_jumbo() {
    let tmp = tempfile::tempdir().unwrap();
    let p = Process::init(tmp.path(), 1, "n", 1).unwrap();
    let mut t = p.thread_init(1).unwrap();
    t.emit_image(&image(0x21, b"XAb", 5, &[9, 9])).unwrap();
    assert!(matches!(
        t.emit_image(&image(0x13, b"XJb", 5, &[0, 0, 0, 0])),
        Err(Error::Usage(UsageError::JumboImage))
    ));
    let dir = t.dir().to_path_buf();
    t.finish().unwrap();
    let mut want = raw::stream_header().to_vec();
    want.extend_from_slice(&[0x21, b'X', b'A', b'b', 5, 0, 0, 0, 0, 0, 0, 0, 9, 9]);
    assert_eq!(obs(&dir), want);
}

#[test]
fn emit_image_flushes_like_emit_at() {
    // A 64-byte buffer: the fourth 16-byte event would fill it (48 + 16 >= 64), so the
    // buffer is written first and the flush is recorded after that event.
    let tmp = tempfile::tempdir().unwrap();
    let p = Process::with_buffer_size(tmp.path(), 1, "n", 1, 64).unwrap();
    let mut t = p.thread_init(1).unwrap();
    for c in 0..5u64 {
        t.emit_image(&image(0x03, b"OAs", c, &[1, 0, 0, 0]))
            .unwrap();
    }
    t.finish().unwrap();
    let trace = Trace::open(tmp.path()).unwrap();
    let mcvs: Vec<String> = trace.streams()[0]
        .events()
        .map(|e| e.unwrap().1.mcv.to_string())
        .collect();
    assert_eq!(mcvs, ["OAs", "OAs", "OAs", "OAs", "OF[", "OF]", "OAs"]);
}

#[test]
fn staged_streams_move_to_the_trace_dir_when_finished() {
    let tmp = tempfile::tempdir().unwrap();
    let (stage, trace) = (tmp.path().join("stage"), tmp.path().join("trace"));
    let p = Process::init_staged(&stage, &trace, 1, "n.x", 7).unwrap();
    let rel = Path::new("loom.n.x/proc.7");
    assert!(stage.join(rel).is_dir() && trace.join(rel).is_dir());

    let mut done = p.thread_init(8).unwrap();
    let unfinished = p.thread_init(9).unwrap();
    assert_eq!(done.dir(), stage.join(rel).join("thread.8"));
    assert!(trace.join(rel).join("thread.8").is_dir());
    done.emit_at(Mcv(*b"OHp"), 3, &[]).unwrap();
    done.finish().unwrap();
    assert!(!stage.join(rel).join("thread.8").exists());
    let t = Trace::open(&trace.join(rel).join("thread.8")).unwrap();
    let s = &t.streams()[0];
    assert_eq!(s.meta()["ovni"]["finished"], 1);
    assert_eq!(s.events().count(), 1);

    // The unfinished stream keeps the temporary tree alive.
    p.remove_tmp_dirs().unwrap();
    assert!(stage.join(rel).join("thread.9").is_dir());
    drop(unfinished);
    fs::remove_dir_all(stage.join(rel).join("thread.9")).unwrap();
    p.remove_tmp_dirs().unwrap();
    assert!(!stage.exists());
    assert!(trace.join(rel).join("thread.8/stream.obs").is_file());
}

#[test]
fn unstaged_process_has_no_tmp_dirs_to_remove() {
    let tmp = tempfile::tempdir().unwrap();
    let p = Process::init(tmp.path(), 1, "n", 1).unwrap();
    p.remove_tmp_dirs().unwrap();
    assert!(tmp.path().join("loom.n/proc.1").is_dir());
}

#[test]
fn mark_types_are_the_ones_in_the_metadata() {
    let tmp = tempfile::tempdir().unwrap();
    let p = Process::init(tmp.path(), 1, "n", 1).unwrap();
    let mut t = p.thread_init(1).unwrap();
    t.attr_set_json("ovni.mark.3", r#"{"title": "T", "chan_type": "single"}"#)
        .unwrap();
    t.mark_label(3, 1, "one").unwrap();
    assert!(matches!(
        t.mark_type(3, 0, "again"),
        Err(Error::Usage(UsageError::MarkTypeDefined(3)))
    ));
    // A type key that is not an object cannot take a label.
    t.attr_set("ovni.mark.4", 1).unwrap();
    assert!(matches!(
        t.mark_label(4, 1, "x"),
        Err(Error::Usage(UsageError::BadAttrPath(_)))
    ));
}
