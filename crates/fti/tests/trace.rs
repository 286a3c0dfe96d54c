//! The runtime's own ovni trace: loads with full metadata validation, and holds the thread's
//! life cycle and balanced marks for every checkpoint, level and phase.

use std::path::Path;

use fti::{Config, Fti, Level, Status, Var};

fn config(root: &Path) -> Config {
    Config {
        ckpt_dir: root.join("Local"),
        glbl_dir: root.join("Global"),
        meta_dir: root.join("Meta"),
        trace: true,
        trace_dir: root.join("trace"),
        verbosity: 3,
        ..Config::default()
    }
}

/// (MCV, mark value) of every event of the one stream below `dir`, after checking that
/// `ovnilint` (the ovni emulator's checks) accepts the trace.
fn events(dir: &Path) -> (Vec<(String, i64)>, serde_json::Value) {
    let report = ovni::lint::lint_dir(
        dir,
        &ovni::lint::LintOptions {
            all: true,
            ..Default::default()
        },
    );
    assert!(
        report.accepted(),
        "ovnilint rejects the runtime's trace: {:?}",
        report.problems
    );
    let trace = ovni::Trace::open(dir).unwrap();
    ovni::metadata::System::load(&trace, ovni::events::EventTable::builtin()).unwrap();
    assert_eq!(trace.streams().len(), 1);
    let stream = &trace.streams()[0];
    let evs = stream
        .events()
        .map(|e| {
            let (_, ev) = e.unwrap();
            let mcv = String::from_utf8(ev.mcv.0.to_vec()).unwrap();
            let value = if mcv.starts_with("OM") {
                i64::from_le_bytes(ev.payload[..8].try_into().unwrap())
            } else {
                0
            };
            (mcv, value)
        })
        .collect();
    (evs, stream.meta().clone())
}

#[test]
fn checkpoints_and_recovery_are_traced() {
    let root = tempfile::tempdir().unwrap();
    let mut fti = Fti::init(config(root.path())).unwrap();
    let mut x = vec![1u64; 1000];
    fti.checkpoint(1, Level::L1, &[Var::slice(0, &mut x)])
        .unwrap();
    fti.checkpoint(2, Level::L4, &[Var::slice(0, &mut x)])
        .unwrap();
    fti.finalize().unwrap();

    let (evs, meta) = events(&root.path().join("trace"));
    let names: Vec<&str> = evs.iter().map(|(m, _)| m.as_str()).collect();
    assert_eq!(names.first(), Some(&"OHx"));
    assert_eq!(names.last(), Some(&"OHe"));
    // Each checkpoint writes the trace out: the flush is recorded after it.
    assert_eq!(names.iter().filter(|&&n| n == "OF[").count(), 2);
    let marks: Vec<(String, i64)> = evs
        .iter()
        .filter(|(m, _)| m.starts_with("OM"))
        .cloned()
        .collect();
    let expect = |level: i64, id: i64| {
        vec![
            ("OM[", level),
            ("OM[", id),
            ("OM[", 1),
            ("OM]", 1),
            ("OM[", 2),
            ("OM]", 2),
            ("OM]", id),
            ("OM]", level),
        ]
    };
    let want: Vec<(String, i64)> = expect(1, 1)
        .into_iter()
        .chain(expect(4, 2))
        .map(|(m, v)| (m.to_owned(), v))
        .collect();
    assert_eq!(marks, want);
    assert_eq!(meta["ovni"]["finished"], 1);
    let labels = &meta["ovni"]["mark"]["41"]["labels"];
    assert_eq!(labels["1"], "checkpoint 1 at L1: 8172 bytes");
    assert_eq!(labels["2"], "checkpoint 2 at L4: 8172 bytes");
    assert_eq!(
        meta["ovni"]["mark"]["42"]["labels"]["2"],
        "publish (fsync, rename, retire)"
    );
}

