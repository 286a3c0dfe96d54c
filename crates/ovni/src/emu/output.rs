//! The six output files (`cpu.{prv,pcf,row}`, `thread.{prv,pcf,row}`): the `.prv` writers
//! while the trace is played, and the `.pcf` types and `.row` labels written when it ends.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use super::cfg;
use super::chan::TY_MARK;
use super::layout::{Layout, MarkList};
use super::models::Models;
use super::pcf::{self, PcfType};
use super::prv::{Prv, Writer};
use super::row;
use crate::error::Error;

/// The `.pcf` types of the CPU and thread views.
pub(super) struct PcfTypes {
    pub(super) cpu: Vec<PcfType>,
    pub(super) thread: Vec<PcfType>,
    /// Each breakdown view's, by model name.
    pub(super) breakdown: Vec<(&'static str, Vec<PcfType>)>,
}

/// The types in ovniemu's order: the thread's own (CPU, TID, state), then each enabled
/// model's by model character (the ovni model's are its flushes and marks).
/// The errors met filling them are added to `errors`.
pub(super) fn pcf_types(
    layout: &Layout,
    marks: &MarkList,
    models: &Models,
    errors: &mut Vec<(u8, String)>,
) -> PcfTypes {
    let t = |ty, label: &str, values: Vec<(i64, String)>| PcfType {
        ty,
        label: label.to_string(),
        values,
    };
    let states = ["Unknown", "Running", "Paused", "Dead", "Cooling", "Warming"]
        .iter()
        .enumerate()
        .map(|(i, s)| (i as i64, s.to_string()))
        .collect();
    let cpus = layout
        .cpu_labels
        .iter()
        .enumerate()
        .map(|(i, l)| (i as i64 + 1, l.clone()))
        .collect();
    let flushing = || vec![(1, "Flushing".to_string())];
    let mut thread = vec![
        t(6, "Thread: CPU affinity", cpus),
        t(2, "Thread: TID of the ACTIVE thread", Vec::new()),
        t(4, "Thread: thread state", states),
    ];
    thread.extend(models.pcf_types(true, true, errors));
    thread.push(t(7, "Flushing ovni buffer ", flushing()));
    let mut cpu = models.pcf_types(true, false, errors);
    cpu.push(t(
        7,
        "Flushing ovni buffer of the RUNNING thread",
        flushing(),
    ));
    for (ty, title, labels) in &marks.types {
        let m = t(TY_MARK + *ty as u32, title, labels.clone());
        thread.push(m.clone());
        cpu.push(m);
    }
    thread.extend(models.pcf_types(false, true, errors));
    cpu.extend(models.pcf_types(false, false, errors));
    let breakdown = models
        .breakdown_models()
        .into_iter()
        .map(|name| (name, models.breakdown_pcf_types(name)))
        .collect();
    PcfTypes {
        cpu,
        thread,
        breakdown,
    }
}

/// The six output files while the trace is played.
pub(super) struct Outputs {
    pub(super) dir: PathBuf,
    /// Time of the current event.
    time: i64,
    pub(super) cpu: Prv,
    pub(super) thread: Prv,
    cpu_labels: Vec<String>,
    th_labels: Vec<String>,
    /// Write the Paraver configurations (`cfg/`) at the end.
    cfg: bool,
    /// The breakdown views (`-b`): model name, `.prv` writer and the CPU row of each of its
    /// rows (the physical CPUs).
    pub(super) breakdowns: Vec<(&'static str, Prv, Vec<usize>)>,
    /// The writer thread of both `.prv` files (dropped after them). One thread for both: it
    /// is busy most of the time, so it seldom sleeps and the emulating thread seldom has to
    /// wake it (two threads, each idle half of the time, were woken at every batch).
    _writer: Writer,
}

impl Outputs {
    /// With `cfg`, the Paraver configurations are written when the files are closed.
    pub(super) fn create(dir: &Path, layout: &Layout, cfg: bool) -> crate::Result<Self> {
        let writer = Writer::new().map_err(|e| Error::io(dir, e))?;
        let cpu = Prv::create(&dir.join("cpu.prv"), layout.cpu_labels.len(), &writer)?;
        let thread = Prv::create(&dir.join("thread.prv"), layout.th_labels.len(), &writer)?;
        for f in ["cpu.pcf", "cpu.row", "thread.pcf", "thread.row"] {
            create_file(&dir.join(f))?;
        }
        Ok(Self {
            dir: dir.to_path_buf(),
            time: 0,
            cpu,
            thread,
            cpu_labels: layout.cpu_labels.clone(),
            th_labels: layout.th_labels.clone(),
            breakdowns: Vec::new(),
            cfg,
            _writer: writer,
        })
    }

