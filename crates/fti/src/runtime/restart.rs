//! Restart: the checkpoint every rank can recover (agreed newest first), the files rebuilt
//! from partner copies or Reed-Solomon code, and the checks that refuse a restart before
//! anything is written.

use super::*;

impl Fti {
    /// Agrees with the other ranks on the checkpoint to restart from: candidates newest first
    /// (by id, then L1, L2, L3, L4 as FTI tries them); the first that every rank can recover
    /// wins. At L2 a rank whose file is lost or corrupt gets it back from its right partner's
    /// copy (and lost copies are rebuilt too).
    pub(super) fn find_restart(&mut self) {
        let wanted = self.cfg.restart_id;
        for path in store::irregular(&self.dirs) {
            self.skip(Skipped::NotRegular { path });
        }
        let own = store::find_checkpoints(&self.dirs);
        let copies = store::find_copies(&self.dirs);
        let mine: Vec<(i32, Level)> = own
            .iter()
            .chain(&copies)
            .map(|f| (f.id, f.level))
            .filter(|(id, _)| wanted.is_none_or(|w| w == *id))
            .collect();
        let left = self.topology.place(self.cfg.rank).map(|p| p.left());
        for (id, level) in collective::candidates(&*self.comm, &mine) {
            let mut verified = None;
            let mut said_why = false;
            for found in own.iter().filter(|f| f.id == id && f.level == level) {
                match self.verify_candidate(found) {
                    Ok(r) => {
                        verified = Some(r);
                        break;
                    }
                    Err(why) => {
                        self.skip(why);
                        said_why = true;
                    }
                }
            }
            let owns = collective::gather_holds(
                &*self.comm,
                Holds {
                    own: verified.is_some(),
                    copy: false,
                },
            );
            // The redundancy file this rank keeps (L2 partner copy, L3 RSed) is verified only
            // when a rank needs it: its left partner (L2), any rank of its group (L3).
            let copy_found = copies.iter().find(|c| c.id == id && c.level == level);
            let group: Vec<u32> = self
                .topology
                .place(self.cfg.rank)
                .map_or_else(Vec::new, |p| p.group.clone());
            let needed = match level {
                Level::L2 => left.is_some_and(|l| !owns[l as usize].own),
                Level::L3 => group.iter().any(|&r| !owns[r as usize].own),
                _ => false,
            };
            let copy_ok = match copy_found {
                Some(c) if needed => {
                    let checked = if level == Level::L3 {
                        crate::l3::verify_rsed(&c.path).map(|_| ())
                    } else {
                        open_verified(c, &|_| {})
                            .map(|_| ())
                            .map_err(|e| Error::Format(e.with_path(&c.path)))
                    };
                    match checked {
                        Ok(()) => true,
                        Err(e) => {
                            self.skip(Skipped::RedundancyUnverified(Candidate {
                                id,
                                level,
                                path: c.path.clone(),
                                err: Box::new(e),
                            }));
                            false
                        }
                    }
                }
                found => found.is_some(),
            };
            let holds = collective::gather_holds(
                &*self.comm,
                Holds {
                    own: verified.is_some(),
                    copy: copy_ok,
                },
            );
            let Ok(plan) = restart_plan::plan(level, &holds, &self.topology) else {
                let missing: Vec<u32> = (0..holds.len() as u32)
                    .filter(|&r| !holds[r as usize].own)
                    .collect();
                if said_why && missing == [self.comm.rank()] {
                    continue;
                }
                self.skip(Skipped::Missing { id, level, missing });
                continue;
            };
            let restart = match plan {
                Plan::Own => verified.ok_or(Error::State("planned without a file")),
                Plan::Rebuild {
                    files,
                    copies: lost_copies,
                } if level == Level::L3 => {
                    let own_file = verified
                        .as_ref()
                        .map(|r| (r.info.path.clone(), r.info.size));
                    let max_fs = verified.as_ref().map_or(0, |r| r.max_fs);
                    let rsed = copy_found.filter(|_| copy_ok).map(|c| c.path.clone());
                    let rebuilt =
                        self.rebuild_l3(id, (&files, &lost_copies), own_file, rsed, max_fs);
                    self.recovery_note = Some(format!(
                        "rank(s) {files:?} rebuilt by Reed-Solomon decoding{}",
                        if lost_copies.is_empty() {
                            String::new()
                        } else {
                            format!(", RSed files of rank(s) {lost_copies:?} re-encoded")
                        }
                    ));
                    rebuilt.and_then(|()| self.own_after_rebuild(verified, id, level))
                }
                Plan::Rebuild {
                    files,
                    copies: lost_copies,
                } => {
                    let copy = copy_found.cloned();
                    let own_l2 = own.iter().find(|f| f.id == id && f.level == level).cloned();
                    let rebuilt = l2::rebuild_l2(
                        &*self.comm,
                        &self.dirs,
                        &self.topology,
                        id,
                        (&files, &lost_copies),
                        own_l2.as_ref(),
                        copy.as_ref(),
                    );
                    let note = format!(
                        "rank(s) {files:?} rebuilt from their partners' copies{}",
                        if lost_copies.is_empty() {
                            String::new()
                        } else {
                            format!(", partner copies of rank(s) {lost_copies:?} restored")
                        }
                    );
                    let local = rebuilt.and_then(|_| self.own_after_rebuild(verified, id, level));
                    self.recovery_note = Some(note);
                    local
                }
            };
            match agree(&*self.comm, Step::Recovery, restart) {
                Ok(restart) => {
                    let note = match self.recovery_note.take() {
                        Some(n) => format!("{level}, {n}"),
                        None => format!("{level}, every rank from its own file"),
                    };
                    self.messages.info(&format!(
                        "Recovering successfully from level {} with Ckpt. {id}.",
                        level.number()
                    ));
                    self.messages.info(&format!(
                        "restarting from checkpoint {id} ({note}; {})",
                        restart.info.path.display()
                    ));
                    self.recovery_note = Some(note);
                    self.next_id = id.saturating_add(1);
                    self.status = Status::Restart(restart.info.clone());
                    self.restart = Some(restart);
                    return;
                }
                Err(e) => {
                    self.recovery_note = None;
                    self.skip(Skipped::Failed {
                        id,
                        level,
                        err: Box::new(e),
                    });
                }
            }
        }
        // The fresh run gets its own execution: the files of the one that could not be
        // recovered stay as they are, for the user to inspect or repair.
        let fresh = fresh_exec_id(&self.dirs.storage, &self.cfg, &*self.comm);
        self.messages.warn(&format!(
                "restart requested for execution {} but no checkpoint{} could be recovered by every rank: starting fresh as execution {fresh}",
                self.exec_id,
                wanted.map_or_else(String::new, |id| format!(" with id {id}")),
            ));
        self.dirs = Dirs::on(Arc::clone(&self.dirs.storage), &self.cfg, &fresh);
        self.exec_id = fresh;
    }

