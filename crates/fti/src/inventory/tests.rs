//! The inventory's rules without files: node sizes, rank counts, verdicts, prune plans.

use std::path::PathBuf;

use super::*;

#[test]
fn node_size_from_node_directories() {
    assert_eq!(infer_node_size([]), 1);
    assert_eq!(infer_node_size([(0, 0), (1, 1), (3, 3)]), 1);
    // Ranks 0..3 on node0, 4..7 on node1.
    assert_eq!(infer_node_size([(0, 0), (3, 0), (4, 1), (7, 1)]), 4);
    // Only node1's ranks 2, 3 seen: 2 per node.
    assert_eq!(infer_node_size([(2, 1), (3, 1)]), 2);
    // No node size puts rank 1 on node0 and rank 2 on node3.
    assert_eq!(infer_node_size([(1, 0), (2, 3)]), 1);
}

#[test]
fn rank_count_completes_lost_nodes() {
    // `seen` is one more than the highest rank named; 0 nodes: no Topology.fti.
    assert_eq!(rank_count(4, 0, 1), 4);
    assert_eq!(rank_count(0, 0, 1), 0);
    // Node 3's files (rank 3) are not visible: 4 nodes of 1 rank.
    assert_eq!(rank_count(3, 4, 1), 4);
    assert_eq!(rank_count(4, 4, 1), 4);
    // Rank 6 is on the last of 4 nodes of 2: 7 ranks.
    assert_eq!(rank_count(7, 4, 2), 7);
    assert_eq!(rank_count(5, 4, 2), 8);
}

fn slot(node: u32, status: Status) -> Slot {
    Slot {
        file: (status != Status::Missing).then(|| File {
            path: PathBuf::from(format!("node{node}/f")),
            node: Node::Numbered(node),
            size: 1,
            head: None,
            ids: Default::default(),
        }),
        status,
        problem: None,
    }
}

/// A checkpoint of `n` ranks, one per node, one group; `status(kind, rank)`.
fn ckpt(level: Level, n: u32, status: impl Fn(Kind, u32) -> Status) -> Ckpt {
    let topology = Topology::new(&(0..n).collect::<Vec<_>>(), 1, n).unwrap();
    let ranks: Vec<RankFiles> = (0..n)
        .map(|r| {
            let place = topology.place(r).unwrap();
            RankFiles {
                rank: r,
                rank_file: slot(r, status(Kind::Rank, r)),
                pcof: (level == Level::L2).then(|| slot(r, status(Kind::Pcof, r))),
                copy_of: (level == Level::L2).then(|| place.left()),
                copied_by: (level == Level::L2).then(|| place.right()),
                rsed: (level == Level::L3).then(|| slot(r, status(Kind::Rsed, r))),
                is_head: false,
            }
        })
        .collect();
    Ckpt {
        exec_id: "E".into(),
        id: 1,
        level,
        archived: false,
        root: PathBuf::from("L"),
        ranks,
        groups: vec![(0..n).collect()],
        node_size: 1,
        group_size: n,
        topology,
    }
}

#[test]
fn l2_survives_while_every_file_or_its_copy_is_on_another_node() {
    let all = ckpt(Level::L2, 4, |_, _| Status::Ok);
    assert!(all.verdict().survives, "{:?}", all.verdict());
    // Node 1 gone: rank 1's file survives only as Pcof2 on node2.
    let c = ckpt(Level::L2, 4, |_, r| {
        if r == 1 {
            Status::Missing
        } else {
            Status::Ok
        }
    });
    let v = c.verdict();
    assert!(v.restorable && !v.survives, "{v:?}");
    assert!(v.why.contains("losing node0"), "{}", v.why);
    // Rank 1's file and its copy both gone: not restorable.
    let c = ckpt(Level::L2, 4, |k, r| match (k, r) {
        (Kind::Rank, 1) | (Kind::Pcof, 2) => Status::Corrupt,
        _ => Status::Ok,
    });
    assert!(!c.verdict().restorable);
    // Only copies left of one file is fine as long as no node is lost.
    let c = ckpt(Level::L2, 4, |k, r| {
        if (k, r) == (Kind::Rank, 1) {
            Status::Missing
        } else {
            Status::Ok
        }
    });
    assert!(c.verdict().restorable && !c.verdict().survives);
}

#[test]
fn l3_counts_lost_files_per_group() {
    let all = ckpt(Level::L3, 4, |_, _| Status::Ok);
    assert!(all.verdict().survives);
    // Node 1 gone (2 files): losing another node loses 4 of 8, still rebuildable.
    let c = ckpt(Level::L3, 4, |_, r| {
        if r == 1 {
            Status::Missing
        } else {
            Status::Ok
        }
    });
    assert!(c.verdict().survives, "{:?}", c.verdict());
    // One more file lost: another node's loss makes 5 of 8.
    let c = ckpt(Level::L3, 4, |k, r| {
        if r == 1 || (k, r) == (Kind::Rank, 2) {
            Status::Missing
        } else {
            Status::Ok
        }
    });
    let v = c.verdict();
    assert!(v.restorable && !v.survives, "{v:?}");
    assert!(v.why.contains("5 of its 8"), "{}", v.why);
}

#[test]
fn l1_never_survives_and_l4_does_when_intact() {
    assert!(!ckpt(Level::L1, 4, |_, _| Status::Ok).verdict().survives);
    let mut l4 = ckpt(Level::L4, 4, |_, _| Status::Ok);
    for (_, s) in l4.slots_mut() {
        if let Some(f) = s.file.as_mut() {
            f.node = Node::Global;
        }
    }
    assert!(l4.verdict().survives);
    l4.ranks[3].rank_file.status = Status::Corrupt;
    assert!(!l4.verdict().restorable);
}

#[test]
fn prune_keeps_the_newest_restorable() {
    let mut ckpts: Vec<Ckpt> = [(9, false), (7, true), (6, true), (5, true)]
        .into_iter()
        .map(|(id, archived)| Ckpt {
            id,
            archived,
            ..ckpt(Level::L1, 1, |_, _| Status::Ok)
        })
        .collect();
    let ids = |ckpts: &[Ckpt], plan: &PrunePlan| -> Vec<i32> {
        plan.delete.iter().map(|&i| ckpts[i].id).collect()
    };
    let plan = prune_plan(&mut ckpts, 2, &mut |c| c.verdict().restorable);
    assert_eq!(ids(&ckpts, &plan), [6, 5]);
    // Checkpoint 7 is corrupt: kept, not counted, 6 kept instead.
    ckpts[1].ranks[0].rank_file.status = Status::Corrupt;
    let plan = prune_plan(&mut ckpts, 2, &mut |c| c.verdict().restorable);
    assert_eq!(ids(&ckpts, &plan), [5]);
    assert_eq!(plan.kept_unrestorable, [1]);
    // Checkpoints in lK/ are never deleted, even two of them (a retire interrupted by a
    // crash) with room for one.
    ckpts[1].archived = false;
    let plan = prune_plan(&mut ckpts, 1, &mut |_| true);
    assert_eq!(ids(&ckpts, &plan), [6, 5]);
    assert!(prunable_files(&ckpts[0]).is_empty());
}
