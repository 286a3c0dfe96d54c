//! Asynchronous checkpoints (`async_ckpt = 1`): the call copies the variables and returns; the
//! file is written, hashed and published in the background. The bytes saved are the ones at
//! the call, the files equal synchronous ones (but for the timestamp and `myHash`), a
//! checkpoint counts once complete, background errors reach the next call, and a process
//! killed with a checkpoint in flight restarts from the last one it saw complete or that one.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::util::unwritable;
use unwritable::make_unwritable;

use fti::{Config, Fti, Level, Status, Threads, Var};

fn config(root: &Path, async_ckpt: bool) -> Config {
    Config {
        async_ckpt,
        ..crate::util::config(root)
    }
}

fn data(k: i32, n: usize) -> Vec<u32> {
    (0..n as u32)
        .map(|j| j.wrapping_mul(2_654_435_761) ^ k as u32)
        .collect()
}

/// The bytes of a checkpoint file that do not depend on when it was written: everything but
/// `FB.myHash` and `FB.timestamp`.
fn timeless(path: &Path) -> Vec<u8> {
    let mut bytes = std::fs::read(path).unwrap();
    let fb = ftiff::raw::fb::MY_HASH;
    bytes[fb..fb + 16].fill(0);
    let ts = ftiff::raw::fb::TIMESTAMP;
    bytes[ts..ts + 8].fill(0);
    bytes
}

/// Writes checkpoints 1..=3 (sizes changing) at `level`; returns the files of the last one.
fn run(root: &Path, async_ckpt: bool, level: Level) -> PathBuf {
    let mut fti = Fti::init(config(root, async_ckpt)).unwrap();
    let mut path = None;
    for k in 1..=3 {
        let mut a = data(k, 1000 + 300 * k as usize);
        let mut b = data(-k, 5000);
        let info = fti
            .checkpoint(k, level, &[Var::slice(0, &mut a), Var::slice(1, &mut b)])
            .unwrap();
        path = Some(info.path);
    }
    fti.wait().unwrap();
    assert_eq!(fti.last_checkpoint().unwrap().id, 3);
    let path = path.unwrap();
    drop(fti);
    path
}

#[test]
fn files_equal_synchronous_ones_at_l1_and_l4() {
    for level in [Level::L1, Level::L4] {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let sync = run(a.path(), false, level);
        let asynchronous = run(b.path(), true, level);
        assert_eq!(timeless(&sync), timeless(&asynchronous), "{level}");
        let map = ftiff::MappedFile::open(&asynchronous).unwrap();
        let ckpt = ftiff::Checkpoint::verified(&map, &|_| {}).unwrap();
        assert_eq!(ckpt.read_var(1).unwrap().len(), 20_000);
    }
}

/// Every checkpoint file below `dir` by name (`Ckpt3-Rank0.fti`, `Ckpt3-Pcof1.fti`, ...): exec ids
/// differ between runs, names do not.
fn fti_files(dir: &Path) -> std::collections::BTreeMap<String, PathBuf> {
    crate::util::files::files_below(dir)
        .into_iter()
        .map(|(p, _, _)| p)
        .map(|p| (p.file_name().unwrap().to_string_lossy().into_owned(), p))
        .filter(|(name, _)| name.starts_with("Ckpt") && name.ends_with(".fti"))
        .collect()
}

/// The config of four ranks in one group, each its own node.
fn group_config(root: &Path, async_ckpt: bool) -> Config {
    Config {
        group_size: 4,
        node_size: 1,
        local_test: true,
        ..config(root, async_ckpt)
    }
}

