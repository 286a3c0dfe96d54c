//! Where every rank sits, as FTI 1.1 computes it: ranks listed by node, nodes grouped into
//! encoding/partner groups, and each rank's partners within its group (used by L2 partner
//! copies and L3 encoding).
//!
//! For position `p` in the rank list: node = `p / node_size`, position in node =
//! `p % node_size`. A group is the ranks at the same position in node across `group_size`
//! consecutive nodes (sector = node / group_size); group rank = node % group_size; right
//! partner = group rank + 1, left = group rank − 1 (mod the group's size).
//!
//! FTI 1.1 requires the rank count to be a multiple of `node_size` and the node count a
//! multiple of `group_size`. Here any sizes work: the last node may hold fewer ranks (its
//! missing positions simply have smaller groups), and the last sector may hold fewer nodes. A
//! sector of a single node would leave its ranks without a partner, so a single leftover node
//! joins the sector before it (which then has `group_size + 1` nodes).

use crate::error::{Error, Result};

/// The place of one rank.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    /// Node index (`p / node_size` with `p` the rank's position in the node-ordered list).
    pub node: u32,
    /// Position within the node.
    pub position: u32,
    /// The ranks of its group, in group-rank order.
    pub group: Vec<u32>,
    /// Its index in `group`.
    pub group_rank: u32,
}

impl Place {
    /// The rank whose file this rank keeps at L2 (`Ckpt<id>-Pcof<r>.fti`): its left partner.
    pub fn left(&self) -> u32 {
        let k = self.group.len() as u32;
        self.group[((self.group_rank + k - 1) % k) as usize]
    }

    /// The rank that keeps this rank's file at L2: its right partner.
    pub fn right(&self) -> u32 {
        let k = self.group.len() as u32;
        self.group[((self.group_rank + 1) % k) as usize]
    }
}

/// The places of all ranks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Topology {
    places: Vec<Place>,
}

impl Topology {
    /// The topology of `order.len()` ranks listed by node (`order[p]` = the rank at position
    /// `p`; with `local_test = 1` that is `0, 1, 2, ...`).
    pub fn new(order: &[u32], node_size: u32, group_size: u32) -> Result<Topology> {
        if node_size == 0 || group_size == 0 || order.is_empty() {
            return Err(Error::Topology(
                "no ranks, or a node_size or group_size of 0",
            ));
        }
        let nranks = order.len() as u32;
        let nodes = nranks.div_ceil(node_size);
        // Sector of each node; a single leftover node joins the previous sector.
        let mut sectors = nodes.div_ceil(group_size);
        if sectors > 1 && nodes % group_size == 1 {
            sectors -= 1;
        }
        let sector_of = |node: u32| (node / group_size).min(sectors - 1);
        let mut places: Vec<Option<Place>> = vec![None; nranks as usize];
        for (p, &rank) in order.iter().enumerate() {
            let (node, position) = (p as u32 / node_size, p as u32 % node_size);
            let sector = sector_of(node);
            let group: Vec<u32> = (0..nodes)
                .filter(|&n| sector_of(n) == sector)
                .filter_map(|n| order.get((n * node_size + position) as usize).copied())
                .collect();
            let group_rank = group.iter().position(|&r| r == rank).unwrap_or(0) as u32;
            let slot = places.get_mut(rank as usize).ok_or(Error::Topology(
                "rank number out of range in the rank order",
            ))?;
            if slot.is_some() {
                return Err(Error::Topology("a rank appears twice in the rank order"));
            }
            *slot = Some(Place {
                node,
                position,
                group,
                group_rank,
            });
        }
        let places = places
            .into_iter()
            .collect::<Option<Vec<Place>>>()
            .ok_or(Error::Topology("the rank order must list every rank once"))?;
        Ok(Topology { places })
    }

    /// The place of `rank`.
    pub fn place(&self, rank: u32) -> Option<&Place> {
        self.places.get(rank as usize)
    }

    /// Number of ranks.
    pub fn len(&self) -> usize {
        self.places.len()
    }

    /// Whether there is no rank (never true for a built topology).
    pub fn is_empty(&self) -> bool {
        self.places.is_empty()
    }
}

/// The number of nodes `Topology.fti` lists (its `[topology]` section: `<node index> = <node
/// name>`), if the file can be read: a regular file (never a FIFO), at most its first MiB.
pub fn topology_nodes(path: &std::path::Path) -> Option<u32> {
    nodes_in(&topology_text(&crate::storage::Disk, path)?, path)
}

pub(crate) fn nodes_in(text: &str, path: &std::path::Path) -> Option<u32> {
    let (ini, _) = crate::config::IniFile::parse(path, text).ok()?;
    ini.section("topology")
        .filter_map(|(key, _)| key.parse::<u32>().ok())
        .map(|i| i.saturating_add(1))
        .max()
}

