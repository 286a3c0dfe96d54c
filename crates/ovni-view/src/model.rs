//! Every thread of a trace as intervals: thread states, the CPU it runs on, and its marks.
//!
//! The model follows the ovni model's events (`OHx`, `OHe`, `OHp`, `OHr`, `OHc`, `OHw`,
//! `OAs`, `OM[`, `OM]`, `OM=`); events of other models only count and move the clock. Unlike
//! `ovniemu`, it accepts traces from crashed runs: a stream without `ovni.finished`, a stream
//! cut inside an event, marks still open and threads never ended are drawn up to the thread's
//! last event and each is recorded as a [`Flag`]. Times are raw clocks (nanoseconds).

use std::collections::BTreeMap;

use ovni::read::meta::{Scalar, StreamMeta};
use ovni::{Stream, Trace};

/// Thread states of the ovni model, in Paraver's numbering.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum State {
    /// Before the thread's first `OHx`.
    Unknown = 0,
    /// Running on a CPU.
    Running = 1,
    /// Paused (`OHp`).
    Paused = 2,
    /// Ended (`OHe`).
    Dead = 3,
    /// About to pause (`OHc`).
    Cooling = 4,
    /// About to run (`OHw`).
    Warming = 5,
}

impl State {
    /// Every state, by number.
    pub const ALL: [State; 6] = [
        State::Unknown,
        State::Running,
        State::Paused,
        State::Dead,
        State::Cooling,
        State::Warming,
    ];

    /// The state's name, as in Paraver's configuration.
    pub fn name(self) -> &'static str {
        match self {
            State::Unknown => "Unknown",
            State::Running => "Running",
            State::Paused => "Paused",
            State::Dead => "Dead",
            State::Cooling => "Cooling",
            State::Warming => "Warming",
        }
    }
}

/// One interval `[t0, t1)` with a value (a state number, a mark value, a CPU index or a
/// thread index).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    /// Start, raw clock.
    pub t0: u64,
    /// End, raw clock.
    pub t1: u64,
    /// What holds during the interval.
    pub value: i64,
}

impl Span {
    /// Length in nanoseconds.
    pub fn dur(&self) -> u64 {
        self.t1.saturating_sub(self.t0)
    }
}

/// One mark interval: pushed to popped (stack types) or set to replaced (single types).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MarkSpan {
    /// Mark type.
    pub ty: i64,
    /// Depth in its type's stack (0 = bottom; always 0 for single types).
    pub depth: u32,
    /// Interval and mark value.
    pub span: Span,
    /// Still open at the thread's last event (crashed run or missing pop).
    pub open: bool,
}

/// Something a crashed or inconsistent trace shows, drawn on the page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Flag {
    /// The stream's metadata lacks `ovni.finished = 1`: the thread did not finish its trace.
    Unfinished,
    /// The stream ends inside an event; the events before it are drawn.
    Truncated {
        /// Offset of the incomplete event.
        offset: u64,
    },
    /// The thread was not dead at its last event.
    NotEnded {
        /// Its state then.
        state: State,
    },
    /// Marks still open at the thread's last event: (type, value), innermost last.
    OpenMarks(Vec<(i64, i64)>),
    /// A pop that does not match the top of its stack (type, value).
    BadPop {
        /// Mark type.
        ty: i64,
        /// Value popped.
        value: i64,
    },
    /// A clock going backwards in the stream (the event is drawn at the previous clock).
    ClockBackwards {
        /// Offset of the event.
        offset: u64,
    },
    /// The stream holds no event.
    Empty,
}

