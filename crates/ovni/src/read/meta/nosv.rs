//! `nosv`: the keys of the nOS-V model, of which the emulator reads the hardware counters
//! (`nosv.hwc`: index → `{"name": ...}`).

use serde::de::{IgnoredAny, MapAccess};

use super::json::{FromObject, Scalar, Typed};

/// Hardware counters kept: ovniemu accepts indices in `[0, 100)` only, so a longer list has a
/// bad index among its first 101 entries.
pub const MAX_HWC_KEPT: usize = 101;

/// The keys under `nosv`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct NosvMeta {
    /// `nosv.hwc`.
    pub hwc: Option<Typed<HwcMeta>>,
    /// `nosv.can_breakdown` (the breakdown view needs it `true` in every thread).
    pub can_breakdown: Option<Scalar>,
}

impl FromObject for NosvMeta {
    fn entry<'de, A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        match key {
            "hwc" => self.hwc = Some(map.next_value()?),
            "can_breakdown" => self.can_breakdown = Some(map.next_value()?),
            _ => {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }
}

/// `nosv.hwc`: the counters in document order (at most [`MAX_HWC_KEPT`]) and their number.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct HwcMeta {
    /// `(index key, name)`; the name is `None` when the entry has no string `name`.
    pub counters: Vec<(String, Option<String>)>,
    /// Entries in the object, kept or not.
    pub count: usize,
}

/// One counter's object.
#[derive(Debug, Clone, PartialEq, Default)]
struct HwcEntry {
    name: Option<Scalar>,
}

impl FromObject for HwcEntry {
    fn entry<'de, A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        match key {
            "name" => self.name = Some(map.next_value()?),
            _ => {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }
}

impl FromObject for HwcMeta {
    fn entry<'de, A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        let e: Typed<HwcEntry> = map.next_value()?;
        let name = e
            .ok()
            .and_then(|e| e.name.as_ref())
            .and_then(Scalar::as_str)
            .map(str::to_string);
        // A repeated key replaces the earlier value in place, as in a JSON object.
        if let Some(slot) = self.counters.iter_mut().find(|(k, _)| k == key) {
            slot.1 = name;
            return Ok(());
        }
        self.count += 1;
        if self.counters.len() < MAX_HWC_KEPT {
            self.counters.push((key.to_string(), name));
        }
        Ok(())
    }
}
