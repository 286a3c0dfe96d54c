//! A deterministic mutation campaign over FTI-FF files, shared by the full campaign
//! (`examples/mutants.rs`), the slice in the library's tests (`tests/mutants.rs`) and the
//! process-level slice of the `fti` tool (`crates/fti-cli/tests/mutants.rs`).
//!
//! The promise checked: a file whose variable bytes differ from the original's is never
//! accepted by [`Checkpoint::verified`] (what `fti verify`, `extract` and `diff` go
//! through), and parsing and the three views of `fti inspect` never panic or hang.
//!
//! Threat model: a mutant may have its cheap hashes recomputed — `FB.myHash` and every
//! `VMD.hash` — as an attacker or a buggy tool "fixing" a file would, but never the file
//! checksum `FB.checksum`: a file with a recomputed checksum is a different checkpoint. In a
//! fast-integrity file the file hash in `FB.checksum` (xxh3 over the mode and every block's
//! meta data, VMD hashes included) plays the checksum's role and is never recomputed; its
//! `VMD.hash` is recomputed with the fast formula (xxh3 over chunksize, containersize and the
//! container's block hashes, with the block size the mutant's own FB declares).
//!
//! Every mutant is derived from the campaign seed and its index alone, so any mutant can be
//! regenerated on its own.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ftiff::diff::Change;
use ftiff::raw::{bmd, fb, vmd, Cursor, FileBlock};
use ftiff::{hash, Checkpoint, ErrorKind, Integrity, Layout, RsedFile, VarInfo, VarSize};

/// xorshift64* seeded through splitmix64: small, deterministic, good enough to pick mutations.
#[derive(Debug, Clone)]
pub struct Rng(u64);

fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Rng {
    /// A generator for `seed`.
    pub fn new(seed: u64) -> Self {
        Rng(splitmix(seed).max(1))
    }

    /// The generator of mutant `index` of the campaign with `seed`.
    pub fn for_mutant(seed: u64, index: u64) -> Self {
        Rng::new(splitmix(seed) ^ splitmix(index.wrapping_add(0x5151)))
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in `0..n` (`n` > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }

    /// Uniform index into a slice of length `n` (> 0).
    pub fn index(&mut self, n: usize) -> usize {
        self.below(n as u64) as usize
    }

    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }

    /// True with probability `num / den`.
    pub fn chance(&mut self, num: u64, den: u64) -> bool {
        self.below(den) < num
    }

    /// A random non-zero byte.
    pub fn nonzero_byte(&mut self) -> u8 {
        self.range(1, 255) as u8
    }

    /// `n` random bytes.
    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next_u64() as u8).collect()
    }
}

// ---------------------------------------------------------------------------------------------
// Inputs

/// An original file: valid, verified, with every variable's bytes read.
pub struct Input {
    /// Short name used in reports.
    pub name: String,
    /// Where the original is stored (inside the campaign's work directory).
    pub path: PathBuf,
    /// Its bytes.
    pub bytes: Vec<u8>,
    /// Its variables in protect order.
    pub vars: Vec<VarInfo>,
    /// The bytes of each variable, by protect position.
    pub data: Vec<Vec<u8>>,
}

/// The FTI 1.1 files of the seed example, inside the repository.
pub fn seed_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/fti/seed-example")
}

/// Fixed timestamp of written inputs, so that they are reproducible.
const TIMESTAMP: i64 = 1_700_000_000_000_000_000;

