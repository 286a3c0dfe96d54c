//! The topology against FTI 1.1's own L2 files: every `Pcof<r>` is the Rank file of r's left
//! partner.

use std::path::Path;

use fti::topology::Topology;

#[test]
fn partner_copies_of_the_real_l2_runs_follow_the_topology() {
    let l2 = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/fti/levels/L2/files");
    // The run: 4 ranks, node_size 1, group_size 4, local_test 1.
    let topology = Topology::new(&[0, 1, 2, 3], 1, 4).unwrap();
    for (step, id) in [("step1", 1), ("step2", 2)] {
        let file = |rank: u32, kind: &str| {
            let dir = l2
                .join(step)
                .join(format!("Local/node{rank}/2026-11-22_04-12-33/l2"));
            std::fs::read(dir.join(format!("Ckpt{id}-{kind}{rank}.fti"))).unwrap()
        };
        for rank in 0..4 {
            let left = topology.place(rank).unwrap().left();
            assert!(
                file(rank, "Pcof") == file(left, "Rank"),
                "{step}: Pcof{rank} is not Rank{left}"
            );
            // ptFs of a Rank file is the size of the partner copy it holds.
            let own = file(rank, "Rank");
            let own = ftiff::Checkpoint::parse(&own).unwrap();
            assert_eq!(own.fb.pt_fs, file(rank, "Pcof").len() as i64);
        }
    }
}
