//! The runtime's own ovni trace: the calling thread's life cycle and marks for every
//! checkpoint (per level, with its id and size in the label) and its phases, so that Paraver
//! shows what the checkpoints cost over time.
//!
//! Mark types (stack marks, pushed and popped around the work), at `B`, `B+1`, `B+2` where `B`
//! is `[basic] trace_mark_base` (default 40):
//! * B "FTI level": value = level number (1..4), labels "L1 checkpoint" ... "L4 checkpoint";
//! * B+1 "FTI checkpoint": value = checkpoint id, label `checkpoint <id> at L<k>: <bytes> bytes`;
//! * B+2 "FTI phase": 1 "write (hash + write data)", 2 "publish (fsync, rename, retire)",
//!   3 "verify (restart)", 4 "recover (copy)", 5 "flush to L4", 6 "L2 partner copy", 7 "stage
//!   (copy for an asynchronous checkpoint)", 8 "wait (for the background's previous work)".
//!
//! Off unless asked for (config `trace`, or `FTI_TRACE=1`); when off, the runtime holds `None`
//! and pays one branch per checkpoint. The runtime writes its own stream, or, when the
//! application already traces the calling thread with its libovni ([`AppOvni`]), emits its
//! marks into the application's stream: two writers on one `thread.<tid>` stream would corrupt
//! it.

use std::collections::HashSet;
use std::path::Path;

use ovni::write::{Process, ThreadStream, MARK_STACK};

use crate::config::Level;

/// Mark types the runtime defines (level, checkpoint, phase).
pub const MARK_TYPES: i32 = 3;

/// The titles of the mark types `B`, `B+1`, `B+2`.
const TITLES: [&str; MARK_TYPES as usize] = ["FTI level", "FTI checkpoint", "FTI phase"];

/// The mark functions of the libovni an application already uses in the calling thread
/// (`ovni_attr_has`, `ovni_attr_get_str`, `ovni_mark_type`, `ovni_mark_label`,
/// `ovni_mark_push`, `ovni_mark_pop`). The C API finds them in the process; the runtime then
/// emits its marks through them instead of writing a stream of its own.
pub trait AppOvni: Send {
    /// Whether the thread's metadata holds `key`.
    fn attr_has(&self, key: &str) -> bool;
    /// The string at `key`, if it is one.
    fn attr_str(&self, key: &str) -> Option<String>;
    /// Defines a stack mark type.
    fn mark_type(&self, ty: i32, title: &str);
    /// Labels a value of a mark type.
    fn mark_label(&self, ty: i32, value: i64, label: &str);
    /// `OM[`.
    fn mark_push(&self, ty: i32, value: i64);
    /// `OM]`.
    fn mark_pop(&self, ty: i32, value: i64);
}

/// Where the marks go.
enum Sink {
    /// The runtime's own stream.
    Own(ThreadStream),
    /// The application's libovni.
    App(Box<dyn AppOvni>),
}

/// A phase of the runtime's work, a value of the "FTI phase" mark.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    Write = 1,
    Publish = 2,
    Verify = 3,
    Recover = 4,
    Flush = 5,
    Partner = 6,
    Stage = 7,
    Wait = 8,
    Encode = 9,
}

const PHASES: [(Phase, &str); 9] = [
    (Phase::Write, "write (hash + write data)"),
    (Phase::Publish, "publish (fsync, rename, retire)"),
    (Phase::Verify, "verify (restart)"),
    (Phase::Recover, "recover (copy)"),
    (Phase::Flush, "flush to L4"),
    (Phase::Partner, "L2 partner copy (send + receive)"),
    (Phase::Stage, "stage (copy for an asynchronous checkpoint)"),
    (Phase::Wait, "wait (for the background's previous work)"),
    (
        Phase::Encode,
        "L3 encode (Reed-Solomon code across the group)",
    ),
];

/// The trace of the thread that drives the runtime.
pub(crate) struct Tracer {
    sink: Sink,
    /// The first of the runtime's mark types.
    base: i32,
    labelled: HashSet<i64>,
    /// Marks pushed and not yet popped, so an error midway can close them in order.
    open: Vec<(i32, i64)>,
    /// How to open another thread's stream in the same process (own streams only).
    spec: Option<TracerSpec>,
    /// The thread is Paused, waiting for work (own streams only).
    paused: bool,
}

/// The calling thread's id, from `/proc/thread-self` (no `unsafe` needed).
fn thread_id() -> Option<i32> {
    let link = std::fs::read_link("/proc/thread-self").ok()?;
    link.file_name()?.to_str()?.parse().ok()
}

fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().replace('/', "_"))
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".to_owned())
}

