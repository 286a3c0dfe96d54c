//! Writing traces with libovni's model (`docs/ovni-format.md`, *Writer*).
//!
//! A [`Process`] is created once per process (`ovni_proc_init`) and shared between threads;
//! each thread creates its own [`ThreadStream`] (`ovni_thread_init`) and emits into a private
//! buffer, so the emit path takes no lock. Differences from libovni, on purpose:
//!
//! * the buffer is written out by [`ThreadStream::finish`] (and, best effort, on drop), so
//!   events after the last flush and the `OF[`/`OF]` pair of an explicit flush are kept;
//! * `stream.obs` is truncated when the thread starts, so re-running into an existing trace
//!   leaves no stale events behind;
//! * with a temporary directory ([`Process::init_staged`], libovni's `OVNI_TMPDIR`), finished
//!   streams are moved with `rename` when possible, and copied only across file systems;
//! * misuse returns [`Error::Usage`] instead of aborting the process.

mod meta;
#[cfg(test)]
mod tests;

use std::collections::HashSet;
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::error::{Error, Result, UsageError};
use crate::raw::{self, Mcv, EV_HEADER_SIZE, JUMBO_HEADER_SIZE, MAX_PAYLOAD};

pub use meta::normalize_numbers;

/// Default per-thread event buffer size, as libovni's `OVNI_MAX_EV_BUF`.
pub const DEFAULT_BUFFER_SIZE: usize = 2 * 1024 * 1024;
/// Version of the ovni model this writer produces, required by every thread.
pub const OVNI_MODEL_VERSION: &str = "1.1.0";
/// libovni version whose stream layout and metadata keys this writer reproduces.
pub const LIB_VERSION: &str = "1.14.0";
/// Value written as `ovni.lib.commit`: names this implementation instead of a libovni commit.
pub const LIB_COMMIT: &str = concat!("ovni-rs-", env!("CARGO_PKG_VERSION"));
/// Mark flag: the mark type is a stack (push/pop) instead of single values (set).
pub const MARK_STACK: u32 = 1;
/// Size of an event image for [`ThreadStream::emit_image`]: libovni's `struct ovni_ev`.
pub const EV_IMAGE_SIZE: usize = EV_HEADER_SIZE + MAX_PAYLOAD;

// Room after the buffer's nominal size so the event that triggers a flush, and the two
// flush events after it, never reallocate the buffer.
const BUFFER_SLACK: usize = 2 * (EV_HEADER_SIZE + MAX_PAYLOAD) + EV_HEADER_SIZE * 2;

/// `CLOCK_MONOTONIC` in nanoseconds, the clock libovni uses.
#[inline]
pub fn clock_now() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    let secs = u64::try_from(t.tv_sec).unwrap_or(0);
    let nanos = u64::try_from(t.tv_nsec).unwrap_or(0);
    secs.wrapping_mul(1_000_000_000).wrapping_add(nanos)
}

#[derive(Debug)]
struct ProcInner {
    /// Where the streams are written while the threads run.
    procdir: PathBuf,
    staging: Option<Staging>,
    loom: String,
    pid: i32,
    app_id: i32,
    buffer_size: usize,
    tids: Mutex<HashSet<i32>>,
}

/// Where a staged process's streams end up, and the temporary tree to clean up.
#[derive(Debug)]
struct Staging {
    final_procdir: PathBuf,
    tmpdir: PathBuf,
}

/// A traced process: `ovni_proc_init(app_id, loom, pid)`. Cheap to clone and share.
#[derive(Debug, Clone)]
pub struct Process {
    inner: Arc<ProcInner>,
}

impl Process {
    /// Creates `<tracedir>/loom.<loom>/proc.<pid>/` with the default buffer size.
    pub fn init(tracedir: impl AsRef<Path>, app_id: i32, loom: &str, pid: i32) -> Result<Self> {
        Self::with_buffer_size(tracedir, app_id, loom, pid, DEFAULT_BUFFER_SIZE)
    }

    /// As [`Process::init`] with a per-thread buffer of `buffer_size` bytes (at least 64).
    pub fn with_buffer_size(
        tracedir: impl AsRef<Path>,
        app_id: i32,
        loom: &str,
        pid: i32,
        buffer_size: usize,
    ) -> Result<Self> {
        Self::build(tracedir.as_ref(), None, app_id, loom, pid, buffer_size)
    }

