//! A storage that loses power: the files live on the real file system (the state a process
//! crash leaves), and beside them the storage logs every change, from which
//! [`PowerCut::crash_state`] computes what a disk may hold after a power failure at any
//! operation of the run (`crash_state.rs`: what was synced is there, of the rest any subset).
//!
//! After the n-th operation (write, set_len, sync, create, rename, remove, mkdir, rmdir, sync
//! of a directory) the power is cut: that operation and every later one fails, as the dead
//! machine would. [`PowerCut::durable_image`] then writes the tree that survives when none of
//! the unsynced changes reached the disk.

use std::collections::BTreeMap;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use super::crash_state::{Change, CrashState, Initial, Node};
use super::{Disk, Entry, Kind, Stat, Storage, StorageFile};

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
    /// The tree when the storage was made (durable).
    initial: Initial,
    /// Every change since, with the operation that made it.
    log: Vec<(u64, Change)>,
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
    /// Counts one operation; fails it if the power is (now) off. Returns its index.
    fn op(&mut self) -> io::Result<u64> {
        self.powered()?;
        self.ops += 1;
        Ok(self.ops - 1)
    }

    /// Logs the change operation `op` made.
    fn log(&mut self, op: u64, change: Change) {
        self.log.push((op, change));
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
                // Its name was made before the next operation.
                let names = vec![(path.to_owned(), Some(Node::File(ino)))];
                self.log(self.ops, Change::Names(names));
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
                        let content = std::fs::read(&entry.path)?;
                        state.initial.contents.insert(ino, content);
                        Node::File(ino)
                    }
                    Kind::Other => continue,
                };
                state.live.insert(entry.path.clone(), node);
                state.initial.names.insert(entry.path, node);
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
    /// must exist and be empty, when none of the unsynced changes reached the disk: the
    /// entries made durable whose every parent directory is too, each file with its content
    /// as last synced (empty if never synced).
    pub fn durable_image(&self, dest: &Path) -> io::Result<()> {
        let cut = self.ops();
        self.crash_state(cut).write_image(dest, |_| false)
    }

    /// The disk of a power cut before operation `cut` (0-based; `cut = ops()` is now): what
    /// was durable then, and the changes that may or may not have reached it.
    pub fn crash_state(&self, cut: u64) -> CrashState {
        let state = self.lock();
        let end = state.log.partition_point(|(op, _)| *op < cut);
        let log: Vec<Change> = state.log[..end].iter().map(|(_, c)| c.clone()).collect();
        CrashState::replay(&self.root, &state.initial, &log)
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
        let op = state.op()?;
        let inner = Disk.create(path)?;
        let ino = state.new_ino();
        state.live.insert(path.to_owned(), Node::File(ino));
        state.log(
            op,
            Change::Names(vec![(path.to_owned(), Some(Node::File(ino)))]),
        );
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
        let op = state.op()?;
        Disk.rename(from, to)?;
        // A file made behind the storage's back moves as a file never synced.
        let node = match state.live.remove(from) {
            Some(node) => node,
            None => Node::File(state.new_ino()),
        };
        state.live.insert(to.to_owned(), node);
        let names = vec![(from.to_owned(), None), (to.to_owned(), Some(node))];
        state.log(op, Change::Names(names));
        Ok(())
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        self.remove(path, Disk::remove_file)
    }

    fn create_dir(&self, path: &Path) -> io::Result<()> {
        self.inside(path)?;
        let mut state = self.lock();
        let op = state.op()?;
        Disk.create_dir(path)?;
        state.live.insert(path.to_owned(), Node::Dir);
        state.log(op, Change::Names(vec![(path.to_owned(), Some(Node::Dir))]));
        Ok(())
    }

    fn remove_dir(&self, path: &Path) -> io::Result<()> {
        self.remove(path, Disk::remove_dir)
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

    fn stat(&self, path: &Path) -> io::Result<Stat> {
        self.inside(path)?;
        self.lock().powered()?;
        Disk.stat(path)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.inside(dir)?;
        let mut state = self.lock();
        let op = state.op()?;
        state.syncs.dirs += 1;
        Disk.sync_dir(dir)?;
        state.log(op, Change::SyncDir(dir.to_owned()));
        Ok(())
    }
}

impl PowerCut {
    /// Removes a file or an empty directory with `remove`.
    fn remove(&self, path: &Path, remove: fn(&Disk, &Path) -> io::Result<()>) -> io::Result<()> {
        self.inside(path)?;
        let mut state = self.lock();
        let op = state.op()?;
        remove(&Disk, path)?;
        state.live.remove(path);
        state.log(op, Change::Names(vec![(path.to_owned(), None)]));
        Ok(())
    }
}

/// A file of [`PowerCut`]: every change is an operation, logged.
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

    /// Makes the file's content as it is now durable.
    fn record(&self) -> io::Result<()> {
        let mut state = self.lock();
        let op = state.op()?;
        let len = self.inner.len()?;
        let mut content = vec![0u8; usize::try_from(len).map_err(io::Error::other)?];
        self.inner.read_exact_at(&mut content, 0)?;
        let ino = self.ino;
        state.log(op, Change::SyncFile { ino, content });
        Ok(())
    }
}

impl ftiff::Sink for PowerCutFile {
    fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        let mut state = self.lock();
        let op = state.op()?;
        self.inner.write_all_at(buf, offset)?;
        let (ino, bytes) = (self.ino, buf.to_vec());
        state.log(op, Change::Write { ino, offset, bytes });
        Ok(())
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.lock().powered()?;
        self.inner.read_exact_at(buf, offset)
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        let mut state = self.lock();
        let op = state.op()?;
        self.inner.set_len(len)?;
        state.log(op, Change::SetLen { ino: self.ino, len });
        Ok(())
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
