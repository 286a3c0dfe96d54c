//! Every return code a C program can get from the API (`tests/c/codes.c`), scenario by
//! scenario, each in its own process: FTI 1.1's codes for the same calls.

use std::path::Path;

use crate::util::{self, Link};

fn run(scenario: &str, args: &[&Path], dir: &Path) -> Vec<String> {
    let exe = util::compile("codes", Link::Shared);
    let mut all = vec![scenario];
    all.extend(args.iter().map(|p| p.to_str().unwrap()));
    let out = util::run(&exe, &all, dir);
    let stdout = util::success(scenario, &out);
    util::results(&stdout)
        .into_iter()
        .map(str::to_owned)
        .collect()
}

fn lines(text: &str) -> Vec<String> {
    text.lines().map(str::to_owned).collect()
}

#[test]
fn before_fti_init_every_call_refuses() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(
        run("uninitialized", &[], dir.path()),
        lines(
            "Status 0\nProtect -1\nDefineDataset -1\nGetStoredSize 0\nRealloc unchanged 1\nBitFlip -1\n\
             Checkpoint -1\nRecover -1\nRecoverVar -1\nRecoverVarInit -1\nRecoverVarFinalize -1\n\
             Snapshot -1\nInitICP inactive 0\nInitICP -1\nAddVarICP -1\nFinalizeICP -1\nFinalize -1"
        )
    );
    let cfg = util::config(dir.path(), "");
    assert_eq!(run("nompi", &[&cfg], dir.path()), ["Init without MPI -1"]);
}

#[test]
fn unsupported_or_unreadable_configs_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: String| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    };
    let base = std::fs::read_to_string(util::config(dir.path(), "")).unwrap();
    let hdf5 = write("hdf5.fti", base.replace("ckpt_io = 3", "ckpt_io = 5"));
    let head = write("head.fti", base.replace("head = 0", "head = 1"));
    let default_io = write("default-io.fti", base.replace("ckpt_io = 3\n", ""));
    let missing = dir.path().join("missing.fti");
    let exe = util::compile("codes", Link::Shared);
    let args: Vec<&str> = [&missing, &hdf5, &head, &default_io]
        .iter()
        .map(|p| p.to_str().unwrap())
        .collect();
    let out = util::run(&exe, &[&["configs"][..], &args].concat(), dir.path());
    let stdout = util::success("configs", &out);
    assert_eq!(
        util::results(&stdout),
        [
            "Init NULL -1",
            "Init config 0 -1",
            "Status 0",
            "Init config 1 -1",
            "Status 0",
            "Init config 2 -1",
            "Status 0",
            "Init config 3 0",
            "Status 0"
        ],
        "{stdout}"
    );
    // Each refusal says why, naming the file and line.
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("missing.fti"), "{stderr}");
    // HDF5 is refused (FTI 1.1 without HDF5 would write POSIX files instead), naming the
    // modes that work.
    assert!(
        stderr.contains("hdf5.fti:7")
            && stderr.contains("HDF5")
            && stderr.contains("ckpt_io = 1 (POSIX), 2 (MPI-IO) or 3 (FTI-FF)"),
        "{stderr}"
    );
    // Heads on one process (node_size 1): no node has an application rank.
    assert!(
        stderr.contains("head.fti:2") && stderr.contains("head = 1 needs node_size >= 2"),
        "{stderr}"
    );
    // Without ckpt_io FTI 1.1 writes POSIX files: said, not silently changed.
    assert!(stdout.contains("no [basic] ckpt_io"), "{stdout}");
}

#[test]
fn a_normal_run_checkpoints_rolls_back_and_injects() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = util::config(
        dir.path(),
        "[injection]\nrank = 0\nindex = 8\nposition = 63\nnumber = 1\nfrequency = 0\n[basic]",
    );
    assert_eq!(
        run("fresh", &[&cfg], dir.path()),
        lines(
            "Init 0\nStatus 0\nCheckpoint level 0 -1\nCheckpoint level 5 -1\n\
             Recover without checkpoint -2\nRecoverVarInit normal run 0\nRecoverVar normal run 0\n\
             RecoverVarFinalize normal run 0\nGetStoredSize before checkpoint 0\n\
             Realloc normal run unchanged 1\nProtect alias 0\nCheckpoint L1 1\n\
             GetStoredSize 16 64 16 unknown 0\nCheckpoint L4 1\nCheckpoint L2 alone -1\n\
             Checkpoint L3 alone -1\nRecover to last checkpoint 0\nholds checkpoint 2 1\n\
             Protect new dataset 0\nRecover with one more dataset -2\nCheckpoint 4 datasets 1\n\
             Protect resized 0\nRecover with a resized dataset -2\nProtect size back 0\nRecover 0\n\
             BitFlip int dataset -1\nBitFlip no dataset -1\nBitFlip 0\n\
             sign of more[1] flipped 1, more[8] untouched 1\n\
             BitFlip after the last -1\nInitICP inactive 0\nAddVarICP inactive 0\n\
             FinalizeICP inactive 0\nInitICP level 7 -1\nAddVarICP after failed init -1\n\
             FinalizeICP after failed init -1\nInitICP 0\nAddVarICP unprotected -1\nAddVarICP 0\n\
             AddVarICP twice -1\nCheckpoint during ICP -1\nFinalizeICP incomplete -1\n\
             InitICP L4 0\nAddVarICP 4 0\nAddVarICP 2 0\nAddVarICP 3 0\nAddVarICP 1 0\n\
             FinalizeICP 0\nRecover to the ICP checkpoint 0\nholds checkpoint 6 1\nFinalize 0\n\
             Finalize again -1"
        )
    );
    assert!(util::checkpoint_files(dir.path()).is_empty());
}

