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
use ftiff::VarSize;

/// How the child checkpoints: full files, differential updates, or incremental checkpoints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Full,
    Dcp,
    Icp,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Full => "full",
            Mode::Dcp => "dcp",
            Mode::Icp => "icp",
        }
    }

    fn from_env() -> Mode {
        match std::env::var("FTI_CRASH_MODE").as_deref() {
            Ok("dcp") => Mode::Dcp,
            Ok("icp") => Mode::Icp,
            _ => Mode::Full,
        }
    }
}

fn config(root: &Path, keep: usize, mode: Mode) -> Config {
    Config {
        keep_ckpts: keep,
        dcp: mode == Mode::Dcp,
        dcp_block_size: 4096,
        ..crate::util::config(root)
    }
}

/// Checkpoint `k`'s content: `size(k)` bytes where block b (4 KiB) holds `b % 251`, xored with
/// `k` in one block out of five (a different fifth each time), so consecutive checkpoints
/// share most blocks and any mix of two is visible.
fn content(k: i32) -> Vec<u8> {
    (0..size(k))
        .map(|j| {
            let b = j / 4096;
            (b % 251) as u8 ^ if b % 5 == k as usize % 5 { k as u8 } else { 0 }
        })
        .collect()
}

/// Size of checkpoint `k`'s data.
fn size(k: i32) -> usize {
    40_000 + 1500 * (k as usize % 4)
}

/// The child: checkpoints 1, 2, 3, ... (L1, every third at L4 except with dCP), printing
/// `DONE k` after each.
#[test]
fn crash_child() {
    let Ok(root) = std::env::var("FTI_CRASH_ROOT") else {
        return;
    };
    let keep = std::env::var("FTI_CRASH_KEEP").map_or(1, |k| k.parse().unwrap());
    let count: i32 = std::env::var("FTI_CRASH_COUNT").map_or(i32::MAX, |c| c.parse().unwrap());
    let mode = Mode::from_env();
    let mut fti = Fti::init(config(Path::new(&root), keep, mode)).unwrap();
    for k in 1..=count {
        let mut id = k as u64;
        let mut data = content(k);
        // Differential checkpoints stay on one level, so each can update an older file.
        let level = if k % 3 == 0 && mode != Mode::Dcp {
            Level::L4
        } else {
            Level::L1
        };
        if mode == Mode::Icp {
            let sizes = [
                VarSize { id: 0, size: 8 },
                VarSize {
                    id: 1,
                    size: data.len() as u64,
                },
            ];
            fti.init_icp(k, level, &sizes).unwrap();
            fti.add_var_icp(&Var::slice(1, &mut data)).unwrap();
            fti.add_var_icp(&Var::new(0, &mut id)).unwrap();
            fti.finalize_icp().unwrap();
        } else {
            fti.checkpoint(k, level, &[Var::new(0, &mut id), Var::slice(1, &mut data)])
                .unwrap();
        }
        println!("DONE {k}");
    }
}

