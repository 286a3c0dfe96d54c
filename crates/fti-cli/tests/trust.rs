//! What the `fti` tool does with files and directories that could lose a user's data or hand
//! back wrong bytes: FIFOs named like checkpoints, files whose metadata lies, directories it
//! did not create.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util::{fti, seed, text};

fn mkfifo(path: &Path) {
    let status = Command::new("mkfifo").arg(path).status().unwrap();
    assert!(status.success());
}

#[test]
fn a_fifo_named_like_a_checkpoint_is_reported_not_read() {
    let dir = tempfile::tempdir().unwrap();
    let l1 = dir.path().join("exec/l1");
    std::fs::create_dir_all(&l1).unwrap();
    let fifo = l1.join("Ckpt2-Rank0.fti");
    mkfifo(&fifo);
    std::fs::copy(seed(1), l1.join("Ckpt1-Rank1.fti")).unwrap();

    let out = fti(args!["verify", fifo]);
    assert_eq!(out.status.code(), Some(1));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("Ckpt2-Rank0.fti: not a regular file (a FIFO)"),
        "{stdout}"
    );

    let out = fti(args!["inspect", fifo]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("not a regular file (a FIFO)"));

    let out = fti(args!["list", dir.path()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("Ckpt2-Rank0.fti: not a regular file, skipped"));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("Ckpt1-Rank1.fti"), "{stdout}");
    assert!(!stdout.contains("Ckpt2-Rank0.fti"), "{stdout}");
}

/// A checkpoint of two variables of the same size (ids 1 and 2, bytes 1 and 2), written by
/// the library, and the same file with a lie in its metadata: the two `VMD.id`s swapped, or
/// variable 1's `VMD.chunksize` set to 0. Only the file checksum covers those fields.
fn two_vars(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let layout = ftiff::Layout::plan(
        None,
        &[
            ftiff::VarSize { id: 1, size: 4096 },
            ftiff::VarSize { id: 2, size: 4096 },
        ],
    )
    .unwrap();
    let (a, b) = (vec![1u8; 4096], vec![2u8; 4096]);
    let good = dir.join("Ckpt1-Rank0.fti");
    let file = std::fs::File::create(&good).unwrap();
    ftiff::write_file(&file, &layout, &[&a, &b], &ftiff::WriteOptions::default()).unwrap();
    let bytes = std::fs::read(&good).unwrap();
    let (v0, v1) = (96 + 12, 96 + 12 + 64);
    let mut swapped = bytes.clone();
    swapped.copy_within(v1..v1 + 4, v0);
    swapped[v1..v1 + 4].copy_from_slice(&bytes[v0..v0 + 4]);
    let mut cut = bytes.clone();
    cut[v0 + 36..v0 + 44].fill(0);
    let (s, c) = (dir.join("swapped.fti"), dir.join("cut.fti"));
    std::fs::write(&s, swapped).unwrap();
    std::fs::write(&c, cut).unwrap();
    (good, s, c)
}

