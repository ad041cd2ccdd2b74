//! Forwarding: equal-cost next-hop tables and the ECMP hash.
//!
//! Tables are computed, not configured: for every *leaf* (a switch with hosts) a
//! breadth-first search over the switch graph gives each switch its distance to that
//! leaf, and its next hops toward it are the neighbours one step closer. This works for
//! every Clos-like topology the builders make and is recomputed when links fail (if
//! the fabric reroutes at all).
//!
//! Hosts may have several NIC ports, one per *plane* (multi-plane Clos): a switch in
//! plane `p` routes toward the leaf its destination's NIC port `p` hangs from.

use crate::port::{Port, PortId, PortKind};
use crate::topology::{Node, NodeKind};
use fabricsim_engine::rng::mix64;
use fabricsim_wire::packet::ROCEV2_UDP_PORT;
use fabricsim_wire::NetHdr;

/// Where a host's NIC port attaches to the fabric.
#[derive(Clone, Copy, Debug)]
struct Attach {
    /// Leaf switch node.
    leaf: u32,
    /// The leaf's port toward the host.
    down: PortId,
    /// Dense index of the leaf among leaves (its column in `table`).
    leaf_index: u32,
}

/// What a forwarding decision needs of the switch it is made at, in one place.
#[derive(Clone, Copy, Debug, Default)]
struct SwitchRoute {
    /// Where the switch's row starts in `table` (`u32::MAX` for hosts).
    row: u32,
    /// ECMP hash seed.
    seed: u64,
}

/// Next-hop tables for all switches.
#[derive(Clone, Debug, Default)]
pub struct Routes {
    nics: usize,
    attach: Vec<Attach>,
    /// Dense index of each node among leaves (`u32::MAX` if not a leaf).
    leaf_index: Vec<u32>,
    /// Dense index of each node among switches (`u32::MAX` for hosts).
    switch_index: Vec<u32>,
    nleaves: usize,
    /// Per node: its row in `table` and its hash seed.
    switches: Vec<SwitchRoute>,
    /// For `(switch_index, leaf_index)`, its next-hop list in `hops` packed as
    /// `start << 32 | len` (a leaf-spine may have 1023 spines, so a length needs more
    /// than a byte). Most pairs share a list (an edge switch sends every
    /// remote leaf's traffic to the same uplinks), so `hops` is small. A hop reads the
    /// host's attachment, the switch's record, one entry here and one in `hops`: four
    /// loads in a chain, each a likely cache miss on a large fabric, where indices into
    /// per-switch list tables (a smaller table) took six.
    table: Vec<u64>,
    hops: Vec<PortId>,
}

impl Routes {
    /// Computes the tables for the current link states.
    pub fn compute(nodes: &[Node], ports: &[Port], nics: usize, seed: u64) -> Routes {
        let mut switch_index = vec![u32::MAX; nodes.len()];
        let mut leaf_index = vec![u32::MAX; nodes.len()];
        let mut nswitches = 0u32;
        let mut nleaves = 0u32;
        let mut switches = vec![SwitchRoute { row: u32::MAX, seed: 0 }; nodes.len()];
        for (i, n) in nodes.iter().enumerate() {
            if n.kind == NodeKind::Switch {
                switch_index[i] = nswitches;
                nswitches += 1;
                switches[i].seed = mix64(seed ^ mix64(0xEC3B_0000 + i as u64));
                if n.ports().any(|p| ports[p as usize].kind == PortKind::Down) {
                    leaf_index[i] = nleaves;
                    nleaves += 1;
                }
            }
        }
        let hosts = nodes.iter().filter(|n| n.kind == NodeKind::Host).count();
        let mut attach = Vec::with_capacity(hosts * nics);
        for n in nodes.iter().filter(|n| n.kind == NodeKind::Host) {
            for p in n.ports() {
                let down = ports[p as usize].peer;
                let leaf = ports[down as usize].node;
                attach.push(Attach { leaf, down, leaf_index: leaf_index[leaf as usize] });
            }
        }
        for (i, sw) in switches.iter_mut().enumerate() {
            if switch_index[i] != u32::MAX {
                sw.row = switch_index[i] * nleaves;
            }
        }
        let mut routes = Routes {
            nics,
            attach,
            leaf_index,
            switch_index,
            nleaves: nleaves as usize,
            switches,
            table: vec![0; nswitches as usize * nleaves as usize],
            hops: Vec::new(),
        };
        routes.fill(nodes, ports);
        routes
    }

    fn fill(&mut self, nodes: &[Node], ports: &[Port]) {
        let mut dist = vec![u32::MAX; nodes.len()];
        let mut frontier = Vec::new();
        let mut next = Vec::new();
        // Lookup only (never iterated), so the map's order cannot leak into results.
        let mut group_of: std::collections::HashMap<Vec<PortId>, u32> = std::collections::HashMap::new();
        let mut list = Vec::new();
        // Distinct lists over all switches first (`global`, 0 = empty), then numbered
        // per switch below.
        let mut global = vec![0u32; self.table.len()];
        let mut lists: Vec<(u32, u32)> = vec![(0, 0)];
        for (leaf_node, &li) in self.leaf_index.iter().enumerate() {
            if li == u32::MAX {
                continue;
            }
            dist.iter_mut().for_each(|d| *d = u32::MAX);
            dist[leaf_node] = 0;
            frontier.clear();
            frontier.push(leaf_node as u32);
            let mut d = 0;
            while !frontier.is_empty() {
                d += 1;
                next.clear();
                for &n in &frontier {
                    for p in nodes[n as usize].ports() {
                        if let Some(m) = switch_neighbour(nodes, ports, p) {
                            if dist[m as usize] == u32::MAX {
                                dist[m as usize] = d;
                                next.push(m);
                            }
                        }
                    }
                }
                std::mem::swap(&mut frontier, &mut next);
            }
            for (s, node) in nodes.iter().enumerate() {
                let si = self.switch_index[s];
                if si == u32::MAX || s == leaf_node || dist[s] == u32::MAX {
                    continue;
                }
                list.clear();
                for p in node.ports() {
                    if let Some(m) = switch_neighbour(nodes, ports, p) {
                        if dist[m as usize] + 1 == dist[s] {
                            list.push(p);
                        }
                    }
                }
                let group = if list.is_empty() {
                    0
                } else if let Some(&g) = group_of.get(&list) {
                    g
                } else {
                    let g = lists.len() as u32;
                    lists.push((self.hops.len() as u32, list.len() as u32));
                    self.hops.extend_from_slice(&list);
                    group_of.insert(list.clone(), g);
                    g
                };
                global[si as usize * self.nleaves + li as usize] = group;
            }
        }
        for (entry, &g) in self.table.iter_mut().zip(&global) {
            let (start, len) = lists[g as usize];
            *entry = (start as u64) << 32 | len as u64;
        }
    }

