//! Emit cost, reader, linter and emulator throughput, each next to a baseline measured in the
//! same run.
//!
//! `cargo bench -p ovni --bench ovni` (env `OVNI_BENCH_MB`, default 256: size of the traces
//! read back and linted; `OVNI_BENCH_EVENTS`, default 5e6: events per emit measurement;
//! `OVNI_BENCH_EMU_EVENTS`, default 1e7: events of the trace emulated;
//! `OVNI_BENCH_PARTS`, default `emit,read,lint,emu,cpus`: which parts to run; `cpus` is the
//! scaling of metadata merging with the number of CPUs of a loom; `emu` times `ovni::emu`
//! (`ovniemu`) against `lint_dir` (`ovnilint`) on the same trace; `models`, not run by
//! default, does the same on one trace per model other than ovni, each of
//! `OVNI_BENCH_EMU_EVENTS` events (`OVNI_BENCH_MODELS`, default all: a comma-separated list
//! of the models to run);
//! `OVNI_BENCH_ORIGINAL`: the path of ovni 1.14's `ovniemu`, run on the `emu` trace (and
//! each `models` trace) in alternating rounds with ours (`OVNI_BENCH_ROUNDS`, default 3):
//! the side-by-side ratio.

use std::fs::File;
use std::hint::black_box;
use std::io::{self, Write};
use std::time::Instant;

use ovni::emu::{emulate, Collect, EmuOptions};
use ovni::lint::{lint_dir, LintOptions};
use ovni::raw::{encode_normal, Mcv};
use ovni::tools::{self, DumpMode};
use ovni::write::{clock_now, Process, ThreadStream, DEFAULT_BUFFER_SIZE};
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
    let parts =
        std::env::var("OVNI_BENCH_PARTS").unwrap_or_else(|_| "emit,read,lint,emu,cpus".into());
    if parts.contains("emit") {
        emit_part(tmp.path(), n);
    }
    if parts.contains("read") {
        read_part(tmp.path(), mb);
    }
    if parts.contains("lint") {
        for threads in [1, 4] {
            lint_part(&tmp.path().join(format!("lint{threads}")), mb, threads);
        }
    }
    if parts.contains("emu") {
        let events = if quick {
            10_000
        } else {
            env_num("OVNI_BENCH_EMU_EVENTS", 10_000_000)
        };
        emu_part(&tmp.path().join("emu"), events);
    }
    if parts.contains("models") {
        let events = if quick {
            10_000
        } else {
            env_num("OVNI_BENCH_EMU_EVENTS", 10_000_000)
        };
        models_part(tmp.path(), events);
    }
    if parts.contains("cpus") {
        let counts: &[i32] = if quick {
            &[1000]
        } else {
            &[10_000, 40_000, 160_000, 320_000]
        };
        cpus_part(tmp.path(), counts);
    }
}

