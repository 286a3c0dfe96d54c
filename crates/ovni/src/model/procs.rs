//! The processes of the runtime models (openmp, nosv), numbered in ovniemu's order: that of
//! their first thread in ovniemu's thread order.

use std::collections::HashMap;

use crate::metadata::{System, ThreadMeta};

/// The first thread of each process, and the process of each thread, for threads in `order`.
pub(crate) fn processes<'a>(sys: &'a System, order: &[usize]) -> (Vec<&'a ThreadMeta>, Vec<usize>) {
    let mut index: HashMap<(&str, i64), usize> = HashMap::new();
    let mut first = Vec::new();
    let mut proc_of = vec![0; sys.threads.len()];
    for &t in order {
        let Some(meta) = sys.threads.get(t) else {
            continue;
        };
        let p = *index
            .entry((meta.loom.as_str(), meta.pid))
            .or_insert_with(|| {
                first.push(meta);
                first.len() - 1
            });
        if let Some(slot) = proc_of.get_mut(t) {
            *slot = p;
        }
    }
    (first, proc_of)
}
