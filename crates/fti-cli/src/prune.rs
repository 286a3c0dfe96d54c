//! `fti prune`: deleting old archived checkpoints, each whole or not at all, with the
//! inventory's plan ([`fti::inventory::prune_plan`]) and deletion
//! ([`fti::inventory::delete_checkpoint`]).

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context as _, Result};
use fti::inventory::{self, Ckpt};

use crate::list::{level_label, load, no_checkpoints, LayoutArgs, Verifier};

pub const PRUNE_ABOUT: &str =
    "Delete old archived checkpoints, keeping the newest N restorable ones of each level";

pub const PRUNE_HELP: &str = "\
Delete old archived checkpoints, keeping the newest N restorable ones of each level.

Per execution and level, the checkpoint in lK/ (the one FTI restarts from) is never
deleted and counts first; archived checkpoints (in lK_archive/) count newest id
first; the ones beyond N are deleted: their Ckpt<id>-Rank<r>.fti files and, with
them, their L2 partner copies (Ckpt<id>-Pcof<r>.fti) and L3 RSed files
(Ckpt<id>-RSed<r>.fti), which serve no other checkpoint. Nothing outside an
lK_archive/ directory is ever deleted, nor any file not named like these.

The checkpoints that would count are verified first, as `fti list` does: one that
cannot be restored (files missing or corrupt beyond what its level can rebuild) is
kept but not counted, so that N restorable checkpoints remain. --no-verify counts
them by id only.

A checkpoint is deleted whole or not at all. Every directory on the way to its
files is opened without following symbolic links and must still be the one the
scan found (same device and inode), as must each file: a directory swapped since
(for a link to elsewhere) is refused before anything of the checkpoint is deleted.

Prints `deleted <path>` per file, or `would delete <path>` with --dry-run, which
deletes nothing. If the output is closed early (`| head`), the deletions go on
and a summary goes to stderr. Exit status: 0; 1 on an error (the checkpoint being
deleted and the ones after it are kept whole); 2 on a usage error (--keep 0).

Leftovers of interrupted runs go too, once untouched for --leftovers-after minutes
(default 60; a live run keeps touching its files): checkpoint files under an
execution's tmp/ (a checkpoint interrupted before its publication, which no restart
reads) and the Topology.fti of an execution without any checkpoint file (a run that
died before its first checkpoint completed). They are printed as `deleted <path>
(left by an interrupted run)`.

Examples:
  fti prune run/ --keep 3 --dry-run     what would go
  fti prune run/ --keep 3               keep 3 checkpoints of each level";

#[derive(clap::Args)]
pub struct PruneArgs {
    /// The directory to search: a run directory or any part of it.
    pub dir: PathBuf,
    /// Checkpoints to keep per execution and level, the one in lK/ included (at least 1).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub keep: u64,
    /// Print what would be deleted; delete nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Count checkpoints by id only, without checking that the kept ones can be restored.
    #[arg(long)]
    pub no_verify: bool,
    /// Leftovers of interrupted runs (unpublished files in tmp/, the Topology.fti of an
    /// execution without checkpoints) are deleted once untouched for this many minutes.
    #[arg(long, value_name = "MINUTES", default_value_t = 60)]
    pub leftovers_after: u32,
    #[command(flatten)]
    pub layout: LayoutArgs,
}

