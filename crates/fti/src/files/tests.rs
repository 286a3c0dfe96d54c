use super::*;

#[test]
fn fti_directory_layout() {
    let cfg = Config {
        ckpt_dir: "L".into(),
        glbl_dir: "G".into(),
        meta_dir: "M".into(),
        rank: 5,
        node_size: 2,
        ..Config::default()
    };
    let d = Dirs::new(&cfg, "E");
    assert_eq!(d.level_dir(Level::L1), PathBuf::from("L/node2/E/l1"));
    assert_eq!(d.level_dir(Level::L4), PathBuf::from("G/E/l4"));
    assert_eq!(d.archive_dir(Level::L4), PathBuf::from("G/E/l4_archive"));
    assert_eq!(d.file_name(7), "Ckpt7-Rank5.fti");
    let d = Dirs::new(
        &Config {
            local_test: false,
            ..cfg
        },
        "E",
    );
    assert_eq!(d.level_dir(Level::L1), PathBuf::from("L/E/l1"));
}

#[test]
fn publish_keeps_one_in_level_dir_and_archives_the_rest() {
    let root = tempfile::tempdir().unwrap();
    let cfg = Config {
        ckpt_dir: root.path().join("L"),
        glbl_dir: root.path().join("G"),
        ..Config::default()
    };
    let dirs = Dirs::new(&cfg, "E");
    let put = |id: i32, level, keep| {
        let pending = begin(&dirs, level, id, None).unwrap();
        pending
            .file
            .write_all_at(format!("ckpt {id}").as_bytes(), 0)
            .unwrap();
        let path = publish_pending(&dirs, pending).unwrap();
        retire(&dirs, level, id, keep, true).unwrap();
        path
    };
    for id in 1..=5 {
        put(id, Level::L1, 3);
    }
    let ids = |archived| -> Vec<i32> {
        find_checkpoints(&dirs)
            .iter()
            .filter(|f| f.archived == archived)
            .map(|f| f.id)
            .collect()
    };
    assert_eq!(ids(false), [5]);
    assert_eq!(ids(true), [4, 3]);
    put(6, Level::L4, 3);
    let all: Vec<(i32, Level, bool)> = find_checkpoints(&dirs)
        .iter()
        .map(|f| (f.id, f.level, f.archived))
        .collect();
    assert_eq!(
        all,
        [
            (6, Level::L4, false),
            (5, Level::L1, true),
            (4, Level::L1, true)
        ]
    );
    put(7, Level::L1, 1);
    assert_eq!(
        std::fs::read_dir(dirs.tmp_dir(Level::L1)).unwrap().count(),
        0
    );
    assert_eq!(
        std::fs::read_to_string(dirs.level_dir(Level::L1).join("Ckpt7-Rank0.fti")).unwrap(),
        "ckpt 7"
    );
}

/// Once the global directory is known, this rank's L4 files are looked up by name: the
/// same files as a listing finds (published, archived, removed), and `l4/` never listed.
#[test]
fn known_global_directory_is_never_listed() {
    use crate::storage::{Counting, Op};
    let root = tempfile::tempdir().unwrap();
    let cfg = Config {
        ckpt_dir: root.path().join("L"),
        glbl_dir: root.path().join("G"),
        rank: 1,
        ..Config::default()
    };
    let counting = Counting::new(Arc::new(Disk), 1, vec![1]);
    let known = Dirs::on(Arc::new(counting.clone()), &cfg, "E");
    known.know_global([]);
    let listed = Dirs::new(&cfg, "E");
    // Another rank's file beside this rank's.
    let other = Dirs::new(
        &Config {
            rank: 2,
            ..cfg.clone()
        },
        "E",
    );
    for id in 1..=4 {
        for dirs in [&known, &other] {
            let pending = begin(dirs, Level::L4, id, None).unwrap();
            publish_pending(dirs, pending).unwrap();
            retire(dirs, Level::L4, id, 3, false).unwrap();
        }
        assert_eq!(
            find_checkpoints(&known),
            find_checkpoints(&listed),
            "after {id}"
        );
        assert_eq!(find_checkpoints(&known).len(), 3.min(id as usize));
    }
    remove_rank_files(&known, false).unwrap();
    assert_eq!(find_checkpoints(&listed), []);
    assert_eq!(find_checkpoints(&other).len(), 3);
    // The directories listed (the local ones, tmp/) were empty or missing: not one entry
    // of l4/, where the other rank's files are, was read.
    let counted = counting.counts();
    assert!(counted.of_op(Op::List) > 0);
    assert_eq!(counted.dir_entries, 0, "{counted:?}");
}
