//! ovniemu's clock offset table (`clock-offsets.txt`, written by `ovnisync`): a header line, then
//! `index hostname median mean stdev` per line; the median is added to the clocks of every loom
//! whose hostname (loom name up to the first `.`) matches (`docs/ovni-format.md`, *ovnilint*,
//! step 3).

use std::collections::{HashMap, HashSet};
use std::path::Path;

use crate::error::{Error, Result, TraceProblem};
use crate::lint::trace::ClockOffsetProblem;

/// Longest table read: the table has one short line per host.
const MAX_TABLE: u64 = 16 << 20;

fn problem(path: &Path, line: Option<usize>, what: ClockOffsetProblem) -> Error {
    Error::Trace(TraceProblem::ClockOffsets {
        path: path.to_path_buf(),
        line,
        what,
    })
}

/// Parses the table: `(hostname, offset in ns)` per entry, in file order.
pub(crate) fn parse(path: &Path, text: &str) -> Result<Vec<(String, i64)>> {
    let mut lines = text.split_inclusive('\n');
    if lines.next().is_none() {
        return Err(problem(path, None, ClockOffsetProblem::MissingHeader));
    }
    let mut names = HashSet::new();
    let mut out = Vec::new();
    for (i, line) in lines.enumerate() {
        let n = i + 2;
        if line.starts_with('\n') {
            continue;
        }
        let mut fields = line.split_whitespace();
        // Like the C scanner, a line with nothing to read ends the table.
        let Some(index) = fields.next() else {
            break;
        };
        let fields_read = |read| problem(path, Some(n), ClockOffsetProblem::Fields { read });
        if index.parse::<i64>().is_err() {
            return Err(fields_read(0));
        }
        let Some(name) = fields.next() else {
            return Err(fields_read(1));
        };
        let mut nums = [0f64; 3];
        for (k, slot) in nums.iter_mut().enumerate() {
            *slot = fields
                .next()
                .and_then(|s| s.parse().ok())
                .ok_or_else(|| fields_read(2 + k))?;
        }
        if !names.insert(name.to_string()) {
            let dup = ClockOffsetProblem::DuplicateName(name.to_string());
            return Err(problem(path, Some(n), dup));
        }
        // The C code converts the median to an integer; `as` saturates out-of-range values.
        out.push((name.to_string(), nums[0] as i64));
    }
    if out.is_empty() {
        return Err(problem(path, None, ClockOffsetProblem::NoEntries));
    }
    Ok(out)
}

/// Reads the table at `path`.
pub(crate) fn load(path: &Path) -> Result<Vec<(String, i64)>> {
    let md = std::fs::metadata(path).map_err(|e| Error::io(path, e))?;
    if md.len() > MAX_TABLE {
        return Err(problem(path, None, ClockOffsetProblem::TooLarge));
    }
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    let text = String::from_utf8_lossy(&bytes);
    parse(path, &text)
}

/// Offset of each loom (in `looms` order) from the table entries.
pub(crate) fn loom_offsets(
    path: &Path,
    entries: &[(String, i64)],
    looms: &[String],
) -> Result<Vec<i64>> {
    let mut offsets = vec![0i64; looms.len()];
    // Looms by hostname, so the table is matched in linear time.
    let mut by_host: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, l) in looms.iter().enumerate() {
        by_host
            .entry(l.split('.').next().unwrap_or(l))
            .or_default()
            .push(i);
    }
    for (entry, (host, off)) in entries.iter().enumerate() {
        let mut matched = false;
        for &i in by_host.get(host.as_str()).into_iter().flatten() {
            let (Some(l), Some(slot)) = (looms.get(i), offsets.get_mut(i)) else {
                continue;
            };
            if *slot != 0 {
                let loom = l.clone();
                let what = ClockOffsetProblem::LoomHasOffset { entry, loom };
                return Err(problem(path, None, what));
            }
            *slot = *off;
            matched = true;
        }
        if !matched {
            let host = host.clone();
            return Err(problem(
                path,
                None,
                ClockOffsetProblem::NoLoom { entry, host },
            ));
        }
    }
    Ok(offsets)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_parses_and_matches_hostnames() {
        let p = Path::new("t");
        let t = "rank hostname offset_median offset_mean offset_std\n\
                 0 nodeA 0 0.0 0.0\n\n1 nodeB 1500.7 1499 3\n";
        let e = parse(p, t).unwrap();
        assert_eq!(e, vec![("nodeA".into(), 0), ("nodeB".into(), 1500)]);
        let looms = ["nodeA.1".to_string(), "nodeB.x".into(), "nodeB.y".into()];
        assert_eq!(loom_offsets(p, &e, &looms).unwrap(), vec![0, 1500, 1500]);
        assert!(loom_offsets(p, &e, &looms[..1]).is_err());
    }

    #[test]
    fn bad_tables_are_rejected() {
        let p = Path::new("t");
        for t in [
            "",
            "header\n",
            "h\n0 a 1 2\n",
            "h\n0 a x 1 2\n",
            "h\n0 a 1 1 1\n1 a 2 2 2\n",
        ] {
            assert!(parse(p, t).is_err(), "{t:?}");
        }
        // A blank line with spaces ends the table, as in the C scanner.
        assert_eq!(parse(p, "h\n0 a 1 1 1\n  \n0 a 1 1 1\n").unwrap().len(), 1);
    }
}
