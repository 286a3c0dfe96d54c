//! Compiling C programs against `include/fti.h` and the libfti cargo built for this run, and
//! running them alone or under `mpirun`.
//!
//! The MPI tools are those of the MPI the library was built with: `$MPICC` (default `mpicc`,
//! the variable rsmpi's build reads too), `$MPICXX` (default `mpicxx`) and the launcher
//! `$MPIRUN` (default `mpirun`); scripts/test-mpich sets them to MPICH's.
//!
//! Cargo builds `libfti_capi.so` and `libfti_capi.a` next to the test binary
//! (`target/<profile>/deps`) because the library is also an rlib the tests depend on; `cargo
//! build` puts them one directory up. They are copied, as `libfti.so` (their SONAME) and
//! `libfti.a`, into a private directory: programs link with `-lfti` against that copy, so a
//! rebuild during the run cannot change it.

// Also compiled into the benchmark, which uses only part of it.
#![allow(dead_code)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

/// How a program is linked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Link {
    /// `-lfti` against `libfti.so`, with an rpath.
    Shared,
    /// `libfti.a` plus the system libraries Rust's standard library needs.
    Static,
}

pub fn crate_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The FTI-FF vectors of the repository (`tests/fixtures/fti`).
pub fn fixtures() -> PathBuf {
    crate_dir().join("../../tests/fixtures/fti")
}

/// The directory holding this run's `libfti_capi.so` and `libfti_capi.a`.
pub fn built_lib_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    let deps = exe.parent().expect("executable directory").to_path_buf();
    for dir in [Some(deps.clone()), deps.parent().map(Path::to_path_buf)]
        .into_iter()
        .flatten()
    {
        if dir.join("libfti_capi.so").is_file() && dir.join("libfti_capi.a").is_file() {
            return dir;
        }
    }
    panic!(
        "libfti_capi.so / libfti_capi.a not found in {} or its parent: build with `cargo test -p fti-capi`",
        deps.display()
    );
}

struct Work {
    dir: PathBuf,
    built: Mutex<HashMap<(String, Link), PathBuf>>,
}

fn work() -> &'static Work {
    static WORK: OnceLock<Work> = OnceLock::new();
    WORK.get_or_init(|| {
        // One directory per run of the test binary, those of finished runs removed at its
        // start: the libraries are large, and statics are never dropped, so a temporary
        // directory would outlive every run. Runs at once (the long FTI suites) keep apart.
        let exe = std::env::current_exe().expect("test executable path");
        let name = exe.file_stem().expect("executable name").to_string_lossy();
        let prefix = format!("fti-capi-{name}-");
        let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
        remove_finished_runs(tmp, &prefix);
        let dir = tmp.join(format!("{prefix}{}", std::process::id()));
        let lib = dir.join("lib");
        std::fs::create_dir_all(&lib).expect("work directory");
        let built = built_lib_dir();
        std::fs::copy(built.join("libfti_capi.so"), lib.join("libfti.so")).unwrap();
        std::fs::copy(built.join("libfti_capi.a"), lib.join("libfti.a")).unwrap();
        Work {
            dir,
            built: Mutex::new(HashMap::new()),
        }
    })
}

/// Removes the work directories `<prefix><pid>` in `tmp` of runs no longer running.
fn remove_finished_runs(tmp: &Path, prefix: &str) {
    let Ok(entries) = std::fs::read_dir(tmp) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix(prefix)
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if !Path::new("/proc").join(pid.to_string()).exists() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// The private copy of the libraries (`libfti.so`, `libfti.a`).
pub fn lib_dir() -> PathBuf {
    work().dir.join("lib")
}

/// Compiles `tests/c/<name>.c` (once per run and link mode) with `mpicc` and returns the
/// executable.
pub fn compile(name: &str, link: Link) -> PathBuf {
    compile_file(&crate_dir().join("tests/c").join(format!("{name}.c")), link)
}

/// `$name`, or `default` when it is not set.
pub fn tool(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.to_owned())
}

/// The MPI launchers the tests know.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Launcher {
    OpenMpi,
    /// MPICH's (and its derivatives'), Hydra.
    Hydra,
}

