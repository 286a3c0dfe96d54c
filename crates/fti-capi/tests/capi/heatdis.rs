//! `examples/c/heatdis.c` (FTI's heatdis structure: FTI_Snapshot every iteration, FTI_Recover
//! on restart) under `mpirun -np 4`: it crashes after a checkpoint, restarts from it at an
//! iteration > 0, and ends with the grid the Rust demo (`fti demo`) computes.

use md5::{Digest, Md5};

use crate::util::{self, Link};

/// The Rust demo of the `fti` tool.
#[path = "../../../fti-cli/src/heatdis.rs"]
#[allow(dead_code)]
mod demo;

const SIZE: usize = 64;
const ITERS: i32 = 2000;

/// The Rust demo's checksum for the same grid and iterations.
fn rust_checksum() -> String {
    let dir = tempfile::tempdir().unwrap();
    let params = demo::Params {
        size: SIZE,
        iters: ITERS,
        every: ITERS,
        crash_at: None,
        ..Default::default()
    };
    demo::run(demo::config(dir.path()), params, &mut |_| {})
        .unwrap()
        .checksum
}

/// The number after `prefix` in a line of `out`.
fn number_after(out: &str, prefix: &str) -> Option<i32> {
    out.lines()
        .find_map(|l| l.strip_prefix(prefix))
        .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|n| n.parse().ok())
}

#[test]
fn four_ranks_crash_restart_and_match_the_rust_demo() {
    let exe = util::compile_file(
        &util::crate_dir().join("../../examples/c/heatdis.c"),
        Link::Shared,
    );
    let dir = tempfile::tempdir().unwrap();
    let cfg = util::config(dir.path(), "ckpt_l1_secs = 1\nckpt_l4_secs = 2");
    let (size, iters) = (SIZE.to_string(), ITERS.to_string());
    let common = [
        "--size",
        size.as_str(),
        "--iters",
        iters.as_str(),
        "--delay-us",
        "1000",
    ];
    let cfg_arg = cfg.to_str().unwrap();

    let crash = [&common[..], &["--crash-at", "1000", cfg_arg]].concat();
    let out = util::mpirun(4, &exe, &crash, dir.path());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "the run must crash:\n{stdout}");
    let crashed_at = number_after(&stdout, "crashing at iteration ")
        .unwrap_or_else(|| panic!("no crash:\n{stdout}"));
    assert!(crashed_at >= 1000, "{stdout}");
    assert!(!util::checkpoint_files(dir.path()).is_empty());

    let grid = dir.path().join("grid.bin");
    let restart = [&common[..], &["--out", grid.to_str().unwrap(), cfg_arg]].concat();
    let out = util::mpirun(4, &exe, &restart, dir.path());
    let stdout = util::success("heatdis restart", &out);
    let resumed = number_after(&stdout, "recovered at iteration ")
        .unwrap_or_else(|| panic!("no recovery:\n{stdout}"));
    assert!(resumed > 0 && resumed <= crashed_at, "{stdout}");
    let computed = number_after(&stdout, "iterations computed: ").unwrap();
    assert_eq!(computed, ITERS - resumed, "{stdout}");

    let bytes = std::fs::read(&grid).unwrap();
    assert_eq!(bytes.len(), SIZE * SIZE * 8);
    let checksum: String = Md5::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(checksum, rust_checksum(), "{stdout}");
    // FTI_Finalize removed the checkpoints and recorded the end of the run.
    assert!(util::checkpoint_files(dir.path()).is_empty());
    assert_eq!(util::restart_keys(&cfg).0, 0);
}
