//! Building endpoints for a connection from the scenario's transport, and what each
//! transport puts on the wire (for ideal completion times).

use crate::scenario::TransportSpec;
use fabricsim_engine::Rng;
use fabricsim_transport::roce::{RoceRequester, RoceResponder};
use fabricsim_transport::{AnyEndpoint, ConnInfo};
use fabricsim_wire::packet::{BASE_HEADER_BYTES, PREAMBLE_IFG_BYTES, RETH_BYTES};

/// Number of QPs (requester/responder pairs) one connection uses.
pub fn qps(spec: &TransportSpec) -> u32 {
    match spec {
        TransportSpec::Roce(_) => 1,
    }
}

/// The requester/responder pair of one QP of a connection.
pub fn endpoint_pair(spec: &TransportSpec, req: ConnInfo, resp: ConnInfo, rng: &mut Rng) -> (AnyEndpoint, AnyEndpoint) {
    // Like Linux's RoCEv2 driver: a random UDP source port in 0xC000..=0xFFFF per QP.
    let sport = 0xC000 | (rng.below(0x4000) as u16);
    let rsport = 0xC000 | (rng.below(0x4000) as u16);
    match spec {
        TransportSpec::Roce(cfg) => (
            AnyEndpoint::RoceRequester(RoceRequester::new(req, *cfg, sport)),
            AnyEndpoint::RoceResponder(RoceResponder::new(resp, *cfg, rsport)),
        ),
    }
}

/// Whether the transport spreads one connection over every NIC port (plane).
pub fn uses_all_ports(spec: &TransportSpec) -> bool {
    match spec {
        TransportSpec::Roce(_) => false,
    }
}

/// Packets needed for a `size`-byte message.
pub fn packets(size: u64, mtu: u32) -> u64 {
    size.div_ceil(mtu as u64).max(1)
}

/// Bytes packet `j` of a `size`-byte message occupies on the wire (preamble and gap
/// included).
pub fn frame_wire_bytes(spec: &TransportSpec, size: u64, mtu: u32, j: u64) -> u64 {
    let n = packets(size, mtu);
    let payload = if j + 1 == n { size - (n - 1) * mtu as u64 } else { mtu as u64 };
    let base = payload + (BASE_HEADER_BYTES + PREAMBLE_IFG_BYTES) as u64;
    match spec {
        // RETH only on the first packet.
        TransportSpec::Roce(_) => base + if j == 0 { RETH_BYTES as u64 } else { 0 },
    }
}
