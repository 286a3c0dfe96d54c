//! ovniview's page against the traces it draws: the page's summary equals an independent
//! computation from the ovni reader, crashed traces are drawn and flagged, hostile bytes never
//! panic, large traces stay within their budget, and the page renders in a real browser
//! (Debian's chromium, headless; `OVNIVIEW_SKIP_BROWSER=1` skips those tests on a developer
//! machine without it).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use ovni_view::{Model, PageOptions};
use serde_json::{json, Value};

fn fixture(name: &str) -> PathBuf {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    match name {
        "fti-demo-crashed" => here.join("tests/fixtures").join(name),
        other => here
            .join("../ovni/tests/fixtures/traces")
            .join(other)
            .join("ovni"),
    }
}

const TRACES: [&str; 5] = ["single", "multi", "payloads", "marks", "fti-demo-crashed"];

/// The JSON inside `<script type="application/json" id="ID">`.
fn script_json(html: &str, id: &str) -> Value {
    let open = format!("<script type=\"application/json\" id=\"{id}\">");
    let start = html.find(&open).unwrap_or_else(|| panic!("no #{id}")) + open.len();
    let len = html[start..].find("</script>").unwrap();
    serde_json::from_str(&html[start..start + len]).unwrap()
}

/// The summary computed straight from the ovni reader, without the crate's model: states
/// and marks (time on top of each stack, or set) per thread, summed.
fn oracle(dir: &Path) -> Value {
    let trace = ovni::Trace::open(dir).unwrap();
    let mut states: BTreeMap<String, u64> = BTreeMap::new();
    let mut marks: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
    let mut titles = serde_json::Map::new();
    let mut labels = serde_json::Map::new();
    let (mut events, mut start, mut end) = (0u64, u64::MAX, 0u64);
    for s in trace.streams() {
        if let Some(m) = s.meta()["ovni"]["mark"].as_object() {
            for (ty, def) in m {
                titles.entry(ty.clone()).or_insert(def["title"].clone());
                if let Some(l) = def["labels"].as_object() {
                    let e = labels.entry(ty.clone()).or_insert(json!({}));
                    for (v, text) in l {
                        e.as_object_mut()
                            .unwrap()
                            .entry(v.clone())
                            .or_insert(text.clone());
                    }
                }
            }
        }
        let mut state = "Unknown";
        let mut since = None::<u64>;
        let mut clock = 0u64;
        let mut stacks: BTreeMap<i32, (Vec<i64>, u64)> = BTreeMap::new();
        let mut on_top = |stacks: &mut BTreeMap<i32, (Vec<i64>, u64)>, ty: i32, now: u64| {
            let (st, t) = stacks.entry(ty).or_default();
            if let Some(v) = st.last() {
                *marks
                    .entry(ty.to_string())
                    .or_default()
                    .entry(v.to_string())
                    .or_default() += now - *t;
            }
            *t = now;
        };
        for ev in s.events() {
            let Ok((_, ev)) = ev else { break };
            events += 1;
            clock = clock.max(ev.clock);
            if since.is_none() {
                since = Some(clock);
                start = start.min(clock);
            }
            let new_state = match &ev.mcv.0 {
                b"OHx" | b"OHr" => Some("Running"),
                b"OHp" => Some("Paused"),
                b"OHe" => Some("Dead"),
                b"OHc" => Some("Cooling"),
                b"OHw" => Some("Warming"),
                _ => None,
            };
            if let Some(ns) = new_state {
                *states.entry(state.to_owned()).or_default() += clock - since.unwrap();
                state = ns;
                since = Some(clock);
            }
            if ev.mcv.0[..2] == *b"OM" && ev.payload.len() >= 12 {
                let v = i64::from_le_bytes(ev.payload[..8].try_into().unwrap());
                let ty = i32::from_le_bytes(ev.payload[8..12].try_into().unwrap());
                on_top(&mut stacks, ty, clock);
                let st = &mut stacks.get_mut(&ty).unwrap().0;
                match ev.mcv.0[2] {
                    b'[' => st.push(v),
                    b']' => {
                        if let Some(p) = st.iter().rposition(|&x| x == v) {
                            st.truncate(p);
                        }
                    }
                    _ => {
                        st.clear();
                        if v != 0 {
                            st.push(v);
                        }
                    }
                }
            }
        }
        if let Some(t0) = since {
            *states.entry(state.to_owned()).or_default() += clock - t0;
            end = end.max(clock);
            let tys: Vec<i32> = stacks.keys().copied().collect();
            for ty in tys {
                on_top(&mut stacks, ty, clock);
            }
        }
    }
    states.retain(|_, v| *v > 0);
    for m in marks.values_mut() {
        m.retain(|_, v| *v > 0);
    }
    marks.retain(|_, m| !m.is_empty());
    json!({
        "threads": trace.streams().len(),
        "events": events,
        "start_ns": if events == 0 { 0 } else { start },
        "end_ns": end,
        "states": states,
        "marks": marks,
        "titles": titles,
        "labels": labels,
    })
}

