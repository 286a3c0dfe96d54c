//! Random sequences of mpi, tampi, openmp, nosv, nanos6, nodes and kernel events: the emulator
//! never panics on them, and when their payloads fit the events' signatures `ovnilint` accepts
//! exactly the traces `ovniemu` emulates without error.

use std::path::Path;
use std::sync::OnceLock;

use ovni::emu::{emulate, Collect, EmuOptions};
use ovni::events::{ArgType, EventTable};
use ovni::lint::{lint_dir, LintOptions};
use ovni::write::Process;
use ovni::Mcv;

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Every event of the mpi, tampi, openmp, nosv, nanos6, nodes and kernel models (the table's keys, found
/// once).
fn model_events() -> &'static [Mcv] {
    static EVENTS: OnceLock<Vec<Mcv>> = OnceLock::new();
    EVENTS.get_or_init(|| {
        let table = EventTable::builtin();
        let mut v = Vec::new();
        for m in [b'M', b'T', b'P', b'V', b'6', b'D', b'K'] {
            for c in 0..=255u8 {
                for val in 0..=255u8 {
                    if table.event(Mcv([m, c, val])).is_some() {
                        v.push(Mcv([m, c, val]));
                    }
                }
            }
        }
        v
    })
}

/// One event: its payload fits its signature (`fit`) or is random bytes.
fn payload(rng: &mut Rng, mcv: Mcv, fit: bool) -> (Vec<u8>, bool) {
    let Some(spec) = EventTable::builtin().event(mcv) else {
        return (Vec::new(), false);
    };
    if !fit {
        // Normal payloads hold 0 or 2 to 16 bytes.
        let n = match rng.below(17) as usize {
            1 => 0,
            n => n,
        };
        let mut p: Vec<u8> = (0..n).map(|_| rng.below(256) as u8).collect();
        if spec.jumbo && rng.below(4) == 0 {
            p.truncate(3);
        }
        return (p, spec.jumbo);
    }
    let mut p = Vec::new();
    for (_, ty) in &spec.args {
        match ty {
            // Few ids, so that tasks, types and worksharings meet each other.
            ArgType::U32 => p.extend_from_slice(&(rng.below(4) as u32 + 1).to_le_bytes()),
            ArgType::Str => {
                p.extend_from_slice(format!("t{}", rng.below(3)).as_bytes());
                p.push(0);
            }
            t => p.extend(std::iter::repeat_n(0, t.size().unwrap_or(0))),
        }
    }
    (p, spec.jumbo)
}

/// The leave event of an enter event of a subsystem or function (`[` → `]`, lower →
/// upper case), if the model has one.
fn leave_of(mcv: Mcv) -> Option<Mcv> {
    let [m, c, v] = mcv.0;
    let leave = match v {
        b'[' => b']',
        v if v.is_ascii_lowercase() => v.to_ascii_uppercase(),
        _ => return None,
    };
    let table = EventTable::builtin();
    let pair = Mcv([m, c, leave]);
    let typed = match m {
        b'P' => matches!(c, b'P' | b'O' | b'Q'),
        b'V' => matches!(c, b'T' | b'Y' | b'W' | b'P'),
        b'6' => matches!(c, b'T' | b'Y' | b'P'),
        _ => false,
    };
    (!typed).then_some(())?;
    table.event(pair).map(|_| pair)
}

