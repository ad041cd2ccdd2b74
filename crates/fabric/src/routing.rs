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
    /// For `(switch_index, leaf_index)`, the index of its next-hop list among its
    /// switch's lists (`groups[group_base[switch_index] + table[..]]`).
    table: Vec<u16>,
    /// Where each switch's lists start in `groups`.
    group_base: Vec<u32>,
    /// Distinct next-hop lists of each switch as `(start, len)` into `hops`, the empty
    /// list first. Most `(switch, leaf)` pairs share a list (an edge switch sends every
    /// remote leaf's traffic to the same uplinks): a switch has at most a few dozen, so
    /// the table holds 2-byte indices (82 KB for a 1024-host fat-tree's 41 k pairs,
    /// against 328 KB of `(start, len)` pairs) and the per-hop lookup stays in cache.
    groups: Vec<(u32, u32)>,
    hops: Vec<PortId>,
    /// Per-switch ECMP hash seed.
    seeds: Vec<u64>,
}

impl Routes {
    /// Computes the tables for the current link states.
    pub fn compute(nodes: &[Node], ports: &[Port], nics: usize, seed: u64) -> Routes {
        let mut switch_index = vec![u32::MAX; nodes.len()];
        let mut leaf_index = vec![u32::MAX; nodes.len()];
        let mut nswitches = 0u32;
        let mut nleaves = 0u32;
        let mut seeds = Vec::new();
        for (i, n) in nodes.iter().enumerate() {
            if n.kind == NodeKind::Switch {
                switch_index[i] = nswitches;
                nswitches += 1;
                seeds.push(mix64(seed ^ mix64(0xEC3B_0000 + i as u64)));
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
                attach.push(Attach { leaf: ports[down as usize].node, down });
            }
        }
        let mut routes = Routes {
            nics,
            attach,
            leaf_index,
            switch_index,
            nleaves: nleaves as usize,
            table: vec![0; nswitches as usize * nleaves as usize],
            group_base: Vec::new(),
            groups: Vec::new(),
            hops: Vec::new(),
            seeds,
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
        let mut local = vec![u16::MAX; lists.len()];
        for (si, row) in global.chunks(self.nleaves.max(1)).enumerate() {
            let base = self.groups.len();
            self.group_base.push(base as u32);
            for (li, &g) in row.iter().enumerate() {
                if local[g as usize] == u16::MAX {
                    local[g as usize] =
                        u16::try_from(self.groups.len() - base).expect("fewer than 65536 next-hop lists per switch");
                    self.groups.push(lists[g as usize]);
                }
                self.table[si * self.nleaves + li] = local[g as usize];
            }
            for &g in row {
                local[g as usize] = u16::MAX;
            }
        }
    }

    /// `(start, len)` in `hops` of switch `node`'s next hops toward `leaf`.
    #[inline]
    fn list(&self, node: u32, leaf: u32) -> (u32, u32) {
        let si = self.switch_index[node as usize] as usize;
        let li = self.leaf_index[leaf as usize] as usize;
        self.groups[self.group_base[si] as usize + self.table[si * self.nleaves + li] as usize]
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
        let (start, len) = self.list(node, at.leaf);
        match len {
            0 => None,
            1 => Some(self.hops[start as usize]),
            _ => {
                let h = ecmp_hash(self.seeds[self.switch_index[node as usize] as usize], net);
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
        let (start, len) = self.list(node, at.leaf);
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
