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
//! Cross ports are always eager (a `TxDone` per frame): a lazy port catches up when
//! its wire's head arrives, and that arrival now happens in another partition.

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
            let best = (0..n).max_by_key(|&k| (votes[k], std::cmp::Reverse(load[k]), std::cmp::Reverse(k))).unwrap_or(0);
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
        for port in &mut self.ports {
            let cross = owner[port.node as usize] != owner[port.peer_node as usize];
            if cross {
                lookahead = Some(lookahead.map_or(port.delay, |l| l.min(port.delay)));
            }
            port.cross = cross && owner[port.node as usize] == me;
            if cross {
                port.lazy = false;
            }
        }
        lookahead
    }

    /// Takes what crossed to other partitions since the last call.
    pub fn take_outbox(&mut self, out: &mut Vec<Remote>) {
        out.append(&mut self.outbox);
    }

    /// Receives `r` from another partition: a frame joins this copy of its wire (in
    /// order behind the frames before it), a PFC frame is scheduled.
    pub fn inject<E: From<FabricEvent> + Copy>(&mut self, r: &Remote, q: &mut EventQueue<E>) {
        match *r {
            Remote::Frame { at, port, pkt } => {
                let slot = self.pool.alloc(pkt);
                let wire = &mut self.ports[port as usize];
                let at = wire.wire.back().map_or(at, |&(tail, _)| at.max(tail));
                wire.wire.push_back((at, slot));
                if !wire.arrive_pending {
                    wire.arrive_pending = true;
                    q.push(at, E::from(FabricEvent::Arrive(port, slot)));
                }
            }
            Remote::Pfc { at, port, class, pause } => q.push(at, E::from(FabricEvent::Pfc(port, class, pause))),
        }
    }

    /// Takes over from `other` (another partition's copy) the state of the nodes it
    /// owned (`mine(node)` false): their ports and buffers. Counters are summed.
    pub fn absorb(&mut self, other: &mut Fabric, theirs: impl Fn(u32) -> bool) {
        for (p, port) in other.ports.iter_mut().enumerate() {
            if theirs(port.node) {
                std::mem::swap(&mut self.ports[p], port);
            }
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
