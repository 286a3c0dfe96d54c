//! A storage that keeps every file in memory: the whole runtime runs on it without touching
//! the file system, which shows that every file access goes through [`Storage`] (a read or a
//! write that bypassed it would not find the run's files). For tests and benchmarks.

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use super::{Entry, Kind, Stat, Storage, StorageFile};

/// A file's content and identity, shared by every handle on it (as an inode).
#[derive(Debug)]
struct Inode {
    ino: u64,
    content: Mutex<(Vec<u8>, i64)>,
}

#[derive(Debug, Default)]
struct Tree {
    files: BTreeMap<PathBuf, Arc<Inode>>,
    dirs: BTreeSet<PathBuf>,
    next_ino: u64,
}

/// The storage of a run kept in memory under `root`: `root` and its ancestors exist, nothing
/// else until the run makes it. Clones share the same files.
#[derive(Debug, Clone)]
pub struct Memory {
    root: PathBuf,
    tree: Arc<Mutex<Tree>>,
    clock: Arc<std::sync::atomic::AtomicI64>,
}

fn not_found(path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::NotFound,
        format!("{}: not in memory", path.display()),
    )
}

fn past_end() -> io::Error {
    io::Error::new(io::ErrorKind::UnexpectedEof, "past the end of the file")
}

fn exists(path: &Path) -> io::Error {
    io::Error::new(io::ErrorKind::AlreadyExists, format!("{}", path.display()))
}

impl Memory {
    /// An empty storage whose files all live below `root`.
    pub fn new(root: &Path) -> Memory {
        Memory {
            root: root.to_owned(),
            tree: Arc::default(),
            clock: Arc::default(),
        }
    }

    /// Every file it holds, with its size, sorted.
    pub fn files(&self) -> Vec<(PathBuf, u64)> {
        let tree = self.lock();
        let len = |i: &Inode| i.content.lock().map_or(0, |c| c.0.len() as u64);
        tree.files
            .iter()
            .map(|(p, i)| (p.clone(), len(i)))
            .collect()
    }

    /// Removes `dir` and everything below it, as a lost node would.
    pub fn remove_tree(&self, dir: &Path) {
        let mut tree = self.lock();
        tree.files.retain(|p, _| !p.starts_with(dir));
        tree.dirs.retain(|p| !p.starts_with(dir));
    }

    fn lock(&self) -> MutexGuard<'_, Tree> {
        self.tree
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn is_dir(&self, tree: &Tree, path: &Path) -> bool {
        tree.dirs.contains(path) || self.root.starts_with(path)
    }

    fn parent_is_dir(&self, tree: &Tree, path: &Path) -> io::Result<()> {
        match path.parent() {
            Some(parent) if self.is_dir(tree, parent) => Ok(()),
            _ => Err(not_found(path)),
        }
    }

    fn now(&self) -> i64 {
        self.clock
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            + 1
    }

    fn handle(&self, inode: Arc<Inode>) -> Box<dyn StorageFile> {
        Box::new(MemoryFile {
            inode,
            clock: Arc::clone(&self.clock),
        })
    }
}

impl Storage for Memory {
    fn create(&self, path: &Path) -> io::Result<Box<dyn StorageFile>> {
        let mut tree = self.lock();
        self.parent_is_dir(&tree, path)?;
        if tree.files.contains_key(path) || self.is_dir(&tree, path) {
            return Err(exists(path));
        }
        tree.next_ino += 1;
        let inode = Arc::new(Inode {
            ino: tree.next_ino,
            content: Mutex::new((Vec::new(), self.now())),
        });
        tree.files.insert(path.to_owned(), Arc::clone(&inode));
        Ok(self.handle(inode))
    }

