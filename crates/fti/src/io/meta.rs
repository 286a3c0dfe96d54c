//! The POSIX meta data of a checkpoint's groups: written once every rank published its file
//! (`FTI_CreateMetadata`, `FTI_WriteMetadata` in FTI 1.1's `src/meta.c`), amended with the
//! `RSed` files' MD5 when a head encodes afterwards (`FTI_WriteRSedChecksum`), copied to `l4/`
//! by a flush, and the previous one kept until the new checkpoint is retired. Nothing for
//! FTI-FF, whose files describe themselves.

use std::path::Path;

use ftiff::raw::FileBlock;
use ftiff::{FileKind, FileName, VarSize};

use crate::collective::agree;
use crate::comm::Comm;
use crate::config::Level;
use crate::error::{Error, Result, Step};
use crate::files::{self, Dirs};
use crate::topology::Place;

use super::posix::{self, Group, RankMeta};
use super::Io;

/// This rank's part of a group's meta data, as sent to the group's first rank.
fn encode_record(m: &RankMeta) -> Vec<u8> {
    let vars: Vec<String> = m.vars.iter().map(|(id, s)| format!("{id}:{s}")).collect();
    format!(
        "{}\n{}\n{}\n{}\n{}",
        m.name,
        m.size,
        m.checksum,
        m.rsed_checksum.clone().unwrap_or_default(),
        vars.join(",")
    )
    .into_bytes()
}

fn decode_record(bytes: &[u8]) -> Option<RankMeta> {
    let text = std::str::from_utf8(bytes).ok()?;
    let mut lines = text.split('\n');
    let (name, size, checksum, rsed, vars) = (
        lines.next()?,
        lines.next()?.parse().ok()?,
        lines.next()?,
        lines.next()?,
        lines.next()?,
    );
    let vars = vars
        .split(',')
        .filter(|v| !v.is_empty())
        .map(|v| {
            let (id, s) = v.split_once(':')?;
            Some((id.parse().ok()?, s.parse().ok()?))
        })
        .collect::<Option<Vec<(i32, u64)>>>()?;
    Some(RankMeta {
        name: name.to_owned(),
        size,
        maxs: size,
        checksum: checksum.to_owned(),
        vars,
        rsed_checksum: (!rsed.is_empty()).then(|| rsed.to_owned()),
    })
}

/// After every rank published checkpoint `id` at `level` (collective): POSIX gathers each
/// rank's file name, size, MD5 and variables, and each group's first rank writes the group's
/// meta-data file (`FTI_CreateMetadata`, `FTI_WriteMetadata` in `src/meta.c`; at L3, when
/// the ranks' `RSed` files are `encoded` already, with each one's MD5,
/// `FTI_WriteRSedChecksum`; when heads encode later, they add it: [`add_rsed_checksums`]).
/// The file it replaces is kept until the checkpoint is retired, so that a crash in between
/// leaves the previous checkpoint described. Nothing for FTI-FF.
pub(crate) fn commit(
    comm: &dyn Comm,
    dirs: &Dirs,
    (id, level, encoded): (i32, Level, bool),
    fb: &FileBlock,
    vars: &[VarSize],
) -> Result<()> {
    let Io::Posix(g) = &dirs.io else {
        return Ok(());
    };
    let rsed = if level == Level::L3 && encoded {
        rsed_md5(dirs, id).map(Some)
    } else {
        Ok(None)
    };
    let mine = rsed.map(|rsed| RankMeta {
        name: dirs.file_name(id),
        size: fb.fs.max(0) as u64,
        maxs: 0,
        checksum: String::from_utf8_lossy(&fb.checksum[..32]).into_owned(),
        vars: vars.iter().map(|v| (v.id, v.size)).collect(),
        rsed_checksum: rsed,
    });
    let sent = mine.as_ref().map(encode_record).unwrap_or_default();
    let all = comm.all_gather(&sent);
    let local = mine.and_then(|_| {
        if g.rank != 0 {
            return Ok(());
        }
        let sections: Option<Vec<RankMeta>> = g
            .ranks
            .iter()
            .map(|&r| all.get(r as usize).and_then(|b| decode_record(b)))
            .collect();
        // A rank that could not send its part fails the step itself (agreed below): the
        // group's meta data stays as it was.
        let Some(mut sections) = sections else {
            return Ok(());
        };
        let maxs = sections.iter().map(|s| s.size).max().unwrap_or(0);
        for s in &mut sections {
            s.maxs = maxs;
        }
        publish_meta(
            dirs,
            &g.meta_path(&dirs.meta, level),
            &posix::encode(&g.head, &sections),
        )
    });
    agree(comm, Step::WriteMeta, local)
}

