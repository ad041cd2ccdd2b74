//! The fabric's event handlers and its interface to hosts.
//!
//! # Events
//! The fabric schedules three kinds of [`FabricEvent`] into the caller's queue:
//! * `TxDone(port)`: the port's transmitter is free; start the next eligible frame.
//!   Scheduled only when a frame is waiting (or always for host NIC ports, whose
//!   host must be told); a lazy port needs it only when its wire is empty.
//! * `Arrive(port)`: the first frame in the port's wire FIFO reaches the far end.
//!   One such event is pending per busy link, however many frames are in flight.
//! * `Pfc(port, class, pause)`: a PAUSE or RESUME frame reaches the upstream port.
//!
//! # Lazy departures
//! A switch port in a fabric without PFC is *lazy*: it schedules no `TxDone` per
//! frame. Nothing but an arrival into its queue can change which frame it sends next
//! or when (no PAUSE can stop it), so its departures are already fixed: frames leave
//! back to back at `busy_until`, highest class first. The port catches up
//! (`Fabric::advance`), starting each due frame at its own start time
//! (marking ECN on the queue it leaves then, taking the link's state then), whenever
//! it is next touched: before a frame is queued on it, when the head of its wire
//! arrives (a frame started later cannot arrive earlier, so this event always comes
//! in time), when a fault changes it, and before ports are sampled. Only a port whose
//! wire is empty while frames wait (its last frames were lost on the link) needs a
//! `TxDone` to be woken. The one other reader of the departures is buffer
//! admission, which counts a switch's occupied bytes: a refusal is decided only after
//! every port of the switch has caught up, so the outcome is exactly as if each
//! departure had been an event. This removes about one event per packet-hop on a
//! loaded fabric (benchmark (c)); ports with PFC, NIC ports and tapped ports (pcap
//! needs frames in time order) stay eager.
//!
//! # Hosts
//! A host's transport layer learns through [`FabricOutput`] that a packet arrived
//! (`Deliver`) or that a NIC port can take a packet (`NicReady`), and sends with
//! [`Fabric::nic_send`]. NIC ports are pulled, not pushed: a NIC transmits only when
//! the port is free, so pacing and arbitration stay in the transport layer.
//!
//! # Buffer admission at a switch
//! Data with PFC is admitted while the shared buffer has room (PFC keeps it from
//! filling). Lossy data must also fit the port's dynamic threshold `alpha * free`.
//! With trimming on, data that would be refused, or that finds the data queue above
//! the trim threshold, loses its payload and continues as a header in the control
//! class. Control frames only need buffer room.

use crate::config::{pfc_headroom, FabricConfig, Routing};
use crate::partition::Remote;
use crate::pool::Pool;
use crate::port::{Port, PortId, PortKind, Queued};
use crate::routing::Routes;
use crate::topology::{usid, usid_role, LinkParams, Node, NodeId, NodeKind, TopologyError, TopologySpec};
use fabricsim_engine::{EventQueue, Rng, Time};
use fabricsim_wire::{Ecn, NetHdr, Packet, TrafficClass};

/// The SRv6 locator block of every fabric (`fcbb:bb00::/32`).
pub const SRV6_LOCATOR: u32 = 0xfcbb_bb00;
const LOCATOR_MASK: u128 = (u32::MAX as u128) << 96;

/// An event the fabric scheduled for itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FabricEvent {
    /// The port finished serializing a frame.
    TxDone(PortId),
    /// The head of the port's wire FIFO arrives at the peer.
    /// (The slot of that frame rides along so the run loop can prefetch the packet.)
    Arrive(PortId, u32),
    /// A PFC frame for `class` arrives at egress `port`: pause (`true`) or resume,
    /// sent when the link's `downs` count was the last field.
    Pfc(PortId, u8, bool, u32),
}

/// What the fabric reports to the host layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FabricOutput {
    /// Packet in pool slot `slot` arrived at `host` on NIC port `nic`. The receiver
    /// must [`Fabric::release`] the slot once done with it.
    Deliver {
        /// Receiving host.
        host: u32,
        /// NIC port it arrived on.
        nic: u8,
        /// Pool slot of the packet.
        slot: u32,
    },
    /// NIC port `nic` of `host` can transmit.
    NicReady {
        /// Host.
        host: u32,
        /// NIC port.
        nic: u8,
    },
}

/// Fabric-wide counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    /// Frames put on a link, every kind (data, control, PFC) counted once per link.
    pub packet_hops: u64,
    /// Frames dropped for lack of buffer.
    pub buffer_drops: u64,
    /// Frames lost on a link (random loss or link down).
    pub link_losses: u64,
    /// Frames dropped because the switch had no route (or was down, or SRv6 missed).
    pub route_drops: u64,
    /// Frames marked CE.
    pub ecn_marks: u64,
    /// PAUSE frames sent.
    pub pfc_pauses: u64,
    /// Frames trimmed.
    pub trims: u64,
    /// Frames delivered to hosts.
    pub delivered: u64,
}

impl Totals {
    /// Adds `o`'s counters (partitions of one run).
    pub fn add(&mut self, o: &Totals) {
        self.packet_hops += o.packet_hops;
        self.buffer_drops += o.buffer_drops;
        self.link_losses += o.link_losses;
        self.route_drops += o.route_drops;
        self.ecn_marks += o.ecn_marks;
        self.pfc_pauses += o.pfc_pauses;
        self.trims += o.trims;
        self.delivered += o.delivered;
    }

    /// All frames that never reached their destination.
    pub fn drops(&self) -> u64 {
        self.buffer_drops + self.link_losses + self.route_drops
    }
}

/// A built fabric: nodes, ports, packets in flight, forwarding state.
pub struct Fabric {
    /// Switch behaviour.
    pub cfg: FabricConfig,
    /// Hosts (first) and switches.
    pub nodes: Vec<Node>,
    /// Every egress port.
    pub ports: Vec<Port>,
    /// Packets in flight.
    pub pool: Pool,
    /// Counters.
    pub totals: Totals,
    /// Frames transmitted by tapped ports since the last drain: `(start time, port,
    /// packet)`.
    pub captured: Vec<(Time, PortId, Packet)>,
    /// What crossed to other partitions of a partitioned run (see [`crate::partition`]).
    pub(crate) outbox: Vec<Remote>,
    /// The earliest arrival in `outbox`.
    pub(crate) outbox_min: Option<Time>,
    /// Lazy ports whose far end another partition simulates.
    pub(crate) cross_lazy: Vec<PortId>,
    pub(crate) routes: Routes,
    /// Egress ports the prefetch step computed: for the event after the one being
    /// handled (`next`), and for the one being handled (`cur`); see
    /// [`prefetch_near`](Self::prefetch_near).
    hint_next: RouteHint,
    hint_cur: RouteHint,
    /// Per switch: `(uSID, egress port)` sorted by uSID, the static SRv6 table.
    srv6: Vec<Vec<(u16, PortId)>>,
    /// Per switch: bytes of buffer not reserved as PFC headroom.
    shared: Vec<u64>,
    hosts: u32,
    nics: u32,
    host_ports: Vec<PortId>,
    /// Bit `p` set if port `p` is a NIC port (read by the prefetch step before the port
    /// itself is loaded).
    nic_bits: Vec<u64>,
    spec: TopologySpec,
    links: LinkParams,
}