    /// This rank's file of a rebuilt checkpoint: the one it verified before, or the one just
    /// rebuilt, verified now.
    pub(super) fn own_after_rebuild(
        &self,
        verified: Option<Restart>,
        id: i32,
        level: Level,
    ) -> Result<Restart> {
        if let Some(r) = verified {
            return Ok(r);
        }
        let found = Found {
            path: self.dirs.level_dir(level).join(self.dirs.file_name(id)),
            id,
            level,
            archived: false,
        };
        open_verified(&found, &|_| {}).map_err(|e| Error::Format(e.with_path(&found.path)))
    }

    /// L3 recovery: every group with a lost file rebuilds it (Reed-Solomon decoding of the
    /// surviving files); lost `RSed` files are encoded again. Collective.
    pub(super) fn rebuild_l3(
        &mut self,
        id: i32,
        (files, lost_copies): (&[u32], &[u32]),
        own: Option<(PathBuf, u64)>,
        rsed: Option<PathBuf>,
        known_max_fs: u64,
    ) -> Result<()> {
        let me = self.cfg.rank;
        let place = self.my_place()?;
        // maxFs: in every surviving Rank file of the group and RSed trailer.
        let rsed_max = rsed
            .as_deref()
            .and_then(|p| crate::l3::verify_rsed(p).ok())
            .map_or(0, |fb| fb.fs.max(0) as u64);
        let all = collective::gather_u64(&*self.comm, known_max_fs.max(rsed_max));
        let max_fs = place
            .group
            .iter()
            .map(|&r| all[r as usize])
            .max()
            .unwrap_or(0);
        let affected = place
            .group
            .iter()
            .any(|r| files.contains(r) || lost_copies.contains(r));
        let local = if affected {
            let new_own = files
                .contains(&me)
                .then(|| store::begin(&self.dirs, Level::L3, id, None))
                .transpose();
            let new_rsed = lost_copies
                .contains(&me)
                .then(|| store::begin_named(&self.dirs, Level::L3, self.dirs.rsed_name(id), None))
                .transpose();
            let held = crate::l3::Held {
                storage: &*self.dirs.storage,
                own: own.as_ref().map(|(p, fs)| (p.as_path(), *fs)),
                rsed: rsed.as_deref(),
            };
            let (o, r) = (
                new_own.as_ref().ok().and_then(Option::as_ref),
                new_rsed.as_ref().ok().and_then(Option::as_ref),
            );
            let lost = (
                place.group.iter().any(|r| files.contains(r)),
                place.group.iter().any(|r| lost_copies.contains(r)),
            );
            let done = crate::l3::rebuild(&*self.comm, &place, &held, max_fs, (o, r), lost);
            done.and_then(|()| {
                let (o, r) = (new_own?, new_rsed?);
                if let Some(p) = o {
                    store::publish_pending(&self.dirs, p)?;
                }
                if let Some(p) = r {
                    store::publish_pending(&self.dirs, p)?;
                }
                Ok(())
            })
        } else {
            Ok(())
        };
        agree(&*self.comm, Step::RebuildL3, local)
    }

    /// Opens and verifies one of this rank's files, with a progress bar for large ones.
    pub(super) fn verify_candidate(&self, found: &Found) -> std::result::Result<Restart, Skipped> {
        let size = std::fs::metadata(&found.path).map_or(0, |m| m.len());
        let bar = self
            .messages
            .progress(format!("verifying checkpoint {}", found.id), size);
        let verified = open_verified(found, &|n| bar.set(n));
        drop(bar);
        verified.map_err(|e| {
            Skipped::Unverified(Candidate {
                id: found.id,
                level: found.level,
                path: found.path.clone(),
                err: Box::new(Error::Format(e)),
            })
        })
    }

    pub(super) fn skip(&mut self, why: Skipped) {
        self.messages.warn(&why.to_string());
        self.skipped.push(why);
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
    let node_size = u64::from(cfg.node_size.max(1));
    let checkpoint = match crate::inventory::rank_count(highest, nodes, node_size) {
        0 => return Ok(()),
        n => n,
    };
    let run = u64::from(cfg.nranks);
    if checkpoint == run {
        return Ok(());
    }
    Err(Error::RankCount {
        exec_id: exec_id.to_owned(),
        checkpoint: u32::try_from(checkpoint).unwrap_or(u32::MAX),
        run: cfg.nranks,
    })
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
    execs
        .into_iter()
        .rev()
        .find(|exec| !store::find_checkpoints(&Dirs::on(Arc::clone(storage), cfg, exec)).is_empty())
}