#[test]
fn restart_is_traced_and_a_dropped_runtime_still_ends_its_trace() {
    let root = tempfile::tempdir().unwrap();
    let mut cfg = config(root.path());
    cfg.trace = false;
    let mut fti = Fti::init(cfg).unwrap();
    let mut x = 7u32;
    fti.checkpoint(1, Level::L1, &[Var::new(0, &mut x)])
        .unwrap();
    drop(fti);

    let mut fti = Fti::init(config(root.path())).unwrap();
    assert!(matches!(fti.status(), Status::Restart(_)));
    fti.recover(&mut [Var::new(0, &mut x)]).unwrap();
    drop(fti);
    let (evs, meta) = events(&root.path().join("trace"));
    let marks: Vec<(String, i64)> = evs
        .iter()
        .filter(|(m, _)| m.starts_with("OM"))
        .cloned()
        .collect();
    let want = [("OM[", 3), ("OM]", 3), ("OM[", 4), ("OM]", 4)].map(|(m, v)| (m.to_owned(), v));
    assert_eq!(marks, want);
    assert_eq!(evs.last().unwrap().0, "OHe");
    assert_eq!(meta["ovni"]["finished"], 1);
}

#[test]
fn tracing_off_writes_nothing() {
    let root = tempfile::tempdir().unwrap();
    let mut cfg = config(root.path());
    cfg.trace = false;
    let mut fti = Fti::init(cfg).unwrap();
    let mut x = 1u8;
    fti.checkpoint(1, Level::L1, &[Var::new(0, &mut x)])
        .unwrap();
    fti.finalize().unwrap();
    assert!(!root.path().join("trace").exists());
}

/// The child of [`a_killed_run_leaves_a_trace_that_lints`]: two checkpoints, then waits to be
/// killed.
#[test]
fn traced_child() {
    let Ok(root) = std::env::var("FTI_TRACE_CHILD") else {
        return;
    };
    let mut fti = Fti::init(config(Path::new(&root))).unwrap();
    let mut x = vec![7u8; 10_000];
    for id in 1..=2 {
        fti.checkpoint(id, Level::L1, &[Var::slice(0, &mut x)])
            .unwrap();
    }
    println!("READY");
    use std::io::Write as _;
    std::io::stdout().flush().unwrap();
    loop {
        std::thread::sleep(std::time::Duration::from_secs(60));
    }
}

/// A run killed with SIGKILL after its checkpoints leaves a trace whose only problem for
/// `ovnilint` is that it is not finished, with its checkpoint marks still labelled.
#[test]
fn a_killed_run_leaves_a_trace_that_lints() {
    use std::io::{BufRead, BufReader};
    let root = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "trace::traced_child",
            "--nocapture",
            "--test-threads=1",
            "-q",
        ])
        .env("FTI_TRACE_CHILD", root.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let ready = BufReader::new(child.stdout.take().unwrap())
        .lines()
        .any(|l| l.unwrap().ends_with("READY"));
    assert!(ready);
    child.kill().unwrap();
    child.wait().unwrap();
    let report = ovni::lint::lint_dir(
        &root.path().join("trace"),
        &ovni::lint::LintOptions {
            all: true,
            ..Default::default()
        },
    );
    let problems: Vec<String> = report.problems.iter().map(|p| p.message()).collect();
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        problems[0].contains("ovni.finished is missing"),
        "{problems:?}"
    );
    let trace = ovni::Trace::open(&root.path().join("trace")).unwrap();
    let meta = trace.streams()[0].meta();
    let labels = &meta["ovni"]["mark"]["41"]["labels"];
    assert_eq!(labels["2"], "checkpoint 2 at L1: 10172 bytes", "{meta:#}");
    assert_eq!(meta["ovni"]["require"]["ovni"], "1.1.0", "{meta:#}");
    // The rank is in the metadata from the start, not only at the stream's end.
    assert_eq!(meta["ovni"]["rank"], 0, "{meta:#}");
    assert_eq!(meta["ovni"]["nranks"], 1, "{meta:#}");
}

/// What an application's libovni was asked to do.
#[derive(Default)]
struct FakeOvni {
    attrs: std::sync::Mutex<std::collections::BTreeMap<String, String>>,
    marks: std::sync::Mutex<Vec<(char, i32, i64)>>,
}

struct App(std::sync::Arc<FakeOvni>);

