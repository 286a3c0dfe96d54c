//! Helpers shared by the integration tests: the fixture tree, the seed example's history, a
//! counting allocator and a way to run one test in a process of its own.

use std::alloc::{GlobalAlloc, Layout as AllocLayout, System};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use ftiff::VarSize;

/// Counts live heap bytes and their peak, to bound what parsing hostile input allocates.
struct CountingAlloc;

/// Live heap bytes of the process.
pub static LIVE: AtomicUsize = AtomicUsize::new(0);
/// Peak of [`LIVE`] since it was last reset.
pub static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: delegates every call to the system allocator unchanged; only counts sizes.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: AllocLayout) -> *mut u8 {
        let live = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
        PEAK.fetch_max(live, Ordering::Relaxed);
        // SAFETY: same contract as ours.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: AllocLayout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

pub use test_support::in_own_process;

/// A progress callback that ignores the progress.
pub fn no_progress(_: u64) {}

/// Root of the FTI-FF test vectors.
pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/fti")
}

/// Every file below `dir` whose name ends with `suffix`, sorted.
pub fn files_with_suffix(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.to_string_lossy().ends_with(suffix) {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// Every FTI-FF checkpoint file (Rank, Pcof, RSed, seed) of the format's vectors: named
/// `Ckpt…` (or `ckpt…`), outside the trees of FTI's POSIX files (whose `Ckpt…` files are raw
/// data) and of FTI's runs with heads (`head-…`: the runtime's and tool's fixtures, without
/// the expected views the vectors have). Config and meta-data files (`config.fti`,
/// `Topology.fti`, `sector…`) are not checkpoints.
pub fn all_fti_files() -> Vec<PathBuf> {
    files_with_suffix(&fixtures(), ".fti")
        .into_iter()
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy().to_lowercase();
            let runtime_tree = p.components().any(|c| {
                let c = c.as_os_str().to_string_lossy();
                c.starts_with("posix-") || c.starts_with("head-")
            });
            name.starts_with("ckpt") && !runtime_tree
        })
        .collect()
}

/// Element `j` of variable `id` written by rank `rank`, as in every vector.
pub fn value(id: i32, j: usize, rank: i32) -> i32 {
    id * 1_000_003 + j as i32 + rank * 100_000_000
}

/// The int32 LE bytes of variable `id` with `count` elements written by `rank`.
pub fn var_bytes(id: i32, count: usize, rank: i32) -> Vec<u8> {
    (0..count)
        .flat_map(|j| value(id, j, rank).to_le_bytes())
        .collect()
}

/// The seed example's seven steps: (id, element count) in protect order, counts at full size.
pub fn seed_steps() -> Vec<Vec<(i32, u64)>> {
    let s = |v: &[(i32, u64)]| v.iter().map(|&(id, n)| (id, n * 1000)).collect::<Vec<_>>();
    vec![
        s(&[(1, 1000), (2, 2000), (3, 3000)]),
        s(&[(1, 1000), (2, 2000), (3, 3000), (4, 4000)]),
        s(&[(1, 1000), (2, 6000), (3, 7000), (4, 4000)]),
        s(&[(1, 1000), (2, 6000), (3, 7000), (4, 4000), (5, 5000)]),
        s(&[(1, 1000), (2, 5000), (3, 6000), (4, 4000), (5, 5000)]),
        s(&[(1, 1000), (2, 8000), (3, 9000), (4, 4000), (5, 5000)]),
        s(&[(1, 1000), (2, 1000), (3, 2000), (4, 4000), (5, 5000)]),
    ]
}

/// Byte sizes of a seed step with element counts divided by `scale`.
pub fn step_sizes(step: &[(i32, u64)], scale: u64) -> Vec<VarSize> {
    step.iter()
        .map(|&(id, n)| VarSize {
            id,
            size: n / scale * 4,
        })
        .collect()
}

/// The rank whose data a file holds: `Rank<r>` is r's own, `Pcof<r>` is the left neighbour's
/// (group of 4 in the level vectors); seed files are rank 0.
pub fn data_rank(path: &Path) -> i32 {
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    let number = |tag: &str| -> Option<i32> {
        let rest = name.split_once(tag)?.1;
        rest.trim_end_matches(".fti").parse().ok()
    };
    if let Some(r) = number("-Rank") {
        r
    } else if let Some(r) = number("-Pcof") {
        (r + 3) % 4
    } else {
        0
    }
}

/// The section of a structure view from the BEGIN line to the END line, inclusive.
pub fn structure_section(view: &str) -> &str {
    let start = view
        .find("------------------- DATASTRUCTURE BEGIN")
        .expect("BEGIN line");
    let end_marker = "------------------- DATASTRUCTURE END ---------------------\n";
    let end = view.find(end_marker).expect("END line") + end_marker.len();
    &view[start..end]
}
