//! The host and NIC layer: the one driver of the transport contract.
//!
//! Transports are sans-IO state machines ([`fabricsim_transport::Endpoint`]); something
//! must hand them packets, ask them for packets when a port is free, run their timers
//! and collect what they report. This crate is that something, for the simulator and
//! for the transport tests' two-host harness alike, over the [`Wire`] seam.
//!
//! * [`wire`]: the [`Wire`] trait (can this port send, send this frame, come back at
//!   this time) and the [`NicEvent`]s the NIC schedules through it.
//! * `endpoints`: the endpoint table: every QP's requester and responder, where they
//!   live (host, NIC ports), and the connections that own them.
//! * `driver`: the contract's driver: delivery, NIC port service (control before data,
//!   one packet per endpoint per turn, ports offered from a rotating start), timers and
//!   pacing wake-ups, port state changes.
//! * [`multiqp`]: messages over a connection's QPs: the split policy (even parts for
//!   QP-Scaling), which message each QP's sequence numbers carry, and the message-level
//!   report once every part has arrived or been acknowledged.
//! * [`security`]: StaR's security table on the client NIC: requests toward a
//!   stateless server leave only within the memory it registered.
//! * [`maestro`]: Maestro's policy over a connection's QPs: messages cut into chunks,
//!   a load balancer giving them to QPs, a path monitor per QP, failover of a failed
//!   QP's chunks.
//! * [`rnic`]: the RNIC resource model (pipelines, QP context cache, MTT and ATC,
//!   PCIe): with a modelled NIC a packet waits in its NIC before it reaches the wire or
//!   its endpoint (`model = "ideal"`: never).
//!
//! # Reporting upward
//! The layer never calls into the run loop. What happened to messages is queued as
//! [`NicOutput`]s; the owner drains them with [`Nic::poll_output`] after each call,
//! as it drains the fabric's outputs.
//!
//! # Call order
//! Build with [`Nic::new`] and [`Nic::add_connection`]. Then, as events come:
//! [`Nic::post`] a message (or [`Nic::book`] it on a copy that only receives it),
//! [`Nic::deliver`] an arriving packet, [`Nic::serve`] a port the wire reports free,
//! [`Nic::on_event`] a [`NicEvent`] at its time, [`Nic::port_state`] a port going down
//! or up; after each, [`Nic::poll_output`] until it returns `None`.

pub mod wire;

mod driver;
mod endpoints;
pub mod maestro;
pub mod multiqp;
pub mod rnic;
pub mod security;

pub use endpoints::EndpointPlace;
pub use maestro::{Balancer, MaestroConfig, Verb};
pub use multiqp::Split;
pub use wire::{NicEvent, Wire};

use fabricsim_engine::{Ring, Time};
use fabricsim_transport::AnyEndpoint;
use std::collections::VecDeque;

/// What the NIC reports about messages and connections.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NicOutput {
    /// Every part of message `msg` has been placed at its receiver.
    Received {
        /// The message.
        msg: u32,
    },
    /// One part of message `msg` was acknowledged to its sender.
    Acked {
        /// The message.
        msg: u32,
        /// Packets of that part sent more than once.
        retransmitted: u64,
        /// Whether it was the last part outstanding: the message is acknowledged.
        all: bool,
    },
    /// A QP of connection `conn` exceeded its retry limit and failed.
    Failed {
        /// The connection.
        conn: u32,
    },
    /// Endpoint `ep` of a connection that reports its endpoints' own events
    /// ([`Report::Endpoints`]) reported `event`.
    Endpoint {
        /// The endpoint.
        ep: u32,
        /// What it reported (its own message sequence numbers).
        event: fabricsim_transport::AppEvent,
    },
}

/// What a connection's endpoints' events become.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Report {
    /// Message-level outputs: the connection's messages are posted with
    /// [`Nic::post`], which numbers their parts.
    Messages,
    /// The endpoints' own events, for an owner that posts transport messages itself
    /// ([`Nic::post_message`]) with its own sequence numbers (the transport tests).
    Endpoints,
}

/// Per-endpoint bookkeeping of the driver, beside the endpoint itself.
#[derive(Clone, Copy, Debug)]
pub(crate) struct EpMeta {
    pub(crate) host: u32,
    pub(crate) first_port: u8,
    pub(crate) ports: u8,
    pub(crate) responder: bool,
    /// Sends both classes: queued on the control queue too ([`AnyEndpoint::dual`]).
    pub(crate) dual: bool,
    /// Its NIC keeps no state for it ([`AnyEndpoint::stateless`]).
    pub(crate) stateless: bool,
    /// Its number among its host's endpoints (the NIC model's QP number).
    pub(crate) local: u32,
    pub(crate) conn: u32,
    /// Bit `i` set while queued on port `first_port + i`'s queue (the control queue for
    /// a responder, the data queue otherwise); bit `8 + i` while a dual endpoint is
    /// queued on that port's other queue.
    pub(crate) queued: u16,
    /// The port (`first_port +` this) that [`Nic::ready`] offers first next time.
    pub(crate) offer_first: u8,
    pub(crate) timer_at: Time,
    pub(crate) wake_at: Time,
}

/// Endpoints a NIC's queue keeps inline (see [`Ring`]): most hosts have a few
/// connections, and the queue is read on every packet the NIC sends.
const NIC_QUEUE_INLINE: usize = 4;

/// One NIC port's ready queues: responders (ACK/NAK/CNP) are served before requesters,
/// as RNICs serve their ACK engine first.
#[derive(Clone, Debug, Default)]
pub(crate) struct NicQueues {
    pub(crate) ctrl: Ring<u32, NIC_QUEUE_INLINE>,
    pub(crate) data: Ring<u32, NIC_QUEUE_INLINE>,
}

