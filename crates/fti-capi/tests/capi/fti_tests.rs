//! The checks of FTI 1.1's own test driver, run against this library: a 4-rank program
//! (`tests/c/crash.c`) checkpoints at a level and dies; files of the target group are erased
//! or corrupted as FTI's `corrupt` tool does (unlink, or the first 16 bytes inverted); the
//! program restarts with the same config, and the driver's expectations hold: the same
//! return codes, the recovered data, and the log line `Recovering successfully from level N`
//! exactly when a level could be recovered. Configs have no dedicated heads; the I/O modes are
//! FTI's three: FTI-FF (`ckpt_io = 3`), POSIX (`ckpt_io = 1`: raw files, MD5s in the group's
//! meta data) and MPI-IO (`ckpt_io = 2`: POSIX at L1–L3, one shared file at L4, which FTI's
//! tool erases or corrupts whole).
//!
//! CI runs one erase and one corrupt case per level with FTI-FF, and a slice of each other
//! mode; the full matrix (every corruption pattern of FTI's tool, Rank and partner files, in
//! the three modes) is `scripts/fti-tests` (an ignored test).

use std::path::{Path, PathBuf};

use crate::util::{self, Link};

const RANKS: u32 = 4;

/// Which files of the target group are hit, as FTI's `corrupt` tool names its sixth argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pattern {
    /// One file of rank 0.
    One,
    /// The Rank and partner files of ranks 0 and 2 (two non-adjacent nodes).
    TwoApart,
    /// The Rank and partner files of ranks 0 and 1 (two adjacent nodes).
    TwoAdjacent,
    /// One file of every rank.
    All,
}

/// Erase (unlink) or corrupt (invert the first 16 bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Damage {
    Erase,
    Corrupt,
}

/// A file of a checkpoint: `Rank` (the rank's own) or its level's redundancy file (`Pcof` at
/// L2, `RSed` at L3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Rank,
    Partner,
}

/// The (rank, kind) files a pattern hits; `kind` is the tool's "ckpt or partner" argument for
/// the single-file patterns. With one rank per node and groups of 4, the target group's first
/// node is node 0.
fn targets(pattern: Pattern, kind: Kind) -> Vec<(u32, Kind)> {
    match pattern {
        Pattern::One => vec![(0, kind)],
        Pattern::TwoApart => vec![
            (0, Kind::Rank),
            (0, Kind::Partner),
            (2, Kind::Rank),
            (2, Kind::Partner),
        ],
        Pattern::TwoAdjacent => vec![
            (0, Kind::Rank),
            (0, Kind::Partner),
            (1, Kind::Rank),
            (1, Kind::Partner),
        ],
        Pattern::All => (0..RANKS).map(|r| (r, kind)).collect(),
    }
}

/// The level FTI recovers from after losing `lost` (None: no recovery). L1 and L4 keep one
/// copy of each file; at L2 rank r's file survives in `Pcof<r+1>` on its right partner; at L3
/// a group of k ranks rebuilds up to k of its 2k files.
fn expected(level: u8, lost: &[(u32, Kind)]) -> Option<u8> {
    match level {
        2 => (0..RANKS)
            .all(|r| {
                !lost.contains(&(r, Kind::Rank))
                    || !lost.contains(&((r + 1) % RANKS, Kind::Partner))
            })
            .then_some(2),
        3 => (lost.len() <= RANKS as usize).then_some(3),
        _ => lost.is_empty().then_some(level),
    }
}

/// The file of `rank` and `kind` of the newest checkpoint at `level`, as FTI's tool finds it;
/// with MPI-IO (`io` 2), L4's one shared file whatever the rank.
fn target_file(dir: &Path, io: u8, exec_id: &str, level: u8, rank: u32, kind: Kind) -> PathBuf {
    let folder = if level == 4 {
        dir.join(format!("Global/{exec_id}/l4"))
    } else {
        dir.join(format!("Local/node{rank}/{exec_id}/l{level}"))
    };
    let name = match (kind, level) {
        (Kind::Rank, _) => "Rank",
        (Kind::Partner, 2) => "Pcof",
        (Kind::Partner, _) => "RSed",
    };
    let id = util::newest_checkpoint_id(&folder);
    if io == 2 && level == 4 {
        return folder.join(format!("Ckpt{id}-mpiio.fti"));
    }
    folder.join(format!("Ckpt{id}-{name}{rank}.fti"))
}

fn damage(path: &Path, how: Damage) {
    match how {
        Damage::Erase => std::fs::remove_file(path).unwrap(),
        Damage::Corrupt => {
            let mut bytes = std::fs::read(path).unwrap();
            for b in bytes.iter_mut().take(16) {
                *b ^= 0xff;
            }
            std::fs::write(path, bytes).unwrap();
        }
    }
}

