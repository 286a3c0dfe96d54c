//! Paraver configuration files (`DIR/cfg/{cpu,thread}/<model>/<name>.cfg`): one window per
//! `.pcf` type of the CPU and thread views (and of the breakdown views), showing the last value
//! of that event type in each row, its values coloured by code so that Paraver uses the
//! `.pcf` labels. They are written from the types the emulation produced.

use std::fs;
use std::io::Write;
use std::path::Path;

use super::output::create_file;
use super::pcf::PcfType;
use crate::error::Error;

/// The model directory and file name of the window of Paraver type `ty`, if it has one.
fn place(ty: u32) -> Option<(&'static str, String)> {
    let named = |model: &'static str, name: &str| Some((model, name.to_string()));
    match ty {
        1 => named("ovni", "pid"),
        2 => named("ovni", "tid"),
        3 => named("ovni", "number-running-threads"),
        4 => named("ovni", "state"),
        6 => named("ovni", "affinity"),
        7 => named("ovni", "flushing"),
        10 => named("nosv", "task-id"),
        11 => named("nosv", "task-type"),
        12 => named("nosv", "task-appid"),
        13 => named("nosv", "subsystem"),
        14 => named("nosv", "task-rank"),
        15 => named("nosv", "body-id"),
        16 => named("nosv", "idle"),
        17 => named("nosv", "breakdown"),
        20 => named("tampi", "subsystem"),
        25 => named("mpi", "function"),
        30 => named("nodes", "subsystem"),
        35 => named("nanos6", "task-id"),
        36 => named("nanos6", "task-type"),
        37 => named("nanos6", "subsystem"),
        38 => named("nanos6", "mpi-rank"),
        39 => named("nanos6", "thread-type"),
        40 => named("nanos6", "idle"),
        41 => named("nanos6", "breakdown"),
        45 => named("kernel", "context-switch"),
        50 => named("openmp", "subsystem"),
        51 => named("openmp", "label"),
        52 => named("openmp", "task-id"),
        53 => named("openmp", "breakdown"),
        100..200 => Some(("ovni", format!("mark-{}", ty - 100))),
        200..300 => Some(("nosv", format!("hwc-{}", ty - 200))),
        _ => None,
    }
}

/// The configuration text of one window named `title`, showing event type `ty`.
pub(crate) fn window(title: &str, ty: u32) -> String {
    // Paraver reads a window as `key value` lines after its header; the semantic functions
    // take, per row, the last value of the filtered event type.
    let title = title.replace(['\n', '"'], " ");
    let mut s = String::new();
    s.push_str("#ParaverCFG\nConfigFile.Version: 3.4\nConfigFile.NumWindows: 1\n\n\n");
    s.push_str(&"#".repeat(80));
    s.push_str(&format!("\n< NEW DISPLAYING WINDOW {title} >\n"));
    s.push_str(&"#".repeat(80));
    s.push('\n');
    let lines = [
        format!("window_name {title}"),
        "window_type single".into(),
        "window_id 1".into(),
        "window_level thread".into(),
        "window_object appl { 1, { All } }".into(),
        "window_units Microseconds".into(),
        "window_open true".into(),
        "window_noncolor_mode true".into(),
        "window_logical_filtered true".into(),
        "window_physical_filtered false".into(),
        "window_comm_lines_enabled false".into(),
        "window_flags_enabled false".into(),
        "window_compute_y_max true".into(),
        "window_begin_time_relative 0.000000000000".into(),
        "window_end_time_relative 1.000000000000".into(),
        "window_drawmode draw_randnotzero".into(),
        "window_drawmode_rows draw_randnotzero".into(),
        "window_pixel_size 1".into(),
        "window_labels_to_draw 1".into(),
        "window_selected_functions { 14, { {cpu, Active Thd}, {appl, Adding}, {task, Adding}, \
         {thread, Last Evt Val}, {node, Adding}, {system, Adding}, {workload, Adding}, \
         {from_obj, All}, {to_obj, All}, {tag_msg, All}, {size_msg, All}, {bw_msg, All}, \
         {evt_type, =}, {evt_value, All} } }"
            .into(),
        "window_compose_functions { 9, { {compose_cpu, As Is}, {compose_appl, As Is}, \
         {compose_task, As Is}, {compose_thread, As Is}, {compose_node, As Is}, \
         {compose_system, As Is}, {compose_workload, As Is}, {topcompose1, As Is}, \
         {topcompose2, As Is} } }"
            .into(),
        format!("window_filter_module evt_type 1 {ty}"),
        format!("window_filter_module evt_type_label 1 \"{title}\""),
    ];
    for l in lines {
        s.push_str(&l);
        s.push('\n');
    }
    s.push('\n');
    s
}

