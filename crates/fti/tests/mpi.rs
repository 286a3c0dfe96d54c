//! The multi-rank runtime over real MPI: `examples/mpi_levels` started by `mpirun` with 2 to 5
//! ranks. Our L2 and L4 files equal FTI 1.1's; FTI's L2 tree restarts with a lost file; the loss
//! of a node's whole directory is recovered through L2 with odd and uneven groups; a rank
//! SIGKILLed at every step of publishing an L2 checkpoint leaves a recoverable checkpoint.
//! Runs with `cargo build -p fti --features mpi --examples && cargo test -p fti --features mpi`
//! (scripts/test); the launcher is `$MPIRUN` (default `mpirun`), e.g. `MPIRUN=mpirun.mpich` for
//! a build made with MPICH (scripts/test-mpich).
#![cfg(feature = "mpi")]

use crate::util::files;
use crate::util::trees;
use files::files_below;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const FTI_EXEC: &str = "2026-11-22_04-12-33";

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/fti/levels")
}

fn example() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let path = exe
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("examples/mpi_levels");
    assert!(
        path.exists(),
        "{} is missing: build it with `cargo build -p fti --features mpi --examples`",
        path.display()
    );
    path
}

/// The MPI launchers the tests know.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Launcher {
    OpenMpi,
    /// MPICH's (and its derivatives'), Hydra.
    Hydra,
}

/// The MPI launcher, `$MPIRUN` (default `mpirun`), and which one it is (from its `--version`).
fn launcher() -> &'static (String, Launcher) {
    static LAUNCHER: std::sync::OnceLock<(String, Launcher)> = std::sync::OnceLock::new();
    LAUNCHER.get_or_init(|| {
        let program = std::env::var("MPIRUN").unwrap_or_else(|_| "mpirun".to_owned());
        let out = Command::new(&program)
            .arg("--version")
            .output()
            .unwrap_or_else(|e| panic!("cannot run the MPI launcher {program} ($MPIRUN): {e}"));
        let version = String::from_utf8_lossy(&out.stdout);
        let kind = if ["Open MPI", "OpenRTE", "open-mpi.org"]
            .iter()
            .any(|s| version.contains(s))
        {
            Launcher::OpenMpi
        } else if version.contains("HYDRA") {
            Launcher::Hydra
        } else {
            panic!("{program} ($MPIRUN) is neither Open MPI's launcher nor MPICH's:\n{version}")
        };
        (program, kind)
    })
}

/// `mpirun -np <np> mpi_levels args`. Open MPI's launcher refuses to run as root and to start
/// more ranks than there are cores unless told to; MPICH's (Hydra) needs neither and knows
/// neither option.
fn mpirun(np: u32, args: &[&str]) -> Command {
    launch(np, args, None)
}

/// The same, each rank's stdout and stderr going to `files/out.<rank>` and `files/err.<rank>`
/// when `files` is given (Hydra's options).
fn launch(np: u32, args: &[&str], files: Option<&Path>) -> Command {
    let (program, kind) = launcher();
    let mut cmd = Command::new(program);
    match kind {
        Launcher::OpenMpi => {
            cmd.args(["--allow-run-as-root", "--oversubscribe"]);
        }
        Launcher::Hydra => {
            if let Some(dir) = files {
                cmd.arg("-outfile-pattern")
                    .arg(dir.join("out.%r"))
                    .arg("-errfile-pattern")
                    .arg(dir.join("err.%r"));
            }
        }
    }
    cmd.args(["-np", &np.to_string()]).arg(example()).args(args);
    cmd
}

