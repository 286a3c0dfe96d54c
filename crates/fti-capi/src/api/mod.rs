//! The session (FTI_Init to FTI_Finalize) and every function that needs it.
//!
//! Return codes follow FTI 1.1: `FTI_SCES`, `FTI_NSCS` (not initialised, invalid argument,
//! failure), `FTI_NREC` (recovery impossible), `FTI_DONE` (a checkpoint was taken).

use std::ffi::{c_char, c_int, c_long, c_void, CStr, OsStr};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::{Mutex, MutexGuard, PoisonError};

use mpi::ffi::{self, MPI_Comm};

use fti::{Config, Fti, Level, Status};

use crate::comm::{self, Comms};
use crate::data::{with_vars, Dataset};
use crate::injection::Injection;
use crate::snapshot::Clock;
use crate::types::{self, group_exists, FtiType, H5Group, FTI_BUFS};
use crate::{message, Failure, FTI_DONE, FTI_NREC, FTI_NSCS, FTI_SCES};

mod recovery;

/// A failed call: its return code and why.
struct Fail {
    code: c_int,
    failure: Failure,
}

impl Fail {
    fn nrec(failure: Failure) -> Fail {
        Fail {
            code: FTI_NREC,
            failure,
        }
    }
}

impl From<Failure> for Fail {
    fn from(failure: Failure) -> Fail {
        Fail {
            code: FTI_NSCS,
            failure,
        }
    }
}

type Outcome = Result<c_int, Fail>;

/// Prints a failure as FTI would and returns the call's code.
fn report(outcome: Outcome) -> c_int {
    outcome.unwrap_or_else(|fail| {
        fail.failure.print();
        fail.code
    })
}

fn refused(what: impl Into<String>) -> Fail {
    Failure::Refused(what.into()).into()
}

fn runtime(doing: &'static str) -> impl FnOnce(fti::Error) -> Failure {
    move |err| Failure::Runtime {
        doing,
        err: Box::new(err),
    }
}

/// FTI_InitICP's state.
enum Icp {
    /// No incremental checkpoint (or `activate` was false): the ICP calls do nothing.
    Inactive,
    /// FTI_InitICP failed: FTI_AddVarICP and FTI_FinalizeICP fail until the next FTI_InitICP.
    Failed,
    /// Open; the ids written so far.
    Open(Vec<c_int>),
}

/// Everything between FTI_Init and FTI_Finalize.
struct Session {
    fti: Fti,
    comms: Comms,
    /// Protected datasets in protect order.
    datasets: Vec<Dataset>,
    /// FTI_Status(): 0, or 1 / 2 (the config's `failure`) until the restart is recovered.
    reco: c_int,
    /// A restart was requested but nothing could be recovered (FTI_Init returned FTI_NREC);
    /// cleared by the next checkpoint.
    lost_restart: bool,
    /// Between FTI_RecoverVarInit and FTI_RecoverVarFinalize.
    recover_var_open: bool,
    icp: Icp,
    clock: Clock,
    /// Id of FTI_Snapshot's next checkpoint.
    snapshot_id: c_int,
    injection: Injection,
}

/// The session in its lock.
struct Shared(Session);

// SAFETY: the session holds the application's buffer pointers and MPI handles, neither tied to
// a thread. The mutex serialises every access; which threads may call MPI (and so FTI) is the
// application's choice of MPI threading level, as with FTI.
unsafe impl Send for Shared {}

static SESSION: Mutex<Option<Shared>> = Mutex::new(None);

fn lock() -> MutexGuard<'static, Option<Shared>> {
    SESSION.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Runs `f` on the session, or fails with "not initialized".
fn with_session(f: impl FnOnce(&mut Session) -> Outcome) -> Outcome {
    match lock().as_mut() {
        Some(Shared(session)) => f(session),
        None => Err(Failure::NotInitialized.into()),
    }
}

