//! The runtime in one process: restarts from FTI 1.1's own checkpoint trees, checkpoint /
//! recover cycles, fallbacks, errors, finalize.

use std::path::{Path, PathBuf};

use crate::util::trees::copy_tree;
use fti::{Config, Error, Fti, Level, Snapshot, Status, Var};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/fti/levels")
}

/// An FTI 1.1 run directory set up as FTI left it: `run/` = `files/<step>`, the config as FTI
/// rewrote it, with `./run` pointing at the copy.
fn fti_tree(vector: &str, step: &str, rank: u32) -> (tempfile::TempDir, Config) {
    let dir = tempfile::tempdir().unwrap();
    copy_tree(
        &fixtures().join(vector).join("files").join(step),
        &dir.path().join("run"),
    );
    let text =
        std::fs::read_to_string(fixtures().join(vector).join("config-after-run.ini")).unwrap();
    let text = text.replace("./run", &dir.path().join("run").to_string_lossy());
    let path = dir.path().join("config.fti");
    std::fs::write(&path, text).unwrap();
    let mut cfg = Config::from_file(&path).unwrap();
    // One process acts as one rank of FTI's 4-rank run.
    cfg.rank = rank;
    cfg.nranks = 4;
    cfg.verbosity = 3;
    (dir, cfg)
}

fn ints(id: i32, n: usize, rank: i32) -> Vec<i32> {
    (0..n)
        .map(|j| id * 1_000_003 + j as i32 + rank * 100_000_000)
        .collect()
}

/// The level vectors' dataset: (id, element count) per checkpoint for `rank`.
fn dataset(ckpt: i32, rank: usize) -> Vec<(i32, usize)> {
    match ckpt {
        1 => vec![(1, 1000 + 250 * rank), (2, 2000)],
        _ => vec![(1, 1000 + 250 * rank), (2, 3000 + 100 * rank), (3, 500)],
    }
}

#[test]
fn restart_from_fti_1_1_trees_recovers_what_fti_did() {
    let cases = [
        ("L1", "step1", 1, Level::L1),
        ("L1", "step2", 2, Level::L1),
        ("L4", "step1", 1, Level::L4),
        ("L4", "step2", 2, Level::L4),
        ("L1-keep-last-finalize", "step1", 1, Level::L1),
        ("L1-keep-last-finalize", "after-finalize", 2, Level::L4),
    ];
    for (vector, step, ckpt, level) in cases {
        for rank in 0..4u32 {
            let (_dir, cfg) = fti_tree(vector, step, rank);
            let mut fti = Fti::init(cfg).unwrap();
            let Status::Restart(info) = fti.status().clone() else {
                panic!(
                    "{vector}/{step} rank {rank}: no restart: {:?}",
                    fti.skipped()
                );
            };
            assert_eq!(
                (info.id, info.level),
                (ckpt, level),
                "{vector}/{step} rank {rank}"
            );
            let expected: Vec<(i32, Vec<i32>)> = dataset(ckpt, rank as usize)
                .into_iter()
                .map(|(id, n)| (id, ints(id, n, rank as i32)))
                .collect();
            let mut bufs: Vec<Vec<i32>> = expected
                .iter()
                .map(|(id, v)| {
                    assert_eq!(fti.stored_size(*id), Some(4 * v.len() as u64));
                    vec![0; v.len()]
                })
                .collect();
            let mut vars: Vec<Var> = expected
                .iter()
                .zip(bufs.iter_mut())
                .map(|((id, _), b)| Var::slice(*id, b))
                .collect();
            fti.recover(&mut vars).unwrap();
            drop(vars);
            for ((id, want), got) in expected.iter().zip(&bufs) {
                assert_eq!(got, want, "{vector}/{step} rank {rank} var {id}");
            }
            assert!(matches!(fti.status(), Status::Recovered(_)));
        }
    }
}