/// Runs a job to its end and returns its stdout, after checking that it succeeded. Hydra
/// forwards the ranks' output without keeping lines whole (a line of one rank may be cut by
/// another's): there each rank writes to files of its own, read back in rank order.
fn run(np: u32, args: &[&str]) -> String {
    let files = (launcher().1 == Launcher::Hydra).then(|| tempfile::tempdir().unwrap());
    let Output {
        status,
        mut stdout,
        mut stderr,
    } = launch(np, args, files.as_ref().map(|d| d.path()))
        .output()
        .unwrap_or_else(|e| panic!("cannot run {} ($MPIRUN): {e}", launcher().0));
    if let Some(dir) = &files {
        let ranks = |stream: &str| -> Vec<u8> {
            (0..np)
                .flat_map(|r| {
                    std::fs::read(dir.path().join(format!("{stream}.{r}"))).unwrap_or_default()
                })
                .collect()
        };
        stdout = [ranks("out"), stdout].concat();
        stderr = [ranks("err"), stderr].concat();
    }
    let (out, err) = (
        String::from_utf8_lossy(&stdout),
        String::from_utf8_lossy(&stderr),
    );
    assert!(
        status.success(),
        "mpirun -np {np} {args:?}: {status}\n{out}\n{err}"
    );
    assert_plain(&stdout, &stderr);
    out.into_owned()
}

/// A job's output, redirected as `mpirun ... > log` redirects it, holds no terminal escape
/// (each rank's stdout is a pseudo-terminal under mpirun, whatever the job's output is).
fn assert_plain(stdout: &[u8], stderr: &[u8]) {
    for (name, bytes) in [("stdout", stdout), ("stderr", stderr)] {
        assert!(
            !bytes.contains(&0x1b),
            "an escape byte in {name}: {}",
            String::from_utf8_lossy(bytes)
        );
    }
}

/// `mpirun ... > log` with FTI's information lines on: the log holds them, uncoloured,
/// although every rank's stdout is a pseudo-terminal under mpirun.
#[test]
fn logs_of_mpirun_jobs_hold_no_escape_bytes() {
    let root = tempfile::tempdir().unwrap();
    let r = root.path().to_str().unwrap();
    let out = mpirun(2, &["write", r, "2", "2"])
        .env("FTI_VERBOSITY", "1")
        .env_remove("FTI_COLOR")
        .env_remove("NO_COLOR")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("[ FTI  Information ] : "),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert_plain(&out.stdout, &out.stderr);
}

/// `RECOVERED <rank> ...` lines by rank.
fn recovered(out: &str, np: u32) -> Vec<String> {
    let mut lines: Vec<String> = out
        .lines()
        .filter_map(|l| l.strip_prefix("RECOVERED "))
        .map(str::to_owned)
        .collect();
    lines.sort();
    assert_eq!(lines.len(), np as usize, "{out}");
    lines
}

fn exec_of(out: &str) -> String {
    out.lines()
        .find_map(|l| l.strip_prefix("EXEC "))
        .unwrap()
        .to_owned()
}

#[test]
fn l2_and_l4_files_equal_fti_files() {
    for (vector, level, theirs_exec) in [("L2", "2", FTI_EXEC), ("L4", "4", "2026-11-22_04-12-35")]
    {
        let root = tempfile::tempdir().unwrap();
        let r = root.path().to_str().unwrap();
        let exec = exec_of(&run(4, &["write", r, level, "4"]));
        // The dataset's checkpoint 2 at this level is what FTI left in files/step2 (its L1
        // checkpoint 1 retired).
        let ours = trees::tree(&root.path().join("run"), &exec);
        let theirs = trees::tree(&fixtures().join(vector).join("files/step2"), theirs_exec);
        assert_eq!(
            ours.keys().collect::<Vec<_>>(),
            theirs.keys().collect::<Vec<_>>(),
            "{vector}"
        );
        for (name, bytes) in theirs.iter().filter(|(n, _)| !n.ends_with("Topology.fti")) {
            trees::assert_same_but_unreproducible(name, &ours[name], bytes);
        }
        // Recovered as written.
        let lines = recovered(&run(4, &["recover", r, "4"]), 4);
        assert!(
            lines.iter().all(|l| l.contains(&format!(" 2 L{level} "))),
            "{lines:?}"
        );
    }
}

#[test]
fn restart_from_fti_l2_tree_with_a_lost_file() {
    let root = tempfile::tempdir().unwrap();
    trees::copy_tree(&fixtures().join("L2/files/step2"), &root.path().join("run"));
    std::fs::remove_file(
        root.path()
            .join(format!("run/Local/node1/{FTI_EXEC}/l2/Ckpt2-Rank1.fti")),
    )
    .unwrap();
    let out = run(
        4,
        &["recover", root.path().to_str().unwrap(), "4", FTI_EXEC],
    );
    for line in recovered(&out, 4) {
        assert!(line.contains(" 2 L2 L2, rank(s) [1] rebuilt"), "{line}");
    }
}

