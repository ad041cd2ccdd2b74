//! Topology builders: leaf-spine, k-ary fat-tree, multi-plane two-tier Clos.
//!
//! Numbering is part of the contract: hosts are nodes `0..H` and are numbered switch by
//! switch (all hosts of the first leaf/edge/group first), then switches follow. Names
//! (`leaf[3]`, `t0[5].up[2]`, `host[7].nic[1]`) are what scenario files use to point at
//! a node or a cable, and what the results print.
//!
//! Every switch also gets an SRv6 uSID (`role(3) | plane(3) | index(10)`), used only
//! when the fabric routes by source routing.

use crate::port::PortKind;
use fabricsim_engine::{Dur, Rate};
use thiserror::Error;

/// Index of a node (host or switch) in its fabric. Hosts come first.
pub type NodeId = u32;

/// Host or switch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeKind {
    /// An end host with one NIC of one or more ports.
    Host,
    /// A switch with a shared buffer.
    Switch,
}

/// A node of the fabric.
///
/// `repr(C)` with what forwarding reads per hop (buffer use, state, plane, uSID) in
/// the first 16 bytes; the name and port list follow.
#[derive(Clone, Debug)]
#[repr(C)]
pub struct Node {
    /// Bytes of the shared buffer in use (switches).
    pub(crate) used: u64,
    /// Whether the node forwards (switches can fail).
    pub up: bool,
    /// Host or switch.
    pub kind: NodeKind,
    /// Tier: 0 hosts, 1 leaves/edges/T0, 2 spines/aggregation/T1, 3 cores.
    pub tier: u8,
    /// Plane of a multi-plane fabric (0 otherwise).
    pub plane: u8,
    /// SRv6 uSID of a switch (0 for hosts).
    pub usid: u16,
    /// Name such as `leaf[2]` or `host[17]`.
    pub name: String,
    /// Ports of this node, in creation order.
    pub port_ids: Vec<u32>,
}

impl Node {
    /// Port ids of this node.
    pub fn ports(&self) -> impl Iterator<Item = u32> + '_ {
        self.port_ids.iter().copied()
    }
}

/// uSID roles (top three bits of a uSID).
pub mod usid_role {
    /// Leaf / edge / T0 switch.
    pub const LEAF: u16 = 1;
    /// Spine / aggregation / T1 switch.
    pub const MID: u16 = 2;
    /// Core switch of a 3-tier fat-tree.
    pub const CORE: u16 = 3;
    /// A host port below a leaf; the index is the leaf's downlink number.
    pub const HOST: u16 = 4;
}

/// Composes a uSID from role, plane and index.
pub fn usid(role: u16, plane: u8, index: u32) -> u16 {
    (role << 13) | ((plane as u16 & 7) << 10) | (index as u16 & 0x3FF)
}

/// The shape of a fabric.
#[derive(Clone, Debug, PartialEq)]
pub enum TopologySpec {
    /// Two tiers: every leaf has one link to every spine.
    LeafSpine {
        /// Leaf (ToR) switches.
        leaves: u32,
        /// Spine switches.
        spines: u32,
        /// Hosts under each leaf.
        hosts_per_leaf: u32,
    },
    /// Three-tier fat-tree of radix `k`.
    FatTree {
        /// Switch radix (even). Defaults: `k` pods, `k/2` edge and aggregation switches
        /// per pod, `k/2` hosts per edge, `(k/2)^2` cores.
        k: u32,
        /// Number of pods (default `k`).
        pods: u32,
        /// Hosts per edge switch (default `k/2`).
        hosts_per_edge: u32,
        /// Aggregation-to-core oversubscription: each aggregation switch keeps
        /// `(k/2)/ratio` core uplinks and there are `(k/2)^2/ratio` cores.
        oversubscription: u32,
    },
    /// Multi-plane two-tier Clos (MRC section 2): each host NIC has one port per plane;
    /// per plane one T0 per host group and `t1_per_plane` T1 switches, every T0 linked
    /// to every T1 of its plane.
    MultiPlane {
        /// Parallel planes (NIC ports per host).
        planes: u32,
        /// Host groups (T0 switches per plane).
        groups: u32,
        /// Hosts per group.
        hosts_per_group: u32,
        /// T1 switches per plane.
        t1_per_plane: u32,
    },
}

/// Link rates and delay.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinkParams {
    /// Rate of host-to-leaf links (per NIC port).
    pub host_link: Rate,
    /// Rate of switch-to-switch links.
    pub fabric_link: Rate,
    /// One-way propagation delay of every link.
    pub delay: Dur,
}

/// A topology that cannot be built.
#[derive(Debug, Error, PartialEq)]
pub enum TopologyError {
    /// A parameter is out of range.
    #[error("topology.{field}: {message}")]
    Invalid {
        /// The scenario key at fault.
        field: &'static str,
        /// What is wrong and what is allowed.
        message: String,
    },
}

fn invalid(field: &'static str, message: impl Into<String>) -> TopologyError {
    TopologyError::Invalid { field, message: message.into() }
}