impl std::fmt::Display for Flag {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Flag::Unfinished => f.write_str("unfinished stream (no ovni.finished)"),
            Flag::Truncated { offset } => {
                write!(f, "stream ends with an incomplete event at offset {offset}")
            }
            Flag::NotEnded { state } => {
                write!(f, "thread never ended (last state {})", state.name())
            }
            Flag::OpenMarks(m) => {
                f.write_str("marks left open:")?;
                for (ty, v) in m {
                    write!(f, " {ty}={v}")?;
                }
                Ok(())
            }
            Flag::BadPop { ty, value } => {
                write!(f, "pop of mark {ty}={value} not on top of its stack")
            }
            Flag::ClockBackwards { offset } => {
                write!(f, "clock goes backwards at offset {offset}")
            }
            Flag::Empty => f.write_str("no events"),
        }
    }
}

/// Time a mark value held: how often it was pushed or set, and how long it was on top of its
/// stack (or set).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Held {
    /// Pushes (or sets) of the value.
    pub count: u64,
    /// Nanoseconds on top.
    pub total_ns: u64,
}

/// One thread stream.
#[derive(Debug, Clone, Default)]
pub struct Thread {
    /// The stream's relpath in the trace.
    pub name: String,
    /// `ovni.loom` (empty when missing).
    pub loom: String,
    /// `ovni.pid` (0 when missing).
    pub pid: i64,
    /// `ovni.tid` (0 when missing).
    pub tid: i64,
    /// `ovni.rank`, if the stream has one.
    pub rank: Option<i64>,
    /// The rank the thread is shown under: its own, else that of its process's main thread
    /// (tid = pid), else the only rank its process's other threads set (threads an
    /// application starts after its main thread set the rank carry none of their own).
    pub process_rank: Option<i64>,
    /// Events read from the stream.
    pub events: u64,
    /// Clock of the first event.
    pub first: Option<u64>,
    /// Clock of the last event.
    pub last: Option<u64>,
    /// State intervals (value = [`State`] number), non-empty ones only.
    pub states: Vec<Span>,
    /// CPU intervals while active (value = the CPU's logical index, -1 = virtual CPU).
    pub cpus: Vec<Span>,
    /// Mark intervals, sorted by type, stack depth and start.
    pub marks: Vec<MarkSpan>,
    /// Time per state, by state number.
    pub state_ns: [u64; 6],
    /// Time per (mark type, value) on top of its stack or set.
    pub held: BTreeMap<(i64, i64), Held>,
    /// What the trace shows about how the thread ended.
    pub flags: Vec<Flag>,
}

impl Thread {
    /// Whether the thread's trace is from a crashed or inconsistent run.
    pub fn is_flagged(&self) -> bool {
        !self.flags.is_empty()
    }
}

/// A mark type as defined in the metadata (merged over all streams).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MarkType {
    /// `title`.
    pub title: String,
    /// `chan_type` is `"stack"`.
    pub stack: bool,
    /// Labels by value.
    pub labels: BTreeMap<i64, String>,
}

/// The whole trace as intervals.
#[derive(Debug, Clone, Default)]
pub struct Model {
    /// Threads, sorted by loom, pid, [`Thread::process_rank`] and tid (a rank's threads
    /// together).
    pub threads: Vec<Thread>,
    /// Mark types by type.
    pub mark_types: BTreeMap<i64, MarkType>,
    /// Events of every stream.
    pub events: u64,
    /// The first raw clock of the trace (0 without events).
    pub start: u64,
    /// The last raw clock of the trace (0 without events).
    pub end: u64,
}

impl Model {
    /// Builds the model of every stream of `trace`.
    pub fn build(trace: &Trace) -> Model {
        let mut model = Model::default();
        for stream in trace.streams() {
            model.add_types(stream.metadata());
            let thread = thread_of(stream);
            model.events += thread.events;
            model.threads.push(thread);
        }
        set_process_ranks(&mut model.threads);
        model.threads.sort_by(|a, b| {
            (&a.loom, a.pid, a.process_rank, a.tid, &a.name).cmp(&(
                &b.loom,
                b.pid,
                b.process_rank,
                b.tid,
                &b.name,
            ))
        });
        let firsts = model.threads.iter().filter_map(|t| t.first);
        let lasts = model.threads.iter().filter_map(|t| t.last);
        model.start = firsts.min().unwrap_or(0);
        model.end = lasts.max().unwrap_or(0).max(model.start);
        model
    }