#[test]
fn extract_refuses_a_file_that_does_not_verify() {
    let dir = tempfile::tempdir().unwrap();
    let (good, swapped, cut) = two_vars(dir.path());
    for bad in [&swapped, &cut] {
        let out_file = dir.path().join("v1.bin");
        let out = fti(args!["extract", bad, "--id", "1", "-o", out_file]);
        assert_eq!(out.status.code(), Some(1), "{}", bad.display());
        assert!(
            text(&out.stderr).contains("does not verify"),
            "{}",
            text(&out.stderr)
        );
        assert!(!out_file.exists(), "{}: bytes were written", bad.display());
        let out = fti(args!["extract", bad, "--all", dir.path().join("all")]);
        assert_eq!(out.status.code(), Some(1));
        // Skipping the check is possible, and said.
        let out = fti(args!["extract", bad, "--no-verify", "--id", "2", "-o", "-"]);
        assert!(
            text(&out.stderr).contains("not verified"),
            "{}",
            text(&out.stderr)
        );
    }
    // `-o -` writes the variable to stdout.
    let out = fti(args!["extract", good, "--id", "2", "-o", "-"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(out.stdout, vec![2u8; 4096]);
}

#[test]
fn diff_exit_codes_and_verification() {
    let dir = tempfile::tempdir().unwrap();
    let (good, swapped, cut) = two_vars(dir.path());
    let out = fti(args!["diff", good, good]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("id 1: unchanged"));
    let out = fti(args!["diff", seed(1), seed(2)]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    for bad in [&swapped, &cut] {
        let out = fti(args!["diff", good, bad]);
        assert_eq!(out.status.code(), Some(2), "{}", bad.display());
        assert!(out.stdout.is_empty(), "{}", text(&out.stdout));
        assert!(text(&out.stderr).contains("does not verify"));
    }
    let out = fti(args!["diff", good, dir.path().join("missing.fti")]);
    assert_eq!(out.status.code(), Some(2));
}

/// `extract --all DIR` with a symbolic link planted at `DIR/var-1.bin` (and a FIFO at
/// `DIR/var-2.bin`): the outputs replace them, nothing is written through the link and the
/// FIFO does not block the tool.
#[test]
fn extract_never_writes_through_a_link_or_into_a_fifo_planted_at_an_output() {
    let dir = tempfile::tempdir().unwrap();
    let (good, _, _) = two_vars(dir.path());
    let all = dir.path().join("all");
    std::fs::create_dir(&all).unwrap();
    let victim = dir.path().join("victim");
    std::fs::write(&victim, b"keep me").unwrap();
    std::os::unix::fs::symlink(&victim, all.join("var-1.bin")).unwrap();
    mkfifo(&all.join("var-2.bin"));
    let out = fti(args!["extract", good, "--all", all]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(std::fs::read(&victim).unwrap(), b"keep me");
    for (id, byte) in [(1, 1u8), (2, 2u8)] {
        let path = all.join(format!("var-{id}.bin"));
        assert!(path.symlink_metadata().unwrap().file_type().is_file());
        assert_eq!(std::fs::read(&path).unwrap(), vec![byte; 4096]);
    }
    assert_eq!(
        std::fs::read_dir(&all).unwrap().count(),
        2,
        "no temporary left"
    );
}

/// A checkpoint of one variable of `size` bytes.
fn one_var(path: &Path, size: u64) {
    let layout = ftiff::Layout::plan(None, &[ftiff::VarSize { id: 1, size }]).unwrap();
    let data = vec![3u8; size as usize];
    let file = std::fs::File::create(path).unwrap();
    ftiff::write_file(&file, &layout, &[&data], &ftiff::WriteOptions::default()).unwrap();
}

/// Starts `fti ARGS`, waits until it has `file` mapped, then shrinks the file in place (as
/// `cp` over it does). `None` when the tool finished before the file could be shrunk.
fn shrink_while_mapped(args: &[&std::ffi::OsStr], file: &Path) -> Option<std::process::Output> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_fti"))
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let maps = format!("/proc/{}/maps", child.id());
    let name = file.to_string_lossy().into_owned();
    loop {
        if child.try_wait().unwrap().is_some() {
            let _ = child.wait_with_output();
            return None;
        }
        if std::fs::read_to_string(&maps).is_ok_and(|m| m.contains(&name)) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_micros(200));
    }
    std::fs::OpenOptions::new()
        .write(true)
        .open(file)
        .unwrap()
        .set_len(4096)
        .unwrap();
    Some(child.wait_with_output().unwrap())
}

/// A file shrinking while `verify` or `extract` has it mapped is an error naming the file
/// (exit 1), never a bare SIGBUS; `extract --all` then leaves no output behind.
#[test]
fn a_file_shrinking_under_the_tool_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let all = dir.path().join("all");
    for command in ["verify", "extract"] {
        let mut size = 64u64 << 20;
        let out = loop {
            let file = dir.path().join(format!("{command}-{size}/Ckpt1-Rank0.fti"));
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            one_var(&file, size);
            let args: Vec<&std::ffi::OsStr> = if command == "verify" {
                args!["verify", file].to_vec()
            } else {
                args!["extract", file, "--all", all].to_vec()
            };
            match shrink_while_mapped(&args, &file) {
                Some(out) => break (out, file),
                // Finished first: a larger file takes longer.
                None if size < 1 << 30 => size *= 2,
                None => panic!("{command} always finished before the file could be shrunk"),
            }
        };
        let (out, file) = out;
        let stderr = text(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(1),
            "{command}: {:?} {stderr}",
            out.status
        );
        assert!(
            stderr.contains(&format!(
                "{}: the file changed while it was being read",
                file.display()
            )),
            "{command}: {stderr}"
        );
        if command == "extract" {
            let left = std::fs::read_dir(&all).map_or(0, |d| d.count());
            assert_eq!(left, 0, "extract left outputs behind");
        }
    }
}