fn copy_tree(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let dst = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&dst).unwrap();
            copy_tree(&entry.path(), &dst);
        } else {
            std::fs::copy(entry.path(), dst).unwrap();
        }
    }
}

fn page(dir: &Path) -> String {
    ovni_view::render_dir(dir, &PageOptions::default()).unwrap()
}

#[test]
fn the_page_summary_matches_the_trace() {
    for name in TRACES {
        let dir = fixture(name);
        let html = page(&dir);
        assert_eq!(
            script_json(&html, "ovniview-summary"),
            oracle(&dir),
            "summary of {name}"
        );
    }
}

#[test]
fn marks_are_timed_on_top_of_their_stack() {
    // traces/marks: thread 404 pushes Red (3) on "Colors" three times.
    let html = page(&fixture("marks"));
    let s = script_json(&html, "ovniview-summary");
    assert_eq!(s["titles"]["2"], "Colors");
    assert_eq!(s["labels"]["2"]["1"], "Blue");
    assert!(s["marks"]["2"]["3"].as_u64().unwrap() > 0);
    assert_eq!(s["threads"], 2);
    assert_eq!(s["events"], 32);
}

#[test]
fn the_page_is_self_contained() {
    for name in TRACES {
        let html = page(&fixture(name));
        for needle in ["src=", "href=", "http:", "https:", "@import", "url("] {
            assert!(
                !html.contains(needle),
                "{name}: the page refers to {needle}"
            );
        }
    }
}

#[test]
fn a_crashed_fti_run_is_drawn_and_flagged() {
    let dir = fixture("fti-demo-crashed");
    // ovniemu (and ovnilint) refuse it.
    let report = ovni::lint::lint_dir(&dir, &ovni::lint::LintOptions::default());
    assert!(!report.accepted());
    let copy = tempfile::tempdir().unwrap();
    copy_tree(&dir, copy.path());
    let emu = ovni::emu::emulate(
        copy.path(),
        &ovni::emu::EmuOptions::default(),
        &mut ovni::emu::Collect::default(),
    );
    assert!(!emu.ok);
    let trace = ovni::Trace::open(&dir).unwrap();
    let model = Model::build(&trace);
    let crashed: Vec<_> = model.threads.iter().filter(|t| t.is_flagged()).collect();
    assert_eq!(crashed.len(), 1, "{:?}", model.threads);
    let flags: Vec<String> = crashed[0].flags.iter().map(|f| f.to_string()).collect();
    assert!(flags.iter().any(|f| f.contains("unfinished")), "{flags:?}");
    assert!(flags.iter().any(|f| f.contains("never ended")), "{flags:?}");
    // The rank is known although the process died.
    assert_eq!(crashed[0].rank, Some(0));
    let html = page(&dir);
    assert!(html.contains("id=\"ovniview-flags\""));
    assert!(html.contains(&crashed[0].name));
    let data = script_json(&html, "ovniview-data");
    let flagged = data["threads"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| !t["flags"].as_array().unwrap().is_empty())
        .count();
    assert_eq!(flagged, 1);
}

