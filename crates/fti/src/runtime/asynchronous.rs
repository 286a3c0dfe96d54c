//! Asynchronous checkpoints (`async_ckpt = 1`): the variables are staged and the file is
//! written, hashed and published by a background thread.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use ftiff::raw::FileBlock;
use ftiff::{Layout, WriteOptions};

use crate::collective::{self, agree};
use crate::comm::Comm;
use crate::config::Level;
use crate::error::{Error, Result, Step};
use crate::files::{self, Dirs};
use crate::report::Messages;
use crate::trace::{self, Phase, Tracer};
use crate::var::Var;

use super::record::RestartRecord;
use super::worker::{self, InFlight, JobDone, JobOutcome};
use super::write::{by_position, var_sizes};
use super::{CheckpointInfo, DcpFile, Fti};

/// How an asynchronous checkpoint runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct AsyncPlan {
    pub(super) mode: AsyncMode,
    /// The staging budget in bytes, when the data exceed it: the data go through a pipeline of
    /// pieces that never holds more, and the call returns once the last piece is copied.
    pub(super) pipeline: Option<u64>,
}

/// Where an asynchronous checkpoint's work after the copy runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum AsyncMode {
    /// All of it in the background thread, collective steps on the background communicator
    /// (L1 and L4 with `MPI_THREAD_MULTIPLE`, or one process).
    Background,
    /// The file's write, hashes and sync in the background thread, which does not
    /// communicate; the agreement, partner copies (L2), code (L3), publication and the L4
    /// flush on the application's thread at the next call that waits (checkpoint, `wait`,
    /// finalize). For L2 and L3, and for runs without a background communicator.
    Deferred,
}

