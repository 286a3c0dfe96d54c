//! Paths where a user's data could be deleted, lost or handed back wrong: an `exec_id` that
//! is a path, a config file that cannot record the restart, a restart on another number of
//! ranks, a variable's metadata that lies, a FIFO named like a checkpoint.
//!
//! The FIFO case runs in a child process (this test binary re-run with `FTI_TRUST_CHILD` set),
//! killed if it hangs.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::util::files;
use crate::util::unwritable;
use files::files_below;
use unwritable::make_unwritable;

use fti::{Config, Error, Fti, Level, Status, Threads, Var};

use crate::util::config;

/// A config file under `root/conf/` pointing at `root`'s directories, with `restart` as its
/// `[restart]` section.
fn config_file(root: &Path, restart: &str) -> PathBuf {
    let conf = root.join("conf");
    std::fs::create_dir_all(&conf).unwrap();
    let path = conf.join("config.fti");
    let r = root.display();
    std::fs::write(
        &path,
        format!(
            "[basic]\nckpt_dir = {r}/Local\nglbl_dir = {r}/Global\nmeta_dir = {r}/Meta\nckpt_io = 3\nverbosity = 3\n\n[restart]\n{restart}\n"
        ),
    )
    .unwrap();
    path
}

#[test]
fn a_restart_exec_id_that_is_a_path_is_a_config_error() {
    let root = tempfile::tempdir().unwrap();
    // A directory of the user's, outside the checkpoint directories.
    let victim = root.path().join("victim");
    std::fs::create_dir_all(victim.join("l1")).unwrap();
    std::fs::write(victim.join("thesis.tex"), b"years").unwrap();
    let before = files_below(&victim);
    let absolute = victim.display().to_string();
    for exec_id in [
        "../victim",
        "../../victim",
        absolute.as_str(),
        ".",
        "..",
        "a/b",
    ] {
        for failure in [1, 2] {
            let path = config_file(
                root.path(),
                &format!("failure = {failure}\nexec_id = {exec_id}"),
            );
            let err = Config::from_file(&path).unwrap_err();
            assert!(
                matches!(&err, Error::Config { line: 10, what, .. } if what.contains("one path component")),
                "{exec_id}: {err}"
            );
            // The same config built in code is refused at init, before anything is written.
            let cfg = Config {
                failure: Some(failure),
                exec_id: Some(exec_id.to_owned()),
                ..config(root.path())
            };
            let err = Fti::init(cfg).err().expect("refused");
            assert!(matches!(err, Error::Config { .. }), "{exec_id}: {err}");
        }
    }
    assert!(!root.path().join("Local").exists());
    assert!(!root.path().join("Meta").exists());
    assert_eq!(files_below(&victim), before);
}

#[test]
fn with_failure_0_the_exec_id_is_ignored_and_a_fresh_one_used() {
    let root = tempfile::tempdir().unwrap();
    for exec_id in ["XXXX-XX-XX_XX-XX-XX", "", "../victim"] {
        let path = config_file(root.path(), &format!("failure = 0\nexec_id = {exec_id}"));
        let mut fti = Fti::init(Config::from_file(&path).unwrap()).unwrap();
        assert_ne!(fti.exec_id(), exec_id);
        assert!(fti::check_exec_id(fti.exec_id()).is_ok());
        let mut x = 7u64;
        fti.checkpoint(1, Level::L1, &[Var::new(0, &mut x)])
            .unwrap();
        fti.finalize().unwrap();
    }
    assert!(!root.path().join("victim").exists());
}

/// Finalize removes the files the runtime wrote, and a directory only once it is empty: a
/// file the user put in the run's meta or checkpoint directory stays.
#[test]
fn finalize_never_removes_what_it_did_not_write() {
    let root = tempfile::tempdir().unwrap();
    let mut fti = Fti::init(config(root.path())).unwrap();
    let mut x = 7u64;
    fti.checkpoint(1, Level::L1, &[Var::new(0, &mut x)])
        .unwrap();
    let notes = fti.dirs().meta.join("notes.txt");
    std::fs::write(&notes, b"mine").unwrap();
    let data = fti.dirs().level_dir(Level::L1).join("input.dat");
    std::fs::write(&data, b"mine too").unwrap();
    let (meta, l1) = (fti.dirs().meta.clone(), fti.dirs().level_dir(Level::L1));
    fti.finalize().unwrap();
    assert_eq!(std::fs::read(&notes).unwrap(), b"mine");
    assert_eq!(std::fs::read(&data).unwrap(), b"mine too");
    assert!(!meta.join("Topology.fti").exists());
    assert!(!l1.join("Ckpt1-Rank0.fti").exists());
}

