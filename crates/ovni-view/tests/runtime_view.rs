//! ovniview on the traces of the fti-rs runtime and of applications with many threads, in a
//! real browser (Debian's chromium, headless; `OVNIVIEW_SKIP_BROWSER=1` skips them): the CPU
//! view only where threads ran on real CPUs, a legend of the colours, threads under their
//! process's rank, mark types with one value per iteration summarised, and tables that
//! follow the zoom window.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use ovni::write::{Process, MARK_STACK};

/// A single (not stack) mark type: no flag.
const MARK_SINGLE: u32 = 0;
use ovni_view::{Model, PageOptions};

#[allow(dead_code)] // its `main` is the example's
#[path = "../examples/runtime_trace.rs"]
mod runtime_trace;

/// What a synthetic thread does, at a clock.
enum Ev {
    /// Runs, on this CPU (-1: the loom's virtual CPU).
    Run(i32),
    Push(i32, i64),
    Pop(i32, i64),
    Set(i32, i64),
    End,
}

/// A mark type: number, stack or single, title, labels.
type MarkDef<'a> = (i32, bool, &'a str, &'a [(i64, &'a str)]);

fn thread(p: &Process, tid: i32, rank: Option<i32>, types: &[MarkDef], events: &[(u64, Ev)]) {
    let mut s = p.thread_init(tid).unwrap();
    for cpu in 0..2 {
        s.add_cpu(cpu, cpu).unwrap();
    }
    if let Some(r) = rank {
        s.set_rank(r, 2).unwrap();
    }
    for &(ty, stack, title, labels) in types {
        let flags = if stack { MARK_STACK } else { MARK_SINGLE };
        s.mark_type(ty, flags, title).unwrap();
        for &(v, l) in labels {
            s.mark_label(ty, v, l).unwrap();
        }
    }
    let mark = |ty: i32, v: i64| {
        let mut m = [0u8; 12];
        m[..8].copy_from_slice(&v.to_le_bytes());
        m[8..].copy_from_slice(&ty.to_le_bytes());
        m
    };
    for (clock, ev) in events {
        let (mcv, payload): (&[u8; 3], Vec<u8>) = match *ev {
            Ev::Run(cpu) => {
                let mut p = vec![0u8; 16];
                p[..4].copy_from_slice(&cpu.to_le_bytes());
                p[4..8].copy_from_slice(&(-1i32).to_le_bytes());
                (b"OHx", p)
            }
            Ev::Push(ty, v) => (b"OM[", mark(ty, v).to_vec()),
            Ev::Pop(ty, v) => (b"OM]", mark(ty, v).to_vec()),
            Ev::Set(ty, v) => (b"OM=", mark(ty, v).to_vec()),
            Ev::End => (b"OHe", Vec::new()),
        };
        s.emit_at(ovni::Mcv(*mcv), *clock, &payload).unwrap();
    }
    s.finish().unwrap();
}

fn process(dir: &Path, pid: i32) -> Process {
    Process::with_buffer_size(dir, 1, "node0", pid, 1 << 20).unwrap()
}

fn chromium(fragment: &str, file: &Path) -> Option<String> {
    if std::env::var_os("OVNIVIEW_SKIP_BROWSER").is_some() {
        return None;
    }
    let profile = tempfile::tempdir().unwrap();
    let out = Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--timeout=20000",
            "--enable-logging=stderr",
            "--v=0",
            "--window-size=1200,800",
            "--dump-dom",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(format!("file://{}{fragment}", file.display()))
        .output()
        .expect("chromium not found: scripts/test installs it (OVNIVIEW_SKIP_BROWSER=1 skips the browser tests)");
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{log}");
    assert!(!log.contains("Uncaught"), "{log}");
    Some(String::from_utf8(out.stdout).unwrap())
}

fn page(trace: &Path, out: &Path) -> Model {
    ovni_view::write_page(trace, out, &PageOptions::default()).unwrap()
}

