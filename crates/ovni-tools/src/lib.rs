//! Shared glue of the ovni command-line tools: loading a trace with the usual messages and
//! turning errors into exit codes. The format logic lives in the `ovni` crate.

use std::io;
use std::path::Path;
use std::process::ExitCode;

use ovni::Trace;

/// Loads the trace under `dir`, printing the C tools' `INFO`/`WARN` lines to stderr.
pub fn load_trace(prog: &str, dir: &Path) -> anyhow::Result<Trace> {
    let trace = Trace::open(dir).map_err(|e| {
        anyhow::anyhow!(e).context(format!("failed to load trace: {}", dir.display()))
    })?;
    report_loaded(prog, &trace);
    Ok(trace)
}

/// Loads the trace under `dir` as [`load_trace`] does, but where ovni 1.14's tools have
/// words for the failure, prints their `ERROR` lines and returns `Ok(None)`.
pub fn load_trace_as_original(prog: &str, dir: &Path) -> anyhow::Result<Option<Trace>> {
    match Trace::open(dir) {
        Ok(trace) => {
            report_loaded(prog, &trace);
            Ok(Some(trace))
        }
        Err(e) => match ovni::tools::c_load_error_lines(dir, &e) {
            Some(lines) => {
                for l in lines {
                    eprintln!("{prog}: ERROR: {l}");
                }
                Ok(None)
            }
            None => {
                Err(anyhow::anyhow!(e).context(format!("failed to load trace: {}", dir.display())))
            }
        },
    }
}

/// Prints the C tools' lines after a trace is loaded: a `WARN` per stream without events,
/// then `INFO: loaded <n> streams`.
pub fn report_loaded(prog: &str, trace: &Trace) {
    for s in trace.streams().iter().filter(|s| s.is_empty()) {
        eprintln!("{prog}: WARN: stream '{}' has zero events", s.name());
    }
    eprintln!("{prog}: INFO: loaded {} streams", trace.streams().len());
}

/// Prints `err` (with its causes) and returns exit code 1; a broken pipe on stdout is not an
/// error (`ovnidump | head`).
pub fn report(prog: &str, err: &anyhow::Error) -> ExitCode {
    if err
        .chain()
        .filter_map(|e| e.downcast_ref::<io::Error>())
        .any(|e| e.kind() == io::ErrorKind::BrokenPipe)
        || err.chain().any(|e| {
            matches!(e.downcast_ref::<ovni::Error>(),
                Some(ovni::Error::Io { source, .. }) if source.kind() == io::ErrorKind::BrokenPipe)
        })
    {
        return ExitCode::SUCCESS;
    }
    eprintln!("{prog}: ERROR: {err:#}");
    ExitCode::FAILURE
}
