//! The runtime's own ovni trace: the calling thread's life cycle and marks for every
//! checkpoint (per level, with its id and size in the label) and its phases, so that Paraver
//! shows what the checkpoints cost over time.
//!
//! Mark types (stack marks, pushed and popped around the work):
//! * 40 "FTI level": value = level number (1..4), labels "L1 checkpoint" ... "L4 checkpoint";
//! * 41 "FTI checkpoint": value = checkpoint id, label "checkpoint <id> at L<k>: <bytes> bytes";
//! * 42 "FTI phase": 1 "write (hash + write data)", 2 "publish (fsync, rename, retire)",
//!   3 "verify (restart)", 4 "recover (copy)", 5 "flush to L4".
//!
//! Off unless asked for (config `trace`, or `FTI_TRACE=1`); when off, the runtime holds `None`
//! and pays one branch per checkpoint.

use std::collections::HashSet;
use std::path::Path;

use ovni::write::{Process, ThreadStream, MARK_STACK};

use crate::config::Level;

const MARK_LEVEL: i32 = 40;
const MARK_CKPT: i32 = 41;
const MARK_PHASE: i32 = 42;

/// A phase of the runtime's work, a value of the "FTI phase" mark.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    Write = 1,
    Publish = 2,
    Verify = 3,
    Recover = 4,
    Flush = 5,
    Partner = 6,
}

const PHASES: [(Phase, &str); 6] = [
    (Phase::Write, "write (hash + write data)"),
    (Phase::Publish, "publish (fsync, rename, retire)"),
    (Phase::Verify, "verify (restart)"),
    (Phase::Recover, "recover (copy)"),
    (Phase::Flush, "flush to L4"),
    (Phase::Partner, "L2 partner copy (send + receive)"),
];

/// The trace of the thread that drives the runtime.
pub(crate) struct Tracer {
    stream: ThreadStream,
    labelled: HashSet<i64>,
    /// Marks pushed and not yet popped, so an error midway can close them in order.
    open: Vec<(i32, i64)>,
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
    pub(crate) fn start(dir: &Path, rank: u32, nranks: u32) -> ovni::Result<Tracer> {
        let pid = std::process::id() as i32;
        let tid = thread_id().unwrap_or(pid);
        let process = Process::init(dir, 1, &host_name(), pid)?;
        let mut stream = process.thread_init(tid)?;
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        for cpu in 0..cpus as i32 {
            stream.add_cpu(cpu, cpu)?;
        }
        stream.set_rank(rank as i32, nranks.max(1) as i32)?;
        stream.mark_type(MARK_LEVEL, MARK_STACK, "FTI level")?;
        for level in Level::ALL {
            stream.mark_label(
                MARK_LEVEL,
                level.number().into(),
                &format!("{level} checkpoint"),
            )?;
        }
        stream.mark_type(MARK_CKPT, MARK_STACK, "FTI checkpoint")?;
        stream.mark_type(MARK_PHASE, MARK_STACK, "FTI phase")?;
        for (phase, label) in PHASES {
            stream.mark_label(MARK_PHASE, phase as i64, label)?;
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
            stream,
            labelled: HashSet::new(),
            open: Vec::new(),
        })
    }

    fn push(&mut self, ty: i32, value: i64) -> ovni::Result<()> {
        self.stream.mark_push(ty, value)?;
        self.open.push((ty, value));
        Ok(())
    }

    fn pop(&mut self, ty: i32, value: i64) -> ovni::Result<()> {
        if let Some(pos) = self.open.iter().rposition(|&m| m == (ty, value)) {
            self.open.remove(pos);
        }
        self.stream.mark_pop(ty, value)
    }

    /// Pops every open mark, newest first (after an error interrupted the work).
    pub(crate) fn close_all(&mut self) -> ovni::Result<()> {
        while let Some((ty, value)) = self.open.pop() {
            self.stream.mark_pop(ty, value)?;
        }
        Ok(())
    }

    pub(crate) fn begin_checkpoint(&mut self, id: i32, level: Level) -> ovni::Result<()> {
        self.push(MARK_LEVEL, level.number().into())?;
        // Mark values must not be 0; checkpoint ids are > 0 in practice, 0 is shown as -1.
        self.push(MARK_CKPT, ckpt_value(id))
    }

    pub(crate) fn end_checkpoint(&mut self, id: i32, level: Level, bytes: u64) -> ovni::Result<()> {
        let value = ckpt_value(id);
        if self.labelled.insert(value) {
            self.stream.mark_label(
                MARK_CKPT,
                value,
                &format!("checkpoint {id} at {level}: {bytes} bytes"),
            )?;
        }
        self.pop(MARK_CKPT, value)?;
        self.pop(MARK_LEVEL, level.number().into())?;
        // Written out at every checkpoint, so that the trace of a run that crashes later
        // still shows its checkpoints (a few hundred bytes per checkpoint), with the
        // metadata (the new label) replaced atomically.
        self.stream.flush()?;
        self.stream.attr_flush()
    }

    pub(crate) fn begin(&mut self, phase: Phase) -> ovni::Result<()> {
        self.push(MARK_PHASE, phase as i64)
    }

    pub(crate) fn end(&mut self, phase: Phase) -> ovni::Result<()> {
        self.pop(MARK_PHASE, phase as i64)
    }

    /// Ends the thread (`OHe`) and writes the finished stream.
    pub(crate) fn finish(mut self) -> ovni::Result<()> {
        self.close_all()?;
        self.stream.emit(ovni::Mcv(*b"OHe"), &[])?;
        self.stream.finish()
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
