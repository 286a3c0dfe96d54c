//! Recovery of the variables: all of them from the restart's checkpoint, one of them from it
//! or from any kept checkpoint (verified in full first).

use std::path::{Path, PathBuf};

use crate::io::Stored;

use crate::error::{Candidate, Error, Misuse, Result};
use crate::files::{self, Found};
use crate::trace::{self, Phase, Tracer};
use crate::var::Var;

use super::{open_verified, CheckpointInfo, Fti, Restart, Status};

impl Fti {
    /// Restores every variable from the restart's checkpoint. The variables must be the ones
    /// checkpointed: same count, same ids in the same order, same byte sizes; this is checked
    /// for all of them before any byte is copied. The file's hashes were all verified when
    /// [`Fti::init`] chose it.
    pub fn recover(&mut self, vars: &mut [Var<'_>]) -> Result<CheckpointInfo> {
        let restart = self
            .recovery
            .restart
            .as_ref()
            .ok_or(Error::State(Misuse::NotARestart("recover")))?;
        let ckpt = restart.ckpt()?;
        let all = ckpt.vars();
        let stored: Vec<&ftiff::VarInfo> = all.iter().filter(|v| !v.removed).collect();
        if stored.len() != vars.len() {
            return Err(Error::Variable {
                id: vars.get(stored.len()).or(vars.last()).map_or(-1, |v| v.id),
                what: format!(
                    "the checkpoint holds {} variables, {} are protected",
                    stored.len(),
                    vars.len()
                ),
            });
        }
        for (s, v) in stored.iter().zip(vars.iter()) {
            check_matches(s, v)?;
        }
        // Every hash was verified when the checkpoint was chosen (both MD5 streams in
        // parallel), so recovery only copies.
        trace::with(&mut self.tracer, &self.messages, |t| {
            t.begin(Phase::Recover)
        });
        let copied = vars
            .iter_mut()
            .try_for_each(|v| ckpt.copy_var_into(v.id, v.bytes, &restart.info.path));
        if copied.is_err() {
            trace::with(&mut self.tracer, &self.messages, Tracer::close_all);
        }
        copied?;
        let info = restart.info.clone();
        trace::with(&mut self.tracer, &self.messages, |t| t.end(Phase::Recover));
        self.finish_recovery(&info)?;
        Ok(info)
    }

    /// Restores one variable from the restart's checkpoint (by id), leaving the others and the
    /// restart status alone, as `FTI_RecoverVar` does.
    pub fn recover_var(&mut self, var: &mut Var<'_>) -> Result<()> {
        let restart = self
            .recovery
            .restart
            .as_ref()
            .ok_or(Error::State(Misuse::NotARestart("recover_var")))?;
        let ckpt = restart.ckpt()?;
        matching_var(&ckpt, var)?;
        ckpt.copy_var_into(var.id, var.bytes, &restart.info.path)
    }

    /// Recovers one variable from the newest checkpoint of this run (or the one with id
    /// `ckpt_id`) that holds it intact, in any level or archive. The whole file is verified
    /// first (every hash, as at restart): `VMD.id` and `VMD.chunksize` are covered only by the
    /// file checksum, so checking the variable's own chunks could return another variable's
    /// bytes or a cut one. The last file verified is kept, so recovering several variables of
    /// one checkpoint reads it once. Works in any run state and leaves the status alone.
    pub fn recover_var_from(
        &mut self,
        ckpt_id: Option<i32>,
        var: &mut Var<'_>,
    ) -> Result<CheckpointInfo> {
        self.wait()?;
        let mut tried = Vec::new();
        for found in files::find_checkpoints(&self.dirs) {
            if ckpt_id.is_some_and(|id| id != found.id) {
                continue;
            }
            match self.read_one_var(&found, var) {
                Ok(info) => return Ok(info),
                Err(e) => tried.push(Candidate {
                    id: found.id,
                    level: found.level,
                    path: found.path.clone(),
                    err: Box::new(e),
                }),
            }
        }
        Err(Error::NothingToRecover {
            rank: self.cfg.rank,
            tried,
        })
    }

    /// Reads one variable from a candidate file verified in full by this process (now, or
    /// earlier if the file has not changed since).
    pub(super) fn read_one_var(
        &mut self,
        found: &Found,
        var: &mut Var<'_>,
    ) -> Result<CheckpointInfo> {
        self.with_verified(found, |ckpt| {
            matching_var(ckpt, var)?;
            ckpt.copy_var_into(var.id, var.bytes, &found.path)?;
            Ok(found_info(found, ckpt))
        })
    }

    /// The variables `(id, size)` of checkpoint `info` (the restart's or one on disk), in
    /// protect order, removed ones left out: from the file itself (FTI-FF) or its meta data
    /// (POSIX). The file is verified in full first, and kept for single-variable recovery.
    pub fn stored_vars(&mut self, info: &CheckpointInfo) -> Result<Vec<ftiff::VarSize>> {
        let found = Found {
            path: info.path.clone(),
            id: info.id,
            level: info.level,
            archived: false,
        };
        self.with_verified(&found, |ckpt| {
            Ok(ckpt
                .vars()
                .into_iter()
                .filter(|v| !v.removed)
                .map(|v| ftiff::VarSize {
                    id: v.id,
                    size: v.size,
                })
                .collect())
        })
    }

    /// Calls `f` with the content of `found`, verified in full by this process: the restart's
    /// checkpoint (verified at init), or the file verified last if it has not changed since,
    /// or verified now.
    fn with_verified<T>(
        &mut self,
        found: &Found,
        f: impl FnOnce(&Stored<'_>) -> Result<T>,
    ) -> Result<T> {
        if let Some(r) = self
            .recovery
            .restart
            .as_ref()
            .filter(|r| r.info.path == found.path)
        {
            return f(&r.ckpt()?);
        }
        let key = FileKey::of(&*self.dirs.storage, &found.path);
        let cached = self
            .recovery
            .verified
            .as_ref()
            .is_some_and(|v| Some(&v.key) == key.as_ref());
        if !cached {
            self.recovery.verified = None;
            let file = open_verified(&self.dirs, found, &|_| {})?;
            self.recovery.verified = key.map(|key| VerifiedFile { key, file });
        }
        let Some(v) = &self.recovery.verified else {
            return Err(Error::Io {
                path: found.path.clone(),
                err: std::io::Error::other("the file changed while it was read"),
            });
        };
        f(&v.file.ckpt()?)
    }

    pub(super) fn finish_recovery(&mut self, info: &CheckpointInfo) -> Result<()> {
        if let Some(r) = self.recovery.restart.take() {
            self.layout = Some(r.ckpt()?.layout()?);
        }
        // Restarting from a chosen older checkpoint abandons the newer ones: they belong to
        // a timeline this run no longer continues, and keeping them would make a later
        // restart (or pruning by id) pick them over this run's own checkpoints.
        if self.cfg.restart_id.is_some() {
            for newer in files::find_checkpoints(&self.dirs)
                .into_iter()
                .filter(|f| f.id > info.id)
            {
                self.messages.warn(&format!(
                    "checkpoint {} ({}) is newer than the chosen restart point: removed",
                    newer.id, newer.level
                ));
                files::remove_file(&*self.dirs.storage, &newer.path)?;
            }
            self.cfg.restart_id = None;
        }
        self.last = Some(info.clone());
        // The config already names this execution for a restart.
        self.restart_record_pending = false;
        self.recovery.status = Status::Recovered(info.clone());
        self.messages.info(&format!(
            "recovered checkpoint {} from {}",
            info.id, info.level
        ));
        Ok(())
    }
}

pub(super) fn check_matches(stored: &ftiff::VarInfo, var: &Var<'_>) -> Result<()> {
    if stored.id != var.id {
        return Err(Error::Variable {
            id: var.id,
            what: format!(
                "protected at position {} where the checkpoint has id {}",
                stored.idx, stored.id
            ),
        });
    }
    if stored.size != var.size() {
        return Err(Error::SizeMismatch {
            id: var.id,
            stored: stored.size,
            size: var.size(),
        });
    }
    Ok(())
}

/// What identifies the content of a file on disk between two looks: a file replaced, moved
/// back or rewritten since has another inode, size or modification time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct FileKey {
    path: PathBuf,
    stat: crate::storage::Stat,
}

impl FileKey {
    pub(super) fn of(storage: &dyn crate::storage::Storage, path: &Path) -> Option<FileKey> {
        Some(FileKey {
            path: path.to_path_buf(),
            stat: storage.stat(path).ok()?,
        })
    }
}

/// A checkpoint file verified in full by this process, kept for single-variable recovery:
/// recovering the variables of one checkpoint one by one reads the file once.
pub(super) struct VerifiedFile {
    key: FileKey,
    file: Restart,
}

/// The protected (not removed) variable of `ckpt` with `var`'s id and size.
pub(super) fn matching_var(ckpt: &Stored<'_>, var: &Var<'_>) -> Result<()> {
    let stored = ckpt
        .var(var.id)
        .filter(|v| !v.removed)
        .ok_or_else(|| Error::Variable {
            id: var.id,
            what: "not in the checkpoint".into(),
        })?;
    check_matches(&stored, var)
}

/// What is known of a checkpoint found on disk.
pub(super) fn found_info(found: &Found, ckpt: &Stored<'_>) -> CheckpointInfo {
    CheckpointInfo {
        id: found.id,
        level: found.level,
        path: found.path.clone(),
        size: ckpt.fs(),
        timestamp: ckpt.timestamp(),
        bytes_written: 0,
    }
}
