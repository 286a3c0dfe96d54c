//! The offline L3 tool's `encode_group` (what `fti l3-encode` runs) on k = 4 Rank files in a
//! temporary directory (page cache, no fsync): it verifies every Rank file (MD5), encodes, and
//! hashes every code file (MD5). The baseline, measured in the same run, is one MD5 pass over
//! the same bytes. Rounds alternate between the two; medians of wall time are reported.
//!
//! `cargo bench -p fti --bench l3_group [-- FILE_MIB [REPEATS]]` (defaults 64, 3)

use std::time::Instant;

use fti::l3::group::{encode_group, Group, Options};
use fti::storage::Disk;
use ftiff::{FileKind, FileName, Layout, VarSize, WriteOptions};

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Deterministic incompressible bytes.
fn random(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let mib: usize = args.first().and_then(|s| s.parse().ok()).unwrap_or(64);
    let repeats: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(3);
    let k = 4;
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let mut total = 0u64;
    for r in 0..k {
        let data = random((mib << 20) - 1000 * r, 100 + r as u64);
        let vars = [VarSize {
            id: 1,
            size: data.len() as u64,
        }];
        let layout = Layout::plan(None, &vars).unwrap();
        let path = dir
            .path()
            .join(FileName::new(1, FileKind::Rank, r as u32).to_string());
        ftiff::write_path(&path, &layout, &[&data], &WriteOptions::default()).unwrap();
        total += layout.file_size();
    }
    let group = Group::find(&Disk, dir.path(), None, None).unwrap();
    let opts = Options {
        timestamp: None,
        sync: false,
    };
    let baseline = random(total as usize, 7);
    let (mut tool, mut md5) = (Vec::new(), Vec::new());
    for _ in 0..repeats {
        let t = Instant::now();
        encode_group(&Disk, &group, &opts).unwrap();
        tool.push(total as f64 / t.elapsed().as_secs_f64() / 1e9);
        let t = Instant::now();
        std::hint::black_box(ftiff::hash::md5(std::hint::black_box(&baseline)));
        md5.push(total as f64 / t.elapsed().as_secs_f64() / 1e9);
    }
    let (tool, md5) = (median(tool), median(md5));
    println!(
        "`encode_group`, k={k}, {mib} MiB per Rank file (verify the Rank files, encode, MD5 of \
         the code files, write; no fsync), wall time: {tool:.2} GB/s of Rank files; one MD5 pass \
         over the same bytes on one core: {md5:.2} GB/s; ratio {:.2}",
        tool / md5
    );
}
