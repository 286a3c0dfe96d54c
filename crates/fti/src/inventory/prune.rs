//! Which archived checkpoints a prune deletes, and deleting one whole without following a
//! directory swapped in since the scan.

use std::collections::{BTreeMap, BTreeSet};
use std::os::fd::OwnedFd;
use std::path::{Component, Path, PathBuf};

use rustix::fs::AtFlags;

use super::scan::{open_dir_at, open_root};
use super::{Ckpt, DirId, File, Leftover, Scan};
use crate::error::{Error, Result};
use crate::Level;

/// What a prune does with the checkpoints of one run directory, execution and level.
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

/// The files of an archived checkpoint that a prune deletes: its present Rank, Pcof and RSed
/// files, each directly inside an `lK_archive` directory of its level, sorted by path.
pub fn prunable_files(c: &Ckpt) -> Vec<PathBuf> {
    prunable(c).into_iter().map(|f| f.path.clone()).collect()
}

fn prunable(c: &Ckpt) -> Vec<&File> {
    if !c.archived {
        return Vec::new();
    }
    let archive = format!("l{}_archive", c.level.number());
    let mut files: Vec<&File> = c
        .slots()
        .filter_map(|(_, s)| s.file.as_ref())
        .filter(|f| {
            f.path
                .parent()
                .and_then(Path::file_name)
                .is_some_and(|n| n.to_string_lossy() == archive)
        })
        .collect();
    files.sort_by(|a, b| a.path.cmp(&b.path));
    files
}

/// Deletes an archived checkpoint found by `scan`, whole or not at all: every directory on
/// the way from the scanned directory to each file is opened relative to its parent without
/// following symbolic links, and must be the directory the scan saw (same device and inode),
/// as must each file; only then are the files unlinked, relative to those handles, and their
/// directories synced. A directory or file swapped since the scan (for a symbolic link to
/// elsewhere, say) is refused with [`Error::Changed`] before anything is deleted. Returns the
/// paths deleted.
pub fn delete_checkpoint(scan: &Scan, c: &Ckpt) -> Result<Vec<PathBuf>> {
    let files: Vec<(&Path, (DirId, DirId))> = prunable(c)
        .into_iter()
        .map(|f| (f.path.as_path(), f.ids))
        .collect();
    delete_scanned(scan, &files)
}

/// What a crashed run left and nothing uses: checkpoint files under an execution's `tmp/`
/// (a checkpoint interrupted before its publication, which a restart never reads), and the
/// `Topology.fti` of an execution without any checkpoint file in the scan (a run that died
/// before its first checkpoint completed). A live run touches its files as it writes them, so
/// only leftovers not modified for `min_age_s` seconds before `now_s` are stale; an
/// execution's `Topology.fti` goes only when all of that execution's leftovers are stale.
pub fn stale_leftovers(scan: &Scan, now_s: i64, min_age_s: i64) -> Vec<&Leftover> {
    let old = |l: &Leftover| now_s.saturating_sub(l.modified) >= min_age_s;
    let with_checkpoints: BTreeSet<&str> =
        scan.entries.iter().map(|e| e.exec_id.as_str()).collect();
    let mut fresh: BTreeSet<&str> = BTreeSet::new();
    for l in scan.leftovers.iter().filter(|l| !old(l)) {
        fresh.insert(&l.exec_id);
    }
    scan.leftovers
        .iter()
        .filter(|l| old(l))
        .filter(|l| {
            l.unpublished
                || !(with_checkpoints.contains(l.exec_id.as_str())
                    || fresh.contains(l.exec_id.as_str()))
        })
        .collect()
}

/// Deletes leftovers found by `scan` ([`stale_leftovers`]), with the same checks as
/// [`delete_checkpoint`]: all of them, or none when any changed since the scan.
pub fn delete_leftovers(scan: &Scan, leftovers: &[&Leftover]) -> Result<Vec<PathBuf>> {
    let files: Vec<(&Path, (DirId, DirId))> = leftovers
        .iter()
        .map(|l| (l.path.as_path(), l.ids))
        .collect();
    delete_scanned(scan, &files)
}

/// Unlinks `files` (path below the scanned directory, identities of its directory and of
/// itself at the scan) after checking every one: all or nothing.
fn delete_scanned(scan: &Scan, files: &[(&Path, (DirId, DirId))]) -> Result<Vec<PathBuf>> {
    let (root, root_id) = open_root(&scan.root)?;
    if root_id != scan.root_id {
        return Err(changed(&scan.root, "not the directory scanned"));
    }
    let mut dirs: BTreeMap<PathBuf, OwnedFd> = BTreeMap::new();
    let mut doomed = Vec::new();
    for &(path, ids) in files {
        let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
            continue;
        };
        if !dirs.contains_key(dir) {
            let fd = open_below(&root, &scan.root, dir)?;
            let stat = rustix::fs::fstat(&fd).map_err(|e| Error::io(dir, e.into()))?;
            if (DirId {
                dev: stat.st_dev,
                ino: stat.st_ino,
            }) != ids.0
            {
                return Err(changed(dir, "not the directory scanned"));
            }
            dirs.insert(dir.to_path_buf(), fd);
        }
        let fd = &dirs[dir];
        let stat = rustix::fs::statat(fd, name, AtFlags::SYMLINK_NOFOLLOW)
            .map_err(|e| Error::io(path, e.into()))?;
        if (DirId {
            dev: stat.st_dev,
            ino: stat.st_ino,
        }) != ids.1
        {
            return Err(changed(path, "not the file scanned"));
        }
        doomed.push((dir, name, path));
    }
    let mut deleted = Vec::with_capacity(doomed.len());
    for (dir, name, path) in doomed {
        match rustix::fs::unlinkat(&dirs[dir], name, AtFlags::empty()) {
            Ok(()) | Err(rustix::io::Errno::NOENT) => deleted.push(path.to_path_buf()),
            Err(e) => return Err(Error::io(path, e.into())),
        }
    }
    for (dir, fd) in &dirs {
        rustix::fs::fsync(fd).map_err(|e| Error::io(dir, e.into()))?;
    }
    Ok(deleted)
}

fn changed(path: &Path, what: &'static str) -> Error {
    Error::Changed {
        path: path.to_path_buf(),
        what,
    }
}

/// Opens `dir`, a directory below `root_path` (whose handle is `root`), one component at a
/// time without following symbolic links.
fn open_below(root: &OwnedFd, root_path: &Path, dir: &Path) -> Result<OwnedFd> {
    let rel = dir
        .strip_prefix(root_path)
        .map_err(|_| changed(dir, "not below the directory scanned"))?;
    let mut fd = rustix::io::dup(root).map_err(|e| Error::io(root_path, e.into()))?;
    for part in rel.components() {
        let Component::Normal(name) = part else {
            return Err(changed(dir, "not a plain path below the directory scanned"));
        };
        fd = open_dir_at(&fd, name).map_err(|e| match e.raw_os_error() {
            Some(code)
                if code == rustix::io::Errno::LOOP.raw_os_error()
                    || code == rustix::io::Errno::NOTDIR.raw_os_error() =>
            {
                changed(dir, "a symbolic link or not a directory now")
            }
            _ => Error::io(dir, e),
        })?;
    }
    Ok(fd)
}
