//! Finding the checkpoint files below a directory. The walk opens each directory relative to
//! its parent's handle without following symbolic links, and records the identity (device and
//! inode) of every directory and file it finds, so that a later deletion can refuse anything
//! swapped in since ([`super::delete_checkpoint`]).

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Path, PathBuf};

use ftiff::MappedFile;
use rustix::fs::{AtFlags, FileType, Mode, OFlags};

use super::{kind_level, Entry, Kind, Node, MAX_RANKS};
use crate::error::{Error, Result};
use crate::Level;

/// Where a file or directory is: its device and inode, as `stat` gives them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DirId {
    /// `st_dev`.
    pub dev: u64,
    /// `st_ino`.
    pub ino: u64,
}

impl DirId {
    fn of(stat: &rustix::fs::Stat) -> DirId {
        DirId {
            dev: stat.st_dev,
            ino: stat.st_ino,
        }
    }
}

/// What [`scan`] found below a directory.
#[derive(Debug, Default)]
pub struct Scan {
    /// The directory scanned, as given.
    pub root: PathBuf,
    /// Its identity.
    pub root_id: DirId,
    /// Every checkpoint file, sorted by path.
    pub entries: Vec<Entry>,
    /// Entries left out, with the reason: not regular files (never opened), files outside a
    /// directory of their level, unreadable directories.
    pub skipped: Vec<(PathBuf, String)>,
    /// The number of nodes each execution's `Topology.fti` lists, by execution id.
    pub topology_nodes: BTreeMap<String, u32>,
    /// Files a crashed run may have left: checkpoint files under `tmp/` and every
    /// `Topology.fti` (see [`super::stale_leftovers`]).
    pub leftovers: Vec<Leftover>,
}

/// A file a crashed run may have left behind.
#[derive(Debug, Clone)]
pub struct Leftover {
    /// Its path, below the directory scanned.
    pub path: PathBuf,
    /// The execution id (the directory above `tmp/`, or holding `Topology.fti`).
    pub exec_id: String,
    /// A checkpoint file under `tmp/` (else the execution's `Topology.fti`).
    pub unpublished: bool,
    /// Last modification, seconds since the Unix epoch.
    pub modified: i64,
    /// The identities of its directory and of itself when scanned.
    pub ids: (DirId, DirId),
}

/// Opens a directory below `dir` without following a symbolic link at `name`.
pub(super) fn open_dir_at(dir: &OwnedFd, name: &OsStr) -> std::io::Result<OwnedFd> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    Ok(rustix::fs::openat(dir, name, flags, Mode::empty())?)
}

/// Opens the directory given by the user (a symbolic link there is followed: it is the
/// user's own choice of directory).
pub(super) fn open_root(root: &Path) -> Result<(OwnedFd, DirId)> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let fd = rustix::fs::openat(rustix::fs::CWD, root, flags, Mode::empty())
        .map_err(|e| Error::io(root, e.into()))?;
    let stat = rustix::fs::fstat(&fd).map_err(|e| Error::io(root, e.into()))?;
    Ok((fd, DirId::of(&stat)))
}

/// A directory still to be read: its handle, its path as given, its real path (names above
/// the root, such as the execution id, come from it), and its identity.
struct Pending {
    fd: OwnedFd,
    path: PathBuf,
    named: PathBuf,
    id: DirId,
}

/// Every checkpoint file below `root`, searched recursively (symbolic links to directories
/// are not followed). Only regular files are opened, and only their first 96 bytes.
pub fn scan(root: &Path) -> Result<Scan> {
    let named_root = std::fs::canonicalize(root).map_err(|e| Error::io(root, e))?;
    let (fd, root_id) = open_root(root)?;
    let mut scan = Scan {
        root: root.to_path_buf(),
        root_id,
        ..Scan::default()
    };
    let mut stack = vec![Pending {
        fd,
        path: root.to_path_buf(),
        named: named_root,
        id: root_id,
    }];
    while let Some(dir) = stack.pop() {
        let is_root = dir.id == root_id && dir.path == root;
        let entries = match rustix::fs::Dir::read_from(&dir.fd) {
            Ok(entries) => entries,
            Err(e) if is_root => return Err(Error::io(&dir.path, e.into())),
            Err(e) => {
                let why = format!("cannot be read ({})", std::io::Error::from(e));
                scan.skipped.push((dir.path, why));
                continue;
            }
        };
        for entry in entries {
            let entry = entry.map_err(|e| Error::io(&dir.path, e.into()))?;
            let name = OsStr::from_bytes(entry.file_name().to_bytes());
            if name == "." || name == ".." {
                continue;
            }
            visit(&mut scan, &mut stack, &dir, name)?;
        }
    }
    scan.entries.sort_by(|a, b| a.path.cmp(&b.path));
    scan.skipped.sort();
    Ok(scan)
}

