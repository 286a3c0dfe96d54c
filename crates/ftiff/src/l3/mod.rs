//! Level 3: FTI 1.1's Reed-Solomon code across a group of k ranks (`docs/ftiff-format.md`, *L3
//! Reed-Solomon*).
//!
//! Each rank keeps its Rank file (with `FB.maxFs` = the group's largest file) and an `RSed`
//! file: `maxFs` bytes of code followed by a 96-byte file block as a trailer. Any k of the
//! group's 2k files rebuild the others.
//!
//! - [`gf`]: GF(2^16) with FTI's polynomial 0x1100B.
//! - [`Matrix`]: bulk products of matrices with 16-bit little-endian word buffers (AVX2 when
//!   available).
//! - [`Code`]: the Cauchy matrix `M[i][j] = 1 / (i XOR (k + j))`, encoders and decoders, in
//!   memory.
//! - [`rsed_trailer`], [`restore_last_byte`]: the `RSed` trailer, and the last byte the code
//!   loses.
//!
//! Encoding and rebuilding a group's files on disk is the runtime's (`fti::l3::group`).
//!
//! FTI 1.1 cuts the code to `maxFs` bytes, which drops the high byte of the last word when
//! `maxFs` is odd, and its decoder then gets the last byte of a lost file of that size wrong.
//! The files written here are FTI's, byte for byte; the rebuild restores that byte from the
//! rebuilt file's own hashes ([`restore_last_byte`]).

mod code;
pub mod gf;
mod matrix;
mod trailer;

pub use code::{apply, Code, Decoder, Shard, CHUNK};
pub use matrix::Matrix;
pub use trailer::{restore_last_byte, rsed_trailer};
