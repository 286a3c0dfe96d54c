//! The emulator (`ovniemu`): plays a trace through the ovni model and writes the Paraver
//! views ovniemu 1.14 writes, `cpu.{prv,pcf,row}` and `thread.{prv,pcf,row}`, in the trace
//! directory (SPEC §8).
//!
//! The stages and their checks are ovniemu's, in its order (load, system, clock offsets,
//! outputs, first events, model probe, events, end checks), with its messages, passed to a
//! [`Reporter`]. The checks are the linter's: the ovni model's state machine
//! (`crates/ovni/src/model`) rejects what ovniemu rejects, and the emulator reads the state after
//! each accepted event to drive its channels (`emu/chan.rs`), which write the Paraver records.
//!
//! Differences from the original, by design:
//!
//! * only the ovni model is emulated: a trace that requires another model (nOS-V, Nanos6, …)
//!   is refused before any output is opened (the original emulates it);
//! * no Paraver configuration folder (`cfg/`) is copied into the trace;
//! * `-a`, `-b` and `-d` do not exist; with [`EmuOptions::lint`] (`-l`) the end checks also
//!   reject threads that end with marks still pushed.

mod chan;
mod pcf;
mod prv;
mod report;
mod row;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

pub use report::{Collect, Level, Reporter};

use crate::error::{Error, EventProblem, MetaProblem, StreamProblem, ThreadState, TraceProblem};
use crate::events::EventTable;
use crate::lint::{offsets, CLOCK_OFFSETS_FILE};
use crate::metadata::{required_models, System, ThreadMeta};
use crate::model::OvniModel;
use crate::raw::Event;
use crate::read::meta::Typed;
use crate::read::{Merger, Stream, Trace};
use crate::tools::{c_load_error_lines, c_root};

use chan::{Channels, TY_MARK};
use pcf::PcfType;
use prv::Prv;

/// Streams whose first clocks differ by more than this need a clock offset table.
const CLOCK_GATE_NS: u128 = 3_600_000_000_000;

/// How to emulate.
#[derive(Debug, Clone, Default)]
pub struct EmuOptions {
    /// ovniemu's linter mode (`-l`): stricter end checks (no mark left pushed).
    pub lint: bool,
    /// Clock offset table; `None` uses `<dir>/clock-offsets.txt` if it exists.
    pub clock_offsets: Option<PathBuf>,
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
}