impl fti::AppOvni for App {
    fn attr_has(&self, key: &str) -> bool {
        self.0.attrs.lock().unwrap().contains_key(key)
    }
    fn attr_str(&self, key: &str) -> Option<String> {
        self.0.attrs.lock().unwrap().get(key).cloned()
    }
    fn mark_type(&self, ty: i32, title: &str) {
        let mut attrs = self.0.attrs.lock().unwrap();
        let key = format!("ovni.mark.{ty}.title");
        // libovni aborts on a type defined twice.
        assert!(!attrs.contains_key(&key), "type {ty} defined twice");
        attrs.insert(key, title.to_owned());
    }
    fn mark_label(&self, ty: i32, value: i64, label: &str) {
        let mut attrs = self.0.attrs.lock().unwrap();
        let key = format!("ovni.mark.{ty}.labels.{value}");
        assert!(!attrs.contains_key(&key), "label {key} defined twice");
        attrs.insert(key, label.to_owned());
    }
    fn mark_push(&self, ty: i32, value: i64) {
        self.0.marks.lock().unwrap().push(('[', ty, value));
    }
    fn mark_pop(&self, ty: i32, value: i64) {
        self.0.marks.lock().unwrap().push((']', ty, value));
    }
}

/// With the application's libovni tracing the thread, the runtime's marks go into its stream
/// (at `trace_mark_base`), nothing is written of its own, a second session in the same
/// thread reuses the definitions, and a type the application already uses is refused.
#[test]
fn marks_go_into_the_application_s_trace() {
    let root = tempfile::tempdir().unwrap();
    let fake = std::sync::Arc::new(FakeOvni::default());
    let cfg = Config {
        trace_mark_base: 60,
        ..config(root.path())
    };
    for session in 0..2 {
        let options = fti::Options {
            app_ovni: Some(Box::new(App(fake.clone()))),
            ..Default::default()
        };
        let mut fti =
            Fti::init_with_options(cfg.clone(), Box::new(fti::SelfComm), options).unwrap();
        let mut x = [session as u8; 100];
        fti.checkpoint(1, Level::L1, &[Var::slice(0, &mut x)])
            .unwrap();
        fti.finalize().unwrap();
    }
    assert!(!root.path().join("trace").exists());
    let attrs = fake.attrs.lock().unwrap();
    assert_eq!(attrs["ovni.mark.60.title"], "FTI level");
    assert_eq!(
        attrs["ovni.mark.61.labels.1"],
        "checkpoint 1 at L1: 272 bytes"
    );
    assert_eq!(attrs["ovni.mark.62.labels.1"], "write (hash + write data)");
    drop(attrs);
    let marks = fake.marks.lock().unwrap();
    let first: Vec<(char, i32, i64)> = marks.iter().take(2).copied().collect();
    assert_eq!(first, [('[', 60, 1), ('[', 61, 1)]);
    let pushes = marks.iter().filter(|m| m.0 == '[').count();
    assert_eq!(pushes * 2, marks.len(), "balanced: {marks:?}");
    drop(marks);

    // The application's own type 70 collides with base 69.
    let other = std::sync::Arc::new(FakeOvni::default());
    other
        .attrs
        .lock()
        .unwrap()
        .insert("ovni.mark.70.title".into(), "my solver".into());
    let options = fti::Options {
        app_ovni: Some(Box::new(App(other))),
        ..Default::default()
    };
    let cfg = Config {
        trace_mark_base: 69,
        ..config(root.path())
    };
    let err = Fti::init_with_options(cfg, Box::new(fti::SelfComm), options)
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("mark type 70 (my solver)"), "{err}");
    // `trace = app` without the application's libovni fails at init.
    let cfg = Config {
        trace_app: true,
        ..config(root.path())
    };
    let err = Fti::init(cfg).err().unwrap().to_string();
    assert!(err.contains("trace = app"), "{err}");
}