const DATA: usize = TrafficClass::Data as usize;

/// The egress port ECMP gives the frame in `slot` arriving through `port`, computed
/// by the prefetch step one event before the arrival is handled.
#[derive(Clone, Copy)]
struct RouteHint {
    port: PortId,
    slot: u32,
    egress: Option<PortId>,
}

impl RouteHint {
    const NONE: RouteHint = RouteHint { port: PortId::MAX, slot: u32::MAX, egress: None };
}

impl Fabric {
    /// Builds the fabric described by `spec` with `links` and switch behaviour `cfg`.
    /// `max_frame` is the largest frame any transport will send (for PFC headroom).
    pub fn new(
        spec: &TopologySpec,
        links: &LinkParams,
        cfg: FabricConfig,
        max_frame: u64,
    ) -> Result<Fabric, TopologyError> {
        let plan = spec.plan(links)?;
        let mut nodes = plan.nodes;
        let mut ports: Vec<Port> = Vec::with_capacity(plan.cables.len() * 2);
        for &(a, ka, b, kb, rate) in &plan.cables {
            let (pa, pb) = (ports.len() as PortId, ports.len() as PortId + 1);
            for (node, kind, id) in [(a, ka, pa), (b, kb, pb)] {
                let index = nodes[node as usize].port_ids.len() as u16;
                let rng = Rng::stream(cfg.seed, &[0x9047, id as u64]);
                let mut port = Port::new(node, index, kind, rate, links.delay, rng);
                port.set_loss(cfg.link_loss, None);
                port.lazy = cfg.pfc.is_none() && !cfg.eager_departures && kind != PortKind::Nic;
                port.ecn = match (&cfg.ecn, kind) {
                    (None, _) | (_, PortKind::Nic) => false,
                    (Some(e), PortKind::Down) => e.last_hop,
                    (Some(_), _) => true,
                };
                if let Some(e) = &cfg.ecn {
                    port.ecn_k = e.thresholds(rate.bps());
                }
                ports.push(port);
                nodes[node as usize].port_ids.push(id);
            }
            ports[pa as usize].peer = pb;
            ports[pb as usize].peer = pa;
            ports[pa as usize].peer_node = b;
            ports[pb as usize].peer_node = a;
        }
        let hosts = nodes.iter().filter(|n| n.kind == NodeKind::Host).count() as u32;
        let host_ports: Vec<PortId> = nodes[..hosts as usize].iter().flat_map(|n| n.port_ids.iter().copied()).collect();
        let mut nic_bits = vec![0u64; ports.len().div_ceil(64)];
        for &p in &host_ports {
            nic_bits[p as usize / 64] |= 1 << (p % 64);
        }
        let headroom = |n: &Node| -> u64 {
            match cfg.pfc {
                Some(_) if n.kind == NodeKind::Switch => n
                    .ports()
                    .map(|p| pfc_headroom(ports[p as usize].rate.bps(), ports[p as usize].delay, max_frame))
                    .sum(),
                _ => 0,
            }
        };
        // Lossless only if every ingress port can fill to its XOFF floor and then
        // absorb its headroom at once (an incast into a small buffer otherwise drops
        // frames PFC was meant to hold back).
        if let Some(pfc) = cfg.pfc {
            let need_of = |n: &Node| headroom(n) + pfc.min_xoff * n.ports().count() as u64;
            if let Some(n) = nodes.iter().filter(|n| n.kind == NodeKind::Switch).max_by_key(|n| need_of(n)) {
                let need = need_of(n);
                if cfg.buffer < need {
                    return Err(TopologyError::Invalid {
                        field: "switch_buffer",
                        message: format!(
                            "{} bytes cannot be lossless under PFC: a switch with {} ports needs {need} \
                             (each port's headroom, two link delays of bytes plus two frames, and \
                             fabric.pfc.min_xoff = {}); raise it, lower min_xoff, or set fabric.pfc = false",
                            cfg.buffer,
                            n.ports().count(),
                            pfc.min_xoff
                        ),
                    });
                }
            }
        }
        let shared = nodes.iter().map(|n| cfg.buffer.saturating_sub(headroom(n))).collect();
        let routes = Routes::compute(&nodes, &ports, plan.nics as usize, cfg.seed);
        let srv6 = srv6_tables(&nodes, &ports);
        Ok(Fabric {
            cfg,
            nodes,
            ports,
            pool: Pool::default(),
            totals: Totals::default(),
            captured: Vec::new(),
            outbox: Vec::new(),
            outbox_min: None,
            cross_lazy: Vec::new(),
            routes,
            hint_next: RouteHint::NONE,
            hint_cur: RouteHint::NONE,
            srv6,
            shared,
            hosts,
            nics: plan.nics,
            host_ports,
            nic_bits,
            spec: spec.clone(),
            links: *links,
        })
    }

    /// Number of hosts.
    pub fn hosts(&self) -> u32 {
        self.hosts
    }

    /// NIC ports per host.
    pub fn nics(&self) -> u32 {
        self.nics
    }

    /// The topology this fabric was built from.
    pub fn spec(&self) -> &TopologySpec {
        &self.spec
    }

    /// Link parameters this fabric was built with.
    pub fn links(&self) -> &LinkParams {
        &self.links
    }

    /// The egress port of NIC port `nic` of `host`.
    #[inline]
    pub fn nic_port(&self, host: u32, nic: u8) -> PortId {
        self.host_ports[(host * self.nics + nic as u32) as usize]
    }

    /// The leaf switch NIC port `nic` of `host` hangs from.
    pub fn leaf_of(&self, host: u32, nic: u8) -> NodeId {
        self.ports[self.ports[self.nic_port(host, nic) as usize].peer as usize].node
    }

    /// Name of a port, such as `leaf[2].up[1]` or `host[5].nic[0]`: ports are
    /// numbered within their node per label, `up` toward higher tiers, `down` toward
    /// hosts or lower tiers, `nic` on hosts.
    pub fn port_name(&self, p: PortId) -> String {
        let port = &self.ports[p as usize];
        let node = &self.nodes[port.node as usize];
        let label = port.kind.label();
        let n = node.ports().take_while(|&q| q != p).filter(|&q| self.ports[q as usize].kind.label() == label).count();
        format!("{}.{}[{}]", node.name, label, n)
    }

