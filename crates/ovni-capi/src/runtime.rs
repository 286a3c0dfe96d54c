//! Process and thread state, emitting and flushing, clock and version.

use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::{c_char, c_int, CStr, CString, OsString};
use std::os::unix::ffi::OsStrExt;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

use ovni_rs::raw::JUMBO_HEADER_SIZE;
use ovni_rs::write::{clock_now, Process, ThreadStream, LIB_VERSION};
use ovni_rs::{Error, UsageError};

use crate::ev::{ev_mut, host_u32_bytes, OvniEv, OVNI_EV_JUMBO, OVNI_MAX_EV_BUF};
use crate::fatal::{cstr, die, die_writer, error, warn};

/// `pid_t` on Linux.
#[allow(non_camel_case_types)]
pub type pid_t = i32;

const UNINIT: u8 = 0;
const INIT: u8 = 1;
const READY: u8 = 2;
const GONE: u8 = 3;

/// Process state, changed with compare-and-swap as libovni does so that two threads calling
/// `ovni_proc_init` (or `ovni_proc_fini`) cannot both succeed.
static STATE: AtomicU8 = AtomicU8::new(UNINIT);
static PROCESS: OnceLock<Process> = OnceLock::new();

/// libovni's `PATH_MAX`, the limit of its path buffers.
const PATH_MAX: usize = 4096;
/// `OVNI_MAX_HOSTNAME`: loom names must be shorter.
const OVNI_MAX_HOSTNAME: usize = 512;

static VERSION: &CStr = c"1.14.0";
static COMMIT: &CStr = {
    match CStr::from_bytes_with_nul(concat!("ovni-rs-", env!("CARGO_PKG_VERSION"), "\0").as_bytes())
    {
        Ok(s) => s,
        Err(_) => panic!("commit string has an inner NUL"),
    }
};

/// The calling thread's record.
// One per thread, so its size does not matter; boxing the live stream would add a pointer
// chase to every emit.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Thread {
    Uninit,
    Ready(Live),
    /// After `ovni_thread_free`. Strings returned by `ovni_attr_get_str` stay valid, as in
    /// libovni, which never frees the metadata.
    Finished(#[allow(dead_code)] HashMap<String, CString>),
}

/// A thread between `ovni_thread_init` and `ovni_thread_free`.
pub(crate) struct Live {
    pub(crate) stream: ThreadStream,
    /// NUL-terminated copies of string attributes handed to C by `ovni_attr_get_str`.
    pub(crate) strings: HashMap<String, CString>,
}

thread_local! {
    static THREAD: RefCell<Thread> = const { RefCell::new(Thread::Uninit) };
}

/// Runs `f` on the calling thread's live record, or dies from `func` with libovni's message
/// for a thread not initialised yet (`uninit`) or already freed (`finished`).
#[inline]
pub(crate) fn with_live<R>(
    func: &str,
    uninit: &str,
    finished: &str,
    f: impl FnOnce(&mut Live) -> R,
) -> R {
    let r = THREAD.try_with(|t| match &mut *t.borrow_mut() {
        Thread::Ready(live) => Ok(f(live)),
        Thread::Uninit => Err(uninit),
        Thread::Finished(_) => Err(finished),
    });
    match r {
        Ok(Ok(r)) => r,
        Ok(Err(msg)) => die(func, msg),
        // The thread is exiting and its record is gone.
        Err(_) => die(func, finished),
    }
}

const NOT_INIT: &str = "thread is not initialized";

fn process_ready() -> bool {
    STATE.load(Ordering::Acquire) == READY
}