/// A node and its cables, before the fabric turns them into ports.
pub(crate) struct Plan {
    pub nodes: Vec<Node>,
    /// `(a, kind at a, b, kind at b, rate)`.
    pub cables: Vec<(NodeId, PortKind, NodeId, PortKind, Rate)>,
    pub nics: u32,
}

impl Plan {
    fn node(&mut self, kind: NodeKind, name: String, tier: u8, plane: u8, usid: u16) -> NodeId {
        self.nodes.push(Node { kind, name, port_ids: Vec::new(), tier, plane, usid, up: true, used: 0 });
        (self.nodes.len() - 1) as NodeId
    }
    fn hosts(&mut self, n: u32) {
        for h in 0..n {
            self.node(NodeKind::Host, format!("host[{h}]"), 0, 0, 0);
        }
    }
    fn switch(&mut self, name: String, tier: u8, plane: u8, role: u16, index: u32) -> NodeId {
        self.node(NodeKind::Switch, name, tier, plane, usid(role, plane, index))
    }
    fn host_cable(&mut self, host: NodeId, leaf: NodeId, rate: Rate) {
        self.cables.push((host, PortKind::Nic, leaf, PortKind::Down, rate));
    }
    fn up_cable(&mut self, lower: NodeId, upper: NodeId, rate: Rate) {
        self.cables.push((lower, PortKind::Up, upper, PortKind::Fabric, rate));
    }
}

impl TopologySpec {
    /// Number of hosts this topology has.
    pub fn hosts(&self) -> u64 {
        match *self {
            TopologySpec::LeafSpine { leaves, hosts_per_leaf, .. } => leaves as u64 * hosts_per_leaf as u64,
            TopologySpec::FatTree { k, pods, hosts_per_edge, .. } => {
                pods as u64 * (k / 2) as u64 * hosts_per_edge as u64
            }
            TopologySpec::MultiPlane { groups, hosts_per_group, .. } => groups as u64 * hosts_per_group as u64,
        }
    }

