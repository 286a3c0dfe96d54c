//! The checkpoints below a directory, in FTI 1.1's layout (`docs/runtime.md`, *Files and
//! directories*): every rank's `Rank` file and its level's redundancy (`Pcof` partner copies at L2,
//! `RSed` Reed-Solomon code at L3), whether each file verifies, whether a checkpoint could be
//! restored after losing a node, and which archived checkpoints `fti prune` deletes.
//!
//! Where files live: `<ckpt_dir>/node<N>/<exec_id>/lK[_archive]/` for L1..L3 (without
//! `node<N>/` when FTI's `local_test = 0`), `<glbl_dir>/<exec_id>/l4[_archive]/` for L4, and
//! `<meta_dir>/<exec_id>/Topology.fti`.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _, Result};
use fti::topology::Topology;
use fti::Level;
use ftiff::{Checkpoint, RsedFile};

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
}

/// What [`scan`] found below a directory.
#[derive(Debug, Default)]
pub struct Scan {
    /// Every checkpoint file, sorted by path.
    pub entries: Vec<Entry>,
    /// Entries left out, with the reason: not regular files (never opened), files outside a
    /// directory of their level, unreadable directories.
    pub skipped: Vec<(PathBuf, String)>,
    /// The number of nodes each execution's `Topology.fti` lists, by execution id.
    pub topology_nodes: BTreeMap<String, u32>,
}

/// Every checkpoint file below `root`, searched recursively (symbolic links to directories
/// are not followed). Only regular files are opened, and only their first 96 bytes.
pub fn scan(root: &Path) -> Result<Scan> {
    // Directory names above `root` (the execution id, `node<N>`) come from its real path.
    let named_root =
        fs::canonicalize(root).with_context(|| format!("reading {}", root.display()))?;
    let mut scan = Scan::default();
    let mut stack = vec![(root.to_path_buf(), named_root)];
    let mut first = true;
    while let Some((dir, named)) = stack.pop() {
        let entries = match fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if first => {
                return Err(e).with_context(|| format!("reading {}", dir.display()));
            }
            Err(e) => {
                scan.skipped.push((dir, format!("cannot be read ({e})")));
                continue;
            }
        };
        first = false;
        for entry in entries {
            let entry = entry.with_context(|| format!("reading {}", dir.display()))?;
            let (path, name) = (entry.path(), entry.file_name());
            let file_type = entry
                .file_type()
                .with_context(|| format!("reading {}", path.display()))?;
            if file_type.is_dir() {
                stack.push((path, named.join(&name)));
                continue;
            }
            let name = name.to_string_lossy();
            if name == "Topology.fti" {
                if let (Some(exec), Some(nodes)) = (file_name(&named), topology_nodes(&path)) {
                    let slot = scan.topology_nodes.entry(exec).or_default();
                    *slot = (*slot).max(nodes);
                }
                continue;
            }
            let Some(ftiff::FileName { kind, id, rank }) = ftiff::FileName::parse(&name) else {
                continue;
            };
            // `stat` follows symbolic links and never blocks, even on a FIFO.
            let size = match fs::metadata(&path) {
                Ok(m) if m.is_file() => m.len(),
                _ => {
                    scan.skipped.push((path, "not a regular file".to_owned()));
                    continue;
                }
            };
            if rank >= MAX_RANKS {
                scan.skipped
                    .push((path, format!("rank number {rank} is not believable")));
                continue;
            }
            match place(&named, kind) {
                Ok(place) => {
                    let head = (kind != Kind::Rsed).then(|| read_head(&path)).flatten();
                    scan.entries.push(Entry {
                        path,
                        kind,
                        id,
                        rank,
                        level: place.level,
                        archived: place.archived,
                        exec_id: place.exec_id,
                        node: place.node,
                        root: place.root,
                        size,
                        head,
                    });
                }
                Err(why) => scan.skipped.push((path, why)),
            }
        }
    }
    scan.entries.sort_by(|a, b| a.path.cmp(&b.path));
    scan.skipped.sort();
    Ok(scan)
}

fn file_name(path: &Path) -> Option<String> {
    Some(path.file_name()?.to_string_lossy().into_owned())
}

/// Where a file in directory `dir` (its real path) belongs.
struct Place {
    level: Level,
    archived: bool,
    exec_id: String,
    node: Node,
    root: PathBuf,
}

