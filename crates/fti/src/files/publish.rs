//! Publishing a checkpoint's files without ever losing the previous one (the commit point:
//! fsync, rename into `lK/`, fsync of the directory), retiring older ones, and the other
//! writes of the run's tree (its directories, `Topology.fti`, a replaced small file). The
//! argument is in `docs/crash-safety.md`.

use super::{find_all, Dirs, Found, Listing};
use crate::config::Level;
use crate::error::{Error, Result};
use crate::storage::{Kind, Storage, StorageFile};
use ftiff::Sink as _;
use ftiff::{FileKind, FileName};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The named steps of [`publish_pending`], where a crash test can stop the process.
pub const STEPS: &[&str] = &[
    "written",
    "fsynced",
    "renamed",
    "dir-fsynced",
    "retired",
    "pruned",
];

/// Test hook of builds with the `crash-points` feature (the crate's own tests and examples;
/// never a release): at a step of [`STEPS`] (also `reused`, when a differential checkpoint
/// takes an older file, `spare`, when a checkpoint has taken the rank's spare to overwrite, and
/// `partner`, before an L2 checkpoint sends any byte to the partner),
/// when the environment variable `FTI_STOP_AT` is `<step>` or `<step>:<n>` (reached for the
/// n-th time, default 1), the process announces `FTI_STOPPED <step>` on stderr and waits to be
/// killed. Crash tests use it to kill a real process at every step of the protocol.
#[cfg(feature = "crash-points")]
pub(crate) fn crash_point(step: &str) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::OnceLock;
    static STOP_AT: OnceLock<Option<(String, usize)>> = OnceLock::new();
    static REACHED: AtomicUsize = AtomicUsize::new(0);
    let target = STOP_AT.get_or_init(|| {
        let spec = std::env::var("FTI_STOP_AT").ok()?;
        let (name, n) = spec.split_once(':').unwrap_or((&spec, "1"));
        Some((name.to_owned(), n.parse().unwrap_or(1)))
    });
    if let Some((name, n)) = target {
        if name == step && REACHED.fetch_add(1, Ordering::SeqCst) + 1 == *n {
            eprintln!("FTI_STOPPED {step}");
            loop {
                std::thread::sleep(std::time::Duration::from_secs(3600));
            }
        }
    }
}

/// Without the `crash-points` feature the hook is nothing.
#[cfg(not(feature = "crash-points"))]
#[inline(always)]
pub(crate) fn crash_point(_step: &str) {}

/// `fsync` of a directory, so that entries created, renamed or removed in it are durable.
pub fn sync_dir(st: &dyn Storage, dir: &Path) -> Result<()> {
    st.sync_dir(dir).map_err(|e| Error::io(dir, e))
}

/// Creates `dir` and its parents, making each new entry durable.
pub fn create_dir_durable(st: &dyn Storage, dir: &Path) -> Result<()> {
    if st.kind(dir).is_ok_and(|k| k == Kind::Dir) {
        return Ok(());
    }
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        create_dir_durable(st, parent)?;
    }
    match st.create_dir(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return Ok(()),
        Err(e) => return Err(Error::io(dir, e)),
    }
    match dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        Some(parent) => sync_dir(st, parent),
        None => Ok(()),
    }
}

/// Removes a file (gone already is fine) and makes the removal durable.
pub fn remove_file(st: &dyn Storage, path: &Path) -> Result<()> {
    remove(st, path)?;
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => sync_dir(st, dir),
        _ => Ok(()),
    }
}

pub(super) fn remove(st: &dyn Storage, path: &Path) -> Result<()> {
    match st.remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::io(path, e)),
        _ => Ok(()),
    }
}

/// A checkpoint file being written under `tmp/`, not yet published. Dropped without
/// [`publish_pending`] (an error, an abandoned incremental checkpoint), it removes its file.
#[derive(Debug)]
pub struct Pending {
    /// The open file.
    pub file: Box<dyn StorageFile>,
    /// Its path under `tmp/`.
    pub path: PathBuf,
    level: Level,
    name: String,
    published: bool,
    storage: Arc<dyn Storage>,
}

impl Pending {
    /// A file being written at `path` under `tmp/`, to be published as `name` at `level`.
    fn new(
        dirs: &Dirs,
        file: Box<dyn StorageFile>,
        path: PathBuf,
        level: Level,
        name: String,
    ) -> Pending {
        Pending {
            file,
            path,
            level,
            name,
            published: false,
            storage: Arc::clone(&dirs.storage),
        }
    }

