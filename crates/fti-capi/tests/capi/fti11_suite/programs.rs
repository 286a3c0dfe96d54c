//! tests.sh's other tests: `syncIntv` (syncIntvTest.sh) and `cornerCases` (cornerCases/
//! corners.sh, then ckptHierarchy/ckptHierarchy.sh). The corner cases use FTI's "Silent"
//! configs (verbosity 2) with POSIX files; every run gets a directory of its own.

use std::path::Path;

use super::corrupt::{self, Damage, Kind, Spread};
use super::{run, run_within, write_config, Io, Log, Scale, Setup};

const SILENT: u8 = 2;

/// syncIntv's iterations from 3000 on take a second each until heatdis converges (FTI's
/// program, near iteration 5000): about 35 minutes, more on a loaded machine.
const SYNC_INTV_DEADLINE: std::time::Duration = std::time::Duration::from_secs(60 * 60);

fn failed(what: &str, log: &Log, why: &str) -> String {
    format!("{what}: {why}\n--- log ---\n{}--- end of log ---", log.text)
}

/// Erases every application rank's files of `kind` at `level` (FTI's tool: `1 1 3` / `0 1 3`).
fn erase_all(dir: &Path, scale: Scale, level: u8, kind: Kind) -> Result<(), String> {
    let layout = corrupt::layout(&dir.join("config.fti"), scale.procs);
    corrupt::corrupt(dir, &layout, level, kind, Damage::Erase, Spread::All).map(|_| ())
}

/// corners.sh case 1 (state after a successful recovery) or 2 (keep_last_ckpt) at `level`:
/// three runs in one directory, each exiting with 0 and no `Error` in the log so far (but
/// for case 1's last run at L1 and L4, which cannot recover); case 1 erases the partner files
/// after the first run (L2, L3) and the Rank files after the second.
pub fn corner_runs(case: u8, setup: Setup, scale: Scale, level: u8) -> Result<(), String> {
    let what = format!("cornerCases case {case} config{setup:?}Silent L{level}");
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), setup, scale, Io::Posix, SILENT);
    let mut text = String::new();
    for step in 0..3u8 {
        let args = [case.to_string(), level.to_string(), step.to_string()];
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let log = run("fti11_consistency", scale, &args, dir.path());
        text.push_str(&log.text);
        let so_far = Log {
            success: log.success,
            text: text.clone(),
        };
        if !log.success {
            return Err(failed(&what, &so_far, &format!("run {step} failed")));
        }
        let cannot_recover = case == 1 && step == 2 && (level == 1 || level == 4);
        if !cannot_recover && text.contains("Error") {
            return Err(failed(&what, &so_far, "Error in the log"));
        }
        if case == 1 && step == 0 && (level == 2 || level == 3) {
            erase_all(dir.path(), scale, level, Kind::Partner)
                .map_err(|e| failed(&what, &so_far, &e))?;
        }
        if case == 1 && step == 1 {
            erase_all(dir.path(), scale, level, Kind::Ckpt)
                .map_err(|e| failed(&what, &so_far, &e))?;
        }
    }
    Ok(())
}

/// corners.sh cases 3 (two problems, `config.fti` then `config2.fti`) and 4 (FTI_Init twice):
/// one run, exit status 0, neither `Error` nor `Warning` in the log (configH0I1Silent).
pub fn corner_once(case: u8, scale: Scale, level: u8) -> Result<(), String> {
    let what = format!("cornerCases case {case} configH0I1Silent L{level}");
    let dir = tempfile::tempdir().unwrap();
    let cfg = write_config(dir.path(), Setup::H0I1, scale, Io::Posix, SILENT);
    std::fs::copy(&cfg, dir.path().join("config2.fti")).unwrap();
    let args = [case.to_string(), level.to_string(), "0".to_owned()];
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let log = run("fti11_consistency", scale, &args, dir.path());
    if !log.success {
        return Err(failed(&what, &log, "the run failed"));
    }
    for word in ["Error", "Warning"] {
        if log.text.contains(word) {
            return Err(failed(&what, &log, &format!("{word} in the log")));
        }
    }
    Ok(())
}

