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
