//! `fti l3-encode` and `fti l3-rebuild` on the real FTI 1.1 L3 files.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn fixture(kind: &str, rank: u32) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!(
        "../../tests/fixtures/fti/levels/L3/files/step1/Local/node{rank}/2026-11-22_04-12-34/l3/Ckpt1-{kind}{rank}.fti"
    ))
}

fn fti(args: &[&str], dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fti"))
        .args(args)
        .arg(dir)
        .output()
        .unwrap()
}

fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The group's 8 files side by side.
fn group_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for kind in ["Rank", "RSed"] {
        for r in 0..4 {
            let bytes = std::fs::read(fixture(kind, r)).unwrap();
            std::fs::write(dir.path().join(format!("Ckpt1-{kind}{r}.fti")), bytes).unwrap();
        }
    }
    dir
}

fn same_as_fixture(dir: &Path, kind: &str, r: u32) -> bool {
    let ours = std::fs::read(dir.join(format!("Ckpt1-{kind}{r}.fti"))).unwrap();
    let theirs = std::fs::read(fixture(kind, r)).unwrap();
    // RSed trailers carry the time of encoding; the code must be identical.
    let n = if kind == "RSed" {
        theirs.len() - 96
    } else {
        theirs.len()
    };
    ours.len() == theirs.len() && ours[..n] == theirs[..n]
}

#[test]
fn encode_writes_fti_code() {
    let dir = group_dir();
    for r in 0..4 {
        std::fs::remove_file(dir.path().join(format!("Ckpt1-RSed{r}.fti"))).unwrap();
    }
    let out = fti(&["l3-encode"], dir.path());
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stdout.starts_with("group of 4 ranks (0,1,2,3), checkpoint 1, maxFs 15236\n"),
        "{stdout}"
    );
    assert_eq!(stdout.matches("wrote Ckpt1-RSed").count(), 4, "{stdout}");
    for r in 0..4 {
        assert!(same_as_fixture(dir.path(), "RSed", r), "RSed {r}");
    }
    let verify = Command::new(env!("CARGO_BIN_EXE_fti"))
        .arg("verify")
        .args(
            std::fs::read_dir(dir.path())
                .unwrap()
                .map(|e| e.unwrap().path()),
        )
        .output()
        .unwrap();
    assert!(verify.status.success(), "{}", text(&verify).0);
}

#[test]
fn rebuild_reports_and_restores() {
    let dir = group_dir();
    let p = |name: &str| dir.path().join(name);
    std::fs::remove_file(p("Ckpt1-Rank1.fti")).unwrap();
    std::fs::remove_file(p("Ckpt1-RSed3.fti")).unwrap();
    let mut bytes = std::fs::read(p("Ckpt1-Rank2.fti")).unwrap();
    bytes[5000] ^= 1;
    std::fs::write(p("Ckpt1-Rank2.fti"), bytes).unwrap();
    // RSed3 lost: the group is not inferred.
    let out = fti(&["l3-rebuild"], dir.path());
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out).1.contains("rank(s) 3 have none"),
        "{}",
        text(&out).1
    );
    let out = fti(&["l3-rebuild", "--group", "0,1,2,3"], dir.path());
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stdout.contains("Ckpt1-Rank1.fti          missing"),
        "{stdout}"
    );
    assert!(
        stdout.contains("Ckpt1-Rank2.fti          unusable: byte 0: FB.checksum mismatch"),
        "{stdout}"
    );
    for f in ["Rank1", "Rank2", "RSed3"] {
        assert!(
            stdout.contains(&format!("rebuilt Ckpt1-{f}.fti\n")),
            "{stdout}"
        );
    }
    for r in 0..4 {
        assert!(same_as_fixture(dir.path(), "Rank", r), "Rank {r}");
        assert!(same_as_fixture(dir.path(), "RSed", r), "RSed {r}");
    }
    let out = fti(&["l3-rebuild"], dir.path());
    assert!(out.status.success());
    assert!(text(&out).0.ends_with("nothing to rebuild\n"));
}

