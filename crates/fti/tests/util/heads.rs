//! Runs with dedicated heads (`head = 1`), every process a thread of the test.

use std::panic::{catch_unwind, AssertUnwindSafe};

use fti::{Config, Fti, Role};

use super::on_ranks;

/// Runs `app` on the application ranks (with their global rank) of an `n`-process run with
/// heads, `cfg.node_size` processes per node (`n` a multiple of it): the heads serve until
/// the application finalizes or, when `crash` (nobody finalizes), until an application rank
/// is gone, as the job would end them. Returns what each process returned, by global rank:
/// `None` for the heads.
pub fn run_with_heads<T: Send>(
    n: u32,
    cfg: &Config,
    crash: bool,
    app: impl Fn(Fti, u32) -> T + Sync,
) -> Vec<Option<T>> {
    let node = cfg.node_size;
    on_ranks(n, |comm| {
        let world = comm.rank();
        let fti = Fti::init_with(cfg.clone(), comm).unwrap();
        match fti.role() {
            Role::Head => {
                assert_eq!(world % node, 0, "heads are the first rank of each node");
                if crash {
                    let serve = AssertUnwindSafe(|| fti.serve_as_head());
                    assert!(catch_unwind(serve).is_err(), "served past a crash");
                } else {
                    fti.serve_as_head().unwrap();
                }
                None
            }
            Role::Application => {
                // The application's communicator: every rank but the heads, in order.
                assert_eq!(fti.comm().size(), n - n / node, "rank {world}");
                assert_eq!(fti.comm().rank(), world - world / node - 1, "rank {world}");
                Some(app(fti, world))
            }
        }
    })
}
