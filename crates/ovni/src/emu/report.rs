//! The messages ovniemu 1.14 prints, as `<function>: <text>` lines, so that `ovniemu`'s
//! stderr reads as the original's (the program prefixes `ovniemu: <LEVEL>: `).

use crate::error::{
    ClockOffsetProblem, Error, EventProblem, MetaProblem, StreamProblem, TraceProblem, Transition,
};
use crate::model::task_type::{LabelCollision, TypeRefusal};
use crate::raw::Mcv;

/// How important a message is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// Progress and summaries.
    Info,
    /// Something odd that does not stop the emulation.
    Warn,
    /// Why the emulation stops or fails.
    Error,
    /// What the emulator does step by step (only with [`super::EmuOptions::debug`]).
    Debug,
}

impl Level {
    /// `INFO`, `WARN` or `ERROR`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Info => "INFO",
            Self::Warn => "WARN",
            Self::Error => "ERROR",
            Self::Debug => "DEBUG",
        }
    }
}

/// Receives the emulator's messages (the library never prints).
pub trait Reporter {
    /// One message line (without the program name and level).
    fn line(&mut self, level: Level, text: &str);

    /// The progress line printed now and then while the trace plays (an `INFO` text that
    /// ends in a carriage return, to be printed without a newline so the next one
    /// overwrites it). Ignored unless implemented.
    fn progress(&mut self, _text: &str) {}
}

/// Collects messages in memory (tests, or callers that print later).
#[derive(Debug, Default)]
pub struct Collect(pub Vec<(Level, String)>);

impl Reporter for Collect {
    fn line(&mut self, level: Level, text: &str) {
        self.0.push((level, text.to_string()));
    }
}

fn ch(c: u8) -> String {
    (c as char).to_string()
}

/// The MCV as the C tools print it (up to a NUL byte).
pub(crate) fn mcv_text(m: Mcv) -> String {
    crate::tools::c_mcv(m)
}

/// Lines for a stream that cannot be stepped (`ends with incomplete event`) or whose clock
/// goes backwards; the caller adds where it happened (player init or step).
pub(crate) fn stream_step_lines(rel: &str, problem: &StreamProblem, offset: u64) -> Vec<String> {
    let first = match problem {
        StreamProblem::ClockBackwards { prev, clock } => format!(
            "stream_step: clock goes backwards {prev} -> {clock} in stream '{rel}' at offset {offset}"
        ),
        StreamProblem::IncompleteEvent { .. } => {
            format!("stream_step: stream '{rel}' ends with incomplete event")
        }
        other => format!("stream_step: stream '{rel}' at offset {offset}: {other}"),
    };
    vec![first, format!("step_stream: cannot step stream '{rel}'")]
}

/// Lines for two mark values equal modulo 2³², found when the ovni model is connected.
pub(crate) fn mark_collision_lines(pcf_type: u32, value: i32) -> Vec<String> {
    vec![
        format!("pcf_add_value: PCF value {value} already in type {pcf_type}"),
        "create_type: pcf_add_value failed".to_string(),
        "init_pcf: create_type failed".to_string(),
        "connect_thread: init_pcf failed".to_string(),
        "mark_connect: connect_thread() failed".to_string(),
        "model_ovni_connect: mark_connect failed".to_string(),
        "model_connect: connect failed for model 'O'".to_string(),
        "emu_connect: model_connect failed".to_string(),
        "main: emu_connect failed".to_string(),
    ]
}

