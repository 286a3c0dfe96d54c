//! The checkpoint runtime for one process (one rank).

mod asynchronous;
mod background;
mod exec;
mod finalize;
mod heads;
mod icp;
mod init;
mod post;
mod record;
mod recovery;
mod restart;
mod snapshot;
mod worker;
mod write;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ftiff::raw::FileBlock;
use ftiff::{Checkpoint, Layout, MappedFile};

use crate::io::Stored;

use crate::comm::{Comm, SelfComm};
use crate::config::{Config, Level};
use crate::error::{Error, Misuse, Result, Skipped};
use crate::files::{self, Dirs, Found};
use crate::report::{FtiPrint, Messages, Reporter};
use crate::storage::{Disk, Storage};
use crate::topology::Topology;
use crate::trace::{self, Tracer};
use crate::var::Var;

use background::Background;
use recovery::VerifiedFile;
use snapshot::SnapshotTimer;

pub use exec::{format_utc, new_exec_id};
pub use heads::{FtiMessages, Role};

/// How [`Fti::init_with_options`] starts the runtime.
pub struct Options {
    /// Where the runtime's messages go (default: printed as FTI's `FTI_Print` does).
    /// Messages below the config's `verbosity` (or `FTI_VERBOSITY`) are not passed on.
    pub reporter: std::sync::Arc<dyn Reporter>,
    /// The application's libovni, when it already traces the calling thread: with tracing on,
    /// the runtime's marks go into that stream instead of a stream of its own.
    pub app_ovni: Option<Box<dyn crate::trace::AppOvni>>,
    /// Where the runtime's files go (default: the real file system, [`Disk`]).
    pub storage: Arc<dyn Storage>,
    /// With dedicated heads: FTI 1.1's own messages between application ranks and heads,
    /// which a front end on MPI can carry (default: none).
    pub fti_messages: Option<std::rc::Rc<dyn FtiMessages>>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            reporter: std::sync::Arc::new(FtiPrint),
            app_ovni: None,
            storage: Arc::new(Disk),
            fti_messages: None,
        }
    }
}

/// Whether this run started fresh or restarts from a checkpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    /// No checkpoint to recover: a new execution.
    Fresh,
    /// A checkpoint was found and verified; [`Fti::recover`] (or the first
    /// [`Fti::snapshot`]) restores it.
    Restart(CheckpointInfo),
    /// The restart's checkpoint has been recovered into the variables.
    Recovered(CheckpointInfo),
}

/// A checkpoint on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckpointInfo {
    /// Checkpoint id (the `id` of `checkpoint`, in the file name).
    pub id: i32,
    /// Level it was stored at.
    pub level: Level,
    /// The file.
    pub path: PathBuf,
    /// File size in bytes.
    pub size: u64,
    /// `FB.timestamp`, ns since the Unix epoch.
    pub timestamp: i64,
    /// Bytes written to make it (less than `size` for a differential checkpoint; 0 for a
    /// checkpoint found on disk).
    pub bytes_written: u64,
}

/// A file this process wrote, with what a differential update of it needs.
struct DcpFile {
    id: i32,
    level: Level,
    layout: Layout,
    table: ftiff::BlockTable,
    /// Its file block as written, to recognise the file on disk.
    fb: FileBlock,
}

/// What a call to [`Fti::snapshot`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Snapshot {
    /// Nothing was due.
    Nothing,
    /// The restart's checkpoint was recovered into the variables.
    Recovered(CheckpointInfo),
    /// A checkpoint was taken.
    Checkpointed(CheckpointInfo),
}

/// A checkpoint file verified in full (the restart's chosen checkpoint, or the file
/// `recover_var_from` read last) and still mapped.
pub(crate) struct Restart {
    pub(crate) info: CheckpointInfo,
    map: MappedFile,
    /// `FB.maxFs` (POSIX: `ckpt_file_maxs`), for an L3 rebuild.
    pub(crate) max_fs: u64,
    /// A POSIX file's variables `(id, size)` in file order, from the meta data (an FTI-FF
    /// file says it itself).
    posix_vars: Option<Vec<(i32, u64)>>,
    /// Where this rank's bytes are in the file, and how many (all of it but in MPI-IO's shared
    /// L4 file).
    part: (usize, usize),
}