/// `int FTI_Init(char* configFile, MPI_Comm globalComm)`: reads the config, sets up
/// `FTI_COMM_WORLD` and the predefined types and, when the config records a restart, finds the
/// checkpoint to recover. Collective over `globalComm`. `FTI_NREC` when a restart was
/// requested but nothing could be recovered (the run then starts fresh).
///
/// # Safety
/// `config_file` is NULL or a C string; MPI is initialised and `global_comm` is a live
/// communicator.
#[no_mangle]
pub unsafe extern "C" fn FTI_Init(config_file: *mut c_char, global_comm: MPI_Comm) -> c_int {
    let mut guard = lock();
    if guard.take().is_some() {
        message::info("FTI_Init called again without FTI_Finalize: the previous session ends, its checkpoints stay");
    }
    // SAFETY: the caller's contract.
    let path = (!config_file.is_null()).then(|| unsafe { CStr::from_ptr(config_file) });
    let outcome = match path {
        None => Err(refused("FTI_Init: the configuration file name is NULL")),
        Some(p) => {
            init(Path::new(OsStr::from_bytes(p.to_bytes())), global_comm).map(|(session, code)| {
                *guard = Some(Shared(session));
                code
            })
        }
    };
    report(outcome)
}

/// At a normal `exit()`, an asynchronous checkpoint still in flight is completed (while MPI
/// can still be used: a program that finalised MPI first keeps its previous checkpoint).
extern "C" fn complete_at_exit() {
    if !comm::mpi_usable() {
        return;
    }
    if let Some(Shared(s)) = lock().as_mut() {
        if let Err(e) = s.fti.wait() {
            message::error(&format!("completing the last checkpoint at exit: {e}"));
        }
    }
}

/// Registers [`complete_at_exit`] once per process.
fn complete_checkpoints_at_exit() {
    static REGISTERED: std::sync::Once = std::sync::Once::new();
    REGISTERED.call_once(|| {
        // SAFETY: registers a function without arguments that only takes the session lock
        // (never held when the program exits normally).
        unsafe {
            libc::atexit(complete_at_exit);
        }
    });
}

fn init(path: &Path, global: MPI_Comm) -> Result<(Session, c_int), Fail> {
    let (comms, runtime_comm) = comm::setup(global)?;
    message::configure(1, comms.rank);
    let loaded = load_config(path);
    // A rank that cannot use the config must not leave the others waiting in the runtime's
    // collective start.
    if !comms.all(loaded.is_ok()) {
        return Err(match loaded {
            Err(f) => f.into(),
            Ok(_) => refused("another rank could not load the configuration"),
        });
    }
    let cfg = loaded?;
    let ini = cfg.keys.clone();
    message::configure(cfg.verbosity, comms.rank);
    types::init_predefined();
    let failure = cfg.failure.unwrap_or(0);
    let intervals = cfg.intervals;
    let (heads, verbosity) = (cfg.head, cfg.verbosity);
    // An application tracing this thread with its own libovni gets the runtime's marks in
    // its stream (with `trace = 1` or `app`).
    // With heads, FTI's own messages between application ranks and heads on `global`.
    let tag = ini.int("advanced", "mpi_tag").unwrap_or(2612);
    let fti_messages = heads.then(|| {
        std::rc::Rc::new(comm::FtiWire::new(global, tag)) as std::rc::Rc<dyn fti::FtiMessages>
    });
    let options = fti::Options {
        app_ovni: crate::app_ovni::detect().map(|a| Box::new(a) as Box<dyn fti::AppOvni>),
        reporter: std::sync::Arc::new(message::Console::default()),
        fti_messages,
        ..Default::default()
    };
    let fti = Fti::init_with_options(cfg, Box::new(runtime_comm), options)
        .map_err(runtime("FTI_Init"))?;
    let mut comms = comms;
    if heads {
        let application = fti.role() == fti::Role::Application;
        if !comms.keep_application_ranks(application)? {
            serve_and_exit(fti);
        }
        message::configure(verbosity, comms.rank);
    }
    complete_checkpoints_at_exit();
    let (reco, snapshot_id) = match fti.status() {
        Status::Restart(info) => (if failure == 2 { 2 } else { 1 }, info.id.saturating_add(1)),
        _ => (0, 1),
    };
    let lost_restart = failure != 0 && reco == 0;
    let now = comm::now();
    let session = Session {
        fti,
        datasets: Vec::new(),
        reco,
        lost_restart,
        recover_var_open: false,
        icp: Icp::Inactive,
        clock: Clock::new(
            &intervals,
            ini.int("basic", "max_sync_intv").unwrap_or(0),
            now,
        ),
        snapshot_id,
        injection: Injection::new(&ini, now),
        comms,
    };
    if lost_restart {
        message::warn(
            "a restart was requested but no checkpoint could be recovered: the run starts fresh",
        );
        return Ok((session, FTI_NREC));
    }
    Ok((session, FTI_SCES))
}

