//! The commands on single files: `inspect`, `verify`, `extract`, `diff`. Each reads a file
//! with the verdict of [`fti::inventory::check_file`], the restart's own.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context as _, Result};
use ftiff::diff::Change;
use ftiff::{view, Checkpoint, MappedFile, RsedFile};

use crate::{output, Format, Kind};

pub use fti::inventory::load;

pub fn file_name(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

fn is_rsed(path: &Path, kind: Kind) -> bool {
    match kind {
        Kind::Auto => ftiff::FileName::parse(&file_name(path))
            .is_some_and(|n| n.kind == ftiff::FileKind::Rsed),
        Kind::Ckpt => false,
        Kind::Rsed => true,
    }
}

/// Opens a checkpoint whose variable bytes are about to be used: verified in full (with a
/// progress bar for large files) unless `verify` is off, which is said loudly.
fn open(path: &Path, verify: bool) -> Result<MappedFile> {
    let file = load(path)?;
    if !verify {
        eprintln!(
            "fti: warning: {}: not verified (--no-verify): the bytes used may be another variable's, cut or corrupt",
            path.display()
        );
        Checkpoint::of(&file)?;
        return Ok(file);
    }
    let bar = progress_bar(path, file.bytes().len() as u64);
    let verified = Checkpoint::verified(&file, &|done| bar.set_position(done));
    bar.finish_and_clear();
    let ckpt = verified.context(
        "the file does not verify; nothing was read from it (fti verify lists every problem)",
    )?;
    if ckpt.trailing > 0 {
        eprintln!(
            "fti: warning: {}: {}",
            path.display(),
            ignored(ckpt.trailing)
        );
    }
    Ok(file)
}

pub fn inspect(path: &Path, format: Format, kind: Kind) -> Result<ExitCode> {
    let map = load(path)?;
    let bytes = map.bytes();
    let out = if is_rsed(path, kind) {
        let rsed = RsedFile::parse(bytes).map_err(|e| e.with_path(path))?;
        match format {
            Format::Text => view::rsed_text(&file_name(path), bytes, &rsed),
            Format::Doc => bail!(
                "{}: an RSed file holds Reed-Solomon code, not blocks; use --format text or json",
                path.display()
            ),
            Format::Json => format!("{:#}\n", view::rsed_json(&rsed)),
        }
    } else {
        let ckpt = Checkpoint::parse(bytes).map_err(|e| e.with_path(path))?;
        match format {
            Format::Text => view::text(&file_name(path), bytes.len() as u64, &ckpt),
            Format::Doc => view::doc_format(&ckpt.layout()),
            Format::Json => format!("{:#}\n", view::json(&ckpt)),
        }
    };
    std::io::stdout().lock().write_all(out.as_bytes())?;
    Ok(ExitCode::SUCCESS)
}

/// Files at least this large get a progress bar while their hashes are checked.
pub const PROGRESS_THRESHOLD: u64 = 256 << 20;

pub fn verify(files: &[PathBuf], kind: Kind, quiet: bool) -> Result<ExitCode> {
    let mut stdout = std::io::stdout().lock();
    let mut intact = true;
    for path in files {
        let checked = verify_one(path, kind);
        if checked.problems.is_empty() {
            if checked.ignored_trailing > 0 {
                writeln!(
                    stdout,
                    "{}: ok ({})",
                    path.display(),
                    ignored(checked.ignored_trailing)
                )?;
            } else if !quiet {
                writeln!(stdout, "{}: ok", path.display())?;
            }
        } else {
            intact = false;
            for p in checked.problems {
                writeln!(stdout, "{p}")?;
            }
        }
    }
    Ok(if intact {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// What is said of bytes after `FB.fs`, by every command that reads a file.
fn ignored(trailing: u64) -> String {
    format!(
        "{trailing} byte(s) after the end FB.fs gives, covered by no hash, are ignored, as FTI 1.1 and the restart ignore them"
    )
}

/// Every problem of one file, each naming the file: the verdict every command gives
/// ([`fti::inventory::check_file`]).
fn verify_one(path: &Path, kind: Kind) -> fti::inventory::Checked {
    let kind = if is_rsed(path, kind) {
        ftiff::FileKind::Rsed
    } else {
        ftiff::FileKind::Rank
    };
    let size = std::fs::metadata(path).map_or(0, |m| m.len());
    let bar = progress_bar(path, size);
    let checked = fti::inventory::check_file(path, kind, &|done| bar.set_position(done));
    bar.finish_and_clear();
    checked
}

fn progress_bar(path: &Path, len: u64) -> indicatif::ProgressBar {
    if len < PROGRESS_THRESHOLD {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(len);
    let style = indicatif::ProgressStyle::with_template(
        "{msg} [{bar:30}] {bytes}/{total_bytes} ({bytes_per_sec}, {eta})",
    )
    .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar());
    bar.set_style(style);
    bar.set_message(format!("verifying {}", file_name(path)));
    bar
}

pub fn extract(
    path: &Path,
    verify: bool,
    id: Option<i32>,
    output: Option<&Path>,
    all: Option<&Path>,
) -> Result<ExitCode> {
    let map = open(path, verify)?;
    let ckpt = Checkpoint::of(&map)?;
    let read = |id: i32| ckpt.read_var(id).map_err(|e| e.with_path(path));
    // Every output is complete under a temporary name before any takes its final name.
    let mut outputs = Vec::new();
    match (id, output, all) {
        (Some(id), Some(out), None) if out == Path::new("-") => {
            std::io::stdout().lock().write_all(&read(id)?)?;
        }
        (Some(id), Some(out), None) => outputs.push((read(id)?, out.to_path_buf())),
        (None, None, Some(dir)) => {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
            for var in ckpt.vars() {
                let dest = dir.join(format!("var-{}.bin", var.id));
                outputs.push((read(var.id)?, dest));
            }
        }
        _ => bail!("give --id N -o OUT, or --all DIR"),
    }
    let mut written = Vec::with_capacity(outputs.len());
    for (data, dest) in outputs {
        let mut out = output::Output::create(&dest)?;
        out.write_all(&data)?;
        written.push(out);
    }
    for out in written {
        out.finish()?;
    }
    Ok(ExitCode::SUCCESS)
}

pub fn diff(a: &Path, b: &Path, verify: bool) -> Result<ExitCode> {
    let (ma, mb) = (open(a, verify)?, open(b, verify)?);
    let (ca, cb) = (Checkpoint::of(&ma)?, Checkpoint::of(&mb)?);
    let mut same = true;
    let changes = ftiff::diff::diff(&ca, &cb)
        .with_context(|| format!("comparing {} and {}", a.display(), b.display()))?;
    let mut stdout = std::io::stdout().lock();
    for d in changes {
        same &= matches!(d.change, Change::Unchanged { .. });
        let line = match d.change {
            Change::Unchanged { size } => format!("unchanged ({size} bytes)"),
            Change::Changed { size, chunks } => {
                let list: Vec<String> = chunks.iter().map(u32::to_string).collect();
                format!(
                    "changed ({size} bytes; containers {} differ)",
                    list.join(", ")
                )
            }
            Change::Resized { from, to } => format!("resized ({from} -> {to} bytes)"),
            Change::Added { size } => format!("added ({size} bytes)"),
            Change::Removed { size } => format!("removed ({size} bytes)"),
        };
        writeln!(stdout, "id {}: {line}", d.id)?;
    }
    Ok(if same {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
