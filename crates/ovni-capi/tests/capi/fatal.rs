//! Every FATAL path of libovni 1.14, each in a child process (`tests/c/fatal.c <case>`): the
//! program must die by SIGABRT with libovni's `FATAL: <function>: <message>` as the last line
//! of stderr. A few cases are ours: misuse where libovni writes a broken trace or reads
//! past the caller's event.

use std::fs;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;

use crate::util::{self, Link};

/// Prepares the case's trace directory and returns extra environment variables.
type Prepare = fn(&Path, &Path) -> Vec<(String, String)>;

struct Case {
    name: &'static str,
    /// The expected FATAL line; `*` matches any text.
    fatal: &'static str,
    prepare: Option<Prepare>,
}

const fn case(name: &'static str, fatal: &'static str) -> Case {
    Case {
        name,
        fatal,
        prepare: None,
    }
}

const fn prepared(name: &'static str, fatal: &'static str, prepare: Prepare) -> Case {
    Case {
        name,
        fatal,
        prepare: Some(prepare),
    }
}

/// The directory of the stream of fatal.c's thread in `trace`.
fn thread_dir(trace: &Path) -> std::path::PathBuf {
    trace.join("loom.fatal.host/proc.4242/thread.4243")
}

const CASES: &[Case] = &[
    // Version
    case(
        "version_null",
        "FATAL: ovni_version_check_str: ovni version string is NULL",
    ),
    case(
        "version_unparsable",
        "FATAL: ovni_version_check_str: failed to parse provided version \"1.14\"",
    ),
    case(
        "version_major",
        "FATAL: ovni_version_check_str: incompatible ovni major version: wants 2.0.0, got 1.14.0",
    ),
    case(
        "version_minor",
        "FATAL: ovni_version_check_str: incompatible ovni minor version: wants 1.15.0, got 1.14.0",
    ),
    // Process
    case(
        "proc_init_twice",
        "FATAL: ovni_proc_init: pid 4242 already initialized",
    ),
    case(
        "proc_init_after_fini",
        "FATAL: ovni_proc_init: pid 4242 has finished, cannot init again",
    ),
    case("loom_too_long", "FATAL: ovni_proc_init: loom name too long: aaaa*"),
    prepared(
        "proc_init",
        "FATAL: create_proc_dir: loom path too long: */dddd*/loom.fatal.host",
        |tmp, _| {
            let long = tmp.join("d".repeat(4090));
            vec![("OVNI_TMPDIR".into(), long.to_string_lossy().into_owned())]
        },
    ),
    prepared(
        "proc_init",
        "FATAL: mkdir_proc: mkdir */file/trace/loom.fatal.host/proc.4242 failed: Not a directory",
        |tmp, _| {
            fs::write(tmp.join("file"), "").unwrap();
            let trace = tmp.join("file/trace");
            vec![("OVNI_TRACEDIR".into(), trace.to_string_lossy().into_owned())]
        },
    ),
    case("proc_fini_uninit", "FATAL: ovni_proc_fini: process not ready"),
    case("proc_fini_twice", "FATAL: ovni_proc_fini: process not ready"),
    case(
        "set_rank_no_proc",
        "FATAL: ovni_proc_set_rank: process not ready",
    ),
    case(
        "set_rank_no_thread",
        "FATAL: ovni_proc_set_rank: thread not yet initialized",
    ),
    // Ours: libovni writes a rank that ovniemu rejects.
    case(
        "set_rank_out_of_range",
        "FATAL: ovni_proc_set_rank: rank 3 out of range [0, 2)",
    ),
    case(
        "add_cpu_neg_index",
        "FATAL: ovni_add_cpu: cannot use negative index -1",
    ),
    case(
        "add_cpu_neg_phyid",
        "FATAL: ovni_add_cpu: cannot use negative CPU id -2",
    ),
    case("add_cpu_no_proc", "FATAL: ovni_add_cpu: process not ready"),
    case(
        "add_cpu_no_thread",
        "FATAL: ovni_add_cpu: thread not yet initialized",
    ),
    // Thread
    case(
        "thread_init_after_free",
        "FATAL: ovni_thread_init: thread 4243 has finished, cannot init again",
    ),
    case("thread_init_tid0", "FATAL: ovni_thread_init: cannot use tid=0"),
    case(
        "thread_init_no_proc",
        "FATAL: ovni_thread_init: process not ready",
    ),
    case(
        "thread_init_after_fini",
        "FATAL: ovni_thread_init: process not ready",
    ),
    // Ours: libovni lets two threads write one stream.
    case(
        "thread_init_same_tid",
        "FATAL: ovni_thread_init: thread 4243 already initialized by another thread of the process",
    ),
    prepared(
        "thread_init",
        "FATAL: mkdir_thread: mkpath */loom.fatal.host/proc.4242/thread.4243 failed: File exists",
        |_, trace| {
            fs::create_dir_all(thread_dir(trace).parent().unwrap()).unwrap();
            fs::write(thread_dir(trace), "").unwrap();
            Vec::new()
        },
    ),
    prepared(
        "thread_init",
        "FATAL: create_trace_stream: open */thread.4243/stream.obs failed: Is a directory",
        |_, trace| {
            fs::create_dir_all(thread_dir(trace).join("stream.obs")).unwrap();
            Vec::new()
        },
    ),
    prepared(
        "thread_init",
        "FATAL: write_evbuf: failed to write buffer to disk: No space left on device",
        |_, trace| {
            fs::create_dir_all(thread_dir(trace)).unwrap();
            std::os::unix::fs::symlink("/dev/full", thread_dir(trace).join("stream.obs"))
                .unwrap();
            Vec::new()
        },
    ),
    prepared(
        "thread_init",
        "FATAL: thread_metadata_store: failed to write thread metadata: */thread.4243/stream.json: *",
        |_, trace| {
            fs::create_dir_all(thread_dir(trace).join("stream.json")).unwrap();
            Vec::new()
        },
    ),
    case(
        "thread_free_twice",
        "FATAL: ovni_thread_free: thread already finished",
    ),
    case(
        "thread_free_uninit",
        "FATAL: ovni_thread_free: thread not initialized",
    ),
    case(
        "require_uninit",
        "FATAL: ovni_thread_require: thread not initialized",
    ),
    case(
        "require_model_null",
        "FATAL: ovni_thread_require: model string is NULL",
    ),
    case(
        "require_malformed",
        "FATAL: ovni_thread_require: malformed model name",
    ),
    case(
        "require_space",
        "FATAL: ovni_thread_require: malformed model name",
    ),
    case(
        "require_short",
        "FATAL: ovni_thread_require: model name must have more than 1 character",
    ),
    case(
        "require_version_null",
        "FATAL: ovni_thread_require: version string is NULL",
    ),
    case(
        "require_version_bad",
        "FATAL: ovni_thread_require: failed to parse provided version \"1.x.0\"",
    ),
    case(
        "require_model_too_long",
        "FATAL: ovni_thread_require: model name too long",
    ),
    // Events
    case(
        "payload_add_jumbo",
        "FATAL: ovni_payload_add: event is marked as jumbo",
    ),
    case(
        "payload_add_small",
        "FATAL: ovni_payload_add: payload size 1 too small",
    ),
    case(
        "payload_add_negative",
        "FATAL: ovni_payload_add: payload size -3 too small",
    ),
    case(
        "payload_add_full",
        "FATAL: ovni_payload_add: no space left for 2 bytes",
    ),
    case("emit_uninit", "FATAL: ovni_ev_add: thread is not initialized"),
    case(
        "emit_after_free",
        "FATAL: ovni_ev_add: thread is not initialized",
    ),
    // Ours: libovni copies the jumbo size's worth of bytes from past the event.
    case(
        "emit_jumbo_flagged",
        "FATAL: ovni_ev_add: event is marked as jumbo: use ovni_ev_jumbo_emit",
    ),
    case(
        "jumbo_uninit",
        "FATAL: ovni_ev_add_jumbo: thread is not initialized",
    ),
    case(
        "jumbo_payload_not_empty",
        "FATAL: ovni_ev_add_jumbo: the event payload must be empty",
    ),
    case(
        "jumbo_reemit",
        "FATAL: ovni_ev_add_jumbo: the event payload must be empty",
    ),
    case("jumbo_too_large", "FATAL: ovni_ev_add_jumbo: event too large"),
    case("flush_uninit", "FATAL: ovni_flush: thread is not initialized"),
    case("flush_after_fini", "FATAL: ovni_flush: process not ready"),
    case(
        "flush_write_fails",
        "FATAL: write_evbuf: failed to write buffer to disk: File too large",
    ),
    case(
        "emit_write_fails",
        "FATAL: write_evbuf: failed to write buffer to disk: File too large",
    ),
    // Ours: libovni does not write at ovni_thread_free.
    case(
        "free_write_fails",
        "FATAL: write_evbuf: failed to write buffer to disk: File too large",
    ),
    // Attributes
    case(
        "attr_uninit",
        "FATAL: get_thread_metadata: thread not initialized",
    ),
    case(
        "attr_finished",
        "FATAL: get_thread_metadata: thread already finished",
    ),
    case(
        "attr_set_double_path",
        "FATAL: ovni_attr_set_double: json_object_dotset_number() failed",
    ),
    case(
        "attr_set_double_nan",
        "FATAL: ovni_attr_set_double: json_object_dotset_number() failed",
    ),
    case(
        "attr_set_boolean_path",
        "FATAL: ovni_attr_set_boolean: json_object_dotset_boolean() failed",
    ),
    case(
        "attr_set_str_path",
        "FATAL: ovni_attr_set_str: json_object_dotset_string() failed",
    ),
    case(
        "attr_set_str_null",
        "FATAL: ovni_attr_set_str: json_object_dotset_string() failed",
    ),
    case(
        "attr_set_json_unparsable",
        "FATAL: ovni_attr_set_json: cannot parse json: {x",
    ),
    case(
        "attr_set_json_path",
        "FATAL: ovni_attr_set_json: json_object_dotset_value() failed",
    ),
    case(
        "attr_get_double_missing",
        "FATAL: ovni_attr_get_double: key not found: nope",
    ),
    case(
        "attr_get_double_type",
        "FATAL: ovni_attr_get_double: value with key 'k' is not a number",
    ),
    case(
        "attr_get_boolean_missing",
        "FATAL: ovni_attr_get_boolean: key not found: nope",
    ),
    case(
        "attr_get_boolean_type",
        "FATAL: ovni_attr_get_boolean: value with key 'k' is not a boolean",
    ),
    case(
        "attr_get_str_missing",
        "FATAL: ovni_attr_get_str: key not found: nope",
    ),
    case(
        "attr_get_str_type",
        "FATAL: ovni_attr_get_str: value with key 'k' is not a string",
    ),
    case(
        "attr_get_json_missing",
        "FATAL: ovni_attr_get_json: key not found: nope",
    ),
    case(
        "attr_flush_uninit",
        "FATAL: ovni_attr_flush: thread not initialized",
    ),
    case(
        "attr_flush_finished",
        "FATAL: ovni_attr_flush: thread already finished",
    ),
    // Marks
    case(
        "mark_type_range_high",
        "FATAL: ovni_mark_type: type must be in [0,100) range",
    ),
    case(
        "mark_type_range_negative",
        "FATAL: ovni_mark_type: type must be in [0,100) range",
    ),
    case("mark_type_title_empty", "FATAL: ovni_mark_type: bad title"),
    case("mark_type_title_null", "FATAL: ovni_mark_type: bad title"),
    case(
        "mark_type_uninit",
        "FATAL: get_thread_metadata: thread not initialized",
    ),
    case(
        "mark_type_twice",
        "FATAL: ovni_mark_type: type 3 already defined",
    ),
    case(
        "mark_type_path",
        "FATAL: ovni_mark_type: json_object_dotset_string() failed for title",
    ),
    case(
        "mark_label_range",
        "FATAL: ovni_mark_label: type must be in [0,100) range",
    ),
    case("mark_label_value", "FATAL: ovni_mark_label: value must be >0"),
    case("mark_label_empty", "FATAL: ovni_mark_label: bad label"),
    case(
        "mark_label_uninit",
        "FATAL: get_thread_metadata: thread not initialized",
    ),
    case(
        "mark_label_undefined",
        "FATAL: ovni_mark_label: type 4 not defined",
    ),
    case(
        "mark_label_twice",
        "FATAL: ovni_mark_label: label 'Blue' already defined",
    ),
    case(
        "mark_label_path",
        "FATAL: ovni_mark_label: json_object_dotset_string() failed",
    ),
    case(
        "mark_push_zero",
        "FATAL: ovni_mark_push: value cannot be 0, type 2",
    ),
    case(
        "mark_pop_zero",
        "FATAL: ovni_mark_pop: value cannot be 0, type 2",
    ),
    case(
        "mark_set_zero",
        "FATAL: ovni_mark_set: value cannot be 0, type 1",
    ),
    case(
        "mark_push_uninit",
        "FATAL: ovni_ev_add: thread is not initialized",
    ),
];