#[test]
fn node_loss_recovers_through_l2_for_2_to_5_ranks() {
    // (ranks, group_size, lost node): one group of 2 and of 3, 4 ranks in 2 groups of 2, 5 ranks
    // in groups of 2 (the leftover node joins the last group: [0,1], [2,3,4]).
    for (np, group, lost) in [(2, 4, 1), (3, 4, 0), (4, 2, 2), (5, 2, 4)] {
        let root = tempfile::tempdir().unwrap();
        let r = root.path().to_str().unwrap();
        run(np, &["write", r, "2", &group.to_string()]);
        std::fs::remove_dir_all(root.path().join(format!("run/Local/node{lost}"))).unwrap();
        let lines = recovered(&run(np, &["recover", r, &group.to_string()]), np);
        for line in lines {
            assert!(
                line.contains(&format!(" 2 L2 L2, rank(s) [{lost}] rebuilt")),
                "{np} ranks: {line}"
            );
        }
    }
}

/// Starts a run in which rank `victim` stops at `step`, SIGKILLs it there, and lets mpirun end
/// the others.
fn kill_at(np: u32, root: &str, victim: u32, step: &str, background: bool) {
    let mut child = mpirun(np, &["write", root, "2", "4"])
        .env("BACKGROUND", if background { "1" } else { "0" })
        .env("STOP_RANK", victim.to_string())
        .env("STOP_AT", step)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let rx = stderr_lines(&mut child);
    let mut pid = None;
    for line in rx.iter() {
        if let Some(p) = line.strip_prefix("PID ") {
            pid = Some(p.trim().to_owned());
        }
        if line.contains("FTI_STOPPED") {
            break;
        }
    }
    kill_and_wait(&mut child, &[pid.expect("the victim announced its pid")]);
}

/// The lines of `child`'s stderr as they come. It is read to its end in a thread: closing
/// the pipe early would make mpirun fail (and end the ranks) before a kill.
fn stderr_lines(child: &mut std::process::Child) -> std::sync::mpsc::Receiver<String> {
    let stderr = BufReader::new(child.stderr.take().unwrap());
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in stderr.lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    rx
}

