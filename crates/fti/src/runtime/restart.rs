//! Restart: the checkpoint every rank can recover (agreed newest first), the files rebuilt
//! from partner copies or Reed-Solomon code, and the checks that refuse a restart before
//! anything is written.

use std::sync::Arc;

use crate::collective;
use crate::comm::Comm;
use crate::config::Config;
use crate::error::{Error, Result};
use crate::files::{self, Dirs};
use crate::schedule::{self, restart::Chosen, Team};

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
        self.dirs.know_global([]);
        self.exec_id = fresh;
    }
}

/// Refuses to restart execution `exec_id` with a different number of ranks than wrote it
/// (collective: rank 0 counts, every rank learns its verdict). The count is the one the
/// execution recorded in `Topology.fti` (when it differs from the run's, its files are
/// listed only to see whether any is left); FTI 1.1's trees record none: it then comes from
/// the nodes `Topology.fti` lists and the highest rank any file of the execution names: one
/// process may hold a lost node's files nowhere, so a count below the listed nodes' is
/// completed to full nodes. A process acting alone as one rank of a
/// larger run (a one-rank comm with `rank >= nranks`) is not checked.
pub(super) fn check_rank_count(
    storage: &std::sync::Arc<dyn crate::storage::Storage>,
    cfg: &Config,
    exec_id: &str,
    comm: &dyn Comm,
) -> Result<()> {
    if cfg.rank >= cfg.nranks {
        return Ok(());
    }
    let (node_size, run) = processes(cfg);
    let mine = if comm.rank() == 0 {
        let dirs = Dirs::on(Arc::clone(storage), cfg, exec_id);
        let node_size = u32::try_from(node_size).unwrap_or(u32::MAX);
        match crate::topology::recorded_ranks(&*dirs.storage, &dirs.meta, node_size) {
            Some(n) if n == run => n,
            // Another count: refused, unless no file is left to restart from.
            Some(n) => u64::from(counted_ranks(&dirs, cfg, exec_id) > 0) * n,
            None => counted_ranks(&dirs, cfg, exec_id),
        }
    } else {
        0
    };
    let checkpoint = match collective::broadcast_u64(comm, mine) {
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

/// The rank count of an execution from its files (every node directory's, with
/// `local_test`) and the nodes its `Topology.fti` lists; 0 when it has no file.
fn counted_ranks(dirs: &Dirs, cfg: &Config, exec_id: &str) -> u64 {
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
    let highest = files::highest_rank(&*dirs.storage, &roots).map_or(0, |r| u64::from(r) + 1);
    let path = dirs.meta.join("Topology.fti");
    let nodes = crate::topology::topology_text(&*dirs.storage, &path)
        .and_then(|text| crate::topology::nodes_in(&text, &path))
        .map_or(0, u64::from);
    crate::inventory::rank_count(highest, nodes, processes(cfg).0)
}

/// Processes per node and in the run, as files number them: with heads, each node also has
/// its head.
pub(super) fn processes(cfg: &Config) -> (u64, u64) {
    let (node_size, nranks) = (u64::from(cfg.node_size.max(1)), u64::from(cfg.nranks));
    match cfg.world_rank {
        Some(_) => (node_size + 1, nranks + nranks.div_ceil(node_size)),
        None => (node_size, nranks),
    }
}

/// The newest execution directory (ids sort by time) with a checkpoint of this rank in its
/// local directories and, on rank 0, with a checkpoint of any of the run's ranks in the
/// global directory: the greatest over the ranks is the newest execution with a checkpoint
/// of any rank, without each rank listing the global directory that holds every rank's file.
pub(super) fn newest_exec_with_checkpoints(
    storage: &Arc<dyn crate::storage::Storage>,
    cfg: &Config,
    comm: &dyn Comm,
) -> Option<String> {
    let local_root = if cfg.local_test {
        cfg.ckpt_dir.join(format!("node{}", cfg.node()))
    } else {
        cfg.ckpt_dir.clone()
    };
    // A rank whose own files are all lost may still hold copies of its partner's (L2) or
    // its code (L3), from which the run recovers.
    let local = newest_exec_in(storage, &local_root, |exec| {
        files::holds_local(&Dirs::on(Arc::clone(storage), cfg, exec))
    });
    if comm.rank() != 0 {
        return local;
    }
    // A one-rank comm acts as the config's rank alone; files name the ranks among all
    // processes (heads included).
    let ranks = if comm.size() == 1 {
        let rank = cfg.world_rank.unwrap_or(cfg.rank);
        rank..rank + 1
    } else {
        0..u32::try_from(processes(cfg).1).unwrap_or(u32::MAX)
    };
    let global = newest_exec_in(storage, &cfg.glbl_dir, |exec| {
        files::any_in_global(&Dirs::on(Arc::clone(storage), cfg, exec), &ranks)
    });
    local.max(global)
}

/// The newest execution directory under `root` for which `has` says yes.
fn newest_exec_in(
    storage: &Arc<dyn crate::storage::Storage>,
    root: &std::path::Path,
    has: impl Fn(&str) -> bool,
) -> Option<String> {
    let mut execs: Vec<String> = storage
        .list(root)
        .into_iter()
        .flatten()
        .filter(|e| e.kind == crate::storage::Kind::Dir)
        .map(|e| e.name.to_string_lossy().into_owned())
        .collect();
    execs.sort();
    execs.into_iter().rev().find(|exec| has(exec))
}