    /// Maps the file as written so far, through its storage.
    pub fn map(&self) -> Result<ftiff::MappedFile> {
        self.storage
            .map(&self.path)
            .map_err(|e| Error::Format(e.with_path(&self.path)))
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        if !self.published {
            let _ = self.storage.remove_file(&self.path);
        }
    }
}

/// Starts checkpoint `id` of `level`: a new empty file under `tmp/`, or, with `reuse`, an
/// older checkpoint file of this rank moved there to be updated in place (a differential
/// checkpoint). Moving it out of `lK/` or the archive first means a crash can never leave a
/// half-updated file under a published name.
pub fn begin(dirs: &Dirs, level: Level, id: i32, reuse: Option<&Path>) -> Result<Pending> {
    begin_named(dirs, level, dirs.file_name(id), reuse)
}

/// As [`begin`], for a file named `name` (a partner copy).
pub fn begin_named(
    dirs: &Dirs,
    level: Level,
    name: String,
    reuse: Option<&Path>,
) -> Result<Pending> {
    let st = &*dirs.storage;
    let tmp_dir = dirs.tmp_dir(level);
    create_dir_durable(st, &tmp_dir)?;
    create_dir_durable(st, &dirs.level_dir(level))?;
    let tmp = tmp_dir.join(&name);
    remove(st, &tmp)?;
    let file = if let Some(old) = reuse {
        st.rename(old, &tmp).map_err(|e| Error::io(old, e))?;
        sync_dir(st, &tmp_dir)?;
        if let Some(parent) = old.parent() {
            sync_dir(st, parent)?;
        }
        crash_point("reused");
        st.open(&tmp, true)
    } else {
        st.create(&tmp)
    }
    .map_err(|e| Error::io(&tmp, e))?;
    Ok(Pending::new(dirs, file, tmp, level, name))
}

/// The spare of this rank for files of `kind` (its checkpoint files, or the partner copies
/// it keeps): a retired file of a local level kept in `spare/` of the execution's local
/// directory (by [`retire`], instead of deleting it) for the next checkpoint to overwrite in
/// place ([`begin_overwriting`]). Neither its name nor its directory is a checkpoint's, so
/// nothing reads it as one; FTI 1.1 never looks there (it renames `tmp/` over `l1/`, so a file
/// left in `tmp/` would end up in its `l1/`).
pub fn spare_path(dirs: &Dirs, kind: FileKind) -> PathBuf {
    spare_dir(dirs).join(format!("{}{}.spare", kind.tag(), dirs.rank))
}

fn spare_dir(dirs: &Dirs) -> PathBuf {
    dirs.local.join("spare")
}

/// Which spare a retired file of this rank may become: checkpoint files and partner copies
/// of a local level, whose writers overwrite every byte (not the L3 code files).
fn spare_kind(level: Level, path: &Path) -> Option<FileKind> {
    let name = FileName::parse(&path.file_name()?.to_string_lossy())?;
    (level != Level::L4 && name.kind != FileKind::Rsed).then_some(name.kind)
}

/// As [`begin_named`] without a file to reuse, for a writer that writes every byte of its
/// file and then sets its length (a full FTI-FF write with MD5, a POSIX file, a partner copy
/// streamed at L2): at a local level, the rank's spare of the file's kind, when there is one,
/// becomes the new file and is overwritten in place. Its blocks are already allocated and its
/// pages often cached, so the file system neither frees the retired file's blocks (an
/// `unlink` of a synced 64 MiB file takes 25-80 ms on ext4) nor allocates new ones. A crash
/// leaves it half overwritten under `tmp/`, where nothing is read.
pub fn begin_overwriting(dirs: &Dirs, level: Level, name: String) -> Result<Pending> {
    let st = &*dirs.storage;
    let tmp = dirs.tmp_dir(level).join(&name);
    let Some(spare) = spare_kind(level, &tmp).map(|kind| spare_path(dirs, kind)) else {
        return begin_named(dirs, level, name, None);
    };
    if !st.kind(&spare).is_ok_and(|k| k == Kind::File) {
        return begin_named(dirs, level, name, None);
    }
    create_dir_durable(st, &dirs.tmp_dir(level))?;
    create_dir_durable(st, &dirs.level_dir(level))?;
    remove(st, &tmp)?;
    match st.rename(&spare, &tmp) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return begin_named(dirs, level, name, None)
        }
        Err(e) => return Err(Error::io(&spare, e)),
    }
    crash_point("spare");
    let file = st.open(&tmp, true).map_err(|e| Error::io(&tmp, e))?;
    Ok(Pending::new(dirs, file, tmp, level, name))
}