/// What `FTI_Init` does on a head, as FTI 1.1's: serves its node until the application
/// finalizes (or sends FTI's end-of-work message), then `MPI_Finalize` and `exit(0)`;
/// never returns to the application's code.
fn serve_and_exit(fti: Fti) -> ! {
    let code = match fti.serve_as_head() {
        Ok(()) => 0,
        Err(e) => {
            message::error(&format!("FTI head: {e}"));
            1
        }
    };
    // SAFETY: MPI is initialised (FTI_Init checked it) and this process makes no MPI call
    // after this one.
    unsafe {
        ffi::MPI_Finalize();
    }
    std::process::exit(code)
}

/// The runtime's config, with every key of the file (`Config::keys`: the C API also reads
/// `max_sync_intv` and `[injection]`), read once by the runtime's parser.
fn load_config(path: &Path) -> Result<Config, Failure> {
    let mut cfg = Config::from_file(path).map_err(runtime("reading the configuration"))?;
    // The runtime says these keys have no effect; through this API they do (FTI_Snapshot's
    // synchronisation and FTI_BitFlip).
    cfg.warnings
        .retain(|w| !w.contains("max_sync_intv") && !w.contains("[injection]"));
    if cfg.keys.get("basic", "ckpt_io").is_none() {
        message::warn(&format!(
            "{}: no [basic] ckpt_io: FTI 1.1 would write POSIX files; this library writes FTI-FF (ckpt_io = 3); set ckpt_io = 1 for FTI's POSIX files",
            path.display()
        ));
    }
    Ok(cfg)
}

/// `int FTI_Status()`: 0 on a normal run, 1 on a restart (2: from the checkpoint kept by
/// `keep_last_ckpt`) until it is recovered.
#[no_mangle]
pub extern "C" fn FTI_Status() -> c_int {
    lock().as_ref().map_or(0, |Shared(s)| s.reco)
}

/// `int FTI_Protect(int id, void* ptr, long count, FTIT_type type)`: protects `count` elements
/// of `type` at `ptr` as dataset `id`, or updates dataset `id` (after a resize). Order matters:
/// files and recovery match datasets by protect order.
///
/// # Safety
/// Until it is protected again or FTI_Finalize, `ptr` stays valid for reads and writes of
/// `count * type.size` bytes during every FTI call.
#[no_mangle]
pub unsafe extern "C" fn FTI_Protect(
    id: c_int,
    ptr: *mut c_void,
    count: c_long,
    ty: FtiType,
) -> c_int {
    report(with_session(|s| s.protect(id, ptr, count, ty)))
}

/// `int FTI_DefineDataset(int id, int rank, int* dimLength, char* name, FTIT_H5Group*)`:
/// describes a protected dataset for HDF5 (recorded; FTI-FF files do not store it).
///
/// # Safety
/// `dim_length` is NULL or holds `rank` ints; `name` is NULL or a C string; `h5group` is NULL
/// or valid.
#[no_mangle]
pub unsafe extern "C" fn FTI_DefineDataset(
    id: c_int,
    rank: c_int,
    dim_length: *mut c_int,
    name: *mut c_char,
    h5group: *mut H5Group,
) -> c_int {
    report(with_session(|s| {
        // SAFETY: the caller's contract.
        unsafe { s.define_dataset(id, rank, dim_length, name, h5group) }
    }))
}

/// `long FTI_GetStoredSize(int id)`: bytes of dataset `id` in the newest checkpoint (this
/// run's last one, or the one a restart recovers); 0 if unknown.
#[no_mangle]
pub extern "C" fn FTI_GetStoredSize(id: c_int) -> c_long {
    match lock().as_ref() {
        Some(Shared(s)) => stored_size(&s.fti, id) as c_long,
        None => {
            message::warn("FTI is not initialized.");
            0
        }
    }
}

fn stored_size(fti: &Fti, id: c_int) -> u64 {
    fti.stored_size(id).unwrap_or(0)
}

