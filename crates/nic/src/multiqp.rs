//! Messages over a connection's QPs.
//!
//! A connection has one QP or several (QP-Scaling's K, later Maestro's K paths). A
//! message posted on it is cut into parts by the connection's [`Split`] policy, each
//! part posted on one QP as that QP's next message (its sequence number); the QP's
//! responder reports each part received and its requester each part acknowledged, and
//! this layer turns those into message-level [`crate::NicOutput`]s once every part
//! has arrived, and per part acknowledged.

use crate::{Nic, Wire};
use fabricsim_engine::Time;
use fabricsim_transport::{Endpoint, Message};

/// How a message is cut over a connection's QPs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Split {
    /// Into as many equal parts as QPs (the remainder on the first ones); a QP whose
    /// share is empty carries nothing of it (QP-Scaling, and a single QP).
    Even,
}

impl Split {
    /// The parts of a `size`-byte message over `qps` QPs: `(qp, bytes)`.
    pub fn parts(self, size: u64, qps: u32) -> impl Iterator<Item = (u32, u64)> {
        match self {
            Split::Even => (0..qps)
                .map(move |i| (i, size / qps as u64 + u64::from((i as u64) < size % qps as u64)))
                .filter(|&(_, len)| len > 0),
        }
    }
}

/// One connection: its QPs' endpoints and the messages each QP carries.
#[derive(Clone, Debug)]
pub(crate) struct ConnState {
    /// Endpoint ids of the connection's QPs: requester `first_ep + 2i`, responder `+1`.
    pub(crate) first_ep: u32,
    pub(crate) qps: u32,
    pub(crate) split: Split,
    /// What its endpoints' events become.
    pub(crate) report: crate::Report,
    /// Per QP, the message ids it carries parts of, by its own sequence numbers (for
    /// a Maestro connection: ids of its chunk records).
    pub(crate) msgs: Vec<Vec<u32>>,
    /// Every message uses the connection's one buffer (else a buffer of its own).
    pub(crate) reuse_buffer: bool,
    /// Maestro's chunking, balancing and path monitor (`None`: the split alone).
    pub(crate) maestro: Option<Box<crate::maestro::Maestro>>,
}

/// A message's parts still to be received and acknowledged.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Parts {
    pub(crate) unreceived: u32,
    pub(crate) unacked: u32,
}

/// The message that sequence number `seq` of QP `qp` carries.
#[inline]
pub(crate) fn part_of(conn: &ConnState, qp: usize, seq: u32) -> u32 {
    conn.msgs[qp][seq as usize]
}

/// The virtual address of byte `offset` of message `msg` on connection `conn`: in a
/// region of the message's own, so that parts and messages never overlap, or, for a
/// connection that reuses its buffer (`reuse_buffer`), of the connection's (the same at
/// every message).
pub(crate) fn address(reuse_buffer: bool, conn: u32, msg: u32, offset: u64) -> u64 {
    if reuse_buffer {
        (1u64 << 63) + ((conn as u64) << 32) + offset
    } else {
        0x7f00_0000_0000u64 + ((msg as u64) << 32) + offset
    }
}

impl Nic {
    /// Makes every message of connection `conn` use the connection's one buffer.
    pub fn reuse_buffer(&mut self, conn: u32) {
        self.conns[conn as usize].reuse_buffer = true;
    }

