//! Whether each file verifies, and whether a checkpoint can be restored now and after losing
//! a node: the restart's rules, applied to what a scan found.

use std::collections::BTreeSet;
use std::path::Path;

use ftiff::{Checkpoint, ErrorKind, RsedFile};

use super::{load, Ckpt, Kind, Node, RankFiles, Slot, Status};
use crate::restart_plan::{self, Holds, Unrecoverable};
use crate::Level;

/// What checking one file found.
#[derive(Debug, Default)]
pub struct Checked {
    /// Every problem, each naming the file: the file cannot be used.
    pub problems: Vec<ftiff::Error>,
    /// Bytes after the end `FB.fs` gives: not covered by any hash, and ignored by FTI 1.1 and
    /// by the restart, so reported but no problem.
    pub ignored_trailing: u64,
}

/// Checks one file as the restart does: a Rank or Pcof file by its structure and every hash
/// (bytes after `FB.fs` are ignored, and counted), an RSed file by its trailer and the
/// checksum of its code. Every tool that verifies gives this verdict.
pub fn check_file(path: &Path, kind: Kind, progress: &(dyn Fn(u64) + Sync)) -> Checked {
    let map = match load(path) {
        Ok(map) => map,
        Err(e) => {
            return Checked {
                problems: vec![e],
                ignored_trailing: 0,
            }
        }
    };
    let bytes = map.bytes();
    let mut checked = Checked::default();
    let problems = if kind == Kind::Rsed {
        match RsedFile::parse(bytes) {
            Ok(rsed) => rsed.verify(bytes, progress),
            Err(e) => vec![e],
        }
    } else {
        match Checkpoint::parse(bytes) {
            Ok(ckpt) => ckpt.verify(progress),
            Err(e) => vec![e],
        }
    };
    for p in problems {
        match p.kind() {
            ErrorKind::TrailingBytes { extra, .. } => checked.ignored_trailing = *extra,
            _ => checked.problems.push(p.with_path(path)),
        }
    }
    checked
}

/// [`check_file`]'s first problem, in words.
pub fn verify_file(
    path: &Path,
    kind: Kind,
    progress: &(dyn Fn(u64) + Sync),
) -> std::result::Result<(), String> {
    match check_file(path, kind, progress).problems.into_iter().next() {
        Some(problem) => Err(problem.to_string()),
        None => Ok(()),
    }
}

impl Slot {
    /// Verifies its file, if present, recording the status and the first problem.
    pub fn verify(&mut self, kind: Kind, progress: &(dyn Fn(u64) + Sync)) {
        let Some(file) = &self.file else { return };
        match verify_file(&file.path, kind, progress) {
            Ok(()) => self.status = Status::Ok,
            Err(problem) => {
                self.status = Status::Corrupt;
                self.problem = Some(problem);
            }
        }
    }
}

/// Whether a checkpoint survives the loss of one node, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// It can be restored from the files as they are.
    pub restorable: bool,
    /// It can still be restored after losing any one node's files.
    pub survives: bool,
    /// In words.
    pub why: String,
}

impl Ckpt {
    /// Total size of its present files.
    pub fn bytes(&self) -> u64 {
        self.slots()
            .filter_map(|(_, s)| s.file.as_ref())
            .map(|f| f.size)
            .sum()
    }

    /// Every slot, rank by rank.
    pub fn slots(&self) -> impl Iterator<Item = (Kind, &Slot)> {
        self.ranks.iter().flat_map(RankFiles::slots)
    }

    /// Every slot, rank by rank, to record statuses.
    pub fn slots_mut(&mut self) -> impl Iterator<Item = (Kind, &mut Slot)> {
        self.ranks.iter_mut().flat_map(RankFiles::slots_mut)
    }

    /// Whether a present file does not verify.
    pub fn has_corrupt(&self) -> bool {
        self.slots().any(|(_, s)| s.status == Status::Corrupt)
    }

    /// The newest `FB.timestamp` of its usable Rank files.
    pub fn written(&self) -> Option<i64> {
        self.ranks
            .iter()
            .filter(|r| r.rank_file.status.usable())
            .filter_map(|r| r.rank_file.file.as_ref()?.head.map(|(t, _)| t))
            .max()
    }

    /// What keeps it from being restored once `lost`'s files are gone too (`None`: nothing):
    /// the restart's own plan (`restart_plan::plan`) over what each rank holds.
    fn lacking(&self, lost: Option<&Node>) -> Option<String> {
        let holds: Vec<Holds> = self
            .ranks
            .iter()
            .map(|r| Holds {
                // A head has nothing to restore.
                own: r.is_head || r.rank_file.usable(lost),
                copy: [&r.pcof, &r.rsed]
                    .into_iter()
                    .flatten()
                    .any(|s| s.usable(lost)),
            })
            .collect();
        let why = restart_plan::plan(self.level, &holds, &self.topology).err()?;
        let only = if self.level == Level::L1 && lost.is_some() {
            " (L1 keeps no copy)"
        } else {
            ""
        };
        Some(match why {
            Unrecoverable::FileAndCopy { rank, holder } => format!(
                "rank {rank} without its file or the copy of it (Ckpt{}-Pcof{holder}.fti)",
                self.id
            ),
            why => format!("{why}{only}"),
        })
    }

