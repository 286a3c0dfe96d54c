//! How a restart recovers a candidate checkpoint, from what every rank holds of it: pure
//! code, decided identically on every rank (the schedule that gathers the holdings and
//! carries out the plan is [`crate::schedule::restart`]).

use crate::config::Level;
use crate::topology::Topology;

/// What one rank holds of one candidate checkpoint.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Holds {
    /// Its own file is there and verifies.
    pub own: bool,
    /// Its redundancy file is there and verifies: the L2 partner copy it keeps for its left
    /// partner, or its L3 `RSed` file.
    pub copy: bool,
}

/// How the run recovers one candidate, decided identically on every rank.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Plan {
    /// Every rank has its own file.
    Own,
    /// These ranks get their own file back (L2: from their right partner's copy; L3: by
    /// decoding), and these the redundancy file they keep (L2: from their left partner's
    /// file; L3: by encoding again). With no file lost, only copies, it is a repair.
    Rebuild { files: Vec<u32>, copies: Vec<u32> },
}

/// Whether a candidate at `level` can be recovered by every rank, given what each holds.
pub(crate) fn plan(level: Level, holds: &[Holds], topology: &Topology) -> Option<Plan> {
    if holds.iter().all(|h| h.own) {
        return Some(Plan::Own);
    }
    if level == Level::L3 {
        // Each group of k ranks survives the loss of up to k of its 2k Rank and RSed files.
        for (r, _) in holds.iter().enumerate() {
            let group = &topology.place(r as u32)?.group;
            let lost = group
                .iter()
                .map(|&g| {
                    holds
                        .get(g as usize)
                        .map_or(2, |h| usize::from(!h.own) + usize::from(!h.copy))
                })
                .sum::<usize>();
            if group.len() < 2 || lost > group.len() {
                return None;
            }
        }
        let lacking = |f: fn(&Holds) -> bool| {
            (0..holds.len() as u32)
                .filter(|&r| f(&holds[r as usize]))
                .collect()
        };
        return Some(Plan::Rebuild {
            files: lacking(|h| !h.own),
            copies: lacking(|h| !h.copy),
        });
    }
    if level != Level::L2 {
        return None;
    }
    let mut files = Vec::new();
    for (r, h) in holds.iter().enumerate() {
        if !h.own {
            let right = topology.place(r as u32)?.right();
            if right == r as u32 || !holds.get(right as usize)?.copy {
                return None;
            }
            files.push(r as u32);
        }
    }
    let copies = (0..holds.len() as u32)
        .filter(|&r| !holds[r as usize].copy)
        .collect();
    Some(Plan::Rebuild { files, copies })
}

/// Whether this rank's redundancy file of a candidate at `level` must be verified, given who
/// verified their own file (`owns`): an L2 copy when its left partner lacks its file, an L3
/// `RSed` file when any rank of its group does.
pub(crate) fn copy_needed(level: Level, owns: &[Holds], topology: &Topology, rank: u32) -> bool {
    let lacks = |r: &u32| owns.get(*r as usize).is_some_and(|h| !h.own);
    let Some(place) = topology.place(rank) else {
        return false;
    };
    match level {
        Level::L2 => lacks(&place.left()),
        Level::L3 => place.group.iter().any(lacks),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `n` ranks on nodes of one, in groups of `k`.
    fn topology(n: u32, k: u32) -> Topology {
        Topology::new(&(0..n).collect::<Vec<_>>(), 1, k).unwrap()
    }

    /// What each rank holds, from a string: `b` both files, `o` own only, `c` copy only, `-`
    /// neither.
    fn holds(s: &str) -> Vec<Holds> {
        s.chars()
            .map(|c| Holds {
                own: matches!(c, 'b' | 'o'),
                copy: matches!(c, 'b' | 'c'),
            })
            .collect()
    }

    fn rebuild(files: &[u32], copies: &[u32]) -> Option<Plan> {
        Some(Plan::Rebuild {
            files: files.to_vec(),
            copies: copies.to_vec(),
        })
    }

    #[test]
    fn every_own_file_there_is_recovered_as_is_at_any_level() {
        for level in Level::ALL {
            assert_eq!(
                plan(level, &holds("oooo"), &topology(4, 4)),
                Some(Plan::Own)
            );
        }
    }

    #[test]
    fn a_lost_file_at_l1_or_l4_cannot_be_recovered() {
        for level in [Level::L1, Level::L4] {
            assert_eq!(
                plan(level, &holds("b-bb"), &topology(4, 4)),
                None,
                "{level}"
            );
        }
    }

    #[test]
    fn l2_rebuilds_a_lost_file_from_its_right_partner_s_copy() {
        let t = topology(4, 4);
        // Rank 1 lost both its files: its right partner (2) keeps its copy; its left partner
        // (0) gets the copy it kept back from rank 1's rebuilt file.
        assert_eq!(plan(Level::L2, &holds("b-bb"), &t), rebuild(&[1], &[1]));
        // The copy of rank 1's file is lost with rank 2's node: no way back.
        assert_eq!(plan(Level::L2, &holds("b-ob"), &t), None);
        // Two neighbours lost: rank 1's copy went with rank 2.
        assert_eq!(plan(Level::L2, &holds("b--b"), &t), None);
        // Every own file there, a copy lost: it is rebuilt.
        assert_eq!(plan(Level::L2, &holds("bbob"), &t), Some(Plan::Own));
    }

    #[test]
    fn l3_rebuilds_up_to_k_lost_files_of_each_group() {
        let t = topology(8, 4);
        assert_eq!(plan(Level::L3, &holds("b-bbbbbb"), &t), rebuild(&[1], &[1]));
        // Four of group 0's eight files lost (two ranks' both), one of group 1's.
        assert_eq!(
            plan(Level::L3, &holds("--bbbbbo"), &t),
            rebuild(&[0, 1], &[0, 1, 7])
        );
        // Five of group 0's files lost.
        assert_eq!(plan(Level::L3, &holds("---cbbbb"), &t), None);
        // A group of one has no code.
        assert_eq!(plan(Level::L3, &holds("-"), &topology(1, 1)), None);
    }

    #[test]
    fn a_redundancy_file_is_verified_only_when_a_rank_it_serves_lacks_its_file() {
        let t = topology(8, 4);
        let owns = holds("o-oooooo");
        // L2: rank 2 keeps rank 1's copy (its left partner); rank 3 keeps rank 2's.
        assert!(copy_needed(Level::L2, &owns, &t, 2));
        assert!(!copy_needed(Level::L2, &owns, &t, 3));
        // L3: every rank of rank 1's group (0..4), none of the other group.
        for r in 0..4 {
            assert!(copy_needed(Level::L3, &owns, &t, r), "{r}");
        }
        for r in 4..8 {
            assert!(!copy_needed(Level::L3, &owns, &t, r), "{r}");
        }
        // L1 and L4 keep none; a rank outside the topology serves no one.
        assert!(!copy_needed(Level::L1, &owns, &t, 2));
        assert!(!copy_needed(Level::L4, &owns, &t, 2));
        assert!(!copy_needed(Level::L2, &owns, &t, 8));
    }
}