    /// As [`Process::init`], but the streams are written under `tmpdir` while the threads
    /// run, and each thread's files are moved into `tracedir` when it finishes (libovni's
    /// `OVNI_TMPDIR`: a node-local disk that is faster than the trace's file system). Both
    /// process directories are created now.
    pub fn init_staged(
        tmpdir: impl AsRef<Path>,
        tracedir: impl AsRef<Path>,
        app_id: i32,
        loom: &str,
        pid: i32,
    ) -> Result<Self> {
        Self::build(
            tmpdir.as_ref(),
            Some(tracedir.as_ref()),
            app_id,
            loom,
            pid,
            DEFAULT_BUFFER_SIZE,
        )
    }

    fn build(
        dir: &Path,
        final_dir: Option<&Path>,
        app_id: i32,
        loom: &str,
        pid: i32,
        buffer_size: usize,
    ) -> Result<Self> {
        if pid == 0 {
            return Err(UsageError::ZeroId("pid").into());
        }
        if loom.is_empty() || loom.len() >= 512 || loom.contains('/') {
            return Err(UsageError::BadLoom.into());
        }
        let rel = Path::new(&format!("loom.{loom}")).join(format!("proc.{pid}"));
        let procdir = dir.join(&rel);
        fs::create_dir_all(&procdir).map_err(|e| Error::io(&procdir, e))?;
        let staging = match final_dir {
            Some(f) => {
                let final_procdir = f.join(&rel);
                fs::create_dir_all(&final_procdir).map_err(|e| Error::io(&final_procdir, e))?;
                Some(Staging {
                    final_procdir,
                    tmpdir: dir.to_path_buf(),
                })
            }
            None => None,
        };
        Ok(Self {
            inner: Arc::new(ProcInner {
                procdir,
                staging,
                loom: loom.to_string(),
                pid,
                app_id,
                buffer_size: buffer_size.max(64),
                tids: Mutex::new(HashSet::new()),
            }),
        })
    }

    /// Starts the stream of thread `tid`: creates its directory, writes the stream header
    /// and the initial `stream.json`, and requires the ovni model.
    pub fn thread_init(&self, tid: i32) -> Result<ThreadStream> {
        if tid == 0 {
            return Err(UsageError::ZeroId("tid").into());
        }
        {
            let mut tids = self
                .inner
                .tids
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if !tids.insert(tid) {
                return Err(UsageError::ThreadExists(tid).into());
            }
        }
        ThreadStream::create(&self.inner, tid)
    }

    /// For a staged process, removes the temporary process, loom and top directories where
    /// they are empty (libovni's `ovni_proc_fini`); directories still holding files, such as
    /// streams of threads that did not finish, stay. Returns the first unexpected failure
    /// after trying all three.
    pub fn remove_tmp_dirs(&self) -> Result<()> {
        let Some(st) = &self.inner.staging else {
            return Ok(());
        };
        let procdir = self.inner.procdir.as_path();
        let mut first = Ok(());
        for d in [Some(procdir), procdir.parent(), Some(st.tmpdir.as_path())]
            .into_iter()
            .flatten()
        {
            if let Err(e) = fs::remove_dir(d) {
                use std::io::ErrorKind::{DirectoryNotEmpty, NotFound};
                if first.is_ok() && !matches!(e.kind(), NotFound | DirectoryNotEmpty) {
                    first = Err(Error::io(d, e));
                }
            }
        }
        first
    }

    /// Loom name.
    pub fn loom(&self) -> &str {
        &self.inner.loom
    }

    /// Process id.
    pub fn pid(&self) -> i32 {
        self.inner.pid
    }
}

/// An event being built, like libovni's `struct ovni_ev`: MCV, optional clock and a normal
/// payload added in pieces of at least 2 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ev {
    mcv: Mcv,
    clock: Option<u64>,
    len: usize,
    payload: [u8; MAX_PAYLOAD],
}

impl Ev {
    /// A new event with no payload, clocked at emission.
    pub fn new(mcv: &[u8; 3]) -> Self {
        Self {
            mcv: Mcv(*mcv),
            clock: None,
            len: 0,
            payload: [0; MAX_PAYLOAD],
        }
    }

    /// Sets an explicit clock (any value, as `ovni_ev_set_clock`).
    pub fn clock(mut self, clock: u64) -> Self {
        self.clock = Some(clock);
        self
    }

