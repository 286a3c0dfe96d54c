//! Unit tests of the channels: ovniemu's records and their order for basic sequences.

use super::super::prv::Writer;
use super::*;

/// Runs `f` on channels for one thread (tid 7, pid 3) on CPU row 0 of 2, with mark types
/// 1 and 2, and returns the records of both files after the header.
fn run(f: impl FnOnce(&mut Channels, &mut Prv, &mut Prv)) -> (String, String) {
    let dir = tempfile::tempdir().unwrap();
    let writer = Writer::new().unwrap();
    let mut cpu = Prv::create(&dir.path().join("cpu.prv"), 2, &writer).unwrap();
    let mut th = Prv::create(&dir.path().join("thread.prv"), 1, &writer).unwrap();
    let mut c = Channels::new(&[(7, 3)], 2, &[1, 2], &mut cpu, &mut th);
    f(&mut c, &mut cpu, &mut th);
    cpu.close().unwrap();
    th.close().unwrap();
    let read = |f: &str| {
        let s = std::fs::read_to_string(dir.path().join(f)).unwrap();
        s.lines()
            .skip(1)
            .map(|l| l.trim_start_matches("2:0:1:1:").to_string() + "\n")
            .collect::<String>()
    };
    (read("cpu.prv"), read("thread.prv"))
}

fn execute(c: &mut Channels, cpu: &mut Prv, th: &mut Prv) {
    c.thread_cpu(0, Some(0));
    c.thread_state(0, 1, true);
    c.cpu_update(0, Some(0), 1);
    c.propagate(cpu, th);
}

#[test]
fn execute_writes_ovniemus_records_in_its_order() {
    let (cpu, th) = run(execute);
    assert_eq!(
        cpu,
        "1:0:2:7\n1:0:1:3\n1:0:3:1\n1:0:7:0\n1:0:101:0\n1:0:102:0\n"
    );
    assert_eq!(th, "1:0:6:1\n1:0:4:1\n1:0:2:7\n1:0:101:0\n1:0:102:0\n");
}

#[test]
fn a_single_mark_set_twice_is_written_twice() {
    let (cpu, th) = run(|c, cpu, th| {
        execute(c, cpu, th);
        for _ in 0..2 {
            c.mark(0, 0, Some(5));
            c.propagate(cpu, th);
        }
    });
    assert!(cpu.ends_with("1:0:101:5\n1:0:101:5\n"), "{cpu}");
    assert!(th.ends_with("1:0:101:5\n1:0:101:5\n"), "{th}");
}

#[test]
fn cooling_keeps_the_threads_marks_and_drops_the_cpus() {
    let (cpu, th) = run(|c, cpu, th| {
        execute(c, cpu, th);
        c.mark(0, 0, Some(5));
        c.propagate(cpu, th);
        // Running -> Cooling: still active, no longer running.
        c.thread_state(0, 4, true);
        c.cpu_update(0, None, 0);
        c.propagate(cpu, th);
    });
    // The thread's mark mux re-selects the same value: written again (only null
    // repeats are skipped); the CPU's goes to null.
    assert!(th.ends_with("1:0:101:5\n1:0:4:4\n1:0:101:5\n"), "{th}");
    assert!(
        cpu.ends_with("1:0:101:5\n1:0:2:0\n1:0:1:0\n1:0:3:0\n1:0:101:0\n"),
        "{cpu}"
    );
}

#[test]
fn a_paused_thread_moved_to_a_fresh_cpu_sets_its_count_to_zero() {
    let (cpu, _) = run(|c, cpu, th| {
        execute(c, cpu, th);
        c.thread_state(0, 2, false);
        c.cpu_update(0, None, 0);
        c.propagate(cpu, th);
        c.cpu_update(0, None, 0);
        c.cpu_update(1, None, 0);
        c.thread_cpu(0, Some(1));
        c.propagate(cpu, th);
    });
    // The new CPU's count goes from null to 0; its tid and pid stay null (not written).
    assert!(cpu.ends_with("1:0:3:0\n2:0:3:0\n"), "{cpu}");
}

#[test]
fn breakdown_rows_keep_the_cpus_values_sorted() {
    use super::View;
    let dir = tempfile::tempdir().unwrap();
    let writer = Writer::new().unwrap();
    let mut cpu = Prv::create(&dir.path().join("cpu.prv"), 4, &writer).unwrap();
    let mut th = Prv::create(&dir.path().join("thread.prv"), 1, &writer).unwrap();
    let mut bd = Prv::create(&dir.path().join("bd.prv"), 4, &writer).unwrap();
    let mut c = Channels::new(&[(7, 3)], 4, &[], &mut cpu, &mut th);
    let view = View::Labels { ss: 0, label: 1 };
    let defs = [0, 1].map(|_| TrackDef {
        prv_type: 50,
        thread_track: crate::model::stack::Track::Active,
        skip_dup_null: true,
        emit_dup: false,
        cpu_default: None,
        before_ovni: false,
    });
    c.add_tracks(&defs, &mut cpu, &mut th);
    c.enable_breakdown(view, &[0, 1, 2, 3], 53, &mut bd);
    // Sorting by replacement gives the same rows as sorting every time.
    let mut values = [0i64; 4];
    let mut seed = 7u64;
    for _ in 0..200 {
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
        let cpu_i = (seed >> 33) as usize % 4;
        let v = (seed >> 40) as i64 % 5;
        values[cpu_i] = v;
        c.sort_input(0, cpu_i, v);
        let mut want = values;
        want.sort_unstable();
        let got: Vec<i64> = (0..4).map(|i| c.breakdown[0].sorted[i]).collect();
        assert_eq!(got, want);
    }
    cpu.close().unwrap();
    th.close().unwrap();
    bd.close().unwrap();
}
