//! `ovniview DIR -o FILE.html`: an ovni trace as one self-contained HTML timeline.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Parser;
use ovni_view::{PageOptions, Summary};

/// Draw an ovni trace as one self-contained HTML file: a lane per thread (grouped by loom,
/// process and rank; a thread without a rank under its process's) coloured by thread state,
/// with each thread's mark stacks as nested labelled bars, and a legend of the colours; a CPU
/// view when threads ran on real CPUs; zoom and pan (wheel/drag, +/-, arrows, 0); the window
/// in the address (#t0=NS&t1=NS, raw clocks in ns); hover and click for intervals and their
/// events; and tables of the time per checkpoint level and phase (fti-rs traces, whole trace),
/// per mark value (a type with many or counting values in one row per thread) and per thread
/// state, these two for the window shown.
///
/// Everything is inline: the file opens offline in any current browser. Traces from crashed
/// runs are accepted (unlike ovnilint/ovniemu): unfinished streams, open marks and threads that
/// never ended are drawn up to their last event and flagged on the page. Large traces are
/// pre-aggregated into pixel-sized buckets at zoomed-out levels so the page stays within
/// --max-mb. The page's summary is JSON in the script element with id `ovniview-summary` (docs/ovniview.md).
///
/// Exits 0 when the page is written, 1 when the trace cannot be read or the file written, 2
/// on usage errors.
#[derive(Parser, Debug)]
#[command(name = "ovniview", version)]
struct Args {
    /// Trace directory (any directory holding stream directories)
    dir: PathBuf,
    /// The HTML file to write
    #[arg(short, long, value_name = "FILE.html")]
    output: PathBuf,
    /// About how many megabytes of drawing data the page may hold (finer levels of detail
    /// beyond it are left out)
    #[arg(long, value_name = "MB", default_value_t = 40)]
    max_mb: usize,
    /// The page's title (default: the trace directory)
    #[arg(long)]
    title: Option<String>,
}

fn run(args: &Args) -> anyhow::Result<()> {
    let opts = PageOptions {
        title: args
            .title
            .clone()
            .unwrap_or_else(|| format!("ovniview: {}", args.dir.display())),
        max_bytes: args.max_mb.saturating_mul(1 << 20),
    };
    let model = ovni_view::write_page(&args.dir, &args.output, &opts)
        .with_context(|| format!("failed to draw trace: {}", args.dir.display()))?;
    let s = Summary::of(&model);
    let flagged = model.threads.iter().filter(|t| t.is_flagged()).count();
    eprintln!(
        "ovniview: {} threads, {} events{}: {}",
        s.threads,
        s.events,
        if flagged > 0 {
            format!(" ({flagged} threads flagged: crashed or unfinished run)")
        } else {
            String::new()
        },
        args.output.display()
    );
    Ok(())
}

fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => ovni_tools::report("ovniview", &e),
    }
}
