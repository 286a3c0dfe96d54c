//! `fti trace-summary` and the demo's timeline: the runtime's ovni trace as a table of
//! checkpoint time per process, level and phase, and as an HTML page (`ovni-view`).

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context as _, Result};
use clap::ValueEnum;
use ovni_view::{page::human_ns, summary::checkpoint_table, Model, PageOptions};

pub const ABOUT: &str =
    "Print the checkpoint time of a runtime trace per process, rank, level and phase";

pub const HELP: &str = "\
Print the checkpoint time of a runtime trace per process, rank, level and phase.

DIR is an ovni trace written by the runtime (config `trace`, or FTI_TRACE=1; the demo
writes one in <dir>/trace). The runtime's marks are recognised by their titles
(\"FTI level\", \"FTI phase\"), whatever trace_mark_base they were given. One row per
process (a run that crashed and its restart stay apart), level and phase:
  pid       the process
  rank      its MPI rank (- when the trace has none)
  level     L1..L4, or - for work outside a checkpoint (a restart's verification)
  phase     a phase's label, or `checkpoint` for the whole checkpoint at that level
  count     how many times
  total     time on top of the phase stack (or the level stack for `checkpoint`)
Traces of crashed runs are read up to their last event. --format json prints
[{\"pid\", \"rank\", \"level\", \"phase\", \"count\", \"total_ns\"}] (rank and level null when
unknown). `ovniview DIR -o FILE.html` draws the same trace as a timeline.";

#[derive(Clone, Copy, ValueEnum)]
pub enum Format {
    Text,
    Json,
}

#[derive(clap::Args)]
pub struct SummaryArgs {
    /// The trace directory.
    dir: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
}

pub fn trace_summary(args: &SummaryArgs) -> Result<ExitCode> {
    let trace = ovni::Trace::open(&args.dir)
        .with_context(|| format!("reading trace {}", args.dir.display()))?;
    let rows = checkpoint_table(&Model::build(&trace));
    let mut out = std::io::stdout().lock();
    match args.format {
        Format::Json => {
            let v: Vec<_> = rows.iter().map(|r| r.to_json()).collect();
            writeln!(out, "{}", serde_json::Value::Array(v))?;
        }
        Format::Text => {
            if rows.is_empty() {
                eprintln!(
                    "fti: {}: no fti-rs runtime marks (\"FTI level\", \"FTI phase\") in this trace",
                    args.dir.display()
                );
            }
            writeln!(
                out,
                "{:>8} {:>5} {:>5}  {:<40} {:>6} {:>12}",
                "pid", "rank", "level", "phase", "count", "total"
            )?;
            for r in &rows {
                let rank = r.rank.map_or_else(|| "-".to_owned(), |r| r.to_string());
                let level = r.level.map_or_else(|| "-".to_owned(), |l| format!("L{l}"));
                writeln!(
                    out,
                    "{:>8} {:>5} {:>5}  {:<40} {:>6} {:>12}",
                    r.pid,
                    rank,
                    level,
                    r.phase,
                    r.count,
                    human_ns(r.total_ns)
                )?;
            }
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// Writes `<root>/timeline.html` with the traces below `dirs` (those that exist); returns
/// its path.
pub fn write_timeline(root: &Path, dirs: &[PathBuf], title: &str) -> Result<PathBuf> {
    let dirs: Vec<PathBuf> = dirs.iter().filter(|d| d.is_dir()).cloned().collect();
    let trace = ovni_view::open_traces(root, &dirs)
        .with_context(|| format!("reading the traces below {}", root.display()))?;
    let out = root.join("timeline.html");
    let opts = PageOptions {
        title: title.to_owned(),
        ..PageOptions::default()
    };
    ovni_view::write_trace_page(&trace, &out, &opts)
        .with_context(|| format!("writing {}", out.display()))?;
    Ok(out)
}
