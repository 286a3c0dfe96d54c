//! The HTML page: one file with its style, script and data inline (no network access, no
//! other file), drawn on a canvas by `page.js`.
//!
//! Elements a test or a script can read: `#ovniview-summary` (the [`Summary`] as JSON),
//! `#ovniview-data` (the drawing data's head: threads, rows, level widths), `#ovniview-level-<k>`
//! (the intervals and buckets of level `k`), `#ovniview-rest` (the shortest intervals), and `#ovniview-render`, whose `data-ms` the script
//! sets to the time of its first drawing (ms since navigation start) and `data-view` to the
//! window drawn (`t0,t1` raw clocks).

use std::fmt::Write as _;

use serde_json::{json, Value};

use crate::html::{escape, script_json};
use crate::lod::{self, Lod};
use crate::model::{Model, Span, State, Thread};
use crate::runtime::{checkpoint_runs, level_table};
use crate::summary::{checkpoint_table, Summary};
use crate::tables::type_values;

const PAGE_JS: &str = include_str!("page.js");
const PAGE_CSS: &str = include_str!("page.css");

/// Page options.
#[derive(Debug, Clone)]
pub struct PageOptions {
    /// The page's title (default: "ovniview").
    pub title: String,
    /// About how many bytes the drawing data may take; levels of detail beyond it are left
    /// out (see [`crate::lod`]).
    pub max_bytes: usize,
}

impl Default for PageOptions {
    fn default() -> Self {
        Self {
            title: "ovniview".to_owned(),
            max_bytes: 40 << 20,
        }
    }
}

/// One row of the drawing before its levels are built.
struct Row {
    kind: char,
    ty: i64,
    depth: u32,
    spans: Vec<Span>,
    open: Vec<u64>,
}

fn rel(model: &Model, s: Span) -> Span {
    Span {
        t0: s.t0 - model.start,
        t1: s.t1 - model.start,
        value: s.value,
    }
}

/// The rows of one thread: its states, then each mark type's stack depths.
fn thread_rows(model: &Model, th: &Thread, rows: &mut Vec<Row>) -> Vec<usize> {
    let mut ids = vec![rows.len()];
    rows.push(Row {
        kind: 's',
        ty: 0,
        depth: 0,
        spans: th.states.iter().map(|&s| rel(model, s)).collect(),
        open: Vec::new(),
    });
    // Marks are sorted by (type, depth, start).
    let mut i = 0;
    while let Some(first) = th.marks.get(i) {
        let (ty, depth) = (first.ty, first.depth);
        let mut spans = Vec::new();
        let mut open = Vec::new();
        while let Some(m) = th.marks.get(i).filter(|m| m.ty == ty && m.depth == depth) {
            if m.span.dur() > 0 {
                spans.push(rel(model, m.span));
            }
            if m.open {
                open.push(m.span.t0 - model.start);
            }
            i += 1;
        }
        ids.push(rows.len());
        rows.push(Row {
            kind: 'm',
            ty,
            depth,
            spans,
            open,
        });
    }
    ids
}

/// One row per CPU of each loom (value = the running thread's index).
fn cpu_rows(model: &Model, rows: &mut Vec<Row>) -> Vec<Value> {
    let mut cpus: std::collections::BTreeMap<(&str, i64), Vec<Span>> = Default::default();
    for (i, th) in model.threads.iter().enumerate() {
        for s in &th.cpus {
            let mut r = rel(model, *s);
            r.value = i as i64;
            cpus.entry((th.loom.as_str(), s.value)).or_default().push(r);
        }
    }
    let mut out = Vec::new();
    // Physical CPUs by index, then the loom's virtual CPU.
    let mut keys: Vec<_> = cpus.keys().copied().collect();
    keys.sort_by_key(|&(loom, cpu)| (loom, cpu < 0, cpu));
    for key in keys {
        let Some(mut spans) = cpus.remove(&key) else {
            continue;
        };
        spans.sort_by_key(|s| s.t0);
        let name = if key.1 < 0 {
            format!("{} vCPU", key.0)
        } else {
            format!("{} CPU {}", key.0, key.1)
        };
        out.push(json!({"name": name, "rows": [rows.len()]}));
        rows.push(Row {
            kind: 'c',
            ty: 0,
            depth: 0,
            spans,
            open: Vec::new(),
        });
    }
    out
}

