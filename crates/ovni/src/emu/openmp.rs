//! What the emulator shows of the openmp model besides its channels: the value labels of
//! its `.pcf` types and ovniemu's messages when it rejects an event. The model itself is
//! `crates/ovni/src/model/openmp.rs`.

use super::report::{type_label_values, type_refusal_lines};
use crate::error::{ChanFailure, EventProblem, OpenMpProblem};
use crate::model::openmp::{OpenMp, SUBSYSTEM_LABELS};
use crate::model::task_type::TypeRefusal;
use crate::raw::Mcv;

/// The subsystem labels, in ovniemu's order.
pub(super) fn subsystem_values() -> Vec<(i64, String)> {
    SUBSYSTEM_LABELS
        .iter()
        .map(|&(v, l)| (v, l.to_string()))
        .collect()
}

/// The label view's value labels: after a collision ovniemu fails, the thread view keeps
/// the labels before it and the CPU view gets none; the error lines are added to `errors`
/// (once, with the thread view's).
pub(super) fn label_values(
    omp: &OpenMp,
    thread: bool,
    errors: &mut Vec<String>,
) -> Vec<(i64, String)> {
    type_label_values(
        omp.label_values(),
        51,
        thread,
        &[
            "create_pcf_type: task_create_pcf_types failed",
            "finish_pvt: create_pcf_type failed",
            "model_openmp_finish: finish_pvt thread failed",
            "model_finish: finish failed for model 'P'",
        ],
        errors,
    )
}

fn chan_line(f: &ChanFailure) -> String {
    super::nosv::chan_line(f)
}

/// The lines ovniemu prints when the openmp model rejects event `mcv` (before the common
/// ones), or `None` if `p` is not such a rejection.
pub(super) fn rejected_lines(mcv: Mcv, p: &EventProblem) -> Option<Vec<String>> {
    let mut v = match p {
        EventProblem::ThreadNotRunning { tid } => {
            vec![format!("process_ev: current thread {tid} not running")]
        }
        EventProblem::ChannelStackEmpty { chan } => {
            vec![chan_line(&ChanFailure::Empty { chan: chan.clone() })]
        }
        EventProblem::ChannelStackFull { chan } => {
            vec![chan_line(&ChanFailure::Full { chan: chan.clone() })]
        }
        EventProblem::ChannelPopMismatch { chan, value, top } => {
            vec![chan_line(&ChanFailure::Mismatch {
                chan: chan.clone(),
                value: *value,
                top: *top,
            })]
        }
        EventProblem::OpenMp(p) => openmp_lines(mcv, p),
        _ => return None,
    };
    v.push("model_openmp_event: error processing openmp event".to_string());
    v.push("model_event: event() failed for 'openmp' model".to_string());
    Some(v)
}

fn openmp_lines(mcv: Mcv, p: &OpenMpProblem) -> Vec<String> {
    use OpenMpProblem as P;
    let task_failed = "pre_task: cannot update task state";
    let ws_failed = "pre_worksharing: cannot update worksharing channels";
    let body = |t: &u32| format!("body(id=1,taskid={t})");
    let lines: Vec<String> = match p {
        P::UnknownCategory => vec!["process_ev: unknown event category".into()],
        P::UnknownSubsystemEvent => vec!["simple: unknown openmp function event".into()],
        P::UnexpectedTaskValue => vec!["pre_task: unexpected task event value".into()],
        P::CreatePayloadSize => vec![
            "create_task: unexpected payload size".into(),
            task_failed.into(),
        ],
        P::TaskIdZero { create: true } => {
            vec!["create_task: taskid cannot be 0".into(), task_failed.into()]
        }
        P::TaskIdZero { create: false } => {
            vec!["update_task: taskid cannot be 0".into(), task_failed.into()]
        }
        P::TypeIdZero if mcv.0[1] == b'O' => type_refusal_lines(TypeRefusal::IdZero),
        P::TypeIdZero => vec!["create_task: typeid cannot be 0".into(), task_failed.into()],
        P::TaskExists(t) => vec![
            format!("task_create: task_id {t} already exists"),
            "create_task: task_create failed".into(),
            task_failed.into(),
        ],
        P::UnknownType(t) => vec![
            format!("task_create: unknown type id {t}"),
            "create_task: task_create failed".into(),
            task_failed.into(),
        ],
        P::MissingTaskId => vec![
            "update_task: missing task id in payload".into(),
            task_failed.into(),
        ],
        P::TaskNotFound(t) => vec![
            format!("update_task: cannot find task with id {t}"),
            task_failed.into(),
        ],
        P::NotCreated { task, state } => vec![
            format!(
                "body_execute: {} state must be Created but is {state}",
                body(task)
            ),
            format!("task_execute: body_execute failed for task {task}"),
            "update_task: cannot change task state to running".into(),
            task_failed.into(),
        ],
        P::NeverRan { task } => vec![
            format!("task_end: cannot find body with id 1 in task {task}"),
            "update_task: cannot change task state to end".into(),
            task_failed.into(),
        ],
        P::EndNotRunning { task, .. } | P::EndOtherThread { task } | P::EndNotOnTop { task } => {
            let why = match p {
                P::EndNotRunning { state, .. } => format!("state must be Running but is {state}"),
                P::EndOtherThread { .. } => "has another stack".to_string(),
                _ => "is not on top of the stack".to_string(),
            };
            vec![
                format!("body_end: {} {why}", body(task)),
                format!("task_end: body_end failed for task {task}"),
                "update_task: cannot change task state to end".into(),
                task_failed.into(),
            ]
        }
        P::TaskChannel {
            execute,
            label,
            failure,
        } => {
            let op = if *execute { "chan_push" } else { "chan_pop" };
            let what = if *label { "task label" } else { "taskid" };
            vec![
                chan_line(failure),
                format!("update_task: {op} {what} failed"),
                task_failed.into(),
            ]
        }
        P::UnexpectedTypeValue(v) => type_refusal_lines(TypeRefusal::UnexpectedValue(*v)),
        P::NotJumbo => type_refusal_lines(TypeRefusal::NotJumbo),
        P::MalformedType => type_refusal_lines(TypeRefusal::Malformed),
        P::TypeExists(t) => type_refusal_lines(TypeRefusal::Exists(*t)),
        P::LabelTooLong(t) => type_refusal_lines(TypeRefusal::LabelTooLong(*t)),
        P::UnexpectedWorksharingValue(v) => {
            vec![format!(
                "pre_worksharing: unexpected ws event value {}",
                char::from(*v)
            )]
        }
        P::MissingWorksharingType => vec![
            "update_ws_state: missing worksharing id in payload".into(),
            ws_failed.into(),
        ],
        P::WorksharingTypeZero => vec![
            "update_ws_state: worksharing type id cannot be 0".into(),
            ws_failed.into(),
        ],
        P::WorksharingTypeNotFound(t) => vec![
            format!("update_ws_state: cannot find ws with type {t}"),
            ws_failed.into(),
        ],
        P::WorksharingChannel { enter, failure } => {
            let op = if *enter { "chan_push" } else { "chan_pop" };
            vec![
                chan_line(failure),
                format!("update_ws_state: {op} worksharing label failed"),
                ws_failed.into(),
            ]
        }
    };
    lines
}