/// `void* FTI_Realloc(int id, void* ptr)`: on a restart, resizes `ptr` (with `realloc`) to the
/// stored size of dataset `id`, updates the dataset and returns the new pointer (NULL if the
/// allocation fails). Otherwise returns `ptr` unchanged.
///
/// # Safety
/// `ptr` is NULL or was returned by `malloc`/`realloc` and not freed.
#[no_mangle]
pub unsafe extern "C" fn FTI_Realloc(id: c_int, ptr: *mut c_void) -> *mut c_void {
    let mut guard = lock();
    let Some(Shared(s)) = guard.as_mut() else {
        message::warn("FTI is not initialized.");
        return ptr;
    };
    // SAFETY: the caller's contract.
    unsafe { s.realloc(id, ptr) }
}

/// `int FTI_BitFlip(int datasetID)`: injects the `[injection]` bit flip into the dataset at
/// protect position `datasetID` when one is due; `FTI_SCES` when it flipped.
///
/// # Safety
/// The protected buffers are valid (FTI_Protect's contract).
#[no_mangle]
pub unsafe extern "C" fn FTI_BitFlip(dataset_id: c_int) -> c_int {
    let mut guard = lock();
    let Some(Shared(s)) = guard.as_mut() else {
        return FTI_NSCS;
    };
    // SAFETY: the caller's contract.
    let flipped = unsafe {
        s.injection
            .flip(s.comms.rank, &s.datasets, dataset_id, comm::now())
    };
    if flipped {
        FTI_SCES
    } else {
        FTI_NSCS
    }
}

/// `int FTI_Checkpoint(int id, int level)`: checkpoints every protected dataset as checkpoint
/// `id` at `level` 1-4. Collective. `FTI_DONE` on success.
///
/// # Safety
/// The protected buffers are valid (FTI_Protect's contract).
#[no_mangle]
pub unsafe extern "C" fn FTI_Checkpoint(id: c_int, level: c_int) -> c_int {
    // SAFETY: the caller's contract.
    report(with_session(|s| unsafe { s.checkpoint(id, level) }))
}

/// `int FTI_Recover()`: copies the restart's checkpoint into the protected datasets (which
/// must match it: same count, ids, order and sizes) and ends the restart. In a run that is not
/// a restart, goes back to this run's last checkpoint. `FTI_NREC` when that is impossible.
///
/// # Safety
/// The protected buffers are valid (FTI_Protect's contract).
#[no_mangle]
pub unsafe extern "C" fn FTI_Recover() -> c_int {
    // SAFETY: the caller's contract.
    report(with_session(|s| unsafe { s.recover() }))
}

/// `int FTI_RecoverVar(int id)`: on a restart, copies dataset `id` from the checkpoint; the
/// restart flag stays. A no-op on a normal run.
///
/// # Safety
/// The protected buffers are valid (FTI_Protect's contract).
#[no_mangle]
pub unsafe extern "C" fn FTI_RecoverVar(id: c_int) -> c_int {
    // SAFETY: the caller's contract.
    report(with_session(|s| unsafe { s.recover_var(id) }))
}

/// `int FTI_RecoverVarInit()`: opens a sequence of FTI_RecoverVar calls (FTI 1.4).
#[no_mangle]
pub extern "C" fn FTI_RecoverVarInit() -> c_int {
    report(with_session(|s| {
        if s.reco != 0 {
            if s.lost_restart {
                return Err(refused("No checkpoint files to make recovery."));
            }
            s.recover_var_open = true;
        }
        Ok(FTI_SCES)
    }))
}

/// `int FTI_RecoverVarFinalize()`: closes the sequence opened by FTI_RecoverVarInit. The
/// restart flag stays set, as in FTI.
#[no_mangle]
pub extern "C" fn FTI_RecoverVarFinalize() -> c_int {
    report(with_session(|s| {
        if s.reco != 0 && !std::mem::replace(&mut s.recover_var_open, false) {
            return Err(refused("FTI_RecoverVarFinalize without FTI_RecoverVarInit"));
        }
        Ok(FTI_SCES)
    }))
}