/// The element `<TAG id="ID" ...>` up to its closing tag.
fn element<'a>(dom: &'a str, tag: &str, id: &str) -> &'a str {
    let at = dom
        .find(&format!("id=\"{id}\""))
        .unwrap_or_else(|| panic!("no #{id}"));
    let (open, close) = (format!("<{tag}"), format!("</{tag}>"));
    let start = dom[..at].rfind(&open).unwrap();
    let mut depth = 0;
    let mut i = start;
    loop {
        let next_open = dom[i + 1..].find(&open).map(|k| k + i + 1);
        let next_close = dom[i..].find(&close).map(|k| k + i).unwrap();
        match next_open {
            Some(o) if o < next_close => {
                depth += 1;
                i = o;
            }
            _ if depth == 0 => return &dom[start..next_close],
            _ => {
                depth -= 1;
                i = next_close + 1;
            }
        }
    }
}

/// The cells of every row but the header of table `#id`, as text.
fn table(dom: &str, id: &str) -> Vec<Vec<String>> {
    element(dom, "table", id)
        .split("<tr>")
        .skip(2)
        .map(|row| {
            row.split("<td")
                .skip(1)
                .map(|cell| {
                    let text = &cell[cell.find('>').unwrap() + 1..];
                    text[..text.find("</td>").unwrap()]
                        .replace("&lt;", "<")
                        .replace("&gt;", ">")
                        .replace("&amp;", "&")
                })
                .collect()
        })
        .collect()
}

fn render_attr(dom: &str, name: &str) -> String {
    let marker = element(dom, "div", "ovniview-render");
    let at = marker.find(&format!("{name}=\"")).unwrap() + name.len() + 2;
    marker[at..at + marker[at..].find('"').unwrap()].to_owned()
}

fn runtime_trace(root: &Path, async_ckpt: bool) -> PathBuf {
    runtime_trace::run(root, async_ckpt, 2, 12, 3).unwrap();
    root.join("trace")
}

#[test]
fn a_runtime_trace_has_no_cpu_view_and_says_why() {
    let tmp = tempfile::tempdir().unwrap();
    let trace = runtime_trace(tmp.path(), true);
    let file = tmp.path().join("t.html");
    let model = page(&trace, &file);
    assert_eq!(
        model.threads.len(),
        4,
        "2 ranks and their background threads"
    );
    let Some(dom) = chromium("#view=cpu", &file) else {
        return;
    };
    assert_eq!(render_attr(&dom, "data-mode"), "threads");
    let button = element(&dom, "button", "ov-cpu");
    assert!(button.contains("disabled"), "{button}");
    let note = element(&dom, "span", "ov-cpu-note");
    assert!(!note.contains("hidden"), "{note}");
    assert!(note.contains("virtual CPU"), "{note}");
    // A trace on real CPUs keeps its CPU view.
    let real = tmp.path().join("real");
    let p = process(&real, 7);
    thread(&p, 7, None, &[], &[(10, Ev::Run(1)), (90, Ev::End)]);
    let file = tmp.path().join("real.html");
    page(&real, &file);
    let dom = chromium("#view=cpu", &file).unwrap();
    assert_eq!(render_attr(&dom, "data-mode"), "cpu");
    assert!(element(&dom, "span", "ov-cpu-note").contains("hidden"));
}

