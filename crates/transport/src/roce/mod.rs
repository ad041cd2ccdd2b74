//! RoCEv2 Reliable Connection with go-back-N and DCQCN.
//!
//! One QP is one 5-tuple (UDP source port fixed per QP), so ECMP pins it to one path.
//! PSNs count packets. The responder accepts only the expected PSN; a later PSN is
//! dropped and answered with one NAK (sequence error) carrying the expected PSN, and
//! the requester goes back to it. ACKs are cumulative (the BTH PSN of an ACK is the
//! last PSN received in order). A retransmission timeout without progress also goes
//! back to the first unacknowledged PSN; after `retry_limit` timeouts in a row the QP
//! fails, as an InfiniBand QP does when its retry count is exhausted.
//!
//! Congestion control is DCQCN ([`dcqcn`]): switches mark ECN, the responder turns
//! marks into CNPs (at most one per `cnp_interval`), the requester cuts its rate.

pub mod dcqcn;
mod requester;
mod responder;

pub use dcqcn::{Dcqcn, DcqcnConfig};
pub use requester::RoceRequester;
pub use responder::RoceResponder;

use fabricsim_engine::Dur;

/// RoCE parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RoceConfig {
    /// The responder ACKs every this many in-order packets (and every message end).
    pub ack_interval: u32,
    /// Retransmission timeout: go back to the first unacknowledged PSN.
    pub rto: Dur,
    /// Timeouts in a row without progress before the QP fails.
    pub retry_limit: u32,
    /// The responder repeats a NAK for the same missing PSN at most this often (the
    /// HPCC ns-3 model), or, `None`, never: InfiniBand's rule, one NAK per sequence
    /// error and new requests ignored until the expected PSN arrives, so that a resend
    /// lost again is found by the timeout and counts against `retry_limit`. (Repeats
    /// send the QP back each time instead, for ever if that PSN is always lost.)
    pub nak_interval: Option<Dur>,
    /// DCQCN, or `None` for no congestion control (line rate).
    pub dcqcn: Option<DcqcnConfig>,
}

impl Default for RoceConfig {
    fn default() -> Self {
        RoceConfig {
            ack_interval: 1,
            // InfiniBand's local ACK timeout, 4.096 us x 2^14: ConnectX's usual value.
            rto: Dur::from_ns(4096 * (1 << 14)),
            retry_limit: 7,
            nak_interval: Some(Dur::from_us(500)),
            dcqcn: None,
        }
    }
}
