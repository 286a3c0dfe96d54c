//! Differential updates and fast-integrity files: random mutation histories (blocks changed,
//! variables resized, added and removed) updated in place, ping-pong between two files as the
//! runtime does, must give exactly the file a full write of the same state gives.

use crate::util::no_progress;
use ftiff::{
    update_file, write_file_with_progress, BlockHash, Blocking, Checkpoint, Integrity, Layout,
    VarSize, WriteOptions,
};
use proptest::prelude::*;

/// One step of a history: per variable slot, `None` = not protected, or (size, edits) where
/// each edit sets one byte.
type Step = Vec<Option<(usize, Vec<(usize, u8)>)>>;

fn history() -> impl Strategy<Value = Vec<Step>> {
    let slot = prop::option::weighted(
        0.85,
        (
            0usize..9000,
            prop::collection::vec((0usize..9000, any::<u8>()), 0..6),
        ),
    );
    prop::collection::vec(prop::collection::vec(slot, 4), 1..8)
}

/// Applies a step to the variables' buffers (slot i has id 10 + i); returns the protected
/// variables in protect order.
fn apply(buffers: &mut [Vec<u8>], step: &Step) -> Vec<usize> {
    let mut live = Vec::new();
    for (i, slot) in step.iter().enumerate() {
        if let Some((size, edits)) = slot {
            buffers[i].resize(*size, (i * 7) as u8);
            for &(at, v) in edits {
                if *size > 0 {
                    buffers[i][at % size] = v;
                }
            }
            live.push(i);
        }
    }
    live
}

fn opts(integrity: Integrity, hash: BlockHash) -> WriteOptions {
    WriteOptions {
        timestamp: Some(1_700_000_000_000_000_000),
        integrity,
        table: match integrity {
            Integrity::Md5 => Some(Blocking { size: 1024, hash }),
            Integrity::Fast { .. } => None,
        },
        ..WriteOptions::default()
    }
}

fn run_history(
    history: &[Step],
    integrity: Integrity,
    hash: BlockHash,
) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let files = [dir.path().join("a.fti"), dir.path().join("b.fti")];
    let full_path = dir.path().join("full.fti");
    let opts = opts(integrity, hash);
    let mut buffers: Vec<Vec<u8>> = vec![Vec::new(); 4];
    let mut layout: Option<Layout> = None;
    // Per physical file: the layout and table it holds.
    let mut held: [Option<(Layout, ftiff::BlockTable)>; 2] = [None, None];
    for (k, step) in history.iter().enumerate() {
        let mut live = apply(&mut buffers, step);
        // Protect order: variables already in the file keep their place, new ones follow.
        let known: Vec<i32> = layout
            .as_ref()
            .map_or_else(Vec::new, |l| l.vars().iter().map(|v| v.id).collect());
        live.sort_by_key(|&i| {
            known
                .iter()
                .position(|&id| id == 10 + i as i32)
                .unwrap_or(usize::MAX)
        });
        let sizes: Vec<VarSize> = live
            .iter()
            .map(|&i| VarSize {
                id: 10 + i as i32,
                size: buffers[i].len() as u64,
            })
            .collect();
        let next = Layout::plan(layout.as_ref(), &sizes).unwrap();
        let data: Vec<&[u8]> = next
            .vars()
            .iter()
            .enumerate()
            .map(|(idx, v)| {
                if next.is_removed(idx as u32) {
                    &[][..]
                } else {
                    buffers[(v.id - 10) as usize].as_slice()
                }
            })
            .collect();
        // The file written two steps ago is updated in place.
        let slot = k % 2;
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&files[slot])
            .unwrap();
        let old = held[slot].as_ref().map(|(l, t)| (l, t));
        let written = update_file(&file, old, &next, &data, &opts, &no_progress).unwrap();
        held[slot] = Some((next.clone(), written.table.clone().unwrap()));

        let full = std::fs::File::create(&full_path).unwrap();
        let reference = write_file_with_progress(&full, &next, &data, &opts, &no_progress).unwrap();
        let ours = std::fs::read(&files[slot]).unwrap();
        let theirs = std::fs::read(&full_path).unwrap();
        prop_assert!(
            ours == theirs,
            "step {}: differential file differs from the full one",
            k
        );
        prop_assert_eq!(written.fb, reference.fb);
        if old_existed(k) {
            prop_assert!(written.bytes_written <= reference.bytes_written);
        }
        let ckpt = Checkpoint::parse(&ours).unwrap();
        prop_assert_eq!(ckpt.integrity, integrity);
        let problems = ckpt.verify(&no_progress);
        prop_assert!(problems.is_empty(), "{:?}", problems);
        for &i in &live {
            prop_assert_eq!(&ckpt.read_var(10 + i as i32).unwrap(), &buffers[i]);
        }
        layout = Some(next);
    }
    Ok(())
}