    /// Whether NIC port `nic` of `host` can start a frame of `class` at `now`.
    #[inline]
    pub fn nic_can_send(&self, host: u32, nic: u8, class: TrafficClass, now: Time) -> bool {
        let port = &self.ports[self.nic_port(host, nic) as usize];
        !port.busy(now) && !port.paused[class as usize]
    }

    /// Whether the link of NIC port `nic` of `host` is up.
    pub fn nic_up(&self, host: u32, nic: u8) -> bool {
        let p = &self.ports[self.nic_port(host, nic) as usize];
        p.up && self.ports[p.peer as usize].up
    }

    /// Starts transmitting `pkt` from NIC port `nic` of `host`. The port must be free
    /// ([`nic_can_send`](Self::nic_can_send)); a `NicReady` output follows when the
    /// frame has left. In an SRv6 fabric the destination address is derived here from
    /// the packet's entropy value, as the NIC does in MRC. (Always inlined into its one
    /// caller, the NIC's wire: a call copies the packet once more.)
    #[inline(always)]
    pub fn nic_send<E: From<FabricEvent> + Copy>(
        &mut self,
        now: Time,
        host: u32,
        nic: u8,
        mut pkt: Packet,
        q: &mut EventQueue<E>,
    ) {
        let p = self.nic_port(host, nic);
        debug_assert!(!self.ports[p as usize].busy(now), "NIC port sent on while busy");
        pkt.net.src_port = nic;
        if self.cfg.routing == Routing::Srv6 && pkt.net.srv6() == 0 {
            // With no path in this plane, an address no switch answers to (uSID 0 is
            // no switch's): the first switch drops the packet and counts it, where no
            // address at all would have had it hashed (ECMP) in a source-routed fabric.
            let a =
                self.srv6_address(host, pkt.net.dst, nic, pkt.net.entropy()).unwrap_or((SRV6_LOCATOR as u128) << 96);
            pkt.net.set_srv6(a);
        }
        let wire = pkt.wire_bytes();
        let slot = self.pool.alloc(pkt);
        self.transmit(p, slot, wire, now, q);
        let port = &mut self.ports[p as usize];
        port.txdone_pending = true;
        q.push(port.busy_until, E::from(FabricEvent::TxDone(p)));
    }

    /// The packet in pool slot `slot`.
    #[inline]
    pub fn packet(&self, slot: u32) -> &Packet {
        self.pool.get(slot)
    }

    /// Frees a delivered packet's slot.
    #[inline]
    pub fn release(&mut self, slot: u32) {
        self.pool.free(slot);
    }

    /// Starts loading the port (and, for an arrival, the packet) an upcoming event will
    /// touch into the cache. Large
    /// fabrics are memory-latency bound (a port per hop, thousands of ports), so the
    /// run loop calls this for the next event while it handles the current one.
    #[inline]
    pub fn prefetch(&self, ev: &FabricEvent) {
        let (FabricEvent::TxDone(p) | FabricEvent::Arrive(p, _) | FabricEvent::Pfc(p, ..)) = *ev;
        if let FabricEvent::Arrive(_, slot) = *ev {
            self.pool.prefetch(slot);
        }
        let nic = || self.nic_bits.get(p as usize / 64).is_some_and(|w| w & (1 << (p % 64)) != 0);
        if let Some(port) = self.ports.get(p as usize) {
            if matches!(*ev, FabricEvent::Arrive(..)) || (matches!(*ev, FabricEvent::TxDone(_)) && nic()) {
                // An arrival reads line 0 and the wire, and so does a NIC port going
                // free (it sends without class queues). (All eight hot lines, three of
                // them class queues, which an arrival reads only when its port has
                // frames to start: 4 % slower on the 2 MB version of benchmark (c).)
                let wire = crate::port::WIRE_LINES;
                fabricsim_engine::prefetch::lines(port, 1);
                fabricsim_engine::prefetch::lines_from(port, wire.start, wire.len());
            } else {
                // A `Port`'s first lines hold what a hop touches (see its layout).
                fabricsim_engine::prefetch::lines(port, crate::port::HOT_LINES);
            }
        }
    }

    /// The second prefetch step, called before every event is handled with the event
    /// after it (`None` if that is not a fabric event): its port and packet were
    /// asked for one event earlier ([`prefetch`](Self::prefetch)) and are likely in
    /// cache, so what they point to can be asked for now: for an arrival at an ECMP
    /// switch, the egress port the frame will be queued on.
    ///
    /// That egress port is also kept, so the arrival need not route the frame again
    /// (the routing walk was a tenth of the instructions of benchmark (c)). It is
    /// used only by the very next event handled, only if that is the arrival it was
    /// computed for: nothing in between can change the answer, because a frame's
    /// header does not change on the wire, its slot is freed only when it arrives, and
    /// [`reroute`](Self::reroute), the one change to the tables, forgets it.
    ///
    /// For a frame the event delivers to a host it returns the frame, whose receiving
    /// endpoint the caller may ask for in turn.
    #[inline]
    pub fn prefetch_near(&mut self, ev: Option<&FabricEvent>) -> Option<&Packet> {
        self.hint_cur = std::mem::replace(&mut self.hint_next, RouteHint::NONE);
        let Some(&FabricEvent::Arrive(p, slot)) = ev else { return None };
        let port = self.ports.get(p as usize)?;
        if port.kind == PortKind::Down {
            return Some(self.pool.get(slot));
        }
        if self.cfg.routing != Routing::Ecmp {
            return None;
        }
        let node = &self.nodes[port.peer_node as usize];
        let egress = self.routes.egress(port.peer_node, node.plane, &self.pool.get(slot).net);
        self.hint_next = RouteHint { port: p, slot, egress };
        if let Some(e) = egress {
            if let Some(egress) = self.ports.get(e as usize) {
                fabricsim_engine::prefetch::lines(egress, crate::port::HOT_LINES);
            }
        }
        None
    }

