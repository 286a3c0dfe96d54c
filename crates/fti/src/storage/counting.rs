//! A storage that counts: every operation of one rank, by kind and by whose file it touches
//! (the rank's own, a partner's, another rank's, or a shared path such as a directory), and
//! the entries and bytes its directory listings return. The scaling test and bench
//! (`docs/scale.md`) run each rank on its own [`Counting`] over [`super::Disk`].

use std::collections::BTreeMap;
use std::fmt;
use std::io;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};

use ftiff::{FileName, MappedFile};

use super::{Entry, Kind, Stat, Storage, StorageFile};

/// An operation of [`Storage`] (and [`StorageFile::sync`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Op {
    /// [`Storage::create`].
    Create,
    /// [`Storage::open`].
    Open,
    /// [`Storage::map`].
    Map,
    /// [`Storage::rename`].
    Rename,
    /// [`Storage::remove_file`].
    Remove,
    /// [`Storage::create_dir`].
    CreateDir,
    /// [`Storage::remove_dir`].
    RemoveDir,
    /// [`Storage::list`].
    List,
    /// [`Storage::kind`] or [`Storage::stat`].
    Stat,
    /// [`Storage::sync_dir`].
    SyncDir,
    /// [`StorageFile::sync`].
    Sync,
}

/// Whose path an operation touches, from the checkpoint file name it ends in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Class {
    /// A file named after this rank.
    Own,
    /// A file named after one of this rank's partners (its L2/L3 group).
    Partner,
    /// A file named after any other rank: work that grows with the run.
    Other,
    /// Anything else: a directory, `Topology.fti`, a record shared by the run.
    Shared,
}

/// What a [`Counting`] storage saw.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counts {
    /// Operations, by kind and class.
    pub ops: BTreeMap<(Op, Class), u64>,
    /// Entries returned by [`Storage::list`].
    pub dir_entries: u64,
    /// What those listings cost as `getdents64` returns them: per entry 19 bytes of header
    /// and the name with its NUL, rounded up to 8 (`.` and `..` included).
    pub dir_bytes: u64,
}

impl Counts {
    /// Every operation.
    pub fn total(&self) -> u64 {
        self.ops.values().sum()
    }

    /// The operations on paths of `class`.
    pub fn of_class(&self, class: Class) -> u64 {
        self.ops
            .iter()
            .filter(|((_, c), _)| *c == class)
            .map(|(_, n)| n)
            .sum()
    }

    /// The operations of kind `op`.
    pub fn of_op(&self, op: Op) -> u64 {
        self.ops
            .iter()
            .filter(|((o, _), _)| *o == op)
            .map(|(_, n)| n)
            .sum()
    }
}

/// `getdents64`'s bytes for one entry named `len` bytes.
fn dirent_bytes(len: usize) -> u64 {
    (19 + len as u64 + 1).div_ceil(8) * 8
}

/// One rank's storage, counted.
#[derive(Clone)]
pub struct Counting {
    inner: Arc<dyn Storage>,
    rank: u32,
    partners: Vec<u32>,
    counts: Arc<Mutex<Counts>>,
}

impl fmt::Debug for Counting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Counting")
            .field("rank", &self.rank)
            .finish_non_exhaustive()
    }
}

impl Counting {
    /// Counts the operations of rank `rank` (whose group partners are `partners`) on `inner`.
    pub fn new(inner: Arc<dyn Storage>, rank: u32, partners: Vec<u32>) -> Counting {
        Counting {
            inner,
            rank,
            partners,
            counts: Arc::default(),
        }
    }

    /// What was counted so far.
    pub fn counts(&self) -> Counts {
        self.lock().clone()
    }

    /// Starts counting again from zero.
    pub fn reset(&self) {
        *self.lock() = Counts::default();
    }

    fn lock(&self) -> MutexGuard<'_, Counts> {
        self.counts.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn class(&self, path: &Path) -> Class {
        let name = path.file_name().map(|n| n.to_string_lossy());
        match name.as_deref().and_then(FileName::parse) {
            Some(n) if n.rank == self.rank => Class::Own,
            Some(n) if self.partners.contains(&n.rank) => Class::Partner,
            Some(_) => Class::Other,
            None => Class::Shared,
        }
    }

    fn count(&self, op: Op, path: &Path) {
        let class = self.class(path);
        *self.lock().ops.entry((op, class)).or_default() += 1;
    }

