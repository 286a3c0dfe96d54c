//! `ovni_ev_emit` from C against the Rust emit path (`ThreadStream::emit_at`), in the same
//! run, rounds interleaved; also the C ABI functions called from Rust in this process.
//!
//! `cargo bench -p ovni-capi --bench emit` (env `OVNI_CAPI_BENCH_EVENTS`, default 2e6 events
//! per measurement; `OVNI_CAPI_BENCH_ROUNDS`, default 15; `OVNI_CAPI_BENCH_PARTS`, default
//! `floor,paths`: the C emit against its floor in CPU time, and the C and Rust paths). The C program is
//! `tests/c/bench_emit.c`, compiled with `-O2` and linked with this profile's libovni.so.
//! Goal: C within 10% or 5 ns of Rust. The verdict uses each path's fastest round, the one
//! least disturbed by other work on the machine; medians are printed beside.
// Calling the C ABI from Rust takes raw pointers.
#![allow(unsafe_code)]

#[path = "../tests/capi/util.rs"]
mod util;

use std::ffi::c_int;
use std::hint::black_box;
use std::path::Path;
use std::time::Instant;

use ovni::OvniEv;
use ovni_rs::write::{clock_now, Process};
use ovni_rs::Mcv;

fn env_num(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse::<f64>().ok())
        .map_or(default, |v| v as u64)
}

#[derive(Clone, Copy)]
struct Case {
    name: &'static str,
    payload: usize,
    /// Each event clocked now (as instrumented programs do), or one fixed clock (the emit
    /// alone).
    clocked: bool,
}

const CASES: [Case; 4] = [
    Case {
        name: "12 B, clock read",
        payload: 0,
        clocked: true,
    },
    Case {
        name: "28 B, clock read",
        payload: 16,
        clocked: true,
    },
    Case {
        name: "12 B, fixed clock",
        payload: 0,
        clocked: false,
    },
    Case {
        name: "28 B, fixed clock",
        payload: 16,
        clocked: false,
    },
];

fn mcv(c: Case) -> &'static [u8; 3] {
    if c.payload == 0 {
        b"OHp"
    } else {
        b"OHx"
    }
}

/// The Rust path: `ThreadStream::emit_at` (what `emit` does), then `finish`.
fn rust_ns(dir: &Path, c: Case, n: u64, id: i32) -> f64 {
    let p = Process::init(dir.join("rust"), 1, "bench.rs", id).unwrap();
    let mut th = p.thread_init(id).unwrap();
    let payload = [7u8; 16];
    let payload = &payload[..c.payload];
    let m = Mcv(*mcv(c));
    let t = Instant::now();
    if c.clocked {
        for _ in 0..n {
            th.emit_at(m, clock_now(), black_box(payload)).unwrap();
        }
    } else {
        for _ in 0..n {
            th.emit_at(m, 1, black_box(payload)).unwrap();
        }
    }
    th.finish().unwrap();
    t.elapsed().as_nanos() as f64 / n as f64
}

/// The C program, in a child process: wall-clock ns per event.
fn c_ns(exe: &Path, dir: &Path, c: Case, n: u64, id: i32) -> f64 {
    let mode = if c.clocked { "now" } else { "fixed" };
    c_run(exe, dir, c.payload, mode, n, id).0
}

/// The C program in `mode` (`now`, `fixed` or `floor`): (wall, CPU) ns per event.
fn c_run(exe: &Path, dir: &Path, payload: usize, mode: &str, n: u64, id: i32) -> (f64, f64) {
    let trace = dir.join("c");
    let args = [
        n.to_string(),
        payload.to_string(),
        mode.to_string(),
        id.to_string(),
    ];
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = util::run(
        exe,
        &args,
        dir,
        &[("OVNI_TRACEDIR", trace.to_str().unwrap())],
    );
    util::check_success("bench_emit", &out);
    let text = String::from_utf8_lossy(&out.stdout);
    let mut it = text.split_whitespace().map(|v| v.parse::<f64>().unwrap());
    (it.next().unwrap(), it.next().unwrap())
}

/// `ovni_ev_set_clock(&ev, ovni_clock_now()); ovni_ev_emit(&ev)` from C against its floor
/// (one `clock_gettime` and one copy of the event's bytes, buffer written when full), in
/// process CPU time, rounds interleaved. Goal: at most 1.1x.
fn floor_part(exe: &Path, dir: &Path, n: u64, rounds: u64, id: &mut i32) {
    println!("C emit + clock vs its floor (clock_gettime + copy of the event into a 2 MiB buffer, written when full), CPU ns/event, fastest round (median)");
    println!("  case     floor            emit + clock     ratio  goal <= 1.1x");
    for payload in [0usize, 16] {
        let (mut floor, mut emit) = (Vec::new(), Vec::new());
        for _ in 0..rounds {
            *id += 1;
            floor.push(c_run(exe, dir, payload, "floor", n, *id).1);
            *id += 1;
            emit.push(c_run(exe, dir, payload, "now", n, *id).1);
            let _ = std::fs::remove_dir_all(dir.join("c"));
        }
        let ((f, fm), (e, em)) = (min_median(&mut floor), min_median(&mut emit));
        println!(
            "  {:<7} {f:6.2} ({fm:6.2})  {e:6.2} ({em:6.2})  {:5.2}  {}",
            format!("{} B", 12 + payload),
            e / f,
            if e <= f * 1.1 { "met" } else { "missed" }
        );
    }
}

