//! Multi-rank levels with the ranks as threads of this process (`fti::Threads`): L2 partner
//! copies and L4 files against FTI 1.1's own trees, restarts from those trees, node loss
//! recovered through L2, odd and uneven group layouts. The same code runs over MPI in
//! `tests/mpi.rs`.

use crate::util::dataset;
use crate::util::trees;

use std::collections::BTreeMap;

use std::path::{Path, PathBuf};
use trees::{assert_same_but_unreproducible, copy_tree, tree};

use crate::util::on_ranks;
use fti::{Config, Fti, Level, Status, Var};

const FTI_EXEC: &str = "2026-11-22_04-12-33";

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/fti/levels")
}

fn config(root: &Path, group_size: u32) -> Config {
    Config {
        ckpt_dir: root.join("run/Local"),
        glbl_dir: root.join("run/Global"),
        meta_dir: root.join("run/Meta"),
        group_size,
        node_size: 1,
        local_test: true,
        verbosity: 3,
        ..Config::default()
    }
}

/// Checkpoints `ckpt` of the dataset at `level` on this rank.
fn checkpoint(fti: &mut Fti, ckpt: i32, level: Level, rank: u32) -> fti::CheckpointInfo {
    let mut data = dataset::data(ckpt, rank);
    let vars: Vec<Var> = data.iter_mut().map(|(id, v)| Var::slice(*id, v)).collect();
    fti.checkpoint(ckpt, level, &vars).unwrap()
}

/// Recovers the restart's checkpoint, which must be `ckpt` of the dataset, and checks every
/// element.
fn recover_and_check(fti: &mut Fti, ckpt: i32, rank: u32) -> fti::CheckpointInfo {
    let want = dataset::data(ckpt, rank);
    let mut got: Vec<(i32, Vec<i32>)> =
        want.iter().map(|(id, v)| (*id, vec![0; v.len()])).collect();
    let mut vars: Vec<Var> = got.iter_mut().map(|(id, v)| Var::slice(*id, v)).collect();
    let info = fti.recover(&mut vars).unwrap();
    drop(vars);
    assert_eq!(got, want, "rank {rank}: recovered data");
    info
}

/// Our files after each step equal FTI 1.1's (same names and places), for L2 and L4, with the
/// post-processing inline or in the background thread (`inline_l2 = 0`, `inline_l4 = 0`: L4
/// files are then written in `l1/` first, as FTI does, and copied).
#[test]
fn l2_and_l4_files_are_fti_files() {
    for (vector, level, inline) in [
        ("L2", Level::L2, true),
        ("L2", Level::L2, false),
        ("L4", Level::L4, true),
        ("L4", Level::L4, false),
    ] {
        let root = tempfile::tempdir().unwrap();
        let theirs_exec = if level == Level::L4 {
            "2026-11-22_04-12-35"
        } else {
            FTI_EXEC
        };
        let execs = on_ranks(4, |comm| {
            let rank = comm.rank();
            let cfg = Config {
                inline_l2: inline,
                inline_l4: inline,
                ..config(root.path(), 4)
            };
            let mut fti = Fti::init_with(cfg, comm).unwrap();
            for ckpt in [1, 2] {
                checkpoint(&mut fti, ckpt, level, rank);
            }
            fti.wait().unwrap();
            fti.exec_id().to_owned()
        });
        assert!(execs.iter().all(|e| e == &execs[0]), "one execution id");
        // Only checkpoint 2 survives, as in FTI's tree after step 2.
        let mut ours = tree(&root.path().join("run"), &execs[0]);
        if !inline && level == Level::L4 {
            // The local copies written first stay as the L1 checkpoint.
            ours.retain(|name, _| !name.contains("/l1/"));
        }
        let theirs = tree(&fixtures().join(vector).join("files/step2"), theirs_exec);
        let names = |t: &BTreeMap<String, Vec<u8>>| t.keys().cloned().collect::<Vec<_>>();
        assert_eq!(
            names(&ours),
            names(&theirs),
            "{vector} inline {inline}: files and places"
        );
        for (name, bytes) in &theirs {
            if name.ends_with(".fti") && !name.ends_with("Topology.fti") {
                assert_same_but_unreproducible(name, &ours[name], bytes);
            }
        }
        let topology = String::from_utf8(ours["Meta/EXEC/Topology.fti"].clone()).unwrap();
        assert!(
            topology.contains("[topology]")
                && topology.contains("3                              = node3")
        );
    }
}