#[test]
fn the_checkpoint_table_of_an_fti_trace() {
    let dir = fixture("fti-demo-crashed");
    let model = Model::build(&ovni::Trace::open(&dir).unwrap());
    let rows = ovni_view::summary::checkpoint_table(&model);
    // Two processes: the run that crashed and its restart.
    let pids: std::collections::BTreeSet<i64> = rows.iter().map(|r| r.pid).collect();
    assert_eq!(pids.len(), 2, "{rows:#?}");
    assert!(rows.iter().all(|r| r.rank == Some(0)));
    // Every checkpoint writes inside its level, once per checkpoint (a synchronous run: on
    // the application's thread, which is stopped for all of it).
    let runs = ovni_view::runtime::checkpoint_runs(&model);
    let levels = ovni_view::runtime::level_table(&runs);
    assert!(!levels.is_empty());
    for l in &levels {
        let write = rows
            .iter()
            .find(|r| r.pid == l.pid && r.level == l.level && r.phase.starts_with("write"))
            .unwrap_or_else(|| panic!("no write phase for {l:?}"));
        assert_eq!(write.count, l.checkpoints, "{rows:#?}");
        assert_eq!(write.thread, ovni_view::runtime::Role::Application);
        assert!(write.total_ns > 0 && l.stopped_ns >= write.total_ns);
        assert_eq!(l.background_ns, 0);
    }
    // The restart verifies its checkpoint outside any level.
    assert!(
        rows.iter()
            .any(|r| r.level.is_none() && r.phase.starts_with("verify")),
        "{rows:#?}"
    );
    // Phase times add up to the summary's time on top of the phase stack.
    let s = ovni_view::Summary::of(&model);
    let phase_ty = model.type_titled("FTI phase").unwrap();
    let phases_total: u64 = s.marks[&phase_ty].values().sum();
    let table_total: u64 = rows.iter().map(|r| r.total_ns).sum();
    assert_eq!(phases_total, table_total);
}

/// A thread killed mid-run: its stream is unfinished, its stack marks still pushed, its
/// state still Running; all of it is drawn up to the last event and flagged.
#[test]
fn a_killed_thread_is_drawn_up_to_its_last_event() {
    let tmp = tempfile::tempdir().unwrap();
    let process = ovni::write::Process::with_buffer_size(tmp.path(), 1, "n", 9, 1 << 20).unwrap();
    let mut s = process.thread_init(9).unwrap();
    s.mark_type(3, ovni::write::MARK_STACK, "Work").unwrap();
    s.attr_flush().unwrap();
    let mut p = [0u8; 16];
    p[4..8].copy_from_slice(&(-1i32).to_le_bytes());
    s.emit_at(ovni::Mcv(*b"OHx"), 1000, &p).unwrap();
    let mark = |v: i64| {
        let mut m = [0u8; 12];
        m[..8].copy_from_slice(&v.to_le_bytes());
        m[8..].copy_from_slice(&3i32.to_le_bytes());
        m
    };
    s.emit_at(ovni::Mcv(*b"OM["), 2000, &mark(1)).unwrap();
    s.emit_at(ovni::Mcv(*b"OM["), 3000, &mark(2)).unwrap();
    s.emit_at(ovni::Mcv(*b"OM]"), 3500, &mark(2)).unwrap();
    s.emit_at(ovni::Mcv(*b"OM["), 4000, &mark(5)).unwrap();
    s.emit_at(ovni::Mcv(*b"OB."), 9000, &[]).unwrap();
    drop(s); // no finish: what a crash leaves (the buffer is written, not `finished`)
    let model = Model::build(&ovni::Trace::open(tmp.path()).unwrap());
    let th = &model.threads[0];
    assert_eq!(th.events, 6);
    assert_eq!((th.first, th.last), (Some(1000), Some(9000)));
    use ovni_view::model::{Flag, State};
    assert!(th.flags.contains(&Flag::Unfinished), "{:?}", th.flags);
    assert!(th.flags.contains(&Flag::NotEnded {
        state: State::Running
    }));
    assert!(th.flags.contains(&Flag::OpenMarks(vec![(3, 1), (3, 5)])));
    assert_eq!(th.state_ns[State::Running as usize], 8000);
    // Value 1 is on top 2000..3000 and 3500..4000; 2 for 500 ns; 5 from 4000 to the end.
    assert_eq!(th.held[&(3, 1)].total_ns, 1500);
    assert_eq!(th.held[&(3, 2)].total_ns, 500);
    assert_eq!(th.held[&(3, 5)].total_ns, 5000);
    let open: Vec<_> = th
        .marks
        .iter()
        .filter(|m| m.open)
        .map(|m| (m.depth, m.span))
        .collect();
    assert_eq!(open.len(), 2);
    assert!(open.iter().all(|(_, s)| s.t1 == 9000));
    let html = ovni_view::page::render(&model, &PageOptions::default());
    assert!(html.contains("marks left open: 3=1 3=5"));
    assert_eq!(script_json(&html, "ovniview-summary"), oracle(tmp.path()));
}