/// Mostly well nested model events: enter and leave pairs (functions, subsystems, tasks,
/// worksharings), and now and then a random event.
/// With `only`, the events of that model alone.
fn nested_events(rng: &mut Rng, n: usize, only: Option<u8>) -> Vec<(Mcv, Vec<u8>)> {
    let of = |e: &&Mcv| only.is_none_or(|m| e.model() == m);
    let pairs: Vec<(Mcv, Mcv)> = model_events()
        .iter()
        .filter(of)
        .filter_map(|&e| leave_of(e).map(|l| (e, l)))
        .collect();
    let all: Vec<Mcv> = model_events().iter().filter(of).copied().collect();
    let arm = |c: u8| only.is_none_or(|m| m == c);
    let ty = [&1u32.to_le_bytes()[..], b"t\0"].concat();
    let mut out: Vec<(Mcv, Vec<u8>)> = vec![
        (Mcv(*b"POc"), ty.clone()),
        (Mcv(*b"VYc"), ty.clone()),
        (Mcv(*b"6Yc"), ty),
    ];
    let mut open: Vec<(Mcv, Vec<u8>)> = Vec::new();
    let mut task = 0u32;
    for _ in 0..n {
        match rng.below(10) {
            0 => {
                let mcv = all[rng.below(all.len() as u64) as usize];
                out.push((mcv, payload(rng, mcv, true).0));
            }
            1..=4 if !open.is_empty() => out.extend(open.pop()),
            5 if arm(b'P') => {
                task += 1;
                let id = task.to_le_bytes();
                out.push((Mcv(*b"PPc"), [&id[..], &1u32.to_le_bytes()[..]].concat()));
                out.push((Mcv(*b"PPx"), id.to_vec()));
                open.push((Mcv(*b"PPe"), id.to_vec()));
            }
            6 if arm(b'P') => {
                out.push((Mcv(*b"PQx"), 1u32.to_le_bytes().to_vec()));
                open.push((Mcv(*b"PQe"), 1u32.to_le_bytes().to_vec()));
            }
            7 if arm(b'V') => {
                task += 1;
                let id = task.to_le_bytes();
                let body = [&id[..], &0u32.to_le_bytes()[..]].concat();
                out.push((Mcv(*b"VTc"), [&id[..], &1u32.to_le_bytes()[..]].concat()));
                out.push((Mcv(*b"VTx"), body.clone()));
                open.push((Mcv(*b"VTe"), body));
            }
            8 if arm(b'6') => {
                task += 1;
                let id = task.to_le_bytes();
                out.push((Mcv(*b"6Tc"), [&id[..], &1u32.to_le_bytes()[..]].concat()));
                out.push((Mcv(*b"6Tx"), id.to_vec()));
                if rng.below(3) == 0 {
                    out.push((Mcv(*b"6Tp"), id.to_vec()));
                    out.push((Mcv(*b"6Tr"), id.to_vec()));
                }
                open.push((Mcv(*b"6Te"), id.to_vec()));
            }
            _ => {
                let (enter, leave) = pairs[rng.below(pairs.len() as u64) as usize];
                out.push((enter, Vec::new()));
                open.push((leave, Vec::new()));
            }
        }
    }
    out.extend(open.into_iter().rev());
    out.retain(|(e, _)| only.is_none_or(|m| e.model() == m));
    out
}

/// A one-thread trace with `n` random model events (mostly well nested if `fit`), paused
/// and resumed now and then.
fn write_trace(dir: &Path, seed: u64, n: usize, fit: bool) {
    write_trace_of(dir, seed, n, fit, None);
}

/// As [`write_trace`], with the events of model `only` alone if given.
fn write_trace_of(dir: &Path, seed: u64, n: usize, fit: bool, only: Option<u8>) {
    let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let events: Vec<(Mcv, Vec<u8>)> = if fit {
        nested_events(&mut rng, n, only)
    } else {
        let all = model_events();
        (0..n)
            .map(|_| {
                let mcv = all[rng.below(all.len() as u64) as usize];
                (mcv, payload(&mut rng, mcv, false).0)
            })
            .collect()
    };
    let p = Process::init(dir, 1, "node0", 100).unwrap();
    let mut t = p.thread_init(100).unwrap();
    t.add_cpu(0, 0).unwrap();
    let models = [
        ("mpi", "1.0.0"),
        ("tampi", "1.0.0"),
        ("openmp", "1.2.1"),
        ("nosv", "2.7.0"),
        ("nanos6", "1.1.0"),
        ("nodes", "1.0.0"),
        ("kernel", "1.0.0"),
    ];
    // With `only`, that model alone is required.
    let table = EventTable::builtin();
    for (m, v) in models {
        let id = table.model_by_name(m).map(|m| m.id);
        if only.is_none() || only == id {
            t.require(m, v).unwrap();
        }
    }
    let mut cpu = Vec::new();
    cpu.extend_from_slice(&0i32.to_le_bytes());
    cpu.extend_from_slice(&(-1i32).to_le_bytes());
    cpu.extend_from_slice(&0u64.to_le_bytes());
    let mut clock = 1000;
    t.emit_at(Mcv(*b"OHx"), clock, &cpu).unwrap();
    let mut paused = false;
    for (mcv, data) in events {
        clock += 10;
        if rng.below(40) == 0 {
            let ev = if paused { b"OHr" } else { b"OHp" };
            t.emit_at(Mcv(*ev), clock, &[]).unwrap();
            paused = !paused;
            clock += 10;
        }
        let jumbo = EventTable::builtin().event(mcv).is_some_and(|s| s.jumbo);
        if jumbo {
            t.emit_jumbo_at(mcv, clock, &data).unwrap();
        } else {
            t.emit_at(mcv, clock, &data).unwrap();
        }
    }
    if paused {
        clock += 10;
        t.emit_at(Mcv(*b"OHr"), clock, &[]).unwrap();
    }
    t.emit_at(Mcv(*b"OHe"), clock + 10, &[]).unwrap();
    t.finish().unwrap();
}

