//! The checkpoint levels, one module each, with the same shape:
//!
//! * `post_process`: after every rank has written its file, what the level adds (L2 partner
//!   copies, L3 Reed-Solomon code); collective;
//! * `rebuild`: at restart, lost files back from the level's redundancy, and lost redundancy
//!   back from the files (a repair: a plan that lost no file); collective;
//! * `flush` (L4): a checkpoint published locally copied to the global directory.
//!
//! A level knows its redundancy, not how files are published ([`crate::files`]) nor when its
//! steps run ([`crate::schedule`], the runtime).

pub(crate) mod l1;
pub(crate) mod l2;
pub(crate) mod l2_stream;
pub mod l3;
pub(crate) mod l4;

use ftiff::raw::FileBlock;

use crate::config::Level;
use crate::error::Result;
use crate::files::{Found, Pending};
use crate::runtime::Restart;
use crate::schedule::Team;

/// What a level's post-processing made of a rank's written file.
pub(crate) struct PostProcessed {
    /// The redundancy file this rank keeps (L2 partner copy, L3 `RSed` file), to publish
    /// with the rank's file.
    pub redundancy: Option<Pending>,
    /// The rank's file block, as the post-processing changed it (`ptFs`, `maxFs`).
    pub fb: FileBlock,
    /// L2 partner copies left to the background thread (`inline_l2 = 0`).
    pub deferred: Option<l2::PartnerPlan>,
}

/// Runs `level`'s post-processing of checkpoint `id` (collective). With `defer_copies`, the
/// L2 partner copies are planned but left to the caller to run in the background.
pub(crate) fn post_process(
    level: Level,
    team: Team<'_>,
    id: i32,
    pending: &Pending,
    fb: FileBlock,
    defer_copies: bool,
) -> Result<PostProcessed> {
    match level {
        Level::L1 => Ok(l1::post_process(fb)),
        Level::L2 => l2::post_process(team, pending, fb, id, defer_copies),
        Level::L3 => l3::post_process(team, id, pending, fb),
        Level::L4 => Ok(l4::post_process(fb)),
    }
}

/// What a restart's rebuild of one checkpoint works with: the ranks whose file and whose
/// redundancy file the plan rebuilds, and this rank's files of the checkpoint.
pub(crate) struct Rebuild<'a> {
    /// Ranks whose own file is rebuilt.
    pub files: &'a [u32],
    /// Ranks whose redundancy file is rebuilt.
    pub copies: &'a [u32],
    /// This rank's own file as found (verified or not).
    pub own: Option<&'a Found>,
    /// This rank's own file, verified.
    pub verified: Option<&'a Restart>,
    /// The redundancy file this rank keeps, as found.
    pub copy: Option<&'a Found>,
    /// Whether that redundancy file verified (or was not needed, and is there).
    pub copy_ok: bool,
}

/// Carries out a restart plan's rebuild of checkpoint `id` at `level` (collective: every rank
/// has the same plan, so every rank takes the same branch).
pub(crate) fn rebuild(level: Level, team: Team<'_>, id: i32, plan: &Rebuild<'_>) -> Result<()> {
    match level {
        Level::L1 => l1::rebuild(),
        Level::L2 => l2::rebuild(team, id, plan).map(|_| ()),
        Level::L3 => l3::rebuild_checkpoint(team, id, plan),
        Level::L4 => l4::rebuild(),
    }
}
