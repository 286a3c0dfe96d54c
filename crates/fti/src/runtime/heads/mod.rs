//! Dedicated heads (`head = 1`), as in FTI 1.1: the first rank of each node is a head, the
//! others are the application's ranks, with a communicator of their own. Levels with
//! `inline_lK = 1` are post-processed by the application ranks themselves; with
//! `inline_lK = 0` the application rank publishes its own file, hands the partner copies, the
//! L3 encoding or the L4 flush to its head and returns, and its next checkpoint (or
//! finalize) first waits for the head's outcome, as FTI's `wasLastOffline`. A head serves its
//! node until each of the node's application ranks has finalized.

mod job;

use std::path::Path;
use std::rc::Rc;

use crate::comm::{Comm, Members, SelfComm};
use crate::config::Config;
use crate::error::{Error, Misuse, Result};
use crate::files::Dirs;
use crate::io::Io;
use crate::level::{l2, l3, l4};
use crate::topology::Topology;

use super::{init, Fti, Options};
pub(super) use job::Work;
use job::{decode_outcome, encode_outcome, Job, Request};

/// FTI 1.1's own messages between application ranks and their head, on the communicator
/// given to `FTI_Init` with the config's `mpi_tag` (one int each), which FTI's test programs
/// use directly: `FTI_ENDW` from an application rank ends its work without `FTI_Finalize`
/// (then every process enters a barrier), and after post-processing a job the head sends the
/// job's outcome, which the application rank takes when it next waits for its head (the last
/// one is left to a program that ends without `FTI_Finalize`). The front end that owns that
/// communicator sends and receives them ([`Options::fti_messages`]).
pub trait FtiMessages {
    /// On a head: whether application rank `app` (its rank among all processes) has sent
    /// `FTI_ENDW`; a message that arrived is consumed.
    fn ended(&self, app: u32) -> bool;
    /// On a head: FTI's closing barrier of all processes, which the ranks that sent
    /// `FTI_ENDW` enter next.
    fn close(&self);
    /// On a head: tells application rank `app` the outcome of the job it handed over.
    fn post_processed(&self, app: u32, ok: bool);
    /// On an application rank: takes the outcome its head sent of its last job.
    fn take_post_processed(&self, head: u32);
}

/// What a head found waiting from an application rank.
#[derive(Debug, PartialEq, Eq)]
enum Arrived {
    /// A request of this runtime's own.
    Request,
    /// FTI's end-of-work message.
    FtiEnd,
}

