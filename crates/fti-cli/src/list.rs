//! `fti list` and `fti prune`: the checkpoints below a directory, whether they survive the
//! loss of a node, and deleting old archived ones. The model and its rules are the runtime's
//! ([`fti::inventory`]).

use std::io::{IsTerminal as _, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Result;
use clap::ValueEnum;
use serde_json::{json, Value};

use fti::inventory::{self, Ckpt, Scan, Sizes, Slot, Status};

pub const LIST_ABOUT: &str =
    "List the checkpoints below a directory: every rank's files, verified, and whether each checkpoint survives losing a node";

pub const LIST_HELP: &str = "\
List the checkpoints below a directory: every rank's files, verified, and whether
each checkpoint survives losing a node.

DIR is searched recursively for FTI 1.1's files in level directories: lK/ holds the
newest checkpoint of level K (where FTI looks for it), lK_archive/ older ones kept
by keep_ckpts. A checkpoint is an execution id, a checkpoint id, a level, and lK/ or
lK_archive/. Give the directory holding the run's ckpt_dir, glbl_dir and meta_dir,
so that every node directory and Topology.fti are seen.

Every file is verified as `fti verify` does (structure and every hash); a progress
bar shows on a terminal when there is much to read. --no-verify only looks at names.

Text output, one block per checkpoint:
  <exec_id>  checkpoint <id>  L<K> [archived]  written <time of the newest Rank file>
  heads: ranks <r>, ... (with --head)
    rank     MPI rank; every rank of the run has a row (but the heads)
    node     node<N> directory holding its files (- when there is none)
    Rank     Ckpt<id>-Rank<r>.fti, the rank's checkpoint
    Pcof     (L2) Ckpt<id>-Pcof<r>.fti, the copy it keeps of its left partner's file
    copy of  (L2) that partner's rank
    RSed     (L3) Ckpt<id>-RSed<r>.fti, its share of the group's Reed-Solomon code
    bytes    size of its Rank file
    file     path of its Rank file
  then one line per corrupt file with its first problem, and
  `survives losing a node: yes|no: <why>`.

Statuses: ok (verifies), corrupt (present but does not verify or cannot be read),
missing (no such regular file), unverified (present, not checked: --no-verify).

Survives losing a node: the checkpoint could still be restored if, besides the
files already missing or corrupt, every file on any one node were lost:
  L1  no: FTI keeps no copy of a node's files
  L2  every rank keeps its file or the copy its right partner holds
  L3  every group keeps at least k of its 2k Rank and RSed files (k = group size)
  L4  yes when every rank's file verifies (global storage)
A file is on the node of the node<N> directory above its execution directory
(FTI's local_test = 1). Without one, all files of an execution directory are taken
to be on one node, the one whose local storage it is (local_test = 0).

Ranks, partners and groups are FTI's: the rank count is one more than the highest
rank any file of the execution names, completed to the nodes Topology.fti lists;
node_size is inferred from the node<N> directories unless --node-size is given;
--group-size is the config's group_size (default 4). A Pcof file that is not a copy
of the partner's file those sizes imply is reported: give the run's sizes.
--head is the config's head = 1: the first rank of each node is a dedicated head,
which writes no files (files keep the ranks' numbers among all processes; node_size
counts the head). Without it, ranks that look like heads are named in the verdict.

JSON (--format json), schema 2, keys in this order:
  {\"schema\": 2, \"checkpoints\": [
    {\"exec_id\": \"2026-11-22_04-12-33\", \"id\": 2, \"level\": 2, \"archived\": false,
     \"written\": \"2026-11-22 04:12:40.123 UTC\",
     \"restorable\": true, \"survives_node_loss\": true, \"why\": \"...\",
     \"heads\": [],
     \"ranks\": [{\"rank\": 0, \"node\": \"node0\",
       \"rank_file\": {\"path\": \"...\", \"status\": \"ok\", \"bytes\": 4242, \"problem\": null},
       \"pcof\": {\"path\": \"...\", \"status\": \"ok\", \"bytes\": 4242, \"problem\": null,
                \"copy_of\": 3},
       \"rsed\": null}, ...]}, ...]}
  written: FB.timestamp of the newest usable Rank file (null when none reads);
  restorable: the restart can recover it from the files as they are;
  survives_node_loss: it could still, after losing any one node's files; why: the
  verdict in words; heads: the dedicated heads' ranks (--head; not in ranks);
  node: the node<N> directory (null without one, or at L4);
  pcof is an object at L2 only (copy_of: the rank whose file it copies), rsed at
  L3 only, null at other levels; path and bytes are null for a missing file;
  status as above; problem: a corrupt file's first problem, else null.
  Schema 1 (before) was the bare array of checkpoints, without written,
  restorable, why, node, bytes, problem and copy_of.

Exit status: 0; 1 when a present file is corrupt, when DIR holds no checkpoint file,
or on an error. Entries named like checkpoint files that are not regular files (a
FIFO) are never opened: a warning names them. To restart from an archived
checkpoint, set ckpt_id = <id> in the config's [restart] section.

Examples:
  fti list run/                     every checkpoint of the run, verified
  fti list --no-verify run/         names only: quick on large files
  fti list --group-size 8 run/      the run's groups have 8 nodes
  fti list --format json run/ | jq '.checkpoints[] | select(.survives_node_loss | not) | .id'";

/// Ranks per node and nodes per group, as in the run's configuration.
#[derive(clap::Args, Clone, Copy)]
pub struct LayoutArgs {
    /// Ranks per node, as `node_size` in the run's config (default: inferred from the
    /// node<N> directories, 1 without them).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub node_size: Option<u32>,
    /// Nodes per group (L2 partners, L3 encoding), as `group_size` in the run's config.
    #[arg(long, value_name = "N", default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..))]
    pub group_size: u32,
    /// The run has dedicated heads (`head = 1`): the first rank of each node writes no
    /// files; its partners and groups are the application ranks' (node_size counts the head).
    #[arg(long)]
    pub head: bool,
}

impl LayoutArgs {
    fn sizes(self) -> Sizes {
        Sizes {
            node_size: self.node_size,
            group_size: self.group_size,
            head: self.head,
        }
    }
}

#[derive(Clone, Copy, ValueEnum)]
pub enum ListFormat {
    Text,
    Json,
}

#[derive(clap::Args)]
pub struct ListArgs {
    /// The directory to search: a run directory (holding ckpt_dir, glbl_dir, meta_dir) or any
    /// part of it.
    pub dir: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value_t = ListFormat::Text)]
    pub format: ListFormat,
    /// Do not verify: present files are `unverified` and assumed intact (quick on large files).
    #[arg(long)]
    pub no_verify: bool,
    #[command(flatten)]
    pub layout: LayoutArgs,
}

/// Scans `dir`, warns about what was skipped, and groups the files into checkpoints.
pub(crate) fn load(dir: &Path, layout: LayoutArgs) -> Result<(Scan, Vec<Ckpt>)> {
    let scan = inventory::scan(dir)?;
    for (path, why) in &scan.skipped {
        eprintln!("fti: warning: {}: {why}, skipped", path.display());
    }
    let mut warnings = Vec::new();
    let ckpts = inventory::checkpoints(&scan, layout.sizes(), &mut warnings)?;
    for w in warnings {
        eprintln!("fti: warning: {w}");
    }
    Ok((scan, ckpts))
}

pub(crate) fn no_checkpoints(dir: &Path, then: &str) {
    eprintln!(
        "fti: no checkpoint files (Ckpt<id>-Rank<r>.fti) below {}{then}",
        dir.display()
    );
}

/// Verifies files one by one, with one progress bar on stderr (only on a terminal, and only
/// when there is much to read).
pub(crate) struct Verifier {
    bar: indicatif::ProgressBar,
}

impl Verifier {
    pub(crate) fn new(expected: u64) -> Verifier {
        let bar = if expected >= crate::PROGRESS_THRESHOLD && std::io::stderr().is_terminal() {
            let bar = indicatif::ProgressBar::new(0);
            let style = indicatif::ProgressStyle::with_template(
                "verifying {msg} [{bar:30}] {bytes}/{total_bytes} ({bytes_per_sec}, {eta})",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar());
            bar.set_style(style);
            bar
        } else {
            indicatif::ProgressBar::hidden()
        };
        Verifier { bar }
    }

    /// Verifies every present file of `c`, recording the statuses.
    pub(crate) fn verify(&self, c: &mut Ckpt) {
        self.bar.inc_length(c.bytes());
        for (kind, slot) in c.slots_mut() {
            let Some(file) = &slot.file else { continue };
            let base = self.bar.position();
            self.bar.set_message(crate::file_name(&file.path));
            let bar = &self.bar;
            let result =
                inventory::verify_file(&file.path, kind, &|done| bar.set_position(base + done));
            self.bar.set_position(base + file.size);
            match result {
                Ok(()) => slot.status = Status::Ok,
                Err(problem) => {
                    slot.status = Status::Corrupt;
                    slot.problem = Some(problem);
                }
            }
        }
    }

    pub(crate) fn finish(self) {
        self.bar.finish_and_clear();
    }
}

pub fn list(args: &ListArgs) -> Result<ExitCode> {
    let (_, mut ckpts) = load(&args.dir, args.layout)?;
    let mut stdout = std::io::stdout().lock();
    if ckpts.is_empty() {
        if matches!(args.format, ListFormat::Json) {
            writeln!(stdout, "{:#}", json(&[]))?;
        }
        no_checkpoints(&args.dir, "");
        return Ok(ExitCode::FAILURE);
    }
    if !args.no_verify {
        let verifier = Verifier::new(ckpts.iter().map(Ckpt::bytes).sum());
        for c in &mut ckpts {
            verifier.verify(c);
        }
        verifier.finish();
    }
    for c in &ckpts {
        for w in c.foreign_copies() {
            eprintln!("fti: warning: {w}");
        }
    }
    match args.format {
        ListFormat::Text => write_text(&mut stdout, &ckpts)?,
        ListFormat::Json => writeln!(stdout, "{:#}", json(&ckpts))?,
    }
    Ok(if ckpts.iter().any(Ckpt::has_corrupt) {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

pub(crate) fn level_label(c: &Ckpt) -> String {
    if c.archived {
        format!("{} archived", c.level)
    } else {
        c.level.to_string()
    }
}

fn write_text(out: &mut impl Write, ckpts: &[Ckpt]) -> std::io::Result<()> {
    for (i, c) in ckpts.iter().enumerate() {
        if i > 0 {
            writeln!(out)?;
        }
        let written = c
            .written()
            .map_or_else(|| "?".to_owned(), |t| format!("{} UTC", fti::format_utc(t)));
        writeln!(
            out,
            "{}  checkpoint {}  {}  written {written}",
            c.exec_id,
            c.id,
            level_label(c)
        )?;
        let heads = c.heads();
        if !heads.is_empty() {
            let heads: Vec<String> = heads.iter().map(u32::to_string).collect();
            writeln!(
                out,
                "  heads: ranks {} (head = 1: no checkpoint files)",
                heads.join(", ")
            )?;
        }
        let (l2, l3, local) = (
            c.level == fti::Level::L2,
            c.level == fti::Level::L3,
            c.level != fti::Level::L4,
        );
        let mut header = vec!["rank"];
        if local {
            header.push("node");
        }
        header.push("Rank");
        if l2 {
            header.extend(["Pcof", "copy of"]);
        }
        if l3 {
            header.push("RSed");
        }
        header.extend(["bytes", "file"]);
        let mut rows = vec![header.into_iter().map(str::to_owned).collect::<Vec<_>>()];
        for r in c.ranks.iter().filter(|r| !r.is_head) {
            let mut row = vec![r.rank.to_string()];
            if local {
                row.push(
                    r.node()
                        .map_or_else(|| "-".to_owned(), inventory::Node::column),
                );
            }
            row.push(r.rank_file.status.as_str().to_owned());
            if let (Some(pcof), Some(of)) = (&r.pcof, r.copy_of) {
                row.extend([pcof.status.as_str().to_owned(), of.to_string()]);
            }
            if let Some(rsed) = &r.rsed {
                row.push(rsed.status.as_str().to_owned());
            }
            let file = r.rank_file.file.as_ref();
            row.push(file.map_or_else(|| "-".to_owned(), |f| f.size.to_string()));
            row.push(file.map_or_else(|| "-".to_owned(), |f| f.path.display().to_string()));
            rows.push(row);
        }
        write_table(out, &rows, &["rank", "copy of", "bytes"])?;
        for (_, slot) in c.slots() {
            if let Some(problem) = &slot.problem {
                writeln!(out, "  corrupt: {problem}")?;
            }
        }
        let v = c.verdict();
        writeln!(
            out,
            "  survives losing a node: {}: {}",
            if v.survives { "yes" } else { "no" },
            v.why
        )?;
    }
    Ok(())
}

/// Rows indented by two spaces, columns two spaces apart; the columns named in `right` are
/// right-aligned, the last column is not padded.
fn write_table(out: &mut impl Write, rows: &[Vec<String>], right: &[&str]) -> std::io::Result<()> {
    let Some(header) = rows.first() else {
        return Ok(());
    };
    let widths: Vec<usize> = (0..header.len())
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    for row in rows {
        let mut line = String::from(" ");
        for (c, cell) in row.iter().enumerate() {
            line.push(' ');
            if c + 1 == row.len() {
                line.push_str(cell);
            } else if right.contains(&header[c].as_str()) {
                line.push_str(&format!("{cell:>w$} ", w = widths[c]));
            } else {
                line.push_str(&format!("{cell:<w$} ", w = widths[c]));
            }
        }
        writeln!(out, "{}", line.trim_end())?;
    }
    Ok(())
}

/// The version of the JSON output's layout (documented in `fti list --help`).
const JSON_SCHEMA: u32 = 2;

fn file_json(slot: &Slot) -> Value {
    let file = slot.file.as_ref();
    json!({
        "path": file.map(|f| f.path.display().to_string()),
        "status": slot.status.as_str(),
        "bytes": file.map(|f| f.size),
        "problem": slot.problem,
    })
}

fn json(ckpts: &[Ckpt]) -> Value {
    let list: Vec<Value> = ckpts
        .iter()
        .map(|c| {
            let ranks: Vec<Value> = c
                .ranks
                .iter()
                .filter(|r| !r.is_head)
                .map(|r| {
                    let node = match r.node() {
                        Some(inventory::Node::Numbered(n)) => Some(format!("node{n}")),
                        _ => None,
                    };
                    let pcof = r.pcof.as_ref().map(|s| {
                        let mut v = file_json(s);
                        v["copy_of"] = json!(r.copy_of);
                        v
                    });
                    json!({
                        "rank": r.rank,
                        "node": node,
                        "rank_file": file_json(&r.rank_file),
                        "pcof": pcof,
                        "rsed": r.rsed.as_ref().map(file_json),
                    })
                })
                .collect();
            let verdict = c.verdict();
            json!({
                "exec_id": c.exec_id,
                "id": c.id,
                "level": c.level.number(),
                "archived": c.archived,
                "written": c.written().map(|t| format!("{} UTC", fti::format_utc(t))),
                "restorable": verdict.restorable,
                "survives_node_loss": verdict.survives,
                "why": verdict.why,
                "heads": c.heads(),
                "ranks": ranks,
            })
        })
        .collect();
    json!({ "schema": JSON_SCHEMA, "checkpoints": list })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_aligns_columns() {
        let rows: Vec<Vec<String>> = [
            ["rank", "Rank", "file"],
            ["10", "missing", "-"],
            ["2", "ok", "a/b"],
        ]
        .iter()
        .map(|r| r.iter().map(|s| (*s).to_owned()).collect())
        .collect();
        let mut out = Vec::new();
        write_table(&mut out, &rows, &["rank"]).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "  rank  Rank     file\n    10  missing  -\n     2  ok       a/b\n"
        );
    }
}
