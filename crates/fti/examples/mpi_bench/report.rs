//! The bench's results: a table of every measure per rank and in total, then the goals.

use std::path::Path;

use super::{Args, Measure, FTI_L3, L3_GOAL, MEASURES, ROTATION};

/// The median (the mean of the two middle values for an even count).
fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    (v[(v.len() - 1) / 2] + v[v.len() / 2]) / 2.0
}

fn min(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::INFINITY, f64::min)
}

/// Processors of the machine (not only those this process may use).
fn machine_cpus() -> usize {
    std::fs::read_to_string("/proc/cpuinfo")
        .map(|s| s.lines().filter(|l| l.starts_with("processor")).count())
        .unwrap_or(0)
        .max(1)
}

/// Every rank's times and the slowest rank's of each rep.
struct Results<'a> {
    /// `all[rank][measure][rep]`.
    all: &'a [Vec<Vec<f64>>],
    /// `totals[measure][rep]`: the slowest rank's.
    totals: Vec<Vec<f64>>,
    n: u32,
    reps: usize,
    /// The file's size.
    size: usize,
    /// The group's size.
    k: usize,
}

impl Results<'_> {
    /// The median over the reps of the slowest rank.
    fn total(&self, m: Measure) -> f64 {
        median(&self.totals[m.index()])
    }

    /// The median over the reps of `rank`.
    fn per_rank(&self, rank: usize, m: Measure) -> f64 {
        median(&self.all[rank][m.index()])
    }
}

/// `all[rank][measure][rep]`; `cpus[rank]`: the processors the rank may run on; `k`: the
/// group's size; `background`: whether the second runtime's L2 post-processing ran in the
/// background.
pub fn report(
    args: &Args,
    (size, k, background, root): (usize, usize, bool, &Path),
    cpus: &[usize],
    all: &[Vec<Vec<f64>>],
) {
    let n = all.len() as u32;
    let cores = machine_cpus();
    let reps = args.reps;
    // The slowest rank of each rep.
    let totals: Vec<Vec<f64>> = (0..MEASURES.len())
        .map(|m| {
            (0..reps)
                .map(|r| all.iter().map(|t| t[m][r]).fold(0.0, f64::max))
                .collect()
        })
        .collect();
    let (lo, hi) = (
        cpus.iter().copied().min().unwrap_or(0),
        cpus.iter().copied().max().unwrap_or(0),
    );
    println!(
        "{n} ranks on {cores} cores{}, each may run on {}; {} MiB per rank in 4 i32 arrays (file {size} bytes), one group of k = {k}: L2 rank r sends to r+1",
        if n as usize > cores { " (the ranks share them)" } else { "" },
        if lo == hi { format!("{lo}") } else { format!("{lo} to {hi}") },
        args.mib,
    );
    println!(
        "{reps} reps after {} warm-up, measures in a different order every rep{}; {}; L2 post-processing in the background: {}; dir {}",
        args.warmup,
        if reps.is_multiple_of(ROTATION.len()) {
            ""
        } else {
            " (not a whole Williams square: the order is not balanced)"
        },
        if args.recycle > 0 {
            format!(
                "a file of {} MiB written and deleted before every measure",
                args.recycle
            )
        } else {
            "nothing recycled between measures".to_owned()
        },
        if background {
            "yes"
        } else {
            "NO (no MPI_THREAD_MULTIPLE: it ran inline)"
        },
        root.display()
    );
    let results = Results {
        all,
        totals,
        n,
        reps,
        size,
        k,
    };
    println!();
    table_of_measures(&results);
    println!();
    ratios(&results.totals, reps);
    l2_goal(&results);
    l3_goal(&results, cores);
    l2_in_the_background(&results);
}