/// Checks that `version` is `major.minor.patch`; on failure prints libovni's `ERROR:` line
/// naming the bad part and dies from `func`.
fn parse_version_or_die(func: &str, version: &CStr) -> (u64, u64, u64) {
    let shown = version.to_string_lossy();
    if let Some(v) = version
        .to_str()
        .ok()
        .and_then(ovni_rs::metadata::parse_version)
    {
        return v;
    }
    let mut parts = shown.splitn(3, '.');
    let bad = ["major", "minor", "patch"].into_iter().find_map(|which| {
        let part = parts.next();
        let part = if which == "patch" {
            part.and_then(|p| p.split(['-', '.']).next())
        } else {
            part
        };
        match part {
            None => Some(format!("missing {which} number: {shown}")),
            Some(p) if p.parse::<u64>().is_err() => {
                Some(format!("failed to parse {which} number: {shown}"))
            }
            Some(_) => None,
        }
    });
    error(
        "version_parse",
        bad.unwrap_or_else(|| format!("bad version: {shown}")),
    );
    die(
        func,
        format!("failed to parse provided version \"{shown}\""),
    )
}

/// Dies unless `version` (the header's `OVNI_LIB_VERSION` in `ovni_version_check()`) is
/// compatible with this library: same major, minor not newer.
///
/// # Safety
/// `version` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn ovni_version_check_str(version: *const c_char) {
    const FUNC: &str = "ovni_version_check_str";
    // SAFETY: forwarded contract.
    let Some(v) = (unsafe { cstr(version) }) else {
        die(FUNC, "ovni version string is NULL")
    };
    let (major, minor, _) = parse_version_or_die(FUNC, v);
    let (lib_major, lib_minor, _) = parse_version_or_die(FUNC, VERSION);
    for (what, bad) in [("major", major != lib_major), ("minor", minor > lib_minor)] {
        if bad {
            die(
                FUNC,
                format!(
                    "incompatible ovni {what} version: wants {}, got {LIB_VERSION}",
                    v.to_string_lossy()
                ),
            );
        }
    }
}

/// Stores pointers to the library's static version and commit strings.
///
/// # Safety
/// Each pointer is NULL (skipped) or writable.
#[no_mangle]
pub unsafe extern "C" fn ovni_version_get(version: *mut *const c_char, commit: *mut *const c_char) {
    // SAFETY: the caller passes writable pointers; the strings are 'static.
    unsafe {
        if let Some(v) = version.as_mut() {
            *v = VERSION.as_ptr();
        }
        if let Some(c) = commit.as_mut() {
            *c = COMMIT.as_ptr();
        }
    }
}

/// Starts tracing the process: creates `$OVNI_TRACEDIR/loom.<loom>/proc.<pid>/` (default
/// `ovni`), or the same under `$OVNI_TMPDIR` with the streams moved to the trace directory
/// as each thread finishes. Once per process.
///
/// # Safety
/// `loom` is a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn ovni_proc_init(app: c_int, loom: *const c_char, pid: c_int) {
    const FUNC: &str = "ovni_proc_init";
    if let Err(st) = STATE.compare_exchange(UNINIT, INIT, Ordering::AcqRel, Ordering::Acquire) {
        match st {
            INIT => die(FUNC, format!("pid {pid} already being initialized")),
            READY => die(FUNC, format!("pid {pid} already initialized")),
            _ => die(FUNC, format!("pid {pid} has finished, cannot init again")),
        }
    }
    // SAFETY: forwarded contract.
    let Some(loom) = (unsafe { cstr(loom) }) else {
        die(FUNC, "loom is NULL")
    };
    let loom_len = loom.to_bytes().len();
    if loom_len >= OVNI_MAX_HOSTNAME {
        die(
            FUNC,
            format!("loom name too long: {}", loom.to_string_lossy()),
        );
    }
    let Ok(loom) = loom.to_str() else {
        die(FUNC, "loom name is not valid UTF-8")
    };
    let tracedir = std::env::var_os("OVNI_TRACEDIR").unwrap_or_else(|| OsString::from("ovni"));
    let made = match std::env::var_os("OVNI_TMPDIR") {
        Some(tmp) => {
            if tmp.as_bytes().len() + "/loom.".len() + loom_len >= PATH_MAX {
                die(
                    "create_proc_dir",
                    format!("loom path too long: {}/loom.{loom}", tmp.to_string_lossy()),
                );
            }
            Process::init_staged(tmp, tracedir, app, loom, pid)
        }
        None => Process::init(tracedir, app, loom, pid),
    };
    let process = made.unwrap_or_else(|e| match e {
        Error::Io { path, source } => die(
            "mkdir_proc",
            format!(
                "mkdir {} failed: {}",
                path.display(),
                crate::fatal::strerror(&source)
            ),
        ),
        Error::Usage(UsageError::ZeroId(_)) => die(FUNC, "cannot use pid=0"),
        Error::Usage(UsageError::BadLoom) => die(
            FUNC,
            format!("bad loom name '{loom}': it must be non-empty and have no '/'"),
        ),
        e => die(FUNC, e),
    });
    if PROCESS.set(process).is_err() {
        die(FUNC, format!("pid {pid} already initialized"));
    }
    STATE.store(READY, Ordering::Release);
}