/// `int FTI_Snapshot()`: called once per iteration on every rank. On a restart, recovers
/// (FTI_Recover's result); otherwise checkpoints when a level's interval has passed, by FTI
/// 1.1's clock: `FTI_DONE` when it did, `FTI_SCES` when nothing was due.
///
/// # Safety
/// The protected buffers are valid (FTI_Protect's contract).
#[no_mangle]
pub unsafe extern "C" fn FTI_Snapshot() -> c_int {
    // SAFETY: the caller's contract.
    report(with_session(|s| unsafe { s.snapshot() }))
}

/// `int FTI_InitICP(int id, int level, bool activate)`: opens incremental checkpoint `id` at
/// `level` (FTI 1.2). With `activate` false it does nothing, even before FTI_Init, as in FTI,
/// and the ICP calls that follow do nothing either unless one is open.
#[no_mangle]
pub extern "C" fn FTI_InitICP(id: c_int, level: c_int, activate: bool) -> c_int {
    if !activate {
        return FTI_SCES;
    }
    report(with_session(|s| s.init_icp(id, level)))
}

/// `int FTI_AddVarICP(int varID)`: writes protected dataset `varID` into the open incremental
/// checkpoint, once.
///
/// # Safety
/// The dataset's buffer is valid (FTI_Protect's contract).
#[no_mangle]
pub unsafe extern "C" fn FTI_AddVarICP(var_id: c_int) -> c_int {
    // SAFETY: the caller's contract.
    report(with_session(|s| unsafe { s.add_var_icp(var_id) }))
}

/// `int FTI_FinalizeICP()`: completes the incremental checkpoint (every protected dataset must
/// have been added) and publishes it. Collective.
#[no_mangle]
pub extern "C" fn FTI_FinalizeICP() -> c_int {
    report(with_session(Session::finalize_icp))
}

/// `int FTI_Finalize()`: ends the session. Without `keep_last_ckpt` every checkpoint file is
/// removed and the config records `failure = 0`; with it the last checkpoint is kept in L4
/// and the config records `failure = 2`. Collective; does not finalize MPI.
#[no_mangle]
pub extern "C" fn FTI_Finalize() -> c_int {
    let Some(Shared(session)) = lock().take() else {
        return report(Err(Failure::NotInitialized.into()));
    };
    let Session { fti, comms, .. } = session;
    let finished = fti.finalize().map_err(runtime("FTI_Finalize"));
    comms.barrier();
    match finished {
        Ok(()) => FTI_SCES,
        Err(f) => report(Err(f.into())),
    }
}

impl Session {
    fn dataset(&self, id: c_int) -> Option<&Dataset> {
        self.datasets.iter().find(|d| d.id == id)
    }

    fn protect(&mut self, id: c_int, ptr: *mut c_void, count: c_long, ty: FtiType) -> Outcome {
        let size = u64::try_from(count)
            .ok()
            .zip(u64::try_from(ty.size).ok())
            .and_then(|(n, s)| n.checked_mul(s))
            .filter(|&b| isize::try_from(b).is_ok());
        if size.is_none() {
            return Err(refused(format!(
                "FTI_Protect({id}): {count} elements of {} bytes is not a size",
                ty.size
            )));
        }
        if let Some(d) = self.datasets.iter_mut().find(|d| d.id == id) {
            d.ptr = ptr;
            d.count = count;
            d.type_id = ty.id;
            d.elem_size = ty.size;
            message::debug(&format!(
                "Variable ID {id} reseted. Current ckpt. size per rank is {:.2}MB.",
                self.protected_mib()
            ));
            return Ok(FTI_SCES);
        }
        if self.datasets.len() >= FTI_BUFS {
            return Err(refused(format!(
                "Unable to register variable {id}: at most {FTI_BUFS} datasets can be protected"
            )));
        }
        self.datasets.push(Dataset {
            id,
            ptr,
            count,
            type_id: ty.id,
            elem_size: ty.size,
            rank: 1,
            dims: vec![c_int::try_from(count).unwrap_or(c_int::MAX)],
            name: format!("Dataset_{id}"),
            group: 0,
        });
        message::info(&format!(
            "Variable ID {id} to protect. Current ckpt. size per rank is {:.2}MB.",
            self.protected_mib()
        ));
        Ok(FTI_SCES)
    }

