//! Trace walker: every `stream.json` below a directory, sorted by relpath like ovni.

use std::fs;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::read::merge::Merger;
use crate::read::stream::Stream;

/// A stream directory found by [`find_streams`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamDir {
    /// Directory path (the given root joined with `relpath`).
    pub dir: PathBuf,
    /// Path relative to the root, as bytes (empty if the root is the stream directory).
    pub relpath: Vec<u8>,
}

/// Finds every regular file named `stream.json` below `root` (symbolic links followed, loops
/// skipped) and returns the stream directories sorted by relpath bytes (`strcmp` order).
pub fn find_streams(root: &Path) -> Result<Vec<StreamDir>> {
    let md = fs::metadata(root).map_err(|e| Error::io(root, e))?;
    if !md.is_dir() {
        return Err(Error::io(
            root,
            std::io::Error::new(std::io::ErrorKind::NotADirectory, "not a directory"),
        ));
    }
    let mut found = Vec::new();
    let mut ancestors = Vec::new();
    walk(root, Vec::new(), &mut ancestors, &mut found)?;
    found.sort_by(|a, b| a.relpath.cmp(&b.relpath));
    Ok(found)
}

fn walk(
    dir: &Path,
    rel: Vec<u8>,
    ancestors: &mut Vec<PathBuf>,
    found: &mut Vec<StreamDir>,
) -> Result<()> {
    // A symbolic link back to an ancestor would recurse forever.
    let canon = fs::canonicalize(dir).map_err(|e| Error::io(dir, e))?;
    if ancestors.contains(&canon) {
        return Ok(());
    }
    ancestors.push(canon);
    let rd = fs::read_dir(dir).map_err(|e| Error::io(dir, e))?;
    let mut entries = Vec::new();
    for entry in rd {
        let entry = entry.map_err(|e| Error::io(dir, e))?;
        entries.push(entry.file_name());
    }
    entries.sort();
    for name in entries {
        let path = dir.join(&name);
        // Follows symbolic links, like nftw without FTW_PHYS; dangling links are skipped.
        let Ok(md) = fs::metadata(&path) else {
            continue;
        };
        if md.is_dir() {
            let mut sub = rel.clone();
            if !sub.is_empty() {
                sub.push(b'/');
            }
            sub.extend_from_slice(name.as_encoded_bytes());
            walk(&path, sub, ancestors, found)?;
        } else if md.is_file() && name == "stream.json" {
            found.push(StreamDir {
                dir: dir.to_path_buf(),
                relpath: rel.clone(),
            });
        }
    }
    ancestors.pop();
    Ok(())
}

/// All streams of a trace, loaded and sorted by relpath.
#[derive(Debug)]
pub struct Trace {
    streams: Vec<Stream>,
}

impl Trace {
    /// Loads every stream below `root`. Fails on the first stream that cannot be loaded, and
    /// with [`Error::NoStreams`] if there is none.
    pub fn open(root: &Path) -> Result<Self> {
        let dirs = find_streams(root)?;
        if dirs.is_empty() {
            return Err(Error::NoStreams(root.to_path_buf()));
        }
        let streams = dirs
            .into_iter()
            .map(|d| Stream::load(&d.dir, d.relpath))
            .collect::<Result<Vec<_>>>()?;
        Ok(Self { streams })
    }

    /// Builds a trace from streams already loaded; they are sorted by relpath.
    pub fn from_streams(mut streams: Vec<Stream>) -> Self {
        streams.sort_by(|a, b| a.relpath().cmp(b.relpath()));
        Self { streams }
    }

    /// The streams, in relpath order.
    pub fn streams(&self) -> &[Stream] {
        &self.streams
    }

    /// All events of all streams merged by clock (see [`Merger`] for the tie order).
    pub fn merged(&self) -> Merger<'_> {
        Merger::new(&self.streams)
    }
}
