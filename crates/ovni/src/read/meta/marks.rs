//! `ovni.mark`: the mark types of a thread and their labels, kept compactly and with the
//! first problem of a key or a label (the rest is skipped), because a hostile file can hold
//! millions of labels.

use serde::de::{IgnoredAny, MapAccess};

use super::json::{FromObject, Scalar, Typed};
use super::problem::MetaProblem;

/// One mark type as written, before its checks.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct MarkMeta {
    /// `title`.
    pub title: Option<Scalar>,
    /// `chan_type`.
    pub chan_type: Option<Scalar>,
    /// `labels`.
    pub labels: Option<Typed<LabelsMeta>>,
}

impl FromObject for MarkMeta {
    fn entry<'de, A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        match key {
            "title" => self.title = Some(map.next_value()?),
            "chan_type" => self.chan_type = Some(map.next_value()?),
            "labels" => self.labels = Some(map.next_value()?),
            _ => {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }
}

/// `ovni.mark.<type>.labels`: value → label, or the first problem (the rest is skipped).
///
/// Labels are stored compactly (16 bytes per label plus its text) because a hostile file can
/// hold millions of them.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LabelsMeta {
    /// All label texts, back to back.
    text: String,
    /// (value, start, end in `text`), in document order; a repeated value keeps only its
    /// last label.
    spans: Vec<(i64, u32, u32)>,
    /// The first label problem.
    pub problem: Option<MetaProblem>,
}

impl LabelsMeta {
    /// Labels in document order (the order ovniemu writes them in the `.pcf`).
    pub fn iter(&self) -> impl Iterator<Item = (i64, &str)> {
        self.spans.iter().map(|&(v, a, b)| {
            let text = self.text.get(a as usize..b as usize).unwrap_or_default();
            (v, text)
        })
    }
}

impl FromObject for LabelsMeta {
    fn entry<'de, A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        if self.problem.is_some() {
            map.next_value::<IgnoredAny>()?;
            return Ok(());
        }
        let Ok(value) = key.parse::<i64>() else {
            map.next_value::<IgnoredAny>()?;
            self.problem = Some(MetaProblem::BadValue {
                key: "ovni.mark.labels",
                expected: "keyed by integer values",
            });
            return Ok(());
        };
        match map.next_value::<Scalar>()? {
            Scalar::Str(s) => {
                // Files are at most MAX_STREAM_JSON (< 4 GiB) long, so offsets fit in u32.
                let start = u32::try_from(self.text.len()).unwrap_or(u32::MAX);
                self.text.push_str(&s);
                let end = u32::try_from(self.text.len()).unwrap_or(u32::MAX);
                self.spans.push((value, start, end));
            }
            _ => {
                self.problem = Some(MetaProblem::BadValue {
                    key: "ovni.mark.labels",
                    expected: "a string",
                });
            }
        }
        Ok(())
    }

    fn finish(&mut self) {
        // A repeated value keeps its last label, at the place of that last label. In place:
        // a hostile file can hold millions of labels, and `start` grows in document order.
        self.spans
            .sort_unstable_by_key(|s| (s.0, std::cmp::Reverse(s.1)));
        self.spans.dedup_by_key(|s| s.0);
        self.spans.sort_unstable_by_key(|s| s.1);
    }
}

/// `ovni.mark`: mark types in `[0, 100)`, or the first problem with a key (the rest is
/// skipped).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct MarksMeta {
    /// Mark types by type, in document order of first appearance.
    pub types: Vec<(i64, Typed<MarkMeta>)>,
    /// A key that is not an integer type in `[0, 100)`.
    pub problem: Option<MetaProblem>,
}

impl FromObject for MarksMeta {
    fn entry<'de, A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        if self.problem.is_some() {
            map.next_value::<IgnoredAny>()?;
            return Ok(());
        }
        let bad = |expected| MetaProblem::BadValue {
            key: "ovni.mark",
            expected,
        };
        let ty = match key.parse::<i64>() {
            Ok(t) if (0..100).contains(&t) => t,
            Ok(_) => {
                self.problem = Some(bad("keyed by types in [0, 100)"));
                map.next_value::<IgnoredAny>()?;
                return Ok(());
            }
            Err(_) => {
                self.problem = Some(bad("keyed by integer types"));
                map.next_value::<IgnoredAny>()?;
                return Ok(());
            }
        };
        let m: Typed<MarkMeta> = map.next_value()?;
        // A repeated key replaces the earlier value in place, as in a JSON object.
        match self.types.iter_mut().find(|(t, _)| *t == ty) {
            Some(slot) => slot.1 = m,
            None => self.types.push((ty, m)),
        }
        Ok(())
    }
}
