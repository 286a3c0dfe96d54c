//! ovniview on a 10 M-event trace: the time to write the page (against `ovnilint`'s time on the
//! same trace, in the same run), the page's size, and the time headless chromium takes to
//! draw its first view (the page writes it into the DOM: `#ovniview-render[data-ms]`, ms since
//! navigation start).
//!
//! ```sh
//! CARGO_TARGET_DIR=... cargo bench -p ovni-view --bench ovniview
//! ```
//! `OVNIVIEW_BENCH_EVENTS` changes the number of events (default 10 000 000).

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use ovni::write::{Process, MARK_STACK};
use ovni::Mcv;

const THREADS: i32 = 16;

/// A trace like a busy runtime's: per thread, nested stack marks (a phase around 1..3 tasks)
/// between pauses, ~0.5-5 µs apart, every event an ovni model event.
fn generate(dir: &Path, events: u64) -> u64 {
    let per_thread = events / THREADS as u64;
    let mut written = 0;
    // One buffer holds a whole thread: no flush events at the real clock amid these clocks.
    let process = Process::with_buffer_size(dir, 1, "node0", 1000, 64 << 20).unwrap();
    for t in 0..THREADS {
        let mut s = process.thread_init(1000 + t).unwrap();
        s.add_cpu(t, t).unwrap();
        s.mark_type(1, MARK_STACK, "Phase").unwrap();
        s.mark_type(2, MARK_STACK, "Task").unwrap();
        for (v, l) in [(1, "compute"), (2, "exchange"), (3, "reduce")] {
            s.mark_label(1, v, l).unwrap();
        }
        let mut clock = 1_000_000_000u64;
        let mut rng = 0x9e37_79b9_7f4a_7c15u64 ^ t as u64;
        let mut next = |clock: &mut u64| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            *clock += 500 + rng % 4500;
            rng
        };
        let mut cpu = [0u8; 16];
        cpu[..4].copy_from_slice(&t.to_le_bytes());
        cpu[4..8].copy_from_slice(&(-1i32).to_le_bytes());
        s.emit_at(Mcv(*b"OHx"), clock, &cpu).unwrap();
        let mut n = 2u64;
        let mark = |v: i64, ty: i32| {
            let mut m = [0u8; 12];
            m[..8].copy_from_slice(&v.to_le_bytes());
            m[8..].copy_from_slice(&ty.to_le_bytes());
            m
        };
        while n + 12 < per_thread {
            let r = next(&mut clock);
            let phase = (r % 3) as i64 + 1;
            s.emit_at(Mcv(*b"OM["), clock, &mark(phase, 1)).unwrap();
            let tasks = 1 + (r >> 8) % 3;
            for k in 0..tasks {
                next(&mut clock);
                let task = ((r >> 16) % 50 + k) as i64 + 1;
                s.emit_at(Mcv(*b"OM["), clock, &mark(task, 2)).unwrap();
                next(&mut clock);
                s.emit_at(Mcv(*b"OM]"), clock, &mark(task, 2)).unwrap();
            }
            next(&mut clock);
            s.emit_at(Mcv(*b"OM]"), clock, &mark(phase, 1)).unwrap();
            n += 2 + 2 * tasks;
            if r % 5 == 0 {
                next(&mut clock);
                s.emit_at(Mcv(*b"OHp"), clock, &[]).unwrap();
                next(&mut clock);
                s.emit_at(Mcv(*b"OHr"), clock, &[]).unwrap();
                n += 2;
            }
        }
        next(&mut clock);
        s.emit_at(Mcv(*b"OHe"), clock, &[]).unwrap();
        written += n;
        s.finish().unwrap();
    }
    written
}

fn main() {
    let events: u64 = std::env::var("OVNIVIEW_BENCH_EVENTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000_000);
    let tmp = tempfile::tempdir().unwrap();
    let trace = tmp.path().join("trace");
    let t = Instant::now();
    let written = generate(&trace, events);
    println!(
        "generated {written} events in {THREADS} threads in {:.2} s",
        t.elapsed().as_secs_f64()
    );

    let t = Instant::now();
    let report = ovni::lint::lint_dir(&trace, &ovni::lint::LintOptions::default());
    let lint = t.elapsed().as_secs_f64();
    assert!(report.accepted(), "{:?}", report.problems);
    println!("ovnilint: {lint:.2} s ({} events)", report.events);

    let page = tmp.path().join("trace.html");
    let t = Instant::now();
    let model = ovni_view::write_page(&trace, &page, &ovni_view::PageOptions::default()).unwrap();
    let view = t.elapsed().as_secs_f64();
    let size = std::fs::metadata(&page).unwrap().len();
    assert_eq!(model.events, report.events);
    println!(
        "ovniview: {view:.2} s ({:.2}x ovnilint), page {:.1} MB",
        view / lint,
        size as f64 / 1e6
    );

    let html = std::fs::read_to_string(&page).unwrap();
    let field = |key: &str| {
        html.split(&format!("\"{key}\":"))
            .nth(1)
            .and_then(|r| r.split([',', '{']).next())
            .map(|v| v.to_owned())
    };
    let widths = html
        .split("\"widths\":[")
        .nth(1)
        .and_then(|r| r.split(']').next())
        .unwrap_or_default();
    println!(
        "levels of detail: bucket widths {widths} ns; every interval shipped: {}",
        field("complete").unwrap_or_default()
    );

    let profile = tempfile::tempdir().unwrap();
    for round in 0..3 {
        let t = Instant::now();
        let out = chromium(profile.path())
            .arg("--dump-dom")
            .arg(format!("file://{}", page.display()))
            .output();
        let wall = t.elapsed().as_secs_f64();
        let Ok(out) = out else {
            println!("chromium not found: no render time");
            return;
        };
        let dom = String::from_utf8_lossy(&out.stdout);
        let ms = dom
            .split("id=\"ovniview-render\"")
            .nth(1)
            .and_then(|r| r.split("data-ms=\"").nth(1))
            .and_then(|r| r.split('"').next())
            .unwrap_or("?")
            .to_owned();
        println!(
            "chromium round {round}: first view drawn at {ms} ms after navigation start; whole headless run (start, load, draw, dump the DOM with its inline data) {wall:.2} s"
        );
        let png = tmp.path().join("shot.png");
        let t = Instant::now();
        let ok = chromium(profile.path())
            .arg(format!("--screenshot={}", png.display()))
            .arg(format!("file://{}", page.display()))
            .output()
            .is_ok_and(|o| o.status.success());
        println!(
            "chromium round {round}: whole headless screenshot run (start, load, draw, PNG) {:.2} s{}",
            t.elapsed().as_secs_f64(),
            if ok { "" } else { " (failed)" }
        );
    }
}

/// Headless chromium with the page's window size and its own profile directory.
fn chromium(profile: &std::path::Path) -> Command {
    let mut cmd = Command::new("chromium");
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
        "--window-size=1400,900",
    ])
    .arg(format!("--user-data-dir={}", profile.display()));
    cmd
}