/// Lines for a clock offset table that cannot be read or used (`system_init`).
pub(crate) fn clock_offset_lines(err: &Error, root: &str) -> Vec<String> {
    let parse_failed = [
        "clkoff_load: failed parsing clock table",
        "load_clock_offsets: clkoff_load failed",
        "system_init: load_clock_offsets() failed",
    ];
    let owned = |v: &[&str]| v.iter().map(|l| l.to_string()).collect::<Vec<_>>();
    // The original counts the lines after the header from 1.
    let c_line = |line: &Option<usize>| line.unwrap_or(1).saturating_sub(1);
    let mut v = match err {
        Error::Io { path, source } => vec![
            format!(
                "load_clock_offsets: fopen {} failed: {}",
                path.display(),
                crate::tools::strerror(source)
            ),
            "system_init: load_clock_offsets() failed".to_string(),
        ],
        Error::Trace(TraceProblem::ClockOffsets { line, what, .. }) => match what {
            ClockOffsetProblem::MissingHeader => {
                let mut v = vec!["cparse: missing header line in clock offset".to_string()];
                v.extend(owned(&parse_failed));
                v
            }
            ClockOffsetProblem::Fields { read } => {
                let mut v = vec![format!(
                    "cparse: fscanf() read {read} instead of 5 fields in line {}",
                    c_line(line)
                )];
                v.extend(owned(&parse_failed));
                v
            }
            ClockOffsetProblem::DuplicateName(name) => {
                let mut v = vec![
                    format!("cadd: entry with name '{name}' already exists"),
                    format!("cparse: cannot add entry of line {}", c_line(line)),
                ];
                v.extend(owned(&parse_failed));
                v
            }
            ClockOffsetProblem::NoEntries => owned(&[
                "cindex: no entries",
                "clkoff_load: failed indexing table",
                "load_clock_offsets: clkoff_load failed",
                "system_init: load_clock_offsets() failed",
            ]),
            ClockOffsetProblem::LoomHasOffset { entry, loom } => vec![
                format!("parse_clkoff_entry: loom {loom} already has a clock offset"),
                format!("init_offsets: cannot parse clock offset entry {entry}"),
                "system_init: init_offsets() failed".to_string(),
            ],
            ClockOffsetProblem::NoLoom { entry, host } => vec![
                format!("parse_clkoff_entry: cannot find loom with hostname '{host}'"),
                format!("init_offsets: cannot parse clock offset entry {entry}"),
                "system_init: init_offsets() failed".to_string(),
            ],
            other => vec![
                format!("load_clock_offsets: {other}"),
                "system_init: load_clock_offsets() failed".to_string(),
            ],
        },
        other => vec![
            format!("load_clock_offsets: {other}"),
            "system_init: load_clock_offsets() failed".to_string(),
        ],
    };
    v.push(format!("emu_init: cannot init system for trace '{root}'"));
    v.push("main: emu_init failed".to_string());
    v
}

/// Lines for a metadata problem found while building the system.
pub(crate) fn meta_lines(stream: &str, problem: &MetaProblem, dir: &str) -> Vec<String> {
    let mut v = match problem {
        MetaProblem::NotFinished => vec![
            format!("thread_load_metadata: missing ovni.finished: {stream}"),
            format!("create_thread: thread_load_metadata failed: {stream}"),
            "create_system: create_thread failed".to_string(),
            "system_init: create system failed".to_string(),
        ],
        MetaProblem::LoomWithoutCpus => vec![
            format!("loom_init_end: loom {stream} has no physical CPUs"),
            "init_end_system: loom_init_end failed".to_string(),
            "system_init: init_end_system failed".to_string(),
        ],
        MetaProblem::CpuIndexOutOfBounds { .. } => vec![
            "loom_init_end: cpu index out of bounds".to_string(),
            "init_end_system: loom_init_end failed".to_string(),
            "system_init: init_end_system failed".to_string(),
        ],
        MetaProblem::CpuIndexTaken(index) => vec![
            format!("loom_init_end: cpu with index {index} already taken"),
            "init_end_system: loom_init_end failed".to_string(),
            "system_init: init_end_system failed".to_string(),
        ],
        MetaProblem::AppIdMismatch { prev, .. } => app_id_lines(
            format!("mismatch previous appid {prev} with stream: {stream}"),
            stream,
        ),
        MetaProblem::BadValue {
            key: "ovni.app_id",
            expected: "greater than 0",
        } => app_id_lines(format!("appid must be >0, stream: {stream}"), stream),
        MetaProblem::MissingKey(k) if k.starts_with("ovni.lib") => vec![
            format!("check_lib_versions: missing {k} key in thread metadata"),
            "init_end_system: check_lib_versions failed".to_string(),
            "system_init: init_end_system failed".to_string(),
        ],
        _ => vec![
            format!("create_system: {problem}: {stream}"),
            "system_init: create system failed".to_string(),
        ],
    };
    v.push(format!("emu_init: cannot init system for trace '{dir}'"));
    v.push("main: emu_init failed".to_string());
    v
}

