//! `fti l3-encode` and `fti l3-rebuild`: FTI 1.1's level-3 Reed-Solomon files of one group, in
//! one directory. Glue only: the work is in `ftiff::l3`.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context as _, Result};
use fti::l3::group::{self as l3, FileStatus, Group, Options, Survey};
use fti::storage::Disk;
use ftiff::{FileKind, FileName};

pub const ENCODE_ABOUT: &str =
    "Write the Reed-Solomon files (Ckpt<id>-RSed<r>.fti) of an L3 group from its Rank files";

pub const ENCODE_HELP: &str = "\
Write the Reed-Solomon files (Ckpt<id>-RSed<r>.fti) of an L3 group from its Rank files.

FTI 1.1's level 3 protects a group of k ranks: each rank keeps its checkpoint
(Ckpt<id>-Rank<r>.fti) and an RSed file of the same size as the group's largest
checkpoint (maxFs) plus a 96-byte trailer. Any k of the group's 2k files rebuild
the others (`fti l3-rebuild`). The code is FTI 1.1's, byte for byte: GF(2^16),
Cauchy matrix 1/(i XOR (k+j)) over group ranks i, j.

DIR must hold the Rank files of the whole group side by side (FTI keeps them in
one node directory per rank: copy them together first). Every Rank file must
verify. Rank files whose FB.maxFs is not the group's largest size get it set
(this changes their FB.myHash; the data is untouched). Every file is written
under a temporary name, synced and renamed, so a crash never leaves a partial file.