/// The commit point of one file: fsync, rename into `lK/`, fsync of the directory. Older
/// checkpoints stay until [`retire`]: a multi-rank run retires them only once every rank has
/// published the new checkpoint.
pub fn publish_pending(dirs: &Dirs, pending: Pending) -> Result<PathBuf> {
    let mut paths = publish_all(dirs, vec![pending])?;
    Ok(paths.remove(0))
}

/// The commit point of a checkpoint's files (a rank's file and its partner copy or code
/// file): each file synced (its data, once), each renamed into its `lK/`, then each of those
/// directories synced once. Until that last sync none of the names is durable, and the
/// previous checkpoint is still there. `tmp/` is not synced: a name left there by a crash is
/// never read, and the next checkpoint's [`begin`] removes it.
pub fn publish_all(dirs: &Dirs, pending: Vec<Pending>) -> Result<Vec<PathBuf>> {
    let st = &*dirs.storage;
    for p in &pending {
        crash_point("written");
        p.file.sync().map_err(|e| Error::io(&p.path, e))?;
        crash_point("fsynced");
    }
    let mut level_dirs = Vec::new();
    let mut targets = Vec::with_capacity(pending.len());
    for mut p in pending {
        let level_dir = dirs.level_dir(p.level);
        let target = level_dir.join(&p.name);
        st.rename(&p.path, &target)
            .map_err(|e| Error::io(&target, e))?;
        if p.level == Level::L4 {
            dirs.note_global(&target, false);
        }
        p.published = true;
        drop(p);
        crash_point("renamed");
        if !level_dirs.contains(&level_dir) {
            level_dirs.push(level_dir);
        }
        targets.push(target);
    }
    for dir in &level_dirs {
        sync_dir(st, dir)?;
    }
    crash_point("dir-fsynced");
    Ok(targets)
}

/// After checkpoint `id` of `level` is published (by every rank): this rank's older files in
/// `lK/` (and, with `retire_lower`, in lower levels' directories, as FTI does) are moved to
/// their archives, or deleted when `keep` is 1 (one of a local level becomes the rank's
/// spare, [`spare_path`], unless there is one), and the archives pruned to `keep - 1`.
pub fn retire(dirs: &Dirs, level: Level, id: i32, keep: usize, retire_lower: bool) -> Result<()> {
    let lowest = if retire_lower { Level::L1 } else { level };
    retire_older(dirs, lowest, level, id, keep)?;
    crate::io::retire(dirs, level, retire_lower)?;
    crash_point("retired");
    for l in Level::ALL
        .into_iter()
        .filter(|&l| l >= lowest && l <= level)
    {
        prune_archive(dirs, l, keep)?;
    }
    crash_point("pruned");
    Ok(())
}

/// A new pending file of checkpoint `id` at `level` holding a copy of the file `from`.
pub fn copy_into(dirs: &Dirs, level: Level, id: i32, from: &Path) -> Result<Pending> {
    let pending = begin(dirs, level, id, None)?;
    let src = dirs
        .storage
        .open(from, false)
        .map_err(|e| Error::io(from, e))?;
    crate::storage::copy(&*src, &*pending.file).map_err(|e| Error::io(&pending.path, e))?;
    Ok(pending)
}

/// Moves (or deletes) this rank's checkpoints other than `id` out of `lK/` for the levels
/// `lowest ..= level`, so `lK/` holds exactly one file per rank, as FTI 1.1 expects.
pub(super) fn retire_older(
    dirs: &Dirs,
    lowest: Level,
    level: Level,
    id: i32,
    keep: usize,
) -> Result<()> {
    let st = &*dirs.storage;
    // Each directory changed is synced once, after every move: the order of the removals
    // among themselves does not matter, only that they follow the new checkpoint's
    // publication, which is durable already.
    let mut changed: Vec<PathBuf> = Vec::new();
    let mut note = |dir: PathBuf| {
        if !changed.contains(&dir) {
            changed.push(dir);
        }
    };
    let levels: Vec<Level> = (Level::ALL.into_iter())
        .filter(|&l| l >= lowest && l <= level)
        .collect();
    for found in find_all(dirs, &levels) {
        if found.archived
            || found.level > level
            || found.level < lowest
            || (found.level == level && found.id == id)
        {
            continue;
        }
        if keep > 1 {
            let archive = dirs.archive_dir(found.level);
            create_dir_durable(st, &archive)?;
            let name = found
                .path
                .file_name()
                .map(PathBuf::from)
                .unwrap_or_default();
            let to = archive.join(name);
            st.rename(&found.path, &to).map_err(|e| Error::io(&to, e))?;
            if found.level == Level::L4 {
                dirs.note_global(&to, true);
            }
            note(archive);
        } else if !keep_as_spare(dirs, found.level, &found.path)? {
            remove(st, &found.path)?;
        }
        note(dirs.level_dir(found.level));
    }
    for dir in &changed {
        sync_dir(st, dir)?;
    }
    Ok(())
}

