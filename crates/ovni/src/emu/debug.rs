//! The debug lines of `-d` (ovniemu 1.14's `dbg` messages, `<function>: <text>`), for the
//! emulator's own steps: loading the streams, the looms, CPUs and processes the metadata
//! describes, the models registered, probed and connected, the nosv model's hardware
//! counters, and each event (its step, the model it goes to, and the ovni model's CPU
//! changes); the task models collect theirs (`crate::model::task_type::TaskDebug`). The
//! original's channel machinery (its `bay`, channel, mux and Paraver writer messages, which
//! include memory addresses) has no debug lines here.

use std::collections::BTreeMap;

use crate::events::EventTable;
use crate::metadata::ThreadMeta;
use crate::raw::Mcv;

/// ovniemu registers its models in this order.
const REGISTER_ORDER: [u8; 8] = *b"O6VDTMKP";

/// The lines of building the system from the thread streams (in stream order): each new
/// loom (its virtual CPU first), the CPUs each stream lists that its loom has not seen, each
/// new process, each stream's rank, then each loom's lowest rank.
pub(super) fn system_lines(threads: &[ThreadMeta]) -> Vec<String> {
    struct Loom<'a> {
        name: &'a str,
        phyids: Vec<i64>,
        /// `(pid, rank)` of each process.
        procs: Vec<(i64, Option<i64>)>,
    }
    let mut lines = Vec::new();
    let mut looms: Vec<Loom<'_>> = Vec::new();
    for t in threads {
        let i = match looms.iter().position(|l| l.name == t.loom) {
            Some(i) => i,
            None => {
                lines.push("cpu_init_begin: cpu init -1".to_string());
                lines.push(format!("loom_init_begin: creating new loom {}", t.loom));
                looms.push(Loom {
                    name: &t.loom,
                    phyids: Vec::new(),
                    procs: Vec::new(),
                });
                looms.len() - 1
            }
        };
        let Some(loom) = looms.get_mut(i) else {
            continue;
        };
        for &(_, phyid) in t.cpus.iter().flatten() {
            if !loom.phyids.contains(&phyid) {
                loom.phyids.push(phyid);
                lines.push(format!("cpu_init_begin: cpu init {phyid}"));
            }
        }
        let p = match loom.procs.iter().position(|p| p.0 == t.pid) {
            Some(p) => p,
            None => {
                lines.push(format!("proc_init_begin: created proc proc.{}", t.pid));
                loom.procs.push((t.pid, None));
                loom.procs.len() - 1
            }
        };
        match t.rank {
            None => lines.push(format!("load_rank: process proc.{} has no rank", t.pid)),
            Some((rank, nranks)) => {
                lines.push(format!(
                    "load_rank: process proc.{} rank={rank} nranks={nranks}",
                    t.pid
                ));
                if let Some(proc) = loom.procs.get_mut(p) {
                    proc.1 = Some(rank);
                }
            }
        }
    }
    for l in &looms {
        match l.procs.iter().filter_map(|p| p.1).min() {
            Some(min) => lines.push(format!(
                "loom_set_rank_min: loom {} has rank_min {min}",
                l.name
            )),
            None => lines.push(format!(
                "loom_set_rank_min: loom {} has no rank information",
                l.name
            )),
        }
    }
    lines
}

/// The models registered, then each model (by id) enabled or not by what the threads
/// require.
pub(super) fn probe_lines(required: &BTreeMap<String, String>) -> Vec<String> {
    let mut lines: Vec<String> = REGISTER_ORDER
        .iter()
        .map(|&c| format!("model_register: registered model {}", c as char))
        .collect();
    for m in models_by_id() {
        let state = if required.contains_key(&m.name) {
            "enabled"
        } else {
            "disabled"
        };
        lines.push(format!("model_version_probe: model {} {state}", m.name));
    }
    lines
}

/// The nosv model's hardware counters (by index), or that there are none.
pub(super) fn hwc_lines(names: &[String]) -> Vec<String> {
    if names.is_empty() {
        return vec!["hwc_create: no hwc counters found".to_string()];
    }
    names
        .iter()
        .enumerate()
        .map(|(i, n)| format!("parse_hwc: got hwc with index {i} and name {n}"))
        .collect()
}

/// Each enabled model (by id) connected.
pub(super) fn connect_lines(enabled: &BTreeMap<String, String>) -> Vec<String> {
    models_by_id()
        .into_iter()
        .filter(|m| enabled.contains_key(&m.name))
        .map(|m| format!("model_connect: connect for model {} ok", m.id as char))
        .collect()
}

fn models_by_id() -> Vec<&'static crate::events::Model> {
    let mut models: Vec<_> = EventTable::builtin().models().iter().collect();
    models.sort_by_key(|m| m.id);
    models
}

/// The step of an event, and for an event of an enabled model other than ovni, the model's
/// lines on receiving it.
pub(super) fn step_lines(mcv: Mcv, dclock: i64, enabled: bool) -> Vec<String> {
    let text = crate::tools::c_mcv(mcv);
    let mut lines = vec![format!("emu_step: ----- mcv={text} dclock={dclock} -----")];
    let id = mcv.model();
    if id == b'O' || !enabled {
        return lines;
    }
    if let Some(m) = EventTable::builtin().model(id) {
        let name = &m.name;
        if id != b'6' {
            lines.push(format!("model_{name}_event: in {name}_event"));
        }
        lines.push(format!("model_{name}_event: got {name} event {text}"));
    }
    lines
}

/// A value as the original prints it: `{int64_t N}`, or `{NULL}` for none.
pub(super) fn value(v: Option<usize>) -> String {
    match v {
        Some(v) => format!("{{int64_t {v}}}"),
        None => "{NULL}".to_string(),
    }
}