/// Four ranks (threads; with `background`, a second communicator for the background thread,
/// as MPI with `MPI_THREAD_MULTIPLE` gives; without, as a plain `MPI_Init`) write checkpoints
/// 1..=3 at `level`, sizes changing, and are dropped without finalize. Returns each rank's
/// `timestamp` of each call (0: the call returned before the file was complete).
fn run_ranks(root: &Path, async_ckpt: bool, background: bool, level: Level) -> Vec<Vec<i64>> {
    let cfg = group_config(root, async_ckpt);
    let comms = if background {
        Threads::new(4, "host")
    } else {
        Threads::without_background(4, "host")
    };
    std::thread::scope(|s| {
        let ranks: Vec<_> = comms
            .into_iter()
            .map(|comm| {
                let cfg = cfg.clone();
                s.spawn(move || {
                    let rank = fti::Comm::rank(&comm) as i32;
                    let mut fti = Fti::init_with(cfg, Box::new(comm)).unwrap();
                    (1..=3)
                        .map(|k| {
                            let mut a = data(k * 10 + rank, 1000 + 300 * k as usize);
                            let mut b = data(-k, 5000 + 7 * rank as usize);
                            let vars = [Var::slice(0, &mut a), Var::slice(1, &mut b)];
                            fti.checkpoint(k, level, &vars).unwrap().timestamp
                        })
                        .collect()
                })
            })
            .collect();
        ranks.into_iter().map(|r| r.join().unwrap()).collect()
    })
}

/// At every level, with and without a background communicator, an asynchronous checkpoint
/// returns at once and leaves the same files as a synchronous one: own files and partner
/// copies equal but for the timestamp and `myHash`; the Reed-Solomon files (whose code covers
/// the timestamps) of the same size, and good enough to rebuild a lost rank's file.
#[test]
fn files_equal_synchronous_ones_at_every_level() {
    for level in Level::ALL {
        for background in [true, false] {
            let what = format!("{level}, background communicator: {background}");
            let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
            let sync = run_ranks(a.path(), false, background, level);
            assert!(sync.iter().flatten().all(|&t| t > 0), "{what}: {sync:?}");
            let asynchronous = run_ranks(b.path(), true, background, level);
            assert!(
                asynchronous.iter().flatten().all(|&t| t == 0),
                "{what}: every call returns before its file is complete: {asynchronous:?}"
            );
            let (sync, asynchronous) = (fti_files(a.path()), fti_files(b.path()));
            assert_eq!(
                sync.keys().collect::<Vec<_>>(),
                asynchronous.keys().collect::<Vec<_>>(),
                "{what}"
            );
            for (name, path) in &sync {
                let other = &asynchronous[name];
                if name.contains("RSed") {
                    let len = |p: &Path| std::fs::metadata(p).unwrap().len();
                    assert_eq!(len(path), len(other), "{what}: {name}");
                } else {
                    assert!(timeless(path) == timeless(other), "{what}: {name}");
                }
            }
            if level == Level::L3 {
                // Rank 1's node is lost: its file comes back from the others and the code.
                std::fs::remove_dir_all(b.path().join("Local/node1")).unwrap();
                let cfg = group_config(b.path(), true);
                std::thread::scope(|s| {
                    for comm in Threads::new(4, "host") {
                        let cfg = cfg.clone();
                        s.spawn(move || {
                            let rank = fti::Comm::rank(&comm) as i32;
                            let mut fti = Fti::init_with(cfg, Box::new(comm)).unwrap();
                            let mut a = vec![0u32; 1900];
                            let mut b = vec![0u32; 5000 + 7 * rank as usize];
                            let vars = &mut [Var::slice(0, &mut a), Var::slice(1, &mut b)];
                            assert_eq!(fti.recover(vars).unwrap().id, 3);
                            assert!(a == data(30 + rank, 1900), "rank {rank}");
                            assert!(b == data(-3, 5000 + 7 * rank as usize), "rank {rank}");
                        });
                    }
                });
            }
        }
    }
}

#[test]
fn the_bytes_saved_are_those_at_the_call_and_count_once_complete() {
    let root = tempfile::tempdir().unwrap();
    let mut fti = Fti::init(config(root.path(), true)).unwrap();
    let mut x = data(1, 100_000);
    let info = fti
        .checkpoint(1, Level::L1, &[Var::slice(0, &mut x)])
        .unwrap();
    // The application goes on at once: its next iteration changes the variable.
    x.iter_mut().for_each(|v| *v = 0);
    fti.wait().unwrap();
    let last = fti.last_checkpoint().unwrap();
    assert_eq!((last.id, &last.path), (1, &info.path));
    assert!(last.timestamp > 0);
    drop(fti);
    let mut fti = Fti::init(config(root.path(), true)).unwrap();
    assert!(matches!(fti.status(), Status::Restart(_)));
    let mut got = vec![0u32; 100_000];
    fti.recover(&mut [Var::slice(0, &mut got)]).unwrap();
    assert_eq!(got, data(1, 100_000));
    fti.finalize().unwrap();
}

