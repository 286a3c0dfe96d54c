//! The checkpoints below a directory, in FTI 1.1's layout (`docs/runtime.md`, *Files and
//! directories*): every rank's `Rank` file and its level's redundancy (`Pcof` partner copies at
//! L2, `RSed` Reed-Solomon code at L3), whether each file verifies, whether a checkpoint can be
//! restored now and after losing a node, and which archived checkpoints a prune deletes.
//!
//! The rules are the runtime's own: a checkpoint is restorable when the restart's plan
//! (`restart_plan`) recovers it from the files that verify, and the rank count is
//! [`rank_count`], which the restart's rank-count check applies too. The `fti` tool's `list`
//! and `prune` are front ends to this module.
//!
//! Where files live: `<ckpt_dir>/node<N>/<exec_id>/lK[_archive]/` for L1..L3 (without
//! `node<N>/` when FTI's `local_test = 0`), `<glbl_dir>/<exec_id>/l4[_archive]/` for L4, and
//! `<meta_dir>/<exec_id>/Topology.fti`.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::topology::Topology;
use crate::Level;

mod prune;
mod scan;
#[cfg(test)]
mod tests;
mod verdict;

pub use prune::{
    delete_checkpoint, delete_leftovers, prunable_files, prune_plan, stale_leftovers, PrunePlan,
};
pub use scan::{load, scan, DirId, Leftover, Scan};
pub use verdict::{check_file, verify_file, Checked, Verdict};

/// Ranks numbered this high or higher are not believed: a file naming one is skipped (a run
/// that large would make every listed checkpoint that many rows long).
pub const MAX_RANKS: u32 = 1 << 24;

/// The kinds of checkpoint file (FTI-FF names them).
pub use ftiff::FileKind as Kind;

/// The only level with files of this kind (`None`: every level).
fn kind_level(kind: Kind) -> Option<Level> {
    match kind {
        Kind::Rank => None,
        Kind::Pcof => Some(Level::L2),
        Kind::Rsed => Some(Level::L3),
    }
}

/// Where a file is stored, as far as losing a node is concerned.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Node {
    /// The `node<N>` directory above the execution directory (FTI's `local_test = 1` layout).
    Numbered(u32),
    /// No `node<N>` directory above this execution directory: all of its files are taken to
    /// be on one node (FTI's `local_test = 0` layout, where it is the node's local storage).
    Dir(PathBuf),
    /// Global storage (L4): lost with no node.
    Global,
}

impl Node {
    /// The text table's node column: `node<N>`, or `-` when there is no node directory.
    pub fn column(&self) -> String {
        match self {
            Node::Numbered(n) => format!("node{n}"),
            Node::Dir(_) | Node::Global => "-".to_owned(),
        }
    }
}

impl fmt::Display for Node {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Node::Numbered(n) => write!(f, "node{n}"),
            Node::Dir(dir) => write!(f, "the node holding {}", dir.display()),
            Node::Global => f.write_str("global storage"),
        }
    }
}

/// A checkpoint file found on disk (a regular file, in a directory of its level).
#[derive(Debug, Clone)]
pub struct Entry {
    /// The path, below the directory given to [`scan`].
    pub path: PathBuf,
    /// Rank, Pcof or RSed.
    pub kind: Kind,
    /// Checkpoint id (from the name).
    pub id: i32,
    /// Rank (from the name; for Pcof and RSed files the rank that holds them).
    pub rank: u32,
    /// From the directory `lK` or `lK_archive`.
    pub level: Level,
    /// In `lK_archive/`.
    pub archived: bool,
    /// The name of the directory above the level directory.
    pub exec_id: String,
    /// Where the file is stored.
    pub node: Node,
    /// The directory holding the node directories (or, without them, the execution
    /// directories): the files of one checkpoint share it.
    pub root: PathBuf,
    /// File size.
    pub size: u64,
    /// `FB.timestamp` and `FB.checksum` of a Rank or Pcof file, when its file block reads.
    pub head: Option<(i64, [u8; 33])>,
    /// The identity of the directory it was found in, and of the file itself: a prune deletes
    /// it only if both are still the ones scanned.
    pub ids: (DirId, DirId),
}