/// One name in directory `dir`: a directory to descend into, `Topology.fti`, or a file named
/// like a checkpoint file.
fn visit(scan: &mut Scan, stack: &mut Vec<Pending>, dir: &Pending, name: &OsStr) -> Result<()> {
    let path = dir.path.join(name);
    let lstat = match rustix::fs::statat(&dir.fd, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(stat) => stat,
        // Gone since the directory was read.
        Err(rustix::io::Errno::NOENT) => return Ok(()),
        Err(e) => return Err(Error::io(&path, e.into())),
    };
    if FileType::from_raw_mode(lstat.st_mode) == FileType::Directory {
        match open_dir_at(&dir.fd, name) {
            Ok(fd) => stack.push(Pending {
                fd,
                path,
                named: dir.named.join(name),
                id: DirId::of(&lstat),
            }),
            Err(e) => scan.skipped.push((path, format!("cannot be read ({e})"))),
        }
        return Ok(());
    }
    let text = name.to_string_lossy();
    let ids = (dir.id, DirId::of(&lstat));
    let leftover = |unpublished: bool, exec: &Path| Leftover {
        path: path.clone(),
        exec_id: file_name(exec).unwrap_or_default(),
        unpublished,
        modified: lstat.st_mtime,
        ids,
    };
    if text == "Topology.fti" {
        scan.leftovers.push(leftover(false, &dir.named));
        if let (Some(exec), Some(nodes)) = (
            file_name(&dir.named),
            crate::topology::topology_nodes(&path),
        ) {
            let slot = scan.topology_nodes.entry(exec).or_default();
            *slot = (*slot).max(nodes);
        }
        return Ok(());
    }
    let Some(name) = ftiff::FileName::parse(&text) else {
        return Ok(());
    };
    if file_name(&dir.named).as_deref() == Some("tmp") {
        if let Some(exec) = dir.named.parent() {
            scan.leftovers.push(leftover(true, exec));
        }
    }
    checkpoint_file(scan, dir, path, name, ids);
    Ok(())
}

/// A file named like a checkpoint file: an entry when it is a regular file (links
/// followed) in a directory of its level, else skipped with the reason.
fn checkpoint_file(
    scan: &mut Scan,
    dir: &Pending,
    path: PathBuf,
    name: ftiff::FileName,
    ids: (DirId, DirId),
) {
    let ftiff::FileName { kind, id, rank } = name;
    // `stat` follows symbolic links and never blocks, even on a FIFO.
    let size = match rustix::fs::statat(
        &dir.fd,
        path.file_name().unwrap_or_default(),
        AtFlags::empty(),
    ) {
        Ok(s) if FileType::from_raw_mode(s.st_mode) == FileType::RegularFile => s.st_size as u64,
        _ => {
            scan.skipped.push((path, "not a regular file".to_owned()));
            return;
        }
    };
    if rank >= MAX_RANKS {
        let why = format!("rank number {rank} is not believable");
        scan.skipped.push((path, why));
        return;
    }
    match place(&dir.named, kind) {
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
                ids,
            });
        }
        Err(why) => scan.skipped.push((path, why)),
    }
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

/// A checkpoint file's bytes for a tool. Files in an `lK_archive` directory are read rather
/// than mapped: a running program's differential checkpoint may take one of them and rewrite
/// it in place, which must not change (or, when it shrinks, fault) a map under the reader
/// (`docs/crash-safety.md`, *Memory maps*).
pub fn load(path: &Path) -> ftiff::Result<MappedFile> {
    let archived = path
        .parent()
        .and_then(Path::file_name)
        .is_some_and(|d| d.to_string_lossy().ends_with("_archive"));
    if archived {
        MappedFile::read(path)
    } else {
        MappedFile::open(path)
    }
}
