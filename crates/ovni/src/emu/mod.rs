//! The emulator (`ovniemu`): plays a trace through the ovni model (and the nanos6, nosv,
//! nodes, tampi, mpi, kernel and openmp models when the trace requires them) and writes the Paraver
//! views ovniemu 1.14 writes, `cpu.{prv,pcf,row}` and `thread.{prv,pcf,row}`, in the trace
//! directory (`docs/ovniemu.md`).
//!
//! The stages and their checks are ovniemu's, in its order (load, system, clock offsets,
//! outputs, first events, model probe, events, end checks), with its messages, passed to a
//! [`Reporter`]. The checks are the linter's: the models' state machines
//! (`crates/ovni/src/model`) reject what ovniemu rejects, and the emulator reads the state after
//! each accepted event to drive its channels (`emu/chan.rs`, the other models' in
//! `emu/chan/track.rs`, connected by `emu/models.rs`), which write the Paraver records.
//!
//! Differences from the original, by design:
//!
//! * the Paraver configurations (`cfg/`) are written from the views' `.pcf` types (`cfg.rs`),
//!   not copied;
//! * with [`EmuOptions::debug`] (`-d`) the original's debug lines of the emulator's own
//!   steps are given, not those of its channel machinery (`debug`); with
//!   [`EmuOptions::lint`] (`-l`) the end checks also reject threads that end with marks
//!   still pushed or inside a model's stack.
//!
//! This file holds the stages up to the event loop (options, setup, clock offsets, first
//! events); the Paraver row order and the mark list are in `layout`, the output files and
//! their `.pcf` types in `output`, and the event loop with its end checks in `play`.

mod cfg;
mod chan;
mod debug;
mod failed;
mod layout;
mod models;
mod nanos6;
mod nosv;
mod openmp;
mod output;
mod pcf;
mod play;
mod prv;
mod report;
mod row;
mod stat;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::time::Instant;

pub use models::model_list;
pub use report::{Collect, Level, Reporter};

use crate::error::{chain_text, Error, MetaProblem, StreamProblem, TraceProblem};
use crate::events::EventTable;
use crate::lint::{offsets, CLOCK_OFFSETS_FILE};
use crate::metadata::{required_models, System, ThreadMeta};
use crate::read::{Stream, Trace};
use crate::tools::{c_load_error_lines, c_root};

use layout::{Layout, MarkList};
use models::Models;
use output::{pcf_types, Outputs};
use play::Emu;

/// Streams whose first clocks differ by more than this need a clock offset table.
const CLOCK_GATE_NS: u128 = 3_600_000_000_000;

/// How to emulate.
#[derive(Debug, Clone, Default)]
pub struct EmuOptions {
    /// ovniemu's linter mode (`-l`): stricter end checks (no mark left pushed).
    pub lint: bool,
    /// Clock offset table; `None` uses `<dir>/clock-offsets.txt` if it exists.
    pub clock_offsets: Option<PathBuf>,
    /// ovniemu's `-a`: every model is enabled, whether the threads require it or not (the
    /// versions they require are still checked).
    pub all_models: bool,
    /// ovniemu's `-b`: the breakdown views of the enabled nanos6, openmp and nosv models
    /// (`<model>-breakdown.{prv,pcf,row}`; nosv's when every thread allows it).
    pub breakdown: bool,
    /// ovniemu's `-d`: the original's debug lines ([`Level::Debug`]) of the trace's loading,
    /// the system it describes, the models, each event and each task (`docs/ovniemu.md`, *Debug
    /// output*).
    pub debug: bool,
}

/// How an emulation ended.
#[derive(Debug, Default)]
pub struct Outcome {
    /// True if the trace was emulated without error ("emulation finished ok").
    pub ok: bool,
    /// Events played.
    pub events: u64,
    /// True if the Paraver files were written (possibly partial, after an error).
    pub written: bool,
    /// The first error, typed: which file (or stream) and byte offset, and what is wrong.
    pub error: Option<Error>,
}

impl Outcome {
    fn failed(error: Error) -> Self {
        Self {
            error: Some(error),
            ..Self::default()
        }
    }
}

struct Out<'r> {
    rep: &'r mut dyn Reporter,
    debug: bool,
}

