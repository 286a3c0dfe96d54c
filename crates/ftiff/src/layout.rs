//! The structure of a checkpoint file (blocks, containers, chunks) and the container planner that
//! turns the previous structure and the current variable sizes into the next one
//! (`docs/ftiff-format.md`, *How containers are planned*): containers are added when a variable
//! grows, partly emptied when it shrinks, and never moved.

use crate::error::{Error, ErrorKind, Result};
use crate::raw::{bmd, fb, vmd};

/// Absolute byte offset in a checkpoint file (`fptr`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct FileOffset(pub u64);

/// Byte offset inside a variable's buffer (`dptr`). A distinct type from [`FileOffset`] so the
/// two cannot be mixed up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct DataOffset(pub u64);

/// One container of a variable and the chunk of data it holds (a VMD without its hash).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Chunk {
    /// The user's variable id.
    pub id: i32,
    /// Position of the variable in protect order.
    pub idx: u32,
    /// Ordinal of this container among the variable's containers.
    pub container_id: u32,
    /// False only for containers left empty by a shrink (then `chunk_size` is 0).
    pub has_content: bool,
    /// Where the chunk goes in the variable.
    pub dptr: DataOffset,
    /// Where the container is in the file.
    pub fptr: FileOffset,
    /// Valid bytes at the start of the container.
    pub chunk_size: u64,
    /// Reserved size of the container, fixed once created.
    pub container_size: u64,
}

/// A variable chunk block: its place in the file and its containers in file order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    /// Offset of the block's BMD.
    pub offset: FileOffset,
    /// Containers in file order (ascending `idx`).
    pub chunks: Vec<Chunk>,
}

impl Block {
    /// Bytes of meta data: BMD and VMDs.
    pub fn meta_size(&self) -> u64 {
        (bmd::SIZE + vmd::SIZE * self.chunks.len()) as u64
    }

    /// `dbsize`: meta data plus every container.
    pub fn dbsize(&self) -> u64 {
        self.meta_size() + self.chunks.iter().map(|c| c.container_size).sum::<u64>()
    }

    /// Offset just past the block.
    pub fn end(&self) -> u64 {
        self.offset.0 + self.dbsize()
    }
}

/// The size of one protected variable at a checkpoint, in protect order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VarSize {
    /// The user's id.
    pub id: i32,
    /// Current size in bytes.
    pub size: u64,
}

/// The structure of a whole checkpoint file.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Layout {
    /// Blocks in file order; the first starts right after the FB.
    pub blocks: Vec<Block>,
}

/// Largest size the format can express (sizes and offsets are stored as `i64`).
pub const MAX_SIZE: u64 = i64::MAX as u64;

impl Layout {
    /// Total file size (`FB.fs`).
    pub fn file_size(&self) -> u64 {
        self.blocks.last().map_or(fb::SIZE as u64, Block::end)
    }

    /// Every chunk in file order.
    pub fn chunks(&self) -> impl Iterator<Item = &Chunk> {
        self.blocks.iter().flat_map(|b| b.chunks.iter())
    }

    /// The variables (id and current size = sum of chunk sizes), indexed by `idx`.
    pub fn vars(&self) -> Vec<VarSize> {
        let mut vars: Vec<VarSize> = Vec::new();
        for c in self.chunks() {
            let idx = c.idx as usize;
            if idx == vars.len() {
                vars.push(VarSize { id: c.id, size: 0 });
            }
            if let Some(v) = vars.get_mut(idx) {
                v.size += c.chunk_size;
            }
        }
        vars
    }

    /// The chunks of the variable at protect position `idx`, in container order.
    pub fn chunks_of(&self, idx: u32) -> impl Iterator<Item = &Chunk> {
        self.chunks().filter(move |c| c.idx == idx)
    }

