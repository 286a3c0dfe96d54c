//! The linter against ovniemu's verdicts on every reference trace and invalid case, and one
//! valid and one violating trace, built with the writer, for each rule of the ovni model.

use std::fs;
use std::path::{Path, PathBuf};

use ovni::lint::{lint_dir, LintOptions, Report};
use ovni::raw::Mcv;
use ovni::write::{Process, ThreadStream, MARK_STACK};

use crate::util::fixtures;

fn cases() -> Vec<PathBuf> {
    let mut v = Vec::new();
    for kind in ["traces", "invalid"] {
        for e in fs::read_dir(fixtures().join(kind)).unwrap() {
            let p = e.unwrap().path();
            if p.join("golden").is_dir() {
                v.push(p);
            }
        }
    }
    v.sort();
    assert_eq!(v.len(), 26, "fixture set changed");
    v
}

fn all() -> LintOptions {
    LintOptions {
        all: true,
        ..LintOptions::default()
    }
}

/// The rule of ovniemu's first error message, in our codes.
fn code_of_emulator_error(line: &str) -> &'static str {
    const RULES: &[(&str, &str)] = &[
        ("wrong stream magic", "bad-magic"),
        ("stream version mismatch", "bad-stream-version"),
        ("incomplete stream header", "incomplete-header"),
        ("is empty", "empty-stream"),
        ("No such file or directory", "io"),
        ("json_parse_file", "invalid-json"),
        ("metadata version mismatch", "metadata-version"),
        ("missing ovni.finished", "not-finished"),
        ("has no physical CPUs", "loom-without-cpus"),
        ("unsupported ovni model version", "require-version"),
        ("ends with incomplete event", "incomplete-event"),
        ("clock goes backwards", "clock-backwards"),
        ("model not registered", "model-not-registered"),
        ("not enabled for event", "model-not-enabled"),
        ("unknown thread event value", "unknown-event"),
        ("is not dead", "thread-not-dead"),
    ];
    RULES
        .iter()
        .find(|(frag, _)| line.contains(frag))
        .map(|(_, c)| *c)
        .unwrap_or_else(|| panic!("no rule for emulator error: {line}"))
}

/// `key=value` from the emulator's panic block.
fn panic_field<'a>(stderr: &'a str, key: &str) -> Option<&'a str> {
    let pat = format!("panic:   {key}=");
    stderr
        .lines()
        .find_map(|l| l.split_once(&pat).map(|(_, v)| v.trim()))
}

