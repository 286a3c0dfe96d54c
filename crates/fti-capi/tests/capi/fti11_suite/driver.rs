//! tests.sh's three kinds of test: `startTestCorr` (run, damage, restart), `startTestLogVerify`
//! (run, restart without damage) and `startTest` (two runs, return codes only). Each returns
//! what went wrong, so that a matrix reports every failing case.

use std::path::Path;

use super::corrupt::{self, Damage, Kind, Spread};
use super::{check_log, run, write_config, Io, Log, Scale, Setup};

/// One case of a test, for the report.
fn name(test: &str, setup: Setup, io: Io, level: u8, rest: &str) -> String {
    format!("{test} config{setup:?} ckpt_io={} L{level}{rest}", io as u8)
}

/// The suffix of MPI-IO's L4 patterns with heads post-processing (tests.sh's
/// `specialcase`): the application ranks write POSIX files there, the heads the shared file.
fn special(setup: Setup, io: Io, level: u8) -> &'static str {
    if setup == Setup::H1I0 && io == Io::Mpi && level == 4 {
        "_H1I0"
    } else {
        ""
    }
}

fn failed(what: &str, log: &Log, why: &str) -> String {
    format!("{what}: {why}\n--- log ---\n{}--- end of log ---", log.text)
}

/// Runs `program args`, which must exit with status 0.
fn must_succeed(
    what: &str,
    program: &str,
    args: &[&str],
    dir: &Path,
    scale: Scale,
) -> Result<(), String> {
    let log = run(program, scale, args, dir);
    if !log.success {
        return Err(failed(what, &log, &format!("{program} {args:?} failed")));
    }
    Ok(())
}

/// `startTestCorr diffSizes`: diffSizes stops after checkpoint 7 at `level`; FTI's tool
/// damages files (not at L4 when corrupting: tests.sh damages only local checkpoints then);
/// the restart's log has the lines of the pattern tests.sh picks, an Error allowed where the
/// restart cannot recover (L1, L4, L2 with two adjacent nodes lost).
pub fn corr(
    setup: Setup,
    scale: Scale,
    io: Io,
    level: u8,
    (kind, damage, spread): (Kind, Damage, Spread),
) -> Result<(), String> {
    let what = name(
        "diffSizes",
        setup,
        io,
        level,
        &format!(" {kind:?} {damage:?} {spread:?}"),
    );
    let dir = tempfile::tempdir().unwrap();
    let cfg = write_config(dir.path(), setup, scale, io, 1);
    let (level_arg, sizes) = (level.to_string(), u8::from(io.check_sizes()).to_string());
    let sp = special(setup, io, level);
    let args = ["config.fti", level_arg.as_str(), "1", sizes.as_str()];
    let log = run("fti11_diff_sizes", scale, &args, dir.path());
    if !log.success {
        return Err(failed(&what, &log, "first run failed"));
    }
    check_log(&log.text, io, &format!("L{level}INIT{sp}"), false)
        .map_err(|e| failed(&what, &log, &e))?;
    let damaged = level != 4 || damage == Damage::Erase;
    if damaged {
        let layout = corrupt::layout(&cfg, scale.procs);
        corrupt::corrupt(dir.path(), &layout, level, kind, damage, spread)
            .map_err(|e| failed(&what, &log, &e))?;
    }
    let args = ["config.fti", level_arg.as_str(), "0", sizes.as_str()];
    let log = run("fti11_diff_sizes", scale, &args, dir.path());
    let d = damage as u8;
    let (pattern, error_allowed) = match level {
        1 | 4 if !damaged => return Ok(()),
        1 | 4 => (format!("L{level}{d}{sp}"), true),
        2 if spread == Spread::Adjacent => (format!("L2{d}2"), true),
        _ => (format!("L{level}{d}{sp}"), false),
    };
    check_log(&log.text, io, &pattern, error_allowed).map_err(|e| failed(&what, &log, &e))
}

/// `startTestLogVerify`: diffSizes (`flushed` false: its restart recovers from `level`) or
/// addInArray (`flushed` true: FTI_Finalize flushed the last checkpoint to L4, and both logs
/// say "FTI has been finalized."); both runs succeed with the INIT and Clean lines.
pub fn log_verify(
    setup: Setup,
    scale: Scale,
    io: Io,
    level: u8,
    flushed: bool,
) -> Result<(), String> {
    let program = if flushed {
        "fti11_add_in_array"
    } else {
        "fti11_diff_sizes"
    };
    let what = name(program, setup, io, level, " log verify");
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), setup, scale, io, 1);
    let sp = special(setup, io, level);
    let level_arg = level.to_string();
    let sizes = u8::from(io.check_sizes()).to_string();
    let clean = if flushed || level == 4 {
        format!("L{level}Clean4{sp}")
    } else {
        format!("L{level}Clean{sp}")
    };
    for (fail, pattern) in [("1", format!("L{level}INIT{sp}")), ("0", clean)] {
        let mut args = vec!["config.fti", level_arg.as_str(), fail];
        if !flushed {
            args.push(sizes.as_str());
        }
        let log = run(program, scale, &args, dir.path());
        if !log.success {
            return Err(failed(
                &what,
                &log,
                &format!("run with fail = {fail} failed"),
            ));
        }
        check_log(&log.text, io, &pattern, false).map_err(|e| failed(&what, &log, &e))?;
        if flushed && !log.text.contains("FTI has been finalized.") {
            return Err(failed(
                &what,
                &log,
                "\"FTI has been finalized.\" is not in the log",
            ));
        }
    }
    Ok(())
}

/// `startTest`: `program config.fti 0 1`, then `program config.fti 0 0`; both exit with 0.
pub fn plain(program: &str, setup: Setup, scale: Scale, io: Io) -> Result<(), String> {
    let what = name(program, setup, io, 0, "");
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), setup, scale, io, 1);
    for fail in ["1", "0"] {
        must_succeed(
            &what,
            program,
            &["config.fti", "0", fail],
            dir.path(),
            scale,
        )?;
    }
    Ok(())
}