/// The application ranks of a run and their nodes.
fn app_ranks(setup: Setup, scale: Scale) -> Vec<(u32, u32)> {
    (0..scale.procs)
        .filter(|r| !setup.heads() || r % scale.node_size != 0)
        .map(|r| (r, r / scale.node_size))
        .collect()
}

/// `ckptHierarchy L1 L2 L3 L4 CRASH RECOVER` in `dir`, which must exit with 0.
fn hierarchy_run(dir: &Path, scale: Scale, args: &[&str], what: &str) -> Result<Log, String> {
    let log = run("fti11_ckpt_hierarchy", scale, args, dir);
    if log.success {
        Ok(log)
    } else {
        Err(failed(
            what,
            &log,
            &format!("fti11_ckpt_hierarchy {args:?} failed"),
        ))
    }
}

/// Whether each application rank's file `Ckpt<id>-Rank<r>.fti` is at `level`.
fn local_files(dir: &Path, setup: Setup, scale: Scale, level: u8, id: u32) -> Vec<(u32, bool)> {
    let cfg = dir.join("config.fti");
    let exec_id = corrupt::layout(&cfg, scale.procs).exec_id;
    app_ranks(setup, scale)
        .into_iter()
        .map(|(r, node)| {
            let path = dir.join(format!(
                "Local/node{node}/{exec_id}/l{level}/Ckpt{id}-Rank{r}.fti"
            ));
            (r, path.is_file())
        })
        .collect()
}

/// ckptHierarchy.sh: 4.1.1.1 (checkpoints at L4, L3, L2, L1: each stays at its level), 4.1.1.2
/// (at L1, L2, L3, L4: each removes the lower levels' older ones), 4.1.2 (four at one level,
/// then FTI_Finalize with keep_last_ckpt: the local files go) and 4.2 (the restart takes the
/// lowest level that can be recovered).
pub fn hierarchy(setup: Setup, scale: Scale) -> Result<(), String> {
    let what = |case: &str| format!("ckptHierarchy {case} config{setup:?}Silent");
    // 4.1.1.1: Ckpt<5 - K> stays at L1-L3; 4.1.1.2: Ckpt<K> is gone from L1-L3.
    let higher_first = ["4", "3", "2", "1", "1", "0"];
    files_at_levels(setup, scale, &higher_first, &what("4.1.1.1"), true)?;
    let lower_first = ["1", "2", "3", "4", "1", "0"];
    files_at_levels(setup, scale, &lower_first, &what("4.1.1.2"), false)?;
    for level in 1..=3u8 {
        let dir = tempfile::tempdir().unwrap();
        write_config(dir.path(), setup, scale, Io::Posix, SILENT);
        let l = level.to_string();
        let args = [l.as_str(), &l, &l, &l, "0", "0"];
        let log = hierarchy_run(dir.path(), scale, &args, &what("4.1.2"))?;
        let kept: Vec<(u32, u32)> = (1..=4)
            .flat_map(|id| {
                local_files(dir.path(), setup, scale, level, id)
                    .into_iter()
                    .filter(|f| f.1)
                    .map(move |f| (id, f.0))
            })
            .collect();
        if !kept.is_empty() {
            return Err(failed(
                &what("4.1.2"),
                &log,
                &format!("L{level} files (id, rank) {kept:?} kept after FTI_Finalize"),
            ));
        }
    }
    for level in 1..=3u8 {
        lowest_recoverable(setup, scale, level, &what("4.2"))?;
    }
    Ok(())
}

