//! Writing traces.
