//! Human and machine views of a checkpoint file, shared by the `fti` tool and the tests.

use std::fmt::Write as _;

use serde_json::{json, Value};

use crate::hash::to_hex;
use crate::layout::Layout;
use crate::raw::fb;
use crate::read::Checkpoint;
use crate::rsed::RsedFile;

const BEGIN: &str = "------------------- DATASTRUCTURE BEGIN -------------------\n";
const END: &str = "------------------- DATASTRUCTURE END ---------------------\n";
const INDENT: &str = "                 ";

/// The seed document's layout of a file's structure (no FB, no offsets, no hashes). It depends
/// only on the layout, so it can be rendered for a planned layout as well.
pub fn doc_format(layout: &Layout) -> String {
    let mut out = String::from(BEGIN);
    out.push('\n');
    for (b, block) in layout.blocks.iter().enumerate() {
        block_header(
            &mut out,
            b,
            block.chunks.len(),
            block.dbsize(),
            block.meta_size(),
            None,
        );
        for (v, c) in block.chunks.iter().enumerate() {
            let _ = writeln!(out, "         Var-id: {v}");
            chunk_fields(&mut out, c);
            let _ = writeln!(out, "{INDENT}[hash not printed]\n");
        }
    }
    out.push('\n');
    out.push_str(END);
    out
}

fn block_header(
    out: &mut String,
    b: usize,
    numvars: usize,
    dbsize: u64,
    meta: u64,
    offset: Option<u64>,
) {
    let _ = writeln!(out, "    DataBase-id: {b}");
    if let Some(offset) = offset {
        let _ = writeln!(out, "{INDENT}[file offset: {offset}]");
    }
    let _ = writeln!(out, "{INDENT}numvars: {numvars}");
    let _ = writeln!(out, "{INDENT}dbsize: {dbsize}");
    let _ = writeln!(out, "{INDENT}[size metadata: {meta}]\n");
}

fn chunk_fields(out: &mut String, c: &crate::layout::Chunk) {
    let _ = write!(
        out,
        "{INDENT}id: {}\n{INDENT}idx: {}\n{INDENT}containerid: {}\n{INDENT}hascontent: {}\n\
         {INDENT}dptr: {}\n{INDENT}fptr: {}\n{INDENT}chunksize: {}\n{INDENT}containersize: {}\n",
        c.id,
        c.idx,
        c.container_id,
        c.has_content,
        c.dptr.0,
        c.fptr.0,
        c.chunk_size,
        c.container_size
    );
}

fn fb_fields(out: &mut String, f: &crate::raw::FileBlock) {
    let _ = write!(
        out,
        "{INDENT}checksum: {}\n{INDENT}myHash: {}\n{INDENT}ckptSize: {}\n{INDENT}fs: {}\n\
         {INDENT}maxFs: {}\n{INDENT}ptFs: {}\n{INDENT}timestamp: {}\n",
        f.checksum_display(),
        to_hex(&f.my_hash),
        f.ckpt_size,
        f.fs,
        f.max_fs,
        f.pt_fs,
        f.timestamp
    );
}