/// ckptHierarchy 4.1.1.1 (`kept`: checkpoints at L4, L3, L2, L1, each of L1-L3 holds its own,
/// id 5 - K) and 4.1.1.2 (checkpoints at L1, L2, L3, L4: none of L1-L3 holds its own, id K).
fn files_at_levels(
    setup: Setup,
    scale: Scale,
    args: &[&str],
    what: &str,
    kept: bool,
) -> Result<(), String> {
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), setup, scale, Io::Posix, SILENT);
    let log = hierarchy_run(dir.path(), scale, args, what)?;
    for level in 1..=3u8 {
        let id = if kept {
            5 - u32::from(level)
        } else {
            level.into()
        };
        let wrong: Vec<u32> = local_files(dir.path(), setup, scale, level, id)
            .into_iter()
            .filter(|f| f.1 != kept)
            .map(|f| f.0)
            .collect();
        if !wrong.is_empty() {
            let how = if kept { "missing" } else { "still there" };
            let why = format!("Ckpt{id} at L{level} {how} for ranks {wrong:?}");
            return Err(failed(what, &log, &why));
        }
    }
    Ok(())
}

/// ckptHierarchy 4.2 at `lost`: checkpoints at L4, L3, L2, L1; every file of levels 1..=lost
/// erased; the restart recovers from level `lost + 1`. (FTI's script means this; as written,
/// its `[ $level > 1 ]` tests are always true and every case erases L1-L3.)
fn lowest_recoverable(setup: Setup, scale: Scale, lost: u8, what: &str) -> Result<(), String> {
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), setup, scale, Io::Posix, SILENT);
    hierarchy_run(dir.path(), scale, &["4", "3", "2", "1", "1", "0"], what)?;
    for level in 1..=lost {
        erase_all(dir.path(), scale, level, Kind::Ckpt).map_err(|e| format!("{what}: {e}"))?;
        if level > 1 {
            erase_all(dir.path(), scale, level, Kind::Partner)
                .map_err(|e| format!("{what}: {e}"))?;
        }
    }
    let log = hierarchy_run(dir.path(), scale, &["1", "1", "1", "1", "0", "1"], what)?;
    let want = format!("Recovering successfully from level {}", lost + 1);
    if log.text.contains(&want) {
        Ok(())
    } else {
        Err(failed(
            what,
            &log,
            &format!("\"{want}\" is not in the log (L1-L{lost} erased)"),
        ))
    }
}

/// syncIntvTest.sh: rank 0's "Checkpoint made i = N" lines against FTI_Snapshot's debug lines
/// "Current iter : C ckpt intv. : I . Next ckpt. at iter. X . Sync. intv. : S": every
/// checkpoint is taken at a call some line announced (N + 1 = X), or an interval after the
/// previous one; every S is at most max_sync_intv (512) and divides its C.
pub fn sync_intv(setup: Setup, scale: Scale) -> Result<(), String> {
    let what = format!("syncIntv config{setup:?}");
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), setup, scale, Io::Posix, 1);
    let log = run_within(
        "fti11_sync_intv",
        scale,
        &["config.fti"],
        dir.path(),
        SYNC_INTV_DEADLINE,
    );
    if !log.success {
        return Err(failed(&what, &log, "the run failed"));
    }
    let (made, resyncs) = check_sync_log(&log.text).map_err(|e| failed(&what, &log, &e))?;
    eprintln!("{what}: {made} checkpoints and {resyncs} resynchronisation lines checked");
    Ok(())
}

/// The numbers of a "Current iter" line: (call, interval, next, sync).
fn resync_numbers(line: &str) -> Option<(i64, i64, i64, i64)> {
    let rest = line.split_once("Current iter : ")?.1;
    let words: Vec<&str> = rest.split_whitespace().collect();
    // C ckpt intv. : I . Next ckpt. at iter. X . Sync. intv. : S
    let number = |i: usize| words.get(i)?.parse::<i64>().ok();
    Some((number(0)?, number(4)?, number(10)?, number(15)?))
}

