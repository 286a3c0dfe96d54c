//! `fti heatdis` and `fti demo`: the heat-diffusion demo run once, and the story of a run,
//! its crash, its restart and the comparison of the two grids.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context as _, Result};

use crate::{heatdis as solver, timeline};

#[derive(clap::Args, Clone)]
pub struct DemoArgs {
    /// Directory for checkpoints.
    #[arg(long, default_value = "target/demo")]
    dir: PathBuf,
    /// Grid edge in cells.
    #[arg(long, default_value_t = 512)]
    size: usize,
    /// Iterations.
    #[arg(long, default_value_t = 3000)]
    iters: i32,
    /// Checkpoint every this many iterations (every 4th checkpoint goes to L4).
    #[arg(long, default_value_t = 250)]
    every: i32,
    /// Level of the even checkpoints when several ranks run: 2 (partner copies) or 3
    /// (Reed-Solomon across each group).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u8).range(2..=3))]
    partner_level: u8,
}

impl DemoArgs {
    fn params(&self, crash_at: Option<i32>) -> solver::Params {
        solver::Params {
            size: self.size,
            iters: self.iters,
            every: self.every,
            crash_at,
            partner_level: if self.partner_level == 3 {
                fti::Level::L3
            } else {
                fti::Level::L2
            },
        }
    }

    fn args(&self) -> Vec<String> {
        vec![
            "--size".into(),
            self.size.to_string(),
            "--iters".into(),
            self.iters.to_string(),
            "--every".into(),
            self.every.to_string(),
            "--partner-level".into(),
            self.partner_level.to_string(),
        ]
    }
}

pub fn heatdis(demo: &DemoArgs, crash_at: Option<i32>) -> Result<ExitCode> {
    // Under mpirun (a build with the `mpi` feature), every process is one rank of the run.
    #[cfg(feature = "mpi")]
    let universe = mpi::initialize();
    #[cfg(feature = "mpi")]
    let comm: Box<dyn fti::Comm> = match &universe {
        Some(u) => Box::new(fti::comm::mpi::MpiComm::new(&u.world())),
        None => Box::new(fti::SelfComm),
    };
    #[cfg(not(feature = "mpi"))]
    let comm: Box<dyn fti::Comm> = Box::new(fti::SelfComm);
    let (rank, ranks) = (comm.rank(), comm.size());
    let cfg = solver::config(&demo.dir);
    let out = solver::run_with(cfg, comm, demo.params(crash_at), &mut |line| {
        if rank == 0 {
            println!("{line}");
        }
    })?;
    if rank == 0 {
        println!(
            "ranks: {ranks}, iterations computed: {}, checkpoints written: {}",
            out.computed, out.checkpoints
        );
        println!("checksum {}", out.checksum);
    }
    Ok(ExitCode::SUCCESS)
}

/// Runs `fti heatdis` in a child process; returns its exit status and stdout.
fn heatdis_child(
    demo: &DemoArgs,
    dir: &Path,
    crash_at: Option<i32>,
) -> Result<(std::process::ExitStatus, String)> {
    let mut cmd = std::process::Command::new(std::env::current_exe()?);
    cmd.arg("heatdis").arg("--dir").arg(dir).args(demo.args());
    if let Some(at) = crash_at {
        cmd.arg("--crash-at").arg(at.to_string());
    }
    let out = cmd
        .stderr(std::process::Stdio::inherit())
        .output()
        .context("starting the demo process")?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    for line in stdout.lines() {
        println!("    {line}");
    }
    Ok((out.status, stdout))
}

fn checksum_line(stdout: &str) -> Option<&str> {
    stdout.lines().find_map(|l| l.strip_prefix("checksum "))
}

/// The file `fti demo` writes into each directory it creates: only directories holding it
/// are ever removed by a later `fti demo`.
const DEMO_MARKER: &str = ".fti-demo";

/// Makes `dir` an empty directory of the demo: a directory an earlier `fti demo` created (it
/// holds [`DEMO_MARKER`]) is removed first; any other existing entry is left alone and the
/// demo refuses to run.
fn fresh_demo_dir(dir: &Path) -> Result<()> {
    if dir.symlink_metadata().is_ok() {
        let ours = dir.is_dir() && !dir.is_symlink() && dir.join(DEMO_MARKER).is_file();
        if !ours {
            bail!(
                "{} exists and was not created by `fti demo` (no {DEMO_MARKER} file in it): it is left alone; choose another --dir, or remove it yourself",
                dir.display()
            );
        }
        std::fs::remove_dir_all(dir).with_context(|| format!("cleaning {}", dir.display()))?;
    }
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    std::fs::write(
        dir.join(DEMO_MARKER),
        "created by `fti demo`, which removes this directory when it runs again\n",
    )
    .with_context(|| format!("writing {}", dir.join(DEMO_MARKER).display()))
}

pub fn demo_story(demo: &DemoArgs, crash_at: i32) -> Result<ExitCode> {
    let (plain, crashed) = (demo.dir.join("uninterrupted"), demo.dir.join("crashed"));
    for d in [&plain, &crashed] {
        fresh_demo_dir(d)?;
    }
    println!(
        "1. uninterrupted run ({0}x{0} grid, {1} iterations, checkpoint every {2}):",
        demo.size, demo.iters, demo.every
    );
    let (status, out) = heatdis_child(demo, &plain, None)?;
    if !status.success() {
        bail!("the uninterrupted run failed ({status})");
    }
    let reference = checksum_line(&out)
        .context("no checksum line from the uninterrupted run")?
        .to_owned();
    println!("2. the same run, crashing at iteration {crash_at}:");
    let (status, _) = heatdis_child(demo, &crashed, Some(crash_at))?;
    if status.success() {
        bail!("the run meant to crash finished (is --crash-at below --iters?)");
    }
    println!("    (process died: {status})");
    println!("3. restart:");
    let (status, out) = heatdis_child(demo, &crashed, None)?;
    if !status.success() {
        bail!("the restarted run failed ({status})");
    }
    let restarted = checksum_line(&out).context("no checksum line from the restarted run")?;
    let same = restarted == reference;
    println!(
        "4. final grids {}: {reference} vs {restarted}",
        if same { "bitwise identical" } else { "DIFFER" }
    );
    println!("   checkpoint files: fti list {}", crashed.display());
    println!(
        "   runtime trace:    ovnidump {}",
        crashed.join("trace").display()
    );
    println!(
        "   checkpoint time:  fti trace-summary {}",
        crashed.join("trace").display()
    );
    let timeline = timeline::write_timeline(
        &demo.dir,
        &[plain.join("trace"), crashed.join("trace")],
        "fti demo: uninterrupted run, crashed run and its restart",
    )?;
    println!("timeline: {}", timeline.display());
    Ok(if same {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