/// Which launcher `$MPIRUN` is, from its `--version`.
fn launcher() -> Launcher {
    static LAUNCHER: OnceLock<Launcher> = OnceLock::new();
    *LAUNCHER.get_or_init(|| {
        let program = tool("MPIRUN", "mpirun");
        let out = Command::new(&program)
            .arg("--version")
            .output()
            .unwrap_or_else(|e| panic!("cannot run the MPI launcher {program} ($MPIRUN): {e}"));
        let version = String::from_utf8_lossy(&out.stdout);
        if ["Open MPI", "OpenRTE", "open-mpi.org"]
            .iter()
            .any(|s| version.contains(s))
        {
            Launcher::OpenMpi
        } else if version.contains("HYDRA") {
            Launcher::Hydra
        } else {
            panic!("{program} ($MPIRUN) is neither Open MPI's launcher nor MPICH's:\n{version}")
        }
    })
}

/// Compiles a C (`.c`, with `$MPICC`) or C++ (`.cpp`, with `$MPICXX`) source against fti.h.
pub fn compile_file(src: &Path, link: Link) -> PathBuf {
    let w = work();
    let name = src.file_stem().unwrap().to_string_lossy().into_owned();
    let mut built = w.built.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(exe) = built.get(&(name.clone(), link)) {
        return exe.clone();
    }
    let exe = w.dir.join(format!("{name}-{link:?}"));
    let lib = lib_dir();
    let cpp = src.extension().is_some_and(|e| e == "cpp");
    let mut cmd = Command::new(if cpp {
        tool("MPICXX", "mpicxx")
    } else {
        tool("MPICC", "mpicc")
    });
    if cpp {
        // OpenMPI's deprecated C++ bindings, which mpi.h pulls in, fail -Wextra -Werror.
        cmd.args(["-std=c++11", "-DOMPI_SKIP_MPICXX"]);
    } else {
        cmd.arg("-std=c11");
    }
    cmd.args(["-O2", "-g", "-Wall", "-Wextra", "-Werror"])
        .arg("-I")
        .arg(crate_dir().join("include"))
        .arg(src)
        .arg("-o")
        .arg(&exe);
    match link {
        Link::Shared => {
            cmd.arg(format!("-L{}", lib.display()))
                .arg("-lfti")
                .arg(format!("-Wl,-rpath,{}", lib.display()));
        }
        Link::Static => {
            // What `rustc --print native-static-libs` lists for a staticlib on linux-gnu.
            cmd.arg(lib.join("libfti.a")).args([
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
    cmd.arg("-lm");
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run the MPI compiler wrapper: {e}"));
    assert!(
        out.status.success(),
        "compiling {} failed:\n{}",
        src.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    built.insert((name, link), exe.clone());
    exe
}

/// How long a program may run before the test gives up on it.
pub const DEADLINE: Duration = Duration::from_secs(120);

/// Runs `exe args` in `cwd` (one MPI rank, started without mpirun) and waits for it.
pub fn run(exe: &Path, args: &[&str], cwd: &Path) -> Output {
    let child = Command::new(exe)
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", exe.display()));
    wait(child, &format!("{} {args:?}", exe.display()))
}

/// `mpirun -np <np> exe args` in `cwd`, with `$MPIRUN` as the launcher (default `mpirun`). The
/// job ends at the deadline: Open MPI's launcher is told with `--timeout` (and, for the tests'
/// containers, to run as root and oversubscribe the cores), MPICH's (Hydra) with
/// `MPIEXEC_TIMEOUT`. Hydra forwards the ranks' output without keeping lines whole (a line of
/// one rank may be cut by another's): there each rank writes to files of its own, returned in
/// rank order, followed by what the launcher itself wrote.
pub fn mpirun(np: u32, exe: &Path, args: &[&str], cwd: &Path) -> Output {
    mpirun_within(np, exe, args, cwd, DEADLINE)
}

/// `mpirun` for a program that runs longer than [`DEADLINE`]: the job ends at `deadline`.
pub fn mpirun_within(np: u32, exe: &Path, args: &[&str], cwd: &Path, deadline: Duration) -> Output {
    let program = tool("MPIRUN", "mpirun");
    let seconds = deadline.as_secs().to_string();
    let mut cmd = Command::new(&program);
    let mut files = None;
    match launcher() {
        Launcher::OpenMpi => {
            cmd.args([
                "--allow-run-as-root",
                "--oversubscribe",
                "--timeout",
                &seconds,
            ]);
        }
        Launcher::Hydra => {
            let dir = tempfile::tempdir().unwrap();
            cmd.env("MPIEXEC_TIMEOUT", &seconds)
                .arg("-outfile-pattern")
                .arg(dir.path().join("out.%r"))
                .arg("-errfile-pattern")
                .arg(dir.path().join("err.%r"));
            files = Some(dir);
        }
    }
    let child = cmd
        .arg("-np")
        .arg(np.to_string())
        .arg(exe)
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run the MPI launcher {program} ($MPIRUN): {e}"));
    let what = format!("mpirun -np {np} {} {args:?}", exe.display());
    let mut out = wait_within(child, deadline, &what);
    if let Some(dir) = files {
        let ranks = |stream: &str| -> Vec<u8> {
            (0..np)
                .flat_map(|r| {
                    std::fs::read(dir.path().join(format!("{stream}.{r}"))).unwrap_or_default()
                })
                .collect()
        };
        out.stdout = [ranks("out"), out.stdout].concat();
        out.stderr = [ranks("err"), out.stderr].concat();
    }
    out
}

/// Waits for `child`, reading its output meanwhile; kills it at the deadline.
pub fn wait(child: Child, what: &str) -> Output {
    wait_within(child, DEADLINE, what)
}

/// [`wait`] with `deadline` (and 10 s more for a launcher to end its job at `deadline`).
fn wait_within(child: Child, deadline: Duration, what: &str) -> Output {
    test_support::output_within(child, deadline + Duration::from_secs(10), what)
}

/// The program's stdout, after checking that it exited with status 0.
pub fn success(what: &str, out: &Output) -> String {
    assert!(
        out.status.success(),
        "{what}: {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The lines of `stdout` the C programs print for the tests (`= ...`), without FTI's messages
/// and without the frame of MPICH's report of a killed rank (`=   BAD TERMINATION ...`).
pub fn results(stdout: &str) -> Vec<&str> {
    stdout
        .lines()
        .filter_map(|l| l.strip_prefix("= "))
        .filter(|l| !l.starts_with(char::is_whitespace))
        .collect()
}

/// Writes an FTI config file `config.fti` in `dir` (FTI-FF, one rank per node, local test
/// mode, quiet) with the `extra` lines appended to `[basic]`, and returns its path.
pub fn config(dir: &Path, extra: &str) -> PathBuf {
    let path = dir.join("config.fti");
    std::fs::write(
        &path,
        format!(
            "[basic]\nhead = 0\nnode_size = 1\nckpt_dir = {d}/Local\nglbl_dir = {d}/Global\nmeta_dir = {d}/Meta\nckpt_io = 3\nverbosity = 3\n{extra}\n[restart]\nfailure = 0\nexec_id = \n[advanced]\nlocal_test = 1\n",
            d = dir.display()
        ),
    )
    .unwrap();
    path
}

/// The `[restart]` keys of a config file.
pub fn restart_keys(config: &Path) -> (u8, String) {
    let text = std::fs::read_to_string(config).unwrap();
    let key = |k: &str| {
        text.lines()
            .filter_map(|l| l.split_once('='))
            .find(|(name, _)| name.trim() == k)
            .map(|(_, v)| v.trim().to_owned())
            .unwrap_or_default()
    };
    (key("failure").parse().unwrap_or(u8::MAX), key("exec_id"))
}

/// Every file named `Ckpt*.fti` under `dir`, sorted.
pub fn checkpoint_files(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("Ckpt"))
            {
                found.push(p);
            }
        }
    }
    found.sort();
    found
}

/// The newest checkpoint id among the `Ckpt<id>-...` files of `folder` (FTI's drivers damage
/// the files of the checkpoint a run left last). Panics naming the folder when it cannot be
/// read or holds none.
pub fn newest_checkpoint_id(folder: &Path) -> u32 {
    std::fs::read_dir(folder)
        .unwrap_or_else(|e| panic!("could not open directory {}: {e}", folder.display()))
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.strip_prefix("Ckpt")?
                .split('-')
                .next()?
                .parse::<u32>()
                .ok()
        })
        .max()
        .unwrap_or_else(|| panic!("no checkpoint files in {}", folder.display()))
}
