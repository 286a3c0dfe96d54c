//! Incremental checkpoints (`FTI_InitICP`, `FTI_AddVarICP`, `FTI_FinalizeICP`).

use std::time::Instant;

use ftiff::{Layout, VarSize};

use crate::collective::agree;
use crate::config::Level;
use crate::error::{Error, Misuse, Result, Step};
use crate::files;
use crate::trace::{self, Phase, Tracer};
use crate::var::Var;

use super::{CheckpointInfo, Fti, Icp, Status};

impl Fti {
    /// Opens incremental checkpoint `id` at `level` (FTI's `FTI_InitICP`) for variables of these
    /// ids and sizes, in protect order. Each variable is then written by
    /// [`Fti::add_var_icp`] as soon as the application is done with it, in any order; the
    /// checkpoint exists only after [`Fti::finalize_icp`] (a crash before keeps the previous
    /// one).
    pub fn init_icp(&mut self, id: i32, level: Level, vars: &[VarSize]) -> Result<()> {
        self.check_not_head()?;
        self.release_maps();
        self.wait()?;
        self.check_level(level)?;
        crate::io::check_incremental(&self.dirs.io)?;
        if self.icp.is_some() {
            return Err(Error::State(Misuse::IncrementalAlreadyOpen));
        }
        if matches!(self.recovery.status, Status::Restart(_)) {
            return Err(Error::State(Misuse::NotRecovered));
        }
        let layout = Layout::plan(self.layout.as_ref(), vars)?;
        let write_level = self.write_level(level);
        let mut opts = self.write_options();
        opts.table = None;
        let writer = ftiff::Incremental::new(layout, opts)?;
        let pending = files::begin(&self.dirs, write_level, id, None)?;
        trace::with(&mut self.tracer, &self.messages, |t| {
            t.begin_checkpoint(id, level)
        });
        trace::with(&mut self.tracer, &self.messages, |t| t.begin(Phase::Write));
        self.icp = Some(Icp {
            id,
            level,
            write_level,
            writer,
            pending,
            started: Instant::now(),
        });
        Ok(())
    }

    /// Writes one variable of the open incremental checkpoint (`FTI_AddVarICP`); its bytes
    /// are in the file when this returns.
    pub fn add_var_icp(&mut self, var: &Var<'_>) -> Result<()> {
        let icp = self
            .icp
            .as_mut()
            .ok_or(Error::State(Misuse::NoIncremental))?;
        let idx = icp
            .writer
            .layout()
            .vars()
            .iter()
            .position(|v| v.id == var.id)
            .filter(|&i| !icp.writer.layout().is_removed(i as u32))
            .ok_or_else(|| Error::Variable {
                id: var.id,
                what: "not part of this incremental checkpoint".into(),
            })?;
        let path = icp.pending.path.clone();
        icp.writer
            .add(&icp.pending.file, idx as u32, var.bytes)
            .map_err(|e| Error::Format(e.with_path(&path)))
    }

    /// Commits the open incremental checkpoint (`FTI_FinalizeICP`): every variable must have
    /// been added. The file is then published like any other.
    pub fn finalize_icp(&mut self) -> Result<CheckpointInfo> {
        let Some(icp) = self.icp.take() else {
            // Another rank may have its incremental checkpoint open: fail together.
            return agree(
                &*self.comm,
                Step::WriteIncremental,
                Err(Error::State(Misuse::NoIncremental)),
            );
        };
        let result = self.finish_icp(icp);
        if result.is_err() {
            trace::with(&mut self.tracer, &self.messages, Tracer::close_all);
        }
        result
    }

    pub(super) fn finish_icp(&mut self, icp: Icp) -> Result<CheckpointInfo> {
        let Icp {
            id,
            level,
            write_level,
            writer,
            pending,
            started,
        } = icp;
        let layout = writer.layout().clone();
        let written = agree(
            &*self.comm,
            Step::WriteIncremental,
            writer
                .finish(&pending.file, &|_| {})
                .map_err(|e| Error::Format(e.with_path(&pending.path))),
        )?;
        trace::with(&mut self.tracer, &self.messages, |t| t.end(Phase::Write));
        let (path, fb) = self.publish_checkpoint(
            id,
            (level, write_level),
            (pending, None),
            written.fb,
            &layout.vars(),
        )?;
        let written = ftiff::Written { fb, ..written };
        trace::with(&mut self.tracer, &self.messages, |t| {
            t.end_checkpoint(id, level, layout.file_size())
        });
        // The next differential checkpoint has no block table of this file: it writes in full.
        self.dcp_files.clear();
        let info = CheckpointInfo {
            id,
            level,
            size: layout.file_size(),
            timestamp: written.fb.timestamp,
            bytes_written: written.bytes_written,
            path,
        };
        self.after_checkpoint(&info, layout, started)?;
        Ok(info)
    }
}