    /// The dedicated heads (`head = 1`) among its ranks.
    pub fn heads(&self) -> Vec<u32> {
        self.ranks
            .iter()
            .filter(|r| r.is_head)
            .map(|r| r.rank)
            .collect()
    }

    /// When the ranks without any file are exactly the first of each node, on two nodes or
    /// more, and heads were not assumed: they look like dedicated heads, said so.
    fn heads_hint(&self) -> String {
        let has_file = |r: &RankFiles| r.slots().any(|(_, s)| s.file.is_some());
        let first_of_node =
            |r: &RankFiles| self.topology.place(r.rank).is_some_and(|p| p.position == 0);
        let without: Vec<&RankFiles> = self.ranks.iter().filter(|r| !has_file(r)).collect();
        let nodes = self.ranks.len().div_ceil(self.node_size.max(1) as usize);
        let looks_like_heads = self.node_size > 1
            && nodes > 1
            && self.heads().is_empty()
            && without.len() == nodes
            && without.iter().all(|r| first_of_node(r));
        if !looks_like_heads {
            return String::new();
        }
        let ranks: Vec<String> = without.iter().map(|r| r.rank.to_string()).collect();
        format!(
            "; ranks {} have no file in this checkpoint: the first rank of each node, as dedicated heads (head = 1): give --head",
            ranks.join(", ")
        )
    }

    /// What keeps it from being restored from the files as they are (`None`: nothing).
    pub fn lacking_now(&self) -> Option<String> {
        self.lacking(None)
    }

    /// Whether it can be restored now, and after losing any one node (every file of the node:
    /// files are on the node of their `node<N>` directory, see [`Node`]).
    pub fn verdict(&self) -> Verdict {
        let assumed = if self.slots().any(|(_, s)| s.status == Status::Unverified) {
            " (files not verified: assumed intact)"
        } else {
            ""
        };
        if let Some(what) = self.lacking(None) {
            return Verdict {
                restorable: false,
                survives: false,
                why: format!("not restorable now: {what}{assumed}{}", self.heads_hint()),
            };
        }
        let nodes: BTreeSet<&Node> = self
            .slots()
            .filter_map(|(_, s)| s.file.as_ref().map(|f| &f.node))
            .filter(|n| **n != Node::Global)
            .collect();
        for node in nodes {
            if let Some(what) = self.lacking(Some(node)) {
                return Verdict {
                    restorable: true,
                    survives: false,
                    why: format!("losing {node} would leave {what}{assumed}"),
                };
            }
        }
        let why = match self.level {
            Level::L2 => "every rank keeps its file or the copy of it, whichever node is lost",
            Level::L3 => {
                "every group keeps enough Rank and RSed files to rebuild the rest, whichever node is lost"
            }
            Level::L4 => "every rank's file is on global storage and intact",
            Level::L1 => "every rank keeps its file, whichever node is lost",
        };
        Verdict {
            restorable: true,
            survives: true,
            why: format!("{why}{assumed}"),
        }
    }

    /// L2 partner copies that are not byte copies of their owner's file (their `FB.checksum`
    /// differs, both files being present and not corrupt): the partners were then not the
    /// ones the assumed rank count, node size and group size imply.
    pub fn foreign_copies(&self) -> Vec<String> {
        let mut out = Vec::new();
        for holder in &self.ranks {
            let (Some(pcof), Some(owner)) = (&holder.pcof, holder.copy_of) else {
                continue;
            };
            let Some(owner) = self.ranks.get(owner as usize) else {
                continue;
            };
            let head = |s: &Slot| s.status.usable().then(|| s.file.as_ref()?.head).flatten();
            if let (Some(copy), Some(own)) = (head(pcof), head(&owner.rank_file)) {
                if copy.1 != own.1 {
                    out.push(format!(
                        "{}: not a copy of {}, its partner's file with {} ranks, {} per node, {} nodes per group: give the run's --node-size and --group-size, and list the directory holding its Topology.fti",
                        pcof.path().unwrap_or(Path::new("?")).display(),
                        owner.rank_file.path().unwrap_or(Path::new("?")).display(),
                        self.ranks.len(),
                        self.node_size,
                        self.group_size
                    ));
                }
            }
        }
        out
    }
}
