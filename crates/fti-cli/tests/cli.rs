//! The `fti` tool on real FTI 1.1 files.

use std::process::{Command, Output};

use crate::util::{fixtures, seed};

fn fti(args: &[&std::ffi::OsStr]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fti"))
        .args(args)
        .output()
        .unwrap()
}

fn stdout(out: &Output) -> String {
    String::from_utf8(out.stdout.clone()).unwrap()
}

#[test]
fn inspect_doc_format_matches_the_seed_document() {
    for k in 1..=7 {
        let out = fti(args!["inspect", "--format", "doc", seed(k)]);
        assert!(out.status.success());
        let expected = std::fs::read_to_string(
            fixtures().join(format!("seed-example/ckpt{k}-rank0.doc-format.txt")),
        )
        .unwrap();
        assert_eq!(stdout(&out), expected, "ckpt{k}");
    }
}

#[test]
fn inspect_json_has_the_documented_keys_in_order() {
    let out = fti(args!["inspect", "--format", "json", seed(3)]);
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let keys = |v: &serde_json::Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
    assert_eq!(keys(&v), ["fb", "blocks"]);
    assert_eq!(
        keys(&v["fb"]),
        [
            "checksum",
            "myHash",
            "ckptSize",
            "fs",
            "maxFs",
            "ptFs",
            "timestamp"
        ]
    );
    assert_eq!(v["fb"]["checksum"], "220d26791b2538098483af35f05ef43c");
    assert_eq!(v["fb"]["fs"], 72516);
    assert_eq!(v["fb"]["maxFs"], -1);
    let block = &v["blocks"][2];
    assert_eq!(keys(block), ["offset", "numvars", "dbsize", "vars"]);
    assert_eq!(
        (
            block["offset"].as_u64(),
            block["numvars"].as_u64(),
            block["dbsize"].as_u64()
        ),
        (Some(40376), Some(2), Some(32140))
    );
    let var = &block["vars"][1];
    assert_eq!(
        keys(var),
        [
            "id",
            "idx",
            "containerid",
            "hascontent",
            "dptr",
            "fptr",
            "chunksize",
            "containersize",
            "hash"
        ]
    );
    assert_eq!(var["id"], 3);
    assert_eq!(var["hascontent"], true);
    assert_eq!(var["fptr"], 56516);
    assert_eq!(var["hash"], "2063d1f991a891f143346f32952d7867");
}

#[test]
fn inspect_text_shows_records_with_offsets() {
    let out = fti(args!["inspect", seed(3)]);
    let text = stdout(&out);
    assert!(text.starts_with("# ckpt3-rank0.fti  (72516 bytes)\n"));
    assert!(text.contains("                 [file offset: 40452]\n"));
    assert!(
        text.contains("NOTE: block 2 var 1 (id 3): VMD padding bytes 13..15 = 841e00 (non-zero)")
    );
}

#[test]
fn verify_exit_codes_and_problem_lines() {
    let ok = fti(args!["verify", seed(1), seed(7)]);
    assert_eq!(ok.status.code(), Some(0));
    assert_eq!(stdout(&ok).lines().count(), 2);

    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("Ckpt1-Rank0.fti");
    let mut bytes = std::fs::read(seed(1)).unwrap();
    bytes[5000] ^= 1;
    std::fs::write(&bad, &bytes).unwrap();
    let out = fti(args!["verify", "--quiet", seed(1), bad]);
    assert_eq!(out.status.code(), Some(1));
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert!(
        lines[0].contains("Ckpt1-Rank0.fti: byte 0: FB.checksum mismatch"),
        "{text}"
    );
    assert!(lines[1].contains("byte 220: VMD.hash mismatch"), "{text}");

    let short = dir.path().join("short.fti");
    std::fs::write(&short, &bytes[..1000]).unwrap();
    let out = fti(args!["verify", short]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout(&out).contains(
        "short.fti: byte 1000: file is 1000 bytes but the size in FB.fs needs 24300 bytes"
    ));
}

