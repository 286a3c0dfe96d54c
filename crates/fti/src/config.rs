//! FTI's configuration file (INI) and the same settings built in code.
//!
//! Keys and meanings are FTI 1.1's. Keys we do not support with their FTI meaning are refused
//! with an error, never silently changed; keys we do not know are kept as warnings. Our own
//! additions (documented in `docs/runtime.md`): `ckpt_l1_secs` .. `ckpt_l4_secs` (intervals in
//! seconds; FTI only has minutes), `keep_ckpts` (how many checkpoints of each level to keep,
//! the newest in `lK/`, older ones in `lK_archive/`), and `trace` (write an ovni trace).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::error::{Error, Result};

/// The four checkpoint levels of FTI.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    /// Local storage of the node.
    L1 = 1,
    /// Local storage plus a copy on a partner node (needs MPI).
    L2 = 2,
    /// Local storage plus Reed-Solomon encoding across a group (needs MPI).
    L3 = 3,
    /// The global (parallel) file system.
    L4 = 4,
}

impl Level {
    /// The level for FTI's number 1..4.
    pub fn from_number(n: i32) -> Option<Level> {
        match n {
            1 => Some(Level::L1),
            2 => Some(Level::L2),
            3 => Some(Level::L3),
            4 => Some(Level::L4),
            _ => None,
        }
    }

    /// FTI's number of the level.
    pub fn number(self) -> u8 {
        self as u8
    }

    /// All levels, in FTI's recovery order.
    pub const ALL: [Level; 4] = [Level::L1, Level::L2, Level::L3, Level::L4];
}

impl std::fmt::Display for Level {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "L{}", self.number())
    }
}

