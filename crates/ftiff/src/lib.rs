//! FTI-FF, the self-describing checkpoint file format of FTI 1.1, byte-compatible with files
//! written by the original C library.
//!
//! A file is a 96-byte file block (FB: sizes, file checksum, self-hash) followed by variable
//! chunk blocks. Each block holds a 12-byte block meta data record (BMD), one 64-byte variable
//! chunk meta data record (VMD) per container, then the containers. Containers are added when a
//! variable grows, partly emptied when it shrinks, and never moved. See `docs/ftiff-format.md`.
//!
//! - [`FileName`]: `Ckpt<id>-Rank<r>.fti`, `Pcof` and `RSed` names.
//! - [`raw`]: the records, encoded and decoded little-endian at named offsets.
//! - [`hash`]: chunk MD5, file checksum, FB self-hash.
//! - [`Layout::plan`]: the container planner.
//! - [`mod@write`]: streaming writer.
//! - [`Checkpoint`]: validating reader, verifier and variable reassembly; [`RsedFile`] for L3
//!   trailers.
//! - [`l3`]: the L3 Reed-Solomon code, the `RSed` trailer and the lost last byte.
//! - [`view`], [`diff`]: what the `fti` tool prints.
//!
//! This crate holds no policy and no file-system effect besides opening files to read them:
//! directories, levels, durability and the files of an L3 group belong to the runtime (`fti`).
//! The writer writes to a [`Sink`] and never syncs.
#![deny(missing_docs)]

pub mod blocks;
pub mod diff;
mod error;
pub mod hash;
pub mod l3;
mod layout;
mod name;
pub mod raw;
mod read;
mod rsed;
mod sink;
pub mod view;
pub mod write;

pub use blocks::{BlockHash, Blocking, Integrity};
pub use error::{Error, ErrorKind, Record, Result};
pub use layout::{Block, Chunk, DataOffset, FileOffset, Layout, VarSize, MAX_SIZE};
pub use name::{FileKind, FileName};
pub use read::{map_at, open_regular, Checkpoint, ChunkRecord, MappedFile, VarInfo};
pub use rsed::RsedFile;
pub use sink::Sink;
pub use write::{
    update_file, write_file, write_file_streamed, write_file_with_progress, write_path, BlockTable,
    Incremental, PutPiece, WriteOptions, Written,
};
