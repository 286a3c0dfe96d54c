//! Dedicated heads (`head = 1`), as in FTI 1.1: the first rank of each node is a head, the
//! others are the application's ranks, with a communicator of their own. Every post-processing
//! step is done inline by the application ranks (`inline_l2..l4 = 1`); a head serves its node
//! until each of the node's application ranks has finalized.

use std::rc::Rc;

use crate::comm::{Comm, Members, SelfComm};
use crate::config::Config;
use crate::error::{Error, Misuse, Result};

use super::{init, Fti, Options};

/// What a process of a run is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// One of the application's ranks: it checkpoints and recovers ([`Fti::comm`] is the
    /// application's communicator, FTI's `FTI_COMM_WORLD`).
    Application,
    /// A dedicated head: it serves its node ([`Fti::serve_as_head`]) and checkpoints nothing.
    Head,
}

/// An application rank's message to its head: it has finalized.
const END: u8 = 1;
/// A head's answer to [`END`].
const DONE: u8 = 2;

/// How a process of a run with heads reaches the other side.
pub(super) struct Link {
    pub(super) role: Role,
    /// All processes of the run, heads included.
    world: Rc<dyn Comm>,
    /// On an application rank: its head. On a head: the application ranks of its node.
    peers: Vec<u32>,
}

/// The settings heads do not take yet, refused before any communication (every process reads
/// the same config, so all refuse alike).
fn check(cfg: &Config) -> Result<()> {
    let refused = if cfg.node_size < 2 {
        Some("head = 1 needs node_size >= 2: one head and at least one application rank per node")
    } else if !(cfg.inline_l2 && cfg.inline_l3 && cfg.inline_l4) {
        Some("with head = 1, inline_l2, inline_l3 and inline_l4 must be 1: post-processing by the heads (inline_lK = 0) is not supported; the application ranks post-process every level themselves")
    } else if cfg.async_ckpt {
        Some("with head = 1, async_ckpt must be 0: asynchronous checkpoints are not supported with heads")
    } else {
        None
    };
    match refused {
        Some(what) => Err(Error::Config {
            path: cfg.path.clone().unwrap_or_default(),
            line: 0,
            what: what.to_owned(),
        }),
        None => Ok(()),
    }
}

/// Starts a process of a run with heads: a head, or an application rank running the runtime
/// over the application's communicator with its files named by its rank among all processes.
pub(super) fn start(mut cfg: Config, comm: Box<dyn Comm>, options: Options) -> Result<Fti> {
    check(&cfg)?;
    let world: Rc<dyn Comm> = Rc::from(comm);
    let (order, _) = init::rank_order(&cfg, &*world);
    let nodes: Vec<&[u32]> = order.chunks(cfg.node_size as usize).collect();
    let me = world.rank();
    let mut apps: Vec<u32> = nodes.iter().flat_map(|n| n[1..].to_vec()).collect();
    apps.sort_unstable();
    if let Some(node) = nodes.iter().find(|n| n[0] == me) {
        let peers = node[1..].to_vec();
        cfg.rank = me;
        cfg.nranks = world.size();
        let mut fti = init::head(init::configure(cfg, Box::new(SelfComm), options))?;
        fti.heads = Some(Link {
            role: Role::Head,
            world,
            peers,
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
    /// (what `FTI_Init` runs on heads). Post-processing is done by the application ranks, so
    /// serving is waiting for their end.
    pub fn serve_as_head(self) -> Result<()> {
        let link = match &self.heads {
            Some(link) if link.role == Role::Head => link,
            _ => return Err(Error::State(Misuse::NotAHead)),
        };
        for &rank in &link.peers {
            let got = link.world.exchange(rank, &[DONE], rank);
            if got != [END] {
                return Err(Error::Internal("a head got another message than an end"));
            }
        }
        self.messages
            .info("FTI head has served its node to the end.");
        Ok(())
    }

    /// On an application rank with heads: tells its head that it has finalized.
    pub(super) fn release_head(&self) {
        if let Some(link) = self.heads.as_ref().filter(|l| l.role == Role::Application) {
            for &head in &link.peers {
                link.world.exchange(head, &[END], head);
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
