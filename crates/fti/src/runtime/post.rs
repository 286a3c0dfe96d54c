//! Publishing a written checkpoint on every rank, and the work after it: partner copies (L2),
//! Reed-Solomon encoding (L3), the L4 flush, retiring older checkpoints, inline or in the
//! background thread.

use std::path::PathBuf;

use ftiff::raw::FileBlock;
use ftiff::VarSize;

use crate::collective::agree;
use crate::comm::Comm;
use crate::config::Level;
use crate::error::{Result, Step};
use crate::files;
use crate::level::{self, l2, l3, l4, PostProcessed};
use crate::schedule::Team;
use crate::trace::{self, Phase, Tracer};

use super::background::Finished;
use super::heads::Work;
use super::{CheckpointInfo, Fti};

impl Fti {
    /// Publishes a written checkpoint file on every rank (collective): at L2 first sets
    /// `ptFs` and sends the file to the right partner while receiving the left partner's
    /// copy; then each rank publishes its files; only once every rank has, older checkpoints
    /// are retired. An L4 checkpoint written locally (`inline_l4 = 0`) is then flushed to the
    /// global directory the same way. A partner copy made while the file was written
    /// (`streamed`) is published with it instead. Returns the published path and file block.
    pub(super) fn publish_checkpoint(
        &mut self,
        id: i32,
        (level, write_level): (Level, Level),
        (pending, streamed): (files::Pending, Option<files::Pending>),
        fb: FileBlock,
        vars: &[VarSize],
    ) -> Result<(PathBuf, FileBlock)> {
        let keep = self.keep();
        trace::with(&mut self.tracer, &self.messages, |t| {
            t.begin(Phase::Publish)
        });
        // Post-processing in the background thread (inline_l2 = 0, inline_l4 = 0), when the
        // run has a communicator for it, or by the head.
        let to_head = self.has_head();
        let background = self.background.can_post_process() || to_head;
        let defer = background && !self.cfg.inline_l2;
        let encode_by_head = to_head && write_level == Level::L3 && !self.cfg.inline_l3;
        let (done, max_fs) = match streamed {
            Some(copy) => {
                let done = PostProcessed {
                    redundancy: Some(copy),
                    fb,
                    deferred: None,
                };
                (Ok(done), None)
            }
            None => self.post_process_level((id, write_level), &pending, fb, defer, encode_by_head),
        };
        let PostProcessed {
            redundancy: copy,
            fb,
            deferred: partner,
        } = done?;
        let files = std::iter::once(pending).chain(copy).collect();
        let local = files::publish_all(&self.dirs, files).map(|mut paths| paths.remove(0));
        let mut path = agree(&*self.comm, Step::Publish, local)?;
        let encoded = !encode_by_head;
        crate::io::commit(
            &*self.comm,
            &self.dirs,
            (id, write_level, encoded),
            &fb,
            vars,
        )?;
        trace::with(&mut self.tracer, &self.messages, |t| t.end(Phase::Publish));
        if let Some(max_fs) = max_fs {
            // The head encodes, then retires older checkpoints.
            self.hand_to_head(id, Work::Encode { max_fs }, &path)?;
            return Ok((path, fb));
        }
        if let Some(plan) = partner {
            // Every rank's own file is published: the partner copies follow in the background,
            // and only then are older checkpoints retired.
            if to_head {
                self.hand_to_head(id, Work::PartnerCopies(plan), &path)?;
                return Ok((path, fb));
            }
            let (dirs, own) = (self.dirs.clone(), path.clone());
            self.spawn_post(move |comm| l2::copy_deferred(comm, &dirs, id, &plan, &own, keep));
            return Ok((path, fb));
        }
        let retired = files::retire(&self.dirs, write_level, id, keep, true);
        if write_level != level && to_head {
            // Every head at this position takes part in the flush: the job goes whatever
            // this rank's retirement did.
            self.hand_to_head(id, Work::Flush, &path)?;
            retired?;
            return Ok((self.dirs.level_dir(level).join(self.dirs.file_name(id)), fb));
        }
        retired?;
        if write_level != level {
            if background {
                let (dirs, local) = (self.dirs.clone(), path.clone());
                path = self.dirs.level_dir(level).join(self.dirs.file_name(id));
                let retire_local = !self.cfg.dcp;
                self.spawn_post(move |comm| {
                    l4::flush(comm, &dirs, (id, &local), keep, retire_local).map(|_| ())
                });
            } else {
                trace::with(&mut self.tracer, &self.messages, |t| t.begin(Phase::Flush));
                path = l4::flush(&*self.comm, &self.dirs, (id, &path), keep, !self.cfg.dcp)?;
                trace::with(&mut self.tracer, &self.messages, |t| t.end(Phase::Flush));
            }
        }
        Ok((path, fb))
    }

