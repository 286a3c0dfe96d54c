//! `fti list` and `fti prune` on the multi-rank trees FTI 1.1 wrote (4 ranks, one per node,
//! one group of 4), copied to temporary directories and damaged there.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

use crate::util::{copy_dir, fixtures, text};

fn levels() -> PathBuf {
    fixtures().join("levels")
}

const EXEC_L2: &str = "2026-11-22_04-12-33";
const EXEC_L3: &str = "2026-11-22_04-12-34";

/// A copy of `levels/<tree>` in a new temporary directory, as `<tmp>/run`.
fn copy(tree: &str) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    copy_dir(&levels().join(tree), &run);
    (tmp, run)
}

fn fti(args: &[&str], dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fti"))
        .args(args)
        .arg(dir)
        .output()
        .unwrap()
}

/// `fti list --format json DIR`: the exit code and the parsed list.
fn list_json(dir: &Path) -> (Option<i32>, Vec<Value>) {
    let out = fti(&["list", "--format", "json"], dir);
    let parsed: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}{}", text(&out.stdout), text(&out.stderr)));
    assert_eq!(parsed["schema"], 2);
    (
        out.status.code(),
        parsed["checkpoints"].as_array().unwrap().clone(),
    )
}

/// The statuses of one kind of file (`rank_file`, `pcof`, `rsed`), rank by rank.
fn statuses(ckpt: &Value, kind: &str) -> Vec<String> {
    ckpt["ranks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| match &r[kind] {
            Value::Null => "null".to_owned(),
            file => file["status"].as_str().unwrap().to_owned(),
        })
        .collect()
}

fn node_dir(run: &Path, node: u32, exec: &str, level: &str) -> PathBuf {
    run.join(format!("Local/node{node}/{exec}/{level}"))
}

fn flip_byte(path: &Path, at: usize) {
    let mut bytes = std::fs::read(path).unwrap();
    bytes[at] ^= 0x40;
    std::fs::write(path, bytes).unwrap();
}

/// Every file below `dir`, sorted.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() && !path.is_symlink() {
            out.extend(files(&path));
        } else {
            out.push(path);
        }
    }
    out.sort();
    out
}

#[test]
fn l2_tree_survives_a_node_loss_and_not_a_second_one() {
    let (_tmp, run) = copy("L2/files/step2");
    let (code, list) = list_json(&run);
    assert_eq!(code, Some(0));
    assert_eq!(list.len(), 1);
    let c = &list[0];
    assert_eq!(
        (&c["exec_id"], &c["id"], &c["level"], &c["archived"]),
        (
            &Value::from(EXEC_L2),
            &Value::from(2),
            &Value::from(2),
            &Value::from(false)
        )
    );
    assert_eq!(statuses(c, "rank_file"), ["ok"; 4]);
    assert_eq!(statuses(c, "pcof"), ["ok"; 4]);
    assert_eq!(statuses(c, "rsed"), ["null"; 4]);
    assert_eq!(c["survives_node_loss"], true);

    // Node 1 is lost: rank 1's file survives as Pcof2 on node 2, so the checkpoint can still
    // be restored; but rank 0's copy was Pcof1 on node 1, so losing node 0 as well (or node 2,
    // which holds the only copy of rank 1's file) would lose a rank.
    std::fs::remove_dir_all(run.join("Local/node1")).unwrap();
    let (code, list) = list_json(&run);
    assert_eq!(code, Some(0), "missing files are not corrupt ones");
    let c = &list[0];
    assert_eq!(statuses(c, "rank_file"), ["ok", "missing", "ok", "ok"]);
    assert_eq!(statuses(c, "pcof"), ["ok", "missing", "ok", "ok"]);
    assert_eq!(c["ranks"][1]["rank_file"]["path"], Value::Null);
    assert_eq!(c["survives_node_loss"], false);
    let out = fti(&["list"], &run);
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("survives losing a node: no: losing node0 would leave rank 0 without its file or the copy of it (Ckpt2-Pcof1.fti)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("     1  -      missing  missing        0      -  -\n"),
        "{stdout}"
    );
}