fn push_nums(out: &mut String, nums: &[i64]) {
    out.push('[');
    for (i, n) in nums.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let _ = write!(out, "{n}");
    }
    out.push(']');
}

/// A list as a JSON string of [`lod::encode`] (base64: nothing to escape).
fn push_packed(out: &mut String, nums: Option<&Vec<i64>>, signed: usize) {
    out.push('"');
    out.push_str(&lod::encode(nums.map_or(&[][..], |v| v), signed));
    out.push('"');
}

fn group_name(th: &Thread) -> String {
    let rank = th
        .process_rank
        .map(|r| format!(" rank {r}"))
        .unwrap_or_default();
    format!("{} / proc {}{}", th.loom, th.pid, rank)
}

/// The drawing data.
fn data_json(model: &Model, opts: &PageOptions) -> Data {
    let mut rows = Vec::new();
    let threads: Vec<Value> = model
        .threads
        .iter()
        .map(|th| {
            let ids = thread_rows(model, th, &mut rows);
            json!({
                "name": th.name,
                "tid": th.tid,
                "group": group_name(th),
                "rank": th.process_rank,
                "flags": th.flags.iter().map(ToString::to_string).collect::<Vec<_>>(),
                "end": th.last.map(|l| l - model.start),
                "rows": ids,
            })
        })
        .collect();
    // Threads on a loom's virtual CPU only (the fti-rs runtime's, for one): no CPU is known,
    // and a CPU view would stack every thread on one row.
    let real_cpus = model
        .threads
        .iter()
        .any(|t| t.cpus.iter().any(|c| c.value >= 0));
    let cpus = if real_cpus {
        cpu_rows(model, &mut rows)
    } else {
        Vec::new()
    };
    let spans: Vec<Vec<Span>> = rows
        .iter_mut()
        .map(|r| std::mem::take(&mut r.spans))
        .collect();
    let lod: Lod = lod::build(&spans, model.end - model.start, opts.max_bytes);
    let used = type_values(model);
    let types: serde_json::Map<String, Value> = model
        .mark_types
        .iter()
        .map(|(ty, m)| {
            let labels: serde_json::Map<String, Value> = m
                .labels
                .iter()
                .map(|(v, l)| (v.to_string(), l.clone().into()))
                .collect();
            let mut t = json!({"title": m.title, "labels": labels});
            // The values drawn (for the legend), or how many when the type is summarised.
            if let Some(u) = used.get(ty) {
                t["values"] = if u.summarised {
                    json!({"n": u.values.len(), "min": u.values.first(), "max": u.values.last()})
                } else {
                    json!(u.values)
                };
            }
            (ty.to_string(), t)
        })
        .collect();
    let head = json!({
        "start": model.start.to_string(),
        "dur": model.end - model.start,
        "complete": lod.complete,
        "widths": lod.widths,
        "states": State::ALL.iter().map(|s| s.name()).collect::<Vec<_>>(),
        "types": types,
        "threads": threads,
        "cpus": cpus,
    });
    let mut out = head.to_string();
    out.pop(); // the closing brace: the rows follow
    out.push_str(",\"rows\":[");
    for (i, row) in rows.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let _ = write!(
            out,
            "{{\"k\":\"{}\",\"ty\":{},\"d\":{},\"o\":",
            row.kind, row.ty, row.depth
        );
        let open: Vec<i64> = row.open.iter().map(|&t| t as i64).collect();
        push_nums(&mut out, &open);
        out.push('}');
    }
    out.push_str("]}");
    let mut levels = Vec::with_capacity(lod.widths.len());
    for k in 0..lod.widths.len() {
        let mut level = String::from("{\"e\":[");
        for (i, l) in lod.rows.iter().enumerate() {
            if i > 0 {
                level.push(',');
            }
            push_packed(&mut level, l.exact.get(k), lod::EXACT_SIGNED);
        }
        level.push_str("],\"b\":[");
        for (i, l) in lod.rows.iter().enumerate() {
            if i > 0 {
                level.push(',');
            }
            push_packed(&mut level, l.buckets.get(k), lod::BUCKET_SIGNED);
        }
        level.push_str("]}");
        levels.push(level);
    }
    let mut rest = String::from("[");
    for (i, l) in lod.rows.iter().enumerate() {
        if i > 0 {
            rest.push(',');
        }
        push_packed(&mut rest, Some(&l.rest), lod::EXACT_SIGNED);
    }
    rest.push(']');
    Data {
        head: out,
        levels,
        rest,
    }
}

