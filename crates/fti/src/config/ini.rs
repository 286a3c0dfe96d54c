//! Reading an FTI configuration file: the INI syntax as FTI's iniparser reads it, and every
//! key of FTI 1.1 (supported, refused, or without effect here).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{check_exec_id, Config, IoMode, Level};
use crate::error::{Error, Result};

/// Parsed INI: section -> key -> (value, line number). Keys and sections lower-cased.
type Ini = BTreeMap<String, BTreeMap<String, (String, usize)>>;

/// Every key of an INI file (an FTI config, `Topology.fti`) as FTI's iniparser reads it
/// ([`IniFile::parse`]): the one reader of such files, for the runtime, the C API's own keys
/// (`max_sync_intv`, `[injection]`) and the meta data.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IniFile {
    sections: Ini,
}

impl IniFile {
    /// Parses `text` as FTI's iniparser reads it: sections and keys case-insensitive, `;`
    /// and `#` start comments (also after a value), a quoted value is taken verbatim, a UTF-8
    /// byte-order mark is skipped; `path` names the source in messages.
    /// Returns the keys and the warnings (keys set twice).
    pub fn parse(path: &Path, text: &str) -> Result<(IniFile, Vec<String>)> {
        let mut warnings = Vec::new();
        let sections = parse_ini(path, text, &mut warnings)?;
        Ok((IniFile { sections }, warnings))
    }

    /// The 1-based line `key` of `section` is on, if the file sets it.
    pub(crate) fn line(&self, section: &str, key: &str) -> Option<usize> {
        let section = self.sections.get(&section.to_ascii_lowercase())?;
        section
            .get(&key.to_ascii_lowercase())
            .map(|(_, line)| *line)
    }

    /// The value of `[section] key` (both case-insensitive).
    pub fn get(&self, section: &str, key: &str) -> Option<&str> {
        let section = self.sections.get(&section.to_ascii_lowercase())?;
        section
            .get(&key.to_ascii_lowercase())
            .map(|(v, _)| v.as_str())
    }

    /// An integer value; `None` when absent or not an integer.
    pub fn int(&self, section: &str, key: &str) -> Option<i64> {
        self.get(section, key)?.parse().ok()
    }

    /// A floating-point value; `None` when absent or not a number.
    pub fn float(&self, section: &str, key: &str) -> Option<f64> {
        self.get(section, key)?.parse().ok()
    }

    /// Every section with its keys and values (lower-cased names), in the order of the
    /// text: sections by their first key's line, keys by line; sections without keys last.
    pub fn sections_in_order(&self) -> Vec<(String, Vec<(String, String)>)> {
        type Lines = Vec<(usize, String, String)>;
        let mut out: Vec<(usize, String, Lines)> = self
            .sections
            .iter()
            .map(|(name, keys)| {
                let mut keys: Vec<(usize, String, String)> = keys
                    .iter()
                    .map(|(k, (v, line))| (*line, k.clone(), v.clone()))
                    .collect();
                keys.sort();
                let first = keys.first().map_or(usize::MAX, |k| k.0);
                (first, name.clone(), keys)
            })
            .collect();
        out.sort();
        out.into_iter()
            .map(|(_, name, keys)| (name, keys.into_iter().map(|(_, k, v)| (k, v)).collect()))
            .collect()
    }

    /// The keys (lower-cased) and values of a section, in key order.
    pub fn section(&self, name: &str) -> impl Iterator<Item = (&str, &str)> {
        self.sections
            .get(&name.to_ascii_lowercase())
            .into_iter()
            .flat_map(|keys| keys.iter().map(|(k, (v, _))| (k.as_str(), v.as_str())))
    }
}

/// Parses INI text as FTI's iniparser reads it: sections and keys case-insensitive, `;` and
/// `#` start comments (also after a value), a value in double or single quotes is taken
/// verbatim (comment characters included), a UTF-8 byte-order mark is skipped. A key set twice
/// in a section keeps its last value, with a warning naming both lines.
pub(super) fn parse_ini(path: &Path, text: &str, warnings: &mut Vec<String>) -> Result<Ini> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut ini = Ini::new();
    let mut section = String::new();
    for (n, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(name) = section_header(line) {
            section = name;
            ini.entry(section.clone()).or_default();
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            return Err(Error::config(
                path,
                n + 1,
                format!("expected `key = value` or `[section]`, found `{line}`"),
            ));
        };
        let key = key.trim().to_ascii_lowercase();
        let value = ini_value(value);
        let keys = ini.entry(section.clone()).or_default();
        if let Some((_, first)) = keys.get(&key) {
            warnings.push(format!(
                "{}:{}: [{section}] {key} is set again (first at line {first}): the value of line {} is used",
                path.display(),
                n + 1,
                n + 1
            ));
        }
        keys.insert(key, (value, n + 1));
    }
    Ok(ini)
}

