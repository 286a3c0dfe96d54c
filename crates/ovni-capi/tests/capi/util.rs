//! Compiling the C programs of `tests/c/` against `include/ovni.h` and the libovni that
//! cargo built for this test run, and running them.
//!
//! Cargo builds `libovni.so` and `libovni.a` next to the test binary (`target/<profile>/deps`)
//! because the library is also an rlib the tests depend on; `cargo build` puts them one
//! directory up. The shared library is copied, with its SONAME as file name, into a private
//! directory: programs link against that copy, so a rebuild during the run cannot change it.

// Also compiled into the benchmark, which uses only part of it.
#![allow(dead_code)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Mutex, OnceLock};

/// How a program is linked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Link {
    /// `-lovni` against `libovni.so.1`, with an rpath.
    Shared,
    /// `libovni.a` plus the system libraries Rust's standard library needs.
    Static,
}

fn crate_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The directory holding this run's `libovni.so` and `libovni.a`.
pub fn built_lib_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    let deps = exe.parent().expect("executable directory").to_path_buf();
    for dir in [Some(deps.clone()), deps.parent().map(Path::to_path_buf)]
        .into_iter()
        .flatten()
    {
        if dir.join("libovni.so").is_file() && dir.join("libovni.a").is_file() {
            return dir;
        }
    }
    panic!(
        "libovni.so / libovni.a not found in {} or its parent: build with `cargo test -p ovni-capi`",
        deps.display()
    );
}

struct Work {
    dir: tempfile::TempDir,
    built: Mutex<HashMap<(String, Link), PathBuf>>,
}

fn work() -> &'static Work {
    static WORK: OnceLock<Work> = OnceLock::new();
    WORK.get_or_init(|| {
        let dir = tempfile::Builder::new()
            .prefix("ovni-capi-")
            .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
            .expect("work directory");
        let lib = dir.path().join("lib");
        std::fs::create_dir(&lib).unwrap();
        let built = built_lib_dir();
        std::fs::copy(built.join("libovni.so"), lib.join("libovni.so.1")).unwrap();
        std::os::unix::fs::symlink("libovni.so.1", lib.join("libovni.so")).unwrap();
        std::fs::copy(built.join("libovni.a"), lib.join("libovni.a")).unwrap();
        Work {
            dir,
            built: Mutex::new(HashMap::new()),
        }
    })
}

/// The private copy of the libraries (`libovni.so.1`, `libovni.so`, `libovni.a`).
pub fn lib_dir() -> PathBuf {
    work().dir.path().join("lib")
}

/// The C compiler: `$CC`, else `gcc`.
pub fn cc() -> String {
    std::env::var("CC").unwrap_or_else(|_| "gcc".to_string())
}

/// Compiles `tests/c/<name>.c` (once per run and link mode) and returns the executable.
pub fn compile(name: &str, link: Link) -> PathBuf {
    let w = work();
    let mut built = w.built.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(exe) = built.get(&(name.to_string(), link)) {
        return exe.clone();
    }
    let src = crate_dir().join("tests/c").join(format!("{name}.c"));
    let exe = w.dir.path().join(format!("{name}-{link:?}"));
    let lib = lib_dir();
    let mut cmd = Command::new(cc());
    cmd.args([
        "-std=c11", "-O2", "-g", "-Wall", "-Wextra", "-Werror", "-pthread",
    ])
    .arg("-I")
    .arg(crate_dir().join("include"))
    .arg(&src)
    .arg("-o")
    .arg(&exe);
    match link {
        Link::Shared => {
            cmd.arg(format!("-L{}", lib.display()))
                .arg("-lovni")
                .arg(format!("-Wl,-rpath,{}", lib.display()));
        }
        Link::Static => {
            // What `rustc --print native-static-libs` lists for a staticlib on linux-gnu.
            cmd.arg(lib.join("libovni.a")).args([
                "-lgcc_s",
                "-lutil",
                "-lrt",
                "-lpthread",
                "-lm",
                "-ldl",
                "-lc",
            ]);
        }
    }
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run the C compiler '{}': {e}", cc()));
    assert!(
        out.status.success(),
        "compiling {} failed:\n{}",
        src.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    built.insert((name.to_string(), link), exe.clone());
    exe
}

/// Runs `exe` with `args` in `cwd`, with only the given ovni variables set.
pub fn run(exe: &Path, args: &[&str], cwd: &Path, env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(exe);
    cmd.args(args)
        .current_dir(cwd)
        .env_remove("OVNI_TRACEDIR")
        .env_remove("OVNI_TMPDIR");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", exe.display()))
}

/// Panics with the program's output unless it exited with status 0.
pub fn check_success(what: &str, out: &Output) {
    assert!(
        out.status.success(),
        "{what}: {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
