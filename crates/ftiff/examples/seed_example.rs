//! Writes the seven checkpoints of the FTI-FF design document's example (sizes divided by
//! 1000) into a directory, one file per checkpoint, as FTI 1.1 would with `ckpt_io = 3`:
//! variables grow, appear and shrink, and the containers follow.
//!
//! Usage: `cargo run -p ftiff --example seed_example -- DIR`

use std::path::PathBuf;

use ftiff::{Checkpoint, Layout, VarSize, WriteOptions};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = PathBuf::from(std::env::args().nth(1).ok_or("usage: seed_example DIR")?);
    std::fs::create_dir_all(&dir)?;
    // (id, number of int32 elements) in protect order, per checkpoint.
    let steps: [&[(i32, usize)]; 7] = [
        &[(1, 1000), (2, 2000), (3, 3000)],
        &[(1, 1000), (2, 2000), (3, 3000), (4, 4000)],
        &[(1, 1000), (2, 6000), (3, 7000), (4, 4000)],
        &[(1, 1000), (2, 6000), (3, 7000), (4, 4000), (5, 5000)],
        &[(1, 1000), (2, 5000), (3, 6000), (4, 4000), (5, 5000)],
        &[(1, 1000), (2, 8000), (3, 9000), (4, 4000), (5, 5000)],
        &[(1, 1000), (2, 1000), (3, 2000), (4, 4000), (5, 5000)],
    ];
    let mut layout: Option<Layout> = None;
    for (k, step) in steps.iter().enumerate() {
        let buffers: Vec<Vec<u8>> = step
            .iter()
            .map(|&(id, n)| {
                (0..n)
                    .flat_map(|j| (id * 1_000_003 + j as i32).to_le_bytes())
                    .collect()
            })
            .collect();
        let sizes: Vec<VarSize> = step
            .iter()
            .zip(&buffers)
            .map(|(&(id, _), b)| VarSize {
                id,
                size: b.len() as u64,
            })
            .collect();
        let next = Layout::plan(layout.as_ref(), &sizes)?;
        let data: Vec<&[u8]> = buffers.iter().map(Vec::as_slice).collect();
        let path = dir.join(format!("Ckpt{}-Rank0.fti", k + 1));
        let fb = ftiff::write_path(&path, &next, &data, &WriteOptions::default())?;
        println!(
            "{}: {} bytes, {} blocks, checksum {}",
            path.display(),
            fb.fs,
            next.blocks.len(),
            fb.checksum_display()
        );
        // A restarted run continues from the structure stored in the file.
        let bytes = std::fs::read(&path)?;
        layout = Some(Checkpoint::parse(&bytes)?.layout());
    }
    Ok(())
}
