//! Writing a checkpoint file: the write options the config asks for, the file a differential
//! checkpoint updates in place, and the write itself.

use std::collections::HashMap;
use std::path::PathBuf;

use ftiff::raw::FileBlock;
use ftiff::{Layout, VarSize, WriteOptions};

use crate::collective::agree;
use crate::config::Level;
use crate::error::{Error, Result, Step};
use crate::files;
use crate::io;
use crate::level::l2_stream;
use crate::schedule::Team;
use crate::trace::{self, Phase};
use crate::var::Var;

use super::{DcpFile, Fti};

impl Fti {
    /// The write options the config asks for.
    pub(super) fn write_options(&self) -> WriteOptions {
        let integrity = if self.cfg.fast_integrity {
            ftiff::Integrity::fast(self.cfg.dcp_block_size).unwrap_or(ftiff::Integrity::Md5)
        } else {
            ftiff::Integrity::Md5
        };
        let table =
            (self.cfg.dcp && integrity == ftiff::Integrity::Md5).then_some(ftiff::Blocking {
                size: self.cfg.dcp_block_size,
                hash: self.cfg.dcp_hash,
            });
        WriteOptions {
            integrity,
            table,
            ..WriteOptions::default()
        }
    }

    /// The level a checkpoint at `level` is written at: L1 for an L4 checkpoint flushed to
    /// the global directory afterwards (`inline_l4 = 0`, as FTI does).
    pub(super) fn write_level(&self, level: Level) -> Level {
        if level == Level::L4 && !self.cfg.inline_l4 {
            Level::L1
        } else {
            level
        }
    }

    /// Checkpoints kept per level: differential checkpoints need the one before the last as
    /// the base of the next.
    pub(super) fn keep(&self) -> usize {
        if self.cfg.dcp {
            self.cfg.keep_ckpts.max(2)
        } else {
            self.cfg.keep_ckpts
        }
    }

    /// The file a differential checkpoint at `level` can update in place: the oldest of the
    /// `keep` files kept (the one the new checkpoint would push out of the window), if this
    /// process wrote it, it is still on disk exactly as written (same file block) and it is
    /// not the newest checkpoint. With `keep = 2` the runtime alternates between two files.
    pub(super) fn take_dcp_base(&mut self, level: Level) -> Option<(PathBuf, DcpFile)> {
        let keep = self.keep();
        if !self.cfg.dcp || self.dcp_files.len() < keep || self.dcp_files[0].level != level {
            return None;
        }
        let base = self.dcp_files.pop_front()?;
        let newest = self.dcp_files.back().map(|f| f.id);
        if newest == Some(base.id) {
            return None;
        }
        let all = files::find_checkpoints(&self.dirs);
        let found = all
            .iter()
            .find(|f| f.id == base.id && f.level == level)?
            .clone();
        // Never give up the last checkpoint of this level or above (an L4 one must not leave
        // the global file system empty while it is rewritten).
        if !all.iter().any(|f| f.level >= level && f.path != found.path) {
            return None;
        }
        let file = self.dirs.storage.open(&found.path, false).ok()?;
        let fb = FileBlock::read_from(&*file, 0).ok()?;
        (fb == base.fb).then_some((found.path, base))
    }