/// The original's chain when a process's `app_id` is refused (`create_proc`).
fn app_id_lines(first: String, stream: &str) -> Vec<String> {
    vec![
        format!("load_appid: {first}"),
        format!("proc_load_metadata: load_appid failed for stream: {stream}"),
        "create_proc: proc_load_metadata failed".to_string(),
        "create_system: create_proc failed".to_string(),
        "system_init: create system failed".to_string(),
    ]
}

/// Lines for a `require` problem found by the model probe.
pub(crate) fn probe_lines(stream: &str, problem: &MetaProblem, id: u8) -> Vec<String> {
    let thread = stream.rsplit('/').next().unwrap_or(stream);
    let (first, model) = match problem {
        MetaProblem::UnsupportedModelVersion { model, want, have } => (
            format!(
                "should_enable: unsupported {model} model version (want {want}, have {have}) in {thread}"
            ),
            model.clone(),
        ),
        MetaProblem::MissingKey(_) => (
            format!("should_enable: missing 'ovni.require' key in thread {thread}"),
            "ovni".to_string(),
        ),
        other => (format!("should_enable: {other} in {thread}"), "ovni".to_string()),
    };
    let mut lines = vec![
        first,
        format!("model_version_probe: cannot determine if model {model} must be enabled"),
    ];
    // Only the ovni model's probe adds its own line.
    if model == "ovni" {
        lines.push("model_ovni_probe: model_version_probe failed for ovni model".to_string());
    }
    lines.extend([
        format!("model_probe: probe failed for model '{}'", ch(id)),
        "emu_init: model_probe failed".to_string(),
        "main: emu_init failed".to_string(),
    ]);
    lines
}

/// Lines for an `O` event the ovni model rejects, ending with the model's failure.
pub(crate) fn ovni_event_lines(mcv: Mcv, p: &EventProblem) -> Vec<String> {
    let [_, c, v] = mcv.0;
    let func = match c {
        b'H' => match v {
            b'x' => "pre_thread_execute",
            b'e' => "pre_thread_end",
            b'p' => "pre_thread_pause",
            b'r' => "pre_thread_resume",
            b'c' => "pre_thread_cool",
            b'w' => "pre_thread_warm",
            _ => "pre_thread",
        },
        b'A' if v == b's' => "pre_affinity_set",
        b'A' if v == b'r' => "pre_affinity_remote",
        b'A' => "pre_affinity",
        b'C' => "pre_cpu",
        b'F' => "pre_flush",
        b'M' => "mark_event",
        _ => "model_ovni_event",
    };
    let text = match p {
        EventProblem::UnknownValue { category, value } => match *category {
            "flush" => format!("unexpected value '{}' (expecting '[' or ']')", ch(*value)),
            cat => format!("unknown {cat} event value {}", ch(*value)),
        },
        EventProblem::UnknownCategory(c) => format!("unknown ovni event category {}", ch(*c)),
        EventProblem::AlreadyRunning { tid } => {
            format!("cannot execute thread {tid}, is already running")
        }
        EventProblem::MissingExecutePayload { tid } => {
            format!("missing payload in thread {tid} execute event")
        }
        EventProblem::AlreadyHasCpu { tid, .. } => {
            format!("thread {tid} already has a CPU")
        }
        EventProblem::NoSuchCpu { index, loom } if func == "pre_thread_execute" => {
            format!("cannot find CPU with index {index} in loom {loom}")
        }
        EventProblem::NoSuchCpu { index, .. } if func == "pre_affinity_set" => {
            format!("cannot find cpu with index {index}")
        }
        EventProblem::NoSuchCpu { index, .. } => format!("cannot find CPU with index {index}"),
        EventProblem::BadTransition {
            tid, transition, ..
        } => match transition {
            Transition::End => format!("cannot end thread {tid}: state not running or cooling"),
            Transition::Pause => {
                format!("cannot pause thread {tid}: state not running or cooling")
            }
            Transition::Resume => {
                format!("cannot resume thread {tid}: state not paused or warming")
            }
            Transition::Cool => format!("cannot cool thread {tid}: state not running"),
            Transition::Warm => format!("cannot warm thread {tid}: state not paused"),
        },
        EventProblem::CpuOversubscribed { cpu, running } => {
            format!("physical cpu  {cpu} has {running} threads running at the same time")
        }
        EventProblem::NoCpuSet { tid } => format!("thread {tid} doesn't have CPU set"),
        EventProblem::NotActive { tid } => format!("thread {tid} is not active"),
        EventProblem::PayloadSize { got, .. } => format!("unexpected payload size {got}"),
        EventProblem::ThreadNotFound { tid } => format!("thread {tid} not found"),
        EventProblem::ThreadDead { tid } => format!("thread {tid} is dead"),
        EventProblem::ThreadNotStarted { tid } => format!("thread {tid} in state unknown"),
        EventProblem::MarkUnknownType(t) => format!("cannot find mark with type {t}"),
        EventProblem::MarkZeroValue(t) => format!("mark value cannot be zero, type {t}"),
        other => other.to_string(),
    };
    vec![
        format!("{func}: {text}"),
        "model_event: event() failed for 'ovni' model".to_string(),
    ]
}

