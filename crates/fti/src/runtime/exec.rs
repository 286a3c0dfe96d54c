//! Execution ids and times in UTC.

use std::time::{SystemTime, UNIX_EPOCH};

use crate::collective;
use crate::comm::Comm;
use crate::config::Config;
use crate::files::Dirs;

/// `YYYY-MM-DD HH:MM:SS` (UTC) of a time in ns since the Unix epoch.
pub fn format_utc(ns: i64) -> String {
    let secs = ns.div_euclid(1_000_000_000);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// A new execution id, agreed by every rank (collective): rank 0's clock
/// (`YYYY-MM-DD_HH-MM-SS`), with `-1`, `-2`, ... appended while any rank already has a
/// directory of that name, so that a fresh run never writes into an earlier execution's files
/// (two runs started in the same second, or a restart that could not recover).
pub(super) fn fresh_exec_id(
    storage: &std::sync::Arc<dyn crate::storage::Storage>,
    cfg: &Config,
    comm: &dyn Comm,
) -> String {
    let base = String::from_utf8(comm.broadcast(new_exec_id().as_bytes())).unwrap_or_default();
    let mut n = 0u64;
    loop {
        let id = if n == 0 {
            base.clone()
        } else {
            format!("{base}-{n}")
        };
        let dirs = Dirs::on(std::sync::Arc::clone(storage), cfg, &id);
        // Each rank looks at its local directory, rank 0 also at the shared ones.
        let mut mine = vec![&dirs.local];
        if comm.rank() == 0 {
            mine.extend([&dirs.global, &dirs.meta]);
        }
        // Anything there takes the name, a dangling link included (`Kind::Other`).
        let taken = mine.iter().any(|d| dirs.storage.kind(d).is_ok());
        if !collective::any(comm, taken) {
            return id;
        }
        n += 1;
    }
}

/// `YYYY-MM-DD_HH-MM-SS` of now, in UTC.
pub fn new_exec_id() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    format!(
        "{y:04}-{m:02}-{d:02}_{:02}-{:02}-{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Proleptic Gregorian date of a day count since 1970-01-01 (H. Hinnant's algorithm).
pub(super) fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

#[cfg(test)]
mod tests {
    #[test]
    pub(super) fn civil_dates() {
        assert_eq!(super::civil_from_days(0), (1970, 1, 1));
        assert_eq!(super::civil_from_days(20_779), (2026, 11, 22));
        assert_eq!(super::civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(
            super::format_utc(1_700_000_000_000_000_000),
            "2023-11-14 22:13:20"
        );
    }
}
