//! FTI's POSIX I/O mode (`ckpt_io = 1`): a rank's file is its protected variables' bytes in
//! protect order, nothing else; what a restart needs (file name, size, the group's largest size,
//! MD5, each variable's id and size) is in one meta-data file per group and level,
//! `<meta_dir>/<exec_id>/l<K>/sector<s>-group<g>.fti`, one section per group rank.
//!
//! The meta-data file is written as FTI 1.1's `FTI_WriteMetadata` (`src/meta.c`) leaves it:
//! `Topology.fti` (the config without `[basic]`, `[restart]`, `[advanced]`) with `[topology]`
//! removed and the group's sections added, dumped by iniparser (`iniparser_dump_ini`: each
//! section as `\n[name]\n`, its keys as `%-30s = %s\n`, then `\n`; one more `\n` at the end).
//! L3 adds `rsed_checksum` to every section (`FTI_WriteRSedChecksum`).

use std::path::{Path, PathBuf};

use ftiff::hash::Md5Stream;

use crate::config::{Config, Level};
use crate::error::{Error, Result};
use crate::storage::{Storage, StorageFile};
use crate::topology::Place;

/// The largest meta-data file read (a group's sections are a few hundred bytes per rank and
/// variable).
const MAX_META: u64 = 64 << 20;

/// Sections of the config that FTI's meta-data files do not repeat (`FTI_CreateTopoFile`
/// removes them from `Topology.fti`, which the meta data starts from).
const NOT_REPEATED: [&str; 3] = ["basic", "restart", "advanced"];

/// Where this rank's group keeps its meta data, and what the group's meta-data files begin
/// with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    /// `sector<s>`: the group's first node / `group_size`.
    pub sector: u32,
    /// `group<g>`: the ranks' position in their node, the head counted (FTI 1.1's
    /// `groupID = posInNode`, `FTI_Topology` in `src/topo.c`): with heads, from 1.
    pub id: u32,
    /// This rank's section, `[<group rank>]`.
    pub rank: u32,
    /// The group's ranks, by group rank.
    pub ranks: Vec<u32>,
    /// The config's other sections, dumped as iniparser does (FTI 1.1 writes them first).
    pub head: String,
    /// MPI-IO (`ckpt_io = 2`): L4 is one file shared by every rank.
    pub shared_l4: bool,
}

impl Group {
    /// The group of `place` in a run with `cfg`.
    pub fn new(cfg: &Config, place: &Place) -> Group {
        let first_node = place.node.saturating_sub(place.group_rank);
        Group {
            sector: first_node / cfg.group_size.max(1),
            // `place` is among the application ranks; a node's head is its position 0.
            id: place.position + u32::from(cfg.head),
            rank: place.group_rank,
            ranks: place.group.clone(),
            head: config_sections(cfg),
            shared_l4: cfg.io == crate::config::IoMode::MpiIo,
        }
    }

    /// The group's meta-data file of `level` in the meta directory `meta`.
    pub fn meta_path(&self, meta: &Path, level: Level) -> PathBuf {
        meta.join(format!("l{}", level.number()))
            .join(format!("sector{}-group{}.fti", self.sector, self.id))
    }

    /// The file kept while a new meta-data file replaces `path`, until the new checkpoint is
    /// retired (`docs/io-modes.md`, *Crash safety*).
    pub fn previous(path: &Path) -> PathBuf {
        let name = path
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        path.with_file_name(format!(".{name}.prev"))
    }
}

/// The config's sections other than `[basic]`, `[restart]` and `[advanced]`, in the config's
/// order, dumped as iniparser does.
fn config_sections(cfg: &Config) -> String {
    let mut out = String::new();
    for (name, keys) in cfg.keys.sections_in_order() {
        if !name.is_empty() && name != "topology" && !NOT_REPEATED.contains(&name.as_str()) {
            dump_section(&mut out, &name, &keys);
        }
    }
    out
}

/// `Topology.fti` as FTI 1.1 writes it (`FTI_CreateTopoFile`, `src/topo.c`): the config without
/// `[basic]`, `[restart]` and `[advanced]`, then `[topology]` (node index = node name), dumped
/// by iniparser.
pub fn topology_text(cfg: &Config, node_names: &[String]) -> String {
    let mut out = config_sections(cfg);
    let nodes: Vec<(String, String)> = node_names
        .iter()
        .enumerate()
        .map(|(i, name)| (i.to_string(), name.clone()))
        .collect();
    dump_section(&mut out, "topology", &nodes);
    out.push('\n');
    out
}