/// Continuing an FTI 1.1 run: recover step 1 of the L1 tree, then write checkpoint 2 with the
/// step-2 dataset; the structure equals FTI 1.1's own checkpoint 2.
#[test]
fn continuing_an_fti_run_matches_fti_structure() {
    let (dir, cfg) = fti_tree("L1", "step1", 2);
    let mut fti = Fti::init(cfg).unwrap();
    let mut a = vec![0i32; 1500];
    let mut b = vec![0i32; 2000];
    fti.recover(&mut [Var::slice(1, &mut a), Var::slice(2, &mut b)])
        .unwrap();
    let mut b = ints(2, 3200, 2);
    let mut c = ints(3, 500, 2);
    let info = fti
        .checkpoint(
            2,
            Level::L1,
            &[
                Var::slice(1, &mut a),
                Var::slice(2, &mut b),
                Var::slice(3, &mut c),
            ],
        )
        .unwrap();
    assert!(info.path.starts_with(dir.path()));
    assert!(info.path.ends_with("l1/Ckpt2-Rank2.fti"));
    let ours = std::fs::read(&info.path).unwrap();
    let ours = ftiff::Checkpoint::parse(&ours).unwrap();
    let theirs_path =
        fixtures().join("L1/files/step2/Local/node2/2026-11-22_04-12-33/l1/Ckpt2-Rank2.fti");
    let theirs = std::fs::read(theirs_path).unwrap();
    let theirs = ftiff::Checkpoint::parse(&theirs).unwrap();
    assert_eq!(ours.layout(), theirs.layout());
    // Only one file per rank in l1, as FTI 1.1 expects.
    let l1: Vec<_> = std::fs::read_dir(info.path.parent().unwrap())
        .unwrap()
        .collect();
    assert_eq!(l1.len(), 1);
}

fn local_config(root: &Path) -> Config {
    crate::util::config(root)
}

#[test]
fn checkpoint_crash_recover_with_resizes() {
    let root = tempfile::tempdir().unwrap();
    let mut fti = Fti::init(local_config(root.path())).unwrap();
    assert_eq!(fti.status(), &Status::Fresh);
    let mut step = 0u64;
    let mut field = vec![1.5f64; 100];
    for id in 1..=4 {
        step += 10;
        field.resize(100 * id as usize, id as f64);
        let level = if id % 2 == 0 { Level::L4 } else { Level::L1 };
        fti.checkpoint(
            id,
            level,
            &[Var::new(0, &mut step), Var::slice(1, &mut field)],
        )
        .unwrap();
    }
    drop(fti); // a crash: no finalize

    let mut fti = Fti::init(local_config(root.path())).unwrap();
    let Status::Restart(info) = fti.status().clone() else {
        panic!("not a restart")
    };
    assert_eq!((info.id, info.level), (4, Level::L4));
    let mut step2 = 0u64;
    let mut field2 = vec![0.0f64; 0];
    // Wrong size: a clear error and nothing copied.
    let err = fti
        .recover(&mut [Var::new(0, &mut step2), Var::slice(1, &mut field2)])
        .unwrap_err();
    assert!(matches!(err, Error::SizeMismatch { id: 1, .. }), "{err}");
    assert_eq!(step2, 0);
    // Wrong order.
    let err = fti
        .recover(&mut [Var::slice(1, &mut field2), Var::new(0, &mut step2)])
        .unwrap_err();
    assert!(matches!(err, Error::Variable { .. }), "{err}");
    // Writing before recovering is refused.
    assert!(matches!(
        fti.checkpoint(9, Level::L1, &[Var::new(0, &mut step2)]),
        Err(Error::State(_))
    ));
    field2.resize((fti.stored_size(1).unwrap() / 8) as usize, 0.0);
    fti.recover_var(&mut Var::new(0, &mut step2)).unwrap();
    assert_eq!(step2, 40);
    assert!(matches!(fti.status(), Status::Restart(_)));
    let got = fti
        .snapshot(&mut [Var::new(0, &mut step2), Var::slice(1, &mut field2)])
        .unwrap();
    assert!(matches!(got, Snapshot::Recovered(ref i) if i.id == 4));
    assert_eq!(field2, field);
    // The next checkpoint continues the recovered structure.
    field2.push(9.0);
    let info = fti
        .checkpoint(
            5,
            Level::L1,
            &[Var::new(0, &mut step2), Var::slice(1, &mut field2)],
        )
        .unwrap();
    let bytes = std::fs::read(&info.path).unwrap();
    let ckpt = ftiff::Checkpoint::parse(&bytes).unwrap();
    assert_eq!(ckpt.layout().blocks.len(), 5);
}

