//! Corruptions that crashed or desynchronised the original tools: ours print the events
//! before the problem, then fail with a message naming the stream and the offset.

use std::fs;
use std::path::Path;
use std::process::{Command, Output};

use crate::util::{corrupt, fixture};

fn dump(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ovnidump"))
        .args(args)
        .arg("ovni")
        .current_dir(dir)
        .output()
        .unwrap()
}

fn golden_lines(case: &str, n: usize) -> String {
    let g = fs::read_to_string(fixture(case).join("golden/ovnidump.stdout")).unwrap();
    g.lines().take(n).map(|l| format!("{l}\n")).collect()
}

// In jumbo-control the jumbo OU[ starts at offset 52; its size field is at 64.
fn set_jumbo_size(obs: &mut [u8], n: u32) {
    obs[64..68].copy_from_slice(&n.to_le_bytes());
}

#[test]
fn jumbo_size_int_max_does_not_crash() {
    for n in [0x7fff_ffffu32, 0xffff_fff8, u32::MAX] {
        let t = corrupt("invalid/jumbo-control", |o| set_jumbo_size(o, n));
        for args in [&[][..], &["-x"][..]] {
            let out = dump(t.path(), args);
            assert_eq!(out.status.code(), Some(1), "size {n:#x}");
            if args.is_empty() {
                assert_eq!(
                    String::from_utf8(out.stdout).unwrap(),
                    golden_lines("invalid/jumbo-control", 2)
                );
            }
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(err.contains("thread.387/stream.obs"), "{err}");
            assert!(err.contains("offset 52"), "{err}");
            assert!(err.contains("incomplete event"), "{err}");
        }
    }
}

#[test]
fn ohx_without_payload_is_an_error_not_a_crash() {
    // The first event is OHx with 16 payload bytes; drop them and clear the size code.
    let t = corrupt("traces/single", |o| {
        o[8] = 0;
        o.drain(20..36);
    });
    let out = dump(t.path(), &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("offset 8") && err.contains("OHx"), "{err}");
    // The hex dump does not decode payloads, so it succeeds.
    let out = dump(t.path(), &["-x"]);
    assert_eq!(out.status.code(), Some(0));
    let first = String::from_utf8(out.stdout).unwrap();
    assert!(first.starts_with("736496140673  OHx  loom.node0/proc.387/thread.387  \n"));
}

#[test]
fn short_payload_does_not_print_the_next_event() {
    // OAs (offset 36) carries 4 payload bytes; keep 2. The framing stays consistent, so the
    // event reads fine but is too short for its signature (the C tool printed bytes of the
    // next event as the CPU).
    let t = corrupt("traces/single", |o| {
        o[36] = 0x01;
        o.drain(50..52);
    });
    let out = dump(t.path(), &[]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        golden_lines("traces/single", 1)
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("offset 36") && err.contains("OAs"), "{err}");
}

#[test]
fn unknown_flag_bits_are_ignored() {
    let t = corrupt("traces/single", |o| {
        let mut off = 8;
        while off < o.len() {
            let n = 12 + ovni::raw::normal_payload_len(o[off]);
            o[off] |= 0xe0;
            off += n;
        }
    });
    let out = dump(t.path(), &[]);
    assert_eq!(out.status.code(), Some(0));
    let want = fs::read(fixture("traces/single/golden/ovnidump.stdout")).unwrap();
    assert_eq!(out.stdout, want);
}

/// A copy of traces/single whose stream.obs holds `events` after the header.
fn with_events(events: &[u8]) -> tempfile::TempDir {
    corrupt("traces/single", |o| {
        o.truncate(8);
        o.extend_from_slice(events);
    })
}

fn vyc(clock: u64, label_len: usize) -> Vec<u8> {
    let mut data = 7u32.to_le_bytes().to_vec();
    data.extend(std::iter::repeat_n(b'a', label_len));
    data.push(0);
    let mut ev = vec![0x13, b'V', b'Y', b'c'];
    ev.extend_from_slice(&clock.to_le_bytes());
    ev.extend_from_slice(&(data.len() as u32).to_le_bytes());
    ev.extend_from_slice(&data);
    ev
}

#[test]
fn description_of_1024_bytes_prints_unknown_and_the_original_errors() {
    let prefix = "creates task type 7 with label \"".len();
    // 1023 bytes of text print in full; one more byte prints UNKNOWN.
    let fits = 1023 - prefix - 1;
    let mut obs = vyc(1000, fits);
    obs.extend(vyc(2000, fits + 1));
    let t = with_events(&obs);
    let out = dump(t.path(), &[]);
    assert_eq!(out.status.code(), Some(0));
    let stdout = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = stdout.lines().collect();
    let rel = "loom.node0/proc.387/thread.387";
    let full = format!("creates task type 7 with label \"{}\"", "a".repeat(fits));
    assert_eq!(full.len(), 1023);
    assert_eq!(
        lines,
        [
            format!("      1000  VYc  {rel}  {full}"),
            format!("      2000  VYc  {rel}  UNKNOWN"),
        ]
    );
    assert_eq!(
        String::from_utf8(out.stderr).unwrap(),
        "ovnidump: INFO: loaded 1 streams\n\
         ovnidump: ERROR: print_arg: no space for string argument\n\
         ovnidump: ERROR: format_region: cannot print argument label\n\
         ovnidump: ERROR: ev_spec_print: format_region failed\n\
         ovnidump: ERROR: model_event_print: cannot print event signature for VYc\n\
         ovnidump: ERROR: emit: failed to decode event VYc\n"
    );
}