    /// Checks the parameters and lays out nodes and cables.
    pub(crate) fn plan(&self, links: &LinkParams) -> Result<Plan, TopologyError> {
        const MAX_HOSTS: u64 = 1 << 20;
        let hosts = self.hosts();
        if hosts == 0 {
            return Err(invalid("hosts", "the topology has no hosts; every count must be at least 1"));
        }
        if hosts > MAX_HOSTS {
            // Named by the key that multiplies up to the host count (there is no
            // `hosts` key): the largest factor.
            let larger = |a: (&'static str, u32), b: (&'static str, u32)| if b.1 > a.1 { b.0 } else { a.0 };
            let (field, how) = match *self {
                TopologySpec::LeafSpine { leaves, hosts_per_leaf, .. } => (
                    larger(("hosts_per_leaf", hosts_per_leaf), ("leaves", leaves)),
                    format!("{leaves} leaves x {hosts_per_leaf} hosts per leaf"),
                ),
                TopologySpec::FatTree { k, pods, hosts_per_edge, .. } => (
                    // `k` sets the other two by default; named only when they are not larger.
                    larger((larger(("k", k), ("pods", pods)), k.max(pods)), ("hosts_per_edge", hosts_per_edge)),
                    format!("k = {k}: {pods} pods x {} edge switches x {hosts_per_edge} hosts per edge", k / 2),
                ),
                TopologySpec::MultiPlane { groups, hosts_per_group, .. } => (
                    larger(("hosts_per_group", hosts_per_group), ("groups", groups)),
                    format!("{groups} groups x {hosts_per_group} hosts per group"),
                ),
            };
            return Err(invalid(field, format!("{how} = {hosts} hosts, more than the supported {MAX_HOSTS}")));
        }
        let mut p = Plan { nodes: Vec::new(), cables: Vec::new(), nics: 1 };
        let (h, f) = (links.host_link, links.fabric_link);
        match *self {
            TopologySpec::LeafSpine { leaves, spines, hosts_per_leaf } => {
                positive("leaves", leaves)?;
                positive("spines", spines)?;
                positive("hosts_per_leaf", hosts_per_leaf)?;
                below_1024("leaves", leaves)?;
                below_1024("spines", spines)?;
                below_1024("hosts_per_leaf", hosts_per_leaf)?;
                p.hosts(leaves * hosts_per_leaf);
                let first_leaf = p.nodes.len() as NodeId;
                for l in 0..leaves {
                    p.switch(format!("leaf[{l}]"), 1, 0, usid_role::LEAF, l);
                }
                for s in 0..spines {
                    p.switch(format!("spine[{s}]"), 2, 0, usid_role::MID, s);
                }
                for host in 0..leaves * hosts_per_leaf {
                    p.host_cable(host, first_leaf + host / hosts_per_leaf, h);
                }
                for l in 0..leaves {
                    for s in 0..spines {
                        p.up_cable(first_leaf + l, first_leaf + leaves + s, f);
                    }
                }
            }
            TopologySpec::FatTree { k, pods, hosts_per_edge, oversubscription } => {
                if k < 2 || k % 2 != 0 {
                    return Err(invalid("k", format!("must be an even number >= 2, got {k}")));
                }
                positive("pods", pods)?;
                if pods > k {
                    // A core switch has one port per pod: more pods than k would need
                    // cores of a larger radix than the fabric's switches.
                    return Err(invalid(
                        "pods",
                        format!("must be at most k = {k} (a core switch has a port per pod), got {pods}"),
                    ));
                }
                positive("hosts_per_edge", hosts_per_edge)?;
                below_1024("hosts_per_edge", hosts_per_edge)?;
                let half = k / 2;
                if oversubscription == 0 || half % oversubscription != 0 {
                    return Err(invalid(
                        "oversubscription",
                        format!("must divide k/2 = {half} (allowed: {})", divisors(half)),
                    ));
                }
                let uplinks = half / oversubscription;
                let cores = half * uplinks;
                if pods * half > 1024 || cores > 1024 {
                    return Err(invalid(
                        "k",
                        format!(
                            "{pods} pods x {half} edge switches = {} edge switches and {cores} cores; at most 1024 \
                             switches per tier are supported (k up to 44 with every pod, or fewer pods)",
                            pods * half
                        ),
                    ));
                }
                p.hosts(pods * half * hosts_per_edge);
                let first_edge = p.nodes.len() as NodeId;
                for e in 0..pods * half {
                    p.switch(format!("edge[{e}]"), 1, 0, usid_role::LEAF, e);
                }
                let first_agg = p.nodes.len() as NodeId;
                for a in 0..pods * half {
                    p.switch(format!("agg[{a}]"), 2, 0, usid_role::MID, a);
                }
                let first_core = p.nodes.len() as NodeId;
                for c in 0..cores {
                    p.switch(format!("core[{c}]"), 3, 0, usid_role::CORE, c);
                }
                for host in 0..pods * half * hosts_per_edge {
                    p.host_cable(host, first_edge + host / hosts_per_edge, h);
                }
                for pod in 0..pods {
                    for e in 0..half {
                        for a in 0..half {
                            p.up_cable(first_edge + pod * half + e, first_agg + pod * half + a, f);
                        }
                    }
                    for a in 0..half {
                        // Aggregation switch `a` of every pod reaches the same core group.
                        for u in 0..uplinks {
                            p.up_cable(first_agg + pod * half + a, first_core + a * uplinks + u, f);
                        }
                    }
                }
            }
            TopologySpec::MultiPlane { planes, groups, hosts_per_group, t1_per_plane } => {
                positive("planes", planes)?;
                if planes > 8 {
                    return Err(invalid("planes", format!("at most 8 planes are supported, got {planes}")));
                }
                positive("groups", groups)?;
                positive("hosts_per_group", hosts_per_group)?;
                positive("t1_per_plane", t1_per_plane)?;
                below_1024("groups", groups)?;
                below_1024("hosts_per_group", hosts_per_group)?;
                below_1024("t1_per_plane", t1_per_plane)?;
                p.nics = planes;
                p.hosts(groups * hosts_per_group);
                let first_t0 = p.nodes.len() as NodeId;
                for plane in 0..planes {
                    for g in 0..groups {
                        p.switch(format!("t0[{}]", plane * groups + g), 1, plane as u8, usid_role::LEAF, g);
                    }
                }
                let first_t1 = p.nodes.len() as NodeId;
                for plane in 0..planes {
                    for t in 0..t1_per_plane {
                        p.switch(format!("t1[{}]", plane * t1_per_plane + t), 2, plane as u8, usid_role::MID, t);
                    }
                }
                // NIC port `plane` of every host goes to the T0 of that plane in its group,
                // so a host's ports are created in plane order.
                for host in 0..groups * hosts_per_group {
                    for plane in 0..planes {
                        p.host_cable(host, first_t0 + plane * groups + host / hosts_per_group, h);
                    }
                }
                for plane in 0..planes {
                    for g in 0..groups {
                        for t in 0..t1_per_plane {
                            p.up_cable(first_t0 + plane * groups + g, first_t1 + plane * t1_per_plane + t, f);
                        }
                    }
                }
            }
        }
        Ok(p)
    }
}

fn positive(field: &'static str, v: u32) -> Result<(), TopologyError> {
    if v == 0 {
        Err(invalid(field, "must be at least 1"))
    } else {
        Ok(())
    }
}

fn below_1024(field: &'static str, v: u32) -> Result<(), TopologyError> {
    // uSIDs carry a 10-bit index per role and plane.
    if v > 1024 {
        Err(invalid(field, format!("at most 1024 are supported, got {v}")))
    } else {
        Ok(())
    }
}

fn divisors(n: u32) -> String {
    (1..=n).filter(|d| n.is_multiple_of(*d)).map(|d| d.to_string()).collect::<Vec<_>>().join(", ")
}