/// Moves a retired file to the rank's spare of its kind when it may be one and there is none
/// yet; false otherwise (the file is then to be deleted). `spare/` is not synced: after a
/// crash the file is either still in `lK/`, as if its removal had not reached the disk, or
/// the spare.
fn keep_as_spare(dirs: &Dirs, level: Level, path: &Path) -> Result<bool> {
    let st = &*dirs.storage;
    let Some(spare) = spare_kind(level, path).map(|kind| spare_path(dirs, kind)) else {
        return Ok(false);
    };
    if st.kind(&spare).is_ok() {
        return Ok(false);
    }
    create_dir_durable(st, &spare_dir(dirs))?;
    st.rename(path, &spare).map_err(|e| Error::io(&spare, e))?;
    Ok(true)
}

/// Keeps the newest `keep - 1` archived checkpoints of `level`.
pub(super) fn prune_archive(dirs: &Dirs, level: Level, keep: usize) -> Result<()> {
    let listing = Listing::of(dirs, &[level]);
    let archived: Vec<Found> = (listing
        .scan(dirs.rank, &[level], FileKind::Rank)
        .into_iter())
    .filter(|f| f.archived && f.level == level)
    .collect();
    let copies: Vec<Found> = (listing.copies(dirs.rank).into_iter())
        .filter(|f| f.archived && f.level == level)
        .collect();
    let mut removed = false;
    let beyond = keep.saturating_sub(1);
    for old in archived
        .iter()
        .skip(beyond)
        .chain(copies.iter().skip(beyond))
    {
        remove(&*dirs.storage, &old.path)?;
        removed = true;
    }
    if removed {
        sync_dir(&*dirs.storage, &dirs.archive_dir(level))?;
    }
    Ok(())
}

/// Removes this rank's checkpoint files (every level, archive and `tmp/`), then whichever of
/// the run's directories are left empty. Other ranks' files in shared directories stay.
pub fn remove_rank_files(dirs: &Dirs, local_only: bool) -> Result<()> {
    let st = &*dirs.storage;
    for found in find_all(dirs, &Level::ALL) {
        if !(local_only && found.level == Level::L4) {
            remove(st, &found.path)?;
        }
    }
    let levels: Vec<Level> = Level::ALL
        .into_iter()
        .filter(|&l| !(local_only && l == Level::L4))
        .collect();
    for kind in [FileKind::Rank, FileKind::Pcof] {
        remove(st, &spare_path(dirs, kind))?;
    }
    for &level in &levels {
        if let Ok(entries) = st.list(&dirs.tmp_dir(level)) {
            for entry in entries {
                let name = entry.name.to_string_lossy();
                if FileName::parse(&name).is_some_and(|n| n.rank == dirs.rank) {
                    remove(st, &entry.path)?;
                }
            }
        }
    }
    let mut candidates = vec![spare_dir(dirs)];
    for &level in &levels {
        candidates.extend([
            dirs.level_dir(level),
            dirs.archive_dir(level),
            dirs.tmp_dir(level),
        ]);
    }
    candidates.push(dirs.local.clone());
    if !local_only {
        candidates.push(dirs.global.clone());
    }
    for dir in candidates {
        // Only empty directories go: another rank may still use a shared one.
        let _ = st.remove_dir(&dir);
    }
    Ok(())
}

/// Whether this rank holds a checkpoint file or a redundancy file in its local directories
/// (L1 to L3 and their archives).
pub fn holds_local(dirs: &Dirs) -> bool {
    let local = [Level::L1, Level::L2, Level::L3];
    let listing = Listing::of(dirs, &local);
    !listing.scan(dirs.rank, &local, FileKind::Rank).is_empty()
        || !listing.copies(dirs.rank).is_empty()
}

