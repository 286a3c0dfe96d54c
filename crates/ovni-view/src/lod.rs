//! Level-of-detail pre-aggregation: what the page draws at each zoom level, within a size
//! budget.
//!
//! Every row of the page (a thread's states, one depth of one mark type, a CPU) is a list of
//! non-overlapping intervals. Level `k` has buckets of width `w_k = duration / (1024 · 4^k)`
//! (rounded up, at least 1 ns): level 0 is about one bucket per pixel of the whole trace on a
//! screen, each level 4 times finer. At level `k` the page draws
//! * exactly, every interval at least `w_k` long (such an interval is shipped once, in the
//!   group of the coarsest level where it is that long), and
//! * for the shorter ones, one bar per non-empty bucket: the value that covers most of the
//!   bucket, drawn with the fraction of the bucket that short intervals cover.
//!
//! Levels are added from the coarsest while the page stays within its byte budget; when the
//! remaining (shortest) intervals fit too and the finest level is about as fine as they are
//! (at most [`REST_PER_BUCKET`] of them per bucket), they are shipped exactly and the page is
//! complete at every zoom. Otherwise the finest level shipped is drawn at deeper zooms, and the page
//! says that the detail there is aggregated.

use crate::model::Span;

/// Buckets across the whole trace at level 0.
pub const LEVEL0_BUCKETS: u64 = 1024;
/// How much finer each level is than the previous one.
pub const LEVEL_FACTOR: u64 = 4;
/// The shortest intervals are shipped exactly only when the finest level has at most this
/// many of them per non-empty bucket on average.
pub const REST_PER_BUCKET: usize = 4;

/// One row's shipped data; times are nanoseconds from the trace's start. The page stores each
/// list with [`encode`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RowLod {
    /// Per level `k`, the intervals first drawn exactly at `k`: flat triples
    /// (start − previous start in the group, length, value).
    pub exact: Vec<Vec<i64>>,
    /// Per level `k`, the buckets of shorter intervals: flat triples
    /// (bucket index − previous index, value, covered percent 1..=100).
    pub buckets: Vec<Vec<i64>>,
    /// When the page is complete, the intervals shorter than the finest level's width, as
    /// `exact` triples.
    pub rest: Vec<i64>,
}

/// The levels shipped for every row.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Lod {
    /// Bucket width of each level, in nanoseconds.
    pub widths: Vec<u64>,
    /// Whether every interval is shipped exactly (the page shows full detail at any zoom).
    pub complete: bool,
    /// Per row.
    pub rows: Vec<RowLod>,
}

/// Bytes of `v` as an unsigned LEB128 varint.
fn varint_len(v: u64) -> usize {
    (64 - (v | 1).leading_zeros() as usize).div_ceil(7)
}

fn zigzag(n: i64) -> u64 {
    ((n << 1) ^ (n >> 63)) as u64
}

/// Which field of a triple is signed (zigzag-coded): the value of an exact triple.
pub const EXACT_SIGNED: usize = 2;
/// The value of a bucket triple.
pub const BUCKET_SIGNED: usize = 1;

fn field(n: i64, i: usize, signed: usize) -> u64 {
    if i % 3 == signed {
        zigzag(n)
    } else {
        n.max(0) as u64
    }
}

/// Characters of [`encode`]'s output in the page, with its quotes and comma.
fn encoded_len(bytes: usize) -> usize {
    bytes.div_ceil(3) * 4 + 3
}

fn nums_len(v: &[i64], signed: usize) -> usize {
    let bytes = v
        .iter()
        .enumerate()
        .map(|(i, &n)| varint_len(field(n, i, signed)))
        .sum();
    encoded_len(bytes)
}

/// Triples as the page stores them: each number an LEB128 varint (field `signed` of each
/// triple zigzag-coded, the others non-negative), all in base64.
pub fn encode(v: &[i64], signed: usize) -> String {
    let mut bytes = Vec::with_capacity(v.len() * 2);
    for (i, &n) in v.iter().enumerate() {
        let mut x = field(n, i, signed);
        while x >= 0x80 {
            bytes.push((x as u8) | 0x80);
            x >>= 7;
        }
        bytes.push(x as u8);
    }
    base64(&bytes)
}

