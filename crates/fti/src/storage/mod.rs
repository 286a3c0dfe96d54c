//! The storage layer: every file-system effect of the runtime and of the L3 group tools
//! ([`crate::l3::group`]) goes through one [`Storage`].
//!
//! [`Disk`] is the real file system. [`PowerCut`] logs, beside the real files, every change,
//! from which [`CrashState`] gives what a disk may hold after a power failure at any operation
//! (what was synced, and any subset of the rest), and it can fail every operation after the
//! n-th: the crash-consistency tests run checkpoints on it and restart from the crash images
//! (`docs/crash-safety.md`).
//!
//! Reads that map a whole checkpoint to verify it (the restart's scan, `recover`) go through
//! [`Storage::map`] (by default `ftiff`'s reader, under the memory-map contract of
//! `docs/crash-safety.md`, *Memory maps*); the reads of the write path (a differential
//! checkpoint's old file block, the sources of L2 and L4 copies) go through
//! [`Storage::open`], and every `stat` through [`Storage::stat`] or [`Storage::kind`].
//! [`Counting`] counts every operation of one rank (`docs/scale.md`). [`Memory`] keeps every
//! file in memory: the runtime's tests run on it with nothing on disk, which shows that no
//! access bypasses the seam (the config file, read before the storage exists, and the trace,
//! written by ovni's writer, are not the runtime's checkpoint files).

mod counting;
mod crash_state;
mod memory;
mod power_cut;

pub use counting::{Class, Counting, Counts, Op};
pub use crash_state::CrashState;
pub use memory::Memory;
pub use power_cut::{PowerCut, Syncs};

use std::ffi::OsString;
use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// What a directory entry is (symbolic links followed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A FIFO, socket, device or a dangling link: never read as a checkpoint.
    Other,
}

/// What [`Storage::stat`] says of a path (symbolic links followed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stat {
    /// What it is.
    pub kind: Kind,
    /// Its size in bytes.
    pub len: u64,
    /// Device and inode: a file replaced at the same path has others.
    pub id: (u64, u64),
    /// Its last modification, ns since the epoch.
    pub modified_ns: i64,
    /// Its last status change (a rename, a new link), ns since the epoch.
    pub changed_ns: i64,
}

/// One entry of [`Storage::list`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The entry's name in its directory.
    pub name: OsString,
    /// Its full path.
    pub path: PathBuf,
    /// What it is.
    pub kind: Kind,
}

/// A file opened through a [`Storage`]: the checkpoint writer's [`ftiff::Sink`], plus sync.
pub trait StorageFile: ftiff::Sink + Send + fmt::Debug {
    /// Makes the file's data and size durable (`fsync`).
    fn sync(&self) -> io::Result<()>;
    /// The file's size in bytes.
    fn len(&self) -> io::Result<u64>;
    /// Whether the file is empty.
    fn is_empty(&self) -> io::Result<bool> {
        self.len().map(|n| n == 0)
    }
}

/// The file-system operations of the runtime. Errors are the OS's; callers add the path.
pub trait Storage: Send + Sync + fmt::Debug {
    /// Creates a new file (it must not exist), open for reading and writing.
    fn create(&self, path: &Path) -> io::Result<Box<dyn StorageFile>>;
    /// Opens an existing regular file, for reading and, with `write`, writing. Anything else
    /// (a FIFO, a directory) is refused without blocking.
    fn open(&self, path: &Path, write: bool) -> io::Result<Box<dyn StorageFile>>;
    /// Renames a file, replacing `to` if it exists.
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    /// Removes a file.
    fn remove_file(&self, path: &Path) -> io::Result<()>;
    /// Creates a directory (its parent must exist).
    fn create_dir(&self, path: &Path) -> io::Result<()>;
    /// Removes an empty directory.
    fn remove_dir(&self, path: &Path) -> io::Result<()>;
    /// The entries of a directory, in no particular order.
    fn list(&self, dir: &Path) -> io::Result<Vec<Entry>>;
    /// What `path` is (`stat`, never blocking).
    fn kind(&self, path: &Path) -> io::Result<Kind>;
    /// What `path` is, its size, identity and times (`stat`, never blocking).
    fn stat(&self, path: &Path) -> io::Result<Stat>;
    /// Makes a directory's entries durable (`fsync` of the directory).
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;
    /// Maps a whole regular file to read it (a checkpoint to verify, an `RSed` file).
    fn map(&self, path: &Path) -> ftiff::Result<ftiff::MappedFile> {
        ftiff::MappedFile::open(path)
    }
}

/// The real file system.
#[derive(Debug, Default, Clone, Copy)]
pub struct Disk;

/// A file of [`Disk`].
#[derive(Debug)]
struct DiskFile(File);

