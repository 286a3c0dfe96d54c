//! What the emulator shows of the nosv model besides its channels: its channels' rows and
//! `.pcf` types, its hardware counters from the metadata, and ovniemu's messages when it
//! rejects an event. The model itself is `crates/ovni/src/model/nosv.rs`.

use super::chan::TrackDef;
use super::pcf::PcfType;
use super::report::{type_label_values, type_refusal_lines};
use crate::error::{
    BodyFailure, ChanFailure, Error, EventProblem, MetaProblem, NosvProblem, TraceProblem,
};
use crate::metadata::System;
use crate::model::nosv::hwc_names;
use crate::model::nosv::{Nosv, CHANNELS, IDLE_LABELS, RESTING, SUBSYSTEM_LABELS};
use crate::model::stack::Track;
use crate::model::task_type::{label_values, LabelCollision, TypeRefusal};
use crate::raw::Mcv;
use crate::read::meta::HwcMeta;

/// `(prv type, label prefix, thread view tracking)` of each channel, in channel order.
const TYPES: [(u32, &str, Track); CHANNELS] = [
    (15, "nOS-V task body ID", Track::Running),
    (10, "nOS-V task ID", Track::Running),
    (11, "nOS-V task type", Track::Running),
    (12, "nOS-V task AppID", Track::Running),
    (13, "nOS-V subsystem", Track::Active),
    (14, "nOS-V task MPI rank", Track::Running),
    (16, "nOS-V idle state", Track::Running),
];
/// Paraver type of hardware counter 0.
const HWC_TYPE: u32 = 200;

/// The rows of the nosv channels and of `hwc` counters.
pub(super) fn track_defs(hwc: usize) -> Vec<TrackDef> {
    let mut v: Vec<TrackDef> = TYPES
        .iter()
        .map(|&(prv_type, _, thread_track)| TrackDef {
            prv_type,
            thread_track,
            skip_dup_null: true,
            emit_dup: false,
            cpu_default: (prv_type == 16).then_some(RESTING),
            before_ovni: false,
        })
        .collect();
    v.extend((0..hwc).map(|i| TrackDef {
        prv_type: HWC_TYPE + i as u32,
        thread_track: Track::Active,
        skip_dup_null: true,
        emit_dup: false,
        cpu_default: None,
        before_ovni: false,
    }));
    v
}

/// The `.pcf` types of the thread view (`thread`) or the CPU view. The task type labels are
/// listed only when the trace was played to its end (`finished`); two labels with the same
/// value make ovniemu fail: the thread view keeps the labels before them, the CPU view gets
/// none, and the error lines are added to `errors` (once).
pub(super) fn pcf_types(
    nosv: &Nosv,
    hwc: &[String],
    thread: bool,
    finished: bool,
    errors: &mut Vec<String>,
) -> Vec<PcfType> {
    let labels = |values: &[(i64, &str)]| -> Vec<(i64, String)> {
        values.iter().map(|&(v, l)| (v, l.to_string())).collect()
    };
    let mut task_types = Vec::new();
    if finished {
        task_types = type_label_values(
            label_values(nosv.types()),
            11,
            thread,
            &[
                "finish_pvt: task_create_pcf_types failed",
                "model_nosv_finish: finish_pvt thread failed",
                "model_finish: finish failed for model 'V'",
            ],
            errors,
        );
    }
    let mut v: Vec<PcfType> = TYPES
        .iter()
        .map(|&(ty, prefix, track)| {
            let track = if thread { track } else { Track::Running };
            let values = match ty {
                11 => std::mem::take(&mut task_types),
                13 => labels(&SUBSYSTEM_LABELS),
                16 => labels(&IDLE_LABELS),
                _ => Vec::new(),
            };
            PcfType {
                ty,
                label: format!("{prefix} {}", track.suffix()),
                values,
            }
        })
        .collect();
    v.extend(hwc.iter().enumerate().map(|(i, name)| PcfType {
        ty: HWC_TYPE + i as u32,
        label: name.clone(),
        values: Vec::new(),
    }));
    v
}