/// Metadata merging against the number of CPUs: two threads of one loom that each list all
/// `n` CPUs (so every CPU of the second is a repeat to check), one `OHx`/`OHe` each. Times
/// the trace load (what `ovnidump` does before its first event) and `lint_dir` (`ovnilint`).
fn cpus_part(tmp: &std::path::Path, counts: &[i32]) {
    println!("metadata merge: 2 threads listing n CPUs each (load = Trace::open, lint = lint_dir)");
    println!(
        "  {:>8}  {:>10}  {:>10}  {:>12}",
        "n", "load (s)", "lint (s)", "lint ns/CPU"
    );
    for &n in counts {
        let dir = tmp.join(format!("cpus{n}"));
        let p = Process::init(&dir, 1, "bench", 1).unwrap();
        for tid in 1..=2 {
            let mut t = p.thread_init(tid).unwrap();
            for c in 0..n {
                t.add_cpu(c, c).unwrap();
            }
            let mut ohx = [0u8; 16];
            ohx[..4].copy_from_slice(&(tid - 1).to_le_bytes());
            t.emit(Mcv(*b"OHx"), &ohx).unwrap();
            t.emit(Mcv(*b"OHe"), &[]).unwrap();
            t.finish().unwrap();
        }
        let t = Instant::now();
        let trace = Trace::open(&dir).unwrap();
        black_box(trace.streams().len());
        let load = t.elapsed().as_secs_f64();
        drop(trace);
        let t = Instant::now();
        let report = lint_dir(&dir, &LintOptions::default());
        let lint = t.elapsed().as_secs_f64();
        assert!(
            report.accepted(),
            "{:?}",
            report.problems.first().map(ToString::to_string)
        );
        println!(
            "  {n:>8}  {load:>10.3}  {lint:>10.3}  {:>12.0}",
            lint * 1e9 / f64::from(n)
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

fn emit_part(dir: &std::path::Path, n: u64) {
    let tmp = dir;
    println!("emit cost, {n} events per case ({} for jumbo) (ns/event; baseline = clock read + copy + write when the 2 MiB buffer is full)", (n / 20).max(1000));
    for (kind, orig) in [("none", 55.6), ("p16", 98.4), ("jumbo1k", 457.0)] {
        // 1 KiB events: fewer of them, to keep the bytes written comparable.
        let count = if kind == "jumbo1k" {
            (n / 20).max(1000)
        } else {
            n
        };
        let (ours, base) = emit_bench(tmp, kind, count);
        println!(
            "  {kind:8} ours {ours:7.1}  baseline {base:7.1}  ratio {:.2} (goal <= 1.5: {})  libovni (other run) {orig}",
            ours / base,
            if ours / base <= 1.5 { "met" } else { "missed" }
        );
    }
}

fn read_part(tmp: &std::path::Path, mb: u64) {
    // A trace of `mb` MiB of 12-byte events in one stream, read back warm.
    let dir = tmp.join("read");
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

/// A valid trace of about `mb` MiB: `threads` threads, each on its own CPU, each executing,
/// then repeating pause, resume, mark push, mark pop, flush begin and end, then ending. The
/// threads' events are interleaved one by one, the worst case for the merge.
fn write_lint_trace(dir: &std::path::Path, mb: u64, threads: i32) {
    let cycle_bytes: u64 = CYCLE.iter().map(|(_, p)| 12 + *p as u64).sum();
    let cycles = (mb * 1024 * 1024 / cycle_bytes / threads as u64).max(1);
    write_cycles(dir, cycles, threads);
}

/// The events of one cycle and their payload sizes.
const CYCLE: [(&[u8; 3], usize); 6] = [
    (b"OHp", 0),
    (b"OHw", 0),
    (b"OHr", 0),
    (b"OM[", 12),
    (b"OM]", 12),
    (b"OAs", 4),
];

/// The trace of [`write_lint_trace`] with `cycles` cycles per thread.
fn write_cycles(dir: &std::path::Path, cycles: u64, threads: i32) {
    let p = Process::init(dir, 1, "bench", 1).unwrap();
    let mut ths: Vec<_> = (0..threads)
        .map(|i| {
            let mut t = p.thread_init(i + 1).unwrap();
            t.add_cpu(i, i).unwrap();
            t.mark_type(1, ovni::write::MARK_STACK, "bench").unwrap();
            t
        })
        .collect();
    // Mark payload: value 7 of type 1.
    let mut mark = [0u8; 12];
    mark[..8].copy_from_slice(&7i64.to_le_bytes());
    mark[8..].copy_from_slice(&1i32.to_le_bytes());
    // Events are clocked at emission, like libovni's, so the flush events the writer adds
    // when a buffer fills stay in clock order.
    for (i, t) in ths.iter_mut().enumerate() {
        let mut ohx = [0u8; 16];
        ohx[..4].copy_from_slice(&(i as i32).to_le_bytes());
        t.emit(Mcv(*b"OHx"), &ohx).unwrap();
    }
    for _ in 0..cycles {
        for (mcv, plen) in CYCLE {
            for (i, t) in ths.iter_mut().enumerate() {
                // `OAs` to the thread's own CPU: a no-op move.
                let own = (i as i32).to_le_bytes();
                let payload = if plen == 4 { &own[..] } else { &mark[..plen] };
                t.emit(Mcv(*mcv), payload).unwrap();
            }
        }
    }
    for t in ths {
        let mut t = t;
        t.emit(Mcv(*b"OHe"), &[]).unwrap();
        t.finish().unwrap();
    }
}

fn lint_part(dir: &std::path::Path, mb: u64, threads: i32) {
    write_lint_trace(dir, mb, threads);
    let trace = Trace::open(dir).unwrap();
    let bytes: usize = trace.streams().iter().map(|s| s.bytes().len()).sum();
    // Warm the page cache.
    let sum: u64 = trace
        .streams()
        .iter()
        .map(|s| s.bytes().chunks(4096).map(|c| u64::from(c[0])).sum::<u64>())
        .sum();
    black_box(sum);
    let t = Instant::now();
    let mut count = 0u64;
    for s in trace.streams() {
        for e in s.events() {
            black_box(e.unwrap().1.clock);
            count += 1;
        }
    }
    let read = t.elapsed().as_secs_f64();
    let events = count;
    let t = Instant::now();
    let mut mcount = 0u64;
    for m in trace.merged() {
        black_box(m.unwrap().event.clock);
        mcount += 1;
    }
    let merged = t.elapsed().as_secs_f64();
    assert_eq!(mcount, events);
    drop(trace);
    let t = Instant::now();
    let report = lint_dir(dir, &LintOptions::default());
    let lint = t.elapsed().as_secs_f64();
    assert!(
        report.accepted(),
        "{:?}",
        report.problems.first().map(ToString::to_string)
    );
    assert_eq!(report.events, events);
    let rate = |secs: f64| events as f64 / secs / 1e6;
    println!(
        "lint, {threads} stream(s), {:.0} MiB, {events} events (OHx, cycles of OHp OHw OHr OM[ OM] OAs, OHe, and the writer's flushes; threads interleaved event by event)",
        bytes as f64 / 1048576.0
    );
    println!(
        "  stream iterator (reader, raw)  {:8.1} M events/s",
        rate(read)
    );
    println!(
        "  merged iterator                {:8.1} M events/s",
        rate(merged)
    );
    println!(
        "  lint_dir (ovnilint)            {:8.1} M events/s = {:.2}x the stream iterator, {:.2}x the merged iterator (goal >= 10 M/s, 10x ovniemu's ~1 M/s: {})",
        rate(lint),
        read / lint,
        merged / lint,
        if rate(lint) >= 10.0 { "met" } else { "missed" }
    );
}

/// The emulator against the linter on one trace of about `events` thread-state and mark
/// events (the lint trace: one thread, cycles of OHp OHw OHr OM[ OM] OAs), in the same run.
/// The emulator also writes the six Paraver files into the trace directory.
fn emu_part(dir: &std::path::Path, events: u64) {
    write_cycles(dir, (events / CYCLE.len() as u64).max(1), 1);
    let trace = Trace::open(dir).unwrap();
    let bytes: usize = trace.streams().iter().map(|s| s.bytes().len()).sum();
    let sum: u64 = trace
        .streams()
        .iter()
        .map(|s| s.bytes().chunks(4096).map(|c| u64::from(c[0])).sum::<u64>())
        .sum();
    black_box(sum);
    drop(trace);
    let cpu0 = cpu_time();
    let t = Instant::now();
    let report = lint_dir(dir, &LintOptions::default());
    let lint = t.elapsed().as_secs_f64();
    let lint_cpu = cpu_time() - cpu0;
    assert!(report.accepted());
    let mut rep = Collect::default();
    let cpu0 = cpu_time();
    let th0 = thread_cpu_time();
    let t = Instant::now();
    let outcome = emulate(dir, &EmuOptions::default(), &mut rep);
    let emu = t.elapsed().as_secs_f64();
    let emu_cpu = cpu_time() - cpu0;
    let emu_main = thread_cpu_time() - th0;
    assert!(outcome.ok, "{:?}", rep.0);
    assert_eq!(outcome.events, report.events);
    let out_bytes: u64 = ["cpu.prv", "thread.prv"]
        .iter()
        .map(|f| std::fs::metadata(dir.join(f)).unwrap().len())
        .sum();
    // The floor of writing that much: the same bytes in 128 KiB writes to a new file.
    let chunk = vec![b'2'; 1 << 17];
    let cpu0 = cpu_time();
    let t = Instant::now();
    let mut f = File::create(dir.join("floor.bin")).unwrap();
    let mut left = out_bytes as usize;
    while left > 0 {
        let n = left.min(chunk.len());
        f.write_all(&chunk[..n]).unwrap();
        left -= n;
    }
    drop(f);
    let floor = t.elapsed().as_secs_f64();
    let floor_cpu = cpu_time() - cpu0;
    std::fs::remove_file(dir.join("floor.bin")).unwrap();
    let rate = |secs: f64| report.events as f64 / secs / 1e6;
    println!(
        "emu, 1 stream, {:.0} MiB, {} events (OHx, cycles of OHp OHw OHr OM[ OM] OAs, OHe, and the writer's flushes); {:.0} MiB of .prv written",
        bytes as f64 / 1048576.0,
        report.events,
        out_bytes as f64 / 1048576.0
    );
    println!(
        "  lint_dir (ovnilint)   {:8.1} M events/s ({lint:.2} s wall, {lint_cpu:.2} s CPU)",
        rate(lint)
    );
    println!(
        "  emulate (ovniemu)     {:8.1} M events/s ({emu:.2} s wall, {emu_cpu:.2} s CPU, {emu_main:.2} s in the emulating thread) = {:.2}x ovnilint's rate (goal >= 0.5x: {}; CPU time ratio {:.2}x)",
        rate(emu),
        lint / emu,
        if lint / emu >= 0.5 { "met" } else { "missed" },
        lint_cpu / emu_cpu,
    );
    println!(
        "  writing the same {:.0} MiB alone: {floor:.2} s wall, {floor_cpu:.2} s CPU (the floor of any emulator writing these files)",
        out_bytes as f64 / 1048576.0
    );
    if let Some(original) = std::env::var_os("OVNI_BENCH_ORIGINAL") {
        side_by_side(dir, std::path::Path::new(&original), report.events);
    }
}

/// Our emulator and the original `ovniemu` (the binary `OVNI_BENCH_ORIGINAL` names) on the
/// same trace, in alternating rounds, so that both see the same machine load: wall time and
/// CPU time (the original's from the kernel's accounting of the finished child).
fn side_by_side(dir: &std::path::Path, original: &std::path::Path, events: u64) {
    let rounds = env_num("OVNI_BENCH_ROUNDS", 3);
    println!(
        "  side by side with {} ({rounds} alternating rounds, same trace):",
        original.display()
    );
    println!("    round  ours wall  ours CPU  original wall  original CPU  CPU ratio  wall ratio");
    let mut ratios = Vec::new();
    for round in 1..=rounds {
        let mut rep = Collect::default();
        let (cpu0, t) = (cpu_time(), Instant::now());
        let outcome = emulate(dir, &EmuOptions::default(), &mut rep);
        let (ours, ours_cpu) = (t.elapsed().as_secs_f64(), cpu_time() - cpu0);
        assert!(outcome.ok, "{:?}", rep.0);
        let (child0, t) = (children_cpu_time(), Instant::now());
        let run = std::process::Command::new(original)
            .arg(dir)
            .current_dir(dir)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .output()
            .unwrap_or_else(|e| panic!("{}: {e}", original.display()));
        let (theirs, theirs_cpu) = (t.elapsed().as_secs_f64(), children_cpu_time() - child0);
        assert!(
            run.status.success(),
            "{}: {}\n{}",
            original.display(),
            run.status,
            String::from_utf8_lossy(&run.stderr)
        );
        ratios.push(theirs_cpu / ours_cpu);
        println!(
            "    {round:>5}  {ours:8.2} s {ours_cpu:7.2} s  {theirs:11.2} s  {theirs_cpu:10.2} s  {:8.2}x  {:9.2}x",
            theirs_cpu / ours_cpu,
            theirs / ours
        );
    }
    ratios.sort_by(f64::total_cmp);
    println!(
        "    {events} events; CPU time ratio (original / ours): {:.2}x to {:.2}x, median {:.2}x",
        ratios[0],
        ratios[ratios.len() - 1],
        ratios[ratios.len() / 2]
    );
}

/// CPU time of the finished children (user + system), in seconds, from `/proc/self/stat`
/// (`cutime`, `cstime`, in clock ticks of 1/100 s on Linux).
fn children_cpu_time() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name, which is in parentheses and may hold spaces.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // cutime and cstime are fields 16 and 17 of the line: 13 and 14 counting from `state`
    // (field 3) as 0. USER_HZ, the unit, is 100 on Linux whatever the kernel tick.
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (ticks(13) + ticks(14)) / 100.0
}

/// CPU time of the calling thread, in seconds.
fn thread_cpu_time() -> f64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9
}

/// CPU time of the process (all threads), in seconds.
fn cpu_time() -> f64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9
}

/// The event mix of a model's bench trace: the model and version the thread requires, the
/// task type it creates first (`VYc`, `6Yc`, `POc`), if any, and one cycle of its events
/// with their payloads.
struct Mix {
    name: &'static str,
    version: &'static str,
    type_event: Option<&'static [u8; 3]>,
    cycle: &'static [(&'static [u8; 3], Arg)],
}