#[test]
fn the_last_node_lost_is_still_a_rank_thanks_to_topology_fti() {
    let (_tmp, run) = copy("L2/files/step2");
    std::fs::remove_dir_all(run.join("Local/node3")).unwrap();
    let (_, list) = list_json(&run);
    // Topology.fti lists 4 nodes: rank 3 is missing, not unknown.
    assert_eq!(
        statuses(&list[0], "rank_file"),
        ["ok", "ok", "ok", "missing"]
    );
    assert_eq!(list[0]["survives_node_loss"], false);
    // Without it, only 3 ranks are known, and the copies do not match the partners
    // 3 ranks would have: said on stderr.
    std::fs::remove_dir_all(run.join("Meta")).unwrap();
    let (_, list) = list_json(&run);
    assert_eq!(statuses(&list[0], "rank_file"), ["ok", "ok", "ok"]);
    let out = fti(&["list"], &run);
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("Ckpt2-Pcof0.fti: not a copy of"),
        "{stderr}"
    );
}

#[test]
fn a_corrupt_partner_copy_is_reported_and_exits_1() {
    let (_tmp, run) = copy("L2/files/step2");
    let pcof = node_dir(&run, 2, EXEC_L2, "l2").join("Ckpt2-Pcof2.fti");
    flip_byte(&pcof, 500);
    let (code, list) = list_json(&run);
    assert_eq!(code, Some(1));
    let c = &list[0];
    assert_eq!(statuses(c, "rank_file"), ["ok"; 4]);
    assert_eq!(statuses(c, "pcof"), ["ok", "ok", "corrupt", "ok"]);
    assert_eq!(c["ranks"][2]["pcof"]["path"], pcof.display().to_string());
    // Pcof2 is the only copy of rank 1's file: losing node 1 would lose rank 1.
    assert_eq!(c["survives_node_loss"], false);

    let out = fti(&["list"], &run);
    assert_eq!(out.status.code(), Some(1));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains(&format!("  corrupt: {}: ", pcof.display())),
        "{stdout}"
    );
    assert!(
        stdout.contains("no: losing node1 would leave rank 1"),
        "{stdout}"
    );
    // Without verification nothing is known to be corrupt.
    let out = fti(&["list", "--no-verify"], &run);
    assert_eq!(out.status.code(), Some(0));
    assert!(text(&out.stdout).contains("unverified"));
}

#[test]
fn l3_tree_survives_while_each_group_keeps_k_of_2k_files() {
    let (_tmp, run) = copy("L3/files/step1");
    let (code, list) = list_json(&run);
    assert_eq!(code, Some(0));
    let c = &list[0];
    assert_eq!((&c["id"], &c["level"]), (&Value::from(1), &Value::from(3)));
    assert_eq!(statuses(c, "rank_file"), ["ok"; 4]);
    assert_eq!(statuses(c, "rsed"), ["ok"; 4]);
    assert_eq!(statuses(c, "pcof"), ["null"; 4]);
    assert_eq!(c["survives_node_loss"], true);

    // Node 1 lost (2 of 8 files): losing one more node leaves 4 of 8, enough.
    std::fs::remove_dir_all(run.join("Local/node1")).unwrap();
    let (_, list) = list_json(&run);
    assert_eq!(statuses(&list[0], "rsed"), ["ok", "missing", "ok", "ok"]);
    assert_eq!(list[0]["survives_node_loss"], true);

    // And a corrupt RSed file on node 2: 3 lost, another node makes 5 of 8.
    let rsed = node_dir(&run, 2, EXEC_L3, "l3").join("Ckpt1-RSed2.fti");
    flip_byte(&rsed, 10);
    let (code, list) = list_json(&run);
    assert_eq!(code, Some(1));
    assert_eq!(
        statuses(&list[0], "rsed"),
        ["ok", "missing", "corrupt", "ok"]
    );
    assert_eq!(list[0]["survives_node_loss"], false);
    let stdout = text(&fti(&["list"], &run).stdout);
    assert!(
        stdout.contains("with 5 of its 8 Rank and RSed files lost (at most 4 can be rebuilt)"),
        "{stdout}"
    );
}