    /// Handles one fabric event.
    #[inline]
    pub fn handle<E: From<FabricEvent> + Copy>(
        &mut self,
        now: Time,
        ev: FabricEvent,
        q: &mut EventQueue<E>,
    ) -> Option<FabricOutput> {
        match ev {
            FabricEvent::TxDone(p) => {
                let port = &mut self.ports[p as usize];
                port.txdone_pending = false;
                if port.kind == PortKind::Nic {
                    let nic = port.index as u8;
                    return Some(FabricOutput::NicReady { host: port.node, nic });
                }
                if port.lazy {
                    // The wire went empty with frames waiting: start the one due now.
                    if let Some((at, slot)) = self.advance(p, now, true) {
                        q.push(at, E::from(FabricEvent::Arrive(p, slot)));
                    }
                    self.ensure_wake(p, now, q);
                    return None;
                }
                self.start_tx(p, now, q);
                None
            }
            FabricEvent::Arrive(p, slot) => {
                let hint = std::mem::replace(&mut self.hint_cur, RouteHint::NONE);
                let hint = (hint.port == p && hint.slot == slot).then_some(hint.egress);
                self.arrive(p, now, hint, q)
            }
            FabricEvent::Pfc(p, class, pause, downs) => {
                let port = &mut self.ports[p as usize];
                if !port.up || port.downs != downs {
                    // Sent across a link that died since: lost with it. (Taken, a
                    // PAUSE paused the port for good, its sender having forgotten it.)
                    return None;
                }
                let c = class as usize;
                if port.paused[c] == pause {
                    return None;
                }
                port.paused[c] = pause;
                if pause {
                    port.paused_since = now;
                    return None;
                }
                port.stats.paused_ps += now.since(port.paused_since).ps();
                if port.kind == PortKind::Nic {
                    if !port.busy(now) && !port.txdone_pending {
                        return Some(FabricOutput::NicReady { host: port.node, nic: port.index as u8 });
                    }
                    return None;
                }
                self.kick(p, now, q);
                None
            }
        }
    }

    /// Starts the port if it is idle, or makes sure a `TxDone` is pending.
    #[inline]
    fn kick<E: From<FabricEvent> + Copy>(&mut self, p: PortId, now: Time, q: &mut EventQueue<E>) {
        let port = &mut self.ports[p as usize];
        if port.lazy {
            if port.busy_until <= now {
                // Idle: the transmitter's free time moves up to now, and the frame
                // (or, at a tie, the one queued before it) starts now.
                port.busy_until = now;
                if let Some((at, slot)) = self.advance(p, now, true) {
                    q.push(at, E::from(FabricEvent::Arrive(p, slot)));
                }
            }
            self.ensure_wake(p, now, q);
            return;
        }
        if port.txdone_pending {
            return;
        }
        if port.busy(now) {
            port.txdone_pending = true;
            q.push(port.busy_until, E::from(FabricEvent::TxDone(p)));
        } else {
            self.start_tx(p, now, q);
        }
    }

    /// Dequeues the next eligible frame of eager switch port `p` and puts it on the
    /// wire.
    fn start_tx<E: From<FabricEvent> + Copy>(&mut self, p: PortId, now: Time, q: &mut EventQueue<E>) {
        let Some(c) = self.ports[p as usize].eligible_class() else { return };
        let f = self.dequeue(p, c);
        let node = self.ports[p as usize].node;
        self.release_buffer(node, f.in_port, c, f.wire as u64, now, q);
        self.transmit(p, f.slot, f.wire, now, q);
        let port = &mut self.ports[p as usize];
        if port.eligible_class().is_some() {
            port.txdone_pending = true;
            q.push(port.busy_until, E::from(FabricEvent::TxDone(p)));
        }
    }

    /// Starts the frames lazy port `p` sends before `until` (also at `until` if
    /// `inclusive`), each at its own start time. Returns the `Arrive` event to schedule
    /// if a frame went onto an empty wire; with `until` at or before any pending event
    /// of the port and `inclusive` false there never is one (the wire was not empty,
    /// or nothing was due).
    ///
    /// Most calls (two of the three a switch hop makes) find nothing due, so that test
    /// is inlined into the caller, from the port's first line (a class's queued bytes are
    /// non-zero exactly while it holds a frame; a lazy port is never paused), and the
    /// loop is not.
    #[inline(always)]
    pub(crate) fn advance(&mut self, p: PortId, until: Time, inclusive: bool) -> Option<(Time, u32)> {
        let port = &self.ports[p as usize];
        let start = port.busy_until;
        if start > until || (start == until && !inclusive) || !port.holds_frames() {
            return None;
        }
        self.advance_due(p, until, inclusive)
    }

    /// The loop of [`advance`](Self::advance), once something may be due.
    #[inline(never)]
    fn advance_due(&mut self, p: PortId, until: Time, inclusive: bool) -> Option<(Time, u32)> {
        let mut arrive = None;
        let node = self.ports[p as usize].node as usize;
        loop {
            let port = &self.ports[p as usize];
            let start = port.busy_until;
            if start > until || (start == until && !inclusive) {
                return arrive;
            }
            let Some(c) = port.eligible_class() else { return arrive };
            let f = self.dequeue(p, c);
            // Lazy ports have no PFC: only the switch's occupancy changes.
            self.nodes[node].used -= f.wire as u64;
            arrive = arrive.or(self.put_on_wire(p, f.slot, f.wire, start));
        }
    }

    /// Wakes lazy port `p` with a `TxDone` when frames wait but no `Arrive` is
    /// pending to catch it up (its last frames were lost on the link).
    #[inline]
    fn ensure_wake<E: From<FabricEvent> + Copy>(&mut self, p: PortId, now: Time, q: &mut EventQueue<E>) {
        let port = &mut self.ports[p as usize];
        // A cross port's wire is in another partition: it catches up at the end of
        // every window instead (see `crate::partition`).
        // Lazy ports are never paused, so any frame is eligible; the test reads line 0
        // only (an arrival that empties the wire calls this, and does not otherwise
        // need the class queues' lines).
        debug_assert!(port.lazy);
        if !port.txdone_pending && !port.arrive_pending && !port.cross && port.holds_frames() {
            port.txdone_pending = true;
            q.push(port.busy_until.max(now), E::from(FabricEvent::TxDone(p)));
        }
    }

    /// Catches lazy port `p` up to just before `now` (see "Lazy departures").
    fn settle_port(&mut self, p: PortId, now: Time) {
        if self.ports[p as usize].lazy {
            let arrive = self.advance(p, now, false);
            assert!(arrive.is_none(), "lazy port {p} caught up without a pending event");
        }
    }

    /// Catches every lazy port up to just before `now`, so that port counters and
    /// queues read as they would with an event per departure. Call before reading
    /// them during a run.
    pub fn settle(&mut self, now: Time) {
        for p in 0..self.ports.len() as PortId {
            self.settle_port(p, now);
        }
    }

