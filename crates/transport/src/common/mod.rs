//! Pieces every multipath transport shares.
//!
//! * [`sendbuf`]: the sender's PSN space, per-PSN records, the retransmission queue and
//!   a time-ordered send log for RTO and RACK-style loss detection; data packets carry
//!   their RDMA address (RETH) in every packet so they can be placed in any order.
//! * [`recvwin`]: the receiver's window bitmap, direct placement and in-order message
//!   completion.
//! * [`rtt`]: smoothed RTT and RTO (RFC 6298 style).
//! * [`metrics`]: per-path (entropy value) counters, path-state logs and the
//!   out-of-order degree histogram.
//! * [`clocked`]: the credit queue of the ACK-clocked senders (MPRDMA, UDMP).
//! * [`responder`]: a receiver answering every data packet with a per-packet ACK or SACK
//!   (and NACKs for trimmed or out-of-window packets), configured per protocol.

pub mod clocked;
pub mod metrics;
pub mod recvwin;
pub mod responder;
pub mod rtt;
pub mod sendbuf;

/// NIC ports (planes) a connection can use: an entropy value holds its plane in 3
/// bits. Per-plane state is kept in arrays of this size inside the endpoint rather
/// than behind a pointer, since sends and acknowledgements read it every packet.
pub const MAX_PLANES: usize = 8;

pub use metrics::{EvState, OooHistogram, PathLog, PathStats};
pub use recvwin::{Arrival, RecvWindow};
pub use responder::{SprayResponder, SprayResponderConfig};
pub use rtt::RttEstimator;
pub use sendbuf::{PsnRecord, SendBuffer};

use crate::conn::ConnInfo;
use fabricsim_wire::{hdr, Bth, Ecn, NetHdr, Packet, TrafficClass};

/// A control packet (opcode `op`, extension header, control class, not ECN-capable)
/// from `info`'s local end to its peer on entropy value `ev`.
pub fn control_packet(info: &ConnInfo, op: u8, ev: u32) -> Packet {
    let mut net = NetHdr {
        src: info.local_host,
        dst: info.remote_host,
        class: TrafficClass::Control,
        ecn: Ecn::NotEct,
        ..Default::default()
    };
    net.set_entropy(ev);
    Packet {
        net,
        bth: Bth { opcode: op, ack_req: false, dest_qp: info.remote_qpn, psn: 0 },
        hdrs: hdr::EXT,
        ..Default::default()
    }
}