fn place(dir: &Path, kind: Kind) -> std::result::Result<Place, String> {
    let name = file_name(dir).unwrap_or_default();
    let not_level = || {
        if name == "tmp" {
            "in tmp/, where checkpoints are written before they are published".to_owned()
        } else {
            "not in a level directory (lK/ or lK_archive/)".to_owned()
        }
    };
    let (base, archived) = match name.strip_suffix("_archive") {
        Some(base) => (base, true),
        None => (name.as_str(), false),
    };
    let level = base
        .strip_prefix('l')
        .filter(|n| n.len() == 1)
        .and_then(|n| n.parse().ok())
        .and_then(Level::from_number)
        .ok_or_else(not_level)?;
    if let Some(own) = kind_level(kind).filter(|&l| l != level) {
        let n = own.number();
        return Err(format!(
            "a {} file belongs in l{n}/ or l{n}_archive/, not in {name}/",
            kind.tag()
        ));
    }
    let exec_dir = dir.parent().filter(|p| p.file_name().is_some());
    let exec_dir = exec_dir.ok_or("no execution directory above the level directory")?;
    let exec_id = file_name(exec_dir).unwrap_or_default();
    let above = exec_dir.parent().unwrap_or(exec_dir);
    let numbered = file_name(above).and_then(|n| n.strip_prefix("node").and_then(parse_digits));
    let (node, root) = match (level, numbered) {
        (Level::L4, _) => (Node::Global, above.to_path_buf()),
        (_, Some(n)) => (
            Node::Numbered(n),
            above.parent().unwrap_or(above).to_path_buf(),
        ),
        (_, None) => (Node::Dir(exec_dir.to_path_buf()), above.to_path_buf()),
    };
    Ok(Place {
        level,
        archived,
        exec_id,
        node,
        root,
    })
}

fn parse_digits(s: &str) -> Option<u32> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// `FB.timestamp` and `FB.checksum` of a Rank or Pcof file.
fn read_head(path: &Path) -> Option<(i64, [u8; 33])> {
    let file = ftiff::open_regular(path).ok()?;
    let fb = ftiff::raw::FileBlock::read_from(&file, 0).ok()?;
    Some((fb.timestamp, fb.checksum))
}

/// The number of nodes a `Topology.fti` lists (the runtime's reading of it).
fn topology_nodes(path: &Path) -> Option<u32> {
    fti::topology::topology_nodes(path)
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
}

/// Ranks per node and nodes per group, as in the run's configuration.
#[derive(Debug, Clone, Copy)]
pub struct Sizes {
    /// `node_size`; `None`: inferred from the `node<N>` directories.
    pub node_size: Option<u32>,
    /// `group_size`.
    pub group_size: u32,
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

/// The rank count of an execution: one more than the highest rank any of its files names,
/// completed to full nodes when `Topology.fti` lists nodes beyond that rank's (their files
/// are not visible here).
pub fn rank_count(highest: u32, topology_nodes: Option<u32>, node_size: u32) -> u32 {
    let seen = highest.saturating_add(1);
    match topology_nodes {
        Some(nodes) if nodes > 0 => {
            let listed = u64::from(nodes) * u64::from(node_size);
            let below_last = listed - u64::from(node_size);
            if u64::from(seen) > below_last || listed > u64::from(MAX_RANKS) {
                seen
            } else {
                listed as u32
            }
        }
        _ => seen,
    }
}

/// Groups the files found into checkpoints. Files that cannot belong (a second file of the
/// same name and checkpoint on another node) are reported in `warnings`.
pub fn checkpoints(scan: &Scan, sizes: Sizes, warnings: &mut Vec<String>) -> Result<Vec<Ckpt>> {
    let mut by_exec: BTreeMap<&str, Vec<&Entry>> = BTreeMap::new();
    for e in &scan.entries {
        by_exec.entry(&e.exec_id).or_default().push(e);
    }
    let mut topologies = BTreeMap::new();
    for (exec, entries) in &by_exec {
        let node_size = sizes.node_size.unwrap_or_else(|| {
            infer_node_size(entries.iter().filter_map(|e| match e.node {
                Node::Numbered(n) => Some((e.rank, n)),
                _ => None,
            }))
        });
        let highest = entries.iter().map(|e| e.rank).max().unwrap_or(0);
        let count = rank_count(highest, scan.topology_nodes.get(*exec).copied(), node_size);
        let order: Vec<u32> = (0..count).collect();
        let topology = Topology::new(&order, node_size, sizes.group_size)
            .with_context(|| format!("the topology of execution {exec}"))?;
        topologies.insert(*exec, (topology, node_size));
    }

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
        let mut ranks = Vec::with_capacity(topology.len());
        let mut groups = BTreeSet::new();
        for rank in 0..topology.len() as u32 {
            let Some(place) = topology.place(rank) else {
                bail!("no place for rank {rank} in the topology of execution {exec_id}");
            };
            if level == Level::L3 {
                groups.insert(place.group.clone());
            }
            let l2 = level == Level::L2;
            ranks.push(RankFiles {
                rank,
                rank_file: Slot::default(),
                pcof: l2.then(Slot::default),
                copy_of: l2.then(|| place.left()),
                copied_by: l2.then(|| place.right()),
                rsed: (level == Level::L3).then(Slot::default),
            });
        }
        for e in entries {
            let Some(files) = ranks.get_mut(e.rank as usize) else {
                continue;
            };
            let slot = match e.kind {
                Kind::Rank => Some(&mut files.rank_file),
                Kind::Pcof => files.pcof.as_mut(),
                Kind::Rsed => files.rsed.as_mut(),
            };
            let Some(slot) = slot else { continue };
            if let Some(first) = &slot.file {
                warnings.push(format!(
                    "{}: a second {} file of rank {} in checkpoint {id} ({level}, {exec_id}), ignored (first: {})",
                    e.path.display(),
                    e.kind.tag(),
                    e.rank,
                    first.path.display()
                ));
                continue;
            }
            slot.file = Some(File {
                path: e.path.clone(),
                node: e.node.clone(),
                size: e.size,
                head: e.head,
            });
            slot.status = Status::Unverified;
        }
        out.push(Ckpt {
            exec_id: exec_id.to_owned(),
            id,
            level,
            archived,
            root: root.to_path_buf(),
            ranks,
            groups: groups.into_iter().collect(),
            node_size: *node_size,
            group_size: sizes.group_size,
        });
    }
    Ok(out)
}

