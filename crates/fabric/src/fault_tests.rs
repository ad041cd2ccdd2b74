//! Link and switch faults against PFC, frames in flight and independent cable
//! failures (a child module of `fabric`, for its private state).

use super::*;
use fabricsim_engine::{Dur, Rate};

/// Two leaves, one spine, one host per leaf, 100 Gb/s, 1 us per link.
fn fabric(pfc: bool) -> Fabric {
    let spec = TopologySpec::LeafSpine { leaves: 2, spines: 1, hosts_per_leaf: 1 };
    let links = LinkParams { host_link: Rate::gbps(100), fabric_link: Rate::gbps(100), delay: Dur::from_us(1) };
    let mut cfg = FabricConfig::default();
    if !pfc {
        cfg.pfc = None;
    }
    Fabric::new(&spec, &links, cfg, 4200).expect("a valid fabric")
}

/// A 4000-byte data packet from host 0 to host 1.
fn packet() -> Packet {
    let mut p = Packet::default();
    (p.net.src, p.net.dst, p.payload, p.net.class) = (0, 1, 4000, TrafficClass::Data);
    p
}

/// Handles every event up to `until`, releasing delivered packets.
fn run(f: &mut Fabric, q: &mut EventQueue<FabricEvent>, until: Time) {
    while q.peek_time().is_some_and(|t| t <= until) {
        let (t, ev) = q.pop().expect("peeked");
        if let Some(FabricOutput::Deliver { slot, .. }) = f.handle(t, ev, q) {
            f.release(slot);
        }
    }
}

/// Host 0's leaf's uplink.
fn leaf_up(f: &Fabric) -> PortId {
    let leaf = f.leaf_of(0, 0);
    *f.ports_of(leaf).iter().find(|&&p| f.ports[p as usize].kind == PortKind::Up).expect("an uplink")
}

const US: u64 = 1_000_000;

/// A PAUSE on the wire when its link goes down (and comes back before it would have
/// arrived) is lost with the link: taken, it paused the port for good, since its
/// sender forgot it had sent it and never sends the RESUME.
#[test]
fn a_pause_in_flight_when_its_link_dies_is_lost_with_it() {
    let mut f = fabric(true);
    let mut q = EventQueue::new();
    let p = leaf_up(&f);
    let peer = f.ports[p as usize].peer;
    f.ports[peer as usize].pause_sent[DATA] = true;
    f.send_pfc(peer, DATA, true, Time(0), &mut q); // arrives at 1 us
    f.set_cable_up(p, false, Time(US / 2), &mut q);
    f.set_cable_up(p, true, Time(7 * US / 10), &mut q);
    run(&mut f, &mut q, Time(10 * US));
    assert!(!f.ports[p as usize].paused[DATA], "the port stays paused after its link came back");
}

/// Frames held by a paused port when its link dies drain onto the dead link (lost,
/// counted, their buffer returned); they used to stay queued for ever, holding the
/// switch's buffer.
#[test]
fn frames_held_by_a_pause_drain_when_the_link_dies() {
    let mut f = fabric(true);
    let mut q = EventQueue::new();
    let p = leaf_up(&f);
    f.handle(Time(0), FabricEvent::Pfc(p, DATA as u8, true, 0), &mut q);
    for i in 0..3u64 {
        let t = Time(i * 4 * US / 10);
        run(&mut f, &mut q, t);
        f.nic_send(t, 0, 0, packet(), &mut q);
    }
    run(&mut f, &mut q, Time(5 * US));
    assert!(f.ports[p as usize].queue_bytes() > 0, "the pause holds the frames");
    f.set_cable_up(p, false, Time(5 * US), &mut q);
    run(&mut f, &mut q, Time(50 * US));
    f.set_cable_up(p, true, Time(50 * US), &mut q);
    run(&mut f, &mut q, Time(100 * US));
    let leaf = f.leaf_of(0, 0);
    assert_eq!(f.ports[p as usize].queue_bytes(), 0, "frames stuck in the queue");
    assert_eq!(f.nodes[leaf as usize].used, 0, "buffer not returned");
    assert_eq!(f.totals.link_losses, 3);
}

/// A switch coming back up brings back its links, but not one whose cable failed on
/// its own.
#[test]
fn a_switch_restart_does_not_revive_a_failed_cable() {
    let mut f = fabric(false);
    let mut q: EventQueue<FabricEvent> = EventQueue::new();
    let p = leaf_up(&f);
    let spine = f.ports[p as usize].peer_node;
    f.set_cable_up(p, false, Time(0), &mut q);
    f.set_switch_up(spine, false, Time(1000), &mut q);
    f.set_switch_up(spine, true, Time(2000), &mut q);
    assert!(!f.ports[p as usize].up, "the failed cable came back with the switch");
    let other = f.ports_of(spine).iter().copied().find(|&s| s != f.ports[p as usize].peer).expect("another port");
    assert!(f.ports[other as usize].up, "the spine's other link is back");
    f.set_cable_up(p, true, Time(3000), &mut q);
    assert!(f.ports[p as usize].up && f.ports[f.ports[p as usize].peer as usize].up);
}

/// A lossy fabric with one frame on host 0's leaf uplink `p` (started at about
/// 1.33 us, arriving at about 2.66 us), at 1.5 us: `(fabric, queue, p)`.
fn frame_on_leaf_uplink() -> (Fabric, EventQueue<FabricEvent>, PortId) {
    let mut f = fabric(false);
    let mut q = EventQueue::new();
    let p = leaf_up(&f);
    f.nic_send(Time(0), 0, 0, packet(), &mut q);
    run(&mut f, &mut q, Time(15 * US / 10));
    f.settle(Time(15 * US / 10));
    assert_eq!(f.ports[p as usize].wire.len(), 1);
    (f, q, p)
}

/// A frame on a link while it is down is lost, even if the link is back up by the
/// time the frame would have arrived.
#[test]
fn a_frame_on_a_link_during_a_short_outage_is_lost() {
    let (mut f, mut q, p) = frame_on_leaf_uplink();
    f.set_cable_up(p, false, Time(16 * US / 10), &mut q);
    f.set_cable_up(p, true, Time(17 * US / 10), &mut q);
    run(&mut f, &mut q, Time(100 * US));
    assert_eq!((f.totals.link_losses, f.totals.delivered), (1, 0));
}

/// However often the link flaps while a frame is on it: a count of down transitions
/// kept modulo 256 let a frame through after exactly 256 flaps.
#[test]
fn a_frame_on_a_link_that_flaps_256_times_is_lost() {
    let (mut f, mut q, p) = frame_on_leaf_uplink();
    for k in 0..256 {
        f.set_cable_up(p, false, Time(16 * US / 10 + 2 * k), &mut q);
        f.set_cable_up(p, true, Time(16 * US / 10 + 2 * k + 1), &mut q);
    }
    run(&mut f, &mut q, Time(100 * US));
    assert_eq!((f.totals.link_losses, f.totals.delivered), (1, 0));
}
