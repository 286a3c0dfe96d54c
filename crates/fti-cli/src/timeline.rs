//! `fti trace-summary` and the demo's timeline: the runtime's ovni trace as a table of
//! checkpoint time per process, level and phase, and as an HTML page (`ovni-view`).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context as _, Result};
use clap::ValueEnum;
use ovni_view::runtime::{checkpoint_runs, level_table, CheckpointRun, LevelRow};
use ovni_view::CheckpointRow;
use ovni_view::{page::human_ns, summary::checkpoint_table, Model, PageOptions};

pub const ABOUT: &str =
    "Print the checkpoints of a runtime trace: per process and level, the time the application was stopped and the background's work, then per phase";

pub const HELP: &str = "\
Print the checkpoints of a runtime trace: per process and level, the time the
application was stopped and the background's work, then per phase.

DIR is an ovni trace written by the runtime (config `trace`, or FTI_TRACE=1; the demo
writes one in <dir>/trace). The runtime's marks are recognised by their titles
(\"FTI level\", \"FTI checkpoint\", \"FTI phase\"), whatever trace_mark_base they were
given. A process's first thread is the application's; a later one is the runtime's
background thread (asynchronous checkpoints). A run that crashed and its restart are two
processes, kept apart. Traces of crashed runs are read up to their last event.

Checkpoints, one row per process and level, each checkpoint counted once:
  pid          the process
  rank         its MPI rank (- when the trace has none)
  level        L1..L4
  checkpoints  how many
  stopped      the application's time in them: the whole checkpoint when synchronous;
               staging, and the wait for the background's previous work, when
               asynchronous
  background   the background thread's time on them (write, publication, ...)
Phases, one row per process, thread, level and phase:
  thread       application or background
  level        L1..L4, or - for work outside a checkpoint (a restart's verification)
  phase        the phase's label; count, and total time on top of the phase stack
--per-checkpoint adds one row per checkpoint (id, start as a raw clock, stopped,
background).

--format json prints, keys in this order:
  {\"schema\": 2,
   \"levels\": [{\"pid\", \"rank\", \"level\", \"checkpoints\", \"stopped_ns\", \"background_ns\"}],
   \"phases\": [{\"pid\", \"rank\", \"thread\", \"level\", \"phase\", \"count\", \"total_ns\"}],
   \"checkpoints\": [{\"pid\", \"rank\", \"level\", \"id\", \"start\", \"stopped_ns\",
                    \"background_ns\"}]}
rank and level are null when unknown; checkpoints only with --per-checkpoint. (Schema 1
was the bare array of phase rows, with the whole checkpoint as a phase counted once per
thread.) `ovniview DIR -o FILE.html` draws the same trace as a timeline.";

/// The version of the JSON output's layout.
const JSON_SCHEMA: u32 = 2;

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
    /// Also list every checkpoint: its id, start, and the two times.
    #[arg(long)]
    per_checkpoint: bool,
}

fn level_text(level: Option<i64>) -> String {
    level.map_or_else(|| "-".to_owned(), |l| format!("L{l}"))
}

fn rank_text(rank: Option<i64>) -> String {
    rank.map_or_else(|| "-".to_owned(), |r| r.to_string())
}

pub fn trace_summary(args: &SummaryArgs) -> Result<ExitCode> {
    let trace = ovni::Trace::open(&args.dir)
        .with_context(|| format!("reading trace {}", args.dir.display()))?;
    let model = Model::build(&trace);
    let phases = checkpoint_table(&model);
    let runs = checkpoint_runs(&model);
    let levels = level_table(&runs);
    let mut out = std::io::stdout().lock();
    match args.format {
        Format::Json => {
            let list = |rows: Vec<serde_json::Value>| serde_json::Value::Array(rows);
            let mut v = serde_json::json!({
                "schema": JSON_SCHEMA,
                "levels": list(levels.iter().map(|r| r.to_json()).collect()),
                "phases": list(phases.iter().map(|r| r.to_json()).collect()),
            });
            if args.per_checkpoint {
                v["checkpoints"] = list(runs.iter().map(|r| r.to_json()).collect());
            }
            writeln!(out, "{v}")?;
        }
        Format::Text => {
            if phases.is_empty() && runs.is_empty() {
                eprintln!(
                    "fti: {}: no fti-rs runtime marks (\"FTI level\", \"FTI phase\") in this trace",
                    args.dir.display()
                );
            }
            write_levels(&mut out, &levels)?;
            write_phases(&mut out, &phases)?;
            if args.per_checkpoint {
                write_runs(&mut out, &runs)?;
            }
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

fn write_levels(out: &mut impl Write, levels: &[LevelRow]) -> std::io::Result<()> {
    writeln!(out, "checkpoints")?;
    writeln!(
        out,
        "{:>8} {:>5} {:>5}  {:>11} {:>12} {:>12}",
        "pid", "rank", "level", "checkpoints", "stopped", "background"
    )?;
    for r in levels {
        writeln!(
            out,
            "{:>8} {:>5} {:>5}  {:>11} {:>12} {:>12}",
            r.pid,
            rank_text(r.rank),
            level_text(r.level),
            r.checkpoints,
            human_ns(r.stopped_ns),
            human_ns(r.background_ns)
        )?;
    }
    Ok(())
}

fn write_phases(out: &mut impl Write, phases: &[CheckpointRow]) -> std::io::Result<()> {
    writeln!(out, "\nphases")?;
    writeln!(
        out,
        "{:>8} {:>5} {:<11} {:>5}  {:<44} {:>6} {:>12}",
        "pid", "rank", "thread", "level", "phase", "count", "total"
    )?;
    for r in phases {
        writeln!(
            out,
            "{:>8} {:>5} {:<11} {:>5}  {:<44} {:>6} {:>12}",
            r.pid,
            rank_text(r.rank),
            r.thread.name(),
            level_text(r.level),
            r.phase,
            r.count,
            human_ns(r.total_ns)
        )?;
    }
    Ok(())
}

fn write_runs(out: &mut impl Write, runs: &[CheckpointRun]) -> std::io::Result<()> {
    writeln!(out, "\nper checkpoint")?;
    writeln!(
        out,
        "{:>8} {:>5} {:>5} {:>6} {:>20} {:>12} {:>12}",
        "pid", "rank", "level", "id", "start", "stopped", "background"
    )?;
    for r in runs {
        writeln!(
            out,
            "{:>8} {:>5} {:>5} {:>6} {:>20} {:>12} {:>12}",
            r.pid,
            rank_text(r.rank),
            level_text(r.level),
            r.id,
            r.start,
            human_ns(r.stopped_ns),
            human_ns(r.background_ns)
        )?;
    }
    Ok(())
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
