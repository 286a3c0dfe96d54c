//! Opening checkpoint files: regular files only, never blocking, mapped read-only.

use std::fs::File;
use std::path::{Path, PathBuf};

use crate::error::{Error, ErrorKind, Result};

/// Opens `path` for reading if it is a regular file (symbolic links followed), and refuses
/// anything else with [`ErrorKind::NotRegularFile`]. The open does not block: a FIFO named like
/// a checkpoint would otherwise hang the reader until a writer appears. `O_NONBLOCK` has no
/// effect on reads of a regular file.
pub fn open_regular(path: &Path) -> Result<File> {
    use rustix::fs::{Mode, OFlags};
    use std::os::unix::fs::FileTypeExt as _;
    let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let file = rustix::fs::open(path, flags, Mode::empty())
        .map(File::from)
        .map_err(|e| Error::from(std::io::Error::from(e)).with_path(path))?;
    let kind = file
        .metadata()
        .map_err(|e| Error::from(e).with_path(path))?
        .file_type();
    if kind.is_file() {
        return Ok(file);
    }
    let what = if kind.is_fifo() {
        "FIFO"
    } else if kind.is_socket() {
        "socket"
    } else if kind.is_dir() {
        "directory"
    } else if kind.is_char_device() {
        "character device"
    } else if kind.is_block_device() {
        "block device"
    } else {
        "special file"
    };
    Err(Error::new(ErrorKind::NotRegularFile { what }).with_path(path))
}

/// A checkpoint file's bytes: mapped read-only ([`MappedFile::open`]) or read into memory
/// ([`MappedFile::read`]).
///
/// The map's contract: while a file is mapped, no process writes to it or truncates it. FTI-FF
/// writers publish a file by renaming it into place, so a published file normally never
/// changes; the one exception is a differential checkpoint, which takes one of its rank's older
/// files (in `lK_archive/`), renames it into `lK_tmp/` and rewrites it in place. So the runtime
/// holds no map across a call that may start a checkpoint (`docs/crash-safety.md`, *Memory
/// maps*), and readers that may run beside a live program, such as the `fti` tool on archived
/// files, use [`MappedFile::read`] instead.
#[derive(Debug)]
pub struct MappedFile {
    path: PathBuf,
    bytes: Bytes,
}

#[derive(Debug)]
enum Bytes {
    Mapped(memmap2::Mmap),
    Read(Vec<u8>),
    // An empty file cannot be mapped.
    Empty,
}

impl MappedFile {
    /// Maps `path` read-only. Anything but a regular file is refused (see [`open_regular`]).
    /// The caller keeps the contract above for as long as the map lives.
    pub fn open(path: &Path) -> Result<Self> {
        let file = open_regular(path)?;
        let meta = file
            .metadata()
            .map_err(|e| Error::from(e).with_path(path))?;
        let bytes = if meta.len() == 0 {
            Bytes::Empty
        } else {
            #[allow(unsafe_code)]
            // SAFETY: the map is read-only and private to this process, and its bytes are only
            // ever read as `u8`s. The callers keep the contract of [`MappedFile`]: no process
            // writes to or truncates the file while it is mapped (a file being rewritten is
            // read with `MappedFile::read`), so the slice `bytes()` returns does not change.
            let map =
                unsafe { memmap2::Mmap::map(&file) }.map_err(|e| Error::from(e).with_path(path))?;
            Bytes::Mapped(map)
        };
        Ok(MappedFile {
            path: path.to_path_buf(),
            bytes,
        })
    }

    /// Reads `path` into memory with `read`: for a file another process may rewrite while it
    /// is read (the bytes are then a mix of old and new, which the hashes reject, instead of a
    /// map that changes under its reader or faults when the file shrinks).
    pub fn read(path: &Path) -> Result<Self> {
        use std::io::Read as _;
        let mut file = open_regular(path)?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)
            .map_err(|e| Error::from(e).with_path(path))?;
        Ok(MappedFile {
            path: path.to_path_buf(),
            bytes: Bytes::Read(bytes),
        })
    }

    /// The file's bytes.
    pub fn bytes(&self) -> &[u8] {
        match &self.bytes {
            Bytes::Mapped(map) => map,
            Bytes::Read(bytes) => bytes,
            Bytes::Empty => &[],
        }
    }

    /// The path it was opened from.
    pub fn path(&self) -> &Path {
        &self.path
    }
}
