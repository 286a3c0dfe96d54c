//! Dedicated heads through the C API (`tests/c/heads.c` under `mpirun -np 8`): FTI 1.1's own
//! `head-L4-io3` run continues, `FTI_Init` returning on the application ranks only.

use crate::util::{self, Link};

use test_support::copy_dir as copy_tree;

const FTI_EXEC: &str = "2026-11-27_16-39-49";

/// FTI's tree under `dir/run` (each L4 file rebuilt from the head FTI wrote and the data of
/// its formula, with the rank in FTI_COMM_WORLD) and its config at `dir/config.fti`.
fn fti_tree(dir: &std::path::Path) -> std::path::PathBuf {
    let fixture = util::fixtures().join("head-L4-io3");
    copy_tree(&fixture.join("run"), &dir.join("run"));
    let l4 = dir.join(format!("run/Global/{FTI_EXEC}/l4"));
    std::fs::create_dir_all(&l4).unwrap();
    for rank in [1i32, 3, 5, 7] {
        let name = format!("Ckpt2-Rank{rank}.fti");
        let mut bytes = std::fs::read(fixture.join(format!("file-heads/{name}.head"))).unwrap();
        let a: Vec<i32> = (0..1 << 18)
            .map(|j| rank / 2 * 1_000_000 + 2000 + j % 977)
            .collect();
        let b: Vec<i32> = a.iter().map(|x| -x).collect();
        for v in a.iter().chain(&b) {
            bytes.extend(v.to_le_bytes());
        }
        std::fs::write(l4.join(name), bytes).unwrap();
    }
    let cfg = dir.join("config.fti");
    std::fs::copy(fixture.join("config.fti"), &cfg).unwrap();
    cfg
}

/// FTI's config as is (every level inline), then with the L2 partner copies, the L3 encoding
/// and the L4 flush done by the heads.
#[test]
fn fti_head_run_continues_through_the_c_api() {
    let exe = util::compile("heads", Link::Shared);
    for inline in [true, false] {
        continue_fti_run(&exe, inline);
    }
}

fn continue_fti_run(exe: &std::path::Path, inline: bool) {
    let dir = tempfile::tempdir().unwrap();
    let cfg = fti_tree(dir.path());
    if !inline {
        let text = std::fs::read_to_string(&cfg).unwrap();
        let text = ["inline_l2", "inline_l3", "inline_l4"]
            .iter()
            .fold(text, |t, key| {
                t.replace(&format!("{key:<31}= 1"), &format!("{key} = 0"))
            });
        assert!(text.contains("inline_l3 = 0") && text.contains("inline_l4 = 0"));
        std::fs::write(&cfg, text).unwrap();
    }
    let out = util::mpirun(8, exe, &[cfg.to_str().unwrap()], dir.path());
    let stdout = util::success("heads", &out);
    let mut got = util::results(&stdout);
    got.sort_unstable();
    let mut expected: Vec<String> = [1, 3, 5, 7]
        .iter()
        .flat_map(|w| {
            [
                format!(
                    "world {w} rank {} size 4 init 0 status 1 recover 0 wrong 0",
                    w / 2
                ),
                format!("world {w} checkpoints 1 1 1 finalize 0"),
            ]
        })
        .collect();
    expected.sort_unstable();
    assert_eq!(got, expected, "inline {inline}: {stdout}");
    assert_eq!(util::restart_keys(&cfg).0, 0);
}
