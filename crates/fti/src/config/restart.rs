//! Writing the restart record (`failure`, `exec_id`) into the user's config file.

use std::path::Path;

use super::ini::section_header;
use crate::error::{Error, Result};

/// Records `failure` and `exec_id` in the config file at `path`, as FTI does, so that a
/// program restarted with the same file recovers. Only those two lines of `[restart]` are
/// replaced (or added); every other line is kept as the user wrote it. A symbolic link is
/// written through, as FTI's `fopen(path, "w")` does: the file it names gets the record and
/// keeps its mode, the link stays. The new file replaces the old one atomically (temporary
/// file beside it, fsync, rename).
pub fn record_restart(
    storage: &dyn crate::storage::Storage,
    path: &Path,
    failure: u8,
    exec_id: &str,
) -> Result<()> {
    let target = std::fs::canonicalize(path).map_err(|e| Error::io(path, e))?;
    let permissions = std::fs::metadata(&target)
        .map_err(|e| Error::io(&target, e))?
        .permissions();
    let text = std::fs::read_to_string(&target).map_err(|e| Error::io(&target, e))?;
    let text = restart_text(&text, failure, exec_id);
    crate::files::replace_file_as(storage, &target, text.as_bytes(), Some(permissions))
}

/// The config text `text` with `failure` and `exec_id` recorded in `[restart]` and its
/// `ckpt_id` dropped, every other line kept: what [`record_restart`] writes.
pub fn restart_text(text: &str, failure: u8, exec_id: &str) -> String {
    // A byte-order mark is kept, and skipped as the parser skips it.
    let (bom, text) = match text.strip_prefix('\u{feff}') {
        Some(rest) => ("\u{feff}", rest),
        None => ("", text),
    };
    let mut out = Vec::new();
    let mut in_restart = false;
    let mut seen_restart = false;
    let (mut wrote_failure, mut wrote_exec) = (false, false);
    let pad = |key: &str| format!("{key:<31}= ");
    let flush_missing = |out: &mut Vec<String>, wf: &mut bool, we: &mut bool| {
        if !*wf {
            out.push(format!("{}{failure}", pad("failure")));
            *wf = true;
        }
        if !*we {
            out.push(format!("{}{exec_id}", pad("exec_id")));
            *we = true;
        }
    };
    for line in text.lines() {
        let trimmed = line.trim();
        let comment = trimmed.starts_with('#') || trimmed.starts_with(';');
        if let Some(section) = section_header(trimmed) {
            if in_restart {
                flush_missing(&mut out, &mut wrote_failure, &mut wrote_exec);
            }
            in_restart = section == "restart";
            seen_restart |= in_restart;
        } else if in_restart && !comment {
            let key = trimmed
                .split('=')
                .next()
                .unwrap_or_default()
                .trim()
                .to_ascii_lowercase();
            if key == "failure" {
                out.push(format!("{}{failure}", pad("failure")));
                wrote_failure = true;
                continue;
            }
            if key == "exec_id" {
                out.push(format!("{}{exec_id}", pad("exec_id")));
                wrote_exec = true;
                continue;
            }
            // A chosen restart checkpoint applies to one restart: the run goes on from it.
            if key == "ckpt_id" {
                continue;
            }
        }
        out.push(line.to_owned());
    }
    if in_restart {
        flush_missing(&mut out, &mut wrote_failure, &mut wrote_exec);
    }
    if !seen_restart {
        out.push(String::new());
        out.push("[restart]".into());
        flush_missing(&mut out, &mut wrote_failure, &mut wrote_exec);
    }
    let mut text = bom.to_owned() + &out.join("\n");
    text.push('\n');
    text
}
