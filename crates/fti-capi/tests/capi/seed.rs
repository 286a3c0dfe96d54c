//! The seed example's seven checkpoints written through the C API (`tests/c/seed.c`) are the
//! FTI-FF files of the shared vectors, and a restart with the same config file recovers them.

use std::path::Path;

use crate::util;

/// The file of checkpoint `k` among `files`.
fn file_of(files: &[std::path::PathBuf], k: u32) -> &Path {
    let name = format!("Ckpt{k}-Rank0.fti");
    files
        .iter()
        .find(|f| f.file_name().is_some_and(|n| n == name.as_str()))
        .unwrap_or_else(|| panic!("{name} not among {files:?}"))
}

/// Equal to the model-written vector byte for byte, except the timestamp and the hash that
/// covers it (`myHash`, checked by recomputing it); the structure is the one FTI 1.1 wrote
/// (the vectors' doc-format view), and every hash verifies.
fn check_against_vectors(k: u32, ours: &[u8]) {
    let vectors = util::fixtures();
    let model =
        std::fs::read(vectors.join(format!("seed-example-model-written/ckpt{k}-rank0.fti")))
            .unwrap();
    assert_eq!(ours.len(), model.len(), "ckpt{k}: size");
    assert!(ours[..33] == model[..33], "ckpt{k}: checksum differs");
    assert!(ours[49..88] == model[49..88], "ckpt{k}: file block differs");
    assert!(ours[96..] == model[96..], "ckpt{k}: blocks differ");
    let ckpt = ftiff::Checkpoint::parse(ours).unwrap();
    assert_eq!(
        ftiff::hash::my_hash(&ckpt.fb),
        ckpt.fb.my_hash,
        "ckpt{k}: myHash"
    );
    assert!(ckpt.verify(&|_| {}).is_empty(), "ckpt{k}: does not verify");
    let doc =
        std::fs::read_to_string(vectors.join(format!("seed-example/ckpt{k}-rank0.doc-format.txt")))
            .unwrap();
    assert_eq!(
        ftiff::view::doc_format(&ckpt.layout()),
        doc,
        "ckpt{k}: structure"
    );
}

#[test]
fn seven_checkpoints_equal_the_vectors_and_restart() {
    let dir = tempfile::tempdir().unwrap();
    // Our keep_ckpts keeps the six older checkpoints in l1_archive/ for the comparison.
    let cfg = util::config(dir.path(), "keep_ckpts = 7");
    let cfg_arg = cfg.to_str().unwrap();
    let exe = util::compile("seed", util::Link::Shared);

    let out = util::run(&exe, &["write", cfg_arg], dir.path());
    let stdout = util::success("seed write", &out);
    let expected: Vec<String> = std::iter::once("init 0".to_owned())
        .chain((1..=7).map(|k| format!("checkpoint {k}: 1")))
        .collect();
    assert_eq!(util::results(&stdout), expected, "{stdout}");

    let files = util::checkpoint_files(&dir.path().join("Local"));
    assert_eq!(files.len(), 7, "{files:?}");
    for k in 1..=7 {
        check_against_vectors(k, &std::fs::read(file_of(&files, k)).unwrap());
    }
    let (failure, exec_id) = util::restart_keys(&cfg);
    assert_eq!(failure, 1, "the first checkpoint records the restart");
    assert!(file_of(&files, 7).to_string_lossy().contains(&exec_id));

    let out = util::run(&exe, &["restart", cfg_arg], dir.path());
    let stdout = util::success("seed restart", &out);
    assert_eq!(
        util::results(&stdout),
        [
            "init 0",
            "status 1",
            "dataset 1: stored 4000 bytes, buffer allocated",
            "dataset 2: stored 4000 bytes, buffer allocated",
            "dataset 3: stored 8000 bytes, buffer allocated",
            "dataset 4: stored 16000 bytes, buffer allocated",
            "dataset 5: stored 20000 bytes, buffer allocated",
            "recover 0 status 0",
            "wrong values 0",
            "finalize 0",
        ],
        "{stdout}"
    );
    assert!(util::checkpoint_files(dir.path()).is_empty());
    assert_eq!(util::restart_keys(&cfg).0, 0);
}
