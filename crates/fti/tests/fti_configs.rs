//! FTI users' configs and habits: config files written the way FTI 1.1's and 1.6's examples
//! are start unchanged (with `ckpt_io` 1, 2 or 3), and the runtime's log reads like FTI's.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};

use fti::report::{Priority, Reporter};
use fti::{Config, Fti, Level, Threads, Var};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/fti/configs")
        .join(name)
}

/// The fixture config with its `./` directories moved under `root`.
fn config_in(root: &Path, name: &str) -> PathBuf {
    let text = std::fs::read_to_string(fixture(name)).unwrap();
    let text = text.replace("./", &format!("{}/", root.display()));
    let path = root.join("config.fti");
    std::fs::write(&path, text).unwrap();
    path
}

/// Every message, by priority and rank.
#[derive(Default)]
struct Captured(Mutex<Vec<(Priority, u32, String)>>);

impl Reporter for Captured {
    fn report(&self, priority: Priority, rank: u32, text: &str) {
        self.0
            .lock()
            .unwrap()
            .push((priority, rank, text.to_owned()));
    }
}

#[test]
fn fti_s_example_config_runs_unchanged_on_eight_ranks() {
    for (io, says) in [(3, "FTI-FF"), (1, "POSIX"), (2, "MPI-I/O")] {
        example_config_on_eight_ranks(io, says);
    }
}

/// FTI's example config with `ckpt_io = io` runs every level on eight ranks; the log names the
/// I/O mode as FTI's does (`Selected Ckpt I/O is <says>`).
fn example_config_on_eight_ranks(io: u8, says: &str) {
    let root = tempfile::tempdir().unwrap();
    let path = config_in(root.path(), "fti-example-style.cfg");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(
        &path,
        text.replace(
            "ckpt_io                     = 3",
            &format!("ckpt_io                     = {io}"),
        ),
    )
    .unwrap();
    let cfg = Config::from_file(&path).unwrap();
    assert!(cfg.warnings.is_empty(), "{:?}", cfg.warnings);
    assert_eq!(cfg.notes.len(), 1, "{:?}", cfg.notes);
    for key in [
        "[basic] dcp_l4",
        "[basic] keep_l4_ckpt",
        "[basic] enable_staging",
        "[advanced] block_size",
        "[advanced] ckpt_tag",
        "[advanced] lustre_striping_unit",
    ] {
        assert!(cfg.notes[0].contains(key), "{key}: {}", cfg.notes[0]);
    }
    assert_eq!((cfg.node_size, cfg.group_size), (2, 4));
    assert_eq!(cfg.ckpt_dir, root.path().join("Local"));
    assert!(!cfg.dcp);
    let captured = Arc::new(Captured::default());
    std::thread::scope(|s| {
        for comm in Threads::new(8, "host") {
            let (cfg, captured) = (cfg.clone(), captured.clone());
            s.spawn(move || {
                let rank = fti::Comm::rank(&comm);
                let options = fti::Options {
                    reporter: captured,
                    ..Default::default()
                };
                let mut fti = Fti::init_with_options(cfg, Box::new(comm), options).unwrap();
                let mut v = vec![rank as u8; 5000];
                for (id, level) in [
                    (1, Level::L1),
                    (2, Level::L2),
                    (3, Level::L3),
                    (4, Level::L4),
                ] {
                    fti.checkpoint(id, level, &[Var::slice(0, &mut v)]).unwrap();
                }
                fti.finalize().unwrap();
            });
        }
    });
    let said = captured.0.lock().unwrap();
    let lines = |p: Priority| -> Vec<String> {
        said.iter()
            .filter(|(q, ..)| *q == p)
            .map(|(_, _, t)| t.clone())
            .collect()
    };
    assert!(
        lines(Priority::Warning).is_empty(),
        "{:?}",
        lines(Priority::Warning)
    );
    // The note about keys without effect is said once, by rank 0.
    let notes: Vec<_> = said
        .iter()
        .filter(|(_, _, t)| t.contains("without effect"))
        .collect();
    assert_eq!(notes.len(), 1);
    assert_eq!(notes[0].1, 0);
    let info = lines(Priority::Info).join("\n");
    for line in [
        "Reading FTI configuration file (",
        "The execution ID is: ",
        &format!("Selected Ckpt I/O is {says}"),
        "FTI has been initialized.",
        "Ckpt. ID 2 (L2) (0.00 MB/proc) taken in ",
        "Ckpt. ID 4 (L4) (0.00 MB/proc) taken in ",
        "FTI has been finalized.",
    ] {
        assert!(info.contains(line), "{line}:\n{info}");
    }
    let restart = Config::from_file(&path).unwrap();
    assert_eq!(restart.failure, Some(0));
}