#[test]
fn rebuild_refuses_what_cannot_be_done() {
    let dir = group_dir();
    let p = |name: &str| dir.path().join(name);
    for f in ["Rank0", "Rank1", "RSed1", "RSed2", "RSed3"] {
        std::fs::remove_file(p(&format!("Ckpt1-{f}.fti"))).unwrap();
    }
    // Rank 1 lost both files: only --group knows it.
    let out = fti(&["l3-rebuild", "--group", "0,1,2,3"], dir.path());
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stdout.contains("Ckpt1-Rank0.fti          missing"),
        "{stdout}"
    );
    assert!(
        stderr.contains("5 of the group's 8 files are missing or unusable: Reed-Solomon over 4 ranks rebuilds at most 4"),
        "{stderr}"
    );
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(left.len(), 3, "nothing written");
    // Without --group, ranks 0, 2, 3 are not taken for a group of 3: refused, nothing written.
    let out = fti(&["l3-rebuild"], dir.path());
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out).1.contains("give the group's ranks"),
        "{}",
        text(&out).1
    );
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 3);

    // Every RSed file lost and rank 1's Rank file too: ranks 0, 2, 3 would be rebuilt as a
    // group of 3, with a code for a group that does not exist.
    let dir = group_dir();
    let p = |name: &str| dir.path().join(name);
    for f in ["RSed0", "RSed1", "RSed2", "RSed3", "Rank1"] {
        std::fs::remove_file(p(&format!("Ckpt1-{f}.fti"))).unwrap();
    }
    let out = fti(&["l3-rebuild"], dir.path());
    assert_eq!(out.status.code(), Some(1), "{}", text(&out).0);
    assert!(text(&out).1.contains("--group"), "{}", text(&out).1);
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        3,
        "nothing written"
    );

    // Rank 3 lost both files: without --group the group looks like ranks 0..2 and the rebuilt
    // file does not verify; with it, the rebuild works.
    let dir = group_dir();
    let p = |name: &str| dir.path().join(name);
    for f in ["Rank3", "RSed3", "Rank0"] {
        std::fs::remove_file(p(&format!("Ckpt1-{f}.fti"))).unwrap();
    }
    let out = fti(&["l3-rebuild"], dir.path());
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr.contains("the rebuilt file does not verify"),
        "{stderr}"
    );
    assert!(!stderr.contains("note:"), "{stderr}");
    let out = fti(&["l3-rebuild", "--group", "0,1,2,3"], dir.path());
    assert!(out.status.success(), "{}", text(&out).1);
    for r in 0..4 {
        assert!(same_as_fixture(dir.path(), "Rank", r), "Rank {r}");
        assert!(same_as_fixture(dir.path(), "RSed", r), "RSed {r}");
    }
}

#[test]
fn id_and_group_selection() {
    let dir = group_dir();
    std::fs::write(dir.path().join("Ckpt2-Rank0.fti"), b"other").unwrap();
    let out = fti(&["l3-rebuild"], dir.path());
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out).1;
    assert!(
        stderr.contains("files of several checkpoints (1, 2): choose one"),
        "{stderr}"
    );
    let out = fti(&["l3-rebuild", "--id", "1"], dir.path());
    assert!(out.status.success(), "{}", text(&out).1);
    let out = fti(&["l3-encode", "--id", "9"], dir.path());
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out).1.contains("of checkpoint 9"), "{}", text(&out).1);
    // A wrong order is refused, not used to write wrong code. (Reversing 4 ranks is not
    // wrong: 3 - i = i XOR 3, and M[i][j] depends only on i XOR j, so the code is the same.)
    let out = fti(
        &["l3-rebuild", "--id", "1", "--group", "3,2,1,0"],
        dir.path(),
    );
    assert!(out.status.success(), "{}", text(&out).1);
    let out = fti(
        &["l3-rebuild", "--id", "1", "--group", "1,0,2,3"],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out).1;
    assert!(stderr.contains("ranks or their order"), "{stderr}");
}

#[test]
fn help_teaches() {
    for cmd in ["l3-encode", "l3-rebuild"] {
        let out = Command::new(env!("CARGO_BIN_EXE_fti"))
            .args([cmd, "--help"])
            .output()
            .unwrap();
        let help = text(&out).0;
        assert!(out.status.success());
        for word in [
            "--group",
            "--id",
            "Examples:",
            "maxFs",
            "Ckpt<id>-RSed<r>.fti",
        ] {
            assert!(help.contains(word), "{cmd} --help lacks {word}");
        }
    }
}
