//! One L3 group's files in one directory: writing its `RSed` files and rebuilding what is lost.
//!
//! This is what the offline tools need; which node directory a file lives in is the runtime's
//! business. Every file is written under a temporary name (`.<name>.l3tmp`), synced, and
//! renamed over its final name, then the directory is synced: a crash leaves either the old
//! file or the complete new one.

mod encode;
mod rebuild;

use std::collections::BTreeSet;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use super::code::{apply, Code, Shard};
use super::matrix::Matrix;
use crate::blocks::Integrity;
use crate::error::{Error, ErrorKind, Record, Result};
use crate::hash::{self, Digest, Md5Stream};
use crate::name::{FileKind, FileName};
use crate::raw::{fb, FileBlock};
use crate::read::{Checkpoint, MappedFile};
use crate::rsed::RsedFile;
use crate::write;

pub use encode::{encode_group, rsed_trailer, Encoded, Options};
use encode::{for_each_output, open_rank, prefix, publish, write_code, TempFile};
pub use rebuild::{
    restore_last_byte, FileState, FileStatus, LastByte, Rebuilt, RebuiltFile, Survey,
};

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
    pub fn find(dir: &Path, id: Option<i32>, ranks: Option<&[u32]>) -> Result<Group> {
        let mut found = Vec::new();
        let entries = std::fs::read_dir(dir).map_err(|e| Error::from(e).with_path(dir))?;
        for entry in entries {
            let entry = entry.map_err(|e| Error::from(e).with_path(dir))?;
            // Pcof files (L2) may share the directory; they are no part of the group.
            if let Some(name) = entry.file_name().to_str().and_then(FileName::parse) {
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