/// Runtime settings. `Config::default()` works without any file: directories under `./fti`,
/// L1 only on explicit checkpoints, one rank.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// `[basic] ckpt_dir`: node-local checkpoint directory (L1-L3).
    pub ckpt_dir: PathBuf,
    /// `[basic] glbl_dir`: global directory (L4).
    pub glbl_dir: PathBuf,
    /// `[basic] meta_dir`: where `Topology.fti` goes.
    pub meta_dir: PathBuf,
    /// `[basic] ckpt_l1..ckpt_l4` (minutes) or our `ckpt_lK_secs`: interval of each level for
    /// [`crate::Fti::snapshot`]; `None` = off.
    pub intervals: [Option<Duration>; 4],
    /// `[basic] inline_l2`: send L2 partner copies inside `checkpoint` (1, default) or in a
    /// background thread while the application goes on (0).
    pub inline_l2: bool,
    /// `[basic] inline_l4`: write L4 checkpoints directly to the global directory (1, default)
    /// or write them locally first and copy them, in a background thread when the run allows
    /// it (0).
    pub inline_l4: bool,
    /// `[basic] async_ckpt`: a checkpoint copies the variables into staging buffers and
    /// returns; writing, hashing and publishing run in a background thread (L1 and L4; other
    /// levels, differential checkpoints and runs without a background communicator stay
    /// synchronous). See `docs/runtime.md`.
    pub async_ckpt: bool,
    /// `[basic] async_mem_mib`: the most staging memory an asynchronous checkpoint may hold
    /// (MiB); a checkpoint of more data is written synchronously. `None`: the protected size.
    pub async_mem_mib: Option<u64>,
    /// `[basic] keep_last_ckpt`: at finalize, keep the last checkpoint (flushed to L4) instead
    /// of deleting everything.
    pub keep_last_ckpt: bool,
    /// Our `[basic] keep_ckpts`: checkpoints kept per level (newest in `lK/`, the others in
    /// `lK_archive/`). 1 = FTI's behaviour.
    pub keep_ckpts: usize,
    /// `[basic] group_size`.
    pub group_size: u32,
    /// `[basic] node_size`: ranks per node.
    pub node_size: u32,
    /// `[basic] verbosity`: 1 = debug, 2 = info, 3 = warnings only (FTI's scale).
    pub verbosity: u8,
    /// `[restart] failure`: 0 = fresh run, 1 = restart, 2 = restart from the L4 copy kept by
    /// keep_last_ckpt. A file without the key reads as 0, as in FTI. `None` (a config built
    /// in code): a restart is detected from the checkpoint directories.
    pub failure: Option<u8>,
    /// `[restart] exec_id`: `YYYY-MM-DD_HH-MM-SS` of the run that wrote the checkpoints.
    pub exec_id: Option<String>,
    /// Our `[restart] ckpt_id`: restart from this checkpoint id (the newest one of that id
    /// that verifies, in any level or archive) instead of the newest checkpoint.
    pub restart_id: Option<i32>,
    /// `[advanced] local_test`: node of a rank = rank / node_size, local paths get `node<N>/`.
    pub local_test: bool,
    /// `[basic] enable_dcp` (FTI 1.2+): differential checkpoints, writing only the blocks that
    /// changed since the file being updated.
    pub dcp: bool,
    /// `[basic] dcp_block_size` (bytes, 512..65535, FTI's default 16384) or our
    /// `dcp_block_kib` (KiB, up to 64 MiB): block size of change detection, and of the block
    /// hashes of fast-integrity files.
    pub dcp_block_size: u64,
    /// `[basic] dcp_mode` (FTI: 1 = MD5, 2 = CRC32 block hashes); without it xxh3-128.
    pub dcp_hash: ftiff::BlockHash,
    /// Our `[basic] integrity`: `compatible` (default, FTI 1.1 MD5 files) or `fast`
    /// (xxh3-128 block hashes, `docs/format-extensions.md`; FTI 1.1 cannot read them).
    pub fast_integrity: bool,
    /// Our `[basic] trace`: write an ovni trace of the runtime's work (also turned on by the
    /// environment variable `FTI_TRACE=1`).
    pub trace: bool,
    /// Our `[basic] trace = app`: trace only into the application's own libovni stream (the
    /// C API finds it in the process), and fail at init without it. With `trace = 1` the
    /// application's stream is used when there is one, else the runtime writes its own.
    pub trace_app: bool,
    /// Our `[basic] trace_mark_base`: the runtime's mark types are this one and the next two
    /// (default 40; 0 ..= 97), so that they can be moved away from an application's own.
    pub trace_mark_base: i32,
    /// Our `[basic] trace_dir`: where the trace goes (default: `$OVNI_TRACEDIR`, else `ovni`).
    pub trace_dir: PathBuf,
    /// Number of ranks of the run (given in code; MPI builds take it from the communicator).
    pub nranks: u32,
    /// This process's rank (given in code; MPI builds take it from the communicator).
    pub rank: u32,
    /// The file the config was read from; `failure` and `exec_id` are written back to it.
    pub path: Option<PathBuf>,
    /// Unknown keys, duplicated keys and settings asking for something this runtime does
    /// not do, as messages for the user (said once, by rank 0).
    pub warnings: Vec<String>,
    /// Remarks for the user: FTI keys the file sets that have no effect here (said once, by
    /// rank 0, as information).
    pub notes: Vec<String>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            ckpt_dir: PathBuf::from("fti/Local"),
            glbl_dir: PathBuf::from("fti/Global"),
            meta_dir: PathBuf::from("fti/Meta"),
            intervals: [None; 4],
            inline_l2: true,
            inline_l4: true,
            keep_last_ckpt: false,
            async_ckpt: false,
            async_mem_mib: None,
            keep_ckpts: 1,
            group_size: 4,
            node_size: 1,
            verbosity: 2,
            failure: None,
            exec_id: None,
            restart_id: None,
            local_test: true,
            dcp: false,
            dcp_block_size: 16384,
            dcp_hash: ftiff::BlockHash::Xxh3,
            fast_integrity: false,
            trace: false,
            trace_app: false,
            trace_mark_base: 40,
            trace_dir: std::env::var_os("OVNI_TRACEDIR")
                .map_or_else(|| PathBuf::from("ovni"), PathBuf::from),
            nranks: 1,
            rank: 0,
            path: None,
            warnings: Vec::new(),
            notes: Vec::new(),
        }
    }
}

