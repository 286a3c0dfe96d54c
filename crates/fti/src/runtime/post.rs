//! Publishing a written checkpoint on every rank, and the work after it: partner copies (L2),
//! Reed-Solomon encoding (L3), the L4 flush, retiring older checkpoints, inline or in the
//! background thread.

use super::*;

impl Fti {
    /// Publishes a written checkpoint file on every rank (collective): at L2 first sets
    /// `ptFs` and sends the file to the right partner while receiving the left partner's
    /// copy; then each rank publishes its files; only once every rank has, older checkpoints
    /// are retired. An L4 checkpoint written locally (`inline_l4 = 0`) is then flushed to the
    /// global directory the same way. Returns the published path and file block.
    pub(super) fn publish_checkpoint(
        &mut self,
        id: i32,
        level: Level,
        write_level: Level,
        pending: store::Pending,
        fb: FileBlock,
    ) -> Result<(PathBuf, FileBlock)> {
        let keep = self.keep();
        trace::with(&mut self.tracer, &self.messages, |t| {
            t.begin(Phase::Publish)
        });
        // Post-processing in the background thread (inline_l2 = 0, inline_l4 = 0), when the
        // run has a communicator for it.
        let background = self.bg_comm.is_some();
        let (copy, fb, partner) = match write_level {
            Level::L2 => {
                trace::with(&mut self.tracer, &self.messages, |t| {
                    t.begin(Phase::Partner)
                });
                let planned = self.partner_plan(&pending, fb);
                let done = planned.and_then(|(plan, fb)| {
                    if background && !self.cfg.inline_l2 {
                        return Ok((None, fb, Some(plan)));
                    }
                    let copy = l2::exchange_copies(
                        &*self.comm,
                        &self.dirs,
                        id,
                        &plan,
                        Some((&*pending.file, pending.path.as_path())),
                    );
                    agree(&*self.comm, Step::L2Copy, copy).map(|c| (Some(c), fb, None))
                });
                trace::with(&mut self.tracer, &self.messages, |t| t.end(Phase::Partner));
                done?
            }
            Level::L3 => {
                trace::with(&mut self.tracer, &self.messages, |t| t.begin(Phase::Encode));
                let done = self.encode_l3(id, &pending, fb);
                trace::with(&mut self.tracer, &self.messages, |t| t.end(Phase::Encode));
                let (copy, fb) = done?;
                (copy, fb, None)
            }
            _ => (None, fb, None),
        };
        let files = std::iter::once(pending).chain(copy).collect();
        let local = store::publish_all(&self.dirs, files).map(|mut paths| paths.remove(0));
        let mut path = agree(&*self.comm, Step::Publish, local)?;
        trace::with(&mut self.tracer, &self.messages, |t| t.end(Phase::Publish));
        if let Some(plan) = partner {
            // Every rank's own file is published: the partner copies follow in the background,
            // and only then are older checkpoints retired.
            let (dirs, own) = (self.dirs.clone(), path.clone());
            self.spawn_post(move |comm| {
                let file = dirs
                    .storage
                    .open(&own, false)
                    .map_err(|e| Error::io(&own, e));
                let own_file = file.as_ref().ok().map(|f| (&**f, own.as_path()));
                let copy = l2::exchange_copies(comm, &dirs, id, &plan, own_file);
                let published = file
                    .and(copy)
                    .and_then(|c| store::publish_pending(&dirs, c));
                agree(comm, Step::L2Copy, published)?;
                store::retire(&dirs, Level::L2, id, keep, true)
            });
            return Ok((path, fb));
        }
        store::retire(&self.dirs, write_level, id, keep, true)?;
        if write_level != level {
            let flush = move |comm: &dyn Comm, dirs: &Dirs, local: &Path| -> Result<PathBuf> {
                let done = store::copy_into(dirs, level, id, local)
                    .and_then(|p| store::publish_pending(dirs, p));
                let path = agree(comm, Step::L4Flush, done)?;
                store::retire(dirs, level, id, keep, false)?;
                Ok(path)
            };
            if background {
                let (dirs, local) = (self.dirs.clone(), path.clone());
                path = self.dirs.level_dir(level).join(self.dirs.file_name(id));
                self.spawn_post(move |comm| flush(comm, &dirs, &local).map(|_| ()));
            } else {
                trace::with(&mut self.tracer, &self.messages, |t| t.begin(Phase::Flush));
                path = flush(&*self.comm, &self.dirs, &path)?;
                trace::with(&mut self.tracer, &self.messages, |t| t.end(Phase::Flush));
            }
        }
        Ok((path, fb))
    }

    /// Runs post-processing in the background thread with the background communicator; the
    /// next call that needs the files or the ranks waits for it ([`Fti::wait`]).
    pub(super) fn spawn_post(
        &mut self,
        job: impl FnOnce(&dyn Comm) -> Result<()> + Send + 'static,
    ) {
        if let Some(comm) = self.bg_comm.take() {
            self.run_in_background(Box::new(move |_, _| {
                let result = job(&*comm).map(|()| JobOutcome::Post);
                JobDone {
                    comm: Some(comm),
                    result,
                    staging: Vec::new(),
                }
            }));
        }
    }

