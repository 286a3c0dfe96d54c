//! The restart's schedule: the ranks agree on the checkpoint to restart from. Candidates
//! come newest first (by id, then L1, L2, L3, L4 as FTI tries them); for each, every rank runs
//! the same steps:
//!
//! 1. collect: the candidates any rank holds a file of (collective, once);
//! 2. verify own: this rank's file of the candidate (local);
//! 3. gather holdings: the redundancy file this rank keeps is verified (local; a lost or
//!    corrupt one is repaired), then what every rank holds is gathered (collective);
//! 4. plan: own files, a rebuild, or unrecoverable, a pure function of the holdings
//!    ([`crate::restart_plan::plan`]);
//! 5. execute: the level's rebuild (collective, the same on every rank since the plan is);
//! 6. agree: whether every rank has its file verified (collective).
//!
//! Local results (a file that does not verify, a rebuild that failed on this rank) travel as
//! data into the next collective step; no rank leaves the schedule early.

use crate::collective::{self, agree};
use crate::config::Level;
use crate::error::{Candidate, Error, Result, Skipped, Step};
use crate::files::{self, Dirs, Found};
use crate::level::{self, Rebuild};
use crate::report::Messages;
use crate::restart_plan::{self, Holds, Plan};
use crate::runtime::{open_verified, Restart};

use super::{fti_says, Team};

/// The checkpoint the ranks agreed to restart from.
pub(crate) struct Chosen {
    pub restart: Restart,
    pub id: i32,
    pub level: Level,
    /// How it was obtained, for the user: its level, and what was rebuilt.
    pub note: String,
}

/// What a search found, and why newer checkpoints were passed over (in the order found).
pub(crate) struct Searched {
    pub chosen: Option<Chosen>,
    pub skipped: Vec<Skipped>,
}

/// Runs the restart's schedule over every candidate (of id `wanted` only, when given) until
/// one is agreed. Collective.
pub(crate) fn search(team: Team<'_>, messages: &Messages, wanted: Option<i32>) -> Searched {
    let mut search = Search {
        team,
        messages,
        skipped: Vec::new(),
        copies_verified_in: std::time::Duration::ZERO,
    };
    let chosen = search.run(wanted);
    if !search.copies_verified_in.is_zero() {
        messages.info(&format!(
            "redundancy files (partner copies, RSed files) verified in {:.3} s",
            search.copies_verified_in.as_secs_f64()
        ));
    }
    Searched {
        chosen,
        skipped: search.skipped,
    }
}

/// What this rank holds on disk: its own checkpoint files, and the redundancy files it keeps
/// for others (L2 partner copies, L3 `RSed` files).
struct Holdings {
    own: Vec<Found>,
    copies: Vec<Found>,
}

impl Holdings {
    fn own_of(&self, id: i32, level: Level) -> impl Iterator<Item = &Found> {
        self.own
            .iter()
            .filter(move |f| f.id == id && f.level == level)
    }

    fn copy_of(&self, id: i32, level: Level) -> Option<&Found> {
        self.copies.iter().find(|c| c.id == id && c.level == level)
    }
}

/// What this rank found of one candidate, carried from step to step.
pub(crate) struct Local<'h> {
    /// Its own file, verified.
    pub verified: Option<Restart>,
    /// Its own file as found (verified or not).
    pub own: Option<&'h Found>,
    /// The redundancy file it keeps, as found.
    pub copy: Option<&'h Found>,
    /// Whether that redundancy file verified (or was not needed, and is there).
    pub copy_ok: bool,
    /// Whether this rank already said why its own file is unusable.
    said_why: bool,
}

struct Search<'a> {
    team: Team<'a>,
    messages: &'a Messages,
    skipped: Vec<Skipped>,
    /// Time spent verifying redundancy files (the cost of repairing them at restart).
    copies_verified_in: std::time::Duration,
}

