//! A storage that loses power: the files live on the real file system (the state a process
//! crash leaves), and beside them the runtime keeps what a disk would still hold after a power
//! failure. A file's content becomes durable when it is synced; a directory entry (a created,
//! renamed or removed name) when its directory is synced. Nothing else survives: no write-back
//! of unsynced data is assumed, the most pessimistic disk a POSIX program may meet.
//!
//! After the n-th operation (write, set_len, sync, create, rename, remove, mkdir, rmdir, sync
//! of a directory) the power is cut: that operation and every later one fails, as the dead
//! machine would. [`PowerCut::durable_image`] then writes the surviving tree elsewhere.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use super::{Disk, Entry, Kind, Storage, StorageFile};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Node {
    /// A file, by inode number.
    File(u64),
    Dir,
}

#[derive(Debug, Default)]
struct State {
    /// Operations done so far.
    ops: u64,
    /// The operation whose turn cuts the power (0-based), if any.
    cut_at: Option<u64>,
    /// Whether an operation (or a read) was refused: the power is off.
    cut: bool,
    next_ino: u64,
    /// Every name under the root, as the running system sees it.
    live: BTreeMap<PathBuf, Node>,
    /// The names a power failure keeps.
    durable: BTreeMap<PathBuf, Node>,
    /// Each inode's content as of its last sync.
    synced: HashMap<u64, Vec<u8>>,
    /// File syncs and directory syncs so far.
    syncs: Syncs,
}

/// How many `fsync` calls a run made, of files and of directories.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Syncs {
    /// Syncs of a file's data.
    pub files: u64,
    /// Syncs of a directory (its entries).
    pub dirs: u64,
}

impl State {
    /// Counts one operation; fails it if the power is (now) off.
    fn op(&mut self) -> io::Result<()> {
        self.powered()?;
        self.ops += 1;
        Ok(())
    }

    /// Fails once the operation whose turn cuts the power has come.
    fn powered(&mut self) -> io::Result<()> {
        if self.cut_at.is_some_and(|cut| self.ops >= cut) {
            self.cut = true;
            return Err(io::Error::other("power cut (simulated)"));
        }
        Ok(())
    }

    fn new_ino(&mut self) -> u64 {
        self.next_ino += 1;
        self.next_ino
    }

    /// The inode of the file at `path`; a file the storage has not seen (made behind its
    /// back) gets a new inode whose content was never synced.
    fn ino(&mut self, path: &Path) -> u64 {
        match self.live.get(path) {
            Some(Node::File(ino)) => *ino,
            _ => {
                let ino = self.new_ino();
                self.live.insert(path.to_owned(), Node::File(ino));
                ino
            }
        }
    }
}

/// The storage of the crash-consistency tests: see the module's documentation.
#[derive(Clone)]
pub struct PowerCut {
    root: PathBuf,
    state: Arc<Mutex<State>>,
}

impl fmt::Debug for PowerCut {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PowerCut")
            .field("root", &self.root)
            .finish_non_exhaustive()
    }
}

impl PowerCut {
    /// A storage for the tree under `root` (which must exist). What is there already counts as
    /// durable. With `cut_at = Some(n)`, operation n (0-based) and every later one fail.
    pub fn new(root: &Path, cut_at: Option<u64>) -> io::Result<PowerCut> {
        let mut state = State {
            cut_at,
            ..State::default()
        };
        let mut stack = vec![root.to_owned()];
        while let Some(dir) = stack.pop() {
            for entry in Disk.list(&dir)? {
                let node = match entry.kind {
                    Kind::Dir => {
                        stack.push(entry.path.clone());
                        Node::Dir
                    }
                    Kind::File => {
                        let ino = state.new_ino();
                        state.synced.insert(ino, std::fs::read(&entry.path)?);
                        Node::File(ino)
                    }
                    Kind::Other => continue,
                };
                state.live.insert(entry.path.clone(), node);
                state.durable.insert(entry.path, node);
            }
        }
        Ok(PowerCut {
            root: root.to_owned(),
            state: Arc::new(Mutex::new(state)),
        })
    }

    /// Operations done so far (the cut operation not counted).
    pub fn ops(&self) -> u64 {
        self.lock().ops
    }

    /// The syncs done so far.
    pub fn syncs(&self) -> Syncs {
        self.lock().syncs
    }

    /// Whether the power has been cut (an operation was refused).
    pub fn is_cut(&self) -> bool {
        self.lock().cut
    }