impl ftiff::Sink for DiskFile {
    fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        FileExt::write_all_at(&self.0, buf, offset)
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        FileExt::read_exact_at(&self.0, buf, offset)
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.0.set_len(len)
    }

    /// The data go to disk while the writer's checksum still runs; publishing syncs the rest.
    fn data_written(&self) -> io::Result<()> {
        self.0.sync_data()
    }
}

impl StorageFile for DiskFile {
    fn sync(&self) -> io::Result<()> {
        self.0.sync_all()
    }

    fn len(&self) -> io::Result<u64> {
        self.0.metadata().map(|m| m.len())
    }
}

/// `stat`'s answer as a [`Kind`].
fn kind_of(meta: &fs::Metadata) -> Kind {
    if meta.is_file() {
        Kind::File
    } else if meta.is_dir() {
        Kind::Dir
    } else {
        Kind::Other
    }
}

impl Storage for Disk {
    fn create(&self, path: &Path) -> io::Result<Box<dyn StorageFile>> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(path)?;
        Ok(Box::new(DiskFile(file)))
    }

    fn open(&self, path: &Path, write: bool) -> io::Result<Box<dyn StorageFile>> {
        let file = if write {
            // Only files this runtime made are opened for writing; still, never block.
            use rustix::fs::{Mode, OFlags};
            let flags = OFlags::RDWR | OFlags::NONBLOCK | OFlags::CLOEXEC;
            let file = std::fs::File::from(rustix::fs::open(path, flags, Mode::empty())?);
            if !file.metadata()?.is_file() {
                return Err(not_regular());
            }
            file
        } else {
            ftiff::open_regular(path).map_err(open_error)?
        };
        Ok(Box::new(DiskFile(file)))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        fs::rename(from, to)
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        fs::remove_file(path)
    }

    fn create_dir(&self, path: &Path) -> io::Result<()> {
        fs::create_dir(path)
    }

    fn remove_dir(&self, path: &Path) -> io::Result<()> {
        fs::remove_dir(path)
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<Entry>> {
        let mut out = Vec::new();
        for entry in fs::read_dir(dir)? {
            let entry = entry?;
            let path = entry.path();
            // The type the directory entry gives, without a `stat` per entry; a link's
            // target's.
            let kind = match entry.file_type() {
                Ok(t) if t.is_file() => Kind::File,
                Ok(t) if t.is_dir() => Kind::Dir,
                Ok(t) if !t.is_symlink() => Kind::Other,
                _ => fs::metadata(&path).map_or(Kind::Other, |m| kind_of(&m)),
            };
            out.push(Entry {
                name: entry.file_name(),
                path,
                kind,
            });
        }
        Ok(out)
    }

    fn kind(&self, path: &Path) -> io::Result<Kind> {
        match fs::metadata(path) {
            Ok(m) => Ok(kind_of(&m)),
            // A link to nothing is there, as something that is never read.
            Err(_) if fs::symlink_metadata(path).is_ok() => Ok(Kind::Other),
            Err(e) => Err(e),
        }
    }

    fn stat(&self, path: &Path) -> io::Result<Stat> {
        use std::os::unix::fs::MetadataExt as _;
        let m = fs::metadata(path)?;
        let ns = |s: i64, n: i64| s.saturating_mul(1_000_000_000).saturating_add(n);
        Ok(Stat {
            kind: kind_of(&m),
            len: m.len(),
            id: (m.dev(), m.ino()),
            modified_ns: ns(m.mtime(), m.mtime_nsec()),
            changed_ns: ns(m.ctime(), m.ctime_nsec()),
        })
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        File::open(dir)?.sync_all()
    }
}

/// A refused open as an I/O error: the operating system's as it was (its kind kept), or what
/// the format library refused (not a regular file), without the path: the caller names it.
fn open_error(e: ftiff::Error) -> io::Error {
    match e.into_kind() {
        ftiff::ErrorKind::Io(e) => e,
        refused => io::Error::new(io::ErrorKind::InvalidInput, refused.to_string()),
    }
}

fn not_regular() -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, "not a regular file")
}

/// Copies the whole of `from` into `to` (from offset 0), in 8 MiB pieces; returns the bytes
/// copied.
pub fn copy(from: &dyn StorageFile, to: &dyn StorageFile) -> io::Result<u64> {
    let len = from.len()?;
    let mut buf = vec![0u8; (8 << 20).min(len as usize)];
    let mut at = 0;
    while at < len {
        let n = (len - at).min(buf.len() as u64) as usize;
        from.read_exact_at(&mut buf[..n], at)?;
        to.write_all_at(&buf[..n], at)?;
        at += n as u64;
    }
    to.set_len(len)?;
    Ok(len)
}