/// syncIntvTest.sh's `check` of a log; returns how many checkpoints and resynchronisation
/// lines it checked.
fn check_sync_log(text: &str) -> Result<(usize, usize), String> {
    let lines: Vec<(i64, i64, i64, i64)> = text.lines().filter_map(resync_numbers).collect();
    let mut made: Vec<i64> = text
        .lines()
        .filter_map(|l| l.strip_prefix("Checkpoint made i = "))
        .filter_map(|n| n.trim().parse().ok())
        .collect();
    made.sort_unstable();
    made.dedup();
    if lines.is_empty() || made.is_empty() {
        return Err(format!(
            "{} resync lines, {} checkpoints: both expected",
            lines.len(),
            made.len()
        ));
    }
    for (k, &i) in made.iter().enumerate() {
        let announced = lines.iter().any(|l| l.2 == i + 1);
        let by_interval = k > 0 && lines.iter().any(|l| l.1 == i - made[k - 1]);
        if !announced && !by_interval {
            return Err(format!(
                "Checkpoint made at i={} not in next ckpt. values.",
                i + 1
            ));
        }
    }
    for &(call, _, _, sync) in &lines {
        if sync > 512 || sync <= 0 || call % sync != 0 {
            return Err(format!("resync at call {call} with sync. intv. {sync}"));
        }
    }
    Ok((made.len(), lines.len()))
}

/// FTI 1.1's own syncIntv log (its program and library, 16 processes, configH0I1).
fn fti_sync_log() -> String {
    let path =
        crate::util::crate_dir().join("tests/fixtures/fti11-sync-intv/configH0I1-16procs.log");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// FTI's syncIntv log without the lines `drop` picks.
fn fti_sync_log_without(drop: impl Fn(&str) -> bool) -> String {
    fti_sync_log()
        .lines()
        .filter(|l| !drop(l))
        .map(|l| format!("{l}\n"))
        .collect()
}

#[test]
fn sync_intv_check_passes_fti_own_log() {
    assert_eq!(check_sync_log(&fti_sync_log()), Ok((7, 18)));
}

#[test]
fn sync_intv_check_finds_a_checkpoint_no_line_announced() {
    // Without the last resync line, checkpoint 4747 was neither announced (4748) nor an
    // interval (162) after 4585.
    let log = fti_sync_log_without(|l| l.contains("Current iter : 4608 "));
    assert_eq!(
        check_sync_log(&log),
        Err("Checkpoint made at i=4748 not in next ckpt. values.".to_owned())
    );
}

#[test]
fn sync_intv_check_finds_a_resync_off_its_interval() {
    let log = fti_sync_log().replace("Current iter : 3584 ", "Current iter : 3585 ");
    assert_eq!(
        check_sync_log(&log),
        Err("resync at call 3585 with sync. intv. 512".to_owned())
    );
    let log = fti_sync_log().replace("Sync. intv. : 512 \n", "Sync. intv. : 1024 \n");
    assert_eq!(
        check_sync_log(&log),
        Err("resync at call 512 with sync. intv. 1024".to_owned())
    );
}

#[test]
fn sync_intv_check_wants_checkpoints() {
    let log = fti_sync_log_without(|l| l.starts_with("Checkpoint made"));
    assert_eq!(
        check_sync_log(&log),
        Err("18 resync lines, 0 checkpoints: both expected".to_owned())
    );
}

/// corners.sh and ckptHierarchy.sh for `setup` (corners.sh's cases 3 and 4 run with configH0I1
/// only, as FTI's); syncIntv is [`sync_intv`].
pub fn corners_and_hierarchy(setup: Setup, scale: Scale) -> Vec<(String, Result<(), String>)> {
    let mut outcomes = Vec::new();
    for case in [1, 2] {
        for level in 1..=4 {
            outcomes.push((
                format!("corners case {case} L{level}"),
                corner_runs(case, setup, scale, level),
            ));
        }
    }
    if setup == Setup::H0I1 {
        for case in [3, 4] {
            for level in 1..=4 {
                outcomes.push((
                    format!("corners case {case} L{level}"),
                    corner_once(case, scale, level),
                ));
            }
        }
    }
    outcomes.push(("ckptHierarchy".to_owned(), hierarchy(setup, scale)));
    outcomes
}