/// The hardware counter names of the threads' `nosv.hwc` (`meta`, by thread), checked in
/// ovniemu's thread order (`row_thread`); ovniemu's lines and the error otherwise.
pub(super) fn counters(
    sys: &System,
    row_thread: &[usize],
    meta: &[Option<&HwcMeta>],
) -> Result<Vec<String>, Box<(Vec<String>, Error)>> {
    let threads: Vec<(String, Option<&HwcMeta>)> = row_thread
        .iter()
        .filter_map(|&t| Some((sys.threads.get(t)?.stream.clone(), *meta.get(t)?)))
        .collect();
    hwc_names(&threads).map_err(|lines| {
        let stream = threads.first().map(|t| t.0.clone()).unwrap_or_default();
        let problem = MetaProblem::BadValue {
            key: "nosv.hwc",
            expected: "hardware counters indexed 0 to n-1, each with a name",
        };
        Box::new((lines, Error::meta(&stream, problem)))
    })
}

/// Whether every thread allows the nosv breakdown view (`nosv.can_breakdown` of each thread,
/// `meta`, checked in ovniemu's thread order `row_thread`): `Ok(Ok(()))` if they all do,
/// `Ok(Err(warning))` if some do not, ovniemu's lines and the error if a thread lacks the key
/// or it is not a boolean.
#[allow(clippy::type_complexity)]
pub(super) fn can_breakdown(
    sys: &System,
    row_thread: &[usize],
    meta: &[Option<Option<bool>>],
) -> Result<Result<(), String>, Box<(Vec<String>, Error)>> {
    let mut suitable = 0;
    for &t in row_thread {
        let Some(th) = sys.threads.get(t) else {
            continue;
        };
        let why = match meta.get(t).copied().flatten() {
            Some(Some(b)) => {
                suitable += usize::from(b);
                continue;
            }
            None => "missing nosv.can_breakdown key",
            Some(None) => "expected boolean nosv.can_breakdown key",
        };
        let lines = vec![
            format!("model_nosv_breakdown_create: {why}: thread.{}", th.tid),
            "model_nosv_create: model_nosv_breakdown_create failed".to_string(),
            "model_create: create failed for model 'V'".to_string(),
            "emu_init: model_create failed".to_string(),
            "main: emu_init failed".to_string(),
        ];
        let problem = MetaProblem::BadValue {
            key: "nosv.can_breakdown",
            expected: "a boolean",
        };
        return Err(Box::new((lines, Error::meta(&th.stream, problem))));
    }
    let n = row_thread.len();
    if suitable == n {
        Ok(Ok(()))
    } else {
        Ok(Err(format!(
            "cannot enable breakdown for nOS-V model (suitable {suitable}/{n})"
        )))
    }
}

/// The problem of two task type labels with the same value, if any.
pub(super) fn finish_problem(nosv: &Nosv) -> Option<TraceProblem> {
    label_values(nosv.types()).1.map(LabelCollision::problem)
}

fn value_text(v: Option<i64>) -> String {
    match v {
        Some(v) => format!("{{int64_t {v}}}"),
        None => "{NULL}".to_string(),
    }
}

/// ovniemu's line when a stack channel refuses a push or a pop.
pub(super) fn chan_line(f: &ChanFailure) -> String {
    match f {
        ChanFailure::Empty { chan } => format!("chan_pop: {chan}: channel stack empty"),
        ChanFailure::Full { chan } => format!("chan_push: {chan}: channel stack full"),
        ChanFailure::Same { chan, value } => {
            format!("chan_push: {chan}: same value as last_value {{int64_t {value}}}")
        }
        ChanFailure::Mismatch { chan, value, top } => format!(
            "chan_pop: {chan}: expected value {{int64_t {value}}} different from top of stack {{int64_t {top}}}"
        ),
    }
}