/// The section of `Topology.fti` where an execution whose last node holds fewer than
/// `node_size` ranks records its rank count (FTI 1.1 requires full nodes: its files, and ours
/// with full nodes, have no such section, so that `Topology.fti` stays byte for byte FTI's).
pub const RUN_SECTION: &str = "run";

/// What `Topology.fti` ends with for a run of `nranks` ranks on nodes of `node_size`: nothing
/// when the nodes are full (the count is then nodes × `node_size`), else the [`RUN_SECTION`].
pub fn run_text(nranks: u32, node_size: u32) -> String {
    if nranks.is_multiple_of(node_size.max(1)) {
        return String::new();
    }
    format!("\n[{RUN_SECTION}]\nranks                          = {nranks}\n\n")
}

/// The rank count of the execution whose meta directory is `meta`, from its `Topology.fti`:
/// the [`RUN_SECTION`]'s `ranks`, or else the nodes it lists × `node_size`.
pub fn recorded_ranks(
    storage: &dyn crate::storage::Storage,
    meta: &std::path::Path,
    node_size: u32,
) -> Option<u64> {
    let path = meta.join("Topology.fti");
    let text = topology_text(storage, &path)?;
    let (ini, _) = crate::config::IniFile::parse(&path, &text).ok()?;
    let ranks = ini.section(RUN_SECTION).find(|(key, _)| *key == "ranks");
    if let Some((_, v)) = ranks {
        return v.trim().parse().ok();
    }
    let nodes = nodes_in(&text, &path)?;
    Some(u64::from(nodes).saturating_mul(u64::from(node_size)))
}

/// The first MiB of `path` through `storage`, as text (a regular file only).
pub(crate) fn topology_text(
    storage: &dyn crate::storage::Storage,
    path: &std::path::Path,
) -> Option<String> {
    let file = storage.open(path, false).ok()?;
    let len = file.len().ok()?.min(1 << 20);
    let mut bytes = vec![0; usize::try_from(len).ok()?];
    file.read_exact_at(&mut bytes, 0).ok()?;
    String::from_utf8(bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn local(nranks: u32, node_size: u32, group_size: u32) -> Topology {
        Topology::new(&(0..nranks).collect::<Vec<_>>(), node_size, group_size).unwrap()
    }

    #[test]
    fn fti_level_vectors_layout() {
        // 4 ranks, node_size 1, group_size 4: one group, Pcof<r> holds rank r-1's file.
        let t = local(4, 1, 4);
        for r in 0..4 {
            let p = t.place(r).unwrap();
            assert_eq!(
                (p.node, p.group_rank, p.group.clone()),
                (r, r, vec![0, 1, 2, 3])
            );
            assert_eq!(p.left(), (r + 3) % 4);
            assert_eq!(p.right(), (r + 1) % 4);
        }
    }

    #[test]
    fn groups_are_same_position_across_consecutive_nodes() {
        // 8 ranks, 2 per node, groups of 2 nodes: positions 0 and 1 form separate groups.
        let t = local(8, 2, 2);
        assert_eq!(t.place(0).unwrap().group, [0, 2]);
        assert_eq!(t.place(1).unwrap().group, [1, 3]);
        assert_eq!(t.place(5).unwrap().group, [5, 7]);
        assert_eq!(t.place(7).unwrap().left(), 5);
    }

    #[test]
    fn uneven_sizes() {
        // 5 nodes with group_size 2: the single leftover node joins the last full sector.
        let t = local(5, 1, 2);
        assert_eq!(t.place(4).unwrap().group, [2, 3, 4]);
        assert_eq!(t.place(0).unwrap().group, [0, 1]);
        // 7 ranks, 2 per node: the last node has one rank, position 1 has a smaller group.
        let t = local(7, 2, 4);
        assert_eq!(t.place(6).unwrap().group, [0, 2, 4, 6]);
        assert_eq!(t.place(5).unwrap().group, [1, 3, 5]);
        // One node only: a group of one, its own partner.
        let t = local(1, 1, 4);
        assert_eq!(t.place(0).unwrap().left(), 0);
    }

    #[test]
    fn rank_order_by_host() {
        // Ranks 0 and 2 on one host, 1 and 3 on another.
        let t = Topology::new(&[0, 2, 1, 3], 2, 2).unwrap();
        assert_eq!(t.place(2).unwrap().node, 0);
        assert_eq!(t.place(0).unwrap().group, [0, 1]);
        assert_eq!(t.place(2).unwrap().group, [2, 3]);
        assert!(Topology::new(&[0, 0], 1, 2).is_err());
        assert!(Topology::new(&[0, 5], 1, 2).is_err());
        assert!(Topology::new(&[], 1, 2).is_err());
    }
}
