//! FTI 1.1's FTI_Snapshot clock: which call of the application's loop takes a checkpoint, and
//! at which level.
//!
//! Intervals count in "minutes" of work. FTI measures the mean time of an iteration over all
//! ranks (an allreduce every `syncIter` calls, `syncIter` doubling up to `max_sync_intv`),
//! derives the number of iterations per minute, and looks at the intervals once per such
//! minute; every rank therefore decides the same thing at the same iteration, which a
//! multi-rank checkpoint needs. Intervals given in seconds (`ckpt_lK_secs`, our extension) make
//! the unit one second instead of one minute.

use std::time::Duration;

use fti::Level;

/// The unit of the intervals and the state of FTI's counters.
#[derive(Debug, Clone)]
pub(crate) struct Clock {
    /// Seconds per unit: 60, or 1 when an interval is not a whole number of minutes.
    unit: f64,
    /// Interval of each level in units (0 = off).
    intervals: [u64; 4],
    /// Per level, how many intervals have been counted (FTI's `ckptCnt`).
    counts: [u64; 4],
    /// Calls so far (`ckptIcnt`).
    calls: i64,
    /// Call at which the intervals are looked at next (`ckptNext`), and the previous one.
    next: i64,
    last: i64,
    /// Calls between two measurements of the mean iteration time (`syncIter`) and its cap.
    sync_iter: i64,
    sync_max: i64,
    /// Iterations per unit (`ckptIntv`).
    per_unit: i64,
    /// Units elapsed (`minuteCnt`).
    units: u64,
    /// Time spent in iterations, checkpoints excluded, and the start of the current one.
    total: f64,
    started: f64,
    /// FTI's line about the last resynchronisation, until the caller takes it.
    pub(crate) resync: Option<String>,
    /// Mean iteration time over all ranks at the last measurement.
    global_mean: f64,
}

/// What one call decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tick {
    /// Not a call at which the intervals are looked at.
    Nothing,
    /// The intervals were looked at: checkpoint at this level, if any is due; then call
    /// [`Clock::restart_timer`] (the checkpoint's time does not count as work).
    Checked(Option<Level>),
}

impl Clock {
    /// A clock for the config's intervals and `[basic] max_sync_intv`, started at `now`.
    pub(crate) fn new(intervals: &[Option<Duration>; 4], max_sync_intv: i64, now: f64) -> Clock {
        let secs: Vec<u64> = intervals
            .iter()
            .map(|i| i.map_or(0, |d| d.as_secs()))
            .collect();
        let unit = if secs.iter().all(|s| s % 60 == 0) {
            60
        } else {
            1
        };
        let mut in_units = [0; 4];
        for (u, s) in in_units.iter_mut().zip(&secs) {
            *u = s / unit;
        }
        Clock {
            unit: unit as f64,
            intervals: in_units,
            counts: [1; 4],
            calls: 0,
            next: 0,
            last: 0,
            sync_iter: 1,
            sync_max: sync_max(max_sync_intv),
            per_unit: 1,
            units: 0,
            total: 0.0,
            started: now,
            global_mean: 0.0,
            resync: None,
        }
    }

    /// One FTI_Snapshot call at time `now` (seconds). `mean_over_ranks` averages a value over
    /// all ranks; it is collective, and called on every rank at the same calls.
    pub(crate) fn tick(&mut self, now: f64, mean_over_ranks: &mut dyn FnMut(f64) -> f64) -> Tick {
        let previous = std::mem::replace(&mut self.started, now);
        if self.calls > 0 {
            self.total += now - previous;
            if self.calls % self.sync_iter == 0 {
                self.measure(mean_over_ranks(self.total / self.calls as f64));
            }
        }
        self.calls += 1;
        if self.next != self.calls {
            return Tick::Nothing;
        }
        if self.global_mean > self.unit {
            self.units = (self.total / self.unit) as u64;
        } else {
            self.units += 1;
        }
        let mut due = None;
        for (i, level) in Level::ALL.into_iter().enumerate() {
            let interval = self.intervals[i];
            if interval > 0 && self.units >= self.counts[i].saturating_mul(interval) {
                due = Some(level);
                self.counts[i] += 1;
            }
        }
        self.last = self.next;
        self.next = self.next.saturating_add(self.per_unit);
        Tick::Checked(due)
    }