    fn add_types(&mut self, meta: &StreamMeta) {
        let Some(marks) = ovni_meta(meta).and_then(|o| o.mark.as_ref()?.ok()) else {
            return;
        };
        for (ty, m) in &marks.types {
            let Some(m) = m.ok() else { continue };
            // The first definition wins (ovnilint reports conflicting ones).
            let entry = self.mark_types.entry(*ty).or_insert_with(|| MarkType {
                title: m
                    .title
                    .as_ref()
                    .and_then(Scalar::as_str)
                    .unwrap_or_default()
                    .to_owned(),
                stack: m.chan_type.as_ref().and_then(Scalar::as_str) == Some("stack"),
                labels: BTreeMap::new(),
            });
            if let Some(labels) = m.labels.as_ref().and_then(|l| l.ok()) {
                for (value, text) in labels.iter() {
                    entry.labels.entry(value).or_insert_with(|| text.to_owned());
                }
            }
        }
    }

    /// The label of a mark value, if the metadata has one.
    pub fn label(&self, ty: i64, value: i64) -> Option<&str> {
        Some(self.mark_types.get(&ty)?.labels.get(&value)?.as_str())
    }

    /// The first mark type with this title.
    pub fn type_titled(&self, title: &str) -> Option<i64> {
        self.mark_types
            .iter()
            .find(|(_, m)| m.title == title)
            .map(|(t, _)| *t)
    }

    /// Whether any thread is flagged.
    pub fn is_flagged(&self) -> bool {
        self.threads.iter().any(Thread::is_flagged)
    }
}

/// Sets [`Thread::process_rank`] of every thread.
fn set_process_ranks(threads: &mut [Thread]) {
    // Per (loom, pid): the main thread's rank, and the ranks of all its threads.
    type Ranks = (Option<i64>, std::collections::BTreeSet<i64>);
    let mut procs: BTreeMap<(String, i64), Ranks> = BTreeMap::new();
    for th in threads.iter() {
        let e = procs.entry((th.loom.clone(), th.pid)).or_default();
        if let Some(r) = th.rank {
            if th.tid == th.pid {
                e.0 = Some(r);
            }
            e.1.insert(r);
        }
    }
    for th in threads.iter_mut() {
        th.process_rank = th.rank.or_else(|| {
            let (main, all) = procs.get(&(th.loom.clone(), th.pid))?;
            main.or_else(|| (all.len() == 1).then(|| all.first().copied()).flatten())
        });
    }
}

fn ovni_meta(meta: &StreamMeta) -> Option<&ovni::read::meta::OvniMeta> {
    meta.ovni.as_ref()?.ok()
}

fn int_key(v: Option<&Scalar>) -> Option<i64> {
    v?.as_int()
}

/// Per mark type: the stack (single types use one slot) with each entry's push clock.
#[derive(Default)]
struct MarkStack {
    /// (value, since) of each open entry, bottom first.
    open: Vec<(i64, u64)>,
    /// When the top last changed.
    top_since: u64,
    /// Used with `OM=`: a value still set at the end is normal, not an open mark.
    single: bool,
}

struct Walker {
    th: Thread,
    state: State,
    state_since: u64,
    cpu: Option<i64>,
    cpu_since: u64,
    stacks: BTreeMap<i64, MarkStack>,
    clock: u64,
}

impl Walker {
    fn set_state(&mut self, s: State) {
        if s == self.state {
            return;
        }
        if is_active(self.state) != is_active(s) {
            self.close_cpu();
        }
        self.close_state();
        self.state = s;
    }

