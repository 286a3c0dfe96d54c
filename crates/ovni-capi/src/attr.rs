//! Attributes of the calling thread's `stream.json`, and marks.

use std::collections::hash_map::Entry;
use std::ffi::{c_char, c_int, c_long, c_void, CString};

use ovni_rs::UsageError;
use serde_json::Value;

use crate::ev::OVNI_MARK_STACK;
use crate::fatal::{cstr, die, die_writer, shown, utf8};
use crate::runtime::{with_live, Live};

extern "C" {
    // `ovni_attr_get_json` returns memory the caller releases with free().
    fn malloc(size: usize) -> *mut c_void;
}

/// Runs `f` on the live thread, with libovni's `get_thread_metadata` checks.
fn with_meta<R>(f: impl FnOnce(&mut Live) -> R) -> R {
    with_live(
        "get_thread_metadata",
        "thread not initialized",
        "thread already finished",
        f,
    )
}

/// The value at `key`, or FATAL from `func` when it is missing.
///
/// # Safety
/// `key` is NULL or a NUL-terminated string.
unsafe fn get<'a>(t: &'a Live, func: &str, key: *const c_char) -> (&'a Value, String) {
    // SAFETY: forwarded contract.
    let found = unsafe { utf8(key) }.and_then(|k| t.stream.attr_get(k).map(|v| (v, k)));
    match found {
        Some((v, k)) => (v, k.to_string()),
        // SAFETY: forwarded contract.
        None => die(func, format!("key not found: {}", unsafe { shown(key) })),
    }
}

/// Sets `value` at `key`, or dies from `func` with `msg` (libovni's parson failure text)
/// when the key cannot hold it.
///
/// # Safety
/// `key` is NULL or a NUL-terminated string.
unsafe fn set(func: &str, msg: &str, key: *const c_char, value: Option<Value>) {
    with_meta(|t| {
        // SAFETY: forwarded contract.
        let key = unsafe { utf8(key) };
        let (Some(key), Some(value)) = (key, value) else {
            die(func, msg)
        };
        if t.stream.attr_set(key, value).is_err() {
            die(func, msg);
        }
    });
}

/// 1 if the calling thread's metadata has `key` (a dot path), else 0.
///
/// # Safety
/// `key` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn ovni_attr_has(key: *const c_char) -> c_int {
    with_meta(|t| {
        // SAFETY: forwarded contract.
        let key = unsafe { utf8(key) };
        c_int::from(key.is_some_and(|k| t.stream.attr_has(k)))
    })
}

/// Stores a number at `key` (integral values are written without a decimal point).
///
/// # Safety
/// `key` is a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn ovni_attr_set_double(key: *const c_char, num: f64) {
    // JSON has no NaN or infinity: parson refuses them too.
    let v = num.is_finite().then(|| Value::from(num));
    // SAFETY: forwarded contract.
    unsafe {
        set(
            "ovni_attr_set_double",
            "json_object_dotset_number() failed",
            key,
            v,
        )
    };
}

/// Stores a JSON boolean at `key` (any non-zero `value` is true).
///
/// # Safety
/// `key` is a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn ovni_attr_set_boolean(key: *const c_char, value: c_int) {
    let v = Some(Value::Bool(value != 0));
    // SAFETY: forwarded contract.
    unsafe {
        set(
            "ovni_attr_set_boolean",
            "json_object_dotset_boolean() failed",
            key,
            v,
        )
    };
}

/// Stores a copy of the string `value` at `key`.
///
/// # Safety
/// `key` and `value` are NUL-terminated strings.
#[no_mangle]
pub unsafe extern "C" fn ovni_attr_set_str(key: *const c_char, value: *const c_char) {
    // SAFETY: forwarded contract.
    let v = unsafe { utf8(value) }.map(Value::from);
    // SAFETY: forwarded contract.
    unsafe {
        set(
            "ovni_attr_set_str",
            "json_object_dotset_string() failed",
            key,
            v,
        )
    };
}