/// With the partner copies sent in the background, a node lost before they arrive still leaves
/// the previous checkpoint; once they have, the new one.
#[test]
fn background_partner_copies_and_node_loss() {
    let root = tempfile::tempdir().unwrap();
    let cfg = || Config {
        inline_l2: false,
        ..config(root.path(), 4)
    };
    let execs = on_ranks(4, |comm| {
        let rank = comm.rank();
        let mut fti = Fti::init_with(cfg(), comm).unwrap();
        checkpoint(&mut fti, 1, Level::L2, rank);
        checkpoint(&mut fti, 2, Level::L2, rank);
        // Dropping the runtime waits for the copies.
        fti.exec_id().to_owned()
    });
    std::fs::remove_dir_all(root.path().join("run/Local/node2")).unwrap();
    let _ = execs;
    let notes = on_ranks(4, |comm| {
        let rank = comm.rank();
        let mut fti = Fti::init_with(cfg(), comm).unwrap();
        recover_and_check(&mut fti, 2, rank);
        fti.recovery_note().unwrap().to_owned()
    });
    assert!(notes[0].contains("rank(s) [2] rebuilt"), "{}", notes[0]);
}

/// Checkpoint 1 of the L2 tree too: names, places, ptFs and the partner copies.
#[test]
fn l2_first_checkpoint_matches_fti() {
    let root = tempfile::tempdir().unwrap();
    let execs = on_ranks(4, |comm| {
        let rank = comm.rank();
        let mut fti = Fti::init_with(config(root.path(), 4), comm).unwrap();
        checkpoint(&mut fti, 1, Level::L2, rank);
        fti.exec_id().to_owned()
    });
    let ours = tree(&root.path().join("run"), &execs[0]);
    let theirs = tree(&fixtures().join("L2/files/step1"), FTI_EXEC);
    for (name, bytes) in theirs.iter().filter(|(n, _)| n.contains("/l2/")) {
        assert_same_but_unreproducible(name, &ours[name], bytes);
    }
    assert_eq!(ours.len(), theirs.len());
}

/// FTI 1.1's L2 trees restart here: all files present, one Rank file lost (rebuilt from its
/// partner's copy), a file and its copy lost (nothing to recover: a fresh start).
#[test]
fn restart_from_fti_l2_trees() {
    for lost in [
        vec![],
        vec!["node1/EXEC/l2/Ckpt2-Rank1.fti"],
        vec![
            "node1/EXEC/l2/Ckpt2-Rank1.fti",
            "node2/EXEC/l2/Ckpt2-Pcof2.fti",
        ],
    ] {
        let root = tempfile::tempdir().unwrap();
        copy_tree(&fixtures().join("L2/files/step2"), &root.path().join("run"));
        for f in &lost {
            std::fs::remove_file(
                root.path()
                    .join("run/Local")
                    .join(f.replace("EXEC", FTI_EXEC)),
            )
            .unwrap();
        }
        let recoverable = lost.len() < 2;
        let notes = on_ranks(4, |comm| {
            let rank = comm.rank();
            let mut cfg = config(root.path(), 4);
            cfg.failure = Some(1);
            cfg.exec_id = Some(FTI_EXEC.into());
            let mut fti = Fti::init_with(cfg, comm).unwrap();
            if !recoverable {
                assert_eq!(fti.status(), &Status::Fresh, "{lost:?}");
                return String::new();
            }
            let info = recover_and_check(&mut fti, 2, rank);
            assert_eq!((info.id, info.level), (2, Level::L2));
            fti.recovery_note().unwrap().to_owned()
        });
        if lost.len() == 1 {
            assert!(notes[0].contains("rank(s) [1] rebuilt"), "{}", notes[0]);
            // The rebuilt file is the lost one, byte for byte.
            let back = root
                .path()
                .join("run/Local/node1")
                .join(FTI_EXEC)
                .join("l2/Ckpt2-Rank1.fti");
            let original = fixtures()
                .join("L2/files/step2/Local/node1")
                .join(FTI_EXEC)
                .join("l2/Ckpt2-Rank1.fti");
            assert_eq!(
                std::fs::read(back).unwrap(),
                std::fs::read(original).unwrap()
            );
        } else if lost.is_empty() {
            assert!(notes[0].contains("own file"), "{}", notes[0]);
        }
    }
}