impl Search<'_> {
    fn run(&mut self, wanted: Option<i32>) -> Option<Chosen> {
        let holdings = self.collect();
        let mine: Vec<(i32, Level)> = holdings
            .own
            .iter()
            .chain(&holdings.copies)
            .map(|f| (f.id, f.level))
            .filter(|(id, _)| wanted.is_none_or(|w| w == *id))
            .collect();
        let candidates = collective::candidates(self.team.comm, &mine);
        for &(id, level) in &candidates {
            let mut local = self.verify_own(&holdings, id, level);
            if local.own.is_none() {
                let dirs = self.team.dirs;
                let path = dirs.level_dir(level).join(dirs.file_name(id));
                fti_says::missing_file(self.messages, &dirs.io, &path);
            }
            // Every redundancy file is verified, so that a lost or corrupt one is repaired.
            let started = std::time::Instant::now();
            self.verify_copy(&mut local, id, level);
            self.copies_verified_in += started.elapsed();
            let plan = match self.plan(level, local.holds()) {
                Ok(plan) => plan,
                Err(holds) => {
                    self.report_missing(id, level, &holds, local.said_why);
                    continue;
                }
            };
            let note = note(level, &plan);
            let restart = self.execute(id, level, &plan, local);
            match agree(self.team.comm, Step::Recovery, restart) {
                Ok(restart) => {
                    return Some(Chosen {
                        restart,
                        id,
                        level,
                        note,
                    })
                }
                Err(e) => self.skip(Skipped::Failed {
                    id,
                    level,
                    err: Box::new(e),
                }),
            }
        }
        if candidates.is_empty() {
            let recorded = crate::io::mpiio::recorded(self.team.dirs);
            let lost = recorded.filter(|p| self.team.dirs.storage.stat(p).is_err());
            if let Some(path) = lost {
                fti_says::unable_to_access(self.messages, &path);
            }
        }
        fti_says::nothing_recovered(self.messages);
        None
    }

    /// Step 1 (collective, then local): rank 0 lists the global directory, which holds every
    /// rank's L4 files, and every rank learns which checkpoints are there; then this rank's
    /// files; paths that are not regular files are reported.
    fn collect(&mut self) -> Holdings {
        let (comm, dirs) = (self.team.comm, self.team.dirs);
        let listed = if comm.rank() == 0 {
            files::global_checkpoints(dirs)
        } else {
            Vec::new()
        };
        dirs.know_global(collective::broadcast_held(comm, &listed));
        let (own, copies, irregular) = files::holdings(dirs);
        for path in irregular {
            self.skip(Skipped::NotRegular { path });
        }
        Holdings { own, copies }
    }

    /// Step 2 (local): the first of this rank's files of the candidate that verifies.
    fn verify_own<'h>(&mut self, holdings: &'h Holdings, id: i32, level: Level) -> Local<'h> {
        let mut local = Local {
            verified: None,
            own: holdings.own_of(id, level).next(),
            copy: holdings.copy_of(id, level),
            copy_ok: false,
            said_why: false,
        };
        for found in holdings.own_of(id, level) {
            match self.verify_candidate(found) {
                Ok(r) => {
                    local.verified = Some(r);
                    break;
                }
                Err(why) => {
                    self.skip(why);
                    local.said_why = true;
                }
            }
        }
        local
    }

    /// Step 3 (local): the redundancy file this rank keeps (L2 partner copy, L3 `RSed` file)
    /// is verified: a corrupt one is repaired like a lost one.
    fn verify_copy(&mut self, local: &mut Local<'_>, id: i32, level: Level) {
        local.copy_ok = match local.copy {
            Some(c) if matches!(level, Level::L2 | Level::L3) => {
                let checked = crate::io::verify_copy(self.team.dirs, id, level, c);
                match checked {
                    Ok(()) => true,
                    Err(e) => {
                        self.skip(Skipped::RedundancyUnverified(Candidate {
                            id,
                            level,
                            path: c.path.clone(),
                            err: Box::new(e),
                        }));
                        false
                    }
                }
            }
            None if self.keeps_copy(level) => {
                let dirs = self.team.dirs;
                let name = if level == Level::L2 {
                    dirs.copy_name(id)
                } else {
                    dirs.rsed_name(id)
                };
                fti_says::missing_file(self.messages, &dirs.io, &dirs.level_dir(level).join(name));
                false
            }
            found => found.is_some(),
        };
    }

    /// Whether each rank keeps a redundancy file at `level` (L2 and L3, in groups of several).
    fn keeps_copy(&self, level: Level) -> bool {
        let group = self.team.place().map_or(1, |p| p.group.len());
        matches!(level, Level::L2 | Level::L3) && group > 1
    }

    /// Step 5 (collective when the plan rebuilds): this rank's verified file of the
    /// candidate, rebuilt first if the plan says so.
    fn execute(&self, id: i32, level: Level, plan: &Plan, local: Local<'_>) -> Result<Restart> {
        match plan {
            Plan::Own => local
                .verified
                .ok_or(Error::Internal("planned without a file")),
            Plan::Rebuild { files, copies } => {
                let rebuild = Rebuild {
                    files,
                    copies,
                    own: local.own,
                    verified: local.verified.as_ref(),
                    copy: local.copy,
                    copy_ok: local.copy_ok,
                };
                let rebuilt = level::rebuild(level, self.team, id, &rebuild);
                rebuilt.and_then(|()| own_after_rebuild(self.team.dirs, local.verified, id, level))
            }
        }
    }

    /// Step 4 (collective): the plan. When every rank holds its file verified, and its
    /// redundancy file where the level keeps one, a reduction says so and the plan is
    /// [`Plan::Own`]; otherwise what every rank holds is gathered and planned from
    /// ([`restart_plan::plan`]). `Err` with the holdings when the candidate cannot be
    /// recovered.
    fn plan(&self, level: Level, mine: Holds) -> std::result::Result<Plan, Vec<Holds>> {
        let kept = self.keeps_copy(level);
        if collective::all(self.team.comm, mine.own && (mine.copy || !kept)) {
            return Ok(Plan::Own);
        }
        let holds = collective::gather_holds(self.team.comm, mine);
        restart_plan::plan(level, &holds, self.team.topology).map_err(|_| holds)
    }

    /// A candidate some ranks cannot recover: said once, unless this rank is the only one
    /// missing and already said why.
    fn report_missing(&mut self, id: i32, level: Level, holds: &[Holds], said_why: bool) {
        let missing: Vec<u32> = (0..holds.len() as u32)
            .filter(|&r| !holds[r as usize].own)
            .collect();
        if let Ok(place) = self.team.place() {
            let me = self.team.comm.rank();
            fti_says::l2_lost(self.messages, level, place, me, holds);
        }
        if said_why && missing == [self.team.comm.rank()] {
            return;
        }
        self.skip(Skipped::Missing { id, level, missing });
    }

    /// Opens and verifies one of this rank's files, with a progress bar for large ones.
    fn verify_candidate(&self, found: &Found) -> std::result::Result<Restart, Skipped> {
        let size = self
            .team
            .dirs
            .storage
            .stat(&found.path)
            .map_or(0, |s| s.len);
        let bar = self
            .messages
            .progress(format!("verifying checkpoint {}", found.id), size);
        let verified = open_verified(self.team.dirs, found, &|n| bar.set(n));
        drop(bar);
        verified.map_err(|e| {
            Skipped::Unverified(Candidate {
                id: found.id,
                level: found.level,
                path: found.path.clone(),
                err: Box::new(e),
            })
        })
    }

    fn skip(&mut self, why: Skipped) {
        self.messages.warn(&why.to_string());
        if matches!(
            why,
            Skipped::Unverified(_) | Skipped::RedundancyUnverified(_)
        ) {
            fti_says::unverified(self.messages, &self.team.dirs.io);
        }
        self.skipped.push(why);
    }
}

