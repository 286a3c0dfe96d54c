//! How a restart recovers a candidate checkpoint, from what every rank holds of it: pure
//! code, decided identically on every rank (the schedule that gathers the holdings and
//! carries out the plan is [`crate::schedule::restart`]); the inventory (`fti list`, `fti
//! prune`) applies the same rule.

use crate::config::Level;
use crate::topology::Topology;

/// What one rank holds of one candidate checkpoint.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Holds {
    /// Its own file is there and verifies.
    pub own: bool,
    /// Its redundancy file is there and verifies: the L2 partner copy it keeps for its left
    /// partner, or its L3 `RSed` file.
    pub copy: bool,
}

/// How the run recovers one candidate, decided identically on every rank.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    /// Every rank has its own file.
    Own,
    /// These ranks get their own file back (L2: from their right partner's copy; L3: by
    /// decoding), and these the redundancy file they keep (L2: from their left partner's
    /// file; L3: by encoding again). With no file lost, only copies, it is a repair.
    Rebuild {
        /// Ranks whose own file is rebuilt.
        files: Vec<u32>,
        /// Ranks whose redundancy file is rebuilt.
        copies: Vec<u32>,
    },
}

/// Why a candidate cannot be recovered: the first rank or group found lacking.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unrecoverable {
    /// L1 or L4: a rank lacks its file, and the level keeps no copy of it.
    File {
        /// The rank.
        rank: u32,
    },
    /// L2: a rank lacks its file and its right partner lacks the copy of it.
    FileAndCopy {
        /// The rank.
        rank: u32,
        /// Its right partner, which keeps the copy (`Ckpt<id>-Pcof<holder>.fti`).
        holder: u32,
    },
    /// L2: a rank lacks its file and is its own partner (a group of one node).
    NoPartner {
        /// The rank.
        rank: u32,
    },
    /// L3: a group lost more than `k` of its `2k` Rank and RSed files.
    Group {
        /// The group's ranks, in group order.
        group: Vec<u32>,
        /// Its files lost.
        lost: usize,
    },
    /// A rank has no place in the topology (more ranks hold files than the run has).
    Unplaced {
        /// The rank.
        rank: u32,
    },
}

impl std::fmt::Display for Unrecoverable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unrecoverable::File { rank } => write!(f, "rank {rank} without its file"),
            Unrecoverable::FileAndCopy { rank, holder } => write!(
                f,
                "rank {rank} without its file or the copy of it (Pcof{holder})"
            ),
            Unrecoverable::NoPartner { rank } => {
                write!(
                    f,
                    "rank {rank} without its file, and no partner keeps a copy"
                )
            }
            Unrecoverable::Group { group, lost } => {
                let names: Vec<String> = group.iter().map(u32::to_string).collect();
                let k = group.len();
                if k < 2 {
                    write!(
                        f,
                        "group {} of one rank has no code to rebuild from",
                        names.join(",")
                    )
                } else {
                    write!(
                        f,
                        "group {} with {lost} of its {} Rank and RSed files lost (at most {k} can be rebuilt)",
                        names.join(","),
                        2 * k
                    )
                }
            }
            Unrecoverable::Unplaced { rank } => {
                write!(f, "rank {rank} has no place in the topology")
            }
        }
    }
}

