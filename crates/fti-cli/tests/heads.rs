//! `fti list` on a tree FTI 1.1 wrote with dedicated heads (`head = 1`): the first rank of each
//! node is a head and writes no checkpoint file. Given `--head`, the heads are named as such
//! and the verdicts are about the application ranks; without it, the tool says what the
//! missing ranks look like.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::util::{copy_dir, fixtures, text};

fn copy_fixture() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    copy_dir(&fixtures().join("head-L2-io3"), &run);
    (tmp, run)
}

fn list(args: &[&str], dir: &Path) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_fti"))
        .arg("list")
        .args(args)
        .arg(dir)
        .output()
        .unwrap();
    (out.status.code(), text(&out.stdout) + &text(&out.stderr))
}

fn only_checkpoint(json: &str) -> Value {
    let parsed: Value = serde_json::from_str(json).unwrap_or_else(|e| panic!("{e}: {json}"));
    let list = parsed["checkpoints"].as_array().unwrap();
    assert_eq!(list.len(), 1, "{json}");
    list[0].clone()
}

fn column(ckpt: &Value, f: impl Fn(&Value) -> Value) -> Vec<Value> {
    ckpt["ranks"].as_array().unwrap().iter().map(f).collect()
}

#[test]
fn heads_are_not_ranks_without_files() {
    let (_tmp, run) = copy_fixture();
    let (code, out) = list(&["--head", "--format", "json"], &run);
    assert_eq!(code, Some(0), "{out}");
    let c = only_checkpoint(&out);
    assert_eq!(c["heads"], serde_json::json!([0, 2, 4, 6]));
    assert_eq!(column(&c, |r| r["rank"].clone()), [1, 3, 5, 7]);
    assert_eq!(column(&c, |r| r["rank_file"]["status"].clone()), ["ok"; 4]);
    assert_eq!(column(&c, |r| r["pcof"]["copy_of"].clone()), [7, 1, 3, 5]);
    assert_eq!(
        (&c["restorable"], &c["survives_node_loss"]),
        (&Value::Bool(true), &Value::Bool(true))
    );

    let (code, out) = list(&["--head"], &run);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains("heads: ranks 0, 2, 4, 6 (head = 1: no checkpoint files)"),
        "{out}"
    );
    assert!(out.contains("survives losing a node: yes"), "{out}");

    // Node 1 is lost: rank 3's file survives as Pcof5 on node 2; rank 1's copy was on node 1.
    std::fs::remove_dir_all(run.join("Local/node1")).unwrap();
    let (_, out) = list(&["--head"], &run);
    assert!(
        out.contains("survives losing a node: no: losing node0 would leave rank 1 without its file or the copy of it (Ckpt3-Pcof3.fti)"),
        "{out}"
    );
}

#[test]
fn without_head_the_missing_ranks_are_named_as_heads_would_be() {
    let (_tmp, run) = copy_fixture();
    let (_, out) = list(&[], &run);
    assert!(
        out.contains("ranks 0, 2, 4, 6 have no file in this checkpoint: the first rank of each node, as dedicated heads (head = 1): give --head"),
        "{out}"
    );
}