#[test]
fn threads_are_shown_under_their_process_rank() {
    let tmp = tempfile::tempdir().unwrap();
    let trace = tmp.path().join("trace");
    let run = |p: &Process, tid: i32, rank: Option<i32>| {
        thread(p, tid, rank, &[], &[(10, Ev::Run(-1)), (90, Ev::End)]);
    };
    // Process 100: the main thread sets rank 1, its workers set none.
    let p = process(&trace, 100);
    run(&p, 100, Some(1));
    run(&p, 101, None);
    run(&p, 102, None);
    // Process 300: two ranks as threads, their tids interleaved.
    let p = process(&trace, 300);
    for (tid, rank) in [(301, 0), (302, 1), (303, 0), (304, 1)] {
        run(&p, tid, Some(rank));
    }
    let file = tmp.path().join("t.html");
    page(&trace, &file);
    let Some(dom) = chromium("", &file) else {
        return;
    };
    let ranks: BTreeMap<String, String> = table(&dom, "ov-states")
        .into_iter()
        .map(|r| (r[0].clone(), r[1].clone()))
        .collect();
    for tid in [100, 101, 102] {
        assert_eq!(ranks[&format!("loom.node0/proc.100/thread.{tid}")], "1");
    }
    // Each rank's threads together, so each group is drawn once.
    let order: Vec<(String, String)> = table(&dom, "ov-states")
        .into_iter()
        .map(|r| (r[0].clone(), r[1].clone()))
        .filter(|(name, _)| name.contains("proc.300"))
        .collect();
    let order: Vec<&str> = order.iter().map(|(n, _)| &n[n.len() - 3..]).collect();
    assert_eq!(order, ["301", "303", "302", "304"]);
}

#[test]
fn the_legend_names_the_states_and_the_runtime_marks_and_the_checkpoint_table_follows_the_window() {
    let tmp = tempfile::tempdir().unwrap();
    let trace = runtime_trace(tmp.path(), false);
    let file = tmp.path().join("t.html");
    page(&trace, &file);
    let model = Model::build(&ovni::Trace::open(&trace).unwrap());
    // A window from the second checkpoint's start to just before the last one's, per rank.
    let runs = ovni_view::runtime::checkpoint_runs(&model);
    let mut starts: Vec<u64> = runs.iter().map(|r| r.start).collect();
    starts.sort_unstable();
    starts.dedup();
    assert!(starts.len() >= 6, "{runs:?}");
    let (t0, t1) = (starts[2], starts[starts.len() - 2]);
    let inside: Vec<_> = runs
        .iter()
        .filter(|r| r.start >= t0 && r.start < t1)
        .collect();
    let window = format!("#t0={t0}&t1={t1}");
    let Some(dom) = chromium(&window, &file) else {
        return;
    };
    // The checkpoint table counts those that start in the window, per process and level.
    let rows = table(&dom, "ov-ckpts");
    let shown: u64 = rows.iter().map(|r| r[3].parse::<u64>().unwrap()).sum();
    assert_eq!(shown, inside.len() as u64, "{rows:?}");
    let stopped: u64 = rows.iter().map(|r| r[6].parse::<u64>().unwrap()).sum();
    assert_eq!(stopped, inside.iter().map(|r| r.stopped_ns).sum::<u64>());
    assert!(inside.len() < runs.len(), "the window leaves some out");
    let scope = element(&dom, "p", "ov-table-scope");
    assert!(
        scope.contains("checkpoint table above counts the checkpoints that start in the window"),
        "{scope}"
    );
    assert!(scope.contains("window shown"), "{scope}");
    let legend = element(&dom, "div", "ov-legend");
    for text in [
        "Running",
        "Paused",
        "Dead",
        "FTI level (40)",
        "L1 checkpoint",
        "L4 checkpoint",
        "FTI phase (42)",
        "write (hash + write data)",
        "FTI checkpoint (41)",
    ] {
        assert!(legend.contains(text), "{text} not in {legend}");
    }
    // Each entry has its colour.
    assert!(legend.matches("class=\"lg-box\"").count() >= 10, "{legend}");
}