/// Whether `l4/` or its archive holds a checkpoint file of one of `ranks`, or (MPI-IO) a
/// file shared by every rank.
pub fn any_in_global(dirs: &Dirs, ranks: &std::ops::Range<u32>) -> bool {
    [dirs.level_dir(Level::L4), dirs.archive_dir(Level::L4)]
        .iter()
        .filter_map(|dir| dirs.storage.list(dir).ok())
        .flatten()
        .any(|e| {
            let shared =
                dirs.io.shared(Level::L4) && crate::io::mpiio::parse_name(&e.path).is_some();
            let own = FileName::parse(&e.name.to_string_lossy())
                .is_some_and(|n| n.kind == FileKind::Rank && ranks.contains(&n.rank));
            (own || shared) && e.kind == Kind::File
        })
}

/// The checkpoints `(id, archived)` of which `l4/` or `l4_archive/` holds a file of any rank.
pub fn global_checkpoints(dirs: &Dirs) -> Vec<(i32, bool)> {
    let mut held = BTreeSet::new();
    for (dir, archived) in [
        (dirs.level_dir(Level::L4), false),
        (dirs.archive_dir(Level::L4), true),
    ] {
        for e in dirs.storage.list(&dir).into_iter().flatten() {
            if let Some(n) = FileName::parse(&e.name.to_string_lossy()) {
                if n.kind == FileKind::Rank {
                    held.insert((n.id, archived));
                }
            }
        }
    }
    held.into_iter().collect()
}

/// The highest rank named by a checkpoint file, partner copy or `RSed` file (any rank's) in
/// the level and archive directories of the execution directories `roots`.
pub fn highest_rank(st: &dyn Storage, roots: &[PathBuf]) -> Option<u32> {
    let mut highest = None;
    for root in roots {
        for level in Level::ALL {
            let n = level.number();
            for dir in [
                root.join(format!("l{n}")),
                root.join(format!("l{n}_archive")),
            ] {
                let Ok(entries) = st.list(&dir) else {
                    continue;
                };
                for entry in entries {
                    let name = entry.name.to_string_lossy();
                    if let Some(n) = FileName::parse(&name) {
                        highest = highest.max(Some(n.rank));
                    }
                }
            }
        }
    }
    highest
}

/// The runtime's files in the run's meta directory: `Topology.fti`, and the temporary file it
/// is written through.
pub(super) const META_FILES: [&str; 2] = ["Topology.fti", ".Topology.fti.tmp"];

/// Removes the runtime's files from the run's meta directory, then the directory if it is
/// empty. Nothing else in it is touched: it is never removed recursively.
pub fn remove_meta_files(dirs: &Dirs) -> Result<()> {
    for name in META_FILES {
        remove(&*dirs.storage, &dirs.meta.join(name))?;
    }
    // POSIX meta-data files (`l<K>/sector<s>-group<g>.fti`, and the ones kept or written
    // through beside them).
    for level in Level::ALL {
        let dir = dirs.meta.join(format!("l{}", level.number()));
        for entry in dirs.storage.list(&dir).unwrap_or_default() {
            let name = entry.name.to_string_lossy();
            if name.trim_start_matches('.').starts_with("sector") {
                remove(&*dirs.storage, &entry.path)?;
            }
        }
        let _ = dirs.storage.remove_dir(&dir);
    }
    let _ = dirs.storage.remove_dir(&dirs.meta);
    Ok(())
}

/// Replaces a small file atomically: temporary file beside it, fsync, rename, fsync of the
/// directory.
pub fn replace_file(st: &dyn Storage, path: &Path, bytes: &[u8]) -> Result<()> {
    replace_file_as(st, path, bytes, None)
}

/// [`replace_file`], the new file given `permissions` (the old file's, say) before it takes
/// the name.
pub fn replace_file_as(
    st: &dyn Storage,
    path: &Path,
    bytes: &[u8],
    permissions: Option<std::fs::Permissions>,
) -> Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let tmp = dir.join(format!(
        ".{}.tmp",
        path.file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
    ));
    remove(st, &tmp)?;
    {
        let f = st.create(&tmp).map_err(|e| Error::io(&tmp, e))?;
        f.write_all_at(bytes, 0)
            .and_then(|()| f.sync())
            .map_err(|e| Error::io(&tmp, e))?;
    }
    if let Some(permissions) = permissions {
        std::fs::set_permissions(&tmp, permissions).map_err(|e| Error::io(&tmp, e))?;
    }
    st.rename(&tmp, path).map_err(|e| Error::io(path, e))?;
    sync_dir(st, dir)
}