#[test]
fn corrupted_newest_falls_back_to_previous_and_says_why() {
    let root = tempfile::tempdir().unwrap();
    let cfg = Config {
        keep_ckpts: 3,
        ..local_config(root.path())
    };
    let mut fti = Fti::init(cfg.clone()).unwrap();
    let mut data = vec![0u32; 1000];
    let mut paths = Vec::new();
    for id in 1..=3 {
        data.iter_mut().for_each(|x| *x = id as u32);
        paths.push(
            fti.checkpoint(id, Level::L1, &[Var::slice(7, &mut data)])
                .unwrap()
                .path,
        );
    }
    // Newest (in l1) loses a byte of data; the one before (archived) gets trailing junk only.
    let newest = fti.dirs().level_dir(Level::L1).join("Ckpt3-Rank0.fti");
    let mut bytes = std::fs::read(&newest).unwrap();
    bytes[500] ^= 0xff;
    std::fs::write(&newest, bytes).unwrap();
    drop(fti);
    let mut fti = Fti::init(cfg).unwrap();
    let Status::Restart(info) = fti.status().clone() else {
        panic!()
    };
    assert_eq!(info.id, 2);
    assert!(info.path.to_string_lossy().contains("l1_archive"));
    assert_eq!(fti.skipped().len(), 1);
    let skipped = &fti.skipped()[0];
    assert!(
        skipped.to_string().contains("checkpoint 3") && skipped.to_string().contains("mismatch"),
        "{skipped}"
    );
    // The candidate is named by id, level and file, with the format error underneath.
    assert_eq!(
        (skipped.id(), skipped.level()),
        (Some(3), Some(fti::Level::L1))
    );
    assert!(skipped
        .path()
        .is_some_and(|p| p.ends_with("Ckpt3-Rank0.fti")));
    assert!(
        matches!(skipped, fti::Skipped::Unverified(c) if matches!(*c.err, Error::Format(_))),
        "{skipped:?}"
    );
    let mut back = vec![0u32; 1000];
    fti.recover(&mut [Var::slice(7, &mut back)]).unwrap();
    assert!(back.iter().all(|&x| x == 2));
}

#[test]
fn nothing_usable_starts_fresh() {
    let root = tempfile::tempdir().unwrap();
    let cfg = local_config(root.path());
    let mut fti = Fti::init(cfg.clone()).unwrap();
    let mut x = 5u8;
    let info = fti
        .checkpoint(1, Level::L1, &[Var::new(0, &mut x)])
        .unwrap();
    drop(fti);
    std::fs::write(&info.path, b"garbage").unwrap();
    let fti = Fti::init(cfg).unwrap();
    assert_eq!(fti.status(), &Status::Fresh);
    assert_eq!(fti.skipped().len(), 1);
}

