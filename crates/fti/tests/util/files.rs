//! What a directory tree holds, to check that a refused operation wrote nothing.

use std::path::{Path, PathBuf};

/// Every file below `dir`, sorted, with its length and a hash of its bytes.
pub fn files_below(dir: &Path) -> Vec<(PathBuf, usize, u64)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            if e.file_type().unwrap().is_dir() {
                stack.push(e.path());
            } else {
                let bytes = std::fs::read(e.path()).unwrap_or_default();
                let mut h = std::collections::hash_map::DefaultHasher::new();
                std::hash::Hash::hash(&bytes, &mut h);
                out.push((e.path(), bytes.len(), std::hash::Hasher::finish(&h)));
            }
        }
    }
    out.sort();
    out
}
