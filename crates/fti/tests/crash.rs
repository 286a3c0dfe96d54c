//! Crash safety with real processes killed by SIGKILL: at every named step of the publish
//! protocol, and at random times during a stream of checkpoints. After each kill, recovery
//! must return exactly the data of checkpoint k or k-1: never a mix, never nothing.
//!
//! The child is this test binary itself, re-run with `FTI_CRASH_ROOT` set so that
//! `crash_child` does the checkpointing.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use fti::{Config, Fti, Level, Status, Var};

fn config(root: &Path, keep: usize) -> Config {
    Config {
        ckpt_dir: root.join("Local"),
        glbl_dir: root.join("Global"),
        meta_dir: root.join("Meta"),
        keep_ckpts: keep,
        verbosity: 3,
        ..Config::default()
    }
}

/// Checkpoint `k`'s content: its id, and `size(k)` bytes all equal to `k as u8`.
fn size(k: i32) -> usize {
    4096 + 1500 * (k as usize % 4)
}

/// The child: checkpoints 1, 2, 3, ... (L1, every third at L4), printing `DONE k` after each.
#[test]
fn crash_child() {
    let Ok(root) = std::env::var("FTI_CRASH_ROOT") else {
        return;
    };
    let keep = std::env::var("FTI_CRASH_KEEP").map_or(1, |k| k.parse().unwrap());
    let count: i32 = std::env::var("FTI_CRASH_COUNT").map_or(i32::MAX, |c| c.parse().unwrap());
    let mut fti = Fti::init(config(Path::new(&root), keep)).unwrap();
    for k in 1..=count {
        let mut id = k as u64;
        let mut data = vec![k as u8; size(k)];
        let level = if k % 3 == 0 { Level::L4 } else { Level::L1 };
        fti.checkpoint(k, level, &[Var::new(0, &mut id), Var::slice(1, &mut data)])
            .unwrap();
        println!("DONE {k}");
    }
}

fn spawn_child(
    root: &Path,
    keep: usize,
    count: Option<i32>,
    stop_at: Option<&str>,
) -> std::process::Child {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["--exact", "crash_child", "--nocapture", "--test-threads=1"])
        .env("FTI_CRASH_ROOT", root)
        .env("FTI_CRASH_KEEP", keep.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(c) = count {
        cmd.env("FTI_CRASH_COUNT", c.to_string());
    }
    if let Some(s) = stop_at {
        cmd.env("FTI_STOP_AT", s);
    }
    cmd.spawn().unwrap()
}

/// Recovers in this process and checks the data is exactly one checkpoint's; returns its id.
fn recover_exact(root: &Path, keep: usize) -> i32 {
    let mut fti = Fti::init(config(root, keep)).unwrap();
    let Status::Restart(info) = fti.status().clone() else {
        panic!("nothing to recover: {:?}", fti.skipped());
    };
    let mut id = 0u64;
    let mut data = vec![0u8; fti.stored_size(1).unwrap() as usize];
    fti.recover(&mut [Var::new(0, &mut id), Var::slice(1, &mut data)])
        .unwrap();
    assert_eq!(id, info.id as u64, "id variable and file name disagree");
    assert_eq!(
        data.len(),
        size(info.id),
        "checkpoint {} has the size of another",
        info.id
    );
    assert!(
        data.iter().all(|&b| b == info.id as u8),
        "checkpoint {} mixes data",
        info.id
    );
    info.id
}

#[test]
fn kill_at_every_step_of_the_publish_protocol() {
    for keep in [1, 3] {
        for (i, step) in fti::store::STEPS.iter().enumerate() {
            let root = tempfile::tempdir().unwrap();
            // Stop during checkpoint 3 (an L4 one, which also retires the L1 files).
            let mut child = spawn_child(root.path(), keep, None, Some(&format!("{step}:3")));
            let stderr = BufReader::new(child.stderr.take().unwrap());
            let mut stopped = false;
            for line in stderr.lines() {
                if line.unwrap() == format!("FTI_STOPPED {step}") {
                    stopped = true;
                    break;
                }
            }
            child.kill().unwrap();
            child.wait().unwrap();
            assert!(stopped, "child never reached step {step}");
            let got = recover_exact(root.path(), keep);
            // Before the rename the previous checkpoint is the newest; from it on, the new one.
            let expected = if i < 2 { 2 } else { 3 };
            assert_eq!(got, expected, "killed at {step} (keep {keep})");
        }
    }
}

#[test]
fn kill_at_random_times_during_a_stream_of_checkpoints() {
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    for round in 0..12 {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let delay = Duration::from_millis(20 + seed % 300);
        let keep = 1 + (round % 3);
        let root = tempfile::tempdir().unwrap();
        let mut child = spawn_child(root.path(), keep, None, None);
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let reader = std::thread::spawn(move || {
            let mut done = 0;
            for line in stdout.lines() {
                let Ok(line) = line else { break };
                if let Some(k) = line.split("DONE ").nth(1) {
                    done = k.parse::<i32>().unwrap();
                }
            }
            done
        });
        std::thread::sleep(delay);
        child.kill().unwrap();
        child.wait().unwrap();
        let done = reader.join().unwrap();
        if done == 0
            && matches!(
                Fti::init(config(root.path(), keep)).unwrap().status(),
                Status::Fresh
            )
        {
            // Killed before the first checkpoint was published: starting fresh is right.
            continue;
        }
        let got = recover_exact(root.path(), keep);
        assert!(
            got == done || got == done + 1,
            "round {round}: last reported {done}, recovered {got}"
        );
    }
}