impl Restart {
    /// The checkpoint's content, parsed again from its map (the meta data only: a walk over
    /// an FTI-FF file's block records). The bytes are those verified: a map is never held
    /// across a checkpoint.
    fn ckpt(&self) -> Result<Stored<'_>> {
        match &self.posix_vars {
            Some(vars) => Ok(Stored::Posix {
                bytes: self
                    .map
                    .bytes()
                    .get(self.part.0..self.part.0 + self.part.1)
                    .ok_or(Error::Internal("a verified part beyond its file"))?,
                vars,
                timestamp: self.info.timestamp,
            }),
            None => Checkpoint::of(&self.map)
                .map(|c| Stored::Ftiff(Box::new(c)))
                .map_err(Error::Format),
        }
    }
}

/// The FTI runtime of one process. See the crate documentation for a complete example.
pub struct Fti {
    cfg: Config,
    /// Where this rank's messages go.
    messages: Messages,
    exec_id: String,
    dirs: Dirs,
    /// Structure of the last checkpoint written or recovered, continued by the next one.
    layout: Option<Layout>,
    last: Option<CheckpointInfo>,
    next_id: i32,
    timer: SnapshotTimer,
    tracer: Option<Tracer>,
    /// The last `keep` files written, oldest first, for differential checkpoints.
    dcp_files: std::collections::VecDeque<DcpFile>,
    /// The open incremental checkpoint.
    icp: Option<Icp>,
    /// The other ranks of the run.
    comm: Box<dyn Comm>,
    /// Where every rank sits (groups and partners).
    topology: Topology,
    /// Node names by node index (`Topology.fti`).
    node_names: Vec<String>,
    /// The restart and what recovery keeps.
    recovery: Recovery,
    /// The config file does not yet say `failure = 1` for this execution (a fresh run
    /// before its first checkpoint was recorded).
    restart_record_pending: bool,
    /// The background thread's work: post-processing, asynchronous checkpoints.
    background: Background,
    /// With heads: this process's role and the way to the other side.
    heads: Option<heads::Link>,
}

/// The restart and what recovery keeps between calls.
struct Recovery {
    /// Fresh run, restart, or restart recovered.
    status: Status,
    /// The restart's checkpoint, verified and mapped, until it is recovered.
    restart: Option<Restart>,
    /// Why newer checkpoints were passed over at restart.
    skipped: Vec<Skipped>,
    /// How the restart's checkpoint was obtained, for the user.
    note: Option<String>,
    /// The last checkpoint file verified in full for single-variable recovery.
    verified: Option<VerifiedFile>,
}

impl Default for Recovery {
    fn default() -> Self {
        Recovery {
            status: Status::Fresh,
            restart: None,
            skipped: Vec::new(),
            note: None,
            verified: None,
        }
    }
}

/// An incremental checkpoint between `init_icp` and `finalize_icp`.
struct Icp {
    id: i32,
    level: Level,
    write_level: Level,
    writer: ftiff::Incremental,
    pending: files::Pending,
    started: Instant,
}

impl Fti {
    /// Starts the runtime: decides between a fresh run and a restart, and on a restart finds
    /// the newest checkpoint of this rank that verifies (falling back to older ones and other
    /// levels; [`Fti::skipped`] says why newer ones were not used).
    ///
    /// A restart is requested by the config (`[restart] failure = 1 or 2` with `exec_id`, as FTI
    /// writes it). Without those keys, the newest execution directory holding checkpoints of
    /// this rank is used. `failure = 0` always starts fresh.
    pub fn init(cfg: Config) -> Result<Fti> {
        Fti::init_with(cfg, Box::new(SelfComm))
    }

    /// As [`Fti::init`], for one rank of a multi-rank run: every rank of `comm` calls it
    /// (collectively). The ranks agree on the execution id and on the checkpoint to restart
    /// from; L2 and L3 checkpoints send files between them.
    pub fn init_with(cfg: Config, comm: Box<dyn Comm>) -> Result<Fti> {
        Fti::init_with_options(cfg, comm, Options::default())
    }

    /// As [`Fti::init_with`], with [`Options`]: where messages go, and the application's
    /// own libovni to trace into.
    ///
    /// With heads (`head = 1`) it returns on every process: see [`Fti::role`] and
    /// [`Fti::serve_as_head`].
    pub fn init_with_options(cfg: Config, comm: Box<dyn Comm>, options: Options) -> Result<Fti> {
        if cfg.head {
            return heads::start(cfg, comm, options);
        }
        Fti::start(cfg, comm, options)
    }

    /// The runtime of a rank of the application's communicator `comm`.
    fn start(cfg: Config, comm: Box<dyn Comm>, options: Options) -> Result<Fti> {
        init::configure(cfg, comm, options)
            .place()?
            .choose_execution()?
            .trace()?
            .ready()
    }

