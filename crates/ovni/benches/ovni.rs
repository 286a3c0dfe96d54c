//! Emit cost and reader throughput, each next to a baseline measured in the same run.
//!
//! `cargo bench -p ovni --bench ovni` (env `OVNI_BENCH_MB`, default 256: size of the trace
//! read back; `OVNI_BENCH_EVENTS`, default 5e6: events per emit measurement).

use std::fs::File;
use std::hint::black_box;
use std::io::{self, Write};
use std::time::Instant;

use ovni::raw::{encode_normal, Mcv};
use ovni::tools::{self, DumpMode};
use ovni::write::{clock_now, Process, DEFAULT_BUFFER_SIZE};
use ovni::Trace;

fn env_num(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse::<f64>().ok())
        .map_or(default, |v| v as u64)
}

/// One clock read plus copying the event's bytes into a 2 MiB buffer that is written to the
/// page cache when full: the floor for an emit.
fn baseline(file: &mut File, event: &[u8], n: u64) -> f64 {
    let mut buf = vec![0u8; DEFAULT_BUFFER_SIZE + 4096];
    let mut used = 0;
    let t = Instant::now();
    for _ in 0..n {
        let c = clock_now();
        if used + event.len() >= DEFAULT_BUFFER_SIZE {
            file.write_all(&buf[..used]).unwrap();
            used = 0;
        }
        let dst = &mut buf[used..used + event.len()];
        dst.copy_from_slice(event);
        dst[4..12].copy_from_slice(&c.to_le_bytes());
        used += event.len();
    }
    file.write_all(&buf[..used]).unwrap();
    black_box(&buf);
    t.elapsed().as_nanos() as f64 / n as f64
}

fn emit_bench(dir: &std::path::Path, kind: &str, n: u64) -> (f64, f64) {
    let p = Process::init(dir.join(kind), 1, "bench", 1).unwrap();
    let mut th = p.thread_init(1).unwrap();
    let payload16 = [7u8; 16];
    let jumbo = [9u8; 1024];
    let t = Instant::now();
    for _ in 0..n {
        match kind {
            "none" => th.emit(Mcv(*b"OHp"), &[]).unwrap(),
            "p16" => th.emit(Mcv(*b"OHx"), &payload16).unwrap(),
            _ => th.emit_jumbo(Mcv(*b"XJb"), &jumbo).unwrap(),
        }
    }
    th.finish().unwrap();
    let ours = t.elapsed().as_nanos() as f64 / n as f64;
    let mut ev = Vec::new();
    match kind {
        "none" => encode_normal(&mut ev, Mcv(*b"OHp"), 0, &[]).unwrap(),
        "p16" => encode_normal(&mut ev, Mcv(*b"OHx"), 0, &payload16).unwrap(),
        _ => ovni::raw::encode_jumbo(&mut ev, Mcv(*b"XJb"), 0, &jumbo).unwrap(),
    }
    let mut f = File::create(dir.join(format!("{kind}.base"))).unwrap();
    let base = baseline(&mut f, &ev, n);
    (ours, base)
}

fn main() {
    // `cargo test --benches` runs this with --bench absent; keep that quick.
    let quick = !std::env::args().any(|a| a == "--bench");
    let n = if quick {
        10_000
    } else {
        env_num("OVNI_BENCH_EVENTS", 5_000_000)
    };
    let mb = if quick {
        1
    } else {
        env_num("OVNI_BENCH_MB", 256)
    };
    let tmp = tempfile::tempdir().unwrap();
    println!("emit cost, {n} events per case ({} for jumbo) (ns/event; baseline = clock read + copy + write when the 2 MiB buffer is full)", (n / 20).max(1000));
    for (kind, orig) in [("none", 55.6), ("p16", 98.4), ("jumbo1k", 457.0)] {
        // 1 KiB events: fewer of them, to keep the bytes written comparable.
        let count = if kind == "jumbo1k" {
            (n / 20).max(1000)
        } else {
            n
        };
        let (ours, base) = emit_bench(tmp.path(), kind, count);
        println!(
            "  {kind:8} ours {ours:7.1}  baseline {base:7.1}  ratio {:.2} (goal <= 1.5: {})  libovni (other run) {orig}",
            ours / base,
            if ours / base <= 1.5 { "met" } else { "missed" }
        );
    }

    // A trace of `mb` MiB of 12-byte events in one stream, read back warm.
    let dir = tmp.path().join("read");
    let p = Process::init(&dir, 1, "bench", 1).unwrap();
    let mut th = p.thread_init(1).unwrap();
    let events = mb * 1024 * 1024 / 12;
    for c in 0..events {
        th.emit_at(Mcv(*b"OHp"), c, &[]).unwrap();
    }
    th.finish().unwrap();
    let trace = Trace::open(&dir).unwrap();
    let s = &trace.streams()[0];
    let bytes = s.bytes().len() as f64;
    // Warm the page cache and measure the raw memory-read floor.
    let t = Instant::now();
    let sum: u64 = s.bytes().chunks(8).map(|c| u64::from(c[0])).sum();
    black_box(sum);
    let scan = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let mut count = 0u64;
    let mut acc = 0u64;
    for e in s.events() {
        let (_, e) = e.unwrap();
        acc = acc.wrapping_add(e.clock);
        count += 1;
    }
    black_box(acc);
    let read = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let mut mcount = 0u64;
    for m in trace.merged() {
        black_box(m.unwrap().event.clock);
        mcount += 1;
    }
    let merged = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let mut sink = io::sink();
    let r = tools::dump(&trace, DumpMode::Describe, &mut sink, |_| {});
    assert!(r.error.is_none());
    let dump = t.elapsed().as_secs_f64();
    println!(
        "reader, {:.0} MiB, {count} events of 12 bytes",
        bytes / 1048576.0
    );
    println!(
        "  byte scan (1 load per 8 B) {:8.2} GB/s",
        bytes / scan / 1e9
    );
    println!(
        "  stream iterator  {:8.1} M events/s ({:.2} GB/s; goal >= 100 M/s: {})",
        count as f64 / read / 1e6,
        bytes / read / 1e9,
        if count as f64 / read >= 100e6 {
            "met"
        } else {
            "missed"
        }
    );
    println!(
        "  merged iterator  {:8.1} M events/s",
        mcount as f64 / merged / 1e6
    );
    println!(
        "  dump (formatted, discarded) {:8.1} M events/s (goal >= 10 M/s: {})",
        r.events as f64 / dump / 1e6,
        if r.events as f64 / dump >= 10e6 {
            "met"
        } else {
            "missed"
        }
    );
}
