//! What the runtime's background thread is doing, as one state with its transitions: idle;
//! post-processing a checkpoint published on the application's thread; publishing an
//! asynchronous checkpoint (collective steps on the background communicator); or writing an
//! asynchronous checkpoint's file whose collective rest runs on the application's thread at
//! the next call that waits. The background communicator, the thread and the staging buffers
//! belong to it.

use std::time::Duration;

use ftiff::raw::FileBlock;

use crate::comm::Comm;
use crate::config::Level;
use crate::error::{Error, Misuse, Result};
use crate::files::Pending;
use crate::report::Messages;
use crate::trace::TracerSpec;

use super::worker::{InFlight, Job, JobDone, JobOutcome, Worker};

/// What the background thread is doing.
enum State {
    /// Nothing.
    Idle,
    /// Post-processing (L2 partner copies, the L4 flush) of a checkpoint published by every
    /// rank.
    PostProcessing,
    /// An asynchronous checkpoint written and published there.
    Publishing(InFlight),
    /// An asynchronous checkpoint's file written there, at this level (L1 for an L4
    /// checkpoint flushed later); the agreement and publication follow on the application's
    /// thread.
    Writing(InFlight, Level),
}

/// How the job under way ended, with what was under way.
pub(super) enum Finished {
    /// Nothing was under way.
    Nothing,
    /// Post-processing.
    PostProcessed(Result<()>),
    /// An asynchronous checkpoint published by every rank: its file block, and whether it
    /// recorded the restart in the config file.
    Published(InFlight, Result<(FileBlock, bool)>),
    /// An asynchronous checkpoint's file written (not yet published), at this level.
    Written(InFlight, Level, Result<(Pending, ftiff::Written)>),
}

/// The runtime's background work.
pub(super) struct Background {
    state: State,
    /// The communicator of background post-processing, when no job has it.
    comm: Option<Box<dyn Comm + Send>>,
    /// Whether the run has a background communicator at all (lent or not): the same on
    /// every rank.
    has_comm: bool,
    /// The background thread (started with its first job).
    worker: Option<Worker>,
    /// Staging buffers of asynchronous checkpoints (by protect position), reused.
    staging: Vec<Vec<u8>>,
}

impl Background {
    pub(super) fn new(comm: Option<Box<dyn Comm + Send>>) -> Background {
        Background {
            state: State::Idle,
            has_comm: comm.is_some(),
            comm,
            worker: None,
            staging: Vec::new(),
        }
    }

    /// Whether the run has a background communicator (the same on every rank).
    pub(super) fn has_comm(&self) -> bool {
        self.has_comm
    }

    /// Whether post-processing can be handed to the background now: its communicator is
    /// here (no job has it, and none took it with it when it panicked).
    pub(super) fn can_post_process(&self) -> bool {
        self.comm.is_some()
    }

    /// Whether a job is under way.
    pub(super) fn busy(&self) -> bool {
        !matches!(self.state, State::Idle)
    }

    /// Whether an asynchronous checkpoint's file is being written, its collective rest still
    /// to come.
    pub(super) fn writing(&self) -> bool {
        matches!(self.state, State::Writing(..))
    }

    /// The staging buffers, to fill (handed back with the job that used them).
    pub(super) fn take_staging(&mut self) -> Vec<Vec<u8>> {
        std::mem::take(&mut self.staging)
    }

    /// Lends the background communicator to an asynchronous checkpoint's job.
    pub(super) fn lend_comm(&mut self) -> Result<Box<dyn Comm + Send>> {
        self.comm
            .take()
            .ok_or(Error::State(Misuse::NoBackgroundComm))
    }

    /// Idle → post-processing: runs `job` with the background communicator. Without one
    /// (lost with a job that panicked), nothing runs.
    pub(super) fn post_process(
        &mut self,
        job: impl FnOnce(&dyn Comm) -> Result<()> + Send + 'static,
        trace: Option<TracerSpec>,
        messages: &Messages,
    ) {
        if let Some(comm) = self.comm.take() {
            let job: Job = Box::new(move |_, _| {
                let result = job(&*comm).map(|()| JobOutcome::Post);
                JobDone {
                    comm: Some(comm),
                    result,
                    staging: Vec::new(),
                }
            });
            self.submit(job, State::PostProcessing, trace, messages);
        }
    }

    /// Idle → publishing (with `write_level`: writing): an asynchronous checkpoint's job.
    pub(super) fn checkpoint(
        &mut self,
        job: Job,
        checkpoint: InFlight,
        write_level: Option<Level>,
        trace: Option<TracerSpec>,
        messages: &Messages,
    ) {
        let state = match write_level {
            Some(level) => State::Writing(checkpoint, level),
            None => State::Publishing(checkpoint),
        };
        self.submit(job, state, trace, messages);
    }

    /// How long the application was stopped by the asynchronous checkpoint under way.
    pub(super) fn set_stopped(&mut self, stopped: Duration) {
        if let State::Publishing(f) | State::Writing(f, _) = &mut self.state {
            f.stopped = stopped;
        }
    }

    /// Hands `job` to the background thread (started on first use, or again after a job
    /// panicked) and enters `state`.
    fn submit(
        &mut self,
        mut job: Job,
        state: State,
        trace: Option<TracerSpec>,
        messages: &Messages,
    ) {
        for _ in 0..2 {
            let w = self
                .worker
                .get_or_insert_with(|| Worker::start(trace.clone(), messages.clone()));
            match w.submit(job) {
                Ok(()) => {
                    self.state = state;
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

    /// Any state → idle: waits for the job under way and returns how it ended. The
    /// communicator and the staging buffers it took come back.
    pub(super) fn finish(&mut self) -> Result<Finished> {
        let state = std::mem::replace(&mut self.state, State::Idle);
        if matches!(state, State::Idle) {
            return Ok(Finished::Nothing);
        }
        let Some(done) = self.worker.as_ref().and_then(Worker::outcome) else {
            self.worker = None;
            return Err(Error::State(Misuse::BackgroundPanicked));
        };
        if let Some(comm) = done.comm {
            self.comm = Some(comm);
        }
        if !done.staging.is_empty() {
            self.staging = done.staging;
        }
        let result = done.result;
        Ok(match state {
            State::Idle | State::PostProcessing => Finished::PostProcessed(result.map(|_| ())),
            State::Publishing(f) => Finished::Published(
                f,
                result.and_then(|outcome| match outcome {
                    JobOutcome::Published(fb, recorded) => Ok((fb, recorded)),
                    _ => Err(Error::Internal(
                        "an asynchronous checkpoint published nothing",
                    )),
                }),
            ),
            State::Writing(f, level) => Finished::Written(
                f,
                level,
                result.and_then(|outcome| match outcome {
                    JobOutcome::Written(pending, written) => Ok((pending, written)),
                    _ => Err(Error::Internal("a deferred checkpoint wrote no file")),
                }),
            ),
        })
    }
}
