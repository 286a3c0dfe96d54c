//! The runtime's background thread: one per runtime, started with the first job, running the
//! jobs (an asynchronous checkpoint's work, post-processing) one at a time, at a lower
//! priority than the application's threads. With tracing on it has its own thread stream in
//! the process's trace, so a timeline shows the application stopped (`stage`) apart from the
//! work done meanwhile in the background (`write`, `publish`) under the same checkpoint mark.

use std::sync::mpsc::{channel, Receiver, Sender};
use std::thread::JoinHandle;

use std::time::{Duration, Instant};

use ftiff::raw::FileBlock;

use super::CheckpointInfo;
use crate::comm::Comm;
use crate::error::Result;
use crate::files;
use crate::report::Messages;
use crate::trace::{self, Tracer, TracerSpec};

/// A job: runs on the background thread with its tracer (if tracing is on).
pub(super) type Job = Box<dyn FnOnce(&mut Option<Tracer>, &Messages) -> JobDone + Send>;

/// What a background thread hands back: the communicator it used (none for a deferred
/// asynchronous checkpoint, which does not communicate), its outcome and the staging
/// buffers, to be reused.
pub(super) struct JobDone {
    pub(super) comm: Option<Box<dyn Comm + Send>>,
    pub(super) result: Result<JobOutcome>,
    pub(super) staging: Vec<Vec<u8>>,
}

/// What a background thread did.
pub(super) enum JobOutcome {
    /// Post-processing of a checkpoint published before.
    Post,
    /// An asynchronous checkpoint published by every rank: its file block, and whether it
    /// recorded the restart in the config file.
    Published(FileBlock, bool),
    /// An asynchronous checkpoint's file written, hashed and synced, not yet published: the
    /// rest (agreement, partner copies or code, publication) is collective and runs on the
    /// application's thread at the next call that waits.
    Written(files::Pending, ftiff::Written),
}

/// An asynchronous checkpoint staged and not yet known to be published.
pub(super) struct InFlight {
    pub(super) info: CheckpointInfo,
    /// When the call started.
    pub(super) started: Instant,
    /// How long the application was stopped (waiting for the previous one, and the copy).
    pub(super) stopped: Duration,
}

/// How much lower than the application's the priority of the background thread is (`nice`
/// steps): when the application and a background checkpoint want the same core, the
/// application mostly gets it; on an idle core the background runs at full speed.
const BACKGROUND_NICE: i32 = 10;

pub(super) struct Worker {
    jobs: Option<Sender<Job>>,
    done: Receiver<JobDone>,
    thread: Option<JoinHandle<()>>,
}

impl Worker {
    /// Starts the thread; with `trace`, it opens its own stream first.
    pub(super) fn start(trace: Option<TracerSpec>, messages: Messages) -> Worker {
        let (jobs, inbox) = channel::<Job>();
        let (outbox, done) = channel();
        let thread = std::thread::spawn(move || {
            lower_priority();
            let mut tracer = trace.and_then(|spec| match spec.start_here() {
                Ok(t) => Some(t),
                Err(e) => {
                    messages.warn(&format!("tracing of the background thread stopped: {e}"));
                    None
                }
            });
            let pool = background_pool();
            // Between jobs the thread is Paused in its trace: idle, not running.
            trace::with(&mut tracer, &messages, Tracer::pause);
            for job in inbox {
                trace::with(&mut tracer, &messages, Tracer::resume);
                // In the background pool, the job's parallel hashing runs on threads of the
                // same low priority.
                let done = match &pool {
                    Some(pool) => pool.install(|| job(&mut tracer, &messages)),
                    None => job(&mut tracer, &messages),
                };
                trace::with(&mut tracer, &messages, Tracer::pause);
                if outbox.send(done).is_err() {
                    break;
                }
            }
            if let Some(Err(e)) = tracer.take().map(Tracer::finish) {
                messages.warn(&format!("tracing of the background thread stopped: {e}"));
            }
        });
        Worker {
            jobs: Some(jobs),
            done,
            thread: Some(thread),
        }
    }

    /// Hands `job` to the thread; gives it back if the thread is gone (a job panicked).
    pub(super) fn submit(&self, job: Job) -> Result<(), Job> {
        match &self.jobs {
            Some(jobs) => jobs.send(job).map_err(|e| e.0),
            None => Err(job),
        }
    }

    /// The outcome of the job submitted last; `None` if the thread is gone (a job panicked).
    pub(super) fn outcome(&self) -> Option<JobDone> {
        self.done.recv().ok()
    }
}

impl Drop for Worker {
    /// Ends the thread (and its trace stream) once its job is done.
    fn drop(&mut self) {
        self.jobs = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The rayon pool of a runtime's background thread: as many threads as cores, at the
/// background's priority. One per runtime: a job blocks its pool thread in collective steps
/// until the other ranks' jobs reach them, and ranks that are threads of one process must not
/// wait for each other's pool threads. `None` if it cannot be made (the jobs then use the
/// global pool).
fn background_pool() -> Option<rayon::ThreadPool> {
    rayon::ThreadPoolBuilder::new()
        .thread_name(|i| format!("fti-background-{i}"))
        .start_handler(|_| lower_priority())
        .build()
        .ok()
}

/// Lowers the calling thread's priority by [`BACKGROUND_NICE`]; the threads it starts inherit
/// it. On Linux a priority is per thread. A failure leaves it at the application's priority.
fn lower_priority() {
    let me = Some(rustix::thread::gettid());
    if let Ok(nice) = rustix::process::getpriority_process(me) {
        let _ = rustix::process::setpriority_process(me, (nice + BACKGROUND_NICE).min(19));
    }
}