    /// Takes the first frame of class `c` off port `p`'s queue.
    #[inline]
    fn dequeue(&mut self, p: PortId, c: usize) -> Queued {
        let port = &mut self.ports[p as usize];
        let f = port.queues[c].pop_front().expect("eligible class has a frame");
        port.queued[c] -= f.wire as u64;
        // ECN is marked at dequeue on the queue left behind, as in the HPCC ns-3
        // model: the mark then reflects the congestion this frame leaves, not the one
        // it met on arrival. The packet is only read when a mark is possible.
        if c == DATA && port.ecn {
            if let Some(ecn) = &self.cfg.ecn {
                let prob = ecn.probability(port.ecn_k, port.queued[DATA]);
                if prob > 0.0 {
                    let pkt = self.pool.get_mut(f.slot);
                    if pkt.net.ecn != Ecn::NotEct && port.rng.chance(prob) {
                        pkt.net.ecn = Ecn::Ce;
                        port.stats.ecn_marks += 1;
                        self.totals.ecn_marks += 1;
                    }
                }
            }
        }
        f
    }

    /// Returns a departing frame's bytes to its switch's buffer and, if its ingress
    /// port drained below XON, resumes the upstream sender.
    #[inline]
    fn release_buffer<E: From<FabricEvent> + Copy>(
        &mut self,
        node: NodeId,
        in_port: PortId,
        c: usize,
        wire: u64,
        now: Time,
        q: &mut EventQueue<E>,
    ) {
        self.nodes[node as usize].used -= wire;
        // Per-ingress bytes only matter for PFC; a lossy fabric skips them (the ingress
        // port's struct is a cache miss per hop on large fabrics).
        if let Some(pfc) = self.cfg.pfc {
            let ingress = &mut self.ports[in_port as usize];
            ingress.ingress[c] -= wire;
            if ingress.pause_sent[c] {
                let xoff = self.xoff(node);
                let ingress = &mut self.ports[in_port as usize];
                if ingress.ingress[c] + pfc.xon_delta <= xoff || ingress.ingress[c] == 0 {
                    ingress.pause_sent[c] = false;
                    self.send_pfc(in_port, c, false, now, q);
                }
            }
        }
    }

    /// The current XOFF threshold of switch `node`.
    #[inline]
    fn xoff(&self, node: NodeId) -> u64 {
        let pfc = self.cfg.pfc.expect("xoff without PFC");
        let free = self.shared[node as usize].saturating_sub(self.nodes[node as usize].used);
        ((free as f64 * pfc.alpha) as u64).max(pfc.min_xoff)
    }

    /// Sends a PAUSE/RESUME for `class` upstream through ingress port `in_port`.
    fn send_pfc<E: From<FabricEvent> + Copy>(
        &mut self,
        in_port: PortId,
        class: usize,
        pause: bool,
        now: Time,
        q: &mut EventQueue<E>,
    ) {
        let port = &mut self.ports[in_port as usize];
        if pause {
            port.stats.pauses_sent += 1;
            self.totals.pfc_pauses += 1;
        }
        self.totals.packet_hops += 1;
        // PFC frames preempt the data queue and are 64 bytes: their own
        // serialization is negligible next to the link delay.
        let at = now + port.delay + port.extra_delay;
        let downs = port.downs;
        if port.cross {
            self.outbox.push(Remote::Pfc { at, port: port.peer, class: class as u8, pause, downs });
            self.outbox_min = Some(self.outbox_min.map_or(at, |m| m.min(at)));
            return;
        }
        q.push(at, E::from(FabricEvent::Pfc(port.peer, class as u8, pause, downs)));
    }

    /// Puts the frame in `slot` (`wire` bytes) on port `p`'s link (the transmitter
    /// must be free).
    #[inline]
    fn transmit<E: From<FabricEvent> + Copy>(
        &mut self,
        p: PortId,
        slot: u32,
        wire: u32,
        now: Time,
        q: &mut EventQueue<E>,
    ) {
        if let Some((at, slot)) = self.put_on_wire(p, slot, wire, now) {
            q.push(at, E::from(FabricEvent::Arrive(p, slot)));
        }
    }

    /// Starts the frame in `slot` on port `p` at `now`: serializes it, loses it or
    /// appends it to the wire. Returns the `Arrive` event the caller must schedule when
    /// the wire had none pending.
    #[inline]
    fn put_on_wire(&mut self, p: PortId, slot: u32, wire: u32, now: Time) -> Option<(Time, u32)> {
        debug_assert_eq!(self.ports[p as usize].up, self.ports[self.ports[p as usize].peer as usize].up);
        let port = &mut self.ports[p as usize];
        if port.tap {
            // Captured as it starts onto the wire, whether or not the link delivers it.
            self.captured.push((now, p, *self.pool.get(slot)));
        }
        let ser = port.rate.tx_time(wire as u64);
        port.busy_until = now + ser;
        port.stats.tx_pkts += 1;
        port.stats.tx_bytes += wire as u64;
        port.stats.busy_ps = port.stats.busy_ps.saturating_add(ser.ps());
        self.totals.packet_hops += 1;
        // `lossy` only skips the loss fields when both are unset; the draws are as
        // before, so runs with loss keep their random streams.
        let ev_lost = port.lossy
            && match port.ev_loss {
                Some((ev, p)) => self.pool.get(slot).net.entropy() == ev && port.rng.chance(p),
                None => false,
            };
        if !port.up || ev_lost || (port.lossy && port.loss > 0.0 && port.rng.chance(port.loss)) {
            port.stats.drops += 1;
            self.totals.link_losses += 1;
            self.pool.free(slot);
            return None;
        }
        let arrive = port.busy_until + port.delay + port.extra_delay;
        if port.cross {
            // The far end is another partition's: the frame travels through the outbox
            // onto that partition's copy of this wire.
            self.outbox.push(Remote::Frame { at: arrive, port: p, pkt: *self.pool.get(slot), downs: port.downs });
            self.outbox_min = Some(self.outbox_min.map_or(arrive, |m| m.min(arrive)));
            self.pool.free(slot);
            return None;
        }
        let arrive = port.onto_wire(arrive, slot, port.downs);
        if port.arrive_pending {
            return None;
        }
        port.arrive_pending = true;
        Some((arrive, slot))
    }

    /// The frame at the head of port `p`'s wire has arrived at the peer.
    #[inline]
    fn arrive<E: From<FabricEvent> + Copy>(
        &mut self,
        p: PortId,
        now: Time,
        hint: Option<Option<PortId>>,
        q: &mut EventQueue<E>,
    ) -> Option<FabricOutput> {
        if self.ports[p as usize].lazy {
            // Frames started since the port was last touched join the wire behind
            // this one (they arrive later, so the pending event stays right).
            let none = self.advance(p, now, false);
            debug_assert!(none.is_none());
        }
        let port = &mut self.ports[p as usize];
        let (_, slot, downs) = port.wire.pop_front().expect("arrival on an empty wire");
        port.arrive_pending = false;
        if let Some(&(next, next_slot, _)) = port.wire.front() {
            port.arrive_pending = true;
            q.push(next, E::from(FabricEvent::Arrive(p, next_slot)));
        } else if port.lazy {
            self.ensure_wake(p, now, q);
        }
        let port = &mut self.ports[p as usize];
        let in_port = port.peer;
        let node = port.peer_node;
        let port_kind = port.kind;
        if !port.up || port.downs != downs {
            // The cable died while the frame was on it (and may be back up by now).
            port.stats.drops += 1;
            self.totals.link_losses += 1;
            self.pool.free(slot);
            return None;
        }
        // A port toward a host is a leaf's `Down` port (no need to read the node).
        if port_kind == PortKind::Down {
            self.totals.delivered += 1;
            let nic = self.ports[in_port as usize].index as u8;
            return Some(FabricOutput::Deliver { host: node, nic, slot });
        }
        self.forward(node, in_port, slot, now, hint, q);
        None
    }