impl Tracer {
    /// Starts the trace under `dir` (`loom.<host>/proc.<pid>/thread.<tid>`): the ovni model,
    /// the loom's CPUs, the rank, the mark types, and the thread's execution on the loom's
    /// virtual CPU (ranks of one node may share CPUs).
    pub(crate) fn start(dir: &Path, rank: u32, nranks: u32, base: i32) -> ovni::Result<Tracer> {
        let pid = std::process::id() as i32;
        let process = Process::init(dir, 1, &host_name(), pid)?;
        TracerSpec {
            process,
            rank,
            nranks,
            base,
        }
        .start_here()
    }

    /// What another thread of the runtime (its background thread) needs to trace into a
    /// stream of its own in the same process; `None` when the marks go to the application's
    /// libovni, which does not trace the runtime's threads.
    pub(crate) fn spec(&self) -> Option<TracerSpec> {
        self.spec.clone()
    }
}

/// A thread stream to open: the process, the rank and the runtime's first mark type.
#[derive(Clone)]
pub(crate) struct TracerSpec {
    process: Process,
    rank: u32,
    nranks: u32,
    base: i32,
}

impl TracerSpec {
    /// Opens the calling thread's stream: the ovni model, the loom's CPUs, the rank, the mark
    /// types, and the thread's execution on the loom's virtual CPU (ranks of one node may
    /// share CPUs).
    pub(crate) fn start_here(self) -> ovni::Result<Tracer> {
        let TracerSpec {
            process,
            rank,
            nranks,
            base,
        } = self.clone();
        let pid = std::process::id() as i32;
        let tid = thread_id().unwrap_or(pid);
        let mut stream = process.thread_init(tid)?;
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        for cpu in 0..cpus as i32 {
            stream.add_cpu(cpu, cpu)?;
        }
        let nranks = nranks.max(1) as i32;
        stream.set_rank(rank as i32, nranks)?;
        // In the first `stream.json` already (libovni writes the rank only when the thread
        // ends): the trace of a process killed mid-run still says which rank it was.
        stream.attr_set("ovni.rank", rank)?;
        stream.attr_set("ovni.nranks", nranks)?;
        stream.mark_type(base, MARK_STACK, TITLES[0])?;
        for level in Level::ALL {
            stream.mark_label(base, level.number().into(), &format!("{level} checkpoint"))?;
        }
        stream.mark_type(base + 1, MARK_STACK, TITLES[1])?;
        stream.mark_type(base + 2, MARK_STACK, TITLES[2])?;
        for (phase, label) in PHASES {
            stream.mark_label(base + 2, phase as i64, label)?;
        }
        let mut payload = [0u8; 16];
        payload[..4].copy_from_slice(&(-1i32).to_le_bytes());
        payload[4..8].copy_from_slice(&(-1i32).to_le_bytes());
        stream.emit(ovni::Mcv(*b"OHx"), &payload)?;
        // `stream.json` right away (model required, mark types and labels, rank, CPUs), and
        // again at every checkpoint: a process killed mid-run leaves a trace whose only
        // problem is that it is not finished, with its marks still labelled. (libovni writes
        // it only at the end; `ovni::write` keeps that behaviour for applications.)
        stream.attr_flush()?;
        Ok(Tracer {
            sink: Sink::Own(stream),
            base,
            labelled: HashSet::new(),
            open: Vec::new(),
            spec: Some(self),
            paused: false,
        })
    }
}

impl Tracer {
    /// Traces into the application's stream through its libovni: the runtime's mark types and
    /// labels are defined there (once per thread: an earlier session's definitions are
    /// reused). A type the application uses for something else is refused, naming it.
    pub(crate) fn start_app(app: Box<dyn AppOvni>, base: i32) -> Result<Tracer, String> {
        for (i, title) in TITLES.iter().enumerate() {
            let ty = base + i as i32;
            let key = format!("ovni.mark.{ty}.title");
            if app.attr_has(&key) {
                match app.attr_str(&key) {
                    Some(t) if t == *title => continue,
                    other => {
                        return Err(format!(
                            "the application's trace already defines mark type {ty} ({}): choose another [basic] trace_mark_base (the runtime uses {} types from it)",
                            other.unwrap_or_default(),
                            MARK_TYPES
                        ))
                    }
                }
            }
            app.mark_type(ty, title);
        }
        let label = |ty: i32, value: i64, text: &str| {
            if !app.attr_has(&format!("ovni.mark.{ty}.labels.{value}")) {
                app.mark_label(ty, value, text);
            }
        };
        for level in Level::ALL {
            label(base, level.number().into(), &format!("{level} checkpoint"));
        }
        for (phase, text) in PHASES {
            label(base + 2, phase as i64, text);
        }
        Ok(Tracer {
            sink: Sink::App(app),
            base,
            labelled: HashSet::new(),
            open: Vec::new(),
            spec: None,
            paused: false,
        })
    }

    /// Whether the marks go to the application's libovni.
    pub(crate) fn in_app_stream(&self) -> bool {
        matches!(self.sink, Sink::App(_))
    }

