//! Restart: the checkpoint every rank can recover (agreed newest first), the files rebuilt
//! from partner copies or Reed-Solomon code, and the checks that refuse a restart before
//! anything is written.

use std::sync::Arc;

use crate::collective;
use crate::comm::Comm;
use crate::config::Config;
use crate::error::{Error, Result};
use crate::schedule::{self, restart::Chosen, Team};
use crate::store::{self, Dirs};

use super::exec::fresh_exec_id;
use super::{Fti, Status};

impl Fti {
    /// Agrees with the other ranks on the checkpoint to restart from
    /// ([`crate::schedule::restart`]); when none can be recovered, the run starts fresh as a
    /// new execution.
    pub(super) fn find_restart(&mut self) {
        let wanted = self.cfg.restart_id;
        let team = Team {
            comm: &*self.comm,
            topology: &self.topology,
            dirs: &self.dirs,
            rank: self.cfg.rank,
        };
        let searched = schedule::restart::search(team, &self.messages, wanted);
        self.recovery.skipped.extend(searched.skipped);
        if let Some(chosen) = searched.chosen {
            let Chosen {
                restart,
                id,
                level,
                note,
            } = chosen;
            self.messages.info(&format!(
                "Recovering successfully from level {} with Ckpt. {id}.",
                level.number()
            ));
            self.messages.info(&format!(
                "restarting from checkpoint {id} ({note}; {})",
                restart.info.path.display()
            ));
            self.recovery.note = Some(note);
            self.next_id = id.saturating_add(1);
            self.recovery.status = Status::Restart(restart.info.clone());
            self.recovery.restart = Some(restart);
            return;
        }
        // The fresh run gets its own execution: the files of the one that could not be
        // recovered stay as they are, for the user to inspect or repair.
        let fresh = fresh_exec_id(&self.dirs.storage, &self.cfg, &*self.comm);
        self.messages.warn(&format!(
                "restart requested for execution {} but no checkpoint{} could be recovered by every rank: starting fresh as execution {fresh}",
                self.exec_id,
                wanted.map_or_else(String::new, |id| format!(" with id {id}")),
            ));
        self.dirs = Dirs::on(Arc::clone(&self.dirs.storage), &self.cfg, &fresh)
            .with_io(self.dirs.io.clone());
        self.exec_id = fresh;
    }
}

/// Refuses to restart execution `exec_id` with a different number of ranks than wrote it
/// (collective: every rank reaches the same verdict). The checkpoint's rank count comes from
/// the nodes `Topology.fti` lists and the highest rank any file of the execution names: one
/// process may hold a lost node's files nowhere, so a count below the listed nodes' is
/// completed to full nodes. A process acting alone as one rank of a larger run (a one-rank
/// comm with `rank >= nranks`) is not checked.
pub(super) fn check_rank_count(
    storage: &std::sync::Arc<dyn crate::storage::Storage>,
    cfg: &Config,
    exec_id: &str,
    comm: &dyn Comm,
) -> Result<()> {
    if cfg.rank >= cfg.nranks {
        return Ok(());
    }
    let dirs = Dirs::on(std::sync::Arc::clone(storage), cfg, exec_id);
    let mut roots = vec![dirs.local.clone(), dirs.global.clone()];
    if cfg.local_test {
        // Every node directory of the shared ckpt_dir, not only this rank's.
        if let Ok(entries) = dirs.storage.list(&cfg.ckpt_dir) {
            roots.extend(
                entries
                    .into_iter()
                    .filter(|e| e.name.to_string_lossy().starts_with("node"))
                    .map(|e| e.path.join(exec_id)),
            );
        }
    }
    let highest = store::highest_rank(&*dirs.storage, &roots).map_or(0, |r| u64::from(r) + 1);
    let nodes =
        crate::topology::topology_nodes(&dirs.meta.join("Topology.fti")).map_or(0, u64::from);
    let max = |all: Vec<u64>| all.into_iter().max().unwrap_or(0);
    let (highest, nodes) = (
        max(collective::gather_u64(comm, highest)),
        max(collective::gather_u64(comm, nodes)),
    );
    let (node_size, run) = processes(cfg);
    let checkpoint = match crate::inventory::rank_count(highest, nodes, node_size) {
        0 => return Ok(()),
        n => n,
    };
    if checkpoint == run {
        return Ok(());
    }
    Err(Error::RankCount {
        exec_id: exec_id.to_owned(),
        checkpoint: u32::try_from(checkpoint).unwrap_or(u32::MAX),
        run: u32::try_from(run).unwrap_or(u32::MAX),
    })
}

/// Processes per node and in the run, as files number them: with heads, each node also has
/// its head.
fn processes(cfg: &Config) -> (u64, u64) {
    let (node_size, nranks) = (u64::from(cfg.node_size.max(1)), u64::from(cfg.nranks));
    match cfg.world_rank {
        Some(_) => (node_size + 1, nranks + nranks.div_ceil(node_size)),
        None => (node_size, nranks),
    }
}

/// The newest execution directory (ids sort by time) with a checkpoint of this rank.
pub(super) fn newest_exec_with_checkpoints(
    storage: &Arc<dyn crate::storage::Storage>,
    cfg: &Config,
) -> Option<String> {
    let mut execs: Vec<String> = Vec::new();
    let local_root = if cfg.local_test {
        cfg.ckpt_dir.join(format!("node{}", cfg.node()))
    } else {
        cfg.ckpt_dir.clone()
    };
    for root in [local_root, cfg.glbl_dir.clone()] {
        if let Ok(entries) = storage.list(&root) {
            execs.extend(
                entries
                    .into_iter()
                    .filter(|e| e.kind == crate::storage::Kind::Dir)
                    .map(|e| e.name.to_string_lossy().into_owned()),
            );
        }
    }
    execs.sort();
    execs.dedup();
    execs.into_iter().rev().find(|exec| {
        // A rank whose own files are all lost may still hold copies of its partner's
        // (L2) or its code (L3), from which the run recovers.
        let dirs = Dirs::on(Arc::clone(storage), cfg, exec);
        !store::find_checkpoints(&dirs).is_empty() || !store::find_copies(&dirs).is_empty()
    })
}
