//! Asynchronous checkpoints (`async_ckpt = 1`): the variables are staged and the file is
//! written, hashed and published by a background thread.

use super::*;

impl Fti {
    /// Whether this checkpoint runs asynchronously: `async_ckpt = 1`, a background
    /// communicator, L1 or L4, no differential checkpoints, and the data within the staging
    /// budget (`async_mem_mib`). The decision is the same on every rank (the config is, and
    /// the budget is compared with the largest rank's data).
    pub(super) fn asynchronous(&mut self, level: Level, vars: &[Var<'_>]) -> bool {
        if !self.cfg.async_ckpt
            || self.cfg.dcp
            || !matches!(level, Level::L1 | Level::L4)
            || (self.bg_comm.is_none() && self.bg_job.is_none())
        {
            return false;
        }
        let Some(budget) = self.cfg.async_mem_mib else {
            return true;
        };
        let mine: u64 = vars.iter().map(|v| v.size()).sum();
        let largest = collective::gather_u64(&*self.comm, mine)
            .into_iter()
            .max()
            .unwrap_or(0);
        largest <= budget.saturating_mul(1 << 20)
    }

    /// An asynchronous checkpoint: waits for the one in flight (that wait, and the copy, are
    /// the time the application is stopped), copies the variables into the staging buffers and
    /// returns; a background thread writes, hashes and publishes the file with the same
    /// protocol as a synchronous checkpoint, records the restart in the config file if it is
    /// the first, then retires older checkpoints. The returned info's `timestamp` is 0 until
    /// the checkpoint is complete ([`Fti::wait`], or the next call).
    pub(super) fn checkpoint_async(
        &mut self,
        id: i32,
        level: Level,
        vars: &[Var<'_>],
    ) -> Result<CheckpointInfo> {
        let started = Instant::now();
        let waited = self.wait();
        let ready = waited.and_then(|()| self.ready_for(vars));
        let sizes: Vec<VarSize> = vars
            .iter()
            .map(|v| VarSize {
                id: v.id,
                size: v.size(),
            })
            .collect();
        let planned = ready.and_then(|()| Ok(Layout::plan(self.layout.as_ref(), &sizes)?));
        // Every rank stages, or none: the background threads' collective steps must match.
        let layout = match agree(&*self.comm, Step::Stage, planned) {
            Ok(layout) => layout,
            Err(e) => {
                self.say_failed(id, level);
                return Err(e);
            }
        };
        trace::with(&mut self.tracer, &self.messages, |t| {
            t.begin_checkpoint(id, level)
        });
        trace::with(&mut self.tracer, &self.messages, |t| t.begin(Phase::Stage));
        let by_id: HashMap<i32, &[u8]> = vars.iter().map(|v| (v.id, &*v.bytes)).collect();
        let mut staging = std::mem::take(&mut self.staging);
        staging.resize_with(layout.vars().len(), Vec::new);
        for (buf, v) in staging.iter_mut().zip(layout.vars()) {
            let bytes = by_id.get(&v.id).copied().unwrap_or(&[]);
            // Capacity is kept between checkpoints: after the first, no allocation and no
            // page faults, only the copy.
            buf.clear();
            buf.extend_from_slice(bytes);
        }
        trace::with(&mut self.tracer, &self.messages, |t| t.end(Phase::Stage));
        trace::with(&mut self.tracer, &self.messages, |t| {
            t.end_checkpoint(id, level, layout.file_size())
        });
        let info = CheckpointInfo {
            id,
            level,
            path: self.dirs.level_dir(level).join(self.dirs.file_name(id)),
            size: layout.file_size(),
            timestamp: 0,
            bytes_written: layout.file_size(),
        };
        let job = AsyncJob {
            dirs: self.dirs.clone(),
            level,
            id,
            keep: self.keep(),
            layout: layout.clone(),
            opts: self.write_options(),
            record: (self.restart_record_pending && self.cfg.rank == 0)
                .then(|| self.cfg.path.clone())
                .flatten()
                .map(|p| (p, self.exec_id.clone())),
            record_pending: self.restart_record_pending,
            config: self.cfg.path.clone(),
        };
        self.layout = Some(layout);
        self.dcp_files.clear();
        self.next_id = self.next_id.max(id.saturating_add(1));
        let stopped = started.elapsed();
        self.timer.excluded += stopped;
        let Some(comm) = self.bg_comm.take() else {
            return Err(Error::State("no background communicator"));
        };
        self.in_flight = Some(InFlight {
            info: info.clone(),
            started,
            stopped,
        });
        self.bg_job = Some(std::thread::spawn(move || {
            let result = job.run(&*comm, &staging).map(Some);
            JobDone {
                comm,
                result,
                staging,
            }
        }));
        Ok(info)
    }
}

/// The background part of an asynchronous checkpoint.
pub(super) struct AsyncJob {
    dirs: Dirs,
    level: Level,
    id: i32,
    keep: usize,
    layout: Layout,
    opts: WriteOptions,
    /// Rank 0, first checkpoint of a fresh run: the config file to record the restart in.
    record: Option<(PathBuf, String)>,
    /// Whether the restart record is still to be written (on every rank, to agree on it).
    record_pending: bool,
    config: Option<PathBuf>,
}

impl AsyncJob {
    /// Writes and publishes the staged data on every rank (collective on `comm`), records the
    /// restart if it is the first checkpoint, retires older checkpoints. Returns the file block
    /// and whether the restart was recorded.
    pub(super) fn run(self, comm: &dyn Comm, staged: &[Vec<u8>]) -> Result<(FileBlock, bool)> {
        let data: Vec<&[u8]> = staged.iter().map(Vec::as_slice).collect();
        let written = store::begin(&self.dirs, self.level, self.id, None).and_then(|p| {
            ftiff::write_file(&*p.file, &self.layout, &data, &self.opts)
                .map_err(|e| Error::Format(e.with_path(&p.path)))
                .map(|fb| (p, fb))
        });
        let (pending, fb) = agree(comm, Step::Write, written)?;
        let published = store::publish_pending(&self.dirs, pending);
        agree(comm, Step::Publish, published)?;
        if self.record_pending {
            let recorded = match &self.record {
                Some((path, exec_id)) => {
                    config::record_restart(&*self.dirs.storage, path, 1, exec_id).map_err(|err| {
                        Error::RestartRecord {
                            path: path.clone(),
                            exec_id: exec_id.clone(),
                            err: Box::new(err),
                        }
                    })
                }
                None => Ok(()),
            };
            agree(comm, Step::RecordRestart(self.config.clone()), recorded)?;
        }
        // Only once every rank has published (and the restart is recorded) do older
        // checkpoints go.
        store::retire(&self.dirs, self.level, self.id, self.keep, true)?;
        Ok((fb, self.record_pending))
    }
}