/// (name, protect/resize history: per step, (id, size in bytes) in protect order).
type History = (&'static str, &'static [&'static [(i32, u64)]]);

/// Histories written with the library. Several variables share a size (swapped `VMD.id`s then
/// still fit), some are removed, some shrink to a partial container followed by empty ones,
/// some have size 0, a negative id or id 0.
const HISTORIES: &[History] = &[
    (
        "same-size",
        &[&[(10, 777), (11, 777), (12, 777), (13, 777), (14, 777)]],
    ),
    (
        "same-size-3blocks",
        &[
            &[(10, 600), (11, 600), (12, 600)],
            &[(10, 1200), (11, 1200), (12, 600), (13, 600)],
            &[(10, 1200), (11, 1200), (12, 1800), (13, 600), (14, 600)],
        ],
    ),
    (
        "removed",
        &[
            &[(1, 500), (2, 500), (3, 500)],
            &[(1, 500), (3, 900), (4, 500)],
        ],
    ),
    (
        "removed-shrunk",
        &[
            &[(1, 500), (2, 500), (3, 500)],
            &[(1, 500), (3, 900), (4, 500)],
            &[(1, 200), (3, 100), (4, 500)],
        ],
    ),
    (
        "returned",
        &[
            &[(1, 500), (2, 500), (3, 500)],
            &[(1, 500), (3, 900), (4, 500)],
            &[(1, 500), (2, 700), (3, 900), (4, 500)],
        ],
    ),
    (
        "zero-negative",
        &[
            &[(-5, 0), (0, 300), (7, 1000)],
            &[(-5, 64), (0, 0), (7, 1500)],
            &[(-5, 64), (0, 10), (7, 200)],
        ],
    ),
    ("empty", &[&[]]),
];

/// Per step, (id, size in bytes) of every protected variable, in protect order.
type Steps = Vec<Vec<(i32, u64)>>;

/// How far `FB.maxFs` lies above `fs` (-1: `maxFs` = -1), and `FB.ptFs`.
type RankFields = (i64, i64);

/// Integrity modes each history is written in: MD5 (FTI 1.1) and fast with two block sizes.
const MODES: &[(&str, u64)] = &[("md5", 0), ("fast512", 512), ("fast4096", 4096)];

/// Deterministic content of variable `id` at `step`: distinct for every variable and step.
fn content(id: i32, step: usize, size: u64) -> Vec<u8> {
    let mut rng = Rng::new(((id as u32 as u64) << 16) | step as u64);
    rng.bytes(size as usize)
}

/// A history of many small variables over three steps (growth, shrink, additions).
fn many_small() -> Steps {
    let step = |n: i32, k: u64| -> Vec<(i32, u64)> {
        (0..n).map(|i| (i * 3, (i as u64 * k) % 37)).collect()
    };
    vec![step(24, 7), step(30, 11), step(36, 5)]
}

/// Writes the last step of `history` into `path`.
fn write_history(
    path: &Path,
    history: &[Vec<(i32, u64)>],
    integrity: Integrity,
    fields: RankFields,
) -> ftiff::Result<()> {
    let mut layout: Option<Layout> = None;
    for step in history {
        let sizes: Vec<VarSize> = step
            .iter()
            .map(|&(id, size)| VarSize { id, size })
            .collect();
        layout = Some(Layout::plan(layout.as_ref(), &sizes)?);
    }
    let layout = layout.unwrap_or_default();
    let last = history.len().saturating_sub(1);
    // One buffer per variable of the layout (removed ones are empty), by protect position.
    let sizes: BTreeMap<i32, u64> = history
        .last()
        .map(|s| s.iter().copied().collect())
        .unwrap_or_default();
    let buffers: Vec<Vec<u8>> = layout
        .vars()
        .iter()
        .map(|v| content(v.id, last, sizes.get(&v.id).copied().unwrap_or(0)))
        .collect();
    let data: Vec<&[u8]> = buffers.iter().map(Vec::as_slice).collect();
    let fs = layout.file_size() as i64;
    let opts = ftiff::WriteOptions {
        timestamp: Some(TIMESTAMP),
        max_fs: if fields.0 < 0 { -1 } else { fs + fields.0 },
        pt_fs: fields.1,
        integrity,
        table: None,
    };
    ftiff::write_path(path, &layout, &data, &opts)?;
    Ok(())
}

impl Input {
    /// Its parsed structure (the bytes verified when it was loaded).
    pub fn ckpt(&self) -> Checkpoint<'_> {
        Checkpoint::parse(&self.bytes).expect("an original parses: it was verified when loaded")
    }
}

/// Reads, verifies and records an original.
fn load(name: String, path: PathBuf) -> Result<Input, String> {
    let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let map = ftiff::MappedFile::open(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let ckpt = Checkpoint::verified(&map, &|_| {})
        .map_err(|e| format!("original {name} does not verify: {e}"))?;
    let vars = ckpt.vars().to_vec();
    let data = vars
        .iter()
        .map(|v| ckpt.read_var(v.id))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("original {name}: {e}"))?;
    let mut again = bytes.clone();
    rehash(&mut again, Rehash::Both);
    if again != bytes {
        return Err(format!(
            "original {name}: recomputing its cheap hashes changes it (the campaign's hashing is wrong)"
        ));
    }
    drop(ckpt);
    drop(map);
    Ok(Input {
        name,
        path,
        bytes,
        vars,
        data,
    })
}

/// Every input: the seven FTI 1.1 seed files (copied into `work`) and the histories above
/// written with the library in each integrity mode (two of them with `maxFs`/`ptFs` set).
pub fn inputs(work: &Path) -> Result<Vec<Input>, String> {
    let mut out = Vec::new();
    for k in 1..=7 {
        let name = format!("seed-ckpt{k}");
        let path = work.join(format!("{name}.fti"));
        std::fs::copy(seed_dir().join(format!("ckpt{k}-rank0.fti")), &path)
            .map_err(|e| format!("copying seed file {k}: {e}"))?;
        out.push(load(name, path)?);
    }
    let mut histories: Vec<(String, Steps, RankFields)> = HISTORIES
        .iter()
        .map(|(name, steps)| {
            let steps = steps.iter().map(|s| s.to_vec()).collect();
            ((*name).to_owned(), steps, (-1, -1))
        })
        .collect();
    histories.push(("many-small".into(), many_small(), (-1, -1)));
    // An L3 Rank file (maxFs above fs) and an L2 Rank file (ptFs set).
    histories.push(("l3-rank".into(), histories[1].1.clone(), (4096, -1)));
    histories.push(("l2-rank".into(), histories[2].1.clone(), (-1, 31_337)));
    for (name, steps, fields) in &histories {
        for &(mode, block) in MODES {
            let integrity = if block == 0 {
                Integrity::Md5
            } else {
                Integrity::fast(block).map_err(|e| e.to_string())?
            };
            let name = format!("{name}.{mode}");
            let path = work.join(format!("{name}.fti"));
            write_history(&path, steps, integrity, *fields)
                .map_err(|e| format!("writing {name}: {e}"))?;
            out.push(load(name, path)?);
        }
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// Byte helpers (mutants may be any length: reads past the end give 0, writes are dropped)

fn get_i32(b: &[u8], at: usize) -> i32 {
    b.get(at..at + 4)
        .and_then(|s| s.try_into().ok())
        .map_or(0, i32::from_le_bytes)
}

fn get_i64(b: &[u8], at: usize) -> i64 {
    b.get(at..at + 8)
        .and_then(|s| s.try_into().ok())
        .map_or(0, i64::from_le_bytes)
}

fn put(b: &mut [u8], at: usize, value: &[u8]) {
    if let Some(slot) = b.get_mut(at..at + value.len()) {
        slot.copy_from_slice(value);
    }
}

fn put_i32(b: &mut [u8], at: usize, v: i32) {
    put(b, at, &v.to_le_bytes());
}

fn put_i64(b: &mut [u8], at: usize, v: i64) {
    put(b, at, &v.to_le_bytes());
}

// ---------------------------------------------------------------------------------------------
// Recomputing the cheap hashes

/// Which cheap hashes a mutant gets recomputed after its mutation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Rehash {
    /// None: the mutation as is.
    None,
    /// Every `VMD.hash` the mutant's own structure reaches.
    VmdHashes,
    /// `FB.myHash` only.
    MyHash,
    /// Both.
    Both,
}

impl Rehash {
    /// Short name for reports.
    pub fn name(self) -> &'static str {
        match self {
            Rehash::None => "none",
            Rehash::VmdHashes => "VMD.hash",
            Rehash::MyHash => "FB.myHash",
            Rehash::Both => "VMD.hash+FB.myHash",
        }
    }
}

/// Recomputes the chosen cheap hashes of `bytes` in place, as a tool would that reads the
/// file's own records: the blocks are walked from offset 96 by `numvars` and `dbsize` as
/// stored, as far as they stay within the file, and each VMD reached gets the hash of the
/// bytes its own `fptr`, `chunksize` and `containersize` name (MD5 of the chunk, or the fast
/// chunk hash when the FB declares fast integrity). `FB.myHash` is recomputed last. The file
/// checksum is never touched.
pub fn rehash(bytes: &mut [u8], what: Rehash) {
    if bytes.len() < fb::SIZE {
        return;
    }
    if matches!(what, Rehash::VmdHashes | Rehash::Both) {
        for at in reachable_vmds(bytes) {
            if let Some(digest) = vmd_hash(bytes, at) {
                put(bytes, at + vmd::HASH, &digest);
            }
        }
    }
    if matches!(what, Rehash::MyHash | Rehash::Both) {
        if let Ok(block) = FileBlock::parse(&mut Cursor::new(bytes, 0)) {
            put(bytes, fb::MY_HASH, &hash::my_hash(&block));
        }
    }
}

/// Offsets of the VMDs a walk of the stored `numvars`/`dbsize` reaches.
fn reachable_vmds(bytes: &[u8]) -> Vec<usize> {
    let len = bytes.len();
    let end =
        usize::try_from(get_i64(bytes, fb::FS).clamp(fb::SIZE as i64, len as i64)).unwrap_or(len);
    let mut out = Vec::new();
    let mut off = fb::SIZE;
    while off + bmd::SIZE <= end {
        let numvars = get_i32(bytes, off + bmd::NUMVARS);
        let dbsize = get_i64(bytes, off + bmd::DBSIZE);
        let Ok(numvars) = usize::try_from(numvars) else {
            break;
        };
        if numvars == 0 || numvars > (end - off) / vmd::SIZE {
            break;
        }
        out.extend((0..numvars).map(|i| off + bmd::SIZE + vmd::SIZE * i));
        let meta = bmd::SIZE + vmd::SIZE * numvars;
        match usize::try_from(dbsize) {
            Ok(d) if d >= meta && d <= end - off => off += d,
            _ => break,
        }
    }
    out
}

/// The hash the VMD at `at` should hold for the bytes it names, if they are in the file.
fn vmd_hash(bytes: &[u8], at: usize) -> Option<[u8; 16]> {
    let mode: [u8; 7] = bytes.get(fb::PADDING..fb::CKPT_SIZE)?.try_into().ok()?;
    let fptr = usize::try_from(get_i64(bytes, at + vmd::FPTR)).ok()?;
    let chunk = u64::try_from(get_i64(bytes, at + vmd::CHUNK_SIZE)).ok()?;
    let container = u64::try_from(get_i64(bytes, at + vmd::CONTAINER_SIZE)).ok()?;
    match Integrity::from_fb_mode(&mode).unwrap_or(Integrity::Md5) {
        Integrity::Md5 => {
            let end = fptr.checked_add(usize::try_from(chunk).ok()?)?;
            Some(hash::md5(bytes.get(fptr..end)?))
        }
        Integrity::Fast { block_log2 } => {
            let end = usize::try_from(container)
                .ok()
                .and_then(|c| fptr.checked_add(c))
                .unwrap_or(usize::MAX)
                .min(bytes.len());
            let data = bytes.get(fptr..end)?;
            let hashes =
                ftiff::blocks::fast_blocking(block_log2).container_hashes(data, data.len() as u64);
            Some(ftiff::blocks::fast_chunk_hash(chunk, container, &hashes))
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Mutations

/// One mutant.
pub struct Mutant {
    /// Its number in the campaign.
    pub index: u64,
    /// The input it was made from (index into the inputs).
    pub input: usize,
    /// Kind of mutation.
    pub kind: &'static str,
    /// What exactly was changed.
    pub detail: String,
    /// Cheap hashes recomputed afterwards.
    pub rehash: Rehash,
    /// The mutant's bytes.
    pub bytes: Vec<u8>,
}

impl Mutant {
    /// One line naming the mutant.
    pub fn describe(&self, inputs: &[Input]) -> String {
        format!(
            "mutant {} of {}: {} ({}), hashes recomputed: {}",
            self.index,
            inputs.get(self.input).map_or("?", |i| i.name.as_str()),
            self.kind,
            self.detail,
            self.rehash.name()
        )
    }
}

/// Every kind of mutation.
pub const KINDS: &[&str] = &[
    "fb.checksum",
    "fb.myHash",
    "fb.mode",
    "fb.ckptSize",
    "fb.fs",
    "fb.fs+ckptSize",
    "fb.maxFs",
    "fb.ptFs",
    "fb.timestamp",
    "bmd.numvars",
    "bmd.dbsize",
    "vmd.id",
    "vmd.idx",
    "vmd.containerid",
    "vmd.hascontent",
    "vmd.padding",
    "vmd.dptr",
    "vmd.fptr",
    "vmd.chunksize",
    "vmd.containersize",
    "vmd.hash",
    "vmd.swap-ids",
    "vmd.swap-records",
    "chunk.into-fill",
    "var.shrink",
    "var.empty",
    "var.append",
    "var.grow",
    "block.drop-last",
    "data.swap-containers",
    "data.overwrite",
    "flip",
    "truncate",
    "append",
    "splice",
];

/// Makes mutant `index` of the campaign with `seed`.
pub fn make(seed: u64, index: u64, inputs: &[Input]) -> Mutant {
    let mut rng = Rng::for_mutant(seed, index);
    let input = rng.index(inputs.len());
    let rehash_with = match rng.below(20) {
        0..=3 => Rehash::None,
        4..=6 => Rehash::VmdHashes,
        7..=9 => Rehash::MyHash,
        _ => Rehash::Both,
    };
    let src = &inputs[input];
    let mut kind = KINDS[rng.index(KINDS.len())];
    let mut bytes = src.bytes.clone();
    let mut detail = None;
    // A mutation that changes nothing (e.g. a field set to the value it has) is drawn again;
    // a kind that does not apply to this input (e.g. swapping ids in a file with one
    // variable) gives way to another.
    for attempt in 0..32 {
        bytes.clone_from(&src.bytes);
        detail = apply(kind, src, inputs, &mut bytes, &mut rng).filter(|_| bytes != src.bytes);
        if detail.is_some() {
            break;
        }
        if attempt % 4 == 3 {
            kind = KINDS[rng.index(KINDS.len())];
        }
    }
    let detail = detail.unwrap_or_else(|| {
        kind = "flip";
        bytes.clone_from(&src.bytes);
        flip(&mut bytes, &mut rng, 0..src.bytes.len())
    });
    // Recomputing the very hash a mutation changed would only undo it.
    let rehash_with = match (kind, rehash_with) {
        ("vmd.hash", Rehash::VmdHashes) | ("fb.myHash", Rehash::MyHash) => Rehash::None,
        ("vmd.hash", Rehash::Both) => Rehash::MyHash,
        ("fb.myHash", Rehash::Both) => Rehash::VmdHashes,
        (_, r) => r,
    };
    rehash(&mut bytes, rehash_with);
    Mutant {
        index,
        input,
        kind,
        detail,
        rehash: rehash_with,
        bytes,
    }
}

/// A new value for an integer field holding `old`: the usual suspects.
fn new_value(rng: &mut Rng, old: i64, others: &[i64], len: i64, wide: bool) -> (i64, &'static str) {
    let (min, max) = if wide {
        (i64::MIN, i64::MAX)
    } else {
        (i64::from(i32::MIN), i64::from(i32::MAX))
    };
    match rng.below(18) {
        0 => (0, "zero"),
        1 => (old.wrapping_add(1), "+1"),
        2 => (old.wrapping_sub(1), "-1"),
        3 => (old.wrapping_add(rng.range(2, 100) as i64), "+k"),
        4 => (old.wrapping_sub(rng.range(2, 100) as i64), "-k"),
        5 => (-1, "minus one"),
        6 => (max, "max"),
        7 => (min, "min"),
        8 => (rng.next_u64() as i64, "random"),
        9 => (
            rng.below(len as u64 + 1) as i64,
            "random below the file length",
        ),
        10 if !others.is_empty() => (others[rng.index(others.len())], "another record's"),
        11 => (len, "the file length"),
        12 => (len + 1, "the file length + 1"),
        13 => (old.wrapping_mul(2), "doubled"),
        14 => (old / 2, "halved"),
        15 => (
            old ^ (1 << rng.below(if wide { 63 } else { 31 })),
            "one bit flipped",
        ),
        16 => (old.wrapping_add(vmd::SIZE as i64), "+64"),
        _ => (old.wrapping_sub(vmd::SIZE as i64), "-64"),
    }
}

/// Sets the integer field of `width` bytes at `at` to a new value; returns "old -> new (how)".
fn set_field(
    bytes: &mut [u8],
    rng: &mut Rng,
    at: usize,
    wide: bool,
    others: &[i64],
    len: i64,
) -> String {
    let old = if wide {
        get_i64(bytes, at)
    } else {
        i64::from(get_i32(bytes, at))
    };
    let (value, how) = new_value(rng, old, others, len, wide);
    let stored = if wide {
        put_i64(bytes, at, value);
        value
    } else {
        put_i32(bytes, at, value as i32);
        i64::from(value as i32)
    };
    format!("{old} -> {stored} ({how})")
}

/// XORs 1 to 4 bytes in `range` with random non-zero values.
fn flip(bytes: &mut [u8], rng: &mut Rng, range: std::ops::Range<usize>) -> String {
    let range = range.start..range.end.min(bytes.len());
    if range.is_empty() {
        return "nothing to flip".into();
    }
    let n = rng.range(1, 4);
    let mut at = Vec::new();
    for _ in 0..n {
        let pos = range.start + rng.index(range.len());
        bytes[pos] ^= rng.nonzero_byte();
        at.push(pos.to_string());
    }
    format!("bytes {} flipped", at.join(", "))
}

/// Applies mutation `kind` to `bytes` (a copy of `src`); `None` if it does not apply.
fn apply(
    kind: &str,
    src: &Input,
    inputs: &[Input],
    bytes: &mut Vec<u8>,
    rng: &mut Rng,
) -> Option<String> {
    let len = bytes.len() as i64;
    let ckpt = &src.ckpt();
    let records: Vec<&ftiff::ChunkRecord> = ckpt.records().collect();
    let layout = ckpt.layout();
    let pick_record = |rng: &mut Rng| -> Option<(usize, &ftiff::ChunkRecord)> {
        if records.is_empty() {
            return None;
        }
        let i = rng.index(records.len());
        Some((i, records[i]))
    };
    // The value of a VMD field in every record, for "another record's value".
    let column = |off: usize| -> Vec<i64> {
        records
            .iter()
            .map(|r| get_i64(&src.bytes, r.vmd_offset as usize + off))
            .collect()
    };
    let column32 = |off: usize| -> Vec<i64> {
        records
            .iter()
            .map(|r| i64::from(get_i32(&src.bytes, r.vmd_offset as usize + off)))
            .collect()
    };
    let vmd_field = |bytes: &mut Vec<u8>, rng: &mut Rng, off: usize, name: &str, wide: bool| {
        let (i, r) = pick_record(rng)?;
        let others = if wide { column(off) } else { column32(off) };
        let at = r.vmd_offset as usize + off;
        let change = set_field(bytes, rng, at, wide, &others, len);
        Some(format!("VMD {i} (id {}) {name} {change}", r.chunk.id))
    };
    let fb_field = |bytes: &mut Vec<u8>, rng: &mut Rng, at: usize, name: &str| {
        let others = [
            get_i64(&src.bytes, fb::FS),
            get_i64(&src.bytes, fb::MAX_FS),
            get_i64(&src.bytes, fb::PT_FS),
        ];
        let change = set_field(bytes, rng, at, true, &others, len);
        Some(format!("FB.{name} {change}"))
    };
    match kind {
        "fb.checksum" => Some(match rng.below(3) {
            0 => {
                // Another valid lowercase hex digit.
                let pos = rng.index(32);
                let old = bytes[pos];
                let digits = b"0123456789abcdef";
                let mut new = digits[rng.index(16)];
                if new == old {
                    new = if old == b'0' { b'1' } else { b'0' };
                }
                bytes[pos] = new;
                format!("checksum digit {pos} {} -> {}", old as char, new as char)
            }
            1 => {
                bytes[..32].make_ascii_uppercase();
                "checksum in upper case".into()
            }
            _ => flip(bytes, rng, fb::CHECKSUM..fb::MY_HASH),
        }),
        "fb.myHash" => Some(flip(bytes, rng, fb::MY_HASH..fb::PADDING)),
        "fb.mode" => {
            let block_log2 = match src.ckpt().integrity {
                Integrity::Fast { block_log2 } => block_log2,
                Integrity::Md5 => 12,
            };
            let marker = |v: u8, a: u8, l: u8| -> [u8; 7] {
                let [m0, m1, m2, m3] = ftiff::blocks::FAST_MAGIC;
                [m0, m1, m2, m3, v, a, l]
            };
            let (mode, how): ([u8; 7], String) = match rng.below(6) {
                0 => ([0; 7], "zeros".into()),
                1 => {
                    let mut m = [0u8; 7];
                    m.iter_mut().for_each(|b| *b = rng.next_u64() as u8);
                    (m, "random bytes".into())
                }
                2 => {
                    let l = rng.range(9, 26) as u8;
                    (marker(1, 1, l), format!("fast marker, block 2^{l}"))
                }
                3 => {
                    let l = block_log2 ^ 1;
                    (marker(1, 1, l), format!("fast marker, block 2^{l}"))
                }
                4 => {
                    let v = rng.nonzero_byte();
                    (
                        marker(v, rng.below(3) as u8, rng.below(40) as u8),
                        "fast marker, other version/hash/size".into(),
                    )
                }
                _ => {
                    let mut m: [u8; 7] = bytes[fb::PADDING..fb::CKPT_SIZE].try_into().ok()?;
                    let pos = rng.index(7);
                    m[pos] ^= rng.nonzero_byte();
                    (m, format!("byte {} flipped", fb::PADDING + pos))
                }
            };
            put(bytes, fb::PADDING, &mode);
            Some(format!("FB bytes 49..55 = {} ({how})", hash::to_hex(&mode)))
        }
        "fb.ckptSize" => fb_field(bytes, rng, fb::CKPT_SIZE, "ckptSize"),
        "fb.fs" => fb_field(bytes, rng, fb::FS, "fs"),
        "fb.fs+ckptSize" => {
            let change = set_field(bytes, rng, fb::FS, true, &[], len);
            let fs = get_i64(bytes, fb::FS);
            put_i64(bytes, fb::CKPT_SIZE, fs);
            Some(format!("FB.fs and ckptSize {change}"))
        }
        "fb.maxFs" => fb_field(bytes, rng, fb::MAX_FS, "maxFs"),
        "fb.ptFs" => fb_field(bytes, rng, fb::PT_FS, "ptFs"),
        "fb.timestamp" => fb_field(bytes, rng, fb::TIMESTAMP, "timestamp"),
        "bmd.numvars" | "bmd.dbsize" => {
            if layout.blocks.is_empty() {
                return None;
            }
            let b = rng.index(layout.blocks.len());
            let at = layout.blocks[b].offset.0 as usize;
            let (off, wide, name) = if kind == "bmd.numvars" {
                (bmd::NUMVARS, false, "numvars")
            } else {
                (bmd::DBSIZE, true, "dbsize")
            };
            let others: Vec<i64> = layout
                .blocks
                .iter()
                .map(|blk| {
                    let o = blk.offset.0 as usize + off;
                    if wide {
                        get_i64(&src.bytes, o)
                    } else {
                        i64::from(get_i32(&src.bytes, o))
                    }
                })
                .collect();
            let change = set_field(bytes, rng, at + off, wide, &others, len);
            Some(format!("block {b} BMD.{name} {change}"))
        }
        "vmd.id" => vmd_field(bytes, rng, vmd::ID, "id", false),
        "vmd.idx" => vmd_field(bytes, rng, vmd::IDX, "idx", false),
        "vmd.containerid" => vmd_field(bytes, rng, vmd::CONTAINER_ID, "containerid", false),
        "vmd.dptr" => vmd_field(bytes, rng, vmd::DPTR, "dptr", true),
        "vmd.fptr" => vmd_field(bytes, rng, vmd::FPTR, "fptr", true),
        "vmd.chunksize" | "vmd.containersize" => {
            let (off, twin, name) = if kind == "vmd.chunksize" {
                (vmd::CHUNK_SIZE, vmd::CONTAINER_SIZE, "chunksize")
            } else {
                (vmd::CONTAINER_SIZE, vmd::CHUNK_SIZE, "containersize")
            };
            if rng.chance(1, 6) {
                // Chunk size = container size, or the other way round.
                let (i, r) = pick_record(rng)?;
                let at = r.vmd_offset as usize;
                let old = get_i64(bytes, at + off);
                let new = get_i64(bytes, at + twin);
                put_i64(bytes, at + off, new);
                return Some(format!(
                    "VMD {i} (id {}) {name} {old} -> {new} (the other size)",
                    r.chunk.id
                ));
            }
            vmd_field(bytes, rng, off, name, true)
        }
        "vmd.hascontent" => {
            let (i, r) = pick_record(rng)?;
            let at = r.vmd_offset as usize + vmd::HAS_CONTENT;
            let old = bytes[at];
            let new = match rng.below(4) {
                0 => 0,
                1 => 1,
                2 => old ^ 1,
                _ => rng.range(2, 255) as u8,
            };
            bytes[at] = new;
            Some(format!(
                "VMD {i} (id {}) hascontent {old} -> {new}",
                r.chunk.id
            ))
        }
        "vmd.padding" => {
            let (i, r) = pick_record(rng)?;
            let at = r.vmd_offset as usize + vmd::PADDING;
            let new = rng.bytes(3);
            put(bytes, at, &new);
            Some(format!(
                "VMD {i} (id {}) padding = {}",
                r.chunk.id,
                hash::to_hex(&new)
            ))
        }
        "vmd.hash" => {
            let (i, r) = pick_record(rng)?;
            let at = r.vmd_offset as usize + vmd::HASH;
            let what = flip(bytes, rng, at..at + 16);
            Some(format!("VMD {i} (id {}) hash: {what}", r.chunk.id))
        }
        "vmd.swap-ids" => {
            // Two records of different variables, of the same chunk size when there are any.
            let pairs: Vec<(usize, usize)> = (0..records.len())
                .flat_map(|a| (a + 1..records.len()).map(move |b| (a, b)))
                .filter(|&(a, b)| records[a].chunk.id != records[b].chunk.id)
                .collect();
            let same: Vec<(usize, usize)> = pairs
                .iter()
                .copied()
                .filter(|&(a, b)| records[a].chunk.chunk_size == records[b].chunk.chunk_size)
                .collect();
            let pool = if !same.is_empty() && rng.chance(3, 4) {
                &same
            } else {
                &pairs
            };
            if pool.is_empty() {
                return None;
            }
            let (a, b) = pool[rng.index(pool.len())];
            let (ra, rb) = (records[a], records[b]);
            put_i32(bytes, ra.vmd_offset as usize + vmd::ID, rb.chunk.id);
            put_i32(bytes, rb.vmd_offset as usize + vmd::ID, ra.chunk.id);
            Some(format!(
                "ids of VMD {a} ({}, chunk {}) and VMD {b} ({}, chunk {}) swapped",
                ra.chunk.id, ra.chunk.chunk_size, rb.chunk.id, rb.chunk.chunk_size
            ))
        }
        "vmd.swap-records" => {
            if records.len() < 2 {
                return None;
            }
            let a = rng.index(records.len());
            let mut b = rng.index(records.len() - 1);
            if b >= a {
                b += 1;
            }
            let (oa, ob) = (
                records[a].vmd_offset as usize,
                records[b].vmd_offset as usize,
            );
            let ra = src.bytes[oa..oa + vmd::SIZE].to_vec();
            let rb = src.bytes[ob..ob + vmd::SIZE].to_vec();
            put(bytes, oa, &rb);
            put(bytes, ob, &ra);
            let keep_fptr = rng.chance(1, 2);
            if keep_fptr {
                put(bytes, oa + vmd::FPTR, &ra[vmd::FPTR..vmd::FPTR + 8]);
                put(bytes, ob + vmd::FPTR, &rb[vmd::FPTR..vmd::FPTR + 8]);
            }
            Some(format!(
                "VMD {a} and VMD {b} swapped{}",
                if keep_fptr { " (fptr kept)" } else { "" }
            ))
        }
        "chunk.into-fill" => {
            // A partly filled container's chunk grows into its zero fill.
            let open: Vec<&&ftiff::ChunkRecord> = records
                .iter()
                .filter(|r| r.chunk.has_content && r.chunk.chunk_size < r.chunk.container_size)
                .collect();
            if open.is_empty() {
                return None;
            }
            let r = open[rng.index(open.len())];
            let room = r.chunk.container_size - r.chunk.chunk_size;
            let n = if rng.chance(1, 2) {
                1
            } else {
                rng.range(1, room)
            };
            put_i64(
                bytes,
                r.vmd_offset as usize + vmd::CHUNK_SIZE,
                (r.chunk.chunk_size + n) as i64,
            );
            Some(format!(
                "id {} container {} chunk grows by {n} into its fill",
                r.chunk.id, r.chunk.container_id
            ))
        }
        "var.shrink" => {
            // The last chunk with data loses its tail, which is zeroed: a consistent shrink.
            let live: Vec<&VarInfo> = src.vars.iter().filter(|v| v.size > 0).collect();
            if live.is_empty() {
                return None;
            }
            let v = live[rng.index(live.len())];
            let r = ckpt
                .records_of(v.idx)
                .filter(|r| r.chunk.chunk_size > 0)
                .last()?;
            let n = rng.range(1, r.chunk.chunk_size);
            let keep = r.chunk.chunk_size - n;
            put_i64(bytes, r.vmd_offset as usize + vmd::CHUNK_SIZE, keep as i64);
            let from = (r.chunk.fptr.0 + keep) as usize;
            bytes[from..from + n as usize].fill(0);
            Some(format!("id {} shrinks by {n} bytes", v.id))
        }
        "var.empty" => {
            // Every container of a variable emptied and zeroed: it reads as removed.
            let live: Vec<&VarInfo> = src.vars.iter().filter(|v| !v.removed).collect();
            if live.is_empty() {
                return None;
            }
            let v = live[rng.index(live.len())];
            for r in ckpt.records_of(v.idx) {
                let at = r.vmd_offset as usize;
                bytes[at + vmd::HAS_CONTENT] = 0;
                put_i64(bytes, at + vmd::CHUNK_SIZE, 0);
                let from = r.chunk.fptr.0 as usize;
                bytes[from..from + r.chunk.container_size as usize].fill(0);
            }
            Some(format!("id {} emptied (reads as removed)", v.id))
        }
        "var.append" | "var.grow" => {
            // A well-formed block appended: a new variable, or one more container of a
            // variable whose containers are all full.
            let (id, idx, container_id, dptr) = if kind == "var.append" {
                let mut id = rng.range(1, 1000) as i32;
                while src.vars.iter().any(|v| v.id == id) {
                    id += 1;
                }
                (id, src.vars.len() as u32, 0, 0)
            } else {
                let full: Vec<&VarInfo> = src
                    .vars
                    .iter()
                    .filter(|v| {
                        !v.removed
                            && ckpt
                                .records_of(v.idx)
                                .all(|r| r.chunk.chunk_size == r.chunk.container_size)
                    })
                    .collect();
                if full.is_empty() {
                    return None;
                }
                let v = full[rng.index(full.len())];
                let count = ckpt.records_of(v.idx).count() as u32;
                let reserved: u64 = ckpt.records_of(v.idx).map(|r| r.chunk.container_size).sum();
                (v.id, v.idx, count, reserved)
            };
            let size = rng.range(1, 300);
            let fill = if rng.chance(1, 3) {
                rng.range(1, 64)
            } else {
                0
            };
            let offset = bytes.len() as u64;
            let meta = (bmd::SIZE + vmd::SIZE) as u64;
            let dbsize = meta + size + fill;
            bytes.extend_from_slice(&(1i32).to_le_bytes());
            bytes.extend_from_slice(&(dbsize as i64).to_le_bytes());
            let record = ftiff::raw::VarMeta {
                id,
                idx: idx as i32,
                container_id: container_id as i32,
                has_content: 1,
                padding: [0; 3],
                dptr: dptr as i64,
                fptr: (offset + meta) as i64,
                chunk_size: size as i64,
                container_size: (size + fill) as i64,
                hash: [0; 16],
            };
            bytes.extend_from_slice(&record.encode());
            bytes.extend(rng.bytes(size as usize));
            bytes.extend(std::iter::repeat_n(0u8, fill as usize));
            let fs = bytes.len() as i64;
            put_i64(bytes, fb::FS, fs);
            put_i64(bytes, fb::CKPT_SIZE, fs);
            Some(format!(
                "block appended: id {id} idx {idx} container {container_id}, {size} bytes + {fill} fill; fs = {fs}"
            ))
        }
        "block.drop-last" => {
            let last = layout.blocks.last()?;
            let cut = last.offset.0 as usize;
            bytes.truncate(cut);
            put_i64(bytes, fb::FS, cut as i64);
            put_i64(bytes, fb::CKPT_SIZE, cut as i64);
            Some(format!("last block cut off, fs = {cut}"))
        }
        "data.swap-containers" => {
            let pairs: Vec<(usize, usize)> = (0..records.len())
                .flat_map(|a| (a + 1..records.len()).map(move |b| (a, b)))
                .filter(|&(a, b)| {
                    let (x, y) = (&records[a].chunk, &records[b].chunk);
                    x.container_size == y.container_size && x.container_size > 0
                })
                .collect();
            if pairs.is_empty() {
                return None;
            }
            let (a, b) = pairs[rng.index(pairs.len())];
            let (x, y) = (&records[a].chunk, &records[b].chunk);
            let n = x.container_size as usize;
            let (fx, fy) = (x.fptr.0 as usize, y.fptr.0 as usize);
            let cx = src.bytes[fx..fx + n].to_vec();
            let cy = src.bytes[fy..fy + n].to_vec();
            put(bytes, fx, &cy);
            put(bytes, fy, &cx);
            Some(format!(
                "containers of VMD {a} (id {}) and VMD {b} (id {}) swapped ({n} bytes)",
                x.id, y.id
            ))
        }
        "data.overwrite" => {
            let full: Vec<&&ftiff::ChunkRecord> =
                records.iter().filter(|r| r.chunk.chunk_size > 0).collect();
            if full.is_empty() {
                return None;
            }
            let r = full[rng.index(full.len())];
            let n = rng.range(1, r.chunk.chunk_size.min(64));
            let start = r.chunk.fptr.0 + rng.below(r.chunk.chunk_size - n + 1);
            let new = rng.bytes(n as usize);
            put(bytes, start as usize, &new);
            Some(format!(
                "id {} container {}: {n} data bytes at {start} overwritten",
                r.chunk.id, r.chunk.container_id
            ))
        }
        "flip" => {
            let range = match rng.below(5) {
                0 => 0..fb::SIZE,
                1 if !layout.blocks.is_empty() => {
                    let b = &layout.blocks[rng.index(layout.blocks.len())];
                    let start = b.offset.0 as usize;
                    start..start + b.meta_size() as usize
                }
                2 if !records.is_empty() => {
                    let c = &records[rng.index(records.len())].chunk;
                    let start = c.fptr.0 as usize;
                    start..start + c.container_size as usize
                }
                _ => 0..bytes.len(),
            };
            let range = if range.is_empty() {
                0..bytes.len()
            } else {
                range
            };
            Some(flip(bytes, rng, range))
        }
        "truncate" => {
            let old = bytes.len();
            let new = match rng.below(5) {
                0 => old - 1,
                1 => fb::SIZE.min(old - 1),
                2 if !layout.blocks.is_empty() => {
                    let b = &layout.blocks[rng.index(layout.blocks.len())];
                    let ends = [b.offset.0 as usize, b.end() as usize - 1];
                    ends[rng.index(2)]
                }
                3 => old - rng.range(1, (old as u64).min(100)) as usize,
                _ => rng.index(old),
            };
            bytes.truncate(new);
            let fix = rng.chance(1, 2) && new >= fb::SIZE;
            if fix {
                put_i64(bytes, fb::FS, new as i64);
                put_i64(bytes, fb::CKPT_SIZE, new as i64);
            }
            Some(format!(
                "truncated to {new} bytes{}",
                if fix {
                    ", fs = ckptSize = new length"
                } else {
                    ""
                }
            ))
        }
        "append" => {
            let n = rng.range(1, 256) as usize;
            let (extra, how) = match rng.below(3) {
                0 => (vec![0; n], "zeros"),
                1 => (rng.bytes(n), "random bytes"),
                _ => {
                    let from = bytes.len().saturating_sub(n).max(fb::SIZE.min(bytes.len()));
                    (bytes[from..].to_vec(), "a copy of the file's end")
                }
            };
            let n = extra.len();
            bytes.extend_from_slice(&extra);
            let fix = rng.chance(1, 2);
            if fix {
                let fs = bytes.len() as i64;
                put_i64(bytes, fb::FS, fs);
                put_i64(bytes, fb::CKPT_SIZE, fs);
            }
            Some(format!(
                "{n} bytes appended ({how}){}",
                if fix {
                    ", fs = ckptSize = new length"
                } else {
                    ""
                }
            ))
        }
        "splice" => {
            // A range of another input copied over the same offsets (e.g. the meta data of an
            // older checkpoint of the same history).
            let others: Vec<usize> = (0..inputs.len())
                .filter(|&i| inputs[i].bytes != src.bytes && inputs[i].bytes.len() > fb::SIZE)
                .collect();
            if others.is_empty() || bytes.len() <= fb::SIZE {
                return None;
            }
            let other = &inputs[others[rng.index(others.len())]];
            let common = bytes.len().min(other.bytes.len());
            let (start, end) = match rng.below(3) {
                0 if !records.is_empty() => {
                    let r = records[rng.index(records.len())];
                    let s = r.vmd_offset as usize;
                    (s, s + vmd::SIZE)
                }
                1 => (fb::SIZE, common),
                _ => {
                    let s = fb::SIZE + rng.index(common - fb::SIZE);
                    (s, s + rng.range(1, 512) as usize)
                }
            };
            let end = end.min(common);
            if start >= end || bytes[start..end] == other.bytes[start..end] {
                return None;
            }
            bytes[start..end].copy_from_slice(&other.bytes[start..end]);
            Some(format!("bytes {start}..{end} from {}", other.name))
        }
        _ => None,
    }
}

// ---------------------------------------------------------------------------------------------
// Checking one mutant

/// What the reader made of a mutant that keeps the promise.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// `Checkpoint::verified` refused it.
    Refused {
        /// The first problem, as a label.
        label: String,
        /// The structure is valid and every cheap hash matches: only the file checksum (the
        /// fast file hash in a fast-integrity file) tells the mutant from the original.
        checksum_only: bool,
    },
    /// Accepted, with the original's variables and bytes.
    AcceptedIdentical,
}

/// A label for an error: its kind and, where there is one, the record and field.
pub fn error_label(e: &ftiff::Error) -> String {
    match e.kind() {
        ErrorKind::Io(_) => "I/O error".into(),
        ErrorKind::Truncated { what, .. } => format!("truncated ({what})"),
        ErrorKind::Malformed { record, field, .. } => format!("malformed {record}.{field}"),
        ErrorKind::HashMismatch { record, field, .. } => format!("{record}.{field} mismatch"),
        ErrorKind::NonZeroFill { .. } => "non-zero container fill".into(),
        ErrorKind::TrailingBytes { .. } => "trailing bytes".into(),
        ErrorKind::NotRegularFile { .. } => "not a regular file".into(),
        ErrorKind::SizeMismatch { .. } => "size mismatch".into(),
        ErrorKind::NoSuchVariable { .. } => "no such variable".into(),
        other => format!("other: {other}"),
    }
}

fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(non-text panic)".into())
}

/// Runs `f`, turning a panic into an error naming `what`.
fn no_panic<T>(what: &str, f: impl FnOnce() -> T) -> Result<T, String> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|p| format!("panic in {what}: {}", panic_text(&*p)))
}

