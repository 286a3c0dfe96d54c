//! The heat-diffusion demo across real processes, and the checkpoint management commands.

use std::path::Path;
use std::process::{Command, Output};

/// The demo's solver, as the `fti demo` command runs it.
#[path = "../src/heatdis.rs"]
#[allow(dead_code)]
mod heatdis;

fn fti(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fti"))
        .args(args)
        .output()
        .unwrap()
}

fn stdout(out: &Output) -> String {
    String::from_utf8(out.stdout.clone()).unwrap()
}

const SMALL: [&str; 6] = ["--size", "48", "--iters", "300", "--every", "25"];

fn heatdis(dir: &Path, extra: &[&str]) -> Output {
    let mut args = vec!["heatdis", "--dir", dir.to_str().unwrap()];
    args.extend(SMALL);
    args.extend(extra);
    fti(&args)
}

fn checksum(out: &Output) -> String {
    stdout(out)
        .lines()
        .find_map(|l| l.strip_prefix("checksum "))
        .expect("checksum line")
        .to_owned()
}

/// Two separate processes: uninterrupted vs crashed-and-restarted end with the same checksum,
/// and the restarted one resumed at an iteration > 0, computing only what was left.
#[test]
fn crashed_and_restarted_run_ends_bitwise_identical() {
    let root = tempfile::tempdir().unwrap();
    let plain = heatdis(&root.path().join("a"), &[]);
    assert!(plain.status.success());
    let reference = checksum(&plain);

    let crashed_dir = root.path().join("b");
    let crash = heatdis(&crashed_dir, &["--crash-at", "140"]);
    assert!(!crash.status.success(), "the crash run must die");
    assert!(!stdout(&crash).contains("checksum"));
    // An intended crash, not a bug report: no MPI library's backtrace (MPI builds).
    let stderr = String::from_utf8_lossy(&crash.stderr);
    assert!(!stderr.contains("received signal"), "{stderr}");

    let restarted = heatdis(&crashed_dir, &[]);
    assert!(restarted.status.success());
    let text = stdout(&restarted);
    assert!(
        text.contains(
            "recovered checkpoint 5 at iteration 125 (L1, every rank from its own file)\n"
        ),
        "{text}"
    );
    assert!(text.contains("iterations computed: 175,"), "{text}");
    assert_eq!(checksum(&restarted), reference);

    // The uninterrupted run's trace is complete and valid; the crashed run and its restart
    // are two processes of one trace, the crashed one unfinished.
    let report = ovni::lint::lint_dir(&root.path().join("a/trace"), &Default::default());
    assert!(report.accepted(), "{:?}", report.problems);
    let both = ovni::Trace::open(&crashed_dir.join("trace")).unwrap();
    assert_eq!(both.streams().len(), 2);
    let finished: Vec<bool> = both
        .streams()
        .iter()
        .map(|s| s.meta()["ovni"]["finished"] == 1)
        .collect();
    assert_eq!(finished.iter().filter(|&&f| f).count(), 1);
    // The crashed run's trace holds its checkpoints up to the crash.
    let crashed = both
        .streams()
        .iter()
        .find(|s| s.meta()["ovni"]["finished"] != 1)
        .unwrap();
    assert!(crashed.events().count() > 10);

    // The checkpoint table keeps the crashed process and its restart apart, both with their
    // rank (written at the stream's start, so the killed process has it too).
    let crashed_pid = crashed.meta()["ovni"]["pid"].as_i64().unwrap();
    let out = fti(&[
        "trace-summary",
        "--format",
        "json",
        crashed_dir.join("trace").to_str().unwrap(),
    ]);
    assert!(out.status.success());
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["schema"], 2);
    let rows = summary["phases"].as_array().unwrap();
    let pids: std::collections::BTreeSet<i64> =
        rows.iter().map(|r| r["pid"].as_i64().unwrap()).collect();
    assert_eq!(pids.len(), 2, "{rows:?}");
    assert!(rows.iter().all(|r| r["rank"] == 0), "{rows:?}");
    // Checkpoints 1..5 before the crash at iteration 140 (every 25), the 4th at L4.
    let levels = summary["levels"].as_array().unwrap();
    let count = |level: i64| -> u64 {
        levels
            .iter()
            .filter(|r| r["pid"] == crashed_pid && r["level"] == level)
            .map(|r| r["checkpoints"].as_u64().unwrap())
            .sum()
    };
    assert_eq!((count(1), count(4)), (4, 1), "{levels:?}");
    for r in rows {
        for key in [
            "pid", "rank", "thread", "level", "phase", "count", "total_ns",
        ] {
            assert!(r.get(key).is_some(), "{key} missing in {r}");
        }
    }
    let text = fti(&["trace-summary", crashed_dir.join("trace").to_str().unwrap()]);
    assert!(text.status.success());
    let text = stdout(&text);
    assert!(text.contains("verify (restart)"), "{text}");
}

