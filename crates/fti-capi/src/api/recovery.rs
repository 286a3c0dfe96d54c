//! The session's recovery (FTI_Recover, FTI_RecoverVar, the roll-back of a restart that was
//! not recovered), FTI_Snapshot and incremental checkpoints (FTI_InitICP, FTI_AddVarICP,
//! FTI_FinalizeICP).

use std::ffi::c_int;

use fti::{Level, Status, Var};

use super::{refused, runtime, Fail, Icp, Outcome, Session};
use crate::comm;
use crate::data::{with_var, with_vars};
use crate::message;
use crate::snapshot::Tick;
use crate::{Failure, FTI_SCES};

impl Session {
    /// The runtime writes a new checkpoint only once the restart is recovered, while FTI lets
    /// a restart that recovered with FTI_RecoverVar (or not at all) checkpoint: the runtime's
    /// restart is then completed into scratch buffers sized from the checkpoint, leaving the
    /// application's data alone, so that the new checkpoint continues the restart's file
    /// structure as FTI's does.
    pub(super) fn end_runtime_restart(&mut self) -> Result<(), Failure> {
        let Status::Restart(info) = self.fti.status() else {
            return Ok(());
        };
        let info = info.clone();
        let closing = "completing the restart before a new checkpoint";
        let stored = self.fti.stored_vars(&info).map_err(runtime(closing))?;
        let mut scratch: Vec<(c_int, Vec<u8>)> = stored
            .iter()
            .map(|v| (v.id, vec![0u8; v.size as usize]))
            .collect();
        let mut vars: Vec<Var<'_>> = scratch
            .iter_mut()
            .map(|(id, bytes)| Var::bytes(*id, bytes))
            .collect();
        self.fti.recover(&mut vars).map_err(runtime(closing))?;
        Ok(())
    }

    /// # Safety
    /// The protected buffers are valid.
    pub(super) unsafe fn recover(&mut self) -> Outcome {
        if self.lost_restart {
            return Err(refused("No checkpoint files to make recovery."));
        }
        if matches!(self.fti.status(), Status::Restart(_)) {
            let fti = &mut self.fti;
            // SAFETY: the caller's contract.
            unsafe {
                with_vars(&self.datasets, true, |vars| {
                    fti.recover(vars).map_err(runtime("FTI_Recover"))
                })
            }
            .map_err(Fail::nrec)?;
        } else {
            // SAFETY: the caller's contract.
            unsafe { self.roll_back() }?;
        }
        self.reco = 0;
        Ok(FTI_SCES)
    }

    /// FTI_Recover outside a restart: back to this run's last checkpoint, checked as FTI
    /// checks a restart (same number of datasets, same ids and sizes in protect order).
    ///
    /// # Safety
    /// The protected buffers are valid.
    pub(super) unsafe fn roll_back(&mut self) -> Result<(), Fail> {
        // An asynchronous checkpoint in flight is the last one once complete.
        self.fti
            .wait()
            .map_err(runtime("FTI_Recover"))
            .map_err(Fail::nrec)?;
        let last = self.fti.last_checkpoint().cloned().ok_or_else(|| {
            Fail::nrec(Failure::Refused(
                "no checkpoint to recover: this run is not a restart and has taken none".into(),
            ))
        })?;
        let stored: Vec<(c_int, u64)> = self
            .fti
            .stored_vars(&last)
            .map_err(runtime("FTI_Recover"))
            .map_err(Fail::nrec)?
            .iter()
            .map(|v| (v.id, v.size))
            .collect();
        if stored.len() != self.datasets.len() {
            return Err(Fail::nrec(Failure::Refused(format!(
                "Checkpoint has {} protected variables, but FTI protects {}.",
                stored.len(),
                self.datasets.len()
            ))));
        }
        for (&(id, size), d) in stored.iter().zip(&self.datasets) {
            if id != d.id || size != d.size() as u64 {
                return Err(Fail::nrec(Failure::Dataset {
                    id: d.id,
                    what: format!(
                        "cannot recover {size} bytes of variable {id} into it ({} bytes)",
                        d.size()
                    ),
                }));
            }
        }
        for d in &self.datasets {
            let fti = &mut self.fti;
            // SAFETY: the caller's contract.
            unsafe {
                with_var(d, |v| {
                    fti.recover_var_from(Some(last.id), v)
                        .map_err(runtime("FTI_Recover"))
                })
            }
            .map_err(Fail::nrec)?;
        }
        Ok(())
    }

