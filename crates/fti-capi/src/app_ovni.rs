//! An application that traces itself with libovni (ours or the original) and turns on the
//! runtime's trace: libfti finds that library's functions in the process, and when the
//! calling thread is traced by it, the runtime emits its marks through them into the
//! application's stream (two writers on one `thread.<tid>` stream would corrupt it).

use std::ffi::{c_char, c_int, c_long, c_void, CStr, CString};

type IsReady = unsafe extern "C" fn() -> c_int;
type AttrHas = unsafe extern "C" fn(*const c_char) -> c_int;
type AttrGetStr = unsafe extern "C" fn(*const c_char) -> *const c_char;
type MarkType = unsafe extern "C" fn(i32, c_long, *const c_char);
type MarkLabel = unsafe extern "C" fn(i32, i64, *const c_char);
type MarkPushPop = unsafe extern "C" fn(i32, i64);

/// `OVNI_MARK_STACK`.
const MARK_STACK: c_long = 1;

/// The libovni functions the runtime needs, found in the process.
pub(crate) struct AppOvni {
    attr_has: AttrHas,
    attr_get_str: AttrGetStr,
    mark_type: MarkType,
    mark_label: MarkLabel,
    mark_push: MarkPushPop,
    mark_pop: MarkPushPop,
}

/// The address of `name` in the process's global symbol namespace, if any.
fn symbol(name: &CStr) -> Option<*mut c_void> {
    // SAFETY: dlsym with RTLD_DEFAULT and a NUL-terminated name only looks the symbol up.
    let p = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
    (!p.is_null()).then_some(p)
}

/// The application's libovni, when one is loaded and traces the calling thread
/// (`ovni_thread_isready()` is 1); `None` otherwise.
pub(crate) fn detect() -> Option<AppOvni> {
    let ready = symbol(c"ovni_thread_isready")?;
    // SAFETY: `ovni_thread_isready` has this signature in every libovni (`int (void)`), and
    // never fails.
    let ready: IsReady = unsafe { std::mem::transmute::<*mut c_void, IsReady>(ready) };
    // SAFETY: as above.
    if unsafe { ready() } != 1 {
        return None;
    }
    // SAFETY: each transmute turns the address of one of libovni's functions into a pointer
    // to that function with its C signature (ovni.h); they are present in every libovni with
    // marks (model 1.1).
    unsafe {
        Some(AppOvni {
            attr_has: std::mem::transmute::<*mut c_void, AttrHas>(symbol(c"ovni_attr_has")?),
            attr_get_str: std::mem::transmute::<*mut c_void, AttrGetStr>(symbol(
                c"ovni_attr_get_str",
            )?),
            mark_type: std::mem::transmute::<*mut c_void, MarkType>(symbol(c"ovni_mark_type")?),
            mark_label: std::mem::transmute::<*mut c_void, MarkLabel>(symbol(c"ovni_mark_label")?),
            mark_push: std::mem::transmute::<*mut c_void, MarkPushPop>(symbol(c"ovni_mark_push")?),
            mark_pop: std::mem::transmute::<*mut c_void, MarkPushPop>(symbol(c"ovni_mark_pop")?),
        })
    }
}

/// A C string of `s` (a key, title or label the runtime makes: no NUL inside).
fn c(s: &str) -> CString {
    CString::new(s.replace('\0', " ")).unwrap_or_default()
}

impl fti::AppOvni for AppOvni {
    fn attr_has(&self, key: &str) -> bool {
        let key = c(key);
        // SAFETY: libovni's function on a valid C string; the calling thread is traced.
        unsafe { (self.attr_has)(key.as_ptr()) != 0 }
    }

    fn attr_str(&self, key: &str) -> Option<String> {
        if !self.attr_has(key) {
            return None;
        }
        let key = c(key);
        // SAFETY: the key exists (checked above; `ovni_attr_get_str` aborts on a missing
        // key); the result is libovni's string, read before any other call.
        let p = unsafe { (self.attr_get_str)(key.as_ptr()) };
        // SAFETY: a non-NULL result is a NUL-terminated string owned by libovni.
        (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
    }

    fn mark_type(&self, ty: i32, title: &str) {
        let title = c(title);
        // SAFETY: libovni's function; the runtime checked the type is not defined yet.
        unsafe { (self.mark_type)(ty, MARK_STACK, title.as_ptr()) }
    }

    fn mark_label(&self, ty: i32, value: i64, label: &str) {
        let label = c(label);
        // SAFETY: libovni's function; the runtime checked the label is not defined yet.
        unsafe { (self.mark_label)(ty, value, label.as_ptr()) }
    }

    fn mark_push(&self, ty: i32, value: i64) {
        // SAFETY: libovni's function; values are never 0.
        unsafe { (self.mark_push)(ty, value) }
    }

    fn mark_pop(&self, ty: i32, value: i64) {
        // SAFETY: libovni's function; values are never 0.
        unsafe { (self.mark_pop)(ty, value) }
    }
}