/// Parses `json` (any JSON value) and stores it at `key`.
///
/// # Safety
/// `key` and `json` are NUL-terminated strings.
#[no_mangle]
pub unsafe extern "C" fn ovni_attr_set_json(key: *const c_char, json: *const c_char) {
    const FUNC: &str = "ovni_attr_set_json";
    with_meta(|t| {
        // SAFETY: forwarded contract.
        let parsed = unsafe { utf8(json) }.and_then(|s| serde_json::from_str::<Value>(s).ok());
        let Some(v) = parsed else {
            // SAFETY: forwarded contract.
            let text = unsafe { shown(json) };
            die(FUNC, format!("cannot parse json: {text}"))
        };
        // SAFETY: forwarded contract.
        let key = unsafe { utf8(key) };
        if key.is_none_or(|k| t.stream.attr_set(k, v).is_err()) {
            die(FUNC, "json_object_dotset_value() failed");
        }
    });
}

/// The number at `key`.
///
/// # Safety
/// `key` is a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn ovni_attr_get_double(key: *const c_char) -> f64 {
    const FUNC: &str = "ovni_attr_get_double";
    with_meta(|t| {
        // SAFETY: forwarded contract.
        let (v, k) = unsafe { get(t, FUNC, key) };
        match v.as_f64() {
            Some(n) => n,
            None => die(FUNC, format!("value with key '{k}' is not a number")),
        }
    })
}

/// The boolean at `key` (1 or 0).
///
/// # Safety
/// `key` is a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn ovni_attr_get_boolean(key: *const c_char) -> c_int {
    const FUNC: &str = "ovni_attr_get_boolean";
    with_meta(|t| {
        // SAFETY: forwarded contract.
        let (v, k) = unsafe { get(t, FUNC, key) };
        match v.as_bool() {
            Some(b) => c_int::from(b),
            None => die(FUNC, format!("value with key '{k}' is not a boolean")),
        }
    })
}

/// The string at `key`, owned by the library: valid until the key is set again.
///
/// # Safety
/// `key` is a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn ovni_attr_get_str(key: *const c_char) -> *const c_char {
    const FUNC: &str = "ovni_attr_get_str";
    with_meta(|t| {
        // SAFETY: forwarded contract.
        let (v, k) = unsafe { get(t, FUNC, key) };
        let Some(s) = v.as_str() else {
            die(FUNC, format!("value with key '{k}' is not a string"))
        };
        // C sees the string up to its first NUL, as parson's would be.
        let c = CString::new(s.split('\0').next().unwrap_or_default()).unwrap_or_default();
        // Keep the copy handed out before while the value is the same, so earlier pointers
        // to it stay valid.
        let slot = match t.strings.entry(k) {
            Entry::Occupied(mut o) => {
                if *o.get() != c {
                    o.insert(c);
                }
                o.into_mut()
            }
            Entry::Vacant(e) => e.insert(c),
        };
        slot.as_ptr()
    })
}

/// The value at `key` serialised as compact JSON, in memory from `malloc` that the caller
/// frees.
///
/// # Safety
/// `key` is a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn ovni_attr_get_json(key: *const c_char) -> *mut c_char {
    const FUNC: &str = "ovni_attr_get_json";
    with_meta(|t| {
        // SAFETY: forwarded contract.
        let (v, _) = unsafe { get(t, FUNC, key) };
        let text = v.to_string();
        // SAFETY: malloc has no preconditions.
        let p = unsafe { malloc(text.len() + 1) }.cast::<u8>();
        if p.is_null() {
            die(FUNC, "json_serialize_to_string() failed");
        }
        // SAFETY: `p` holds text.len() + 1 bytes and does not overlap `text`.
        unsafe {
            std::ptr::copy_nonoverlapping(text.as_ptr(), p, text.len());
            p.add(text.len()).write(0);
        }
        p.cast::<c_char>()
    })
}

/// Rewrites the calling thread's `stream.json` now (it is written at `ovni_thread_free`
/// anyway).
#[no_mangle]
pub extern "C" fn ovni_attr_flush() {
    const FUNC: &str = "ovni_attr_flush";
    with_live(
        FUNC,
        "thread not initialized",
        "thread already finished",
        |t| {
            if let Err(e) = t.stream.attr_flush() {
                die_writer(FUNC, e, false);
            }
        },
    );
}