/// The payload of an event of a cycle (cycle `i` creates and runs task `i + 1`).
#[derive(Clone, Copy)]
enum Arg {
    None,
    /// The cycle's task id.
    Task,
    /// The cycle's task id and type 1.
    TaskType,
    /// The cycle's task id and body 0 (a task that is not parallel).
    TaskBody,
    /// Type 1.
    Type,
}

impl Mix {
    /// A model whose cycle is `events` without payload (version 1.0.0).
    const fn plain(name: &'static str, cycle: &'static [(&'static [u8; 3], Arg)]) -> Self {
        Self {
            name,
            version: "1.0.0",
            type_event: None,
            cycle,
        }
    }

    fn run_cycle(&self, t: &mut ThreadStream, i: u32) {
        for &(mcv, arg) in self.cycle {
            let ids: &[u32] = match arg {
                Arg::None => &[],
                Arg::Task => &[i],
                Arg::TaskType => &[i, 1],
                Arg::TaskBody => &[i, 0],
                Arg::Type => &[1],
            };
            let p: Vec<u8> = ids.iter().flat_map(|a| a.to_le_bytes()).collect();
            t.emit(Mcv(*mcv), &p).unwrap();
        }
    }

    /// The cycle's events, for the report.
    fn what(&self) -> String {
        let events: Vec<String> = self
            .cycle
            .iter()
            .map(|(e, _)| String::from_utf8_lossy(&e[..]).into_owned())
            .collect();
        let tasks = if self.type_event.is_some() {
            " (a new task each cycle)"
        } else {
            ""
        };
        format!("{}{tasks}", events.join(" "))
    }
}

const N: Arg = Arg::None;

const MIXES: [Mix; 7] = [
    Mix {
        name: "nosv",
        version: "2.7.0",
        type_event: Some(b"VYc"),
        cycle: &[
            (b"VAs", N),
            (b"VTc", Arg::TaskType),
            (b"VAS", N),
            (b"VSh", N),
            (b"VSf", N),
            (b"VTx", Arg::TaskBody),
            (b"VMa", N),
            (b"VMA", N),
            (b"VTp", Arg::TaskBody),
            (b"VTr", Arg::TaskBody),
            (b"VTe", Arg::TaskBody),
            (b"VPr", N),
            (b"VPp", N),
        ],
    },
    Mix {
        name: "nanos6",
        version: "1.1.0",
        type_event: Some(b"6Yc"),
        cycle: &[
            (b"6C[", N),
            (b"6Tc", Arg::TaskType),
            (b"6C]", N),
            (b"6Sa", N),
            (b"6SA", N),
            (b"6Tx", Arg::Task),
            (b"6Ma", N),
            (b"6MA", N),
            (b"6Tp", Arg::Task),
            (b"6Tr", Arg::Task),
            (b"6Te", Arg::Task),
            (b"6Pr", N),
            (b"6Pp", N),
        ],
    },
    Mix {
        name: "openmp",
        version: "1.2.1",
        type_event: Some(b"POc"),
        cycle: &[
            (b"PBb", N),
            (b"PBB", N),
            (b"PWs", N),
            (b"PQx", Arg::Type),
            (b"PQe", Arg::Type),
            (b"PWS", N),
            (b"PTc", N),
            (b"PPc", Arg::TaskType),
            (b"PTC", N),
            (b"PPx", Arg::Task),
            (b"PPe", Arg::Task),
            (b"PH[", N),
            (b"PH]", N),
        ],
    },
    Mix::plain(
        "mpi",
        &[
            (b"MSs", N),
            (b"MSS", N),
            (b"MRs", N),
            (b"MRS", N),
            (b"MWa", N),
            (b"MWA", N),
            (b"MAr", N),
            (b"MAR", N),
            (b"MCb", N),
            (b"MCB", N),
            (b"MUt", N),
            (b"MUT", N),
        ],
    ),
    Mix::plain(
        "tampi",
        &[
            (b"TCi", N),
            (b"TCI", N),
            (b"TLi", N),
            (b"TLp", N),
            (b"TLP", N),
            (b"TLI", N),
            (b"TQa", N),
            (b"TQA", N),
            (b"TRc", N),
            (b"TRC", N),
            (b"TTc", N),
            (b"TTC", N),
        ],
    ),
    Mix::plain("kernel", &[(b"KCO", N), (b"KCI", N)]),
    Mix::plain(
        "nodes",
        &[
            (b"DR[", N),
            (b"DS[", N),
            (b"DS]", N),
            (b"DR]", N),
            (b"DU[", N),
            (b"DU]", N),
            (b"DW[", N),
            (b"DI[", N),
            (b"DI]", N),
            (b"DW]", N),
            (b"DT[", N),
            (b"DT]", N),
            (b"DC[", N),
            (b"DC]", N),
            (b"DP[", N),
            (b"DP]", N),
        ],
    ),
];

/// A one-thread trace of about `events` events of `mix`'s model: `OHx`, its task type, its
/// cycles, `OHe`. The buffer is flushed between cycles (every ~1 MiB), never inside one, so
/// the writer's `OF[`/`OF]` never land between a kernel model's `KCO` and `KCI`.
fn write_model_trace(dir: &std::path::Path, mix: &Mix, events: u64) {
    let p = Process::init(dir, 1, "bench", 1).unwrap();
    let mut t = p.thread_init(1).unwrap();
    t.add_cpu(0, 0).unwrap();
    t.require(mix.name, mix.version).unwrap();
    let mut ohx = [0u8; 16];
    ohx[4..8].copy_from_slice(&(-1i32).to_le_bytes());
    t.emit(Mcv(*b"OHx"), &ohx).unwrap();
    if let Some(mcv) = mix.type_event {
        let data = [&1u32.to_le_bytes()[..], b"bench_task\0"].concat();
        t.emit_jumbo(Mcv(*mcv), &data).unwrap();
    }
    let len = mix.cycle.len() as u64;
    let cycles = (events / len).max(1);
    let every = (1 << 20) / (len * 20);
    for i in 0..cycles {
        mix.run_cycle(&mut t, i as u32 + 1);
        if (i + 1) % every == 0 {
            t.flush().unwrap();
        }
    }
    t.emit(Mcv(*b"OHe"), &[]).unwrap();
    t.finish().unwrap();
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

/// Per model: the linter and our emulator (and, with `OVNI_BENCH_ORIGINAL`, ovni 1.14's
/// `ovniemu`) on that model's trace in alternating rounds; the goal is our emulator at
/// >= 0.5x the linter's event rate.
fn models_part(tmp: &std::path::Path, events: u64) {
    let rounds = env_num("OVNI_BENCH_ROUNDS", 3).max(1);
    let only = std::env::var("OVNI_BENCH_MODELS").unwrap_or_default();
    let original = std::env::var_os("OVNI_BENCH_ORIGINAL");
    println!(
        "models: per model, one thread's trace of ~{events} events, {rounds} alternating rounds of ovnilint (lint_dir), ovniemu (emulate){}",
        if original.is_some() { " and the original ovniemu" } else { "" }
    );
    let mut summary = Vec::new();
    for mix in MIXES
        .iter()
        .filter(|m| only.is_empty() || only.split(',').any(|o| o == m.name))
    {
        let dir = tmp.join(format!("model-{}", mix.name));
        write_model_trace(&dir, mix, events);
        let bytes: u64 = Trace::open(&dir)
            .unwrap()
            .streams()
            .iter()
            .map(|s| s.bytes().len() as u64)
            .sum();
        println!(
            "{}: {:.0} MiB; cycle {}",
            mix.name,
            bytes as f64 / 1048576.0,
            mix.what()
        );
        println!("  round  lint wall (CPU)   emu wall (CPU, emulating thread)   emu/lint rate   original wall (CPU)");
        let mut rows = Vec::new();
        let mut n = 0;
        for round in 1..=rounds {
            let (cpu0, t) = (cpu_time(), Instant::now());
            let report = lint_dir(&dir, &LintOptions::default());
            let (lint, lint_cpu) = (t.elapsed().as_secs_f64(), cpu_time() - cpu0);
            assert!(
                report.accepted(),
                "{}: {:?}",
                mix.name,
                report.problems.first().map(ToString::to_string)
            );
            n = report.events;
            let mut rep = Collect::default();
            let (cpu0, th0, t) = (cpu_time(), thread_cpu_time(), Instant::now());
            let outcome = emulate(&dir, &EmuOptions::default(), &mut rep);
            let emu = t.elapsed().as_secs_f64();
            let (emu_cpu, emu_main) = (cpu_time() - cpu0, thread_cpu_time() - th0);
            assert!(outcome.ok, "{}: {:?}", mix.name, rep.0);
            assert_eq!(outcome.events, n);
            let orig = original.as_ref().map(|o| {
                let (child0, t) = (children_cpu_time(), Instant::now());
                let run = std::process::Command::new(o)
                    .arg(&dir)
                    .current_dir(&dir)
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::piped())
                    .output()
                    .unwrap();
                assert!(
                    run.status.success(),
                    "{}: {}",
                    mix.name,
                    String::from_utf8_lossy(&run.stderr)
                );
                (t.elapsed().as_secs_f64(), children_cpu_time() - child0)
            });
            println!(
                "  {round:>5}  {lint:6.2} s ({lint_cpu:.2} s)  {emu:6.2} s ({emu_cpu:.2} s, {emu_main:.2} s)        {:5.2}x        {}",
                lint / emu,
                orig.map_or("-".to_string(), |(w, c)| format!("{w:.2} s ({c:.2} s)"))
            );
            let (orig_wall, orig_cpu) = orig.unwrap_or((0.0, 0.0));
            rows.push([lint, lint_cpu, emu, emu_cpu, emu_main, orig_wall, orig_cpu]);
        }
        let col = |i: usize| median(rows.iter().map(|r| r[i]).collect());
        let best = |f: &dyn Fn(&[f64; 7]) -> f64| rows.iter().map(f).fold(0.0, f64::max);
        summary.push((
            mix.name,
            n,
            [col(1), col(4), col(3), col(6)],
            best(&|r| r[0] / r[2]),
            best(&|r| r[1] / r[4]),
        ));
        std::fs::remove_dir_all(&dir).unwrap();
    }
    println!("summary: model, events; median CPU s of lint, of the emulating thread, of the emulation (all threads), of the original; best over the rounds of lint / emu wall (the rates' ratio, goal >= 0.5x) and of lint CPU / emulating thread CPU (the rates' ratio when the writer has a core of its own); median original CPU / emulation CPU");
    for (name, n, [lint, main, emu, orig], wall, cpu) in summary {
        let met = |r: f64| if r >= 0.5 { "met" } else { "missed" };
        let orig = (orig > 0.0).then(|| (format!("{orig:6.2}"), format!("{:5.2}x", orig / emu)));
        let (orig, ratio) = orig.unwrap_or(("-".into(), "-".into()));
        println!(
            "  {name:7} {n:9} {lint:6.2} {main:6.2} {emu:6.2} {orig} wall {wall:5.2}x ({}) CPU {cpu:5.2}x ({}) {ratio}",
            met(wall),
            met(cpu),
        );
    }
}
