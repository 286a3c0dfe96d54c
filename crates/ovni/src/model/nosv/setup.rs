//! What the nosv model needs from the metadata: the hardware counters of `nosv.hwc`, checked
//! as ovniemu checks them, and each process's application id and rank.

use crate::metadata::System;
use crate::read::meta::HwcMeta;

/// The hardware counter names of the threads' `nosv.hwc` (threads in ovniemu's order, with
/// their stream names), checked as ovniemu checks them; the error lines otherwise.
pub(crate) fn hwc_names(
    threads: &[(String, Option<&HwcMeta>)],
) -> Result<Vec<String>, Vec<String>> {
    let mut names: Vec<Option<String>> = Vec::new();
    // Counters declared (`names` holds at most 100: more fail at an index anyway).
    let mut n = 0;
    let fail = |first: String| {
        let mut v = vec![first];
        v.extend([
            "scan_thread: cannot parse HWC".to_string(),
            "hwc_create: scan_thread failed".to_string(),
            "model_nosv_create: hwc_create failed".to_string(),
            "model_create: create failed for model 'V'".to_string(),
            "emu_init: model_create failed".to_string(),
            "main: emu_init failed".to_string(),
        ]);
        v
    };
    for (stream, hwc) in threads {
        let Some(hwc) = hwc.filter(|h| h.count > 0) else {
            continue;
        };
        if n == 0 {
            n = hwc.count;
            names = vec![None; n.min(100)];
        } else if n != hwc.count {
            let id = stream.rsplit('/').next().unwrap_or(stream);
            let mut v = fail(String::new());
            v[0] = format!(
                "scan_thread: thread {id} defines {} hardware counters, but emu already has {}",
                hwc.count, n
            );
            v.remove(1);
            return Err(v);
        }
        for (key, name) in &hwc.counters {
            let index = match key.trim_start().parse::<i64>() {
                Ok(i) => i,
                Err(_) => return Err(fail(format!("parse_hwc: failed to parse hwc index: {key}"))),
            };
            let Some(slot) = usize::try_from(index).ok().filter(|&i| i < 100) else {
                return Err(fail(format!(
                    "parse_hwc: hwc index should be in [0, 100) range: {index}"
                )));
            };
            let Some(slot) = names.get_mut(slot).filter(|_| slot < n) else {
                return Err(fail(format!(
                    "parse_hwc: hwc index {index} exceeds allocated counters {n}"
                )));
            };
            let Some(name) = name else {
                return Err(fail(
                    "parse_hwc: json_object_get_string() for name failed".to_string(),
                ));
            };
            match slot {
                None => *slot = Some(name.clone()),
                Some(old) if old == name => {}
                Some(old) => {
                    return Err(fail(format!(
                        "parse_hwc: hwc at {index} already defined as {old}"
                    )))
                }
            }
        }
    }
    Ok(names.into_iter().map(Option::unwrap_or_default).collect())
}

/// `(app id, rank)` of each process and the process of each thread, processes numbered in
/// ovniemu's order (that of the thread rows).
pub(crate) fn processes(
    sys: &System,
    row_thread: &[usize],
) -> (Vec<(i64, Option<i64>)>, Vec<usize>) {
    let (first, proc_of) = crate::model::procs::processes(sys, row_thread);
    let procs = first
        .iter()
        .map(|m| (m.app_id.unwrap_or(0), m.rank.map(|r| r.0)))
        .collect();
    (procs, proc_of)
}
