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
    let mut paths = copy_node_in(comm, &[(dirs.clone(), local)], id, step)?;
    paths
        .pop()
        .ok_or(Error::Internal("a flush without its file"))
}

/// [`copy_in_all`] for several files per process (a head's node: each application rank's
/// published file, with its directories): returns where each went.
fn copy_node_in(
    comm: &dyn Comm,
    files: &[(Dirs, &Path)],
    id: i32,
    step: Step,
) -> Result<Vec<PathBuf>> {
    let Some((first, _)) = files.first() else {
        return agree(comm, step, Ok(Vec::new()));
    };
    if !first.io.shared(Level::L4) {
        let copied = files
            .iter()
            .map(|(dirs, local)| copy_in(dirs, id, local))
            .collect();
        return agree(comm, step, copied);
    }
    // A rank that cannot read a file still takes part: its error fails the step everywhere.
    let (handles, mut errors): (Vec<_>, Vec<_>) = files
        .iter()
        .map(|(dirs, local)| {
            let opened = dirs
                .storage
                .open(local, false)
                .and_then(|f| f.len().map(|len| (f, len)))
                .map_err(|e| Error::io(local, e));
            match opened {
                Ok(handle) => (Some(handle), None),
                Err(e) => (None, Some(e)),
            }
        })
        .unzip();
    let parts = (handles.iter().zip(&mut errors).zip(files))
        .map(|((handle, error), (dirs, local))| {
            let source = match (handle, error.take()) {
                (Some((f, len)), _) => Ok(crate::io::mpiio::Source::File(&**f, local, *len)),
                (None, Some(e)) => Err(e),
                (None, None) => Err(Error::Internal("a file neither opened nor failed")),
            };
            (crate::io::mpiio::owner(dirs), source)
        })
        .collect();
    let (path, _) = crate::io::mpiio::write_parts(comm, first, id, parts)?;
    Ok(vec![path; files.len()])
}

/// Flushes checkpoint `id`, published at L1 as `local`, to L4 on every rank (collective);
/// once every rank has, older L4 checkpoints are retired (keeping `keep`), and with
/// `retire_local` the lower levels' files, its L1 copy included, as FTI 1.1's post-checkpoint
/// `FTI_Clean(4)` (differential checkpoints keep the L1 copy: the next one updates it).
pub(crate) fn flush(
    comm: &dyn Comm,
    dirs: &Dirs,
    (id, local): (i32, &Path),
    keep: usize,
    retire_local: bool,
) -> Result<PathBuf> {
    let path = copy_in_all(comm, dirs, (id, local), Step::L4Flush)?;
    crate::io::copy_meta(comm, dirs, Level::L1, Level::L4)?;
    files::retire(dirs, Level::L4, id, keep, retire_local)?;
    Ok(path)
}

/// A head's flush of checkpoint `id` for its node (collective over the heads): each
/// application rank's file published at L1 (`(its directories, its file)`, in position
/// order) goes to L4 as [`flush`] does, the node's files at once (`FTI_Flush`,
/// `src/postckpt.c`: with MPI-IO every head writes its node's parts into the one shared
/// file); then each group's meta data is copied to `l4/` and older L4 checkpoints retired,
/// with `retire_local` the lower levels' files too.
pub(crate) fn flush_node(
    comm: &dyn Comm,
    files: &[(Dirs, &Path)],
    (id, keep): (i32, usize),
    retire_local: bool,
) -> Result<()> {
    copy_node_in(comm, files, id, Step::L4Flush)?;
    for (dirs, _) in files {
        crate::io::copy_meta(comm, dirs, Level::L1, Level::L4)?;
    }
    for (dirs, _) in files {
        files::retire(dirs, Level::L4, id, keep, retire_local)?;
    }
    Ok(())
}