The group is every rank with a Rank file in DIR, in ascending order, unless
--group gives the ranks in group order (the order FTI used: the position in the
group's communicator). Exit status 1 and a message when it cannot be done.

Examples:
  fti l3-encode l3/                    ranks found in l3/, ascending
  fti l3-encode l3/ --group 4,5,6,7    group of ranks 4..7
  fti l3-encode l3/ --id 3             checkpoint 3 when several are present";

pub const REBUILD_ABOUT: &str = "Rebuild the missing or damaged Rank and RSed files of an L3 group";

pub const REBUILD_HELP: &str = "\
Rebuild the missing or damaged Rank and RSed files of an L3 group.

Checks every file of the group in DIR (Ckpt<id>-Rank<r>.fti and
Ckpt<id>-RSed<r>.fti): a file that is missing, fails its hashes, disagrees with
the group's sizes, or whose code does not match the Rank files is lost. If at
most k of the 2k files are lost, they are rebuilt from the others, rebuilt Rank
files are verified by their own hashes, and everything is written under a
temporary name, synced and renamed into place. Otherwise nothing is written and
the exit status is 1.

Rebuilt files are exact, for every size. (FTI 1.1 itself gets the last byte of a
rebuilt Rank file wrong when its size is an odd maxFs: the code keeps only half
of the last 16-bit word. The rebuilt file's own MD5 hashes tell the right byte.)

Without --group, the group is the ranks of the RSed files in DIR, ascending,
and only when every rank with a file there has its RSed file: otherwise a rank
that lost both of its files could not be told from a smaller group, so the
command refuses (exit 1) and asks for --group r0,r1,... (the group's ranks in
group order). Prints one line per file, then what was rebuilt.

Examples:
  fti l3-rebuild l3/                   every RSed file there
  fti l3-rebuild l3/ --group 0,1,2,3   some RSed files lost
  fti l3-rebuild l3/ --id 3";

/// Which group: directory, ranks, checkpoint.
#[derive(clap::Args)]
pub struct GroupArgs {
    /// Directory holding the group's files.
    dir: PathBuf,
    /// Global ranks of the group, in group order (default: every rank with a file in DIR,
    /// ascending).
    #[arg(long, value_delimiter = ',', value_name = "R0,R1,...")]
    group: Option<Vec<u32>>,
    /// Checkpoint id (needed when DIR holds files of several checkpoints).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(i32).range(0..))]
    id: Option<i32>,
}

impl GroupArgs {
    /// The group's directory.
    pub fn dir(&self) -> &std::path::Path {
        &self.dir
    }
}

impl GroupArgs {
    /// The group to encode: as given, or every rank with a Rank file (all must be there).
    fn for_encode(&self) -> Result<Group> {
        let group = Group::find(&Disk, &self.dir, self.id, self.group.as_deref())?;
        let gap = group.ranks.windows(2).any(|w| w[1] != w[0] + 1);
        if self.group.is_none() && gap {
            eprintln!(
                "fti: note: the ranks found are not consecutive; if a rank's file is missing, give the whole group with --group"
            );
        }
        Ok(group)
    }

    /// The group to rebuild: as given, or the ranks of the RSed files when every rank with a
    /// file in DIR has one. Otherwise a rank that lost both of its files cannot be told from
    /// a smaller group, and a code for the wrong group would be written: refused.
    fn for_rebuild(&self) -> Result<Group> {
        let group = Group::find(&Disk, &self.dir, self.id, self.group.as_deref())?;
        if self.group.is_some() {
            return Ok(group);
        }
        let coded: Vec<u32> = group
            .ranks
            .iter()
            .copied()
            .filter(|&r| {
                group
                    .dir
                    .join(FileName::new(group.id, FileKind::Rsed, r).to_string())
                    .exists()
            })
            .collect();
        if coded.is_empty() || coded != group.ranks {
            let uncoded: Vec<String> = group
                .ranks
                .iter()
                .filter(|r| !coded.contains(r))
                .map(u32::to_string)
                .collect();
            bail!(
                "cannot tell the group of checkpoint {} in {}: the group is inferred from its RSed files, and rank(s) {} have none, so a rank that lost both of its files cannot be ruled out; give the group's ranks in group order with --group r0,r1,... (FTI's group_size consecutive nodes)",
                group.id,
                self.dir.display(),
                uncoded.join(",")
            );
        }
        Ok(group)
    }
}

fn name(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

fn describe(group: &Group, max_fs: Option<u64>) -> String {
    let ranks: Vec<String> = group.ranks.iter().map(u32::to_string).collect();
    let max_fs = max_fs.map_or_else(|| "unknown".to_owned(), |m| m.to_string());
    format!(
        "group of {} ranks ({}), checkpoint {}, maxFs {max_fs}",
        group.k(),
        ranks.join(","),
        group.id
    )
}

pub fn encode(args: &GroupArgs) -> Result<ExitCode> {
    let group = args.for_encode()?;
    let done =
        l3::encode_group(&Disk, &group, &Options::default()).context("cannot encode the group")?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", describe(&group, Some(done.max_fs)))?;
    for p in &done.max_fs_set {
        writeln!(out, "set FB.maxFs = {} in {}", done.max_fs, name(p))?;
    }
    for p in &done.written {
        writeln!(out, "wrote {}", name(p))?;
    }
    Ok(ExitCode::SUCCESS)
}

pub fn rebuild(args: &GroupArgs) -> Result<ExitCode> {
    let group = args.for_rebuild()?;
    let survey = Survey::new(&group).context("cannot rebuild the group")?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", describe(&group, survey.max_fs))?;
    for f in &survey.files {
        let status = match &f.status {
            FileStatus::Intact => "ok".to_owned(),
            FileStatus::Missing => "missing".to_owned(),
            FileStatus::Unusable(e) => format!("unusable: {e}"),
        };
        writeln!(out, "  {:<24} {status}", name(&f.path))?;
    }
    if survey.lost() == 0 {
        writeln!(out, "nothing to rebuild")?;
        return Ok(ExitCode::SUCCESS);
    }
    out.flush()?;
    let done = survey
        .rebuild(&Disk, &Options::default())
        .context("cannot rebuild the group")?;
    for f in &done.files {
        let mut line = format!("rebuilt {}", name(&f.path));
        if let Some(b) = f.last_byte {
            line += &format!(
                " (odd size: last byte 0x{:02x} confirmed by its hashes; the code alone gives 0x{:02x})",
                b.restored, b.decoded
            );
        }
        if f.stale_code {
            line += " (its code did not match the rebuilt Rank files)";
        }
        writeln!(out, "{line}")?;
    }
    Ok(ExitCode::SUCCESS)
}