    /// `(start, len)` in `hops` of the next hops at the switch with record `sw` toward
    /// the leaf with dense index `leaf_index`.
    #[inline]
    fn list(&self, sw: SwitchRoute, leaf_index: u32) -> (u32, u32) {
        let e = self.table[sw.row as usize + leaf_index as usize];
        ((e >> 32) as u32, e as u32)
    }

    /// The egress port at switch `node` for a packet with header `net`, or `None` if the
    /// destination is unreachable from here.
    #[inline]
    pub fn egress(&self, node: u32, plane: u8, net: &NetHdr) -> Option<PortId> {
        let nic = if self.nics > 1 { plane as usize } else { 0 };
        let at = self.attach.get(net.dst as usize * self.nics + nic)?;
        if at.leaf == node {
            return Some(at.down);
        }
        let sw = self.switches[node as usize];
        let (start, len) = self.list(sw, at.leaf_index);
        match len {
            0 => None,
            1 => Some(self.hops[start as usize]),
            _ => {
                let h = ecmp_hash(sw.seed, net);
                let k = ((h >> 32) * len as u64) >> 32;
                Some(self.hops[start as usize + k as usize])
            }
        }
    }

    /// The equal-cost next hops at switch `node` toward the leaf of host `dst` in
    /// `plane` (for tests and path enumeration).
    pub fn next_hops(&self, node: u32, plane: u8, dst: u32) -> &[PortId] {
        let nic = if self.nics > 1 { plane as usize } else { 0 };
        let at = self.attach[dst as usize * self.nics + nic];
        if at.leaf == node {
            return std::slice::from_ref(&self.attach[dst as usize * self.nics + nic].down);
        }
        let (start, len) = self.list(self.switches[node as usize], at.leaf_index);
        &self.hops[start as usize..(start + len) as usize]
    }
}

/// The switch at the far end of port `p`, if `p` is a switch-to-switch link that is up.
fn switch_neighbour(nodes: &[Node], ports: &[Port], p: PortId) -> Option<u32> {
    let port = &ports[p as usize];
    if !matches!(port.kind, PortKind::Up | PortKind::Fabric) || !port.up {
        return None;
    }
    let m = ports[port.peer as usize].node;
    (nodes[m as usize].kind == NodeKind::Switch && ports[port.peer as usize].up).then_some(m)
}

/// ECMP hash of the 5-tuple (source and destination address, UDP source and
/// destination port, protocol UDP) under a switch's seed.
///
/// Real switches use CRC-based hashes with a per-switch seed so that consecutive
/// tiers do not make correlated choices ("polarisation"); a seeded 64-bit mixer has the
/// same property and spreads any input bit into every output bit.
#[inline]
pub fn ecmp_hash(seed: u64, net: &NetHdr) -> u64 {
    let addrs = ((net.src as u64) << 32) | net.dst as u64;
    let l4 = ((net.sport as u64) << 32) | ((ROCEV2_UDP_PORT as u64) << 8) | 17;
    mix64(seed ^ mix64(addrs) ^ l4.rotate_left(17))
}

#[cfg(test)]
mod tests {
    use crate::{Fabric, FabricConfig, LinkParams, TopologySpec};
    use fabricsim_engine::{Dur, Rate};

    /// A leaf with more uplinks than a byte counts (the validator allows 1023 spines)
    /// routes over all of them: every spine is a next hop, and ECMP spreads flows over
    /// many.
    #[test]
    fn a_leaf_with_hundreds_of_spines_uses_them_all() {
        let spines = 300;
        let spec = TopologySpec::LeafSpine { leaves: 2, spines, hosts_per_leaf: 1 };
        let links = LinkParams { host_link: Rate::gbps(100), fabric_link: Rate::gbps(100), delay: Dur::from_us(1) };
        let f = Fabric::new(&spec, &links, FabricConfig::default(), 4200).expect("a valid fabric");
        let leaf = f.leaf_of(0, 0);
        let hops = f.next_hops(leaf, 0, 1);
        assert_eq!(hops.len(), spines as usize);
        let mut net = fabricsim_wire::NetHdr { src: 0, dst: 1, ..Default::default() };
        let mut used = std::collections::BTreeSet::new();
        for sport in 0..2000 {
            net.sport = sport;
            let e = f.routes.egress(leaf, 0, &net).expect("a route to host 1");
            assert!(hops.contains(&e));
            used.insert(e);
        }
        assert!(used.len() > spines as usize / 2, "{} of {spines} spines used", used.len());
    }
}