/// The drawing data: the head (`#ovniview-data`), each level's intervals and buckets
/// (`#ovniview-level-<k>`, parsed by the page when first drawn), the shortest intervals of a
/// complete page (`#ovniview-rest`).
struct Data {
    head: String,
    levels: Vec<String>,
    rest: String,
}

/// Nanoseconds in a readable unit.
pub fn human_ns(ns: u64) -> String {
    let f = ns as f64;
    if ns < 1_000 {
        format!("{ns} ns")
    } else if ns < 1_000_000 {
        format!("{:.2} µs", f / 1e3)
    } else if ns < 1_000_000_000 {
        format!("{:.2} ms", f / 1e6)
    } else {
        format!("{:.3} s", f / 1e9)
    }
}

fn rank_text(r: Option<i64>) -> String {
    r.map_or_else(|| "-".to_owned(), |r| r.to_string())
}

/// The summary tables (static HTML).
fn tables(model: &Model, out: &mut String) {
    let runs = checkpoint_runs(model);
    let levels = level_table(&runs);
    if !levels.is_empty() {
        // Every checkpoint, for the page's script to count those of the window shown:
        // [pid, rank, level, id, start (ns from the trace's start), stopped ns, background ns].
        let list: Vec<serde_json::Value> = runs
            .iter()
            .map(|r| {
                serde_json::json!([
                    r.pid,
                    r.rank,
                    r.level,
                    r.id,
                    r.start.saturating_sub(model.start),
                    r.stopped_ns,
                    r.background_ns
                ])
            })
            .collect();
        out.push_str("<script type=\"application/json\" id=\"ovniview-checkpoints\">");
        out.push_str(&script_json(&serde_json::Value::Array(list).to_string()));
        out.push_str("</script>\n");
        out.push_str("<h2>Checkpoints (fti-rs runtime marks)</h2>\n<p>Each checkpoint counted once; stopped: the application's time in them (staging and waits when asynchronous), background: the background thread's work on them.</p>\n<table class=\"num\" id=\"ov-ckpts\"><tr><th>pid</th><th>rank</th><th>level</th><th>checkpoints</th><th>stopped</th><th>background</th><th>stopped ns</th><th>background ns</th></tr>\n");
        for r in &levels {
            let level = r.level.map_or_else(|| "-".to_owned(), |l| format!("L{l}"));
            let _ = writeln!(
                out,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                r.pid,
                rank_text(r.rank),
                level,
                r.checkpoints,
                human_ns(r.stopped_ns),
                human_ns(r.background_ns),
                r.stopped_ns,
                r.background_ns
            );
        }
        out.push_str("</table>\n");
    }
    let ckpt = checkpoint_table(model);
    if !ckpt.is_empty() {
        out.push_str("<h2>Checkpoint phases (fti-rs runtime marks)</h2>\n<table class=\"num\" id=\"ov-ckpt-phases\"><tr><th>pid</th><th>rank</th><th>thread</th><th>level</th><th>phase</th><th>count</th><th>total</th><th>total ns</th></tr>\n");
        for r in &ckpt {
            let level = r.level.map_or_else(|| "-".to_owned(), |l| format!("L{l}"));
            let _ = writeln!(
                out,
                "<tr><td>{}</td><td>{}</td><td class=\"t\">{}</td><td>{}</td><td class=\"t\">{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                r.pid,
                rank_text(r.rank),
                r.thread.name(),
                level,
                escape(&r.phase),
                r.count,
                human_ns(r.total_ns),
                r.total_ns
            );
        }
        out.push_str("</table>\n");
    }
    crate::tables::write(model, out);
}

