//! Helpers shared by the integration tests.
#![allow(dead_code)]

pub mod dataset;
pub mod files;
pub mod trees;
pub mod unwritable;

use std::path::Path;

use fti::Config;

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