/// Parsed INI: section -> key -> (value, line number). Keys and sections lower-cased.
type Ini = BTreeMap<String, BTreeMap<String, (String, usize)>>;

/// Parses INI text as FTI's iniparser reads it: sections and keys case-insensitive, `;` and
/// `#` start comments (also after a value), a value in double or single quotes is taken
/// verbatim (comment characters included), a UTF-8 byte-order mark is skipped. A key set twice
/// in a section keeps its last value, with a warning naming both lines.
fn parse_ini(path: &Path, text: &str, warnings: &mut Vec<String>) -> Result<Ini> {
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
fn section_header(line: &str) -> Option<String> {
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
    ("advanced", &["local_test"]),
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
            "inline_l3",
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
            "mpi_tag",
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
struct Keys<'a> {
    ini: Ini,
    path: &'a Path,
}

impl Keys<'_> {
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
    fn warn_unknown(&self, warnings: &mut Vec<String>, notes: &mut Vec<String>) {
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
                "{}: FTI keys without effect here (heads, staging, HDF5, MPI tags and transfer sizes, Lustre striping, the dCP stack and L4 dCP interval, inline_l3): {}",
                self.path.display(),
                without_effect.join(", ")
            ));
        }
    }

    /// FTI settings this runtime does not implement are errors, never silently changed.
    fn refuse_unsupported(&self) -> Result<()> {
        let refuse = |key: &str, ok: fn(i64) -> bool, why: &str| -> Result<()> {
            match self.int("basic", key)? {
                Some(v) if !ok(v) => Err(self.error("basic", key, format!("{v}: {why}"))),
                _ => Ok(()),
            }
        };
        refuse(
            "ckpt_io",
            |v| v == 3,
            "only ckpt_io = 3 (FTI-FF) is supported",
        )?;
        refuse(
            "head",
            |v| v == 0,
            "dedicated heads (head = 1) are not supported; post-processing runs in the application process",
        )?;
        // L2/L3 intervals are checked at init, where the run's ranks are known.
        Ok(())
    }

    fn read_basic(&self, cfg: &mut Config) -> Result<()> {
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
    fn read_dcp(&self, cfg: &mut Config, warnings: &mut Vec<String>) -> Result<()> {
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

    fn read_restart(&self, cfg: &mut Config) -> Result<()> {
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
    fn warn_without_effect(&self, warnings: &mut Vec<String>) -> Result<()> {
        const NO_EFFECT: [(&str, &str, i64, &str); 5] = [
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
                "advanced",
                "mpi_tag",
                2612,
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

impl Config {
    /// Reads an FTI configuration file.
    pub fn from_file(path: &Path) -> Result<Config> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        let mut cfg = Config::from_ini_text(path, &text)?;
        cfg.path = Some(path.to_path_buf());
        // FTI reads a missing `failure` as 0: a file-based run restarts only when the file
        // says so (the runtime writes `failure = 1` after the first checkpoint).
        cfg.failure.get_or_insert(0);
        Ok(cfg)
    }

    /// Parses configuration text; `path` only names the source in messages. Relative
    /// directories are kept relative (to the working directory, as FTI does).
    pub fn from_ini_text(path: &Path, text: &str) -> Result<Config> {
        let mut cfg = Config::default();
        let keys = Keys {
            ini: parse_ini(path, text, &mut cfg.warnings)?,
            path,
        };
        let (mut warnings, mut notes) = (std::mem::take(&mut cfg.warnings), Vec::new());
        keys.warn_unknown(&mut warnings, &mut notes);
        keys.refuse_unsupported()?;
        keys.read_basic(&mut cfg)?;
        keys.read_dcp(&mut cfg, &mut warnings)?;
        cfg.warnings = warnings;
        cfg.notes = notes;
        keys.read_restart(&mut cfg)?;
        keys.warn_without_effect(&mut cfg.warnings)?;
        Ok(cfg)
    }

    /// The node of this rank (`rank / node_size`).
    pub fn node(&self) -> u32 {
        self.rank / self.node_size.max(1)
    }
}

/// Checks that a restart's `exec_id` names one directory inside the checkpoint directories:
/// one non-empty path component, no `/`, no NUL, not `.` or `..`. The runtime writes into that
/// directory and removes its checkpoint files at the end, so a path there would let a config
/// file point it at any directory.
pub fn check_exec_id(exec_id: &str) -> std::result::Result<(), String> {
    let why = if exec_id.is_empty() {
        "is empty"
    } else if exec_id.contains('/') {
        "contains `/`"
    } else if exec_id.contains('\0') {
        "contains a NUL byte"
    } else if exec_id == "." || exec_id == ".." {
        "is `.` or `..`"
    } else {
        return Ok(());
    };
    Err(format!(
        "[restart] exec_id = {exec_id:?} {why}: a restart's exec_id must be the name of the run's directory (as `YYYY-MM-DD_HH-MM-SS`), one path component"
    ))
}

/// Records `failure` and `exec_id` in the config file at `path`, as FTI does, so that a
/// program restarted with the same file recovers. Only those two lines of `[restart]` are
/// replaced (or added); every other line is kept as the user wrote it. The new file replaces
/// the old one atomically (temporary file, fsync, rename).
pub fn record_restart(
    storage: &dyn crate::storage::Storage,
    path: &Path,
    failure: u8,
    exec_id: &str,
) -> Result<()> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    let text = restart_text(&text, failure, exec_id);
    crate::store::replace_file(storage, path, text.as_bytes())
}

/// The config text `text` with `failure` and `exec_id` recorded in `[restart]` and its
/// `ckpt_id` dropped, every other line kept: what [`record_restart`] writes.
pub fn restart_text(text: &str, failure: u8, exec_id: &str) -> String {
    // A byte-order mark is kept, and skipped as the parser skips it.
    let (bom, text) = match text.strip_prefix('\u{feff}') {
        Some(rest) => ("\u{feff}", rest),
        None => ("", text),
    };
    let mut out = Vec::new();
    let mut in_restart = false;
    let mut seen_restart = false;
    let (mut wrote_failure, mut wrote_exec) = (false, false);
    let pad = |key: &str| format!("{key:<31}= ");
    let flush_missing = |out: &mut Vec<String>, wf: &mut bool, we: &mut bool| {
        if !*wf {
            out.push(format!("{}{failure}", pad("failure")));
            *wf = true;
        }
        if !*we {
            out.push(format!("{}{exec_id}", pad("exec_id")));
            *we = true;
        }
    };
    for line in text.lines() {
        let trimmed = line.trim();
        let comment = trimmed.starts_with('#') || trimmed.starts_with(';');
        if let Some(section) = section_header(trimmed) {
            if in_restart {
                flush_missing(&mut out, &mut wrote_failure, &mut wrote_exec);
            }
            in_restart = section == "restart";
            seen_restart |= in_restart;
        } else if in_restart && !comment {
            let key = trimmed
                .split('=')
                .next()
                .unwrap_or_default()
                .trim()
                .to_ascii_lowercase();
            if key == "failure" {
                out.push(format!("{}{failure}", pad("failure")));
                wrote_failure = true;
                continue;
            }
            if key == "exec_id" {
                out.push(format!("{}{exec_id}", pad("exec_id")));
                wrote_exec = true;
                continue;
            }
            // A chosen restart checkpoint applies to one restart: the run goes on from it.
            if key == "ckpt_id" {
                continue;
            }
        }
        out.push(line.to_owned());
    }
    if in_restart {
        flush_missing(&mut out, &mut wrote_failure, &mut wrote_exec);
    }
    if !seen_restart {
        out.push(String::new());
        out.push("[restart]".into());
        flush_missing(&mut out, &mut wrote_failure, &mut wrote_exec);
    }
    let mut text = bom.to_owned() + &out.join("\n");
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Config> {
        Config::from_ini_text(Path::new("test.cfg"), text)
    }

    #[test]
    fn fti_config_of_the_level_vectors() {
        let text = include_str!("../../../tests/fixtures/fti/levels/L4/config-after-run.ini");
        let cfg = parse(text).unwrap();
        assert_eq!(cfg.ckpt_dir, PathBuf::from("./run/Local"));
        assert_eq!(cfg.glbl_dir, PathBuf::from("./run/Global"));
        assert_eq!(cfg.meta_dir, PathBuf::from("./run/Meta"));
        assert_eq!(cfg.failure, Some(1));
        assert_eq!(cfg.exec_id.as_deref(), Some("2026-11-22_04-12-35"));
        assert_eq!(
            (cfg.node_size, cfg.group_size, cfg.local_test),
            (1, 4, true)
        );
        assert!(cfg.warnings.is_empty(), "{:?}", cfg.warnings);
        let cfg =
            parse("[basic]\nmax_sync_intv = 8\ntrace_dir = t\n[injection]\nnumber = 3\n").unwrap();
        assert_eq!(cfg.warnings.len(), 2, "{:?}", cfg.warnings);
        assert!(cfg.warnings[1].contains("fault injection"));
    }

    #[test]
    fn intervals_in_minutes_or_seconds() {
        let huge = parse(&format!("[basic]\nckpt_l1 = {}\n", i64::MAX)).unwrap();
        assert_eq!(
            huge.intervals[0],
            Some(Duration::from_secs(i64::MAX as u64))
        );
        let cfg = parse("[basic]\nckpt_l1 = 2\nckpt_l4_secs = 30\nckpt_l4 = 9\n").unwrap();
        assert_eq!(cfg.intervals[0], Some(Duration::from_secs(120)));
        assert_eq!(cfg.intervals[3], Some(Duration::from_secs(30)));
        assert_eq!(cfg.intervals[1], None);
    }

    #[test]
    fn unsupported_values_are_refused_with_the_line() {
        let err = parse("[basic]\nckpt_io = 1\n").unwrap_err().to_string();
        assert!(
            err.contains("test.cfg:2") && err.contains("ckpt_io"),
            "{err}"
        );
        assert!(parse("[basic]\nhead = 1\n")
            .unwrap_err()
            .to_string()
            .contains("head"));
        // L2/L3 intervals are read; whether the run can do them is decided at init.
        assert_eq!(
            parse("[basic]\nckpt_l2 = 5\n").unwrap().intervals[1],
            Some(std::time::Duration::from_secs(300))
        );
        assert!(parse("[basic]\nnode_size = 0\n").is_err());
        assert!(parse("[basic]\nnode_size = x\n")
            .unwrap_err()
            .to_string()
            .contains("not an integer"));
        assert!(parse("[restart]\nfailure = 7\n").is_err());
        assert!(parse("[basic]\njust words\n").is_err());
    }

    #[test]
    fn dcp_and_integrity_keys() {
        let cfg = parse(
            "[basic]\nenable_dcp = 1\ndcp_mode = 2\ndcp_block_size = 4096\nintegrity = fast\n",
        )
        .unwrap();
        assert!(cfg.dcp && cfg.fast_integrity);
        assert!(cfg.warnings.is_empty(), "{:?}", cfg.warnings);
        assert_eq!(
            (cfg.dcp_block_size, cfg.dcp_hash),
            (4096, ftiff::BlockHash::Crc32)
        );
        let cfg = parse("[basic]\nenable_dcp = 1\ndcp_block_kib = 1024\n").unwrap();
        assert_eq!(
            (cfg.dcp_block_size, cfg.dcp_hash),
            (1 << 20, ftiff::BlockHash::Xxh3)
        );
        // FTI's stock values with dCP off are ignored; with dCP on they disable it, as FTI.
        let cfg =
            parse("[basic]\nenable_dcp = 0\ndcp_mode = 0\ndcp_block_size = 100000\n").unwrap();
        assert!(!cfg.dcp && cfg.warnings.is_empty(), "{:?}", cfg.warnings);
        let cfg = parse("[basic]\nenable_dcp = 1\ndcp_mode = 0\n").unwrap();
        assert!(!cfg.dcp);
        assert!(cfg.warnings[0].contains("test.cfg:3: dCP mode ('Basic:dcp_mode') must be either 1 (MD5) or 2 (CRC32), dCP disabled."), "{:?}", cfg.warnings);
        let cfg = parse("[basic]\nenable_dcp = 1\ndcp_block_size = 100000\n").unwrap();
        assert!(
            !cfg.dcp && cfg.warnings[0].contains("dCP disabled"),
            "{:?}",
            cfg.warnings
        );
        assert!(parse("[basic]\ndcp_block_size = 100\nintegrity = fast\n").is_err());
        assert!(parse("[basic]\nintegrity = sloppy\n").is_err());
        assert!(parse("[basic]\ndcp_block_size = 1000\nintegrity = fast\n")
            .unwrap_err()
            .to_string()
            .contains("power-of-two"));
    }

    #[test]
    fn unknown_keys_are_reported() {
        let cfg = parse("[basic]\nckpt_dir = a\nfrobnicate = 1\n[weird]\nx = 1\n").unwrap();
        assert_eq!(cfg.warnings.len(), 2, "{:?}", cfg.warnings);
        assert!(cfg.warnings[0].contains("frobnicate"));
        assert!(cfg.warnings[1].contains("[weird]"));
    }

    #[test]
    fn record_restart_rewrites_only_restart_keys() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.fti");
        std::fs::write(&path, "# mine\n[basic]\nckpt_dir = x ; comment\n[restart]\nfailure = 0\nckpt_id = 3\n[advanced]\nlocal_test = 1\n").unwrap();
        record_restart(&crate::storage::Disk, &path, 1, "2026-01-02_03-04-05").unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            text.starts_with("# mine\n[basic]\nckpt_dir = x ; comment\n[restart]\n"),
            "{text}"
        );
        let cfg = Config::from_file(&path).unwrap();
        assert_eq!(cfg.failure, Some(1));
        assert_eq!(cfg.exec_id.as_deref(), Some("2026-01-02_03-04-05"));
        assert_eq!(cfg.restart_id, None);
        assert!(cfg.local_test);
        std::fs::write(&path, "[basic]\nckpt_dir = y\n").unwrap();
        record_restart(&crate::storage::Disk, &path, 2, "e").unwrap();
        let cfg = Config::from_file(&path).unwrap();
        assert_eq!((cfg.failure, cfg.exec_id.as_deref()), (Some(2), Some("e")));
    }

    /// Fuzzing (fti_config): a line `[=` is a key for the parser, but ended `[restart]` for
    /// the writer, so the `exec_id` after it overrode the one recorded. Both now read section
    /// headers with `section_header`, spaces, case and text after `]` included, and skip a
    /// byte-order mark alike.
    #[test]
    fn restart_text_and_the_parser_agree_on_sections() {
        for text in [
            "[Restart]\n[=\nExec_ID=",
            "[restart]\n[x = 1\nfailure = 0\nexec_id = old\n",
            "[ Restart ] ; FTI's comment\nfailure = 0\nckpt_id = 4\n[basic]\nckpt_dir = d\n",
            "\u{feff}[restart]\nfailure = 0\nexec_id = old\n",
            "[basic]\nckpt_dir = d\n[RESTART]junk\n; failure = 2\n",
        ] {
            let recorded = restart_text(text, 1, "2026-01-02_03-04-05");
            let cfg = parse(&recorded).unwrap_or_else(|e| panic!("{e}\n{recorded}"));
            assert_eq!(cfg.failure, Some(1), "{recorded}");
            assert_eq!(
                cfg.exec_id.as_deref(),
                Some("2026-01-02_03-04-05"),
                "{recorded}"
            );
            assert_eq!(cfg.restart_id, None, "{recorded}");
            assert_eq!(
                recorded.starts_with('\u{feff}'),
                text.starts_with('\u{feff}')
            );
        }
    }
}