impl Fti {
    /// Whether this checkpoint runs asynchronously, and how: `async_ckpt = 1` (and, for data
    /// beyond the staging budget, `async_mem_mib`, an MD5 file without differential
    /// checkpoints, which a pipeline can write). The decision is the same on every rank (the
    /// config is, the background communicator exists on every rank or none, and the budget is
    /// compared with the largest rank's data).
    pub(super) fn asynchronous(&mut self, level: Level, vars: &[Var<'_>]) -> Option<AsyncPlan> {
        if !self.cfg.async_ckpt {
            return None;
        }
        let mut pipeline = None;
        if let Some(budget) = self.cfg.async_mem_mib {
            let mine: u64 = vars.iter().map(|v| v.size()).sum();
            let largest = collective::max_u64(&*self.comm, mine);
            let budget = budget.saturating_mul(1 << 20);
            if largest > budget {
                if self.cfg.dcp || self.cfg.fast_integrity {
                    return None;
                }
                pipeline = Some(budget);
            }
        }
        // A differential checkpoint updates an older file in place: deferred, so that the
        // runtime's record of its files is updated on the application's thread.
        let mode = if self.background.has_comm()
            && matches!(level, Level::L1 | Level::L4)
            && !self.cfg.dcp
        {
            AsyncMode::Background
        } else {
            AsyncMode::Deferred
        };
        Some(AsyncPlan { mode, pipeline })
    }

    /// An asynchronous checkpoint: waits for the one in flight (that wait, and the copy, are
    /// the time the application is stopped), copies the variables into the staging buffers and
    /// returns; a background thread writes, hashes and (in [`AsyncMode::Background`])
    /// publishes the file with the same protocol as a synchronous checkpoint, records the
    /// restart in the config file if it is the first, then retires older checkpoints. The
    /// returned info's `timestamp` is 0 until the checkpoint is complete ([`Fti::wait`], or
    /// the next call).
    pub(super) fn checkpoint_async(
        &mut self,
        id: i32,
        level: Level,
        vars: &[Var<'_>],
        plan: AsyncPlan,
    ) -> Result<CheckpointInfo> {
        let started = Instant::now();
        // Everything that can fail comes before the trace marks open and before the
        // runtime's record of its files changes.
        let prepared = self.agree_on_staging(level, vars).and_then(|layout| {
            let comm = match plan.mode {
                AsyncMode::Background => Some(self.background.lend_comm()?),
                AsyncMode::Deferred => None,
            };
            Ok((layout, comm))
        });
        let (layout, comm) = prepared.inspect_err(|_| self.say_failed(id, level))?;
        trace::with(&mut self.tracer, &self.messages, |t| {
            t.begin_checkpoint(id, level)
        });
        trace::with(&mut self.tracer, &self.messages, |t| t.begin(Phase::Stage));
        let data = by_position(&layout, vars);
        let (staged, feed) = self.stage(&data, plan.pipeline);
        let info = CheckpointInfo {
            id,
            level,
            path: self.dirs.level_dir(level).join(self.dirs.file_name(id)),
            size: layout.file_size(),
            timestamp: 0,
            bytes_written: layout.file_size(),
        };
        let write_level = self.write_level(level);
        let job = self.async_job(id, level, layout.clone());
        self.layout = Some(layout.clone());
        self.next_id = self.next_id.max(id.saturating_add(1));
        let (job, deferred) = match comm {
            Some(comm) => {
                self.dcp_files.clear();
                (job.in_background(comm, staged), None)
            }
            None => {
                let dcp_base = self.take_dcp_base(write_level);
                (
                    job.deferred(write_level, dcp_base, staged),
                    Some(write_level),
                )
            }
        };
        let checkpoint = InFlight {
            info: info.clone(),
            started,
            stopped: Duration::ZERO,
        };
        let spec = self.tracer.as_ref().and_then(Tracer::spec);
        self.background
            .checkpoint(job, checkpoint, deferred, spec, &self.messages);
        if let Some(feed) = feed {
            // The background is writing: the call returns once the last piece is copied.
            feed.run(&layout, &data);
        }
        trace::with(&mut self.tracer, &self.messages, |t| t.end(Phase::Stage));
        trace::with(&mut self.tracer, &self.messages, |t| {
            t.end_checkpoint(id, level, layout.file_size())
        });
        let stopped = started.elapsed();
        self.timer.excluded += stopped;
        self.background.set_stopped(stopped);
        Ok(info)
    }

    /// Waits for the checkpoint in flight, checks this one and plans its layout; every rank
    /// stages, or none: the background threads' collective steps must match (collective).
    fn agree_on_staging(&mut self, level: Level, vars: &[Var<'_>]) -> Result<Layout> {
        let waited = self.wait_traced();
        let ready = waited
            .and_then(|()| self.check_level(level))
            .and_then(|()| self.ready_for(vars));
        let planned =
            ready.and_then(|()| Ok(Layout::plan(self.layout.as_ref(), &var_sizes(vars))?));
        agree(&*self.comm, Step::Stage, planned)
    }

    /// The data as the background thread gets them: copied into the staging buffers, or,
    /// beyond the staging budget, a pipeline whose feeding end is returned.
    fn stage(&mut self, data: &[&[u8]], pipeline: Option<u64>) -> (Staged, Option<Feed>) {
        match pipeline {
            None => {
                let mut staging = self.background.take_staging();
                staging.resize_with(data.len(), Vec::new);
                for (buf, bytes) in staging.iter_mut().zip(data) {
                    // Capacity is kept between checkpoints: after the first, no allocation
                    // and no page faults, only the copy.
                    buf.clear();
                    buf.extend_from_slice(bytes);
                }
                (Staged::Copies(staging), None)
            }
            Some(budget) => {
                let (pieces, feed) = Feed::new(budget);
                (Staged::Pieces(pieces), Some(feed))
            }
        }
    }

    /// What the background thread needs of the runtime to write checkpoint `id`.
    fn async_job(&self, id: i32, level: Level, layout: Layout) -> AsyncJob {
        AsyncJob {
            dirs: self.dirs.clone(),
            level,
            id,
            keep: self.keep(),
            layout,
            opts: self.write_options(),
            record: self
                .restart_record_pending
                .then(|| self.restart_record())
                .flatten(),
            record_pending: self.restart_record_pending,
            config: self.cfg.path.clone(),
        }
    }

    /// Completes a deferred asynchronous checkpoint whose file the background thread has
    /// written (or failed to): the same collective steps as a synchronous checkpoint after
    /// its write, on the application's thread. Every rank comes here at the same call.
    pub(super) fn complete_deferred(
        &mut self,
        f: InFlight,
        write_level: Level,
        written: Result<(files::Pending, ftiff::Written)>,
    ) -> Result<()> {
        let started = Instant::now();
        let (id, level) = (f.info.id, f.info.level);
        trace::with(&mut self.tracer, &self.messages, |t| {
            t.begin_checkpoint(id, level)
        });
        let published = agree(&*self.comm, Step::Write, written)
            .and_then(|(pending, w)| {
                let vars = self
                    .layout
                    .as_ref()
                    .map(ftiff::Layout::vars)
                    .unwrap_or_default();
                let (path, fb) = self.publish_checkpoint(
                    id,
                    (level, write_level),
                    (pending, None),
                    w.fb,
                    &vars,
                )?;
                Ok((path, ftiff::Written { fb, ..w }))
            })
            .and_then(|done| self.record_first_checkpoint().map(|()| done));
        let (path, written) = published.map_err(|e| self.checkpoint_failed(id, level, e))?;
        trace::with(&mut self.tracer, &self.messages, |t| {
            t.end_checkpoint(id, level, f.info.size)
        });
        match self.layout.clone() {
            Some(layout) => {
                self.remember_written(id, write_level, &layout, written.table, written.fb)
            }
            None => self.dcp_files.clear(),
        }
        let info = CheckpointInfo {
            path,
            timestamp: written.fb.timestamp,
            bytes_written: written.bytes_written,
            ..f.info
        };
        let how = format!(
            "asynchronous: the application was stopped {:.3} s, and {:.3} s to complete it at the next call",
            f.stopped.as_secs_f64(),
            started.elapsed().as_secs_f64(),
        );
        self.say_taken(&info, f.started.elapsed(), &how);
        self.last = Some(info);
        Ok(())
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
    /// Rank 0, first checkpoint of a fresh run: the restart record to write.
    record: Option<RestartRecord>,
    /// Whether the restart record is still to be written (on every rank, to agree on it).
    record_pending: bool,
    config: Option<PathBuf>,
}

impl AsyncJob {
    /// The job of an asynchronous checkpoint run entirely in the background thread, its
    /// collective steps on `comm` ([`AsyncMode::Background`]).
    fn in_background(self, comm: Box<dyn Comm + Send>, staged: Staged) -> worker::Job {
        let (id, level, size) = (self.id, self.level, self.layout.file_size());
        Box::new(move |tracer, messages| {
            let mark = Marks::open(tracer, messages, id, level);
            let result = self
                .run(&*comm, &staged, &mut |phase| {
                    mark.phase(tracer, messages, phase)
                })
                .map(|(fb, recorded)| JobOutcome::Published(fb, recorded));
            mark.close(tracer, messages, result.is_ok(), size);
            JobDone {
                comm: Some(comm),
                result,
                staging: staged.into_copies(),
            }
        })
    }

    /// The job of a deferred asynchronous checkpoint: the file's write, hashes and sync at
    /// `write_level` ([`AsyncMode::Deferred`]).
    fn deferred(
        self,
        write_level: Level,
        dcp_base: Option<(PathBuf, DcpFile)>,
        staged: Staged,
    ) -> worker::Job {
        let (id, level, size) = (self.id, self.level, self.layout.file_size());
        Box::new(move |tracer, messages| {
            let mark = Marks::open(tracer, messages, id, level);
            mark.phase(tracer, messages, Some(Phase::Write));
            let result = self
                .write(write_level, dcp_base, &staged)
                .map(|(pending, written)| JobOutcome::Written(pending, written));
            mark.close(tracer, messages, result.is_ok(), size);
            JobDone {
                comm: None,
                result,
                staging: staged.into_copies(),
            }
        })
    }

    /// Writes a whole file from the staged data.
    fn write_staged(
        &self,
        file: &dyn crate::storage::StorageFile,
        staged: &Staged,
    ) -> ftiff::Result<ftiff::Written> {
        match staged {
            Staged::Copies(bufs) => {
                let data: Vec<&[u8]> = bufs.iter().map(Vec::as_slice).collect();
                ftiff::write_file_with_progress(file, &self.layout, &data, &self.opts, &|_| {})
            }
            Staged::Pieces(pieces) => ftiff::write_file_streamed(
                file,
                &self.layout,
                &mut |c, put| pieces.chunk(c, put),
                &self.opts,
            ),
        }
    }

    /// Writes the staged data into a new file at `write_level`, with its hashes, and syncs
    /// it; no communication (a deferred checkpoint: publication follows at the next call).
    /// With `dcp_base`, a differential checkpoint: the older file is moved aside and only the
    /// blocks that changed are rewritten.
    fn write(
        self,
        write_level: Level,
        dcp_base: Option<(PathBuf, DcpFile)>,
        staged: &Staged,
    ) -> Result<(files::Pending, ftiff::Written)> {
        let reuse = dcp_base.as_ref().map(|(p, _)| p.as_path());
        let pending = files::begin(&self.dirs, write_level, self.id, reuse)?;
        let written = match (&dcp_base, staged) {
            (Some((_, b)), Staged::Copies(bufs)) => {
                let data: Vec<&[u8]> = bufs.iter().map(Vec::as_slice).collect();
                ftiff::update_file(
                    &pending.file,
                    Some((&b.layout, &b.table)),
                    &self.layout,
                    &data,
                    &self.opts,
                    &|_| {},
                )
            }
            (Some(_), Staged::Pieces(_)) => {
                return Err(Error::Internal(
                    "a differential checkpoint is never pipelined",
                ))
            }
            (None, staged) => self.write_staged(&*pending.file, staged),
        }
        .map_err(|e| Error::Format(e.with_path(&pending.path)))?;
        // Synced here, off the application's thread: the publication's sync then finds
        // nothing left to write.
        pending
            .file
            .sync()
            .map_err(|e| Error::io(&pending.path, e))?;
        Ok((pending, written))
    }

    /// Writes and publishes the staged data on every rank (collective on `comm`), records the
    /// restart if it is the first checkpoint, retires older checkpoints. Returns the file block
    /// and whether the restart was recorded.
    pub(super) fn run(
        self,
        comm: &dyn Comm,
        staged: &Staged,
        phase: &mut dyn FnMut(Option<Phase>),
    ) -> Result<(FileBlock, bool)> {
        phase(Some(Phase::Write));
        let written = files::begin(&self.dirs, self.level, self.id, None).and_then(|p| {
            self.write_staged(&*p.file, staged)
                .map_err(|e| Error::Format(e.with_path(&p.path)))
                .map(|w| (p, w.fb))
        });
        let (pending, fb) = agree(comm, Step::Write, written)?;
        phase(Some(Phase::Publish));
        let published = files::publish_pending(&self.dirs, pending);
        agree(comm, Step::Publish, published)?;
        if self.record_pending {
            let recorded = match &self.record {
                Some(record) => record.write(&*self.dirs.storage, 1),
                None => Ok(()),
            };
            agree(comm, Step::RecordRestart(self.config.clone()), recorded)?;
        }
        // Only once every rank has published (and the restart is recorded) do older
        // checkpoints go.
        files::retire(&self.dirs, self.level, self.id, self.keep, true)?;
        Ok((fb, self.record_pending))
    }
}

/// The marks of an asynchronous checkpoint in the background thread's stream: the same
/// checkpoint mark as the application's thread, with the phases done there.
struct Marks {
    phase: std::cell::Cell<Option<Phase>>,
    id: i32,
    level: Level,
}

impl Marks {
    fn open(tracer: &mut Option<Tracer>, messages: &Messages, id: i32, level: Level) -> Marks {
        trace::with(tracer, messages, |t| t.begin_checkpoint(id, level));
        Marks {
            phase: std::cell::Cell::new(None),
            id,
            level,
        }
    }

    /// Ends the phase under way and begins `next`.
    fn phase(&self, tracer: &mut Option<Tracer>, messages: &Messages, next: Option<Phase>) {
        if let Some(p) = self.phase.replace(next) {
            trace::with(tracer, messages, |t| t.end(p));
        }
        if let Some(p) = next {
            trace::with(tracer, messages, |t| t.begin(p));
        }
    }

    fn close(self, tracer: &mut Option<Tracer>, messages: &Messages, ok: bool, size: u64) {
        if ok {
            self.phase(tracer, messages, None);
            trace::with(tracer, messages, |t| {
                t.end_checkpoint(self.id, self.level, size)
            });
        } else {
            trace::with(tracer, messages, Tracer::close_all);
        }
    }
}

/// The data of an asynchronous checkpoint as the background thread gets them.
pub(super) enum Staged {
    /// A copy of every variable, by protect position.
    Copies(Vec<Vec<u8>>),
    /// Pieces of the chunks, in file order, through a pipeline that never holds more than the
    /// staging budget.
    Pieces(Pieces),
}

impl Staged {
    /// The copies, to be reused by the next checkpoint.
    fn into_copies(self) -> Vec<Vec<u8>> {
        match self {
            Staged::Copies(bufs) => bufs,
            Staged::Pieces(_) => Vec::new(),
        }
    }
}

/// The background's end of a pipeline: full pieces in, emptied buffers back.
pub(super) struct Pieces {
    full: std::sync::mpsc::Receiver<Vec<u8>>,
    free: std::sync::mpsc::Sender<Vec<u8>>,
}

impl Pieces {
    /// Hands chunk `c`'s bytes to `put` as they arrive; each buffer goes back to the
    /// application's end once written.
    fn chunk(&self, c: &ftiff::Chunk, put: &mut ftiff::PutPiece<'_>) -> std::io::Result<()> {
        let mut left = c.chunk_size;
        while left > 0 {
            let piece = self.full.recv().map_err(|_| {
                std::io::Error::other("the application stopped handing over the checkpoint's data")
            })?;
            left = left.saturating_sub(piece.len() as u64);
            put(&piece)?;
            // The application's end is gone once it has handed over the last piece.
            let _ = self.free.send(piece);
        }
        Ok(())
    }
}

/// The application's end of a pipeline.
struct Feed {
    full: std::sync::mpsc::Sender<Vec<u8>>,
    free: std::sync::mpsc::Receiver<Vec<u8>>,
    piece: usize,
}

impl Feed {
    /// A pipeline of at most `budget` bytes: pieces of a quarter of it (at most 8 MiB, so
    /// that the writer starts early), allocated as they are first filled.
    fn new(budget: u64) -> (Pieces, Feed) {
        let piece = (budget / 4).clamp(4096, 8 << 20);
        let count = (budget / piece).max(1);
        let (full_tx, full_rx) = std::sync::mpsc::channel();
        let (free_tx, free_rx) = std::sync::mpsc::channel();
        for _ in 0..count {
            let _ = free_tx.send(Vec::new());
        }
        (
            Pieces {
                full: full_rx,
                free: free_tx,
            },
            Feed {
                full: full_tx,
                free: free_rx,
                piece: piece as usize,
            },
        )
    }

    /// Copies every chunk's bytes, in file order, into the pipeline's buffers as the
    /// background empties them. Stops early if the background stopped (its error is reported
    /// with the checkpoint).
    fn run(self, layout: &Layout, data: &[&[u8]]) {
        for c in layout.chunks().filter(|c| c.chunk_size > 0) {
            let start = c.dptr.0 as usize;
            let Some(bytes) = data
                .get(c.idx as usize)
                .and_then(|d| d.get(start..start + c.chunk_size as usize))
            else {
                return;
            };
            for part in bytes.chunks(self.piece) {
                let Ok(mut buf) = self.free.recv() else {
                    return;
                };
                buf.clear();
                buf.extend_from_slice(part);
                if self.full.send(buf).is_err() {
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Feed;

    /// The pipeline's buffers never hold more than the budget, whatever it is.
    #[test]
    fn a_pipeline_holds_at_most_its_budget() {
        for budget in [1u64 << 20, 3 << 20, 64 << 20, 1000 << 20, (1 << 20) + 12345] {
            let (_, feed) = Feed::new(budget);
            let buffers = std::iter::from_fn(|| feed.free.try_recv().ok()).count() as u64;
            assert!(buffers >= 1);
            assert!(
                buffers * feed.piece as u64 <= budget,
                "{budget}: {buffers} x {}",
                feed.piece
            );
        }
    }
}
