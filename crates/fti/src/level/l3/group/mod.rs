//! One L3 group's files in one directory: writing its `RSed` files and rebuilding what is lost.
//!
//! This is what the offline tools (`fti l3-encode`, `fti l3-rebuild`) need. Every file effect
//! goes through a [`Storage`]: each file is written under a temporary name (`.<name>.l3tmp`),
//! synced, and renamed over its final name, then the directory is synced, so a crash leaves
//! either the old file or the complete new one. Files are read through `ftiff`'s mapped
//! reader.

mod encode;
mod rebuild;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use ftiff::{Error, ErrorKind, FileKind, FileName, Result};

use crate::storage::{Kind, Storage};

pub use encode::{encode_group, Encoded, Options};
pub use rebuild::{FileState, FileStatus, LastByte, Rebuilt, RebuiltFile, Survey};

/// A group: its directory, checkpoint id and global ranks in group order (group rank = index).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Group {
    /// Directory holding the group's files.
    pub dir: PathBuf,
    /// Checkpoint id (from the file names).
    pub id: i32,
    /// Global ranks; position = group rank, i.e. row and column of the code matrix.
    pub ranks: Vec<u32>,
}

impl Group {
    /// The group in `dir`. Without `id`, the directory must hold files of one checkpoint
    /// only. Without `ranks`, the group is every rank with a Rank or `RSed` file of that
    /// checkpoint, in ascending order (a rank whose two files are both lost is then unknown:
    /// give `ranks` for it).
    pub fn find(
        storage: &dyn Storage,
        dir: &Path,
        id: Option<i32>,
        ranks: Option<&[u32]>,
    ) -> Result<Group> {
        let mut found = Vec::new();
        let entries = storage
            .list(dir)
            .map_err(|e| Error::from(e).with_path(dir))?;
        for entry in entries.iter().filter(|e| e.kind != Kind::Dir) {
            // Pcof files (L2) may share the directory; they are no part of the group.
            if let Some(name) = entry.name.to_str().and_then(FileName::parse) {
                if name.kind != FileKind::Pcof {
                    found.push(name);
                }
            }
        }
        if let Some(ranks) = ranks {
            let distinct: BTreeSet<&u32> = ranks.iter().collect();
            if ranks.is_empty() || distinct.len() != ranks.len() {
                return Err(Error::new(ErrorKind::InvalidGroup {
                    what: "the group's ranks must be distinct, and at least one",
                    value: ranks.len() as i64,
                })
                .with_path(dir));
            }
            found.retain(|f| ranks.contains(&f.rank));
        }
        let ids: BTreeSet<i32> = found.iter().map(|f| f.id).collect();
        let id = match (id, ids.len()) {
            (Some(id), _) if ids.contains(&id) => id,
            (Some(id), _) => {
                return Err(Error::new(ErrorKind::NoGroupFiles { id: Some(id) }).with_path(dir))
            }
            (None, 1) => ids.into_iter().next().unwrap_or_default(),
            (None, 0) => {
                return Err(Error::new(ErrorKind::NoGroupFiles { id: None }).with_path(dir))
            }
            (None, _) => {
                return Err(Error::new(ErrorKind::SeveralCheckpoints {
                    ids: ids.into_iter().collect(),
                })
                .with_path(dir))
            }
        };
        let ranks = match ranks {
            Some(r) => r.to_vec(),
            None => found
                .iter()
                .filter(|f| f.id == id)
                .map(|f| f.rank)
                .collect::<BTreeSet<u32>>()
                .into_iter()
                .collect(),
        };
        Ok(Group {
            dir: dir.to_path_buf(),
            id,
            ranks,
        })
    }

    /// Group size k.
    pub fn k(&self) -> usize {
        self.ranks.len()
    }

    /// Path of the file of group rank `g`.
    pub fn path(&self, kind: FileKind, g: usize) -> PathBuf {
        let rank = self.ranks.get(g).copied().unwrap_or_default();
        self.dir
            .join(FileName::new(self.id, kind, rank).to_string())
    }
}
