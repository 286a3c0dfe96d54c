//! What ovniemu reports while it plays, as the original does: the progress line, and every
//! 100 `OB.` (burst) events of a thread, the statistics of the time between them.

use std::time::{Duration, Instant};

use super::report::Level;
use crate::read::Stream;

/// Events between two looks at the clock.
const CALLS_PER_CHECK: u32 = 100;
/// Least time between two progress lines.
const PERIOD: Duration = Duration::from_millis(200);
/// `OB.` events per statistics line.
const BURSTS: usize = 100;

/// The emulation's progress: the bytes of the streams' events played so far.
pub(super) struct Progress {
    start: Instant,
    reported: Instant,
    calls: u32,
    done: u64,
    total: u64,
}

impl Progress {
    pub(super) fn new(streams: &[Stream]) -> Self {
        let now = Instant::now();
        let header = crate::raw::STREAM_HEADER_SIZE as u64;
        Self {
            start: now,
            reported: now,
            calls: 0,
            done: 0,
            total: streams
                .iter()
                .map(|s| (s.bytes().len() as u64).saturating_sub(header))
                .sum(),
        }
    }

    /// Counts an event of `bytes` as played.
    #[inline]
    pub(super) fn played(&mut self, bytes: usize) {
        self.done += bytes as u64;
    }

    fn fraction(&self) -> f64 {
        if self.total == 0 {
            1.0
        } else {
            self.done as f64 / self.total as f64
        }
    }

    /// Called before each event is played, `events` counting it: every 100 events, once
    /// 0.2 s have passed since the last line, the progress line (ending in `\r`, without a
    /// newline).
    #[inline]
    pub(super) fn tick(&mut self, events: u64) -> Option<String> {
        self.calls += 1;
        if self.calls < CALLS_PER_CHECK {
            return None;
        }
        self.calls = 0;
        self.periodic(events, Instant::now())
    }

    #[cold]
    fn periodic(&mut self, events: u64, now: Instant) -> Option<String> {
        if now.duration_since(self.reported) < PERIOD {
            return None;
        }
        self.reported = now;
        let elapsed = now.duration_since(self.start).as_secs_f64();
        let progress = self.fraction();
        let mut left = elapsed / progress - elapsed;
        if !left.is_finite() {
            left = 0.0;
        }
        let speed = if elapsed > 0.0 {
            events as f64 / elapsed
        } else {
            0.0
        };
        let minutes = (left / 60.0) as i32;
        let seconds = (left / 60.0 - f64::from(minutes)) * 60.0;
        Some(format!(
            "{:5.1}% done at {:.0} kev/s ({minutes} min {seconds:.1} s left)   \r",
            progress * 100.0,
            speed * 1e-3
        ))
    }

    /// The line printed when the emulation ends (or aborts) after `secs` seconds.
    pub(super) fn last_line(&self, events: u64, secs: f64) -> String {
        let speed = if secs > 0.0 {
            events as f64 / secs
        } else {
            0.0
        };
        format!(
            "{:5.1}% done at avg {:.0} kev/s                  ",
            self.fraction() * 100.0,
            speed * 1e-3
        )
    }
}

/// The clocks of each thread's last `OB.` events (fewer than 100).
pub(super) struct Bursts {
    times: Vec<Vec<i64>>,
}

impl Bursts {
    pub(super) fn new(threads: usize) -> Self {
        Self {
            times: (0..threads).map(|_| Vec::new()).collect(),
        }
    }

    /// Records an `OB.` of thread `t` at `dclock`; at the 100th, returns the statistics line
    /// for the loom `loom` (and a warning if the median is above 100 ns).
    pub(super) fn burst(&mut self, t: usize, dclock: i64, loom: &str) -> Vec<(Level, String)> {
        let Some(times) = self.times.get_mut(t) else {
            return Vec::new();
        };
        times.push(dclock);
        if times.len() < BURSTS {
            return Vec::new();
        }
        let mut deltas: Vec<i64> = times
            .windows(2)
            .map(|w| match *w {
                [a, b] => b.wrapping_sub(a),
                _ => 0,
            })
            .collect();
        times.clear();
        deltas.sort_unstable();
        // Summed in increasing order, as doubles, as the original does.
        let mut sum = 0.0;
        let mut max = 0.0f64;
        for &d in &deltas {
            let d = d as f64;
            max = max.max(d);
            sum += d;
        }
        let avg = sum / deltas.len() as f64;
        let median = deltas.get(deltas.len() / 2).copied().unwrap_or(0) as f64;
        let mut lines = vec![(
            Level::Info,
            format!("{loom} burst stats: median/avg/max = {median:3.0}/{avg:3.0}/{max:3.0} ns"),
        )];
        if median > 100.0 {
            lines.push((
                Level::Warn,
                format!("large median burst time of {median:.0} ns, expect overhead"),
            ));
        }
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_lines_say_how_much_is_done_and_left() {
        let start = Instant::now();
        let mut p = Progress {
            start,
            reported: start,
            calls: 0,
            done: 250,
            total: 1000,
        };
        assert_eq!(p.periodic(5000, start + Duration::from_millis(100)), None);
        let line = p.periodic(5000, start + Duration::from_secs(1));
        assert_eq!(
            line.as_deref(),
            Some(" 25.0% done at 5 kev/s (0 min 3.0 s left)   \r")
        );
        // Not again before 0.2 s.
        assert_eq!(p.periodic(5000, start + Duration::from_millis(1100)), None);
        p.played(750);
        assert_eq!(
            p.last_line(8000, 2.0),
            "100.0% done at avg 4 kev/s                  "
        );
    }

    #[test]
    fn a_line_every_100_bursts() {
        let mut b = Bursts::new(1);
        for i in 0..99 {
            assert!(b.burst(0, 33 * i, "n").is_empty());
        }
        let lines = b.burst(0, 33 * 99, "n");
        assert_eq!(
            lines,
            vec![(
                Level::Info,
                "n burst stats: median/avg/max =  33/ 33/ 33 ns".to_string()
            )]
        );
        // The next line needs 100 more.
        for i in 0..99 {
            assert!(b.burst(0, 1000 * i, "n").is_empty());
        }
        let lines = b.burst(0, 99_000, "n");
        assert_eq!(lines.len(), 2);
        assert_eq!(
            lines[1].1,
            "large median burst time of 1000 ns, expect overhead"
        );
    }
}