#[test]
fn fti_1_6_keys_bom_quotes_and_duplicates() {
    let root = tempfile::tempdir().unwrap();
    let path = config_in(root.path(), "fti-1.6-style.cfg");
    let cfg = Config::from_file(&path).unwrap();
    // Quoted values are taken verbatim, comment characters included.
    assert_eq!(
        cfg.ckpt_dir,
        PathBuf::from(format!("{}/Local;with#chars", root.path().display()))
    );
    assert_eq!(cfg.glbl_dir, root.path().join("Global"));
    // `verbosity` is set at lines 24 and 25: the second wins, with a warning naming both.
    assert_eq!(cfg.verbosity, 2);
    assert_eq!(cfg.warnings.len(), 1, "{:?}", cfg.warnings);
    assert!(
        cfg.warnings[0].ends_with(
            "config.fti:25: [basic] verbosity is set again (first at line 24): the value of line 25 is used"
        ),
        "{}",
        cfg.warnings[0]
    );
    for key in [
        "dcp_stack_size",
        "keep_heads_alive",
        "h5_single_file_enable",
    ] {
        assert!(cfg.notes[0].contains(key), "{key}: {}", cfg.notes[0]);
        assert!(!cfg.warnings[0].contains(key));
    }
    let mut fti = Fti::init(cfg).unwrap();
    let mut x = 3u64;
    fti.checkpoint(1, Level::L1, &[Var::new(0, &mut x)])
        .unwrap();
    fti.finalize().unwrap();
}

/// The child of [`the_log_is_fti_s`]: a run from a config file, printing with the default
/// reporter.
#[test]
fn log_child() {
    let Ok(root) = std::env::var("FTI_LOG_CHILD") else {
        return;
    };
    let root = PathBuf::from(root);
    let mut fti = Fti::init(Config::from_file(&root.join("config.fti")).unwrap()).unwrap();
    let mut x = 3u64;
    fti.checkpoint(1, Level::L1, &[Var::new(0, &mut x)])
        .unwrap();
    fti.finalize().unwrap();
}

fn run_child(root: &Path, verbosity: Option<&str>) -> (String, String) {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([
        "--exact",
        "fti_configs::log_child",
        "--nocapture",
        "--test-threads=1",
        "-q",
    ])
    .env("FTI_LOG_CHILD", root)
    .env("NO_COLOR", "1");
    match verbosity {
        Some(v) => cmd.env("FTI_VERBOSITY", v),
        None => cmd.env_remove("FTI_VERBOSITY"),
    };
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// FTI's `FTI_Print` lines on stdout, `FTI_VERBOSITY` overriding the config, and the word
/// `Error` only in errors.
#[test]
fn the_log_is_fti_s() {
    let root = tempfile::tempdir().unwrap();
    let path = config_in(root.path(), "fti-1.6-style.cfg");
    let text = std::fs::read_to_string(&path).unwrap();
    // A key this runtime does not know: one warning.
    std::fs::write(&path, text.replace("[restart]", "colour = blue\n[restart]")).unwrap();
    let (stdout, _) = run_child(root.path(), None);
    let lines: Vec<&str> = stdout.lines().collect();
    let config = path.display().to_string();
    for expected in [
        format!("[ FTI  Information ] : Reading FTI configuration file ({config})..."),
        "[ FTI  Information ] : Selected Ckpt I/O is FTI-FF".to_owned(),
        "[ FTI  Information ] : FTI has been initialized.".to_owned(),
        "[ FTI  Information ] : FTI has been finalized.".to_owned(),
    ] {
        assert!(lines.contains(&expected.as_str()), "{expected}\n{stdout}");
    }
    assert!(
        lines
            .iter()
            .any(|l| l
                .starts_with("[ FTI  Information ] : Ckpt. ID 1 (L1) (0.00 MB/proc) taken in ")),
        "{stdout}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("[ FTI Warning 000000 ] : ")
                && l.contains("unknown key `colour` in [basic]")),
        "{stdout}"
    );
    assert!(!stdout.contains("Error"), "{stdout}");
    // FTI_VERBOSITY=3: warnings only.
    let (stdout, _) = run_child(root.path(), Some("3"));
    assert!(!stdout.contains("Information"), "{stdout}");
    assert!(stdout.contains("[ FTI Warning 000000 ]"), "{stdout}");
    // FTI_VERBOSITY=1: debug lines too.
    let (stdout, _) = run_child(root.path(), Some("1"));
    assert!(
        stdout.contains("[FTI Debug - 000000] : Updating configuration file ("),
        "{stdout}"
    );
}
