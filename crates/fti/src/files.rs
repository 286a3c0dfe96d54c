//! A run's checkpoint files: where each lives (FTI 1.1's directory layout), how a new one is
//! published without ever losing the previous one, found again and retired. Every access goes
//! through the file-system seam, [`crate::storage`]. The argument is in
//! `docs/crash-safety.md`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::config::{Config, Level};
use crate::error::{Error, Result};
use crate::storage::{Disk, Entry, Kind, Storage, StorageFile};
use ftiff::Sink as _;
use ftiff::{FileKind, FileName};

/// The directories of one execution (`exec_id`) for one rank, and the storage they live on.
#[derive(Debug, Clone)]
pub struct Dirs {
    /// `<ckpt_dir>/node<N>/<exec_id>` (local_test = 1) or `<ckpt_dir>/<exec_id>`.
    pub local: PathBuf,
    /// `<glbl_dir>/<exec_id>`.
    pub global: PathBuf,
    /// `<meta_dir>/<exec_id>`.
    pub meta: PathBuf,
    /// The rank whose files these are.
    pub rank: u32,
    /// Where every file effect goes ([`Disk`] unless a test says otherwise).
    pub storage: Arc<dyn Storage>,
    /// How the level's files are laid out (`ckpt_io`), with this rank's group.
    pub io: crate::io::Io,
    /// The checkpoints of which this rank may have a file in `l4/` or `l4_archive/`, when
    /// known: the global directory holds every rank's files, so a rank that knows them looks
    /// its own up by name instead of listing everyone's ([`Dirs::know_global`]).
    known_l4: Arc<Mutex<Option<BTreeSet<Held>>>>,
}

/// A checkpoint id, and whether its file is in the archive.
type Held = (i32, bool);

impl PartialEq for Dirs {
    fn eq(&self, other: &Dirs) -> bool {
        (&self.local, &self.global, &self.meta, self.rank)
            == (&other.local, &other.global, &other.meta, other.rank)
    }
}

impl Eq for Dirs {}

impl Dirs {
    /// The directories of `exec_id` for the rank of `cfg`, on the real file system.
    pub fn new(cfg: &Config, exec_id: &str) -> Dirs {
        Dirs::on(Arc::new(Disk), cfg, exec_id)
    }

    /// The directories of `exec_id` for the rank of `cfg`, on `storage`.
    pub fn on(storage: Arc<dyn Storage>, cfg: &Config, exec_id: &str) -> Dirs {
        let local = if cfg.local_test {
            cfg.ckpt_dir
                .join(format!("node{}", cfg.node()))
                .join(exec_id)
        } else {
            cfg.ckpt_dir.join(exec_id)
        };
        Dirs {
            local,
            global: cfg.glbl_dir.join(exec_id),
            meta: cfg.meta_dir.join(exec_id),
            // With heads, files keep the rank among all processes.
            rank: cfg.world_rank.unwrap_or(cfg.rank),
            storage,
            io: crate::io::Io::new(cfg, None),
            known_l4: Arc::default(),
        }
    }

    /// These directories with the I/O mode `io` (which knows the rank's group).
    pub fn with_io(self, io: crate::io::Io) -> Dirs {
        Dirs { io, ..self }
    }

    /// From now on this rank's files in `l4/` and `l4_archive/` are looked up by name: those
    /// of the checkpoints `held` (id, archived), and those it publishes or archives itself.
    /// Empty for a new execution; at a restart, what one rank's listing found.
    pub fn know_global(&self, held: impl IntoIterator<Item = (i32, bool)>) {
        *self.lock_global() = Some(held.into_iter().collect());
    }

    fn lock_global(&self) -> std::sync::MutexGuard<'_, Option<BTreeSet<Held>>> {
        self.known_l4.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Notes a file of this rank now in `l4/` (or its archive), when the global directory is
    /// known.
    fn note_global(&self, name: &Path, archived: bool) {
        let name = name.file_name().map(|n| n.to_string_lossy());
        if let Some(n) = name.as_deref().and_then(FileName::parse) {
            if let Some(held) = self.lock_global().as_mut() {
                held.insert((n.id, archived));
            }
        }
    }