fn check_mark_type(func: &str, ty: i32) {
    if !(0..100).contains(&ty) {
        die(func, "type must be in [0,100) range");
    }
}

/// Defines mark type `type` (0..100) in the calling thread's metadata, with a title;
/// `flags` may hold `OVNI_MARK_STACK`.
///
/// # Safety
/// `title` is a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn ovni_mark_type(ty: i32, flags: c_long, title: *const c_char) {
    const FUNC: &str = "ovni_mark_type";
    check_mark_type(FUNC, ty);
    // SAFETY: forwarded contract.
    let title = unsafe { cstr(title) }.filter(|t| !t.is_empty());
    let Some(title) = title else {
        die(FUNC, "bad title")
    };
    with_meta(|t| {
        if t.stream.attr_has(&format!("ovni.mark.{ty}")) {
            die(FUNC, format!("type {ty} already defined"));
        }
        let stack = u32::from(flags & OVNI_MARK_STACK != 0);
        let done = match title.to_str() {
            Ok(title) => t.stream.mark_type(ty, stack, title),
            Err(_) => Err(UsageError::BadAttrPath(String::new()).into()),
        };
        if done.is_err() {
            die(FUNC, "json_object_dotset_string() failed for title");
        }
    });
}

/// Labels `value` (> 0) of a mark type defined in the calling thread.
///
/// # Safety
/// `label` is a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn ovni_mark_label(ty: i32, value: i64, label: *const c_char) {
    const FUNC: &str = "ovni_mark_label";
    check_mark_type(FUNC, ty);
    if value <= 0 {
        die(FUNC, "value must be >0");
    }
    // SAFETY: forwarded contract.
    let label = unsafe { cstr(label) }.filter(|t| !t.is_empty());
    let Some(label) = label else {
        die(FUNC, "bad label")
    };
    with_meta(|t| {
        if !t.stream.attr_has(&format!("ovni.mark.{ty}")) {
            die(FUNC, format!("type {ty} not defined"));
        }
        if t.stream.attr_has(&format!("ovni.mark.{ty}.labels.{value}")) {
            die(
                FUNC,
                format!("label '{}' already defined", label.to_string_lossy()),
            );
        }
        let done = match label.to_str() {
            Ok(label) => t.stream.mark_label(ty, value, label),
            Err(_) => Err(UsageError::BadAttrPath(String::new()).into()),
        };
        if done.is_err() {
            die(FUNC, "json_object_dotset_string() failed");
        }
    });
}

/// Emits a mark event clocked now.
fn mark(func: &str, ty: i32, value: i64, emit: fn(&mut Live, i32, i64) -> ovni_rs::Result<()>) {
    if value == 0 {
        die(func, format!("value cannot be 0, type {ty}"));
    }
    let uninit = "thread is not initialized";
    with_live("ovni_ev_add", uninit, uninit, |t| {
        if let Err(e) = emit(t, ty, value) {
            die_writer("ovni_ev_add", e, false);
        }
    });
}

/// Pushes `value` (≠ 0) on stack mark `type` (`OM[`).
#[no_mangle]
pub extern "C" fn ovni_mark_push(ty: i32, value: i64) {
    mark("ovni_mark_push", ty, value, |t, ty, v| {
        t.stream.mark_push(ty, v)
    });
}

/// Pops `value` (≠ 0) from stack mark `type` (`OM]`).
#[no_mangle]
pub extern "C" fn ovni_mark_pop(ty: i32, value: i64) {
    mark("ovni_mark_pop", ty, value, |t, ty, v| {
        t.stream.mark_pop(ty, v)
    });
}

/// Sets single mark `type` to `value` (≠ 0) (`OM=`).
#[no_mangle]
pub extern "C" fn ovni_mark_set(ty: i32, value: i64) {
    mark("ovni_mark_set", ty, value, |t, ty, v| {
        t.stream.mark_set(ty, v)
    });
}
