//! What the emulator prints when it stops on a problem, in the original's words: a rejected
//! event, a failed merge, a clock that goes backwards, a write that failed.

use std::path::PathBuf;

use super::models;
use super::output::Outputs;
use super::report::{self, Level};
use super::{Out, Setup};
use crate::error::{Error, EventProblem, StreamProblem};
use crate::read::{Merged, Stream};

/// The lines the original prints when an event is rejected (before the panic block).
#[cold]
fn rejected_lines(mcv: crate::raw::Mcv, p: &EventProblem, rel: &str) -> Vec<(Level, String)> {
    if let Some(lines) = models::rejected_lines(mcv, p) {
        return lines.into_iter().map(|l| (Level::Error, l)).collect();
    }
    let text = report::mcv_text(mcv);
    match p {
        EventProblem::ModelNotEnabled { model, version } => vec![
            (
                Level::Error,
                format!("model_event: model {model} not enabled for event {text}"),
            ),
            (
                Level::Info,
                format!("missing call to ovni_thread_require(\"{model}\", \"{version}\")?"),
            ),
        ],
        EventProblem::ModelNotRegistered(_) => vec![(
            Level::Error,
            format!("model_event: model not registered for event {text}"),
        )],
        EventProblem::UnknownStream => vec![(
            Level::Error,
            format!("emu_step: event from unknown stream: {rel}"),
        )],
        p => report::ovni_event_lines(mcv, p)
            .into_iter()
            .map(|l| (Level::Error, l))
            .collect(),
    }
}

/// The lines the original prints when a stream cannot be stepped.
pub(super) fn step_failed(out: &mut Out<'_>, mut lines: Vec<String>) {
    lines.push("player_step: step_stream() failed".to_string());
    lines.push("emu_step: player_step failed".to_string());
    lines.push("main: emu_step failed".to_string());
    out.errors(&lines);
}

/// Reports an error of the merge (a stream that cannot be read further); returns it.
#[cold]
#[inline(never)]
pub(super) fn merge_failed(e: Error, streams: &[Stream], out: &mut Out<'_>) -> Error {
    match e {
        Error::Stream {
            path,
            offset,
            problem,
        } => {
            let rel = streams
                .iter()
                .find(|s| s.obs_path() == path)
                .map(Stream::name)
                .unwrap_or_default();
            step_failed(out, report::stream_step_lines(&rel, &problem, offset));
            Error::Stream {
                path,
                offset,
                problem,
            }
        }
        e => {
            out.errors(&[e.to_string(), "main: emu_step failed".into()]);
            e
        }
    }
}

/// Reports a clock going backwards from `prev`, within its stream or (`jump`) across the
/// merge; returns the error.
#[cold]
#[inline(never)]
pub(super) fn clock_backwards(
    m: &Merged<'_>,
    prev: i64,
    streams: &[Stream],
    out: &mut Out<'_>,
    jump: bool,
) -> Error {
    let stream = streams.get(m.stream);
    let rel = stream.map(Stream::name).unwrap_or_default();
    let p = StreamProblem::ClockBackwards {
        prev,
        clock: m.sclock,
    };
    if jump {
        out.errors(&[
            format!(
                "update_clocks: backwards jump in time {prev} -> {} in stream '{rel}'",
                m.sclock
            ),
            "player_step: update_clocks failed".to_string(),
            "emu_step: player_step failed".to_string(),
            "main: emu_step failed".to_string(),
        ]);
    } else {
        step_failed(out, report::stream_step_lines(&rel, &p, m.offset));
    }
    match stream {
        Some(st) => st.error(m.offset, p),
        None => Error::NoStreams(PathBuf::new()),
    }
}

/// Reports an event the model rejected; returns the error.
#[cold]
#[inline(never)]
pub(super) fn event_failed(
    m: &Merged<'_>,
    problem: EventProblem,
    dclock: i64,
    jumbo: bool,
    streams: &[Stream],
    setup: &Setup,
    out: &mut Out<'_>,
) -> Error {
    let s = m.stream;
    let ev = &m.event;
    let rel = streams.get(s).map(Stream::name).unwrap_or_default();
    let mut lines = rejected_lines(ev.mcv, &problem, &rel);
    let e = |s: String| (Level::Error, s);
    lines.push(e("emu_step: model_event failed".to_string()));
    lines.extend(
        report::panic_lines(
            ev.mcv,
            ev.signed_clock(),
            m.sclock,
            dclock,
            ev.payload.len(),
            jumbo,
            &rel,
            m.offset,
            setup.offsets.get(s).copied().unwrap_or(0),
        )
        .into_iter()
        .map(e),
    );
    lines.push(e("main: emu_step failed".to_string()));
    out.lines(&lines);
    Error::Event {
        stream: rel,
        offset: m.offset,
        mcv: ev.mcv,
        clock: ev.signed_clock(),
        problem,
    }
}

/// Reports that the Paraver files cannot be written (the error itself comes when they are
/// closed); returns the error.
#[cold]
#[inline(never)]
pub(super) fn write_failed(outputs: &Outputs, out: &mut Out<'_>) -> Error {
    out.errors(&["emu_step: cannot write the Paraver files".into()]);
    Error::Io {
        path: outputs.dir.clone(),
        source: std::io::Error::other("cannot write the Paraver files"),
    }
}
