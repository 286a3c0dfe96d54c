//! Every fuzz target's body over its committed inputs: `seeds/<target>/` (from the fixtures,
//! `seed.sh`) and `regressions/<target>/` (each input a fuzzer found a bug with, minimised).
//! Runs on the stable toolchain as an ordinary test, so that the targets keep compiling and
//! no input that once failed comes back.

use std::path::Path;

fn inputs(target: &str) -> Vec<std::path::PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in ["seeds", "regressions"] {
        let Ok(entries) = std::fs::read_dir(root.join(dir).join(target)) else {
            continue;
        };
        for entry in entries {
            let path = entry.expect("readable directory").path();
            if path.is_file() && path.file_name().is_some_and(|n| n != ".gitkeep") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

#[test]
fn every_target_passes_over_its_seeds_and_regressions() {
    for &(target, body) in fti_rs_fuzz::TARGETS {
        let files = inputs(target);
        assert!(!files.is_empty(), "{target}: no seeds (run fuzz/seed.sh)");
        for path in files {
            let data = std::fs::read(&path).expect("readable input");
            let outcome = std::panic::catch_unwind(|| body(&data));
            assert!(outcome.is_ok(), "{target} fails on {}", path.display());
        }
    }
}

#[test]
fn every_target_has_a_seed_directory_and_a_fuzz_target() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for &(target, _) in fti_rs_fuzz::TARGETS {
        assert!(root.join("seeds").join(target).is_dir(), "seeds/{target}");
        let bin = root.join("fuzz_targets").join(format!("{target}.rs"));
        assert!(bin.is_file(), "{}", bin.display());
    }
}

/// The seeds reach past the first check: the checkpoint files, trailers, `stream.json` files
/// and config files among them are valid, so the fuzzer starts from the success paths.
#[test]
fn the_seeds_are_valid_inputs() {
    for path in inputs("ftiff_read") {
        let data = std::fs::read(&path).expect("readable input");
        let ckpt = ftiff::Checkpoint::parse(&data).expect("a checkpoint file");
        assert!(ckpt.verify(&|_| {}).is_empty(), "{}", path.display());
    }
    for path in inputs("rsed_trailer") {
        let data = std::fs::read(&path).expect("readable input");
        let rsed = ftiff::RsedFile::parse(&data).expect("an RSed file");
        assert!(rsed.verify(&data, &|_| {}).is_empty(), "{}", path.display());
    }
    let parsed = inputs("ovni_stream_json")
        .iter()
        .filter(|p| ovni::read::StreamMeta::from_reader(&*std::fs::read(p).unwrap()).is_ok())
        .count();
    assert!(parsed > 10, "{parsed} stream.json seeds parse");
    for path in inputs("fti_config") {
        let text = std::fs::read_to_string(&path).expect("a text file");
        fti::Config::from_ini_text(&path, &text).expect("a config file");
    }
}