/// One section as `iniparser_dump_ini` writes it.
fn dump_section(out: &mut String, name: &str, keys: &[(String, String)]) {
    out.push_str(&format!("\n[{name}]\n"));
    for (k, v) in keys {
        out.push_str(&format!("{k:<30} = {v}\n"));
    }
    out.push('\n');
}

/// One rank's section of a meta-data file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RankMeta {
    /// `ckpt_file_name`.
    pub name: String,
    /// `ckpt_file_size`.
    pub size: u64,
    /// `ckpt_file_maxs`: the group's largest file.
    pub maxs: u64,
    /// `ckpt_checksum`: MD5 of the file, 32 lowercase hex digits.
    pub checksum: String,
    /// `varN_id`, `varN_size`, in protect order.
    pub vars: Vec<(i32, u64)>,
    /// `rsed_checksum` (L3): MD5 of the rank's `RSed` file.
    pub rsed_checksum: Option<String>,
}

/// The meta-data file of a group: `head` (the config's other sections), then `sections` by
/// group rank.
pub fn encode(head: &str, sections: &[RankMeta]) -> String {
    let mut out = head.to_owned();
    for (g, m) in sections.iter().enumerate() {
        let mut keys = vec![
            ("ckpt_file_name".to_owned(), m.name.clone()),
            ("ckpt_file_size".to_owned(), m.size.to_string()),
            ("ckpt_file_maxs".to_owned(), m.maxs.to_string()),
            ("ckpt_checksum".to_owned(), m.checksum.clone()),
        ];
        for (i, (id, size)) in m.vars.iter().enumerate() {
            keys.push((format!("var{i}_id"), id.to_string()));
            keys.push((format!("var{i}_size"), size.to_string()));
        }
        if let Some(c) = &m.rsed_checksum {
            keys.push(("rsed_checksum".to_owned(), c.clone()));
        }
        dump_section(&mut out, &g.to_string(), &keys);
    }
    out.push('\n');
    out
}

/// Reads a meta-data file (at most 64 MiB).
pub fn read(storage: &dyn Storage, path: &Path) -> Result<String> {
    // Never opened unless a regular file: opening a FIFO would block.
    match storage.kind(path).map_err(|e| Error::io(path, e))? {
        crate::storage::Kind::File => {}
        other => {
            return Err(Error::meta(
                path,
                "",
                format!("not a regular file ({other:?})"),
            ));
        }
    }
    let file = storage.open(path, false).map_err(|e| Error::io(path, e))?;
    let len = file.len().map_err(|e| Error::io(path, e))?;
    if len > MAX_META {
        return Err(Error::meta(
            path,
            "",
            format!("{len} bytes: not a meta-data file"),
        ));
    }
    let mut bytes = vec![0; len as usize];
    file.read_exact_at(&mut bytes, 0)
        .map_err(|e| Error::io(path, e))?;
    String::from_utf8(bytes).map_err(|e| {
        Error::meta(
            path,
            "",
            format!(
                "not text (byte {} is not UTF-8)",
                e.utf8_error().valid_up_to()
            ),
        )
    })
}

/// Section `[group_rank]` of the meta-data file `path` (its text `text`), checked: every key
/// FTI writes is there and well-formed, the variables' sizes add up to the file size.
pub fn parse_rank(path: &Path, text: &str, group_rank: u32) -> Result<RankMeta> {
    let (ini, _) = crate::config::IniFile::parse(path, text)?;
    let s = group_rank.to_string();
    let key = |k: &str| format!("{s}:{k}");
    let get = |k: &str| {
        ini.get(&s, k)
            .ok_or_else(|| Error::meta(path, &key(k), "missing".into()))
    };
    let number = |k: &str| -> Result<u64> {
        let v = get(k)?;
        v.parse()
            .map_err(|_| Error::meta(path, &key(k), format!("`{v}` is not a size")))
    };
    let name = get("ckpt_file_name")?.to_owned();
    if name.is_empty() || name.contains('/') || name == "." || name == ".." {
        return Err(Error::meta(
            path,
            &key("ckpt_file_name"),
            format!("`{name}` is not a file name"),
        ));
    }
    let (size, maxs) = (number("ckpt_file_size")?, number("ckpt_file_maxs")?);
    if maxs < size {
        return Err(Error::meta(
            path,
            &key("ckpt_file_maxs"),
            format!("{maxs} is below ckpt_file_size {size}"),
        ));
    }
    let checksum = md5_hex(path, &key("ckpt_checksum"), get("ckpt_checksum")?)?;
    let rsed_checksum = ini
        .get(&s, "rsed_checksum")
        .map(|c| md5_hex(path, &key("rsed_checksum"), c))
        .transpose()?;
    let mut vars = Vec::new();
    let mut total: u64 = 0;
    while let Some(id) = ini.get(&s, &format!("var{}_id", vars.len())) {
        let i = vars.len();
        let id: i32 = id.parse().map_err(|_| {
            Error::meta(
                path,
                &key(&format!("var{i}_id")),
                format!("`{id}` is not an id"),
            )
        })?;
        let vsize = number(&format!("var{i}_size"))?;
        total = total.saturating_add(vsize);
        vars.push((id, vsize));
    }
    if total != size {
        return Err(Error::meta(
            path,
            &key("ckpt_file_size"),
            format!("{size}, but the variables' sizes add up to {total}"),
        ));
    }
    Ok(RankMeta {
        name,
        size,
        maxs,
        checksum,
        vars,
        rsed_checksum,
    })
}