/// Waits until application rank `app` has sent either message (polling both, as they come
/// over different communicators).
fn wait_for(world: &dyn Comm, end: &dyn FtiMessages, app: u32) -> Arrived {
    loop {
        if world.has_message(app) {
            return Arrived::Request;
        }
        if end.ended(app) {
            return Arrived::FtiEnd;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

/// What a process of a run is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// One of the application's ranks: it checkpoints and recovers ([`Fti::comm`] is the
    /// application's communicator, FTI's `FTI_COMM_WORLD`).
    Application,
    /// A dedicated head: it serves its node ([`Fti::serve_as_head`]) and checkpoints nothing.
    Head,
}

/// How a process of a run with heads reaches the other side.
pub(super) struct Link {
    pub(super) role: Role,
    /// All processes of the run, heads included.
    world: Rc<dyn Comm>,
    /// On an application rank: its head. On a head: the application ranks of its node.
    peers: Vec<u32>,
    /// On a head: the heads, one per node in node order (rank = node index).
    heads: Option<Members>,
    /// On an application rank: a job was handed to the head, its outcome not yet known.
    outstanding: bool,
    /// FTI's own messages with the other side, when the front end speaks them.
    fti_messages: Option<Rc<dyn FtiMessages>>,
}

/// The settings heads do not take, refused before any communication (every process reads
/// the same config, so all refuse alike).
fn check(cfg: &Config, processes: u32) -> Result<()> {
    let offline = !cfg.inline_l2 || !cfg.inline_l3 || !cfg.inline_l4;
    let refused = if cfg.node_size < 2 {
        Some("head = 1 needs node_size >= 2: one head and at least one application rank per node")
    } else if processes < 2 {
        Some("head = 1 needs a run of several processes: a head and at least one application rank")
    } else if offline && !processes.is_multiple_of(cfg.node_size) {
        Some("with head = 1, inline_lK = 0 needs full nodes: a process count that is a multiple of node_size")
    } else if cfg.async_ckpt {
        Some("with head = 1, async_ckpt must be 0: asynchronous checkpoints are not supported with heads")
    } else {
        None
    };
    match refused {
        Some(what) => Err(Error::Config {
            path: cfg.path.clone().unwrap_or_default(),
            line: cfg.keys.line("basic", "head").unwrap_or(0),
            what: what.to_owned(),
        }),
        None => Ok(()),
    }
}

/// Starts a process of a run with heads: a head, or an application rank running the runtime
/// over the application's communicator with its files named by its rank among all processes.
pub(super) fn start(mut cfg: Config, comm: Box<dyn Comm>, options: Options) -> Result<Fti> {
    check(&cfg, comm.size())?;
    let fti_messages = options.fti_messages.clone();
    let world: Rc<dyn Comm> = Rc::from(comm);
    let (order, _) = init::rank_order(&cfg, &*world);
    let nodes: Vec<&[u32]> = order.chunks(cfg.node_size as usize).collect();
    let me = world.rank();
    let mut apps: Vec<u32> = nodes.iter().flat_map(|n| n[1..].to_vec()).collect();
    apps.sort_unstable();
    if let Some(node) = nodes.iter().find(|n| n[0] == me) {
        let heads = Members::new(Rc::clone(&world), nodes.iter().map(|n| n[0]).collect());
        let peers = node[1..].to_vec();
        cfg.rank = me;
        cfg.nranks = world.size();
        let mut fti = init::head(init::configure(cfg, Box::new(SelfComm), options))?;
        fti.heads = Some(Link {
            role: Role::Head,
            world,
            peers,
            heads,
            outstanding: false,
            fti_messages,
        });
        return Ok(fti);
    }
    let head = nodes
        .iter()
        .find(|n| n.contains(&me))
        .map(|n| n[0])
        .ok_or(Error::State(Misuse::NotInTopology))?;
    let app = Members::new(Rc::clone(&world), apps).ok_or(Error::State(Misuse::NotInTopology))?;
    cfg.world_rank = Some(me);
    cfg.rank = app.rank();
    cfg.nranks = app.size();
    cfg.node_size -= 1;
    let mut fti = Fti::start(cfg, Box::new(app), options)?;
    fti.heads = Some(Link {
        role: Role::Application,
        world,
        peers: vec![head],
        heads: None,
        outstanding: false,
        fti_messages,
    });
    Ok(fti)
}

impl Fti {
    /// Whether this process is one of the application's ranks or a dedicated head (always
    /// [`Role::Application`] without heads).
    pub fn role(&self) -> Role {
        self.heads.as_ref().map_or(Role::Application, |l| l.role)
    }

    /// On a head: serves its node until each of the node's application ranks has finalized
    /// (what `FTI_Init` runs on heads): the partner copies (`inline_l2 = 0`), L3 encodings
    /// (`inline_l3 = 0`) and L4 flushes (`inline_l4 = 0`) they hand over, together with the
    /// heads of the other nodes.
    ///
    /// With [`Options::fti_messages`], it also takes FTI's own `FTI_ENDW` from an application
    /// rank as its end, and joins FTI's closing barrier once every rank of the node has ended
    /// and some did so that way; it tells each job's outcome with FTI's message too.
    pub fn serve_as_head(self) -> Result<()> {
        let link = match &self.heads {
            Some(link) if link.role == Role::Head => link,
            _ => return Err(Error::State(Misuse::NotAHead)),
        };
        let end = link.fti_messages.as_deref();
        let heads = link.heads.as_ref().ok_or(Error::State(Misuse::NotAHead))?;
        let mut outcomes: Vec<Vec<u8>> =
            link.peers.iter().map(|_| encode_outcome(&Ok(()))).collect();
        let mut ended = vec![false; link.peers.len()];
        let mut closing = false;
        // Rounds over the node's application ranks in position order: the application ranks
        // hand over the same checkpoint in the same round, so every head has the same jobs,
        // at the same positions, to do after the round (as FTI's `FTI_Listen` hears every
        // application rank of its node before `FTI_PostCkpt`).
        while ended.iter().any(|e| !e) {
            let mut jobs = Vec::new();
            for (i, &app) in link.peers.iter().enumerate() {
                if ended[i] {
                    continue;
                }
                if let Some(end) = end {
                    if wait_for(&*link.world, end, app) == Arrived::FtiEnd {
                        ended[i] = true;
                        closing = true;
                        continue;
                    }
                }
                let got = link.world.exchange(app, &outcomes[i], app);
                match Request::decode(&got)? {
                    Request::End => ended[i] = true,
                    Request::Wait => {}
                    Request::Job(job) => jobs.push((i, app, job)),
                }
            }
            for (i, outcome) in self.do_jobs(heads, &jobs) {
                if let Some(fti) = end {
                    fti.post_processed(link.peers[i], outcome.is_ok());
                }
                outcomes[i] = encode_outcome(&outcome);
            }
        }
        if let Some(end) = end.filter(|_| closing) {
            end.close();
        }
        self.messages
            .info("FTI head has served its node to the end.");
        Ok(())
    }

    /// Does the jobs of one round (`(index among the node's application ranks, its rank, the
    /// job)`, in position order) with the heads of the other nodes (collective over the heads);
    /// returns each job's outcome. The L4 flushes of a checkpoint go together, as
    /// `FTI_FlushPosix` and `FTI_FlushMPI` (`src/postckpt.c`) flush every file of the node at
    /// once (MPI-IO writes them all into one shared file); the partner copies and encodings go
    /// by position, each with the application ranks at that position on the other nodes.
    fn do_jobs(
        &self,
        heads: &Members,
        jobs: &[(usize, u32, Box<Job>)],
    ) -> Vec<(usize, Result<()>)> {
        let (flushes, others): (Vec<_>, Vec<_>) =
            jobs.iter().partition(|(_, _, job)| job.work == Work::Flush);
        let mut outcomes: Vec<(usize, Result<()>)> = others
            .iter()
            .map(|(i, app, job)| (*i, self.do_job(heads, *app, job)))
            .collect();
        if let Some((_, _, first)) = flushes.first() {
            let files: Vec<(Dirs, &Path)> = flushes
                .iter()
                .map(|(_, app, job)| (self.dirs_of(*app, job), job.file.as_path()))
                .collect();
            let keep = usize::try_from(first.keep).unwrap_or(usize::MAX);
            let flushed = l4::flush_node(heads, &files, (first.id, keep), !self.cfg.dcp);
            for (i, _, _) in &flushes {
                let outcome = match &flushed {
                    Ok(()) => Ok(()),
                    Err(e) => Err(Error::Head(e.to_string())),
                };
                outcomes.push((*i, outcome));
            }
        }
        outcomes
    }

    /// The directories of application rank `app`'s files of `job`, with its group's meta data.
    fn dirs_of(&self, app: u32, job: &Job) -> Dirs {
        let mut cfg = self.cfg.clone();
        let app_node_size = cfg.node_size - 1;
        cfg.world_rank = Some(app);
        cfg.node_size = app_node_size;
        // `local_test`'s `node<N>/` is the application rank's node.
        cfg.rank = job.place.node.saturating_mul(app_node_size);
        let io = Io::new(&cfg, Some(&job.place));
        Dirs::on(
            std::sync::Arc::clone(&self.dirs.storage),
            &cfg,
            &job.exec_id,
        )
        .with_io(io)
    }

    /// Does `job` (partner copies or encoding) for application rank `app` of this head's node,
    /// with the heads of the other nodes doing the same for the application ranks at the same
    /// position (collective over the heads).
    fn do_job(&self, heads: &Members, app: u32, job: &Job) -> Result<()> {
        let dirs = self.dirs_of(app, job);
        let keep = usize::try_from(job.keep).unwrap_or(usize::MAX);
        match &job.work {
            Work::PartnerCopies(plan) => {
                l2::copy_deferred(heads, &dirs, job.id, plan, &job.file, keep)
            }
            // `do_jobs` flushes a node's files together and never hands one here.
            Work::Flush => Err(Error::Internal("an L4 flush outside the node's flush")),
            Work::Encode { max_fs } => {
                // The heads stand for their nodes' application ranks at one position: their
                // groups are those ranks' groups.
                let nodes: Vec<u32> = (0..heads.size()).collect();
                let topology = Topology::new(&nodes, 1, self.cfg.group_size)?;
                let place = topology
                    .place(heads.rank())
                    .ok_or(Error::State(Misuse::NotInTopology))?;
                let (id, file) = (job.id, job.file.as_path());
                l3::encode_deferred((heads, place), &dirs, (id, file), *max_fs, keep)
            }
        }
    }

    /// Whether this application rank hands post-processing to its head.
    pub(super) fn has_head(&self) -> bool {
        self.heads
            .as_ref()
            .is_some_and(|l| l.role == Role::Application)
    }

    /// On an application rank: hands its head `work` on checkpoint `id`, whose published file
    /// is `file` (L2 partners are numbered by node for the heads).
    pub(super) fn hand_to_head(&mut self, id: i32, work: Work, file: &Path) -> Result<()> {
        let node_of = |rank: u32| self.topology.place(rank).map(|p| p.node);
        let work = match work {
            Work::PartnerCopies(plan) => Work::PartnerCopies(l2::PartnerPlan {
                left: node_of(plan.left).ok_or(Error::State(Misuse::NotInTopology))?,
                right: node_of(plan.right).ok_or(Error::State(Misuse::NotInTopology))?,
                ..plan
            }),
            other => other,
        };
        let job = Job {
            work,
            id,
            keep: self.keep() as u64,
            place: (self.topology.place(self.cfg.rank).cloned())
                .ok_or(Error::State(Misuse::NotInTopology))?,
            exec_id: self.exec_id.clone(),
            file: file.to_path_buf(),
        };
        let link = self.heads.as_mut().ok_or(Error::State(Misuse::NotAHead))?;
        let head = link.peers[0];
        link.world
            .exchange(head, &Request::Job(Box::new(job)).encode(), head);
        link.outstanding = true;
        Ok(())
    }

    /// On an application rank: waits for the outcome of the job handed to its head, if any.
    pub(super) fn wait_for_head(&mut self) -> Result<()> {
        let Some(link) = self.heads.as_mut().filter(|l| l.outstanding) else {
            return Ok(());
        };
        let head = link.peers[0];
        let got = link.world.exchange(head, &Request::Wait.encode(), head);
        link.outstanding = false;
        if let Some(fti) = &link.fti_messages {
            fti.take_post_processed(head);
        }
        decode_outcome(&got)
    }

    /// Whether a job handed to the head has an outcome still to come.
    pub(super) fn head_busy(&self) -> bool {
        self.heads.as_ref().is_some_and(|l| l.outstanding)
    }

    /// On an application rank with heads: tells its head that it has finalized.
    pub(super) fn release_head(&mut self) {
        if let Some(link) = self.heads.take().filter(|l| l.role == Role::Application) {
            for &head in &link.peers {
                link.world.exchange(head, &Request::End.encode(), head);
            }
        }
    }

    /// Refuses application work on a head.
    pub(super) fn check_not_head(&self) -> Result<()> {
        match self.role() {
            Role::Head => Err(Error::State(Misuse::Head)),
            Role::Application => Ok(()),
        }
    }
}