#[test]
fn l1_never_survives_a_node_loss() {
    for step in ["step1", "step2"] {
        let (_tmp, run) = copy(&format!("L1/files/{step}"));
        let (code, list) = list_json(&run);
        assert_eq!(code, Some(0));
        assert_eq!(list.len(), 1);
        assert_eq!(list[0]["level"], 1);
        assert_eq!(statuses(&list[0], "rank_file"), ["ok"; 4]);
        assert_eq!(statuses(&list[0], "pcof"), ["null"; 4]);
        assert_eq!(list[0]["survives_node_loss"], false);
        let stdout = text(&fti(&["list"], &run).stdout);
        assert!(
            stdout.contains(
                "no: losing node0 would leave rank 0 without its file (L1 keeps no copy)"
            ),
            "{stdout}"
        );
    }
}

#[test]
fn l1_without_node_directories_is_one_node() {
    // FTI's local_test = 0 layout: <ckpt_dir>/<exec_id>/l1/, every rank's file in it.
    let (_tmp, run) = copy("L1/files/step2");
    let flat = run.join(format!("Flat/{EXEC_L2}/l1"));
    std::fs::create_dir_all(&flat).unwrap();
    for r in 0..4 {
        let name = format!("Ckpt2-Rank{r}.fti");
        std::fs::rename(
            node_dir(&run, r, EXEC_L2, "l1").join(&name),
            flat.join(&name),
        )
        .unwrap();
    }
    std::fs::remove_dir_all(run.join("Local")).unwrap();
    let out = fti(&["list"], &run);
    assert_eq!(out.status.code(), Some(0));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("  rank  node  Rank  bytes  file\n     0  -     ok "),
        "{stdout}"
    );
    assert!(stdout.contains("no: losing the node holding "), "{stdout}");
}

#[test]
fn l4_survives_when_every_file_verifies() {
    let (_tmp, run) = copy("L4/files/step2");
    let (code, list) = list_json(&run);
    assert_eq!(code, Some(0));
    assert_eq!(list[0]["level"], 4);
    assert_eq!(list[0]["survives_node_loss"], true);
    let stdout = text(&fti(&["list"], &run).stdout);
    assert!(stdout.contains("  rank  Rank  bytes  file\n"), "{stdout}");

    let victim = run.join("Global/2026-11-22_04-12-35/l4/Ckpt2-Rank3.fti");
    flip_byte(&victim, 2000);
    let (code, list) = list_json(&run);
    assert_eq!(code, Some(1));
    assert_eq!(
        statuses(&list[0], "rank_file"),
        ["ok", "ok", "ok", "corrupt"]
    );
    assert_eq!(list[0]["survives_node_loss"], false);
}

#[test]
fn json_keys_are_in_the_documented_order() {
    let (_tmp, run) = copy("L2/files/step2");
    let out = fti(&["list", "--format", "json"], &run);
    let parsed: Value = serde_json::from_slice(&out.stdout).unwrap();
    let keys = |v: &Value| -> Vec<String> { v.as_object().unwrap().keys().cloned().collect() };
    assert_eq!(keys(&parsed), ["schema", "checkpoints"]);
    let c = &parsed["checkpoints"][0];
    assert_eq!(
        keys(c),
        [
            "exec_id",
            "id",
            "level",
            "archived",
            "written",
            "restorable",
            "survives_node_loss",
            "why",
            "heads",
            "ranks"
        ]
    );
    assert_eq!(
        keys(&c["ranks"][0]),
        ["rank", "node", "rank_file", "pcof", "rsed"]
    );
    let file = ["path", "status", "bytes", "problem"];
    assert_eq!(keys(&c["ranks"][0]["rank_file"]), file);
    assert_eq!(
        keys(&c["ranks"][0]["pcof"]),
        [&file[..], &["copy_of"]].concat()
    );
    // The same order in the text itself, not only in the parser's map.
    let raw = text(&out.stdout);
    let at = |key: &str| raw.find(&format!("\"{key}\"")).unwrap();
    let order = [
        "schema",
        "checkpoints",
        "exec_id",
        "archived",
        "written",
        "restorable",
        "survives_node_loss",
        "why",
        "ranks",
        "rank",
        "node",
        "rank_file",
        "path",
        "status",
        "bytes",
        "problem",
        "pcof",
        "copy_of",
        "rsed",
    ];
    for pair in order.windows(2) {
        assert!(at(pair[0]) < at(pair[1]), "{pair:?} in {raw}");
    }
}

