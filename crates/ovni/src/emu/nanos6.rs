//! What the emulator shows of the nanos6 model besides its channels: its channels' rows and
//! `.pcf` types, and ovniemu's messages when it rejects an event. The model itself is
//! `crates/ovni/src/model/nanos6.rs`.

use super::chan::TrackDef;
use super::nosv::{task_lines, Runtime};
use super::pcf::PcfType;
use super::report::type_label_values;
use crate::error::{EventProblem, TraceProblem};
use crate::model::nanos6::{Nanos6, IDLE_LABELS, RESTING, SUBSYSTEM_LABELS, THREAD_LABELS};
use crate::model::stack::Track;
use crate::model::task_type::{label_values, LabelCollision};
use crate::raw::Mcv;

/// `(prv type, label prefix, thread view tracking, a repeated value is written)` of each
/// channel, in channel order.
const TYPES: [(u32, &str, Track, bool); 6] = [
    (35, "Nanos6 task ID", Track::Running, false),
    (36, "Nanos6 task type", Track::Running, true),
    (37, "Nanos6 subsystem", Track::Active, false),
    (38, "Nanos6 task MPI rank", Track::Running, true),
    (39, "Nanos6 thread type", Track::Any, false),
    (40, "Nanos6 idle state", Track::Running, false),
];

const NANOS6: Runtime = Runtime {
    name: "Nanos6",
    running: "chan_task_running",
    stopped: "chan_task_stopped",
};

/// The rows of the nanos6 channels (before the ovni model's).
pub(super) fn track_defs() -> Vec<TrackDef> {
    TYPES
        .iter()
        .map(|&(prv_type, _, thread_track, emit_dup)| TrackDef {
            prv_type,
            thread_track,
            skip_dup_null: false,
            emit_dup,
            cpu_default: (prv_type == 40).then_some(RESTING),
            before_ovni: true,
        })
        .collect()
}

/// The `.pcf` types of the thread view (`thread`) or the CPU view. Two task type labels
/// with the same value make ovniemu fail: the thread view keeps the labels before them, the
/// CPU view gets none, and the error lines are added to `errors` (once).
pub(super) fn pcf_types(model: &Nanos6, thread: bool, errors: &mut Vec<String>) -> Vec<PcfType> {
    let labels = |values: &[(i64, &str)]| -> Vec<(i64, String)> {
        values.iter().map(|&(v, l)| (v, l.to_string())).collect()
    };
    let mut task_types = type_label_values(
        label_values(model.types()),
        36,
        thread,
        &[
            "finish_pvt: task_create_pcf_types failed",
            "model_nanos6_finish: finish_pvt thread failed",
            "model_finish: finish failed for model '6'",
        ],
        errors,
    );
    TYPES
        .iter()
        .map(|&(ty, prefix, track, _)| {
            let track = if thread { track } else { Track::Running };
            let values = match ty {
                36 => std::mem::take(&mut task_types),
                37 => labels(&SUBSYSTEM_LABELS),
                39 => labels(&THREAD_LABELS),
                40 => labels(&IDLE_LABELS),
                _ => Vec::new(),
            };
            PcfType {
                ty,
                label: format!("{prefix} {}", track.suffix()),
                values,
            }
        })
        .collect()
}

/// The problem of two task type labels with the same value, if any.
pub(super) fn finish_problem(model: &Nanos6) -> Option<TraceProblem> {
    label_values(model.types()).1.map(LabelCollision::problem)
}

/// The lines ovniemu prints when the nanos6 model rejects event `mcv` (before the common
/// ones), or `None` if `p` is not such a rejection.
pub(super) fn rejected_lines(mcv: Mcv, p: &EventProblem) -> Option<Vec<String>> {
    let EventProblem::Nanos6(p) = p else {
        return None;
    };
    let mut v = task_lines(&NANOS6, mcv, p);
    v.push("model_nanos6_event: error processing Nanos6 event".to_string());
    v.push("model_event: event() failed for 'nanos6' model".to_string());
    Some(v)
}
