//! FTI 1.1's POSIX and MPI-IO trees with dedicated heads (`tests/fixtures/fti/head-posix`,
//! written by FTI 1.1 running `tests/c/crash.c` under `mpirun -np 8`) restart through this
//! library with exact data: the L2 and L3 trees also after a node's files are lost. FTI numbers the
//! group meta data by the position of the group's ranks in their node, counting the head
//! (`groupID = posInNode`, `FTI_Topology` in `src/topo.c`), so with one head per node the
//! application ranks' group is `group1`.

use crate::util::{self, Link};

use test_support::copy_dir as copy_tree;

/// FTI's tree `name` copied to `dir`, restarted by `crash restart` at `level`: each of the 4
/// application ranks holds the third checkpoint and checkpoints once more.
fn restart_fti_tree(exe: &std::path::Path, name: &str, level: u8, lose: Option<&str>) {
    let dir = tempfile::tempdir().unwrap();
    copy_tree(&util::fixtures().join("head-posix").join(name), dir.path());
    if let Some(node) = lose {
        std::fs::remove_dir_all(dir.path().join("Local").join(node)).unwrap();
    }
    let level = level.to_string();
    let out = util::mpirun(8, exe, &["restart", "config.fti", &level], dir.path());
    let stdout = util::success("crash restart", &out);
    let mut got = util::results(&stdout);
    got.sort_unstable();
    let mut expected: Vec<String> = (0..4)
        .flat_map(|r| {
            [
                format!("rank {r} checkpoint 4: 1"),
                format!("rank {r} finalize 0"),
                format!(
                    "rank {r} init 0 status 1 recover 0 holds checkpoint 3 1 status 0"
                ),
            ]
        })
        .collect();
    expected.sort_unstable();
    assert_eq!(got, expected, "{name} (lost: {lose:?}): {stdout}");
}

#[test]
fn fti_posix_and_mpiio_head_trees_restart_here() {
    let exe = util::compile("crash", Link::Shared);
    restart_fti_tree(&exe, "io1-L2", 2, Some("node1"));
    restart_fti_tree(&exe, "io1-L3", 3, Some("node1"));
    restart_fti_tree(&exe, "io2-L4", 4, None);
}
