//! Runs the built tools on every fixture trace and compares stdout and the exit status with
//! the outputs of the original ovni 1.14 tools.

use std::fs;
use std::path::{Path, PathBuf};

use crate::util::{fixtures, run};

fn cases(kind: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = fs::read_dir(fixtures().join(kind))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("golden").is_dir())
        .collect();
    v.sort();
    v
}

fn all_cases() -> Vec<PathBuf> {
    let mut v = cases("traces");
    v.extend(cases("invalid"));
    assert_eq!(v.len(), 26, "fixture set changed");
    v
}

fn golden_rc(case: &Path, name: &str) -> i32 {
    fs::read_to_string(case.join("golden").join(format!("{name}.rc")))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

fn check(bin: &str, args: &[&str], name: &str, compare_stdout: bool) {
    let mut failures = Vec::new();
    for case in all_cases() {
        let out = run(bin, args, &case);
        let want_rc = golden_rc(&case, name);
        let want = fs::read(case.join("golden").join(format!("{name}.stdout"))).unwrap();
        let rc = out.status.code();
        if rc != Some(want_rc) {
            failures.push(format!("{}: exit {rc:?}, want {want_rc}", case.display()));
        }
        if compare_stdout && out.stdout != want {
            failures.push(format!(
                "{}: stdout differs:\n{}",
                case.display(),
                String::from_utf8_lossy(&out.stdout)
            ));
        }
        if rc == Some(1) {
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(
                err.contains("ERROR"),
                "{}: no error message: {err}",
                case.display()
            );
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn ovnidump_matches_goldens() {
    check(env!("CARGO_BIN_EXE_ovnidump"), &["ovni"], "ovnidump", true);
}

#[test]
fn ovnidump_x_matches_goldens() {
    check(
        env!("CARGO_BIN_EXE_ovnidump"),
        &["-x", "ovni"],
        "ovnidump-x",
        true,
    );
}

#[test]
fn ovnitop_matches_goldens() {
    check(env!("CARGO_BIN_EXE_ovnitop"), &["ovni"], "ovnitop", true);
}

#[test]
fn ovnisort_check_matches_goldens() {
    check(
        env!("CARGO_BIN_EXE_ovnisort"),
        &["-c", "ovni"],
        "ovnisort-c",
        true,
    );
}

#[test]
fn ovnilint_exit_status_matches_ovniemu() {
    let mut failures = Vec::new();
    for case in all_cases() {
        let want = golden_rc(&case, "ovniemu");
        let out = run(env!("CARGO_BIN_EXE_ovnilint"), &["ovni"], &case);
        let stdout = String::from_utf8_lossy(&out.stdout);
        if out.status.code() != Some(want) {
            failures.push(format!(
                "{}: exit {:?}, want {want}",
                case.display(),
                out.status.code()
            ));
        }
        // One line per problem; only the first without --all.
        let lines = stdout.lines().count();
        if lines != usize::from(want != 0) {
            failures.push(format!("{}: {lines} lines of problems", case.display()));
        }
        let all = run(
            env!("CARGO_BIN_EXE_ovnilint"),
            &["--all", "--json", "ovni"],
            &case,
        );
        let json = String::from_utf8_lossy(&all.stdout);
        let accepted = format!("\"accepted\": {}", want == 0);
        if !json.contains(&accepted) || all.status.code() != Some(want) {
            failures.push(format!(
                "{}: --all --json disagrees: {json}",
                case.display()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn ovnidump_on_a_single_stream_directory() {
    for case in cases("traces") {
        let golden = fs::read_to_string(case.join("golden/ovnidump.stdout")).unwrap();
        let streams: Vec<String> = golden
            .lines()
            .map(|l| l.split("  ").nth(2).unwrap().to_string())
            .collect();
        let first = streams.first().unwrap().clone();
        let want: String = golden
            .lines()
            .filter(|l| l.split("  ").nth(2) == Some(first.as_str()))
            .map(|l| l.replacen(&format!("  {first}  "), "    ", 1) + "\n")
            .collect();
        let dir = format!("ovni/{first}");
        let out = run(env!("CARGO_BIN_EXE_ovnidump"), &[&dir], &case);
        assert_eq!(out.status.code(), Some(0));
        assert_eq!(
            String::from_utf8(out.stdout).unwrap(),
            want,
            "{}",
            case.display()
        );
    }
}

#[test]
fn ovnidump_on_a_sub_directory() {
    let case = fixtures().join("traces/multi");
    let golden = fs::read_to_string(case.join("golden/ovnidump.stdout")).unwrap();
    let want: String = golden
        .lines()
        .filter(|l| l.contains("  loom.nodeB/"))
        .map(|l| l.replacen("  loom.nodeB/", "  ", 1) + "\n")
        .collect();
    let out = run(env!("CARGO_BIN_EXE_ovnidump"), &["ovni/loom.nodeB"], &case);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8(out.stdout).unwrap(), want);
}

#[test]
fn no_streams_is_a_clear_error() {
    let tmp = tempfile::tempdir().unwrap();
    for bin in [
        env!("CARGO_BIN_EXE_ovnidump"),
        env!("CARGO_BIN_EXE_ovnitop"),
        env!("CARGO_BIN_EXE_ovnilint"),
    ] {
        let out = run(bin, &["."], tmp.path());
        assert_eq!(out.status.code(), Some(1));
        let text = String::from_utf8_lossy(&out.stderr) + String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("no streams found"), "{text}");
        let out = run(bin, &["does-not-exist"], tmp.path());
        assert_eq!(out.status.code(), Some(1));
    }
    let out = run(env!("CARGO_BIN_EXE_ovnisort"), &["-c", "."], tmp.path());
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn usage_errors_exit_2_and_help_exits_0() {
    let tmp = tempfile::tempdir().unwrap();
    for bin in [
        env!("CARGO_BIN_EXE_ovnidump"),
        env!("CARGO_BIN_EXE_ovnitop"),
        env!("CARGO_BIN_EXE_ovnisort"),
        env!("CARGO_BIN_EXE_ovnilint"),
    ] {
        assert_eq!(run(bin, &[], tmp.path()).status.code(), Some(2));
        assert_eq!(
            run(bin, &["--bogus", "x"], tmp.path()).status.code(),
            Some(2)
        );
        let help = run(bin, &["--help"], tmp.path());
        assert_eq!(help.status.code(), Some(0));
        assert!(String::from_utf8_lossy(&help.stdout).contains("Usage"));
    }
    // Without -c, ovnisort sorts: an empty directory is a trace it cannot load.
    let out = run(env!("CARGO_BIN_EXE_ovnisort"), &["."], tmp.path());
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn ovnisort_check_stderr_matches_goldens() {
    let mut failures = Vec::new();
    for case in all_cases() {
        let out = run(env!("CARGO_BIN_EXE_ovnisort"), &["-c", "ovni"], &case);
        let want = fs::read_to_string(case.join("golden/ovnisort-c.stderr")).unwrap();
        let got = String::from_utf8_lossy(&out.stderr);
        if got != want {
            failures.push(format!("{}:\n{got}\nwant:\n{want}", case.display()));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