    fn close_state(&mut self) {
        let dur = self.clock - self.state_since;
        self.th.state_ns[self.state as usize] += dur;
        if dur > 0 {
            self.th.states.push(Span {
                t0: self.state_since,
                t1: self.clock,
                value: self.state as i64,
            });
        }
        self.state_since = self.clock;
    }

    /// Ends the CPU interval being built; it counts while the thread is active.
    fn close_cpu(&mut self) {
        if let Some(cpu) = self.cpu {
            if self.clock > self.cpu_since && is_active(self.state) {
                self.th.cpus.push(Span {
                    t0: self.cpu_since,
                    t1: self.clock,
                    value: cpu,
                });
            }
        }
        self.cpu_since = self.clock;
    }

    fn set_cpu(&mut self, cpu: Option<i64>) {
        if cpu == self.cpu {
            return;
        }
        self.close_cpu();
        self.cpu = cpu;
    }

    /// Adds the time since the top of `ty` last changed to the current top.
    fn account_top(&mut self, ty: i64) {
        let clock = self.clock;
        let st = self.stacks.entry(ty).or_default();
        if let Some(&(value, _)) = st.open.last() {
            self.th.held.entry((ty, value)).or_default().total_ns += clock - st.top_since;
        }
        st.top_since = clock;
    }

    fn push(&mut self, ty: i64, value: i64) {
        self.account_top(ty);
        self.th.held.entry((ty, value)).or_default().count += 1;
        let clock = self.clock;
        self.stacks.entry(ty).or_default().open.push((value, clock));
    }

    fn pop(&mut self, ty: i64, value: i64) {
        let found = self
            .stacks
            .get(&ty)
            .and_then(|s| s.open.iter().rposition(|&(v, _)| v == value));
        let Some(pos) = found else {
            self.th.flags.push(Flag::BadPop { ty, value });
            return;
        };
        self.account_top(ty);
        let clock = self.clock;
        let Some(st) = self.stacks.get_mut(&ty) else {
            return;
        };
        if pos + 1 != st.open.len() {
            self.th.flags.push(Flag::BadPop { ty, value });
        }
        // Everything above the popped entry ends with it.
        while st.open.len() > pos {
            let Some((v, since)) = st.open.pop() else {
                break;
            };
            self.th.marks.push(MarkSpan {
                ty,
                depth: st.open.len() as u32,
                span: Span {
                    t0: since,
                    t1: clock,
                    value: v,
                },
                open: false,
            });
        }
    }

    fn set(&mut self, ty: i64, value: i64) {
        self.account_top(ty);
        let clock = self.clock;
        let st = self.stacks.entry(ty).or_default();
        if let Some((v, since)) = st.open.pop() {
            self.th.marks.push(MarkSpan {
                ty,
                depth: 0,
                span: Span {
                    t0: since,
                    t1: clock,
                    value: v,
                },
                open: false,
            });
        }
        st.open.clear();
        st.single = true;
        // Setting 0 clears a single mark (ovniemu refuses value 0; the page shows nothing).
        if value != 0 {
            st.open.push((value, clock));
            self.th.held.entry((ty, value)).or_default().count += 1;
        }
    }

    fn event(&mut self, mcv: &[u8; 3], payload: &[u8]) {
        match mcv {
            b"OHx" => {
                self.set_state(State::Running);
                self.set_cpu(Some(i64::from(le_i32(payload, 0).unwrap_or(-1))));
            }
            b"OHe" => {
                self.set_state(State::Dead);
                self.set_cpu(None);
            }
            b"OHp" => self.set_state(State::Paused),
            b"OHr" => self.set_state(State::Running),
            b"OHc" => self.set_state(State::Cooling),
            b"OHw" => self.set_state(State::Warming),
            b"OAs" => {
                if let Some(cpu) = le_i32(payload, 0) {
                    self.set_cpu(Some(cpu.into()));
                }
            }
            b"OM[" | b"OM]" | b"OM=" => {
                let (Some(value), Some(ty)) = (le_i64(payload, 0), le_i32(payload, 8)) else {
                    return;
                };
                let ty = i64::from(ty);
                match mcv[2] {
                    b'[' => self.push(ty, value),
                    b']' => self.pop(ty, value),
                    _ => self.set(ty, value),
                }
            }
            _ => {}
        }
    }

