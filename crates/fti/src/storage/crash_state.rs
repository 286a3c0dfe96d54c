//! What a disk may hold after a power failure, computed from the log of changes a
//! [`PowerCut`](super::PowerCut) storage saw.
//!
//! The model is the pessimistic one of crash-consistency checkers (ALICE, CrashMonkey): at the
//! instant of the cut, everything made durable by an `fsync` is there, and of the changes made
//! since (a file's writes and truncations since its last sync, a directory's created, renamed
//! and removed names since its last sync) *any subset* may have reached the disk, each in
//! program order where they overlap. A rename within one directory is atomic; a rename between
//! two directories is two changes (the old name gone, the new one there), each pending until
//! its own directory is synced. Nothing is assumed of write-back order or of a file system's
//! journal. A change is the unit: a write is either all there or absent (torn sectors are not
//! modelled).

use std::collections::{BTreeMap, HashMap};
use std::io;
use std::path::{Path, PathBuf};

/// What a name refers to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Node {
    /// A file, by inode number.
    File(u64),
    Dir,
}

/// One change the running system made, in program order: one per storage operation.
#[derive(Debug, Clone)]
pub(super) enum Change {
    /// Bytes written into a file.
    Write {
        ino: u64,
        offset: u64,
        bytes: Vec<u8>,
    },
    /// A file's size set.
    SetLen { ino: u64, len: u64 },
    /// A file made durable, with its content at that instant.
    SyncFile { ino: u64, content: Vec<u8> },
    /// Names set (`Some`) or removed (`None`), in the directory each path's parent is; the
    /// names of one directory change atomically, those of different directories apart.
    Names(Vec<(PathBuf, Option<Node>)>),
    /// A directory's entries made durable.
    SyncDir(PathBuf),
}

/// A change not yet made durable at the cut.
#[derive(Debug, Clone)]
enum Pending {
    Content {
        ino: u64,
        change: Content,
    },
    Names {
        dir: PathBuf,
        names: Vec<(PathBuf, Option<Node>)>,
    },
}

#[derive(Debug, Clone)]
enum Content {
    Write { offset: u64, bytes: Vec<u8> },
    SetLen(u64),
}

/// The storage's state when it was made: what counts as durable from the start.
#[derive(Debug, Clone, Default)]
pub(super) struct Initial {
    pub(super) names: BTreeMap<PathBuf, Node>,
    pub(super) contents: HashMap<u64, Vec<u8>>,
}

/// The disk at one cut point: what is durable, and the changes that may or may not be there.
#[derive(Debug, Clone)]
pub struct CrashState {
    root: PathBuf,
    names: BTreeMap<PathBuf, Node>,
    contents: HashMap<u64, Vec<u8>>,
    pending: Vec<Pending>,
}

impl CrashState {
    /// Replays `log` from `initial`: the state of a power cut before `log`'s first change not
    /// in it.
    pub(super) fn replay(root: &Path, initial: &Initial, log: &[Change]) -> CrashState {
        let mut live = initial.names.clone();
        let mut state = CrashState {
            root: root.to_owned(),
            names: initial.names.clone(),
            contents: initial.contents.clone(),
            pending: Vec::new(),
        };
        for change in log {
            state.apply(&mut live, change);
        }
        state
    }

    fn apply(&mut self, live: &mut BTreeMap<PathBuf, Node>, change: &Change) {
        match change {
            Change::Write { ino, offset, bytes } => self.pending.push(Pending::Content {
                ino: *ino,
                change: Content::Write {
                    offset: *offset,
                    bytes: bytes.clone(),
                },
            }),
            Change::SetLen { ino, len } => self.pending.push(Pending::Content {
                ino: *ino,
                change: Content::SetLen(*len),
            }),
            Change::SyncFile { ino, content } => {
                self.pending
                    .retain(|p| !matches!(p, Pending::Content { ino: i, .. } if i == ino));
                self.contents.insert(*ino, content.clone());
            }
            Change::Names(names) => {
                for (path, node) in names {
                    set_name(live, path, *node);
                }
                // One pending change per directory touched.
                let mut by_dir: BTreeMap<PathBuf, Vec<(PathBuf, Option<Node>)>> = BTreeMap::new();
                for (path, node) in names {
                    let dir = path.parent().unwrap_or(path).to_owned();
                    by_dir.entry(dir).or_default().push((path.clone(), *node));
                }
                for (dir, names) in by_dir {
                    self.pending.push(Pending::Names { dir, names });
                }
            }
            Change::SyncDir(dir) => {
                self.pending
                    .retain(|p| !matches!(p, Pending::Names { dir: d, .. } if d == dir));
                self.names.retain(|p, _| p.parent() != Some(dir));
                for (p, node) in live.iter().filter(|(p, _)| p.parent() == Some(dir)) {
                    self.names.insert(p.clone(), *node);
                }
            }
        }
    }

    /// How many changes may or may not have reached the disk.
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// Writes one possible disk under `dest` (which must exist and be empty): the durable
    /// state, plus each pending change `i` for which `reached(i)` is true, in program order.
    /// Only names whose every parent directory is there are written; a file is written with
    /// its content (empty if nothing of it reached the disk).
    pub fn write_image(&self, dest: &Path, reached: impl Fn(usize) -> bool) -> io::Result<()> {
        let mut names = self.names.clone();
        let mut contents = self.contents.clone();
        for (i, pending) in self.pending.iter().enumerate() {
            if !reached(i) {
                continue;
            }
            match pending {
                Pending::Names { names: set, .. } => {
                    for (path, node) in set {
                        set_name(&mut names, path, *node);
                    }
                }
                Pending::Content { ino, change } => {
                    let content = contents.entry(*ino).or_default();
                    match change {
                        Content::Write { offset, bytes } => {
                            let at = usize::try_from(*offset).map_err(io::Error::other)?;
                            if content.len() < at + bytes.len() {
                                content.resize(at + bytes.len(), 0);
                            }
                            content[at..at + bytes.len()].copy_from_slice(bytes);
                        }
                        Content::SetLen(len) => {
                            content.resize(usize::try_from(*len).map_err(io::Error::other)?, 0)
                        }
                    }
                }
            }
        }
        self.write_tree(dest, &names, &contents)
    }

    fn write_tree(
        &self,
        dest: &Path,
        names: &BTreeMap<PathBuf, Node>,
        contents: &HashMap<u64, Vec<u8>>,
    ) -> io::Result<()> {
        let reachable = |path: &Path| {
            path.ancestors()
                .skip(1)
                .take_while(|a| *a != self.root)
                .all(|a| names.get(a) == Some(&Node::Dir))
        };
        for (path, node) in names {
            if !reachable(path) {
                continue;
            }
            let rel = path.strip_prefix(&self.root).map_err(io::Error::other)?;
            let to = dest.join(rel);
            match node {
                Node::Dir => std::fs::create_dir_all(&to)?,
                Node::File(ino) => {
                    if let Some(parent) = to.parent() {
                        std::fs::create_dir_all(parent)?;
                    }
                    let bytes = contents.get(ino).map_or(&[][..], Vec::as_slice);
                    std::fs::write(&to, bytes)?;
                }
            }
        }
        Ok(())
    }
}

fn set_name(names: &mut BTreeMap<PathBuf, Node>, path: &Path, node: Option<Node>) {
    match node {
        Some(node) => names.insert(path.to_owned(), node),
        None => names.remove(path),
    };
}