/// Four ranks (threads) checkpoint asynchronously; every rank restarts from the last one.
#[test]
fn four_ranks_checkpoint_asynchronously() {
    let root = tempfile::tempdir().unwrap();
    let cfg = Config {
        group_size: 2,
        ..config(root.path(), true)
    };
    let run = |restart: bool| {
        std::thread::scope(|s| {
            for comm in Threads::new(4, "host") {
                let cfg = cfg.clone();
                s.spawn(move || {
                    let rank = fti::Comm::rank(&comm) as i32;
                    let mut fti = Fti::init_with(cfg, Box::new(comm)).unwrap();
                    if restart {
                        let mut got = vec![0u32; 3000];
                        let info = fti.recover(&mut [Var::slice(0, &mut got)]).unwrap();
                        assert_eq!((info.id, got), (4, data(4 * 10 + rank, 3000)));
                        fti.finalize().unwrap();
                        return;
                    }
                    for k in 1..=4 {
                        let level = if k % 2 == 0 { Level::L4 } else { Level::L1 };
                        let mut v = data(k * 10 + rank, 3000);
                        fti.checkpoint(k, level, &[Var::slice(0, &mut v)]).unwrap();
                    }
                    // Dropped without finalize (a crash after the last call returned): the
                    // drop completes the checkpoint in flight.
                });
            }
        });
    };
    run(false);
    run(true);
}

/// A failure in the background (here: the config file cannot record the restart) is
/// reported by the next call, and by `wait`.
#[test]
fn a_background_error_reaches_the_next_call() {
    let root = tempfile::tempdir().unwrap();
    let conf = root.path().join("conf");
    std::fs::create_dir_all(&conf).unwrap();
    let path = conf.join("config.fti");
    let r = root.path().display();
    std::fs::write(
        &path,
        format!("[basic]\nckpt_dir = {r}/Local\nglbl_dir = {r}/Global\nmeta_dir = {r}/Meta\nckpt_io = 3\nverbosity = 3\nasync_ckpt = 1\n[restart]\nfailure = 0\n"),
    )
    .unwrap();
    let undo = make_unwritable(&conf);
    let mut fti = Fti::init(Config::from_file(&path).unwrap()).unwrap();
    let mut x = data(1, 1000);
    let first = fti.checkpoint(1, Level::L1, &[Var::slice(0, &mut x)]);
    assert!(first.is_ok(), "the call only stages: {first:?}");
    let second = fti.checkpoint(2, Level::L1, &[Var::slice(0, &mut x)]);
    let err = second
        .expect_err("checkpoint 1 failed in the background")
        .to_string();
    assert!(err.contains(&path.display().to_string()), "{err}");
    assert!(fti.last_checkpoint().is_none());
    undo();
    fti.checkpoint(3, Level::L1, &[Var::slice(0, &mut x)])
        .unwrap();
    fti.wait().unwrap();
    assert_eq!(fti.last_checkpoint().unwrap().id, 3);
    assert!(std::fs::read_to_string(&path).unwrap().contains("failure"));
    fti.finalize().unwrap();
}

const KILL_SIZE: usize = 1 << 19;

/// The child of [`killed_with_a_checkpoint_in_flight`]: asynchronous checkpoints 1, 2, ...;
/// after each call returns it prints `COMPLETE k-1` (the call waited for the previous one).
#[test]
fn async_child() {
    let Ok(root) = std::env::var("FTI_ASYNC_CHILD") else {
        return;
    };
    let mut fti = Fti::init(config(Path::new(&root), true)).unwrap();
    for k in 1.. {
        let mut v = data(k, KILL_SIZE);
        fti.checkpoint(k, Level::L1, &[Var::slice(0, &mut v)])
            .unwrap();
        println!("COMPLETE {}", k - 1);
    }
}