    /// A frame entered switch `node` through `in_port`: route (or take the ECMP
    /// egress the prefetch step found, `hint`), admit, enqueue.
    #[inline]
    fn forward<E: From<FabricEvent> + Copy>(
        &mut self,
        node: NodeId,
        in_port: PortId,
        slot: u32,
        now: Time,
        hint: Option<Option<PortId>>,
        q: &mut EventQueue<E>,
    ) {
        let Some(e) = self.route(node, slot, hint) else {
            self.totals.route_drops += 1;
            self.ports[in_port as usize].stats.drops += 1;
            self.pool.free(slot);
            return;
        };
        let lazy = self.ports[e as usize].lazy;
        if lazy {
            let none = self.advance(e, now, false);
            debug_assert!(none.is_none());
        }
        let buffer = self.cfg.buffer;
        let (mut class, mut wire) = {
            let pkt = self.pool.get(slot);
            (pkt.net.class as usize, pkt.wire_bytes() as u64)
        };
        let admit = self.settled_check(node, now, lazy, |f| f.admits(node, e, class, wire));
        let pkt = self.pool.get_mut(slot);
        let port = &mut self.ports[e as usize];
        if class == DATA {
            let trim = match self.cfg.trim {
                Some(t) => pkt.payload > 0 && (!admit || port.queued[DATA] >= t.threshold),
                None => false,
            };
            if trim {
                pkt.trim();
                class = pkt.net.class as usize;
                wire = pkt.wire_bytes() as u64;
                port.stats.trims += 1;
                self.totals.trims += 1;
            } else if !admit {
                self.drop_at(e, slot);
                return;
            }
        }
        if class != DATA && !self.settled_check(node, now, lazy, |f| f.nodes[node as usize].used + wire <= buffer) {
            self.drop_at(e, slot);
            return;
        }
        let port = &mut self.ports[e as usize];
        debug_assert!(wire > 0, "`advance` reads an empty class from zero queued bytes");
        port.queues[class].push_back(Queued { slot, wire: wire as u32, in_port });
        port.queued[class] += wire;
        if class == DATA && port.queued[DATA] > port.stats.queue_max {
            port.stats.queue_max = port.queued[DATA];
        }
        self.nodes[node as usize].used += wire;
        if self.cfg.pfc.is_some() {
            self.ports[in_port as usize].ingress[class] += wire;
            let ingress = &self.ports[in_port as usize];
            if class == DATA && !ingress.pause_sent[DATA] && ingress.ingress[DATA] > self.xoff(node) {
                self.ports[in_port as usize].pause_sent[DATA] = true;
                self.send_pfc(in_port, DATA, true, now, q);
            }
        }
        self.kick(e, now, q);
    }

    /// `check` of switch `node`'s buffer occupancy. A failure with lazy ports (`lazy`)
    /// is decided again after they all catch up: the occupancy still counts frames they
    /// have started since last touched.
    #[inline]
    fn settled_check(&mut self, node: NodeId, now: Time, lazy: bool, check: impl Fn(&Self) -> bool) -> bool {
        if check(self) {
            return true;
        }
        if !lazy {
            return false;
        }
        self.settle_switch(node, now);
        check(self)
    }

    /// Catches up every lazy port of switch `node` (see [`settled_check`](Self::settled_check)).
    #[cold]
    fn settle_switch(&mut self, node: NodeId, now: Time) {
        for i in 0..self.nodes[node as usize].port_ids.len() {
            let p = self.nodes[node as usize].port_ids[i];
            self.settle_port(p, now);
        }
    }

    /// Whether switch `node`'s buffer admits a `wire`-byte frame of `class` to egress
    /// `e`. Data with PFC needs room in the buffer; lossy data must also fit `e`'s
    /// dynamic threshold. (Control frames are checked for room after trimming.)
    #[inline]
    fn admits(&self, node: NodeId, e: PortId, class: usize, wire: u64) -> bool {
        if class != DATA {
            return true;
        }
        let used = self.nodes[node as usize].used;
        let buffer = self.cfg.buffer;
        let fits = used + wire <= buffer;
        if self.cfg.pfc.is_some() {
            return fits;
        }
        let free = buffer.saturating_sub(used);
        fits && self.ports[e as usize].queued[DATA] + wire <= (free as f64 * self.cfg.drop_alpha) as u64
    }

    #[inline]
    fn drop_at(&mut self, e: PortId, slot: u32) {
        self.ports[e as usize].stats.drops += 1;
        self.totals.buffer_drops += 1;
        self.pool.free(slot);
    }

    /// The egress port of switch `node` for the packet in `slot` (SRv6 rewrites the
    /// destination address on the way).
    #[inline]
    fn route(&mut self, node: NodeId, slot: u32, hint: Option<Option<PortId>>) -> Option<PortId> {
        let n = &self.nodes[node as usize];
        if !n.up {
            return None;
        }
        let pkt = self.pool.get_mut(slot);
        if pkt.net.srv6_words != [0, 0] {
            return srv6_forward(n.usid, &self.srv6[node as usize], &mut pkt.net);
        }
        if let Some(egress) = hint {
            debug_assert_eq!(egress, self.routes.egress(node, n.plane, &pkt.net), "stale route hint");
            return egress;
        }
        self.routes.egress(node, n.plane, &pkt.net)
    }

