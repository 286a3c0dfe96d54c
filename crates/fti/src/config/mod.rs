//! FTI's configuration file (INI) and the same settings built in code.
//!
//! Keys and meanings are FTI 1.1's. Keys we do not support with their FTI meaning are refused
//! with an error, never silently changed; keys we do not know are kept as warnings. Our own
//! additions (documented in `docs/runtime.md`): `ckpt_l1_secs` .. `ckpt_l4_secs` (intervals in
//! seconds; FTI only has minutes), `keep_ckpts` (how many checkpoints of each level to keep,
//! the newest in `lK/`, older ones in `lK_archive/`), and `trace` (write an ovni trace).

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::error::{Error, Result};

mod ini;
mod restart;

pub use ini::IniFile;
use ini::{parse_ini, Keys};
pub use restart::{record_restart, restart_text};

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

/// How a level's checkpoint files are laid out (`[basic] ckpt_io`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IoMode {
    /// `ckpt_io = 1`: each rank's file is its protected variables' bytes in protect order;
    /// what a restart needs is in FTI's sector meta-data files under `meta_dir`.
    Posix,
    /// `ckpt_io = 2`: as POSIX, but L4 is one file shared by every rank,
    /// `Ckpt<id>-mpiio.fti` (each rank's data after the lower ranks').
    MpiIo,
    /// `ckpt_io = 3`: FTI-FF, self-describing files.
    Ftiff,
}

impl std::fmt::Display for IoMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            IoMode::Posix => "ckpt_io = 1 (POSIX)",
            IoMode::MpiIo => "ckpt_io = 2 (MPI-IO)",
            IoMode::Ftiff => "ckpt_io = 3 (FTI-FF)",
        })
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
    /// `[basic] ckpt_io`: how a level's files are laid out: 3 = FTI-FF (the default of a
    /// config built in code, and of a file without the key), 1 = POSIX (raw data files and
    /// FTI's sector meta-data files; `docs/io-modes.md`).
    pub io: IoMode,
    /// `[basic] inline_l2`: send L2 partner copies inside `checkpoint` (1, default) or in a
    /// background thread while the application goes on (0).
    pub inline_l2: bool,
    /// `[basic] inline_l4`: write L4 checkpoints directly to the global directory (1, default)
    /// or write them locally first and copy them, in a background thread when the run allows
    /// it (0).
    pub inline_l4: bool,
    /// `[basic] head`: the first rank of each node is a dedicated head serving its node's
    /// post-processing; the others are the application's ranks (`docs/runtime.md`, "Heads").
    pub head: bool,
    /// `[basic] inline_l3`: with heads, whether the application ranks encode L3 themselves (1,
    /// default) or their heads do (0). Without heads every level is post-processed inline.
    pub inline_l3: bool,
    /// `[basic] async_ckpt`: a checkpoint copies the variables into staging buffers and
    /// returns; writing and hashing run in a background thread, and so do publishing and
    /// post-processing for L1 and L4 with a background communicator (otherwise they follow
    /// at the next checkpoint call, `wait` or finalize). Incremental checkpoints stay
    /// synchronous. See `docs/runtime.md`.
    pub async_ckpt: bool,
    /// `[basic] async_mem_mib`: the most staging memory an asynchronous checkpoint may hold
    /// (MiB); a checkpoint of more data is pipelined through that much (the call returns once
    /// all but that much is written). `None`: the protected size.
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
    /// With heads, on an application rank: its rank among all processes (heads included),
    /// which names its files, while `rank` is its rank in the application's communicator and
    /// `node_size` counts the application ranks of a node. Set by the runtime's init.
    pub world_rank: Option<u32>,
    /// The file the config was read from; `failure` and `exec_id` are written back to it.
    pub path: Option<PathBuf>,
    /// Unknown keys, duplicated keys and settings asking for something this runtime does
    /// not do, as messages for the user (said once, by rank 0).
    pub warnings: Vec<String>,
    /// Every key of the file read, as read: for keys read by others than the runtime (FTI's
    /// C API: `max_sync_intv`, `[injection]`). Empty for a config built in code.
    pub keys: IniFile,
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
            io: IoMode::Ftiff,
            inline_l2: true,
            inline_l4: true,
            head: false,
            inline_l3: true,
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
            world_rank: None,
            path: None,
            warnings: Vec::new(),
            notes: Vec::new(),
            keys: IniFile::default(),
        }
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
        cfg.keys = keys.file();
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

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Config> {
        Config::from_ini_text(Path::new("test.cfg"), text)
    }

    #[test]
    fn fti_config_of_the_level_vectors() {
        let text = include_str!("../../../../tests/fixtures/fti/levels/L4/config-after-run.ini");
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
        assert_eq!(parse("[basic]\nckpt_io = 1\n").unwrap().io, IoMode::Posix);
        assert_eq!(parse("[basic]\nckpt_io = 3\n").unwrap().io, IoMode::Ftiff);
        assert_eq!(parse("[basic]\nckpt_io = 2\n").unwrap().io, IoMode::MpiIo);
        for (v, says) in [(4, "SIONlib"), (5, "HDF5"), (7, "not an FTI I/O mode")] {
            let err = parse(&format!("[basic]\nckpt_io = {v}\n"))
                .unwrap_err()
                .to_string();
            assert!(
                err.contains("test.cfg:2")
                    && err.contains(says)
                    && err.contains("ckpt_io = 1 (POSIX), 2 (MPI-IO) or 3 (FTI-FF)"),
                "{err}"
            );
        }
        assert!(parse("[basic]\nhead = 1\n").unwrap().head);
        assert!(parse("[basic]\nhead = 2\n")
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

    /// FTI writes the restart record through a symbolic link (`fopen(cfg, "w")`): the link
    /// stays, its target gets the record and keeps its mode.
    #[test]
    fn record_restart_writes_through_a_link_and_keeps_the_mode() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("configs/real.fti");
        std::fs::create_dir(real.parent().unwrap()).unwrap();
        std::fs::write(&real, "[basic]\nckpt_dir = x\n[restart]\nfailure = 0\n").unwrap();
        std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o600)).unwrap();
        let link = dir.path().join("config.fti");
        std::os::unix::fs::symlink("configs/real.fti", &link).unwrap();
        record_restart(&crate::storage::Disk, &link, 1, "2026-01-02_03-04-05").unwrap();
        assert!(link.symlink_metadata().unwrap().file_type().is_symlink());
        let cfg = Config::from_file(&real).unwrap();
        assert_eq!(cfg.failure, Some(1));
        assert_eq!(cfg.exec_id.as_deref(), Some("2026-01-02_03-04-05"));
        let mode = std::fs::metadata(&real).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            2,
            "no temporary left"
        );
    }

    /// The keys the C API reads itself come from this parser: a byte-order mark and a comment
    /// after a section header do not hide them.
    #[test]
    fn every_key_is_kept_for_the_c_api() {
        let cfg = parse(
            "\u{feff}[basic] ; FTI's comment\nckpt_io = 3\nmax_sync_intv = 64 ; sync\n[Injection] # flips\nrank = 1\nfrequency = 0.5\n",
        )
        .unwrap();
        assert_eq!(cfg.keys.get("basic", "ckpt_io"), Some("3"));
        assert_eq!(cfg.keys.int("BASIC", "max_sync_intv"), Some(64));
        assert_eq!(cfg.keys.int("injection", "rank"), Some(1));
        assert_eq!(cfg.keys.float("injection", "frequency"), Some(0.5));
        assert_eq!(cfg.keys.get("injection", "number"), None);
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