    /// Hands `job` to the background thread (started on first use, or again after a job
    /// panicked); [`Fti::wait`] collects its outcome.
    pub(super) fn run_in_background(&mut self, job: worker::Job) {
        let mut job = job;
        for _ in 0..2 {
            let spec = self.tracer.as_ref().and_then(Tracer::spec);
            let messages = self.messages.clone();
            let w = self
                .worker
                .get_or_insert_with(|| worker::Worker::start(spec, messages));
            match w.submit(job) {
                Ok(()) => {
                    self.job_in_flight = true;
                    return;
                }
                Err(back) => {
                    // The thread is gone: a new one.
                    self.worker = None;
                    job = back;
                }
            }
        }
    }

    /// Whether post-processing runs in the background thread (asked by `inline_l2 = 0` or
    /// `inline_l4 = 0`, and possible in this run).
    pub fn background_post_processing(&self) -> bool {
        self.has_bg_comm
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
        if !std::mem::take(&mut self.job_in_flight) {
            return Ok(());
        }
        let Some(done) = self.worker.as_ref().and_then(worker::Worker::outcome) else {
            self.worker = None;
            self.in_flight = None;
            return Err(Error::State("the background thread panicked"));
        };
        if let Some(comm) = done.comm {
            self.bg_comm = Some(comm);
        }
        if !done.staging.is_empty() {
            self.staging = done.staging;
        }
        let in_flight = self.in_flight.take();
        match (done.result, in_flight) {
            (Ok(JobOutcome::Published(fb, recorded)), Some(f)) => {
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
            // A deferred checkpoint: every rank takes part in its collective steps, a rank
            // whose write failed too (it reports its error there).
            (written, Some(f)) if f.deferred.is_some() => {
                let write_level = f.deferred.unwrap_or(f.info.level);
                let written = written.and_then(|outcome| match outcome {
                    JobOutcome::Written(pending, written) => Ok((pending, written)),
                    _ => Err(Error::State("a deferred checkpoint wrote no file")),
                });
                self.complete_deferred(f, write_level, written)?;
                // Its publication may have left post-processing in the background.
                self.wait()
            }
            (Ok(_), _) => Ok(()),
            (Err(e), f) => {
                if let Some(f) = f {
                    self.say_failed(f.info.id, f.info.level);
                }
                Err(e)
            }
        }
    }

    /// [`Fti::wait`], traced as the `wait` phase when there is work to wait for: the time a
    /// checkpoint call spends on the previous one.
    pub(super) fn wait_traced(&mut self) -> Result<()> {
        if !self.job_in_flight {
            return Ok(());
        }
        trace::with(&mut self.tracer, &self.messages, |t| t.begin(Phase::Wait));
        let waited = self.wait();
        trace::with(&mut self.tracer, &self.messages, |t| t.end(Phase::Wait));
        waited
    }

    /// L2, first step: records the left partner's file size in `ptFs` and plans the exchange
    /// of files within the group (collective).
    pub(super) fn partner_plan(
        &mut self,
        pending: &store::Pending,
        fb: FileBlock,
    ) -> Result<(l2::PartnerPlan, FileBlock)> {
        let place = self.my_place()?;
        store::crash_point("partner");
        let sizes = collective::gather_u64(&*self.comm, fb.fs as u64);
        let plan = l2::PartnerPlan {
            left: place.left(),
            right: place.right(),
            own_fs: fb.fs as u64,
            left_fs: sizes[place.left() as usize],
            rounds: collective::rounds_for(place.group.iter().map(|&r| sizes[r as usize])),
        };
        let fb = l2::set_fb(&*pending.file, &pending.path, |b| {
            b.pt_fs = plan.left_fs as i64
        });
        agree(&*self.comm, Step::L2Copy, fb.map(|fb| (plan, fb)))
    }

    /// L3: sets `maxFs` (the largest file of the group) in this rank's file, then encodes the
    /// group's files into this rank's `Ckpt<id>-RSed<r>.fti` (FTI 1.1's Reed-Solomon code).
    pub(super) fn encode_l3(
        &mut self,
        id: i32,
        pending: &store::Pending,
        fb: FileBlock,
    ) -> Result<(Option<store::Pending>, FileBlock)> {
        let place = self.my_place()?;
        store::crash_point("partner");
        let sizes = collective::gather_u64(&*self.comm, fb.fs as u64);
        let max_fs = place
            .group
            .iter()
            .map(|&r| sizes[r as usize])
            .max()
            .unwrap_or(0);
        let fb = l2::set_fb(&*pending.file, &pending.path, |b| b.max_fs = max_fs as i64);
        let rsed = store::begin_named(&self.dirs, Level::L3, self.dirs.rsed_name(id), None);
        let own_fs = fb.as_ref().map_or(0, |b| b.fs as u64);
        // Every rank takes part in the encoding even after a local error, so that the group's
        // exchanges match; the error is reported after it.
        let encoded = crate::l3::encode(
            &*self.comm,
            &place,
            Some((&*pending.file, pending.path.as_path(), own_fs)),
            rsed.as_ref().ok(),
            max_fs,
        );
        let local = fb.and_then(|fb| encoded.and(rsed.map(|r| (Some(r), fb))));
        agree(&*self.comm, Step::L3Encode, local)
    }
}
