//! L3 Reed-Solomon throughput on one core, against `reed-solomon-simd` (GF(2^16), a different
//! code: FFT-based, O(n log n)) and memcpy, measured in the same run. Throughput counts the
//! bytes of the k input shards per second, with all k parity rows produced (encode) or the
//! lost rows rebuilt from k surviving shards (decode).
//!
//! The machines are shared: every case is timed by the CPU time of its thread (time spent
//! descheduled does not count), and the cases take turns within each repeat, so a busy
//! moment hits all of them alike. Medians are reported.
//!
//! The offline tool's `encode_group` on files is `cargo bench -p fti --bench l3_group`.
//!
//! `cargo bench -p ftiff --bench l3 [-- SHARD_MIB [REPEATS]]` (defaults 16, 7)

use std::time::{Duration, Instant};

use ftiff::l3::{self, Code, Matrix};
use reed_solomon_simd::{ReedSolomonDecoder, ReedSolomonEncoder};

fn thread_cpu() -> Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn random(n: usize, seed: u64) -> Vec<u8> {
    let mut x = 0x9e37_79b9_7f4a_7c15u64 ^ seed;
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out.extend_from_slice(&x.to_le_bytes());
    }
    out.truncate(n);
    out
}

fn mul(m: &Matrix, inputs: &[&[u8]], outputs: &mut [Vec<u8>]) {
    let ins: Vec<Option<&[u8]>> = inputs.iter().map(|i| Some(*i)).collect();
    let mut outs: Vec<&mut [u8]> = outputs.iter_mut().map(Vec::as_mut_slice).collect();
    m.mul_into(&ins, &mut outs);
}

/// One contender: a name, the input bytes it processes per call, and the call.
struct Case<'a> {
    name: String,
    bytes: usize,
    run: Box<dyn FnMut() + 'a>,
    cpu: Vec<f64>,
    wall: Vec<f64>,
}

impl<'a> Case<'a> {
    fn new(name: impl Into<String>, bytes: usize, run: impl FnMut() + 'a) -> Self {
        Case {
            name: name.into(),
            bytes,
            run: Box::new(run),
            cpu: Vec::new(),
            wall: Vec::new(),
        }
    }

    fn gbps(&self) -> f64 {
        self.bytes as f64 / 1e9 / median(self.cpu.clone())
    }

    fn gbps_wall(&self) -> f64 {
        self.bytes as f64 / 1e9 / median(self.wall.clone())
    }
}