    /// Sets the iterations per unit from the mean iteration time over all ranks.
    fn measure(&mut self, global_mean: f64) {
        self.global_mean = global_mean;
        self.per_unit = if global_mean > self.unit {
            1
        } else {
            // FTI's rint(); an iteration too short to measure gives the largest interval.
            (self.unit / global_mean)
                .round_ties_even()
                .clamp(1.0, f64::from(i32::MAX)) as i64
        };
        let mut candidate = self.last + self.per_unit;
        let next = candidate + i64::from(self.last == 0);
        // FTI's debug line of a resynchronisation, which its test suite (syncIntvTest.sh)
        // reads: the call count, the interval, the next look and the sync interval used.
        self.resync = Some(format!(
            "Current iter : {} ckpt intv. : {} . Next ckpt. at iter. {} . Sync. intv. : {}",
            self.calls,
            self.per_unit,
            next.max(self.calls + 1),
            self.sync_iter
        ));
        if self.last == 0 {
            candidate += 1;
        }
        // The call being made is `calls + 1`. FTI 1.1 (and 1.6) accepts a look set at call
        // `calls`, which has just passed: it is never reached again, and the run takes no
        // checkpoint until its end. A look that is due already (slower iterations shrank the
        // interval) is taken at this call instead.
        self.next = candidate.max(self.calls + 1);
        if self.sync_iter < self.per_unit / 2 && self.sync_iter < self.sync_max {
            self.sync_iter *= 2;
        }
    }

    /// The next iteration starts now.
    pub(crate) fn restart_timer(&mut self, now: f64) {
        self.started = now;
    }
}

