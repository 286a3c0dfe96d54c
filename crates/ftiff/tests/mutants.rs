//! A slice of the FTI-FF mutation campaign (the full one is `examples/mutants.rs`, run by
//! `scripts/mutants`): mutants of FTI 1.1 files and of files written here (variables of the
//! same size, removed variables, several blocks, fast integrity), with `FB.myHash` and the
//! `VMD.hash`es recomputed or not. `Checkpoint::verified` never accepts one whose
//! variables differ from the original's, and parsing and the views never panic or hang.

#[path = "support/mutants.rs"]
mod campaign;

use std::time::Duration;

use campaign::{Outcome, Rehash};
use ftiff::raw::vmd;
use ftiff::{Checkpoint, ErrorKind};

/// Not the full campaign's seed, so that the slice adds mutants of its own.
const SEED: u64 = 20_261_123;

#[test]
fn a_slice_of_the_campaign_keeps_the_promise() {
    let work = tempfile::tempdir().unwrap();
    let summary = campaign::run(
        SEED,
        0..1000,
        work.path(),
        Duration::from_secs(30),
        &mut |v| eprintln!("{v}"),
    )
    .unwrap();
    let report = summary.report(SEED);
    assert!(summary.violations.is_empty(), "{report}");
    assert_eq!(summary.total, 1000);
    // The slice reaches every kind of mutation and every way of recomputing hashes, and the
    // three outcomes that matter: caught by the structure checks, caught by the file checksum
    // alone, accepted because only bytes no variable depends on changed.
    assert_eq!(summary.by_kind.len(), campaign::KINDS.len(), "{report}");
    assert_eq!(summary.by_rehash.len(), 4, "{report}");
    assert!(summary.checksum_only > 50, "{report}");
    assert!(summary.accepted() > 10, "{report}");
    assert!(
        summary
            .refused_by
            .keys()
            .any(|k| k.starts_with("malformed VMD")),
        "{report}"
    );
}

/// Swaps the ids of the first two VMDs of a file of variables of one size, recomputing the
/// cheap hashes: a valid structure whose chunk hashes all match, which only the file checksum
/// tells from the original.
fn swapped_ids(input: &campaign::Input) -> Vec<u8> {
    let mut bytes = input.bytes.clone();
    let records: Vec<_> = input
        .ckpt()
        .records()
        .map(|r| r.vmd_offset as usize)
        .collect();
    let (a, b) = (records[0] + vmd::ID, records[1] + vmd::ID);
    let id_a: [u8; 4] = bytes[a..a + 4].try_into().unwrap();
    let id_b: [u8; 4] = bytes[b..b + 4].try_into().unwrap();
    bytes[a..a + 4].copy_from_slice(&id_b);
    bytes[b..b + 4].copy_from_slice(&id_a);
    campaign::rehash(&mut bytes, Rehash::Both);
    bytes
}

#[test]
fn swapped_ids_of_same_size_variables_are_caught_by_the_file_checksum() {
    let work = tempfile::tempdir().unwrap();
    let inputs = campaign::inputs(work.path()).unwrap();
    for name in ["same-size.md5", "same-size.fast512", "same-size.fast4096"] {
        let input = inputs.iter().find(|i| i.name == name).unwrap();
        let bytes = swapped_ids(input);
        // Structurally valid, and read without verification it hands out the wrong bytes.
        let ckpt = Checkpoint::parse(&bytes).unwrap();
        assert_eq!(ckpt.read_var(11).unwrap(), input.data[0], "{name}");
        let path = work.path().join("swapped.fti");
        std::fs::write(&path, &bytes).unwrap();
        let map = ftiff::MappedFile::open(&path).unwrap();
        let err = Checkpoint::verified(&map, &|_| {}).unwrap_err();
        assert!(
            matches!(
                err.kind(),
                ErrorKind::HashMismatch {
                    field: "checksum",
                    ..
                }
            ),
            "{name}: {err}"
        );
        assert_eq!(
            campaign::check(input, &bytes, &path),
            Ok(Outcome::Refused {
                label: "FB.checksum mismatch".into(),
                checksum_only: true
            }),
            "{name}"
        );
    }
}

#[test]
fn mutants_depend_only_on_the_seed_and_their_index() {
    let work = tempfile::tempdir().unwrap();
    let inputs = campaign::inputs(work.path()).unwrap();
    for index in [0, 1, 17, 4_000_000_000] {
        let a = campaign::make(SEED, index, &inputs);
        let b = campaign::make(SEED, index, &inputs);
        assert_eq!(
            (a.input, a.kind, &a.detail, a.rehash, &a.bytes),
            (b.input, b.kind, &b.detail, b.rehash, &b.bytes)
        );
        assert_ne!(a.bytes, inputs[a.input].bytes, "{}", a.describe(&inputs));
    }
}