    /// Plans, writes and publishes one checkpoint file (updating an older file in place for a
    /// differential checkpoint); returns its path, its layout, its file block and the bytes
    /// written.
    pub(super) fn write_and_publish(
        &mut self,
        id: i32,
        level: Level,
        vars: &[Var<'_>],
        ready: Result<()>,
    ) -> Result<(PathBuf, Layout, FileBlock, u64)> {
        let sizes = var_sizes(vars);
        let layout = match ready.and_then(|()| {
            Ok(Layout::plan(
                io::continued(&self.dirs.io, self.layout.as_ref()),
                &sizes,
            )?)
        }) {
            Ok(layout) => layout,
            Err(e) => return agree(&*self.comm, Step::Write, Err(e)),
        };
        let data = by_position(&layout, vars);
        let opts = self.write_options();
        let write_level = self.write_level(level);
        self.messages.debug(self.dirs.io.mode_line(write_level));
        if self.dirs.io.shared(write_level) {
            return self.write_shared(id, layout, &data);
        }
        let base = self.take_dcp_base(write_level);
        let begun = match &base {
            Some((old, _)) => files::begin(&self.dirs, write_level, id, Some(old)),
            None if self.dirs.io.writes_every_byte(&opts) => {
                files::begin_overwriting(&self.dirs, write_level, self.dirs.file_name(id))
            }
            None => files::begin(&self.dirs, write_level, id, None),
        };
        let pending = match begun {
            Ok(p) => p,
            Err(e) => return agree(&*self.comm, Step::Write, Err(e)),
        };
        let bar = self
            .messages
            .progress(format!("checkpoint {id} ({level})"), layout.file_size());
        let progress = |n| bar.set(n);
        trace::with(&mut self.tracer, &self.messages, |t| t.begin(Phase::Write));
        let (written, copy) = if self.streams_partner_copy(write_level, base.is_some(), &opts) {
            let (w, copy) =
                self.write_with_partner_copy(id, &pending, (&layout, &data), opts, &progress)?;
            (w, Some(copy))
        } else {
            let old = base.as_ref().map(|(_, b)| (&b.layout, &b.table));
            let written =
                self.dirs
                    .io
                    .write_file(&pending, (&layout, &data), old, &opts, &progress);
            (agree(&*self.comm, Step::Write, written)?, None)
        };
        drop(bar);
        trace::with(&mut self.tracer, &self.messages, |t| t.end(Phase::Write));
        let (path, fb) = self.publish_checkpoint(
            id,
            (level, write_level),
            (pending, copy),
            written.fb,
            &layout.vars(),
        )?;
        let bytes_written = written.bytes_written;
        self.remember_written(id, write_level, &layout, written.table, fb);
        Ok((path, layout, fb, bytes_written))
    }

    /// Whether an L2 checkpoint's partner copy is streamed while the file is written
    /// ([`l2_stream`]): a full FTI-FF write with MD5 (written in file order, with only the
    /// meta data and the file block behind), the copy made inline by this rank, and the write
    /// not inside a rayon pool of the caller (the streamed write runs in a thread of its own,
    /// on the global pool).
    fn streams_partner_copy(&self, write_level: Level, update: bool, opts: &WriteOptions) -> bool {
        let inline = self.cfg.inline_l2 || !self.background.can_post_process();
        write_level == Level::L2
            && !update
            && self.dirs.io.self_describing()
            && opts.integrity == ftiff::Integrity::Md5
            && inline
            && !self.has_head()
            && rayon::current_thread_index().is_none()
    }

    /// Writes this rank's L2 file while streaming it to the right partner and receiving the
    /// left partner's copy (collective): the group's file sizes are gathered first, so that
    /// `ptFs` is written with the file block. Returns the write and the copy (under `tmp/`, to
    /// be published with the file).
    fn write_with_partner_copy(
        &mut self,
        id: i32,
        pending: &files::Pending,
        (layout, data): (&Layout, &[&[u8]]),
        mut opts: WriteOptions,
        progress: &(dyn Fn(u64) + Sync),
    ) -> Result<(ftiff::Written, files::Pending)> {
        let comm = &*self.comm;
        // The stream writes every byte of the copy, then cuts it at the partner's size.
        let copy = files::begin_overwriting(&self.dirs, Level::L2, self.dirs.copy_name(id));
        // Matches the agreement of a rank whose own file could not be begun.
        let copy = agree(comm, Step::Write, copy)?;
        files::crash_point("partner");
        let team = Team {
            comm,
            topology: &self.topology,
            dirs: &self.dirs,
            rank: self.cfg.rank,
        };
        let plan = l2_stream::plan(team, layout.file_size())?;
        opts.pt_fs = plan.left_fs as i64;
        let own = (&*pending.file, pending.path.as_path());
        let (written, copied) = l2_stream::write_streamed(
            comm,
            &plan,
            own,
            (&*copy.file, copy.path.as_path()),
            |sink| {
                ftiff::write_file_with_progress(sink, layout, data, &opts, progress)
                    .map_err(|e| Error::Format(e.with_path(&pending.path)))
            },
        );
        let written = agree(comm, Step::Write, written)?;
        agree(comm, Step::L2Copy, copied)?;
        Ok((written, copy))
    }

    /// Writes checkpoint `id` into MPI-IO's shared L4 file with the other ranks, publishes it
    /// and its meta data, and retires older checkpoints (collective).
    fn write_shared(
        &mut self,
        id: i32,
        layout: Layout,
        data: &[&[u8]],
    ) -> Result<(PathBuf, Layout, FileBlock, u64)> {
        let source = Ok(io::mpiio::Source::Data(data));
        let (path, fb) = io::mpiio::write(&*self.comm, &self.dirs, id, source)?;
        io::commit(
            &*self.comm,
            &self.dirs,
            (id, Level::L4, false),
            &fb,
            &layout.vars(),
        )?;
        files::retire(&self.dirs, Level::L4, id, self.keep(), true)?;
        self.dcp_files.clear();
        let bytes_written = fb.fs.max(0) as u64;
        Ok((path, layout, fb, bytes_written))
    }

    /// Keeps what a differential update of the file just published needs (its layout, block
    /// table and file block), the last `keep` files only; any other checkpoint forgets them.
    pub(super) fn remember_written(
        &mut self,
        id: i32,
        write_level: Level,
        layout: &Layout,
        table: Option<ftiff::BlockTable>,
        fb: FileBlock,
    ) {
        match table {
            Some(table) if self.cfg.dcp => {
                self.dcp_files.push_back(DcpFile {
                    id,
                    level: write_level,
                    layout: layout.clone(),
                    table,
                    fb,
                });
                while self.dcp_files.len() > self.keep() {
                    self.dcp_files.pop_front();
                }
            }
            _ => self.dcp_files.clear(),
        }
    }
}

/// The id and size of each variable.
pub(super) fn var_sizes(vars: &[Var<'_>]) -> Vec<VarSize> {
    vars.iter()
        .map(|v| VarSize {
            id: v.id,
            size: v.size(),
        })
        .collect()
}

/// The variables' bytes by protect position in `layout`; a removed variable has none.
pub(super) fn by_position<'v>(layout: &Layout, vars: &'v [Var<'_>]) -> Vec<&'v [u8]> {
    let by_id: HashMap<i32, &[u8]> = vars.iter().map(|v| (v.id, &*v.bytes)).collect();
    layout
        .vars()
        .iter()
        .map(|v| by_id.get(&v.id).copied().unwrap_or(&[]))
        .collect()
}
