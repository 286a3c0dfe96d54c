//! FTI 1.1's `test/corrupt` tool: erases or corrupts checkpoint files of the first encoding
//! group, found as FTI's tool finds them (the node's level directory, the checkpoint id of
//! the files in it), for a run of `procs` processes with the config's node size, group size
//! and heads.

use std::path::{Path, PathBuf};

/// Erase (unlink) or corrupt (invert the first 16 bytes), the tool's fifth argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Damage {
    Corrupt = 0,
    Erase = 1,
}

/// Which files are hit, the tool's sixth argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spread {
    /// One file of the group's first rank.
    One = 0,
    /// The Rank and partner files of two non-adjacent nodes (the group's first node and its
    /// last but one).
    NonAdjacent = 1,
    /// The Rank and partner files of the group's first two nodes.
    Adjacent = 2,
    /// One file of every application rank.
    All = 3,
}

impl Spread {
    pub const ALL: [Spread; 4] = [
        Spread::One,
        Spread::NonAdjacent,
        Spread::Adjacent,
        Spread::All,
    ];
}

/// A rank's own checkpoint file (`Rank`) or its level's redundancy file (`Pcof` at L2, `RSed`
/// at L3), the tool's fourth argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Ckpt = 0,
    Partner = 1,
}

/// The layout the tool reads from the config.
#[derive(Debug, Clone)]
pub struct Layout {
    pub exec_id: String,
    pub node_size: u32,
    pub group_size: u32,
    pub head: u32,
    pub procs: u32,
    /// `ckpt_io`: with MPI-IO (2), L4 is one shared file.
    pub io: u8,
}

/// The files the tool hits at `level`: (node, rank, kind).
pub fn targets(layout: &Layout, spread: Spread, kind: Kind) -> Vec<(u32, u32, Kind)> {
    let rank_of = |node: u32| node * layout.node_size + layout.head;
    let both = |node: u32| {
        [
            (node, rank_of(node), Kind::Ckpt),
            (node, rank_of(node), Kind::Partner),
        ]
    };
    match spread {
        Spread::One => vec![(0, rank_of(0), kind)],
        Spread::NonAdjacent => [both(0), both(layout.group_size - 2)].concat(),
        Spread::Adjacent => [both(0), both(1)].concat(),
        Spread::All => (0..layout.procs)
            .filter(|r| layout.head == 0 || r % layout.node_size != 0)
            .map(|r| (r / layout.node_size, r, kind))
            .collect(),
    }
}

/// The path of the file of `rank` and `kind` of the checkpoint in the node's `level`
/// directory.
fn target_path(
    dir: &Path,
    layout: &Layout,
    level: u8,
    node: u32,
    rank: u32,
    kind: Kind,
) -> PathBuf {
    let exec_id = &layout.exec_id;
    let folder = if level == 4 {
        dir.join(format!("Global/{exec_id}/l4"))
    } else {
        dir.join(format!("Local/node{node}/{exec_id}/l{level}"))
    };
    let id = crate::util::newest_checkpoint_id(&folder);
    let name = match (kind, level) {
        (Kind::Ckpt, _) => "Rank",
        (Kind::Partner, 2) => "Pcof",
        (Kind::Partner, _) => "RSed",
    };
    if level == 4 && layout.io == 2 {
        return folder.join(format!("Ckpt{id}-mpiio.fti"));
    }
    folder.join(format!("Ckpt{id}-{name}{rank}.fti"))
}

/// Runs the tool: damages the targeted files of the checkpoint at `level` under `dir`; fails
/// (as the tool's non-zero exit) when a file is missing. Returns the files hit.
pub fn corrupt(
    dir: &Path,
    layout: &Layout,
    level: u8,
    kind: Kind,
    damage: Damage,
    spread: Spread,
) -> Result<Vec<PathBuf>, String> {
    let mut hit = Vec::new();
    for (node, rank, kind) in targets(layout, spread, kind) {
        let path = target_path(dir, layout, level, node, rank, kind);
        // The tool erases or corrupts L4's one MPI-IO file once per target: the first does it.
        if hit.contains(&path) {
            continue;
        }
        match damage {
            Damage::Erase => std::fs::remove_file(&path),
            Damage::Corrupt => std::fs::read(&path).and_then(|mut bytes| {
                for b in bytes.iter_mut().take(16) {
                    *b ^= 0xff;
                }
                std::fs::write(&path, bytes)
            }),
        }
        .map_err(|e| format!("corrupt: {}: {e}", path.display()))?;
        hit.push(path);
    }
    Ok(hit)
}

/// The tool's layout for the run in `dir` (its `config.fti`).
pub fn layout(config: &Path, procs: u32) -> Layout {
    let text = std::fs::read_to_string(config).unwrap();
    let key = |k: &str| {
        text.lines()
            .filter_map(|l| l.split_once('='))
            .find(|(name, _)| name.trim().eq_ignore_ascii_case(k))
            .map(|(_, v)| v.trim().to_owned())
            .unwrap_or_default()
    };
    let number = |k: &str| {
        key(k)
            .parse::<u32>()
            .unwrap_or_else(|_| panic!("{k} in {}", config.display()))
    };
    Layout {
        exec_id: key("exec_id"),
        node_size: number("node_size"),
        group_size: number("group_size"),
        head: number("head"),
        procs,
        io: number("ckpt_io") as u8,
    }
}