#[test]
fn snapshot_checkpoints_when_the_interval_has_passed() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = util::config(dir.path(), "ckpt_l1_secs = 1");
    assert_eq!(
        run("snapshot", &[&cfg], dir.path()),
        lines(
            "Init 0\nSnapshot took a checkpoint 1, other codes 0, not at once 1\n\
             GetStoredSize 64\nFinalize 0"
        )
    );
}

#[test]
fn limits_where_fti_would_overflow() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = util::config(dir.path(), "");
    assert_eq!(
        run("limits", &[&cfg], dir.path()),
        lines(
            "Init 0\nInit again 0\nProtect negative count -1\nProtect negative size -1\n\
             Protect 256 refused 0\nProtect 257th -1\nProtect again an existing id 0\n\
             Protect overflowing size -1\nCheckpoint NULL dataset -1\nFinalize 0"
        )
    );
}

/// Runs `prepare` (checkpoint 1, no FTI_Finalize) in a new directory; returns it and the config.
fn prepared() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let cfg = util::config(dir.path(), "");
    assert_eq!(
        run("prepare", &[&cfg], dir.path()),
        ["Init 0", "Checkpoint 1"]
    );
    assert_eq!(util::restart_keys(&cfg).0, 1);
    (dir, cfg)
}

#[test]
fn a_restart_recovering_variable_by_variable() {
    let (dir, cfg) = prepared();
    assert_eq!(
        run("restart-vars", &[&cfg], dir.path()),
        lines(
            "Init 0\nStatus 1\nRecoverVar unprotected -2\nRecover one dataset of two -2\n\
             Recover wrong size -2\nRecoverVar wrong size -2\nRecoverVarFinalize without init -1\n\
             RecoverVarInit 0\nRecoverVar 1 0\nRecoverVar 2 0\nRecoverVarFinalize 0\n\
             holds checkpoint 1 1\nStatus after RecoverVar 1\nSnapshot recovers 0\n\
             holds checkpoint 1 1\nStatus 0\nCheckpoint 1\nFinalize 0"
        )
    );
    assert_eq!(util::restart_keys(&cfg).0, 0);
}

#[test]
fn a_restart_may_checkpoint_before_recovering_everything() {
    let (dir, cfg) = prepared();
    assert_eq!(
        run("restart-checkpoint", &[&cfg], dir.path()),
        lines(
            "Init 0\nRecoverVarInit 0\nRecoverVar 1 0\nRecoverVarFinalize 0\n\
             Checkpoint during the restart 1\nStatus 1\nRecoverVar from the new checkpoint 0\n\
             reals of checkpoint 2 1\nRecover 0\nholds checkpoint 2 1\nStatus 0\nFinalize 0"
        )
    );
}

#[test]
fn a_restart_with_nothing_to_recover_starts_fresh() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = util::config(dir.path(), "");
    let text = std::fs::read_to_string(&cfg)
        .unwrap()
        .replace("failure = 0", "failure = 1")
        .replace("exec_id = ", "exec_id = 2020-01-01_00-00-00");
    std::fs::write(&cfg, text).unwrap();
    assert_eq!(
        run("lost", &[&cfg], dir.path()),
        lines(
            "Init -2\nStatus 0\nRecover -1\nRecoverVarInit 0\nCheckpoint 1\n\
             Recover after a checkpoint 0\nholds checkpoint 1 1\nFinalize 0"
        )
    );
}

#[test]
fn keep_last_ckpt_restarts_from_the_kept_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = util::config(dir.path(), "keep_last_ckpt = 1");
    assert_eq!(
        run("keep", &[&cfg], dir.path()),
        ["Init 0", "Checkpoint 1", "Finalize 0"]
    );
    assert_eq!(util::restart_keys(&cfg).0, 2);
    let kept = util::checkpoint_files(dir.path());
    assert!(
        kept.len() == 1 && kept[0].to_string_lossy().contains("/Global/"),
        "{kept:?}"
    );
    assert_eq!(
        run("keep-restart", &[&cfg], dir.path()),
        lines(
            "Init 0\nStatus 2\nGetStoredSize 64\nRecover 0\nholds checkpoint 1 1\nStatus 0\n\
             Finalize 0"
        )
    );
    // The restart's checkpoint is this run's last one: kept again, as FTI does.
    assert_eq!(util::restart_keys(&cfg).0, 2);
    assert_eq!(util::checkpoint_files(dir.path()), kept);
}

#[test]
fn one_rank_without_its_config_fails_every_rank() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = util::config(dir.path(), "");
    let missing = dir.path().join("missing.fti");
    let exe = util::compile("codes", Link::Shared);
    let args = ["per-rank", cfg.to_str().unwrap(), missing.to_str().unwrap()];
    let out = util::mpirun(2, &exe, &args, dir.path());
    let stdout = util::success("per-rank", &out);
    let mut got = util::results(&stdout);
    got.sort_unstable();
    assert_eq!(got, ["rank 0 Init -1", "rank 1 Init -1"], "{stdout}");
    assert!(
        stdout.contains("another rank could not load the configuration"),
        "{stdout}"
    );
}
