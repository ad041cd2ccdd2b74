//! What the ACK-clocked senders (MPRDMA, UDMP) share: a queue of credits, each the
//! permission to send one packet on one entropy value, granted by ACKs (on the ACK's
//! own path) and spent when the NIC asks for a packet.

use super::{PathStats, PsnRecord, SendBuffer};
use crate::conn::{ConnInfo, EndpointStats, Poll};
use fabricsim_engine::{Dur, Rng, Time};
use fabricsim_wire::Ext;
use std::collections::VecDeque;

/// A uniformly random entropy value of `0..paths`, other than `not` when there is a
/// choice.
pub fn random_path(rng: &mut Rng, paths: u32, not: Option<u32>) -> u32 {
    loop {
        let ev = rng.below(paths as u64) as u32;
        if Some(ev) != not || paths == 1 {
            return ev;
        }
    }
}

/// The path a lost packet is resent on: `good`, the path of the latest ACK the sender
/// judged not slow (as an ACK-clocked resend would be clocked out on it), unless that is
/// the path it was lost on; otherwise a random other one. (A uniformly random path
/// sends a packet lost to a slow path back to it with probability 1/N per spine.)
pub fn resend_path(rng: &mut Rng, paths: u32, good: Option<u32>, lost_on: u32) -> u32 {
    match good {
        Some(ev) if ev != lost_on => ev,
        _ => random_path(rng, paths, Some(lost_on)),
    }
}

/// What a NACK (a PSN refused beyond the receiver's bitmap, with the receiver's
/// cumulative point) makes lost: the refused PSN, and the bitmap's missing base if its
/// last copy is at least `age` (about a round trip) old, since the full bitmap says
/// that base is what holds it (see [`SendBuffer::mark_lost_head_if_older`]).
pub fn nack_losses(buf: &mut SendBuffer, nack: &Ext, now: Time, age: Dur) -> [Option<PsnRecord>; 2] {
    nack_losses_with(buf, nack, now, age, |_, _| {})
}

/// [`nack_losses`], calling `covered(psn, record)` for every PSN the NACK's cumulative
/// point acknowledges while in flight (see [`SendBuffer::cum_ack_with`]).
pub fn nack_losses_with(
    buf: &mut SendBuffer,
    nack: &Ext,
    now: Time,
    age: Dur,
    covered: impl FnMut(u32, PsnRecord),
) -> [Option<PsnRecord>; 2] {
    let refused = buf.mark_lost(nack.ack_psn);
    buf.cum_ack_with(nack.cum_psn, covered);
    [refused, buf.mark_lost_head_if_older(now, age)]
}

/// Spends the oldest credit on the next packet from `buf`, sent from NIC port `port`.
/// A retransmission due on the very EV it was lost on goes to `random_path` instead.
/// When nothing is left to send the remaining credits lapse: the ACK clock grants new
/// ones as data comes back.
#[allow(clippy::too_many_arguments)]
pub fn transmit(
    credits: &mut VecDeque<u32>,
    buf: &mut SendBuffer,
    paths: &mut [PathStats],
    rng: &mut Rng,
    info: &ConnInfo,
    port: u8,
    now: Time,
    stats: &mut EndpointStats,
) -> Poll {
    let Some(ev) = credits.pop_front() else { return Poll::Idle };
    let Some((psn, old)) = buf.take_next() else {
        credits.clear();
        return Poll::Idle;
    };
    let ev = if old == Some(ev) { random_path(rng, paths.len() as u32, old) } else { ev };
    let path = Some(&mut paths[ev as usize]);
    Poll::Send(buf.send(info, psn, ev, port, now, old.is_some(), path, stats))
}
