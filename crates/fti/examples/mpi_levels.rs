//! One rank of a multi-rank checkpoint run over MPI, for the mpirun tests (`tests/mpi.rs`)
//! and as an example of the MPI API. Start it with `mpirun -np N`:
//!
//! * `mpi_levels write ROOT LEVEL GROUP_SIZE`: checkpoint 1 at L1, then checkpoint 2 at LEVEL
//!   (1, 2 or 4), of the level vectors' dataset (`tests/util/dataset.rs`), under `ROOT/run`;
//! * `mpi_levels recover ROOT GROUP_SIZE [EXEC_ID]`: restart, recover and check every element;
//!   each rank prints `RECOVERED <rank> <id> <level> <how>`.
//!
//! * `mpi_levels async ROOT GROUP_SIZE`: asynchronous checkpoints 1, 2, 3, ... at L1, L2, L3,
//!   L4, L1, ... until killed, of data only checkpoint k has; every rank prints `PID <pid>` on
//!   stderr first, and rank 0 prints `COMPLETE <k-1>` when call k returns (it waited for
//!   checkpoint k-1, published by every rank then). `recover` with `ASYNC=1` checks that data.
//!   With `THREADING=single`, MPI is initialised without `MPI_THREAD_MULTIPLE`.
//!
//! With `STOP_RANK=r` and `STOP_AT=<step>[:n]` in the environment, rank r stops at that step
//! of the runtime (it prints `PID <pid>` first), for tests that kill it there. With
//! `BACKGROUND=1`, post-processing runs in the background thread (`inline_l2 = 0`,
//! `inline_l4 = 0`; MPI is initialised with `MPI_THREAD_MULTIPLE`).

#[path = "../tests/util/dataset.rs"]
mod dataset;

use std::path::Path;
use std::process::ExitCode;

use fti::comm::mpi::MpiComm;
use fti::{Config, Fti, Level, Status, Var};

fn config(root: &Path, group_size: u32) -> Config {
    let background = std::env::var("BACKGROUND").is_ok_and(|v| v == "1");
    Config {
        inline_l2: !background,
        inline_l4: !background,
        ckpt_dir: root.join("run/Local"),
        glbl_dir: root.join("run/Global"),
        meta_dir: root.join("run/Meta"),
        group_size,
        node_size: 1,
        local_test: true,
        verbosity: 3,
        ..Config::default()
    }
}

fn main() -> ExitCode {
    use fti::comm::mpi::rsmpi;
    let threading = if std::env::var("THREADING").is_ok_and(|t| t == "single") {
        rsmpi::Threading::Single
    } else {
        rsmpi::Threading::Multiple
    };
    let Some((universe, _)) = rsmpi::initialize_with_threading(threading) else {
        eprintln!("MPI could not be initialised");
        return ExitCode::FAILURE;
    };
    let args: Vec<String> = std::env::args().collect();
    let comm = MpiComm::new(&universe.world());
    let rank = fti::Comm::rank(&comm);
    if std::env::var("STOP_RANK").is_ok_and(|r| r == rank.to_string()) {
        if let Ok(step) = std::env::var("STOP_AT") {
            // Read by the runtime at its first crash point, after this.
            std::env::set_var("FTI_STOP_AT", step);
            eprintln!("PID {}", std::process::id());
        }
    }
    let result = match args.get(1).map(String::as_str) {
        Some("write") if args.len() == 5 => write(&args, comm, rank),
        Some("recover") if args.len() >= 4 => recover(&args, comm, rank),
        Some("async") if args.len() == 4 => write_async(&args, comm, rank),
        _ => Err(
            "usage: mpi_levels write ROOT LEVEL GROUP | recover ROOT GROUP [EXEC] | async ROOT GROUP"
                .into(),
        ),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // One write, so that the ranks' lines never interleave.
            let line = format!("rank {rank}: {e}\n");
            let _ = std::io::Write::write_all(&mut std::io::stderr(), line.as_bytes());
            ExitCode::FAILURE
        }
    }
}

type Res = Result<(), Box<dyn std::error::Error>>;

fn write(args: &[String], comm: MpiComm, rank: u32) -> Res {
    let level = Level::from_number(args[3].parse()?).ok_or("level must be 1..4")?;
    let mut fti = Fti::init_with(
        config(Path::new(&args[2]), args[4].parse()?),
        Box::new(comm),
    )?;
    for (ckpt, level) in [(1, Level::L1), (2, level)] {
        let mut data = dataset::data(ckpt, rank);
        let vars: Vec<Var> = data.iter_mut().map(|(id, v)| Var::slice(*id, v)).collect();
        fti.checkpoint(ckpt, level, &vars)?;
    }
    if rank == 0 {
        println!("EXEC {}", fti.exec_id());
        let how = if fti.background_post_processing() {
            "background"
        } else {
            "inline"
        };
        println!("POST {how}");
    }
    fti.wait()?;
    Ok(())
}

/// The data of asynchronous checkpoint `k` on `rank` (256 KiB and a few more): no other
/// checkpoint has the same.
fn async_data(k: i32, rank: u32) -> Vec<(i32, Vec<i32>)> {
    let ints = |seed: i32, n: usize| -> Vec<i32> {
        (0..n as i32)
            .map(|j| seed.wrapping_mul(1_000_003) ^ j.wrapping_add(rank as i32 * 100_000_000))
            .collect()
    };
    vec![(1, ints(k, 1 << 16)), (2, ints(-k, 1000 + rank as usize))]
}

fn write_async(args: &[String], comm: MpiComm, rank: u32) -> Res {
    // One write, so that the ranks' lines never interleave.
    let line = format!("PID {}\n", std::process::id());
    std::io::Write::write_all(&mut std::io::stderr(), line.as_bytes())?;
    let cfg = Config {
        async_ckpt: true,
        ..config(Path::new(&args[2]), args[3].parse()?)
    };
    let mut fti = Fti::init_with(cfg, Box::new(comm))?;
    for k in 1.. {
        let level = Level::ALL[(k as usize - 1) % 4];
        let mut data = async_data(k, rank);
        let vars: Vec<Var> = data.iter_mut().map(|(id, v)| Var::slice(*id, v)).collect();
        fti.checkpoint(k, level, &vars)?;
        if rank == 0 {
            println!("COMPLETE {}", k - 1);
            std::io::Write::flush(&mut std::io::stdout())?;
        }
    }
    Ok(())
}

fn recover(args: &[String], comm: MpiComm, rank: u32) -> Res {
    let mut cfg = config(Path::new(&args[2]), args[3].parse()?);
    if let Some(exec) = args.get(4) {
        cfg.failure = Some(1);
        cfg.exec_id = Some(exec.clone());
    }
    let mut fti = Fti::init_with(cfg, Box::new(comm))?;
    let Status::Restart(info) = fti.status().clone() else {
        println!("RECOVERED {rank} none");
        return Ok(());
    };
    let want = if std::env::var("ASYNC").is_ok_and(|v| v == "1") {
        async_data(info.id, rank)
    } else {
        dataset::data(info.id, rank)
    };
    let mut got: Vec<(i32, Vec<i32>)> =
        want.iter().map(|(id, v)| (*id, vec![0; v.len()])).collect();
    let mut vars: Vec<Var> = got.iter_mut().map(|(id, v)| Var::slice(*id, v)).collect();
    fti.recover(&mut vars)?;
    drop(vars);
    if got != want {
        return Err(format!("checkpoint {}: recovered data differ", info.id).into());
    }
    println!(
        "RECOVERED {rank} {} {} {}",
        info.id,
        info.level,
        fti.recovery_note().unwrap_or("")
    );
    Ok(())
}
