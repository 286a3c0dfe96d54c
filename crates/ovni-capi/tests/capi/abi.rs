//! The ABI as C sees it: layouts, constants, prototypes and stateless functions from
//! `tests/c/abi.c`, against libovni 1.14's values; the shared object's SONAME and symbols.

use std::process::Command;

use crate::util::{self, Link};

/// What `abi.c` prints with libovni 1.14 (fact sheet §2-§4), except the commit, which names
/// this implementation.
fn expected() -> String {
    let commit = ovni_rs::write::LIB_COMMIT;
    format!(
        "\
sizeof struct ovni_ev_header 12
alignof struct ovni_ev_header 1
offsetof struct ovni_ev_header flags 0
offsetof struct ovni_ev_header model 1
offsetof struct ovni_ev_header category 2
offsetof struct ovni_ev_header value 3
offsetof struct ovni_ev_header clock 4
sizeof struct ovni_jumbo_payload 5
offsetof struct ovni_jumbo_payload size 0
offsetof struct ovni_jumbo_payload data 4
sizeof union ovni_ev_payload 16
alignof union ovni_ev_payload 1
offsetof union ovni_ev_payload i8 0
offsetof union ovni_ev_payload i16 0
offsetof union ovni_ev_payload i32 0
offsetof union ovni_ev_payload i64 0
offsetof union ovni_ev_payload u8 0
offsetof union ovni_ev_payload u16 0
offsetof union ovni_ev_payload u32 0
offsetof union ovni_ev_payload u64 0
offsetof union ovni_ev_payload jumbo 0
sizeof struct ovni_ev 28
alignof struct ovni_ev 1
offsetof struct ovni_ev header 0
offsetof struct ovni_ev payload 12
sizeof struct ovni_stream_header 8
offsetof struct ovni_stream_header magic 0
offsetof struct ovni_stream_header version 4
OVNI_METADATA_VERSION 3
OVNI_TRACEDIR ovni
OVNI_MAX_HOSTNAME 512
OVNI_MAX_EV_BUF 2097152
OVNI_MAX_EV_BUF is long long 1
OVNI_STREAM_MAGIC ovni
OVNI_STREAM_VERSION 1
OVNI_STREAM_EXT .obs
OVNI_MODEL_VERSION 1.1.0
OVNI_LIB_VERSION 1.14.0
OVNI_GIT_COMMIT {commit}
OVNI_EV_JUMBO 16
OVNI_MARK_STACK 1
prototypes 1
ovni_version_get 1.14.0 {commit}
version checks passed
payload_size empty 0
flags after 4 bytes 3
flags after 16 bytes 15
payload_size 16
ev_size 28
get_clock 1122334455667788
event bytes 0f4f4878887766554433221103000000ffffffff0807060504030201
flags 0x20 + 2 bytes 33
jumbo payload_size 1004
jumbo ev_size 1016
clock before init is realtime 1
thread ready before init 0
clock after init is monotonic 1
thread ready 1
thread ready after free 0
"
    )
}

#[test]
fn layouts_constants_and_stateless_functions_match_libovni() {
    for link in [Link::Shared, Link::Static] {
        let exe = util::compile("abi", link);
        let tmp = tempfile::tempdir().unwrap();
        let out = util::run(&exe, &[], tmp.path(), &[]);
        util::check_success("abi", &out);
        assert_eq!(String::from_utf8_lossy(&out.stdout), expected(), "{link:?}");
        // The default trace directory is ./ovni.
        assert!(tmp
            .path()
            .join("ovni/loom.abi.host/proc.77/thread.78/stream.obs")
            .is_file());
    }
}

#[test]
fn header_compiles_as_cxx() {
    // C++ programs include ovni.h too (extern "C").
    let Ok(out) = Command::new("g++")
        .args([
            "-fsyntax-only",
            "-x",
            "c++",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-I",
        ])
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/include"))
        .arg("-")
        .stdin(std::fs::File::open(concat!(env!("CARGO_MANIFEST_DIR"), "/include/ovni.h")).unwrap())
        .output()
    else {
        eprintln!("g++ not found: C++ check skipped");
        return;
    };
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn tool(name: &str, args: &[&str]) -> String {
    let lib = util::lib_dir().join("libovni.so.1");
    let out = Command::new(name)
        .args(args)
        .arg(&lib)
        .output()
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    assert!(out.status.success(), "{name}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn shared_object_has_libovni_soname_and_exports_only_the_api() {
    let dynamic = tool("readelf", &["-d"]);
    assert!(
        dynamic.contains("Library soname: [libovni.so.1]"),
        "{dynamic}"
    );

    let nm = tool("nm", &["-D", "--defined-only"]);
    let mut exported: Vec<&str> = nm
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2))
        .collect();
    exported.sort_unstable();
    let mut api = vec![
        "ovni_version_check_str",
        "ovni_version_get",
        "ovni_proc_init",
        "ovni_proc_set_rank",
        "ovni_proc_fini",
        "ovni_thread_init",
        "ovni_thread_require",
        "ovni_thread_free",
        "ovni_thread_isready",
        "ovni_ev_set_mcv",
        "ovni_ev_get_clock",
        "ovni_ev_set_clock",
        "ovni_clock_now",
        "ovni_payload_add",
        "ovni_ev_size",
        "ovni_payload_size",
        "ovni_add_cpu",
        "ovni_ev_emit",
        "ovni_ev_jumbo_emit",
        "ovni_flush",
        "ovni_attr_has",
        "ovni_attr_set_double",
        "ovni_attr_set_boolean",
        "ovni_attr_set_str",
        "ovni_attr_set_json",
        "ovni_attr_get_double",
        "ovni_attr_get_boolean",
        "ovni_attr_get_str",
        "ovni_attr_get_json",
        "ovni_attr_flush",
        "ovni_mark_type",
        "ovni_mark_label",
        "ovni_mark_push",
        "ovni_mark_pop",
        "ovni_mark_set",
    ];
    api.sort_unstable();
    assert_eq!(api.len(), 35);
    assert_eq!(exported, api);
}