    /// How the restart's checkpoint was obtained: its level, and whether files were rebuilt
    /// from partner copies (`None` on a fresh run).
    pub fn recovery_note(&self) -> Option<&str> {
        self.recovery.note.as_deref()
    }

    /// The communicator of the run (for an application's own collective steps); with heads,
    /// on an application rank, the application's ranks only (FTI's `FTI_COMM_WORLD`).
    pub fn comm(&self) -> &dyn Comm {
        &*self.comm
    }

    /// This rank's place in the run (its group and partners).
    pub fn topology(&self) -> &Topology {
        &self.topology
    }

    /// Fresh run or restart.
    pub fn status(&self) -> &Status {
        &self.recovery.status
    }

    /// The execution id (`YYYY-MM-DD_HH-MM-SS`, UTC) naming this run's directories.
    pub fn exec_id(&self) -> &str {
        &self.exec_id
    }

    /// The directories of this run and rank.
    pub fn dirs(&self) -> &Dirs {
        &self.dirs
    }

    /// Why newer checkpoints were not used at restart, newest first (each displays as one
    /// line).
    pub fn skipped(&self) -> &[Skipped] {
        &self.recovery.skipped
    }

    /// The last checkpoint written (or recovered) in this run.
    pub fn last_checkpoint(&self) -> Option<&CheckpointInfo> {
        self.last.as_ref()
    }

    /// The size of variable `id` in the restart's checkpoint (to size a buffer before
    /// [`Fti::recover`], as `FTI_GetStoredSize` and `FTI_Realloc` do), or in the last checkpoint.
    pub fn stored_size(&self, id: i32) -> Option<u64> {
        if let Some(r) = &self.recovery.restart {
            return r.ckpt().ok()?.var(id).map(|v| v.size);
        }
        let layout = self.layout.as_ref()?;
        layout
            .vars()
            .into_iter()
            .find(|v| v.id == id)
            .map(|v| v.size)
    }

