//! Egress ports: class queues, the transmitter, the link it drives, counters.

use fabricsim_engine::{Dur, Rate, Ring, Rng, Time};
use fabricsim_wire::TrafficClass;

/// Index of a port in its fabric.
pub type PortId = u32;

const CLASSES: usize = TrafficClass::COUNT;
/// Frames a class queue keeps inside the port. On benchmark (c) 91 % of data frames
/// and nearly all control frames joined a queue shorter than this.
pub(crate) const QUEUE_INLINE: usize = 6;
/// Frames the wire keeps inside the port. A 1 µs, 100 Gb/s link carrying data one
/// way and acknowledgements the other holds 5-6 frames at a time; on benchmark (c)
/// 81 % of frames joined a wire shorter than this.
pub(crate) const WIRE_INLINE: usize = 8;

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
#[derive(Clone, Copy, Debug, Default)]
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
///
/// `repr(C)`: the four counters every hop updates come first (three per transmission,
/// the largest queue per enqueue), so they are within the [`Port`]'s prefetched lines
/// (with `busy_ps` last, outside them, every transmission missed the cache once more).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[repr(C)]
pub struct PortStats {
    /// Frames put on the wire.
    pub tx_pkts: u64,
    /// Bytes put on the wire, preamble and gap included.
    pub tx_bytes: u64,
    /// Largest data-queue depth seen, bytes (reset by samplers).
    pub queue_max: u64,
    /// Picoseconds of serialization of the frames put on the wire (the last one's
    /// counted whole from its start; see [`Port::busy_ps_at`]).
    pub busy_ps: u64,
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
}

/// One egress port and the link direction it transmits on.
///
/// Laid out by access (`repr(C)`, aligned to a cache line; the offsets are checked at
/// compile time below): line 0 holds what every hop reads (times, rate, queue depths,
/// ids, kind, event flags); then the class queues with their first frames inline, the
/// wire's tail time and the per-transmission flags (link up, loss, tap), the wire with
/// its first frames inline, and the per-transmission counters: the first
/// `HOT_LINES` lines, which the run loop prefetches before an event touches the
/// port. The RNG, PFC and fault settings follow.
///
/// Both ends of a cable are always up or down together ([`crate::Fabric::set_cable_up`]),
/// so a port's own `up` says whether its link delivers.
#[derive(Clone, Debug)]
#[repr(C, align(64))]
pub struct Port {
    pub(crate) busy_until: Time,
    /// Link rate.
    pub rate: Rate,
    /// One-way propagation delay of the link.
    pub delay: Dur,
    /// Extra delay injected on this link (delay anomalies).
    pub extra_delay: Dur,
    pub(crate) queued: [u64; CLASSES],
    /// Owning node.
    pub node: u32,
    /// The port at the other end of the cable (its ingress receives our frames).
    pub peer: PortId,
    /// The node at the other end of the cable.
    pub peer_node: u32,
    /// Role of the port.
    pub kind: PortKind,
    pub(crate) txdone_pending: bool,
    pub(crate) arrive_pending: bool,
    /// Whether departures are lazy (a switch port of a fabric without PFC, not tapped;
    /// see "Lazy departures" in [`crate::fabric`]).
    pub(crate) lazy: bool,

    /// The class queues (see [`QUEUE_INLINE`]).
    pub(crate) queues: [Ring<Queued, QUEUE_INLINE>; CLASSES],
    /// Arrival time at the peer of the last frame put on the wire (a frame never
    /// overtakes the one before it), kept here so a transmission need not read the
    /// wire's back entry.
    pub(crate) wire_tail: Time,
    /// Whether this port marks ECN.
    pub ecn: bool,
    /// Whether frames this port transmits are captured (pcap).
    pub tap: bool,
    /// Whether `loss` or `ev_loss` is set (the per-frame loss draw is skipped otherwise).
    pub(crate) lossy: bool,
    /// Whether the link is up (a down link loses every frame sent on it).
    pub up: bool,
    /// Whether the far end belongs to another partition (see [`crate::partition`]).
    pub(crate) cross: bool,
    pub(crate) paused: [bool; CLASSES],
    /// Times the link went down (wrapping at 2^32): a frame or PFC frame that started on it
    /// under another count was on the link when it died, and is lost even if the link
    /// is back up when it would have arrived.
    pub(crate) downs: u32,
    /// Frames propagating on the link: `(arrival time at the peer, slot, the link's
    /// `downs` when the frame started)`, in order (see [`WIRE_INLINE`]).
    pub(crate) wire: Ring<(Time, u32, u32), WIRE_INLINE>,
    /// Counters.
    pub stats: PortStats,
    /// Index of this port within its node (NIC port number on hosts).
    pub index: u16,