    /// Writes what survives the power failure (or would survive one now) under `dest`, which
    /// must exist and be empty: the entries made durable whose every parent directory is too,
    /// each file with its content as last synced (empty if never synced).
    pub fn durable_image(&self, dest: &Path) -> io::Result<()> {
        let state = self.lock();
        let reachable = |path: &Path| {
            path.ancestors()
                .skip(1)
                .take_while(|a| *a != self.root)
                .all(|a| state.durable.get(a) == Some(&Node::Dir))
        };
        for (path, node) in &state.durable {
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
                    let bytes = state.synced.get(ino).map_or(&[][..], Vec::as_slice);
                    std::fs::write(&to, bytes)?;
                }
            }
        }
        Ok(())
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A test thread that panicked while holding the lock leaves a usable state.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Refuses paths outside the root: the image would silently miss them.
    fn inside(&self, path: &Path) -> io::Result<()> {
        if path.starts_with(&self.root) {
            Ok(())
        } else {
            Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "{} is outside the simulated storage {}",
                    path.display(),
                    self.root.display()
                ),
            ))
        }
    }

    fn file(&self, inner: Box<dyn StorageFile>, ino: u64) -> Box<dyn StorageFile> {
        Box::new(PowerCutFile {
            inner,
            ino,
            state: Arc::clone(&self.state),
        })
    }
}

impl Storage for PowerCut {
    fn create(&self, path: &Path) -> io::Result<Box<dyn StorageFile>> {
        self.inside(path)?;
        let mut state = self.lock();
        state.op()?;
        let inner = Disk.create(path)?;
        let ino = state.new_ino();
        state.live.insert(path.to_owned(), Node::File(ino));
        drop(state);
        Ok(self.file(inner, ino))
    }

    fn open(&self, path: &Path, write: bool) -> io::Result<Box<dyn StorageFile>> {
        self.inside(path)?;
        let mut state = self.lock();
        state.powered()?;
        let inner = Disk.open(path, write)?;
        let ino = state.ino(path);
        drop(state);
        Ok(self.file(inner, ino))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.inside(from)?;
        self.inside(to)?;
        let mut state = self.lock();
        state.op()?;
        Disk.rename(from, to)?;
        // A file made behind the storage's back moves as a file never synced.
        let node = match state.live.remove(from) {
            Some(node) => node,
            None => Node::File(state.new_ino()),
        };
        state.live.insert(to.to_owned(), node);
        Ok(())
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        self.inside(path)?;
        let mut state = self.lock();
        state.op()?;
        Disk.remove_file(path)?;
        state.live.remove(path);
        Ok(())
    }

    fn create_dir(&self, path: &Path) -> io::Result<()> {
        self.inside(path)?;
        let mut state = self.lock();
        state.op()?;
        Disk.create_dir(path)?;
        state.live.insert(path.to_owned(), Node::Dir);
        Ok(())
    }

    fn remove_dir(&self, path: &Path) -> io::Result<()> {
        self.inside(path)?;
        let mut state = self.lock();
        state.op()?;
        Disk.remove_dir(path)?;
        state.live.remove(path);
        Ok(())
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<Entry>> {
        self.inside(dir)?;
        self.lock().powered()?;
        Disk.list(dir)
    }

    fn kind(&self, path: &Path) -> io::Result<Kind> {
        self.inside(path)?;
        self.lock().powered()?;
        Disk.kind(path)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.inside(dir)?;
        let mut state = self.lock();
        state.op()?;
        state.syncs.dirs += 1;
        Disk.sync_dir(dir)?;
        let State { live, durable, .. } = &mut *state;
        durable.retain(|p, _| p.parent() != Some(dir) || live.contains_key(p));
        for (p, node) in live.iter().filter(|(p, _)| p.parent() == Some(dir)) {
            durable.insert(p.clone(), *node);
        }
        Ok(())
    }
}

/// A file of [`PowerCut`]: every change is an operation; a sync records the content.
#[derive(Debug)]
struct PowerCutFile {
    inner: Box<dyn StorageFile>,
    ino: u64,
    state: Arc<Mutex<State>>,
}

impl PowerCutFile {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn record(&self) -> io::Result<()> {
        let mut state = self.lock();
        state.op()?;
        let len = self.inner.len()?;
        let mut bytes = vec![0u8; usize::try_from(len).map_err(io::Error::other)?];
        self.inner.read_exact_at(&mut bytes, 0)?;
        state.synced.insert(self.ino, bytes);
        Ok(())
    }
}

impl ftiff::Sink for PowerCutFile {
    fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        let mut state = self.lock();
        state.op()?;
        self.inner.write_all_at(buf, offset)
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.lock().powered()?;
        self.inner.read_exact_at(buf, offset)
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        let mut state = self.lock();
        state.op()?;
        self.inner.set_len(len)
    }

    fn data_written(&self) -> io::Result<()> {
        self.record()
    }
}

impl StorageFile for PowerCutFile {
    fn sync(&self) -> io::Result<()> {
        self.record()?;
        self.lock().syncs.files += 1;
        Ok(())
    }

    fn len(&self) -> io::Result<u64> {
        self.inner.len()
    }
}