/// Checks one file: a Rank or Pcof file as [`Checkpoint::verified`] does (structure,
/// every hash), an RSed file by its trailer and the checksum of its code. Returns the first
/// problem.
pub fn verify_file(
    path: &Path,
    kind: Kind,
    progress: &(dyn Fn(u64) + Sync),
) -> std::result::Result<(), String> {
    if kind != Kind::Rsed {
        return crate::load(path)
            .and_then(|f| Checkpoint::verified(&f, progress).map(|_| ()))
            .map_err(|e| e.to_string());
    }
    let map = crate::load(path).map_err(|e| e.to_string())?;
    let rsed = RsedFile::parse(map.bytes()).map_err(|e| e.with_path(path).to_string())?;
    match rsed.verify(map.bytes(), progress).into_iter().next() {
        Some(problem) => Err(problem.with_path(path).to_string()),
        None => Ok(()),
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

    /// What keeps it from being restored once `lost`'s files are gone too (`None`: nothing).
    fn lacking(&self, lost: Option<&Node>) -> Option<String> {
        match self.level {
            Level::L1 | Level::L4 => self
                .ranks
                .iter()
                .find(|r| !r.rank_file.usable(lost))
                .map(|r| {
                    let only = if self.level == Level::L1 && lost.is_some() {
                        " (L1 keeps no copy)"
                    } else {
                        ""
                    };
                    format!("rank {} without its file{only}", r.rank)
                }),
            Level::L2 => self.ranks.iter().find_map(|r| {
                let copy = r
                    .copied_by
                    .and_then(|h| self.ranks.get(h as usize)?.pcof.as_ref());
                let has_copy = copy.is_some_and(|s| s.usable(lost));
                (!r.rank_file.usable(lost) && !has_copy).then(|| {
                    format!(
                        "rank {} without its file or the copy of it (Ckpt{}-Pcof{}.fti)",
                        r.rank,
                        self.id,
                        r.copied_by.unwrap_or(r.rank)
                    )
                })
            }),
            Level::L3 => self.groups.iter().find_map(|group| {
                let k = group.len();
                let gone = group
                    .iter()
                    .filter_map(|&g| self.ranks.get(g as usize))
                    .flat_map(|r| [Some(&r.rank_file), r.rsed.as_ref()])
                    .filter(|s| !s.is_some_and(|s| s.usable(lost)))
                    .count();
                (gone > k).then(|| {
                    let names: Vec<String> = group.iter().map(u32::to_string).collect();
                    format!(
                        "group {} with {gone} of its {} Rank and RSed files lost (at most {k} can be rebuilt)",
                        names.join(","),
                        2 * k
                    )
                })
            }),
        }
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
                why: format!("not restorable now: {what}{assumed}"),
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

/// What `fti prune` does with the checkpoints of one run directory, execution and level.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct PrunePlan {
    /// Indices of the archived checkpoints to delete.
    pub delete: Vec<usize>,
    /// Indices of checkpoints kept although they cannot be restored (newer than the last one
    /// counted): they do not count towards `keep`.
    pub kept_unrestorable: Vec<usize>,
}

/// Chooses the archived checkpoints to delete: per run directory, execution and level, the
/// checkpoints beyond the newest `keep` that can be restored, counting the one in `lK/`
/// first, then the archived ones, newest id first. A checkpoint that cannot be restored is
/// kept when newer than the last counted one, but does not count. `restorable` is asked only
/// about checkpoints that could count (it may verify their files first).
pub fn prune_plan(
    ckpts: &mut [Ckpt],
    keep: usize,
    restorable: &mut dyn FnMut(&mut Ckpt) -> bool,
) -> PrunePlan {
    let mut groups: BTreeMap<(PathBuf, String, Level), Vec<usize>> = BTreeMap::new();
    for (i, c) in ckpts.iter().enumerate() {
        let key = (c.root.clone(), c.exec_id.clone(), c.level);
        groups.entry(key).or_default().push(i);
    }
    let mut plan = PrunePlan::default();
    for (_, mut members) in groups {
        members.sort_by_key(|&i| (ckpts[i].archived, std::cmp::Reverse(ckpts[i].id)));
        let mut counted = 0;
        for i in members {
            if ckpts[i].archived && counted >= keep {
                plan.delete.push(i);
            } else if restorable(&mut ckpts[i]) {
                counted += 1;
            } else {
                plan.kept_unrestorable.push(i);
            }
        }
    }
    plan.delete.sort_unstable();
    plan
}

/// The files of an archived checkpoint that `fti prune` deletes: its present Rank, Pcof and
/// RSed files, each directly inside an `lK_archive` directory of its level.
pub fn prunable_files(c: &Ckpt) -> Vec<PathBuf> {
    if !c.archived {
        return Vec::new();
    }
    let archive = format!("l{}_archive", c.level.number());
    let mut files: Vec<PathBuf> = c
        .slots()
        .filter_map(|(_, s)| s.path())
        .filter(|p| {
            p.parent()
                .and_then(Path::file_name)
                .is_some_and(|n| n.to_string_lossy() == archive)
        })
        .map(Path::to_path_buf)
        .collect();
    files.sort();
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_size_from_node_directories() {
        assert_eq!(infer_node_size([]), 1);
        assert_eq!(infer_node_size([(0, 0), (1, 1), (3, 3)]), 1);
        // Ranks 0..3 on node0, 4..7 on node1.
        assert_eq!(infer_node_size([(0, 0), (3, 0), (4, 1), (7, 1)]), 4);
        // Only node1's ranks 2, 3 seen: 2 per node.
        assert_eq!(infer_node_size([(2, 1), (3, 1)]), 2);
        // No node size puts rank 1 on node0 and rank 2 on node3.
        assert_eq!(infer_node_size([(1, 0), (2, 3)]), 1);
    }

    #[test]
    fn rank_count_completes_lost_nodes() {
        assert_eq!(rank_count(3, None, 1), 4);
        // Node 3's files (rank 3) are not visible: 4 nodes of 1 rank.
        assert_eq!(rank_count(2, Some(4), 1), 4);
        assert_eq!(rank_count(3, Some(4), 1), 4);
        // Rank 6 is on the last of 4 nodes of 2: 7 ranks.
        assert_eq!(rank_count(6, Some(4), 2), 7);
        assert_eq!(rank_count(4, Some(4), 2), 8);
        assert_eq!(rank_count(0, Some(u32::MAX), 2), 1);
    }

    fn slot(node: u32, status: Status) -> Slot {
        Slot {
            file: (status != Status::Missing).then(|| File {
                path: PathBuf::from(format!("node{node}/f")),
                node: Node::Numbered(node),
                size: 1,
                head: None,
            }),
            status,
            problem: None,
        }
    }

    /// A checkpoint of `n` ranks, one per node, one group; `status(kind, rank)`.
    fn ckpt(level: Level, n: u32, status: impl Fn(Kind, u32) -> Status) -> Ckpt {
        let topology = Topology::new(&(0..n).collect::<Vec<_>>(), 1, n).unwrap();
        let ranks = (0..n)
            .map(|r| {
                let place = topology.place(r).unwrap();
                RankFiles {
                    rank: r,
                    rank_file: slot(r, status(Kind::Rank, r)),
                    pcof: (level == Level::L2).then(|| slot(r, status(Kind::Pcof, r))),
                    copy_of: (level == Level::L2).then(|| place.left()),
                    copied_by: (level == Level::L2).then(|| place.right()),
                    rsed: (level == Level::L3).then(|| slot(r, status(Kind::Rsed, r))),
                }
            })
            .collect();
        Ckpt {
            exec_id: "E".into(),
            id: 1,
            level,
            archived: false,
            root: PathBuf::from("L"),
            ranks,
            groups: vec![(0..n).collect()],
            node_size: 1,
            group_size: n,
        }
    }

    #[test]
    fn l2_survives_while_every_file_or_its_copy_is_on_another_node() {
        let all = ckpt(Level::L2, 4, |_, _| Status::Ok);
        assert!(all.verdict().survives, "{:?}", all.verdict());
        // Node 1 gone: rank 1's file survives only as Pcof2 on node2.
        let c = ckpt(Level::L2, 4, |_, r| {
            if r == 1 {
                Status::Missing
            } else {
                Status::Ok
            }
        });
        let v = c.verdict();
        assert!(v.restorable && !v.survives, "{v:?}");
        assert!(v.why.contains("losing node0"), "{}", v.why);
        // Rank 1's file and its copy both gone: not restorable.
        let c = ckpt(Level::L2, 4, |k, r| match (k, r) {
            (Kind::Rank, 1) | (Kind::Pcof, 2) => Status::Corrupt,
            _ => Status::Ok,
        });
        assert!(!c.verdict().restorable);
        // Only copies left of one file is fine as long as no node is lost.
        let c = ckpt(Level::L2, 4, |k, r| {
            if (k, r) == (Kind::Rank, 1) {
                Status::Missing
            } else {
                Status::Ok
            }
        });
        assert!(c.verdict().restorable && !c.verdict().survives);
    }

    #[test]
    fn l3_counts_lost_files_per_group() {
        let all = ckpt(Level::L3, 4, |_, _| Status::Ok);
        assert!(all.verdict().survives);
        // Node 1 gone (2 files): losing another node loses 4 of 8, still rebuildable.
        let c = ckpt(Level::L3, 4, |_, r| {
            if r == 1 {
                Status::Missing
            } else {
                Status::Ok
            }
        });
        assert!(c.verdict().survives, "{:?}", c.verdict());
        // One more file lost: another node's loss makes 5 of 8.
        let c = ckpt(Level::L3, 4, |k, r| {
            if r == 1 || (k, r) == (Kind::Rank, 2) {
                Status::Missing
            } else {
                Status::Ok
            }
        });
        let v = c.verdict();
        assert!(v.restorable && !v.survives, "{v:?}");
        assert!(v.why.contains("5 of its 8"), "{}", v.why);
    }

    #[test]
    fn l1_never_survives_and_l4_does_when_intact() {
        assert!(!ckpt(Level::L1, 4, |_, _| Status::Ok).verdict().survives);
        let mut l4 = ckpt(Level::L4, 4, |_, _| Status::Ok);
        for (_, s) in l4.slots_mut() {
            if let Some(f) = s.file.as_mut() {
                f.node = Node::Global;
            }
        }
        assert!(l4.verdict().survives);
        l4.ranks[3].rank_file.status = Status::Corrupt;
        assert!(!l4.verdict().restorable);
    }

    #[test]
    fn prune_keeps_the_newest_restorable() {
        let mut ckpts: Vec<Ckpt> = [(9, false), (7, true), (6, true), (5, true)]
            .into_iter()
            .map(|(id, archived)| Ckpt {
                id,
                archived,
                ..ckpt(Level::L1, 1, |_, _| Status::Ok)
            })
            .collect();
        let ids = |ckpts: &[Ckpt], plan: &PrunePlan| -> Vec<i32> {
            plan.delete.iter().map(|&i| ckpts[i].id).collect()
        };
        let plan = prune_plan(&mut ckpts, 2, &mut |c| c.verdict().restorable);
        assert_eq!(ids(&ckpts, &plan), [6, 5]);
        // Checkpoint 7 is corrupt: kept, not counted, 6 kept instead.
        ckpts[1].ranks[0].rank_file.status = Status::Corrupt;
        let plan = prune_plan(&mut ckpts, 2, &mut |c| c.verdict().restorable);
        assert_eq!(ids(&ckpts, &plan), [5]);
        assert_eq!(plan.kept_unrestorable, [1]);
        // Checkpoints in lK/ are never deleted, even two of them (a retire interrupted by a
        // crash) with room for one.
        ckpts[1].archived = false;
        let plan = prune_plan(&mut ckpts, 1, &mut |_| true);
        assert_eq!(ids(&ckpts, &plan), [6, 5]);
        assert!(prunable_files(&ckpts[0]).is_empty());
    }
}