    /// Appends `bytes` (2 or more, total at most 16) to the payload.
    pub fn payload_add(mut self, bytes: &[u8]) -> Result<Self, UsageError> {
        if bytes.len() < 2 {
            return Err(UsageError::PayloadTooSmall(bytes.len()));
        }
        let end = self.len + bytes.len();
        let dst = self
            .payload
            .get_mut(self.len..end)
            .ok_or(UsageError::PayloadNoSpace {
                have: self.len,
                adding: bytes.len(),
            })?;
        dst.copy_from_slice(bytes);
        self.len = end;
        Ok(self)
    }

    /// The payload so far.
    pub fn payload(&self) -> &[u8] {
        self.payload.get(..self.len).unwrap_or_default()
    }
}

/// The stream of one thread. Not shared: each thread owns its own, so emitting takes no lock.
#[derive(Debug)]
pub struct ThreadStream {
    tid: i32,
    dir: PathBuf,
    /// Where the finished stream is moved (staged processes only).
    final_dir: Option<PathBuf>,
    obs: File,
    buf: Vec<u8>,
    cap: usize,
    meta: meta::Meta,
    finished: bool,
}

impl ThreadStream {
    fn create(proc: &ProcInner, tid: i32) -> Result<Self> {
        let name = format!("thread.{tid}");
        let dir = proc.procdir.join(&name);
        fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
        let final_dir = match &proc.staging {
            Some(st) => {
                let d = st.final_procdir.join(&name);
                fs::create_dir_all(&d).map_err(|e| Error::io(&d, e))?;
                Some(d)
            }
            None => None,
        };
        let obs_path = dir.join("stream.obs");
        let mut obs = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&obs_path)
            .map_err(|e| Error::io(&obs_path, e))?;
        obs.write_all(&raw::stream_header())
            .map_err(|e| Error::io(&obs_path, e))?;
        let cap = proc.buffer_size;
        // Write the pages now so the first pass through the buffer does not page-fault;
        // `vec![0; n]` would get lazily mapped zero pages from calloc instead.
        #[allow(clippy::slow_vector_initialization)]
        let mut buf = {
            let mut b = Vec::with_capacity(cap + BUFFER_SLACK);
            b.resize(cap + BUFFER_SLACK, 0u8);
            b
        };
        buf.clear();
        let meta = meta::Meta::new(tid, proc.pid, &proc.loom, proc.app_id);
        let mut t = Self {
            tid,
            dir,
            final_dir,
            obs,
            buf,
            cap,
            meta,
            finished: false,
        };
        // Like libovni, the first stream.json lacks `require`, so a thread that dies before
        // finishing is recognisable.
        t.attr_flush()?;
        t.meta.require("ovni", OVNI_MODEL_VERSION);
        Ok(t)
    }

    /// Thread id.
    pub fn tid(&self) -> i32 {
        self.tid
    }

    /// Directory of this stream while it is written (for a staged process, the temporary
    /// one).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Requires `model` at `version` (`ovni_thread_require`).
    pub fn require(&mut self, model: &str, version: &str) -> Result<()> {
        if model.len() <= 1 || model.contains([' ', '.']) {
            return Err(UsageError::BadModelName(model.to_string()).into());
        }
        if crate::metadata::parse_version(version).is_none() {
            return Err(UsageError::BadVersion(version.to_string()).into());
        }
        self.meta.require(model, version);
        Ok(())
    }

    /// Adds a CPU of the loom (`ovni_add_cpu`), written at [`ThreadStream::finish`].
    pub fn add_cpu(&mut self, index: i32, phyid: i32) -> Result<()> {
        if index < 0 || phyid < 0 {
            return Err(UsageError::CpuRange.into());
        }
        self.meta.cpus.push((index, phyid));
        Ok(())
    }

    /// Sets the MPI rank of the process (`ovni_proc_set_rank`), written at finish.
    pub fn set_rank(&mut self, rank: i32, nranks: i32) -> Result<()> {
        if rank < 0 || rank >= nranks {
            return Err(UsageError::RankRange { rank, nranks }.into());
        }
        self.meta.rank = Some((rank, nranks));
        Ok(())
    }

    /// Sets the attribute at a dot path (`"a.b.c"`) to any JSON value; integral numbers are
    /// stored as integers, as libovni prints them.
    pub fn attr_set(&mut self, key: &str, value: impl Into<Value>) -> Result<()> {
        self.meta.set(key, normalize_numbers(value.into()))
    }

    /// Sets an attribute from JSON text (`ovni_attr_set_json`).
    pub fn attr_set_json(&mut self, key: &str, json: &str) -> Result<()> {
        let v: Value = serde_json::from_str(json).map_err(|source| Error::Json {
            path: PathBuf::from(key),
            source,
        })?;
        self.attr_set(key, v)
    }

    /// The attribute at a dot path, if set.
    pub fn attr_get(&self, key: &str) -> Option<&Value> {
        self.meta.get(key)
    }

    /// Whether the attribute at a dot path is set.
    pub fn attr_has(&self, key: &str) -> bool {
        self.attr_get(key).is_some()
    }

    /// Rewrites `stream.json` with the current metadata (`ovni_attr_flush`).
    pub fn attr_flush(&mut self) -> Result<()> {
        self.meta.write(&self.dir.join("stream.json"), false)
    }

    /// Defines mark type `ty` in `[0, 100)` (`ovni_mark_type`); `flags` may hold
    /// [`MARK_STACK`].
    pub fn mark_type(&mut self, ty: i32, flags: u32, title: &str) -> Result<()> {
        self.meta.mark_type(ty, flags & MARK_STACK != 0, title)
    }

    /// Labels `value` (> 0) of a mark type defined by this thread (`ovni_mark_label`).
    pub fn mark_label(&mut self, ty: i32, value: i64, label: &str) -> Result<()> {
        self.meta.mark_label(ty, value, label)
    }

    fn mark(&mut self, mcv: &[u8; 3], ty: i32, value: i64) -> Result<()> {
        if value == 0 {
            return Err(UsageError::MarkValue(0).into());
        }
        let mut p = [0u8; 12];
        let (v, t) = p.split_at_mut(8);
        v.copy_from_slice(&value.to_le_bytes());
        t.copy_from_slice(&ty.to_le_bytes());
        self.emit_at(Mcv(*mcv), clock_now(), &p)
    }

    /// Pushes `value` on a stack mark (`OM[`).
    pub fn mark_push(&mut self, ty: i32, value: i64) -> Result<()> {
        self.mark(b"OM[", ty, value)
    }

    /// Pops `value` from a stack mark (`OM]`).
    pub fn mark_pop(&mut self, ty: i32, value: i64) -> Result<()> {
        self.mark(b"OM]", ty, value)
    }

    /// Sets a single mark to `value` (`OM=`).
    pub fn mark_set(&mut self, ty: i32, value: i64) -> Result<()> {
        self.mark(b"OM=", ty, value)
    }

    /// Emits a built event (clocked now unless it has a clock).
    pub fn emit_ev(&mut self, ev: &Ev) -> Result<()> {
        let clock = ev.clock.unwrap_or_else(clock_now);
        self.emit_at(ev.mcv, clock, ev.payload())
    }

    /// Emits a normal event clocked now; `payload` is 0 or 2..=16 bytes.
    #[inline]
    pub fn emit(&mut self, mcv: Mcv, payload: &[u8]) -> Result<()> {
        self.emit_at(mcv, clock_now(), payload)
    }

    /// Emits a normal event with an explicit clock.
    #[inline]
    pub fn emit_at(&mut self, mcv: Mcv, clock: u64, payload: &[u8]) -> Result<()> {
        let size = EV_HEADER_SIZE + payload.len();
        if self.buf.len() + size >= self.cap {
            raw::size_code(payload.len())?;
            return self.emit_flushing(|buf| raw::encode_normal(buf, mcv, clock, payload));
        }
        raw::encode_normal(&mut self.buf, mcv, clock, payload)?;
        Ok(())
    }

    /// Emits a normal event given as libovni's `struct ovni_ev` image, with the clock
    /// little-endian: byte 0 (flags and size code), MCV, clock, then 16 payload bytes of
    /// which the size code says how many belong to the event. Byte 0 is copied as given,
    /// unknown flag bits included, as libovni copies the struct.
    #[inline]
    pub fn emit_image(&mut self, image: &[u8; EV_IMAGE_SIZE]) -> Result<()> {
        let [byte0, ..] = *image;
        if byte0 & raw::FLAG_JUMBO != 0 {
            return Err(UsageError::JumboImage.into());
        }
        let size = EV_HEADER_SIZE + raw::normal_payload_len(byte0);
        if self.buf.len() + size >= self.cap {
            let event = image.get(..size).unwrap_or(image);
            return self.emit_flushing(|buf| {
                buf.extend_from_slice(event);
                Ok(())
            });
        }
        // Copying the whole image is one fixed-size move (the buffer has room past its
        // nominal size); the bytes past the event are then dropped.
        let end = self.buf.len() + size;
        self.buf.extend_from_slice(image);
        self.buf.truncate(end);
        Ok(())
    }

    /// Emits a jumbo event clocked now.
    pub fn emit_jumbo(&mut self, mcv: Mcv, data: &[u8]) -> Result<()> {
        self.emit_jumbo_at(mcv, clock_now(), data)
    }

    /// Emits a jumbo event with an explicit clock; the whole event must be smaller than the
    /// buffer.
    pub fn emit_jumbo_at(&mut self, mcv: Mcv, clock: u64, data: &[u8]) -> Result<()> {
        let size = JUMBO_HEADER_SIZE + data.len();
        if size >= self.cap {
            return Err(UsageError::JumboTooLarge(data.len()).into());
        }
        if self.buf.len() + size >= self.cap {
            return self.emit_flushing(|buf| raw::encode_jumbo(buf, mcv, clock, data));
        }
        raw::encode_jumbo(&mut self.buf, mcv, clock, data)?;
        Ok(())
    }

    /// libovni's automatic flush: write the buffer, then the event, then `OF[`/`OF]` with
    /// the clocks taken around the write.
    #[cold]
    fn emit_flushing(
        &mut self,
        encode: impl FnOnce(&mut Vec<u8>) -> Result<(), UsageError>,
    ) -> Result<()> {
        let t0 = clock_now();
        self.write_buffer()?;
        let t1 = clock_now();
        encode(&mut self.buf)?;
        self.push_flush_events(t0, t1)
    }

    fn push_flush_events(&mut self, t0: u64, t1: u64) -> Result<()> {
        raw::encode_normal(&mut self.buf, Mcv(*b"OF["), t0, &[])?;
        raw::encode_normal(&mut self.buf, Mcv(*b"OF]"), t1, &[])?;
        Ok(())
    }

    fn write_buffer(&mut self) -> Result<()> {
        if !self.buf.is_empty() {
            let r = self.obs.write_all(&self.buf);
            self.buf.clear();
            r.map_err(|e| Error::io(self.dir.join("stream.obs"), e))?;
        }
        Ok(())
    }

    /// Writes the buffer out (`ovni_flush`); the `OF[`/`OF]` pair timing it goes into the
    /// next write, as in libovni.
    pub fn flush(&mut self) -> Result<()> {
        let t0 = clock_now();
        self.write_buffer()?;
        let t1 = clock_now();
        self.push_flush_events(t0, t1)
    }

    /// Ends the thread (`ovni_thread_free`): writes the buffered events (libovni drops them),
    /// then `stream.json` with rank, CPUs and `finished: 1`; a staged stream is then moved
    /// to the trace directory.
    pub fn finish(mut self) -> Result<()> {
        self.finished = true;
        self.write_buffer()?;
        let path = self.dir.join("stream.obs");
        self.obs.flush().map_err(|e| Error::io(&path, e))?;
        self.meta.write(&self.dir.join("stream.json"), true)?;
        match &self.final_dir {
            Some(dst) => move_stream(&self.dir, dst),
            None => Ok(()),
        }
    }
}

/// Moves `stream.obs` and `stream.json` from `src` to `dst`, then removes `src` if empty.
fn move_stream(src: &Path, dst: &Path) -> Result<()> {
    for name in ["stream.obs", "stream.json"] {
        let (from, to) = (src.join(name), dst.join(name));
        // A rename is enough on one file system; the temporary directory is usually on
        // another one (a node-local disk), where only a copy works.
        if fs::rename(&from, &to).is_err() {
            fs::copy(&from, &to).map_err(|e| Error::io(&to, e))?;
            fs::remove_file(&from).map_err(|e| Error::io(&from, e))?;
        }
    }
    // Best effort, as libovni: the stream is complete in `dst` whatever happens here.
    let _ = fs::remove_dir(src);
    Ok(())
}

impl Drop for ThreadStream {
    fn drop(&mut self) {
        // A stream dropped without `finish` keeps its events but stays unfinished, so readers
        // that check `ovni.finished` see it as incomplete.
        // The tid stays taken: initialising it again would truncate this stream.
        if !self.finished {
            let _ = self.write_buffer();
        }
    }
}