    /// Writes checkpoint `id` at `level` with the variables in protect order. The new file is
    /// published atomically; the previous checkpoint stays recoverable until it is.
    pub fn checkpoint(
        &mut self,
        id: i32,
        level: Level,
        vars: &[Var<'_>],
    ) -> Result<CheckpointInfo> {
        self.check_not_head()?;
        self.release_maps();
        if let Some(plan) = self.asynchronous(level, vars) {
            return self.checkpoint_async(id, level, vars, plan);
        }
        // A rank that cannot checkpoint still takes part in the collective steps (it reports
        // its error there), so that the other ranks never wait for it.
        let waited = self.wait_traced();
        let ready = waited
            .and_then(|()| self.check_level(level))
            .and_then(|()| self.ready_for(vars));
        let started = Instant::now();
        trace::with(&mut self.tracer, &self.messages, |t| {
            t.begin_checkpoint(id, level)
        });
        let result = self.write_and_publish(id, level, vars, ready);
        let (path, layout, fb, bytes_written) =
            result.map_err(|e| self.checkpoint_failed(id, level, e))?;
        trace::with(&mut self.tracer, &self.messages, |t| {
            t.end_checkpoint(id, level, layout.file_size())
        });
        let info = CheckpointInfo {
            id,
            level,
            size: crate::io::file_size(&self.dirs.io, &layout, &fb),
            timestamp: fb.timestamp,
            bytes_written,
            path,
        };
        if let Err(e) = self.after_checkpoint(&info, layout, started) {
            self.say_failed(id, level);
            return Err(e);
        }
        Ok(info)
    }

    /// Drops the maps of checkpoint files this process keeps between calls (the file
    /// `recover_var_from` verified last): a checkpoint about to start may take such a file
    /// and rewrite it in place (`docs/crash-safety.md`, *Memory maps*). The restart's own map
    /// is gone already: no checkpoint is taken before the restart is recovered.
    fn release_maps(&mut self) {
        self.recovery.verified = None;
    }

    /// A checkpoint that failed midway: its open trace marks are closed, FTI's warning is
    /// said, and `err` is returned.
    fn checkpoint_failed(&mut self, id: i32, level: Level, err: Error) -> Error {
        trace::with(&mut self.tracer, &self.messages, Tracer::close_all);
        self.say_failed(id, level);
        err
    }

    /// FTI's warning for a checkpoint that failed.
    fn say_failed(&self, id: i32, level: Level) {
        self.messages.warn(&format!(
            "Checkpoint with ID {id} at Level {} failed.",
            level.number()
        ));
    }

    /// Refuses a checkpoint while an incremental one is open or a restart is not recovered,
    /// and variables protected twice.
    fn ready_for(&self, vars: &[Var<'_>]) -> Result<()> {
        if self.icp.is_some() {
            return Err(Error::State(Misuse::IncrementalOpen));
        }
        if matches!(self.recovery.status, Status::Restart(_)) {
            return Err(Error::State(Misuse::NotRecovered));
        }
        check_unique_ids(vars)
    }

    /// Bookkeeping after a checkpoint is published: structure to continue, config record,
    /// snapshot clock, message.
    fn after_checkpoint(
        &mut self,
        info: &CheckpointInfo,
        layout: Layout,
        started: Instant,
    ) -> Result<()> {
        self.layout = Some(layout);
        self.last = Some(info.clone());
        self.next_id = self.next_id.max(info.id.saturating_add(1));
        self.record_first_checkpoint()?;
        self.timer.excluded += started.elapsed();
        let how = format!("{} of {} bytes written", info.bytes_written, info.size);
        self.say_taken(info, started.elapsed(), &how);
        Ok(())
    }

    /// FTI's message for a checkpoint taken (`Ckpt. ID … (LK) (x MB/proc) taken in t sec.`),
    /// with `how` in parentheses after it.
    fn say_taken(&self, info: &CheckpointInfo, took: Duration, how: &str) {
        let data: u64 = self
            .layout
            .as_ref()
            .map_or(0, |l| l.vars().iter().map(|v| v.size).sum());
        self.messages.info(&format!(
            "Ckpt. ID {} (L{}) ({:.2} MB/proc) taken in {:.2} sec. ({how})",
            info.id,
            info.level.number(),
            data as f64 / (1024.0 * 1024.0),
            took.as_secs_f64(),
        ));
        // FTI's post-checkpoint mark of the node's first application rank (FTI's nodeFlag):
        // one rank per node and level, which FTI's test suite checks.
        if let Some(place) = self
            .topology
            .place(self.cfg.rank)
            .filter(|p| p.position == 0)
        {
            self.messages.debug(&format!(
                "Has nodeFlag = 1 and nodeID = {}. CkptLvel = {}.",
                place.node,
                info.level.number()
            ));
        }
    }

    /// Refuses levels this run cannot do: L2 and L3 need a group of at least two ranks.
    fn check_level(&self, level: Level) -> Result<()> {
        let group = self
            .topology
            .place(self.cfg.rank)
            .map_or(1, |p| p.group.len());
        match level {
            Level::L2 | Level::L3 if group < 2 => Err(Error::NeedsMpi(level)),
            _ => Ok(()),
        }
    }
}

impl Drop for Fti {
    /// A runtime dropped without `finalize` (an early return, a panic unwinding) still ends
    /// its trace properly; its checkpoints stay for the restart.
    fn drop(&mut self) {
        if std::thread::panicking() && self.background.writing() {
            // Completing a deferred checkpoint takes every rank's part, and the others may
            // never come: it stays unpublished (the previous checkpoint is the restart's).
            let _ = self.background.finish();
        } else {
            // Post-processing finishes first: its files are part of the checkpoint.
            let _ = self.wait();
        }
        if let Some(t) = self.tracer.take() {
            let _ = t.finish();
        }
    }
}

fn check_unique_ids(vars: &[Var<'_>]) -> Result<()> {
    for (i, v) in vars.iter().enumerate() {
        if vars[..i].iter().any(|w| w.id == v.id) {
            return Err(Error::Variable {
                id: v.id,
                what: "protected twice in the same call".into(),
            });
        }
    }
    Ok(())
}

/// Opens, parses and verifies a candidate (as its I/O mode says: [`crate::io::verify_own`]).
pub(crate) fn open_verified(
    dirs: &Dirs,
    found: &Found,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<Restart> {
    let verified = crate::io::verify_own(dirs, found, progress)?;
    let mut restart = Restart {
        info: CheckpointInfo {
            id: found.id,
            level: found.level,
            path: found.path.clone(),
            size: verified.part.1 as u64,
            timestamp: 0,
            bytes_written: 0,
        },
        map: verified.map,
        max_fs: verified.max_fs,
        posix_vars: verified.vars,
        part: verified.part,
    };
    restart.info.timestamp = match restart.posix_vars {
        Some(_) => dirs.storage.stat(&found.path).map_or(0, |s| s.modified_ns),
        None => restart.ckpt()?.timestamp(),
    };
    Ok(restart)
}