/// Losing one node's whole checkpoint directory: the run restarts from L2 with identical data
/// and the lost node gets both its file and the copy it kept back. Odd and uneven layouts:
/// 2, 3, 4 and 5 ranks, groups of 2, 3 and 4 (5 ranks in groups of 2: the single leftover node
/// joins the last group).
#[test]
fn node_loss_recovers_through_l2() {
    for (n, group_size, lost_node) in [
        (2, 2, 0),
        (3, 3, 2),
        (4, 4, 1),
        (4, 2, 3),
        (5, 2, 4),
        (5, 4, 0),
    ] {
        let root = tempfile::tempdir().unwrap();
        let execs = on_ranks(n, |comm| {
            let rank = comm.rank();
            let mut fti = Fti::init_with(config(root.path(), group_size), comm).unwrap();
            checkpoint(&mut fti, 1, Level::L1, rank);
            checkpoint(&mut fti, 2, Level::L2, rank);
            fti.exec_id().to_owned()
        });
        let node_dir = root.path().join(format!("run/Local/node{lost_node}"));
        let before = tree(&node_dir, &execs[0]);
        std::fs::remove_dir_all(&node_dir).unwrap();
        let notes = on_ranks(n, |comm| {
            let rank = comm.rank();
            let mut fti = Fti::init_with(config(root.path(), group_size), comm).unwrap();
            let info = recover_and_check(&mut fti, 2, rank);
            assert_eq!((info.id, info.level), (2, Level::L2), "{n} ranks");
            fti.recovery_note().unwrap().to_owned()
        });
        assert!(
            notes[0].contains(&format!("rank(s) [{lost_node}] rebuilt"))
                && notes[0].contains(&format!("partner copies of rank(s) [{lost_node}] restored")),
            "{n} ranks: {}",
            notes[0]
        );
        assert_eq!(
            tree(&node_dir, &execs[0]),
            before,
            "{n} ranks: node {lost_node} rebuilt byte for byte"
        );
    }
}

/// A rank whose newest file is corrupt and whose partner copy is gone: that checkpoint cannot
/// be recovered by every rank, so every rank falls back to the previous one together.
#[test]
fn ranks_agree_on_an_older_checkpoint() {
    let root = tempfile::tempdir().unwrap();
    let cfg = || Config {
        keep_ckpts: 2,
        ..config(root.path(), 3)
    };
    let execs = on_ranks(3, |comm| {
        let rank = comm.rank();
        let mut fti = Fti::init_with(cfg(), comm).unwrap();
        checkpoint(&mut fti, 1, Level::L2, rank);
        checkpoint(&mut fti, 2, Level::L2, rank);
        fti.exec_id().to_owned()
    });
    let l2 = |node: u32| {
        root.path()
            .join(format!("run/Local/node{node}/{}/l2", execs[0]))
    };
    // Rank 1's checkpoint 2 is corrupt; its copy is on rank 2, removed.
    let own = l2(1).join("Ckpt2-Rank1.fti");
    let mut bytes = std::fs::read(&own).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(&own, bytes).unwrap();
    std::fs::remove_file(l2(2).join("Ckpt2-Pcof2.fti")).unwrap();
    let results = on_ranks(3, |comm| {
        let rank = comm.rank();
        let mut fti = Fti::init_with(cfg(), comm).unwrap();
        let skipped: Vec<String> = fti.skipped().iter().map(ToString::to_string).collect();
        let skipped = skipped.join("\n");
        let info = recover_and_check(&mut fti, 1, rank);
        (info.id, skipped)
    });
    for (rank, (id, skipped)) in results.iter().enumerate() {
        assert_eq!(*id, 1, "rank {rank}");
        assert!(
            skipped.contains("checkpoint 2 at L2 skipped"),
            "rank {rank}: {skipped}"
        );
    }
}