impl Local<'_> {
    fn holds(&self) -> Holds {
        Holds {
            own: self.verified.is_some(),
            copy: self.copy_ok,
        }
    }
}

/// How a plan recovers the checkpoint, for the user.
fn note(level: Level, plan: &Plan) -> String {
    let how = match plan {
        Plan::Own => "every rank from its own file".to_owned(),
        Plan::Rebuild { files, copies } if files.is_empty() => format!(
            "every rank from its own file; {} of rank(s) {copies:?} made again",
            if level == Level::L3 {
                "RSed files"
            } else {
                "partner copies"
            }
        ),
        Plan::Rebuild { files, copies } if level == Level::L3 => format!(
            "rank(s) {files:?} rebuilt by Reed-Solomon decoding{}",
            if copies.is_empty() {
                String::new()
            } else {
                format!(", RSed files of rank(s) {copies:?} re-encoded")
            }
        ),
        Plan::Rebuild { files, copies } => format!(
            "rank(s) {files:?} rebuilt from their partners' copies{}",
            if copies.is_empty() {
                String::new()
            } else {
                format!(", partner copies of rank(s) {copies:?} restored")
            }
        ),
    };
    format!("{level}, {how}")
}

/// This rank's file of a rebuilt checkpoint: the one it verified before, or the one just
/// rebuilt, verified now.
fn own_after_rebuild(
    dirs: &Dirs,
    verified: Option<Restart>,
    id: i32,
    level: Level,
) -> Result<Restart> {
    if let Some(r) = verified {
        return Ok(r);
    }
    let found = Found {
        path: dirs.level_dir(level).join(dirs.file_name(id)),
        id,
        level,
        archived: false,
    };
    open_verified(dirs, &found, &|_| {})
}
