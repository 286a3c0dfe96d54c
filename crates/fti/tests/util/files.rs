//! What a directory tree holds, to check that a refused operation wrote nothing.

pub use test_support::files_below;
