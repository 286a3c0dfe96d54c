//! Task types, shared by the nanos6, nosv and openmp models: each process's types in
//! creation order ([`TaskTypes`]), the rules ovniemu 1.14 applies to a type creation event
//! (`6Yc`, `VYc`, `POc`: [`creation`], [`TaskTypes::create`]), and a type's value in the type
//! label views ([`label_value`], [`label_values`]).

use std::collections::HashMap;

use super::problem::{BodyOp, NosvProblem, OpenMpProblem};
use crate::error::TraceProblem;
use crate::raw::Event;

/// Longest type label ovniemu accepts, with its NUL (`MAX_PCF_LABEL`).
const MAX_LABEL: usize = 512;

/// Why ovniemu refuses a type creation event; each model words it in its own problem type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TypeRefusal {
    /// The event's value is not `c`.
    UnexpectedValue(u8),
    /// Not a jumbo event.
    NotJumbo,
    /// No type id, or no NUL after the label.
    Malformed,
    /// The process already has a type with this id.
    Exists(u32),
    /// Type id 0.
    IdZero,
    /// The label (with its NUL) is longer than ovniemu's `.pcf` labels.
    LabelTooLong(u32),
}

impl TypeRefusal {
    /// In the words of the nosv and nanos6 models.
    pub(crate) fn nosv(self) -> NosvProblem {
        match self {
            Self::UnexpectedValue(v) => NosvProblem::UnexpectedTypeValue(v),
            Self::NotJumbo => NosvProblem::NotJumbo,
            Self::Malformed => NosvProblem::MalformedType,
            Self::Exists(id) => NosvProblem::TypeExists(id),
            Self::IdZero => NosvProblem::TypeIdZero,
            Self::LabelTooLong(id) => NosvProblem::LabelTooLong(id),
        }
    }

    /// In the words of the openmp model.
    pub(crate) fn openmp(self) -> OpenMpProblem {
        match self {
            Self::UnexpectedValue(v) => OpenMpProblem::UnexpectedTypeValue(v),
            Self::NotJumbo => OpenMpProblem::NotJumbo,
            Self::Malformed => OpenMpProblem::MalformedType,
            Self::Exists(id) => OpenMpProblem::TypeExists(id),
            Self::IdZero => OpenMpProblem::TypeIdZero,
            Self::LabelTooLong(id) => OpenMpProblem::LabelTooLong(id),
        }
    }
}

/// The type id and label of a type creation event with value `v`: a jumbo event whose data is
/// the id and a NUL-terminated label.
pub(crate) fn creation<'e>(v: u8, ev: &Event<'e>) -> Result<(u32, &'e [u8]), TypeRefusal> {
    if v != b'c' {
        return Err(TypeRefusal::UnexpectedValue(v));
    }
    let data = ev.jumbo_data().ok_or(TypeRefusal::NotJumbo)?;
    let id = data
        .first_chunk::<4>()
        .map(|b| u32::from_le_bytes(*b))
        .ok_or(TypeRefusal::Malformed)?;
    let rest = data.get(4..).unwrap_or_default();
    let end = rest
        .iter()
        .position(|&b| b == 0)
        .ok_or(TypeRefusal::Malformed)?;
    Ok((id, rest.get(..end).unwrap_or_default()))
}

/// The original's debug lines (`-d`) of the task bookkeeping of the nanos6, nosv and openmp
/// models, collected only when `on`.
#[derive(Debug, Default)]
pub(crate) struct TaskDebug {
    pub(crate) on: bool,
    pub(crate) lines: Vec<String>,
}

impl TaskDebug {
    /// Type `id` labelled `label` was created.
    pub(crate) fn type_created(&mut self, id: u32, label: &str) {
        if self.on {
            self.lines.push(format!(
                "task_type_create: new task type created id={id} label={label}"
            ));
        }
    }

    /// Task `task` was created (`model_line`: the model also says so, as nosv and openmp
    /// do).
    pub(crate) fn task_created(&mut self, task: u32, model_line: bool) {
        if self.on {
            self.lines
                .push(format!("task_create: new task created id={task}"));
            if model_line {
                self.lines
                    .push(format!("create_task: task created with taskid {task}"));
            }
        }
    }

    /// Body `body` of task `task` runs again after it ended.
    pub(crate) fn runs_again(&mut self, task: u32, body: u32) {
        if self.on {
            self.lines.push(format!(
                "body_execute: body(id={body},taskid={task}) runs again"
            ));
        }
    }

    /// Body `body` of task `task` (in its iteration `iteration`) executed, paused, resumed or
    /// ended.
    pub(crate) fn body(&mut self, op: BodyOp, task: u32, body: u32, iteration: u32) {
        if !self.on {
            return;
        }
        let name = format!("body(id={body},taskid={task})");
        let (f, state, verb) = match op {
            BodyOp::Execute => (
                "execute",
                format!("Running, iteration {iteration}"),
                "executes",
            ),
            BodyOp::Pause => ("pause", "Paused".to_string(), "pauses"),
            BodyOp::Resume => ("resume", "Running".to_string(), "resumes"),
            BodyOp::End => (
                "end",
                format!("Dead, completed iteration {iteration}"),
                "ends",
            ),
        };
        self.lines
            .push(format!("body_{f}: {name} state is now {state}"));
        self.lines
            .push(format!("task_{f}: body {body} of task {task} {verb}"));
    }
}

