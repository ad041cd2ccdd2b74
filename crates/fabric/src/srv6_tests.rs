//! SRv6 source routing (MRC section 2.3) on every topology: the address an EV maps to
//! is walked switch by switch through the static tables (a child module of `fabric`,
//! for its private state).

use super::*;
use fabricsim_engine::{Dur, Rate};
use std::collections::BTreeSet;

fn fabric(spec: TopologySpec) -> Fabric {
    let links = LinkParams { host_link: Rate::gbps(100), fabric_link: Rate::gbps(400), delay: Dur::from_us(1) };
    let cfg = FabricConfig { routing: Routing::Srv6, pfc: None, ..FabricConfig::default() };
    Fabric::new(&spec, &links, cfg, 4200).expect("a valid fabric")
}

/// The switches a packet from `src` to `dst` with entropy `ev` leaving NIC port `nic`
/// crosses, each switch matching its uSID, shifting and looking up the next one; and
/// the node the last hop delivers it to (`None` if a switch drops it).
fn walk(f: &mut Fabric, src: u32, dst: u32, nic: u8, ev: u32) -> (Vec<NodeId>, Option<NodeId>) {
    let mut p = Packet::default();
    (p.net.src, p.net.dst, p.payload, p.net.class) = (src, dst, 4000, TrafficClass::Data);
    p.net.set_entropy(ev);
    p.net.set_srv6(f.srv6_address(src, dst, nic, ev).expect("a path"));
    let slot = f.pool.alloc(p);
    let mut node = f.ports[f.nic_port(src, nic) as usize].peer_node;
    let mut path = Vec::new();
    let end = loop {
        path.push(node);
        let Some(e) = f.route(node, slot, None) else { break None };
        node = f.ports[e as usize].peer_node;
        if f.nodes[node as usize].kind == NodeKind::Host {
            break Some(node);
        }
        assert!(path.len() < 8, "a loop: {path:?}");
    };
    f.pool.free(slot);
    (path, end)
}

/// The host node of host `h`.
fn host_node(f: &Fabric, h: u32) -> NodeId {
    f.ports[f.nic_port(h, 0) as usize].node
}

#[test]
fn evs_select_every_path_once_and_reach_the_destination() {
    // (fabric, source, destination, equal-cost paths between them per plane, planes)
    let cases = [
        (TopologySpec::LeafSpine { leaves: 2, spines: 4, hosts_per_leaf: 2 }, 0, 3, 4, 1),
        (TopologySpec::FatTree { k: 4, pods: 4, hosts_per_edge: 2, oversubscription: 1 }, 0, 15, 4, 1),
        (TopologySpec::FatTree { k: 4, pods: 4, hosts_per_edge: 2, oversubscription: 1 }, 0, 3, 2, 1),
        (TopologySpec::MultiPlane { planes: 2, groups: 2, hosts_per_group: 2, t1_per_plane: 3 }, 0, 3, 3, 2),
    ];
    for (spec, src, dst, paths, planes) in cases {
        let mut f = fabric(spec.clone());
        let dst_node = host_node(&f, dst);
        for nic in 0..planes as u8 {
            let walks: Vec<_> = (0..paths).map(|ev| walk(&mut f, src, dst, nic, ev)).collect();
            for (ev, (path, end)) in walks.iter().enumerate() {
                assert_eq!(*end, Some(dst_node), "{spec:?} plane {nic} EV {ev}: {path:?}");
                assert!(path.iter().all(|&n| f.nodes[n as usize].plane == nic), "{spec:?}: left plane {nic}");
            }
            let distinct: BTreeSet<_> = walks.iter().map(|w| w.0.clone()).collect();
            assert_eq!(distinct.len(), paths as usize, "{spec:?} plane {nic}: EVs 0..{paths} share paths");
            // The EV's digits wrap: EV `paths` takes EV 0's path again.
            assert_eq!(walk(&mut f, src, dst, nic, paths).0, walks[0].0);
        }
    }
}

#[test]
fn a_failed_cable_does_not_change_the_route_of_an_address() {
    // Static tables: the packet still heads for the dead cable (and is lost there);
    // only the sender, choosing other EVs, routes around it.
    let spec = TopologySpec::FatTree { k: 4, pods: 4, hosts_per_edge: 2, oversubscription: 1 };
    let mut f = fabric(spec);
    let (before, _) = walk(&mut f, 0, 15, 0, 1);
    let up = *f
        .ports_of(before[0])
        .iter()
        .find(|&&p| f.ports[p as usize].peer_node == before[1])
        .expect("the first hop's uplink");
    let mut q: EventQueue<FabricEvent> = EventQueue::new();
    f.set_cable_up(up, false, Time(0), &mut q);
    assert_eq!(walk(&mut f, 0, 15, 0, 1).0, before);
}

#[test]
fn an_address_for_another_switch_is_dropped_not_hashed() {
    // A switch whose uSID is not the address's active one refuses the packet (counted
    // as a route drop by the caller) rather than falling back to ECMP.
    let mut f = fabric(TopologySpec::LeafSpine { leaves: 2, spines: 2, hosts_per_leaf: 1 });
    let mut p = Packet::default();
    (p.net.src, p.net.dst, p.net.class) = (0, 1, TrafficClass::Data);
    p.net.set_srv6((SRV6_LOCATOR as u128) << 96);
    let slot = f.pool.alloc(p);
    let leaf = f.leaf_of(0, 0);
    assert_eq!(f.route(leaf, slot, None), None);
    f.pool.free(slot);
}