#[test]
fn verify_rsed_by_name_or_option() {
    let l3 = fixtures().join("levels/L3/files/step1/Local/node2/2026-11-22_04-12-34/l3");
    assert_eq!(
        fti(args!["verify", l3.join("Ckpt1-RSed2.fti")])
            .status
            .code(),
        Some(0)
    );
    let dir = tempfile::tempdir().unwrap();
    let renamed = dir.path().join("code.bin");
    std::fs::copy(l3.join("Ckpt1-RSed2.fti"), &renamed).unwrap();
    assert_eq!(fti(args!["verify", renamed]).status.code(), Some(1));
    assert_eq!(
        fti(args!["verify", "--kind", "rsed", renamed])
            .status
            .code(),
        Some(0)
    );
    let out = fti(args![
        "inspect", "--format", "json", "--kind", "rsed", renamed
    ]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["rsed"]["trailerOffset"], 15236);
}

fn ints(bytes: &[u8]) -> Vec<i32> {
    bytes
        .chunks_exact(4)
        .map(|c| i32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

#[test]
fn extract_one_and_all() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("v3.bin");
    assert!(fti(args!["extract", seed(6), "--id", "3", "-o", out])
        .status
        .success());
    let expected: Vec<i32> = (0..9000).map(|j| 3 * 1_000_003 + j).collect();
    assert_eq!(ints(&std::fs::read(&out).unwrap()), expected);

    let all = dir.path().join("all");
    assert!(fti(args!["extract", seed(7), "--all", all])
        .status
        .success());
    for (id, n) in [(1, 1000), (2, 1000), (3, 2000), (4, 4000), (5, 5000)] {
        let expected: Vec<i32> = (0..n).map(|j| id * 1_000_003 + j).collect();
        assert_eq!(
            ints(&std::fs::read(all.join(format!("var-{id}.bin"))).unwrap()),
            expected,
            "id {id}"
        );
    }
    let negative = fti(args!["extract", seed(1), "--id", "-3", "-o", out]);
    assert!(String::from_utf8_lossy(&negative.stderr).contains("no variable with id -3"));
    let dir_arg = fti(args!["inspect", dir.path()]);
    assert_eq!(dir_arg.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&dir_arg.stderr).contains("not a regular file"));
    let missing = fti(args!["extract", seed(1), "--id", "9", "-o", out]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("no variable with id 9"));
}

#[test]
fn diff_seed_pairs() {
    let d = |a, b| stdout(&fti(args!["diff", seed(a), seed(b)]));
    assert_eq!(d(1, 2), "id 1: unchanged (4000 bytes)\nid 2: unchanged (8000 bytes)\nid 3: unchanged (12000 bytes)\nid 4: added (16000 bytes)\n");
    assert_eq!(d(2, 3), "id 1: unchanged (4000 bytes)\nid 2: resized (8000 -> 24000 bytes)\nid 3: resized (12000 -> 28000 bytes)\nid 4: unchanged (16000 bytes)\n");
    assert_eq!(
        d(6, 7),
        "id 1: unchanged (4000 bytes)\nid 2: resized (32000 -> 4000 bytes)\nid 3: resized (36000 -> 8000 bytes)\nid 4: unchanged (16000 bytes)\nid 5: unchanged (20000 bytes)\n"
    );
    assert_eq!(d(2, 1), "id 1: unchanged (4000 bytes)\nid 2: unchanged (8000 bytes)\nid 3: unchanged (12000 bytes)\nid 4: removed (16000 bytes)\n");
}

#[test]
fn diff_names_changed_containers() {
    // Same structure, one int changed in the second container of variable 3 of ckpt3.
    let dir = tempfile::tempdir().unwrap();
    let bytes = std::fs::read(seed(3)).unwrap();
    let (ckpt, _) = (ftiff::Checkpoint::parse(&bytes).unwrap(), ());
    let mut data: Vec<Vec<u8>> = ckpt
        .vars()
        .iter()
        .map(|v| ckpt.read_var(v.id).unwrap())
        .collect();
    data[2][13000] ^= 0xff;
    let slices: Vec<&[u8]> = data.iter().map(Vec::as_slice).collect();
    let b = dir.path().join("b.fti");
    ftiff::write_path(&b, &ckpt.layout(), &slices, &ftiff::WriteOptions::default()).unwrap();
    let out = stdout(&fti(args!["diff", seed(3), b]));
    assert!(
        out.contains("id 3: changed (28000 bytes; containers 1 differ)\n"),
        "{out}"
    );
    assert!(out.contains("id 2: unchanged (24000 bytes)\n"), "{out}");
}

#[test]
fn help_teaches() {
    let out = fti(args!["--help"]);
    let text = stdout(&out);
    for word in ["inspect", "verify", "extract", "diff", "Examples"] {
        assert!(text.contains(word), "{word} missing from --help");
    }
}