#[test]
fn random_model_events_get_the_same_verdict_from_ovniemu_and_ovnilint() {
    let mut accepted = 0;
    for seed in 0..30 {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("ovni");
        write_trace(&dir, seed, 5 + (seed as usize % 4) * 10, true);
        // And the nanos6 and nodes events alone, which a trace of every model seldom reaches.
        let tmp1 = tempfile::tempdir().unwrap();
        let only = [b'6', b'D'][seed as usize % 2];
        write_trace_of(&tmp1.path().join("ovni"), seed, 30, true, Some(only));
        let dir1 = tmp1.path().join("ovni");
        let emu1 = emulate(&dir1, &EmuOptions::default(), &mut Collect::default());
        let lint1 = lint_dir(&dir1, &LintOptions::default());
        assert_eq!(
            emu1.ok,
            lint1.accepted(),
            "seed {seed} ({}): ovniemu {:?}, ovnilint {:?}",
            only as char,
            emu1.error,
            lint1.problems.first()
        );
        let emu = emulate(&dir, &EmuOptions::default(), &mut Collect::default());
        let lint = lint_dir(&dir, &LintOptions::default());
        assert_eq!(
            emu.ok,
            lint.accepted(),
            "seed {seed}: ovniemu {:?}, ovnilint {:?}",
            emu.error,
            lint.problems.first()
        );
        accepted += usize::from(emu.ok);
    }
    // Both verdicts occur.
    assert!(accepted > 0 && accepted < 30, "{accepted} accepted");
}

#[test]
fn random_model_payloads_never_panic() {
    for seed in 0..15 {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("ovni");
        write_trace(&dir, seed, 200, false);
        // With the debug lines on, so that their code meets the random payloads too.
        let opts = EmuOptions {
            lint: true,
            debug: true,
            ..EmuOptions::default()
        };
        let _ = emulate(&dir, &opts, &mut Collect::default());
        let _ = lint_dir(&dir, &LintOptions::default());
    }
}

/// With `OVNI_ORIGINAL_EMU` naming ovni 1.14's `ovniemu`, random well nested sequences (whose
/// payloads fit their events: random payloads meet the documented deviations) get the same
/// files, exit status and messages (with `-d`: debug lines too) from ours as from the
/// original; without it the test does nothing.
#[test]
fn random_model_events_match_the_original_when_it_is_given() {
    let Some(original) = std::env::var_os("OVNI_ORIGINAL_EMU") else {
        return;
    };
    let seeds: u64 = std::env::var("OVNI_ORIGINAL_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(40);
    let mut failures = Vec::new();
    for seed in 0..seeds {
        let tmp = tempfile::tempdir().unwrap();
        let ours = tmp.path().join("ours");
        let theirs = tmp.path().join("theirs");
        // Every model's events together, then each model's alone in turn.
        let only = [
            None,
            Some(b'6'),
            Some(b'D'),
            Some(b'V'),
            Some(b'P'),
            Some(b'M'),
        ];
        let only = only[seed as usize % only.len()];
        write_trace_of(&ours, seed, 5 + (seed as usize % 7) * 10, true, only);
        crate::util::copy_dir(&ours, &theirs);
        // The nanos6, openmp and nosv events alone also get their breakdown view (refused for
        // nosv: these threads do not say they allow it).
        // And with the debug lines (`-d`), compared as in `debug.rs`.
        let bd = matches!(only, Some(b'6' | b'P' | b'V'));
        let args: &[&str] = if bd { &["-b", "-d"] } else { &["-d"] };
        let a = crate::models::emu(&[args, &["ours"]].concat(), tmp.path());
        let b = std::process::Command::new(&original)
            .args(args)
            .arg("theirs")
            .current_dir(tmp.path())
            .output()
            .unwrap();
        let name = format!("seed {seed}");
        if a.status.code() != b.status.code() {
            failures.push(format!("{name}: exit {:?} vs {:?}", a.status, b.status));
        }
        let their_stderr = String::from_utf8_lossy(&b.stderr).replace("theirs", "ours");
        let (ea, eb) = (
            crate::debug::comparable(&a.stderr),
            crate::debug::comparable(their_stderr.as_bytes()),
        );
        if ea != eb {
            let at = ea.iter().zip(&eb).take_while(|(x, y)| x == y).count();
            failures.push(format!(
                "{name}: stderr differs at comparable line {at}:\n ours: {:?}\n orig: {:?}",
                ea.get(at),
                eb.get(at)
            ));
        }
        for f in [
            "cpu.prv",
            "cpu.pcf",
            "cpu.row",
            "thread.prv",
            "thread.pcf",
            "thread.row",
            "nanos6-breakdown.prv",
            "nanos6-breakdown.pcf",
            "nanos6-breakdown.row",
            "openmp-breakdown.prv",
            "openmp-breakdown.pcf",
            "openmp-breakdown.row",
            "nosv-breakdown.prv",
        ] {
            if std::fs::read(ours.join(f)).ok() != std::fs::read(theirs.join(f)).ok() {
                failures.push(format!("{name}: {f} differs"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