/// What `fti inspect` does with the bytes (either kind of file), plus the unverified reads of
/// `extract --no-verify` and `diff --no-verify`: none of it may panic, whatever it returns.
fn inspect_all(original: &Input, bytes: &[u8]) -> Result<(), String> {
    no_panic("Checkpoint::parse and the views", || {
        if let Ok(ckpt) = Checkpoint::parse(bytes) {
            let _ = ftiff::view::text("mutant.fti", bytes.len() as u64, &ckpt);
            let _ = ftiff::view::json(&ckpt).to_string();
            let _ = ftiff::view::doc_format(&ckpt.layout());
        }
    })?;
    no_panic("RsedFile::parse and its views", || {
        if let Ok(rsed) = RsedFile::parse(bytes) {
            let _ = ftiff::view::rsed_text("mutant.fti", bytes, &rsed);
            let _ = ftiff::view::rsed_json(&rsed).to_string();
        }
    })?;
    no_panic("unverified read_var and diff", || {
        if let Ok(ckpt) = Checkpoint::parse(bytes) {
            for v in ckpt.vars() {
                let _ = ckpt.read_var(v.id);
            }
            let _ = ftiff::diff::diff(&original.ckpt(), &ckpt);
            let _ = ftiff::diff::diff(&ckpt, &original.ckpt());
        }
    })
}

