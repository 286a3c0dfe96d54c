//! FTI 1.1's own test suite (`test/tests.sh` and the scripts beside it) run against libfti:
//! its programs, rewritten in `tests/c/fti11_*.c`, under `mpirun` with FTI's three configs
//! (`configH0I1`: no heads; `configH1I0`: heads post-processing L2–L4; `configH1I1`: heads,
//! every level inline), in FTI's I/O modes 1 (POSIX), 2 (MPI-IO) and 3 (FTI-FF); each run's log
//! is checked against the pattern file `tests.sh` picks (`tests/fixtures/fti11-patterns`,
//! copied from FTI): every pattern line must occur in the log, and no `Error` where tests.sh
//! forbids one; return codes as tests.sh checks them.
//!
//! FTI runs 16 processes, 4 per node; CI runs slices at 8 processes, 2 per node (4 nodes: one
//! encoding group, as FTI's). `scripts/fti-tests` runs the whole matrix at FTI's scale.

mod corrupt;
mod driver;
mod matrix;
mod programs;

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::util;

/// FTI's test configs (`test/configs/config*.fti`): dedicated heads or not, and whether
/// levels 2–4 are post-processed inline (by the application ranks) or by the heads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Setup {
    H0I1,
    H1I0,
    H1I1,
}

impl Setup {
    pub fn heads(self) -> bool {
        self != Setup::H0I1
    }

    fn inline(self) -> bool {
        self != Setup::H1I0
    }
}

/// How many processes a run has and how many share a node (the head included).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scale {
    pub procs: u32,
    pub node_size: u32,
}

/// FTI's: 16 processes, 4 per node.
pub const FTI_SCALE: Scale = Scale {
    procs: 16,
    node_size: 4,
};

/// CI's: 8 processes, 2 per node (still 4 nodes, one group of 4).
pub const CI_SCALE: Scale = Scale {
    procs: 8,
    node_size: 2,
};

/// FTI's checkpoint I/O modes (`ckpt_io`) the suite runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Io {
    /// POSIX (`ckpt_io = 1`).
    Posix = 1,
    /// MPI-IO (`ckpt_io = 2`).
    Mpi = 2,
    /// FTI-FF (`ckpt_io = 3`).
    Ftiff = 3,
}

impl Io {
    /// The folder of its pattern files.
    fn folder(self) -> &'static str {
        match self {
            Io::Posix => "posix_io",
            Io::Mpi => "mpi_io",
            Io::Ftiff => "ftiff_io",
        }
    }

    /// Whether diffSizes checks the sizes of the Rank files (raw data in POSIX and MPI-IO;
    /// FTI-FF files carry meta data).
    fn check_sizes(self) -> bool {
        self != Io::Ftiff
    }
}

/// Writes `config.fti` in `dir` with the settings of FTI's `setup` config (relative
/// directories, verbosity 1, keep_last_ckpt = 1, groups of 4) at `scale`, in I/O mode `io`.
pub fn write_config(dir: &Path, setup: Setup, scale: Scale, io: Io, verbosity: u8) -> PathBuf {
    let inline = u8::from(setup.inline());
    let text = format!(
        "[Basic]\nHead = {head}\nNode_size = {node_size}\nCkpt_dir = ./Local\nGlbl_dir = ./Global\n\
         Meta_dir = ./Meta\nCkpt_L1 = 1\nCkpt_L2 = 2\nCkpt_L3 = 3\nCkpt_L4 = 4\n\
         Inline_L2 = {inline}\nInline_L3 = {inline}\nInline_L4 = {inline}\nkeep_last_ckpt = 1\n\
         Group_size = 4\nVerbosity = {verbosity}\nCkpt_io = {io}\nMax_sync_intv = 512\n\n\
         [Restart]\nFailure = 0\nExec_ID = NULL\n\n\
         [Injection]\nrank = 0\nnumber = 0\nposition = 0\nfrequency = 0\n\n\
         [Advanced]\nBlock_size = 1024\nTransfer_size = 16\nMpi_tag = 2612\nLocal_test = 1\n",
        head = u8::from(setup.heads()),
        node_size = scale.node_size,
        io = io as u8,
    );
    let path = dir.join("config.fti");
    std::fs::write(&path, text).unwrap();
    path
}

/// A run's exit status and its log (stdout, then stderr: FTI's errors go to stderr; tests.sh
/// captures both with `&>`).
pub struct Log {
    pub success: bool,
    pub text: String,
}

impl Log {
    fn of(out: &Output) -> Log {
        Log {
            success: out.status.success(),
            text: format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
        }
    }
}

/// `mpirun -np <procs> tests/c/<program> args` in `dir`.
pub fn run(program: &str, scale: Scale, args: &[&str], dir: &Path) -> Log {
    run_within(program, scale, args, dir, util::DEADLINE)
}

/// [`run`] for a program that runs longer than the tests' usual deadline.
pub fn run_within(
    program: &str,
    scale: Scale,
    args: &[&str],
    dir: &Path,
    deadline: std::time::Duration,
) -> Log {
    let exe = util::compile(program, util::Link::Shared);
    Log::of(&util::mpirun_within(scale.procs, &exe, args, dir, deadline))
}

/// The pattern file `name` of I/O mode `io`.
fn pattern_file(io: Io, name: &str) -> PathBuf {
    util::crate_dir()
        .join("tests/fixtures/fti11-patterns")
        .join(io.folder())
        .join(name)
}

/// tests.sh's `checkLog`: every line of the pattern file occurs in the log, and the log has
/// no `Error` unless `error_allowed`. Says what is wrong.
pub fn check_log(log: &str, io: Io, pattern: &str, error_allowed: bool) -> Result<(), String> {
    let path = pattern_file(io, pattern);
    let patterns = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("pattern file {}: {e}", path.display()));
    let missing: Vec<&str> = patterns.lines().filter(|p| !log.contains(p)).collect();
    let mut wrong = Vec::new();
    if !missing.is_empty() {
        wrong.push(format!("{pattern}: not in the log: {missing:?}"));
    }
    if !error_allowed && log.contains("Error") {
        let errors: Vec<&str> = log.lines().filter(|l| l.contains("Error")).collect();
        wrong.push(format!("{pattern}: Error in the log: {errors:?}"));
    }
    if wrong.is_empty() {
        Ok(())
    } else {
        Err(wrong.join("; "))
    }
}
