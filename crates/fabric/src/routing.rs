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
    /// Its position among the leaf's ports.
    down_pos: u32,
    /// Dense index of the leaf among leaves (its column in `table`).
    leaf_index: u32,
}

/// What a forwarding decision needs of the switch it is made at, in one place.
#[derive(Clone, Copy, Debug, Default)]
struct SwitchRoute {
    /// Where the switch's row starts in `table` (`u32::MAX` for hosts).
    row: u32,
    /// Where the switch's ports start in `ports_of`.
    first: u32,
    /// ECMP hash seed.
    seed: u64,
}

/// Next-hop tables for all switches.
///
/// Next hops are stored as positions among the switch's own ports, not as port ids,
/// so that switches in the same role have identical rows and share one copy: on a
/// k=16 fat-tree 320 rows of 128 leaves (320 KB, a cache miss per hop at 1024 hosts)
/// become 18 (every edge switch sends remote traffic up; the aggregation switches of
/// a pod agree; every core sends a pod's traffic down its port to that pod).
#[derive(Clone, Debug, Default)]
pub struct Routes {
    nics: usize,
    attach: Vec<Attach>,
    /// Dense index of each node among leaves (`u32::MAX` if not a leaf).
    leaf_index: Vec<u32>,
    /// Dense index of each node among switches (`u32::MAX` for hosts).
    switch_index: Vec<u32>,
    nleaves: usize,
    /// Per node: its row in `table`, its ports in `ports_of` and its hash seed.
    switches: Vec<SwitchRoute>,
    /// Distinct rows, one entry per leaf: the next-hop list in `hops` packed as
    /// `start << 32 | len` (a leaf-spine may have 1023 spines, so a length needs more
    /// than a byte). A hop reads the host's attachment, the switch's record, one entry
    /// here, one in `hops` and one in `ports_of`: all small enough to stay in cache.
    table: Vec<u64>,
    /// Next-hop lists: positions among a switch's ports.
    hops: Vec<u32>,
    /// Every switch's ports in order (from [`SwitchRoute::first`]).
    ports_of: Vec<PortId>,
}

/// The equal-cost next hops at one switch toward one leaf.
#[derive(Clone, Copy, Debug)]
pub struct NextHops<'a> {
    positions: &'a [u32],
    ports: &'a [PortId],
}

impl<'a> NextHops<'a> {
    /// How many there are.
    pub fn len(&self) -> usize {
        self.positions.len()
    }

    /// Whether there are none (the leaf is unreachable from here).
    pub fn is_empty(&self) -> bool {
        self.positions.is_empty()
    }

    /// The `i`-th, in the switch's port order.
    pub fn get(&self, i: usize) -> Option<PortId> {
        self.positions.get(i).map(|&k| self.ports[k as usize])
    }

    /// All of them, in the switch's port order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = PortId> + 'a {
        let ports = self.ports;
        self.positions.iter().map(move |&k| ports[k as usize])
    }
}

impl Routes {
    /// Computes the tables for the current link states.
    pub fn compute(nodes: &[Node], ports: &[Port], nics: usize, seed: u64) -> Routes {
        let mut switch_index = vec![u32::MAX; nodes.len()];
        let mut leaf_index = vec![u32::MAX; nodes.len()];
        let mut nswitches = 0u32;
        let mut nleaves = 0u32;
        let mut switches = vec![SwitchRoute { row: u32::MAX, first: 0, seed: 0 }; nodes.len()];
        let mut ports_of = Vec::new();
        for (i, n) in nodes.iter().enumerate() {
            if n.kind == NodeKind::Switch {
                switch_index[i] = nswitches;
                nswitches += 1;
                switches[i].seed = mix64(seed ^ mix64(0xEC3B_0000 + i as u64));
                switches[i].first = ports_of.len() as u32;
                ports_of.extend(n.ports());
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
                let down_pos = nodes[leaf as usize].ports().position(|q| q == down).expect("a port of its node") as u32;
                attach.push(Attach { leaf, down, down_pos, leaf_index: leaf_index[leaf as usize] });
            }
        }
        let mut routes = Routes {
            nics,
            attach,
            leaf_index,
            switch_index,
            nleaves: nleaves as usize,
            switches,
            table: Vec::new(),
            hops: Vec::new(),
            ports_of,
        };
        routes.fill(nodes, ports, nswitches as usize);
        routes
    }