impl Out<'_> {
    /// A debug line (`<function>: <text>`), only with `-d`.
    fn debug(&mut self, t: &str) {
        if self.debug {
            self.rep.line(Level::Debug, t);
        }
    }
    /// Debug lines built only with `-d`.
    fn debug_with(&mut self, lines: impl FnOnce() -> Vec<String>) {
        if self.debug {
            for l in lines() {
                self.rep.line(Level::Debug, &l);
            }
        }
    }
    fn info(&mut self, t: &str) {
        self.rep.line(Level::Info, t);
    }
    fn warn(&mut self, t: &str) {
        self.rep.line(Level::Warn, t);
    }
    fn progress(&mut self, t: &str) {
        self.rep.progress(t);
    }
    fn errors(&mut self, lines: &[String]) {
        for l in lines {
            self.rep.line(Level::Error, l);
        }
    }
    fn lines(&mut self, lines: &[(Level, String)]) {
        for (level, l) in lines {
            self.rep.line(*level, l);
        }
    }
}

/// Emulates the trace under `dir` and writes its Paraver files there (overwriting them).
pub fn emulate(dir: &Path, opts: &EmuOptions, rep: &mut dyn Reporter) -> Outcome {
    let mut out = Out {
        rep,
        debug: opts.debug,
    };
    let root = c_root(dir);
    let trace = match Trace::open(dir) {
        Ok(t) => t,
        Err(e) => {
            let mut lines = c_load_error_lines(dir, &e).unwrap_or_else(|| vec![e.to_string()]);
            if lines.len() > 1 {
                lines.pop();
            }
            lines.push(format!("emu_init: cannot load trace '{root}'"));
            lines.push("main: emu_init failed".to_string());
            out.errors(&lines);
            return Outcome::failed(e);
        }
    };
    let streams = trace.streams();
    out.debug_with(|| {
        streams
            .iter()
            .map(|s| format!("stream_load: loading {}", s.name()))
            .collect()
    });
    for s in streams.iter().filter(|s| s.is_empty()) {
        out.warn(&format!("stream '{}' has zero events", s.name()));
    }
    out.info(&format!("loaded {} streams", streams.len()));
    let setup = match Setup::build(streams, &root, opts, &mut out) {
        Ok(s) => s,
        Err(e) => return Outcome::failed(e),
    };
    setup.run(dir, &root, opts, streams, &mut out)
}

/// What a stream is to the emulator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    /// A thread: index in the system's threads.
    Thread(usize),
    /// `ovni.part` is not `"thread"`: skipped, its events are errors.
    Other,
}

/// The system, its order and the clock offsets, ready to open the outputs.
struct Setup {
    sys: System,
    roles: Vec<Role>,
    offsets: Vec<i64>,
    layout: Layout,
}

impl Setup {
    fn build(
        streams: &[Stream],
        root: &str,
        opts: &EmuOptions,
        out: &mut Out<'_>,
    ) -> Result<Self, Error> {
        let mut roles = Vec::with_capacity(streams.len());
        let mut threads = Vec::new();
        for s in streams {
            match ThreadMeta::from_stream(&s.name(), s.metadata()) {
                Ok(t) => {
                    roles.push(Role::Thread(threads.len()));
                    threads.push(t);
                }
                Err(Error::Metadata {
                    problem: MetaProblem::UnknownPart(_),
                    ..
                }) => {
                    out.warn(&format!("ignoring unknown stream {}", s.name()));
                    roles.push(Role::Other);
                }
                Err(Error::Metadata { stream, problem }) => {
                    out.errors(&report::meta_lines(&stream, &problem, root));
                    return Err(Error::Metadata { stream, problem });
                }
                Err(e) => {
                    out.errors(&[
                        format!("create_system: {e}"),
                        "main: emu_init failed".into(),
                    ]);
                    return Err(e);
                }
            }
        }
        let by_rank = looms_have_ranks(&threads);
        out.debug_with(|| debug::system_lines(&threads));
        out.info(if by_rank {
            "sorting looms by rank"
        } else {
            "sorting looms by name"
        });
        let sys = match System::merge(threads) {
            Ok(s) => s,
            Err(Error::Metadata { stream, problem }) => {
                out.errors(&report::meta_lines(&stream, &problem, root));
                return Err(Error::Metadata { stream, problem });
            }
            Err(e) => {
                out.errors(&[format!("system_init: {e}"), "main: emu_init failed".into()]);
                return Err(e);
            }
        };
        let layout = Layout::new(&sys);
        let nprocs: usize = sys.looms.iter().map(|l| l.processes.len()).sum();
        let ncpus: usize = sys.looms.iter().map(|l| l.cpus.len()).sum();
        out.info(&format!(
            "loaded {} looms, {nprocs} processes, {} threads and {ncpus} cpus",
            sys.looms.len(),
            sys.threads.len()
        ));
        let first = layout.row_thread.first().and_then(|&t| sys.threads.get(t));
        if let Some(t) = first {
            let mixed = sys
                .threads
                .iter()
                .any(|o| o.lib_version != t.lib_version || o.lib_commit != t.lib_commit);
            if mixed {
                out.warn("multiple versions of libovni used to generate the trace");
            } else {
                out.info(&format!(
                    "generated with libovni version {} commit {}",
                    t.lib_version, t.lib_commit
                ));
            }
        }
        let offsets = clock_offsets(root, opts, &sys, &roles, out)?;
        Ok(Self {
            sys,
            roles,
            offsets,
            layout,
        })
    }