/// The section a trimmed line opens (`[name]`, anything after the `]` ignored), lower-cased;
/// `None` for any other line (`[name` without `]` is a key). The parser and
/// [`restart_text`] both use it, so they agree on where `[restart]` begins and ends.
pub(super) fn section_header(line: &str) -> Option<String> {
    let rest = line.strip_prefix('[')?;
    let end = rest.find(']')?;
    Some(rest.get(..end)?.trim().to_ascii_lowercase())
}

/// The value after `=`: quoted (`"..."` or `'...'`, taken verbatim) or up to a `;` or `#`
/// comment, trimmed.
fn ini_value(raw: &str) -> String {
    let v = raw.trim();
    for quote in ['"', '\''] {
        if let Some(rest) = v.strip_prefix(quote) {
            if let Some(end) = rest.find(quote) {
                return rest[..end].to_owned();
            }
        }
    }
    v.split([';', '#'])
        .next()
        .unwrap_or_default()
        .trim()
        .to_owned()
}

/// Keys this runtime reads, per section: FTI's keys that have an effect here, and its own.
const KNOWN: &[(&str, &[&str])] = &[
    (
        "basic",
        &[
            "head",
            "node_size",
            "ckpt_dir",
            "glbl_dir",
            "meta_dir",
            "ckpt_l1",
            "ckpt_l2",
            "ckpt_l3",
            "ckpt_l4",
            "inline_l2",
            "inline_l3",
            "inline_l4",
            "keep_last_ckpt",
            "async_ckpt",
            "async_mem_mib",
            "group_size",
            "max_sync_intv",
            "ckpt_io",
            "verbosity",
            "ckpt_l1_secs",
            "ckpt_l2_secs",
            "ckpt_l3_secs",
            "ckpt_l4_secs",
            "keep_ckpts",
            "trace",
            "trace_dir",
            "trace_mark_base",
            "enable_dcp",
            "dcp_mode",
            "dcp_block_size",
            "dcp_block_kib",
            "integrity",
        ],
    ),
    ("restart", &["failure", "exec_id", "ckpt_id"]),
    // `mpi_tag`: the tag of FTI's own messages between application ranks and heads (the C
    // API's end of work and post-processing outcomes).
    ("advanced", &["local_test", "mpi_tag"]),
    (
        "injection",
        &["rank", "number", "position", "frequency", "index"],
    ),
];

/// Keys FTI 1.1 to 1.6 read that have no effect in this runtime: known (never reported as
/// unknown), and listed once as such.
const WITHOUT_EFFECT: &[(&str, &[&str])] = &[
    (
        "basic",
        &[
            "dcp_l4",
            "keep_l4_ckpt",
            "enable_staging",
            "keep_heads_alive",
            "dcp_stack_size",
            "cacheddcp",
            "h5_single_file_dir",
            "h5_single_file_prefix",
            "h5_single_file_keep",
            "h5_single_file_enable",
        ],
    ),
    (
        "advanced",
        &[
            "block_size",
            "transfer_size",
            "general_tag",
            "ckpt_tag",
            "stage_tag",
            "final_tag",
            "gpu_host_bufsize",
            "lustre_striping_unit",
            "lustre_striping_factor",
            "lustre_striping_offset",
            "lustre_stiping_unit",
            "lustre_stiping_factor",
            "lustre_stiping_offset",
        ],
    ),
];

fn listed(table: &[(&str, &[&str])], section: &str, key: &str) -> bool {
    table
        .iter()
        .any(|(s, keys)| *s == section && keys.contains(&key))
}

/// Typed access to the keys of a parsed INI file, with errors naming the file and line.
pub(super) struct Keys<'a> {
    pub(super) ini: Ini,
    pub(super) path: &'a Path,
}