/// Every prefix of a real stream (a crash at any byte) and corrupted bytes: a page, no panic.
#[test]
fn cut_or_corrupted_streams_never_panic() {
    let dir = fixture("marks").join("loom.node0/proc.403/thread.403");
    let bytes = std::fs::read(dir.join("stream.obs")).unwrap();
    let meta: Value =
        serde_json::from_slice(&std::fs::read(dir.join("stream.json")).unwrap()).unwrap();
    let mut variants: Vec<Vec<u8>> = (8..=bytes.len()).map(|n| bytes[..n].to_vec()).collect();
    for i in 8..bytes.len() {
        for x in [0x00u8, 0xff, 0x13, 0x80] {
            let mut b = bytes.clone();
            b[i] = x;
            variants.push(b);
        }
    }
    for b in variants {
        let cut = b.len() < bytes.len() && b.len() > 8;
        let stream = ovni::Stream::from_bytes("t", "t/stream.obs", meta.clone(), b).unwrap();
        let model = Model::build(&ovni::Trace::from_streams(vec![stream]));
        let html = ovni_view::page::render(&model, &PageOptions::default());
        assert!(html.contains("ovniview-summary"));
        if cut && model.threads[0].events < 30 {
            assert!(model.threads[0].is_flagged());
        }
    }
}

/// Clocks at the ends of the u64 range in two threads: sums saturate, nothing panics.
#[test]
fn extreme_clocks_never_panic() {
    let ev = |mcv: &[u8; 3], clock: u64, payload: &[u8]| {
        let mut e = vec![
            payload.len().saturating_sub(1) as u8,
            mcv[0],
            mcv[1],
            mcv[2],
        ];
        e.extend_from_slice(&clock.to_le_bytes());
        e.extend_from_slice(payload);
        e
    };
    let mut mark = [0u8; 12];
    mark[..8].copy_from_slice(&7i64.to_le_bytes());
    let mut streams = Vec::new();
    for t in 0..2 {
        let mut b = b"ovni\x01\0\0\0".to_vec();
        b.extend(ev(b"OHx", 0, &[0; 16]));
        b.extend(ev(b"OM[", 1, &mark));
        b.extend(ev(b"OM]", u64::MAX - 1, &mark));
        b.extend(ev(b"OHe", u64::MAX, &[]));
        let meta = json!({"version": 3, "ovni": {"tid": t + 1, "pid": 1, "loom": "x",
            "mark": {"0": {"title": "</script><b>", "chan_type": "stack"}}}});
        streams.push(ovni::Stream::from_bytes(format!("t{t}"), "t/stream.obs", meta, b).unwrap());
    }
    let model = Model::build(&ovni::Trace::from_streams(streams));
    let s = ovni_view::Summary::of(&model);
    assert_eq!(s.states["Running"], u64::MAX);
    assert_eq!(s.marks[&0][&7], u64::MAX);
    let html = ovni_view::page::render(&model, &PageOptions::default());
    // The title is text, never markup.
    assert!(!html.contains("</script><b>"));
    assert_eq!(
        script_json(&html, "ovniview-summary")["titles"]["0"],
        "</script><b>"
    );
}

/// A trace written with the ovni writer: `threads` threads, each `pairs` push/pop pairs of
/// 3 values on a stack mark, 1 µs apart.
fn synthetic(dir: &Path, threads: i32, pairs: u64) {
    // One buffer holds a whole thread: no flush events at the real clock amid these clocks.
    let process = ovni::write::Process::with_buffer_size(dir, 1, "node0", 100, 16 << 20).unwrap();
    for t in 0..threads {
        let mut s = process.thread_init(100 + t).unwrap();
        s.add_cpu(t, t).unwrap();
        s.mark_type(7, ovni::write::MARK_STACK, "Work").unwrap();
        let mut clock = 1_000_000u64;
        let mut p = [0u8; 16];
        p[..4].copy_from_slice(&t.to_le_bytes());
        p[4..8].copy_from_slice(&(-1i32).to_le_bytes());
        s.emit_at(ovni::Mcv(*b"OHx"), clock, &p).unwrap();
        for i in 0..pairs {
            let mut m = [0u8; 12];
            m[..8].copy_from_slice(&((i % 3) as i64 + 1).to_le_bytes());
            m[8..].copy_from_slice(&7i32.to_le_bytes());
            clock += 1000;
            s.emit_at(ovni::Mcv(*b"OM["), clock, &m).unwrap();
            clock += 300 + (i % 7) * 100;
            s.emit_at(ovni::Mcv(*b"OM]"), clock, &m).unwrap();
        }
        clock += 1000;
        s.emit_at(ovni::Mcv(*b"OHe"), clock, &[]).unwrap();
        s.finish().unwrap();
    }
}