    fn run(
        self,
        dir: &Path,
        root: &str,
        opts: &EmuOptions,
        streams: &[Stream],
        out: &mut Out<'_>,
    ) -> Outcome {
        // As the original, an existing configuration folder (or anything at its name) is left
        // alone, with a warning.
        let keep_cfg = std::fs::metadata(dir.join("cfg")).is_ok();
        if keep_cfg {
            out.warn(&format!(
                "directory '{root}/cfg' already exists, skipping config copy"
            ));
        }
        let mut outputs = match Outputs::create(dir, &self.layout, !keep_cfg) {
            Ok(o) => o,
            Err(e) => {
                out.errors(&[
                    format!("emu_init: {}", chain_text(&e)),
                    "main: emu_init failed".into(),
                ]);
                return Outcome::failed(e);
            }
        };
        let early = |outputs: Outputs, out: &mut Out<'_>, lines: Vec<String>, error| {
            out.errors(&lines);
            let written = outputs.close(None).is_ok();
            Outcome {
                written,
                ..Outcome::failed(error)
            }
        };
        if let Err(b) = first_events(streams, &self.offsets, root) {
            let (lines, e) = *b;
            return early(outputs, out, lines, e);
        }
        let table = EventTable::builtin();
        let required = match required_models(&self.sys.threads, table) {
            Ok(r) => r,
            Err(Error::Metadata { stream, problem }) => {
                let id = match &problem {
                    MetaProblem::UnsupportedModelVersion { model, .. } => {
                        table.model_by_name(model).map_or(b'O', |m| m.id)
                    }
                    _ => b'O',
                };
                let lines = report::probe_lines(&stream, &problem, id);
                return early(outputs, out, lines, Error::Metadata { stream, problem });
            }
            Err(_) => BTreeMap::new(),
        };
        // The probe reports what the threads require, before -a enables the rest.
        out.debug_with(|| debug::probe_lines(&required));
        let mut required = required;
        if opts.all_models {
            for m in table.models() {
                required.insert(m.name.clone(), m.version.clone());
            }
        }
        for l in models::enabled_lines(&required, opts.all_models) {
            out.info(&l);
        }
        // The nosv model's breakdown view needs every thread to allow it (checked before its
        // hardware counters, as the original creates the view first).
        let mut nosv_breakdown = false;
        if opts.breakdown && required.contains_key("nosv") {
            let mut meta = vec![None; self.sys.threads.len()];
            for (s, role) in streams.iter().zip(&self.roles) {
                if let Some(m) = role_thread(role).and_then(|t| meta.get_mut(t)) {
                    *m = s.metadata().nosv_can_breakdown();
                }
            }
            match nosv::can_breakdown(&self.sys, &self.layout.row_thread, &meta) {
                Ok(Ok(())) => {
                    out.info("enabling breakdown for nOS-V model");
                    nosv_breakdown = true;
                }
                Ok(Err(warning)) => out.warn(&warning),
                Err(b) => {
                    let (lines, e) = *b;
                    return early(outputs, out, lines, e);
                }
            }
        }
        let hwc = if required.contains_key("nosv") {
            let mut meta = vec![None; self.sys.threads.len()];
            for (s, role) in streams.iter().zip(&self.roles) {
                if let Some(m) = role_thread(role).and_then(|t| meta.get_mut(t)) {
                    *m = s.metadata().hwc();
                }
            }
            match nosv::counters(&self.sys, &self.layout.row_thread, &meta) {
                Ok(names) => {
                    out.debug_with(|| debug::hwc_lines(&names));
                    names
                }
                Err(b) => {
                    let (lines, e) = *b;
                    return early(outputs, out, lines, e);
                }
            }
        } else {
            Vec::new()
        };
        let models = Models::new(&required, &self.sys, &self.layout.row_thread, hwc);
        if opts.breakdown {
            // The physical CPUs, by CPU row (each loom's virtual CPU follows its CPUs).
            let phys: Vec<usize> = (0..self.layout.cpu_labels.len())
                .filter(|&r| !self.layout.cpu_is_virtual(r))
                .collect();
            for name in models.breakdown_models() {
                if name == "nosv" && !nosv_breakdown {
                    continue;
                }
                if let Err(e) = outputs.add_breakdown(name, phys.clone()) {
                    let lines = vec![format!("emu_init: {}", chain_text(&e))];
                    return early(outputs, out, lines, e);
                }
            }
        }
        let marks = match MarkList::new(&self.sys, &self.layout, streams) {
            Ok(m) => m,
            Err(e) => {
                let lines = match &e {
                    Error::Metadata {
                        problem: MetaProblem::MarkValueCollision { mark, second, .. },
                        ..
                    } => report::mark_collision_lines(
                        chan::TY_MARK.wrapping_add(*mark as u32),
                        *second as i32,
                    ),
                    other => vec![format!("emu_connect: {other}")],
                };
                return early(outputs, out, lines, e);
            }
        };
        out.debug_with(|| debug::connect_lines(&required));
        let mut emu = Emu::new(&self, &marks, streams, models, &mut outputs);
        emu.set_debug(opts.debug);
        out.info("emulation starts");
        let start = Instant::now();
        let flow = emu.play(streams, &self, &mut outputs, out);
        if flow.is_ok() {
            emu.set_finished();
        }
        let secs = start.elapsed().as_secs_f64();
        let processed = format!("processed {} input events in {secs:.2} s", emu.events);
        let done = emu.progress.last_line(emu.events, secs);
        let mut ok = flow.is_ok();
        let mut error = flow.err();
        // The openmp model fills its labels when it finishes, after the events.
        let mut pcf_errors = Vec::new();
        let pcfs = pcf_types(&self.layout, &marks, emu.models(), &mut pcf_errors);
        let finish_problem = emu.models().finish_problem().map(Error::Trace);
        if ok {
            out.info(&done);
            out.info(&processed);
            let (lines, e) = emu.end_checks(&self, opts.lint, &pcf_errors);
            error = e.or(finish_problem);
            if !lines.is_empty() {
                out.errors(&lines);
                out.errors(&["emu_finish: model_finish failed".to_string()]);
                ok = false;
            }
            out.info("writing traces to disk, please wait");
            if !ok {
                out.errors(&["main: emu_finish failed".to_string()]);
            }
        } else {
            out.info("emulation aborts!");
            out.info(&done);
            out.info(&processed);
            // The models still finish: the openmp model lists its labels, and in linter mode
            // the nosv model checks its stacks (the others only check a finished trace).
            let mut lines: Vec<String> = pcf_errors.iter().map(|(_, l)| l.clone()).collect();
            if opts.lint {
                emu.abort_checks(&self, &mut lines);
            }
            if !lines.is_empty() {
                out.errors(&lines);
                out.errors(&["emu_finish: model_finish failed".to_string()]);
            }
            out.info("writing traces to disk, please wait");
            if !lines.is_empty() {
                out.errors(&["main: emu_finish failed".to_string()]);
            }
        }
        let written = match outputs.close(Some(&pcfs)) {
            Ok(()) => true,
            Err(e) => {
                out.errors(&[format!("emu_finish: {}", chain_text(&e))]);
                ok = false;
                error.get_or_insert(e);
                false
            }
        };
        out.info(if ok {
            "emulation finished ok"
        } else {
            "emulation finished with errors"
        });
        Outcome {
            ok,
            events: emu.events,
            written,
            error,
        }
    }
}

