//! Starting the runtime, in named phases, each a function of what the previous one produced,
//! so that their order is the only one that compiles: the config settled ([`Configured`]),
//! the ranks placed ([`Placed`]), the execution chosen and, for a restart, the rank count
//! checked before anything is written ([`Chosen`]), the tracer started ([`Traced`]); then the
//! runtime assembled, the restart searched for, `Topology.fti` written.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::collective::{self, agree};
use crate::comm::Comm;
use crate::config::{self, Config, IoMode, Level};
use crate::error::{Error, Result, Step};
use crate::files::Dirs;
use crate::report::Messages;
use crate::storage::Storage;
use crate::topology::Topology;
use crate::trace::{self, AppOvni, Phase, Tracer};

use super::background::Background;
use super::exec::fresh_exec_id;
use super::restart::{check_rank_count, newest_exec_with_checkpoints};
use super::snapshot::SnapshotTimer;
use super::{Fti, Options, Recovery};

/// Phase 1: the config as this rank's, its remarks said.
pub(super) struct Configured {
    cfg: Config,
    comm: Box<dyn Comm>,
    messages: Messages,
    storage: Arc<dyn Storage>,
    app_ovni: Option<Box<dyn AppOvni>>,
}

/// Phase 2: where every rank sits, and the background communicator.
pub(super) struct Placed {
    configured: Configured,
    topology: Topology,
    node_names: Vec<String>,
    bg_comm: Option<Box<dyn Comm + Send>>,
}

/// Phase 3: the execution this run continues or starts; a restart's rank count is checked.
pub(super) struct Chosen {
    placed: Placed,
    exec_id: String,
    restart: bool,
}

/// Phase 4: the tracer started (or not) on every rank.
pub(super) struct Traced {
    chosen: Chosen,
    tracer: Option<Tracer>,
}

/// Phase 1 (local): a one-rank comm keeps the config's rank (one process may act as any rank
/// of a run, restarting that rank's files alone, as the tools do); every rank read the same
/// file, so its remarks are said once.
pub(super) fn configure(mut cfg: Config, comm: Box<dyn Comm>, options: Options) -> Configured {
    let Options {
        reporter,
        app_ovni,
        storage,
        fti_messages: _,
    } = options;
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
    if cfg.rank == 0 {
        for w in &cfg.warnings {
            messages.warn(w);
        }
        for n in &cfg.notes {
            messages.info(n);
        }
    }
    Configured {
        cfg,
        comm,
        messages,
        storage,
        app_ovni,
    }
}

impl Configured {
    /// Phase 2 (collective): the topology, the background communicator, and the levels the
    /// run's groups can do.
    pub(super) fn place(self) -> Result<Placed> {
        let (cfg, messages) = (&self.cfg, &self.messages);
        crate::io::check_config(cfg)?;
        let (topology, node_names) = build_topology(cfg, &*self.comm)?;
        let bg_comm = if cfg.inline_l2 && cfg.inline_l4 && !cfg.async_ckpt {
            None
        } else {
            let bg = self.comm.background();
            if bg.is_none() && cfg.rank == 0 {
                say_no_background(cfg, messages);
            }
            bg
        };
        let group = topology.place(cfg.rank).map_or(1, |p| p.group.len());
        for (level, interval) in [(Level::L2, cfg.intervals[1]), (Level::L3, cfg.intervals[2])] {
            if interval.is_some() && group < 2 {
                return Err(Error::NeedsMpi(level));
            }
        }
        Ok(Placed {
            configured: self,
            topology,
            node_names,
            bg_comm,
        })
    }

    /// A config error of this run's config file.
    fn config_error(&self, what: String) -> Error {
        Error::Config {
            path: self.cfg.path.clone().unwrap_or_default(),
            line: 0,
            what,
        }
    }
}

/// Why the background work the config asks for runs otherwise.
fn say_no_background(cfg: &Config, messages: &Messages) {
    if !cfg.inline_l2 || !cfg.inline_l4 {
        messages.warn(
            "inline_l2/inline_l4 = 0 asks for post-processing in the background, but the run cannot communicate from a second thread (MPI without MPI_THREAD_MULTIPLE): it runs inline",
        );
    }
    if cfg.async_ckpt {
        messages.info(
            "async_ckpt = 1 without MPI_THREAD_MULTIPLE: each checkpoint's file is written and hashed in the background; the ranks' agreement and L2/L3/L4 run at the next checkpoint call (or wait, or finalize)",
        );
    }
}

impl Placed {
    /// Phase 3 (collective): the execution to restart (asked by the config, or the newest
    /// any rank has checkpoints of) or a fresh one; a restart on another rank count is
    /// refused here, before anything is written, so that it leaves no trace.
    pub(super) fn choose_execution(self) -> Result<Chosen> {
        let c = &self.configured;
        let (cfg, comm, storage) = (&c.cfg, &*c.comm, &c.storage);
        let restart_exec = match (cfg.failure, &cfg.exec_id) {
            (Some(0), _) => None,
            (Some(_), Some(id)) => {
                config::check_exec_id(id).map_err(|what| c.config_error(what))?;
                Some(id.clone())
            }
            (Some(_), None) => {
                return Err(c.config_error(
                    "[restart] failure asks for a restart but exec_id is not set".into(),
                ))
            }
            // A rank whose node was lost finds nothing: the newest any rank has wins.
            (None, _) => collective::agree_newest(
                comm,
                newest_exec_with_checkpoints(storage, cfg, comm).as_deref(),
            ),
        };
        let restart = restart_exec.is_some();
        let exec_id = match restart_exec {
            Some(id) => {
                check_rank_count(storage, cfg, &id, comm)?;
                id
            }
            None => fresh_exec_id(storage, cfg, comm),
        };
        c.messages.info(&if restart {
            format!("This is a restart. The execution ID is: {exec_id}")
        } else {
            format!("The execution ID is: {exec_id}")
        });
        c.messages.info(match c.cfg.io {
            IoMode::Posix => "Selected Ckpt I/O is POSIX",
            IoMode::MpiIo => "Selected Ckpt I/O is MPI-I/O",
            IoMode::Ftiff => "Selected Ckpt I/O is FTI-FF",
        });
        Ok(Chosen {
            placed: self,
            exec_id,
            restart,
        })
    }
}

