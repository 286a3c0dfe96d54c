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
                format!("rank {r} init 0 status 1 recover 0 holds checkpoint 3 1 status 0"),
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

/// Every file under `root` with the execution id replaced by `<exec>`, and its bytes (the
/// same replacement in the text files: meta data and topology).
fn tree(root: &std::path::Path, exec: &str) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<(String, Vec<u8>)> = test_support::files_below(root)
        .into_iter()
        .map(|(p, _, _)| p)
        .filter(|p| p.extension().is_some_and(|e| e == "fti") && !p.ends_with("config.fti"))
        .map(|p| {
            let name = p
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .replace(exec, "<exec>");
            let bytes = std::fs::read(&p).unwrap();
            let bytes = match std::str::from_utf8(&bytes) {
                Ok(text) if name.starts_with("Meta") => text.replace(exec, "<exec>").into_bytes(),
                _ => bytes,
            };
            (name, bytes)
        })
        .collect();
    files.sort();
    files
}

/// The trees this library writes from FTI's configs and the same data are FTI's: names, sizes,
/// data, meta data and topology byte for byte, with heads: POSIX at L2 (`Rank` and `Pcof`
/// files under the application ranks' world numbers, `Meta/<exec>/l2/sector0-group1.fti`),
/// POSIX at L3 (`Rank` and `RSed` files, the RSed files' MD5s in the meta data) and MPI-IO at
/// L4 (one shared file `Global/<exec>/l4/Ckpt3-mpiio.fti`).
#[test]
fn head_posix_trees_written_here_are_ftis() {
    for (name, level) in [("io1-L2", "2"), ("io1-L3", "3"), ("io2-L4", "4")] {
        written_here_is_ftis(name, level);
    }
}

fn written_here_is_ftis(name: &str, level: &str) {
    let exe = util::compile("crash", Link::Shared);
    let fixture = util::fixtures().join("head-posix").join(name);
    let dir = tempfile::tempdir().unwrap();
    let config = std::fs::read_to_string(fixture.join("config.fti")).unwrap();
    let (_, fti_exec) = util::restart_keys(&fixture.join("config.fti"));
    let fresh = config.replace(
        &format!("{:<30} = 1", "failure"),
        &format!("{:<30} = 0", "failure"),
    );
    assert_ne!(fresh, config, "the fixture's config records a failure");
    std::fs::write(dir.path().join("config.fti"), fresh).unwrap();
    let out = util::mpirun(8, &exe, &["write", "config.fti", level, "die"], dir.path());
    assert!(!out.status.success(), "every rank kills itself");
    let (failure, exec) = util::restart_keys(&dir.path().join("config.fti"));
    assert_eq!(failure, 1);
    let ours = tree(dir.path(), &exec);
    let ftis = tree(&fixture, &fti_exec);
    let names = |t: &[(String, Vec<u8>)]| t.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
    assert_eq!(names(&ours), names(&ftis), "{name}");
    for ((file, got), (_, want)) in ours.iter().zip(&ftis) {
        assert!(got == want, "{name}: {file} differs from FTI's");
    }
}