/// Checks an accepted mutant against its original: same variables, same bytes, and `diff`
/// both ways finds every variable unchanged.
fn same_as_original(original: &Input, ckpt: &Checkpoint<'_>) -> Result<(), String> {
    if ckpt.vars() != original.vars.as_slice() {
        let show = |vars: &[VarInfo]| -> String {
            let list: Vec<String> = vars
                .iter()
                .map(|v| {
                    let removed = if v.removed { " removed" } else { "" };
                    format!("id {} idx {}: {} bytes{removed}", v.id, v.idx, v.size)
                })
                .collect();
            format!("[{}]", list.join("; "))
        };
        return Err(format!(
            "accepted with other variables: {} instead of {}",
            show(ckpt.vars()),
            show(&original.vars)
        ));
    }
    for (v, expected) in original.vars.iter().zip(&original.data) {
        match ckpt.read_var(v.id) {
            Ok(got) if got == *expected => {}
            Ok(got) => {
                let at = got.iter().zip(expected).position(|(a, b)| a != b);
                return Err(format!(
                    "accepted, but variable {} reads differently (first difference at byte {at:?})",
                    v.id
                ));
            }
            Err(e) => {
                return Err(format!(
                    "accepted, but variable {} cannot be read: {e}",
                    v.id
                ))
            }
        }
    }
    let live = original.vars.iter().filter(|v| !v.removed).count();
    for (dir, diff) in [
        (
            "original -> mutant",
            ftiff::diff::diff(&original.ckpt(), ckpt),
        ),
        (
            "mutant -> original",
            ftiff::diff::diff(ckpt, &original.ckpt()),
        ),
    ] {
        let diff = diff.map_err(|e| format!("accepted, but diff {dir} fails: {e}"))?;
        let changed: Vec<_> = diff
            .iter()
            .filter(|d| !matches!(d.change, Change::Unchanged { .. }))
            .collect();
        if !changed.is_empty() || diff.len() != live {
            return Err(format!("accepted, but diff {dir} reports {changed:?}"));
        }
    }
    Ok(())
}

