//! The checkpoint runtime for one process (one rank).

mod asynchronous;
mod exec;
mod icp;
mod recovery;
mod restart;

use exec::fresh_exec_id;
pub use exec::{format_utc, new_exec_id};
use recovery::{found_info, VerifiedFile};
use restart::{check_rank_count, newest_exec_with_checkpoints};

use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use std::collections::HashMap;

use ftiff::raw::FileBlock;
use ftiff::{Checkpoint, Layout, MappedFile, VarSize, WriteOptions};

use crate::comm::{Comm, CommExt, SelfComm};
use crate::config::{self, Config, Level};
use crate::error::{Error, Result};
use crate::levels::{self, agree, Holds, Plan};
use crate::report::{FtiPrint, Messages, Reporter};
use crate::store::{self, Dirs, Found};
use crate::topology::Topology;
use crate::trace::{self, Phase, Tracer};
use crate::var::Var;

/// How [`Fti::init_with_options`] starts the runtime.
pub struct Options {
    /// Where the runtime's messages go (default: printed as FTI's `FTI_Print` does).
    /// Messages below the config's `verbosity` (or `FTI_VERBOSITY`) are not passed on.
    pub reporter: std::sync::Arc<dyn Reporter>,
    /// The application's libovni, when it already traces the calling thread: with tracing on,
    /// the runtime's marks go into that stream instead of a stream of its own.
    pub app_ovni: Option<Box<dyn crate::trace::AppOvni>>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            reporter: std::sync::Arc::new(FtiPrint),
            app_ovni: None,
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

/// The restart's chosen checkpoint, verified and mapped.
struct Restart {
    info: CheckpointInfo,
    ckpt: Checkpoint,
    map: MappedFile,
}

/// The FTI runtime of one process. See the crate documentation for a complete example.
pub struct Fti {
    cfg: Config,
    /// Where this rank's messages go.
    messages: Messages,
    exec_id: String,
    dirs: Dirs,
    status: Status,
    restart: Option<Restart>,
    /// Structure of the last checkpoint written or recovered, continued by the next one.
    layout: Option<Layout>,
    last: Option<CheckpointInfo>,
    /// Why newer checkpoints were passed over at restart.
    skipped: Vec<String>,
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
    /// How the restart's checkpoint was obtained, for the user.
    recovery_note: Option<String>,
    /// The last checkpoint file verified in full for single-variable recovery.
    verified: Option<VerifiedFile>,
    /// The config file does not yet say `failure = 1` for this execution (a fresh run
    /// before its first checkpoint was recorded).
    restart_record_pending: bool,
    /// Staging buffers of asynchronous checkpoints (by protect position), reused.
    staging: Vec<Vec<u8>>,
    /// The asynchronous checkpoint in flight.
    in_flight: Option<InFlight>,
    /// The communicator of background post-processing, when idle.
    bg_comm: Option<Box<dyn Comm + Send>>,
    /// Background post-processing under way, with its communicator to give back.
    bg_job: Option<BackgroundJob>,
}

/// A background thread: post-processing, or an asynchronous checkpoint.
type BackgroundJob = std::thread::JoinHandle<JobDone>;

/// What a background thread hands back: its communicator, its outcome (for an asynchronous
/// checkpoint, the file block written and whether it recorded the restart in the config
/// file) and the staging buffers, to be reused.
struct JobDone {
    comm: Box<dyn Comm + Send>,
    result: Result<Option<(FileBlock, bool)>>,
    staging: Vec<Vec<u8>>,
}

/// An asynchronous checkpoint staged and not yet known to be published.
struct InFlight {
    info: CheckpointInfo,
    /// When the call started.
    started: Instant,
    /// How long the application was stopped (waiting for the previous one, and the copy).
    stopped: Duration,
}

/// An incremental checkpoint between `init_icp` and `finalize_icp`.
struct Icp {
    id: i32,
    level: Level,
    write_level: Level,
    writer: ftiff::Incremental,
    pending: store::Pending,
    started: Instant,
}

/// FTI_Snapshot's clock: time spent computing (checkpoints excluded) against each level's
/// interval; every level that is due counts one more interval, the highest one is taken.
struct SnapshotTimer {
    start: Instant,
    excluded: Duration,
    counts: [u32; 4],
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
    pub fn init_with_options(
        mut cfg: Config,
        comm: Box<dyn Comm>,
        options: Options,
    ) -> Result<Fti> {
        let Options { reporter, app_ovni } = options;
        // A one-rank comm keeps the config's rank: one process may act as any rank of a run
        // (restarting that rank's files alone, as the tools do).
        if comm.size() > 1 {
            cfg.rank = comm.rank();
            cfg.nranks = comm.size();
        }
        let messages = Messages::new(cfg.rank, cfg.verbosity, reporter);
        cfg.verbosity = messages.verbosity;
        if let Some(path) = &cfg.path {
            messages.info(&format!(
                "Reading FTI configuration file ({})...",
                path.display()
            ));
        }
        // Every rank read the same file: its remarks are said once.
        if cfg.rank == 0 {
            for w in &cfg.warnings {
                messages.warn(w);
            }
            for n in &cfg.notes {
                messages.info(n);
            }
        }
        let (topology, node_names) = build_topology(&cfg, &*comm)?;
        let bg_comm = if cfg.inline_l2 && cfg.inline_l4 && !cfg.async_ckpt {
            None
        } else {
            let bg = comm.background();
            if bg.is_none() && cfg.rank == 0 {
                messages.warn(
                    "inline_l2/inline_l4 = 0 or async_ckpt = 1 asks for work in the background, but the run cannot communicate from a second thread (MPI without MPI_THREAD_MULTIPLE): it runs inline",
                );
            }
            bg
        };
        let group = topology.place(cfg.rank).map_or(1, |p| p.group.len());
        for (level, interval) in [(Level::L2, cfg.intervals[1]), (Level::L3, cfg.intervals[2])] {
            if interval.is_some() && group < 2 {
                return Err(Error::NeedsMpi(level));
            }
        }
        let restart_exec = match (cfg.failure, &cfg.exec_id) {
            (Some(0), _) => None,
            (Some(_), Some(id)) => {
                config::check_exec_id(id).map_err(|what| Error::Config {
                    path: cfg.path.clone().unwrap_or_default(),
                    line: 0,
                    what,
                })?;
                Some(id.clone())
            }
            (Some(_), None) => {
                return Err(Error::Config {
                    path: cfg.path.clone().unwrap_or_default(),
                    line: 0,
                    what: "[restart] failure asks for a restart but exec_id is not set".into(),
                })
            }
            // A rank whose node was lost finds nothing: the newest any rank has wins.
            (None, _) => {
                levels::agree_newest(&*comm, newest_exec_with_checkpoints(&cfg).as_deref())
            }
        };
        let exec_id = match &restart_exec {
            Some(id) => id.clone(),
            None => fresh_exec_id(&cfg, &*comm),
        };
        if restart_exec.is_some() {
            // Before anything is written, so that a refused restart leaves no trace.
            check_rank_count(&cfg, &exec_id, &*comm)?;
        }
        let dirs = Dirs::new(&cfg, &exec_id);
        messages.info(&if restart_exec.is_some() {
            format!("This is a restart. The execution ID is: {exec_id}")
        } else {
            format!("The execution ID is: {exec_id}")
        });
        messages.info("Selected Ckpt I/O is FTI-FF");
        let tracer = if cfg.trace || std::env::var("FTI_TRACE").is_ok_and(|v| v == "1") {
            Some(match app_ovni {
                // Two writers on the thread's stream would corrupt it: the marks go into the
                // application's.
                Some(app) => Tracer::start_app(app, cfg.trace_mark_base).map_err(|what| {
                    Error::Config {
                        path: cfg.path.clone().unwrap_or_default(),
                        line: 0,
                        what,
                    }
                }),
                None if cfg.trace_app => Err(Error::Config {
                    path: cfg.path.clone().unwrap_or_default(),
                    line: 0,
                    what: "[basic] trace = app, but this thread is not traced by the application's libovni (ovni_thread_init before FTI_Init): nothing to trace into".into(),
                }),
                None => Tracer::start(&cfg.trace_dir, cfg.rank, cfg.nranks, cfg.trace_mark_base)
                    .map_err(Error::Trace),
            })
        } else {
            None
        };
        let tracer = agree(&*comm, "starting the trace", tracer.transpose())?;
        if tracer.as_ref().is_some_and(Tracer::in_app_stream) {
            messages.info("tracing into the application's ovni stream");
        }
        let mut fti = Fti {
            messages,
            dirs,
            exec_id,
            status: Status::Fresh,
            restart: None,
            layout: None,
            last: None,
            skipped: Vec::new(),
            next_id: 1,
            timer: SnapshotTimer {
                start: Instant::now(),
                excluded: Duration::ZERO,
                counts: [1; 4],
            },
            tracer,
            dcp_files: Default::default(),
            icp: None,
            comm,
            topology,
            node_names,
            recovery_note: None,
            restart_record_pending: true,
            verified: None,
            staging: Vec::new(),
            in_flight: None,
            bg_comm,
            bg_job: None,
            cfg,
        };
        if restart_exec.is_some() {
            trace::with(&mut fti.tracer, &fti.messages, |t| t.begin(Phase::Verify));
            fti.find_restart();
            trace::with(&mut fti.tracer, &fti.messages, |t| t.end(Phase::Verify));
        }
        let topology = if fti.restart.is_none() && fti.cfg.rank == 0 {
            fti.write_topology()
        } else {
            Ok(())
        };
        agree(&*fti.comm, "writing Topology.fti", topology)?;
        fti.messages.info("FTI has been initialized.");
        Ok(fti)
    }