impl Out<'_> {
    fn info(&mut self, t: &str) {
        self.rep.line(Level::Info, t);
    }
    fn warn(&mut self, t: &str) {
        self.rep.line(Level::Warn, t);
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
    let mut out = Out { rep };
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
        // Models other than ovni are refused here, before any output is opened.
        let table = EventTable::builtin();
        for t in &sys.threads {
            for name in t.require.iter().flat_map(|r| r.keys()) {
                if let Some(m) = table.model_by_name(name).filter(|m| m.id != b'O') {
                    out.errors(&[format!(
                        "{}: the trace requires the {} model ('{}'), which this ovniemu does not emulate (only ovni)",
                        t.stream,
                        m.name,
                        m.id as char
                    )]);
                    let p = MetaProblem::ModelNotEmulated(m.name.clone());
                    return Err(Error::meta(&t.stream, p));
                }
            }
        }
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
        let mut outputs = match Outputs::create(dir, &self.layout) {
            Ok(o) => o,
            Err(e) => {
                out.errors(&[format!("emu_init: {e}"), "main: emu_init failed".into()]);
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
        if let Err(Error::Metadata { stream, problem }) = required_models(&self.sys.threads, table)
        {
            let id = match &problem {
                MetaProblem::UnsupportedModelVersion { model, .. } => {
                    table.model_by_name(model).map_or(b'O', |m| m.id)
                }
                _ => b'O',
            };
            let lines = report::probe_lines(&stream, &problem, id);
            return early(outputs, out, lines, Error::Metadata { stream, problem });
        }
        out.info("the following 1 models are enabled: ");
        if let Some(m) = table.model(b'O') {
            out.info(&format!(
                "     {} {} 'O' ({} events)",
                m.name,
                m.version,
                table.model_events(b'O')
            ));
        }
        let marks = MarkList::new(&self.sys, &self.layout, streams);
        let pcfs = pcf_types(&self.layout, &marks);
        let mut emu = Emu::new(&self, &marks, &mut outputs);
        out.info("emulation starts");
        let start = Instant::now();
        let flow = emu.play(streams, &self, &mut outputs, out);
        let secs = start.elapsed().as_secs_f64();
        let processed = format!("processed {} input events in {secs:.2} s", emu.events);
        let mut ok = flow.is_ok();
        let mut error = flow.err();
        if ok {
            out.info(&processed);
            let (lines, e) = emu.end_checks(&self, opts.lint);
            error = e;
            if !lines.is_empty() {
                out.errors(&lines);
                out.errors(&[
                    "model_finish: finish failed for model 'O'".to_string(),
                    "emu_finish: model_finish failed".to_string(),
                ]);
                ok = false;
            }
            out.info("writing traces to disk, please wait");
            if !ok {
                out.errors(&["main: emu_finish failed".to_string()]);
            }
        } else {
            out.info("emulation aborts!");
            out.info(&processed);
            out.info("writing traces to disk, please wait");
        }
        let written = match outputs.close(Some(&pcfs)) {
            Ok(()) => true,
            Err(e) => {
                out.errors(&[format!("emu_finish: {e}")]);
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
    let looms = match offsets::load(&path).and_then(|e| offsets::loom_offsets(&path, &e, &names)) {
        Ok(l) => l,
        Err(e) => {
            out.errors(&[
                format!("clkoff_load: {e}"),
                "emu_init: cannot load clock offsets".to_string(),
                "main: emu_init failed".to_string(),
            ]);
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
    if let Some(&(_, t0)) = first.first() {
        for (s, clock) in &first {
            let delta = (i128::from(t0) - i128::from(*clock)).unsigned_abs();
            if delta > CLOCK_GATE_NS {
                let e = Error::Trace(TraceProblem::ClockGate {
                    stream: s.name(),
                    delta,
                });
                return Err(Box::new((
                    vec![
                        format!(
                            "player_init: stream {} has starting clock too far: delta={} h",
                            s.name(),
                            delta / 3_600_000_000_000
                        ),
                        "player_init: detected large clock gate, run 'ovnisync' to set the offsets"
                            .to_string(),
                        format!("emu_init: cannot init player for trace '{root}'"),
                        "main: emu_init failed".to_string(),
                    ],
                    e,
                )));
            }
        }
    }
    Ok(())
}

/// ovniemu's global order: looms (by name, or by rank when every loom has ranks), each
/// loom's CPUs by phyid then its virtual CPU, threads by loom, process and tid. It fixes the
/// Paraver rows.
#[derive(Debug)]
struct Layout {
    /// Row of each thread of `System::threads`.
    th_row: Vec<usize>,
    /// Thread of each row.
    row_thread: Vec<usize>,
    /// Row of each CPU in the model's order (looms by name, physical CPUs, virtual CPU).
    cpu_row: Vec<usize>,
    th_labels: Vec<String>,
    cpu_labels: Vec<String>,
    /// `(tid, pid)` per thread row.
    th_ids: Vec<(i64, i64)>,
}

impl Layout {
    fn new(sys: &System) -> Self {
        let min_rank = |l: &crate::metadata::Loom| {
            l.processes.iter().filter_map(|p| p.rank.map(|r| r.0)).min()
        };
        let by_rank = sys.looms.iter().all(|l| min_rank(l).is_some());
        let mut order: Vec<usize> = (0..sys.looms.len()).collect();
        if by_rank {
            order.sort_by_key(|&i| sys.looms.get(i).and_then(min_rank));
        }
        // Model CPU index of each loom's first CPU (looms by name).
        let mut base = Vec::with_capacity(sys.looms.len());
        let mut n = 0;
        for l in &sys.looms {
            base.push(n);
            n += l.cpus.len() + 1;
        }
        let mut cpu_row = vec![0; n];
        let mut cpu_labels = Vec::with_capacity(n);
        let by_key: HashMap<(&str, i64, i64), usize> = sys
            .threads
            .iter()
            .enumerate()
            .map(|(i, t)| ((t.loom.as_str(), t.pid, t.tid), i))
            .collect();
        let mut th_row = vec![0; sys.threads.len()];
        let mut row_thread = Vec::with_capacity(sys.threads.len());
        let mut th_labels = Vec::with_capacity(sys.threads.len());
        let mut th_ids = Vec::with_capacity(sys.threads.len());
        for (g, &li) in order.iter().enumerate() {
            let Some(l) = sys.looms.get(li) else { continue };
            let b = base.get(li).copied().unwrap_or(0);
            for (j, c) in l.cpus.iter().enumerate() {
                if let Some(r) = cpu_row.get_mut(b + j) {
                    *r = cpu_labels.len();
                }
                cpu_labels.push(format!(" CPU {g}.{}", c.phyid));
            }
            if let Some(r) = cpu_row.get_mut(b + l.cpus.len()) {
                *r = cpu_labels.len();
            }
            cpu_labels.push(format!("vCPU {g}.*"));
            let mut procs: Vec<&crate::metadata::Process> = l.processes.iter().collect();
            if by_rank && procs.iter().all(|p| p.rank.is_some()) {
                procs.sort_by_key(|p| p.rank.map(|r| r.0));
            }
            for p in procs {
                for &tid in &p.threads {
                    let Some(&t) = by_key.get(&(l.name.as_str(), p.pid, tid)) else {
                        continue;
                    };
                    if let Some(r) = th_row.get_mut(t) {
                        *r = row_thread.len();
                    }
                    row_thread.push(t);
                    th_labels.push(format!("TH {}.{tid}", p.app_id.unwrap_or(0)));
                    th_ids.push((tid, p.pid));
                }
            }
        }
        Self {
            th_row,
            row_thread,
            cpu_row,
            th_labels,
            cpu_labels,
            th_ids,
        }
    }
}

/// Mark types in ovniemu's order (first definition over the threads in row order, then
/// document order), with their labels in declaration order.
#[derive(Debug, Default)]
struct MarkList {
    /// `(type, title, labels)`.
    types: Vec<(i64, String, Labels)>,
}

/// Value labels of a mark type, in declaration order.
type Labels = Vec<(i64, String)>;

impl MarkList {
    fn new(sys: &System, layout: &Layout, streams: &[Stream]) -> Self {
        let by_name: HashMap<String, &Stream> = streams.iter().map(|s| (s.name(), s)).collect();
        let mut list = Self::default();
        for &t in &layout.row_thread {
            let Some(s) = sys.threads.get(t).and_then(|t| by_name.get(&t.stream)) else {
                continue;
            };
            let marks = s
                .metadata()
                .ovni
                .as_ref()
                .and_then(Typed::ok)
                .and_then(|o| o.mark.as_ref())
                .and_then(Typed::ok);
            for (ty, m) in marks.into_iter().flat_map(|m| &m.types) {
                let Some(m) = m.ok() else { continue };
                let pos = match list.types.iter().position(|e| e.0 == *ty) {
                    Some(p) => p,
                    None => {
                        let title = m.title.as_ref().and_then(|t| t.as_str()).unwrap_or("");
                        list.types.push((*ty, title.to_string(), Vec::new()));
                        list.types.len() - 1
                    }
                };
                let labels = m.labels.as_ref().and_then(Typed::ok);
                if let Some(entry) = list.types.get_mut(pos) {
                    for (v, l) in labels.into_iter().flat_map(|l| l.iter()) {
                        if !entry.2.iter().any(|e| e.0 == v) {
                            entry.2.push((v, l.to_string()));
                        }
                    }
                }
            }
        }
        list
    }
}

/// The `.pcf` types of the CPU and thread views.
struct PcfTypes {
    cpu: Vec<PcfType>,
    thread: Vec<PcfType>,
}

fn pcf_types(layout: &Layout, marks: &MarkList) -> PcfTypes {
    let t = |ty, label: &str, values: Vec<(i64, String)>| PcfType {
        ty,
        label: label.to_string(),
        values,
    };
    let states = ["Unknown", "Running", "Paused", "Dead", "Cooling", "Warming"]
        .iter()
        .enumerate()
        .map(|(i, s)| (i as i64, s.to_string()))
        .collect();
    let cpus = layout
        .cpu_labels
        .iter()
        .enumerate()
        .map(|(i, l)| (i as i64 + 1, l.clone()))
        .collect();
    let flushing = || vec![(1, "Flushing".to_string())];
    let mut thread = vec![
        t(6, "Thread: CPU affinity", cpus),
        t(2, "Thread: TID of the ACTIVE thread", Vec::new()),
        t(4, "Thread: thread state", states),
        t(7, "Flushing ovni buffer ", flushing()),
    ];
    let mut cpu = vec![t(
        7,
        "Flushing ovni buffer of the RUNNING thread",
        flushing(),
    )];
    for (ty, title, labels) in &marks.types {
        let m = t(TY_MARK + *ty as u32, title, labels.clone());
        thread.push(m.clone());
        cpu.push(m);
    }
    PcfTypes { cpu, thread }
}

/// The six output files while the trace is played.
struct Outputs {
    dir: PathBuf,
    /// Time of the current event.
    time: i64,
    cpu: Prv,
    thread: Prv,
    cpu_labels: Vec<String>,
    th_labels: Vec<String>,
}

impl Outputs {
    fn create(dir: &Path, layout: &Layout) -> crate::Result<Self> {
        let cpu = Prv::create(&dir.join("cpu.prv"), layout.cpu_labels.len())?;
        let thread = Prv::create(&dir.join("thread.prv"), layout.th_labels.len())?;
        for f in ["cpu.pcf", "cpu.row", "thread.pcf", "thread.row"] {
            let p = dir.join(f);
            std::fs::write(&p, b"").map_err(|e| Error::io(&p, e))?;
        }
        Ok(Self {
            dir: dir.to_path_buf(),
            time: 0,
            cpu,
            thread,
            cpu_labels: layout.cpu_labels.clone(),
            th_labels: layout.th_labels.clone(),
        })
    }

    #[inline]
    fn advance(&mut self, time: i64) {
        if time != self.time {
            self.time = time;
            let t = prv::TimeText::new(time);
            self.cpu.advance_to(&t);
            self.thread.advance_to(&t);
        }
    }

    /// Finishes the `.prv` files; with `pcfs`, writes the `.pcf` and `.row` files too (they
    /// stay empty when the emulation stopped before it started, as in the original).
    fn close(self, pcfs: Option<&PcfTypes>) -> crate::Result<()> {
        self.cpu.close()?;
        self.thread.close()?;
        let Some(pcfs) = pcfs else { return Ok(()) };
        let files = [
            ("cpu.pcf", pcf::render(&pcfs.cpu)),
            ("cpu.row", row::render(&self.cpu_labels)),
            ("thread.pcf", pcf::render(&pcfs.thread)),
            ("thread.row", row::render(&self.th_labels)),
        ];
        for (name, text) in files {
            let p = self.dir.join(name);
            std::fs::write(&p, text).map_err(|e| Error::io(&p, e))?;
        }
        Ok(())
    }
}

/// The lines the original prints when an event is rejected (before the panic block).
#[cold]
fn rejected_lines(mcv: crate::raw::Mcv, p: &EventProblem, rel: &str) -> Vec<(Level, String)> {
    let text = report::mcv_text(mcv);
    match p {
        EventProblem::ModelNotEnabled { model, version } => vec![
            (
                Level::Error,
                format!("model_event: model {model} not enabled for event {text}"),
            ),
            (
                Level::Info,
                format!("missing call to ovni_thread_require(\"{model}\", \"{version}\")?"),
            ),
        ],
        EventProblem::ModelNotRegistered(_) => vec![(
            Level::Error,
            format!("model_event: model not registered for event {text}"),
        )],
        EventProblem::UnknownStream => vec![(
            Level::Error,
            format!("emu_step: event from unknown stream: {rel}"),
        )],
        p => report::ovni_event_lines(mcv, p)
            .into_iter()
            .map(|l| (Level::Error, l))
            .collect(),
    }
}

/// The event loop: the model, the channels and where each index goes.
struct Emu {
    model: OvniModel,
    chans: Channels,
    /// Channel index of each mark type (by type, `[0, 100)`).
    mark_k: [u8; 100],
    events: u64,
    /// Time of the current event (relative to the first).
    dclock: i64,
    /// When each thread began its current flush.
    flush_start: Vec<i64>,
    /// Warnings of the current event, printed after it.
    notes: Vec<String>,
}

fn state_code(s: ThreadState) -> (i64, bool) {
    match s {
        ThreadState::Unknown => (0, false),
        ThreadState::Running => (1, true),
        ThreadState::Paused => (2, false),
        ThreadState::Dead => (3, false),
        ThreadState::Cooling => (4, true),
        ThreadState::Warming => (5, true),
    }
}

impl Emu {
    fn new(setup: &Setup, marks: &MarkList, outputs: &mut Outputs) -> Self {
        let model = OvniModel::new(&setup.sys);
        let types: Vec<i64> = marks.types.iter().map(|m| m.0).collect();
        let chans = Channels::new(
            &setup.layout.th_ids,
            model.ncpus(),
            &types,
            &mut outputs.cpu,
            &mut outputs.thread,
        );
        let mut mark_k = [u8::MAX; 100];
        for (k, &ty) in types.iter().enumerate() {
            if let Some(slot) = usize::try_from(ty).ok().and_then(|t| mark_k.get_mut(t)) {
                *slot = k as u8;
            }
        }
        Self {
            flush_start: vec![0; setup.sys.threads.len()],
            model,
            chans,
            mark_k,
            events: 0,
            dclock: 0,
            notes: Vec::new(),
        }
    }

    /// Plays every event; `Err` after an error was reported.
    fn play(
        &mut self,
        streams: &[Stream],
        setup: &Setup,
        outputs: &mut Outputs,
        out: &mut Out<'_>,
    ) -> Result<(), Error> {
        let merger = Merger::new(streams).with_clock_offsets(setup.offsets.clone());
        let mut last = vec![0i64; streams.len()];
        let mut first: Option<i64> = None;
        let step_failed = |out: &mut Out<'_>, mut lines: Vec<String>| {
            lines.push("player_step: step_stream() failed".to_string());
            lines.push("emu_step: player_step failed".to_string());
            lines.push("main: emu_step failed".to_string());
            out.errors(&lines);
        };
        for item in merger {
            let m = match item {
                Ok(m) => m,
                Err(Error::Stream {
                    path,
                    offset,
                    problem,
                }) => {
                    let rel = streams
                        .iter()
                        .find(|s| s.obs_path() == path)
                        .map(Stream::name)
                        .unwrap_or_default();
                    step_failed(out, report::stream_step_lines(&rel, &problem, offset));
                    return Err(Error::Stream {
                        path,
                        offset,
                        problem,
                    });
                }
                Err(e) => {
                    out.errors(&[e.to_string(), "main: emu_step failed".into()]);
                    return Err(e);
                }
            };
            let s = m.stream;
            let stream = streams.get(s);
            let rel = || stream.map(Stream::name).unwrap_or_default();
            if let Some(prev) = last.get_mut(s) {
                if m.sclock < *prev {
                    let p = StreamProblem::ClockBackwards {
                        prev: *prev,
                        clock: m.sclock,
                    };
                    step_failed(out, report::stream_step_lines(&rel(), &p, m.offset));
                    return Err(match stream {
                        Some(st) => st.error(m.offset, p),
                        None => Error::NoStreams(PathBuf::new()),
                    });
                }
                *prev = m.sclock;
            }
            if let Some(from) = m.backwards_from {
                out.errors(&[
                    format!(
                        "update_clocks: backwards jump in time {from} -> {} in stream '{}'",
                        m.sclock,
                        rel()
                    ),
                    "player_step: update_clocks failed".to_string(),
                    "emu_step: player_step failed".to_string(),
                    "main: emu_step failed".to_string(),
                ]);
                let p = StreamProblem::ClockBackwards {
                    prev: from,
                    clock: m.sclock,
                };
                return Err(match stream {
                    Some(st) => st.error(m.offset, p),
                    None => Error::NoStreams(PathBuf::new()),
                });
            }
            let t0 = *first.get_or_insert(m.sclock);
            let dclock = m.sclock.wrapping_sub(t0);
            outputs.advance(dclock);
            self.dclock = dclock;
            self.events += 1;
            let ev = &m.event;
            let played = match setup.roles.get(s) {
                Some(Role::Thread(t)) => self.event(*t, ev, setup),
                _ => Err(EventProblem::UnknownStream),
            };
            if let Err(problem) = played {
                let mut lines = rejected_lines(ev.mcv, &problem, &rel());
                let e = |s: String| (Level::Error, s);
                lines.push(e("emu_step: model_event failed".to_string()));
                lines.extend(
                    report::panic_lines(
                        ev.mcv,
                        ev.signed_clock(),
                        m.sclock,
                        dclock,
                        ev.payload.len(),
                        ev.is_jumbo(),
                        &rel(),
                        m.offset,
                        setup.offsets.get(s).copied().unwrap_or(0),
                    )
                    .into_iter()
                    .map(e),
                );
                lines.push(e("main: emu_step failed".to_string()));
                out.lines(&lines);
                return Err(Error::Event {
                    stream: rel(),
                    offset: m.offset,
                    mcv: ev.mcv,
                    clock: ev.signed_clock(),
                    problem,
                });
            }
            if !self.notes.is_empty() {
                for n in self.notes.drain(..) {
                    out.warn(&n);
                }
            }
            self.chans.propagate(&mut outputs.cpu, &mut outputs.thread);
            if outputs.cpu.failed() || outputs.thread.failed() {
                // The error itself comes when the files are closed.
                out.errors(&["emu_step: cannot write the Paraver files".into()]);
                return Err(Error::Io {
                    path: outputs.dir.clone(),
                    source: std::io::Error::other("cannot write the Paraver files"),
                });
            }
        }
        Ok(())
    }

    /// Plays one event of thread `t`; the error lines if it is rejected.
    #[inline]
    fn event(&mut self, t: usize, ev: &Event<'_>, setup: &Setup) -> Result<(), EventProblem> {
        let id = ev.mcv.model();
        if id != b'O' {
            return Err(match EventTable::builtin().model(id) {
                Some(m) => EventProblem::ModelNotEnabled {
                    model: m.name.clone(),
                    version: m.version.clone(),
                },
                None => EventProblem::ModelNotRegistered(id),
            });
        }
        let [_, c, v] = ev.mcv.0;
        let payload = ev.jumbo_data().unwrap_or(ev.payload);
        // The thread whose CPU an affinity event moves, and its CPU before.
        let moved = match (c, v) {
            (b'A', b'r') => self.model.remote_target(t, payload),
            _ => Some(t),
        };
        let before = moved.and_then(|m| self.model.cpu(m));
        self.model.event(t, ev)?;
        self.apply(t, c, v, payload, moved, before, setup);
        Ok(())
    }

    /// Sets the channels an accepted event changes, in ovniemu's order.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn apply(
        &mut self,
        t: usize,
        c: u8,
        v: u8,
        payload: &[u8],
        moved: Option<usize>,
        before: Option<u32>,
        setup: &Setup,
    ) {
        let layout = &setup.layout;
        let row = |t: usize| layout.th_row.get(t).copied().unwrap_or(0);
        let r = row(t);
        match (c, v) {
            (b'H', b'C') => {}
            (b'H', b'x') => {
                let cpu = self.model.cpu(t);
                self.chans
                    .thread_cpu(r, cpu.map(|c| self.cpu_row(layout, c)));
                self.thread_state(t, r);
                self.cpu_update(layout, cpu);
            }
            (b'H', b'e') => {
                self.thread_state(t, r);
                self.cpu_update(layout, before);
                self.chans.thread_cpu(r, None);
            }
            (b'H', _) => {
                self.thread_state(t, r);
                self.cpu_update(layout, self.model.cpu(t));
            }
            (b'A', _) => {
                let Some(mt) = moved else { return };
                let after = self.model.cpu(mt);
                if after != before {
                    self.cpu_update(layout, before);
                    self.cpu_update(layout, after);
                    self.chans
                        .thread_cpu(row(mt), after.map(|c| self.cpu_row(layout, c)));
                }
            }
            (b'F', b'[') => {
                if let Some(f) = self.flush_start.get_mut(t) {
                    *f = self.dclock;
                }
                self.chans.flush(r, Some(1));
            }
            (b'F', b']') => {
                self.chans.flush(r, None);
                let start = self.flush_start.get(t).copied().unwrap_or(self.dclock);
                let ms = self.dclock.wrapping_sub(start) as f64 * 1e-6;
                if ms > 10.0 && self.model.state(t) == ThreadState::Running {
                    let tid = setup.sys.threads.get(t).map_or(0, |m| m.tid);
                    self.notes.push(format!(
                        "large flush of {ms:.1} ms at dclock={} ns in tid={tid}",
                        self.dclock
                    ));
                }
            }
            (b'C', b'n') => self.notes.push("ignoring old event OCn".to_string()),
            (b'M', _) => {
                let value = payload
                    .first_chunk::<8>()
                    .map_or(0, |b| i64::from_le_bytes(*b));
                let ty = payload
                    .get(8..12)
                    .and_then(|b| b.first_chunk::<4>())
                    .map_or(0, |b| i64::from(i32::from_le_bytes(*b)));
                let Some(&k) = usize::try_from(ty).ok().and_then(|i| self.mark_k.get(i)) else {
                    return;
                };
                if k == u8::MAX {
                    return;
                }
                let v = if v == b'=' {
                    Some(value)
                } else {
                    self.model
                        .mark_index(ty)
                        .and_then(|i| self.model.mark_stack(t, i).last().copied())
                };
                self.chans.mark(r, usize::from(k), v);
            }
            _ => {}
        }
    }

    fn cpu_row(&self, layout: &Layout, c: u32) -> usize {
        layout.cpu_row.get(c as usize).copied().unwrap_or(0)
    }

    fn thread_state(&mut self, t: usize, r: usize) {
        let (code, active) = state_code(self.model.state(t));
        self.chans.thread_state(r, code, active);
    }

    fn cpu_update(&mut self, layout: &Layout, cpu: Option<u32>) {
        let Some(c) = cpu else { return };
        let (n, running) = self.model.running_on(c);
        let running = running.and_then(|t| layout.th_row.get(t).copied());
        let row = self.cpu_row(layout, c);
        self.chans.cpu_update(row, running, n);
    }

    /// The end checks: every thread dead (and, in linter mode, no mark left pushed), in row
    /// order.
    fn end_checks(&self, setup: &Setup, lint: bool) -> (Vec<String>, Option<Error>) {
        let mut lines = Vec::new();
        let mut first = None;
        for &t in &setup.layout.row_thread {
            let Some(meta) = setup.sys.threads.get(t) else {
                continue;
            };
            let tid = meta.tid;
            let state = self.model.state(t);
            if state != ThreadState::Dead {
                lines.push(format!(
                    "model_ovni_finish: thread {tid} is not dead (thread.{tid})"
                ));
                first.get_or_insert_with(|| {
                    Error::Trace(TraceProblem::ThreadNotDead {
                        stream: meta.stream.clone(),
                        tid,
                        state,
                    })
                });
            }
            if lint {
                for &ty in setup.sys.marks.keys() {
                    let Some(i) = self.model.mark_index(ty) else {
                        continue;
                    };
                    let n = self.model.mark_stack(t, i).len();
                    if n > 0 {
                        lines.push(format!(
                            "model_ovni_finish: thread {tid} ends with {n} values pushed on mark type {ty} (thread.{tid})"
                        ));
                        first.get_or_insert_with(|| {
                            Error::Trace(TraceProblem::MarksLeftPushed {
                                stream: meta.stream.clone(),
                                tid,
                                mark: ty,
                                depth: n,
                            })
                        });
                    }
                }
            }
        }
        (lines, first)
    }
}
