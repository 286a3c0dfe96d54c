//! What an application rank asks of its head, as bytes: the post-processing of a level whose
//! `inline_lK = 0` (the L2 partner copies, the L3 encoding, the L4 flush), a wait for the last
//! one, or the end.
//! A head decodes what another process sent: malformed bytes are an error, never a panic.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use crate::error::{Error, Result};
use crate::level::l2::PartnerPlan;
use crate::topology::Place;

/// The post-processing a head does for one application rank of its node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(in crate::runtime) enum Work {
    /// L2: the partner copies of checkpoint `id` (partners numbered by node).
    PartnerCopies(PartnerPlan),
    /// L3: the encoding of checkpoint `id`, whose files have `maxFs = max_fs`.
    Encode { max_fs: u64 },
    /// L4: checkpoint `id`, published at L1, copied to the global directory.
    Flush,
}

/// One job: the work, the checkpoint, and where the application rank's files are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Job {
    pub work: Work,
    pub id: i32,
    /// Checkpoints kept per level.
    pub keep: u64,
    /// The application rank's place among the application's ranks: its node (its files'
    /// `node<N>/` with `local_test = 1`), position and group (its group's meta data).
    pub place: Place,
    /// The execution's id.
    pub exec_id: String,
    /// The application rank's published file of the checkpoint.
    pub file: PathBuf,
}

/// A message from an application rank to its head.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Request {
    /// Do this job.
    Job(Box<Job>),
    /// Answer with the outcome of the last job.
    Wait,
    /// The application rank has finalized.
    End,
}

const END: u8 = 1;
const WAIT: u8 = 2;
const PARTNER_COPIES: u8 = 3;
const FLUSH: u8 = 4;
const ENCODE: u8 = 5;

impl Request {
    pub(super) fn encode(&self) -> Vec<u8> {
        let job = match self {
            Request::End => return vec![END],
            Request::Wait => return vec![WAIT],
            Request::Job(job) => job,
        };
        let mut out = Vec::new();
        match &job.work {
            Work::PartnerCopies(p) => {
                out.push(PARTNER_COPIES);
                for x in [p.left, p.right] {
                    out.extend(x.to_le_bytes());
                }
                for x in [p.own_fs, p.left_fs, p.rounds] {
                    out.extend(x.to_le_bytes());
                }
            }
            Work::Flush => out.push(FLUSH),
            Work::Encode { max_fs } => {
                out.push(ENCODE);
                out.extend(max_fs.to_le_bytes());
            }
        }
        out.extend(job.id.to_le_bytes());
        out.extend(job.keep.to_le_bytes());
        let place = &job.place;
        for x in [place.node, place.position, place.group_rank] {
            out.extend(x.to_le_bytes());
        }
        out.extend((place.group.len() as u32).to_le_bytes());
        for r in &place.group {
            out.extend(r.to_le_bytes());
        }
        out.extend((job.exec_id.len() as u32).to_le_bytes());
        out.extend(job.exec_id.as_bytes());
        out.extend(job.file.as_os_str().as_bytes());
        out
    }

    pub(super) fn decode(bytes: &[u8]) -> Result<Request> {
        let mut r = Reader(bytes);
        let work = match r.take(1)?[0] {
            END => return Ok(Request::End),
            WAIT => return Ok(Request::Wait),
            PARTNER_COPIES => Work::PartnerCopies(PartnerPlan {
                left: r.u32()?,
                right: r.u32()?,
                own_fs: r.u64()?,
                left_fs: r.u64()?,
                rounds: r.u64()?,
            }),
            FLUSH => Work::Flush,
            ENCODE => Work::Encode { max_fs: r.u64()? },
            _ => return Err(malformed()),
        };
        let (id, keep) = (r.u32()? as i32, r.u64()?);
        let (node, position, group_rank) = (r.u32()?, r.u32()?, r.u32()?);
        let members = r.u32()? as usize;
        // Each member takes 4 bytes: a count beyond the message is malformed.
        if members > r.0.len() / 4 || group_rank as usize >= members {
            return Err(malformed());
        }
        let group = (0..members)
            .map(|_| r.u32())
            .collect::<Result<Vec<u32>>>()?;
        let place = Place {
            node,
            position,
            group,
            group_rank,
        };
        let len = r.u32()? as usize;
        let exec_id = String::from_utf8(r.take(len)?.to_vec()).map_err(|_| malformed())?;
        crate::config::check_exec_id(&exec_id).map_err(|_| malformed())?;
        let file = PathBuf::from(OsStr::from_bytes(r.0));
        Ok(Request::Job(Box::new(Job {
            work,
            id,
            keep,
            place,
            exec_id,
            file,
        })))
    }
}

