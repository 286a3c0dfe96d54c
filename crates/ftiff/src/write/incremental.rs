//! Incremental checkpoints: one variable at a time, the file block last.

use super::*;

/// Writes a checkpoint one variable at a time (incremental checkpointing, FTI's iCP): each
/// variable's containers are written as soon as it is added, so the I/O of one variable
/// overlaps the application's work on the next; [`Incremental::finish`] then writes the meta
/// data and the file block.
#[derive(Debug)]
pub struct Incremental {
    layout: Layout,
    opts: WriteOptions,
    /// `VMD.hash` per container in file order, once its variable is added.
    hashes: Vec<Option<Digest>>,
    added: Vec<bool>,
    bytes_written: u64,
}

impl Incremental {
    /// Starts an incremental write of `layout` (checked as the reader would check it).
    pub fn new(layout: Layout, opts: WriteOptions) -> Result<Self> {
        crate::read::check_layout(&layout)?;
        let vars = layout.vars();
        let added = (0..vars.len() as u32)
            .map(|idx| layout.is_removed(idx))
            .collect();
        let hashes = layout
            .chunks()
            .map(|c| {
                layout
                    .is_removed(c.idx)
                    .then(|| empty_chunk_hash(c, opts.integrity))
            })
            .collect();
        Ok(Incremental {
            layout,
            opts,
            hashes,
            added,
            bytes_written: 0,
        })
    }

    /// The layout being written.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// Whether the variable at `idx` has been added.
    pub fn is_added(&self, idx: u32) -> bool {
        self.added.get(idx as usize).copied().unwrap_or(false)
    }

    /// Writes the containers of the variable at protect position `idx` from `data`.
    pub fn add(&mut self, file: &(impl Sink + ?Sized), idx: u32, data: &[u8]) -> Result<()> {
        let vars = self.layout.vars();
        let var = vars.get(idx as usize).ok_or_else(|| {
            Error::new(ErrorKind::Plan {
                idx: idx as usize,
                what: "no variable at this protect position".into(),
            })
        })?;
        if self.is_added(idx) {
            return Err(Error::new(ErrorKind::Plan {
                idx: idx as usize,
                what: format!("variable {} was already added", var.id),
            }));
        }
        if var.size != data.len() as u64 {
            return Err(Error::new(ErrorKind::SizeMismatch {
                id: var.id,
                expected: var.size,
                actual: data.len() as u64,
            }));
        }
        for (i, c) in self
            .layout
            .chunks()
            .enumerate()
            .filter(|(_, c)| c.idx == idx)
        {
            let chunk = if c.chunk_size == 0 {
                &[][..]
            } else {
                &data[c.dptr.0 as usize..(c.dptr.0 + c.chunk_size) as usize]
            };
            write_container_range(file, c, chunk, 0, c.container_size)?;
            self.bytes_written += c.container_size;
            self.hashes[i] = Some(match self.opts.integrity {
                Integrity::Md5 => hash::md5(chunk),
                Integrity::Fast { block_log2 } => {
                    let blocks =
                        blocks::fast_blocking(block_log2).container_hashes(chunk, c.container_size);
                    blocks::fast_chunk_hash(c.chunk_size, c.container_size, &blocks)
                }
            });
        }
        self.added[idx as usize] = true;
        Ok(())
    }

    /// Writes the meta data and the file block. Every protected variable must have been
    /// added. In MD5 mode the file checksum needs every byte in file order, so the data are
    /// read back from the file (from the page cache, normally) in one serial MD5 pass.
    pub fn finish(
        self,
        file: &(impl Sink + ?Sized),
        progress: &(dyn Fn(u64) + Sync),
    ) -> Result<Written> {
        if let Some(idx) = self.added.iter().position(|a| !a) {
            let id = self.layout.vars()[idx].id;
            return Err(Error::new(ErrorKind::Plan {
                idx,
                what: format!("variable {id} was never added to the incremental checkpoint"),
            }));
        }
        let hashes: Vec<Digest> = self
            .hashes
            .into_iter()
            .map(|h| h.unwrap_or(hash::EMPTY_MD5))
            .collect();
        let metas = write_metas(file, &self.layout, &hashes)?;
        let fs = self.layout.file_size();
        let checksum = match self.opts.integrity {
            Integrity::Fast { .. } => blocks::fast_checksum(
                &self.opts.integrity.fb_mode(),
                metas.iter().map(Vec::as_slice),
            ),
            Integrity::Md5 => {
                let mut md5 = Md5Stream::default();
                let mut buf = vec![0u8; 8 << 20];
                let mut at = crate::raw::fb::SIZE as u64;
                while at < fs {
                    let n = (fs - at).min(buf.len() as u64) as usize;
                    file.read_exact_at(&mut buf[..n], at)?;
                    md5.update(&buf[..n]);
                    at += n as u64;
                    progress(at);
                }
                md5.finish()
            }
        };
        let fb = finish_file(
            file,
            &self.layout,
            &checksum,
            self.opts.integrity,
            &self.opts,
        )?;
        let meta_bytes: u64 = metas.iter().map(|m| m.len() as u64).sum();
        Ok(Written {
            fb,
            table: None,
            bytes_written: self.bytes_written + meta_bytes + crate::raw::fb::SIZE as u64,
        })
    }
}

/// The hash of a container without data (a removed variable's): its fill is all zeros.
fn empty_chunk_hash(c: &Chunk, integrity: Integrity) -> Digest {
    match integrity {
        Integrity::Md5 => hash::EMPTY_MD5,
        Integrity::Fast { block_log2 } => {
            let blocks = blocks::fast_blocking(block_log2).container_hashes(&[], c.container_size);
            blocks::fast_chunk_hash(0, c.container_size, &blocks)
        }
    }
}
