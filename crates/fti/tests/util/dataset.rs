//! The dataset of the level vectors (`tests/fixtures/fti/levels`): element `j` of variable `id`
//! written by rank `r` is `id * 1000003 + j + r * 100000000` (int32). Checkpoint 1: id 1 = 1000 +
//! 250 r ints, id 2 = 2000 ints; checkpoint 2: id 2 grows to 3000 + 100 r ints and id 3 = 500 ints
//! is new.

/// The values of variable `id` with `n` elements on `rank`.
pub fn ints(id: i32, n: usize, rank: u32) -> Vec<i32> {
    (0..n)
        .map(|j| id * 1_000_003 + j as i32 + rank as i32 * 100_000_000)
        .collect()
}

/// `(id, element count)` of every variable of checkpoint `ckpt` (1 or 2) for `rank`.
pub fn sizes(ckpt: i32, rank: u32) -> Vec<(i32, usize)> {
    let r = rank as usize;
    match ckpt {
        1 => vec![(1, 1000 + 250 * r), (2, 2000)],
        _ => vec![(1, 1000 + 250 * r), (2, 3000 + 100 * r), (3, 500)],
    }
}

/// The variables of checkpoint `ckpt` for `rank`, filled.
pub fn data(ckpt: i32, rank: u32) -> Vec<(i32, Vec<i32>)> {
    sizes(ckpt, rank)
        .into_iter()
        .map(|(id, n)| (id, ints(id, n, rank)))
        .collect()
}