/// The lines ovniemu prints when the nosv model rejects event `mcv` (before the common
/// ones), or `None` if `p` is not such a rejection.
pub(super) fn rejected_lines(mcv: Mcv, p: &EventProblem) -> Option<Vec<String>> {
    let mut v = match p {
        EventProblem::ThreadOutOfCpu { tid } => {
            vec![format!("process_ev: current thread {tid} out of CPU")]
        }
        EventProblem::Nosv(p) => task_lines(&NOSV, mcv, p),
        _ => return None,
    };
    v.push("model_nosv_event: error processing nOS-V event".to_string());
    v.push("model_event: event() failed for 'nosv' model".to_string());
    Some(v)
}

/// The names in ovniemu's messages that differ between the nosv and nanos6 models.
pub(super) struct Runtime {
    /// The runtime's name in messages ("nOS-V").
    pub(super) name: &'static str,
    /// The functions that set the task channels when a body starts and when it stops.
    pub(super) running: &'static str,
    pub(super) stopped: &'static str,
}

const NOSV: Runtime = Runtime {
    name: "nOS-V",
    running: "chan_body_running",
    stopped: "chan_body_stopped",
};

/// ovniemu's lines (before the common ones) for problem `p` of event `mcv` of the nosv or
/// nanos6 model (`rt`).
pub(super) fn task_lines(rt: &Runtime, mcv: Mcv, p: &NosvProblem) -> Vec<String> {
    use NosvProblem as P;
    let task_failed = "pre_task: cannot update task state";
    let state_failed = [
        "update_task_state: cannot change task state",
        "update_task: update_task_state failed",
        task_failed,
    ];
    let with = |first: Vec<String>, rest: &[&str]| {
        first
            .into_iter()
            .chain(rest.iter().map(|s| s.to_string()))
            .collect::<Vec<String>>()
    };
    let mcv_text = String::from_utf8_lossy(&mcv.0).into_owned();
    let body = |t: &u32, b: &u32| format!("body(id={b},taskid={t})");
    match p {
        P::NotActive { tid } => vec![format!("process_ev: current thread {tid} not active")],
        P::UnknownCategory => vec![format!("process_ev: unknown {} event category", rt.name)],
        P::UnknownSubsystemEvent => vec![format!("simple: unknown {} subsystem event", rt.name)],
        P::Subsystem(f) => vec![chan_line(f)],
        P::SameValue {
            chan,
            value,
            context,
        } => {
            let first = format!(
                "chan_set: {chan}: same value as last_value {}",
                value_text(*value)
            );
            match context {
                None => vec![first],
                Some(running) => {
                    let func = if *running { rt.running } else { rt.stopped };
                    with(
                        vec![first, format!("{func}: chan_set taskid failed")],
                        &[
                            "update_task_channels: cannot update task channels",
                            "update_task: update_task_channels failed",
                            task_failed,
                        ],
                    )
                }
            }
        }
        P::UnexpectedTaskValue => {
            vec![format!("pre_task: unexpected {} task event value", rt.name)]
        }
        P::SwitchSameValue { chan, value } => with(
            vec![
                format!("chan_set: {chan}: same value as last_value {{int64_t {value}}}"),
                "chan_task_switch: chan_set taskid failed".into(),
            ],
            &[
                "update_task_channels: cannot update task channels",
                "update_task: update_task_channels failed",
                task_failed,
            ],
        ),
        P::SwitchTaskIdZero => with(
            vec!["chan_task_switch: next task id cannot be 0".into()],
            &[
                "update_task_channels: cannot update task channels",
                "update_task: update_task_channels failed",
                task_failed,
            ],
        ),
        P::CreatePayloadSize => with(
            vec!["create_task: unexpected payload size".into()],
            &[task_failed],
        ),
        P::TaskExists(t) => with(
            vec![format!("task_create: task_id {t} already exists")],
            &["create_task: task_create failed", task_failed],
        ),
        P::UnknownType(t) => with(
            vec![format!("task_create: unknown type id {t}")],
            &["create_task: task_create failed", task_failed],
        ),
        P::MissingTaskId => with(
            vec!["update_task_state: missing task id in payload".into()],
            &state_failed[1..],
        ),
        P::MissingBodyId => with(
            vec!["update_task_state: missing body id in payload".into()],
            &state_failed[1..],
        ),
        P::TaskNotFound(t) => with(
            vec![format!("update_task_state: cannot find task with id {t}")],
            &state_failed[1..],
        ),
        P::BodyIdZero(t) => with(
            vec![format!(
                "update_task_state: the body_id must be > 0 for parallel task {t}"
            )],
            &state_failed[1..],
        ),
        P::BodyIdNotZero(t) => with(
            vec![format!(
                "update_task_state: the body_id must be 0 for non-parallel task {t}"
            )],
            &state_failed[1..],
        ),
        P::NoBody { op, task, body: b } => with(
            vec![format!(
                "task_{}: cannot find body with id {b} in task {task}",
                op.name()
            )],
            &state_failed,
        ),
        P::Body {
            op,
            task,
            body: b,
            failure,
        } => {
            let name = body(task, b);
            let why = match failure {
                BodyFailure::NotAllowedAgain => format!("{name} is not allowed to run again"),
                BodyFailure::RunPaused => {
                    format!("refusing to run {name} in Paused state, needs to resume intead")
                }
                BodyFailure::WrongState { want, is } => {
                    format!("{name} state must be {want} but is {is}")
                }
                BodyFailure::Nest { task: t, body: o } => format!(
                    "cannot nest {name} over {} which is already running",
                    body(t, o)
                ),
                BodyFailure::NotAllowedPause => format!("{name} is not allowed to pause"),
                BodyFailure::NoStack => format!("{name} stack not set"),
                BodyFailure::OtherStack => format!("{name} has another stack"),
                BodyFailure::NotOnTop => format!("{name} is not on top of the stack"),
            };
            let op = op.name();
            with(
                vec![
                    format!("body_{op}: {why}"),
                    format!("task_{op}: body_{op} failed for task {task}"),
                ],
                &state_failed,
            )
        }
        P::SubsystemForBody { push, failure } => {
            let op = if *push { "chan_push" } else { "chan_pop" };
            with(
                vec![
                    chan_line(failure),
                    format!("update_task_ss_channel: {op} subsystem failed"),
                ],
                &["update_task: update_task_ss_channel failed", task_failed],
            )
        }
        P::TaskIdZero | P::AppIdNotPositive => {
            let why = match p {
                P::TaskIdZero => "task id cannot be 0",
                _ => "app id must be positive",
            };
            with(
                vec![format!("{}: {why}", rt.running)],
                &[
                    "update_task_channels: cannot update task channels",
                    "update_task: update_task_channels failed",
                    task_failed,
                ],
            )
        }
        P::WrongSubsystem => with(
            vec!["enforce_task_rules: wrong subsystem state on task begin".into()],
            &["update_task: enforce_task_rules failed", task_failed],
        ),
        P::UnexpectedTypeValue(v) => type_refusal_lines(TypeRefusal::UnexpectedValue(*v)),
        P::NotJumbo => type_refusal_lines(TypeRefusal::NotJumbo),
        P::MalformedType => type_refusal_lines(TypeRefusal::Malformed),
        P::TypeExists(t) => type_refusal_lines(TypeRefusal::Exists(*t)),
        P::TypeIdZero => type_refusal_lines(TypeRefusal::IdZero),
        P::LabelTooLong(t) => type_refusal_lines(TypeRefusal::LabelTooLong(*t)),
        P::NoCounters => vec![format!(
            "hwc_event: got hwc event {mcv_text} but no counters enabled"
        )],
        P::UnknownCounterEvent => vec![format!("hwc_event: unknown nosv hwc event {mcv_text}")],
        P::CountersNotJumbo => vec!["event_hwc_count: expecting a jumbo event".into()],
        P::CountersSize { got, want } => vec![format!(
            "event_hwc_count: unexpected hwc event with jumbo payload size {got} (expecting {want})"
        )],
    }
}