    /// The SRv6 destination address for a packet from `src` to `dst` leaving on NIC
    /// port (plane) `nic` with entropy value `ev`: the uSIDs of the switches on the
    /// path the EV selects, then the destination's downlink.
    ///
    /// The path is chosen algorithmically (MRC section 2.3): walking up from the
    /// source leaf, at each switch with several equal-cost next hops the EV's next
    /// mixed-radix digit picks one (for a multi-plane Clos this is "the T0 uplink
    /// number copied into the T1 uSID"). The digits come from the EV's low bits, so
    /// EVs `0..n` select distinct paths while `n` does not exceed the path count; the
    /// plane is the NIC port the packet leaves from. `None` if `dst` is unreachable in
    /// that plane.
    pub fn srv6_address(&self, src: u32, dst: u32, nic: u8, ev: u32) -> Option<u128> {
        let dst_leaf = self.leaf_of(dst, nic);
        let mut cur = self.leaf_of(src, nic);
        let plane = self.nodes[cur as usize].plane;
        let mut usids = [0u16; 6];
        usids[0] = self.nodes[cur as usize].usid;
        let mut n = 1;
        let mut digits = ev;
        while cur != dst_leaf {
            let hops = self.routes.next_hops(cur, plane, dst);
            if hops.is_empty() || n >= 5 {
                return None;
            }
            let pick = hops.get((digits % hops.len() as u32) as usize).expect("an index below the count");
            digits /= hops.len() as u32;
            cur = self.ports[self.ports[pick as usize].peer as usize].node;
            usids[n] = self.nodes[cur as usize].usid;
            n += 1;
        }
        let down = self.nic_port_peer(dst, nic);
        usids[n] = usid(usid_role::HOST, plane, self.down_index(down));
        let mut addr = (SRV6_LOCATOR as u128) << 96;
        for (i, &u) in usids.iter().enumerate() {
            addr |= (u as u128) << (80 - 16 * i);
        }
        Some(addr)
    }

    fn nic_port_peer(&self, host: u32, nic: u8) -> PortId {
        self.ports[self.nic_port(host, nic) as usize].peer
    }

    /// Index of a leaf's downlink among the leaf's host-facing ports.
    fn down_index(&self, down: PortId) -> u32 {
        let port = &self.ports[down as usize];
        self.nodes[port.node as usize]
            .ports()
            .take_while(|&q| q != down)
            .filter(|&q| self.ports[q as usize].kind == PortKind::Down)
            .count() as u32
    }

    /// The equal-cost next hops at switch `node` toward host `dst` in `plane`.
    pub fn next_hops(&self, node: NodeId, plane: u8, dst: u32) -> crate::routing::NextHops<'_> {
        self.routes.next_hops(node, plane, dst)
    }

    /// Recomputes the ECMP tables from the current link states, as a converged
    /// routing protocol would.
    pub fn reroute(&mut self) {
        self.routes = Routes::compute(&self.nodes, &self.ports, self.nics as usize, self.cfg.seed);
        self.hint_next = RouteHint::NONE;
        self.hint_cur = RouteHint::NONE;
    }
}

/// One switch's SRv6 step: match our uSID, shift, look up the next uSID.
#[inline]
fn srv6_forward(my_usid: u16, table: &[(u16, PortId)], net: &mut NetHdr) -> Option<PortId> {
    let da = net.srv6();
    if (da >> 96) as u32 != SRV6_LOCATOR || (da >> 80) as u16 != my_usid {
        return None;
    }
    let shifted = (da & LOCATOR_MASK) | ((da << 16) & !LOCATOR_MASK);
    net.set_srv6(shifted);
    let next = (shifted >> 80) as u16;
    table.binary_search_by_key(&next, |e| e.0).ok().map(|i| table[i].1)
}

/// Static SRv6 tables: every neighbour switch's uSID and every downlink's host uSID
/// map to the port toward it. They never change, even when links fail.
fn srv6_tables(nodes: &[Node], ports: &[Port]) -> Vec<Vec<(u16, PortId)>> {
    nodes
        .iter()
        .map(|n| {
            if n.kind != NodeKind::Switch {
                return Vec::new();
            }
            let mut downs = 0;
            let mut t: Vec<(u16, PortId)> = n
                .ports()
                .map(|p| {
                    let peer = &nodes[ports[ports[p as usize].peer as usize].node as usize];
                    if peer.kind == NodeKind::Host {
                        downs += 1;
                        (usid(usid_role::HOST, n.plane, downs - 1), p)
                    } else {
                        (peer.usid, p)
                    }
                })
                .collect();
            t.sort_unstable();
            t.dedup_by_key(|e| e.0);
            t
        })
        .collect()
}

/// Faults: changes to cables and switches during a run.
impl Fabric {
    /// The port called `name` (see [`port_name`](Self::port_name)).
    pub fn port_by_name(&self, name: &str) -> Option<PortId> {
        let (node, label) = name.rsplit_once('.')?;
        let n = self.node_by_name(node)?;
        self.nodes[n as usize].ports().find(|&p| self.port_name(p).rsplit_once('.').map(|x| x.1) == Some(label))
    }

    /// The node called `name` (`leaf[2]`, `host[7]`, ...).
    pub fn node_by_name(&self, name: &str) -> Option<NodeId> {
        self.nodes.iter().position(|n| n.name == name).map(|i| i as NodeId)
    }

    /// Both directions of the cable at port `p`.
    fn cable(&self, p: PortId) -> [PortId; 2] {
        [p, self.ports[p as usize].peer]
    }

    /// Takes the cable at port `p` down or up (a link fault). A dead link loses every
    /// frame on it, and PFC state across it is forgotten (no RESUME will ever cross
    /// it); see [`refresh_link`](Self::refresh_link).
    pub fn set_cable_up<E: From<FabricEvent> + Copy>(&mut self, p: PortId, up: bool, now: Time, q: &mut EventQueue<E>) {
        for x in self.cable(p) {
            self.ports[x as usize].cable_up = up;
        }
        self.refresh_link(p, now, q);
    }

    /// Brings the link at port `p` to what its cable and the nodes at its ends say: up
    /// only if all three are.
    ///
    /// Going down, both ends catch up first (a frame started before `now` started on a
    /// live link: the two ends' states must agree whenever a frame starts); their PFC
    /// state is cleared, and a port that was paused is restarted, so that what it held
    /// drains onto the dead link (lost, counted, its buffer returned) rather than
    /// waiting for ever; the link's `downs` count moves on, so that frames and PFC
    /// frames on it when it died are lost even if it is back up when they would arrive.
    fn refresh_link<E: From<FabricEvent> + Copy>(&mut self, p: PortId, now: Time, q: &mut EventQueue<E>) {
        let port = &self.ports[p as usize];
        let up = port.cable_up && self.nodes[port.node as usize].up && self.nodes[port.peer_node as usize].up;
        if up == port.up {
            return;
        }
        let ends = self.cable(p);
        for x in ends {
            self.settle_port(x, now);
        }
        let mut restart = [false; 2];
        for (k, x) in ends.into_iter().enumerate() {
            let port = &mut self.ports[x as usize];
            port.up = up;
            if !up {
                port.downs = port.downs.wrapping_add(1);
                if port.data_paused() {
                    port.stats.paused_ps += now.since(port.paused_since).ps();
                }
                restart[k] = port.kind != PortKind::Nic && port.paused.iter().any(|&b| b);
                port.paused = [false; 2];
                port.pause_sent = [false; 2];
            }
        }
        for (k, x) in ends.into_iter().enumerate() {
            if restart[k] {
                self.kick(x, now, q);
            }
        }
    }

