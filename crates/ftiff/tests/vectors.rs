//! Every real FTI 1.1 file and every model-written file: structure equals the expected views,
//! hashes verify, data equals the documented formula, and the writer reproduces the model files
//! byte for byte.

use std::path::Path;

use crate::util::*;
use ftiff::{view, Checkpoint, Layout, RsedFile, WriteOptions};

/// The expected view of a fixture file.
fn expected_view(path: &Path) -> Option<String> {
    let s = path.to_string_lossy();
    let candidate = if s.contains("/levels/") {
        s.replace("/files/", "/expected/") + ".txt"
    } else {
        s.replace(".fti", ".datastructure.txt")
    };
    std::fs::read_to_string(candidate).ok()
}

#[test]
fn every_vector_parses_verifies_and_matches_its_view() {
    let files = all_fti_files();
    assert!(files.len() >= 60, "fixtures missing: {} files", files.len());
    let mut rsed = 0;
    for path in &files {
        let bytes = std::fs::read(path).unwrap();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let expected = expected_view(path)
            .unwrap_or_else(|| panic!("no expected view for {}", path.display()));
        if ftiff::FileName::parse(&name).is_some_and(|n| n.kind == ftiff::FileKind::Rsed) {
            rsed += 1;
            let r = RsedFile::parse(&bytes).unwrap();
            let problems = r.verify(&bytes, &no_progress);
            assert!(problems.is_empty(), "{}: {problems:?}", path.display());
            let ours = view::rsed_text(&name, &bytes, &r);
            let theirs: String = expected
                .lines()
                .filter(|l| !l.starts_with("    ["))
                .map(|l| format!("{l}\n"))
                .collect();
            assert_eq!(ours.trim_end(), theirs.trim_end(), "{}", path.display());
            continue;
        }
        let ckpt = Checkpoint::parse(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let problems = ckpt.verify(&no_progress);
        assert!(problems.is_empty(), "{}: {problems:?}", path.display());
        let ours = view::text(&name, bytes.len() as u64, &ckpt);
        assert_eq!(
            structure_section(&ours),
            structure_section(&expected),
            "{}",
            path.display()
        );
        // Our notes on garbage padding are the same lines as the expected view's.
        for note in expected.lines().filter(|l| l.contains("VMD padding")) {
            assert!(ours.contains(note), "{}: missing {note}", path.display());
        }
        let rank = data_rank(path);
        for var in ckpt.vars() {
            let data = ckpt.read_var(var.id).unwrap();
            assert_eq!(
                data,
                var_bytes(var.id, data.len() / 4, rank),
                "{} var {}",
                path.display(),
                var.id
            );
        }
    }
    assert_eq!(rsed, 4, "the L3 vectors hold 4 RSed files");
}

#[test]
fn doc_format_is_byte_identical() {
    let docs = files_with_suffix(&fixtures().join("seed-example"), ".doc-format.txt");
    assert_eq!(docs.len(), 7);
    for doc in docs {
        let fti = doc.to_string_lossy().replace(".doc-format.txt", ".fti");
        let bytes = std::fs::read(&fti).unwrap();
        let ckpt = Checkpoint::parse(&bytes).unwrap();
        assert_eq!(
            view::doc_format(&ckpt.layout()),
            std::fs::read_to_string(&doc).unwrap(),
            "{fti}"
        );
    }
}

/// The planner alone reproduces the seven structures of the seed document at full size.
#[test]
fn planner_reproduces_seed_example_at_full_size() {
    let dir = fixtures().join("seed-example-fullsize-textonly");
    let mut layout: Option<Layout> = None;
    for (k, step) in seed_steps().iter().enumerate() {
        let next = Layout::plan(layout.as_ref(), &step_sizes(step, 1)).unwrap();
        let expected =
            std::fs::read_to_string(dir.join(format!("ckpt{}-rank0.doc-format.txt", k + 1)))
                .unwrap();
        assert_eq!(view::doc_format(&next), expected, "step {}", k + 1);
        layout = Some(next);
    }
}

/// The writer reproduces the model-written files byte for byte, and FTI 1.1's files except for
/// the bytes FTI leaves uninitialised (and the hashes covering them, and the timestamp).
#[test]
fn writer_reproduces_model_written_files() {
    let dir = tempfile::tempdir().unwrap();
    let mut layout: Option<Layout> = None;
    for (k, step) in seed_steps().iter().enumerate() {
        let next = Layout::plan(layout.as_ref(), &step_sizes(step, 1000)).unwrap();
        let buffers: Vec<Vec<u8>> = step
            .iter()
            .map(|&(id, n)| var_bytes(id, (n / 1000) as usize, 0))
            .collect();
        let data: Vec<&[u8]> = buffers.iter().map(Vec::as_slice).collect();
        let out = dir.path().join(format!("ckpt{}.fti", k + 1));
        let opts = WriteOptions {
            timestamp: Some(1_700_000_000_000_000_000),
            ..Default::default()
        };
        ftiff::write_path(&out, &next, &data, &opts).unwrap();
        let ours = std::fs::read(&out).unwrap();
        let name = format!("ckpt{}-rank0.fti", k + 1);
        let model =
            std::fs::read(fixtures().join("seed-example-model-written").join(&name)).unwrap();
        assert!(
            ours == model,
            "step {} differs from the model-written file",
            k + 1
        );

        let real = std::fs::read(fixtures().join("seed-example").join(&name)).unwrap();
        let real_ckpt = Checkpoint::parse(&real).unwrap();
        let mut masked = real.clone();
        masked[..49].copy_from_slice(&ours[..49]);
        masked[88..96].copy_from_slice(&ours[88..96]);
        for r in real_ckpt.records() {
            let at = r.vmd_offset as usize + 13;
            masked[at..at + 3].fill(0);
        }
        assert!(
            masked == ours,
            "step {} differs from FTI 1.1's file beyond hashes, timestamp and padding",
            k + 1
        );
        // Continue from what was written, as a restarted run does.
        layout = Some(Checkpoint::parse(&ours).unwrap().layout());
    }
}

/// Restarting from a real FTI 1.1 file continues its structure exactly (`docs/ftiff-format.md`,
/// *How containers are planned*).
#[test]
fn planning_from_a_real_file_continues_it() {
    let dir = fixtures().join("seed-example");
    for k in 1..7 {
        let prev_bytes = std::fs::read(dir.join(format!("ckpt{k}-rank0.fti"))).unwrap();
        let next_bytes = std::fs::read(dir.join(format!("ckpt{}-rank0.fti", k + 1))).unwrap();
        let prev = Checkpoint::parse(&prev_bytes).unwrap();
        let next = Checkpoint::parse(&next_bytes).unwrap();
        let planned = Layout::plan(Some(&prev.layout()), &next.var_sizes()).unwrap();
        assert_eq!(planned, next.layout(), "ckpt{k} -> ckpt{}", k + 1);
    }
}

/// Variables larger than 4 GiB: a sparse file whose only variable is 5 GiB parses, and its
/// last bytes are found at 64-bit offsets.
#[test]
fn sparse_file_with_a_5_gib_variable() {
    let big = 5u64 << 30;
    let layout = Layout::plan(
        None,
        &[
            ftiff::VarSize { id: 9, size: 3 },
            ftiff::VarSize { id: 10, size: big },
        ],
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.fti");
    let file = std::fs::File::create(&path).unwrap();
    let block = &layout.blocks[0];
    let meta = ftiff::write::encode_block_meta(block, &[ftiff::hash::EMPTY_MD5; 2]);
    use std::os::unix::fs::FileExt;
    file.write_all_at(&meta, 96).unwrap();
    let fb = ftiff::write::file_block(&[0; 16], layout.file_size(), -1, -1, 1);
    file.write_all_at(&fb.encode(), 0).unwrap();
    file.write_all_at(b"tail", layout.file_size() - 4).unwrap();
    drop(file);
    let map = ftiff::MappedFile::open(&path).unwrap();
    let ckpt = Checkpoint::of(&map).unwrap();
    assert_eq!(ckpt.fs(), 96 + 12 + 128 + 3 + big);
    let var = ckpt.var(10).unwrap();
    assert_eq!(var.size, big);
    let chunk = ckpt.records().nth(1).unwrap().chunk;
    let data = ckpt.chunk_data(&chunk);
    assert_eq!(data.len() as u64, big);
    assert_eq!(&data[data.len() - 4..], b"tail");
}