/// The full readable view: FB, every record with its file offset and hash, then the
/// variables and notes on anything unusual (garbage padding, trailing bytes).
pub fn text(name: &str, len: u64, ckpt: &Checkpoint) -> String {
    let mut out = format!("# {name}  ({len} bytes)\n{BEGIN}\n    FB:\n");
    fb_fields(&mut out, &ckpt.fb);
    out.push('\n');
    let layout = ckpt.layout();
    for (b, (block, records)) in layout.blocks.iter().zip(&ckpt.blocks).enumerate() {
        block_header(
            &mut out,
            b,
            records.len(),
            block.dbsize(),
            block.meta_size(),
            Some(block.offset.0),
        );
        for (v, r) in records.iter().enumerate() {
            let _ = writeln!(
                out,
                "         Var-id: {v}\n{INDENT}[file offset: {}]",
                r.vmd_offset
            );
            chunk_fields(&mut out, &r.chunk);
            let _ = writeln!(out, "{INDENT}hash: {}\n", to_hex(&r.hash));
        }
    }
    out.push('\n');
    out.push_str(END);
    out.push_str("    VARIABLES:\n");
    for var in ckpt.vars() {
        let containers = ckpt.records_of(var.idx).count();
        let what = if var.removed {
            "removed, containers kept empty"
        } else {
            "bytes"
        };
        let size = if var.removed {
            String::new()
        } else {
            format!("{} ", var.size)
        };
        let _ = writeln!(
            out,
            "    variable id {} (idx {}): {size}{what} in {containers} container(s)",
            var.id, var.idx
        );
    }
    if let crate::blocks::Integrity::Fast { block_log2 } = ckpt.integrity {
        let _ = writeln!(
            out,
            "    NOTE: fti-rs fast-integrity file (xxh3-128 blocks of {} bytes); FTI 1.1 cannot read it",
            1u64 << block_log2
        );
    }
    for (b, records) in ckpt.blocks.iter().enumerate() {
        for (v, r) in records.iter().enumerate() {
            if r.padding != [0; 3] {
                let _ = writeln!(
                    out,
                    "    NOTE: block {b} var {v} (id {}): VMD padding bytes 13..15 = {} (non-zero)",
                    r.chunk.id,
                    to_hex(&r.padding)
                );
            }
        }
    }
    if ckpt.trailing > 0 {
        let _ = writeln!(
            out,
            "    NOTE: {} byte(s) after FB.fs (ignored by FTI)",
            ckpt.trailing
        );
    }
    out
}

/// The readable view of an `RSed` file: its trailer FB.
pub fn rsed_text(name: &str, bytes: &[u8], rsed: &RsedFile) -> String {
    let mut out = format!(
        "# {name}  ({} bytes, RSed)\n    FB (trailer at offset {}):\n",
        bytes.len(),
        rsed.trailer_offset
    );
    fb_fields(&mut out, &rsed.fb);
    let pad_at = rsed.trailer_offset as usize + fb::PADDING;
    let padding = bytes.get(pad_at..pad_at + 7).unwrap_or_default();
    if padding.iter().any(|&b| b != 0) {
        let _ = writeln!(
            out,
            "    NOTE: RSed trailer padding bytes 49..55 = {} (non-zero)",
            to_hex(padding)
        );
    }
    out
}

fn fb_json(f: &crate::raw::FileBlock) -> Value {
    json!({
        "checksum": f.checksum_display(),
        "myHash": to_hex(&f.my_hash),
        "ckptSize": f.ckpt_size,
        "fs": f.fs,
        "maxFs": f.max_fs,
        "ptFs": f.pt_fs,
        "timestamp": f.timestamp,
    })
}

/// The JSON view: `{"fb": {...}, "blocks": [{"offset", "numvars", "dbsize", "vars": [...]}]}`.
pub fn json(ckpt: &Checkpoint) -> Value {
    let layout = ckpt.layout();
    let blocks: Vec<Value> = layout
        .blocks
        .iter()
        .zip(&ckpt.blocks)
        .map(|(block, records)| {
            let vars: Vec<Value> = records
                .iter()
                .map(|r| {
                    let c = &r.chunk;
                    json!({
                        "id": c.id,
                        "idx": c.idx,
                        "containerid": c.container_id,
                        "hascontent": c.has_content,
                        "dptr": c.dptr.0,
                        "fptr": c.fptr.0,
                        "chunksize": c.chunk_size,
                        "containersize": c.container_size,
                        "hash": to_hex(&r.hash),
                    })
                })
                .collect();
            json!({
                "offset": block.offset.0,
                "numvars": records.len(),
                "dbsize": block.dbsize(),
                "vars": vars,
            })
        })
        .collect();
    let mut out = json!({ "fb": fb_json(&ckpt.fb), "blocks": blocks });
    if let crate::blocks::Integrity::Fast { block_log2 } = ckpt.integrity {
        out["integrity"] =
            json!({ "mode": "fast", "hash": "xxh3-128", "blockSize": 1u64 << block_log2 });
    }
    out
}

/// The JSON view of an `RSed` file: its trailer FB, the trailer's offset, and no blocks.
pub fn rsed_json(rsed: &RsedFile) -> Value {
    json!({ "fb": fb_json(&rsed.fb), "rsed": { "trailerOffset": rsed.trailer_offset }, "blocks": [] })
}