/// Warm-up call for each case, then `repeats` rounds in which every case runs once.
fn measure(cases: &mut [Case<'_>], repeats: usize) {
    for c in cases.iter_mut() {
        (c.run)();
    }
    for _ in 0..repeats {
        for c in cases.iter_mut() {
            let (cpu, wall) = (thread_cpu(), Instant::now());
            (c.run)();
            c.cpu.push((thread_cpu() - cpu).as_secs_f64());
            c.wall.push(wall.elapsed().as_secs_f64());
        }
    }
}

/// (name, GB/s by thread CPU time, GB/s by wall time) of each case.
type Results = Vec<(String, f64, f64)>;

fn run_k(k: usize, shard: usize, repeats: usize) -> Results {
    let data: Vec<Vec<u8>> = (0..k).map(|i| random(shard, i as u64)).collect();
    let refs: Vec<&[u8]> = data.iter().map(Vec::as_slice).collect();
    let bytes = k * shard;
    let code = Code::new(k).unwrap();
    let all: Vec<usize> = (0..k).collect();
    let enc = code.encoder(&all);
    let parity = code.encode(&refs, &all);
    let mut rs = ReedSolomonEncoder::new(k, k, shard).unwrap();
    let their_recovery: Vec<Vec<u8>> = {
        for d in &refs {
            rs.add_original_shard(d).unwrap();
        }
        let r = rs.encode().unwrap();
        r.recovery_iter().map(<[u8]>::to_vec).collect()
    };
    let decoders: Vec<(usize, l3::Decoder)> = [k, 1]
        .into_iter()
        .map(|lost| {
            let rows: Vec<usize> = (0..lost).collect();
            (lost, code.decoder(&rows, &all).unwrap())
        })
        .collect();
    let dec_inputs: Vec<Vec<&[u8]>> = decoders
        .iter()
        .map(|(_, d)| {
            d.inputs
                .iter()
                .map(|s| match *s {
                    l3::Shard::Data(j) => refs[j],
                    l3::Shard::Parity(i) => parity[i].as_slice(),
                })
                .collect()
        })
        .collect();
    let small = (shard / 8) & !1;

    let mut out = vec![vec![0u8; shard]; k];
    let mut rebuilt: Vec<Vec<Vec<u8>>> = decoders
        .iter()
        .map(|(lost, _)| vec![vec![0u8; shard]; *lost])
        .collect();
    let mut small_out: Vec<Vec<u8>> = vec![vec![0u8; small]; k];
    let mut memcpy_out = vec![vec![0u8; shard]; k];
    let mut rsd = ReedSolomonDecoder::new(k, k, shard).unwrap();
    let mut rsd1 = ReedSolomonDecoder::new(k, k, shard).unwrap();

    let (r0, r1) = rebuilt.split_at_mut(1);
    let mut cases = vec![
        Case::new("memcpy", bytes, || {
            for (o, i) in memcpy_out.iter_mut().zip(&refs) {
                o.copy_from_slice(i);
            }
        }),
        Case::new("ours encode", bytes, || mul(&enc, &refs, &mut out)),
        Case::new("ours encode, 1 MiB pieces", bytes, || {
            l3::apply(&enc, &refs, shard, |_, _| Ok::<(), ()>(())).unwrap();
        }),
        Case::new("rs-simd encode", bytes, || {
            for d in &refs {
                rs.add_original_shard(d).unwrap();
            }
            let result = rs.encode().unwrap();
            assert_eq!(result.recovery_iter().count(), k);
        }),
        Case::new("ours decode all", bytes, || {
            mul(&decoders[0].1.matrix, &dec_inputs[0], &mut r0[0])
        }),
        Case::new("rs-simd decode all", bytes, || {
            for (i, r) in their_recovery.iter().enumerate() {
                rsd.add_recovery_shard(i, r).unwrap();
            }
            let result = rsd.decode().unwrap();
            assert_eq!(result.restored_original_iter().count(), k);
        }),
        Case::new("ours decode 1", bytes, || {
            mul(&decoders[1].1.matrix, &dec_inputs[1], &mut r1[0])
        }),
        Case::new("rs-simd decode 1", bytes, || {
            for (j, d) in refs.iter().enumerate().skip(1) {
                rsd1.add_original_shard(j, d).unwrap();
            }
            rsd1.add_recovery_shard(0, &their_recovery[0]).unwrap();
            let result = rsd1.decode().unwrap();
            assert_eq!(result.restored_original_iter().count(), 1);
        }),
        Case::new("ours portable", k * small, || {
            let ins: Vec<Option<&[u8]>> = refs.iter().map(|r| Some(&r[..small])).collect();
            let mut outs: Vec<&mut [u8]> = small_out.iter_mut().map(Vec::as_mut_slice).collect();
            enc.mul_into_scalar(&ins, &mut outs);
        }),
    ];
    measure(&mut cases, repeats);
    let results = cases
        .iter()
        .map(|c| (c.name.clone(), c.gbps(), c.gbps_wall()))
        .collect();
    drop(cases);
    assert!(out == parity, "encode k={k}");
    for ((lost, _), r) in decoders.iter().zip(&rebuilt) {
        for (j, shard) in r.iter().enumerate() {
            assert!(shard == &data[j], "decode k={k} lost={lost}");
        }
    }
    results
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let mib: usize = args.first().and_then(|s| s.parse().ok()).unwrap_or(16);
    let repeats: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(7);
    println!(
        "shards of {mib} MiB, median of {repeats} rounds, one thread, GB/s of input by thread CPU \
         time (by wall time in brackets); avx2: {}",
        std::arch::is_x86_feature_detected!("avx2")
    );
    println!("\n| k | case | ours | reed-solomon-simd | ours / rs-simd | memcpy | ours / memcpy |");
    println!("|---|---|---|---|---|---|---|");
    for k in [4, 8] {
        let r = run_k(k, mib << 20, repeats);
        let get = |name: &str| r.iter().find(|c| c.0 == name).map(|c| (c.1, c.2));
        let memcpy = get("memcpy").unwrap_or_default();
        let pairs = [
            ("encode (all k rows)", "ours encode", Some("rs-simd encode")),
            (
                "encode in 1 MiB pieces (as the tools)",
                "ours encode, 1 MiB pieces",
                None,
            ),
            (
                "decode, all k Rank files lost",
                "ours decode all",
                Some("rs-simd decode all"),
            ),
            (
                "decode, 1 Rank file lost",
                "ours decode 1",
                Some("rs-simd decode 1"),
            ),
            ("encode, portable path (no SIMD)", "ours portable", None),
        ];
        for (label, ours, theirs) in pairs {
            let o = get(ours).unwrap_or_default();
            let (t, ratio) = match theirs.and_then(get) {
                Some(t) => (
                    format!("{:.2} ({:.2})", t.0, t.1),
                    format!("{:.2}", o.0 / t.0),
                ),
                None => ("-".into(), "-".into()),
            };
            println!(
                "| {k} | {label} | {:.2} ({:.2}) | {t} | {ratio} | {:.2} ({:.2}) | {:.2} |",
                o.0,
                o.1,
                memcpy.0,
                memcpy.1,
                o.0 / memcpy.0
            );
        }
    }
}