fn old_existed(k: usize) -> bool {
    k >= 2
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn compatible_updates_equal_full_writes(h in history()) {
        run_history(&h, Integrity::Md5, BlockHash::Xxh3)?;
    }

    #[test]
    fn fast_updates_equal_full_writes(h in history()) {
        run_history(&h, Integrity::fast(1024).unwrap(), BlockHash::Xxh3)?;
    }

    #[test]
    fn fti_dcp_modes_md5_and_crc32(h in history()) {
        run_history(&h, Integrity::Md5, BlockHash::Md5)?;
        run_history(&h, Integrity::Md5, BlockHash::Crc32)?;
    }
}

/// A 1% change rewrites about 1% of the data, plus meta data.
#[test]
fn small_change_writes_little() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.fti");
    let mut data = [vec![3u8; 4 << 20], vec![5u8; 4 << 20]];
    let layout = Layout::plan(
        None,
        &[
            VarSize {
                id: 1,
                size: 4 << 20,
            },
            VarSize {
                id: 2,
                size: 4 << 20,
            },
        ],
    )
    .unwrap();
    let opts = opts(Integrity::Md5, BlockHash::Xxh3);
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .unwrap();
    let first = update_file(
        &file,
        None,
        &layout,
        &[&data[0], &data[1]],
        &opts,
        &no_progress,
    )
    .unwrap();
    assert_eq!(first.bytes_written, layout.file_size());
    // Change 80 KiB spread over 80 blocks of the 8 MiB: 1%.
    for b in 0..80 {
        data[b % 2][(b * 51_234) % (4 << 20)] ^= 1;
    }
    let second = update_file(
        &file,
        Some((&layout, first.table.as_ref().unwrap())),
        &layout,
        &[&data[0], &data[1]],
        &opts,
        &no_progress,
    )
    .unwrap();
    assert!(
        second.bytes_written <= 80 * 1024 + 1024,
        "{}",
        second.bytes_written
    );
    let bytes = std::fs::read(&path).unwrap();
    assert!(Checkpoint::parse(&bytes)
        .unwrap()
        .verify(&no_progress)
        .is_empty());
}

/// In fast mode every byte of the file is covered, FB bytes 49..55 included.
#[test]
fn every_single_byte_flip_of_a_fast_file_is_detected() {
    let layout = Layout::plan(
        None,
        &[
            VarSize { id: 1, size: 3000 },
            VarSize { id: 2, size: 0 },
            VarSize { id: 3, size: 700 },
        ],
    )
    .unwrap();
    let a: Vec<u8> = (0..3000u32).map(|i| (i * 7) as u8).collect();
    let c = vec![9u8; 700];
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fast.fti");
    let file = std::fs::File::create(&path).unwrap();
    let opts = opts(Integrity::fast(512).unwrap(), BlockHash::Xxh3);
    write_file_with_progress(&file, &layout, &[&a, &[], &c], &opts, &no_progress).unwrap();
    let original = std::fs::read(&path).unwrap();
    let ok = |b: &[u8]| {
        Checkpoint::parse(b)
            .map(|ck| ck.verify(&no_progress).is_empty())
            .unwrap_or(false)
    };
    assert!(ok(&original));
    for at in 0..original.len() {
        let mut bytes = original.clone();
        bytes[at] ^= 0x21;
        assert!(!ok(&bytes), "flip at {at} not detected");
    }
}