    fn fill(&mut self, nodes: &[Node], ports: &[Port], nswitches: usize) {
        let mut dist = vec![u32::MAX; nodes.len()];
        let mut frontier = Vec::new();
        let mut next = Vec::new();
        // Lookups only (never iterated), so the maps' order cannot leak into results.
        let mut group_of: std::collections::HashMap<Vec<u32>, u32> = std::collections::HashMap::new();
        let mut row_of: std::collections::HashMap<Vec<u64>, u32> = std::collections::HashMap::new();
        let mut list = Vec::new();
        // Every (switch, leaf) pair's list first (`global`, 0 = empty), then the
        // distinct rows.
        let mut global = vec![0u32; nswitches * self.nleaves];
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
                for (k, p) in node.ports().enumerate() {
                    if let Some(m) = switch_neighbour(nodes, ports, p) {
                        if dist[m as usize] + 1 == dist[s] {
                            list.push(k as u32);
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
        let mut row = vec![0u64; self.nleaves];
        for (s, sw) in self.switches.iter_mut().enumerate() {
            let si = self.switch_index[s];
            if si == u32::MAX {
                continue;
            }
            let groups = &global[si as usize * self.nleaves..][..self.nleaves];
            for (entry, &g) in row.iter_mut().zip(groups) {
                let (start, len) = lists[g as usize];
                *entry = (start as u64) << 32 | len as u64;
            }
            // A leaf's own column is never read (a packet for one of its hosts leaves
            // by the attachment's port); it copies a neighbour so that leaves whose
            // other columns agree share a row.
            let own = self.leaf_index[s];
            if own != u32::MAX && self.nleaves > 1 {
                row[own as usize] = row[(own as usize + 1) % self.nleaves];
            }
            sw.row = match row_of.get(&row) {
                Some(&r) => r,
                None => {
                    let r = self.table.len() as u32;
                    self.table.extend_from_slice(&row);
                    row_of.insert(row.clone(), r);
                    r
                }
            };
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
        let k = match len {
            0 => return None,
            1 => self.hops[start as usize],
            _ => {
                let h = ecmp_hash(sw.seed, net);
                let i = ((h >> 32) * len as u64) >> 32;
                self.hops[start as usize + i as usize]
            }
        };
        Some(self.ports_of[(sw.first + k) as usize])
    }

    /// The equal-cost next hops at switch `node` toward the leaf of host `dst` in
    /// `plane` (for path enumeration and tests); at that leaf, its port to the host.
    pub fn next_hops(&self, node: u32, plane: u8, dst: u32) -> NextHops<'_> {
        let nic = if self.nics > 1 { plane as usize } else { 0 };
        let at = &self.attach[dst as usize * self.nics + nic];
        let sw = self.switches[node as usize];
        let ports = &self.ports_of[sw.first as usize..];
        if at.leaf == node {
            return NextHops { positions: std::slice::from_ref(&at.down_pos), ports };
        }
        let (start, len) = self.list(sw, at.leaf_index);
        NextHops { positions: &self.hops[start as usize..(start + len) as usize], ports }
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

    /// Switches in the same role share one row of the table (so that it stays in cache
    /// on a large fabric), and every next hop is still a port of the switch itself,
    /// one step closer to the destination's leaf.
    #[test]
    fn switches_in_the_same_role_share_a_row_and_route_through_their_own_ports() {
        use crate::PortKind;
        let spec = TopologySpec::FatTree { k: 8, pods: 8, hosts_per_edge: 4, oversubscription: 1 };
        let links = LinkParams { host_link: Rate::gbps(100), fabric_link: Rate::gbps(100), delay: Dur::from_us(1) };
        let f = Fabric::new(&spec, &links, FabricConfig::default(), 7).expect("a valid fabric");
        // Edge switches all send remote traffic up, the aggregation switches of a pod
        // agree with each other, and cores send each pod's traffic to the same port.
        assert_eq!(f.routes.table.len() / f.routes.nleaves, 1 + 8 + 1);
        let hosts = 128;
        for (s, node) in f.nodes.iter().enumerate() {
            if node.kind != crate::NodeKind::Switch {
                continue;
            }
            for dst in 0..hosts {
                let hops: Vec<_> = f.next_hops(s as u32, 0, dst).iter().collect();
                assert!(!hops.is_empty(), "switch {s} reaches host {dst}");
                let dst_leaf = f.leaf_of(dst, 0);
                for &p in &hops {
                    let port = &f.ports[p as usize];
                    assert_eq!(port.node as usize, s, "a next hop of switch {s} is its own port");
                    let next = f.ports[port.peer as usize].node;
                    let up = port.kind == PortKind::Up;
                    match node.tier {
                        // Up unless the destination hangs from this edge.
                        1 => assert_eq!(up, s as u32 != dst_leaf),
                        // Down to the destination's edge when it is in this pod.
                        2 => assert!(up || next == dst_leaf),
                        _ => assert!(!up),
                    }
                }
                if node.tier == 1 && s as u32 != dst_leaf {
                    assert_eq!(hops.len(), 4, "every uplink of an edge switch");
                }
            }
        }
    }

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
        let hops: Vec<_> = f.next_hops(leaf, 0, 1).iter().collect();
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
