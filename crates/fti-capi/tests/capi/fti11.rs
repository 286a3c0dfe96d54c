//! A C program built against our header continues runs that FTI 1.1 itself started
//! (`tests/c/fti11.c` under `mpirun -np 4`): the real 4-rank L1, L2, L3 and L4 trees of the
//! shared vectors, with the config file as FTI 1.1 rewrote it (`failure = 1`, its `exec_id`).

use crate::util::{self, Link};

/// The runtime tests' checkpoint-tree helpers.
#[path = "../../../fti/tests/util/trees.rs"]
#[allow(dead_code)]
mod trees;
use trees::copy_tree;

#[test]
fn fti_1_1_runs_restart_through_the_c_api() {
    let exe = util::compile("fti11", Link::Shared);
    // (vector, step, datasets): the L3 vector has its first checkpoint only.
    for (vector, step, nvars) in [
        ("L1", "step2", 3),
        ("L2", "step2", 3),
        ("L3", "step1", 2),
        ("L4", "step2", 3),
    ] {
        let levels = util::fixtures().join("levels").join(vector);
        let dir = tempfile::tempdir().unwrap();
        // The config names ./run: FTI's tree goes there, next to the config.
        copy_tree(&levels.join("files").join(step), &dir.path().join("run"));
        let cfg = dir.path().join("config.fti");
        std::fs::copy(levels.join("config-after-run.ini"), &cfg).unwrap();
        let level = &vector[1..];
        let out = util::mpirun(
            4,
            &exe,
            &[cfg.to_str().unwrap(), &nvars.to_string(), level],
            dir.path(),
        );
        let stdout = util::success(vector, &out);
        let mut got = util::results(&stdout);
        got.sort_unstable();
        let mut expected: Vec<String> = (0..4)
            .flat_map(|r| {
                let sizes = if nvars == 3 {
                    [(1000 + 250 * r) * 4, (3000 + 100 * r) * 4, 2000]
                } else {
                    [(1000 + 250 * r) * 4, 2000 * 4, 0]
                };
                [
                    format!(
                        "rank {r} init 0 status 1 sizes {} {} {} recover 0 wrong 0",
                        sizes[0], sizes[1], sizes[2]
                    ),
                    format!("rank {r} checkpoint 1 finalize 0"),
                ]
            })
            .collect();
        expected.sort_unstable();
        assert_eq!(got, expected, "{vector}: {stdout}");
        assert_eq!(util::restart_keys(&cfg).0, 0, "{vector}");
    }
}