/// Records the MPI rank of the process in the calling thread's metadata (written at
/// `ovni_thread_free`).
#[no_mangle]
pub extern "C" fn ovni_proc_set_rank(rank: c_int, nranks: c_int) {
    const FUNC: &str = "ovni_proc_set_rank";
    if !process_ready() {
        die(FUNC, "process not ready");
    }
    let uninit = "thread not yet initialized";
    with_live(FUNC, uninit, uninit, |t| {
        if let Err(e) = t.stream.set_rank(rank, nranks) {
            die(FUNC, e);
        }
    });
}

/// Ends the process: no more `ovni_proc_init`, `ovni_thread_init` or `ovni_flush`. With
/// `OVNI_TMPDIR`, removes the temporary directories left empty.
#[no_mangle]
pub extern "C" fn ovni_proc_fini() {
    if STATE
        .compare_exchange(READY, GONE, Ordering::AcqRel, Ordering::Acquire)
        .is_err()
    {
        die("ovni_proc_fini", "process not ready");
    }
    if let Some(Err(Error::Io { path, source })) = PROCESS.get().map(Process::remove_tmp_dirs) {
        warn(format!(
            "cannot remove dir {}: {}",
            path.display(),
            crate::fatal::strerror(&source)
        ));
    }
}

/// Starts the calling thread's stream `thread.<tid>` (header, first `stream.json`) and
/// requires the ovni model. A second call in a live thread only warns.
#[no_mangle]
pub extern "C" fn ovni_thread_init(tid: pid_t) {
    const FUNC: &str = "ovni_thread_init";
    let started = THREAD.try_with(|cell| {
        let mut t = cell.borrow_mut();
        match &*t {
            Thread::Ready(_) => {
                warn(format!("thread {tid} already initialized, ignored"));
                return;
            }
            Thread::Finished(_) => die(
                FUNC,
                format!("thread {tid} has finished, cannot init again"),
            ),
            Thread::Uninit => {}
        }
        if tid == 0 {
            die(FUNC, "cannot use tid=0");
        }
        let Some(process) = PROCESS.get().filter(|_| process_ready()) else {
            die(FUNC, "process not ready")
        };
        let stream = process.thread_init(tid).unwrap_or_else(|e| match e {
            Error::Usage(UsageError::ThreadExists(_)) => die(
                FUNC,
                format!("thread {tid} already initialized by another thread of the process"),
            ),
            e => die_writer(FUNC, e, true),
        });
        *t = Thread::Ready(Live {
            stream,
            strings: HashMap::new(),
        });
    });
    if started.is_err() {
        die(FUNC, format!("thread {tid} is exiting"));
    }
}

