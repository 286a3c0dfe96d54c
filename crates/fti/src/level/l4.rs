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
use crate::store::{self, Dirs};

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
    store::copy_into(dirs, Level::L4, id, local).and_then(|p| store::publish_pending(dirs, p))
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
    let path = agree(comm, Step::L4Flush, copy_in(dirs, id, local))?;
    crate::io::copy_meta(comm, dirs, Level::L1, Level::L4)?;
    store::retire(dirs, Level::L4, id, keep, false)?;
    Ok(path)
}
