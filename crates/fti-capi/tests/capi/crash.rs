//! Restart after a real crash (`tests/c/crash.c`): a process killed with SIGKILL after its
//! checkpoints, started again with the same config file, finds `FTI_Status() != 0` and
//! recovers the last checkpoint's data, as with FTI 1.1 (which records `failure` and
//! `exec_id` in the config file). One rank at L1 and L4; four ranks under `mpirun` at L2, L3
//! and L4, with one node's local directory lost before the restart.

use std::io::{BufRead, BufReader};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;

use crate::util::{self, Link};

#[path = "../../../fti/tests/util/files.rs"]
mod files;
use files::files_below;

/// Starts `crash write` (one rank), waits for "= ready", kills it with SIGKILL; returns what it
/// printed.
fn write_and_kill(exe: &Path, cfg: &Path, level: &str, cwd: &Path) -> Vec<String> {
    let mut child = Command::new(exe)
        .args(["write", cfg.to_str().unwrap(), level, "wait"])
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let (tx, rx) = mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut seen = Vec::new();
    loop {
        match rx.recv_timeout(util::DEADLINE) {
            Ok(line) if line == "= ready" => break,
            Ok(line) => seen.push(line),
            Err(e) => {
                let _ = child.kill();
                panic!("crash write never got ready ({e}): {seen:?}");
            }
        }
    }
    child.kill().unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.signal(), Some(9), "{status:?}");
    seen
}

#[test]
fn one_rank_killed_then_restarted_with_the_same_config() {
    let exe = util::compile("crash", Link::Shared);
    for level in ["1", "4"] {
        let dir = tempfile::tempdir().unwrap();
        let cfg = util::config(dir.path(), "");
        let seen = write_and_kill(&exe, &cfg, level, dir.path());
        assert_eq!(
            util::results(&seen.join("\n")),
            [
                "rank 0 init 0 status 0",
                "rank 0 checkpoint 1: 1",
                "rank 0 checkpoint 2: 1",
                "rank 0 checkpoint 3: 1"
            ]
        );
        let (failure, exec_id) = util::restart_keys(&cfg);
        assert_eq!(failure, 1);
        assert!(!exec_id.is_empty());

        let out = util::run(&exe, &["restart", cfg.to_str().unwrap(), level], dir.path());
        let stdout = util::success("crash restart", &out);
        assert_eq!(
            util::results(&stdout),
            [
                "rank 0 init 0 status 1 recover 0 holds checkpoint 3 1 status 0",
                "rank 0 checkpoint 4: 1",
                "rank 0 finalize 0"
            ],
            "L{level}: {stdout}"
        );
        assert_eq!(util::restart_keys(&cfg).0, 0);
        assert!(util::checkpoint_files(dir.path()).is_empty());
    }
}

#[test]
fn four_ranks_killed_lose_a_node_and_recover_at_l2_l3_l4() {
    let exe = util::compile("crash", Link::Shared);
    for (level, lost_node) in [("2", 1), ("3", 2), ("4", 3)] {
        let dir = tempfile::tempdir().unwrap();
        let cfg = util::config(dir.path(), "group_size = 4");
        let cfg_arg = cfg.to_str().unwrap();
        let out = util::mpirun(4, &exe, &["write", cfg_arg, level, "die"], dir.path());
        assert!(!out.status.success(), "every rank kills itself");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let mut written = util::results(&stdout);
        written.sort_unstable();
        let mut expected: Vec<String> = (0..4)
            .flat_map(|r| {
                (1..=3)
                    .map(move |s| format!("rank {r} checkpoint {s}: 1"))
                    .chain([format!("rank {r} init 0 status 0")])
            })
            .chain(["ready".to_owned()])
            .collect();
        expected.sort_unstable();
        assert_eq!(written, expected, "L{level}: {stdout}");
        assert_eq!(util::restart_keys(&cfg).0, 1);

        // The node's local storage is gone (an inline L4 checkpoint writes none).
        let local = dir.path().join(format!("Local/node{lost_node}"));
        assert_eq!(local.exists(), level != "4", "{}", local.display());
        if local.exists() {
            std::fs::remove_dir_all(&local).unwrap();
        }

        let out = util::mpirun(4, &exe, &["restart", cfg_arg, level], dir.path());
        let stdout = util::success("crash restart", &out);
        let mut restarted = util::results(&stdout);
        restarted.sort_unstable();
        let mut expected: Vec<String> = (0..4)
            .flat_map(|r| {
                [
                    format!("rank {r} init 0 status 1 recover 0 holds checkpoint 3 1 status 0"),
                    format!("rank {r} checkpoint 4: 1"),
                    format!("rank {r} finalize 0"),
                ]
            })
            .collect();
        expected.sort_unstable();
        assert_eq!(restarted, expected, "L{level}: {stdout}");
        assert_eq!(util::restart_keys(&cfg).0, 0);
    }
}

/// A 4-rank run killed after its checkpoints, restarted with the same config on 2 or 8 ranks:
/// `FTI_Init` returns `FTI_NSCS` on every rank, names both counts, and nothing is written (the
/// config file included); on 4 ranks it then restarts.
#[test]
fn a_restart_on_another_number_of_ranks_fails_fti_init_everywhere() {
    let exe = util::compile("crash", Link::Shared);
    let dir = tempfile::tempdir().unwrap();
    let cfg = util::config(dir.path(), "group_size = 2");
    let cfg_arg = cfg.to_str().unwrap();
    let out = util::mpirun(4, &exe, &["write", cfg_arg, "2", "die"], dir.path());
    assert!(!out.status.success(), "every rank kills itself");
    let before = files_below(dir.path());
    for np in [2, 8] {
        let out = util::mpirun(np, &exe, &["restart", cfg_arg, "2"], dir.path());
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let results = util::results(&stdout);
        for rank in 0..np {
            assert!(
                results
                    .iter()
                    .any(|l| l.starts_with(&format!("rank {rank} init -1 "))),
                "{np} ranks, rank {rank}: {stdout}\n{stderr}"
            );
        }
        assert!(
            stderr.contains("was checkpointed by 4 ranks, this run has"),
            "{stderr}"
        );
        assert!(
            files_below(dir.path()) == before,
            "{np} ranks wrote something"
        );
    }
    let out = util::mpirun(4, &exe, &["restart", cfg_arg, "2"], dir.path());
    let stdout = util::success("crash restart", &out);
    assert!(
        util::results(&stdout)
            .iter()
            .any(|l| l.starts_with("rank 0 init 0 status 1 recover 0 holds checkpoint 3 1")),
        "{stdout}"
    );
}