#[test]
fn a_large_trace_stays_within_its_budget() {
    let tmp = tempfile::tempdir().unwrap();
    synthetic(tmp.path(), 4, 50_000);
    let opts = PageOptions {
        max_bytes: 1 << 20,
        ..PageOptions::default()
    };
    let html = ovni_view::render_dir(tmp.path(), &opts).unwrap();
    assert!(html.len() < 2 << 20, "{} bytes", html.len());
    let data = script_json(&html, "ovniview-data");
    assert_eq!(data["complete"], false);
    assert_eq!(script_json(&html, "ovniview-summary"), oracle(tmp.path()));
    // With room enough, every interval is shipped.
    let html = ovni_view::render_dir(tmp.path(), &PageOptions::default()).unwrap();
    assert_eq!(script_json(&html, "ovniview-data")["complete"], true);
}

// ---- In a real browser -------------------------------------------------------------------

fn browser() -> Option<&'static str> {
    if std::env::var_os("OVNIVIEW_SKIP_BROWSER").is_some() {
        return None;
    }
    for b in ["chromium", "chromium-browser"] {
        if Command::new(b)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
        {
            return Some(b);
        }
    }
    panic!("chromium not found: scripts/test installs it (OVNIVIEW_SKIP_BROWSER=1 skips the browser tests)");
}

