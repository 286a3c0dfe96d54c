//! Corrupt and hostile input: every single-byte flip, every truncation, appended bytes, and
//! meta data mutated with all hashes recomputed so that only the structure checks can catch
//! it. The reader must return an error (or the same data), never panic, never hang, and never
//! allocate more than a small multiple of the file's size.

use std::sync::atomic::Ordering;

use crate::util::*;
use ftiff::raw::{bmd, fb, vmd};
use ftiff::{hash, Checkpoint};

/// What a reader makes of `bytes`: `Err` when anything is wrong, else every variable's data.
fn outcome(bytes: &[u8]) -> Result<Vec<(i32, Vec<u8>)>, String> {
    let ckpt = Checkpoint::parse(bytes).map_err(|e| e.to_string())?;
    let problems = ckpt.verify(&no_progress);
    if !problems.is_empty() {
        return Err(problems[0].to_string());
    }
    ckpt.vars()
        .iter()
        .map(|v| {
            ckpt.read_var(v.id)
                .map(|d| (v.id, d))
                .map_err(|e| e.to_string())
        })
        .collect()
}

/// Recomputes chunk hashes (where the mutated VMD still points into the file), the checksum
/// and myHash, so that only structural checks can reject the mutation.
fn rehash(bytes: &mut [u8], vmd_offsets: &[usize]) {
    let get = |b: &[u8], at: usize| i64::from_le_bytes(b[at..at + 8].try_into().unwrap());
    for &at in vmd_offsets {
        let (fptr, size) = (get(bytes, at + vmd::FPTR), get(bytes, at + vmd::CHUNK_SIZE));
        if fptr >= 0 && size >= 0 && (fptr as u128 + size as u128) <= bytes.len() as u128 {
            let digest = hash::md5(&bytes[fptr as usize..(fptr + size) as usize]);
            bytes[at + vmd::HASH..at + vmd::SIZE].copy_from_slice(&digest);
        }
    }
    let fs = get(bytes, fb::FS).clamp(fb::SIZE as i64, bytes.len() as i64) as usize;
    let checksum = hash::md5(&bytes[fb::SIZE..fs]);
    bytes[..33].copy_from_slice(&hash::checksum_field(&checksum));
    let parsed = ftiff::raw::FileBlock::parse(&mut ftiff::raw::Cursor::new(bytes, 0)).unwrap();
    bytes[fb::MY_HASH..fb::MY_HASH + 16].copy_from_slice(&hash::my_hash(&parsed));
}

/// A field to mutate: absolute offset and width (4 or 8 bytes).
struct Field {
    at: usize,
    width: usize,
}

fn fields_of(bytes: &[u8]) -> (Vec<Field>, Vec<usize>) {
    let ckpt = Checkpoint::parse(bytes).unwrap();
    let mut fields: Vec<Field> = [fb::CKPT_SIZE, fb::FS, fb::MAX_FS, fb::PT_FS]
        .iter()
        .map(|&at| Field { at, width: 8 })
        .collect();
    let mut vmds = Vec::new();
    for block in ckpt.layout().blocks {
        let b = block.offset.0 as usize;
        fields.push(Field {
            at: b + bmd::NUMVARS,
            width: 4,
        });
        fields.push(Field {
            at: b + bmd::DBSIZE,
            width: 8,
        });
    }
    for r in ckpt.records() {
        let v = r.vmd_offset as usize;
        vmds.push(v);
        for (off, width) in [
            (vmd::IDX, 4),
            (vmd::CONTAINER_ID, 4),
            (vmd::DPTR, 8),
            (vmd::FPTR, 8),
            (vmd::CHUNK_SIZE, 8),
            (vmd::CONTAINER_SIZE, 8),
        ] {
            fields.push(Field { at: v + off, width });
        }
    }
    (fields, vmds)
}