/// Whether the file checksum is the only problem `verify` finds in `bytes`.
fn checksum_only(bytes: &[u8]) -> bool {
    let Ok(ckpt) = Checkpoint::parse(bytes) else {
        return false;
    };
    let problems = ckpt.verify(&|_| {});
    let mut fields = problems.iter().filter_map(|p| match p.kind() {
        ErrorKind::TrailingBytes { .. } => None,
        ErrorKind::HashMismatch { record, field, .. } => Some(format!("{record}.{field}")),
        other => Some(other.to_string()),
    });
    fields.next().as_deref() == Some("FB.checksum") && fields.next().is_none()
}

/// Checks one mutant, written to `path`. `Err` is a violation of the promise.
pub fn check(original: &Input, bytes: &[u8], path: &Path) -> Result<Outcome, String> {
    std::fs::write(path, bytes).map_err(|e| format!("writing {}: {e}", path.display()))?;
    inspect_all(original, bytes)?;
    let map = ftiff::MappedFile::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let opened = no_panic("Checkpoint::verified", || {
        Checkpoint::verified(&map, &|_| {})
    })?;
    match opened {
        Err(e) => Ok(Outcome::Refused {
            label: error_label(&e),
            checksum_only: checksum_only(bytes),
        }),
        Ok(ckpt) => no_panic("reading an accepted mutant", || {
            same_as_original(original, &ckpt)
        })?
        .map(|()| Outcome::AcceptedIdentical),
    }
}

