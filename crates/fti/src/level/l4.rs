//! L4: each rank's file in the global directory. Written there directly, or (`inline_l4 = 0`)
//! written at L1 and flushed: copied into the global directory once published locally. At the
//! end of a run with `keep_last_ckpt`, the last checkpoint is flushed the same way. No
//! redundancy: a lost file cannot be rebuilt.

use std::path::{Path, PathBuf};

use ftiff::raw::FileBlock;

use crate::collective::agree;
use crate::comm::Comm;
use crate::config::Level;
use crate::error::{Error, Result, Step};
use crate::files::{self, Dirs};

use super::PostProcessed;

/// Nothing to do after the write: the file is published as it is.
pub(crate) fn post_process(fb: FileBlock) -> PostProcessed {
    super::l1::post_process(fb)
}

/// L4 keeps no redundancy: a restart plan never rebuilds at L4.
pub(crate) fn rebuild() -> Result<()> {
    Err(Error::Internal(
        "an L4 checkpoint has no redundancy to rebuild from",
    ))
}

/// Copies this rank's published file `local` of checkpoint `id` into the global directory
/// and publishes it there (local: no agreement).
pub(crate) fn copy_in(dirs: &Dirs, id: i32, local: &Path) -> Result<PathBuf> {
    files::copy_into(dirs, Level::L4, id, local).and_then(|p| files::publish_pending(dirs, p))
}

/// Copies every rank's published file `local` of checkpoint `id` into the global directory
/// (collective; `step` names it): each into its own file, or with MPI-IO all into the shared
/// file.
pub(crate) fn copy_in_all(
    comm: &dyn Comm,
    dirs: &Dirs,
    (id, local): (i32, &Path),
    step: Step,
) -> Result<PathBuf> {
    if !dirs.io.shared(Level::L4) {
        return agree(comm, step, copy_in(dirs, id, local));
    }
    // A rank that cannot read its file still takes part: its error fails the step everywhere.
    let (file, source) = match dirs.storage.open(local, false) {
        Ok(f) => (Some(f), Ok(())),
        Err(e) => (None, Err(Error::io(local, e))),
    };
    let source = source.and_then(|()| {
        let f = file
            .as_deref()
            .ok_or(Error::Internal("an open file without its handle"))?;
        let len = f.len().map_err(|e| Error::io(local, e))?;
        Ok(crate::io::mpiio::Source::File(f, local, len))
    });
    crate::io::mpiio::write(comm, dirs, id, source).map(|(path, _)| path)
}

/// Flushes checkpoint `id`, published at L1 as `local`, to L4 on every rank (collective);
/// once every rank has, older L4 checkpoints are retired (keeping `keep`).
pub(crate) fn flush(
    comm: &dyn Comm,
    dirs: &Dirs,
    id: i32,
    local: &Path,
    keep: usize,
) -> Result<PathBuf> {
    let path = copy_in_all(comm, dirs, (id, local), Step::L4Flush)?;
    crate::io::copy_meta(comm, dirs, Level::L1, Level::L4)?;
    files::retire(dirs, Level::L4, id, keep, false)?;
    Ok(path)
}
