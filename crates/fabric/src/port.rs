//! Egress ports: class queues, the transmitter, the link it drives, counters.

use fabricsim_engine::{Dur, Rate, Rng, Time};
use fabricsim_wire::TrafficClass;
use std::collections::VecDeque;

/// Index of a port in its fabric.
pub type PortId = u32;

const CLASSES: usize = TrafficClass::COUNT;

/// What a port connects, for naming and per-hop policy (ECN on the last hop).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PortKind {
    /// A host NIC port toward its first switch.
    Nic,
    /// A switch port toward a host.
    Down,
    /// A switch port toward a switch of a higher tier.
    Up,
    /// A switch port toward a switch of a lower tier.
    Fabric,
}

impl PortKind {
    /// The label used in port names.
    pub fn label(self) -> &'static str {
        match self {
            PortKind::Nic => "nic",
            PortKind::Up => "up",
            PortKind::Down | PortKind::Fabric => "down",
        }
    }
}

/// A frame waiting in a class queue, with what the port needs to know about it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Queued {
    /// Pool slot.
    pub slot: u32,
    /// Bytes on the wire.
    pub wire: u32,
    /// The port it entered the switch through (PFC accounting).
    pub in_port: u32,
}

/// Cumulative counters of one port (the egress direction of one cable end, and the
/// ingress accounting of the other direction).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PortStats {
    /// Frames put on the wire.
    pub tx_pkts: u64,
    /// Bytes put on the wire, preamble and gap included.
    pub tx_bytes: u64,
    /// Frames this port marked CE.
    pub ecn_marks: u64,
    /// Frames dropped at this port (buffer full, link loss, link down).
    pub drops: u64,
    /// Frames trimmed at this port.
    pub trims: u64,
    /// PAUSE frames sent upstream through this port's ingress.
    pub pauses_sent: u64,
    /// Picoseconds the data class of this port spent paused.
    pub paused_ps: u64,
    /// Largest data-queue depth seen, bytes (reset by samplers).
    pub queue_max: u64,
}

/// One egress port and the link direction it transmits on.
///
/// `repr(C)` in access order: the first cache line holds what every hop reads (peer,
/// times, queue depths, flags), the second the queues and the wire; counters, the RNG
/// and rarely used settings follow.
#[derive(Clone, Debug)]
#[repr(C)]
pub struct Port {
    /// Owning node.
    pub node: u32,
    /// The port at the other end of the cable (its ingress receives our frames).
    pub peer: PortId,
    pub(crate) busy_until: Time,
    /// Link rate.
    pub rate: Rate,
    /// One-way propagation delay of the link.
    pub delay: Dur,
    /// Extra delay injected on this link (delay anomalies).
    pub extra_delay: Dur,
    pub(crate) queued: [u64; CLASSES],
    /// The node at the other end of the cable.
    pub peer_node: u32,
    pub(crate) txdone_pending: bool,
    pub(crate) arrive_pending: bool,
    /// Whether the link is up (a down link loses every frame sent on it).
    pub up: bool,
    /// Whether this port marks ECN.
    pub ecn: bool,
    /// Whether frames this port transmits are captured (pcap).
    pub tap: bool,

    /// Frames propagating on the link: `(arrival time at the peer, slot)`, in order.
    pub(crate) wire: VecDeque<(Time, u32)>,
    pub(crate) queues: [VecDeque<Queued>; CLASSES],
    /// Bytes per class that arrived through this port and are buffered in its node.
    pub(crate) ingress: [u64; CLASSES],
    pub(crate) paused: [bool; CLASSES],
    pub(crate) pause_sent: [bool; CLASSES],
    /// Index of this port within its node (NIC port number on hosts).
    pub index: u16,
    /// Role of the port.
    pub kind: PortKind,
    /// Probability that a frame is lost on this link.
    pub loss: f64,
    /// Frames carrying this entropy value are lost with this probability (a fault
    /// confined to one path, as an ACL dropping one EV would be).
    pub ev_loss: Option<(u32, f64)>,
    /// ECN `(kmin, kmax)` of this port, bytes.
    pub ecn_k: (u64, u64),
    pub(crate) paused_since: Time,
    pub(crate) rng: Rng,
    /// Counters.
    pub stats: PortStats,
}

impl Port {
    pub(crate) fn new(node: u32, index: u16, kind: PortKind, rate: Rate, delay: Dur, rng: Rng) -> Port {
        Port {
            node,
            peer: u32::MAX,
            peer_node: u32::MAX,
            index,
            kind,
            rate,
            delay,
            extra_delay: Dur::ZERO,
            up: true,
            loss: 0.0,
            ev_loss: None,
            ecn: false,
            tap: false,
            ecn_k: (0, 0),
            queues: Default::default(),
            queued: [0; CLASSES],
            busy_until: Time::ZERO,
            txdone_pending: false,
            paused: [false; CLASSES],
            paused_since: Time::ZERO,
            wire: VecDeque::new(),
            arrive_pending: false,
            ingress: [0; CLASSES],
            pause_sent: [false; CLASSES],
            rng,
            stats: PortStats::default(),
        }
    }

    /// Bytes waiting in the data-class queue.
    pub fn data_queue_bytes(&self) -> u64 {
        self.queued[TrafficClass::Data as usize]
    }

    /// Bytes waiting in all class queues.
    pub fn queue_bytes(&self) -> u64 {
        self.queued.iter().sum()
    }

    /// Whether the data class is currently paused by the downstream node.
    pub fn data_paused(&self) -> bool {
        self.paused[TrafficClass::Data as usize]
    }

    /// Whether the transmitter is serializing a frame at `now`.
    pub fn busy(&self, now: Time) -> bool {
        now < self.busy_until
    }

    /// The earliest time a new frame can start.
    pub fn free_at(&self) -> Time {
        self.busy_until
    }

    /// Picoseconds paused so far, including an ongoing pause up to `now`.
    pub fn paused_ps_at(&self, now: Time) -> u64 {
        let ongoing = if self.data_paused() { now.since(self.paused_since).ps() } else { 0 };
        self.stats.paused_ps + ongoing
    }

    /// The highest class with a queued frame that may be sent now.
    #[inline]
    pub(crate) fn eligible_class(&self) -> Option<usize> {
        (0..CLASSES).rev().find(|&c| !self.queues[c].is_empty() && !self.paused[c])
    }
}
