//! Enum dispatch over the concrete endpoint kinds.
//!
//! The simulator stores endpoints in one `Vec<AnyEndpoint>`; a `match` per call keeps
//! dispatch static and inlinable (smoltcp's `AnyController` pattern).

use crate::common::{OooHistogram, PathLog, PathStats, SprayResponder};
use crate::conn::{AppEvent, EndpointStats, Message, Poll};
use crate::mprdma::MprdmaSender;
use crate::mrc::MrcSender;
use crate::roce::{RoceRequester, RoceResponder};
use crate::star::{StarClient, StarServer};
use crate::stellar::StellarSender;
use crate::udmp::UdmpSender;
use crate::Endpoint;
use fabricsim_engine::Time;
use fabricsim_wire::Packet;

/// Any protocol endpoint.
///
/// Variants are stored inline, not boxed: endpoints live in one `Vec` and are touched
/// on every packet, so an indirection would cost a cache miss per event.
#[derive(Clone, Debug)]
#[allow(clippy::large_enum_variant)]
pub enum AnyEndpoint {
    /// RoCE requester.
    RoceRequester(RoceRequester),
    /// RoCE responder.
    RoceResponder(RoceResponder),
    /// MPRDMA sender.
    Mprdma(MprdmaSender),
    /// MRC sender.
    Mrc(MrcSender),
    /// STELLAR sender.
    Stellar(StellarSender),
    /// UDMP sender.
    Udmp(UdmpSender),
    /// The multipath receiver shared by MPRDMA, STELLAR, UDMP and MRC.
    Spray(SprayResponder),
    /// StaR's stateful client.
    StarClient(StarClient),
    /// StaR's stateless server.
    StarServer(StarServer),
}

macro_rules! dispatch {
    ($self:ident, $e:ident => $body:expr) => {
        match $self {
            AnyEndpoint::RoceRequester($e) => $body,
            AnyEndpoint::RoceResponder($e) => $body,
            AnyEndpoint::Mprdma($e) => $body,
            AnyEndpoint::Udmp($e) => $body,
            AnyEndpoint::Stellar($e) => $body,
            AnyEndpoint::Mrc($e) => $body,
            AnyEndpoint::Spray($e) => $body,
            AnyEndpoint::StarClient($e) => $body,
            AnyEndpoint::StarServer($e) => $body,
        }
    };
}

impl AnyEndpoint {
    /// Whether this endpoint only sends control packets (ACK/NAK/CNP/SACK), which NICs
    /// serve before data.
    pub fn is_responder(&self) -> bool {
        matches!(self, AnyEndpoint::RoceResponder(_) | AnyEndpoint::Spray(_))
    }

    /// Whether this endpoint sends both control and data packets, and so waits on both
    /// of its NIC port's queues: control through
    /// [`poll_control`](Endpoint::poll_control), data through
    /// [`poll_transmit`](Endpoint::poll_transmit).
    pub fn dual(&self) -> bool {
        matches!(self, AnyEndpoint::StarClient(_) | AnyEndpoint::StarServer(_))
    }

    /// Whether its NIC keeps no state for it (StaR's server): a modelled NIC neither
    /// looks up a context nor translates an address for its packets, which carry both.
    pub fn stateless(&self) -> bool {
        matches!(self, AnyEndpoint::StarServer(_))
    }
}

impl Endpoint for AnyEndpoint {
    #[inline]
    fn on_packet(&mut self, now: Time, pkt: &Packet) {
        dispatch!(self, e => e.on_packet(now, pkt))
    }
    #[inline]
    fn on_timeout(&mut self, now: Time) {
        dispatch!(self, e => e.on_timeout(now))
    }
    #[inline]
    fn post(&mut self, now: Time, msg: Message) {
        dispatch!(self, e => e.post(now, msg))
    }
    #[inline]
    fn poll_transmit(&mut self, now: Time, port: u8) -> Poll {
        dispatch!(self, e => e.poll_transmit(now, port))
    }
    #[inline]
    fn poll_control(&mut self, now: Time, port: u8) -> Poll {
        dispatch!(self, e => e.poll_control(now, port))
    }
    // Always: with seven kinds the compiler stopped inlining it into the NIC's timer
    // arming, which runs after every input (+0.8 % instructions on benchmark (a)).
    #[inline(always)]
    fn poll_timeout(&self) -> Option<Time> {
        dispatch!(self, e => e.poll_timeout())
    }
    #[inline]
    fn poll_event(&mut self) -> Option<AppEvent> {
        dispatch!(self, e => e.poll_event())
    }
    #[inline]
    fn stats(&self) -> &EndpointStats {
        dispatch!(self, e => e.stats())
    }
    fn on_port_state(&mut self, now: Time, port: u8, up: bool) {
        dispatch!(self, e => e.on_port_state(now, port, up))
    }
    fn path_stats(&self) -> Vec<PathStats> {
        dispatch!(self, e => e.path_stats())
    }
    fn drain_path_log(&mut self, now: Time, out: &mut Vec<PathLog>) {
        dispatch!(self, e => e.drain_path_log(now, out))
    }
    fn ooo(&self) -> Option<&OooHistogram> {
        dispatch!(self, e => e.ooo())
    }
    fn unacked_retransmissions(&self, out: &mut Vec<(u32, u64)>) {
        dispatch!(self, e => e.unacked_retransmissions(out))
    }
}
