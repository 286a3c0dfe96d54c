//! Differential and incremental checkpoints and single-variable recovery through the runtime.

use std::path::Path;

use fti::{Config, Fti, Level, Status, Var};
use ftiff::VarSize;

fn config(root: &Path, fast: bool) -> Config {
    Config {
        dcp: true,
        dcp_block_size: 4096,
        fast_integrity: fast,
        ..crate::util::config(root)
    }
}

fn recover_all(root: &Path, fast: bool, sizes: &[(i32, usize)]) -> Vec<Vec<u8>> {
    let mut fti = Fti::init(config(root, fast)).unwrap();
    assert!(
        matches!(fti.status(), Status::Restart(_)),
        "{:?}",
        fti.skipped()
    );
    let mut bufs: Vec<Vec<u8>> = sizes.iter().map(|&(_, n)| vec![0; n]).collect();
    let mut vars: Vec<Var> = sizes
        .iter()
        .zip(bufs.iter_mut())
        .map(|(&(id, _), b)| Var::slice(id, b))
        .collect();
    fti.recover(&mut vars).unwrap();
    drop(vars);
    bufs
}

#[test]
fn differential_checkpoints_write_little_and_recover_exactly() {
    for fast in [false, true] {
        let root = tempfile::tempdir().unwrap();
        let mut fti = Fti::init(config(root.path(), fast)).unwrap();
        let mut a = vec![1u8; 1 << 20];
        let mut b = vec![2u8; 1 << 20];
        let mut written = Vec::new();
        for id in 1..=6 {
            // ~1% of the blocks change each time; variable b grows at checkpoint 4.
            let n = a.len();
            for k in 0..5 {
                a[(id as usize * 7919 + k * 104_729) % n] ^= id as u8;
            }
            if id == 4 {
                b.resize(b.len() + 10_000, 3);
            }
            let info = fti
                .checkpoint(
                    id,
                    Level::L1,
                    &[Var::slice(1, &mut a), Var::slice(2, &mut b)],
                )
                .unwrap();
            written.push(info.bytes_written);
        }
        // The first two are full; later ones write the blocks changed since the file they
        // update (two checkpoints back).
        assert!(written[0] > 2 << 20 && written[1] > 2 << 20, "{written:?}");
        for w in &written[2..] {
            assert!(*w < 128 << 10, "fast={fast}: {written:?}");
        }
        // The newest file verifies with `fti verify`'s checks.
        let newest = fti.last_checkpoint().unwrap().path.clone();
        let bytes = std::fs::read(&newest).unwrap();
        let ckpt = ftiff::Checkpoint::parse(&bytes).unwrap();
        assert!(ckpt.verify(&|_| {}).is_empty());
        assert_eq!(ckpt.integrity == ftiff::Integrity::Md5, !fast);
        drop(fti);
        let back = recover_all(root.path(), fast, &[(1, a.len()), (2, b.len())]);
        assert_eq!(back, [a, b]);
    }
}

/// A compatible-mode file made by differential updates is what a full checkpoint of the same
/// state gives, except FB.myHash (33..48) and FB.timestamp (88..95).
#[test]
fn compatible_dcp_file_equals_a_full_checkpoint_but_for_myhash_and_timestamp() {
    let root = tempfile::tempdir().unwrap();
    let mut fti = Fti::init(config(root.path(), false)).unwrap();
    let mut x = vec![5u8; 300_000];
    for id in 1..=4 {
        x[id as usize * 1000] = id as u8;
        fti.checkpoint(id, Level::L1, &[Var::slice(9, &mut x)])
            .unwrap();
    }
    let dcp = std::fs::read(&fti.last_checkpoint().unwrap().path).unwrap();
    let other = tempfile::tempdir().unwrap();
    let mut cfg = config(other.path(), false);
    cfg.dcp = false;
    let mut full = Fti::init(cfg).unwrap();
    full.checkpoint(1, Level::L1, &[Var::slice(9, &mut x)])
        .unwrap();
    let reference = std::fs::read(&full.last_checkpoint().unwrap().path).unwrap();
    assert_eq!(dcp.len(), reference.len());
    let differing: Vec<usize> = (0..dcp.len()).filter(|&i| dcp[i] != reference[i]).collect();
    assert!(
        differing
            .iter()
            .all(|&i| (33..49).contains(&i) || (88..96).contains(&i)),
        "{differing:?}"
    );
}