/// With `async_ckpt = 1` the background thread has a thread stream of its own in the same
/// process: the application's stream shows the time it was stopped (`stage`, phase 7, and
/// `wait` for the previous checkpoint, phase 8), the
/// background's the write and the publication (phases 1 and 2), under the same level and
/// checkpoint marks.
#[test]
fn asynchronous_checkpoints_trace_the_background_thread_apart() {
    let root = tempfile::tempdir().unwrap();
    let cfg = Config {
        async_ckpt: true,
        ..config(root.path())
    };
    let mut fti = Fti::init(cfg).unwrap();
    let mut x = vec![1u64; 1000];
    for id in 1..=2 {
        fti.checkpoint(id, Level::L1, &[Var::slice(0, &mut x)])
            .unwrap();
    }
    fti.finalize().unwrap();

    let dir = root.path().join("trace");
    let report = ovni::lint::lint_dir(
        &dir,
        &ovni::lint::LintOptions {
            all: true,
            ..Default::default()
        },
    );
    assert!(report.accepted(), "{:?}", report.problems);
    let trace = ovni::Trace::open(&dir).unwrap();
    ovni::metadata::System::load(&trace, ovni::events::EventTable::builtin()).unwrap();
    let streams = trace.streams();
    assert_eq!(
        streams.len(),
        2,
        "the application's thread and the background's"
    );
    let mut marks: Vec<Vec<(String, i64)>> = streams
        .iter()
        .map(|s| {
            assert_eq!(s.meta()["ovni"]["finished"], 1);
            s.events()
                .map(|e| e.unwrap().1)
                .filter(|ev| ev.mcv.0.starts_with(b"OM"))
                .map(|ev| {
                    let mcv = String::from_utf8(ev.mcv.0.to_vec()).unwrap();
                    (mcv, i64::from_le_bytes(ev.payload[..8].try_into().unwrap()))
                })
                .collect()
        })
        .collect();
    // The application's stream holds the stage phases.
    marks.sort_by_key(|m| !m.contains(&("OM[".to_owned(), 7)));
    let expect = |phases: &[i64], waits: bool| -> Vec<(String, i64)> {
        (1..=2)
            .flat_map(|id| {
                // The second call first waits for the first checkpoint's background work.
                let mut m = if waits && id == 2 {
                    vec![("OM[", 8), ("OM]", 8)]
                } else {
                    vec![]
                };
                m.extend([("OM[", 1), ("OM[", id)]);
                for &p in phases {
                    m.extend([("OM[", p), ("OM]", p)]);
                }
                m.extend([("OM]", id), ("OM]", 1)]);
                m
            })
            .map(|(mcv, v)| (mcv.to_owned(), v))
            .collect()
    };
    assert_eq!(marks[0], expect(&[7], true), "application's thread");
    assert_eq!(marks[1], expect(&[1, 2], false), "background thread");
    // The background thread is Paused while it waits for work, Running for each job.
    let states: Vec<Vec<String>> = streams
        .iter()
        .map(|s| {
            s.events()
                .map(|e| e.unwrap().1)
                .filter(|ev| ev.mcv.0.starts_with(b"OH"))
                .map(|ev| String::from_utf8(ev.mcv.0.to_vec()).unwrap())
                .collect()
        })
        .collect();
    let background = states
        .iter()
        .find(|s| s.contains(&"OHp".to_owned()))
        .expect("a paused thread");
    assert_eq!(
        background.join(" "),
        "OHx OHp OHr OHp OHr OHp OHr OHe",
        "background thread"
    );
    assert_eq!(
        states
            .iter()
            .filter(|s| s.contains(&"OHp".to_owned()))
            .count(),
        1,
        "only the background thread pauses"
    );
    assert_eq!(
        streams[0].meta()["ovni"]["mark"]["42"]["labels"]["8"],
        "wait (for the background's previous work)"
    );
}