/// How a file is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Status {
    /// Present and verified.
    Ok,
    /// Present, but it does not verify or cannot be read.
    Corrupt,
    /// No such regular file.
    #[default]
    Missing,
    /// Present, not checked (`--no-verify`).
    Unverified,
}

impl Status {
    /// The word used in both outputs.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Corrupt => "corrupt",
            Status::Missing => "missing",
            Status::Unverified => "unverified",
        }
    }

    /// Present, and not known to be corrupt.
    fn usable(self) -> bool {
        matches!(self, Status::Ok | Status::Unverified)
    }
}

/// A present file of a checkpoint.
#[derive(Debug, Clone)]
pub struct File {
    /// Its path.
    pub path: PathBuf,
    /// Where it is stored.
    pub node: Node,
    /// Its size.
    pub size: u64,
    /// `FB.timestamp` and `FB.checksum` (Rank and Pcof files whose file block reads).
    pub head: Option<(i64, [u8; 33])>,
    /// The identities of its directory and of itself when scanned.
    pub ids: (DirId, DirId),
}

/// One file of a rank in a checkpoint: present or not, and how it is doing.
#[derive(Debug, Clone, Default)]
pub struct Slot {
    /// The file, when present.
    pub file: Option<File>,
    /// Its status.
    pub status: Status,
    /// The first problem found, for a corrupt file.
    pub problem: Option<String>,
}

impl Slot {
    /// Usable unless corrupt, missing, or on the node `lost`.
    fn usable(&self, lost: Option<&Node>) -> bool {
        self.status.usable() && self.file.as_ref().is_some_and(|f| Some(&f.node) != lost)
    }

    fn path(&self) -> Option<&Path> {
        self.file.as_ref().map(|f| f.path.as_path())
    }
}

/// The files of one rank in a checkpoint.
#[derive(Debug, Clone)]
pub struct RankFiles {
    /// The rank.
    pub rank: u32,
    /// `Ckpt<id>-Rank<r>.fti`.
    pub rank_file: Slot,
    /// L2: `Ckpt<id>-Pcof<r>.fti`, the copy this rank keeps of rank `copy_of`'s file.
    pub pcof: Option<Slot>,
    /// L2: the left partner, whose file this rank's Pcof file copies.
    pub copy_of: Option<u32>,
    /// L2: the right partner, whose Pcof file copies this rank's file.
    pub copied_by: Option<u32>,
    /// L3: `Ckpt<id>-RSed<r>.fti`.
    pub rsed: Option<Slot>,
    /// A dedicated head (`head = 1`, the first rank of its node): it has no files and needs
    /// none. Its groups (the heads at the same position) have none either.
    pub is_head: bool,
}

impl RankFiles {
    fn slots(&self) -> impl Iterator<Item = (Kind, &Slot)> {
        [
            Some((Kind::Rank, &self.rank_file)),
            self.pcof.as_ref().map(|s| (Kind::Pcof, s)),
            self.rsed.as_ref().map(|s| (Kind::Rsed, s)),
        ]
        .into_iter()
        .flatten()
    }

    fn slots_mut(&mut self) -> impl Iterator<Item = (Kind, &mut Slot)> {
        [
            Some((Kind::Rank, &mut self.rank_file)),
            self.pcof.as_mut().map(|s| (Kind::Pcof, s)),
            self.rsed.as_mut().map(|s| (Kind::Rsed, s)),
        ]
        .into_iter()
        .flatten()
    }

    /// Where this rank's files are: the node of the first present one.
    pub fn node(&self) -> Option<&Node> {
        self.slots()
            .find_map(|(_, s)| s.file.as_ref().map(|f| &f.node))
    }
}