    fn open(&self, path: &Path, _write: bool) -> io::Result<Box<dyn StorageFile>> {
        let tree = self.lock();
        match tree.files.get(path) {
            Some(inode) => Ok(self.handle(Arc::clone(inode))),
            None if self.is_dir(&tree, path) => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "not a regular file",
            )),
            None => Err(not_found(path)),
        }
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut tree = self.lock();
        self.parent_is_dir(&tree, to)?;
        let inode = tree.files.remove(from).ok_or_else(|| not_found(from))?;
        tree.files.insert(to.to_owned(), inode);
        Ok(())
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        self.lock()
            .files
            .remove(path)
            .map(drop)
            .ok_or_else(|| not_found(path))
    }

    fn create_dir(&self, path: &Path) -> io::Result<()> {
        let mut tree = self.lock();
        self.parent_is_dir(&tree, path)?;
        if tree.files.contains_key(path) || self.is_dir(&tree, path) {
            return Err(exists(path));
        }
        tree.dirs.insert(path.to_owned());
        Ok(())
    }

    fn remove_dir(&self, path: &Path) -> io::Result<()> {
        let mut tree = self.lock();
        if !tree.dirs.contains(path) {
            return Err(not_found(path));
        }
        let child = |p: &Path| p.parent() == Some(path);
        if tree.files.keys().any(|p| child(p)) || tree.dirs.iter().any(|p| child(p)) {
            return Err(io::Error::new(
                io::ErrorKind::DirectoryNotEmpty,
                format!("{}", path.display()),
            ));
        }
        tree.dirs.remove(path);
        Ok(())
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<Entry>> {
        let tree = self.lock();
        if !self.is_dir(&tree, dir) {
            return Err(not_found(dir));
        }
        let entry = |path: &PathBuf, kind| Entry {
            name: path.file_name().unwrap_or_default().to_owned(),
            path: path.clone(),
            kind,
        };
        let files = tree.files.keys().filter(|p| p.parent() == Some(dir));
        let dirs = tree.dirs.iter().filter(|p| p.parent() == Some(dir));
        Ok(files
            .map(|p| entry(p, Kind::File))
            .chain(dirs.map(|p| entry(p, Kind::Dir)))
            .collect())
    }

    fn kind(&self, path: &Path) -> io::Result<Kind> {
        self.stat(path).map(|s| s.kind)
    }

    fn stat(&self, path: &Path) -> io::Result<Stat> {
        let tree = self.lock();
        if let Some(inode) = tree.files.get(path) {
            let content = inode
                .content
                .lock()
                .map_err(|_| io::Error::other("poisoned"))?;
            return Ok(Stat {
                kind: Kind::File,
                len: content.0.len() as u64,
                id: (0, inode.ino),
                modified_ns: content.1,
                changed_ns: content.1,
            });
        }
        if self.is_dir(&tree, path) {
            return Ok(Stat {
                kind: Kind::Dir,
                len: 0,
                id: (0, 0),
                modified_ns: 0,
                changed_ns: 0,
            });
        }
        Err(not_found(path))
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        let tree = self.lock();
        if self.is_dir(&tree, dir) {
            Ok(())
        } else {
            Err(not_found(dir))
        }
    }

    fn map(&self, path: &Path) -> ftiff::Result<ftiff::MappedFile> {
        let inode = self.lock().files.get(path).cloned();
        let inode = inode.ok_or_else(|| ftiff::Error::from(not_found(path)).with_path(path))?;
        let bytes = inode
            .content
            .lock()
            .map_or_else(|_| Vec::new(), |c| c.0.clone());
        Ok(ftiff::MappedFile::from_bytes(path, bytes))
    }
}

/// A handle on a file of [`Memory`].
#[derive(Debug)]
struct MemoryFile {
    inode: Arc<Inode>,
    clock: Arc<std::sync::atomic::AtomicI64>,
}

impl MemoryFile {
    fn content(&self) -> io::Result<MutexGuard<'_, (Vec<u8>, i64)>> {
        self.inode
            .content
            .lock()
            .map_err(|_| io::Error::other("a writer panicked"))
    }

    fn touch(&self, content: &mut (Vec<u8>, i64)) {
        content.1 = self
            .clock
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            + 1;
    }
}

impl ftiff::Sink for MemoryFile {
    fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        let mut c = self.content()?;
        let at = usize::try_from(offset).map_err(io::Error::other)?;
        let end = at.checked_add(buf.len()).ok_or_else(past_end)?;
        if c.0.len() < end {
            c.0.resize(end, 0);
        }
        c.0[at..end].copy_from_slice(buf);
        self.touch(&mut c);
        Ok(())
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let c = self.content()?;
        let at = usize::try_from(offset).map_err(io::Error::other)?;
        let src = c.0.get(at..at + buf.len()).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "read past the end of the file",
            )
        })?;
        buf.copy_from_slice(src);
        Ok(())
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        let mut c = self.content()?;
        c.0.resize(usize::try_from(len).map_err(io::Error::other)?, 0);
        self.touch(&mut c);
        Ok(())
    }
}

impl StorageFile for MemoryFile {
    fn sync(&self) -> io::Result<()> {
        Ok(())
    }

    fn len(&self) -> io::Result<u64> {
        Ok(self.content()?.0.len() as u64)
    }
}