    #[inline]
    pub(super) fn advance(&mut self, time: i64) {
        if time != self.time {
            self.time = time;
            self.cpu.advance(time);
            self.thread.advance(time);
            for (_, b, _) in &mut self.breakdowns {
                b.advance(time);
            }
        }
    }

    /// Adds the breakdown view of model `name` over the physical CPUs (their CPU rows
    /// `cpus`), `<name>-breakdown.{prv,pcf,row}`.
    pub(super) fn add_breakdown(
        &mut self,
        name: &'static str,
        cpus: Vec<usize>,
    ) -> crate::Result<()> {
        let file = |ext: &str| self.dir.join(format!("{name}-breakdown.{ext}"));
        let prv = Prv::create(&file("prv"), cpus.len(), &self._writer)?;
        for ext in ["pcf", "row"] {
            create_file(&file(ext))?;
        }
        self.breakdowns.push((name, prv, cpus));
        Ok(())
    }

    /// Finishes the `.prv` files; with `pcfs`, writes the `.pcf` and `.row` files too (they
    /// stay empty when the emulation stopped before it started, as in the original).
    pub(super) fn close(self, pcfs: Option<&PcfTypes>) -> crate::Result<()> {
        self.cpu.close()?;
        self.thread.close()?;
        let mut breakdowns = Vec::new();
        for (name, prv, cpus) in self.breakdowns {
            prv.close()?;
            breakdowns.push((name, cpus.len()));
        }
        let Some(pcfs) = pcfs else { return Ok(()) };
        let mut files = vec![
            ("cpu.pcf".to_string(), pcf::render(&pcfs.cpu)),
            ("cpu.row".to_string(), row::render(&self.cpu_labels)),
            ("thread.pcf".to_string(), pcf::render(&pcfs.thread)),
            ("thread.row".to_string(), row::render(&self.th_labels)),
        ];
        for &(name, rows) in &breakdowns {
            // The rows are named from the top: the last row is the first CPU.
            let labels: Vec<String> = (0..rows).map(|r| format!("~CPU {:>4}", rows - r)).collect();
            let types = pcfs
                .breakdown
                .iter()
                .find(|b| b.0 == name)
                .map(|b| &b.1[..]);
            let pcf = pcf::render(types.unwrap_or_default());
            files.push((format!("{name}-breakdown.pcf"), pcf));
            files.push((format!("{name}-breakdown.row"), row::render(&labels)));
        }
        // The CPU view's own types have no `.pcf` entry (as in the original) but a window.
        let own = |ty, label: &str| PcfType {
            ty,
            label: label.to_string(),
            values: Vec::new(),
        };
        let cpu_own = [
            own(1, "PID of the RUNNING thread"),
            own(2, "TID of the RUNNING thread"),
            own(3, "Number of RUNNING threads"),
        ];
        let mut cfgs: Vec<(&str, &[PcfType])> = vec![
            ("thread", &pcfs.thread),
            ("cpu", &cpu_own),
            ("cpu", &pcfs.cpu),
        ];
        for (name, _) in &breakdowns {
            if let Some(b) = pcfs.breakdown.iter().find(|b| b.0 == *name) {
                cfgs.push(("cpu", &b.1));
            }
        }
        for (view, types) in cfgs.into_iter().filter(|_| self.cfg) {
            cfg::write(&self.dir, view, types)?;
        }
        for (name, text) in files {
            let p = self.dir.join(&name);
            create_file(&p)?
                .write_all(text.as_bytes())
                .map_err(|e| Error::io(&p, e))?;
        }
        Ok(())
    }
}

/// Creates or truncates the output file `path`, which must be a regular file: a symlink there
/// is not followed (it could point at any file of the user's), and a FIFO or device is
/// refused without waiting for a reader.
pub(super) fn create_file(path: &Path) -> crate::Result<File> {
    let open = || -> io::Result<File> {
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(path)?;
        if !file.metadata()?.is_file() {
            return Err(io::Error::other("not a regular file"));
        }
        // Truncated only once known to be a regular file.
        file.set_len(0)?;
        Ok(file)
    };
    open().map_err(|e| Error::io(path, e))
}