/// SIGKILL at random instants with a checkpoint in flight: the restart returns the last
/// checkpoint the child saw complete, or the one after it, with exact data.
#[test]
fn killed_with_a_checkpoint_in_flight() {
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    for round in 0..8 {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let root = tempfile::tempdir().unwrap();
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "async_ckpt::async_child",
                "--nocapture",
                "--test-threads=1",
                "-q",
            ])
            .env("FTI_ASYNC_CHILD", root.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let reader = std::thread::spawn(move || {
            let mut seen = 0;
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Some(k) = line.rfind("COMPLETE ").map(|i| &line[i + 9..]) {
                    seen = k.trim().parse().unwrap();
                }
            }
            seen
        });
        std::thread::sleep(Duration::from_millis(100 + seed % 400));
        child.kill().unwrap();
        child.wait().unwrap();
        let seen: i32 = reader.join().unwrap();
        let mut fti = Fti::init(config(root.path(), true)).unwrap();
        match fti.status().clone() {
            Status::Restart(info) => {
                assert!(
                    info.id == seen || info.id == seen + 1,
                    "round {round}: saw {seen} complete, restarted from {}",
                    info.id
                );
                let mut got = vec![0u32; KILL_SIZE];
                fti.recover(&mut [Var::slice(0, &mut got)]).unwrap();
                assert!(got == data(info.id, KILL_SIZE), "round {round}: data");
            }
            Status::Fresh => assert_eq!(seen, 0, "round {round}: checkpoint {seen} lost"),
            other => panic!("{other:?}"),
        }
    }
}

/// Differential checkpoints run asynchronously too: each call returns at once, the files
/// equal those of synchronous differential checkpoints (but for the timestamp and `myHash`),
/// only the changed blocks are written, and the restart recovers the last one exactly.
#[test]
fn differential_checkpoints_run_asynchronously() {
    let run = |root: &Path, async_ckpt: bool| -> (Vec<i64>, u64, u64) {
        let cfg = Config {
            dcp: true,
            dcp_block_size: 4096,
            ..config(root, async_ckpt)
        };
        let mut fti = Fti::init(cfg).unwrap();
        let mut x = data(1, 200_000);
        let mut stamps = Vec::new();
        for k in 1..=5 {
            // A few blocks change between checkpoints.
            x[k as usize * 37_000 % 200_000] ^= k as u32;
            let info = fti
                .checkpoint(k, Level::L1, &[Var::slice(0, &mut x)])
                .unwrap();
            stamps.push(info.timestamp);
        }
        fti.wait().unwrap();
        let last = fti.last_checkpoint().unwrap().clone();
        assert_eq!(last.id, 5);
        (stamps, last.bytes_written, last.size)
    };
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (sync_stamps, sync_written, _) = run(a.path(), false);
    assert!(sync_stamps.iter().all(|&t| t > 0));
    let (stamps, written, size) = run(b.path(), true);
    assert!(stamps.iter().all(|&t| t == 0), "{stamps:?}");
    assert!(written < size / 10, "{written} of {size} bytes written");
    assert_eq!(written, sync_written);
    let (sync, asynchronous) = (fti_files(a.path()), fti_files(b.path()));
    // Checkpoints 4 and 5: `keep_ckpts = 2` for differential checkpoints.
    assert_eq!(sync.len(), 2, "{sync:?}");
    assert_eq!(
        sync.keys().collect::<Vec<_>>(),
        asynchronous.keys().collect::<Vec<_>>()
    );
    for (name, path) in &sync {
        assert!(timeless(path) == timeless(&asynchronous[name]), "{name}");
    }
    let mut fti = Fti::init(config(b.path(), true)).unwrap();
    let mut got = vec![0u32; 200_000];
    assert_eq!(fti.recover(&mut [Var::slice(0, &mut got)]).unwrap().id, 5);
    let mut want = data(1, 200_000);
    for k in 1..=5 {
        want[k as usize * 37_000 % 200_000] ^= k as u32;
    }
    assert!(got == want);
}