pub fn prune(args: &PruneArgs) -> Result<ExitCode> {
    let (scan, mut ckpts) = load(&args.dir, args.layout)?;
    let mut report = Report::default();
    prune_leftovers(args, &scan, &mut report)?;
    if ckpts.is_empty() {
        if report.files == 0 {
            no_checkpoints(&args.dir, ": nothing to delete");
        }
        report.summary_if_closed();
        return Ok(ExitCode::SUCCESS);
    }
    let keep = usize::try_from(args.keep).unwrap_or(usize::MAX);
    let verifier = Verifier::new(if args.no_verify {
        0
    } else {
        ckpts.iter().map(Ckpt::bytes).sum()
    });
    let plan = inventory::prune_plan(&mut ckpts, keep, &mut |c| {
        if !args.no_verify {
            verifier.verify(c);
        }
        c.lacking_now().is_none()
    });
    verifier.finish();
    for &i in &plan.kept_unrestorable {
        let c = &ckpts[i];
        eprintln!(
            "fti: note: checkpoint {} ({}, {}) cannot be restored ({}): kept, not counted towards --keep",
            c.id,
            level_label(c),
            c.exec_id,
            c.lacking_now().unwrap_or_default()
        );
    }
    for &i in &plan.delete {
        let c = &ckpts[i];
        if args.dry_run {
            for path in inventory::prunable_files(c) {
                report.line(format_args!("would delete {}", path.display()));
            }
            continue;
        }
        // A checkpoint goes whole or not at all; what happens to stdout does not stop the
        // deletions, it only ends the listing of them.
        match inventory::delete_checkpoint(&scan, c) {
            Ok(deleted) => {
                report.checkpoints += 1;
                for path in deleted {
                    report.files += 1;
                    report.line(format_args!("deleted {}", path.display()));
                }
            }
            Err(e) => {
                report.summary_if_closed();
                return Err(e).with_context(|| {
                    format!(
                        "deleting checkpoint {} ({}, {}): it and the checkpoints after it were kept",
                        c.id,
                        level_label(c),
                        c.exec_id
                    )
                });
            }
        }
    }
    report.summary_if_closed();
    Ok(ExitCode::SUCCESS)
}

/// Deletes what interrupted runs left ([`inventory::stale_leftovers`]).
fn prune_leftovers(args: &PruneArgs, scan: &inventory::Scan, report: &mut Report) -> Result<()> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    let stale = inventory::stale_leftovers(scan, now, i64::from(args.leftovers_after) * 60);
    if stale.is_empty() {
        return Ok(());
    }
    if args.dry_run {
        for l in &stale {
            report.line(format_args!(
                "would delete {} (left by an interrupted run)",
                l.path.display()
            ));
        }
        return Ok(());
    }
    let deleted = inventory::delete_leftovers(scan, &stale)
        .context("deleting what interrupted runs left: nothing of it was deleted")?;
    for path in deleted {
        report.files += 1;
        report.line(format_args!(
            "deleted {} (left by an interrupted run)",
            path.display()
        ));
    }
    Ok(())
}

/// What prune prints as it goes; once stdout is closed (`fti prune ... | head -1`) the rest
/// of the work is still done, and a summary goes to stderr instead.
#[derive(Default)]
struct Report {
    closed: bool,
    checkpoints: usize,
    files: usize,
}

impl Report {
    fn line(&mut self, line: std::fmt::Arguments<'_>) {
        if !self.closed && writeln!(std::io::stdout().lock(), "{line}").is_err() {
            self.closed = true;
        }
    }

    fn summary_if_closed(&self) {
        if self.closed {
            eprintln!(
                "fti: prune: the output was closed early; deleted {} checkpoint(s), {} file(s) in all",
                self.checkpoints, self.files
            );
        }
    }
}
/// The files a prune would delete, in the order it deletes them (for tests of the plan).
#[cfg(test)]
fn planned(ckpts: &mut [Ckpt], keep: usize) -> Vec<PathBuf> {
    let plan = inventory::prune_plan(ckpts, keep, &mut |c| c.verdict().restorable);
    plan.delete
        .iter()
        .flat_map(|&i| inventory::prunable_files(&ckpts[i]))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use fti::inventory::Sizes;

    #[test]
    fn prune_deletes_only_archive_files() {
        let dir = tempfile::tempdir().unwrap();
        let exec = dir.path().join("node0/E");
        for (sub, id) in [("l1", 3), ("l1_archive", 2), ("l1_archive", 1)] {
            std::fs::create_dir_all(exec.join(sub)).unwrap();
            std::fs::write(exec.join(sub).join(format!("Ckpt{id}-Rank0.fti")), b"x").unwrap();
        }
        let scan = inventory::scan(dir.path()).unwrap();
        let sizes = Sizes {
            node_size: None,
            group_size: 4,
            head: false,
        };
        let mut ckpts = inventory::checkpoints(&scan, sizes, &mut Vec::new()).unwrap();
        assert_eq!(
            planned(&mut ckpts, 2),
            [exec.join("l1_archive/Ckpt1-Rank0.fti")]
        );
        assert_eq!(planned(&mut ckpts, 3), Vec::<PathBuf>::new());
    }
}