#[test]
fn mutated_meta_data_with_recomputed_hashes_is_rejected() {
    // The allocation bound is measured with no other test allocating at the same time.
    if !in_own_process("hostile::mutated_meta_data_with_recomputed_hashes_is_rejected") {
        return;
    }
    let mut cases = 0;
    let mut files = all_fti_files();
    files.retain(|p| {
        ftiff::FileName::parse(&p.file_name().unwrap().to_string_lossy())
            .is_none_or(|n| n.kind != ftiff::FileKind::Rsed)
    });
    for path in files {
        let original = std::fs::read(&path).unwrap();
        let expected = outcome(&original).unwrap();
        let (fields, vmds) = fields_of(&original);
        let len = original.len() as i64;
        for field in &fields {
            for value in [0, -1, 1, i64::MAX, len + 1, len] {
                let mut bytes = original.clone();
                let slot = &mut bytes[field.at..field.at + field.width];
                if field.width == 4 {
                    let v = i32::try_from(value).unwrap_or(i32::MAX);
                    slot.copy_from_slice(&v.to_le_bytes());
                } else {
                    slot.copy_from_slice(&value.to_le_bytes());
                }
                rehash(&mut bytes, &vmds);
                let before = PEAK.swap(LIVE.load(Ordering::Relaxed), Ordering::Relaxed);
                let base = LIVE.load(Ordering::Relaxed);
                let got = outcome(&bytes);
                let peak = PEAK.load(Ordering::Relaxed).saturating_sub(base);
                PEAK.fetch_max(before, Ordering::Relaxed);
                assert!(
                    peak <= 4 * bytes.len() + (1 << 20),
                    "{}: field at {} = {value}: allocated {peak} bytes",
                    path.display(),
                    field.at
                );
                if let Ok(data) = got {
                    assert_eq!(
                        data,
                        expected,
                        "{}: field at {} = {value} accepted with other data",
                        path.display(),
                        field.at
                    );
                }
                cases += 1;
            }
        }
    }
    assert!(cases > 5000, "only {cases} cases");
}

#[test]
fn every_single_byte_flip_is_detected_except_fb_padding() {
    let path = fixtures().join("seed-example/ckpt2-rank0.fti");
    let original = std::fs::read(path).unwrap();
    for at in 0..original.len() {
        let mut bytes = original.clone();
        bytes[at] ^= 0x5a;
        let detected = outcome(&bytes).is_err();
        let unhashed = (fb::PADDING..fb::CKPT_SIZE).contains(&at);
        assert_eq!(detected, !unhashed, "flip at byte {at}");
    }
}

#[test]
fn every_truncation_is_an_error() {
    let original = std::fs::read(fixtures().join("seed-example/ckpt1-rank0.fti")).unwrap();
    for len in 0..original.len() {
        let err = Checkpoint::parse(&original[..len]).unwrap_err();
        assert!(
            matches!(err.kind(), ftiff::ErrorKind::Truncated { .. }),
            "len {len}: {err}"
        );
    }
}

#[test]
fn appended_bytes_are_reported_by_verify_but_readable() {
    let mut bytes = std::fs::read(fixtures().join("seed-example/ckpt1-rank0.fti")).unwrap();
    bytes.extend_from_slice(b"junk");
    let ckpt = Checkpoint::parse(&bytes).unwrap();
    assert_eq!(ckpt.trailing, 4);
    let problems = ckpt.verify(&no_progress);
    assert_eq!(problems.len(), 1);
    assert!(matches!(
        problems[0].kind(),
        ftiff::ErrorKind::TrailingBytes {
            fs: 24300,
            extra: 4
        }
    ));
    assert_eq!(problems[0].offset(), Some(24300));
    assert_eq!(ckpt.read_var(1).unwrap(), var_bytes(1, 1000, 0));
}

#[test]
fn errors_name_offset_record_and_field() {
    let mut bytes = std::fs::read(fixtures().join("seed-example/ckpt1-rank0.fti")).unwrap();
    // Second VMD's containersize.
    let at = 96 + 12 + 64 + vmd::CONTAINER_SIZE;
    bytes[at..at + 8].copy_from_slice(&7999i64.to_le_bytes());
    let err = Checkpoint::parse(&bytes)
        .unwrap_err()
        .with_path(std::path::Path::new("x.fti"));
    let msg = err.to_string();
    assert!(msg.starts_with("x.fti: byte "), "{msg}");
    assert!(msg.contains("VMD.") || msg.contains("BMD."), "{msg}");
}

/// Rewrites fields of a copy of the valid file `bytes` and recomputes every hash.
fn mutate(bytes: &[u8], fields: &[(usize, &[u8])]) -> Vec<u8> {
    let mut out = bytes.to_vec();
    for (at, new) in fields {
        out[*at..*at + new.len()].copy_from_slice(new);
    }
    let vmds: Vec<usize> = Checkpoint::parse(bytes)
        .unwrap()
        .records()
        .map(|r| r.vmd_offset as usize)
        .collect();
    rehash(&mut out, &vmds);
    out
}

