//! Connection set-up, messages, outputs.

use fabricsim_engine::{Rate, Time};
use fabricsim_wire::Packet;

/// What an endpoint knows about its connection, fixed at set-up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConnInfo {
    /// This endpoint's host.
    pub local_host: u32,
    /// The peer's host.
    pub remote_host: u32,
    /// The peer endpoint's queue pair number (written into every packet's BTH).
    pub remote_qpn: u32,
    /// This endpoint's queue pair number.
    pub local_qpn: u32,
    /// NIC ports the endpoint may send on: `first_port .. first_port + ports`.
    pub first_port: u8,
    /// Number of NIC ports (planes) usable by this endpoint.
    pub ports: u8,
    /// Rate of one NIC port.
    pub port_rate: Rate,
    /// Largest payload per packet (the RoCE path MTU).
    pub mtu: u32,
}

/// An application message: an RDMA WRITE of `len` bytes to the peer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Message {
    /// Sequence number of the message within its connection, from 0.
    pub seq: u32,
    /// Bytes to write.
    pub len: u64,
    /// Remote virtual address of the first byte.
    pub va: u64,
    /// Remote key of the target memory region.
    pub rkey: u32,
}

/// What [`poll_transmit`](crate::Endpoint::poll_transmit) answers.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Poll {
    /// Send this packet now.
    Send(Packet),
    /// Nothing may be sent before this time (pacing); ask again then.
    Wait(Time),
    /// Nothing to send until some input arrives.
    Idle,
}

/// Events for the application.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AppEvent {
    /// Responder: every byte of message `seq` has been placed in memory.
    Received {
        /// Message sequence number.
        seq: u32,
    },
    /// Requester: message `seq` is fully acknowledged.
    Acked {
        /// Message sequence number.
        seq: u32,
        /// Packets of this message that were sent more than once.
        retransmitted: u64,
    },
    /// The connection failed (retry limit exceeded); no further progress.
    Failed,
}

/// Counters every endpoint keeps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EndpointStats {
    /// Data packets sent (first transmissions and retransmissions).
    pub data_sent: u64,
    /// Data packets sent again.
    pub retransmitted: u64,
    /// Control packets sent (ACK, NAK, SACK, CNP, probes).
    pub control_sent: u64,
    /// Payload bytes placed in memory for the first time (responders).
    pub bytes_placed: u64,
    /// Data packets received that carried nothing new (duplicates, out of window).
    pub duplicates: u64,
    /// Retransmission timeouts that fired.
    pub timeouts: u64,
    /// Tail loss probes sent (MRC): copies of the newest packet after two round trips
    /// of silence (also counted as retransmissions).
    pub tail_probes: u64,
    /// CNPs sent (responder) or received (requester).
    pub cnps: u64,
    /// ECN-marked data packets received (responders).
    pub ecn_marked: u64,
    /// Trimmed data packets received (responders).
    pub trimmed: u64,
}