    /// Random loss probability on both directions of the cable at `p`, from `now`.
    pub fn set_cable_loss(&mut self, p: PortId, loss: f64, now: Time) {
        for q in self.cable(p) {
            self.settle_port(q, now);
            let ev_loss = self.ports[q as usize].ev_loss;
            self.ports[q as usize].set_loss(loss, ev_loss);
        }
    }

    /// Loss of frames carrying entropy value `ev` on both directions of the cable at
    /// `p` from `now` (`None` clears it).
    pub fn set_cable_ev_loss(&mut self, p: PortId, ev_loss: Option<(u32, f64)>, now: Time) {
        for q in self.cable(p) {
            self.settle_port(q, now);
            let loss = self.ports[q as usize].loss;
            self.ports[q as usize].set_loss(loss, ev_loss);
        }
    }

    /// Extra one-way delay on both directions of the cable at `p`, for frames
    /// starting from `now`.
    pub fn set_cable_delay(&mut self, p: PortId, extra: fabricsim_engine::Dur, now: Time) {
        for q in self.cable(p) {
            self.set_port_delay(q, extra, now);
        }
    }

    /// Rate of both directions of the cable at `p`, for frames starting from `now`.
    pub fn set_cable_rate(&mut self, p: PortId, rate: fabricsim_engine::Rate, now: Time) {
        for q in self.cable(p) {
            self.set_port_rate(q, rate, now);
        }
    }

    /// Captures frames crossing the cable at `p`, both directions. Call before the
    /// run starts: tapped ports send eagerly, so that frames are captured in time
    /// order.
    ///
    /// # Panics
    /// If a frame is already queued at either end.
    pub fn tap_cable(&mut self, p: PortId) {
        for q in self.cable(p) {
            let port = &mut self.ports[q as usize];
            assert!(port.queue_bytes() == 0, "tap_cable on a port with queued frames");
            port.tap = true;
            port.lazy = false;
        }
    }

    /// Extra delay on egress port `p` only (one direction), for frames starting from
    /// `now`.
    pub fn set_port_delay(&mut self, p: PortId, extra: fabricsim_engine::Dur, now: Time) {
        self.settle_port(p, now);
        self.ports[p as usize].extra_delay = extra;
    }

    /// Rate of egress port `p` only (one direction), for frames starting from `now`.
    pub fn set_port_rate(&mut self, p: PortId, rate: fabricsim_engine::Rate, now: Time) {
        self.settle_port(p, now);
        self.ports[p as usize].rate = rate;
    }

    /// Takes switch `n` down (it forwards nothing; all its links are dead) or up (its
    /// links come back, except those whose cable failed on its own or whose other
    /// switch is down).
    pub fn set_switch_up<E: From<FabricEvent> + Copy>(
        &mut self,
        n: NodeId,
        up: bool,
        now: Time,
        q: &mut EventQueue<E>,
    ) {
        self.nodes[n as usize].up = up;
        for k in 0..self.nodes[n as usize].port_ids.len() {
            let p = self.nodes[n as usize].port_ids[k];
            self.refresh_link(p, now, q);
        }
    }

    /// The `(host, nic)` at either end of the cable at `p` that is a host NIC port.
    pub fn hosts_on_cable(&self, p: PortId) -> Vec<(u32, u8)> {
        self.cable(p)
            .iter()
            .filter(|&&q| self.ports[q as usize].kind == PortKind::Nic)
            .map(|&q| (self.ports[q as usize].node, self.ports[q as usize].index as u8))
            .collect()
    }

    /// Ports of node `n`.
    pub fn ports_of(&self, n: NodeId) -> &[PortId] {
        &self.nodes[n as usize].port_ids
    }
}

impl Fabric {
    /// The switch egress ports a packet from `src` to `dst` with UDP source port `sport`
    /// (and no flow label) crosses when it leaves NIC port `nic`, as the tables stand
    /// now (the last, toward `dst`, included): with ECMP computed with the switches'
    /// own hash and seeds, under SRv6 along the uSID path its entropy value selects.
    /// `None` if `dst` is unreachable. What an operator who knows the vendor's hash
    /// works out for a 5-tuple (Maestro's path selection); it sends nothing.
    pub fn ecmp_trace(&self, src: u32, dst: u32, nic: u8, sport: u16) -> Option<Vec<PortId>> {
        let mut net = fabricsim_wire::NetHdr { src, dst, sport, src_port: nic, ..Default::default() };
        if self.cfg.routing == Routing::Srv6 {
            net.set_srv6(self.srv6_address(src, dst, nic, net.entropy())?);
        }
        let mut cur = self.leaf_of(src, nic);
        let plane = self.nodes[cur as usize].plane;
        let mut out = Vec::new();
        for _ in 0..16 {
            let egress = if net.srv6_words != [0, 0] {
                srv6_forward(self.nodes[cur as usize].usid, &self.srv6[cur as usize], &mut net)?
            } else {
                self.routes.egress(cur, plane, &net)?
            };
            out.push(egress);
            let peer = &self.ports[self.ports[egress as usize].peer as usize];
            if self.nodes[peer.node as usize].kind != crate::NodeKind::Switch {
                return (peer.node == self.ports[self.nic_port(dst, nic) as usize].node).then_some(out);
            }
            cur = peer.node;
        }
        None
    }

    /// The egress ports a packet from `src` to `dst` leaving NIC port `nic` crosses
    /// on the first equal-cost path, as `(rate, delay)`, the NIC port first. `None` if
    /// `dst` is unreachable.
    pub fn path(&self, src: u32, dst: u32, nic: u8) -> Option<Vec<(fabricsim_engine::Rate, fabricsim_engine::Dur)>> {
        let first = &self.ports[self.nic_port(src, nic) as usize];
        let mut hops = vec![(first.rate, first.delay)];
        let dst_leaf = self.leaf_of(dst, nic);
        let mut cur = self.leaf_of(src, nic);
        let plane = self.nodes[cur as usize].plane;
        for _ in 0..16 {
            let egress = if cur == dst_leaf {
                self.ports[self.nic_port(dst, nic) as usize].peer
            } else {
                self.routes.next_hops(cur, plane, dst).get(0)?
            };
            let port = &self.ports[egress as usize];
            hops.push((port.rate, port.delay));
            if cur == dst_leaf {
                return Some(hops);
            }
            cur = self.ports[port.peer as usize].node;
        }
        None
    }
}

#[cfg(test)]
#[path = "fault_tests.rs"]
mod fault_tests;

#[cfg(test)]
#[path = "srv6_tests.rs"]
mod srv6_tests;