#[test]
fn container_walk_rules_fti_always_follows() {
    let seed7 = std::fs::read(fixtures().join("seed-example/ckpt7-rank0.fti")).unwrap();
    let ckpt = Checkpoint::parse(&seed7).unwrap();
    let rec = |block: usize, pos: usize| ckpt.blocks[block][pos].vmd_offset as usize;
    // A variable's first container without content reads as a removed variable, whose
    // containers must hold zeros only: the old data left in it is caught.
    let first = rec(0, 0) + vmd::HAS_CONTENT;
    let bytes = mutate(
        &seed7,
        &[
            (first, &[0]),
            (rec(0, 0) + vmd::CHUNK_SIZE, &0i64.to_le_bytes()),
        ],
    );
    let removed = Checkpoint::parse(&bytes).unwrap();
    assert!(removed.vars()[0].removed);
    let problems = removed.verify(&no_progress);
    assert!(
        matches!(
            problems[0].kind(),
            ftiff::ErrorKind::NonZeroFill { id: 1, .. }
        ),
        "{problems:?}"
    );
    // Content flagged in a container after an empty one (block 2 holds id 2's third container,
    // empty in ckpt 7).
    let third = rec(2, 0);
    assert!(!ckpt.blocks[2][0].chunk.has_content);
    let bytes = mutate(&seed7, &[(third + vmd::HAS_CONTENT, &[1])]);
    let err = Checkpoint::parse(&bytes).unwrap_err().to_string();
    assert!(err.contains("must be empty"), "{err}");
}

#[test]
fn fs_ending_inside_a_block_header_is_named_as_such() {
    let mut bytes = std::fs::read(fixtures().join("seed-example/ckpt1-rank0.fti")).unwrap();
    bytes[fb::CKPT_SIZE..fb::CKPT_SIZE + 8].copy_from_slice(&101i64.to_le_bytes());
    bytes[fb::FS..fb::FS + 8].copy_from_slice(&101i64.to_le_bytes());
    let err = Checkpoint::parse(&bytes).unwrap_err();
    assert_eq!(err.offset(), Some(fb::FS as u64));
    assert!(
        err.to_string()
            .contains("ends inside a block meta data record"),
        "{err}"
    );
}

#[test]
fn writer_refuses_layouts_its_reader_would_reject() {
    let good = ftiff::Layout::plan(
        None,
        &[
            ftiff::VarSize { id: 1, size: 8 },
            ftiff::VarSize { id: 2, size: 4 },
        ],
    )
    .unwrap();
    let data: [&[u8]; 2] = [&[1; 8], &[2; 4]];
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.fti");
    let opts = ftiff::WriteOptions::default();
    type Spoil = fn(&mut ftiff::Layout);
    let cases: [(&str, Spoil); 5] = [
        ("dptr", |l| l.blocks[0].chunks[0].dptr.0 = 4),
        ("fptr", |l| l.blocks[0].chunks[1].fptr.0 = 5000),
        ("chunksize", |l| l.blocks[0].chunks[0].chunk_size = 9),
        ("idx", |l| l.blocks[0].chunks.swap(0, 1)),
        ("block offset", |l| l.blocks[0].offset.0 = 100),
    ];
    for (what, spoil) in cases {
        let mut layout = good.clone();
        spoil(&mut layout);
        assert!(
            ftiff::write_path(&path, &layout, &data, &opts).is_err(),
            "{what} accepted"
        );
    }
    ftiff::write_path(&path, &good, &data, &opts).unwrap();
}

/// Many variables: parsing, the text view, reassembly and diff stay linear (this would take
/// minutes with per-variable scans of all records).
#[test]
fn twenty_thousand_variables() {
    let vars: Vec<ftiff::VarSize> = (0..20_000)
        .map(|id| ftiff::VarSize {
            id,
            size: (id % 3) as u64,
        })
        .collect();
    let layout = ftiff::Layout::plan(None, &vars).unwrap();
    let buffers: Vec<Vec<u8>> = vars
        .iter()
        .map(|v| vec![v.id as u8; v.size as usize])
        .collect();
    let data: Vec<&[u8]> = buffers.iter().map(Vec::as_slice).collect();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("many.fti");
    ftiff::write_path(&path, &layout, &data, &ftiff::WriteOptions::default()).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let ckpt = Checkpoint::parse(&bytes).unwrap();
    assert!(ckpt.verify(&no_progress).is_empty());
    assert!(ftiff::view::text("many.fti", bytes.len() as u64, &ckpt)
        .contains("variable id 19999 (idx 19999): 1 bytes in 1 container(s)"));
    let changes = ftiff::diff::diff(&ckpt, &ckpt).unwrap();
    assert_eq!(changes.len(), 20_000);
    assert_eq!(ckpt.read_var(19_999).unwrap(), [0x1f]);
}