/// One checkpoint: execution id, checkpoint id, level, `lK/` or `lK_archive/`, with the files
/// of every rank of the run (present or missing).
#[derive(Debug, Clone)]
pub struct Ckpt {
    /// The execution id (the directory above the level directory).
    pub exec_id: String,
    /// The checkpoint id.
    pub id: i32,
    /// The level.
    pub level: Level,
    /// In `lK_archive/` rather than `lK/`.
    pub archived: bool,
    /// The directory holding its node (or execution) directories.
    pub root: PathBuf,
    /// Ranks `0..n` of the run.
    pub ranks: Vec<RankFiles>,
    /// L3: the encoding groups, ranks in group order.
    pub groups: Vec<Vec<u32>>,
    /// The node size assumed (ranks per node).
    pub node_size: u32,
    /// The group size assumed (nodes per group).
    pub group_size: u32,
    /// The places of its ranks, from the rank count and sizes assumed.
    pub topology: Topology,
}

/// Ranks per node and nodes per group, as in the run's configuration.
#[derive(Debug, Clone, Copy)]
pub struct Sizes {
    /// `node_size`; `None`: inferred from the `node<N>` directories.
    pub node_size: Option<u32>,
    /// `group_size`.
    pub group_size: u32,
    /// `head = 1`: the first rank of each node is a dedicated head, which writes no files.
    pub head: bool,
}

/// The smallest `node_size` that puts every rank seen in `node<N>` on node `N` (FTI's
/// `local_test = 1`: N = rank / node_size); 1 when none does or no file is in a node directory.
pub fn infer_node_size(seen: impl IntoIterator<Item = (u32, u32)>) -> u32 {
    // rank / s == n  <=>  rank / (n + 1) < s <= rank / n
    let (mut lo, mut hi) = (1u32, u32::MAX);
    for (rank, n) in seen {
        lo = lo.max(rank / n.saturating_add(1) + 1);
        if let Some(most) = rank.checked_div(n) {
            hi = hi.min(most);
        }
    }
    if lo <= hi {
        lo
    } else {
        1
    }
}

/// The rank count of an execution, from `seen` (one more than the highest rank any of its
/// files names; 0: none) and the number of nodes its `Topology.fti` lists (0: none), completed
/// to full nodes when the last node's files are not visible (lost). 0 means no checkpoint.
/// The restart's rank-count check and the inventory apply this one rule.
pub fn rank_count(seen: u64, topology_nodes: u64, node_size: u64) -> u64 {
    match topology_nodes {
        0 => seen,
        // The files name a rank of the last listed node: that is the count.
        n if seen > (n - 1) * node_size => seen,
        n => n * node_size,
    }
}

/// Groups the files found into checkpoints. Files that cannot belong (a second file of the
/// same name and checkpoint on another node) are reported in `warnings`.
pub fn checkpoints(scan: &Scan, sizes: Sizes, warnings: &mut Vec<String>) -> Result<Vec<Ckpt>> {
    let topologies = topologies(scan, sizes)?;
    type Key<'a> = (&'a str, i32, Level, bool, &'a Path);
    let mut by_ckpt: BTreeMap<Key<'_>, Vec<&Entry>> = BTreeMap::new();
    for e in &scan.entries {
        let key = (
            e.exec_id.as_str(),
            e.id,
            e.level,
            e.archived,
            e.root.as_path(),
        );
        by_ckpt.entry(key).or_default().push(e);
    }
    let mut out = Vec::new();
    for ((exec_id, id, level, archived, root), entries) in by_ckpt {
        let (topology, node_size) = &topologies[exec_id];
        let mut ckpt = Ckpt {
            exec_id: exec_id.to_owned(),
            id,
            level,
            archived,
            root: root.to_path_buf(),
            ranks: Vec::new(),
            groups: Vec::new(),
            node_size: *node_size,
            group_size: sizes.group_size,
            topology: topology.clone(),
        };
        ckpt.lay_out_ranks(sizes.head)?;
        for e in entries {
            ckpt.place_file(e, warnings);
        }
        out.push(ckpt);
    }
    Ok(out)
}