    /// The entries of a level directory (or its archive): listed, or for `l4/` once known,
    /// this rank's files looked up by name.
    fn entries(&self, level: Level, dir: &Path, archived: bool) -> std::io::Result<Vec<Entry>> {
        let ids: Vec<i32> = match &*self.lock_global() {
            Some(held) if level == Level::L4 => held
                .iter()
                .filter(|h| h.1 == archived)
                .map(|h| h.0)
                .collect(),
            _ => return self.storage.list(dir),
        };
        let mut out = Vec::new();
        for id in ids {
            let name = self.file_name(id);
            let path = dir.join(&name);
            match self.storage.kind(&path) {
                Ok(kind) => out.push(Entry {
                    name: name.into(),
                    path,
                    kind,
                }),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    if let Some(held) = self.lock_global().as_mut() {
                        held.remove(&(id, archived));
                    }
                }
                Err(_) => {}
            }
        }
        Ok(out)
    }

    /// `lK/`, where FTI 1.1 looks for the level's checkpoint.
    pub fn level_dir(&self, level: Level) -> PathBuf {
        match level {
            Level::L4 => self.global.join("l4"),
            _ => self.local.join(format!("l{}", level.number())),
        }
    }

    /// `lK_archive/`, where older checkpoints of the level are kept (`keep_ckpts` > 1).
    pub fn archive_dir(&self, level: Level) -> PathBuf {
        match level {
            Level::L4 => self.global.join("l4_archive"),
            _ => self.local.join(format!("l{}_archive", level.number())),
        }
    }

    /// `tmp/`, where files are written before they are published.
    pub fn tmp_dir(&self, level: Level) -> PathBuf {
        match level {
            Level::L4 => self.global.join("tmp"),
            _ => self.local.join("tmp"),
        }
    }

    /// This rank's file name for checkpoint `id`.
    pub fn file_name(&self, id: i32) -> String {
        FileName::new(id, FileKind::Rank, self.rank).to_string()
    }

    /// The name of the L2 partner copy this rank holds for checkpoint `id`: a copy of its left
    /// partner's file, named after the holder, as FTI 1.1 names it.
    pub fn copy_name(&self, id: i32) -> String {
        FileName::new(id, FileKind::Pcof, self.rank).to_string()
    }

    /// The name of this rank's L3 `RSed` file of checkpoint `id`.
    pub fn rsed_name(&self, id: i32) -> String {
        FileName::new(id, FileKind::Rsed, self.rank).to_string()
    }
}

/// The entries of the level and archive directories of some levels, each listed once
/// (`l4/`, once known, by name: [`Dirs::know_global`]).
struct Listing(Vec<(Level, bool, Vec<Entry>)>);

impl Listing {
    fn of(dirs: &Dirs, levels: &[Level]) -> Listing {
        let mut all = Vec::new();
        for &level in levels {
            for (dir, archived) in [
                (dirs.level_dir(level), false),
                (dirs.archive_dir(level), true),
            ] {
                if let Ok(entries) = dirs.entries(level, &dir, archived) {
                    all.push((level, archived, entries));
                }
            }
        }
        Listing(all)
    }

    /// This rank's files of kind `kind` in the directories of `levels`, newest first: by id,
    /// then in FTI's level order, then `lK/` before its archive. Entries that are not regular
    /// files (a FIFO, a directory) are left out: see [`Listing::irregular`].
    fn scan(&self, rank: u32, levels: &[Level], kind: FileKind) -> Vec<Found> {
        let mut found = Vec::new();
        self.each(rank, levels, kind, &mut |f, regular| {
            if regular {
                found.push(f);
            }
        });
        sort_newest_first(&mut found);
        found
    }

    /// Calls `each` with every entry of `rank` whose name is a file of kind `kind` in the
    /// directories of `levels`, and whether it is a regular file (symbolic links followed;
    /// `stat` never blocks, even on a FIFO).
    fn each(&self, rank: u32, levels: &[Level], kind: FileKind, each: &mut dyn FnMut(Found, bool)) {
        for (level, archived, entries) in &self.0 {
            if !levels.contains(level) {
                continue;
            }
            for entry in entries {
                let parsed = FileName::parse(&entry.name.to_string_lossy());
                if let Some(FileName { id, .. }) =
                    parsed.filter(|n| n.kind == kind && n.rank == rank)
                {
                    let found = Found {
                        path: entry.path.clone(),
                        id,
                        level: *level,
                        archived: *archived,
                    };
                    each(found, entry.kind == Kind::File);
                }
            }
        }
    }

    fn irregular(&self, rank: u32) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for (levels, kind) in [
            (&Level::ALL[..], FileKind::Rank),
            (&[Level::L2][..], FileKind::Pcof),
            (&[Level::L3][..], FileKind::Rsed),
        ] {
            self.each(rank, levels, kind, &mut |f, regular| {
                if !regular {
                    out.push(f.path);
                }
            });
        }
        out.sort();
        out
    }

    fn copies(&self, rank: u32) -> Vec<Found> {
        let mut found = self.scan(rank, &[Level::L2], FileKind::Pcof);
        found.extend(self.scan(rank, &[Level::L3], FileKind::Rsed));
        found.sort_by(|a, b| b.id.cmp(&a.id).then(a.level.cmp(&b.level)));
        found
    }
}