/// `text` matches `pattern`, where `*` stands for any text.
fn glob(pattern: &str, text: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or_default();
    let Some(mut rest) = text.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    for (i, p) in parts.iter().enumerate() {
        if i + 1 == parts.len() {
            return rest.ends_with(p);
        }
        match rest.find(p) {
            Some(at) => rest = &rest[at + p.len()..],
            None => return false,
        }
    }
    rest.is_empty()
}

/// Runs one case; `Err` describes how it went wrong.
fn run_case(exe: &Path, c: &Case) -> Result<(), String> {
    let tmp = tempfile::tempdir().unwrap();
    let trace = tmp.path().join("trace");
    let mut env = vec![(
        "OVNI_TRACEDIR".to_string(),
        trace.to_string_lossy().into_owned(),
    )];
    if let Some(prepare) = c.prepare {
        env.extend(prepare(tmp.path(), &trace));
    }
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let out = util::run(exe, &[c.name], tmp.path(), &env);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let last = stderr.lines().last().unwrap_or_default();
    if out.status.signal() != Some(6) {
        return Err(format!("{:?}, stderr: {stderr:?}", out.status));
    }
    if !glob(c.fatal, last) {
        return Err(format!("last stderr line {last:?}, want {:?}", c.fatal));
    }
    if stderr.matches("FATAL:").count() != 1 {
        return Err(format!("more than one FATAL line: {stderr:?}"));
    }
    Ok(())
}

#[test]
fn every_fatal_path_aborts_with_libovni_message() {
    let exe = util::compile("fatal", Link::Shared);
    let failures: Vec<String> = CASES
        .iter()
        .filter_map(|c| {
            run_case(&exe, c)
                .err()
                .map(|e| format!("{} ({}): {e}", c.name, c.fatal))
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        CASES.len(),
        failures.join("\n")
    );
}

#[test]
fn unparsable_version_names_the_bad_part_first() {
    let exe = util::compile("fatal", Link::Shared);
    let tmp = tempfile::tempdir().unwrap();
    let out = util::run(&exe, &["version_unparsable"], tmp.path(), &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(
        lines,
        [
            "ERROR: version_parse: missing patch number: 1.14",
            "FATAL: ovni_version_check_str: failed to parse provided version \"1.14\"",
        ]
    );
}

#[test]
fn glob_matches_stars_only() {
    assert!(glob("a*c", "abbc"));
    assert!(glob("a*", "a"));
    assert!(glob("*/x: *", "p/q/x: y"));
    assert!(!glob("a*c", "abcd"));
    assert!(!glob("abc", "abcd"));
}