/// A thread setting an iteration number 350 times, a labelled type with 40 values pushed
/// once each (both summarised), a labelled stack type with 3 values (listed, sometimes two
/// deep), hostile titles.
fn iterations(dir: &Path) {
    let p = process(dir, 50);
    let labels40: Vec<(i64, String)> = (1..=40).map(|v| (v, format!("item {v}"))).collect();
    let labels40: Vec<(i64, &str)> = labels40.iter().map(|(v, l)| (*v, l.as_str())).collect();
    let types: [MarkDef; 3] = [
        (1, false, "iteration", &[]),
        (2, true, "<img src=x onerror=alert(1)>", &labels40),
        (
            3,
            true,
            "Colors",
            &[(1, "Blue"), (2, "<b>Red</b>"), (3, "Green")],
        ),
    ];
    let mut events = vec![(1000, Ev::Run(-1))];
    for i in 0..350u64 {
        let t = 2000 + i * 1000;
        events.push((t, Ev::Set(1, i as i64 + 1)));
        if i < 40 {
            events.push((t + 100, Ev::Push(2, i as i64 + 1)));
            events.push((t + 200, Ev::Pop(2, i as i64 + 1)));
        }
        events.push((t + 300, Ev::Push(3, (i % 3) as i64 + 1)));
        if i % 5 == 0 {
            // Nested in its own stack: Blue on top for 150 ns.
            events.push((t + 400, Ev::Push(3, 1)));
            events.push((t + 550, Ev::Pop(3, 1)));
        }
        events.push((t + 600, Ev::Pop(3, (i % 3) as i64 + 1)));
    }
    events.push((400_000, Ev::Set(1, 0)));
    events.push((401_000, Ev::End));
    thread(&p, 50, Some(0), &types, &events);
}

#[test]
fn a_mark_type_with_one_value_per_iteration_is_summarised() {
    let tmp = tempfile::tempdir().unwrap();
    let trace = tmp.path().join("trace");
    iterations(&trace);
    let file = tmp.path().join("t.html");
    let model = page(&trace, &file);
    let Some(dom) = chromium("", &file) else {
        return;
    };
    assert!(!dom.contains("<img"), "a title became markup");
    assert!(!dom.contains("<b>Red"), "a label became markup");
    let rows = table(&dom, "ov-marks");
    let of = |title: &str| -> Vec<Vec<String>> {
        rows.iter()
            .filter(|r| r[2].starts_with(title))
            .cloned()
            .collect()
    };
    let iter = of("iteration");
    assert_eq!(iter.len(), 1, "{iter:?}");
    let held = &model.threads[0].held;
    let total: u64 = (1..=350).map(|v| held[&(1, v)].total_ns).sum();
    assert_eq!(iter[0][3], "350 values, 1 to 350");
    assert_eq!(iter[0][4], "350");
    assert_eq!(iter[0][6], total.to_string());
    let items = of("<img");
    assert_eq!(items.len(), 1, "{items:?}");
    assert_eq!(items[0][3], "40 values, 1 to 40");
    assert_eq!(of("Colors").len(), 3);
    let legend = element(&dom, "div", "ov-legend");
    assert!(legend.contains("350 values, 1 to 350"), "{legend}");
    assert!(legend.contains("Green"), "{legend}");
}

/// (mark type, value) → (intervals in the window, ns on top in it).
type WindowMarks = BTreeMap<(i64, i64), (u64, u64)>;