/// Every host's NIC: the endpoints, their queues and timers, and the connections and
/// messages they carry.
#[derive(Clone, Debug)]
pub struct Nic {
    /// Endpoints by id (a QP's requester at `2i`, its responder at `2i + 1` of its
    /// connection's range). The id is the QP number packets are addressed to.
    pub(crate) eps: Vec<AnyEndpoint>,
    pub(crate) meta: Vec<EpMeta>,
    /// Ready queues per `(host, port)`.
    pub(crate) queues: Vec<NicQueues>,
    /// NIC ports per host.
    pub(crate) ports_per_host: u32,
    /// Endpoint ids per host.
    pub(crate) host_eps: Vec<Vec<u32>>,
    pub(crate) conns: Vec<multiqp::ConnState>,
    pub(crate) parts: Vec<multiqp::Parts>,
    /// Maestro chunks handed to their QPs, `(connection, qp, message or probe,
    /// bytes)`, kept for a partitioned run's receiving copies (`None`: not kept).
    pub(crate) handovers: Option<Vec<(u32, u32, u32, u64)>>,
    pub(crate) out: VecDeque<NicOutput>,
    /// Packets that arrived for no endpoint of their host.
    pub misdelivered: u64,
    /// The modelled NICs' resources, per host (empty: every NIC ideal).
    pub(crate) rnic: Vec<rnic::RnicState>,
    /// Per host, packets its NIC is still processing, with when each is done (in
    /// order: its receive pipeline keeps it).
    pub(crate) rx_queue: Vec<VecDeque<(Time, fabricsim_wire::Packet)>>,
    /// Per `(host, port)` and traffic class (indexed by `TrafficClass as usize`), a
    /// packet the NIC is preparing to send and when it is ready (the port waits for
    /// it). Two slots, so that a data frame held by a PFC pause does not hold the
    /// control frames behind it, as it does not on an ideal NIC.
    pub(crate) staged: Vec<[Option<(Time, fabricsim_wire::Packet)>; 2]>,
    /// Per endpoint, where its next payload byte goes or comes from (a RoCE packet
    /// after a message's first carries no address: the context holds it).
    pub(crate) next_addr: Vec<u64>,
    /// StaR's security table, once a connection has a stateless endpoint.
    pub(crate) security: Option<security::Security>,
}

impl Nic {
    /// NICs of `ports_per_host` ports on `hosts` hosts, for `messages` messages (their
    /// ids index per-message bookkeeping).
    pub fn new(hosts: u32, ports_per_host: u32, messages: usize) -> Nic {
        Nic {
            eps: Vec::new(),
            meta: Vec::new(),
            queues: vec![NicQueues::default(); (hosts * ports_per_host) as usize],
            ports_per_host,
            host_eps: vec![Vec::new(); hosts as usize],
            conns: Vec::new(),
            parts: vec![multiqp::Parts::default(); messages],
            out: VecDeque::new(),
            handovers: None,
            misdelivered: 0,
            rnic: Vec::new(),
            rx_queue: Vec::new(),
            staged: Vec::new(),
            next_addr: Vec::new(),
            security: None,
        }
    }

    /// Models host `h`'s NIC with `models(h)` (`None`: ideal, every packet processed
    /// in no time). Call once the connections are added.
    pub fn set_models(&mut self, models: impl Fn(u32) -> Option<rnic::NicModel>) {
        let hosts = self.host_eps.len() as u32;
        let all: Vec<Option<rnic::NicModel>> = (0..hosts).map(models).collect();
        if all.iter().all(|m| m.is_none()) {
            return;
        }
        // An ideal NIC among modelled ones: no limit on anything.
        let ideal = rnic::NicModel::unbounded();
        self.rnic = all
            .into_iter()
            .enumerate()
            .map(|(h, m)| rnic::RnicState::with_qps(m.unwrap_or(ideal), self.host_eps[h].len()))
            .collect();
        self.rx_queue = vec![VecDeque::new(); hosts as usize];
        self.staged = vec![[None, None]; self.queues.len()];
        self.next_addr = vec![0; self.eps.len()];
    }

    /// Whether any NIC is modelled.
    #[inline]
    pub fn modelled(&self) -> bool {
        !self.rnic.is_empty()
    }

    /// What each modelled NIC did, by host (empty when every NIC is ideal).
    pub fn rnic_stats(&self) -> Vec<rnic::RnicStats> {
        self.rnic.iter().map(|r| r.stats).collect()
    }

    /// Requests to a stateless server refused by StaR's security table, per host (empty
    /// when no connection has a stateless endpoint).
    pub fn security_refused(&self) -> &[u64] {
        self.security.as_ref().map_or(&[], |s| &s.refused)
    }

    /// Registers `[lo, hi)` as memory endpoint `server` (a stateless one) accepts
    /// requests for: what its driver installs in its clients' security tables when it
    /// registers a buffer.
    pub fn register(&mut self, server: u32, lo: u64, hi: u64) {
        let hosts = self.host_eps.len() as u32;
        self.security.get_or_insert_with(|| security::Security::new(hosts)).register(server, lo, hi);
    }

    /// The next thing to report, if any.
    #[inline]
    pub fn poll_output(&mut self) -> Option<NicOutput> {
        self.out.pop_front()
    }

    /// Whether there is anything to report (most packets leave nothing: a check the
    /// owner makes inline before draining out of line).
    #[inline(always)]
    pub fn has_output(&self) -> bool {
        !self.out.is_empty()
    }
}