#[test]
fn removed_variable_then_restart() {
    let root = tempfile::tempdir().unwrap();
    let mut fti = Fti::init(config(root.path(), false)).unwrap();
    let (mut a, mut b, mut c) = (vec![1u32; 5000], vec![2u32; 5000], vec![3u32; 5000]);
    fti.checkpoint(
        1,
        Level::L1,
        &[
            Var::slice(1, &mut a),
            Var::slice(2, &mut b),
            Var::slice(3, &mut c),
        ],
    )
    .unwrap();
    a[0] = 11;
    fti.checkpoint(
        2,
        Level::L1,
        &[Var::slice(1, &mut a), Var::slice(3, &mut c)],
    )
    .unwrap();
    c[1] = 33;
    fti.checkpoint(
        3,
        Level::L1,
        &[Var::slice(1, &mut a), Var::slice(3, &mut c)],
    )
    .unwrap();
    drop(fti);
    let mut fti = Fti::init(config(root.path(), false)).unwrap();
    let (mut a2, mut c2) = (vec![0u32; 5000], vec![0u32; 5000]);
    fti.recover(&mut [Var::slice(1, &mut a2), Var::slice(3, &mut c2)])
        .unwrap();
    assert_eq!((a2, c2), (a, c));
}

#[test]
fn incremental_checkpoint_writes_each_variable_when_added() {
    let root = tempfile::tempdir().unwrap();
    let mut cfg = config(root.path(), false);
    cfg.dcp = false;
    let mut fti = Fti::init(cfg.clone()).unwrap();
    let mut first = vec![0xabu8; 10_000];
    let mut second = vec![0xcdu8; 20_000];
    let sizes = [
        VarSize {
            id: 1,
            size: 10_000,
        },
        VarSize {
            id: 2,
            size: 20_000,
        },
    ];
    fti.init_icp(1, Level::L1, &sizes).unwrap();
    // Added in reverse order.
    fti.add_var_icp(&Var::slice(2, &mut second)).unwrap();
    // The second variable's bytes are already in the (not yet published) file.
    let tmp = fti.dirs().tmp_dir(Level::L1).join("Ckpt1-Rank0.fti");
    let on_disk = std::fs::read(&tmp).unwrap();
    let fptr = 96 + 12 + 2 * 64 + 10_000;
    assert!(on_disk[fptr..fptr + 20_000].iter().all(|&x| x == 0xcd));
    assert!(
        fti.add_var_icp(&Var::slice(2, &mut second)).is_err(),
        "added twice"
    );
    assert!(fti.finalize_icp().is_err(), "variable 1 missing");
    // A failed finalize closes the checkpoint; nothing was published.
    assert!(fti
        .dirs()
        .level_dir(Level::L1)
        .read_dir()
        .unwrap()
        .next()
        .is_none());

    fti.init_icp(2, Level::L1, &sizes).unwrap();
    fti.add_var_icp(&Var::slice(1, &mut first)).unwrap();
    first[0] = 0; // changes after add do not matter
    fti.add_var_icp(&Var::slice(2, &mut second)).unwrap();
    let info = fti.finalize_icp().unwrap();
    assert_eq!(info.id, 2);
    let bytes = std::fs::read(&info.path).unwrap();
    let ckpt = ftiff::Checkpoint::parse(&bytes).unwrap();
    assert!(ckpt.verify(&|_| {}).is_empty());
    assert_eq!(ckpt.read_var(1).unwrap(), vec![0xab; 10_000]);
    drop(fti);
    let mut fti = Fti::init(cfg).unwrap();
    let (mut a, mut b) = (vec![0u8; 10_000], vec![0u8; 20_000]);
    fti.recover(&mut [Var::slice(1, &mut a), Var::slice(2, &mut b)])
        .unwrap();
    assert!(a.iter().all(|&x| x == 0xab) && b.iter().all(|&x| x == 0xcd));
}

