//! `FTI_Snapshot`: a checkpoint when a level's interval has passed, counted in time spent
//! computing.

use std::time::{Duration, Instant};

use crate::config::Level;
use crate::error::Result;
use crate::var::Var;

use super::{Fti, Snapshot, Status};

/// FTI_Snapshot's clock: time spent computing (checkpoints excluded) against each level's
/// interval; every level that is due counts one more interval, the highest one is taken.
pub(super) struct SnapshotTimer {
    pub(super) start: Instant,
    pub(super) excluded: Duration,
    pub(super) counts: [u32; 4],
}

impl Fti {
    /// Called every iteration: on a restart, recovers (first call); otherwise takes a
    /// checkpoint when a level's interval (`ckpt_lK` minutes or `ckpt_lK_secs`) has passed,
    /// the highest due level winning, with ids 1, 2, ... (continuing after a restart's id).
    pub fn snapshot(&mut self, vars: &mut [Var<'_>]) -> Result<Snapshot> {
        if matches!(self.recovery.status, Status::Restart(_)) {
            return self.recover(vars).map(Snapshot::Recovered);
        }
        let worked = self
            .timer
            .start
            .elapsed()
            .saturating_sub(self.timer.excluded);
        let mut due = None;
        for (i, level) in Level::ALL.iter().enumerate() {
            if let Some(interval) = self.cfg.intervals[i] {
                if interval
                    .checked_mul(self.timer.counts[i])
                    .is_some_and(|due| worked >= due)
                {
                    // After a long stall, one checkpoint, not one per missed interval.
                    let elapsed = worked.as_nanos() / interval.as_nanos().max(1);
                    self.timer.counts[i] = u32::try_from(elapsed + 1).unwrap_or(u32::MAX);
                    due = Some(*level);
                }
            }
        }
        match due {
            None => Ok(Snapshot::Nothing),
            Some(level) => {
                let id = self.next_id;
                self.checkpoint(id, level, vars).map(Snapshot::Checkpointed)
            }
        }
    }
}