fn base64(bytes: &[u8]) -> String {
    const ABC: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk.first().copied().unwrap_or(0),
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for (k, shift) in [18u32, 12, 6, 0].into_iter().enumerate() {
            if k <= chunk.len() {
                out.push(char::from(ABC[((n >> shift) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn as_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// Exact triples of `spans` whose length is in `[lo, hi)`.
fn exact_group(spans: &[Span], lo: u64, hi: u64) -> Vec<i64> {
    let mut out = Vec::new();
    let mut prev = 0u64;
    for s in spans.iter().filter(|s| s.dur() >= lo && s.dur() < hi) {
        out.extend([as_i64(s.t0 - prev), as_i64(s.dur()), s.value]);
        prev = s.t0;
    }
    out
}

/// A bucket being filled: its index, covered time and time per value.
type Bucket = (u64, u64, Vec<(i64, u64)>);

/// What [`exact_group`] would take in the page, without building it.
fn exact_cost(spans: &[Span], lo: u64, hi: u64) -> usize {
    let mut prev = 0u64;
    let mut bytes = 0;
    for s in spans.iter().filter(|s| s.dur() >= lo && s.dur() < hi) {
        bytes += varint_len(s.t0 - prev) + varint_len(s.dur()) + varint_len(zigzag(s.value));
        prev = s.t0;
    }
    encoded_len(bytes)
}

/// Buckets of width `w` over the intervals shorter than `w`.
fn buckets(spans: &[Span], w: u64) -> Vec<i64> {
    let mut out = Vec::new();
    let mut prev_idx = 0u64;
    let mut cur: Option<Bucket> = None;
    let mut emit = |cur: &mut Option<Bucket>, out: &mut Vec<i64>| {
        if let Some((idx, covered, values)) = cur.take() {
            let value = values
                .iter()
                .max_by_key(|(_, ns)| *ns)
                .map_or(0, |(v, _)| *v);
            let pct = (covered.saturating_mul(100).div_ceil(w)).clamp(1, 100);
            out.extend([as_i64(idx - prev_idx), value, as_i64(pct)]);
            prev_idx = idx;
        }
    };
    for s in spans.iter().filter(|s| s.dur() < w && s.dur() > 0) {
        let first = s.t0 / w;
        let last = (s.t1 - 1) / w;
        for idx in first..=last {
            let b0 = idx * w;
            let part = s.t1.min(b0 + w) - s.t0.max(b0);
            if cur.as_ref().is_some_and(|c| c.0 != idx) {
                emit(&mut cur, &mut out);
            }
            let c = cur.get_or_insert_with(|| (idx, 0, Vec::new()));
            c.1 += part;
            match c.2.iter_mut().find(|(v, _)| *v == s.value) {
                Some(e) => e.1 += part,
                None => c.2.push((s.value, part)),
            }
        }
    }
    emit(&mut cur, &mut out);
    out
}

/// Builds the levels of `rows` (each sorted by start, times relative to the trace's start)
/// for a trace `duration` ns long, within about `budget` bytes of JSON. Level 0 is always
/// shipped.
pub fn build(rows: &[Vec<Span>], duration: u64, budget: usize) -> Lod {
    let mut lod = Lod {
        rows: vec![RowLod::default(); rows.len()],
        ..Lod::default()
    };
    let mut used = 0usize;
    let mut prev_w = u64::MAX;
    let mut div = LEVEL0_BUCKETS;
    loop {
        let w = duration.div_ceil(div).max(1);
        let first_cost: usize = rows.iter().map(|r| exact_cost(r, w, prev_w)).sum();
        if !lod.widths.is_empty() && used + first_cost > budget {
            return lod;
        }
        let exact: Vec<Vec<i64>> = rows.iter().map(|r| exact_group(r, w, prev_w)).collect();
        let bucks: Vec<Vec<i64>> = rows.iter().map(|r| buckets(r, w)).collect();
        let cost: usize = exact
            .iter()
            .map(|v| nums_len(v, EXACT_SIGNED))
            .sum::<usize>()
            + bucks
                .iter()
                .map(|v| nums_len(v, BUCKET_SIGNED))
                .sum::<usize>();
        if !lod.widths.is_empty() && used + cost > budget {
            return lod;
        }
        used += cost;
        lod.widths.push(w);
        let nbuckets: usize = bucks.iter().map(|b| b.len() / 3).sum();
        for ((row, e), b) in lod.rows.iter_mut().zip(exact).zip(bucks) {
            row.exact.push(e);
            row.buckets.push(b);
        }
        // Everything shorter than `w`, exactly: complete if it fits, once this level is about
        // as fine as those intervals (so that no zoom has to draw many intervals per pixel).
        let rest_cost: usize = rows.iter().map(|r| exact_cost(r, 1, w)).sum();
        let rest_spans: usize = rows
            .iter()
            .map(|r| r.iter().filter(|s| s.dur() >= 1 && s.dur() < w).count())
            .sum();
        let fine = rest_spans <= REST_PER_BUCKET * nbuckets.max(1);
        if (fine && used + rest_cost <= budget) || w == 1 {
            for (row, r) in lod.rows.iter_mut().zip(rows) {
                row.rest = exact_group(r, 1, w);
            }
            lod.complete = true;
            return lod;
        }
        prev_w = w;
        div = div.saturating_mul(LEVEL_FACTOR);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(t0: u64, t1: u64, value: i64) -> Span {
        Span { t0, t1, value }
    }

    #[test]
    fn a_small_trace_is_complete_and_every_interval_is_shipped_once() {
        let rows = vec![vec![
            span(0, 5000, 1),
            span(5000, 5003, 2),
            span(6000, 9000, 1),
        ]];
        let lod = build(&rows, 10_000, 1 << 20);
        assert!(lod.complete);
        let row = &lod.rows[0];
        let shipped: usize =
            row.exact.iter().map(|g| g.len() / 3).sum::<usize>() + row.rest.len() / 3;
        assert_eq!(shipped, 3);
    }

    #[test]
    fn a_tight_budget_keeps_level0_and_aggregates() {
        let rows: Vec<Vec<Span>> = vec![(0..100_000u64)
            .map(|i| span(i * 10, i * 10 + 5, (i % 3) as i64 + 1))
            .collect()];
        let lod = build(&rows, 1_000_000, 10_000);
        assert!(!lod.complete);
        assert_eq!(lod.widths.len(), 1);
        let b = &lod.rows[0].buckets[0];
        // 1024 buckets of ~977 ns, each half covered.
        assert_eq!(b.len() / 3, 1024);
        assert!(
            b.chunks(3).take(1023).all(|c| (49..=51).contains(&c[2])),
            "{:?}",
            &b[..9]
        );
    }

    #[test]
    fn widths_shrink_by_the_factor() {
        let rows: Vec<Vec<Span>> = vec![(0..1000u64)
            .map(|i| span(i * 1000, i * 1000 + 1, 1))
            .collect()];
        let lod = build(&rows, 1_000_000, 1 << 30);
        assert!(lod.complete);
        for w in lod.widths.windows(2) {
            assert!(w[1] * LEVEL_FACTOR >= w[0] && w[1] < w[0]);
        }
    }
}

#[cfg(test)]
mod encoding {
    use super::*;

    fn decode(text: &str, signed: usize) -> Vec<i64> {
        let abc = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let mut bits = 0u32;
        let mut nbits = 0;
        let mut bytes = Vec::new();
        for c in text.chars().filter(|&c| c != '=') {
            bits = (bits << 6) | abc.find(c).unwrap() as u32;
            nbits += 6;
            if nbits >= 8 {
                nbits -= 8;
                bytes.push((bits >> nbits) as u8);
                bits &= (1 << nbits) - 1;
            }
        }
        let mut out = Vec::new();
        let (mut x, mut shift) = (0u64, 0);
        for b in bytes {
            x |= u64::from(b & 0x7f) << shift;
            shift += 7;
            if b < 0x80 {
                let i = out.len();
                out.push(if i % 3 == signed {
                    ((x >> 1) as i64) ^ -((x & 1) as i64)
                } else {
                    x as i64
                });
                x = 0;
                shift = 0;
            }
        }
        out
    }

    #[test]
    fn triples_round_trip() {
        let v = vec![
            0,
            1,
            -1,
            127,
            128,
            i64::MAX,
            16383,
            16384,
            i64::MIN,
            5,
            300,
            42,
        ];
        for signed in [EXACT_SIGNED, BUCKET_SIGNED] {
            let mut want = v.clone();
            for (i, n) in want.iter_mut().enumerate() {
                if i % 3 != signed {
                    *n = (*n).max(0);
                }
            }
            let text = encode(&v, signed);
            assert_eq!(decode(&text, signed), want);
            assert_eq!(nums_len(&v, signed), text.len() + 3);
        }
        assert_eq!(encode(&[], EXACT_SIGNED), "");
    }
}