/// Data beyond the staging budget (`async_mem_mib`) go through a pipeline: the call returns
/// once the last piece is copied, the file equals a synchronous one (but for the timestamp
/// and `myHash`), across a layout that grows, and the restart recovers it exactly.
#[test]
fn checkpoints_beyond_the_staging_budget_are_pipelined() {
    let run = |root: &Path, async_ckpt: bool| -> Vec<i64> {
        let cfg = Config {
            async_mem_mib: Some(1),
            ..config(root, async_ckpt)
        };
        let mut fti = Fti::init(cfg).unwrap();
        let stamps = (1..=3)
            .map(|k| {
                // 3.2 to 4.4 MiB: beyond the 1 MiB budget; variable 0 grows.
                let mut a = data(k, 300_000 + 150_000 * k as usize);
                let mut b = data(-k, 500_000);
                let vars = [Var::slice(0, &mut a), Var::slice(1, &mut b)];
                fti.checkpoint(k, Level::L1, &vars).unwrap().timestamp
            })
            .collect();
        fti.wait().unwrap();
        assert_eq!(fti.last_checkpoint().unwrap().id, 3);
        stamps
    };
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    assert!(run(a.path(), false).iter().all(|&t| t > 0));
    let stamps = run(b.path(), true);
    assert!(stamps.iter().all(|&t| t == 0), "{stamps:?}");
    let (sync, asynchronous) = (fti_files(a.path()), fti_files(b.path()));
    assert_eq!(sync.keys().collect::<Vec<_>>(), ["Ckpt3-Rank0.fti"]);
    assert!(timeless(&sync["Ckpt3-Rank0.fti"]) == timeless(&asynchronous["Ckpt3-Rank0.fti"]));
    let mut fti = Fti::init(config(b.path(), true)).unwrap();
    let mut x = vec![0u32; 750_000];
    let mut y = vec![0u32; 500_000];
    let info = fti
        .recover(&mut [Var::slice(0, &mut x), Var::slice(1, &mut y)])
        .unwrap();
    assert_eq!(info.id, 3);
    assert!(x == data(3, 750_000) && y == data(-3, 500_000));
}

/// A pipelined checkpoint whose background write fails does not leave the call waiting for
/// a writer that is gone: the call returns and the error comes with the next one.
#[test]
fn a_pipelined_checkpoint_whose_write_fails_returns() {
    let root = tempfile::tempdir().unwrap();
    let cfg = Config {
        async_mem_mib: Some(1),
        ..config(root.path(), true)
    };
    let mut fti = Fti::init(cfg).unwrap();
    let mut x = data(1, 2_000_000);
    fti.checkpoint(1, Level::L1, &[Var::slice(0, &mut x)])
        .unwrap();
    fti.wait().unwrap();
    // The local directory refuses new files: checkpoint 2's write fails at once.
    let undo = make_unwritable(&root.path().join("Local"));
    let tmp = fti.dirs().tmp_dir(Level::L1);
    let _ = std::fs::remove_dir(&tmp);
    let undo_tmp = make_unwritable(tmp.parent().unwrap());
    let second = fti.checkpoint(2, Level::L1, &[Var::slice(0, &mut x)]);
    let waited = fti.wait();
    undo_tmp();
    undo();
    assert!(
        second.is_err() || waited.is_err(),
        "the failed write is reported"
    );
    assert_eq!(fti.last_checkpoint().unwrap().id, 1);
}

/// The fast integrity mode (`fast_integrity = 1`) runs asynchronously too: the call returns
/// at once, the file equals a synchronous one but for the timestamp and `myHash`, and the
/// restart verifies and recovers it.
#[test]
fn fast_integrity_checkpoints_run_asynchronously() {
    let run = |root: &Path, async_ckpt: bool| -> i64 {
        let cfg = Config {
            fast_integrity: true,
            ..config(root, async_ckpt)
        };
        let mut fti = Fti::init(cfg).unwrap();
        let mut x = data(7, 300_000);
        let stamp = fti
            .checkpoint(1, Level::L1, &[Var::slice(0, &mut x)])
            .unwrap()
            .timestamp;
        fti.wait().unwrap();
        stamp
    };
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    assert!(run(a.path(), false) > 0);
    assert_eq!(run(b.path(), true), 0);
    let (sync, asynchronous) = (fti_files(a.path()), fti_files(b.path()));
    assert!(timeless(&sync["Ckpt1-Rank0.fti"]) == timeless(&asynchronous["Ckpt1-Rank0.fti"]));
    let mut fti = Fti::init(config(b.path(), true)).unwrap();
    let mut got = vec![0u32; 300_000];
    assert_eq!(fti.recover(&mut [Var::slice(0, &mut got)]).unwrap().id, 1);
    assert!(got == data(7, 300_000));
}