/// L2 needs a partner: one rank alone, or groups of one, are refused with a clear error.
#[test]
fn l2_without_partner_is_refused() {
    let root = tempfile::tempdir().unwrap();
    let errors = on_ranks(2, |comm| {
        let rank = comm.rank();
        let mut fti = Fti::init_with(config(root.path(), 1), comm).unwrap();
        let mut data = dataset::data(1, rank);
        let vars: Vec<Var> = data.iter_mut().map(|(id, v)| Var::slice(*id, v)).collect();
        fti.checkpoint(1, Level::L2, &vars).unwrap_err().to_string()
    });
    assert!(errors[0].contains("needs a partner rank"), "{}", errors[0]);
    // A snapshot interval for L2 or L3 in a run that cannot do them is refused at init.
    for (i, level) in [(1, Level::L2), (2, Level::L3)] {
        let mut cfg = config(root.path(), 4);
        cfg.intervals[i] = Some(std::time::Duration::from_secs(60));
        assert!(matches!(Fti::init(cfg), Err(fti::Error::NeedsMpi(l)) if l == level));
    }
}

/// L3 (FTI 1.1's Reed-Solomon code across the group): the Rank files are FTI's (maxFs set),
/// each RSed file is the code of our own Rank files followed by its trailer.
#[test]
fn l3_files_are_fti_files_and_code() {
    let root = tempfile::tempdir().unwrap();
    let execs = on_ranks(4, |comm| {
        let rank = comm.rank();
        let mut fti = Fti::init_with(config(root.path(), 4), comm).unwrap();
        checkpoint(&mut fti, 1, Level::L3, rank);
        fti.exec_id().to_owned()
    });
    let ours = tree(&root.path().join("run"), &execs[0]);
    let theirs = tree(&fixtures().join("L3/files/step1"), "2026-11-22_04-12-34");
    let names = |t: &BTreeMap<String, Vec<u8>>| t.keys().cloned().collect::<Vec<_>>();
    assert_eq!(names(&ours), names(&theirs));
    let rank_file = |r: u32| ours[&format!("Local/node{r}/EXEC/l3/Ckpt1-Rank{r}.fti")].clone();
    for r in 0..4 {
        let name = format!("Local/node{r}/EXEC/l3/Ckpt1-Rank{r}.fti");
        assert_same_but_unreproducible(&name, &ours[&name], &theirs[&name]);
    }
    let ranks: Vec<Vec<u8>> = (0..4).map(rank_file).collect();
    let refs: Vec<&[u8]> = ranks.iter().map(Vec::as_slice).collect();
    let code = ftiff::l3::Code::new(4)
        .unwrap()
        .encode(&refs, &[0, 1, 2, 3]);
    for r in 0..4u32 {
        let name = format!("Local/node{r}/EXEC/l3/Ckpt1-RSed{r}.fti");
        let (ours, theirs) = (&ours[&name], &theirs[&name]);
        assert_eq!(ours.len(), theirs.len(), "{name}");
        let max_fs = ours.len() - 96;
        assert_eq!(
            &ours[..max_fs],
            &code[r as usize][..],
            "{name}: the code of our Rank files"
        );
        let rsed = ftiff::RsedFile::parse(ours).unwrap();
        assert!(rsed.verify(ours, &|_| {}).is_empty(), "{name}");
        assert_eq!(
            (rsed.fb.fs, rsed.fb.ckpt_size),
            (max_fs as i64, ranks[r as usize].len() as i64)
        );
        assert_eq!(rsed.fb.mode, [0; 7], "zero padding");
    }
}