// ---------------------------------------------------------------------------------------------
// Time bound

/// Ends the process with a violation when one mutant runs longer than the bound (a hang never
/// returns to be measured).
pub struct Watchdog {
    slot: Arc<Mutex<Option<(Instant, String)>>>,
    bound: Duration,
}

impl Watchdog {
    /// Starts the watching thread.
    pub fn start(bound: Duration) -> Self {
        let slot: Arc<Mutex<Option<(Instant, String)>>> = Arc::new(Mutex::new(None));
        let watched = Arc::clone(&slot);
        std::thread::spawn(move || loop {
            std::thread::sleep(Duration::from_millis(100));
            let guard = watched.lock().unwrap_or_else(|e| e.into_inner());
            if let Some((start, what)) = guard.as_ref() {
                if start.elapsed() > bound {
                    eprintln!("VIOLATION: {what}: still running after {bound:?} (hang)");
                    std::process::exit(1);
                }
            }
        });
        Watchdog { slot, bound }
    }

    /// Watches the work described by `what` from now on.
    pub fn arm(&self, what: String) {
        *self.slot.lock().unwrap_or_else(|e| e.into_inner()) = Some((Instant::now(), what));
    }

    /// Stops watching.
    pub fn disarm(&self) {
        *self.slot.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }

    /// The bound.
    pub fn bound(&self) -> Duration {
        self.bound
    }
}

