//! Checkpoint trees on disk, compared with FTI 1.1's.

use std::collections::BTreeMap;
use std::path::Path;

/// Every file under `root`, by path relative to it with the execution id replaced by `EXEC`;
/// the ranks' spares (`spare/`: retired files kept for the next checkpoint to overwrite, no
/// checkpoint's and not FTI's) left out.
pub fn tree(root: &Path, exec: &str) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                if !path.ends_with("spare") {
                    stack.push(path);
                }
            } else {
                let rel = path.strip_prefix(root).unwrap().to_string_lossy();
                out.insert(rel.replace(exec, "EXEC"), std::fs::read(&path).unwrap());
            }
        }
    }
    out
}

/// Our file equals FTI's except FB bytes 0..49 (checksum, myHash), 88..96 (timestamp) and
/// the VMD padding bytes 13..16 (garbage in FTI's files).
pub fn assert_same_but_unreproducible(name: &str, ours: &[u8], theirs: &[u8]) {
    assert_eq!(ours.len(), theirs.len(), "{name}: size");
    let a = ftiff::Checkpoint::parse(ours).unwrap();
    let b = ftiff::Checkpoint::parse(theirs).unwrap();
    assert_eq!(
        (a.fb.ckpt_size, a.fb.fs, a.fb.max_fs, a.fb.pt_fs),
        (b.fb.ckpt_size, b.fb.fs, b.fb.max_fs, b.fb.pt_fs),
        "{name}: ckptSize, fs, maxFs, ptFs"
    );
    let mut skip = vec![false; ours.len()];
    skip[..49].fill(true);
    skip[88..96].fill(true);
    for r in b.records() {
        let at = r.vmd_offset as usize + 13;
        skip[at..at + 3].fill(true);
    }
    let differ: Vec<usize> = (0..ours.len())
        .filter(|&i| !skip[i] && ours[i] != theirs[i])
        .collect();
    assert!(differ.is_empty(), "{name}: bytes differ at {differ:?}");
    assert!(a.verify(&|_| {}).is_empty(), "{name}: verifies");
}

pub use test_support::copy_dir as copy_tree;

/// The data of FTI 1.1's trees written by the C test program (`posix-L1`, `head-L4-io3`, and
/// our runs compared with them): checkpoint `k` of `rank` holds ids 1 and 2 of `n` ints,
/// `a[j] = r*1000000 + k*1000 + j%977` and `b = -a`.
pub fn pair(rank: u32, k: i32, n: usize) -> [(i32, Vec<i32>); 2] {
    let a: Vec<i32> = (0..n)
        .map(|j| rank as i32 * 1_000_000 + k * 1000 + (j % 977) as i32)
        .collect();
    let b = a.iter().map(|x| -x).collect();
    [(1, a), (2, b)]
}