/// The thread of a stream, if it is one.
fn role_thread(role: &Role) -> Option<usize> {
    match role {
        Role::Thread(t) => Some(*t),
        Role::Other => None,
    }
}

/// True if every loom has a process with a rank (ovniemu then sorts looms by rank).
fn looms_have_ranks(threads: &[ThreadMeta]) -> bool {
    let mut looms: HashMap<&str, bool> = HashMap::new();
    for t in threads {
        *looms.entry(t.loom.as_str()).or_default() |= t.rank.is_some();
    }
    !looms.is_empty() && looms.values().all(|&r| r)
}

fn clock_offsets(
    root: &str,
    opts: &EmuOptions,
    sys: &System,
    roles: &[Role],
    out: &mut Out<'_>,
) -> Result<Vec<i64>, Error> {
    let mut offsets = vec![0i64; roles.len()];
    let path = match &opts.clock_offsets {
        Some(p) => p.clone(),
        None => {
            let p = Path::new(root).join(CLOCK_OFFSETS_FILE);
            if !p.is_file() {
                if sys.looms.len() > 1 {
                    out.warn(&format!(
                        "no clock offset file loaded with {} looms",
                        sys.looms.len()
                    ));
                }
                return Ok(offsets);
            }
            p
        }
    };
    let names: Vec<String> = sys.looms.iter().map(|l| l.name.clone()).collect();
    let looms = offsets::load(&path)
        .inspect(|entries| {
            out.info(&format!(
                "loaded clock offset table from '{}' with {} entries",
                path.display(),
                entries.len()
            ))
        })
        .and_then(|entries| offsets::loom_offsets(&path, &entries, &names));
    let looms = match looms {
        Ok(l) => l,
        Err(e) => {
            out.errors(&report::clock_offset_lines(&e, root));
            return Err(e);
        }
    };
    let by_name: HashMap<&str, i64> = names.iter().map(String::as_str).zip(looms).collect();
    for (slot, role) in offsets.iter_mut().zip(roles) {
        if let Role::Thread(t) = role {
            let loom = sys.threads.get(*t).map(|t| t.loom.as_str());
            *slot = loom.and_then(|l| by_name.get(l)).copied().unwrap_or(0);
        }
    }
    Ok(offsets)
}