    /// The level's redundancy (L2's partner copy, L3's encoding), traced. With
    /// `encode_by_head`, L3 only sets `maxFs` (returned): the head encodes.
    fn post_process_level(
        &mut self,
        (id, write_level): (i32, Level),
        pending: &files::Pending,
        fb: FileBlock,
        defer: bool,
        encode_by_head: bool,
    ) -> (Result<PostProcessed>, Option<u64>) {
        let phase = match write_level {
            Level::L2 => Some(Phase::Partner),
            Level::L3 => Some(Phase::Encode),
            _ => None,
        };
        if let Some(phase) = phase {
            trace::with(&mut self.tracer, &self.messages, |t| t.begin(phase));
        }
        let team = Team {
            comm: &*self.comm,
            topology: &self.topology,
            dirs: &self.dirs,
            rank: self.cfg.rank,
        };
        let done = if encode_by_head {
            let (fb, max_fs) = l3::set_max_fs(team, pending, fb);
            let fb = agree(&*self.comm, Step::L3Encode, fb);
            let done = fb.map(|fb| PostProcessed {
                redundancy: None,
                fb,
                deferred: None,
            });
            (done, Some(max_fs))
        } else {
            let done = level::post_process(write_level, team, id, pending, fb, defer);
            (done, None)
        };
        if let Some(phase) = phase {
            trace::with(&mut self.tracer, &self.messages, |t| t.end(phase));
        }
        done
    }

    /// Runs post-processing in the background thread with the background communicator; the
    /// next call that needs the files or the ranks waits for it ([`Fti::wait`]).
    pub(super) fn spawn_post(
        &mut self,
        job: impl FnOnce(&dyn Comm) -> Result<()> + Send + 'static,
    ) {
        let spec = self.tracer.as_ref().and_then(Tracer::spec);
        self.background.post_process(job, spec, &self.messages);
    }

    /// Whether post-processing runs in the background thread (asked by `inline_l2 = 0` or
    /// `inline_l4 = 0`, and possible in this run).
    pub fn background_post_processing(&self) -> bool {
        self.background.has_comm()
    }

    /// Waits for the post-processing of the last checkpoint (L2 partner copies with
    /// `inline_l2 = 0`, the L4 flush with `inline_l4 = 0`) and returns its outcome. Until it
    /// is done the checkpoint is recoverable from the ranks' own files; the previous checkpoint
    /// is retired only after it. Every call that writes or recovers checkpoints waits first.
    ///
    /// With `async_ckpt = 1` it also completes the checkpoint in flight: once it returns Ok,
    /// that checkpoint is published by every rank (and counts: [`Fti::last_checkpoint`]); an
    /// error of its background work is returned here (and by the next checkpoint call).
    pub fn wait(&mut self) -> Result<()> {
        self.wait_for_head()?;
        match self.background.finish()? {
            Finished::Nothing => Ok(()),
            Finished::PostProcessed(done) => done,
            Finished::Published(f, Ok((fb, recorded))) => {
                let info = CheckpointInfo {
                    timestamp: fb.timestamp,
                    ..f.info
                };
                if recorded {
                    self.restart_record_pending = false;
                }
                let how = format!(
                    "asynchronous: the application was stopped {:.3} s",
                    f.stopped.as_secs_f64()
                );
                self.say_taken(&info, f.started.elapsed(), &how);
                self.last = Some(info);
                Ok(())
            }
            Finished::Published(f, Err(e)) => {
                self.say_failed(f.info.id, f.info.level);
                Err(e)
            }
            // A deferred checkpoint: every rank takes part in its collective steps, a rank
            // whose write failed too (it reports its error there).
            Finished::Written(f, write_level, written) => {
                self.complete_deferred(f, write_level, written)?;
                // Its publication may have left post-processing in the background.
                self.wait()
            }
        }
    }

    /// [`Fti::wait`], traced as the `wait` phase when there is work to wait for: the time a
    /// checkpoint call spends on the previous one.
    pub(super) fn wait_traced(&mut self) -> Result<()> {
        if !self.background.busy() && !self.head_busy() {
            return Ok(());
        }
        trace::with(&mut self.tracer, &self.messages, |t| t.begin(Phase::Wait));
        let waited = self.wait();
        trace::with(&mut self.tracer, &self.messages, |t| t.end(Phase::Wait));
        waited
    }
}