impl Chosen {
    /// Phase 4 (collective): the tracer, when the config or `FTI_TRACE=1` asks for one; into
    /// the application's stream when it traces this thread.
    pub(super) fn trace(mut self) -> Result<Traced> {
        let c = &mut self.placed.configured;
        let cfg = &c.cfg;
        let tracer = if cfg.trace || std::env::var("FTI_TRACE").is_ok_and(|v| v == "1") {
            Some(match c.app_ovni.take() {
                // Two writers on the thread's stream would corrupt it: the marks go into the
                // application's.
                Some(app) => Tracer::start_app(app, cfg.trace_mark_base).map_err(Error::AppTrace),
                None if cfg.trace_app => Err(c.config_error(
                    "[basic] trace = app, but this thread is not traced by the application's libovni (ovni_thread_init before FTI_Init): nothing to trace into".into(),
                )),
                None => Tracer::start(&cfg.trace_dir, cfg.rank, cfg.nranks, cfg.trace_mark_base)
                    .map_err(Error::Trace),
            })
        } else {
            None
        };
        let tracer = agree(&*c.comm, Step::StartTrace, tracer.transpose())?;
        if tracer.as_ref().is_some_and(Tracer::in_app_stream) {
            c.messages
                .info("tracing into the application's ovni stream");
        }
        Ok(Traced {
            chosen: self,
            tracer,
        })
    }
}

impl Traced {
    /// The runtime, fresh: nothing recovered yet.
    pub(super) fn assemble(self) -> Fti {
        let Traced { chosen, tracer } = self;
        let Chosen {
            placed,
            exec_id,
            restart,
        } = chosen;
        let Placed {
            configured,
            topology,
            node_names,
            bg_comm,
        } = placed;
        let Configured {
            cfg,
            comm,
            messages,
            storage,
            ..
        } = configured;
        let dirs = Dirs::on(storage, &cfg, &exec_id);
        if !restart {
            // A new execution: no file of it exists anywhere (`fresh_exec_id`).
            dirs.know_global([]);
        }
        Fti {
            messages,
            dirs: dirs.with_io(crate::io::Io::new(&cfg, topology.place(cfg.rank))),
            exec_id,
            recovery: Recovery::default(),
            layout: None,
            last: None,
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
            restart_record_pending: true,
            background: Background::new(bg_comm),
            heads: None,
            cfg,
        }
    }

    /// Phases 5 and 6 (collective): the runtime, with the restart's checkpoint found (when
    /// the execution is a restart) and `Topology.fti` written (when the run starts fresh).
    pub(super) fn ready(self) -> Result<Fti> {
        let restart = self.chosen.restart;
        let mut fti = self.assemble();
        if restart {
            trace::with(&mut fti.tracer, &fti.messages, |t| t.begin(Phase::Verify));
            fti.find_restart();
            trace::with(&mut fti.tracer, &fti.messages, |t| t.end(Phase::Verify));
        }
        let topology = if fti.recovery.restart.is_none() && fti.cfg.rank == 0 {
            fti.write_topology()
        } else {
            Ok(())
        };
        agree(&*fti.comm, Step::WriteTopology, topology)?;
        fti.messages.info("FTI has been initialized.");
        Ok(fti)
    }
}

/// The run's topology and node names.
fn build_topology(cfg: &Config, comm: &dyn Comm) -> Result<(Topology, Vec<String>)> {
    let (order, names) = rank_order(cfg, comm);
    let topology = Topology::new(&order, cfg.node_size.max(1), cfg.group_size)?;
    Ok((topology, names))
}

/// The ranks listed by node, and the node names (collective). With `local_test = 1` the node
/// of a rank is `rank / node_size` (`node<N>`); otherwise ranks are grouped by host name, hosts
/// in the order of their lowest rank.
pub(super) fn rank_order(cfg: &Config, comm: &dyn Comm) -> (Vec<u32>, Vec<String>) {
    let n = comm.size();
    let node_size = cfg.node_size.max(1);
    if cfg.local_test {
        let order: Vec<u32> = (0..n).collect();
        let names = (0..n.div_ceil(node_size))
            .map(|i| format!("node{i}"))
            .collect();
        return (order, names);
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
    (order, names)
}

/// A dedicated head's runtime: it has no files, no restart and no topology of its own.
pub(super) fn head(configured: Configured) -> Result<Fti> {
    let rank = configured.cfg.rank;
    let placed = Placed {
        configured,
        topology: Topology::new(&[0], 1, 1)?,
        node_names: Vec::new(),
        bg_comm: None,
    };
    let chosen = Chosen {
        placed,
        exec_id: String::new(),
        restart: false,
    };
    let fti = Traced {
        chosen,
        tracer: None,
    }
    .assemble();
    fti.messages.info(&format!(
        "FTI has been initialized: process {rank} is a head."
    ));
    Ok(fti)
}