/// Up to k of a group's 2k files lost (node loss included), with odd and uneven file sizes
/// (the largest file odd-sized, so its last byte must be recovered from its own hashes): the
/// run restarts from L3 with identical data and the lost files back byte for byte; more than k
/// lost leaves nothing to recover.
#[test]
fn l3_rebuilds_up_to_k_lost_files() {
    // (ranks, group size, lost (node, file) pairs)
    type Case = (u32, u32, &'static [(u32, &'static str)]);
    let cases: &[Case] = &[
        (4, 4, &[(1, "Rank"), (1, "RSed")]),
        (4, 4, &[(0, "Rank"), (1, "RSed")]),
        (4, 4, &[(0, "Rank"), (1, "Rank"), (2, "RSed"), (3, "Rank")]),
        (4, 4, &[(3, "Rank")]),
        (3, 4, &[(2, "Rank"), (0, "RSed")]),
        (5, 5, &[(4, "Rank"), (4, "RSed"), (2, "Rank")]),
        (
            4,
            4,
            &[
                (0, "Rank"),
                (1, "Rank"),
                (2, "Rank"),
                (3, "Rank"),
                (0, "RSed"),
            ],
        ),
    ];
    for &(n, group, lost) in cases {
        let root = tempfile::tempdir().unwrap();
        // An extra byte array of odd length, the longest on the last rank.
        let odd = |rank: u32| vec![rank as u8 ^ 0x5a; 1001 + 2 * rank as usize];
        let execs = on_ranks(n, |comm| {
            let rank = comm.rank();
            let mut fti = Fti::init_with(config(root.path(), group), comm).unwrap();
            let mut data = dataset::data(2, rank);
            let mut extra = odd(rank);
            let mut vars: Vec<Var> = data.iter_mut().map(|(id, v)| Var::slice(*id, v)).collect();
            vars.push(Var::slice(9, &mut extra));
            let info = fti.checkpoint(2, Level::L3, &vars).unwrap();
            assert_eq!(info.size % 2, 1, "odd file sizes");
            fti.exec_id().to_owned()
        });
        let path = |node: u32, kind: &str| {
            root.path().join(format!(
                "run/Local/node{node}/{}/l3/Ckpt2-{kind}{node}.fti",
                execs[0]
            ))
        };
        let before: Vec<Vec<u8>> = lost
            .iter()
            .map(|(node, kind)| std::fs::read(path(*node, kind)).unwrap())
            .collect();
        for (node, kind) in lost {
            std::fs::remove_file(path(*node, kind)).unwrap();
        }
        let recoverable = lost.len() <= group.min(n) as usize;
        let notes = on_ranks(n, |comm| {
            let rank = comm.rank();
            let mut fti = Fti::init_with(config(root.path(), group), comm).unwrap();
            if !recoverable {
                assert_eq!(fti.status(), &Status::Fresh);
                return String::new();
            }
            let want = dataset::data(2, rank);
            let mut got: Vec<(i32, Vec<i32>)> =
                want.iter().map(|(id, v)| (*id, vec![0; v.len()])).collect();
            let mut extra = vec![0u8; odd(rank).len()];
            let mut vars: Vec<Var> = got.iter_mut().map(|(id, v)| Var::slice(*id, v)).collect();
            vars.push(Var::slice(9, &mut extra));
            let info = fti.recover(&mut vars).unwrap();
            drop(vars);
            assert_eq!((got, extra), (want, odd(rank)), "rank {rank}");
            assert_eq!(info.level, Level::L3);
            fti.recovery_note().unwrap().to_owned()
        });
        if recoverable {
            assert!(notes[0].starts_with("L3"), "{}", notes[0]);
            for ((node, kind), bytes) in lost.iter().zip(&before) {
                let back = std::fs::read(path(*node, kind)).unwrap();
                if *kind == "Rank" {
                    assert_eq!(
                        &back, bytes,
                        "{n} ranks: {kind}{node} rebuilt byte for byte"
                    );
                } else {
                    // Same code; the trailer's timestamp (and so its myHash) is new.
                    assert_eq!(
                        back[..back.len() - 96],
                        bytes[..bytes.len() - 96],
                        "{kind}{node}"
                    );
                }
            }
        }
    }
}

/// A corrupted (not missing) RSed file is detected and treated as lost.
#[test]
fn l3_corrupted_rsed_counts_as_lost() {
    let root = tempfile::tempdir().unwrap();
    let execs = on_ranks(4, |comm| {
        let rank = comm.rank();
        let mut fti = Fti::init_with(config(root.path(), 4), comm).unwrap();
        checkpoint(&mut fti, 2, Level::L3, rank);
        fti.exec_id().to_owned()
    });
    let path = |node: u32, kind: &str| {
        root.path().join(format!(
            "run/Local/node{node}/{}/l3/Ckpt2-{kind}{node}.fti",
            execs[0]
        ))
    };
    let rsed = std::fs::read(path(1, "RSed")).unwrap();
    let mut bad = rsed.clone();
    bad[10] ^= 0x40;
    std::fs::write(path(1, "RSed"), &bad).unwrap();
    std::fs::remove_file(path(0, "Rank")).unwrap();
    let notes = on_ranks(4, |comm| {
        let rank = comm.rank();
        let mut fti = Fti::init_with(config(root.path(), 4), comm).unwrap();
        recover_and_check(&mut fti, 2, rank);
        (
            fti.recovery_note().unwrap().to_owned(),
            fti.skipped()
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(" "),
        )
    });
    assert!(
        notes[0].0.contains("RSed files of rank(s) [1] re-encoded"),
        "{}",
        notes[0].0
    );
    assert!(
        notes[1].1.contains("RSed1"),
        "rank 1 says why: {}",
        notes[1].1
    );
    // Re-encoded: the same code as before the corruption.
    let back = std::fs::read(path(1, "RSed")).unwrap();
    assert_eq!(back[..back.len() - 96], rsed[..rsed.len() - 96]);
}