#[test]
fn finalize_and_the_config_file() {
    let root = tempfile::tempdir().unwrap();
    let path = root.path().join("config.fti");
    let dirs = format!(
        "[basic]\nckpt_dir = {0}/Local\nglbl_dir = {0}/Global\nmeta_dir = {0}/Meta\nkeep_last_ckpt = 1\nverbosity = 3\n",
        root.path().display()
    );
    std::fs::write(&path, &dirs).unwrap();
    let mut fti = Fti::init(Config::from_file(&path).unwrap()).unwrap();
    let exec = fti.exec_id().to_owned();
    assert!(root
        .path()
        .join("Meta")
        .join(&exec)
        .join("Topology.fti")
        .is_file());
    let mut v = [1u16, 2, 3];
    fti.checkpoint(1, Level::L1, &[Var::slice(3, &mut v)])
        .unwrap();
    let cfg = Config::from_file(&path).unwrap();
    assert_eq!(
        (cfg.failure, cfg.exec_id.as_deref()),
        (Some(1), Some(exec.as_str()))
    );
    v[0] = 9;
    fti.checkpoint(2, Level::L1, &[Var::slice(3, &mut v)])
        .unwrap();
    fti.finalize().unwrap();
    // keep_last_ckpt: the last checkpoint moved to L4, local files gone, failure = 2.
    assert!(!root.path().join("Local/node0").join(&exec).exists());
    assert!(root
        .path()
        .join("Global")
        .join(&exec)
        .join("l4/Ckpt2-Rank0.fti")
        .is_file());
    let cfg = Config::from_file(&path).unwrap();
    assert_eq!(cfg.failure, Some(2));
    let mut fti = Fti::init(cfg).unwrap();
    let mut back = [0u16; 3];
    fti.recover(&mut [Var::slice(3, &mut back)]).unwrap();
    assert_eq!(back, [9, 2, 3]);
    // Without keep_last_ckpt everything goes and failure = 0.
    // A config file without `[restart] failure` is a fresh run, as in FTI.
    std::fs::write(
        &path,
        dirs.replace("keep_last_ckpt = 1", "keep_last_ckpt = 0"),
    )
    .unwrap();
    let mut fti = Fti::init(Config::from_file(&path).unwrap()).unwrap();
    fti.checkpoint(1, Level::L4, &[Var::slice(3, &mut back)])
        .unwrap();
    let exec = fti.exec_id().to_owned();
    fti.finalize().unwrap();
    assert!(!root.path().join("Global").join(&exec).exists());
    assert_eq!(Config::from_file(&path).unwrap().failure, Some(0));
    assert_eq!(
        Fti::init(Config::from_file(&path).unwrap())
            .unwrap()
            .status(),
        &Status::Fresh
    );
}

#[test]
fn l4_flush_from_local_and_errors() {
    let root = tempfile::tempdir().unwrap();
    let cfg = Config {
        inline_l4: false,
        ..local_config(root.path())
    };
    let mut fti = Fti::init(cfg).unwrap();
    let mut x = 42i64;
    let info = fti
        .checkpoint(1, Level::L4, &[Var::new(0, &mut x)])
        .unwrap();
    // Written locally, then copied byte for byte to the global directory, in the background
    // thread (inline_l4 = 0); the local file is then retired, as FTI's FTI_Clean(4) does.
    assert!(fti.background_post_processing());
    fti.wait().unwrap();
    let bytes = std::fs::read(&info.path).unwrap();
    let ckpt = ftiff::Checkpoint::parse(&bytes).unwrap();
    assert!(ckpt.verify(&|_| {}).is_empty());
    assert_eq!(ckpt.read_var(0).unwrap(), 42i64.to_le_bytes());
    let local = fti.dirs().level_dir(Level::L1).join("Ckpt1-Rank0.fti");
    assert!(!local.exists(), "{}", local.display());
    assert!(matches!(
        fti.checkpoint(2, Level::L2, &[Var::new(0, &mut x)]),
        Err(Error::NeedsMpi(Level::L2))
    ));
    let mut y = 1u8;
    assert!(matches!(
        fti.checkpoint(2, Level::L1, &[Var::new(0, &mut x), Var::new(0, &mut y)]),
        Err(Error::Variable { id: 0, .. })
    ));
    // A variable no longer protected is removed (its containers emptied), a new one added;
    // protected variables cannot change places.
    let info = fti
        .checkpoint(2, Level::L1, &[Var::new(5, &mut y)])
        .unwrap();
    let bytes = std::fs::read(&info.path).unwrap();
    let ckpt = ftiff::Checkpoint::parse(&bytes).unwrap();
    assert!(ckpt.var(0).unwrap().removed && !ckpt.var(5).unwrap().removed);
    assert!(fti
        .checkpoint(3, Level::L1, &[Var::new(5, &mut y), Var::new(0, &mut x)])
        .is_err());
}