/// FTI's `max_sync_intv`: unset or not positive is 512; otherwise the largest power of two not
/// above it.
fn sync_max(value: i64) -> i64 {
    if value <= 0 {
        512
    } else {
        1 << (63 - value.leading_zeros())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `calls` calls of `dt` seconds each on one rank; returns the (call, level) of each
    /// checkpoint.
    fn run(intervals: [Option<u64>; 4], dt: f64, calls: i64) -> Vec<(i64, Level)> {
        let intervals = intervals.map(|s| s.map(Duration::from_secs));
        let mut clock = Clock::new(&intervals, 0, 0.0);
        let mut taken = Vec::new();
        let mut now = 0.0;
        for call in 1..=calls {
            now += dt;
            if let Tick::Checked(due) = clock.tick(now, &mut |m| m) {
                if let Some(level) = due {
                    taken.push((call, level));
                }
                clock.restart_timer(now);
            }
        }
        taken
    }

    #[test]
    fn max_sync_interval_is_a_power_of_two() {
        assert_eq!(sync_max(0), 512);
        assert_eq!(sync_max(-3), 512);
        assert_eq!(sync_max(100), 64);
        assert_eq!(sync_max(128), 128);
    }

    #[test]
    fn minute_intervals_at_fti_s_iterations() {
        // One second per iteration: 60 iterations per minute. L1 every minute, L4 every 2.
        let taken = run([Some(60), None, None, Some(120)], 1.0, 250);
        // The first look is at call last + per_unit + 1 = 61, then every 60 calls.
        assert_eq!(
            taken,
            [
                (61, Level::L1),
                (121, Level::L4),
                (181, Level::L1),
                (241, Level::L4)
            ]
        );
    }

    #[test]
    fn second_intervals_use_seconds() {
        // 10 ms per iteration, L1 every 2 s: checkpoints 200 iterations apart.
        let taken = run([Some(2), None, None, None], 0.01, 700);
        let calls: Vec<i64> = taken.iter().map(|t| t.0).collect();
        assert_eq!(calls.len(), 3, "{taken:?}");
        assert!(calls.windows(2).all(|w| w[1] - w[0] == 200), "{calls:?}");
    }

    #[test]
    fn slow_iterations_count_minutes_from_time() {
        // Two minutes per iteration: every look sees the minutes elapsed.
        let taken = run([Some(60), None, None, None], 120.0, 5);
        assert_eq!(taken.first().map(|t| t.1), Some(Level::L1));
        assert!(taken.len() >= 3, "{taken:?}");
    }

    #[test]
    fn resynchronisations_say_fti_s_line() {
        // One second per iteration: the first measurement (call 1) sets 60 calls per minute
        // and the first look at call 61; the sync interval doubles from 1.
        let intervals = [Some(Duration::from_secs(60)), None, None, None];
        let mut clock = Clock::new(&intervals, 512, 0.0);
        let mut lines = Vec::new();
        for call in 0..5 {
            clock.tick(f64::from(call), &mut |x| x);
            lines.extend(clock.resync.take());
        }
        assert_eq!(
            lines,
            [
                "Current iter : 1 ckpt intv. : 60 . Next ckpt. at iter. 61 . Sync. intv. : 1",
                "Current iter : 2 ckpt intv. : 60 . Next ckpt. at iter. 61 . Sync. intv. : 2",
                "Current iter : 4 ckpt intv. : 60 . Next ckpt. at iter. 61 . Sync. intv. : 4",
            ]
        );
    }

    #[test]
    fn no_interval_never_checkpoints() {
        assert!(run([None; 4], 0.001, 10_000).is_empty());
    }

    /// Iterations of two or three speeds, then a long run at one speed: the clock never sets
    /// its next look at a call already made (it would never be reached again, and the run
    /// would take no checkpoint until its end), and the final speed still gets checkpoints.
    mod patterns {
        use super::*;
        use proptest::prelude::*;

        fn segments() -> impl Strategy<Value = Vec<(f64, i64)>> {
            let dt = prop_oneof![0.0005f64..0.05, 0.05f64..0.8, 0.8f64..4.0];
            proptest::collection::vec((dt, 1i64..2000), 1..4)
        }

        proptest! {
            #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

            #[test]
            fn checkpoints_never_stop(
                segments in segments(),
                last_dt in 0.0005f64..4.0,
                interval in 2u64..30,
                max_sync in prop_oneof![Just(0i64), Just(8i64), Just(64i64)],
            ) {
                let intervals = [Some(Duration::from_secs(interval)), None, None, None];
                let mut clock = Clock::new(&intervals, max_sync, 0.0);
                let mut now = 0.0;
                let mut call = 0i64;
                let tick = |clock: &mut Clock, now: f64| {
                    let checked = clock.tick(now, &mut |m| m);
                    if matches!(checked, Tick::Checked(_)) {
                        clock.restart_timer(now);
                    }
                    checked
                };
                for &(dt, n) in &segments {
                    for _ in 0..n {
                        now += dt;
                        call += 1;
                        tick(&mut clock, now);
                        // 0: not scheduled yet (the first measurement, at the second call, does).
                        prop_assert!(
                            clock.next == 0 || clock.next > clock.calls,
                            "call {call}: next look at call {} already made",
                            clock.next
                        );
                    }
                }
                // Long enough at the last speed for its checkpoints to come whatever the
                // earlier speeds made the mean iteration time: four intervals, and four times
                // the calls before (the mean is over every call).
                let last_calls = (4.0 * interval as f64 / last_dt).ceil() as i64;
                let last_calls = last_calls.max(4 * call).max(2_000);
                let mut taken = 0;
                for _ in 0..last_calls {
                    now += last_dt;
                    if tick(&mut clock, now) == Tick::Checked(Some(Level::L1)) {
                        taken += 1;
                    }
                    prop_assert!(clock.next == 0 || clock.next > clock.calls);
                }
                prop_assert!(taken > 0, "no checkpoint in the last {last_calls} calls");
            }
        }
    }
}