/// Requires `model` at `version` in the calling thread's metadata.
///
/// # Safety
/// `model` and `version` are NULL or NUL-terminated strings.
#[no_mangle]
pub unsafe extern "C" fn ovni_thread_require(model: *const c_char, version: *const c_char) {
    const FUNC: &str = "ovni_thread_require";
    let uninit = "thread not initialized";
    with_live(FUNC, uninit, uninit, |t| {
        // SAFETY: forwarded contract.
        let Some(m) = (unsafe { cstr(model) }) else {
            die(FUNC, "model string is NULL")
        };
        let m = m.to_bytes();
        if m.iter().any(|&c| c == b' ' || c == b'.') {
            die(FUNC, "malformed model name");
        }
        if m.len() <= 1 {
            die(FUNC, "model name must have more than 1 character");
        }
        // SAFETY: forwarded contract.
        let Some(v) = (unsafe { cstr(version) }) else {
            die(FUNC, "version string is NULL")
        };
        parse_version_or_die(FUNC, v);
        if "ovni.require.".len() + m.len() >= 128 {
            die(FUNC, "model name too long");
        }
        let (Ok(m), Ok(v)) = (std::str::from_utf8(m), v.to_str()) else {
            die(FUNC, "json_object_dotset_string failed")
        };
        if let Err(e) = t.stream.require(m, v) {
            die(FUNC, e);
        }
    });
}

/// Ends the calling thread's stream: writes the events still buffered (libovni drops them),
/// then `stream.json` with rank, CPUs and `finished: 1`; with `OVNI_TMPDIR`, moves the
/// stream to the trace directory.
#[no_mangle]
pub extern "C" fn ovni_thread_free() {
    const FUNC: &str = "ovni_thread_free";
    let freed = THREAD.try_with(|cell| {
        let mut t = cell.borrow_mut();
        let live = match std::mem::replace(&mut *t, Thread::Uninit) {
            Thread::Ready(live) => live,
            Thread::Finished(strings) => {
                *t = Thread::Finished(strings);
                die(FUNC, "thread already finished")
            }
            Thread::Uninit => die(FUNC, "thread not initialized"),
        };
        *t = Thread::Finished(live.strings);
        live.stream
    });
    match freed {
        Ok(stream) => {
            if let Err(e) = stream.finish() {
                die_writer(FUNC, e, false);
            }
        }
        Err(_) => die(FUNC, "thread already finished"),
    }
}

/// 1 if the calling thread is initialised and not freed, else 0.
#[no_mangle]
pub extern "C" fn ovni_thread_isready() -> c_int {
    THREAD
        .try_with(|t| c_int::from(matches!(&*t.borrow(), Thread::Ready(_))))
        .unwrap_or(0)
}

/// Adds CPU `index` (logical, in the loom) with physical id `phyid` to the calling thread's
/// metadata (`ovni.loom_cpus`, written at `ovni_thread_free`).
#[no_mangle]
pub extern "C" fn ovni_add_cpu(index: c_int, phyid: c_int) {
    const FUNC: &str = "ovni_add_cpu";
    if index < 0 {
        die(FUNC, format!("cannot use negative index {index}"));
    }
    if phyid < 0 {
        die(FUNC, format!("cannot use negative CPU id {phyid}"));
    }
    if !process_ready() {
        die(FUNC, "process not ready");
    }
    let uninit = "thread not yet initialized";
    with_live(FUNC, uninit, uninit, |t| {
        if let Err(e) = t.stream.add_cpu(index, phyid) {
            die(FUNC, e);
        }
    });
}

/// `CLOCK_MONOTONIC` in nanoseconds once the process is initialised; `CLOCK_REALTIME`
/// before, as libovni.
#[no_mangle]
pub extern "C" fn ovni_clock_now() -> u64 {
    if STATE.load(Ordering::Relaxed) == UNINIT {
        let since = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        u64::try_from(since.as_nanos()).unwrap_or(u64::MAX)
    } else {
        clock_now()
    }
}