/// A checksum value: 32 lowercase hex digits.
fn md5_hex(path: &Path, key: &str, v: &str) -> Result<String> {
    if v.len() == 32
        && v.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    {
        Ok(v.to_owned())
    } else {
        Err(Error::meta(
            path,
            key,
            format!("`{v}` is not an MD5 (32 lowercase hex digits)"),
        ))
    }
}

/// Writes `data` (the variables' bytes in protect order) to `file`, returning the MD5 of what
/// was written.
pub fn write_data(
    file: &dyn StorageFile,
    path: &Path,
    data: &[&[u8]],
    progress: &(dyn Fn(u64) + Sync),
) -> Result<ftiff::hash::Digest> {
    let mut md5 = Md5Stream::default();
    let mut at = 0u64;
    for bytes in data {
        for piece in bytes.chunks(crate::collective::CHUNK as usize) {
            file.write_all_at(piece, at)
                .map_err(|e| Error::io(path, e))?;
            md5.update(piece);
            at += piece.len() as u64;
            progress(at);
        }
    }
    file.set_len(at).map_err(|e| Error::io(path, e))?;
    Ok(md5.finish())
}

/// The MD5 (hex) of the first `len` bytes of `file`, read in pieces.
pub fn md5_of(file: &dyn StorageFile, path: &Path, len: u64) -> Result<String> {
    let mut md5 = Md5Stream::default();
    let mut buf = vec![0; crate::collective::CHUNK.min(len) as usize];
    let mut at = 0;
    while at < len {
        let n = (len - at).min(buf.len() as u64) as usize;
        file.read_exact_at(&mut buf[..n], at)
            .map_err(|e| Error::io(path, e))?;
        md5.update(&buf[..n]);
        at += n as u64;
    }
    Ok(ftiff::hash::to_hex(&md5.finish()))
}

/// Checks that the file at `path` is the one `meta` (from the meta-data file `meta_path`)
/// describes: its size and MD5, and `checksum` (`ckpt_checksum`, or `rsed_checksum` for an
/// `RSed` file of `size` bytes).
pub fn check_file(
    storage: &dyn Storage,
    path: &Path,
    (size, checksum, key): (u64, &str, &str),
    meta_path: &Path,
) -> Result<()> {
    let file = storage.open(path, false).map_err(|e| Error::io(path, e))?;
    let len = file.len().map_err(|e| Error::io(path, e))?;
    if len != size {
        return Err(Error::PosixFile {
            path: path.to_path_buf(),
            what: format!(
                "{len} bytes, the meta data ({}) says {size}",
                meta_path.display()
            ),
        });
    }
    let got = md5_of(&*file, path, len)?;
    if got != checksum {
        return Err(checksum_mismatch(path, &got, (key, checksum), meta_path));
    }
    Ok(())
}

/// A file whose MD5 is not the one its meta data records, said as FTI 1.1 begins it
/// ("Checksum do not match."), which logs and FTI's test suite look for.
pub(crate) fn checksum_mismatch(
    path: &Path,
    got: &str,
    (key, checksum): (&str, &str),
    meta: &Path,
) -> Error {
    Error::PosixFile {
        path: path.to_path_buf(),
        what: format!(
            "Checksum do not match. The file is corrupted: MD5 {got} differs from {key} {checksum} in {}",
            meta.display()
        ),
    }
}

