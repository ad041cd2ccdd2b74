//! Splitting a fabric into partitions that simulate side by side.
//!
//! A partitioned run (conservative parallel simulation, as in ns-3's distributed
//! simulator) gives each partition a full copy of the world but lets it act only for
//! the nodes it owns. A frame put on a *cross* port (one whose far end is owned by
//! another partition) does not enter the local wire: it leaves through the
//! partition's outbox as a [`Remote`] and is injected into the owner of the far end
//! at the next synchronisation point, onto that partition's copy of the same wire.
//! PFC frames across the cut travel the same way. Every cross frame arrives at least
//! one link delay after it was sent, so partitions that advance in windows no longer
//! than the smallest cross-link delay (the *lookahead*) never receive anything in
//! their past.
//!
//! A lazy cross port (see "Lazy departures" in [`crate::fabric`]) cannot catch up when
//! its wire's head arrives, since that happens in another partition: its partition
//! catches it up at the end of every window instead ([`Fabric::flush_cross`]), which
//! starts each due frame at its own start time as any other touch would, and a window
//! never begins after one of its frames is due ([`Fabric::next_cross_start`]).

use crate::fabric::{Fabric, FabricEvent};
use crate::port::PortId;
use crate::topology::NodeKind;
use fabricsim_engine::{Dur, EventQueue, Time};
use fabricsim_wire::Packet;

/// Something crossing from one partition to another.
#[derive(Clone, Copy, Debug)]
pub enum Remote {
    /// A frame that arrives at the far end of cross port `port` at `at`.
    Frame {
        /// Arrival time at the far end.
        at: Time,
        /// The (remote) egress port whose wire carries it.
        port: PortId,
        /// The frame.
        pkt: Packet,
        /// The link's `downs` when the frame started.
        downs: u32,
    },
    /// A PAUSE (`pause`) or RESUME for `class` reaching egress `port` at `at`.
    Pfc {
        /// Arrival time.
        at: Time,
        /// The paused egress port (owned by the receiving partition).
        port: PortId,
        /// Traffic class.
        class: u8,
        /// Pause or resume.
        pause: bool,
        /// The link's `downs` when it was sent.
        downs: u32,
    },
}

impl Remote {
    /// When it arrives.
    pub fn at(&self) -> Time {
        match *self {
            Remote::Frame { at, .. } | Remote::Pfc { at, .. } => at,
        }
    }
}

/// Which partition simulates each node: hosts in `n` equal runs of consecutive
/// indices (so racks and pods stay together), then each tier of switches, lowest
/// first, with the partition most of its already-placed neighbours belong to (ties go
/// to the partition with the fewest switches of that tier, then the lowest index).
pub fn assign(fabric: &Fabric, n: u8) -> Vec<u8> {
    let n = n.max(1) as usize;
    let hosts = fabric.hosts() as usize;
    let mut owner = vec![u8::MAX; fabric.nodes.len()];
    for (h, o) in owner.iter_mut().enumerate().take(hosts) {
        *o = (h * n / hosts.max(1)) as u8;
    }
    let max_tier = fabric.nodes.iter().map(|x| x.tier).max().unwrap_or(0);
    for tier in 1..=max_tier {
        let mut load = vec![0usize; n];
        for (i, node) in fabric.nodes.iter().enumerate() {
            if node.kind != NodeKind::Switch || node.tier != tier {
                continue;
            }
            let mut votes = vec![0usize; n];
            for p in node.ports() {
                let o = owner[fabric.ports[p as usize].peer_node as usize];
                if o != u8::MAX {
                    votes[o as usize] += 1;
                }
            }
            let best =
                (0..n).max_by_key(|&k| (votes[k], std::cmp::Reverse(load[k]), std::cmp::Reverse(k))).unwrap_or(0);
            owner[i] = best as u8;
            load[best] += 1;
        }
    }
    // Anything left (a switch tier without lower neighbours) goes to partition 0.
    for o in owner.iter_mut().filter(|o| **o == u8::MAX) {
        *o = 0;
    }
    owner
}