// ---------------------------------------------------------------------------------------------
// The campaign

/// Counts for one kind of mutation.
#[derive(Debug, Default, Clone, Copy)]
pub struct KindStats {
    /// Mutants made.
    pub total: u64,
    /// Refused by `Checkpoint::verified`.
    pub refused: u64,
    /// Accepted with identical variables.
    pub accepted: u64,
    /// Of those, mutants whose bytes equal the original's.
    pub noop: u64,
}

/// What a campaign found.
#[derive(Debug, Default)]
pub struct Summary {
    /// Mutants checked.
    pub total: u64,
    /// Inputs, by name.
    pub inputs: Vec<String>,
    /// Per kind of mutation.
    pub by_kind: BTreeMap<&'static str, KindStats>,
    /// Per cheap-hash recomputation.
    pub by_rehash: BTreeMap<Rehash, KindStats>,
    /// Refused mutants by the first problem `open_verified` reported.
    pub refused_by: BTreeMap<String, u64>,
    /// The same, per kind of mutation.
    pub refused_by_kind: BTreeMap<&'static str, BTreeMap<String, u64>>,
    /// Refused mutants that only the file checksum told from the original.
    pub checksum_only: u64,
    /// Violations, each described in full.
    pub violations: Vec<String>,
    /// The slowest mutant and its time.
    pub slowest: (Duration, String),
    /// Wall time of the whole campaign (inputs included).
    pub elapsed: Duration,
}