    /// The bytes protected, in MiB (FTI's "ckpt. size per rank").
    fn protected_mib(&self) -> f64 {
        let bytes: u64 = self.datasets.iter().map(|d| d.size() as u64).sum();
        bytes as f64 / (1024.0 * 1024.0)
    }

    /// # Safety
    /// As FTI_DefineDataset.
    unsafe fn define_dataset(
        &mut self,
        id: c_int,
        rank: c_int,
        dim_length: *const c_int,
        name: *const c_char,
        h5group: *const H5Group,
    ) -> Outcome {
        if rank > 0 && dim_length.is_null() {
            return Err(refused("If rank > 0, the dimLength cannot be NULL."));
        }
        if rank > 32 {
            return Err(refused("Maximum rank is 32."));
        }
        // SAFETY: the caller's contract.
        let group = unsafe { h5group.as_ref() }.map(|g| g.id);
        if let Some(g) = group.filter(|&g| !group_exists(g)) {
            return Err(refused(format!(
                "FTI_DefineDataset: group {g} is not registered"
            )));
        }
        let Some(d) = self.datasets.iter_mut().find(|d| d.id == id) else {
            return Err(refused(format!(
                "The dataset #{id} not initialized. Use FTI_Protect first."
            )));
        };
        if rank > 0 {
            // SAFETY: the caller's contract: `rank` ints.
            let dims = unsafe { std::slice::from_raw_parts(dim_length, rank as usize) };
            let elements = dims
                .iter()
                .try_fold(1i64, |n, &l| n.checked_mul(i64::from(l)));
            if elements != Some(d.count) {
                return Err(refused(format!(
                    "Trying to define datasize: number of elements {}, but the dataset count is {}.",
                    elements.map_or_else(|| "overflows".into(), |e| e.to_string()),
                    d.count
                )));
            }
            d.rank = rank;
            d.dims = dims.to_vec();
        }
        if let Some(g) = group {
            d.group = g;
        }
        if !name.is_null() {
            // SAFETY: the caller's contract.
            let n = unsafe { CStr::from_ptr(name) }.to_bytes();
            d.name = String::from_utf8_lossy(&n[..n.len().min(FTI_BUFS - 1)]).into_owned();
        }
        Ok(FTI_SCES)
    }

    /// # Safety
    /// As FTI_Realloc.
    unsafe fn realloc(&mut self, id: c_int, ptr: *mut c_void) -> *mut c_void {
        if self.reco == 0 {
            message::warn("FTI_Realloc: this is not a restart; the pointer is unchanged");
            return ptr;
        }
        let stored = stored_size(&self.fti, id);
        let Some(d) = self.datasets.iter_mut().find(|d| d.id == id) else {
            message::warn(&format!("FTI_Realloc: dataset {id} is not protected"));
            return ptr;
        };
        let Ok(bytes) = usize::try_from(stored) else {
            return ptr;
        };
        if bytes == 0 {
            return ptr;
        }
        extern "C" {
            fn realloc(ptr: *mut c_void, size: usize) -> *mut c_void;
        }
        // SAFETY: the caller's contract: `ptr` is NULL or from malloc/realloc.
        let new = unsafe { realloc(ptr, bytes) };
        if new.is_null() {
            message::error(&format!(
                "FTI_Realloc: cannot allocate {bytes} bytes for dataset {id}"
            ));
            return new;
        }
        d.ptr = new;
        if d.elem_size > 0 {
            d.count = (bytes / d.elem_size as usize) as i64;
        }
        new
    }

    /// # Safety
    /// The protected buffers are valid.
    unsafe fn checkpoint(&mut self, id: c_int, level: c_int) -> Outcome {
        let level = Level::from_number(level).ok_or_else(|| {
            refused(format!(
                "Level of checkpoint must be 1, 2, 3 or 4 (FTI_Checkpoint({id}, {level}))"
            ))
        })?;
        self.end_runtime_restart()?;
        let fti = &mut self.fti;
        // SAFETY: the caller's contract.
        unsafe {
            with_vars(&self.datasets, false, |vars| {
                fti.checkpoint(id, level, vars)
                    .map_err(runtime("FTI_Checkpoint"))
            })
        }?;
        self.lost_restart = false;
        Ok(FTI_DONE)
    }
}