    fn file(&self, file: Box<dyn StorageFile>, path: &Path) -> Box<dyn StorageFile> {
        Box::new(CountingFile {
            inner: file,
            class: self.class(path),
            counts: Arc::clone(&self.counts),
        })
    }
}

impl Storage for Counting {
    fn create(&self, path: &Path) -> io::Result<Box<dyn StorageFile>> {
        self.count(Op::Create, path);
        Ok(self.file(self.inner.create(path)?, path))
    }

    fn open(&self, path: &Path, write: bool) -> io::Result<Box<dyn StorageFile>> {
        self.count(Op::Open, path);
        Ok(self.file(self.inner.open(path, write)?, path))
    }

    fn map(&self, path: &Path) -> ftiff::Result<MappedFile> {
        self.count(Op::Map, path);
        self.inner.map(path)
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.count(Op::Rename, from);
        self.inner.rename(from, to)
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        self.count(Op::Remove, path);
        self.inner.remove_file(path)
    }

    fn create_dir(&self, path: &Path) -> io::Result<()> {
        self.count(Op::CreateDir, path);
        self.inner.create_dir(path)
    }

    fn remove_dir(&self, path: &Path) -> io::Result<()> {
        self.count(Op::RemoveDir, path);
        self.inner.remove_dir(path)
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<Entry>> {
        self.count(Op::List, dir);
        let entries = self.inner.list(dir)?;
        let mut counts = self.lock();
        counts.dir_entries += entries.len() as u64;
        counts.dir_bytes += dirent_bytes(1) + dirent_bytes(2);
        for e in &entries {
            counts.dir_bytes += dirent_bytes(e.name.len());
        }
        Ok(entries)
    }

    fn kind(&self, path: &Path) -> io::Result<Kind> {
        self.count(Op::Stat, path);
        self.inner.kind(path)
    }

    fn stat(&self, path: &Path) -> io::Result<Stat> {
        self.count(Op::Stat, path);
        self.inner.stat(path)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.count(Op::SyncDir, dir);
        self.inner.sync_dir(dir)
    }
}

/// A file of [`Counting`]: its syncs are counted.
struct CountingFile {
    inner: Box<dyn StorageFile>,
    class: Class,
    counts: Arc<Mutex<Counts>>,
}

impl fmt::Debug for CountingFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.fmt(f)
    }
}

impl ftiff::Sink for CountingFile {
    fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.inner.write_all_at(buf, offset)
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.inner.read_exact_at(buf, offset)
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.inner.set_len(len)
    }

    fn data_written(&self) -> io::Result<()> {
        self.inner.data_written()
    }
}

impl StorageFile for CountingFile {
    fn sync(&self) -> io::Result<()> {
        let mut counts = self.counts.lock().unwrap_or_else(|e| e.into_inner());
        *counts.ops.entry((Op::Sync, self.class)).or_default() += 1;
        drop(counts);
        self.inner.sync()
    }

    fn len(&self) -> io::Result<u64> {
        self.inner.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::Disk;

    /// Each operation counted under its kind and whose file it names; a listing's entries
    /// and bytes as `getdents64` would return them.
    #[test]
    fn counts_by_kind_and_class() {
        let root = tempfile::tempdir().unwrap();
        let st = Counting::new(Arc::new(Disk), 1, vec![0, 1]);
        for name in ["Ckpt1-Rank1.fti", "Ckpt1-Pcof0.fti", "Ckpt1-Rank7.fti"] {
            st.create(&root.path().join(name)).unwrap().sync().unwrap();
        }
        st.create_dir(&root.path().join("l1")).unwrap();
        assert_eq!(st.list(root.path()).unwrap().len(), 4);
        let c = st.counts();
        assert_eq!((c.of_class(Class::Own), c.of_class(Class::Partner)), (2, 2));
        assert_eq!(
            (c.of_class(Class::Other), c.of_class(Class::Shared)),
            (2, 2)
        );
        assert_eq!(
            (c.of_op(Op::Create), c.of_op(Op::Sync), c.total()),
            (3, 3, 8)
        );
        // ".", "..", 3 names of 15 bytes (40 each), "l1" (24).
        assert_eq!((c.dir_entries, c.dir_bytes), (4, 24 + 24 + 3 * 40 + 24));
        st.reset();
        assert_eq!(st.counts(), Counts::default());
    }
}
