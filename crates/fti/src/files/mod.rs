//! A run's checkpoint files: where each lives (FTI 1.1's directory layout), how a new one is
//! published without ever losing the previous one, found again and retired. Every access goes
//! through the file-system seam, [`crate::storage`]. The argument is in
//! `docs/crash-safety.md`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::config::{Config, Level};
use crate::storage::{Disk, Entry, Kind, Storage};
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

mod publish;

pub use publish::*;

#[cfg(test)]
mod tests;