/// `local_test = 0`: ranks grouped into nodes by host name (here one host holding all 4 ranks,
/// `node_size` 2, so 2 nodes), one local directory without `node<N>/`; L2 works across the
/// two nodes and `Topology.fti` names the hosts.
#[test]
fn nodes_by_host_name() {
    let root = tempfile::tempdir().unwrap();
    let cfg = || Config {
        local_test: false,
        node_size: 2,
        group_size: 2,
        ..config(root.path(), 2)
    };
    let execs = on_ranks(4, |comm| {
        let rank = comm.rank();
        let mut fti = Fti::init_with(cfg(), comm).unwrap();
        let place = fti.topology().place(rank).unwrap().clone();
        assert_eq!(place.node, rank / 2);
        assert_eq!(place.group, [rank % 2, rank % 2 + 2]);
        checkpoint(&mut fti, 1, Level::L2, rank);
        fti.exec_id().to_owned()
    });
    let files = tree(&root.path().join("run"), &execs[0]);
    assert!(
        files.contains_key("Local/EXEC/l2/Ckpt1-Pcof3.fti"),
        "{:?}",
        files.keys()
    );
    let topology = String::from_utf8(files["Meta/EXEC/Topology.fti"].clone()).unwrap();
    assert!(
        topology.contains(
            "0                              = host\n1                              = host\n"
        ),
        "{topology}"
    );
    on_ranks(4, |comm| {
        let rank = comm.rank();
        let mut fti = Fti::init_with(cfg(), comm).unwrap();
        recover_and_check(&mut fti, 1, rank);
    });
}

/// A rank that cannot checkpoint (here: the same id protected twice) fails, and every other
/// rank fails with it instead of waiting; the next checkpoint works everywhere.
#[test]
fn one_rank_failing_fails_the_checkpoint_everywhere() {
    let root = tempfile::tempdir().unwrap();
    let errors = on_ranks(3, |comm| {
        let rank = comm.rank();
        let mut fti = Fti::init_with(config(root.path(), 3), comm).unwrap();
        let (mut a, mut b) = (1u32, 2u32);
        let bad = fti.checkpoint(
            1,
            Level::L2,
            &[
                Var::new(7, &mut a),
                Var::new(7 + i32::from(rank != 1), &mut b),
            ],
        );
        let err = bad.unwrap_err();
        checkpoint(&mut fti, 2, Level::L2, rank);
        err
    });
    assert!(
        errors[1].to_string().contains("protected twice"),
        "{}",
        errors[1]
    );
    for r in [0, 2] {
        assert!(
            errors[r].to_string().contains("rank [1] failed"),
            "{}",
            errors[r]
        );
        // The other ranks learn the step and the rank that failed it, as data.
        assert!(
            matches!(&errors[r], fti::Error::Ranks { failed, .. } if failed == &[1]),
            "{:?}",
            errors[r]
        );
    }
}

