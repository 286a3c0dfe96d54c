//! libovni's error reporting: `FATAL:` then abort, `ERROR:` and `WARN:` lines, C strings.

use std::ffi::{c_char, CStr};
use std::fmt::Display;
use std::io::{self, Write};
use std::path::Path;

use ovni_rs::Error;

/// Prints `FATAL: <func>: <msg>` on stderr and aborts (SIGABRT), as libovni's `die`.
#[cold]
#[inline(never)]
pub(crate) fn die(func: &str, msg: impl Display) -> ! {
    let _ = writeln!(io::stderr().lock(), "FATAL: {func}: {msg}");
    std::process::abort()
}

/// A non-fatal `ERROR: <func>: <msg>` line.
pub(crate) fn error(func: &str, msg: impl Display) {
    let _ = writeln!(io::stderr().lock(), "ERROR: {func}: {msg}");
}

/// A non-fatal `WARN: <msg>` line.
pub(crate) fn warn(msg: impl Display) {
    let _ = writeln!(io::stderr().lock(), "WARN: {msg}");
}

/// The `strerror` text of an I/O error (without Rust's ` (os error N)` suffix).
pub(crate) fn strerror(e: &io::Error) -> String {
    let s = e.to_string();
    s.split(" (os error ")
        .next()
        .unwrap_or_default()
        .to_string()
}

/// Dies for a failure of the writer, naming the libovni function that does the same work:
/// directories (`mkdir_thread`), opening the stream (`create_trace_stream`, only while a
/// thread starts: `opening`), writing it (`write_evbuf`) and `stream.json`
/// (`thread_metadata_store`).
#[cold]
pub(crate) fn die_writer(func: &str, e: Error, opening: bool) -> ! {
    let Error::Io { path, source } = e else {
        die(func, e)
    };
    let err = strerror(&source);
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    if name == "stream.obs" {
        // Opening and the first write (the stream header) share the path: a full disk or a
        // size limit can only come from the write.
        let writing = matches!(
            source.kind(),
            io::ErrorKind::StorageFull | io::ErrorKind::FileTooLarge | io::ErrorKind::WriteZero
        );
        if opening && !writing {
            die("create_trace_stream", open_failed(&path, &err))
        }
        die(
            "write_evbuf",
            format!("failed to write buffer to disk: {err}"),
        )
    }
    if name.starts_with("stream.json") {
        die(
            "thread_metadata_store",
            format!("failed to write thread metadata: {}: {err}", path.display()),
        )
    }
    die(
        "mkdir_thread",
        format!("mkpath {} failed: {err}", path.display()),
    )
}

fn open_failed(path: &Path, err: &str) -> String {
    format!("open {} failed: {err}", path.display())
}

/// The C string at `p`, or `None` for NULL.
///
/// # Safety
/// `p` is NULL or points to a NUL-terminated string that outlives `'a`.
pub(crate) unsafe fn cstr<'a>(p: *const c_char) -> Option<&'a CStr> {
    if p.is_null() {
        None
    } else {
        // SAFETY: non-NULL, and the caller guarantees a NUL-terminated string.
        Some(unsafe { CStr::from_ptr(p) })
    }
}

/// The C string at `p` as UTF-8; `None` for NULL or invalid UTF-8 (which JSON cannot hold).
///
/// # Safety
/// As [`cstr`].
pub(crate) unsafe fn utf8<'a>(p: *const c_char) -> Option<&'a str> {
    // SAFETY: forwarded contract.
    unsafe { cstr(p) }.and_then(|s| s.to_str().ok())
}

/// How a C string argument is printed in a message (`(null)` like glibc's printf).
///
/// # Safety
/// As [`cstr`].
pub(crate) unsafe fn shown(p: *const c_char) -> String {
    // SAFETY: forwarded contract.
    match unsafe { cstr(p) } {
        Some(s) => s.to_string_lossy().into_owned(),
        None => "(null)".to_string(),
    }
}
