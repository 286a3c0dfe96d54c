//! Opening checkpoint files: regular files only, never blocking, mapped read-only.

use std::fs::File;
use std::path::{Path, PathBuf};

use crate::error::{Error, ErrorKind, Result};

/// Opens `path` for reading if it is a regular file (symbolic links followed), and refuses
/// anything else with [`ErrorKind::NotRegularFile`]. The open does not block: a FIFO named like
/// a checkpoint would otherwise hang the reader until a writer appears. `O_NONBLOCK` has no
/// effect on reads of a regular file.
pub fn open_regular(path: &Path) -> Result<File> {
    use std::os::unix::fs::{FileTypeExt as _, OpenOptionsExt as _};
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| Error::from(e).with_path(path))?;
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

/// A read-only memory map of a checkpoint file.
#[derive(Debug)]
pub struct MappedFile {
    path: PathBuf,
    // `None` for an empty file, which cannot be mapped.
    map: Option<memmap2::Mmap>,
}

impl MappedFile {
    /// Maps `path` read-only. Anything but a regular file is refused (see [`open_regular`]).
    pub fn open(path: &Path) -> Result<Self> {
        let file = open_regular(path)?;
        let meta = file
            .metadata()
            .map_err(|e| Error::from(e).with_path(path))?;
        let map = if meta.len() == 0 {
            None
        } else {
            #[allow(unsafe_code)]
            // SAFETY: the map is read-only and private to this process. If another process
            // truncates the file while it is mapped, reads fault (SIGBUS); checkpoint files are
            // written once under a temporary name and renamed, never modified in place, so a
            // published file does not change under its readers.
            let map =
                unsafe { memmap2::Mmap::map(&file) }.map_err(|e| Error::from(e).with_path(path))?;
            Some(map)
        };
        Ok(MappedFile {
            path: path.to_path_buf(),
            map,
        })
    }

    /// The file's bytes.
    pub fn bytes(&self) -> &[u8] {
        self.map.as_deref().unwrap_or_default()
    }

    /// The path it was opened from.
    pub fn path(&self) -> &Path {
        &self.path
    }
}