    /// How the restart's checkpoint was obtained: its level, and whether files were rebuilt
    /// from partner copies (`None` on a fresh run).
    pub fn recovery_note(&self) -> Option<&str> {
        self.recovery_note.as_deref()
    }

    /// The communicator of the run (for an application's own collective steps).
    pub fn comm(&self) -> &dyn Comm {
        &*self.comm
    }

    /// This rank's place in the run (its group and partners).
    pub fn topology(&self) -> &Topology {
        &self.topology
    }

    /// Fresh run or restart.
    pub fn status(&self) -> &Status {
        &self.status
    }

    /// The execution id (`YYYY-MM-DD_HH-MM-SS`, UTC) naming this run's directories.
    pub fn exec_id(&self) -> &str {
        &self.exec_id
    }

    /// The directories of this run and rank.
    pub fn dirs(&self) -> &Dirs {
        &self.dirs
    }

    /// Why newer checkpoints were not used at restart, one line each.
    pub fn skipped(&self) -> &[String] {
        &self.skipped
    }

    /// The last checkpoint written (or recovered) in this run.
    pub fn last_checkpoint(&self) -> Option<&CheckpointInfo> {
        self.last.as_ref()
    }

    /// The size of variable `id` in the restart's checkpoint (to size a buffer before
    /// [`Fti::recover`], as `FTI_GetStoredSize` and `FTI_Realloc` do), or in the last checkpoint.
    pub fn stored_size(&self, id: i32) -> Option<u64> {
        if let Some(r) = &self.restart {
            return r.ckpt.var(id).ok().map(|v| v.size);
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
        if self.asynchronous(level, vars) {
            return self.checkpoint_async(id, level, vars);
        }
        // A rank that cannot checkpoint still takes part in the collective steps (it reports
        // its error there), so that the other ranks never wait for it.
        let waited = self.wait();
        let ready = waited
            .and_then(|()| self.check_level(level))
            .and_then(|()| self.ready_for(vars));
        let started = Instant::now();
        trace::with(&mut self.tracer, &self.messages, |t| {
            t.begin_checkpoint(id, level)
        });
        let result = self.write_and_publish(id, level, vars, ready);
        let (path, layout, fb, bytes_written) = match result {
            Ok(done) => done,
            Err(e) => {
                trace::with(&mut self.tracer, &self.messages, Tracer::close_all);
                self.messages.warn(&format!(
                    "Checkpoint with ID {id} at Level {} failed.",
                    level.number()
                ));
                return Err(e);
            }
        };
        trace::with(&mut self.tracer, &self.messages, |t| {
            t.end_checkpoint(id, level, layout.file_size())
        });
        let info = CheckpointInfo {
            id,
            level,
            size: layout.file_size(),
            timestamp: fb.timestamp,
            bytes_written,
            path,
        };
        if let Err(e) = self.after_checkpoint(&info, layout, started) {
            self.messages.warn(&format!(
                "Checkpoint with ID {id} at Level {} failed.",
                level.number()
            ));
            return Err(e);
        }
        Ok(info)
    }

    /// Refuses a checkpoint while an incremental one is open or a restart is not recovered,
    /// and variables protected twice.
    fn ready_for(&self, vars: &[Var<'_>]) -> Result<()> {
        if self.icp.is_some() {
            return Err(Error::State(
                "an incremental checkpoint is open: finalize it first",
            ));
        }
        if matches!(self.status, Status::Restart(_)) {
            return Err(Error::State(
                "recover the restart's checkpoint before writing a new one",
            ));
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
        if self.restart_record_pending {
            // Until the config file says `failure = 1` for this execution, a restart would
            // start fresh beside valid checkpoints: every rank fails the checkpoint until
            // rank 0 has made the record durable (its files stay published).
            let recorded = self.record_in_config(1);
            let what = match &self.cfg.path {
                Some(p) => format!("recording the restart in {}", p.display()),
                None => "recording the restart in the config file".to_owned(),
            };
            agree(&*self.comm, &what, recorded)?;
            self.restart_record_pending = false;
        }
        self.timer.excluded += started.elapsed();
        let data: u64 = self
            .layout
            .as_ref()
            .map_or(0, |l| l.vars().iter().map(|v| v.size).sum());
        self.messages.info(&format!(
            "Ckpt. ID {} (L{}) ({:.2} MB/proc) taken in {:.2} sec. ({} of {} bytes written)",
            info.id,
            info.level.number(),
            data as f64 / (1024.0 * 1024.0),
            started.elapsed().as_secs_f64(),
            info.bytes_written,
            info.size,
        ));
        Ok(())
    }

    /// The write options the config asks for.
    fn write_options(&self) -> WriteOptions {
        let integrity = if self.cfg.fast_integrity {
            ftiff::Integrity::fast(self.cfg.dcp_block_size).unwrap_or(ftiff::Integrity::Md5)
        } else {
            ftiff::Integrity::Md5
        };
        let table =
            (self.cfg.dcp && integrity == ftiff::Integrity::Md5).then_some(ftiff::Blocking {
                size: self.cfg.dcp_block_size,
                hash: self.cfg.dcp_hash,
            });
        WriteOptions {
            integrity,
            table,
            ..WriteOptions::default()
        }
    }

    /// Checkpoints kept per level: differential checkpoints need the one before the last as
    /// the base of the next.
    fn keep(&self) -> usize {
        if self.cfg.dcp {
            self.cfg.keep_ckpts.max(2)
        } else {
            self.cfg.keep_ckpts
        }
    }

    /// The file a differential checkpoint at `level` can update in place: the oldest of the
    /// `keep` files kept (the one the new checkpoint would push out of the window), if this
    /// process wrote it, it is still on disk exactly as written (same file block) and it is
    /// not the newest checkpoint. With `keep = 2` the runtime alternates between two files.
    fn take_dcp_base(&mut self, level: Level) -> Option<(PathBuf, DcpFile)> {
        let keep = self.keep();
        if !self.cfg.dcp || self.dcp_files.len() < keep || self.dcp_files[0].level != level {
            return None;
        }
        let base = self.dcp_files.pop_front()?;
        let newest = self.dcp_files.back().map(|f| f.id);
        if newest == Some(base.id) {
            return None;
        }
        let all = store::find_checkpoints(&self.dirs);
        let found = all
            .iter()
            .find(|f| f.id == base.id && f.level == level)?
            .clone();
        // Never give up the last checkpoint of this level or above (an L4 one must not leave
        // the global file system empty while it is rewritten).
        if !all.iter().any(|f| f.level >= level && f.path != found.path) {
            return None;
        }
        let mut head = [0u8; ftiff::raw::fb::SIZE];
        let file = ftiff::open_regular(&found.path).ok()?;
        std::os::unix::fs::FileExt::read_exact_at(&file, &mut head, 0).ok()?;
        let fb = ftiff::raw::FileBlock::parse(&mut ftiff::raw::Cursor::new(&head, 0)).ok()?;
        (fb == base.fb).then_some((found.path, base))
    }

    /// Plans, writes and publishes one checkpoint file (updating an older file in place for a
    /// differential checkpoint); returns its path, its layout, its file block and the bytes
    /// written.
    fn write_and_publish(
        &mut self,
        id: i32,
        level: Level,
        vars: &[Var<'_>],
        ready: Result<()>,
    ) -> Result<(PathBuf, Layout, FileBlock, u64)> {
        let sizes: Vec<VarSize> = vars
            .iter()
            .map(|v| VarSize {
                id: v.id,
                size: v.size(),
            })
            .collect();
        let layout = match ready.and_then(|()| Ok(Layout::plan(self.layout.as_ref(), &sizes)?)) {
            Ok(layout) => layout,
            Err(e) => return agree(&*self.comm, "writing the checkpoint", Err(e)),
        };
        let by_id: HashMap<i32, &[u8]> = vars.iter().map(|v| (v.id, &*v.bytes)).collect();
        // Buffers by protect position; a removed variable has none.
        let data: Vec<&[u8]> = layout
            .vars()
            .iter()
            .map(|v| by_id.get(&v.id).copied().unwrap_or(&[]))
            .collect();
        let opts = self.write_options();
        let keep = self.keep();
        let write_level = if level == Level::L4 && !self.cfg.inline_l4 {
            Level::L1
        } else {
            level
        };
        let base = self.take_dcp_base(write_level);
        let pending = match store::begin(
            &self.dirs,
            write_level,
            id,
            base.as_ref().map(|(p, _)| p.as_path()),
        ) {
            Ok(p) => p,
            Err(e) => return agree(&*self.comm, "writing the checkpoint", Err(e)),
        };
        let bar = progress_bar(
            &self.cfg,
            layout.file_size(),
            format!("checkpoint {id} ({level})"),
        );
        let progress = |n| bar.set_position(n);
        trace::with(&mut self.tracer, &self.messages, |t| t.begin(Phase::Write));
        let written = agree(
            &*self.comm,
            "writing the checkpoint",
            match &base {
                Some((_, b)) => ftiff::update_file(
                    &pending.file,
                    Some((&b.layout, &b.table)),
                    &layout,
                    &data,
                    &opts,
                    &progress,
                ),
                None => {
                    ftiff::write_file_with_progress(&pending.file, &layout, &data, &opts, &progress)
                }
            }
            .map_err(|e| Error::Format(e.with_path(&pending.path))),
        )?;
        bar.finish_and_clear();
        trace::with(&mut self.tracer, &self.messages, |t| t.end(Phase::Write));
        let (path, fb) = self.publish_checkpoint(id, level, write_level, pending, written.fb)?;
        let written = ftiff::Written { fb, ..written };
        match written.table {
            Some(table) if self.cfg.dcp => {
                self.dcp_files.push_back(DcpFile {
                    id,
                    level: write_level,
                    layout: layout.clone(),
                    table,
                    fb: written.fb,
                });
                while self.dcp_files.len() > keep {
                    self.dcp_files.pop_front();
                }
            }
            _ => self.dcp_files.clear(),
        }
        Ok((path, layout, written.fb, written.bytes_written))
    }

    /// This rank's place in the topology (its group and partners).
    fn my_place(&self) -> Result<crate::topology::Place> {
        self.topology
            .place(self.cfg.rank)
            .cloned()
            .ok_or(Error::State("this rank is not in the topology"))
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

    /// Publishes a written checkpoint file on every rank (collective): at L2 first sets
    /// `ptFs` and sends the file to the right partner while receiving the left partner's
    /// copy; then each rank publishes its files; only once every rank has, older checkpoints
    /// are retired. An L4 checkpoint written locally (`inline_l4 = 0`) is then flushed to the
    /// global directory the same way. Returns the published path and file block.
    fn publish_checkpoint(
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
                    let copy = levels::exchange_copies(
                        &*self.comm,
                        &self.dirs,
                        id,
                        &plan,
                        Some(&pending.file),
                    );
                    agree(&*self.comm, "L2 partner copy", copy).map(|c| (Some(c), fb, None))
                });
                trace::with(&mut self.tracer, &self.messages, |t| t.end(Phase::Partner));
                done?
            }
            Level::L3 => {
                trace::with(&mut self.tracer, &self.messages, |t| {
                    t.begin(Phase::Partner)
                });
                let done = self.encode_l3(id, &pending, fb);
                trace::with(&mut self.tracer, &self.messages, |t| t.end(Phase::Partner));
                let (copy, fb) = done?;
                (copy, fb, None)
            }
            _ => (None, fb, None),
        };
        let local = store::publish_pending(&self.dirs, pending).and_then(|path| match copy {
            Some(c) => store::publish_pending(&self.dirs, c).map(|_| path),
            None => Ok(path),
        });
        let mut path = agree(&*self.comm, "publishing the checkpoint", local)?;
        trace::with(&mut self.tracer, &self.messages, |t| t.end(Phase::Publish));
        if let Some(plan) = partner {
            // Every rank's own file is published: the partner copies follow in the background,
            // and only then are older checkpoints retired.
            let (dirs, own) = (self.dirs.clone(), path.clone());
            self.spawn_post(move |comm| {
                let file = File::open(&own).map_err(|e| Error::io(&own, e));
                let copy = levels::exchange_copies(comm, &dirs, id, &plan, file.as_ref().ok());
                let published = file
                    .and(copy)
                    .and_then(|c| store::publish_pending(&dirs, c));
                agree(comm, "L2 partner copy", published)?;
                store::retire(&dirs, Level::L2, id, keep, true)
            });
            return Ok((path, fb));
        }
        store::retire(&self.dirs, write_level, id, keep, true)?;
        if write_level != level {
            let flush = move |comm: &dyn Comm, dirs: &Dirs, local: &Path| -> Result<PathBuf> {
                let done = store::begin(dirs, level, id, None).and_then(|p| {
                    let mut src = File::open(local).map_err(|e| Error::io(local, e))?;
                    std::io::copy(&mut src, &mut &p.file).map_err(|e| Error::io(&p.path, e))?;
                    store::publish_pending(dirs, p)
                });
                let path = agree(comm, "flushing the checkpoint to L4", done)?;
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
    fn spawn_post(&mut self, job: impl FnOnce(&dyn Comm) -> Result<()> + Send + 'static) {
        if let Some(comm) = self.bg_comm.take() {
            self.bg_job = Some(std::thread::spawn(move || {
                let result = job(&*comm).map(|()| None);
                JobDone {
                    comm,
                    result,
                    staging: Vec::new(),
                }
            }));
        }
    }

    /// Whether post-processing runs in the background thread (asked by `inline_l2 = 0` or
    /// `inline_l4 = 0`, and possible in this run).
    pub fn background_post_processing(&self) -> bool {
        self.bg_comm.is_some() || self.bg_job.is_some()
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
        let Some(job) = self.bg_job.take() else {
            return Ok(());
        };
        let done = match job.join() {
            Ok(done) => done,
            Err(_) => {
                self.in_flight = None;
                return Err(Error::State("the background thread panicked"));
            }
        };
        self.bg_comm = Some(done.comm);
        if !done.staging.is_empty() {
            self.staging = done.staging;
        }
        let in_flight = self.in_flight.take();
        match (done.result, in_flight) {
            (Ok(Some((fb, recorded))), Some(f)) => {
                let info = CheckpointInfo {
                    timestamp: fb.timestamp,
                    ..f.info
                };
                if recorded {
                    self.restart_record_pending = false;
                }
                let data: u64 = self
                    .layout
                    .as_ref()
                    .map_or(0, |l| l.vars().iter().map(|v| v.size).sum());
                self.messages.info(&format!(
                    "Ckpt. ID {} (L{}) ({:.2} MB/proc) taken in {:.2} sec. (asynchronous: the application was stopped {:.3} s)",
                    info.id,
                    info.level.number(),
                    data as f64 / (1024.0 * 1024.0),
                    f.started.elapsed().as_secs_f64(),
                    f.stopped.as_secs_f64(),
                ));
                self.last = Some(info);
                Ok(())
            }
            (Ok(_), _) => Ok(()),
            (Err(e), f) => {
                if let Some(f) = f {
                    self.messages.warn(&format!(
                        "Checkpoint with ID {} at Level {} failed.",
                        f.info.id,
                        f.info.level.number()
                    ));
                }
                Err(e)
            }
        }
    }

    /// L2, first step: records the left partner's file size in `ptFs` and plans the exchange
    /// of files within the group (collective).
    fn partner_plan(
        &mut self,
        pending: &store::Pending,
        fb: FileBlock,
    ) -> Result<(levels::PartnerPlan, FileBlock)> {
        let place = self.my_place()?;
        store::crash_point("partner");
        let sizes = levels::gather_u64(&*self.comm, fb.fs as u64);
        let plan = levels::PartnerPlan {
            left: place.left(),
            right: place.right(),
            own_fs: fb.fs as u64,
            left_fs: sizes[place.left() as usize],
            rounds: levels::rounds_for(place.group.iter().map(|&r| sizes[r as usize])),
        };
        let fb = levels::set_fb(&pending.file, &pending.path, |b| {
            b.pt_fs = plan.left_fs as i64
        });
        agree(&*self.comm, "L2 partner copy", fb.map(|fb| (plan, fb)))
    }

    /// L3: sets `maxFs` (the largest file of the group) in this rank's file, then encodes the
    /// group's files into this rank's `Ckpt<id>-RSed<r>.fti` (FTI 1.1's Reed-Solomon code).
    fn encode_l3(
        &mut self,
        id: i32,
        pending: &store::Pending,
        fb: FileBlock,
    ) -> Result<(Option<store::Pending>, FileBlock)> {
        let place = self.my_place()?;
        store::crash_point("partner");
        let sizes = levels::gather_u64(&*self.comm, fb.fs as u64);
        let max_fs = place
            .group
            .iter()
            .map(|&r| sizes[r as usize])
            .max()
            .unwrap_or(0);
        let fb = levels::set_fb(&pending.file, &pending.path, |b| b.max_fs = max_fs as i64);
        let rsed = store::begin_named(
            &self.dirs,
            Level::L3,
            id,
            crate::l3::rsed_name(id, self.cfg.rank),
            None,
        );
        let own_fs = fb.as_ref().map_or(0, |b| b.fs as u64);
        // Every rank takes part in the encoding even after a local error, so that the group's
        // exchanges match; the error is reported after it.
        let encoded = crate::l3::encode(
            &*self.comm,
            &place,
            Some((&pending.file, pending.path.as_path(), own_fs)),
            rsed.as_ref().ok(),
            max_fs,
        );
        let local = fb.and_then(|fb| encoded.and(rsed.map(|r| (Some(r), fb))));
        agree(&*self.comm, "L3 encoding", local)
    }

    /// Called every iteration: on a restart, recovers (first call); otherwise takes a
    /// checkpoint when a level's interval (`ckpt_lK` minutes or `ckpt_lK_secs`) has passed,
    /// the highest due level winning, with ids 1, 2, ... (continuing after a restart's id).
    pub fn snapshot(&mut self, vars: &mut [Var<'_>]) -> Result<Snapshot> {
        if matches!(self.status, Status::Restart(_)) {
            return self.recover(vars).map(Snapshot::Recovered);
        }
        let worked = self
            .timer
            .start
            .elapsed()
            .saturating_sub(self.timer.excluded);
        let mut due = None;
        for (i, level) in Level::ALL.iter().enumerate() {
            if let Some(interval) = self.cfg.intervals[i] {
                if interval
                    .checked_mul(self.timer.counts[i])
                    .is_some_and(|due| worked >= due)
                {
                    // After a long stall, one checkpoint, not one per missed interval.
                    let elapsed = worked.as_nanos() / interval.as_nanos().max(1);
                    self.timer.counts[i] = u32::try_from(elapsed + 1).unwrap_or(u32::MAX);
                    due = Some(*level);
                }
            }
        }
        match due {
            None => Ok(Snapshot::Nothing),
            Some(level) => {
                let id = self.next_id;
                self.checkpoint(id, level, vars).map(Snapshot::Checkpointed)
            }
        }
    }

    /// Ends the run. With `keep_last_ckpt`, the last checkpoint is kept in L4 (copied there
    /// if needed), local files are removed and the config records `failure = 2`; otherwise
    /// every checkpoint file and directory of this execution is removed and the config records
    /// `failure = 0`, as FTI does.
    pub fn finalize(mut self) -> Result<()> {
        let result = self.finalize_files();
        if let Some(t) = self.tracer.take() {
            t.finish().map_err(Error::Trace)?;
        }
        if result.is_ok() {
            self.messages.info("FTI has been finalized.");
        }
        result
    }

    fn finalize_files(&mut self) -> Result<()> {
        self.wait()?;
        // A restart that was never recovered still has its checkpoint to keep.
        let last = self
            .last
            .clone()
            .or_else(|| self.restart.as_ref().map(|r| r.info.clone()));
        if self.cfg.keep_last_ckpt {
            if let Some(last) = last {
                // The local files go only once every rank's copy is in L4: a crash in between
                // leaves the checkpoint complete at one level or the other.
                let flushed = if last.level != Level::L4 {
                    trace::with(&mut self.tracer, &self.messages, |t| t.begin(Phase::Flush));
                    let done = store::begin(&self.dirs, Level::L4, last.id, None).and_then(|p| {
                        let mut src =
                            File::open(&last.path).map_err(|e| Error::io(&last.path, e))?;
                        std::io::copy(&mut src, &mut &p.file).map_err(|e| Error::io(&p.path, e))?;
                        store::publish_pending(&self.dirs, p)
                    });
                    trace::with(&mut self.tracer, &self.messages, |t| t.end(Phase::Flush));
                    done.map(|_| ())
                } else {
                    Ok(())
                };
                agree(&*self.comm, "keeping the last checkpoint in L4", flushed)?;
                store::retire(&self.dirs, Level::L4, last.id, 1, false)?;
                self.restart = None;
                store::remove_rank_files(&self.dirs, true)?;
                self.record_in_config(2)?;
                return Ok(());
            }
        }
        self.restart = None;
        store::remove_rank_files(&self.dirs, false)?;
        // Every rank is done with the run's directories before the meta directory goes: only
        // the file the runtime wrote there, then the directory if nothing else is in it.
        self.comm.barrier();
        if self.cfg.rank == 0 {
            store::remove_meta_files(&self.dirs)?;
        }
        self.record_in_config(0)
    }

    /// Writes `failure` and `exec_id` back into the config file (rank 0, when read from one).
    fn record_in_config(&mut self, failure: u8) -> Result<()> {
        if self.cfg.rank != 0 {
            return Ok(());
        }
        if let Some(path) = &self.cfg.path {
            self.messages.debug(&format!(
                "Updating configuration file ({})...",
                path.display()
            ));
            config::record_restart(path, failure, &self.exec_id).map_err(|err| {
                Error::RestartRecord {
                    path: path.clone(),
                    exec_id: self.exec_id.clone(),
                    err: Box::new(err),
                }
            })?;
        }
        self.cfg.failure = Some(failure);
        Ok(())
    }

    /// `Topology.fti` in the meta directory, as FTI 1.1 writes it: node index = node name.
    fn write_topology(&self) -> Result<()> {
        store::create_dir_durable(&self.dirs.meta)?;
        let mut text = String::from("\n[topology]\n");
        for (i, name) in self.node_names.iter().enumerate() {
            text.push_str(&format!("{i:<31}= {name}\n"));
        }
        text.push('\n');
        store::replace_file(&self.dirs.meta.join("Topology.fti"), text.as_bytes())
    }
}

impl Drop for Fti {
    /// A runtime dropped without `finalize` (an early return, a panic unwinding) still ends
    /// its trace properly; its checkpoints stay for the restart.
    fn drop(&mut self) {
        // Post-processing finishes first: its files are part of the checkpoint.
        let _ = self.wait();
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

/// Opens, parses and verifies a candidate.
fn open_verified(
    found: &Found,
    progress: &(dyn Fn(u64) + Sync),
) -> std::result::Result<Restart, ftiff::Error> {
    let (ckpt, map) = Checkpoint::open_verified(&found.path, progress)?;
    let info = found_info(found, &ckpt);
    Ok(Restart { info, ckpt, map })
}

/// The run's topology and node names. With `local_test = 1` the node of a rank is
/// `rank / node_size` (`node<N>`); otherwise ranks are grouped by host name, hosts in the order
/// of their lowest rank.
fn build_topology(cfg: &Config, comm: &dyn Comm) -> Result<(Topology, Vec<String>)> {
    let n = comm.size();
    let node_size = cfg.node_size.max(1);
    if cfg.local_test {
        let order: Vec<u32> = (0..n).collect();
        let names = (0..n.div_ceil(node_size))
            .map(|i| format!("node{i}"))
            .collect();
        return Ok((Topology::new(&order, node_size, cfg.group_size)?, names));
    }
    let hosts: Vec<String> = comm
        .all_gather(comm.host_name().as_bytes())
        .into_iter()
        .map(|h| String::from_utf8_lossy(&h).into_owned())
        .collect();
    let mut distinct: Vec<&String> = Vec::new();
    for h in &hosts {
        if !distinct.contains(&h) {
            distinct.push(h);
        }
    }
    let order: Vec<u32> = distinct
        .iter()
        .flat_map(|d| (0..n).filter(|&r| &hosts[r as usize] == *d))
        .collect();
    let names = order
        .chunks(node_size as usize)
        .map(|c| hosts[c[0] as usize].clone())
        .collect();
    Ok((Topology::new(&order, node_size, cfg.group_size)?, names))
}

/// Checkpoints and recoveries of at least this many bytes show a progress bar.
const PROGRESS_MIN: u64 = 256 << 20;

/// A progress bar on stderr for long work, shown only on a terminal and at verbosity <= 2.
fn progress_bar(cfg: &Config, total: u64, what: String) -> indicatif::ProgressBar {
    use std::io::IsTerminal;
    if total < PROGRESS_MIN || cfg.verbosity > 2 || !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(total);
    if let Ok(style) = indicatif::ProgressStyle::with_template(
        "{msg} [{bar:30}] {bytes}/{total_bytes} ({bytes_per_sec}, {eta})",
    ) {
        bar.set_style(style);
    }
    bar.set_message(what);
    bar
}