    fn finish(mut self) -> Thread {
        self.close_state();
        self.close_cpu();
        let clock = self.clock;
        let mut open = Vec::new();
        let types: Vec<i64> = self.stacks.keys().copied().collect();
        for ty in types {
            self.account_top(ty);
            let Some(st) = self.stacks.get_mut(&ty) else {
                continue;
            };
            for (depth, &(v, since)) in st.open.iter().enumerate() {
                if !st.single {
                    open.push((ty, v));
                }
                self.th.marks.push(MarkSpan {
                    ty,
                    depth: depth as u32,
                    span: Span {
                        t0: since,
                        t1: clock,
                        value: v,
                    },
                    open: !st.single,
                });
            }
        }
        if self.th.events > 0 && self.state != State::Dead {
            self.th.flags.push(Flag::NotEnded { state: self.state });
        }
        if !open.is_empty() {
            self.th.flags.push(Flag::OpenMarks(open));
        }
        self.th.marks.sort_by_key(|m| (m.ty, m.depth, m.span.t0));
        self.th
    }
}

fn is_active(s: State) -> bool {
    matches!(s, State::Running | State::Cooling | State::Warming)
}

fn le_i32(p: &[u8], at: usize) -> Option<i32> {
    let b: [u8; 4] = p.get(at..at + 4)?.try_into().ok()?;
    Some(i32::from_le_bytes(b))
}

fn le_i64(p: &[u8], at: usize) -> Option<i64> {
    let b: [u8; 8] = p.get(at..at + 8)?.try_into().ok()?;
    Some(i64::from_le_bytes(b))
}

/// Walks one stream into a thread.
fn thread_of(stream: &Stream) -> Thread {
    let meta = ovni_meta(stream.metadata());
    let mut th = Thread {
        name: stream.name(),
        ..Thread::default()
    };
    if let Some(o) = meta {
        th.loom = o
            .loom
            .as_ref()
            .and_then(Scalar::as_str)
            .unwrap_or_default()
            .to_owned();
        th.pid = int_key(o.pid.as_ref()).unwrap_or(0);
        th.tid = int_key(o.tid.as_ref()).unwrap_or(0);
        th.rank = int_key(o.rank.as_ref());
    }
    if meta.and_then(|o| int_key(o.finished.as_ref())) != Some(1) {
        th.flags.push(Flag::Unfinished);
    }
    let mut w = Walker {
        th,
        state: State::Unknown,
        state_since: 0,
        cpu: None,
        cpu_since: 0,
        stacks: BTreeMap::new(),
        clock: 0,
    };
    for item in stream.events() {
        let (offset, ev) = match item {
            Ok(x) => x,
            Err(ovni::Error::Stream { offset, .. }) => {
                w.th.flags.push(Flag::Truncated { offset });
                break;
            }
            Err(_) => break,
        };
        let mut clock = ev.clock;
        match w.th.first {
            None => {
                w.th.first = Some(clock);
                w.state_since = clock;
                w.cpu_since = clock;
            }
            Some(_) if clock < w.clock => {
                if !w
                    .th
                    .flags
                    .iter()
                    .any(|f| matches!(f, Flag::ClockBackwards { .. }))
                {
                    w.th.flags.push(Flag::ClockBackwards { offset });
                }
                clock = w.clock;
            }
            Some(_) => {}
        }
        w.clock = clock;
        w.th.events += 1;
        w.event(&ev.mcv.0, ev.payload);
    }
    w.th.last = w.th.first.map(|_| w.clock);
    if w.th.events == 0 {
        w.th.flags.push(Flag::Empty);
    }
    w.finish()
}