/// A fresh run started while an earlier execution of the same second is on disk, or after a
/// restart that could not recover, gets its own directories: the earlier files stay.
#[test]
fn a_fresh_run_never_writes_into_an_earlier_execution() {
    let root = tempfile::tempdir().unwrap();
    let fresh = Config {
        failure: Some(0),
        ..config(root.path())
    };
    let mut first = Fti::init(fresh.clone()).unwrap();
    let mut x = 1u64;
    first
        .checkpoint(1, Level::L1, &[Var::new(0, &mut x)])
        .unwrap();
    let old = first.exec_id().to_owned();
    let old_file = first.last_checkpoint().unwrap().path.clone();
    drop(first);
    let before = std::fs::read(&old_file).unwrap();

    let mut second = Fti::init(fresh.clone()).unwrap();
    assert_ne!(second.exec_id(), old);
    let mut y = 2u64;
    second
        .checkpoint(1, Level::L1, &[Var::new(0, &mut y)])
        .unwrap();
    second.finalize().unwrap();
    assert_eq!(std::fs::read(&old_file).unwrap(), before);

    // A restart of `old` whose file is corrupt cannot recover: it starts a new execution.
    let mut bytes = before.clone();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(&old_file, &bytes).unwrap();
    let mut third = Fti::init(Config {
        failure: Some(1),
        exec_id: Some(old.clone()),
        ..config(root.path())
    })
    .unwrap();
    assert_eq!(third.status(), &Status::Fresh);
    assert_ne!(third.exec_id(), old);
    third
        .checkpoint(1, Level::L1, &[Var::new(0, &mut y)])
        .unwrap();
    third.finalize().unwrap();
    assert_eq!(std::fs::read(&old_file).unwrap(), bytes);
}

