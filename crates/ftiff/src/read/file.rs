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
    // Listed in the registry of live maps while mapped ([`map_at`]).
    registered: Option<usize>,
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
        let registered = match &bytes {
            Bytes::Mapped(map) => live_maps::register(map.as_ptr() as usize, map.len(), path),
            _ => None,
        };
        Ok(MappedFile {
            path: path.to_path_buf(),
            bytes,
            registered,
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
            registered: None,
        })
    }

    /// Bytes already in memory, as read from `path`: the file of a storage that keeps its
    /// files in memory.
    pub fn from_bytes(path: &Path, bytes: Vec<u8>) -> Self {
        MappedFile {
            path: path.to_path_buf(),
            bytes: Bytes::Read(bytes),
            registered: None,
        }
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

impl Drop for MappedFile {
    fn drop(&mut self) {
        if let Some(slot) = self.registered.take() {
            live_maps::unregister(slot);
        }
    }
}

/// The path of the live map holding address `addr`, copied into `out` (truncated to fit);
/// returns the number of bytes written, 0 when no registered map holds it.
///
/// For a `SIGBUS` handler: a map faults when its file shrinks under it (another process
/// truncated or rewrote it in place), and the handler can then name the file. It takes no lock
/// and allocates nothing, so it may be called from a signal handler. Up to 64 maps at a time
/// are listed; others are not found.
pub fn map_at(addr: usize, out: &mut [u8]) -> usize {
    live_maps::path_at(addr, out)
}

/// The registry behind [`map_at`]: fixed slots of atomics, written when a map is made and
/// cleared before it is unmapped.
mod live_maps {
    use std::os::unix::ffi::OsStrExt as _;
    use std::path::Path;
    use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};

    const SLOTS: usize = 64;
    /// A slot's `start` while it is being filled or emptied.
    const BUSY: usize = usize::MAX;

    struct Slot {
        start: AtomicUsize,
        len: AtomicUsize,
        path: AtomicPtr<u8>,
        path_len: AtomicUsize,
    }

    #[allow(clippy::declare_interior_mutable_const)]
    const EMPTY: Slot = Slot {
        start: AtomicUsize::new(0),
        len: AtomicUsize::new(0),
        path: AtomicPtr::new(std::ptr::null_mut()),
        path_len: AtomicUsize::new(0),
    };
    static LIVE: [Slot; SLOTS] = [EMPTY; SLOTS];

    pub(super) fn register(start: usize, len: usize, path: &Path) -> Option<usize> {
        let index = LIVE.iter().position(|s| {
            s.start
                .compare_exchange(0, BUSY, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
        })?;
        let slot = &LIVE[index];
        // The slot owns a copy of the path until it is cleared.
        let bytes: Box<[u8]> = path.as_os_str().as_bytes().into();
        let path_len = bytes.len();
        slot.path
            .store(Box::into_raw(bytes).cast::<u8>(), Ordering::Relaxed);
        slot.path_len.store(path_len, Ordering::Relaxed);
        slot.len.store(len, Ordering::Relaxed);
        slot.start.store(start, Ordering::Release);
        Some(index)
    }

    pub(super) fn unregister(index: usize) {
        let slot = &LIVE[index];
        slot.start.store(BUSY, Ordering::Release);
        let ptr = slot.path.swap(std::ptr::null_mut(), Ordering::AcqRel);
        let len = slot.path_len.load(Ordering::Relaxed);
        if !ptr.is_null() {
            #[allow(unsafe_code)]
            // SAFETY: `ptr` and `len` are those of the boxed slice `register` leaked into this
            // slot, taken out of it exactly once (the swap above left null behind).
            drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(ptr, len)) });
        }
        slot.start.store(0, Ordering::Release);
    }

    pub(super) fn path_at(addr: usize, out: &mut [u8]) -> usize {
        for slot in &LIVE {
            let start = slot.start.load(Ordering::Acquire);
            if start == 0 || start == BUSY {
                continue;
            }
            let len = slot.len.load(Ordering::Relaxed);
            if addr < start || addr - start >= len {
                continue;
            }
            let ptr = slot.path.load(Ordering::Acquire);
            if ptr.is_null() {
                return 0;
            }
            let n = slot.path_len.load(Ordering::Relaxed).min(out.len());
            #[allow(unsafe_code)]
            // SAFETY: the address faulted inside this slot's map, which the faulting thread is
            // reading, so the map and the path bytes it owns are alive (they are cleared only
            // when the map is dropped); `n` is at most the path's length.
            let path = unsafe { std::slice::from_raw_parts(ptr, n) };
            out[..n].copy_from_slice(path);
            return n;
        }
        0
    }

    #[cfg(test)]
    mod tests {
        #[test]
        fn a_map_is_found_by_any_address_inside_it_until_dropped() {
            let dir = std::env::temp_dir().join(format!("ftiff-live-maps-{}", std::process::id()));
            std::fs::create_dir_all(&dir).unwrap();
            let path = dir.join("Ckpt1-Rank0.fti");
            std::fs::write(&path, vec![7u8; 10_000]).unwrap();
            let map = crate::MappedFile::open(&path).unwrap();
            let start = map.bytes().as_ptr() as usize;
            let mut out = [0u8; 4096];
            for addr in [start, start + 9_999] {
                let n = crate::map_at(addr, &mut out);
                assert_eq!(&out[..n], path.as_os_str().as_encoded_bytes());
            }
            assert_eq!(crate::map_at(start + 10_000 + 4096, &mut out), 0);
            drop(map);
            assert_eq!(crate::map_at(start, &mut out), 0);
            std::fs::remove_dir_all(&dir).unwrap();
        }
    }
}