/// The C ABI functions called from Rust in this process (one new thread per measurement,
/// since each thread can be initialised once).
fn capi_ns(c: Case, n: u64, id: i32) -> f64 {
    std::thread::spawn(move || {
        ovni::ovni_thread_init(id);
        let mut ev = OvniEv::default();
        let payload = [7u8; 16];
        // SAFETY: `ev` is a valid event, the strings are NUL-terminated, `payload` holds
        // `c.payload` bytes.
        unsafe {
            let m = if c.payload == 0 { c"OHp" } else { c"OHx" };
            ovni::ovni_ev_set_mcv(&mut ev, m.as_ptr());
            if c.payload > 0 {
                ovni::ovni_payload_add(&mut ev, payload.as_ptr(), c.payload as c_int);
            }
            ovni::ovni_ev_set_clock(&mut ev, 1);
        }
        let t = Instant::now();
        for _ in 0..n {
            // SAFETY: `ev` is a valid event.
            unsafe {
                if c.clocked {
                    ovni::ovni_ev_set_clock(&mut ev, ovni::ovni_clock_now());
                }
                ovni::ovni_ev_emit(black_box(&mut ev));
            }
        }
        ovni::ovni_thread_free();
        t.elapsed().as_nanos() as f64 / n as f64
    })
    .join()
    .unwrap()
}

/// Fastest and median of the rounds.
fn min_median(v: &mut [f64]) -> (f64, f64) {
    v.sort_by(f64::total_cmp);
    (v[0], v[v.len() / 2])
}

fn main() {
    // `cargo test --benches` runs this without --bench: keep that quick.
    let quick = !std::env::args().any(|a| a == "--bench");
    let (n, rounds) = if quick {
        (20_000, 1)
    } else {
        (
            env_num("OVNI_CAPI_BENCH_EVENTS", 2_000_000),
            env_num("OVNI_CAPI_BENCH_ROUNDS", 15),
        )
    };
    let exe = util::compile("bench_emit", util::Link::Shared);
    let tmp = tempfile::tempdir().unwrap();
    let capi_dir = tmp.path().join("capi");
    std::env::set_var("OVNI_TRACEDIR", &capi_dir);
    // SAFETY: a NUL-terminated string.
    unsafe { ovni::ovni_proc_init(1, c"bench.capi".as_ptr(), 1) };

    if quick {
        println!("quick run (no --bench): checks the benchmark works, measures nothing");
    }
    let mut id = 1;
    let parts = std::env::var("OVNI_CAPI_BENCH_PARTS").unwrap_or_else(|_| "floor,paths".into());
    if parts.contains("floor") {
        floor_part(&exe, tmp.path(), n, rounds, &mut id);
    }
    if !parts.contains("paths") {
        ovni::ovni_proc_fini();
        return;
    }
    println!("ovni_ev_emit from C vs the Rust emit path: {n} events x {rounds} rounds, ns/event, fastest round (median)");
    println!("  case               Rust             C (libovni.so)   ratio  C ABI from Rust  goal (10% or 5 ns)");
    for c in CASES {
        let (mut rust, mut cc, mut capi) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..rounds {
            id += 1;
            rust.push(rust_ns(tmp.path(), c, n, id));
            cc.push(c_ns(&exe, tmp.path(), c, n, id));
            capi.push(capi_ns(c, n, id));
            // Each measurement writes n events: keep the disk use flat.
            let _ = std::fs::remove_dir_all(tmp.path().join("rust"));
            let _ = std::fs::remove_dir_all(tmp.path().join("c"));
            let _ = std::fs::remove_dir_all(capi_dir.join("loom.bench.capi/proc.1"));
        }
        let ((r, rm), (cn, cm), (ca, cam)) = (
            min_median(&mut rust),
            min_median(&mut cc),
            min_median(&mut capi),
        );
        let met = cn <= r * 1.10 || cn - r <= 5.0;
        println!(
            "  {:<17} {r:6.2} ({rm:6.2})  {cn:6.2} ({cm:6.2})  {:5.2}  {ca:6.2} ({cam:6.2})  {}",
            c.name,
            cn / r,
            if met { "met" } else { "missed" }
        );
    }
    ovni::ovni_proc_fini();
}
