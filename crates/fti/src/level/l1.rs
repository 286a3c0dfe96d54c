//! L1: each rank's file in its node's local directory, and nothing else: no post-processing,
//! and a lost file cannot be rebuilt.

use ftiff::raw::FileBlock;

use crate::error::{Error, Result};

use super::PostProcessed;

/// Nothing to do after the write: the file is published as it is.
pub(crate) fn post_process(fb: FileBlock) -> PostProcessed {
    PostProcessed {
        redundancy: None,
        fb,
        deferred: None,
    }
}

/// L1 keeps no redundancy: a restart plan never rebuilds at L1.
pub(crate) fn rebuild() -> Result<()> {
    Err(Error::Internal(
        "an L1 checkpoint has no redundancy to rebuild from",
    ))
}