/// This rank's entries named like checkpoint files, partner copies or `RSed` files that are
/// not regular files: the scans leave them out, the restart warns about them.
pub fn irregular(dirs: &Dirs) -> Vec<PathBuf> {
    Listing::of(dirs, &Level::ALL).irregular(dirs.rank)
}

/// The redundancy files this rank holds: L2 partner copies (`l2/` and its archive) and L3
/// `RSed` files (`l3/` and its archive), newest first.
pub fn find_copies(dirs: &Dirs) -> Vec<Found> {
    Listing::of(dirs, &[Level::L2, Level::L3]).copies(dirs.rank)
}

/// What this rank holds, each directory listed once: its checkpoint files
/// ([`find_checkpoints`]), its redundancy files ([`find_copies`]) and the entries named like
/// them that are not regular files ([`irregular`]).
pub fn holdings(dirs: &Dirs) -> (Vec<Found>, Vec<Found>, Vec<PathBuf>) {
    let listing = Listing::of(dirs, &Level::ALL);
    let mut own = listing.scan(dirs.rank, &Level::ALL, FileKind::Rank);
    // MPI-IO's shared L4 files hold a part of every rank's.
    own.extend(crate::io::mpiio::find(dirs));
    sort_newest_first(&mut own);
    (own, listing.copies(dirs.rank), listing.irregular(dirs.rank))
}

/// Newest first: by id, then in FTI's level order, then `lK/` before its archive.
fn sort_newest_first(found: &mut [Found]) {
    found.sort_by(|a, b| {
        b.id.cmp(&a.id)
            .then(a.level.cmp(&b.level))
            .then(a.archived.cmp(&b.archived))
    });
}

/// This rank's checkpoint files and partner copies in the directories of `levels`.
fn find_all(dirs: &Dirs, levels: &[Level]) -> Vec<Found> {
    let listing = Listing::of(dirs, levels);
    let mut all = listing.scan(dirs.rank, levels, FileKind::Rank);
    all.extend(listing.copies(dirs.rank));
    if levels.contains(&Level::L4) {
        // MPI-IO's shared L4 files hold a part of every rank's.
        all.extend(crate::io::mpiio::find(dirs));
    }
    all
}

/// A checkpoint file of this rank found on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// The file.
    pub path: PathBuf,
    /// Checkpoint id (from the name).
    pub id: i32,
    /// Level directory it is in.
    pub level: Level,
    /// In `lK_archive/` rather than `lK/`.
    pub archived: bool,
}

/// Every checkpoint file of `dirs.rank` in the level and archive directories, newest first:
/// by id, then in FTI's level order, then `lK/` before its archive.
pub fn find_checkpoints(dirs: &Dirs) -> Vec<Found> {
    let mut found = Listing::of(dirs, &Level::ALL).scan(dirs.rank, &Level::ALL, FileKind::Rank);
    // MPI-IO's shared L4 files hold a part of every rank's.
    found.extend(crate::io::mpiio::find(dirs));
    sort_newest_first(&mut found);
    found
}

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
/// takes an older file, and `partner`, before an L2 checkpoint sends any byte to the partner),
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

fn remove(st: &dyn Storage, path: &Path) -> Result<()> {
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
    Ok(Pending {
        file,
        path: tmp,
        level,
        name,
        published: false,
        storage: Arc::clone(&dirs.storage),
    })
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
/// their archives, or deleted when `keep` is 1, and the archives pruned to `keep - 1`.
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
fn retire_older(dirs: &Dirs, lowest: Level, level: Level, id: i32, keep: usize) -> Result<()> {
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
        } else {
            remove(st, &found.path)?;
        }
        note(dirs.level_dir(found.level));
    }
    for dir in &changed {
        sync_dir(st, dir)?;
    }
    Ok(())
}