    /// Records that message `msg` of `size` bytes goes on connection `conn`: cuts it
    /// into parts and numbers each in its QP's sequence. A copy of the world that only
    /// receives the message (a partition) calls this alone; [`post`](Self::post) calls
    /// it too. Returns `(qp, bytes, sequence)` per part. For a Maestro connection it only
    /// counts the message's parts (none returned): which QP carries each chunk the
    /// sender's copy decides as it runs and reports ([`Nic::take_handovers`]).
    pub fn book(&mut self, conn: u32, msg: u32, size: u64) -> Vec<(u32, u64, u32)> {
        let c = &mut self.conns[conn as usize];
        if let Some(m) = &c.maestro {
            // Its chunks' QPs come with the sender's handovers (`book_handover`).
            let n = m.config().parts(size);
            self.parts[msg as usize] = crate::multiqp::Parts { unreceived: n, unacked: n };
            return Vec::new();
        }
        let parts: Vec<(u32, u64, u32)> = c
            .split
            .parts(size, c.qps)
            .map(|(i, len)| {
                let queue = &mut c.msgs[i as usize];
                queue.push(msg);
                (i, len, queue.len() as u32 - 1)
            })
            .collect();
        let n = parts.len() as u32;
        self.parts[msg as usize] = crate::multiqp::Parts { unreceived: n, unacked: n };
        // A stateless server registers the part's buffer with its client's security
        // table (see `security`).
        let first = c.first_ep;
        let mut offset = 0;
        for &(i, len, _) in &parts {
            for ep in [first + 2 * i, first + 2 * i + 1] {
                if self.meta[ep as usize].stateless {
                    let c = &self.conns[conn as usize];
                    let reuse = c.reuse_buffer;
                    let (lo, hi) = (address(reuse, conn, msg, offset), address(reuse, conn, msg, offset + len));
                    self.register(ep, lo, hi);
                }
            }
            offset += len;
        }
        parts
    }

    /// Posts message `msg` of `size` bytes on connection `conn` at `now`: each part as
    /// an RDMA WRITE at its offset of the message's buffer, on its QP.
    pub fn post<W: Wire>(&mut self, now: Time, conn: u32, msg: u32, size: u64, wire: &mut W) {
        if self.conns[conn as usize].maestro.is_some() {
            return self.post_chunked(now, conn, msg, size, wire);
        }
        let first = self.conns[conn as usize].first_ep;
        let mut offset = 0;
        for (i, len, seq) in self.book(conn, msg, size) {
            let ep = first + 2 * i;
            let va = address(self.conns[conn as usize].reuse_buffer, conn, msg, offset);
            offset += len;
            self.eps[ep as usize].post(now, Message { seq, len, va, rkey: msg });
            self.after_input(now, ep, wire);
            self.ready(now, ep, wire);
        }
    }

    /// Posts the transport message `msg` on endpoint `ep` (a requester of a connection
    /// that reports its endpoints' events, [`crate::Report::Endpoints`]) as given: its
    /// sequence number, address and key are the caller's.
    pub fn post_message<W: Wire>(&mut self, now: Time, ep: u32, msg: Message, wire: &mut W) {
        debug_assert_eq!(
            self.conns[self.meta[ep as usize].conn as usize].report,
            crate::Report::Endpoints,
            "messages of a message-level connection are posted with Nic::post"
        );
        self.eps[ep as usize].post(now, msg);
        self.after_input(now, ep, wire);
        self.ready(now, ep, wire);
    }

    /// Packets sent more than once of the messages whose parts are still
    /// unacknowledged, as the senders count them now: `(message, packets)`.
    pub fn unacked_retransmissions(&self) -> Vec<(u32, u64)> {
        let mut out = Vec::new();
        let mut pending = Vec::new();
        for conn in &self.conns {
            for q in 0..conn.qps {
                pending.clear();
                self.eps[(conn.first_ep + 2 * q) as usize].unacked_retransmissions(&mut pending);
                for &(seq, n) in &pending {
                    let Some(&m) = conn.msgs[q as usize].get(seq as usize) else { continue };
                    match &conn.maestro {
                        None => out.push((m, n)),
                        Some(c) => out.extend(c.message_of(m).map(|m| (m, n))),
                    }
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_even_split_puts_the_remainder_on_the_first_qps_and_skips_empty_ones() {
        let parts: Vec<_> = Split::Even.parts(10, 4).collect();
        assert_eq!(parts, [(0, 3), (1, 3), (2, 2), (3, 2)]);
        let parts: Vec<_> = Split::Even.parts(2, 4).collect();
        assert_eq!(parts, [(0, 1), (1, 1)]);
        assert_eq!(Split::Even.parts(7, 1).collect::<Vec<_>>(), [(0, 7)]);
    }
}