/// The MD5 (hex) of this rank's published `RSed` file of checkpoint `id`.
fn rsed_md5(dirs: &Dirs, id: i32) -> Result<String> {
    let path = dirs.level_dir(Level::L3).join(dirs.rsed_name(id));
    let file = dirs
        .storage
        .open(&path, false)
        .map_err(|e| Error::io(&path, e))?;
    let len = file.len().map_err(|e| Error::io(&path, e))?;
    posix::md5_of(&*file, &path, len)
}

/// Once the heads published the `RSed` files of checkpoint `id` (collective over the heads,
/// `place` a head's place among them, `dirs` the application rank's files it encoded):
/// each group's first head adds every rank's `rsed_checksum` to the group's L3 meta data
/// (`FTI_WriteRSedChecksum`, `src/meta.c`). The meta data is replaced whole, the previous
/// checkpoint's kept as it was. Nothing for FTI-FF.
pub(crate) fn add_rsed_checksums(
    (comm, place): (&dyn Comm, &Place),
    dirs: &Dirs,
    id: i32,
) -> Result<()> {
    let Io::Posix(g) = &dirs.io else {
        return Ok(());
    };
    let mine = rsed_md5(dirs, id);
    let sent = mine
        .as_ref()
        .map(|m| m.as_bytes().to_vec())
        .unwrap_or_default();
    let all = comm.all_gather(&sent);
    let local = mine.and_then(|_| {
        if place.group_rank != 0 {
            return Ok(());
        }
        let md5s: Vec<String> = (place.group.iter())
            .map(|&r| {
                String::from_utf8_lossy(all.get(r as usize).map_or(&[][..], |b| b)).into_owned()
            })
            .collect();
        // A head that could not send its MD5 fails the step itself (agreed below).
        if md5s.iter().any(String::is_empty) {
            return Ok(());
        }
        let path = g.meta_path(&dirs.meta, Level::L3);
        let text = posix::read(&*dirs.storage, &path)?;
        let mut sections = Vec::with_capacity(md5s.len());
        for (s, md5) in md5s.into_iter().enumerate() {
            let mut section = posix::parse_rank(&path, &text, s as u32)?;
            let names_id = FileName::parse(&section.name)
                .is_some_and(|n| n.kind == FileKind::Rank && n.id == id);
            if !names_id {
                return Err(Error::meta(
                    &path,
                    &format!("{s}:ckpt_file_name"),
                    format!("names {}, not a file of checkpoint {id}", section.name),
                ));
            }
            section.rsed_checksum = Some(md5);
            sections.push(section);
        }
        files::replace_file(
            &*dirs.storage,
            &path,
            posix::encode(&g.head, &sections).as_bytes(),
        )
    });
    agree(comm, Step::WriteMeta, local)
}

/// Replaces a meta-data file, keeping the one it replaces beside it (until [`retire`]).
fn publish_meta(dirs: &Dirs, path: &Path, text: &str) -> Result<()> {
    let st = &*dirs.storage;
    if let Some(dir) = path.parent() {
        files::create_dir_durable(st, dir)?;
    }
    if let Ok(old) = posix::read(st, path) {
        files::replace_file(st, &Group::previous(path), old.as_bytes())?;
    }
    files::replace_file(st, path, text.as_bytes())
}

/// Copies the group's meta data of `from` to `to` (collective): an L4 flush of a checkpoint
/// written at `from` (`FTI_Flush` keeps the meta data in `l4/`). Nothing for FTI-FF.
pub(crate) fn copy_meta(comm: &dyn Comm, dirs: &Dirs, from: Level, to: Level) -> Result<()> {
    let Io::Posix(g) = &dirs.io else {
        return Ok(());
    };
    let local = if g.rank == 0 {
        let src = g.meta_path(&dirs.meta, from);
        posix::read(&*dirs.storage, &src)
            .and_then(|text| publish_meta(dirs, &g.meta_path(&dirs.meta, to), &text))
    } else {
        Ok(())
    };
    agree(comm, Step::WriteMeta, local)
}

/// Once checkpoint's files at `level` are published by every rank and older ones retired:
/// the meta data kept for the previous checkpoint goes, and with `retire_lower` the meta data
/// of the lower levels, whose files were retired too. Every rank may call it.
pub(crate) fn retire(dirs: &Dirs, level: Level, retire_lower: bool) -> Result<()> {
    let Io::Posix(g) = &dirs.io else {
        return Ok(());
    };
    let path = g.meta_path(&dirs.meta, level);
    remove_if_there(dirs, &Group::previous(&path))?;
    if retire_lower {
        for lower in Level::ALL.into_iter().filter(|&l| l < level) {
            let path = g.meta_path(&dirs.meta, lower);
            remove_if_there(dirs, &path)?;
            remove_if_there(dirs, &Group::previous(&path))?;
        }
    }
    Ok(())
}

/// Removes a file durably if it is there (another rank of the group may have removed it).
fn remove_if_there(dirs: &Dirs, path: &Path) -> Result<()> {
    if dirs.storage.kind(path).is_ok() {
        files::remove_file(&*dirs.storage, path)?;
    }
    Ok(())
}