#[test]
fn every_fixture_gets_ovniemus_verdict_and_first_error() {
    let mut failures = Vec::new();
    for case in cases() {
        let golden = case.join("golden");
        let rc: i32 = fs::read_to_string(golden.join("ovniemu.rc"))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let stderr = fs::read_to_string(golden.join("ovniemu.stderr")).unwrap();
        let report = lint_dir(&case.join("ovni"), &LintOptions::default());
        let name = case.file_name().unwrap().to_string_lossy().into_owned();
        if report.accepted() != (rc == 0) {
            failures.push(format!(
                "{name}: accepted={} but ovniemu rc={rc}",
                report.accepted()
            ));
            continue;
        }
        let Some(first) = report.problems.first() else {
            continue;
        };
        assert_eq!(
            report.problems.len(),
            1,
            "{name}: more than the first problem"
        );
        let line = stderr
            .lines()
            .find(|l| l.contains(": ERROR: ") && !l.contains("WARN"))
            .unwrap();
        let want = code_of_emulator_error(line);
        if first.code() != want {
            failures.push(format!("{name}: {first} but ovniemu says {line}"));
        }
        // Where ovniemu names the event (its panic block), we name the same one.
        if let Some(off) = panic_field(&stderr, "offset") {
            if first.offset.map(|o| o.to_string()).as_deref() != Some(off) {
                failures.push(format!("{name}: offset {:?}, ovniemu {off}", first.offset));
            }
        }
        if let Some(mcv) = panic_field(&stderr, "mcv") {
            if first.mcv.map(|m| m.to_string()).as_deref() != Some(mcv) {
                failures.push(format!("{name}: mcv {:?}, ovniemu {mcv}", first.mcv));
            }
        }
        if let Some(rel) = panic_field(&stderr, "relpath") {
            if first.stream.as_deref() != Some(rel) {
                failures.push(format!("{name}: stream {:?}, ovniemu {rel}", first.stream));
            }
        }
        // ovniemu reports a stream's clock regression at the event's offset.
        if let Some((_, tail)) = line.split_once(" at offset ") {
            if first.offset.map(|o| o.to_string()).as_deref() != Some(tail.trim()) {
                failures.push(format!("{name}: offset {:?}, ovniemu {tail}", first.offset));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn all_mode_keeps_going_and_agrees_on_the_verdict() {
    for case in cases() {
        let first = lint_dir(&case.join("ovni"), &LintOptions::default());
        let every = lint_dir(&case.join("ovni"), &all());
        assert_eq!(first.accepted(), every.accepted(), "{}", case.display());
        if let (Some(a), Some(b)) = (first.problems.first(), every.problems.first()) {
            assert_eq!(a.to_string(), b.to_string(), "{}", case.display());
        }
    }
    // The payloads trace has one event of each unregistered kind, a nosv event without the
    // requirement and an undefined mark type: every one is listed.
    let r = lint_dir(&fixtures().join("traces/payloads/ovni"), &all());
    let codes: Vec<&str> = r.problems.iter().map(|p| p.code()).collect();
    assert_eq!(
        codes
            .iter()
            .filter(|c| **c == "model-not-registered")
            .count(),
        10
    );
    assert!(codes.contains(&"model-not-enabled"));
    assert!(codes.contains(&"mark"));
    assert_eq!(r.events, 22);
}

#[test]
fn report_json_and_text_name_the_location() {
    let r = lint_dir(
        &fixtures().join("invalid/clock-backwards/ovni"),
        &LintOptions::default(),
    );
    let p = &r.problems[0];
    assert_eq!(
        p.to_string(),
        "loom.node0/proc.387/thread.387: offset 52: OHc at 736496144330: \
         clock goes backwards 736496145330 -> 736496144330 [clock-backwards]"
    );
    let j = r.to_json();
    assert_eq!(j["accepted"], false);
    assert_eq!(j["problems"][0]["offset"], 52);
    assert_eq!(j["problems"][0]["mcv"], "OHc");
    assert_eq!(j["problems"][0]["loom"], serde_json::Value::Null);
    // Every event is checked: as many as ovnitop counts.
    let top = fs::read_to_string(fixtures().join("traces/multi/golden/ovnitop.stdout")).unwrap();
    let n: u64 = top
        .lines()
        .map(|l| l.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap())
        .sum();
    let r = lint_dir(
        &fixtures().join("traces/multi/ovni"),
        &LintOptions::default(),
    );
    assert_eq!((r.streams, r.events, r.accepted()), (8, n, true));
}

// ---------------------------------------------------------------------------------------
// Traces built with the writer.

/// An event to emit.
#[derive(Clone)]
enum E {
    N(&'static [u8; 3], Vec<u8>),
    J(&'static [u8; 3], Vec<u8>),
}

fn ev(mcv: &'static [u8; 3]) -> E {
    E::N(mcv, Vec::new())
}

fn ohx(cpu: i32) -> E {
    let mut p = cpu.to_le_bytes().to_vec();
    p.extend_from_slice(&(-1i32).to_le_bytes());
    p.extend_from_slice(&0u64.to_le_bytes());
    E::N(b"OHx", p)
}

fn oas(cpu: i32) -> E {
    E::N(b"OAs", cpu.to_le_bytes().to_vec())
}

fn oar(cpu: i32, tid: i32) -> E {
    let mut p = cpu.to_le_bytes().to_vec();
    p.extend_from_slice(&tid.to_le_bytes());
    E::N(b"OAr", p)
}

fn om(mcv: &'static [u8; 3], value: i64, ty: i32) -> E {
    let mut p = value.to_le_bytes().to_vec();
    p.extend_from_slice(&ty.to_le_bytes());
    E::N(mcv, p)
}

/// Threads `(loom, pid, tid)`, CPUs per loom, mark types, required models, and events in
/// global clock order as `(tid, event)`.
struct Scenario {
    threads: Vec<(&'static str, i32, i32)>,
    cpus: i32,
    marks: Vec<(i32, bool)>,
    require: Vec<(&'static str, &'static str)>,
    events: Vec<(i32, E)>,
    /// Clock of the first event of each loom.
    loom_start: Vec<(&'static str, u64)>,
}

impl Scenario {
    fn new(events: Vec<(i32, E)>) -> Self {
        Self {
            threads: vec![("n0", 1, 1), ("n0", 1, 2), ("n0", 2, 3)],
            cpus: 4,
            marks: vec![(1, false), (2, true)],
            require: Vec::new(),
            events,
            loom_start: Vec::new(),
        }
    }

    fn one(events: Vec<E>) -> Self {
        let mut s = Self::new(events.into_iter().map(|e| (1, e)).collect());
        s.threads.truncate(1);
        s
    }

    fn require(mut self, model: &'static str, version: &'static str) -> Self {
        self.require.push((model, version));
        self
    }

    fn write(&self, dir: &Path) {
        let mut procs: Vec<(&str, i32, Process)> = Vec::new();
        let mut streams: Vec<(i32, ThreadStream)> = Vec::new();
        let mut looms_with_cpus = Vec::new();
        // Only the threads that emit something: the others would never end.
        let used = self
            .threads
            .iter()
            .filter(|t| self.events.iter().any(|e| e.0 == t.2));
        for &(loom, pid, tid) in used {
            if !procs.iter().any(|(l, p, _)| *l == loom && *p == pid) {
                procs.push((loom, pid, Process::init(dir, 1, loom, pid).unwrap()));
            }
            let proc = &procs
                .iter()
                .find(|(l, p, _)| *l == loom && *p == pid)
                .unwrap()
                .2;
            let mut t = proc.thread_init(tid).unwrap();
            if !looms_with_cpus.contains(&loom) {
                looms_with_cpus.push(loom);
                for c in 0..self.cpus {
                    t.add_cpu(c, c).unwrap();
                }
            }
            for &(ty, stack) in &self.marks {
                t.mark_type(ty, if stack { MARK_STACK } else { 0 }, "m")
                    .unwrap();
            }
            // Through the attribute API, so malformed versions can be written too.
            for &(m, v) in &self.require {
                t.attr_set(&format!("ovni.require.{m}"), v).unwrap();
            }
            streams.push((tid, t));
        }
        for (i, (tid, e)) in self.events.iter().enumerate() {
            let loom = self.threads.iter().find(|t| t.2 == *tid).unwrap().0;
            let base = self
                .loom_start
                .iter()
                .find(|(l, _)| *l == loom)
                .map_or(1_000_000, |(_, c)| *c);
            let clock = base + 10 * i as u64;
            let t = &mut streams.iter_mut().find(|(t, _)| t == tid).unwrap().1;
            match e {
                E::N(mcv, p) => t.emit_at(Mcv(**mcv), clock, p).unwrap(),
                E::J(mcv, d) => t.emit_jumbo_at(Mcv(**mcv), clock, d).unwrap(),
            }
        }
        for (_, t) in streams {
            t.finish().unwrap();
        }
    }

    fn lint(&self) -> Report {
        let tmp = tempfile::tempdir().unwrap();
        self.write(tmp.path());
        lint_dir(tmp.path(), &all())
    }
}

/// Checks that the trace is accepted (`want` = None) or that its only problem has code
/// `want.0` and a message containing `want.1`.
fn check(name: &str, s: &Scenario, want: Option<(&str, &str)>, failures: &mut Vec<String>) {
    let r = s.lint();
    let got: Vec<String> = r.problems.iter().map(ToString::to_string).collect();
    let ok = match want {
        None => r.accepted(),
        Some((code, text)) => {
            r.problems.len() == 1
                && r.problems[0].code() == code
                && r.problems[0].message().contains(text)
        }
    };
    if !ok {
        failures.push(format!("{name}: want {want:?}, got {got:#?}"));
    }
}

/// Name, trace, expected problem (code and message fragment) or `None` if valid.
type Row<'a> = (&'a str, Scenario, Option<(&'a str, &'a str)>);

fn run_table(rows: Vec<Row<'_>>) {
    let mut failures = Vec::new();
    for (name, s, want) in &rows {
        check(name, s, *want, &mut failures);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn thread_state_machine() {
    use Scenario as S;
    let life = || {
        vec![
            ohx(0),
            ev(b"OHc"),
            ev(b"OHp"),
            ev(b"OHw"),
            ev(b"OHr"),
            ev(b"OHp"),
            ev(b"OHr"),
            ev(b"OHe"),
        ]
    };
    run_table(vec![
        ("every transition", S::one(life()), None),
        (
            "end from cooling",
            S::one(vec![ohx(0), ev(b"OHc"), ev(b"OHe")]),
            None,
        ),
        (
            "pause from cooling",
            S::one(vec![ohx(0), ev(b"OHc"), ev(b"OHp"), ev(b"OHr"), ev(b"OHe")]),
            None,
        ),
        (
            "execute again after the end",
            S::one(vec![ohx(0), ev(b"OHe"), ohx(1), ev(b"OHe")]),
            None,
        ),
        (
            "create anywhere",
            S::one(vec![
                E::N(b"OHC", [0u8; 12].to_vec()),
                ohx(0),
                E::N(b"OHC", Vec::new()),
                ev(b"OHe"),
            ]),
            None,
        ),
        (
            "execute while running",
            S::one(vec![ohx(0), ohx(1), ev(b"OHe")]),
            Some(("thread-state", "is already running")),
        ),
        (
            "execute while paused",
            S::one(vec![ohx(0), ev(b"OHp"), ohx(1), ev(b"OHr"), ev(b"OHe")]),
            Some(("thread-state", "already has a CPU")),
        ),
        (
            "execute without payload",
            S::one(vec![E::N(b"OHx", vec![0, 0]), ohx(0), ev(b"OHe")]),
            Some(("payload", "missing payload in thread 1 execute event")),
        ),
        (
            "execute on a missing CPU",
            S::one(vec![ohx(4), ohx(0), ev(b"OHe")]),
            Some(("no-such-cpu", "cannot find CPU with index 4 in loom n0")),
        ),
        (
            "end before execute",
            S::one(vec![ev(b"OHe"), ohx(0), ev(b"OHe")]),
            Some((
                "thread-state",
                "cannot end thread 1: state not running or cooling",
            )),
        ),
        (
            "pause from warming",
            S::one(vec![
                ohx(0),
                ev(b"OHp"),
                ev(b"OHw"),
                ev(b"OHp"),
                ev(b"OHr"),
                ev(b"OHe"),
            ]),
            Some(("thread-state", "cannot pause thread 1")),
        ),
        (
            "resume while running",
            S::one(vec![ohx(0), ev(b"OHr"), ev(b"OHe")]),
            Some((
                "thread-state",
                "cannot resume thread 1: state not paused or warming",
            )),
        ),
        (
            "cool while paused",
            S::one(vec![ohx(0), ev(b"OHp"), ev(b"OHc"), ev(b"OHr"), ev(b"OHe")]),
            Some(("thread-state", "cannot cool thread 1: state not running")),
        ),
        (
            "warm while running",
            S::one(vec![ohx(0), ev(b"OHw"), ev(b"OHe")]),
            Some(("thread-state", "cannot warm thread 1: state not paused")),
        ),
        (
            "unknown thread event",
            S::one(vec![ohx(0), ev(b"OHz"), ev(b"OHe")]),
            Some(("unknown-event", "unknown thread event value 'z'")),
        ),
        (
            "unknown ovni category",
            S::one(vec![ohx(0), ev(b"OZz"), ev(b"OHe")]),
            Some(("unknown-event", "unknown ovni event category 'Z'")),
        ),
        (
            "every thread ends dead",
            S::one(vec![ohx(0), ev(b"OHe")]),
            None,
        ),
        (
            "a thread still paused at the end",
            S::one(vec![ohx(0), ev(b"OHp")]),
            Some(("thread-not-dead", "thread 1 is not dead")),
        ),
    ]);
}

#[test]
fn physical_cpus_never_run_two_threads() {
    use Scenario as S;
    run_table(vec![
        (
            "two threads on the virtual CPU",
            S::new(vec![
                (1, ohx(-1)),
                (2, ohx(-1)),
                (1, ev(b"OHe")),
                (2, ev(b"OHe")),
            ]),
            None,
        ),
        (
            "a paused thread shares its CPU",
            S::new(vec![
                (1, ohx(0)),
                (1, ev(b"OHp")),
                (2, ohx(0)),
                (2, ev(b"OHe")),
                (1, ev(b"OHr")),
                (1, ev(b"OHe")),
            ]),
            None,
        ),
        (
            "two threads executed on one CPU",
            S::new(vec![
                (1, ohx(0)),
                (2, ohx(0)),
                (2, ohx(1)),
                (2, ev(b"OHe")),
                (1, ev(b"OHe")),
            ]),
            Some((
                "cpu-oversubscribed",
                "physical cpu CPU 0.0 has 2 threads running",
            )),
        ),
        (
            "resume on a busy CPU",
            S::new(vec![
                (1, ohx(0)),
                (1, ev(b"OHp")),
                (2, ohx(0)),
                (1, ev(b"OHr")),
                (2, ev(b"OHe")),
                (1, ev(b"OHr")),
                (1, ev(b"OHe")),
            ]),
            Some(("cpu-oversubscribed", "has 2 threads running")),
        ),
    ]);
}

#[test]
fn affinity_events() {
    use Scenario as S;
    run_table(vec![
        (
            "switch own CPU, and to the same CPU",
            S::one(vec![ohx(0), oas(1), oas(1), oas(-1), ev(b"OHe")]),
            None,
        ),
        (
            "a cooling thread may move to a busy CPU",
            S::new(vec![
                (1, ohx(0)),
                (2, ohx(1)),
                (2, ev(b"OHc")),
                (2, oas(0)),
                (2, ev(b"OHe")),
                (1, ev(b"OHe")),
            ]),
            None,
        ),
        (
            "own affinity before execute",
            S::one(vec![oas(0), ohx(0), ev(b"OHe")]),
            Some(("affinity", "thread 1 doesn't have CPU set")),
        ),
        (
            "own affinity while paused",
            S::one(vec![ohx(0), ev(b"OHp"), oas(1), ev(b"OHr"), ev(b"OHe")]),
            Some(("affinity", "thread 1 is not active")),
        ),
        (
            "own affinity with 8 bytes",
            S::one(vec![ohx(0), E::N(b"OAs", vec![0; 8]), ev(b"OHe")]),
            Some(("payload", "unexpected payload size 8 (expected 4)")),
        ),
        (
            "own affinity to a missing CPU",
            S::one(vec![ohx(0), oas(9), ev(b"OHe")]),
            Some(("no-such-cpu", "index 9")),
        ),
        (
            "running thread moves to a busy CPU",
            S::new(vec![
                (1, ohx(0)),
                (2, ohx(1)),
                (2, oas(0)),
                (2, ev(b"OHe")),
                (1, ev(b"OHe")),
            ]),
            Some(("cpu-oversubscribed", "has 2 threads running")),
        ),
        (
            "remote affinity in the process, in the loom, and of a paused thread",
            S::new(vec![
                (1, ohx(0)),
                (2, ohx(1)),
                (3, ohx(2)),
                (1, oar(3, 2)),
                (1, oar(1, 3)),
                (2, ev(b"OHp")),
                (1, oar(2, 2)),
                (2, ev(b"OHr")),
                (2, ev(b"OHe")),
                (3, ev(b"OHe")),
                (1, ev(b"OHe")),
            ]),
            None,
        ),
        (
            "remote affinity of a missing thread",
            S::new(vec![(1, ohx(0)), (1, oar(1, 99)), (1, ev(b"OHe"))]),
            Some(("affinity", "thread 99 not found")),
        ),
        (
            "remote affinity of a dead thread",
            S::new(vec![
                (1, ohx(0)),
                (2, ohx(1)),
                (2, ev(b"OHe")),
                (1, oar(2, 2)),
                (1, ev(b"OHe")),
            ]),
            Some(("affinity", "thread 2 is dead")),
        ),
        (
            "remote affinity of a thread not started",
            S::new(vec![
                (1, ohx(0)),
                (1, oar(2, 2)),
                (2, ohx(1)),
                (2, ev(b"OHe")),
                (1, ev(b"OHe")),
            ]),
            Some(("affinity", "thread 2 in state unknown")),
        ),
        (
            "remote affinity to the CPU the thread is on",
            S::new(vec![
                (1, ohx(0)),
                (2, ohx(1)),
                (1, oar(1, 2)),
                (2, ev(b"OHe")),
                (1, ev(b"OHe")),
            ]),
            Some(("affinity", "thread 2 is already on CPU 1")),
        ),
        (
            "remote affinity with 4 bytes",
            S::new(vec![
                (1, ohx(0)),
                (1, oas(0)),
                (1, E::N(b"OAr", vec![0; 4])),
                (1, ev(b"OHe")),
            ]),
            Some(("payload", "unexpected payload size 4 (expected 8)")),
        ),
        (
            "remote affinity makes a CPU run two threads",
            S::new(vec![
                (1, ohx(0)),
                (2, ohx(1)),
                (1, oar(0, 2)),
                (2, ev(b"OHe")),
                (1, ev(b"OHe")),
            ]),
            Some(("cpu-oversubscribed", "has 2 threads running")),
        ),
    ]);
}

#[test]
fn flushes_come_in_pairs() {
    use Scenario as S;
    run_table(vec![
        (
            "pairs, and the ignored events",
            S::one(vec![
                ohx(0),
                ev(b"OF["),
                ev(b"OF]"),
                ev(b"OB."),
                E::N(b"OCn", vec![4, 0, 0, 0]),
                ev(b"OU["),
                E::J(b"OU[", b"anything".to_vec()),
                ev(b"OU]"),
                ev(b"OF["),
                ev(b"OF]"),
                ev(b"OHe"),
            ]),
            None,
        ),
        (
            "end without begin",
            S::one(vec![ohx(0), ev(b"OF]"), ev(b"OHe")]),
            Some(("flush", "thread 1 ends a flush it did not begin")),
        ),
        (
            "begin twice",
            S::one(vec![ohx(0), ev(b"OF["), ev(b"OF["), ev(b"OF]"), ev(b"OHe")]),
            Some(("flush", "begins a flush while already flushing")),
        ),
        (
            "unknown flush value",
            S::one(vec![ohx(0), ev(b"OF-"), ev(b"OHe")]),
            Some(("unknown-event", "unknown flush event value '-'")),
        ),
    ]);
}

#[test]
fn marks_follow_their_channel_type() {
    use Scenario as S;
    let with = |mid: Vec<E>| {
        let mut v = vec![ohx(0)];
        v.extend(mid);
        v.push(ev(b"OHe"));
        S::one(v)
    };
    let mut full: Vec<E> = (1..=513).map(|v| om(b"OM[", v, 2)).collect();
    full.truncate(512);
    let mut over = full.clone();
    over.push(om(b"OM[", 600, 2));
    run_table(vec![
        (
            "stack and single, repeated values, before execute",
            S::one(vec![
                om(b"OM=", 1, 1),
                ohx(0),
                om(b"OM[", 1, 2),
                om(b"OM[", 1, 2),
                om(b"OM]", 1, 2),
                om(b"OM]", 1, 2),
                om(b"OM=", 5, 1),
                om(b"OM=", 5, 1),
                om(b"OM=", -7, 1),
                om(b"OM[", 3, 2),
                ev(b"OHe"),
            ]),
            None,
        ),
        ("a full stack", with(full), None),
        (
            "a push past the full stack",
            with(over),
            Some(("mark", "stack full")),
        ),
        (
            "undefined type",
            with(vec![om(b"OM=", 1, 9)]),
            Some(("mark", "cannot find mark with type 9")),
        ),
        (
            "zero value",
            with(vec![om(b"OM=", 0, 1)]),
            Some(("mark", "mark value cannot be zero, type 1")),
        ),
        (
            "push on a single type",
            with(vec![om(b"OM[", 1, 1)]),
            Some(("mark", "cannot push on mark type 1")),
        ),
        (
            "set on a stack type",
            with(vec![om(b"OM=", 1, 2)]),
            Some(("mark", "cannot set mark type 2")),
        ),
        (
            "pop of an empty stack",
            with(vec![om(b"OM]", 1, 2)]),
            Some(("mark", "stack empty")),
        ),
        (
            "pop of a value not on top",
            with(vec![om(b"OM[", 1, 2), om(b"OM[", 2, 2), om(b"OM]", 1, 2)]),
            Some((
                "mark",
                "cannot pop value 1 of mark type 2: top of stack is 2",
            )),
        ),
        (
            "mark with 8 bytes",
            with(vec![E::N(b"OM=", vec![1; 8])]),
            Some(("payload", "unexpected payload size 8 (expected 12)")),
        ),
        (
            "unknown mark value",
            with(vec![om(b"OM?", 1, 1)]),
            Some(("unknown-event", "unknown mark event value '?'")),
        ),
    ]);
}

#[test]
fn other_models_need_require_and_their_payload() {
    use Scenario as S;
    let ty = |label: &[u8]| {
        let mut d = 7u32.to_le_bytes().to_vec();
        d.extend_from_slice(label);
        E::J(b"VYc", d)
    };
    let with = |mid: Vec<E>| {
        let mut v = vec![ohx(0)];
        v.extend(mid);
        v.push(ev(b"OHe"));
        S::one(v).require("nosv", "2.7.0")
    };
    run_table(vec![
        (
            "nosv events with their payloads",
            with(vec![
                ty(b"my_type\0"),
                E::N(b"VTc", [1u32.to_le_bytes(), 7u32.to_le_bytes()].concat()),
                ev(b"VHa"),
            ]),
            None,
        ),
        (
            "nosv task of a type never created",
            with(vec![E::N(b"VTc", vec![1; 8])]),
            Some(("nosv", "unknown type id 16843009")),
        ),
        (
            "hardware counters without counters in the metadata",
            with(vec![E::J(b"VWC", vec![0; 8])]),
            Some(("nosv", "hardware counter event but no counters enabled")),
        ),
        (
            "nosv event without the requirement",
            S::one(vec![ohx(0), ev(b"VHa"), ev(b"OHe")]),
            Some(("model-not-enabled", "model nosv not enabled")),
        ),
        (
            "nosv event with a short payload",
            with(vec![E::N(b"VTc", vec![1; 4])]),
            Some(("payload", "unexpected payload size 4 (expected 8)")),
        ),
        (
            "jumbo event written as a normal one",
            with(vec![E::N(b"VYc", vec![1; 8])]),
            Some(("payload", "must be a jumbo event")),
        ),
        (
            "string without its NUL",
            with(vec![ty(b"my_type")]),
            Some(("payload", "no terminating NUL")),
        ),
        (
            "undefined nosv event",
            with(vec![ev(b"VZz")]),
            Some(("unknown-event", "event not defined by model nosv")),
        ),
        (
            "unregistered model",
            with(vec![ev(b"Qab")]),
            Some(("model-not-registered", "no model registered for model 'Q'")),
        ),
        (
            "older minor version and unknown models are fine",
            S::one(vec![ohx(0), ev(b"OHe")])
                .require("nosv", "2.1.9")
                .require("myruntime", "not a version"),
            None,
        ),
        (
            "newer minor version",
            S::one(vec![ohx(0), ev(b"OHe")]).require("nosv", "2.8.0"),
            Some((
                "require-version",
                "unsupported nosv model version (want 2.8.0, have 2.7.0)",
            )),
        ),
    ]);
}

fn write_stream(dir: &Path, rel: &str, json: &str, events: &[(u64, &[u8; 3])]) {
    let d = dir.join(rel);
    fs::create_dir_all(&d).unwrap();
    fs::write(d.join("stream.json"), json).unwrap();
    let mut obs = ovni::raw::stream_header().to_vec();
    for (c, m) in events {
        ovni::raw::encode_normal(&mut obs, Mcv(**m), *c, &[]).unwrap();
    }
    fs::write(d.join("stream.obs"), obs).unwrap();
}

#[test]
fn streams_that_are_not_threads_only_fail_with_events() {
    let tmp = tempfile::tempdir().unwrap();
    Scenario::one(vec![ohx(0), ev(b"OHe")]).write(tmp.path());
    let json = r#"{"version": 3, "ovni": {"part": "process"}}"#;
    write_stream(tmp.path(), "extra", json, &[]);
    let r = lint_dir(tmp.path(), &all());
    assert!(r.accepted(), "{:?}", r.problems);
    write_stream(
        tmp.path(),
        "extra",
        json,
        &[(1_000_005, b"OHp"), (1_000_006, b"OHp")],
    );
    let r = lint_dir(tmp.path(), &all());
    let got: Vec<String> = r.problems.iter().map(ToString::to_string).collect();
    assert_eq!(got, vec!["extra: offset 8: OHp at 1000005: event from a stream that is not a thread (ovni.part is not \"thread\") [unknown-stream]"]);
}

#[test]
fn clock_gate_and_clock_offsets() {
    let hour = 3_600_000_000_000u64;
    let mk = |start_b: u64| {
        let mut s = Scenario::new(vec![
            (1, ohx(0)),
            (4, ohx(0)),
            (1, ev(b"OHe")),
            (4, ev(b"OHe")),
        ]);
        s.threads = vec![("a.x", 1, 1), ("b.y", 2, 4)];
        s.loom_start = vec![("a.x", 1_000_000), ("b.y", start_b)];
        let tmp = tempfile::tempdir().unwrap();
        s.write(tmp.path());
        tmp
    };
    let near = mk(hour);
    assert!(lint_dir(near.path(), &all()).accepted());
    let far = mk(2 * hour);
    let r = lint_dir(far.path(), &all());
    assert_eq!(r.problems.len(), 1, "{:?}", r.problems);
    assert_eq!(r.problems[0].code(), "clock-gate");
    assert!(r.problems[0].message().contains("loom.b.y/proc.2/thread.4"));
    // An offset table moves loom b back by two hours: accepted.
    let table = format!(
        "rank hostname median mean std\n0 a 0 0 0\n1 b -{} 0 0\n",
        2 * hour
    );
    fs::write(far.path().join("clock-offsets.txt"), table).unwrap();
    let r = lint_dir(far.path(), &all());
    assert!(r.accepted(), "{:?}", r.problems);
    // A table naming a host without loom is an error.
    fs::write(far.path().join("clock-offsets.txt"), "h\n0 c 0 0 0\n").unwrap();
    let r = lint_dir(far.path(), &LintOptions::default());
    assert_eq!(r.problems[0].code(), "clock-offsets");
    // An explicit table must exist.
    let opts = LintOptions {
        clock_offsets: Some(near.path().join("missing.txt")),
        ..LintOptions::default()
    };
    assert_eq!(lint_dir(near.path(), &opts).problems[0].code(), "io");
}

#[test]
fn limits_and_hostile_inputs() {
    // A cap on the number of problems.
    let mut events = vec![ohx(0)];
    events.extend((0..50).map(|_| ev(b"OHr")));
    events.push(ev(b"OHe"));
    let s = Scenario::one(events);
    let tmp = tempfile::tempdir().unwrap();
    s.write(tmp.path());
    let r = lint_dir(tmp.path(), &all());
    assert_eq!(r.problems.len(), 50);
    let opts = LintOptions {
        all: true,
        max_problems: 10,
        ..LintOptions::default()
    };
    let r = lint_dir(tmp.path(), &opts);
    assert_eq!((r.problems.len(), r.truncated), (10, true));
    // A stream with a huge jumbo size and a broken second stream: both reported, the good
    // events of the first still checked.
    let obs = tmp.path().join("loom.n0/proc.1/thread.1/stream.obs");
    let mut b = fs::read(&obs).unwrap();
    b.extend_from_slice(&[0x13, b'O', b'U', b'[']);
    b.extend_from_slice(&u64::MAX.to_le_bytes());
    b.extend_from_slice(&u32::MAX.to_le_bytes());
    fs::write(&obs, b).unwrap();
    write_stream(tmp.path(), "zz", "{\"version\": 3", &[]);
    let r = lint_dir(tmp.path(), &all());
    let codes: Vec<&str> = r.problems.iter().map(|p| p.code()).collect();
    assert!(codes.contains(&"invalid-json"), "{codes:?}");
    assert!(codes.contains(&"incomplete-event"), "{codes:?}");
    assert_eq!(r.events, 52);
}

#[test]
fn clock_below_zero_goes_backwards_from_zero() {
    // ovniemu's streams start with a last clock of 0: a first event whose clock (plus the
    // loom's offset) is negative goes backwards.
    let tmp = tempfile::tempdir().unwrap();
    Scenario::one(vec![ohx(0), ev(b"OHe")]).write(tmp.path());
    let obs = tmp.path().join("loom.n0/proc.1/thread.1/stream.obs");
    let mut b = fs::read(&obs).unwrap();
    b[12..20].copy_from_slice(&u64::MAX.to_le_bytes());
    fs::write(&obs, &b).unwrap();
    let r = lint_dir(tmp.path(), &LintOptions::default());
    let got: Vec<String> = r.problems.iter().map(ToString::to_string).collect();
    assert_eq!(got, ["loom.n0/proc.1/thread.1: offset 8: OHx at -1: clock goes backwards 0 -> -1 [clock-backwards]"]);
    // A positive clock made negative by the loom's offset.
    b[12..20].copy_from_slice(&5u64.to_le_bytes());
    fs::write(&obs, &b).unwrap();
    fs::write(tmp.path().join("clock-offsets.txt"), "h\n0 n0 -10 0 0\n").unwrap();
    let r = lint_dir(tmp.path(), &LintOptions::default());
    assert_eq!(r.problems.len(), 1, "{:?}", r.problems);
    assert_eq!(r.problems[0].message(), "clock goes backwards 0 -> -5");
}

#[test]
fn jumbo_flag_moves_the_arguments_after_the_size_field() {
    // ovnidump reads the arguments of a jumbo-flagged event after its 4-byte size field, so
    // a jumbo OM] with 12 payload bytes (size field + 8) lacks 4 bytes: both tools refuse it.
    let mut data = 2i64.to_le_bytes().to_vec();
    run_table(vec![
        (
            "jumbo pop with 8 data bytes",
            Scenario::one(vec![
                ohx(0),
                om(b"OM[", 2, 2),
                E::J(b"OM]", data.clone()),
                ev(b"OHe"),
            ]),
            Some(("payload", "unexpected payload size 8 (expected 12)")),
        ),
        (
            "jumbo pop with 12 data bytes",
            Scenario::one(vec![
                ohx(0),
                om(b"OM[", 2, 2),
                E::J(b"OM]", {
                    data.extend_from_slice(&2i32.to_le_bytes());
                    data.clone()
                }),
                ev(b"OHe"),
            ]),
            None,
        ),
    ]);
}

#[test]
fn missing_finished_comes_before_missing_require() {
    let tmp = tempfile::tempdir().unwrap();
    Scenario::one(vec![ohx(0), ev(b"OHe")]).write(tmp.path());
    let json = tmp.path().join("loom.n0/proc.1/thread.1/stream.json");
    let mut v: serde_json::Value = serde_json::from_slice(&fs::read(&json).unwrap()).unwrap();
    let o = v["ovni"].as_object_mut().unwrap();
    o.remove("finished");
    o.remove("require");
    fs::write(&json, v.to_string()).unwrap();
    let r = lint_dir(tmp.path(), &LintOptions::default());
    let codes: Vec<&str> = r.problems.iter().map(|p| p.code()).collect();
    assert_eq!(codes, ["not-finished"]);
    let r = lint_dir(tmp.path(), &all());
    let got: Vec<String> = r.problems.iter().map(ToString::to_string).collect();
    assert!(got.iter().any(|p| p.contains("[not-finished]")), "{got:?}");
    assert!(got.iter().any(|p| p.contains("ovni.require")), "{got:?}");
}
