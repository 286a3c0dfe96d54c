//! FTI 1.1's own lines about a restart, said besides the runtime's account of each candidate:
//! logs, scripts and FTI's test suite (its `test/patterns`) look for them.

use std::path::Path;

use crate::config::Level;
use crate::io::Io;
use crate::report::Messages;
use crate::restart_plan::Holds;
use crate::topology::Place;

/// A file of a candidate this rank should hold is not there.
pub(super) fn missing_file(messages: &Messages, io: &Io, path: &Path) {
    messages.warn(&format!("Missing file: \"{}\"", path.display()));
    files_failed(messages, io);
}

/// A file of a candidate did not verify. FTI says more for a checksum of the meta data
/// (POSIX and MPI-IO files): the error names it.
pub(super) fn unverified(messages: &Messages, io: &Io) {
    files_failed(messages, io);
}

/// With FTI-FF, FTI 1.1 reports a lost or damaged file of this rank as a failure to recover
/// its files (its recovery is retried at the next candidate).
fn files_failed(messages: &Messages, io: &Io) {
    if matches!(io, Io::Ftiff) {
        messages.warn("FTI failed to recover the checkpoint files.");
    }
}

/// An L2 candidate that cannot be recovered: which of this rank's pairs are lost (its own file
/// with the copy its right partner keeps; its left partner's file with the copy this rank
/// keeps). `holds` is indexed by rank.
pub(super) fn l2_lost(messages: &Messages, level: Level, place: &Place, me: u32, holds: &[Holds]) {
    if level != Level::L2 || place.group.len() < 2 {
        return;
    }
    let held = |r: u32| holds.get(r as usize).copied().unwrap_or_default();
    if !held(me).own && !held(place.right()).copy {
        messages.warn("My checkpoint file and partner copy have been lost");
    }
    if !held(place.left()).own && !held(me).copy {
        messages.warn("My Ptner checkpoint file and his checkpoint file have been lost");
    }
}

/// MPI-IO's shared L4 file that the meta data names is not there (FTI cannot open it).
pub(super) fn unable_to_access(messages: &Messages, path: &Path) {
    messages.warn(&format!("Unable to access file \"{}\"", path.display()));
}

/// No candidate could be recovered.
pub(super) fn nothing_recovered(messages: &Messages) {
    messages.warn("Cannot recover from any checkpoint level.");
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;
    use crate::report::{Priority, Reporter};
    use crate::topology::Topology;

    #[derive(Default)]
    struct Lines(Mutex<Vec<String>>);

    impl Reporter for Lines {
        fn report(&self, _priority: Priority, _rank: u32, text: &str) {
            self.0.lock().unwrap().push(text.to_owned());
        }
    }

    /// What each rank of a group of 4 (one per node) says when ranks 0 and 1 lost their files
    /// and the partner copies they keep (FTI's two adjacent nodes).
    #[test]
    fn adjacent_nodes_lost_name_the_pairs_lost() {
        let topology = Topology::new(&[0, 1, 2, 3], 1, 4).unwrap();
        let lost = Holds {
            own: false,
            copy: false,
        };
        let kept = Holds {
            own: true,
            copy: true,
        };
        let holds = [lost, lost, kept, kept];
        let said: Vec<Vec<String>> = (0..4)
            .map(|rank| {
                let lines = Arc::new(Lines::default());
                let messages = Messages::new(rank, 1, lines.clone());
                let place = topology.place(rank).unwrap();
                l2_lost(&messages, Level::L2, place, rank, &holds);
                l2_lost(&messages, Level::L3, place, rank, &holds);
                let said = lines.0.lock().unwrap().clone();
                said
            })
            .collect();
        let own = "My checkpoint file and partner copy have been lost";
        let partner = "My Ptner checkpoint file and his checkpoint file have been lost";
        // Rank 0's copy is kept by rank 1; rank 1 keeps rank 0's; rank 2 keeps rank 1's.
        assert_eq!(said[0], vec![own.to_owned()]);
        assert_eq!(said[1], vec![partner.to_owned()]);
        assert_eq!(said[2], Vec::<String>::new());
        assert_eq!(said[3], Vec::<String>::new());
    }
}
