//! Random protect/resize histories through planner, writer and reader.

use crate::util::no_progress;
use ftiff::{Checkpoint, Layout, VarSize, WriteOptions};
use proptest::prelude::*;

/// A history: per step, the sizes of the variables protected so far (a step may add some).
fn history() -> impl Strategy<Value = Vec<Vec<u64>>> {
    (
        1usize..5,
        prop::collection::vec((0usize..3, prop::collection::vec(0u64..3000, 8)), 1..7),
    )
        .prop_map(|(initial, steps)| {
            let mut count = initial;
            steps
                .into_iter()
                .map(|(added, sizes)| {
                    let step = sizes[..count.min(8)].to_vec();
                    count = (count + added).min(8);
                    step
                })
                .collect()
        })
}

fn fill(id: i32, step: usize, size: u64) -> Vec<u8> {
    (0..size)
        .map(|i| {
            (i as u32)
                .wrapping_mul(31)
                .wrapping_add(id as u32 * 7 + step as u32) as u8
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn plan_write_read_round_trip(history in history()) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ckpt.fti");
        let mut prev: Option<Layout> = None;
        for (step, sizes) in history.iter().enumerate() {
            let vars: Vec<VarSize> = sizes.iter().enumerate().map(|(i, &size)| VarSize { id: 100 + i as i32, size }).collect();
            let next = Layout::plan(prev.as_ref(), &vars).unwrap();
            if let Some(prev) = &prev {
                // Containers never move, shrink or change owner; blocks are only appended.
                prop_assert!(next.blocks.len() <= prev.blocks.len() + 1);
                for (old, new) in prev.blocks.iter().zip(&next.blocks) {
                    prop_assert_eq!(old.offset, new.offset);
                    prop_assert_eq!(old.chunks.len(), new.chunks.len());
                    for (a, b) in old.chunks.iter().zip(&new.chunks) {
                        prop_assert_eq!((a.id, a.idx, a.container_id, a.dptr, a.fptr, a.container_size),
                                        (b.id, b.idx, b.container_id, b.dptr, b.fptr, b.container_size));
                    }
                }
            }
            let buffers: Vec<Vec<u8>> = vars.iter().map(|v| fill(v.id, step, v.size)).collect();
            let data: Vec<&[u8]> = buffers.iter().map(Vec::as_slice).collect();
            let opts = WriteOptions::default();
            ftiff::write_path(&path, &next, &data, &opts).unwrap();
            let bytes = std::fs::read(&path).unwrap();
            let ckpt = Checkpoint::parse(&bytes).unwrap();
            let problems = ckpt.verify(&no_progress);
            prop_assert!(problems.is_empty(), "{:?}", problems);
            prop_assert_eq!(ckpt.layout(), next.clone());
            prop_assert_eq!(ckpt.var_sizes(), vars.clone());
            for (v, buf) in vars.iter().zip(&buffers) {
                prop_assert_eq!(&ckpt.read_var(v.id).unwrap(), buf);
            }
            prev = Some(ckpt.layout());
        }
    }
}

#[test]
fn writer_progress_is_monotone_and_ends_at_the_file_size() {
    let vars = [
        VarSize {
            id: 1,
            size: 100_000,
        },
        VarSize { id: 2, size: 3 },
    ];
    let a = Layout::plan(None, &vars).unwrap();
    let b = Layout::plan(
        Some(&a),
        &[
            VarSize {
                id: 1,
                size: 200_000,
            },
            VarSize { id: 2, size: 3 },
        ],
    )
    .unwrap();
    let buffers = [vec![7u8; 200_000], vec![1u8; 3]];
    let data: Vec<&[u8]> = buffers.iter().map(Vec::as_slice).collect();
    let dir = tempfile::tempdir().unwrap();
    let file = std::fs::File::create(dir.path().join("p.fti")).unwrap();
    let seen = std::sync::Mutex::new(Vec::new());
    let opts = WriteOptions::default();
    ftiff::write_file_with_progress(&file, &b, &data, &opts, &|n| seen.lock().unwrap().push(n))
        .unwrap();
    let seen = seen.into_inner().unwrap();
    assert!(seen.windows(2).all(|w| w[0] <= w[1]), "{seen:?}");
    assert_eq!(seen.last(), Some(&b.file_size()));
}
