//! Comparing two checkpoints variable by variable.

use crate::error::Result;
use crate::read::Checkpoint;

/// What happened to one variable between checkpoint A and checkpoint B.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// Same size, same bytes.
    Unchanged {
        /// Size in bytes.
        size: u64,
    },
    /// Same size, different bytes: the container ids (in B) whose chunks differ.
    Changed {
        /// Size in bytes.
        size: u64,
        /// Container ids of B whose bytes differ from A's at the same place.
        chunks: Vec<u32>,
    },
    /// Different size.
    Resized {
        /// Size in A.
        from: u64,
        /// Size in B.
        to: u64,
    },
    /// Only in B.
    Added {
        /// Size in B.
        size: u64,
    },
    /// Only in A.
    Removed {
        /// Size in A.
        size: u64,
    },
}

/// One variable's change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VarDiff {
    /// Variable id.
    pub id: i32,
    /// What changed.
    pub change: Change,
}

/// Compares variables by id: B's variables in protect order, then those only in A. Chunk
/// hashes of both files are checked while reading.
pub fn diff(a: &Checkpoint<'_>, b: &Checkpoint<'_>) -> Result<Vec<VarDiff>> {
    let mut out = Vec::new();
    let live = |c: &Checkpoint<'_>, id: i32| c.var(id).ok().filter(|v| !v.removed).copied();
    for vb in b.vars().iter().filter(|v| !v.removed) {
        let change = match live(a, vb.id) {
            None => Change::Added { size: vb.size },
            Some(va) if va.size != vb.size => Change::Resized {
                from: va.size,
                to: vb.size,
            },
            Some(_) => {
                let old = a.read_var(vb.id)?;
                let new = b.read_var(vb.id)?;
                let chunks: Vec<u32> = b
                    .records_of(vb.idx)
                    .map(|r| &r.chunk)
                    .filter(|c| c.chunk_size > 0)
                    .filter(|c| {
                        let range = c.dptr.0 as usize..(c.dptr.0 + c.chunk_size) as usize;
                        old.get(range.clone()) != new.get(range)
                    })
                    .map(|c| c.container_id)
                    .collect();
                if chunks.is_empty() {
                    Change::Unchanged { size: vb.size }
                } else {
                    Change::Changed {
                        size: vb.size,
                        chunks,
                    }
                }
            }
        };
        out.push(VarDiff { id: vb.id, change });
    }
    for va in a.vars().iter().filter(|v| !v.removed) {
        if live(b, va.id).is_none() {
            out.push(VarDiff {
                id: va.id,
                change: Change::Removed { size: va.size },
            });
        }
    }
    Ok(out)
}
