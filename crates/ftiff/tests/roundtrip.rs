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

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// A file written from pieces (a chunk's bytes handed over in pieces of any size, in file
    /// order) is byte for byte the file written from whole buffers, over protect/resize
    /// histories whose layouts have several blocks.
    #[test]
    fn a_file_written_from_pieces_equals_the_one_written_whole(
        history in history(),
        piece in 1usize..700,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let (whole, pieces) = (dir.path().join("whole.fti"), dir.path().join("pieces.fti"));
        let mut prev: Option<Layout> = None;
        for (step, sizes) in history.iter().enumerate() {
            let vars: Vec<VarSize> = sizes.iter().enumerate().map(|(i, &size)| VarSize { id: 100 + i as i32, size }).collect();
            let layout = Layout::plan(prev.as_ref(), &vars).unwrap();
            let buffers: Vec<Vec<u8>> = vars.iter().map(|v| fill(v.id, step, v.size)).collect();
            let data: Vec<&[u8]> = buffers.iter().map(Vec::as_slice).collect();
            let opts = WriteOptions { timestamp: Some(1_700_000_000_000_000_000), ..WriteOptions::default() };
            ftiff::write_path(&whole, &layout, &data, &opts).unwrap();
            let file = std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(true).open(&pieces).unwrap();
            let written = ftiff::write_file_streamed(&file, &layout, &mut |c, put| {
                if c.chunk_size == 0 {
                    // An emptied container: its offset may lie past the shrunk variable.
                    return Ok(());
                }
                let start = c.dptr.0 as usize;
                let bytes = &buffers[c.idx as usize][start..start + c.chunk_size as usize];
                bytes.chunks(piece).try_for_each(&mut *put)
            }, &opts).unwrap();
            prop_assert_eq!(written.bytes_written, layout.file_size());
            prop_assert!(std::fs::read(&whole).unwrap() == std::fs::read(&pieces).unwrap(), "step {}", step);
            prev = Some(layout);
        }
    }
}

/// A source that gives fewer or more bytes than a chunk holds is refused, not written.
#[test]
fn a_source_with_the_wrong_number_of_bytes_is_refused() {
    let layout = Layout::plan(None, &[VarSize { id: 1, size: 100 }]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = std::fs::File::create(dir.path().join("f.fti")).unwrap();
    for give in [99usize, 101] {
        let err = ftiff::write_file_streamed(
            &file,
            &layout,
            &mut |_, put| put(&vec![7u8; give]),
            &WriteOptions::default(),
        )
        .expect_err("wrong size");
        assert!(err.to_string().contains("variable 1"), "{err}");
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