#[test]
fn demo_story_succeeds() {
    let root = tempfile::tempdir().unwrap();
    let mut args = vec![
        "demo",
        "--dir",
        root.path().to_str().unwrap(),
        "--crash-at",
        "260",
    ];
    args.extend(SMALL);
    let out = fti(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = stdout(&out);
    assert!(
        text.contains("recovered checkpoint 10 at iteration 250"),
        "{text}"
    );
    assert!(text.contains("bitwise identical"), "{text}");
    // The demo ends with the timeline of its traces.
    let timeline = root.path().join("timeline.html");
    assert!(
        text.contains(&format!("timeline: {}\n", timeline.display())),
        "{text}"
    );
    let page = std::fs::read_to_string(&timeline).unwrap();
    assert!(page.contains("id=\"ovniview-summary\""));
    assert!(
        page.contains("id=\"ovniview-flags\""),
        "the crashed run is flagged"
    );
    // A second demo in the same place replaces the directories the first one created.
    let again = fti(&args);
    assert!(
        again.status.success(),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
}

#[test]
fn demo_never_removes_a_directory_it_did_not_create() {
    let root = tempfile::tempdir().unwrap();
    let mine = root.path().join("crashed");
    std::fs::create_dir_all(mine.join("data")).unwrap();
    std::fs::write(mine.join("data/results.h5"), b"a week of work").unwrap();
    let mut args = vec!["demo", "--dir", root.path().to_str().unwrap()];
    args.extend(SMALL);
    let out = fti(&args);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("was not created by `fti demo`"), "{err}");
    assert_eq!(
        std::fs::read(mine.join("data/results.h5")).unwrap(),
        b"a week of work"
    );
}

#[test]
fn list_and_prune_checkpoints() {
    let root = tempfile::tempdir().unwrap();
    let mut cfg = heatdis::config(root.path());
    cfg.keep_ckpts = 3;
    let p = heatdis::Params {
        size: 16,
        iters: 100,
        every: 10,
        crash_at: None,
        ..Default::default()
    };
    heatdis::run(cfg, p, &mut |_| {}).unwrap();
    let dir = root.path().to_str().unwrap();
    let list = |extra: &[&str]| {
        let mut args = vec!["list", "--format", "json"];
        args.extend(extra);
        args.push(dir);
        let out = fti(&args);
        let parsed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        (
            out.status.code(),
            parsed["checkpoints"].as_array().unwrap().clone(),
        )
    };
    let (code, checkpoints) = list(&[]);
    assert_eq!(code, Some(0));
    // Ids 1..9: L1 keeps 9 (newest) + 7, 6 archived... every 4th id went to L4 and retired
    // the L1 files before it; L4 keeps 8 and 4 archived. One rank on node0: an L1 checkpoint
    // does not survive losing it, an L4 one does.
    let summary = |checkpoints: &[serde_json::Value]| -> Vec<(i64, i64, bool, bool)> {
        checkpoints
            .iter()
            .map(|c| {
                (
                    c["id"].as_i64().unwrap(),
                    c["level"].as_i64().unwrap(),
                    c["archived"].as_bool().unwrap(),
                    c["survives_node_loss"].as_bool().unwrap(),
                )
            })
            .collect()
    };
    assert_eq!(
        summary(&checkpoints),
        [
            (4, 4, true, true),
            (6, 1, true, false),
            (7, 1, true, false),
            (8, 4, false, true),
            (9, 1, false, false)
        ]
    );
    for c in &checkpoints {
        assert_eq!(c["ranks"].as_array().unwrap().len(), 1);
        assert_eq!(c["ranks"][0]["rank_file"]["status"], "ok", "{c}");
    }
    let text = stdout(&fti(&["list", dir]));
    assert!(
        text.contains("  checkpoint 6  L1 archived  written "),
        "{text}"
    );

    // Corrupt one: list says so and exits 1.
    let victim = checkpoints[1]["ranks"][0]["rank_file"]["path"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut bytes = std::fs::read(&victim).unwrap();
    bytes[200] ^= 1;
    std::fs::write(&victim, bytes).unwrap();
    let (code, checkpoints) = list(&[]);
    assert_eq!(code, Some(1));
    assert_eq!(checkpoints[1]["ranks"][0]["rank_file"]["status"], "corrupt");
    let out = fti(&["list", dir]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout(&out).contains(&format!("  corrupt: {victim}: ")));

    let out = fti(&["prune", dir, "--keep", "1"]);
    assert!(out.status.success());
    let deleted = stdout(&out);
    assert_eq!(deleted.lines().count(), 3, "{deleted}");
    assert!(
        deleted.lines().all(|l| l.starts_with("deleted ")),
        "{deleted}"
    );
    let (_, left) = list(&["--no-verify"]);
    assert_eq!(summary(&left), [(8, 4, false, true), (9, 1, false, false)]);

    let empty = tempfile::tempdir().unwrap();
    let out = fti(&["list", empty.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no checkpoint files"));
}

/// A small grid, a checkpoint every 10 of its 50 iterations.
const SMALL_GRID: heatdis::Params = heatdis::Params {
    size: 16,
    iters: 50,
    every: 10,
    crash_at: None,
    partner_level: fti::Level::L2,
};

#[test]
fn heat_flows_down_from_the_top_row() {
    let dir = tempfile::tempdir().unwrap();
    let p = SMALL_GRID;
    let out = heatdis::run(heatdis::config(dir.path()), p, &mut |_| {}).unwrap();
    assert_eq!(
        (out.computed, out.checkpoints, out.recovered),
        (50, 4, None)
    );
    assert_eq!(out.checksum.len(), 32);
    // Same parameters, fresh directory: same result.
    let dir2 = tempfile::tempdir().unwrap();
    assert_eq!(
        heatdis::run(heatdis::config(dir2.path()), p, &mut |_| {})
            .unwrap()
            .checksum,
        out.checksum
    );
    // A run that restarts from checkpoint 4 (iteration 40) computes only 10 iterations and
    // ends bitwise identical.
    let again = heatdis::run(heatdis::config(dir.path()), p, &mut |_| {}).unwrap();
    assert_eq!(again.recovered, Some((4, 40)));
    assert_eq!(again.computed, 10);
    assert_eq!(again.checksum, out.checksum);
}

#[test]
fn any_number_of_ranks_computes_the_same_grid() {
    let p = SMALL_GRID;
    let one = heatdis::run(
        heatdis::config(tempfile::tempdir().unwrap().path()),
        p,
        &mut |_| {},
    )
    .unwrap();
    for n in [2, 3, 5] {
        let dir = tempfile::tempdir().unwrap();
        let go = || {
            std::thread::scope(|s| {
                let handles: Vec<_> = fti::Threads::new(n, "h")
                    .into_iter()
                    .map(|c| {
                        let cfg = fti::Config {
                            trace: false,
                            ..heatdis::config(dir.path())
                        };
                        s.spawn(move || {
                            heatdis::run_with(cfg, Box::new(c), p, &mut |_| {}).unwrap()
                        })
                    })
                    .collect();
                handles
                    .into_iter()
                    .map(|h| h.join().unwrap())
                    .collect::<Vec<_>>()
            })
        };
        let first = go();
        assert!(
            first.iter().all(|o| o.checksum == one.checksum),
            "{n} ranks"
        );
        // Checkpoint 2 was L2, 4 was L4; the rerun restarts from 4 on every rank.
        let again = go();
        assert!(again
            .iter()
            .all(|o| o.recovered == Some((4, 40)) && o.checksum == one.checksum));
    }
}

/// An asynchronous run: each checkpoint is counted once although the application's thread
/// and the background thread both mark it, and the time the application was stopped is kept
/// apart from the background's work, per level and per checkpoint.
#[test]
fn trace_summary_counts_asynchronous_checkpoints_once() {
    let root = tempfile::tempdir().unwrap();
    let cfg = fti::Config {
        ckpt_dir: root.path().join("Local"),
        glbl_dir: root.path().join("Global"),
        meta_dir: root.path().join("Meta"),
        trace: true,
        trace_dir: root.path().join("trace"),
        async_ckpt: true,
        verbosity: 3,
        ..fti::Config::default()
    };
    let mut f = fti::Fti::init(cfg).unwrap();
    let mut x = vec![7u64; 1 << 16];
    for id in 1..=5 {
        let level = if id == 4 {
            fti::Level::L4
        } else {
            fti::Level::L1
        };
        f.checkpoint(id, level, &[fti::Var::slice(0, &mut x)])
            .unwrap();
    }
    f.finalize().unwrap();
    let dir = root.path().join("trace");
    let out = fti(&[
        "trace-summary",
        "--format",
        "json",
        "--per-checkpoint",
        dir.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let levels = summary["levels"].as_array().unwrap();
    let count = |level: i64| {
        levels
            .iter()
            .find(|r| r["level"] == level)
            .map(|r| r["checkpoints"].as_u64().unwrap())
    };
    assert_eq!((count(1), count(4)), (Some(4), Some(1)), "{levels:?}");
    let ckpts = summary["checkpoints"].as_array().unwrap();
    let ids: Vec<i64> = ckpts.iter().map(|c| c["id"].as_i64().unwrap()).collect();
    assert_eq!(ids, [1, 2, 3, 4, 5]);
    for c in ckpts {
        assert!(c["stopped_ns"].as_u64().unwrap() > 0, "{c}");
        assert!(c["background_ns"].as_u64().unwrap() > 0, "{c}");
    }
    // The background's write is on the background thread, the staging on the application's.
    let phases = summary["phases"].as_array().unwrap();
    let on = |thread: &str, phase: &str| {
        phases
            .iter()
            .any(|p| p["thread"] == thread && p["phase"].as_str().unwrap().starts_with(phase))
    };
    assert!(
        on("application", "stage") && on("background", "write"),
        "{phases:?}"
    );
    assert!(!on("application", "write"), "{phases:?}");
    let text = stdout(&fti(&[
        "trace-summary",
        "--per-checkpoint",
        dir.to_str().unwrap(),
    ]));
    assert!(
        text.contains("stopped") && text.contains("per checkpoint"),
        "{text}"
    );
}