/// An L3 checkpoint's Reed-Solomon encoding is its own phase (9, `L3 encode`), not the L2
/// partner copy's (6).
#[test]
fn l3_encoding_is_its_own_phase() {
    let root = tempfile::tempdir().unwrap();
    let streams = std::thread::scope(|s| {
        let handles: Vec<_> = fti::Threads::new(4, "host")
            .into_iter()
            .map(|comm| {
                let root = root.path();
                s.spawn(move || {
                    let cfg = Config {
                        group_size: 4,
                        local_test: true,
                        ..config(root)
                    };
                    let mut fti = Fti::init_with(cfg, Box::new(comm)).unwrap();
                    let mut x = vec![3u64; 1000];
                    fti.checkpoint(1, Level::L3, &[Var::slice(0, &mut x)])
                        .unwrap();
                    fti.finalize().unwrap();
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        ovni::Trace::open(&root.path().join("trace"))
            .unwrap()
            .streams()
            .len()
    });
    assert_eq!(streams, 4, "one stream per rank");
    let trace = ovni::Trace::open(&root.path().join("trace")).unwrap();
    for stream in trace.streams() {
        let phases: Vec<i64> = stream
            .events()
            .map(|e| e.unwrap().1)
            .filter(|ev| ev.mcv.0 == *b"OM[" && ev.payload[8..12] == 42i32.to_le_bytes())
            .map(|ev| i64::from_le_bytes(ev.payload[..8].try_into().unwrap()))
            .collect();
        assert!(phases.contains(&9) && !phases.contains(&6), "{phases:?}");
        assert_eq!(
            stream.meta()["ovni"]["mark"]["42"]["labels"]["9"],
            "L3 encode (Reed-Solomon code across the group)"
        );
    }
}

/// Whether every mark pushed was popped, innermost first.
fn balanced(marks: &[(char, i32, i64)]) -> bool {
    let mut open = Vec::new();
    for &(op, ty, value) in marks {
        match op {
            '[' => open.push((ty, value)),
            _ if open.pop() != Some((ty, value)) => return false,
            _ => {}
        }
    }
    open.is_empty()
}

/// Every way a checkpoint, an asynchronous one or an incremental one can fail leaves no mark
/// open in the thread's stream: refused variables, a file that cannot be created (written
/// synchronously, in the background, or deferred), an incremental checkpoint finalized
/// without all its variables.
#[test]
fn every_failure_path_leaves_no_open_mark() {
    let root = tempfile::tempdir().unwrap();
    for (async_ckpt, dcp) in [(false, false), (true, false), (true, true)] {
        let fake = std::sync::Arc::new(FakeOvni::default());
        let options = fti::Options {
            app_ovni: Some(Box::new(App(fake.clone()))),
            ..Default::default()
        };
        let cfg = Config {
            async_ckpt,
            dcp,
            ..config(root.path())
        };
        let mut fti = Fti::init_with_options(cfg, Box::new(fti::SelfComm), options).unwrap();
        let (mut x, mut y) = ([1u8; 100], [2u8; 100]);
        let what = format!("async_ckpt = {async_ckpt}, dcp = {dcp}");

        // The same id twice.
        let twice = [Var::slice(0, &mut x), Var::slice(0, &mut y)];
        assert!(fti.checkpoint(1, Level::L1, &twice).is_err(), "{what}");
        assert!(balanced(&fake.marks.lock().unwrap()), "{what}");

        // A file where the checkpoint's tmp/ directory goes: the write cannot start.
        let blocker = fti.dirs().tmp_dir(Level::L1);
        std::fs::create_dir_all(blocker.parent().unwrap()).unwrap();
        std::fs::write(&blocker, b"in the way").unwrap();
        let taken = fti
            .checkpoint(2, Level::L1, &[Var::slice(0, &mut x)])
            .and_then(|_| fti.wait());
        assert!(taken.is_err(), "{what}");
        assert!(balanced(&fake.marks.lock().unwrap()), "{what}");
        std::fs::remove_file(&blocker).unwrap();

        // An incremental checkpoint finalized without its second variable.
        if !async_ckpt {
            let sizes = [
                ftiff::VarSize { id: 0, size: 100 },
                ftiff::VarSize { id: 1, size: 100 },
            ];
            fti.init_icp(3, Level::L1, &sizes).unwrap();
            fti.add_var_icp(&Var::slice(0, &mut x)).unwrap();
            assert!(fti.finalize_icp().is_err(), "{what}");
            assert!(balanced(&fake.marks.lock().unwrap()), "{what}");
        }

        // And the runtime still works.
        fti.checkpoint(4, Level::L1, &[Var::slice(0, &mut x)])
            .unwrap();
        fti.finalize().unwrap();
        let marks = fake.marks.lock().unwrap();
        assert!(balanced(&marks), "{what}");
        assert!(marks.len() > 4, "{what}: {marks:?}");
    }
}