/// Every measure: per rank, in total, fastest total, rate and against L1.
fn table_of_measures(results: &Results) {
    let (n, size) = (results.n, results.size);
    let mut head = String::from("| measure |");
    let mut rule = String::from("|---|");
    for r in 0..n {
        head.push_str(&format!(" rank {r} s |"));
        rule.push_str("---:|");
    }
    head.push_str(" total s (slowest rank) | fastest total s | GB/s in total | vs L1 |");
    rule.push_str("---:|---:|---:|---|");
    println!("{head}\n{rule}");
    let l1 = results.total(Measure::L1);
    for m in MEASURES {
        let mut line = format!("| {} |", m.label());
        for r in 0..n as usize {
            line.push_str(&format!(" {:.3} |", results.per_rank(r, m)));
        }
        let t = results.total(m);
        line.push_str(&format!(
            " {t:.3} | {:.3} | {:.2} | {:.2}x |",
            min(&results.totals[m.index()]),
            (size as f64 * f64::from(n)) / t / 1e9,
            t / l1
        ));
        println!("{line}");
    }
}

/// The goal L2 <= L1 + transfer + write+fsync, in total and per rank.
fn l2_goal(results: &Results) {
    let (n, reps) = (results.n, results.reps);
    let l1 = results.total(Measure::L1);
    let bound_parts = [Measure::L1, Measure::Transfer, Measure::WriteFsync];
    let l2 = results.total(Measure::L2);
    let bound: f64 = bound_parts.iter().map(|&m| results.total(m)).sum();
    println!(
        "goal: L2 <= L1 + transfer + write+fsync, in total: L2 {l2:.3} s vs {bound:.3} s (L1 {l1:.3} + transfer {:.3} + write+fsync {:.3}) = {:.2}x the bound: {}",
        results.total(Measure::Transfer),
        results.total(Measure::WriteFsync),
        l2 / bound,
        verdict(l2 <= bound)
    );
    for r in 0..n as usize {
        let l2 = results.per_rank(r, Measure::L2);
        let bound: f64 = bound_parts.iter().map(|&m| results.per_rank(r, m)).sum();
        println!(
            "  rank {r}: L2 {l2:.3} s vs {bound:.3} s = {:.2}x: {}",
            l2 / bound,
            verdict(l2 <= bound)
        );
    }
    let met = (0..reps)
        .filter(|&r| {
            results.totals[Measure::L2.index()][r]
                <= bound_parts
                    .iter()
                    .map(|m| results.totals[m.index()][r])
                    .sum::<f64>()
        })
        .count();
    println!("  reps whose own totals meet it: {met} of {reps}");
    println!(
        "L2 - L1 = {:.3} s in total; transfer into a file + fsync: {:.3} s",
        l2 - l1,
        results.total(Measure::TransferToFile),
    );
    println!();
}

/// L3: the group's k files encoded, on the cores the ranks share, against the goal in GB/s
/// per core and L3's parts measured apart.
fn l3_goal(results: &Results, cores: usize) {
    let (n, size, k) = (results.n, results.size, results.k);
    let (l1, l2) = (results.total(Measure::L1), results.total(Measure::L2));
    let l3 = results.total(Measure::L3);
    let used = (n as usize).min(cores) as f64;
    let group_bytes = (k * size) as f64;
    let rate = |t: f64| group_bytes / t / used / 1e9;
    let encode = results.total(Measure::Encode);
    let md5 = results.total(Measure::Md5);
    println!(
        "L3 {l3:.3} s in total = {:.2}x L1, {:.2}x L2; L3 - L1 = {:.3} s",
        l3 / l1,
        l3 / l2,
        l3 - l1
    );
    println!(
        "goal: L3 encoding >= {L3_GOAL} GB/s per core: k x file / (L3 - L1) / {used} cores = {:.3} GB/s per core: {} ({:.2}x FTI 1.1's ~{FTI_L3}); in this run the kernel alone: {:.2} GB/s per core ({encode:.3} s), the RSed file's MD5 alone: {:.2} GB/s per core ({md5:.3} s)",
        rate(l3 - l1),
        verdict(rate(l3 - l1) >= L3_GOAL),
        rate(l3 - l1) / FTI_L3,
        rate(encode),
        rate(md5),
    );
    let unsynced = l3 - l1 - results.total(Measure::WriteFsync);
    println!(
        "  without the RSed file's write + fsync (FTI 1.1 does not fsync; indicative): k x file / {unsynced:.3} s / {used} cores = {:.3} GB/s per core ({:.2}x FTI 1.1's)",
        rate(unsynced),
        rate(unsynced) / FTI_L3
    );
    for r in 0..n as usize {
        let t = results.per_rank(r, Measure::L3) - results.per_rank(r, Measure::L1);
        println!(
            "  rank {r}: L3 - L1 = {t:.3} s: {:.3} GB/s per core",
            rate(t)
        );
    }
    let parts = [
        ("L1", l1),
        (
            "transfer x (k-1)",
            results.total(Measure::Transfer) * (k - 1) as f64,
        ),
        ("RS kernel", encode),
        ("MD5", md5),
        ("write+fsync", results.total(Measure::WriteFsync)),
    ];
    println!(
        "L3's work from its parts (same run): {} = {:.3} s; L3 = {:.2}x that",
        parts
            .iter()
            .map(|(what, t)| format!("{what} {t:.3}"))
            .collect::<Vec<_>>()
            .join(" + "),
        parts.iter().map(|p| p.1).sum::<f64>(),
        l3 / parts.iter().map(|p| p.1).sum::<f64>(),
    );
    println!();
}