/// Until rank 0 has recorded `failure = 1` in the config file, every checkpoint fails on every
/// rank, naming the config file; the files stay published and the record is retried.
#[test]
fn checkpoints_fail_until_the_restart_is_recorded() {
    let root = tempfile::tempdir().unwrap();
    let path = config_file(root.path(), "failure = 0");
    let undo = make_unwritable(&root.path().join("conf"));
    let data =
        |k: i32, rank: u32| -> Vec<u32> { (0..1000).map(|j| j * (k as u32 + 1) + rank).collect() };
    let outcomes: Vec<Vec<Result<(), String>>> = std::thread::scope(|s| {
        let handles: Vec<_> = Threads::new(2, "host")
            .into_iter()
            .map(|comm| {
                let path = path.clone();
                s.spawn(move || {
                    let rank = fti::Comm::rank(&comm);
                    let mut fti =
                        Fti::init_with(Config::from_file(&path).unwrap(), Box::new(comm)).unwrap();
                    (1..=2)
                        .map(|k| {
                            let mut v = data(k, rank);
                            fti.checkpoint(k, Level::L1, &[Var::slice(0, &mut v)])
                                .map(drop)
                                .map_err(|e| e.to_string())
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    undo();
    let conf = path.display().to_string();
    for (rank, results) in outcomes.iter().enumerate() {
        for r in results {
            let err = r
                .as_ref()
                .expect_err("a checkpoint without a restart record fails");
            assert!(err.contains(&conf), "rank {rank}: {err}");
        }
    }
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("failure = 0"), "{text}");
    // The published files stay: checkpoint 2 of both ranks.
    let l1: Vec<String> = std::fs::read_dir(root.path().join("Local/node0"))
        .unwrap()
        .flatten()
        .flat_map(|exec| std::fs::read_dir(exec.path().join("l1")).unwrap().flatten())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(l1.contains(&"Ckpt2-Rank0.fti".to_owned()), "{l1:?}");

    // Writable again: the next checkpoint records the restart, and a crash after it restarts.
    let mut fti = Fti::init(Config::from_file(&path).unwrap()).unwrap();
    let mut v = data(3, 0);
    let undo = make_unwritable(&root.path().join("conf"));
    assert!(fti
        .checkpoint(3, Level::L1, &[Var::slice(0, &mut v)])
        .is_err());
    undo();
    fti.checkpoint(4, Level::L1, &[Var::slice(0, &mut v)])
        .unwrap();
    drop(fti);
    let cfg = Config::from_file(&path).unwrap();
    assert_eq!(cfg.failure, Some(1));
    let mut fti = Fti::init(cfg).unwrap();
    let mut got = vec![0u32; 1000];
    let info = fti.recover(&mut [Var::slice(0, &mut got)]).unwrap();
    assert_eq!((info.id, got), (4, data(3, 0)));
}

/// Runs `ranks` threads as the ranks of one run, each calling `f(rank, config)`.
fn threads<T: Send>(
    ranks: u32,
    cfg: &Config,
    f: impl Fn(u32, Config, Threads) -> T + Sync,
) -> Vec<T> {
    std::thread::scope(|s| {
        let handles: Vec<_> = Threads::new(ranks, "host")
            .into_iter()
            .map(|comm| {
                let (cfg, f) = (cfg.clone(), &f);
                s.spawn(move || f(fti::Comm::rank(&comm), cfg, comm))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

/// A checkpoint of 4 ranks restarted on 2 or 8 fails on every rank with both counts, and
/// writes nothing.
#[test]
fn a_restart_on_another_number_of_ranks_fails_everywhere_and_writes_nothing() {
    let root = tempfile::tempdir().unwrap();
    let cfg = Config {
        group_size: 2,
        ..config(root.path())
    };
    let execs = threads(4, &cfg, |rank, cfg, comm| {
        let mut fti = Fti::init_with(cfg, Box::new(comm)).unwrap();
        let mut v = vec![rank; 100];
        fti.checkpoint(1, Level::L2, &[Var::slice(0, &mut v)])
            .unwrap();
        fti.exec_id().to_owned()
    });
    let before = files_below(root.path());
    for (n, lose_topology) in [(2, false), (8, false), (3, false), (2, true), (8, true)] {
        if lose_topology {
            let _ =
                std::fs::remove_file(root.path().join(format!("Meta/{}/Topology.fti", execs[0])));
        }
        let restart = Config {
            failure: Some(1),
            exec_id: Some(execs[0].clone()),
            ..cfg.clone()
        };
        let errors = threads(n, &restart, |_, cfg, comm| {
            Fti::init_with(cfg, Box::new(comm))
                .err()
                .map(|e| e.to_string())
        });
        for (rank, err) in errors.iter().enumerate() {
            let err = err
                .as_ref()
                .unwrap_or_else(|| panic!("{n} ranks: rank {rank} started"));
            assert!(
                err.contains(&format!("checkpointed by 4 ranks, this run has {n}")),
                "{n} ranks: rank {rank}: {err}"
            );
        }
        let mut now = files_below(root.path());
        if lose_topology {
            now.retain(|(p, ..)| !p.ends_with("Topology.fti"));
            let mut b = before.clone();
            b.retain(|(p, ..)| !p.ends_with("Topology.fti"));
            assert_eq!(now, b, "{n} ranks wrote something");
        } else {
            assert_eq!(now, before, "{n} ranks wrote something");
        }
    }
    // With its own number of ranks it restarts.
    let restart = Config {
        failure: Some(1),
        exec_id: Some(execs[0].clone()),
        ..cfg.clone()
    };
    let ids = threads(4, &restart, |rank, cfg, comm| {
        let mut fti = Fti::init_with(cfg, Box::new(comm)).unwrap();
        let mut v = vec![0u32; 100];
        let info = fti.recover(&mut [Var::slice(0, &mut v)]).unwrap();
        assert_eq!(v, vec![rank; 100]);
        info.id
    });
    assert_eq!(ids, [1; 4]);
}

/// A file whose variable records were swapped or cut (only the file checksum covers `VMD.id`
/// and `VMD.chunksize`) never hands back bytes: single-variable recovery verifies the file.
#[test]
fn single_variable_recovery_never_returns_another_variables_bytes() {
    let root = tempfile::tempdir().unwrap();
    let mut fti = Fti::init(config(root.path())).unwrap();
    let (mut a, mut b) = (vec![1u8; 4096], vec![2u8; 4096]);
    fti.checkpoint(
        1,
        Level::L1,
        &[Var::slice(1, &mut a), Var::slice(2, &mut b)],
    )
    .unwrap();
    let path = fti.last_checkpoint().unwrap().path.clone();
    let good = std::fs::read(&path).unwrap();
    // VMD 0 at 96 + 12, VMD 1 right after it: swap their ids.
    let (v0, v1) = (96 + 12, 96 + 12 + 64);
    let mut swapped = good.clone();
    swapped.copy_within(v1..v1 + 4, v0);
    swapped[v1..v1 + 4].copy_from_slice(&good[v0..v0 + 4]);
    // chunksize of VMD 0 set to 0.
    let mut cut = good.clone();
    cut[v0 + 36..v0 + 44].fill(0);
    for (what, bytes) in [("swapped ids", &swapped), ("chunksize 0", &cut)] {
        std::fs::write(&path, bytes).unwrap();
        let mut got = vec![0u8; 4096];
        let r = fti.recover_var_from(None, &mut Var::slice(1, &mut got));
        assert!(r.is_err(), "{what}: recovered {:?}", &got[..4]);
        assert_eq!(got, vec![0u8; 4096], "{what}: bytes were written");
    }
    std::fs::write(&path, &good).unwrap();
    let mut got = vec![0u8; 4096];
    fti.recover_var_from(None, &mut Var::slice(2, &mut got))
        .unwrap();
    assert_eq!(got, b);
}

/// The child of [`a_fifo_in_the_checkpoint_directory_is_skipped_at_restart`].
#[test]
fn fifo_child() {
    let Ok(root) = std::env::var("FTI_TRUST_CHILD") else {
        return;
    };
    let root = PathBuf::from(root);
    let exec = std::env::var("FTI_TRUST_EXEC").unwrap();
    let fti = Fti::init(Config {
        failure: Some(1),
        exec_id: Some(exec),
        keep_ckpts: 2,
        ..config(&root)
    })
    .unwrap();
    match fti.status() {
        Status::Restart(info) => println!("RESTART {}", info.id),
        other => println!("STATUS {other:?}"),
    }
    for s in fti.skipped() {
        println!("SKIPPED {s}");
    }
}

/// A FIFO named `Ckpt2-Rank0.fti` (the newest checkpoint's name) does not hang the restart
/// scan: it is skipped with a warning and the older checkpoint is used.
#[test]
fn a_fifo_in_the_checkpoint_directory_is_skipped_at_restart() {
    let root = tempfile::tempdir().unwrap();
    let cfg = Config {
        keep_ckpts: 2,
        ..config(root.path())
    };
    let mut fti = Fti::init(cfg).unwrap();
    let mut x = 5u64;
    fti.checkpoint(1, Level::L1, &[Var::new(0, &mut x)])
        .unwrap();
    fti.checkpoint(2, Level::L1, &[Var::new(0, &mut x)])
        .unwrap();
    let newest = fti.last_checkpoint().unwrap().path.clone();
    let exec = fti.exec_id().to_owned();
    drop(fti);
    std::fs::remove_file(&newest).unwrap();
    assert!(Command::new("mkfifo")
        .arg(&newest)
        .status()
        .unwrap()
        .success());

    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "trust::fifo_child",
            "--nocapture",
            "--test-threads=1",
            "-q",
        ])
        .env("FTI_TRUST_CHILD", root.path())
        .env("FTI_TRUST_EXEC", &exec)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(30) {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("the restart hangs on a FIFO");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("RESTART 1"), "{stdout}");
    assert!(
        stdout.contains("Ckpt2-Rank0.fti skipped: not a regular file"),
        "{stdout}"
    );
}

/// The child of [`a_run_killed_while_its_config_is_unwritable`]: checkpoints 1 and 2 with the
/// config file's directory unwritable, printing each outcome, then waits to be killed.
#[test]
fn record_child() {
    let Ok(path) = std::env::var("FTI_RECORD_CHILD") else {
        return;
    };
    let mut fti = Fti::init(Config::from_file(Path::new(&path)).unwrap()).unwrap();
    for k in 1..=2 {
        let mut x = k as u64;
        match fti.checkpoint(k, Level::L1, &[Var::new(0, &mut x)]) {
            Ok(_) => println!("CKPT {k} OK"),
            Err(e) => println!("CKPT {k} ERR {e}"),
        }
    }
    println!("READY");
    use std::io::Write as _;
    std::io::stdout().flush().unwrap();
    loop {
        std::thread::sleep(Duration::from_secs(60));
    }
}

/// A real process whose config file cannot record the restart is told at every checkpoint
/// (never "success" with a restart that would start fresh); killed with SIGKILL, it leaves its
/// published files, and the config still says `failure = 0`, as the process was told.
#[test]
fn a_run_killed_while_its_config_is_unwritable() {
    use std::io::{BufRead, BufReader};
    let root = tempfile::tempdir().unwrap();
    let path = config_file(root.path(), "failure = 0");
    let undo = make_unwritable(&root.path().join("conf"));
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "trust::record_child",
            "--nocapture",
            "--test-threads=1",
            "-q",
        ])
        .env("FTI_RECORD_CHILD", &path)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = Vec::new();
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        if line.ends_with("READY") {
            break;
        }
        lines.push(line);
    }
    child.kill().unwrap();
    child.wait().unwrap();
    undo();
    let conf = path.display().to_string();
    let outcomes: Vec<&str> = lines
        .iter()
        .filter_map(|l| l.find("CKPT ").map(|i| &l[i..]))
        .collect();
    assert_eq!(outcomes.len(), 2, "{lines:?}");
    for l in outcomes {
        assert!(l.contains(" ERR ") && l.contains(&conf), "{l}");
    }
    assert!(std::fs::read_to_string(&path)
        .unwrap()
        .contains("failure = 0"));
    let published = files_below(&root.path().join("Local"));
    assert!(
        published
            .iter()
            .any(|(p, ..)| p.ends_with("l1/Ckpt2-Rank0.fti")),
        "{published:?}"
    );
}