impl Keys<'_> {
    /// Every key, for [`super::Config::keys`].
    pub(super) fn file(&self) -> IniFile {
        IniFile {
            sections: self.ini.clone(),
        }
    }

    fn get(&self, section: &str, key: &str) -> Option<&(String, usize)> {
        self.ini.get(section).and_then(|s| s.get(key))
    }

    fn error(&self, section: &str, key: &str, what: String) -> Error {
        let line = self.get(section, key).map_or(0, |(_, l)| *l);
        Error::config(self.path, line, format!("[{section}] {key} = {what}"))
    }

    fn int(&self, section: &str, key: &str) -> Result<Option<i64>> {
        match self.get(section, key) {
            None => Ok(None),
            Some((v, _)) => v
                .parse::<i64>()
                .map(Some)
                .map_err(|_| self.error(section, key, format!("`{v}` is not an integer"))),
        }
    }

    fn flag(&self, section: &str, key: &str, default: bool) -> Result<bool> {
        Ok(self.int(section, key)?.map_or(default, |v| v != 0))
    }

    fn positive(&self, section: &str, key: &str, default: u32) -> Result<u32> {
        match self.int(section, key)? {
            Some(v) => u32::try_from(v).ok().filter(|&v| v > 0).ok_or_else(|| {
                self.error(section, key, format!("{v}: must be a positive integer"))
            }),
            None => Ok(default),
        }
    }

    fn dir(&self, key: &str, default: PathBuf) -> PathBuf {
        self.get("basic", key)
            .map_or(default, |(v, _)| PathBuf::from(v))
    }

    /// Unknown sections and keys become warnings; FTI keys without effect here are listed in
    /// one note.
    pub(super) fn warn_unknown(&self, warnings: &mut Vec<String>, notes: &mut Vec<String>) {
        let mut without_effect = Vec::new();
        for (section, keys) in &self.ini {
            let known_section = KNOWN.iter().any(|(s, _)| s == section)
                || WITHOUT_EFFECT.iter().any(|(s, _)| s == section);
            for (key, (_, line)) in keys {
                let path = self.path.display();
                if !known_section {
                    warnings.push(format!(
                        "{path}:{line}: unknown section [{section}] ignored"
                    ));
                } else if listed(WITHOUT_EFFECT, section, key) {
                    without_effect.push(format!("[{section}] {key}"));
                } else if !listed(KNOWN, section, key) {
                    warnings.push(format!(
                        "{path}:{line}: unknown key `{key}` in [{section}] ignored"
                    ));
                }
            }
        }
        if !without_effect.is_empty() {
            notes.push(format!(
                "{}: FTI keys without effect here (keeping heads alive, staging, HDF5, MPI tags and transfer sizes, Lustre striping, the dCP stack and L4 dCP interval): {}",
                self.path.display(),
                without_effect.join(", ")
            ));
        }
    }

    /// FTI settings this runtime does not implement are errors, never silently changed.
    pub(super) fn refuse_unsupported(&self) -> Result<()> {
        let refuse = |key: &str, ok: fn(i64) -> bool, why: &str| -> Result<()> {
            match self.int("basic", key)? {
                Some(v) if !ok(v) => Err(self.error("basic", key, format!("{v}: {why}"))),
                _ => Ok(()),
            }
        };
        match self.int("basic", "ckpt_io")? {
            None | Some(1..=3) => {}
            Some(v) => {
                return Err(self.error("basic", "ckpt_io", format!("{v}: {}", io_refusal(v))))
            }
        }
        refuse(
            "head",
            |v| v == 0 || v == 1,
            "head = 0 (no heads) or 1 (a dedicated head per node)",
        )?;
        // L2/L3 intervals are checked at init, where the run's ranks are known.
        Ok(())
    }

    pub(super) fn read_basic(&self, cfg: &mut Config) -> Result<()> {
        match self.int("basic", "ckpt_io")? {
            Some(1) => cfg.io = IoMode::Posix,
            Some(2) => cfg.io = IoMode::MpiIo,
            _ => {}
        }
        cfg.ckpt_dir = self.dir("ckpt_dir", std::mem::take(&mut cfg.ckpt_dir));
        cfg.glbl_dir = self.dir("glbl_dir", std::mem::take(&mut cfg.glbl_dir));
        cfg.meta_dir = self.dir("meta_dir", std::mem::take(&mut cfg.meta_dir));
        cfg.trace_dir = self.dir("trace_dir", std::mem::take(&mut cfg.trace_dir));
        for (i, level) in Level::ALL.iter().enumerate() {
            let n = level.number();
            let minutes = self.int("basic", &format!("ckpt_l{n}"))?.filter(|&m| m > 0);
            let secs = self
                .int("basic", &format!("ckpt_l{n}_secs"))?
                .filter(|&s| s > 0);
            cfg.intervals[i] = secs
                .or(minutes.map(|m| m.saturating_mul(60)))
                .map(|s| Duration::from_secs(s as u64));
        }
        cfg.inline_l2 = self.flag("basic", "inline_l2", true)?;
        cfg.inline_l4 = self.flag("basic", "inline_l4", true)?;
        cfg.inline_l3 = self.flag("basic", "inline_l3", true)?;
        cfg.head = self.flag("basic", "head", false)?;
        cfg.keep_last_ckpt = self.flag("basic", "keep_last_ckpt", false)?;
        cfg.async_ckpt = self.flag("basic", "async_ckpt", false)?;
        if self.get("basic", "async_mem_mib").is_some() {
            cfg.async_mem_mib = Some(u64::from(self.positive("basic", "async_mem_mib", 1)?));
        }
        match self.get("basic", "trace") {
            Some((v, _)) if v.eq_ignore_ascii_case("app") => {
                cfg.trace = true;
                cfg.trace_app = true;
            }
            _ => cfg.trace = self.flag("basic", "trace", false)?,
        }
        if let Some(base) = self.int("basic", "trace_mark_base")? {
            let max = 100 - i64::from(crate::trace::MARK_TYPES);
            cfg.trace_mark_base = i32::try_from(base)
                .ok()
                .filter(|b| (0..=max).contains(&i64::from(*b)))
                .ok_or_else(|| {
                    self.error(
                        "basic",
                        "trace_mark_base",
                        format!(
                            "{base}: must be 0 ..= {max} (the runtime uses {} mark types from it, and ovni's are below 100)",
                            crate::trace::MARK_TYPES
                        ),
                    )
                })?;
        }
        cfg.local_test = self.flag("advanced", "local_test", true)?;
        cfg.keep_ckpts = self.positive("basic", "keep_ckpts", 1)? as usize;
        cfg.group_size = self.positive("basic", "group_size", cfg.group_size)?;
        cfg.node_size = self.positive("basic", "node_size", cfg.node_size)?;
        cfg.verbosity = self
            .int("basic", "verbosity")?
            .map_or(2, |v| v.clamp(1, 3) as u8);
        Ok(())
    }

    /// dCP and block-size keys. `dcp_mode` and the block size are checked only where they are
    /// used, as FTI does: an invalid mode or block size with dCP on disables dCP with FTI's
    /// warning; an invalid block size with `integrity = fast` is an error (below); with
    /// neither, FTI's stock values (`dcp_mode = 0`) are ignored.
    pub(super) fn read_dcp(&self, cfg: &mut Config, warnings: &mut Vec<String>) -> Result<()> {
        cfg.dcp = self.flag("basic", "enable_dcp", false)?;
        let fast = self
            .get("basic", "integrity")
            .is_some_and(|(v, _)| v.eq_ignore_ascii_case("fast"));
        let at = |key: &str| {
            let line = self.get("basic", key).map_or(0, |(_, l)| *l);
            format!("{}:{line}", self.path.display())
        };
        if cfg.dcp {
            match self.int("basic", "dcp_mode")? {
                None => {}
                Some(1) => cfg.dcp_hash = ftiff::BlockHash::Md5,
                Some(2) => cfg.dcp_hash = ftiff::BlockHash::Crc32,
                Some(_) => {
                    warnings.push(format!(
                        "{}: dCP mode ('Basic:dcp_mode') must be either 1 (MD5) or 2 (CRC32), dCP disabled.",
                        at("dcp_mode")
                    ));
                    cfg.dcp = false;
                }
            }
        }
        let mut block = |key: &str, value: i64, bytes: Option<u64>, range: &str| -> Result<()> {
            match bytes {
                Some(b) => cfg.dcp_block_size = b,
                None if fast => {
                    return Err(self.error("basic", key, format!("{value}: must be {range}")))
                }
                None if cfg.dcp => {
                    warnings.push(format!(
                        "{}: dCP block size ('Basic:{key}') must be {range}, dCP disabled",
                        at(key)
                    ));
                    cfg.dcp = false;
                }
                None => {}
            }
            Ok(())
        };
        if let Some(v) = self.int("basic", "dcp_block_size")? {
            let bytes = (512..=65535).contains(&v).then_some(v as u64);
            block(
                "dcp_block_size",
                v,
                bytes,
                "between 512 and 65535 bytes (dcp_block_kib for larger blocks)",
            )?;
        }
        if let Some(v) = self.int("basic", "dcp_block_kib")? {
            let bytes = (1..=65536).contains(&v).then_some(v as u64 * 1024);
            block("dcp_block_kib", v, bytes, "between 1 and 65536 KiB")?;
        }
        cfg.fast_integrity = match self
            .get("basic", "integrity")
            .map(|(v, _)| v.to_ascii_lowercase())
        {
            None => false,
            Some(v) if v == "compatible" => false,
            Some(v) if v == "fast" => true,
            Some(v) => {
                return Err(self.error(
                    "basic",
                    "integrity",
                    format!("{v}: `compatible` or `fast`"),
                ))
            }
        };
        if cfg.fast_integrity && ftiff::Integrity::fast(cfg.dcp_block_size).is_err() {
            return Err(self.error(
                "basic",
                "integrity",
                format!(
                    "fast needs a power-of-two block size, dcp_block_size is {}",
                    cfg.dcp_block_size
                ),
            ));
        }
        Ok(())
    }

    pub(super) fn read_restart(&self, cfg: &mut Config) -> Result<()> {
        if let Some(f) = self.int("restart", "failure")? {
            let failure = u8::try_from(f).ok().filter(|&f| f <= 2);
            cfg.failure = Some(failure.ok_or_else(|| {
                self.error("restart", "failure", format!("{f}: must be 0, 1 or 2"))
            })?);
        }
        cfg.restart_id = self
            .int("restart", "ckpt_id")?
            .and_then(|v| i32::try_from(v).ok());
        // With `failure = 0` the id is not used (FTI's stock config carries the placeholder
        // `XXXX-XX-XX_XX-XX-XX`): a fresh run names its own execution.
        if cfg.failure.is_some_and(|f| f > 0) {
            if let Some((v, line)) = self.get("restart", "exec_id") {
                check_exec_id(v).map_err(|what| Error::config(self.path, *line, what))?;
            }
        }
        cfg.exec_id = self
            .get("restart", "exec_id")
            .map(|(v, _)| v.clone())
            .filter(|v| !v.is_empty());
        Ok(())
    }

    /// Keys FTI's own config files carry with their defaults: a non-default value asks for
    /// something this runtime does not do, so it is named rather than silently dropped.
    pub(super) fn warn_without_effect(&self, warnings: &mut Vec<String>) -> Result<()> {
        const NO_EFFECT: [(&str, &str, i64, &str); 4] = [
            (
                "basic",
                "max_sync_intv",
                0,
                "snapshot() measures time itself; no MPI synchronisation interval",
            ),
            (
                "advanced",
                "block_size",
                1024,
                "used by FTI's L3 encoding over MPI only",
            ),
            (
                "advanced",
                "transfer_size",
                16,
                "used by FTI's MPI transfers only",
            ),
            (
                "injection",
                "number",
                0,
                "fault injection (FTI_BitFlip) is not part of the runtime",
            ),
        ];
        for (section, key, default, why) in NO_EFFECT {
            if let (Some(v), Some((_, line))) = (self.int(section, key)?, self.get(section, key)) {
                if v != default {
                    warnings.push(format!(
                        "{}:{line}: [{section}] {key} = {v} has no effect: {why}",
                        self.path.display()
                    ));
                }
            }
        }
        Ok(())
    }
}

/// Why an FTI I/O mode other than 1 (POSIX) and 3 (FTI-FF) is refused.
fn io_refusal(v: i64) -> &'static str {
    match v {
        4 => "SIONlib is not supported (FTI 1.1 built without it writes POSIX files instead; this runtime does not write another format than the one asked for): use ckpt_io = 1 (POSIX), 2 (MPI-IO) or 3 (FTI-FF)",
        5 => "HDF5 is not supported (FTI 1.1 built without it writes POSIX files instead; this runtime does not write another format than the one asked for): use ckpt_io = 1 (POSIX), 2 (MPI-IO) or 3 (FTI-FF)",
        _ => "not an FTI I/O mode; use ckpt_io = 1 (POSIX), 2 (MPI-IO) or 3 (FTI-FF)",
    }
}