/// The window title of a type labelled `label` in view `view` ("CPU", "Thread").
fn title(view: &str, label: &str) -> String {
    let label = label.trim_end();
    if label.starts_with("CPU:") || label.starts_with("Thread:") {
        label.to_string()
    } else {
        format!("{view}: {label}")
    }
}

/// A directory that is a real directory (created if absent; a symlink is refused).
fn real_dir(path: &Path) -> Result<(), Error> {
    match fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => Err(Error::io(
            path,
            std::io::Error::other("not a directory (symlinks are not followed)"),
        )),
        Err(_) => fs::create_dir(path).map_err(|e| Error::io(path, e)),
    }
}

/// Writes the window of every type of `types` (view `view`: "cpu" or "thread") under
/// `dir/cfg/<view>/<model>/`.
pub(crate) fn write(dir: &Path, view: &str, types: &[PcfType]) -> Result<(), Error> {
    let cfg = dir.join("cfg");
    real_dir(&cfg)?;
    let base = cfg.join(view);
    real_dir(&base)?;
    let shown = if view == "cpu" { "CPU" } else { "Thread" };
    for t in types {
        let Some((model, mut name)) = place(t.ty) else {
            continue;
        };
        if (200..300).contains(&t.ty) {
            // A hardware counter is named after its counter (a file name made of its letters,
            // digits, `-` and `_`).
            let counter: String = t
                .label
                .chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || c == '_' {
                        c
                    } else {
                        '-'
                    }
                })
                .take(100)
                .collect();
            if !counter.is_empty() {
                name = format!("hwc-{counter}");
            }
        }
        let mdir = base.join(model);
        real_dir(&mdir)?;
        let p = mdir.join(format!("{name}.cfg"));
        create_file(&p)?
            .write_all(window(&title(shown, &t.label), t.ty).as_bytes())
            .map_err(|e| Error::io(&p, e))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_filters_its_type_and_is_named_after_its_label() {
        let w = window("CPU: Nanos6 subsystem of the RUNNING thread", 37);
        assert!(w.starts_with("#ParaverCFG\nConfigFile.Version: 3.4\nConfigFile.NumWindows: 1\n"));
        assert!(w.contains("\nwindow_name CPU: Nanos6 subsystem of the RUNNING thread\n"));
        assert!(w.contains("\nwindow_filter_module evt_type 1 37\n"));
        assert!(w.contains("{thread, Last Evt Val}"));
        assert_eq!(
            title("Thread", "Thread: CPU affinity"),
            "Thread: CPU affinity"
        );
        assert_eq!(
            title("CPU", "Flushing ovni buffer "),
            "CPU: Flushing ovni buffer"
        );
    }

    #[test]
    fn every_type_of_the_models_has_a_place() {
        for ty in [
            1, 2, 3, 4, 6, 7, 10, 17, 20, 25, 30, 35, 41, 45, 50, 53, 105, 203,
        ] {
            assert!(place(ty).is_some(), "{ty}");
        }
        assert!(place(9).is_none());
    }
}
