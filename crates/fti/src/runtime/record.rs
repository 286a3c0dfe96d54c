//! The restart record: `[restart] failure` and `exec_id` written back into the config file
//! (rank 0, when the config was read from a file), as FTI does, so that a program started
//! again with the same file restarts. Written after a run's first checkpoint (on the
//! application's thread, or by the background thread for an asynchronous checkpoint) and at
//! the end of the run, always through [`RestartRecord::write`].

use std::path::PathBuf;

use crate::collective::agree;
use crate::config;
use crate::error::{Error, Result, Step};
use crate::storage::Storage;

use super::Fti;

/// Where the restart record goes: a config file, for one execution.
pub(super) struct RestartRecord {
    path: PathBuf,
    exec_id: String,
}

impl RestartRecord {
    /// Writes `failure` and the execution id into the config file.
    pub(super) fn write(&self, storage: &dyn Storage, failure: u8) -> Result<()> {
        config::record_restart(storage, &self.path, failure, &self.exec_id).map_err(|err| {
            Error::RestartRecord {
                path: self.path.clone(),
                exec_id: self.exec_id.clone(),
                err: Box::new(err),
            }
        })
    }
}

impl Fti {
    /// This rank's restart record: rank 0's, when the config was read from a file.
    pub(super) fn restart_record(&self) -> Option<RestartRecord> {
        let path = self.cfg.path.clone().filter(|_| self.cfg.rank == 0)?;
        Some(RestartRecord {
            path,
            exec_id: self.exec_id.clone(),
        })
    }

    /// Writes `failure` and `exec_id` back into the config file (rank 0, when read from one).
    pub(super) fn record_in_config(&mut self, failure: u8) -> Result<()> {
        if let Some(record) = self.restart_record() {
            self.messages.debug(&format!(
                "Updating configuration file ({})...",
                record.path.display()
            ));
            record.write(&*self.dirs.storage, failure)?;
        }
        if self.cfg.rank == 0 {
            self.cfg.failure = Some(failure);
        }
        Ok(())
    }

    /// After the first checkpoint of a fresh run, the record that makes a restart find it
    /// (collective). Until the config file says `failure = 1` for this execution, a restart
    /// would start fresh beside valid checkpoints: every rank fails the checkpoint until rank
    /// 0 has made the record durable (its files stay published).
    pub(super) fn record_first_checkpoint(&mut self) -> Result<()> {
        if self.restart_record_pending {
            let recorded = self.record_in_config(1);
            let step = Step::RecordRestart(self.cfg.path.clone());
            agree(&*self.comm, step, recorded)?;
            self.restart_record_pending = false;
        }
        Ok(())
    }
}