/// What the text shows, the JSON has too: node, bytes, which rank's file a Pcof copies, a
/// corrupt file's problem, when the checkpoint was written, and "restorable now" apart from
/// "survives losing a node".
#[test]
fn json_holds_what_the_text_shows() {
    let (_tmp, run) = copy("L2/files/step2");
    let pcof = node_dir(&run, 2, EXEC_L2, "l2").join("Ckpt2-Pcof2.fti");
    flip_byte(&pcof, 200);
    std::fs::remove_file(node_dir(&run, 1, EXEC_L2, "l2").join("Ckpt2-Rank1.fti")).unwrap();
    let (_, list) = list_json(&run);
    let c = &list[0];
    assert_eq!(
        (c["restorable"].as_bool(), c["survives_node_loss"].as_bool()),
        (Some(false), Some(false))
    );
    assert!(
        c["why"].as_str().unwrap().contains("rank 1"),
        "{}",
        c["why"]
    );
    assert!(
        c["written"].as_str().unwrap().ends_with(" UTC"),
        "{}",
        c["written"]
    );
    let r2 = &c["ranks"][2];
    assert_eq!(r2["node"], "node2");
    assert_eq!(r2["pcof"]["copy_of"], 1);
    assert_eq!(r2["pcof"]["status"], "corrupt");
    assert!(
        r2["pcof"]["problem"]
            .as_str()
            .unwrap()
            .contains("Ckpt2-Pcof2.fti"),
        "{}",
        r2["pcof"]
    );
    let size = std::fs::metadata(node_dir(&run, 0, EXEC_L2, "l2").join("Ckpt2-Rank0.fti"))
        .unwrap()
        .len();
    assert_eq!(c["ranks"][0]["rank_file"]["bytes"], size);
    assert_eq!(c["ranks"][1]["rank_file"]["bytes"], Value::Null);
    let text_out = text(&fti(&["list"], &run).stdout);
    assert!(text_out.contains("not restorable now"), "{text_out}");
}

/// The L2 run with its first checkpoint archived: `l2/` holds checkpoint 2, `l2_archive/`
/// checkpoint 1 (4 Rank files, 4 partner copies), as with `keep_ckpts = 2`; plus files prune
/// must never touch.
fn l2_with_archive() -> (tempfile::TempDir, PathBuf, Vec<PathBuf>) {
    let (tmp, run) = copy("L2/files/step2");
    let step1 = levels().join("L2/files/step1");
    let mut archived = Vec::new();
    for r in 0..4 {
        let archive = node_dir(&run, r, EXEC_L2, "l2_archive");
        std::fs::create_dir_all(&archive).unwrap();
        for kind in ["Rank", "Pcof"] {
            let name = format!("Ckpt1-{kind}{r}.fti");
            std::fs::copy(
                node_dir(&step1, r, EXEC_L2, "l2").join(&name),
                archive.join(&name),
            )
            .unwrap();
            archived.push(archive.join(name));
        }
    }
    let archive = node_dir(&run, 0, EXEC_L2, "l2_archive");
    std::fs::write(archive.join("notes.txt"), b"mine").unwrap();
    std::fs::write(archive.join("Ckpt1-Rank0.fti.bak"), b"mine").unwrap();
    archived.sort();
    (tmp, run, archived)
}

