//! A communicator over some ranks of another, built on its point-to-point [`Comm::exchange`]:
//! the application's ranks of a run with heads.

use std::rc::Rc;

use super::Comm;

/// Some ranks of `parent` (in the order given), as a communicator of their own: rank `i` here is
/// `members[i]` there.
pub struct Members {
    parent: Rc<dyn Comm>,
    members: Vec<u32>,
    rank: u32,
}

impl Members {
    /// The communicator of `members` (ranks of `parent`, which must include this one), or
    /// `None` when this rank is not one of them.
    pub fn new(parent: Rc<dyn Comm>, members: Vec<u32>) -> Option<Members> {
        let me = parent.rank();
        let rank = members.iter().position(|&m| m == me)? as u32;
        Some(Members {
            parent,
            members,
            rank,
        })
    }

    fn member(&self, rank: u32) -> u32 {
        self.members[rank as usize % self.members.len()]
    }
}

impl Comm for Members {
    fn rank(&self) -> u32 {
        self.rank
    }

    fn size(&self) -> u32 {
        self.members.len() as u32
    }

    fn barrier(&self) {
        self.all_gather(&[]);
    }

    /// In `size - 1` rounds: in round `k` each rank sends to the rank `k` after it and receives
    /// from the rank `k` before it, so every round pairs all ranks and none waits in a cycle.
    fn all_gather(&self, bytes: &[u8]) -> Vec<Vec<u8>> {
        let n = self.size();
        let mut all = vec![Vec::new(); n as usize];
        all[self.rank as usize] = bytes.to_vec();
        for k in 1..n {
            let (to, from) = ((self.rank + k) % n, (self.rank + n - k) % n);
            all[from as usize] = self.exchange(to, bytes, from);
        }
        all
    }

    fn exchange(&self, to: u32, bytes: &[u8], from: u32) -> Vec<u8> {
        self.parent
            .exchange(self.member(to), bytes, self.member(from))
    }

    fn host_name(&self) -> String {
        self.parent.host_name()
    }
}
