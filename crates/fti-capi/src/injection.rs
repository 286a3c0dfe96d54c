//! FTI_BitFlip: fault injection as configured in `[injection]` (rank, index, position, number,
//! frequency), to test an application's detection of silent data corruption.

use std::ffi::c_int;

use crate::data::Dataset;
use crate::message;
use crate::types::{DBLE_ID, SFLT_ID};
use fti::IniFile;

/// The `[injection]` settings and what was injected so far.
#[derive(Debug, Clone)]
pub(crate) struct Injection {
    /// Rank (in FTI_COMM_WORLD) that injects.
    rank: i64,
    /// Byte offset of the value in the dataset (FTI adds it to a `void*`).
    index: i64,
    /// Bit flipped in the value (0 = least significant).
    position: i64,
    /// Flips to inject in the run.
    number: i64,
    /// Seconds between two flips.
    frequency: f64,
    done: i64,
    last: f64,
}

impl Injection {
    /// The config's settings (all 0 when absent: nothing is injected), timed from `now`.
    pub(crate) fn new(ini: &IniFile, now: f64) -> Injection {
        let int = |key: &str| ini.int("injection", key).unwrap_or(0);
        Injection {
            rank: int("rank"),
            index: int("index"),
            position: int("position"),
            number: int("number"),
            frequency: ini.float("injection", "frequency").unwrap_or(0.0),
            done: 0,
            last: now,
        }
    }

    /// Flips the configured bit of dataset `slot` (protect order) on the configured rank, if a
    /// flip is due; whether it flipped. The dataset must hold `double`s (`FTI_DBLE`) or
    /// `float`s (`FTI_SFLT`). Applications call it every iteration, so not flipping is silent,
    /// as in FTI.
    ///
    /// # Safety
    /// The datasets' buffers are valid (FTI_Protect's contract).
    pub(crate) unsafe fn flip(
        &mut self,
        rank: i32,
        datasets: &[Dataset],
        slot: c_int,
        now: f64,
    ) -> bool {
        let Some(d) = usize::try_from(slot).ok().and_then(|s| datasets.get(s)) else {
            return false;
        };
        if self.rank != i64::from(rank)
            || self.done >= self.number
            || now - self.last <= self.frequency
        {
            return false;
        }
        let width: usize = match d.type_id {
            DBLE_ID => 8,
            SFLT_ID => 4,
            _ => return false,
        };
        let at = usize::try_from(self.index)
            .ok()
            .filter(|&i| (i as i64) < d.count && i.saturating_add(width) <= d.size());
        let bit = u32::try_from(self.position)
            .ok()
            .filter(|&b| b < 8 * width as u32);
        let (Some(at), Some(bit)) = (at, bit) else {
            return false;
        };
        let target = d.ptr.cast::<u8>().wrapping_add(at);
        // SAFETY: `at + width` bytes lie inside the dataset (checked above), whose buffer is
        // valid (the caller's contract); unaligned accesses, as FTI's byte offset allows.
        let (before, after) = unsafe {
            if width == 8 {
                let p = target.cast::<u64>();
                let v = p.read_unaligned();
                p.write_unaligned(v ^ (1 << bit));
                (f64::from_bits(v), f64::from_bits(v ^ (1 << bit)))
            } else {
                let p = target.cast::<u32>();
                let v = p.read_unaligned();
                p.write_unaligned(v ^ (1 << bit));
                (
                    f64::from(f32::from_bits(v)),
                    f64::from(f32::from_bits(v ^ (1 << bit))),
                )
            }
        };
        self.done += 1;
        self.last = now;
        message::warn(&format!(
            "Injecting bit-flip in dataset {slot}, index {at}, bit {bit} : {before:.6} => {after:.6}"
        ));
        true
    }
}
