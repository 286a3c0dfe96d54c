//! Writes and verifies a 1 GiB checkpoint (4 variables) and, in the same run, measures the
//! baselines it is judged against: a plain write + fsync of the same bytes, one serial MD5
//! pass, a 2-thread MD5 pass and the variables' MD5s in the lanes of one SIMD register (as the
//! writer computes its chunk hashes). The floor is what the format's two MD5 streams cost at
//! best: the faster of the two ways to the chunk hashes, then the serial checksum. Prints a
//! Markdown table of medians and ratios.
//!
//! `cargo bench -p ftiff --bench write_verify [-- SIZE_MIB [DIR [REPEATS]]]`

use std::fs::File;
use std::io::Write as _;
use std::time::Instant;

use ftiff::{Checkpoint, Layout, MappedFile, VarSize, WriteOptions};

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn time(repeats: usize, mut f: impl FnMut()) -> f64 {
    median(
        (0..repeats)
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed().as_secs_f64()
            })
            .collect(),
    )
}

fn status_kib(key: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse().ok())
        .unwrap_or(0)
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let mib: usize = args.first().and_then(|s| s.parse().ok()).unwrap_or(1024);
    let dir: std::path::PathBuf = args.get(1).map_or_else(
        || env!("CARGO_TARGET_TMPDIR").into(),
        std::path::PathBuf::from,
    );
    let repeats: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(3);
    let total = mib << 20;
    let quarter = total / 4;

    // Four variables, pre-faulted, with non-trivial content.
    let buffers: Vec<Vec<u8>> = (0..4u64)
        .map(|v| {
            let mut x = 0x9e37_79b9_7f4a_7c15u64 ^ v;
            (0..quarter / 8)
                .flat_map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x.to_le_bytes()
                })
                .collect()
        })
        .collect();
    let data: Vec<&[u8]> = buffers.iter().map(Vec::as_slice).collect();
    let sizes: Vec<VarSize> = (0..4)
        .map(|i| VarSize {
            id: i + 1,
            size: quarter as u64,
        })
        .collect();
    let layout = Layout::plan(None, &sizes).unwrap();
    let gb = layout.file_size() as f64 / 1e9;

    // Baselines.
    let plain = dir.join("bench-plain.bin");
    let write_fsync = time(repeats, || {
        let mut f = File::create(&plain).unwrap();
        for d in &data {
            f.write_all(d).unwrap();
        }
        f.sync_all().unwrap();
    });
    std::fs::remove_file(&plain).ok();
    let md5_serial = time(repeats, || {
        let mut h = ftiff::hash::Md5Stream::default();
        for d in &data {
            h.update(d);
        }
        std::hint::black_box(h.finish());
    });
    let md5_two = time(repeats, || {
        let (a, b) = data.split_at(2);
        let (x, y) = rayon::join(
            || a.iter().map(|d| ftiff::hash::md5(d)).collect::<Vec<_>>(),
            || b.iter().map(|d| ftiff::hash::md5(d)).collect::<Vec<_>>(),
        );
        std::hint::black_box((x, y));
    });
    let md5_lanes = time(repeats, || {
        std::hint::black_box(ftiff::hash::md5_each(&data));
    });
    let floor = md5_two.min(md5_lanes) + md5_serial;

    // The writer, with fsync; its own memory is the peak RSS above what the data holds.
    let path = dir.join("bench-ckpt.fti");
    let rss_before = status_kib("VmRSS:");
    std::fs::write("/proc/self/clear_refs", "5").ok();
    let write = time(repeats, || {
        std::fs::remove_file(&path).ok();
        ftiff::write_path(&path, &layout, &data, &WriteOptions::default()).unwrap();
    });
    let writer_peak_kib = status_kib("VmHWM:").saturating_sub(rss_before);

    // Verify, page cache warm.
    let verify = time(repeats, || {
        let map = MappedFile::open(&path).unwrap();
        let ckpt = Checkpoint::parse(map.bytes()).unwrap();
        assert!(ckpt.verify(&|_| {}).is_empty());
    });
    std::fs::remove_file(&path).ok();

    println!(
        "checkpoint: {mib} MiB in 4 variables, file {:.3} GB, dir {}, median of {repeats}",
        gb,
        dir.display()
    );
    println!();
    println!("| measure | seconds | GB/s | ratio |");
    println!("|---|---:|---:|---|");
    let row =
        |name: &str, s: f64, ratio: &str| println!("| {name} | {s:.3} | {:.2} | {ratio} |", gb / s);
    row("baseline: plain write + fsync", write_fsync, "");
    row("baseline: MD5, 1 thread", md5_serial, "");
    row("baseline: MD5, 2 threads", md5_two, "");
    row(
        &format!(
            "baseline: MD5 of the 4 variables in {} SIMD lanes, 1 thread",
            ftiff::hash::lanes()
        ),
        md5_lanes,
        "",
    );
    row(
        "floor: the faster chunk MD5 (2 threads or lanes) + 1-thread MD5",
        floor,
        "",
    );
    row(
        "**ftiff write (fsync)**",
        write,
        &format!("{:.2}x floor (goal <= 1.1x)", write / floor),
    );
    row(
        "**ftiff verify (warm)**",
        verify,
        &format!("{:.2}x one MD5 pass (goal <= 1.1x)", verify / md5_serial),
    );
    println!();
    println!("writer peak RSS above the data: {writer_peak_kib} KiB (data: {mib} MiB)");
}
