//! A checkpoint file that shrinks while the tool has it mapped (`cp` over it in place, a
//! program rewriting it) makes the next read of the lost pages raise `SIGBUS`. The handler
//! installed here turns that into an error naming the file: it removes the outputs still
//! being written (see [`crate::output`]) and exits with status 1, instead of the shell's bare
//! "Bus error" and a partial output.

use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};

/// Installs the handler; called once, first thing in `main`.
pub fn install() {
    #[allow(unsafe_code)]
    // SAFETY: `sigaction` is given a zeroed, then filled, `struct sigaction` whose handler is
    // `on_sigbus`, an `extern "C"` function with the three-argument signature `SA_SIGINFO`
    // requires; nothing else in this program handles SIGBUS.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_sigbus as *const () as usize;
        action.sa_flags = libc::SA_SIGINFO;
        libc::sigemptyset(&mut action.sa_mask);
        libc::sigaction(libc::SIGBUS, &action, std::ptr::null_mut());
    }
}

extern "C" fn on_sigbus(_: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
    let mut path = [0u8; 4096];
    #[allow(unsafe_code)]
    // SAFETY: the kernel passes a valid `siginfo_t` to an `SA_SIGINFO` handler; for SIGBUS,
    // `si_addr` is the faulting address.
    let addr = unsafe { (*info).si_addr() } as usize;
    let n = ftiff::map_at(addr, &mut path);
    let file: &[u8] = if n > 0 {
        &path[..n]
    } else {
        b"a checkpoint file"
    };
    write_stderr(b"fti: ");
    write_stderr(file);
    write_stderr(
        b": the file changed while it was being read (it shrank: another program truncated or \
rewrote it in place); nothing was written: run the command again once the file is complete\n",
    );
    remove_outputs();
    #[allow(unsafe_code)]
    // SAFETY: `_exit` is async-signal-safe and does not return.
    unsafe {
        libc::_exit(1)
    }
}

fn write_stderr(bytes: &[u8]) {
    #[allow(unsafe_code)]
    // SAFETY: `write` is async-signal-safe; the buffer is valid for `bytes.len()` bytes.
    unsafe {
        libc::write(2, bytes.as_ptr().cast(), bytes.len());
    }
}

/// Outputs being written, removed by the handler: NUL-terminated paths owned by the slots.
const SLOTS: usize = 16;
static OUTPUTS: [AtomicPtr<libc::c_char>; SLOTS] =
    [const { AtomicPtr::new(std::ptr::null_mut()) }; SLOTS];
static TAKEN: AtomicUsize = AtomicUsize::new(0);

/// An output being written, listed for the handler until dropped.
pub struct Listed(Option<usize>);

/// Lists `path` for removal should a map fault before it is complete.
pub fn list(path: &std::path::Path) -> Listed {
    use std::os::unix::ffi::OsStrExt as _;
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return Listed(None);
    };
    for (i, slot) in OUTPUTS.iter().enumerate() {
        let bit = 1 << i;
        if TAKEN.fetch_or(bit, Ordering::AcqRel) & bit == 0 {
            slot.store(c.into_raw(), Ordering::Release);
            return Listed(Some(i));
        }
    }
    Listed(None)
}

impl Drop for Listed {
    fn drop(&mut self) {
        if let Some(i) = self.0 {
            let ptr = OUTPUTS[i].swap(std::ptr::null_mut(), Ordering::AcqRel);
            if !ptr.is_null() {
                #[allow(unsafe_code)]
                // SAFETY: `ptr` came from `CString::into_raw` in `list` and was taken out of
                // its slot exactly once by the swap.
                drop(unsafe { std::ffi::CString::from_raw(ptr) });
            }
            TAKEN.fetch_and(!(1 << i), Ordering::AcqRel);
        }
    }
}

fn remove_outputs() {
    for slot in &OUTPUTS {
        let ptr = slot.load(Ordering::Acquire);
        if !ptr.is_null() {
            #[allow(unsafe_code)]
            // SAFETY: `unlink` is async-signal-safe; `ptr` is a NUL-terminated path owned by
            // the slot (the process exits right after, so it is never freed under us).
            unsafe {
                libc::unlink(ptr);
            }
        }
    }
}