impl Summary {
    /// Mutants accepted with identical variables.
    pub fn accepted(&self) -> u64 {
        self.by_kind.values().map(|k| k.accepted).sum()
    }

    /// Mutants refused.
    pub fn refused(&self) -> u64 {
        self.by_kind.values().map(|k| k.refused).sum()
    }

    /// Accepted mutants whose bytes equal the original's.
    pub fn noops(&self) -> u64 {
        self.by_kind.values().map(|k| k.noop).sum()
    }

    fn record(&mut self, m: &Mutant, noop: bool, outcome: &Result<Outcome, String>) {
        self.total += 1;
        for stats in [
            self.by_kind.entry(m.kind).or_default(),
            self.by_rehash.entry(m.rehash).or_default(),
        ] {
            stats.total += 1;
            match outcome {
                Ok(Outcome::Refused { .. }) => stats.refused += 1,
                Ok(Outcome::AcceptedIdentical) => {
                    stats.accepted += 1;
                    stats.noop += u64::from(noop);
                }
                Err(_) => {}
            }
        }
        if let Ok(Outcome::Refused {
            label,
            checksum_only,
        }) = outcome
        {
            self.checksum_only += u64::from(*checksum_only);
            *self.refused_by.entry(label.clone()).or_default() += 1;
            *self
                .refused_by_kind
                .entry(m.kind)
                .or_default()
                .entry(label.clone())
                .or_default() += 1;
        }
    }

    /// The report printed at the end of a campaign.
    pub fn report(&self, seed: u64) -> String {
        use std::fmt::Write as _;
        let mut out = String::new();
        let _ = writeln!(
            out,
            "FTI-FF mutation campaign: {} mutants, seed {seed}, {} inputs",
            self.total,
            self.inputs.len()
        );
        let _ = writeln!(out, "inputs: {}", self.inputs.join(", "));
        let _ = writeln!(
            out,
            "\n{:<22} {:>8} {:>8} {:>10} {:>7}  most frequent refusal",
            "mutation", "mutants", "refused", "accepted*", "no-op"
        );
        let row = |out: &mut String, name: &str, k: &KindStats, top: String| {
            let _ = writeln!(
                out,
                "{name:<22} {:>8} {:>8} {:>10} {:>7}  {top}",
                k.total, k.refused, k.accepted, k.noop
            );
        };
        for (kind, k) in &self.by_kind {
            let top = self
                .refused_by_kind
                .get(kind)
                .and_then(|r| r.iter().max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0))))
                .map_or(String::new(), |(label, n)| format!("{label} ({n})"));
            row(&mut out, kind, k, top);
        }
        let _ = writeln!(out, "\ncheap hashes recomputed:");
        for (rehash, k) in &self.by_rehash {
            row(&mut out, rehash.name(), k, String::new());
        }
        let _ = writeln!(out, "\nrefused by (first problem open_verified reports):");
        let mut reasons: Vec<(&String, &u64)> = self.refused_by.iter().collect();
        reasons.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        for (label, n) in reasons {
            let _ = writeln!(out, "  {n:>8}  {label}");
        }
        let _ = writeln!(
            out,
            "\nrefused: {}; accepted with identical variables and bytes*: {} (of which {} byte-identical no-ops)",
            self.refused(),
            self.accepted(),
            self.noops()
        );
        let _ = writeln!(
            out,
            "refused only by the file checksum (valid structure, every cheap hash matching): {}",
            self.checksum_only
        );
        let _ = writeln!(out, "violations: {}", self.violations.len());
        let _ = writeln!(
            out,
            "time: {:.1} s; slowest mutant {:.1} ms ({})",
            self.elapsed.as_secs_f64(),
            self.slowest.0.as_secs_f64() * 1e3,
            self.slowest.1
        );
        out
    }
}

/// Runs mutants `indices` of the campaign with `seed` in `work` (a directory the campaign may
/// fill). Each violation is passed to `on_violation` as it is found.
pub fn run(
    seed: u64,
    indices: std::ops::Range<u64>,
    work: &Path,
    bound: Duration,
    on_violation: &mut dyn FnMut(&str),
) -> Result<Summary, String> {
    let start = Instant::now();
    // One line per panic (the violation report says which mutant it was).
    let previous_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|info| eprintln!("{info}")));
    let summary = campaign(seed, indices, work, bound, on_violation);
    std::panic::set_hook(previous_hook);
    let mut summary = summary?;
    summary.elapsed = start.elapsed();
    Ok(summary)
}

fn campaign(
    seed: u64,
    indices: std::ops::Range<u64>,
    work: &Path,
    bound: Duration,
    on_violation: &mut dyn FnMut(&str),
) -> Result<Summary, String> {
    let inputs = inputs(work)?;
    let watchdog = Watchdog::start(bound);
    let path = work.join("mutant.fti");
    let mut summary = Summary {
        inputs: inputs.iter().map(|i| i.name.clone()).collect(),
        ..Summary::default()
    };
    for index in indices {
        let m = make(seed, index, &inputs);
        let original = &inputs[m.input];
        let what = m.describe(&inputs);
        watchdog.arm(what.clone());
        let t = Instant::now();
        let mut outcome = check(original, &m.bytes, &path);
        let took = t.elapsed();
        watchdog.disarm();
        if outcome.is_ok() && took > bound {
            outcome = Err(format!("took {took:?}, over the bound of {bound:?}"));
        }
        if took > summary.slowest.0 {
            summary.slowest = (took, what.clone());
        }
        summary.record(&m, m.bytes == original.bytes, &outcome);
        if let Err(problem) = &outcome {
            let line = format!("VIOLATION: {what}: {problem}");
            on_violation(&line);
            summary.violations.push(line);
        }
    }
    Ok(summary)
}
