//! Helpers shared by the integration tests.
#![allow(dead_code)]

pub mod dataset;
pub mod files;
pub mod heads;
pub mod scale;
pub mod trees;
pub mod unwritable;

use std::path::Path;

use fti::{Comm, Config, Threads};

/// A run's directories under `root` (`Local`, `Global`, `Meta`), every message printed: the
/// base the tests add their settings to.
pub fn config(root: &Path) -> Config {
    Config {
        ckpt_dir: root.join("Local"),
        glbl_dir: root.join("Global"),
        meta_dir: root.join("Meta"),
        verbosity: 3,
        ..Config::default()
    }
}

/// Runs `f` on `n` ranks, each a thread of this process (`fti::Threads`); results by rank.
pub fn on_ranks<T: Send>(n: u32, f: impl Fn(Box<dyn Comm>) -> T + Sync) -> Vec<T> {
    std::thread::scope(|s| {
        let handles: Vec<_> = Threads::new(n, "host")
            .into_iter()
            .map(|c| {
                let f = &f;
                s.spawn(move || f(Box::new(c)))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    })
}