/// A POSIX meta-data file (`l<K>/sector<s>-group<g>.fti`) that says `path` belongs to a POSIX
/// tree: below `path` when it is a directory (a run's tree, or part of one), or, for any path
/// in a run, in a meta directory near it of an execution the path is in. The offline tools
/// read FTI-FF only; this lets them say so instead of calling POSIX files corrupt FTI-FF.
pub fn meta_near(path: &Path) -> Option<PathBuf> {
    if path.is_dir() {
        if let Some(found) = sector_files(path, 4).into_iter().next() {
            return Some(found);
        }
    }
    let names: Vec<&std::ffi::OsStr> = path.ancestors().filter_map(Path::file_name).collect();
    for ancestor in path.ancestors().skip(1).take(5) {
        let Ok(entries) = std::fs::read_dir(ancestor) else {
            continue;
        };
        for entry in entries.flatten().take(64) {
            let found = sector_files(&entry.path(), 3).into_iter().find(|m| {
                // <meta_dir>/<exec_id>/l<K>/sector…: the execution must be one the path is in.
                let exec = m.parent().and_then(Path::parent).and_then(Path::file_name);
                exec.is_some_and(|e| names.contains(&e))
            });
            if found.is_some() {
                return found;
            }
        }
    }
    None
}

/// Meta-data files at most `depth` directories below `dir` (in `l<K>/` directories).
fn sector_files(dir: &Path, depth: u32) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    let level_dir = dir
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| matches!(n, "l1" | "l2" | "l3" | "l4"));
    for entry in entries.flatten().take(4096) {
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if level_dir && name.starts_with("sector") && name.ends_with(".fti") && path.is_file() {
            out.push(path);
        } else if depth > 0 && entry.file_type().is_ok_and(|t| t.is_dir()) {
            out.extend(sector_files(&path, depth - 1));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{encode, parse_rank, RankMeta};
    use crate::error::Error;
    use std::path::Path;

    fn section(g: u32) -> RankMeta {
        RankMeta {
            name: format!("Ckpt2-Rank{g}.fti"),
            size: 12,
            maxs: 12,
            checksum: "0123456789abcdef0123456789abcdef".into(),
            vars: vec![(1, 8), (7, 4)],
            rsed_checksum: None,
        }
    }

    #[test]
    fn sections_read_back_as_written() {
        let text = encode("", &[section(0), section(1)]);
        assert!(text.starts_with("\n[0]\nckpt_file_name                 = Ckpt2-Rank0.fti\n"));
        assert!(text.ends_with("var1_size                      = 4\n\n\n"));
        let path = Path::new("m.fti");
        assert_eq!(parse_rank(path, &text, 1).unwrap(), section(1));
    }

    /// Each broken key is an error naming the file, the section's key and what is wrong.
    #[test]
    fn broken_meta_data_is_refused_by_key() {
        let good = encode("", &[section(0)]);
        for (from, to, key, says) in [
            (
                "ckpt_checksum                  = 0123456789abcdef0123456789abcdef\n",
                "",
                "0:ckpt_checksum",
                "missing",
            ),
            (
                "= 0123456789abcdef0123456789abcdef",
                "= 0123",
                "0:ckpt_checksum",
                "not an MD5",
            ),
            (
                "ckpt_file_size                 = 12",
                "ckpt_file_size = -3",
                "0:ckpt_file_size",
                "not a size",
            ),
            (
                "ckpt_file_maxs                 = 12",
                "ckpt_file_maxs = 11",
                "0:ckpt_file_maxs",
                "below",
            ),
            (
                "var1_size                      = 4",
                "var1_size = 5",
                "0:ckpt_file_size",
                "add up to 13",
            ),
            (
                "var1_id                        = 7",
                "var1_id = x",
                "0:var1_id",
                "not an id",
            ),
            (
                "= Ckpt2-Rank0.fti",
                "= ../Ckpt2-Rank0.fti",
                "0:ckpt_file_name",
                "not a file name",
            ),
        ] {
            assert!(good.contains(from), "{from}");
            let text = good.replace(from, to);
            match parse_rank(Path::new("m.fti"), &text, 0) {
                Err(Error::Meta { key: k, what, .. }) => {
                    assert_eq!(k, key, "{what}");
                    assert!(what.contains(says), "{key}: {what}");
                }
                other => panic!("{key}: {other:?}"),
            }
        }
        let missing = parse_rank(Path::new("m.fti"), &good, 3).unwrap_err();
        assert!(
            missing.to_string().contains("[3:ckpt_file_name]: missing"),
            "{missing}"
        );
    }
}
