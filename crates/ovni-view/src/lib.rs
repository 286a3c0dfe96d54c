//! ovni traces as one self-contained HTML page, and the time summaries behind it.
//!
//! * [`model`]: every thread of a trace as intervals (thread states, CPUs, mark stacks),
//!   tolerant of traces from crashed runs: unfinished streams, open marks, threads that never
//!   ended and a stream cut inside an event are drawn up to their last event and flagged;
//! * [`summary`]: time per thread state and per mark value (the value on top of its stack, or
//!   set), the page's JSON summary, and the checkpoint table of fti-rs runtime traces
//!   (recognised by their mark titles);
//! * [`lod`]: the level-of-detail pre-aggregation that keeps a page of millions of events
//!   small and fast to open;
//! * [`page`]: the HTML page (`ovniview`), with everything inline; [`tables`]: its tables of
//!   time per mark value and thread state.
//!
//! The library never prints; untrusted bytes never panic (every read goes through the `ovni`
//! crate's bounds-checked reader).
#![deny(missing_docs)]

pub mod html;
pub mod lod;
pub mod model;
pub mod page;
pub mod runtime;
pub mod summary;
pub mod tables;

use std::path::{Path, PathBuf};

pub use model::Model;
pub use page::PageOptions;
pub use summary::{CheckpointRow, Summary};

/// What can go wrong while drawing a trace.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The trace could not be loaded (no stream, unreadable file, bad header or metadata).
    #[error(transparent)]
    Ovni(#[from] ovni::Error),
    /// Writing the page failed.
    #[error("{}", path.display())]
    Io {
        /// The file written.
        path: PathBuf,
        /// Underlying error.
        #[source]
        source: std::io::Error,
    },
}

/// Loads the trace under `dir` and builds its page.
pub fn render_dir(dir: &Path, opts: &PageOptions) -> Result<String, Error> {
    let trace = ovni::Trace::open(dir)?;
    let model = Model::build(&trace);
    Ok(page::render(&model, opts))
}

/// Loads the streams below each of `dirs` as one trace; a stream's name is its path relative
/// to `root` (so that traces of several runs under one directory keep apart).
pub fn open_traces(root: &Path, dirs: &[PathBuf]) -> Result<ovni::Trace, Error> {
    let mut streams = Vec::new();
    for dir in dirs {
        let prefix = dir.strip_prefix(root).unwrap_or(dir);
        for found in ovni::read::find_streams(dir)? {
            let mut rel = prefix.as_os_str().as_encoded_bytes().to_vec();
            if !found.relpath.is_empty() {
                if !rel.is_empty() {
                    rel.push(b'/');
                }
                rel.extend_from_slice(&found.relpath);
            }
            streams.push(ovni::Stream::load(&found.dir, rel)?);
        }
    }
    if streams.is_empty() {
        return Err(ovni::Error::NoStreams(root.to_path_buf()).into());
    }
    Ok(ovni::Trace::from_streams(streams))
}

/// Loads the trace under `dir` and writes its page to `out` (through a temporary file and a
/// rename, so a reader never sees half a page). Returns the model, for a report.
pub fn write_page(dir: &Path, out: &Path, opts: &PageOptions) -> Result<Model, Error> {
    write_trace_page(&ovni::Trace::open(dir)?, out, opts)
}

/// Writes the page of a loaded trace to `out`, as [`write_page`].
pub fn write_trace_page(
    trace: &ovni::Trace,
    out: &Path,
    opts: &PageOptions,
) -> Result<Model, Error> {
    let model = Model::build(trace);
    let html = page::render(&model, opts);
    let mut tmp = out.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    std::fs::write(&tmp, html).map_err(|source| Error::Io {
        path: tmp.clone(),
        source,
    })?;
    std::fs::rename(&tmp, out).map_err(|source| Error::Io {
        path: out.to_path_buf(),
        source,
    })?;
    Ok(model)
}