/// The first event of every stream (read before any is played) and the one-hour clock gate.
fn first_events(
    streams: &[Stream],
    offsets: &[i64],
    root: &str,
) -> Result<(), Box<(Vec<String>, Error)>> {
    let mut first = Vec::new();
    for (s, off) in streams.iter().zip(offsets) {
        match s.events().next() {
            None => {}
            // A stream's clock starts at 0, so a negative first clock already goes backwards.
            Some(Ok((offset, ev))) if ev.signed_clock().wrapping_add(*off) < 0 => {
                let problem = StreamProblem::ClockBackwards {
                    prev: 0,
                    clock: ev.signed_clock().wrapping_add(*off),
                };
                let mut v = report::stream_step_lines(&s.name(), &problem, offset);
                v.push("player_init: step_stream failed".to_string());
                v.push(format!("emu_init: cannot init player for trace '{root}'"));
                v.push("main: emu_init failed".to_string());
                return Err(Box::new((v, s.error(offset, problem))));
            }
            Some(Ok((_, ev))) => first.push((s, ev.signed_clock().wrapping_add(*off))),
            Some(Err(Error::Stream {
                path,
                offset,
                problem,
            })) => {
                let mut v = report::stream_step_lines(&s.name(), &problem, offset);
                v.push("player_init: step_stream failed".to_string());
                v.push(format!("emu_init: cannot init player for trace '{root}'"));
                v.push("main: emu_init failed".to_string());
                return Err(Box::new((
                    v,
                    Error::Stream {
                        path,
                        offset,
                        problem,
                    },
                )));
            }
            Some(Err(e)) => {
                return Err(Box::new((
                    vec![e.to_string(), "main: emu_init failed".into()],
                    e,
                )));
            }
        }
    }
    // Every stream too far from the first is listed, then the trace is refused.
    let Some(&(_, t0)) = first.first() else {
        return Ok(());
    };
    let mut lines = Vec::new();
    let mut error = None;
    for (s, clock) in &first {
        let delta = (i128::from(t0) - i128::from(*clock)).unsigned_abs();
        if delta > CLOCK_GATE_NS {
            lines.push(format!(
                "check_clock_gate: stream {} has starting clock too far: delta={:.2} h",
                s.name(),
                delta as f64 / 3.6e12
            ));
            error.get_or_insert(Error::Trace(TraceProblem::ClockGate {
                stream: s.name(),
                delta,
            }));
        }
    }
    if let Some(e) = error {
        lines.extend([
            "check_clock_gate: detected large clock gate, run 'ovnisync' to set the offsets"
                .to_string(),
            "player_init: check_clock_gate failed".to_string(),
            format!("emu_init: cannot init player for trace '{root}'"),
            "main: emu_init failed".to_string(),
        ]);
        return Err(Box::new((lines, e)));
    }
    Ok(())
}