/// Keeps the newest `keep - 1` archived checkpoints of `level`.
fn prune_archive(dirs: &Dirs, level: Level, keep: usize) -> Result<()> {
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
    let mut candidates = Vec::new();
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

/// Whether `l4/` or its archive holds a checkpoint file of one of `ranks`.
pub fn any_in_global(dirs: &Dirs, ranks: &std::ops::Range<u32>) -> bool {
    [dirs.level_dir(Level::L4), dirs.archive_dir(Level::L4)]
        .iter()
        .filter_map(|dir| dirs.storage.list(dir).ok())
        .flatten()
        .any(|e| {
            FileName::parse(&e.name.to_string_lossy())
                .is_some_and(|n| n.kind == FileKind::Rank && ranks.contains(&n.rank))
                && e.kind == Kind::File
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
const META_FILES: [&str; 2] = ["Topology.fti", ".Topology.fti.tmp"];

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fti_directory_layout() {
        let cfg = Config {
            ckpt_dir: "L".into(),
            glbl_dir: "G".into(),
            meta_dir: "M".into(),
            rank: 5,
            node_size: 2,
            ..Config::default()
        };
        let d = Dirs::new(&cfg, "E");
        assert_eq!(d.level_dir(Level::L1), PathBuf::from("L/node2/E/l1"));
        assert_eq!(d.level_dir(Level::L4), PathBuf::from("G/E/l4"));
        assert_eq!(d.archive_dir(Level::L4), PathBuf::from("G/E/l4_archive"));
        assert_eq!(d.file_name(7), "Ckpt7-Rank5.fti");
        let d = Dirs::new(
            &Config {
                local_test: false,
                ..cfg
            },
            "E",
        );
        assert_eq!(d.level_dir(Level::L1), PathBuf::from("L/E/l1"));
    }

    #[test]
    fn publish_keeps_one_in_level_dir_and_archives_the_rest() {
        let root = tempfile::tempdir().unwrap();
        let cfg = Config {
            ckpt_dir: root.path().join("L"),
            glbl_dir: root.path().join("G"),
            ..Config::default()
        };
        let dirs = Dirs::new(&cfg, "E");
        let put = |id: i32, level, keep| {
            let pending = begin(&dirs, level, id, None).unwrap();
            pending
                .file
                .write_all_at(format!("ckpt {id}").as_bytes(), 0)
                .unwrap();
            let path = publish_pending(&dirs, pending).unwrap();
            retire(&dirs, level, id, keep, true).unwrap();
            path
        };
        for id in 1..=5 {
            put(id, Level::L1, 3);
        }
        let ids = |archived| -> Vec<i32> {
            find_checkpoints(&dirs)
                .iter()
                .filter(|f| f.archived == archived)
                .map(|f| f.id)
                .collect()
        };
        assert_eq!(ids(false), [5]);
        assert_eq!(ids(true), [4, 3]);
        put(6, Level::L4, 3);
        let all: Vec<(i32, Level, bool)> = find_checkpoints(&dirs)
            .iter()
            .map(|f| (f.id, f.level, f.archived))
            .collect();
        assert_eq!(
            all,
            [
                (6, Level::L4, false),
                (5, Level::L1, true),
                (4, Level::L1, true)
            ]
        );
        put(7, Level::L1, 1);
        assert_eq!(
            std::fs::read_dir(dirs.tmp_dir(Level::L1)).unwrap().count(),
            0
        );
        assert_eq!(
            std::fs::read_to_string(dirs.level_dir(Level::L1).join("Ckpt7-Rank0.fti")).unwrap(),
            "ckpt 7"
        );
    }

    /// Once the global directory is known, this rank's L4 files are looked up by name: the
    /// same files as a listing finds (published, archived, removed), and `l4/` never listed.
    #[test]
    fn known_global_directory_is_never_listed() {
        use crate::storage::{Counting, Op};
        let root = tempfile::tempdir().unwrap();
        let cfg = Config {
            ckpt_dir: root.path().join("L"),
            glbl_dir: root.path().join("G"),
            rank: 1,
            ..Config::default()
        };
        let counting = Counting::new(Arc::new(Disk), 1, vec![1]);
        let known = Dirs::on(Arc::new(counting.clone()), &cfg, "E");
        known.know_global([]);
        let listed = Dirs::new(&cfg, "E");
        // Another rank's file beside this rank's.
        let other = Dirs::new(
            &Config {
                rank: 2,
                ..cfg.clone()
            },
            "E",
        );
        for id in 1..=4 {
            for dirs in [&known, &other] {
                let pending = begin(dirs, Level::L4, id, None).unwrap();
                publish_pending(dirs, pending).unwrap();
                retire(dirs, Level::L4, id, 3, false).unwrap();
            }
            assert_eq!(
                find_checkpoints(&known),
                find_checkpoints(&listed),
                "after {id}"
            );
            assert_eq!(find_checkpoints(&known).len(), 3.min(id as usize));
        }
        remove_rank_files(&known, false).unwrap();
        assert_eq!(find_checkpoints(&listed), []);
        assert_eq!(find_checkpoints(&other).len(), 3);
        // The directories listed (the local ones, tmp/) were empty or missing: not one entry
        // of l4/, where the other rank's files are, was read.
        let counted = counting.counts();
        assert!(counted.of_op(Op::List) > 0);
        assert_eq!(counted.dir_entries, 0, "{counted:?}");
    }
}
