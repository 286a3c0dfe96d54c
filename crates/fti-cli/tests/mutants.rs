//! The FTI-FF mutation campaign through the real `fti` binary: mutants the library refuses
//! (one of each kind of mutation, cheap hashes recomputed or not) make `fti verify`
//! exit 1, `fti extract --id` exit 1 without writing its output, `fti diff` exit 2, and
//! `fti inspect` exit 0 or 1, in every format, within a time limit and without a panic; a few
//! mutants the library accepts (bytes no variable depends on) extract the original bytes and
//! compare as unchanged. The mutants are those of `crates/ftiff/examples/mutants.rs`.

#[path = "../../ftiff/tests/support/mutants.rs"]
mod campaign;

use std::path::Path;

use campaign::{Input, Mutant, Outcome};

const SEED: u64 = 7;
/// Refused mutants to run through the binary.
const REFUSED: usize = 30;
/// Kinds whose accepted mutants are run too: bytes covered by no hash a reader needs.
const ACCEPTED_KINDS: [&str; 3] = ["fb.timestamp", "fb.mode", "append"];

use crate::util::{fti, text};

/// The mutants to run: the first refused mutant of each kind of mutation, until there are
/// `REFUSED`, and the first accepted, changed mutant of each of `ACCEPTED_KINDS`.
fn select(inputs: &[Input], work: &Path) -> (Vec<Mutant>, Vec<Mutant>) {
    let path = work.join("check.fti");
    let mut refused: Vec<Mutant> = Vec::new();
    let mut accepted: Vec<Mutant> = Vec::new();
    for index in 0..20_000 {
        if refused.len() >= REFUSED && accepted.len() == ACCEPTED_KINDS.len() {
            break;
        }
        let m = campaign::make(SEED, index, inputs);
        let original = &inputs[m.input];
        let outcome = campaign::check(original, &m.bytes, &path);
        match outcome {
            Ok(Outcome::Refused { .. }) => {
                if refused.len() < REFUSED && refused.iter().all(|r| r.kind != m.kind) {
                    refused.push(m);
                }
            }
            Ok(Outcome::AcceptedIdentical) => {
                if ACCEPTED_KINDS.contains(&m.kind)
                    && m.bytes != original.bytes
                    && accepted.iter().all(|a| a.kind != m.kind)
                {
                    accepted.push(m);
                }
            }
            Err(violation) => panic!("{}: {violation}", m.describe(inputs)),
        }
    }
    assert_eq!(refused.len(), REFUSED);
    assert_eq!(accepted.len(), ACCEPTED_KINDS.len());
    (refused, accepted)
}

/// The id `extract` asks for: the first variable's, or an arbitrary one in a file without.
fn some_id(input: &Input) -> i32 {
    input.vars.first().map_or(1, |v| v.id)
}

fn inspect_ok_or_error(file: &Path, what: &str) {
    for format in ["text", "doc", "json"] {
        let out = fti(args!["inspect", "--format", format, file]);
        let stderr = text(&out.stderr);
        assert!(
            matches!(out.status.code(), Some(0 | 1)),
            "{what}: inspect --format {format}: {:?} {stderr}",
            out.status
        );
        assert!(!stderr.contains("panicked"), "{what}: {stderr}");
        if out.status.code() == Some(1) {
            assert!(stderr.starts_with("fti: "), "{what}: {stderr}");
        }
    }
    let out = fti(args!["inspect", "--kind", "rsed", file]);
    assert!(matches!(out.status.code(), Some(0 | 1)), "{what}");
    assert!(!text(&out.stderr).contains("panicked"), "{what}");
}

#[test]
fn refused_mutants_are_refused_by_every_command() {
    let work = tempfile::tempdir().unwrap();
    let inputs = campaign::inputs(work.path()).unwrap();
    let (refused, _) = select(&inputs, work.path());
    for m in &refused {
        let original = &inputs[m.input];
        let what = m.describe(&inputs);
        let dir = work.path().join(format!("m{}", m.index));
        std::fs::create_dir(&dir).unwrap();
        let file = dir.join("Ckpt1-Rank0.fti");
        std::fs::write(&file, &m.bytes).unwrap();

        let out = fti(args!["verify", file]);
        assert_eq!(out.status.code(), Some(1), "{what}: verify");
        assert!(text(&out.stdout).contains("Ckpt1-Rank0.fti"), "{what}");

        let target = dir.join("var.bin");
        let id = some_id(original).to_string();
        let out = fti(args!["extract", file, "--id", id, "-o", target]);
        assert_eq!(out.status.code(), Some(1), "{what}: extract");
        assert!(
            !target.exists(),
            "{what}: extract wrote {}",
            target.display()
        );
        assert!(
            text(&out.stderr).contains("does not verify"),
            "{what}: {}",
            text(&out.stderr)
        );

        let out = fti(args!["diff", original.path, file]);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{what}: diff: {}",
            text(&out.stdout)
        );
        assert!(
            text(&out.stdout).is_empty(),
            "{what}: {}",
            text(&out.stdout)
        );

        inspect_ok_or_error(&file, &what);
    }
}

#[test]
fn accepted_mutants_give_the_original_bytes() {
    let work = tempfile::tempdir().unwrap();
    let inputs = campaign::inputs(work.path()).unwrap();
    let (_, accepted) = select(&inputs, work.path());
    for m in &accepted {
        let original = &inputs[m.input];
        let what = m.describe(&inputs);
        let dir = work.path().join(format!("m{}", m.index));
        std::fs::create_dir(&dir).unwrap();
        let file = dir.join("Ckpt1-Rank0.fti");
        std::fs::write(&file, &m.bytes).unwrap();

        // Bytes after FB.fs are ignored by every command, as by the restart; `verify` says so.
        let trailing = m.bytes.len() > original.bytes.len();
        let out = fti(args!["verify", file]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{what}: verify: {}",
            text(&out.stdout)
        );
        assert_eq!(
            text(&out.stdout).contains("after the end FB.fs gives"),
            trailing,
            "{what}: verify: {}",
            text(&out.stdout)
        );

        for (v, data) in original.vars.iter().zip(&original.data) {
            let target = dir.join(format!("var{}.bin", v.id));
            let id = v.id.to_string();
            let out = fti(args!["extract", file, "--id", id, "-o", target]);
            assert_eq!(out.status.code(), Some(0), "{what}: {}", text(&out.stderr));
            assert_eq!(std::fs::read(&target).unwrap(), *data, "{what}: id {id}");
        }

        let out = fti(args!["diff", original.path, file]);
        assert_eq!(out.status.code(), Some(0), "{what}: {}", text(&out.stdout));

        inspect_ok_or_error(&file, &what);
    }
}