#[test]
fn single_variable_recovery_from_newest_or_chosen_checkpoint() {
    let root = tempfile::tempdir().unwrap();
    let mut cfg = config(root.path(), true);
    cfg.keep_ckpts = 3;
    let mut fti = Fti::init(cfg.clone()).unwrap();
    let mut big = vec![7u8; 1 << 20];
    for id in 1..=3 {
        big_and_small(&mut fti, id, &mut big, id as u64 * 100);
    }
    let mut got = 0u64;
    let info = fti
        .recover_var_from(None, &mut Var::new(2, &mut got))
        .unwrap();
    assert_eq!((info.id, got), (3, 300));
    let info = fti
        .recover_var_from(Some(1), &mut Var::new(2, &mut got))
        .unwrap();
    assert_eq!((info.id, got), (1, 100));
    // A corrupt chunk of the newest file: its hash catches it, the next older one is used.
    let newest = fti.last_checkpoint().unwrap().path.clone();
    let mut bytes = std::fs::read(&newest).unwrap();
    let ckpt = ftiff::Checkpoint::parse(&bytes).unwrap();
    let fptr = ckpt
        .records()
        .find(|r| r.chunk.id == 2)
        .unwrap()
        .chunk
        .fptr
        .0 as usize;
    bytes[fptr] ^= 1;
    std::fs::write(&newest, &bytes).unwrap();
    let info = fti
        .recover_var_from(None, &mut Var::new(2, &mut got))
        .unwrap();
    assert_eq!((info.id, got), (2, 200));
    // Wrong size or unknown id: a clear error listing what was tried.
    let mut wrong = 0u8;
    let err = fti
        .recover_var_from(None, &mut Var::new(2, &mut wrong))
        .unwrap_err();
    assert!(err.to_string().contains("bytes"), "{err}");
    // Every candidate is there, newest first, with its id, level and file.
    let fti::Error::NothingToRecover { tried, .. } = &err else {
        panic!("{err:?}")
    };
    let ids: Vec<i32> = tried.iter().map(|c| c.id).collect();
    assert_eq!(ids, [3, 2, 1], "{err}");
    assert!(tried.iter().all(|c| c.path.exists()), "{err}");
    assert!(fti
        .recover_var_from(None, &mut Var::new(77, &mut got))
        .is_err());
}

/// Checkpoint `id` at L1 of a 1 MiB variable (id 1) and an 8-byte one (id 2) holding `small`.
fn big_and_small(fti: &mut Fti, id: i32, big: &mut [u8], mut small: u64) {
    fti.checkpoint(
        id,
        Level::L1,
        &[Var::slice(1, big), Var::new(2, &mut small)],
    )
    .unwrap();
}

/// The checkpoint files of `root` this process has mapped (`/proc/self/maps`).
fn mapped_files(root: &Path) -> Vec<String> {
    let root = root.canonicalize().unwrap();
    std::fs::read_to_string("/proc/self/maps")
        .unwrap()
        .lines()
        .filter(|l| l.contains(&*root.to_string_lossy()) && l.contains(".fti"))
        .map(str::to_owned)
        .collect()
}

/// No map of a checkpoint file outlives a call that may start a checkpoint: a differential
/// checkpoint may take an archived file and rewrite it in place (`docs/crash-safety.md`,
/// *Memory maps*), which would change the bytes under the map.
#[test]
fn no_checkpoint_file_stays_mapped_across_a_checkpoint() {
    let root = tempfile::tempdir().unwrap();
    let cfg = Config {
        keep_ckpts: 3,
        ..config(root.path(), false)
    };
    let mut fti = Fti::init(cfg).unwrap();
    let mut big = vec![7u8; 1 << 20];
    for id in 1..=3 {
        big_and_small(&mut fti, id, &mut big, id as u64);
    }
    // Recovering from an archived checkpoint maps it (and keeps it for the next variable)...
    let mut got = 0u64;
    let info = fti
        .recover_var_from(Some(1), &mut Var::new(2, &mut got))
        .unwrap();
    assert!(info.path.to_string_lossy().contains("l1_archive"));
    assert_eq!(
        mapped_files(root.path()).len(),
        1,
        "{:?}",
        mapped_files(root.path())
    );
    // ...until a checkpoint starts, which may rewrite it.
    big_and_small(&mut fti, 4, &mut big, 4);
    assert_eq!(mapped_files(root.path()), Vec::<String>::new());
}