fn flags(model: &Model, out: &mut String) {
    let flagged: Vec<&Thread> = model.threads.iter().filter(|t| t.is_flagged()).collect();
    if flagged.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "<div id=\"ovniview-flags\" class=\"flags\"><b>Trace from a crashed or unfinished run:</b> {} of {} threads are drawn up to their last event.<ul>",
        flagged.len(),
        model.threads.len()
    );
    for th in flagged {
        let text: Vec<String> = th.flags.iter().map(ToString::to_string).collect();
        let _ = writeln!(
            out,
            "<li>{}: {}</li>",
            escape(&th.name),
            escape(&text.join("; "))
        );
    }
    out.push_str("</ul></div>\n");
}

/// The whole page.
pub fn render(model: &Model, opts: &PageOptions) -> String {
    let summary = Summary::of(model);
    let data = data_json(model, opts);
    let title = escape(&opts.title);
    let size =
        data.head.len() + data.rest.len() + data.levels.iter().map(String::len).sum::<usize>();
    let mut out = String::with_capacity(size + 64 * 1024);
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width\">\n<title>{title}</title>\n<style>\n{PAGE_CSS}</style></head>\n<body>\n<header><h1>{title}</h1>\n<p class=\"info\">{} threads, {} events, {} from clock {} to {}.</p>\n",
        summary.threads,
        summary.events,
        human_ns(summary.end_ns - summary.start_ns),
        summary.start_ns,
        summary.end_ns
    );
    flags(model, &mut out);
    out.push_str(concat!(
        "<div class=\"controls\"><button id=\"ov-cpu\" type=\"button\">CPU view</button> ",
        "<span id=\"ov-cpu-note\" hidden>(no CPU view: every thread ran on its loom's virtual CPU, ",
        "the trace does not say which CPU ran what)</span> ",
        "<button id=\"ov-in\" type=\"button\">+</button> <button id=\"ov-out\" type=\"button\">−</button> ",
        "<button id=\"ov-reset\" type=\"button\">whole trace</button> ",
        "<span class=\"help\">wheel or +/− zoom, drag or ←/→ pan, 0 whole trace, c CPU view; ",
        "the window is in the address (#t0=…&amp;t1=…, raw clocks in ns)</span> ",
        "<span id=\"ov-window\"></span> <span id=\"ov-detail\"></span></div>\n</header>\n",
        "<div id=\"ov-legend\"></div>\n",
        "<div id=\"ov-view\"><canvas id=\"ov-canvas\"></canvas></div>\n",
        "<div id=\"ov-tip\" hidden></div>\n<div id=\"ov-events\" hidden></div>\n",
        "<div id=\"ovniview-render\" hidden></div>\n<section id=\"ov-summary\">\n"
    ));
    tables(model, &mut out);
    out.push_str("</section>\n<script type=\"application/json\" id=\"ovniview-summary\">");
    out.push_str(&script_json(&summary.to_json().to_string()));
    out.push_str("</script>\n<script type=\"application/json\" id=\"ovniview-data\">");
    out.push_str(&script_json(&data.head));
    for (k, level) in data.levels.iter().enumerate() {
        // Numbers only: nothing to escape.
        let _ = write!(
            out,
            "</script>\n<script type=\"application/json\" id=\"ovniview-level-{k}\">{level}"
        );
    }
    out.push_str("</script>\n<script type=\"application/json\" id=\"ovniview-rest\">");
    out.push_str(&data.rest);
    out.push_str("</script>\n<script>\n");
    out.push_str(PAGE_JS);
    out.push_str("</script>\n</body></html>\n");
    out
}