#[test]
fn list_shows_archived_checkpoints() {
    let (_tmp, run, _) = l2_with_archive();
    let (code, list) = list_json(&run);
    assert_eq!(code, Some(0));
    let ids: Vec<(i64, bool, bool)> = list
        .iter()
        .map(|c| {
            (
                c["id"].as_i64().unwrap(),
                c["archived"].as_bool().unwrap(),
                c["survives_node_loss"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(ids, [(1, true, true), (2, false, true)]);
    let stdout = text(&fti(&["list"], &run).stdout);
    assert!(
        stdout.contains(&format!("{EXEC_L2}  checkpoint 1  L2 archived  written ")),
        "{stdout}"
    );
}

#[test]
fn prune_dry_run_deletes_nothing_and_prune_deletes_only_archived_files() {
    let (_tmp, run, archived) = l2_with_archive();
    let before = files(&run);
    let out = fti(&["prune", "--keep", "1", "--dry-run"], &run);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let expected: Vec<String> = archived
        .iter()
        .map(|p| format!("would delete {}", p.display()))
        .collect();
    assert_eq!(text(&out.stdout).lines().collect::<Vec<_>>(), expected);
    assert_eq!(files(&run), before, "--dry-run deleted something");

    // --keep 2 keeps both checkpoints.
    let out = fti(&["prune", "--keep", "2"], &run);
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stdout.is_empty(), "{}", text(&out.stdout));
    assert_eq!(files(&run), before);

    let out = fti(&["prune", "--keep", "1"], &run);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let expected: Vec<String> = archived
        .iter()
        .map(|p| format!("deleted {}", p.display()))
        .collect();
    assert_eq!(text(&out.stdout).lines().collect::<Vec<_>>(), expected);
    let left: Vec<PathBuf> = before
        .into_iter()
        .filter(|p| !archived.contains(p))
        .collect();
    assert_eq!(files(&run), left);
    let archive = node_dir(&run, 0, EXEC_L2, "l2_archive");
    assert!(archive.join("notes.txt").exists());
    assert!(archive.join("Ckpt1-Rank0.fti.bak").exists());
    let (_, list) = list_json(&run);
    assert_eq!(list.len(), 1);
    assert_eq!(list[0]["id"], 2);
}

/// `fti prune ... | head -1`: stdout closed before the first line. Every planned checkpoint
/// is still deleted whole (8 files), the exit status is 0 and stderr says what was done.
#[test]
fn prune_with_its_output_closed_deletes_whole_checkpoints_and_says_so() {
    let (_tmp, run, archived) = l2_with_archive();
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = Command::new(env!("CARGO_BIN_EXE_fti"))
        .args(["prune", "--keep", "1"])
        .arg(&run)
        .stdout(writer)
        .stderr(std::process::Stdio::piped())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    for path in &archived {
        assert!(!path.exists(), "{} left behind", path.display());
    }
    assert!(
        text(&out.stderr).contains("deleted 1 checkpoint(s), 8 file(s)"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn prune_keeps_an_older_checkpoint_when_the_current_one_cannot_be_restored() {
    let (_tmp, run, archived) = l2_with_archive();
    // Rank 1's file and its only copy (Pcof2) are corrupt: checkpoint 2 cannot be restored.
    flip_byte(
        &node_dir(&run, 1, EXEC_L2, "l2").join("Ckpt2-Rank1.fti"),
        400,
    );
    flip_byte(
        &node_dir(&run, 2, EXEC_L2, "l2").join("Ckpt2-Pcof2.fti"),
        400,
    );
    let before = files(&run);
    let out = fti(&["prune", "--keep", "1"], &run);
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stdout.is_empty(), "{}", text(&out.stdout));
    assert!(
        text(&out.stderr).contains("checkpoint 2 (L2, 2026-11-22_04-12-33) cannot be restored"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(files(&run), before);
    // Counting by id only, checkpoint 1 goes.
    let out = fti(&["prune", "--keep", "1", "--no-verify", "--dry-run"], &run);
    assert_eq!(text(&out.stdout).lines().count(), archived.len());
}

#[test]
fn prune_refuses_keep_0_and_needs_keep() {
    let (_tmp, run, _) = l2_with_archive();
    let before = files(&run);
    let out = fti(&["prune", "--keep", "0"], &run);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("--keep"),
        "{}",
        text(&out.stderr)
    );
    let out = fti(&["prune"], &run);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("--keep"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(files(&run), before);
}

#[test]
fn help_explains_columns_statuses_and_examples() {
    let out = Command::new(env!("CARGO_BIN_EXE_fti"))
        .args(["list", "--help"])
        .output()
        .unwrap();
    let help = text(&out.stdout);
    for needle in [
        "copy of  (L2) that partner's rank",
        "corrupt (present but does not verify",
        "\"survives_node_loss\"",
        "local_test = 0",
        "Examples:\n  fti list run/",
    ] {
        assert!(help.contains(needle), "{needle} not in {help}");
    }
    let out = Command::new(env!("CARGO_BIN_EXE_fti"))
        .args(["prune", "--help"])
        .output()
        .unwrap();
    let help = text(&out.stdout);
    for needle in [
        "--dry-run",
        "never",
        "Examples:\n  fti prune run/ --keep 3 --dry-run",
    ] {
        assert!(help.contains(needle), "{needle} not in {help}");
    }
}

/// What a run that died during its first checkpoint leaves (its `tmp/` file, its
/// `Topology.fti`) goes with `fti prune` once old enough; a younger leftover, and the
/// `Topology.fti` of an execution with checkpoints, stay.
#[test]
fn prune_deletes_what_interrupted_runs_left_once_old() {
    let (_tmp, run) = copy("L2/files/step2");
    let hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(7200);
    let age = |path: &Path| {
        std::fs::File::options()
            .write(true)
            .open(path)
            .unwrap()
            .set_modified(hour_ago)
            .unwrap();
    };
    // An execution that never completed a checkpoint: a Topology.fti and an unpublished file.
    let crashed = "2026-11-23_10-00-00";
    let meta = run.join(format!("Meta/{crashed}"));
    std::fs::create_dir_all(&meta).unwrap();
    std::fs::copy(
        run.join(format!("Meta/{EXEC_L2}/Topology.fti")),
        meta.join("Topology.fti"),
    )
    .unwrap();
    let tmp = run.join(format!("Local/node0/{crashed}/tmp"));
    std::fs::create_dir_all(&tmp).unwrap();
    std::fs::copy(
        node_dir(&run, 0, EXEC_L2, "l2").join("Ckpt2-Rank0.fti"),
        tmp.join("Ckpt1-Rank0.fti"),
    )
    .unwrap();
    // A live-looking unpublished file of the execution with checkpoints.
    let live = node_dir(&run, 1, EXEC_L2, "tmp");
    std::fs::create_dir_all(&live).unwrap();
    std::fs::write(live.join("Ckpt3-Rank1.fti"), b"being written").unwrap();

    // Young: nothing goes.
    let before = files(&run);
    let out = fti(&["prune", "--keep", "1"], &run);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(files(&run), before, "{}", text(&out.stdout));

    for path in [meta.join("Topology.fti"), tmp.join("Ckpt1-Rank0.fti")] {
        age(&path);
    }
    let out = fti(&["prune", "--keep", "1", "--dry-run"], &run);
    assert_eq!(files(&run), before);
    assert_eq!(
        text(&out.stdout).lines().count(),
        2,
        "{}",
        text(&out.stdout)
    );
    let out = fti(&["prune", "--keep", "1"], &run);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains(&format!(
            "deleted {} (left by an interrupted run)",
            tmp.join("Ckpt1-Rank0.fti").display()
        )),
        "{stdout}"
    );
    assert!(!meta.join("Topology.fti").exists());
    assert!(!tmp.join("Ckpt1-Rank0.fti").exists());
    assert!(live.join("Ckpt3-Rank1.fti").exists());
    assert!(run.join(format!("Meta/{EXEC_L2}/Topology.fti")).exists());
    assert_eq!(files(&run).len(), before.len() - 2);
}
