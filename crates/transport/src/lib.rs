//! The transport layer: RDMA protocols as sans-IO state machines.
//!
//! An endpoint never reads a clock, schedules an event or touches a network. Its host
//! drives it through four verbs, the same for every protocol (after quinn-proto):
//!
//! * inputs: [`Endpoint::on_packet`] (a packet for this endpoint arrived),
//!   [`Endpoint::on_timeout`] (the deadline it asked for has passed), and
//!   [`Endpoint::post`] (the application queues a message, requesters only);
//! * outputs: [`Endpoint::poll_transmit`] (a NIC port is free: hand over the next
//!   packet, or say when to ask again), [`Endpoint::poll_timeout`] (the earliest
//!   deadline) and [`Endpoint::poll_event`] (application events: a message arrived
//!   complete, or was fully acknowledged).
//!
//! **Call order.** After every input the host drains `poll_event`, re-reads
//! `poll_timeout`, and calls `poll_transmit` whenever one of the endpoint's NIC ports is
//! free, until it answers something other than [`Poll::Send`]. The simulator does this
//! from its event queue; a UDP datapath could do it from sockets with the same code.
//!
//! Every protocol is a pair of endpoints per connection: a *requester* that sends
//! RDMA WRITEs and a *responder* that places them and answers with ACK/NAK/SACK/CNP.
//!
//! Modules:
//! * [`conn`]: what an endpoint is told about its connection, messages, events.
//! * [`timer`]: a small deadline table indexed by an enum.
//! * [`common`]: what the multipath transports share (send buffer, receive window,
//!   RTT estimation, a per-packet-ACK responder, per-path metrics).
//! * [`roce`]: RoCEv2 RC with go-back-N and DCQCN (QP-Scaling is K of these).
//! * [`mprdma`]: MPRDMA, one window over virtual paths, ACK-clocked.
//! * [`mrc`]: MRC, per-packet entropy rotation over EV sets split across planes,
//!   SACK, trimming, EV retirement and probing, port-state remapping.
//! * [`stellar`]: STELLAR's N-path spraying with a shared window and six path
//!   algorithms.
//! * [`udmp`]: UDMP, delay-gradient rate control and a delay-driven ACK clock joined
//!   by a token pool.
//! * [`star`]: StaR, a connection whose server NIC keeps no state: the client carries
//!   it in every packet.
//! * [`any`]: [`AnyEndpoint`], enum dispatch over the concrete protocols (no `dyn` on
//!   the hot path).

pub mod any;
pub mod common;
pub mod conn;
pub mod mprdma;
pub mod mrc;
pub mod roce;
pub mod star;
pub mod stellar;
pub mod timer;
pub mod udmp;

pub use any::AnyEndpoint;
pub use conn::{AppEvent, ConnInfo, EndpointStats, Message, Poll};

use fabricsim_engine::Time;
use fabricsim_wire::Packet;

/// The contract every protocol endpoint implements. See the crate documentation for
/// the call order.
pub trait Endpoint {
    /// A packet addressed to this endpoint arrived at `now`.
    fn on_packet(&mut self, now: Time, pkt: &Packet);
    /// The deadline returned by [`poll_timeout`](Self::poll_timeout) has passed.
    /// Calling it early is harmless: nothing that is not yet due fires.
    fn on_timeout(&mut self, now: Time);
    /// The application queues a message (requesters; responders ignore it).
    fn post(&mut self, now: Time, msg: Message);
    /// NIC port `port` is free at `now`: the next packet to send on it, if any.
    fn poll_transmit(&mut self, now: Time, port: u8) -> Poll;
    /// For an endpoint that sends both data and control packets ([`AnyEndpoint::dual`]):
    /// port `port` may send a control packet at `now`, the next if any. Such an
    /// endpoint's [`poll_transmit`](Self::poll_transmit) then answers data packets only,
    /// so that its control packets go before data and a PFC pause of data holds only its
    /// data.
    fn poll_control(&mut self, _now: Time, _port: u8) -> Poll {
        Poll::Idle
    }
    /// The earliest time [`on_timeout`](Self::on_timeout) must be called.
    ///
    /// Only deadlines `on_timeout` itself resolves belong here: after `on_timeout(now)`
    /// the answer must be later than `now` (or `None`). Something that needs a transmit
    /// opportunity at a time (pacing, a due probe) is announced by `poll_transmit`
    /// answering [`Poll::Wait`].
    fn poll_timeout(&self) -> Option<Time>;
    /// The next application event, if any.
    fn poll_event(&mut self) -> Option<AppEvent>;
    /// Counters.
    fn stats(&self) -> &EndpointStats;
    /// Input: local NIC port `port` went down or came back up. Transports that cannot
    /// use several ports ignore it.
    fn on_port_state(&mut self, _now: Time, _port: u8, _up: bool) {}
    /// Per-path counters (senders of multipath protocols; empty otherwise).
    fn path_stats(&self) -> Vec<common::PathStats> {
        Vec::new()
    }
    /// Moves the path-state changes recorded since the last call into `out` (states
    /// that flicker, such as ECN avoidance, reported as of `now`).
    fn drain_path_log(&mut self, _now: Time, _out: &mut Vec<common::PathLog>) {}
    /// Out-of-order degrees of arriving packets (multipath receivers).
    fn ooo(&self) -> Option<&common::OooHistogram> {
        None
    }
    /// Requesters: `(seq, packets sent more than once)` for every message not yet
    /// reported [`AppEvent::Acked`] (a run ends when the last byte is placed, before
    /// the last acknowledgements come back), appended to `out`.
    fn unacked_retransmissions(&self, _out: &mut Vec<(u32, u64)>) {}
}
