//! The run's collective schedules: every collective step a phase of the run takes, in one
//! order that every rank follows to the end. A rank-local result never decides whether a
//! collective step happens: it travels as data into the next step, and what follows is
//! decided by a pure function of the gathered data ([`crate::restart_plan`]), identically on
//! every rank.

mod fti_says;
pub(crate) mod restart;

use crate::comm::Comm;
use crate::error::{Error, Misuse, Result};
use crate::files::Dirs;
use crate::topology::{Place, Topology};

/// What a collective step needs of the run: the ranks, where each sits, and this rank's
/// directories.
#[derive(Clone, Copy)]
pub(crate) struct Team<'a> {
    pub comm: &'a dyn Comm,
    pub topology: &'a Topology,
    pub dirs: &'a Dirs,
    /// This rank: the config's (a one-rank comm may act as any rank of a run).
    pub rank: u32,
}

impl Team<'_> {
    /// This rank's place in the topology (its group and partners).
    pub fn place(&self) -> Result<&Place> {
        self.topology
            .place(self.rank)
            .ok_or(Error::State(Misuse::NotInTopology))
    }
}
