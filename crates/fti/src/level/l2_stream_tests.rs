use std::path::Path;

use ftiff::{Layout, VarSize, WriteOptions};

use super::{write_streamed, PIECE};
use crate::comm::{Comm, Threads};
use crate::error::{Error, Result};
use crate::level::l2::PartnerPlan;
use crate::storage::{Disk, Storage};

/// Rank `r`'s variables: odd sizes, different on every rank, the first over two pieces.
fn vars(rank: u32) -> Vec<Vec<u8>> {
    [2 * PIECE as usize + 4099 + 513 * rank as usize, 1, 999_983]
        .iter()
        .enumerate()
        .map(|(i, &n)| {
            (0..n)
                .map(|x| {
                    ((x as u32).wrapping_mul(2_654_435_761) >> 13) as u8 ^ (rank + i as u32) as u8
                })
                .collect()
        })
        .collect()
}

fn layout(data: &[Vec<u8>]) -> Layout {
    let sizes: Vec<VarSize> = data
        .iter()
        .enumerate()
        .map(|(i, d)| VarSize {
            id: i as i32,
            size: d.len() as u64,
        })
        .collect();
    Layout::plan(None, &sizes).unwrap()
}

/// The plan of rank `rank` of `n`, each rank's file as `vars` lays it out.
fn plan(rank: u32, n: u32) -> PartnerPlan {
    let fs = |r: u32| layout(&vars(r)).file_size();
    let left = (rank + n - 1) % n;
    PartnerPlan {
        left,
        right: (rank + 1) % n,
        own_fs: fs(rank),
        left_fs: fs(left),
        rounds: (0..n).map(|r| fs(r).div_ceil(PIECE)).max().unwrap(),
    }
}

/// Writes rank `rank`'s file in `dir` while streaming it (`fail`: the write fails half way);
/// returns the write's and the copy's outcomes.
fn run_rank(comm: &Threads, dir: &Path, fail: Option<u32>) -> (Result<()>, Result<()>) {
    let rank = comm.rank();
    let data = vars(rank);
    let layout = layout(&data);
    let slices: Vec<&[u8]> = data.iter().map(|d| d.as_slice()).collect();
    let own_path = dir.join(format!("own{rank}"));
    let copy_path = dir.join(format!("copy{rank}"));
    let own = Disk.create(&own_path).unwrap();
    let copy = Disk.create(&copy_path).unwrap();
    let plan = plan(rank, comm.size());
    let opts = WriteOptions {
        timestamp: Some(1_700_000_000_000_000_000 + i64::from(rank)),
        pt_fs: plan.left_fs as i64,
        ..WriteOptions::default()
    };
    let (written, copied) = write_streamed(
        comm,
        &plan,
        (&*own, &own_path),
        (&*copy, &copy_path),
        |sink| {
            if fail == Some(rank) {
                sink.write_all_at(&slices[0][..PIECE as usize + 1], 0)
                    .map_err(|e| Error::io(&own_path, e))?;
                return Err(Error::OwnFileUnreadable);
            }
            ftiff::write_file(sink, &layout, &slices, &opts)
                .map(|_| ())
                .map_err(Error::Format)
        },
    );
    if written.is_ok() {
        // Through the stream, the file is what the writer writes without it.
        let plain = dir.join(format!("plain{rank}"));
        ftiff::write_path(&plain, &layout, &slices, &opts).unwrap();
        assert!(std::fs::read(&plain).unwrap() == std::fs::read(&own_path).unwrap());
    }
    (written, copied)
}

#[test]
fn copies_are_the_left_partners_files() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let n = 3;
    let outcomes: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = Threads::without_background(n, "h")
            .into_iter()
            .map(|c| s.spawn(move || run_rank(&c, dir, None)))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for (rank, (written, copied)) in outcomes.into_iter().enumerate() {
        written.unwrap();
        copied.unwrap();
        let left = (rank as u32 + n - 1) % n;
        let file = std::fs::read(dir.join(format!("own{left}"))).unwrap();
        let copy = std::fs::read(dir.join(format!("copy{rank}"))).unwrap();
        assert!(file.len() as u64 > 2 * PIECE);
        assert!(file == copy, "rank {rank}: copy of rank {left}");
        let mapped = ftiff::MappedFile::open(&dir.join(format!("copy{rank}"))).unwrap();
        let ckpt = ftiff::Checkpoint::verified(&mapped, &|_| {}).unwrap();
        assert_eq!(ckpt.read_var(0).unwrap(), vars(left)[0]);
    }
}

#[test]
fn a_failed_write_fails_its_partners_copy_and_nobody_waits() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let outcomes: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = Threads::without_background(3, "h")
            .into_iter()
            .map(|c| s.spawn(move || run_rank(&c, dir, Some(1))))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert!(outcomes[1].0.is_err());
    assert!(outcomes[2].1.is_err(), "rank 2 keeps rank 1's copy");
    for rank in [0, 2] {
        outcomes[rank].0.as_ref().unwrap();
    }
    outcomes[0].1.as_ref().unwrap();
    outcomes[1].1.as_ref().unwrap();
}
