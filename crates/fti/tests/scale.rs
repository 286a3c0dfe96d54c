//! A rank's work does not grow with the job (`docs/scale.md`): the scenario of
//! `util::scale` (init, checkpoints at L1, L2 and L4, restart, finalize) on 4, 16 and 64 ranks
//! as threads, each rank's storage operations and messages counted.

use crate::util::scale::{self, mean_max, total, Work, FIGURES};

fn phases(n: u32) -> Vec<Vec<Work>> {
    let root = tempfile::tempdir().unwrap();
    scale::run(root.path(), n)
}

/// The figures compared, with how much they may grow from 4 ranks: storage operations and
/// directory bytes hardly at all, messages (a broadcast, a reduction) with `log2(n)`.
fn bounds(n: u32) -> [(&'static str, scale::Figure, f64); 4] {
    let log = f64::from(n.ilog2()) / 2.0;
    [
        ("storage operations", FIGURES[0].1, 1.25),
        ("directory bytes", FIGURES[2].1, 1.5),
        ("messages", FIGURES[3].1, 1.25 * log),
        ("message bytes", FIGURES[4].1, 1.5 * log),
    ]
}

#[test]
fn per_rank_work_is_flat_from_4_to_64_ranks() {
    let by_phase: Vec<(u32, Vec<Vec<Work>>)> = [4, 16, 64].map(|n| (n, phases(n))).into();
    eprintln!("{}", scale::table(&by_phase));
    let runs: Vec<(u32, Vec<Work>)> = by_phase.iter().map(|(n, w)| (*n, total(w))).collect();
    let (_, base) = &runs[0];
    for (n, ranks) in &runs {
        // No rank touches another rank's files, outside its group.
        assert_eq!(mean_max(ranks, FIGURES[1].1).1, 0, "{n} ranks");
        for (name, f, bound) in bounds(*n) {
            // The busiest rank but rank 0, which lists the global directory for everyone.
            let (was, now) = (mean_max(&base[1..], f).1, mean_max(&ranks[1..], f).1);
            assert!(
                now as f64 <= was as f64 * bound,
                "{name} of the busiest rank grew from {was} (4 ranks) to {now} ({n} ranks)"
            );
            let (was, now) = (mean_max(base, f).0, mean_max(ranks, f).0);
            assert!(
                now <= was * bound,
                "{name} per rank grew from {was} (4 ranks) to {now} ({n} ranks)"
            );
        }
        // Rank 0 lists l4/ twice at a restart (for the newest execution, for the checkpoints
        // there): 40 bytes per rank's entry; it may not list more than twice that.
        let (was, now) = (f(&base[0]), f(&ranks[0]));
        assert!(
            now.saturating_sub(was) <= 2 * 2 * 40 * u64::from(n - 4),
            "rank 0's directory bytes grew from {was} (4 ranks) to {now} ({n} ranks)"
        );
    }
}

fn f(w: &Work) -> u64 {
    w.storage.dir_bytes
}

/// The rank count of a restart is the one the execution recorded, not one counted from the
/// files that are left: 3 ranks on nodes of 2 whose last node is lost (its files, rank 2's)
/// restart on 3 ranks (and start fresh, rank 2's file being lost), not on 4.
#[test]
fn the_rank_count_is_the_recorded_one() {
    use crate::util::on_ranks;
    use fti::{Fti, Level, Status, Var};
    let root = tempfile::tempdir().unwrap();
    let cfg = fti::Config {
        node_size: 2,
        group_size: 2,
        ..crate::util::config(root.path())
    };
    let execs = on_ranks(3, |comm| {
        let mut fti = Fti::init_with(cfg.clone(), comm).unwrap();
        let mut v = vec![7u8; 10];
        fti.checkpoint(1, Level::L1, &[Var::slice(0, &mut v)])
            .unwrap();
        fti.exec_id().to_owned()
    });
    std::fs::remove_dir_all(root.path().join("Local/node1")).unwrap();
    let restart = fti::Config {
        failure: Some(1),
        exec_id: Some(execs[0].clone()),
        ..cfg.clone()
    };
    let refused = on_ranks(4, |comm| {
        Fti::init_with(restart.clone(), comm)
            .err()
            .map(|e| e.to_string())
    });
    for err in refused {
        let err = err.expect("a restart on 4 ranks refused");
        assert!(
            err.contains("checkpointed by 3 ranks, this run has 4"),
            "{err}"
        );
    }
    let fresh = on_ranks(3, |comm| {
        let fti = Fti::init_with(restart.clone(), comm).unwrap();
        (fti.status().clone(), fti.exec_id() != execs[0])
    });
    assert!(
        fresh.iter().all(|s| *s == (Status::Fresh, true)),
        "{fresh:?}"
    );
}