/// A head's answer: the outcome of the last job it did for the application rank.
pub(super) fn encode_outcome(outcome: &Result<()>) -> Vec<u8> {
    match outcome {
        Ok(()) => vec![1],
        Err(e) => [&[0u8][..], e.to_string().as_bytes()].concat(),
    }
}

/// The outcome a head answered.
pub(super) fn decode_outcome(bytes: &[u8]) -> Result<()> {
    match bytes.split_first() {
        Some((1, [])) => Ok(()),
        Some((0, what)) => Err(Error::Head(String::from_utf8_lossy(what).into_owned())),
        _ => Err(malformed()),
    }
}

fn malformed() -> Error {
    Error::Head("a malformed message between an application rank and its head".into())
}

/// Reads fixed-size fields off the front of a message.
struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8]> {
        if self.0.len() < n {
            return Err(malformed());
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }

    fn u32(&mut self) -> Result<u32> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn u64(&mut self) -> Result<u64> {
        let mut b = [0u8; 8];
        b.copy_from_slice(self.take(8)?);
        Ok(u64::from_le_bytes(b))
    }
}

#[cfg(test)]
mod tests {
    use super::{decode_outcome, encode_outcome, Job, Request, Work};
    use crate::level::l2::PartnerPlan;
    use crate::topology::Place;

    #[test]
    fn requests_round_trip_and_garbage_is_an_error() {
        let plan = PartnerPlan {
            left: 3,
            right: 1,
            own_fs: 10,
            left_fs: 12,
            rounds: 1,
        };
        for work in [
            Work::PartnerCopies(plan),
            Work::Flush,
            Work::Encode { max_fs: 99 },
        ] {
            let req = Request::Job(Box::new(Job {
                work,
                id: 7,
                keep: 1,
                place: Place {
                    node: 2,
                    position: 1,
                    group: vec![1, 4, 7],
                    group_rank: 0,
                },
                exec_id: "2026-11-27_16-39-49".into(),
                file: "/x/l2/Ckpt7-Rank5.fti".into(),
            }));
            let bytes = req.encode();
            assert_eq!(Request::decode(&bytes).unwrap(), req);
            // Every cut before the path (which ends the message) is refused.
            for n in 0..bytes.len() - "/x/l2/Ckpt7-Rank5.fti".len() {
                assert!(Request::decode(&bytes[..n]).is_err(), "{n} bytes");
            }
        }
        for req in [Request::End, Request::Wait] {
            assert_eq!(Request::decode(&req.encode()).unwrap(), req);
        }
        assert!(Request::decode(&[9, 9]).is_err());
        // A group count beyond the message, or a group rank outside the group, is refused.
        let job = |group: Vec<u32>, group_rank| {
            Request::Job(Box::new(Job {
                work: Work::Flush,
                id: 1,
                keep: 1,
                place: Place {
                    node: 0,
                    position: 0,
                    group,
                    group_rank,
                },
                exec_id: "2026-11-27_16-39-49".into(),
                file: "f".into(),
            }))
            .encode()
        };
        let mut huge = job(vec![5], 0);
        // The count follows kind (1), id (4), keep (8), node, position, group rank (12).
        huge[25..29].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(Request::decode(&huge).is_err());
        assert!(Request::decode(&job(vec![5], 1)).is_err());
        assert!(decode_outcome(&encode_outcome(&Ok(()))).is_ok());
        assert!(decode_outcome(&[]).is_err() && decode_outcome(&[1, 2]).is_err());
    }
}