/// SIGKILLs the processes `pids` (ranks of `child`, an mpirun) and waits for mpirun to end.
fn kill_and_wait(child: &mut std::process::Child, pids: &[String]) {
    assert!(Command::new("kill")
        .arg("-9")
        .args(pids)
        .status()
        .unwrap()
        .success());
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        assert!(
            Instant::now() < deadline,
            "mpirun did not end after the kill"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn rank_killed_while_publishing_l2_leaves_a_recoverable_checkpoint() {
    // Checkpoint 1 (L1) passes each step once per rank; checkpoint 2 (L2) passes "partner"
    // before any byte is sent, "written", "fsynced" and "renamed" twice (own file, partner
    // copy), then "retired" once, after every rank has published. Before the partner copy only
    // checkpoint 1 exists; once the victim's partner holds its copy, checkpoint 2 may be
    // recovered (its own file rebuilt from the copy); once the victim retired checkpoint 1,
    // every rank had published checkpoint 2.
    for (step, oldest, newest) in [
        ("partner:1", 1, 1),
        ("written:2", 1, 2),
        ("renamed:2", 1, 2),
        ("renamed:3", 1, 2),
        ("dir-fsynced:2", 1, 2),
        ("retired:2", 2, 2),
    ] {
        let root = tempfile::tempdir().unwrap();
        let r = root.path().to_str().unwrap();
        kill_at(3, r, 1, step, false);
        let lines = recovered(&run(3, &["recover", r, "4"]), 3);
        let ids: Vec<&str> = lines.iter().map(|l| l.split(' ').nth(1).unwrap()).collect();
        assert!(
            ids.iter().all(|&id| id == ids[0]),
            "{step}: ranks agree: {lines:?}"
        );
        let id: i32 = ids[0]
            .parse()
            .unwrap_or_else(|_| panic!("{step}: nothing recovered: {lines:?}"));
        assert!((oldest..=newest).contains(&id), "{step}: {lines:?}");
    }
}

#[test]
fn l3_recovers_lost_files_over_mpi() {
    // (ranks, group size, node whose directory is lost, another rank whose Rank file is lost)
    for (np, group, node, rank) in [(4, 4, 1, 2), (5, 5, 4, 0), (3, 4, 0, 2)] {
        let root = tempfile::tempdir().unwrap();
        let r = root.path().to_str().unwrap();
        let exec = exec_of(&run(np, &["write", r, "3", &group.to_string()]));
        std::fs::remove_dir_all(root.path().join(format!("run/Local/node{node}"))).unwrap();
        std::fs::remove_file(root.path().join(format!(
            "run/Local/node{rank}/{exec}/l3/Ckpt2-Rank{rank}.fti"
        )))
        .unwrap();
        let lost = {
            let mut l = [node, rank];
            l.sort();
            format!("[{}, {}]", l[0], l[1])
        };
        for line in recovered(&run(np, &["recover", r, &group.to_string()]), np) {
            assert!(
                line.contains(&format!(" 2 L3 L3, rank(s) {lost} rebuilt by Reed-Solomon decoding, RSed files of rank(s) [{node}] re-encoded")),
                "{np} ranks: {line}"
            );
        }
    }
}

#[test]
fn background_post_processing_over_mpi() {
    let root = tempfile::tempdir().unwrap();
    let r = root.path().to_str().unwrap();
    let out = mpirun(4, &["write", r, "2", "4"])
        .env("BACKGROUND", "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    // Open MPI and MPICH provide MPI_THREAD_MULTIPLE: the partner copies went through the thread.
    assert!(stdout.contains("POST background"), "{stdout}");
    let exec = exec_of(&stdout);
    let ours = trees::tree(&root.path().join("run"), &exec);
    let theirs = trees::tree(&fixtures().join("L2/files/step2"), FTI_EXEC);
    assert_eq!(
        ours.keys().collect::<Vec<_>>(),
        theirs.keys().collect::<Vec<_>>()
    );
    for (name, bytes) in theirs.iter().filter(|(n, _)| !n.ends_with("Topology.fti")) {
        trees::assert_same_but_unreproducible(name, &ours[name], bytes);
    }
}

#[test]
fn rank_killed_during_background_post_processing_leaves_a_recoverable_checkpoint() {
    // With the partner copies in the background thread, checkpoint 2's own files are published
    // on every rank before `checkpoint` returns; the background then writes the copy ("written",
    // "fsynced", "renamed" for the third time) and retires checkpoint 1.
    for step in ["written:3", "renamed:3", "retired:2"] {
        let root = tempfile::tempdir().unwrap();
        let r = root.path().to_str().unwrap();
        kill_at(3, r, 1, step, true);
        let lines = recovered(&run(3, &["recover", r, "4"]), 3);
        for line in &lines {
            assert!(line.contains(" 2 L2 "), "{step}: {lines:?}");
        }
        // The victim's partner copy (of rank 0's file) may be missing: restored, or never
        // needed; every rank recovered checkpoint 2 from its own file.
        assert!(
            lines.iter().all(|l| l.contains("own file")),
            "{step}: {lines:?}"
        );
    }
}

/// Four ranks checkpoint asynchronously at L1, L2, L3, L4 in turn, with and without
/// `MPI_THREAD_MULTIPLE`; every rank is SIGKILLed at a random instant (a checkpoint is nearly
/// always in flight). The restart returns, on every rank, the last checkpoint rank 0 saw
/// complete or the one after it, with exact data.
#[test]
fn ranks_killed_with_an_asynchronous_checkpoint_in_flight() {
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    for round in 0..6 {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let threading = if round % 2 == 0 { "multiple" } else { "single" };
        let root = tempfile::tempdir().unwrap();
        let r = root.path().to_str().unwrap();
        let mut child = mpirun(4, &["async", r, "4"])
            .env("THREADING", threading)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let seen = std::thread::spawn(move || {
            let mut seen = 0;
            for line in stdout.lines().map_while(Result::ok) {
                if let Some(k) = line.strip_prefix("COMPLETE ") {
                    seen = k.trim().parse().unwrap();
                }
            }
            seen
        });
        let pids: Vec<String> = stderr_lines(&mut child)
            .iter()
            .filter_map(|l| l.strip_prefix("PID ").map(|p| p.trim().to_owned()))
            .take(4)
            .collect();
        assert_eq!(pids.len(), 4, "round {round}: every rank announced its pid");
        std::thread::sleep(Duration::from_millis(300 + seed % 1200));
        kill_and_wait(&mut child, &pids);
        let seen: i32 = seen.join().unwrap();
        let out = mpirun(4, &["recover", r, "4"])
            .env("ASYNC", "1")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "round {round} ({threading}): restart failed after seeing {seen} complete\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        for line in recovered(&stdout, 4) {
            let id = line.split(' ').nth(1).unwrap();
            let ok = match id.parse::<i32>() {
                Ok(id) => id == seen || id == seen + 1,
                Err(_) => seen == 0,
            };
            assert!(
                ok,
                "round {round} ({threading}): saw {seen} complete, restarted: {line}"
            );
        }
    }
}

/// A 4-rank checkpoint restarted on 2 or 8 ranks: init fails on every rank naming both
/// counts, and nothing is written.
#[test]
fn restart_on_another_number_of_ranks_fails_on_every_rank() {
    let root = tempfile::tempdir().unwrap();
    let r = root.path().to_str().unwrap();
    let exec = exec_of(&run(4, &["write", r, "2", "2"]));
    let before = files_below(root.path());
    for np in [2, 8] {
        let out = mpirun(np, &["recover", r, "2", &exec]).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{np} ranks restarted:\n{err}");
        for rank in 0..np {
            assert!(
                err.contains(&format!(
                    "rank {rank}: execution {exec} was checkpointed by 4 ranks, this run has {np}"
                )),
                "{np} ranks, rank {rank}:\n{err}"
            );
        }
        assert!(
            files_below(root.path()) == before,
            "{np} ranks wrote something"
        );
    }
    let lines = recovered(&run(4, &["recover", r, "2", &exec]), 4);
    assert!(lines.iter().all(|l| l.contains(" 2 L2 ")), "{lines:?}");
}

/// Redundancy repaired at restart, over MPI: with every partner copy (L2) or `RSed` file (L3)
/// of the checkpoint erased, the restart makes them all again before init returns (partner
/// copies byte for byte) and they verify; a node lost next is then recovered through them.
#[test]
fn lost_redundancy_is_made_again_over_mpi() {
    for (level, kind) in [("2", "Pcof"), ("3", "RSed")] {
        let root = tempfile::tempdir().unwrap();
        let r = root.path().to_str().unwrap();
        let exec = exec_of(&run(4, &["write", r, level, "4"]));
        let path = |node: u32| {
            root.path().join(format!(
                "run/Local/node{node}/{exec}/l{level}/Ckpt2-{kind}{node}.fti"
            ))
        };
        let written: Vec<Vec<u8>> = (0..4).map(|n| std::fs::read(path(n)).unwrap()).collect();
        for n in 0..4 {
            std::fs::remove_file(path(n)).unwrap();
        }
        for line in recovered(&run(4, &["recover", r, "4"]), 4) {
            assert!(
                line.contains(&format!(" 2 L{level} ")) && line.contains("[0, 1, 2, 3] made again"),
                "L{level}: {line}"
            );
        }
        if kind == "Pcof" {
            // Partner copies are byte copies: back exactly as written.
            for (n, bytes) in written.iter().enumerate() {
                let back = std::fs::read(path(n as u32)).unwrap();
                assert!(
                    &back == bytes,
                    "L{level}: {} differs",
                    path(n as u32).display()
                );
            }
        }
        assert!(
            crate::repair::intact_and_redundant(root.path()),
            "L{level}: repaired files verify"
        );
        std::fs::remove_dir_all(root.path().join("run/Local/node1")).unwrap();
        for line in recovered(&run(4, &["recover", r, "4"]), 4) {
            assert!(
                line.contains(&format!(" 2 L{level} ")) && line.contains("rank(s) [1] rebuilt"),
                "L{level}, node 1 lost: {line}"
            );
        }
    }
}