/// `keep_last_ckpt = 1` on 4 ranks: after `finalize` the tree is FTI 1.1's (the last checkpoint
/// of every rank in L4, nothing local, the topology kept), and a new run restarts from it.
#[test]
fn keep_last_checkpoint_at_finalize_is_fti_tree() {
    let root = tempfile::tempdir().unwrap();
    let cfg = || Config {
        keep_last_ckpt: true,
        ..config(root.path(), 4)
    };
    let execs = on_ranks(4, |comm| {
        let rank = comm.rank();
        let mut fti = Fti::init_with(cfg(), comm).unwrap();
        checkpoint(&mut fti, 1, Level::L1, rank);
        checkpoint(&mut fti, 2, Level::L1, rank);
        let exec = fti.exec_id().to_owned();
        fti.finalize().unwrap();
        exec
    });
    let ours = tree(&root.path().join("run"), &execs[0]);
    let vector = fixtures().join("L1-keep-last-finalize/files/after-finalize");
    let theirs = tree(&vector, "2026-11-22_04-13-50");
    let names = |t: &BTreeMap<String, Vec<u8>>| t.keys().cloned().collect::<Vec<_>>();
    assert_eq!(names(&ours), names(&theirs));
    for (name, bytes) in theirs.iter().filter(|(n, _)| n.contains("/l4/")) {
        assert_same_but_unreproducible(name, &ours[name], bytes);
    }
    on_ranks(4, |comm| {
        let rank = comm.rank();
        let mut fti = Fti::init_with(cfg(), comm).unwrap();
        let info = recover_and_check(&mut fti, 2, rank);
        assert_eq!(info.level, Level::L4);
    });
}

/// L2 partner copies streamed while the files are written, with files of several pieces and
/// of different sizes on every rank (odd variable sizes): every copy is its left partner's
/// file byte for byte, and a lost node comes back through them.
#[test]
fn streamed_partner_copies_of_uneven_files() {
    let root = tempfile::tempdir().unwrap();
    // Rank r: three variables of odd sizes, 8-10 MiB in all (three pieces of the stream).
    let data = |ckpt: i32, rank: u32| -> Vec<(i32, Vec<i32>)> {
        [
            1_000_003 + 7919 * rank as usize,
            1_300_001,
            77 + rank as usize,
        ]
        .iter()
        .enumerate()
        .map(|(i, &n)| {
            let seed = (ckpt as u32).wrapping_mul(2_654_435_761) ^ (rank << 8) ^ i as u32;
            let v = (0..n as u32)
                .map(|x| (x.wrapping_mul(747_796_405) ^ seed).rotate_left(x % 31) as i32)
                .collect();
            (i as i32 + 10, v)
        })
        .collect()
    };
    let run = |recover: bool| {
        on_ranks(4, |comm| {
            let rank = comm.rank();
            let mut fti = Fti::init_with(config(root.path(), 4), comm).unwrap();
            let mut want = data(2, rank);
            if recover {
                let mut got: Vec<(i32, Vec<i32>)> =
                    want.iter().map(|(id, v)| (*id, vec![0; v.len()])).collect();
                let mut vars: Vec<Var> = got.iter_mut().map(|(id, v)| Var::slice(*id, v)).collect();
                let info = fti.recover(&mut vars).unwrap();
                drop(vars);
                assert_eq!((info.id, info.level), (2, Level::L2));
                assert_eq!(got, want, "rank {rank}: recovered data");
                return fti.recovery_note().unwrap().to_owned();
            }
            let mut first = data(1, rank);
            let vars: Vec<Var> = first.iter_mut().map(|(id, v)| Var::slice(*id, v)).collect();
            fti.checkpoint(1, Level::L2, &vars).unwrap();
            let vars: Vec<Var> = want.iter_mut().map(|(id, v)| Var::slice(*id, v)).collect();
            fti.checkpoint(2, Level::L2, &vars).unwrap();
            fti.exec_id().to_owned()
        })
    };
    let execs = run(false);
    let l2 = |node: u32| {
        root.path()
            .join(format!("run/Local/node{node}"))
            .join(&execs[0])
            .join("l2")
    };
    for rank in 0..4u32 {
        let left = (rank + 3) % 4;
        let file = std::fs::read(l2(left).join(format!("Ckpt2-Rank{left}.fti"))).unwrap();
        let copy = std::fs::read(l2(rank).join(format!("Ckpt2-Pcof{rank}.fti"))).unwrap();
        assert!(file.len() > 8 << 20, "rank {left}: {} bytes", file.len());
        assert!(
            file == copy,
            "rank {rank}: the copy of rank {left}'s file differs"
        );
        assert!(!l2(rank).join("Ckpt1-Rank0.fti").exists());
    }
    let lost = root.path().join("run/Local/node2");
    std::fs::remove_dir_all(&lost).unwrap();
    let notes = run(true);
    assert!(notes[0].contains("rank(s) [2] rebuilt"), "{}", notes[0]);
}