/// The `EMULATOR PANIC` block printed after an event fails.
#[allow(clippy::too_many_arguments)]
pub(crate) fn panic_lines(
    mcv: Mcv,
    rclock: i64,
    sclock: i64,
    dclock: i64,
    payload_size: usize,
    jumbo: bool,
    relpath: &str,
    offset: u64,
    clock_offset: i64,
) -> Vec<String> {
    let bar = "panic: @@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@".to_string();
    vec![
        bar.clone(),
        "panic: @@@@@@@@@@@@@@ EMULATOR PANIC @@@@@@@@@@@@@".to_string(),
        bar.clone(),
        "panic: event: ".to_string(),
        format!("panic:   mcv={}", mcv_text(mcv)),
        format!("panic:   rclock={rclock}"),
        format!("panic:   sclock={sclock}"),
        format!("panic:   dclock={dclock}"),
        format!("panic:   payload_size={payload_size}"),
        format!("panic:   is_jumbo={}", u8::from(jumbo)),
        "panic: stream: ".to_string(),
        format!("panic:   relpath={relpath}"),
        format!("panic:   offset={offset}"),
        format!("panic:   clock_offset={clock_offset}"),
        bar,
    ]
}

/// The original's lines for a type creation event (`6Yc`, `VYc`, `POc`) it refuses.
pub(crate) fn type_refusal_lines(r: TypeRefusal) -> Vec<String> {
    let create_failed = |first: String| vec![first, "pre_type: task_type_create failed".into()];
    match r {
        TypeRefusal::UnexpectedValue(v) => {
            vec![format!(
                "pre_type: unexpected event value {}",
                char::from(v)
            )]
        }
        TypeRefusal::NotJumbo => vec!["pre_type: expecting a jumbo event".into()],
        TypeRefusal::Malformed => {
            vec!["pre_type: the type event has no type id and NUL-terminated label".into()]
        }
        TypeRefusal::Exists(t) => create_failed(format!(
            "task_type_create: a task type with id {t} already exists"
        )),
        TypeRefusal::IdZero => create_failed("task_type_create: invalid task type id 0".into()),
        TypeRefusal::LabelTooLong(t) => {
            create_failed(format!("task_type_create: task type {t} label too long"))
        }
    }
}

/// The value labels of a model's type label view (`.pcf` type `pcf_type`), as ovniemu lists
/// them: after two labels with the same value (`collision`) it fails; the thread view
/// (`thread`) keeps the labels before them, the CPU view gets none, and the original's error
/// lines, ending with the model's own (`failed`), are added to `errors` (once, with the
/// thread view's).
pub(crate) fn type_label_values(
    (values, collision): (Vec<(i64, String)>, Option<LabelCollision>),
    pcf_type: u32,
    thread: bool,
    failed: &[&str],
    errors: &mut Vec<String>,
) -> Vec<(i64, String)> {
    let Some(c) = collision else {
        return values;
    };
    if !thread {
        return Vec::new();
    }
    errors.push(format!(
        "task_create_pcf_types: collision occurred in task type labels: {} and {}",
        c.first, c.second
    ));
    errors.push(format!(
        "pcf_add_value: PCF value {} already in type {pcf_type}",
        c.value
    ));
    errors.push("task_create_pcf_types: pcf_add_value failed".to_string());
    errors.extend(failed.iter().map(|l| l.to_string()));
    values
}