    /// Plans the next checkpoint's layout (`docs/ftiff-format.md`, *How containers are planned*).
    ///
    /// `vars` are the protected variables in protect order. A variable of `prev` is matched by
    /// id and keeps its protect position (`idx`); variables of `prev` must keep their relative
    /// order. Its existing containers are filled in order; the first container that holds the
    /// rest gets a partial chunk and later ones are emptied. Only when the existing containers
    /// are too small, or a variable is new (it takes the next `idx`), is one block appended,
    /// with a container per such variable in `idx` order.
    ///
    /// A variable of `prev` missing from `vars` is *removed*: all its containers are emptied
    /// (`hascontent = false`, even the first), keeping their space, so that it can come back.
    /// This is an fti-rs extension: FTI 1.1 cannot restart such a file (it needs the same
    /// variables in the same order). With the same variables in the same order, the result is
    /// exactly FTI 1.1's.
    pub fn plan(prev: Option<&Layout>, vars: &[VarSize]) -> Result<Layout> {
        let mut next = prev.cloned().unwrap_or_default();
        let old_vars = next.vars();
        let mut idx_of: std::collections::HashMap<i32, usize> = old_vars
            .iter()
            .enumerate()
            .map(|(i, v)| (v.id, i))
            .collect();
        let mut seen = vec![false; old_vars.len()];
        let mut last_old: Option<usize> = None;
        // (idx, id, bytes still to place, bytes already reserved, containers already there)
        let mut needs: Vec<(usize, i32, u64, u64, u32)> = Vec::new();
        let mut added: Vec<(usize, i32, u64, u64, u32)> = Vec::new();
        for (pos, v) in vars.iter().enumerate() {
            let plan_err = |what: String| Error::new(ErrorKind::Plan { idx: pos, what });
            match idx_of.get(&v.id).copied() {
                Some(idx) if idx < old_vars.len() => {
                    if seen[idx] {
                        return Err(plan_err(format!("id {} is protected twice", v.id)));
                    }
                    if !added.is_empty() {
                        return Err(plan_err(format!(
                            "id {} was protected before, but comes after a new variable (id {}): new variables go last, in protect order",
                            v.id, added[0].1
                        )));
                    }
                    if last_old.is_some_and(|l| idx < l) {
                        return Err(plan_err(format!(
                            "id {} comes after a variable it preceded in the previous checkpoint (protect order must not change)",
                            v.id
                        )));
                    }
                    seen[idx] = true;
                    last_old = Some(idx);
                    let (remaining, reserved, count) = next.refill(idx as u32, v.size);
                    if remaining > 0 {
                        needs.push((idx, v.id, remaining, reserved, count));
                    }
                }
                Some(_) => return Err(plan_err(format!("id {} is protected twice", v.id))),
                None => {
                    let idx = old_vars.len() + added.len();
                    idx_of.insert(v.id, idx);
                    added.push((idx, v.id, v.size, 0, 0));
                }
            }
        }
        for (idx, _) in seen.iter().enumerate().filter(|(_, s)| !**s) {
            next.empty_out(idx as u32);
        }
        needs.extend(added);
        if !needs.is_empty() {
            next.append_block(&needs)?;
        }
        Ok(next)
    }

    /// Whether the variable at `idx` is removed (all its containers empty, even the first).
    pub fn is_removed(&self, idx: u32) -> bool {
        self.chunks_of(idx).next().is_some_and(|c| !c.has_content)
    }

    /// Empties every container of a variable that is no longer protected.
    fn empty_out(&mut self, idx: u32) {
        for c in self.blocks.iter_mut().flat_map(|b| b.chunks.iter_mut()) {
            if c.idx == idx {
                c.chunk_size = 0;
                c.has_content = false;
            }
        }
    }

    /// Fills the existing containers of one variable with `size` bytes; returns the bytes left
    /// over, the bytes reserved by its containers, and how many containers it has.
    fn refill(&mut self, idx: u32, size: u64) -> (u64, u64, u32) {
        let mut remaining = size;
        let mut placed = false;
        let mut reserved = 0u64;
        let mut count = 0u32;
        for c in self.blocks.iter_mut().flat_map(|b| b.chunks.iter_mut()) {
            if c.idx != idx {
                continue;
            }
            reserved += c.container_size;
            count += 1;
            if placed {
                c.chunk_size = 0;
                c.has_content = false;
            } else if remaining > c.container_size {
                c.chunk_size = c.container_size;
                c.has_content = true;
                remaining -= c.container_size;
            } else {
                c.chunk_size = remaining;
                c.has_content = true;
                remaining = 0;
                placed = true;
            }
        }
        (remaining, reserved, count)
    }