/// L2 with its post-processing in the background: what is left on the critical path.
fn l2_in_the_background(results: &Results) {
    let n = results.n;
    let (l1, l2) = (results.total(Measure::L1), results.total(Measure::L2));
    let (ret, done) = (
        results.total(Measure::L2BgReturn),
        results.total(Measure::L2BgDone),
    );
    println!(
        "L2 with background post-processing: checkpoint returns after {ret:.3} s ({:.2}x L1, {:.2}x inline L2), wait returns after {done:.3} s ({:.2}x inline L2)",
        ret / l1,
        ret / l2,
        done / l2
    );
    println!(
        "  off the critical path: {:.3} s of inline L2's {:.3} s beyond L1 ({:.0}%); left on it: returns - L1 = {:+.3} s",
        l2 - ret,
        l2 - l1,
        100.0 * (l2 - ret) / (l2 - l1),
        ret - l1
    );
    for r in 0..n as usize {
        let (ret, done, l2) = (
            results.per_rank(r, Measure::L2BgReturn),
            results.per_rank(r, Measure::L2BgDone),
            results.per_rank(r, Measure::L2),
        );
        println!("  rank {r}: returns {ret:.3} s, wait returns {done:.3} s, inline L2 {l2:.3} s");
    }
}

/// The ratios, of the medians of the totals and, in brackets, the median of the
/// reps' own ratios: L2/L1 (goal <= 1.2), L3/L1, and L1 against its floor, the larger of the
/// write + fsync of the same bytes and one MD5 pass over them on all ranks at once (goal <= 1.5).
fn ratios(totals: &[Vec<f64>], reps: usize) {
    let total = |m: Measure| median(&totals[m.index()]);
    let per_rep = |a: Measure, b: &dyn Fn(usize) -> f64| -> f64 {
        median(
            &(0..reps)
                .map(|r| totals[a.index()][r] / b(r))
                .collect::<Vec<_>>(),
        )
    };
    let rep_of = |m: Measure| move |r: usize| totals[m.index()][r];
    let floor_of =
        |r: usize| totals[Measure::WriteFsync.index()][r].max(totals[Measure::Md5.index()][r]);
    let l1 = total(Measure::L1);
    let floor = total(Measure::WriteFsync).max(total(Measure::Md5));
    let (l2, l3) = (total(Measure::L2) / l1, total(Measure::L3) / l1);
    println!(
        "ratios (medians of the totals; median of the reps' own ratios in brackets): L2/L1 = {l2:.2}x ({:.2}x): goal <= 1.2: {}; L3/L1 = {l3:.2}x ({:.2}x)",
        per_rep(Measure::L2, &rep_of(Measure::L1)),
        verdict(l2 <= 1.2),
        per_rep(Measure::L3, &rep_of(Measure::L1)),
    );
    println!(
        "L1 floor = max(write+fsync {:.3} s, MD5 of the same bytes on all ranks at once {:.3} s) = {floor:.3} s; L1/floor = {:.2}x ({:.2}x): goal <= 1.5: {}",
        total(Measure::WriteFsync),
        total(Measure::Md5),
        l1 / floor,
        per_rep(Measure::L1, &floor_of),
        verdict(l1 <= 1.5 * floor)
    );
    println!();
}

fn verdict(met: bool) -> &'static str {
    if met {
        "met"
    } else {
        "missed"
    }
}
