//! The end of a run: the last checkpoint kept in L4 or every file removed, and the restart
//! record in the config file.

use crate::collective::agree;
use crate::config::Level;
use crate::error::{Error, Result, Step};
use crate::files;
use crate::level::l4;
use crate::trace::{self, Phase};

use super::Fti;

impl Fti {
    /// Ends the run. With `keep_last_ckpt`, the last checkpoint is kept in L4 (copied there
    /// if needed), local files are removed and the config records `failure = 2`; otherwise
    /// every checkpoint file and directory of this execution is removed and the config records
    /// `failure = 0`, as FTI does.
    ///
    /// On a head, serves its node until the application finalizes ([`Fti::serve_as_head`]);
    /// an application rank with heads then releases its head, also when finalizing failed.
    pub fn finalize(mut self) -> Result<()> {
        if self.role() == super::Role::Head {
            return self.serve_as_head();
        }
        let result = self.finalize_files();
        self.release_head();
        if let Some(t) = self.tracer.take() {
            t.finish().map_err(Error::Trace)?;
        }
        if result.is_ok() {
            self.messages.info("FTI has been finalized.");
        }
        result
    }

    pub(super) fn finalize_files(&mut self) -> Result<()> {
        self.wait()?;
        // A restart that was never recovered still has its checkpoint to keep.
        let last = self
            .last
            .clone()
            .or_else(|| self.recovery.restart.as_ref().map(|r| r.info.clone()));
        if self.cfg.keep_last_ckpt {
            if let Some(last) = last {
                // The local files go only once every rank's copy is in L4: a crash in between
                // leaves the checkpoint complete at one level or the other.
                if last.level != Level::L4 {
                    trace::with(&mut self.tracer, &self.messages, |t| t.begin(Phase::Flush));
                    let local = (last.id, last.path.as_path());
                    let done = l4::copy_in_all(&*self.comm, &self.dirs, local, Step::KeepLast);
                    trace::with(&mut self.tracer, &self.messages, |t| t.end(Phase::Flush));
                    done?;
                    crate::io::copy_meta(&*self.comm, &self.dirs, last.level, Level::L4)?;
                }
                files::retire(&self.dirs, Level::L4, last.id, 1, false)?;
                self.recovery.restart = None;
                files::remove_rank_files(&self.dirs, true)?;
                self.record_in_config(2)?;
                return Ok(());
            }
        }
        self.recovery.restart = None;
        // The record says "fresh" before any file goes: a crash in between leaves a fresh
        // start with files to spare, never a restart record with nothing to restart from.
        let recorded = self.record_in_config(0);
        agree(&*self.comm, Step::RecordEnd, recorded)?;
        files::remove_rank_files(&self.dirs, false)?;
        // Every rank is done with the run's directories before the meta directory goes: only
        // the file the runtime wrote there, then the directory if nothing else is in it.
        self.comm.barrier();
        if self.cfg.rank == 0 {
            files::remove_meta_files(&self.dirs)?;
        }
        Ok(())
    }

    /// `Topology.fti` in the meta directory, as FTI 1.1 writes it (node index = node name),
    /// from which a restart learns the rank count without listing every rank's files (with a
    /// partial last node, which FTI does not allow, the count is recorded in it).
    pub(super) fn write_topology(&self) -> Result<()> {
        let st = &*self.dirs.storage;
        files::create_dir_durable(st, &self.dirs.meta)?;
        let mut text = crate::io::posix::topology_text(&self.cfg, &self.node_names);
        // Counted as the files number the processes (with heads, each node's head too).
        let (node_size, run) = super::restart::processes(&self.cfg);
        let as_u32 = |n: u64| u32::try_from(n).unwrap_or(u32::MAX);
        text.push_str(&crate::topology::run_text(as_u32(run), as_u32(node_size)));
        files::replace_file(st, &self.dirs.meta.join("Topology.fti"), text.as_bytes())
    }
}
