//! ovniemu's global order of looms, CPUs and threads, which fixes the Paraver rows
//! ([`Layout`]), and the mark types with their labels in the order ovniemu lists them
//! ([`MarkList`]).

use std::collections::HashMap;

use crate::error::{Error, MetaProblem};
use crate::metadata::System;
use crate::read::meta::Typed;
use crate::read::Stream;

/// ovniemu's global order: looms (by name, or by rank when every loom has ranks), each
/// loom's CPUs by phyid then its virtual CPU, threads by loom, process and tid. It fixes the
/// Paraver rows.
#[derive(Debug)]
pub(super) struct Layout {
    /// Row of each thread of `System::threads`.
    pub(super) th_row: Vec<usize>,
    /// Thread of each row.
    pub(super) row_thread: Vec<usize>,
    /// Row of each CPU in the model's order (looms by name, physical CPUs, virtual CPU).
    pub(super) cpu_row: Vec<usize>,
    pub(super) th_labels: Vec<String>,
    pub(super) cpu_labels: Vec<String>,
    /// `(tid, pid)` per thread row.
    pub(super) th_ids: Vec<(i64, i64)>,
}

impl Layout {
    /// True if CPU row `r` is a loom's virtual CPU (labelled `vCPU <loom>.*`).
    pub(super) fn cpu_is_virtual(&self, r: usize) -> bool {
        self.cpu_labels
            .get(r)
            .is_some_and(|l| l.starts_with("vCPU"))
    }

    pub(super) fn new(sys: &System) -> Self {
        let min_rank = |l: &crate::metadata::Loom| {
            l.processes.iter().filter_map(|p| p.rank.map(|r| r.0)).min()
        };
        let by_rank = sys.looms.iter().all(|l| min_rank(l).is_some());
        let mut order: Vec<usize> = (0..sys.looms.len()).collect();
        if by_rank {
            order.sort_by_key(|&i| sys.looms.get(i).and_then(min_rank));
        }
        // Model CPU index of each loom's first CPU (looms by name).
        let mut base = Vec::with_capacity(sys.looms.len());
        let mut n = 0;
        for l in &sys.looms {
            base.push(n);
            n += l.cpus.len() + 1;
        }
        let mut cpu_row = vec![0; n];
        let mut cpu_labels = Vec::with_capacity(n);
        let by_key: HashMap<(&str, i64, i64), usize> = sys
            .threads
            .iter()
            .enumerate()
            .map(|(i, t)| ((t.loom.as_str(), t.pid, t.tid), i))
            .collect();
        let mut th_row = vec![0; sys.threads.len()];
        let mut row_thread = Vec::with_capacity(sys.threads.len());
        let mut th_labels = Vec::with_capacity(sys.threads.len());
        let mut th_ids = Vec::with_capacity(sys.threads.len());
        for (g, &li) in order.iter().enumerate() {
            let Some(l) = sys.looms.get(li) else { continue };
            let b = base.get(li).copied().unwrap_or(0);
            for (j, c) in l.cpus.iter().enumerate() {
                if let Some(r) = cpu_row.get_mut(b + j) {
                    *r = cpu_labels.len();
                }
                cpu_labels.push(format!(" CPU {g}.{}", c.phyid));
            }
            if let Some(r) = cpu_row.get_mut(b + l.cpus.len()) {
                *r = cpu_labels.len();
            }
            cpu_labels.push(format!("vCPU {g}.*"));
            let mut procs: Vec<&crate::metadata::Process> = l.processes.iter().collect();
            if by_rank && procs.iter().all(|p| p.rank.is_some()) {
                procs.sort_by_key(|p| p.rank.map(|r| r.0));
            }
            for p in procs {
                for &tid in &p.threads {
                    let Some(&t) = by_key.get(&(l.name.as_str(), p.pid, tid)) else {
                        continue;
                    };
                    if let Some(r) = th_row.get_mut(t) {
                        *r = row_thread.len();
                    }
                    row_thread.push(t);
                    th_labels.push(format!("TH {}.{tid}", p.app_id.unwrap_or(0)));
                    th_ids.push((tid, p.pid));
                }
            }
        }
        Self {
            th_row,
            row_thread,
            cpu_row,
            th_labels,
            cpu_labels,
            th_ids,
        }
    }
}

/// Mark types in ovniemu's order (first definition over the threads in row order, then
/// document order), with their labels in declaration order.
#[derive(Debug, Default)]
pub(super) struct MarkList {
    /// `(type, title, labels)`.
    pub(super) types: Vec<(i64, String, Labels)>,
}

/// Value labels of a mark type, in declaration order.
type Labels = Vec<(i64, String)>;

impl MarkList {
    /// Collects the mark types of the threads in row order. Paraver values are 32-bit (the
    /// original writes `(int) value`), so two labels of one type whose values are equal modulo
    /// 2³² are refused, as the original refuses them
    /// ([`MetaProblem::MarkValueCollision`]).
    pub(super) fn new(sys: &System, layout: &Layout, streams: &[Stream]) -> Result<Self, Error> {
        let by_name: HashMap<String, &Stream> = streams.iter().map(|s| (s.name(), s)).collect();
        let mut list = Self::default();
        // Position of each type in `list.types`, and per type the value of each 32-bit value.
        let mut index: HashMap<i64, (usize, HashMap<i32, i64>)> = HashMap::new();
        for &t in &layout.row_thread {
            let Some(s) = sys.threads.get(t).and_then(|t| by_name.get(&t.stream)) else {
                continue;
            };
            let marks = s.metadata().marks();
            for (ty, m) in marks.into_iter().flat_map(|m| &m.types) {
                let Some(m) = m.ok() else { continue };
                let (pos, values) = index.entry(*ty).or_insert_with(|| {
                    let title = m.title.as_ref().and_then(|t| t.as_str()).unwrap_or("");
                    list.types.push((*ty, title.to_string(), Vec::new()));
                    (list.types.len() - 1, HashMap::new())
                });
                let labels = m.labels.as_ref().and_then(Typed::ok);
                let Some(entry) = list.types.get_mut(*pos) else {
                    continue;
                };
                for (v, l) in labels.into_iter().flat_map(|l| l.iter()) {
                    match values.get(&(v as i32)) {
                        Some(&have) if have == v => {}
                        Some(&have) => {
                            let problem = MetaProblem::MarkValueCollision {
                                mark: *ty,
                                first: have,
                                second: v,
                            };
                            return Err(Error::meta(s.name(), problem));
                        }
                        None => {
                            values.insert(v as i32, v);
                            entry.2.push((v, l.to_string()));
                        }
                    }
                }
            }
        }
        Ok(list)
    }
}