/// Each execution's topology and node size: the rank count from its files and its
/// `Topology.fti` ([`rank_count`]), the node size given or inferred from the `node<N>`
/// directories.
fn topologies(scan: &Scan, sizes: Sizes) -> Result<BTreeMap<&str, (Topology, u32)>> {
    let mut by_exec: BTreeMap<&str, Vec<&Entry>> = BTreeMap::new();
    for e in &scan.entries {
        by_exec.entry(&e.exec_id).or_default().push(e);
    }
    let mut topologies = BTreeMap::new();
    for (exec, entries) in by_exec {
        let node_size = sizes.node_size.unwrap_or_else(|| {
            infer_node_size(entries.iter().filter_map(|e| match e.node {
                Node::Numbered(n) => Some((e.rank, n)),
                _ => None,
            }))
        });
        let seen = entries
            .iter()
            .map(|e| u64::from(e.rank) + 1)
            .max()
            .unwrap_or(0);
        let nodes = scan.topology_nodes.get(exec).copied().map_or(0, u64::from);
        let count = match rank_count(seen, nodes, u64::from(node_size)) {
            // A Topology.fti listing more nodes than believable is ignored.
            n if n > u64::from(MAX_RANKS) => seen,
            n => n,
        } as u32;
        let order: Vec<u32> = (0..count).collect();
        let topology = Topology::new(&order, node_size, sizes.group_size)?;
        topologies.insert(exec, (topology, node_size));
    }
    Ok(topologies)
}

impl Ckpt {
    /// A row of empty slots per rank of the topology, with its partners (L2) and groups (L3).
    fn lay_out_ranks(&mut self, heads: bool) -> Result<()> {
        let (l2, l3) = (self.level == Level::L2, self.level == Level::L3);
        let mut groups = BTreeSet::new();
        for rank in 0..self.topology.len() as u32 {
            let Some(place) = self.topology.place(rank) else {
                return Err(Error::Topology("a rank without a place in its topology"));
            };
            // With heads, the topology of all processes gives the application ranks their
            // FTI groups and partners (the ranks at one position across a sector's nodes);
            // the heads, position 0, form groups of their own.
            let is_head = heads && place.position == 0 && self.node_size > 1;
            if l3 && !is_head {
                groups.insert(place.group.clone());
            }
            self.ranks.push(RankFiles {
                rank,
                rank_file: Slot::default(),
                pcof: l2.then(Slot::default),
                copy_of: l2.then(|| place.left()),
                copied_by: l2.then(|| place.right()),
                rsed: l3.then(Slot::default),
                is_head,
            });
        }
        self.groups = groups.into_iter().collect();
        Ok(())
    }

    /// Puts a file found into its rank's slot; a second one for the same slot is reported.
    fn place_file(&mut self, e: &Entry, warnings: &mut Vec<String>) {
        let Some(files) = self.ranks.get_mut(e.rank as usize) else {
            return;
        };
        let slot = match e.kind {
            Kind::Rank => Some(&mut files.rank_file),
            Kind::Pcof => files.pcof.as_mut(),
            Kind::Rsed => files.rsed.as_mut(),
        };
        let Some(slot) = slot else { return };
        if let Some(first) = &slot.file {
            warnings.push(format!(
                "{}: a second {} file of rank {} in checkpoint {} ({}, {}), ignored (first: {})",
                e.path.display(),
                e.kind.tag(),
                e.rank,
                self.id,
                self.level,
                self.exec_id,
                first.path.display()
            ));
            return;
        }
        slot.file = Some(File {
            path: e.path.clone(),
            node: e.node.clone(),
            size: e.size,
            head: e.head,
            ids: e.ids,
        });
        slot.status = Status::Unverified;
    }
}
