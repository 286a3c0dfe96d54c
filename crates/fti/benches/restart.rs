//! Restart of a 1 GiB checkpoint (4 variables, L1): `init` (find, open and verify: the file
//! checksum and every chunk hash) then `recover` (copy into the variables), against reading
//! the same file and one MD5 pass over it, in alternating rounds of the same run, with the
//! file in the page cache as a restart right after a crash finds it. Best and median.
//!
//!     cargo bench -p fti --bench restart -- [SIZE_MIB [DIR [ROUNDS]]]   # 1024, target tmp, 3

#[path = "common/mod.rs"]
mod common;

use std::io::Read;
use std::time::Instant;

use fti::{Fti, Level, Status, Var};

fn main() {
    let common::Args { mib, dir, repeats } = common::args();
    let rounds = repeats.max(7);
    let quarter = (mib << 20) / 4;
    let mut bufs = common::buffers(quarter, 29);
    let root = dir.join("bench-restart");
    std::fs::remove_dir_all(&root).ok();
    let cfg = common::config(&root);
    let path = {
        let mut fti = Fti::init(cfg.clone()).unwrap();
        let vars: Vec<Var> = bufs
            .iter_mut()
            .enumerate()
            .map(|(i, b)| Var::slice(i as i32, b))
            .collect();
        let info = fti.checkpoint(1, Level::L1, &vars).unwrap();
        info.path
    };
    let size = std::fs::metadata(&path).unwrap().len();
    let mut back = vec![vec![0u8; quarter]; 4];
    let mut file_bytes = vec![0u8; size as usize];
    let (mut baseline, mut init, mut recover, mut restart) = (vec![], vec![], vec![], vec![]);
    for round in 0..rounds {
        let mut base = || {
            let t = Instant::now();
            std::fs::File::open(&path)
                .unwrap()
                .read_exact(&mut file_bytes)
                .unwrap();
            std::hint::black_box(ftiff::hash::md5(&file_bytes));
            t.elapsed().as_secs_f64()
        };
        let mut ours = || {
            let t = Instant::now();
            let mut fti = Fti::init(cfg.clone()).unwrap();
            assert!(matches!(fti.status(), Status::Restart(_)));
            let t_init = t.elapsed().as_secs_f64();
            let mut vars: Vec<Var> = back
                .iter_mut()
                .enumerate()
                .map(|(i, b)| Var::slice(i as i32, b))
                .collect();
            fti.recover(&mut vars).unwrap();
            let t_all = t.elapsed().as_secs_f64();
            // Dropped without finalize: the files stay for the next round.
            drop(vars);
            drop(fti);
            (t_init, t_all - t_init, t_all)
        };
        // Alternating which goes first, so that neither always follows the other.
        let (b, (i, r, a)) = if round % 2 == 0 {
            let b = base();
            (b, ours())
        } else {
            let o = ours();
            (base(), o)
        };
        baseline.push(b);
        init.push(i);
        recover.push(r);
        restart.push(a);
    }
    assert!(back == bufs, "recovered data");
    std::fs::remove_dir_all(&root).ok();
    let best = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
    let spread = |v: &[f64]| {
        let max = v.iter().copied().fold(0.0, f64::max);
        format!("{:.3}-{max:.3}", best(v))
    };
    println!(
        "restart of {mib} MiB in 4 variables (file {size} bytes, page cache), {rounds} alternating rounds: best, median (range)"
    );
    let row = |name: &str, v: &[f64]| {
        println!(
            "{name:<34} {:.3} s  {:.3} s  ({} s)",
            best(v),
            common::median(v.to_vec()),
            spread(v)
        );
    };
    row("baseline: read + one MD5 pass", &baseline);
    row("init (find, open, verify)", &init);
    row("recover (copy)", &recover);
    row("restart: init + recover", &restart);
    println!(
        "restart / baseline: best {:.2}x, median {:.2}x (goal: median <= 1.1x)",
        best(&restart) / best(&baseline),
        common::median(restart.clone()) / common::median(baseline.clone())
    );
}