/// One case of the driver in I/O mode `io`: checkpoint 3 times at `level`, die, damage,
/// restart, check.
fn case(exe: &Path, io: u8, level: u8, how: Damage, pattern: Pattern, kind: Kind) {
    let what = format!("ckpt_io = {io}, L{level} {how:?} {pattern:?} {kind:?}");
    let dir = tempfile::tempdir().unwrap();
    let cfg = util::config(dir.path(), "group_size = 4");
    let text = std::fs::read_to_string(&cfg).unwrap();
    std::fs::write(
        &cfg,
        text.replace("ckpt_io = 3", &format!("ckpt_io = {io}")),
    )
    .unwrap();
    let cfg_arg = cfg.to_str().unwrap();
    let level_arg = level.to_string();
    let out = util::mpirun(
        RANKS,
        exe,
        &["write", cfg_arg, &level_arg, "die"],
        dir.path(),
    );
    assert!(!out.status.success(), "{what}: every rank kills itself");
    let (failure, exec_id) = util::restart_keys(&cfg);
    assert_eq!(failure, 1, "{what}");
    let lost = targets(pattern, kind);
    for &(rank, kind) in &lost {
        damage(
            &target_file(dir.path(), io, &exec_id, level, rank, kind),
            how,
        );
    }
    // FTI's driver reads the information lines: verbosity 2 for the restart.
    let text = std::fs::read_to_string(&cfg).unwrap();
    std::fs::write(&cfg, text.replace("verbosity = 3", "verbosity = 2")).unwrap();
    let out = util::mpirun(RANKS, exe, &["restart", cfg_arg, &level_arg], dir.path());
    let stdout = util::success(&format!("{what}: crash restart"), &out);
    let results = util::results(&stdout);
    let recovered_line = format!("Recovering successfully from level {level} with Ckpt. 3.");
    match expected(level, &lost) {
        Some(_) => {
            assert!(stdout.contains(&recovered_line), "{what}: {stdout}");
            for r in 0..RANKS {
                let line =
                    format!("rank {r} init 0 status 1 recover 0 holds checkpoint 3 1 status 0");
                assert!(results.contains(&line.as_str()), "{what}: {line}\n{stdout}");
            }
        }
        None => {
            assert!(
                !stdout.contains("Recovering successfully"),
                "{what}: {stdout}"
            );
            // FTI_Init returns FTI_NREC and the run starts fresh: nothing to recover.
            for r in 0..RANKS {
                let prefix = format!("rank {r} init -2 status 0 recover ");
                assert!(
                    results
                        .iter()
                        .any(|l| l.starts_with(&prefix) && l.contains("holds checkpoint 3 0")),
                    "{what}: {prefix}\n{stdout}"
                );
            }
        }
    }
    for r in 0..RANKS {
        let line = format!("rank {r} finalize 0");
        assert!(results.contains(&line.as_str()), "{what}: {line}\n{stdout}");
    }
}

#[test]
fn fti_driver_one_erase_and_one_corrupt_case_per_level() {
    let exe = util::compile("crash", Link::Shared);
    for level in 1..=4 {
        for how in [Damage::Erase, Damage::Corrupt] {
            case(&exe, 3, level, how, Pattern::One, Kind::Rank);
        }
    }
}

/// POSIX and MPI-IO files: a slice of the driver's cases in each mode (the meta data's MD5
/// catches a corrupt file; a lost one comes back from its partner copy or the code).
#[test]
fn fti_driver_posix_and_mpiio_slice() {
    let exe = util::compile("crash", Link::Shared);
    for (io, level, how, pattern, kind) in [
        (1, 1, Damage::Corrupt, Pattern::One, Kind::Rank),
        (1, 2, Damage::Erase, Pattern::TwoApart, Kind::Rank),
        (1, 3, Damage::Corrupt, Pattern::All, Kind::Partner),
        (1, 4, Damage::Erase, Pattern::One, Kind::Rank),
        (2, 2, Damage::Corrupt, Pattern::One, Kind::Partner),
        (2, 4, Damage::Corrupt, Pattern::One, Kind::Rank),
    ] {
        case(&exe, io, level, how, pattern, kind);
    }
}

/// The full matrix of FTI's driver: `scripts/fti-tests` runs it.
#[test]
#[ignore = "the full matrix takes minutes: scripts/fti-tests"]
fn fti_driver_full_matrix() {
    let exe = util::compile("crash", Link::Shared);
    for level in 1..=4u8 {
        for how in [Damage::Erase, Damage::Corrupt] {
            for pattern in [
                Pattern::One,
                Pattern::TwoApart,
                Pattern::TwoAdjacent,
                Pattern::All,
            ] {
                for kind in [Kind::Rank, Kind::Partner] {
                    let partner_files = targets(pattern, kind).iter().any(|t| t.1 == Kind::Partner);
                    // L1 and L4 have no partner files to damage.
                    if partner_files && (level == 1 || level == 4) {
                        continue;
                    }
                    // The two-node patterns do not depend on `kind`.
                    if kind == Kind::Partner
                        && matches!(pattern, Pattern::TwoApart | Pattern::TwoAdjacent)
                    {
                        continue;
                    }
                    for io in [3, 1, 2] {
                        case(&exe, io, level, how, pattern, kind);
                    }
                }
            }
        }
    }
}