/// The task (or worksharing) types of a process, in creation order (the order of the `.pcf`
/// labels).
#[derive(Debug, Default)]
pub(crate) struct TaskTypes {
    list: Vec<TaskType>,
    by_id: HashMap<u32, usize>,
}

impl TaskTypes {
    /// The types in creation order.
    pub(crate) fn iter(&self) -> std::slice::Iter<'_, TaskType> {
        self.list.iter()
    }

    /// The position of type `id`, if created.
    pub(crate) fn index(&self, id: u32) -> Option<usize> {
        self.by_id.get(&id).copied()
    }

    /// The type at position `i`.
    pub(crate) fn get(&self, i: usize) -> Option<&TaskType> {
        self.list.get(i)
    }

    /// Creates type `id` labelled `label` (an empty label becomes ovniemu's
    /// `(unlabeled task type <id>)`), as ovniemu checks it: a new id, not 0, a label that fits;
    /// returns the new type.
    pub(crate) fn create(&mut self, id: u32, label: &[u8]) -> Result<&TaskType, TypeRefusal> {
        if self.by_id.contains_key(&id) {
            return Err(TypeRefusal::Exists(id));
        }
        if id == 0 {
            return Err(TypeRefusal::IdZero);
        }
        let label = if label.is_empty() {
            format!("(unlabeled task type {id})").into_bytes()
        } else {
            label.to_vec()
        };
        if label.len() >= MAX_LABEL {
            return Err(TypeRefusal::LabelTooLong(id));
        }
        self.by_id.insert(id, self.list.len());
        self.list.push(TaskType {
            value: label_value(&label),
            label: String::from_utf8_lossy(&label).into_owned(),
        });
        self.list.last().ok_or(TypeRefusal::Malformed)
    }
}

/// ovniemu's value of a task type label in the label view: Bob Jenkins' `lookup2` hash of the
/// label (the one its hash tables use), plus 666, kept to 31 bits and moved off the values
/// below 1000.
pub(crate) fn label_value(label: &[u8]) -> u32 {
    fn mix(a: &mut u32, b: &mut u32, c: &mut u32) {
        for (s1, s2, s3) in [(13, 8, 13), (12, 16, 5), (3, 10, 15)] {
            *a = a.wrapping_sub(*b).wrapping_sub(*c) ^ (*c >> s1);
            *b = b.wrapping_sub(*c).wrapping_sub(*a) ^ (*a << s2);
            *c = c.wrapping_sub(*a).wrapping_sub(*b) ^ (*b >> s3);
        }
    }
    let word = |b: &[u8]| {
        b.iter()
            .enumerate()
            .fold(0u32, |w, (i, &x)| w.wrapping_add(u32::from(x) << (8 * i)))
    };
    let (mut a, mut b, mut c) = (0x9e37_79b9u32, 0x9e37_79b9u32, 0xfeed_beefu32);
    let mut chunks = label.chunks_exact(12);
    for k in &mut chunks {
        a = a.wrapping_add(word(&k[0..4]));
        b = b.wrapping_add(word(&k[4..8]));
        c = c.wrapping_add(word(&k[8..12]));
        mix(&mut a, &mut b, &mut c);
    }
    let rest = chunks.remainder();
    c = c.wrapping_add(label.len() as u32);
    // The tail: bytes 0..4 to a, 4..8 to b, 8..11 to c shifted one byte up (its low byte
    // holds the length).
    a = a.wrapping_add(word(rest.get(..rest.len().min(4)).unwrap_or(&[])));
    b = b.wrapping_add(word(rest.get(4..rest.len().min(8)).unwrap_or(&[])));
    c = c.wrapping_add(word(rest.get(8..).unwrap_or(&[])) << 8);
    mix(&mut a, &mut b, &mut c);
    let gid = c.wrapping_add(666) & 0x7fff_ffff;
    if gid < 1000 {
        gid + 1000
    } else {
        gid
    }
}

/// Two type labels with the same value in the label view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LabelCollision {
    pub(crate) value: i64,
    pub(crate) first: String,
    pub(crate) second: String,
}

impl LabelCollision {
    /// The trace problem it is (ovniemu's finish of the model fails).
    pub(crate) fn problem(self) -> TraceProblem {
        TraceProblem::TypeLabelCollision {
            value: self.value,
            labels: (self.first, self.second),
        }
    }
}

/// The value labels of a type label view, one per value, in order, up to the first two
/// labels with the same value (which ovniemu cannot list: it fails there), and those two.
pub(crate) fn label_values<'a>(
    types: impl Iterator<Item = &'a TaskType>,
) -> (Vec<(i64, String)>, Option<LabelCollision>) {
    let mut values: Vec<(i64, String)> = Vec::new();
    let mut index: HashMap<i64, usize> = HashMap::new();
    for ty in types {
        let value = i64::from(ty.value);
        match index.get(&value).and_then(|&i| values.get(i)) {
            None => {
                index.insert(value, values.len());
                values.push((value, ty.label.clone()));
            }
            Some((_, l)) if *l == ty.label => {}
            Some((_, l)) => {
                let c = LabelCollision {
                    value,
                    first: l.clone(),
                    second: ty.label.clone(),
                };
                return (values, Some(c));
            }
        }
    }
    (values, None)
}

/// A task or worksharing type of a process.
#[derive(Debug)]
pub(crate) struct TaskType {
    pub(crate) label: String,
    pub(crate) value: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_values_are_ovniemus() {
        // From the original's Paraver files.
        assert_eq!(label_value(b"task.1"), 54_144_132);
    }
}
