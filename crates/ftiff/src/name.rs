//! Checkpoint file names: `Ckpt<id>-Rank<r>.fti` (a rank's checkpoint), `Ckpt<id>-Pcof<r>.fti`
//! (the L2 copy rank `r` keeps of its left partner's file) and `Ckpt<id>-RSed<r>.fti` (rank
//! `r`'s share of an L3 group's Reed-Solomon code), as FTI 1.1 names them.

use std::fmt;

/// What a checkpoint file holds, from its name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FileKind {
    /// `Ckpt<id>-Rank<r>.fti`: rank `r`'s checkpoint.
    Rank,
    /// `Ckpt<id>-Pcof<r>.fti`: the L2 partner copy rank `r` keeps.
    Pcof,
    /// `Ckpt<id>-RSed<r>.fti`: rank `r`'s Reed-Solomon code and trailer.
    Rsed,
}

impl FileKind {
    /// The tag between the id and the rank: `Rank`, `Pcof` or `RSed`.
    pub fn tag(self) -> &'static str {
        match self {
            FileKind::Rank => "Rank",
            FileKind::Pcof => "Pcof",
            FileKind::Rsed => "RSed",
        }
    }
}

/// A checkpoint file's name, parsed. Ids are FTI's `int` checkpoint ids (`i32`, positive in
/// files FTI writes); ranks are MPI ranks. Displays as the file name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FileName {
    /// Checkpoint id.
    pub id: i32,
    /// Which file of the checkpoint.
    pub kind: FileKind,
    /// The rank the file belongs to (for a Pcof file: the rank that keeps it).
    pub rank: u32,
}

impl FileName {
    /// The name of rank `rank`'s file of kind `kind` for checkpoint `id`.
    pub fn new(id: i32, kind: FileKind, rank: u32) -> FileName {
        FileName { id, kind, rank }
    }

    /// Parses a file name (no directory). Only names FTI writes match: decimal digits without
    /// sign for the id and the rank, the exact tag, the `.fti` suffix and nothing after it.
    pub fn parse(name: &str) -> Option<FileName> {
        let rest = name.strip_prefix("Ckpt")?.strip_suffix(".fti")?;
        let (id, rest) = rest.split_once('-')?;
        let (kind, rank) = [FileKind::Rank, FileKind::Pcof, FileKind::Rsed]
            .into_iter()
            .find_map(|k| Some((k, rest.strip_prefix(k.tag())?)))?;
        Some(FileName {
            id: digits(id)?,
            kind,
            rank: digits(rank)?,
        })
    }
}

/// A decimal number of digits only (no sign, no spaces), in range.
fn digits<T: std::str::FromStr>(s: &str) -> Option<T> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

impl fmt::Display for FileName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Ckpt{}-{}{}.fti", self.id, self.kind.tag(), self.rank)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for (name, id, kind, rank) in [
            ("Ckpt12-Rank3.fti", 12, FileKind::Rank, 3),
            ("Ckpt2-Pcof0.fti", 2, FileKind::Pcof, 0),
            ("Ckpt1-RSed7.fti", 1, FileKind::Rsed, 7),
            ("Ckpt2147483647-RSed31.fti", i32::MAX, FileKind::Rsed, 31),
        ] {
            let parsed = FileName::parse(name).unwrap();
            assert_eq!(parsed, FileName::new(id, kind, rank));
            assert_eq!(parsed.to_string(), name);
        }
    }

    #[test]
    fn other_names_do_not_parse() {
        for name in [
            "Ckpt-Rank3.fti",
            "Ckpt1-Rank.fti",
            "Ckpt1-Rank3.fti.tmp",
            "Ckpt+1-Rank3.fti",
            "Ckpt1-rsed3.fti",
            "Ckpt1-Rank-3.fti",
            "Ckpt1-Rank+3.fti",
            "Ckpt1-RSed0.fti.bak",
            "Ckpt2147483648-Rank0.fti",
            "Ckpt1-Rank4294967296.fti",
            "Ckpt1-Copy0.fti",
            "Ckpt 1-Rank0.fti",
            "Topology.fti",
        ] {
            assert_eq!(FileName::parse(name), None, "{name}");
        }
    }
}