    /// # Safety
    /// The protected buffers are valid.
    pub(super) unsafe fn recover_var(&mut self, id: c_int) -> Outcome {
        if self.reco == 0 {
            return Ok(FTI_SCES);
        }
        let Some(d) = self.dataset(id).cloned() else {
            return Err(Fail::nrec(Failure::Dataset {
                id,
                what: "is not protected: nothing to recover it into".into(),
            }));
        };
        let fti = &mut self.fti;
        let restarting = matches!(fti.status(), Status::Restart(_));
        // An asynchronous checkpoint in flight is the last one once complete.
        fti.wait()
            .map_err(runtime("FTI_RecoverVar"))
            .map_err(Fail::nrec)?;
        let last = fti.last_checkpoint().map(|c| c.id);
        // SAFETY: the caller's contract.
        unsafe {
            with_var(&d, |v| {
                if restarting {
                    fti.recover_var(v)
                } else {
                    // The restart was completed by a checkpoint: the newest checkpoint holds
                    // the data FTI would read.
                    fti.recover_var_from(last, v).map(drop)
                }
                .map_err(runtime("FTI_RecoverVar"))
            })
        }
        .map_err(Fail::nrec)?;
        Ok(FTI_SCES)
    }

    /// # Safety
    /// The protected buffers are valid.
    pub(super) unsafe fn snapshot(&mut self) -> Outcome {
        if self.reco != 0 {
            // SAFETY: the caller's contract.
            return unsafe { self.recover() };
        }
        let comms = &self.comms;
        let tick = self.clock.tick(comm::now(), &mut |x| comms.mean(x));
        if let Some(line) = self.clock.resync.take() {
            message::debug(&line);
        }
        let Tick::Checked(due) = tick else {
            return Ok(FTI_SCES);
        };
        let result = match due {
            None => Ok(FTI_SCES),
            Some(level) => {
                let id = self.snapshot_id;
                // SAFETY: the caller's contract.
                let taken = unsafe { self.checkpoint(id, c_int::from(level.number())) };
                if taken.is_ok() {
                    self.snapshot_id = self.snapshot_id.saturating_add(1);
                }
                taken
            }
        };
        self.clock.restart_timer(comm::now());
        result
    }

    pub(super) fn init_icp(&mut self, id: c_int, level: c_int) -> Outcome {
        self.icp = Icp::Failed;
        let level = Level::from_number(level).ok_or_else(|| {
            refused(format!(
                "Invalid level id! Aborting checkpoint creation (FTI_InitICP({id}, {level}))"
            ))
        })?;
        self.end_runtime_restart()?;
        let sizes: Vec<ftiff::VarSize> = self
            .datasets
            .iter()
            .map(|d| ftiff::VarSize {
                id: d.id,
                size: d.size() as u64,
            })
            .collect();
        self.fti
            .init_icp(id, level, &sizes)
            .map_err(runtime("FTI_InitICP"))?;
        self.icp = Icp::Open(Vec::new());
        Ok(FTI_SCES)
    }

    /// # Safety
    /// The dataset's buffer is valid.
    pub(super) unsafe fn add_var_icp(&mut self, id: c_int) -> Outcome {
        let written = match &mut self.icp {
            Icp::Inactive => return Ok(FTI_SCES),
            Icp::Failed => return Err(refused("FTI_AddVarICP: FTI_InitICP did not succeed")),
            Icp::Open(written) => written,
        };
        let Some(d) = self.datasets.iter().find(|d| d.id == id) else {
            return Err(refused(format!(
                "FTI_AddVarICP: dataset ID: {id} is invalid!"
            )));
        };
        if written.contains(&id) {
            return Err(refused(format!(
                "Dataset with ID: {id} was already successfully written!"
            )));
        }
        let fti = &mut self.fti;
        // SAFETY: the caller's contract.
        unsafe { with_var(d, |v| fti.add_var_icp(v).map_err(runtime("FTI_AddVarICP"))) }?;
        written.push(id);
        Ok(FTI_SCES)
    }

    pub(super) fn finalize_icp(&mut self) -> Outcome {
        match std::mem::replace(&mut self.icp, Icp::Inactive) {
            Icp::Inactive => Ok(FTI_SCES),
            Icp::Failed => Err(refused("FTI_FinalizeICP: FTI_InitICP did not succeed")),
            Icp::Open(_) => {
                self.fti
                    .finalize_icp()
                    .map_err(runtime("FTI_FinalizeICP"))?;
                self.lost_restart = false;
                Ok(FTI_SCES)
            }
        }
    }
}