/// Appends a normal event to the calling thread's buffer, writing the buffer out first
/// when the event would fill it (then `OF[`/`OF]` follow the event, as in libovni).
///
/// # Safety
/// `ev` points to a `struct ovni_ev`.
#[no_mangle]
pub unsafe extern "C" fn ovni_ev_emit(ev: *mut OvniEv) {
    const FUNC: &str = "ovni_ev_add";
    with_live(FUNC, NOT_INIT, NOT_INIT, |t| {
        // SAFETY: forwarded contract.
        let ev = unsafe { ev_mut(ev, FUNC) };
        if ev.is_jumbo() {
            // libovni would copy the jumbo size's worth of bytes from past the struct.
            die(FUNC, "event is marked as jumbo: use ovni_ev_jumbo_emit");
        }
        #[allow(clippy::needless_borrow)]
        if let Err(e) = t.stream.emit_image(&ev.image_bytes()) {
            die_writer(FUNC, e, false);
        }
    });
}

/// Emits a jumbo event: `bufsize` becomes the payload and `OVNI_EV_JUMBO` is set in the
/// caller's event (as libovni does), then the event and the `bufsize` bytes at `buf` are
/// appended.
///
/// # Safety
/// `ev` points to a `struct ovni_ev`; `buf` to `bufsize` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn ovni_ev_jumbo_emit(ev: *mut OvniEv, buf: *const u8, bufsize: u32) {
    const FUNC: &str = "ovni_ev_add_jumbo";
    with_live(FUNC, NOT_INIT, NOT_INIT, |t| {
        // SAFETY: forwarded contract.
        let ev = unsafe { ev_mut(ev, FUNC) };
        if ev.payload_size() != 0 {
            die(FUNC, "the event payload must be empty");
        }
        ev.payload_add(&host_u32_bytes(bufsize));
        if JUMBO_HEADER_SIZE as i64 + i64::from(bufsize) >= OVNI_MAX_EV_BUF {
            die(FUNC, "event too large");
        }
        ev.header.flags |= OVNI_EV_JUMBO;
        let data = if bufsize == 0 {
            &[][..]
        } else if buf.is_null() {
            die(FUNC, "jumbo buffer is NULL")
        } else {
            // SAFETY: non-NULL, and the caller guarantees `bufsize` readable bytes.
            unsafe { std::slice::from_raw_parts(buf, bufsize as usize) }
        };
        let clock = ev.header.clock;
        if let Err(e) = t.stream.emit_jumbo_at(ev.mcv(), clock, data) {
            die_writer(FUNC, e, false);
        }
    });
}

/// Writes the calling thread's buffer to its stream, then buffers `OF[`/`OF]` with the
/// clocks read around the write.
#[no_mangle]
pub extern "C" fn ovni_flush() {
    const FUNC: &str = "ovni_flush";
    with_live(FUNC, NOT_INIT, NOT_INIT, |t| {
        if !process_ready() {
            die(FUNC, "process not ready");
        }
        if let Err(e) = t.stream.flush() {
            die_writer(FUNC, e, false);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_init_while_another_thread_initializes_dies() {
        // The state is only in between while another thread runs ovni_proc_init: a child
        // process of this test binary sets it and calls in.
        if std::env::var_os("OVNI_CAPI_INIT_RACE").is_some() {
            STATE.store(INIT, Ordering::SeqCst);
            // SAFETY: a NUL-terminated string.
            unsafe { ovni_proc_init(1, c"host.race".as_ptr(), 9) };
            return;
        }
        let name = "runtime::tests::proc_init_while_another_thread_initializes_dies";
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", name, "--nocapture", "--test-threads=1"])
            .env("OVNI_CAPI_INIT_RACE", "1")
            .output()
            .unwrap();
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(out.status.signal(), Some(6), "{out:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr
                .lines()
                .any(|l| l == "FATAL: ovni_proc_init: pid 9 already being initialized"),
            "{stderr}"
        );
    }

    #[test]
    fn static_strings_match_the_writer() {
        assert_eq!(VERSION.to_str(), Ok(LIB_VERSION));
        assert_eq!(COMMIT.to_str(), Ok(ovni_rs::write::LIB_COMMIT));
    }
}