    fn append_block(&mut self, needs: &[(usize, i32, u64, u64, u32)]) -> Result<()> {
        let offset = self.file_size();
        let too_big = |idx: usize| {
            Error::new(ErrorKind::Plan {
                idx,
                what: "the checkpoint file would exceed the format's 2^63-1 byte limit".into(),
            })
        };
        let meta = (bmd::SIZE as u64)
            .checked_add(
                (vmd::SIZE as u64)
                    .checked_mul(needs.len() as u64)
                    .ok_or_else(|| too_big(0))?,
            )
            .ok_or_else(|| too_big(0))?;
        let mut fptr = offset.checked_add(meta).ok_or_else(|| too_big(0))?;
        let mut chunks = Vec::with_capacity(needs.len());
        for &(idx, id, size, reserved, count) in needs {
            let idx32 = u32::try_from(idx)
                .ok()
                .filter(|&i| i32::try_from(i).is_ok())
                .ok_or_else(|| too_big(idx))?;
            chunks.push(Chunk {
                id,
                idx: idx32,
                container_id: count,
                has_content: true,
                dptr: DataOffset(reserved),
                fptr: FileOffset(fptr),
                chunk_size: size,
                container_size: size,
            });
            fptr = fptr
                .checked_add(size)
                .filter(|&e| e <= MAX_SIZE)
                .ok_or_else(|| too_big(idx))?;
        }
        self.blocks.push(Block {
            offset: FileOffset(offset),
            chunks,
        });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sizes(list: &[(i32, u64)]) -> Vec<VarSize> {
        list.iter()
            .map(|&(id, size)| VarSize { id, size })
            .collect()
    }

    #[test]
    fn first_checkpoint_is_one_block() {
        let l = Layout::plan(None, &sizes(&[(1, 4000), (2, 8000), (3, 12000)])).unwrap();
        assert_eq!(l.blocks.len(), 1);
        let fptrs: Vec<u64> = l.chunks().map(|c| c.fptr.0).collect();
        assert_eq!(fptrs, [300, 4300, 12300]);
        assert_eq!(l.blocks[0].dbsize(), 24204);
        assert_eq!(l.file_size(), 24300);
    }

    #[test]
    fn no_new_block_when_containers_suffice() {
        let a = Layout::plan(None, &sizes(&[(1, 100), (2, 100)])).unwrap();
        let b = Layout::plan(Some(&a), &sizes(&[(1, 50), (2, 100)])).unwrap();
        assert_eq!(b.blocks.len(), 1);
        assert_eq!(b.blocks[0].chunks[0].chunk_size, 50);
        assert_eq!(b.file_size(), a.file_size());
    }

    #[test]
    fn sizes_beyond_4_gib() {
        let big = 5u64 << 30;
        let a = Layout::plan(None, &sizes(&[(7, big), (8, 3)])).unwrap();
        assert_eq!(a.blocks[0].chunks[1].fptr.0, 96 + 12 + 128 + big);
        let b = Layout::plan(Some(&a), &sizes(&[(7, 2 * big), (8, 3)])).unwrap();
        let c = &b.blocks[1].chunks[0];
        assert_eq!((c.dptr.0, c.container_size, c.container_id), (big, big, 1));
        assert_eq!(b.file_size(), 96 + 12 + 128 + big + 3 + 12 + 64 + big);
        assert_eq!(b.vars()[0].size, 2 * big);
    }

    #[test]
    fn overflow_is_an_error() {
        let err = Layout::plan(None, &sizes(&[(1, MAX_SIZE - 10)])).unwrap_err();
        assert!(matches!(err.kind(), ErrorKind::Plan { idx: 0, .. }));
        let err = Layout::plan(None, &sizes(&[(1, u64::MAX)])).unwrap_err();
        assert!(matches!(err.kind(), ErrorKind::Plan { .. }));
    }

    #[test]
    fn changed_order_or_duplicate_is_an_error() {
        let a = Layout::plan(None, &sizes(&[(1, 8), (2, 8)])).unwrap();
        assert!(Layout::plan(Some(&a), &sizes(&[(2, 8), (1, 8)])).is_err());
        assert!(Layout::plan(Some(&a), &sizes(&[(1, 8), (1, 8)])).is_err());
        assert!(Layout::plan(None, &sizes(&[(3, 8), (3, 8)])).is_err());
        // A new variable between old ones would silently go last: refused.
        assert!(Layout::plan(Some(&a), &sizes(&[(1, 8), (5, 8), (2, 8)])).is_err());
    }

    #[test]
    fn removed_variable_is_emptied_and_can_come_back() {
        let a = Layout::plan(None, &sizes(&[(1, 8), (2, 8), (3, 8)])).unwrap();
        let b = Layout::plan(Some(&a), &sizes(&[(1, 8), (3, 4), (4, 2)])).unwrap();
        assert!(b.is_removed(1) && !b.is_removed(0) && !b.is_removed(2));
        assert_eq!(b.vars()[1], VarSize { id: 2, size: 0 });
        assert_eq!(b.vars()[3], VarSize { id: 4, size: 2 });
        assert_eq!(b.blocks.len(), 2);
        let c = Layout::plan(Some(&b), &sizes(&[(1, 8), (2, 12), (3, 4), (4, 2)])).unwrap();
        assert!(!c.is_removed(1));
        assert_eq!(c.vars()[1].size, 12);
        let grown = c.blocks[2].chunks[0];
        assert_eq!(
            (grown.id, grown.container_id, grown.dptr.0, grown.chunk_size),
            (2, 1, 8, 4)
        );
    }

    #[test]
    fn zero_size_variable_has_content() {
        let a = Layout::plan(None, &sizes(&[(1, 0)])).unwrap();
        let c = a.blocks[0].chunks[0];
        assert!(c.has_content && c.chunk_size == 0 && c.container_size == 0);
        let b = Layout::plan(Some(&a), &sizes(&[(1, 16)])).unwrap();
        assert_eq!(b.blocks.len(), 2);
        assert_eq!(b.blocks[1].chunks[0].container_id, 1);
    }
}