fn chromium(args: &[String]) -> Vec<u8> {
    let b = browser().unwrap();
    let profile = tempfile::tempdir().unwrap();
    let out = Command::new(b)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--hide-scrollbars",
            "--no-first-run",
            "--timeout=20000",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(args)
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{log}");
    // The page's script ran without an exception.
    assert!(
        !log.contains("Uncaught"),
        "{}",
        log.lines()
            .filter(|l| l.contains("CONSOLE"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    out.stdout
}

fn url(file: &Path, fragment: &str) -> String {
    format!("file://{}{fragment}", file.display())
}

fn screenshot(file: &Path, fragment: &str, png_path: &Path) -> (u32, u32, Vec<u8>) {
    chromium(&[
        "--window-size=1200,800".into(),
        format!("--screenshot={}", png_path.display()),
        url(file, fragment),
    ]);
    let decoder = png::Decoder::new(std::fs::File::open(png_path).unwrap());
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    buf.truncate(info.buffer_size());
    let rgb: Vec<u8> = match info.color_type {
        png::ColorType::Rgba => buf.chunks(4).flat_map(|p| [p[0], p[1], p[2]]).collect(),
        png::ColorType::Rgb => buf,
        other => panic!("unexpected PNG colour type {other:?}"),
    };
    (info.width, info.height, rgb)
}

fn write_page(dir: &Path, out: &Path) {
    ovni_view::write_page(dir, out, &PageOptions::default()).unwrap();
}

#[test]
fn the_browser_renders_the_summary_and_the_window_of_the_fragment() {
    if browser().is_none() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    for name in ["multi", "fti-demo-crashed"] {
        let file = tmp.path().join(format!("{name}.html"));
        write_page(&fixture(name), &file);
        let s = script_json(&std::fs::read_to_string(&file).unwrap(), "ovniview-summary");
        let (t0, t1) = (
            s["start_ns"].as_u64().unwrap(),
            s["end_ns"].as_u64().unwrap(),
        );
        let mid = t0 + (t1 - t0) / 2;
        let dom = chromium(&[
            "--dump-dom".into(),
            url(&file, &format!("#t0={t0}&t1={mid}")),
        ]);
        let dom = String::from_utf8(dom).unwrap();
        // The summary the browser parsed is the trace's.
        assert_eq!(
            script_json(&dom, "ovniview-summary"),
            oracle(&fixture(name))
        );
        // The script ran, drew, and took the window from the fragment.
        let marker = dom
            .split("id=\"ovniview-render\"")
            .nth(1)
            .and_then(|r| r.split('>').next())
            .unwrap()
            .to_owned();
        assert!(marker.contains("data-ms=\""), "{marker}");
        assert!(
            marker.contains(&format!("data-view=\"{t0},{mid}\"")),
            "{name}: {marker}"
        );
        assert!(marker.contains("data-mode=\"threads\""), "{marker}");
    }
    // The CPU view from the fragment.
    let file = tmp.path().join("multi.html");
    let dom = String::from_utf8(chromium(&["--dump-dom".into(), url(&file, "#view=cpu")])).unwrap();
    assert!(dom.contains("data-mode=\"cpu\""));
}

#[test]
fn screenshots_are_drawn_and_two_windows_differ() {
    if browser().is_none() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("demo.html");
    let dir = fixture("fti-demo-crashed");
    write_page(&dir, &file);
    let s = ovni_view::Summary::of(&Model::build(&ovni::Trace::open(&dir).unwrap()));
    let (t0, t1) = (s.start_ns, s.end_ns);
    let whole = screenshot(&file, "", &tmp.path().join("whole.png"));
    let part = screenshot(
        &file,
        &format!("#t0={}&t1={}", t0 + (t1 - t0) * 3 / 4, t1),
        &tmp.path().join("part.png"),
    );
    // The runtime's threads run on the loom's virtual CPU: no CPU view there; a trace on
    // real CPUs has one.
    let on_cpus = tmp.path().join("cpus");
    synthetic(&on_cpus.join("trace"), 3, 200);
    let cpus_file = on_cpus.join("cpus.html");
    write_page(&on_cpus.join("trace"), &cpus_file);
    let threads = screenshot(&cpus_file, "", &tmp.path().join("threads.png"));
    let cpu = screenshot(&cpus_file, "#view=cpu", &tmp.path().join("cpu.png"));
    for (w, h, px) in [&whole, &part, &threads, &cpu] {
        assert_eq!((*w, *h), (1200, 800));
        // Not blank: many pixels far from white, in several colours.
        let coloured = px
            .chunks(3)
            .filter(|p| p.iter().map(|&c| 255 - u32::from(c)).sum::<u32>() > 120)
            .count();
        assert!(coloured > 5_000, "only {coloured} coloured pixels");
        let colours: std::collections::HashSet<&[u8]> = px.chunks(3).collect();
        assert!(colours.len() > 20, "{} colours", colours.len());
    }
    let differing =
        |a: &[u8], b: &[u8]| a.chunks(3).zip(b.chunks(3)).filter(|(x, y)| x != y).count();
    assert!(differing(&whole.2, &part.2) > 2_000);
    assert!(differing(&threads.2, &cpu.2) > 2_000);
}

#[test]
fn every_zoom_of_an_aggregated_page_draws() {
    if browser().is_none() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let trace = tmp.path().join("trace");
    synthetic(&trace, 2, 20_000);
    let file = tmp.path().join("big.html");
    let opts = PageOptions {
        max_bytes: 100 << 10,
        ..PageOptions::default()
    };
    ovni_view::write_page(&trace, &file, &opts).unwrap();
    let html = std::fs::read_to_string(&file).unwrap();
    let data = script_json(&html, "ovniview-data");
    assert_eq!(data["complete"], false);
    let levels = data["widths"].as_array().unwrap().len();
    assert!(levels >= 2, "{}", data["widths"]);
    let s = script_json(&html, "ovniview-summary");
    let t0 = s["start_ns"].as_u64().unwrap();
    // The whole trace, then windows at each level and below the finest one; the script
    // throws nothing (checked by `chromium`) and draws the window asked for.
    for width in [0u64, 5_000_000, 500_000, 50_000, 2_000] {
        let fragment = if width == 0 {
            String::new()
        } else {
            format!("#t0={}&t1={}", t0 + 1_000_000, t0 + 1_000_000 + width)
        };
        let dom =
            String::from_utf8(chromium(&["--dump-dom".into(), url(&file, &fragment)])).unwrap();
        assert!(dom.contains("data-ms=\""), "{fragment}");
        if width > 0 {
            let view = format!(
                "data-view=\"{},{}\"",
                t0 + 1_000_000,
                t0 + 1_000_000 + width
            );
            assert!(dom.contains(&view), "{fragment}");
        }
        // Below the finest level stored, the page says the detail is aggregated.
        let detail = dom
            .split("id=\"ov-detail\">")
            .nth(1)
            .and_then(|r| r.split('<').next())
            .unwrap();
        match width {
            0 => assert_eq!(detail, "", "{fragment}"),
            2_000 => assert!(detail.contains("detail aggregated"), "{fragment}: {detail}"),
            _ => {}
        }
    }
}