    fn push(&mut self, ty: i32, value: i64) -> ovni::Result<()> {
        match &mut self.sink {
            Sink::Own(stream) => stream.mark_push(ty, value)?,
            Sink::App(app) => app.mark_push(ty, value),
        }
        self.open.push((ty, value));
        Ok(())
    }

    fn pop_mark(&mut self, ty: i32, value: i64) -> ovni::Result<()> {
        match &mut self.sink {
            Sink::Own(stream) => stream.mark_pop(ty, value),
            Sink::App(app) => {
                app.mark_pop(ty, value);
                Ok(())
            }
        }
    }

    /// Pops a mark pushed before; one already closed (by [`Tracer::close_all`] after an
    /// error) is not popped twice.
    fn pop(&mut self, ty: i32, value: i64) -> ovni::Result<()> {
        match self.open.iter().rposition(|&m| m == (ty, value)) {
            Some(pos) => {
                self.open.remove(pos);
                self.pop_mark(ty, value)
            }
            None => Ok(()),
        }
    }

    /// Pops every open mark, newest first (after an error interrupted the work).
    pub(crate) fn close_all(&mut self) -> ovni::Result<()> {
        while let Some((ty, value)) = self.open.pop() {
            self.pop_mark(ty, value)?;
        }
        Ok(())
    }

    pub(crate) fn begin_checkpoint(&mut self, id: i32, level: Level) -> ovni::Result<()> {
        self.push(self.base, level.number().into())?;
        // Mark values must not be 0; checkpoint ids are > 0 in practice, 0 is shown as -1.
        self.push(self.base + 1, ckpt_value(id))
    }

    pub(crate) fn end_checkpoint(&mut self, id: i32, level: Level, bytes: u64) -> ovni::Result<()> {
        let value = ckpt_value(id);
        let ty = self.base + 1;
        if self.labelled.insert(value) {
            let text = format!("checkpoint {id} at {level}: {bytes} bytes");
            match &mut self.sink {
                Sink::Own(stream) => stream.mark_label(ty, value, &text)?,
                // libovni refuses a second label for a value (even the same text): an id
                // labelled by an earlier session of this thread keeps its first label.
                Sink::App(app) => {
                    if value > 0 && !app.attr_has(&format!("ovni.mark.{ty}.labels.{value}")) {
                        app.mark_label(ty, value, &text);
                    }
                }
            }
        }
        self.pop(ty, value)?;
        self.pop(self.base, level.number().into())?;
        match &mut self.sink {
            // Written out at every checkpoint, so that the trace of a run that crashes later
            // still shows its checkpoints (a few hundred bytes per checkpoint), with the
            // metadata (the new label) replaced atomically.
            Sink::Own(stream) => {
                stream.flush()?;
                stream.attr_flush()
            }
            // The application's buffer and metadata are the application's to write.
            Sink::App(_) => Ok(()),
        }
    }

    pub(crate) fn begin(&mut self, phase: Phase) -> ovni::Result<()> {
        self.push(self.base + 2, phase as i64)
    }

    pub(crate) fn end(&mut self, phase: Phase) -> ovni::Result<()> {
        self.pop(self.base + 2, phase as i64)
    }

    /// The thread waits for work: Paused (`OHp`) until [`Tracer::resume`]. Only the runtime's
    /// own streams (its background thread); the application's thread state is its own.
    pub(crate) fn pause(&mut self) -> ovni::Result<()> {
        self.set_paused(true)
    }

    /// The thread has work again: Running (`OHr`).
    pub(crate) fn resume(&mut self) -> ovni::Result<()> {
        self.set_paused(false)
    }

    fn set_paused(&mut self, paused: bool) -> ovni::Result<()> {
        if let Sink::Own(stream) = &mut self.sink {
            if self.paused != paused {
                stream.emit(ovni::Mcv(if paused { *b"OHp" } else { *b"OHr" }), &[])?;
                self.paused = paused;
            }
        }
        Ok(())
    }

    /// Ends the runtime's own thread stream (`OHe`) and writes it finished; in the
    /// application's stream only the open marks are closed.
    pub(crate) fn finish(mut self) -> ovni::Result<()> {
        self.close_all()?;
        self.resume()?;
        match self.sink {
            Sink::Own(mut stream) => {
                stream.emit(ovni::Mcv(*b"OHe"), &[])?;
                stream.finish()
            }
            Sink::App(_) => Ok(()),
        }
    }
}

fn ckpt_value(id: i32) -> i64 {
    if id == 0 {
        -1
    } else {
        id.into()
    }
}

/// Runs `f` on the tracer if tracing is on; a tracing failure turns tracing off with a
/// warning instead of failing the checkpoint.
pub(crate) fn with(
    tracer: &mut Option<Tracer>,
    messages: &crate::report::Messages,
    f: impl FnOnce(&mut Tracer) -> ovni::Result<()>,
) {
    if let Some(t) = tracer {
        if let Err(e) = f(t) {
            messages.warn(&format!("tracing stopped: {e}"));
            *tracer = None;
        }
    }
}