/// How a candidate at `level` is recovered by every rank, given what each holds, or why it
/// cannot be: the one rule both the restart and the inventory (`fti list`, `fti prune`) apply.
pub fn plan(level: Level, holds: &[Holds], topology: &Topology) -> Result<Plan, Unrecoverable> {
    let place = |r: u32| topology.place(r).ok_or(Unrecoverable::Unplaced { rank: r });
    if holds.iter().all(|h| h.own) {
        // Every own file is there: redundancy files lost or corrupt are made again (a
        // repair), so that the checkpoint survives losing a node as when it was written, as
        // FTI 1.1's recovery does. A rank without a partner keeps no redundancy file.
        let mut copies = Vec::new();
        if matches!(level, Level::L2 | Level::L3) {
            for (r, h) in holds.iter().enumerate() {
                if !h.copy && place(r as u32)?.group.len() > 1 {
                    copies.push(r as u32);
                }
            }
        }
        return Ok(if copies.is_empty() {
            Plan::Own
        } else {
            Plan::Rebuild {
                files: Vec::new(),
                copies,
            }
        });
    }
    let lacking = |f: fn(&Holds) -> bool| {
        (0..holds.len() as u32)
            .filter(|&r| f(&holds[r as usize]))
            .collect()
    };
    match level {
        Level::L1 | Level::L4 => {
            let rank = holds.iter().position(|h| !h.own).unwrap_or(0) as u32;
            Err(Unrecoverable::File { rank })
        }
        Level::L3 => {
            // Each group of k ranks survives the loss of up to k of its 2k Rank and RSed files.
            for r in 0..holds.len() as u32 {
                let group = &place(r)?.group;
                let lost = group
                    .iter()
                    .map(|&g| {
                        holds
                            .get(g as usize)
                            .map_or(2, |h| usize::from(!h.own) + usize::from(!h.copy))
                    })
                    .sum::<usize>();
                if group.len() < 2 || lost > group.len() {
                    return Err(Unrecoverable::Group {
                        group: group.clone(),
                        lost,
                    });
                }
            }
            Ok(Plan::Rebuild {
                files: lacking(|h| !h.own),
                copies: lacking(|h| !h.copy),
            })
        }
        Level::L2 => {
            let mut files = Vec::new();
            for (r, h) in holds.iter().enumerate() {
                let rank = r as u32;
                if h.own {
                    continue;
                }
                let holder = place(rank)?.right();
                if holder == rank {
                    return Err(Unrecoverable::NoPartner { rank });
                }
                if !holds.get(holder as usize).is_some_and(|h| h.copy) {
                    return Err(Unrecoverable::FileAndCopy { rank, holder });
                }
                files.push(rank);
            }
            Ok(Plan::Rebuild {
                files,
                copies: lacking(|h| !h.copy),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(level: Level, holds: &[Holds], topology: &Topology) -> Option<Plan> {
        super::plan(level, holds, topology).ok()
    }

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
    fn every_file_there_is_recovered_as_is_at_any_level() {
        for level in Level::ALL {
            assert_eq!(
                plan(level, &holds("bbbb"), &topology(4, 4)),
                Some(Plan::Own)
            );
        }
        for level in [Level::L1, Level::L4] {
            assert_eq!(
                plan(level, &holds("oooo"), &topology(4, 4)),
                Some(Plan::Own)
            );
        }
    }

    #[test]
    fn own_files_all_there_and_copies_missing_plan_a_repair() {
        for level in [Level::L2, Level::L3] {
            assert_eq!(
                plan(level, &holds("oooo"), &topology(4, 4)),
                rebuild(&[], &[0, 1, 2, 3]),
                "{level}"
            );
            assert_eq!(
                plan(level, &holds("bbob"), &topology(4, 4)),
                rebuild(&[], &[2]),
                "{level}"
            );
        }
        // A group of one keeps no redundancy: nothing to repair.
        assert_eq!(
            plan(Level::L2, &holds("o"), &topology(1, 1)),
            Some(Plan::Own)
        );
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
        // Every own file there, a copy lost: it is made again.
        assert_eq!(plan(Level::L2, &holds("bbob"), &t), rebuild(&[], &[2]));
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
    fn an_unrecoverable_candidate_says_which_rank_or_group() {
        let t = topology(4, 4);
        let why = |level, s| super::plan(level, &holds(s), &t).unwrap_err();
        assert_eq!(why(Level::L1, "bb-b"), Unrecoverable::File { rank: 2 });
        assert_eq!(
            why(Level::L2, "b-ob"),
            Unrecoverable::FileAndCopy { rank: 1, holder: 2 }
        );
        assert_eq!(
            why(Level::L3, "---cbbbb".get(..4).unwrap()),
            Unrecoverable::Group {
                group: vec![0, 1, 2, 3],
                lost: 7
            }
        );
        let one = topology(1, 1);
        assert_eq!(
            super::plan(Level::L2, &holds("c"), &one),
            Err(Unrecoverable::NoPartner { rank: 0 })
        );
        assert!(why(Level::L2, "b-ob").to_string().contains("Pcof2"));
    }
}
