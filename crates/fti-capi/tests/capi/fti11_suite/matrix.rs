//! The matrix of tests.sh (`runAllConfiguration` for each config, I/O mode and level) and
//! the slices CI runs.

use super::corrupt::{Damage, Kind, Spread};
use super::{driver, programs, Io, Scale, Setup, CI_SCALE, FTI_SCALE};

/// One case of the matrix.
#[derive(Debug, Clone, Copy)]
pub enum Case {
    /// `startTestCorr diffSizes` at a level.
    Corr(u8, Kind, Damage, Spread),
    /// `startTestLogVerify` at a level: diffSizes (false) or addInArray (true, flushed).
    LogVerify(u8, bool),
    /// `startTest` of a program (nodeFlag, heatdis).
    Plain(&'static str),
}

/// `runAllConfiguration` at `level`: diffSizes damaged in every way tests.sh damages (FTI-FF
/// only erased; L1 and L4 have no partner files: one Rank file), both log verifications, and
/// at L1 nodeFlag and heatdis.
pub fn all_configuration(io: Io, level: u8) -> Vec<Case> {
    let mut cases = Vec::new();
    for damage in [Damage::Corrupt, Damage::Erase] {
        if io == Io::Ftiff && damage == Damage::Corrupt {
            continue;
        }
        if level == 1 || level == 4 {
            cases.push(Case::Corr(level, Kind::Ckpt, damage, Spread::One));
            continue;
        }
        for kind in [Kind::Ckpt, Kind::Partner] {
            for spread in Spread::ALL {
                cases.push(Case::Corr(level, kind, damage, spread));
            }
        }
    }
    cases.push(Case::LogVerify(level, false));
    cases.push(Case::LogVerify(level, true));
    if level == 1 {
        cases.push(Case::Plain("fti11_node_flag"));
        cases.push(Case::Plain("fti11_heatdis"));
    }
    cases
}

/// Runs `case`; says what went wrong.
pub fn run_case(setup: Setup, scale: Scale, io: Io, case: Case) -> Result<(), String> {
    match case {
        Case::Corr(level, kind, damage, spread) => {
            driver::corr(setup, scale, io, level, (kind, damage, spread))
        }
        Case::LogVerify(level, flushed) => driver::log_verify(setup, scale, io, level, flushed),
        Case::Plain(program) => driver::plain(program, setup, scale, io),
    }
}

/// Fails with the list of the outcomes that are errors (each printed as it comes).
fn assert_all_ok(outcomes: impl IntoIterator<Item = (String, Result<(), String>)>) {
    let mut failures = Vec::new();
    let mut count = 0;
    for (name, outcome) in outcomes {
        count += 1;
        eprintln!("{name}: {}", if outcome.is_ok() { "ok" } else { "FAILED" });
        if let Err(e) = outcome {
            failures.push(e);
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {count} cases failed:\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

/// Runs every case (lazily, so that each is reported as it ends).
fn run_all(setup: Setup, scale: Scale, cases: &[(Io, Case)]) {
    assert_all_ok(cases.iter().map(|&(io, case)| {
        let started = std::time::Instant::now();
        let outcome = run_case(setup, scale, io, case);
        let name = format!(
            "config{setup:?} ckpt_io={} {case:?} ({:.1} s)",
            io as u8,
            started.elapsed().as_secs_f64()
        );
        (name, outcome)
    }));
}

/// CI's slice of a config (L1 and L4: L2 and L3 cost far more): a restart that cannot
/// recover in each I/O mode (corrupt, erased, the MPI-IO shared file erased) and the flushed
/// log verification (with heads post-processing, H1I0, MPI-IO's L4 is flushed by the heads:
/// FTI's `L41_H1I0` pattern).
fn ci_slice(_setup: Setup) -> Vec<(Io, Case)> {
    vec![
        (
            Io::Posix,
            Case::Corr(1, Kind::Ckpt, Damage::Corrupt, Spread::One),
        ),
        (
            Io::Mpi,
            Case::Corr(4, Kind::Ckpt, Damage::Erase, Spread::One),
        ),
        (
            Io::Ftiff,
            Case::Corr(1, Kind::Ckpt, Damage::Erase, Spread::One),
        ),
        (Io::Posix, Case::LogVerify(1, true)),
    ]
}

/// The cases of CI's slice of `setup`, run in turn, with their names.
fn slice_outcomes(setup: Setup) -> Vec<(String, Result<(), String>)> {
    ci_slice(setup)
        .into_iter()
        .map(|(io, case)| {
            let started = std::time::Instant::now();
            let outcome = run_case(setup, CI_SCALE, io, case);
            let secs = started.elapsed().as_secs_f64();
            let name = format!(
                "config{setup:?} ckpt_io={} {case:?} ({secs:.1} s)",
                io as u8
            );
            (name, outcome)
        })
        .collect()
}

/// CI's slices of the three configs, one after the other (8 processes at a time: the
/// machine's other tests run meanwhile), and corners.sh's cases 3 (two problems in one
/// execution) and 4 (FTI_Init twice) at L1.
#[test]
fn fti11_suite_slices_of_the_three_configs() {
    let mut outcomes = Vec::new();
    for setup in [Setup::H0I1, Setup::H1I1, Setup::H1I0] {
        outcomes.extend(slice_outcomes(setup));
    }
    for case in [3, 4] {
        let outcome = programs::corner_once(case, CI_SCALE, 1);
        outcomes.push((format!("corners case {case} L1"), outcome));
    }
    assert_all_ok(outcomes);
}

/// tests.sh's whole matrix for `setup` and `io` at FTI's scale.
fn full_matrix(setup: Setup, io: Io) {
    let cases: Vec<(Io, Case)> = (1..=4)
        .flat_map(|level| {
            all_configuration(io, level)
                .into_iter()
                .map(move |c| (io, c))
        })
        .collect();
    run_all(setup, FTI_SCALE, &cases);
}

macro_rules! full_matrix_tests {
    ($($name:ident: $setup:ident, $io:ident;)*) => {$(
        #[test]
        #[ignore = "FTI's full matrix takes long: scripts/fti-tests"]
        fn $name() {
            full_matrix(Setup::$setup, Io::$io);
        }
    )*};
}

full_matrix_tests! {
    fti11_suite_full_h0i1_posix: H0I1, Posix;
    fti11_suite_full_h0i1_mpiio: H0I1, Mpi;
    fti11_suite_full_h0i1_ftiff: H0I1, Ftiff;
    fti11_suite_full_h1i1_posix: H1I1, Posix;
    fti11_suite_full_h1i1_mpiio: H1I1, Mpi;
    fti11_suite_full_h1i1_ftiff: H1I1, Ftiff;
    fti11_suite_full_h1i0_posix: H1I0, Posix;
    fti11_suite_full_h1i0_mpiio: H1I0, Mpi;
    fti11_suite_full_h1i0_ftiff: H1I0, Ftiff;
}

macro_rules! full_program_tests {
    ($($name:ident, $sync_name:ident: $setup:ident;)*) => {$(
        #[test]
        #[ignore = "FTI's corner cases and ckptHierarchy at FTI's scale take long: scripts/fti-tests"]
        fn $name() {
            assert_all_ok(programs::corners_and_hierarchy(Setup::$setup, FTI_SCALE));
        }

        /// About 35 minutes, mostly asleep (FTI's iterations of a second): the three configs'
        /// can run at once.
        #[test]
        #[ignore = "FTI's syncIntv takes about 35 minutes: scripts/fti-tests"]
        fn $sync_name() {
            let outcome = programs::sync_intv(Setup::$setup, FTI_SCALE);
            assert_all_ok(vec![("syncIntv".to_owned(), outcome)]);
        }
    )*};
}

full_program_tests! {
    fti11_suite_full_programs_h0i1, fti11_suite_full_sync_intv_h0i1: H0I1;
    fti11_suite_full_programs_h1i1, fti11_suite_full_sync_intv_h1i1: H1I1;
    fti11_suite_full_programs_h1i0, fti11_suite_full_sync_intv_h1i0: H1I0;
}