#[test]
fn fast_integrity_files_are_understood() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = std::fs::read(seed(3)).unwrap();
    let ckpt = ftiff::Checkpoint::parse(&bytes).unwrap();
    let data: Vec<Vec<u8>> = ckpt
        .vars()
        .iter()
        .map(|v| ckpt.read_var(v.id).unwrap())
        .collect();
    let slices: Vec<&[u8]> = data.iter().map(Vec::as_slice).collect();
    let fast = dir.path().join("Ckpt3-Rank0.fti");
    let opts = ftiff::WriteOptions {
        integrity: ftiff::Integrity::fast(4096).unwrap(),
        ..Default::default()
    };
    ftiff::write_path(&fast, &ckpt.layout(), &slices, &opts).unwrap();

    assert_eq!(fti(args!["verify", fast]).status.code(), Some(0));
    let text = stdout(&fti(args!["inspect", fast]));
    assert!(
        text.contains("fast-integrity file (xxh3-128 blocks of 4096 bytes)"),
        "{text}"
    );
    let v: serde_json::Value =
        serde_json::from_str(&stdout(&fti(args!["inspect", "--format", "json", fast]))).unwrap();
    assert_eq!(v["integrity"]["blockSize"], 4096);
    assert_eq!(v["integrity"]["mode"], "fast");
    assert_eq!(
        stdout(&fti(args!["diff", seed(3), fast])),
        stdout(&fti(args!["diff", seed(3), seed(3)]))
    );

    // A flipped data byte is reported by the block hash of its container.
    let mut broken = std::fs::read(&fast).unwrap();
    broken[30_000] ^= 1;
    let bad = dir.path().join("bad.fti");
    std::fs::write(&bad, broken).unwrap();
    let out = fti(args!["verify", bad]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stdout(&out).contains("VMD.hash mismatch"),
        "{}",
        stdout(&out)
    );
}

/// A POSIX tree (`ckpt_io = 1`, FTI 1.1's `posix-L1` meta data) and an MPI-IO tree
/// (`ckpt_io = 2`: L4 as one shared file `Global/<exec_id>/l4/Ckpt<id>-mpiio.fti`) are named as
/// such by every command that reads checkpoints, never reported as corrupt FTI-FF.
#[test]
fn posix_trees_are_refused_by_name() {
    posix_tree_refused_by_name("Local/node0", "l1", "Ckpt2-Rank0.fti");
    posix_tree_refused_by_name("Global", "l4", "Ckpt2-mpiio.fti");
}

/// A tree with FTI's meta data at `level` and the data file `name` under `run/<under>`.
fn posix_tree_refused_by_name(under: &str, level: &str, name: &str) {
    let dir = tempfile::tempdir().unwrap();
    let exec = "2026-11-27_16-39-21";
    let meta = dir.path().join("run/Meta").join(exec).join(level);
    std::fs::create_dir_all(&meta).unwrap();
    std::fs::copy(
        fixtures()
            .join("posix-L1/run/Meta")
            .join(exec)
            .join("l1/sector0-group0.fti"),
        meta.join("sector0-group0.fti"),
    )
    .unwrap();
    let l1 = dir.path().join("run").join(under).join(exec).join(level);
    std::fs::create_dir_all(&l1).unwrap();
    let file = l1.join(name);
    std::fs::write(&file, vec![7u8; 4096]).unwrap();
    let run = dir.path().join("run");
    let out_file = dir.path().join("x");
    let (file, l1, run, out_file) = (
        file.as_os_str(),
        l1.as_os_str(),
        run.as_os_str(),
        out_file.as_os_str(),
    );
    let os = std::ffi::OsStr::new;
    let cases: [Vec<&std::ffi::OsStr>; 8] = [
        vec![os("verify"), file],
        vec![os("inspect"), file],
        vec![os("extract"), file, os("--id"), os("1"), os("-o"), out_file],
        vec![os("diff"), file, file],
        vec![os("list"), run],
        vec![os("prune"), run, os("--keep"), os("1")],
        vec![os("l3-encode"), l1],
        vec![os("l3-rebuild"), l1],
    ];
    for args in cases {
        let out = fti(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(
            stderr.contains("POSIX checkpoint tree (ckpt_io = 1") && stdout(&out).is_empty(),
            "{name}, {args:?}: {stderr}"
        );
    }
}