/// Time on top of each stack (or set) and state time within `[a, b)`, straight from the
/// stream's events; counts are the intervals (of non-zero length) that overlap the window.
fn window_oracle(trace: &Path, a: u64, b: u64) -> (WindowMarks, [u64; 6]) {
    let overlap = |t0: u64, t1: u64| t1.min(b).saturating_sub(t0.max(a));
    let opened = ovni::Trace::open(trace).unwrap();
    let stream = &opened.streams()[0];
    let mut marks: BTreeMap<(i64, i64), (u64, u64)> = BTreeMap::new();
    let mut states = [0u64; 6];
    let (mut state, mut since) = (0usize, 0u64);
    let mut stacks: BTreeMap<i64, (Vec<(i64, u64)>, u64)> = BTreeMap::new();
    let ended = |v: i64, ty: i64, t0: u64, t1: u64, marks: &mut BTreeMap<_, (u64, u64)>| {
        if t1 > t0 && t0 < b && t1 > a {
            marks.entry((ty, v)).or_default().0 += 1;
        }
    };
    for ev in stream.events() {
        let ev = ev.unwrap().1;
        let now = ev.clock;
        if since == 0 {
            since = now;
        }
        let new_state = match &ev.mcv.0 {
            b"OHx" => Some(1),
            b"OHe" => Some(3),
            _ => None,
        };
        if let Some(s) = new_state {
            states[state] += overlap(since, now);
            (state, since) = (s, now);
        }
        if ev.mcv.0[..2] == *b"OM" {
            let v = i64::from_le_bytes(ev.payload[..8].try_into().unwrap());
            let ty = i64::from(i32::from_le_bytes(ev.payload[8..12].try_into().unwrap()));
            let (st, top_since) = stacks.entry(ty).or_default();
            if let Some(&(top, _)) = st.last() {
                marks.entry((ty, top)).or_default().1 += overlap(*top_since, now);
            }
            *top_since = now;
            match ev.mcv.0[2] {
                b'[' => st.push((v, now)),
                b']' => {
                    let (v, t0) = st.pop().unwrap();
                    ended(v, ty, t0, now, &mut marks);
                }
                _ => {
                    if let Some((old, t0)) = st.pop() {
                        ended(old, ty, t0, now, &mut marks);
                    }
                    if v != 0 {
                        st.push((v, now));
                    }
                }
            }
        }
    }
    (marks, states)
}

#[test]
fn the_tables_follow_the_zoom_window() {
    let tmp = tempfile::tempdir().unwrap();
    let trace = tmp.path().join("trace");
    iterations(&trace);
    let file = tmp.path().join("t.html");
    let model = page(&trace, &file);
    let start = model.start;
    // A window cutting intervals at both ends: iterations 100..=150, partly.
    let (a, b) = (start + 100_450, start + 150_250);
    let Some(dom) = chromium(&format!("#t0={a}&t1={b}"), &file) else {
        return;
    };
    assert_eq!(render_attr(&dom, "data-view"), format!("{a},{b}"));
    let scope = element(&dom, "p", "ov-table-scope");
    assert!(scope.contains("window shown"), "{scope}");
    assert!(
        !scope.contains("checkpoint table"),
        "no checkpoint table here: {scope}"
    );
    let (marks, states) = window_oracle(&trace, a, b);
    let rows = table(&dom, "ov-marks");
    // Colors: listed, value by value.
    for v in 1..=3 {
        let row = rows
            .iter()
            .find(|r| r[2] == "Colors (3)" && r[3].ends_with(&format!("({v})")))
            .unwrap_or_else(|| panic!("no Colors {v} in {rows:?}"));
        let (count, ns) = marks[&(3, v)];
        assert_eq!(
            (row[4].clone(), row[6].clone()),
            (count.to_string(), ns.to_string())
        );
    }
    // Iterations: one summary row of the values in the window.
    let iter = rows.iter().find(|r| r[2] == "iteration (1)").unwrap();
    let in_window: Vec<_> = marks
        .iter()
        .filter(|((ty, _), c)| *ty == 1 && c.0 > 0)
        .collect();
    let ns: u64 = in_window.iter().map(|(_, c)| c.1).sum();
    assert_eq!(
        iter[3],
        format!(
            "{} values, {} to {}",
            in_window.len(),
            in_window[0].0 .1,
            in_window.last().unwrap().0 .1
        )
    );
    assert_eq!(iter[6], ns.to_string());
    // No item is pushed in this window.
    assert!(!rows.iter().any(|r| r[2].starts_with("<img")), "{rows:?}");
    let st = table(&dom, "ov-states");
    assert_eq!(st[0][3], ovni_view::page::human_ns(states[1]), "Running");
    // The whole trace again: the tables of the whole trace.
    let whole = chromium("", &file).unwrap();
    assert!(element(&whole, "p", "ov-table-scope").contains("whole trace"));
    assert_eq!(table(&whole, "ov-marks").len(), 3 + 1 + 1);
}
