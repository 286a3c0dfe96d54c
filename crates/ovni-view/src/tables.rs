//! The page's tables of time per mark value and per thread state (static HTML, of the whole
//! trace; the page's script redraws them for the zoom window), and which mark types have too
//! many values to list one by one.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use crate::html::escape;
use crate::model::{Model, State};
use crate::page::human_ns;

/// More distinct values than this and a mark type is summarised, not listed.
pub const MAX_LISTED_VALUES: usize = 32;
/// At least this many unlabelled consecutive values and a mark type is a counter (an
/// iteration number, an id), summarised too.
pub const COUNTER_MIN_VALUES: usize = 8;

/// The values a mark type took in the trace (pushed or set, in any thread).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TypeValues {
    /// Every distinct value.
    pub values: BTreeSet<i64>,
    /// Too many values to list, or values that count: the tables give one row per thread
    /// (how many values, from which to which) and the legend no colour per value.
    pub summarised: bool,
}

/// The values of every mark type used in the trace.
pub fn type_values(model: &Model) -> BTreeMap<i64, TypeValues> {
    let mut out: BTreeMap<i64, TypeValues> = BTreeMap::new();
    for th in &model.threads {
        for &(ty, value) in th.held.keys() {
            out.entry(ty).or_default().values.insert(value);
        }
    }
    for (ty, tv) in out.iter_mut() {
        let labelled = |v: &i64| model.label(*ty, *v).is_some();
        let n = tv.values.len();
        let (min, max) = (
            tv.values.first().copied().unwrap_or(0),
            tv.values.last().copied().unwrap_or(0),
        );
        let consecutive = max.abs_diff(min) == n as u64 - 1;
        tv.summarised = n > MAX_LISTED_VALUES
            || (n >= COUNTER_MIN_VALUES && consecutive && !tv.values.iter().any(labelled));
    }
    out
}

fn rank_text(r: Option<i64>) -> String {
    r.map_or_else(|| "-".to_owned(), |r| r.to_string())
}

fn type_title(model: &Model, ty: i64) -> String {
    model
        .mark_types
        .get(&ty)
        .map_or_else(|| ty.to_string(), |m| format!("{} ({ty})", m.title))
}

/// The two tables, with the line saying what time they cover.
pub fn write(model: &Model, out: &mut String) {
    out.push_str("<p id=\"ov-table-scope\">The tables below are of the whole trace.</p>\n");
    if model.threads.iter().all(|t| t.held.is_empty()) {
        out.push_str("<h2>Time per mark value</h2>\n<p>No marks in this trace.</p>\n");
    } else {
        mark_table(model, out);
    }
    state_table(model, out);
}

fn row(out: &mut String, cells: &[(&str, bool)]) {
    out.push_str("<tr>");
    for (text, is_text) in cells {
        let class = if *is_text { " class=\"t\"" } else { "" };
        let _ = write!(out, "<td{class}>{}</td>", escape(text));
    }
    out.push_str("</tr>\n");
}

/// Time per mark value per thread; one row per thread for a summarised type.
fn mark_table(model: &Model, out: &mut String) {
    let kinds = type_values(model);
    out.push_str("<h2>Time per mark value</h2>\n<table class=\"num\" id=\"ov-marks\"><tr><th>thread</th><th>rank</th><th>mark type</th><th>value</th><th>count</th><th>on top</th><th>ns</th></tr>\n");
    for th in &model.threads {
        let rank = rank_text(th.process_rank);
        let mut summaries: BTreeMap<i64, (u64, i64, i64, u64, u64)> = BTreeMap::new();
        for (&(ty, value), held) in &th.held {
            if kinds.get(&ty).is_some_and(|k| k.summarised) {
                let e = summaries.entry(ty).or_insert((0, i64::MAX, i64::MIN, 0, 0));
                e.0 += 1;
                e.1 = e.1.min(value);
                e.2 = e.2.max(value);
                e.3 += held.count;
                e.4 = e.4.saturating_add(held.total_ns);
                continue;
            }
            let label = model
                .label(ty, value)
                .map_or_else(|| value.to_string(), |l| format!("{l} ({value})"));
            row(
                out,
                &[
                    (&th.name, true),
                    (&rank, false),
                    (&type_title(model, ty), true),
                    (&label, true),
                    (&held.count.to_string(), false),
                    (&human_ns(held.total_ns), false),
                    (&held.total_ns.to_string(), false),
                ],
            );
        }
        for (ty, (n, min, max, count, ns)) in summaries {
            row(
                out,
                &[
                    (&th.name, true),
                    (&rank, false),
                    (&type_title(model, ty), true),
                    (&values_text(n, min, max), true),
                    (&count.to_string(), false),
                    (&human_ns(ns), false),
                    (&ns.to_string(), false),
                ],
            );
        }
    }
    out.push_str("</table>\n");
}

/// The value cell of a summarised type's row (the page's script writes the same).
pub fn values_text(n: u64, min: i64, max: i64) -> String {
    format!("{n} values, {min} to {max}")
}

/// Time per thread state per thread.
fn state_table(model: &Model, out: &mut String) {
    out.push_str("<h2>Time per thread state</h2>\n<table class=\"num\" id=\"ov-states\"><tr><th>thread</th><th>rank</th>");
    for s in State::ALL {
        let _ = write!(out, "<th>{}</th>", s.name());
    }
    out.push_str("</tr>\n");
    for th in &model.threads {
        let rank = rank_text(th.process_rank);
        let times: Vec<String> = State::ALL
            .iter()
            .map(|&s| human_ns(th.state_ns[s as usize]))
            .collect();
        let mut cells = vec![(th.name.as_str(), true), (rank.as_str(), false)];
        cells.extend(times.iter().map(|t| (t.as_str(), false)));
        row(out, &cells);
    }
    out.push_str("</table>\n");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Held, MarkType, Thread};

    /// A model whose one thread held type 1's `values`, labelled when `labelled`.
    fn model_with(values: impl IntoIterator<Item = i64>, labelled: bool) -> Model {
        let mut th = Thread::default();
        let mut ty = MarkType::default();
        for v in values {
            th.held.insert((1, v), Held::default());
            if labelled {
                ty.labels.insert(v, format!("checkpoint {v}"));
            }
        }
        let mut model = Model {
            threads: vec![th],
            ..Model::default()
        };
        model.mark_types.insert(1, ty);
        model
    }

    fn summarised(values: impl IntoIterator<Item = i64>, labelled: bool) -> bool {
        type_values(&model_with(values, labelled))[&1].summarised
    }

    #[test]
    fn counters_and_many_values_are_summarised() {
        // An unlabelled counter from 8 values on.
        assert!(!summarised(1..=7, false));
        assert!(summarised(1..=8, false));
        assert!(summarised(-3..=300, false));
        // Labelled values (the runtime's checkpoint ids) are listed up to 32.
        assert!(!summarised(1..=32, true));
        assert!(summarised(1..=33, true));
        // Unlabelled values that do not count are listed up to 32 too.
        assert!(!summarised((1..=20).map(|v| v * 10), false));
        assert!(summarised((1..=33).map(|v| v * 10), false));
    }
}
