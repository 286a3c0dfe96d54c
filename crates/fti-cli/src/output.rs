//! Files the tool writes (`fti extract`): each is written under a temporary name in its
//! directory, created new with `O_NOFOLLOW` (never through a symbolic link or into a FIFO
//! already there), and renamed over the final name only once complete. The rename replaces
//! whatever sits at the name, a link included, without following it; until then the
//! temporary is listed for removal should the input's map fault ([`crate::sigbus`]).

use std::fs::File;
use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use anyhow::{Context as _, Result};

use crate::sigbus;

/// An output being written.
pub struct Output {
    file: File,
    temporary: PathBuf,
    dest: PathBuf,
    done: bool,
    _listed: sigbus::Listed,
}

impl Output {
    /// Starts writing `dest`.
    pub fn create(dest: &Path) -> Result<Output> {
        static SERIAL: AtomicU32 = AtomicU32::new(0);
        let name = dest
            .file_name()
            .with_context(|| format!("{}: not a file name", dest.display()))?;
        let temporary = dest.with_file_name(format!(
            ".{}.{}-{}.tmp",
            name.to_string_lossy(),
            std::process::id(),
            SERIAL.fetch_add(1, Ordering::Relaxed)
        ));
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o644)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&temporary)
            .with_context(|| format!("creating {}", temporary.display()))?;
        let listed = sigbus::list(&temporary);
        Ok(Output {
            file,
            temporary,
            dest: dest.to_path_buf(),
            done: false,
            _listed: listed,
        })
    }

    /// Writes `bytes`.
    pub fn write_all(&mut self, bytes: &[u8]) -> Result<()> {
        self.file
            .write_all(bytes)
            .with_context(|| format!("writing {}", self.temporary.display()))
    }

    /// Renames the complete output over its final name.
    pub fn finish(mut self) -> Result<()> {
        std::fs::rename(&self.temporary, &self.dest).with_context(|| {
            format!(
                "renaming {} to {}",
                self.temporary.display(),
                self.dest.display()
            )
        })?;
        self.done = true;
        Ok(())
    }
}

impl Drop for Output {
    fn drop(&mut self) {
        if !self.done {
            let _ = std::fs::remove_file(&self.temporary);
        }
    }
}
