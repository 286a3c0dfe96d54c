//! Single-variable recovery (`Fti::recover_var_from`, FTI's `FTI_RecoverVar` outside a
//! restart), which verifies the whole file before handing back any byte: one variable of a
//! checkpoint of four, then all four one by one (the verified file is kept, so the file is
//! read once), against one MD5 pass over the same bytes and a copy of the one variable
//! (memcpy), measured in the same run, warm page cache.
//!
//! `cargo bench -p fti --bench recover_var [-- SIZE_MIB [DIR [REPEATS]]]`

mod common;

use common::time;
use fti::{Config, Fti, Level, Var};

fn main() {
    let common::Args { mib, dir, repeats } = common::args();
    let quarter = (mib << 20) / 4;
    let mut bufs = common::buffers(quarter, 29);
    let root = dir.join("bench-recover-var");
    std::fs::remove_dir_all(&root).ok();
    let cfg = Config {
        ckpt_dir: root.join("L"),
        glbl_dir: root.join("G"),
        meta_dir: root.join("M"),
        failure: Some(0),
        keep_ckpts: 2,
        verbosity: 3,
        ..Config::default()
    };
    let mut fti = Fti::init(cfg).unwrap();
    let file = checkpoint(&mut fti, &mut bufs, 1);
    let bytes = std::fs::read(&file).unwrap();
    let md5 = time(repeats, || {
        std::hint::black_box(ftiff::hash::md5(&bytes));
    });
    drop(bytes);
    let mut out = vec![0u8; quarter];
    let memcpy = time(repeats, || {
        out.copy_from_slice(std::hint::black_box(&bufs[2]));
    });
    // Each round recovers from a checkpoint written just before (a new file: nothing verified
    // earlier is reused), in the page cache as after a checkpoint.
    let (mut one, mut all) = (Vec::new(), Vec::new());
    let mut back = vec![vec![0u8; quarter]; 4];
    for round in 0..repeats as i32 {
        let id = 2 + 2 * round;
        checkpoint(&mut fti, &mut bufs, id);
        let t = std::time::Instant::now();
        fti.recover_var_from(Some(id), &mut Var::slice(2, &mut out))
            .unwrap();
        one.push(t.elapsed().as_secs_f64());
        checkpoint(&mut fti, &mut bufs, id + 1);
        let t = std::time::Instant::now();
        for (i, b) in back.iter_mut().enumerate() {
            fti.recover_var_from(Some(id + 1), &mut Var::slice(i as i32, b))
                .unwrap();
        }
        all.push(t.elapsed().as_secs_f64());
    }
    assert!(out == bufs[2] && back == bufs);
    drop(fti);
    std::fs::remove_dir_all(&root).ok();
    let (one, all) = (common::median(one), common::median(all));
    let gb = (mib << 20) as f64 / 1e9;
    println!("{mib} MiB in 4 variables; medians of {repeats}");
    println!(
        "one MD5 pass over the file   {md5:.3} s  ({:.2} GB/s)",
        gb / md5
    );
    println!("memcpy of one variable       {memcpy:.3} s");
    println!(
        "recover_var_from, 1 variable {one:.3} s  = {:.2}x one MD5 pass",
        one / md5
    );
    println!(
        "recover_var_from, 4 variables {all:.3} s = {:.2}x one MD5 pass",
        all / md5
    );
}

/// Checkpoint `id` of the four variables at L1; its file.
fn checkpoint(fti: &mut Fti, bufs: &mut [Vec<u8>], id: i32) -> std::path::PathBuf {
    let vars: Vec<Var> = bufs
        .iter_mut()
        .enumerate()
        .map(|(i, b)| Var::slice(i as i32, b))
        .collect();
    fti.checkpoint(id, Level::L1, &vars).unwrap().path
}