#[test]
fn snapshot_takes_the_highest_due_level() {
    let root = tempfile::tempdir().unwrap();
    let mut cfg = local_config(root.path());
    cfg.intervals = [
        Some(std::time::Duration::from_millis(1)),
        None,
        None,
        Some(std::time::Duration::from_millis(1)),
    ];
    let mut fti = Fti::init(cfg).unwrap();
    let mut x = 0u32;
    std::thread::sleep(std::time::Duration::from_millis(5));
    let Snapshot::Checkpointed(info) = fti.snapshot(&mut [Var::new(0, &mut x)]).unwrap() else {
        panic!()
    };
    assert_eq!((info.id, info.level), (1, Level::L4));
    let mut cfg = local_config(root.path());
    cfg.intervals = [Some(std::time::Duration::from_secs(3600)), None, None, None];
    cfg.failure = Some(0);
    let mut fti = Fti::init(cfg).unwrap();
    assert_eq!(
        fti.snapshot(&mut [Var::new(0, &mut x)]).unwrap(),
        Snapshot::Nothing
    );
}

#[test]
fn restart_from_a_chosen_older_checkpoint() {
    let root = tempfile::tempdir().unwrap();
    let cfg = Config {
        keep_ckpts: 4,
        ..local_config(root.path())
    };
    let mut fti = Fti::init(cfg.clone()).unwrap();
    let mut x = 0u32;
    for id in 1..=4 {
        x = id as u32 * 11;
        fti.checkpoint(id, Level::L1, &[Var::new(0, &mut x)])
            .unwrap();
    }
    drop(fti);
    let mut fti = Fti::init(Config {
        restart_id: Some(2),
        ..cfg.clone()
    })
    .unwrap();
    let Status::Restart(info) = fti.status().clone() else {
        panic!()
    };
    assert_eq!(info.id, 2);
    fti.recover(&mut [Var::new(0, &mut x)]).unwrap();
    assert_eq!(x, 22);
    // A missing id starts fresh and says so.
    let fti = Fti::init(Config {
        restart_id: Some(9),
        ..cfg
    })
    .unwrap();
    assert_eq!(fti.status(), &Status::Fresh);
}

/// What a reporter saw of the runtime's long work: (what, done, total), in order.
#[derive(Default)]
struct SeenProgress(std::sync::Mutex<Vec<(String, u64, u64)>>);

impl fti::report::Reporter for SeenProgress {
    fn report(&self, _: fti::report::Priority, _: u32, _: &str) {}
    fn progress(&self, _: u32, what: &str, done: u64, total: u64) {
        self.0.lock().unwrap().push((what.to_owned(), done, total));
    }
}

/// The runtime draws no progress bar: the progress of writing and verifying checkpoints goes
/// to the reporter (front ends draw it), from 0 to the whole, when information is shown.
#[test]
fn progress_of_long_work_goes_to_the_reporter() {
    let root = tempfile::tempdir().unwrap();
    let run = |verbosity: u8| {
        let seen = std::sync::Arc::new(SeenProgress::default());
        let options = fti::Options {
            reporter: seen.clone(),
            ..fti::Options::default()
        };
        let cfg = Config {
            verbosity,
            ..crate::util::config(root.path())
        };
        let mut fti = Fti::init_with_options(cfg, Box::new(fti::SelfComm), options).unwrap();
        if let Status::Restart(_) = fti.status() {
            let mut data = vec![0u8; 1 << 20];
            fti.recover(&mut [Var::slice(1, &mut data)]).unwrap();
        } else {
            let mut data = vec![7u8; 1 << 20];
            fti.checkpoint(1, Level::L1, &[Var::slice(1, &mut data)])
                .unwrap();
        }
        std::mem::forget(fti);
        let seen = seen.0.lock().unwrap().clone();
        seen
    };
    let written = run(2);
    let (first, last) = (written.first().unwrap(), written.last().unwrap());
    assert_eq!(first.0, "checkpoint 1 (L1)");
    assert_eq!((first.1, last.1), (0, last.2), "{written:?}");
    assert!(last.2 > 1 << 20, "{written:?}");
    let verified = run(2);
    assert!(
        verified
            .iter()
            .any(|(what, done, total)| what == "verifying checkpoint 1" && done == total),
        "{verified:?}"
    );
    // Warnings only: no progress either.
    assert_eq!(run(3), Vec::new());
}