impl Fabric {
    /// Makes this copy of the fabric simulate partition `me` of `owner` (per node):
    /// ports whose far end belongs to another partition become cross ports. Returns
    /// the lookahead, the smallest delay of a cross link (`None` without any).
    pub fn set_partition(&mut self, owner: &[u8], me: u8) -> Option<Dur> {
        let mut lookahead: Option<Dur> = None;
        self.cross_lazy.clear();
        for (p, port) in self.ports.iter_mut().enumerate() {
            let cross = owner[port.node as usize] != owner[port.peer_node as usize];
            if cross {
                lookahead = Some(lookahead.map_or(port.delay, |l| l.min(port.delay)));
            }
            port.cross = cross && owner[port.node as usize] == me;
            if port.cross && port.lazy {
                self.cross_lazy.push(p as PortId);
            }
        }
        lookahead
    }

    /// Starts every frame a lazy cross port sends before `until` (the end of a window),
    /// so that it reaches the outbox in time: nothing else wakes such a port, whose
    /// wire's arrivals happen in another partition. Frames start at their own times, as
    /// on any lazy port (a frame queued on the port first makes it catch up).
    pub fn flush_cross(&mut self, until: Time) {
        for i in 0..self.cross_lazy.len() {
            let p = self.cross_lazy[i];
            let none = self.advance(p, until, false);
            debug_assert!(none.is_none(), "a cross port's frames leave through the outbox");
        }
    }

    /// The earliest time a lazy cross port starts a waiting frame, if any waits: a
    /// window must not begin after it.
    pub fn next_cross_start(&self) -> Option<Time> {
        self.cross_lazy
            .iter()
            .map(|&p| &self.ports[p as usize])
            .filter(|port| port.eligible_class().is_some())
            .map(|port| port.busy_until)
            .min()
    }

    /// Takes what crossed to other partitions since the last call, into `out` (which
    /// must be empty: the two buffers are swapped, so neither allocates again), and
    /// returns the earliest arrival among it.
    pub fn take_outbox(&mut self, out: &mut Vec<Remote>) -> Option<Time> {
        debug_assert!(out.is_empty());
        std::mem::swap(out, &mut self.outbox);
        self.outbox_min.take()
    }

    /// Receives `r` from another partition: a frame joins this copy of its wire (in
    /// order behind the frames before it), a PFC frame is scheduled.
    pub fn inject<E: From<FabricEvent> + Copy>(&mut self, r: &Remote, q: &mut EventQueue<E>) {
        match *r {
            Remote::Frame { at, port, pkt, downs } => {
                let slot = self.pool.alloc(pkt);
                let wire = &mut self.ports[port as usize];
                let at = wire.onto_wire(at, slot, downs);
                if !wire.arrive_pending {
                    wire.arrive_pending = true;
                    q.push(at, E::from(FabricEvent::Arrive(port, slot)));
                }
            }
            Remote::Pfc { at, port, class, pause, downs } => {
                q.push(at, E::from(FabricEvent::Pfc(port, class, pause, downs)))
            }
        }
    }

    /// Takes over from `other` (another partition's copy) the state of the nodes it
    /// owned (`theirs(node)`): their ports and buffers. Counters are summed, including
    /// the drops a copy counted on a port it did not own (a frame reaching it across
    /// the cut after the cable went down).
    pub fn absorb(&mut self, other: &mut Fabric, theirs: impl Fn(u32) -> bool) {
        for (p, port) in other.ports.iter_mut().enumerate() {
            if theirs(port.node) {
                std::mem::swap(&mut self.ports[p], port);
            }
            self.ports[p].stats.drops += port.stats.drops;
            port.stats.drops = 0;
        }
        for (i, node) in other.nodes.iter_mut().enumerate() {
            if theirs(i as u32) {
                std::mem::swap(&mut self.nodes[i], node);
            }
        }
        self.totals.add(&other.totals);
        self.pool.add_peak(other.pool.peak());
    }
}