    /// Probability that a frame is lost on this link (set with
    /// [`crate::Fabric::set_cable_loss`]).
    pub(crate) loss: f64,
    /// Frames carrying this entropy value are lost with this probability (a fault
    /// confined to one path, as an ACL dropping one EV would be).
    pub(crate) ev_loss: Option<(u32, f64)>,
    /// Bytes per class that arrived through this port and are buffered in its node.
    pub(crate) ingress: [u64; CLASSES],
    pub(crate) pause_sent: [bool; CLASSES],
    /// ECN `(kmin, kmax)` of this port, bytes.
    pub ecn_k: (u64, u64),
    pub(crate) paused_since: Time,
    pub(crate) rng: Rng,
    /// Whether the cable itself is up (link faults). The link delivers (`up`) only if
    /// it is and the switches at both ends are up too: a switch restarting does not
    /// revive a cable that failed on its own.
    pub(crate) cable_up: bool,
}

const _: () = {
    use std::mem::{offset_of, size_of};
    assert!(offset_of!(Port, lazy) < 64);
    assert!(offset_of!(Port, queues) == 64);
    assert!(offset_of!(Port, downs) < offset_of!(Port, wire));
    assert!(offset_of!(Port, stats) + offset_of!(PortStats, busy_ps) + size_of::<u64>() <= HOT_LINES * 64);
    // What an arrival reads beyond line 0 (the link's state, the wire) is in `WIRE_LINES`.
    assert!(offset_of!(Port, up) / 64 >= WIRE_LINES.start && offset_of!(Port, downs) / 64 >= WIRE_LINES.start);
    assert!(WIRE_LINES.start > 0 && WIRE_LINES.end <= HOT_LINES);
};

/// Cache lines at the start of a [`Port`] that hold everything a hop touches (the
/// prefetch before an event loads them all).
pub(crate) const HOT_LINES: usize = 8;

/// The lines of a [`Port`] from the wire's tail time to the wire's end, which with line 0
/// are all a frame's arrival reads (it takes the frame off the wire; the class queues
/// are only read if the port has frames to start).
pub(crate) const WIRE_LINES: std::ops::Range<usize> = {
    use std::mem::{offset_of, size_of};
    let end = offset_of!(Port, wire) + size_of::<Ring<(Time, u32, u32), WIRE_INLINE>>();
    offset_of!(Port, wire_tail) / 64..end.div_ceil(64)
};

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
            lossy: false,
            lazy: false,
            cross: false,
            ecn_k: (0, 0),
            queues: Default::default(),
            queued: [0; CLASSES],
            busy_until: Time::ZERO,
            txdone_pending: false,
            paused: [false; CLASSES],
            downs: 0,
            cable_up: true,
            paused_since: Time::ZERO,
            wire: Ring::default(),
            wire_tail: Time::ZERO,
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

    /// Picoseconds spent serializing frames up to `now`: the frame on the transmitter
    /// counts only its part before `now`, so the busy time of an interval never exceeds
    /// the interval (utilization at most 1).
    pub fn busy_ps_at(&self, now: Time) -> u64 {
        self.stats.busy_ps.saturating_sub(self.busy_until.since(now).ps())
    }

    /// Picoseconds paused so far, including an ongoing pause up to `now`.
    pub fn paused_ps_at(&self, now: Time) -> u64 {
        let ongoing = if self.data_paused() { now.since(self.paused_since).ps() } else { 0 };
        self.stats.paused_ps + ongoing
    }

    /// Sets the random loss on this link direction.
    pub(crate) fn set_loss(&mut self, loss: f64, ev_loss: Option<(u32, f64)>) {
        self.loss = loss;
        self.ev_loss = ev_loss;
        self.lossy = loss > 0.0 || ev_loss.is_some();
    }

    /// Appends the frame in `slot`, due at the peer at `at`, to the wire, and returns
    /// when it arrives: never before the frame ahead of it, even if the link's delay
    /// was just lowered. `downs` is the link's down count when the frame started.
    #[inline]
    pub(crate) fn onto_wire(&mut self, at: Time, slot: u32, downs: u32) -> Time {
        let at = at.max(self.wire_tail);
        self.wire_tail = at;
        self.wire.push_back((at, slot, downs));
        at
    }

    /// Whether any class queue holds a frame, paused or not, read from the port's first
    /// line: a class's queued bytes are non-zero exactly while it holds a frame (no
    /// frame is zero bytes).
    #[inline]
    pub(crate) fn holds_frames(&self) -> bool {
        self.queued.iter().any(|&b| b != 0)
    }

    /// The highest class with a queued frame that may be sent now.
    #[inline]
    pub(crate) fn eligible_class(&self) -> Option<usize> {
        (0..CLASSES).rev().find(|&c| !self.queues[c].is_empty() && !self.paused[c])
    }
}
