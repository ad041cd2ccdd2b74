//! StaR: an RDMA connection whose server NIC keeps no per-connection state
//! (Zhang et al., APNet '20; `SPEC.md` section 2).
//!
//! One side of a StaR connection, the *server*, is stateless: its NIC acts on every
//! packet from what the packet carries and keeps nothing between packets. The other,
//! the *client*, holds the connection's whole state, the server's included (its
//! posted work requests, the addresses its data goes to and comes from), and runs the
//! congestion control for both directions. The seven packet types and their header
//! are in [`fabricsim_wire::opcode`] and [`fabricsim_wire::Sth`].
//!
//! A connection carries WRITEs one way, so a StaR connection is one of two shapes:
//! * **the server receives** (the client WRITEs to it): the client sends *RDP*s, each
//!   with the DMA address and length of its payload and the header of the answer; the
//!   server's NIC places the payload and answers each with an *RA* built from that
//!   header ([`StarServer`] as receiver, [`StarClient`] as writer).
//! * **the server sends** (it WRITEs to the client): its driver sends the work request
//!   as a *WQEP*; the client answers with an *EA* and asks for the data with *GD*s,
//!   each of which the server's NIC answers with an *SDP* of the bytes it names; once
//!   every byte is in, the client sends a *CQEP*, the server's completion, which the
//!   server's NIC answers with an EA ([`StarServer`] as sender, [`StarClient`] as
//!   reader).
//!
//! Loss: the client resends RDPs and GDs not answered within the retransmission
//! timeout, and CQEPs not acknowledged; the server's driver (host software, which may
//! keep state: the paper's section 3.3) resends WQEPs not acknowledged.
//!
//! Congestion control is a window at the client ([`cc`]), DCTCP's: it bounds the bytes
//! of RDPs unanswered, or of GDs whose SDPs have not come, and reads ECN marks from
//! the RAs' echo or the SDPs themselves. A rate-based scheme would need per-connection
//! pacing state at the stateless sender, which is why the paper rules it out.
//!
//! What the server's endpoint keeps while a run goes on is a queue of answers not yet
//! sent (the NIC's transmit queue, not connection state) and, in its driver, the work
//! requests posted and not yet complete. Its record of bytes placed per work request
//! ([`placement`]) is the simulator's observation for the flow table, which the
//! protocol never reads: a real StaR server's application learns of a WRITE by
//! polling its memory.

pub mod cc;
mod client;
pub mod placement;
mod server;

pub use client::StarClient;
pub use server::StarServer;

use crate::conn::ConnInfo;
use fabricsim_engine::Dur;
use fabricsim_wire::{Bth, Ecn, NetHdr, Packet, Sth, TrafficClass};

/// A StaR connection's settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StarConfig {
    /// The client's initial congestion window, bytes (also its largest: twice this).
    pub init_cwnd: u32,
    /// DCTCP's gain for the marked fraction's moving average.
    pub dctcp_g: f64,
    /// Retransmission timeout for RDPs, GDs, CQEPs and (in the server's driver) WQEPs.
    pub rto: Dur,
    /// Timeouts in a row without progress before the connection fails.
    pub retry_limit: u32,
}

/// Which of the connection's two directions the endpoint serves (see the module
/// documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// The client WRITEs to the stateless server (RDP/RA).
    ServerReceives,
    /// The stateless server WRITEs to the client (WQEP, GD/SDP, CQEP).
    ServerSends,
}

/// Where a StaR packet goes: host, QP, and the UDP source port (entropy) it takes.
#[derive(Clone, Copy, Debug)]
pub(crate) struct To {
    pub(crate) host: u32,
    pub(crate) qp: u32,
    pub(crate) sport: u16,
}

/// A StaR packet of type `op` from host `local` to `to`, with PSN `psn`, header `h`
/// and `payload` bytes.
pub(crate) fn star_packet(local: u32, to: To, op: u8, psn: u32, h: Sth, payload: u32) -> Packet {
    let To { host: remote, qp, sport } = to;
    let data = fabricsim_wire::opcode::is_data(op) || op == fabricsim_wire::opcode::STAR_GD;
    let mut pkt = Packet {
        net: NetHdr {
            src: local,
            dst: remote,
            sport,
            class: if data { TrafficClass::Data } else { TrafficClass::Control },
            ecn: if data { Ecn::Ect0 } else { Ecn::NotEct },
            ..Default::default()
        },
        bth: Bth { opcode: op, ack_req: false, dest_qp: qp, psn },
        payload,
        ..Default::default()
    };
    pkt.set_sth(h);
    pkt
}

/// The answer to `pkt` (an RDP, GD or CQEP) built from its header alone, as the
/// stateless server builds it: to the packet's source host and its header's reply QP
/// and source port, echoing its PSN, work request, address and length, and its ECN
/// mark.
pub(crate) fn answer(info: &ConnInfo, pkt: &Packet, op: u8, payload: u32) -> Packet {
    let h = pkt.sth();
    let ece = if pkt.net.ecn == Ecn::Ce { Sth::F_ECE } else { 0 };
    let reply = Sth { flags: ece, ..h };
    let to = To { host: pkt.net.src, qp: h.reply_qp, sport: h.reply_sport };
    star_packet(info.local_host, to, op, pkt.bth.psn, reply, payload)
}