fn spawn_child(
    root: &Path,
    keep: usize,
    mode: Mode,
    count: Option<i32>,
    stop_at: Option<&str>,
) -> std::process::Child {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([
        "--exact",
        "crash::crash_child",
        "--nocapture",
        "--test-threads=1",
    ])
    .env("FTI_CRASH_ROOT", root)
    .env("FTI_CRASH_KEEP", keep.to_string())
    .env("FTI_CRASH_MODE", mode.name())
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
fn recover_exact(root: &Path, keep: usize, mode: Mode) -> i32 {
    let mut fti = Fti::init(config(root, keep, mode)).unwrap();
    let Status::Restart(info) = fti.status().clone() else {
        panic!("nothing to recover: {:?}", fti.skipped());
    };
    let mut id = 0u64;
    let mut data = vec![0u8; fti.stored_size(1).unwrap() as usize];
    fti.recover(&mut [Var::new(0, &mut id), Var::slice(1, &mut data)])
        .unwrap();
    assert_eq!(id, info.id as u64, "id variable and file name disagree");
    assert!(
        data == content(info.id),
        "checkpoint {} holds other data (a mix?)",
        info.id
    );
    info.id
}

/// Kills the child when it reaches `step` for the `nth` time; returns what recovery finds.
fn kill_at(root: &Path, keep: usize, mode: Mode, step: &str, nth: usize) -> i32 {
    let mut child = spawn_child(root, keep, mode, None, Some(&format!("{step}:{nth}")));
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
    assert!(stopped, "child never reached step {step} ({mode:?})");
    recover_exact(root, keep, mode)
}

#[test]
fn kill_at_every_step_of_the_publish_protocol() {
    for mode in [Mode::Full, Mode::Icp] {
        for keep in [1, 3] {
            for (i, step) in fti::files::STEPS.iter().enumerate() {
                let root = tempfile::tempdir().unwrap();
                // Stop during checkpoint 3 (an L4 one, which also retires the L1 files).
                let got = kill_at(root.path(), keep, mode, step, 3);
                // Before the rename the previous checkpoint is the newest; from it on, the new one.
                let expected = if i < 2 { 2 } else { 3 };
                assert_eq!(got, expected, "killed at {step} (keep {keep}, {mode:?})");
            }
        }
    }
}

/// A differential checkpoint first moves the older file it updates out of the published
/// names ("reused"), then goes through the same steps.
#[test]
fn kill_at_every_step_of_a_differential_checkpoint() {
    for keep in [2, 3] {
        // Checkpoint `keep + 2` updates checkpoint 2's file in place.
        let k = keep as i32 + 2;
        let steps = std::iter::once("reused").chain(fti::files::STEPS.iter().copied());
        for (i, step) in steps.enumerate() {
            let root = tempfile::tempdir().unwrap();
            // "reused" happens once per differential checkpoint, the other steps once per
            // checkpoint: stop during checkpoint k either way.
            let nth = if step == "reused" {
                k as usize - keep
            } else {
                k as usize
            };
            let got = kill_at(root.path(), keep, Mode::Dcp, step, nth);
            let expected = if i < 3 { k - 1 } else { k };
            assert_eq!(got, expected, "killed at {step} (keep {keep})");
        }
    }
}

/// With one checkpoint kept, checkpoint 4 (L1) is written into the rank's spare, checkpoint
/// 1's file retired by checkpoint 2: killed after it took the spare ("spare") or at any step
/// of its publication, recovery finds checkpoint 3 or 4 whole, never the spare's old content.
#[test]
fn kill_while_a_spare_is_overwritten() {
    let steps = std::iter::once("spare").chain(fti::files::STEPS.iter().copied());
    for (i, step) in steps.enumerate() {
        let root = tempfile::tempdir().unwrap();
        // "spare" is first reached by checkpoint 4 (checkpoint 3 is an L4 one).
        let nth = if step == "spare" { 1 } else { 4 };
        let got = kill_at(root.path(), 1, Mode::Full, step, nth);
        let expected = if i < 3 { 3 } else { 4 };
        assert_eq!(got, expected, "killed at {step}");
    }
}

#[test]
fn kill_at_random_times_during_a_stream_of_checkpoints() {
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    for round in 0..18 {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let delay = Duration::from_millis(20 + seed % 300);
        // Every mode with every keep value.
        let mode = [Mode::Full, Mode::Dcp, Mode::Icp][round % 3];
        let keep = 1 + (round / 3) % 3;
        let keep = if mode == Mode::Dcp { keep.max(2) } else { keep };
        let root = tempfile::tempdir().unwrap();
        let mut child = spawn_child(root.path(), keep, mode, None, None);
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
                Fti::init(config(root.path(), keep, mode)).unwrap().status(),
                Status::Fresh
            )
        {
            // Killed before the first checkpoint was published: starting fresh is right.
            continue;
        }
        let got = recover_exact(root.path(), keep, mode);
        assert!(
            got == done || got == done + 1,
            "round {round} ({mode:?}): last reported {done}, recovered {got}"
        );
    }
}
