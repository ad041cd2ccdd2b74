//! The sender's side of a multipath connection: PSNs, per-PSN records, loss detection.
//!
//! PSNs count packets across all posted messages. For every PSN between the
//! cumulative acknowledgement (`una`) and the next never-sent PSN the buffer keeps a
//! [`PsnRecord`]: when and on which entropy value it was last sent, and whether it was
//! selectively acknowledged or declared lost. Lost PSNs wait in a retransmission queue
//! and are sent before new data.
//!
//! A send log in transmission order (time, PSN, attempt) makes the time-based loss
//! rules O(1) amortized: an RTO (the oldest live send is older than the timeout) and
//! RACK (a packet sent at least `reo` before the newest acknowledged send is lost, and
//! by RACK's reordering timer one sent before it at all, once a round trip and `reo`
//! have passed). Entries made stale by an acknowledgement or a later retransmission
//! are skipped.
//!
//! Data packets carry a RETH in every packet (address, rkey, message length) and the
//! extension header (entropy value, send timestamp, first PSN of their message), which
//! is what lets a receiver place them in any order.

use super::PathStats;
use crate::conn::{AppEvent, ConnInfo, EndpointStats, Message};
use fabricsim_engine::{Dur, Time};
use fabricsim_wire::{hdr, opcode, Bth, Ecn, Ext, NetHdr, Packet, Reth, TrafficClass};
use std::collections::VecDeque;

/// What the sender remembers about one PSN.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PsnRecord {
    /// When it was last sent.
    pub sent_at: Time,
    /// Entropy value it was last sent on.
    pub ev: u32,
    /// NIC port it was last sent from.
    pub port: u8,
    /// Selectively acknowledged.
    pub acked: bool,
    /// Declared lost and waiting for retransmission.
    pub lost: bool,
    /// Declared lost by a retransmission timeout (not by RACK).
    pub timed_out: bool,
    /// Times sent.
    pub sends: u16,
    /// The sender's own index of `ev` in its path table, if it keeps one (set with
    /// [`SendBuffer::set_slot`]): an acknowledgement echoing `ev` then finds the path's
    /// state without a lookup by EV.
    pub slot: u32,
}

#[derive(Clone, Copy, Debug)]
struct Outgoing {
    msg: Message,
    first_psn: u32,
    npkts: u32,
    retx: u64,
}

/// The sender's PSN space.
#[derive(Clone, Debug)]
pub struct SendBuffer {
    mtu: u32,
    msgs: VecDeque<Outgoing>,
    next_msg_psn: u32,
    una: u32,
    next_new: u32,
    recs: VecDeque<PsnRecord>,
    retx: VecDeque<u32>,
    log: VecDeque<(Time, u32, u16)>,
    inflight: u32,
    events: VecDeque<AppEvent>,
    /// Send time of the most recently sent packet that has been acknowledged (RACK).
    newest_acked_sent: Time,
    /// Whether `newest_acked_sent` has been set (a send at time 0 is a real time).
    acked_any: bool,
    /// New PSNs are only sent below `una + window` (the receiver's bitmap).
    window: u32,
    /// The last packet of a message is a WRITE with immediate (its sequence number).
    imm: bool,
}

impl SendBuffer {
    /// An empty buffer for packets of at most `mtu` payload bytes.
    pub fn new(mtu: u32) -> SendBuffer {
        SendBuffer {
            mtu,
            msgs: VecDeque::new(),
            next_msg_psn: 0,
            una: 0,
            next_new: 0,
            recs: VecDeque::new(),
            retx: VecDeque::new(),
            log: VecDeque::new(),
            inflight: 0,
            events: VecDeque::new(),
            newest_acked_sent: Time::ZERO,
            acked_any: false,
            window: u32::MAX,

            imm: false,
        }
    }

    /// Limits new data to PSNs below `una + window` (flow control for a receiver whose
    /// bitmap silently drops what lies beyond it).
    pub fn with_window(mut self, window: u32) -> SendBuffer {
        self.window = window.max(1);
        self
    }

    /// Ends every message with an RDMA WRITE with immediate (`LAST_IMM` / `ONLY_IMM`)
    /// carrying the message's sequence number, as MRC does to signal completion.
    pub fn with_imm(mut self, imm: bool) -> SendBuffer {
        self.imm = imm;
        self
    }

    fn window_open(&self) -> bool {
        self.next_new < self.next_msg_psn && self.next_new - self.una < self.window
    }

    /// Queues a message.
    pub fn post(&mut self, msg: Message) {
        let npkts = msg.len.div_ceil(self.mtu as u64).max(1) as u32;
        self.msgs.push_back(Outgoing { msg, first_psn: self.next_msg_psn, npkts, retx: 0 });
        self.next_msg_psn += npkts;
    }

    /// Whether anything may be sent now (retransmissions, or new data within the
    /// window).
    #[inline]
    pub fn has_data(&self) -> bool {
        self.window_open() || self.retx.iter().any(|&p| self.needs_retx(p))
    }

    /// Whether new (never sent) data remains.
    pub fn has_new(&self) -> bool {
        self.next_new < self.next_msg_psn
    }

    /// Packets posted but never sent.
    pub fn unsent(&self) -> u32 {
        self.next_msg_psn - self.next_new
    }

    /// Whether every posted byte is acknowledged.
    pub fn all_acked(&self) -> bool {
        self.una == self.next_msg_psn
    }

    /// Packets sent and neither acknowledged nor declared lost.
    #[inline]
    pub fn inflight(&self) -> u32 {
        self.inflight
    }

    /// The cumulative acknowledgement point.
    pub fn una(&self) -> u32 {
        self.una
    }

    /// One past the highest PSN ever sent.
    pub fn next_new(&self) -> u32 {
        self.next_new
    }

    /// The highest PSN sent and neither acknowledged nor declared lost.
    pub fn newest_outstanding(&self) -> Option<u32> {
        (self.una..self.next_new).rev().find(|&p| self.record(p).is_some_and(|r| r.sends > 0 && !r.acked && !r.lost))
    }

    /// The record of `psn`, if it is in the window.
    pub fn record(&self, psn: u32) -> Option<&PsnRecord> {
        if psn < self.una || psn >= self.next_new {
            return None;
        }
        self.recs.get((psn - self.una) as usize)
    }

    fn record_mut(&mut self, psn: u32) -> Option<&mut PsnRecord> {
        if psn < self.una || psn >= self.next_new {
            return None;
        }
        self.recs.get_mut((psn - self.una) as usize)
    }

    fn needs_retx(&self, psn: u32) -> bool {
        self.record(psn).is_some_and(|r| r.lost && !r.acked)
    }

    /// The next PSN to send: the oldest lost one, else the next new one. Returns the
    /// PSN and, for a retransmission, the entropy value it was last sent on.
    pub fn take_next(&mut self) -> Option<(u32, Option<u32>)> {
        while let Some(&p) = self.retx.front() {
            self.retx.pop_front();
            if self.needs_retx(p) {
                let ev = self.record(p).map(|r| r.ev);
                return Some((p, ev));
            }
        }
        self.window_open().then_some((self.next_new, None))
    }

    /// Sends `psn` (from [`take_next`](Self::take_next)) on `ev` from NIC port `port`:
    /// builds the packet, records the send, and counts it for the path (`path`, if the
    /// EV is tracked) and the endpoint. `retx`: it was sent before.
    #[allow(clippy::too_many_arguments)]
    pub fn send(
        &mut self,
        info: &ConnInfo,
        psn: u32,
        ev: u32,
        port: u8,
        now: Time,
        retx: bool,
        path: Option<&mut PathStats>,
        stats: &mut EndpointStats,
    ) -> Packet {
        let pkt = self.build(info, psn, ev, now, retx);
        self.record_send(psn, ev, port, now);
        if let Some(s) = path {
            s.packets += 1;
            s.retransmissions += u64::from(retx);
        }
        stats.data_sent += 1;
        stats.retransmitted += u64::from(retx);
        pkt
    }

    /// Sets the path-table index of `psn`'s last send (see [`PsnRecord::slot`]).
    pub fn set_slot(&mut self, psn: u32, slot: u32) {
        if let Some(rec) = self.record_mut(psn) {
            rec.slot = slot;
        }
    }

    /// Records that `psn` (from [`take_next`](Self::take_next)) is being sent now on
    /// `ev` from NIC port `port`.
    pub fn record_send(&mut self, psn: u32, ev: u32, port: u8, now: Time) {
        if psn == self.next_new {
            self.recs.push_back(PsnRecord::default());
            self.next_new += 1;
        }
        let rec = self.record_mut(psn).expect("sent PSN is in the window");
        let retransmission = rec.sends > 0;
        rec.sent_at = now;
        rec.ev = ev;
        rec.port = port;
        rec.lost = false;
        rec.timed_out = false;
        rec.sends = rec.sends.saturating_add(1);
        let sends = rec.sends;
        self.inflight += 1;
        self.log.push_back((now, psn, sends));
        if retransmission {
            if let Some(m) = self.msg_of(psn) {
                self.msgs[m].retx += 1;
            }
        }
    }

    /// Counts a second copy of `psn` sent beside its recorded send (which it does not
    /// replace): a retransmission of the endpoint and of its message.
    pub fn count_extra_copy(&mut self, psn: u32, stats: &mut EndpointStats) {
        stats.data_sent += 1;
        stats.retransmitted += 1;
        if let Some(m) = self.msg_of(psn) {
            self.msgs[m].retx += 1;
        }
    }

    /// `(seq, retransmitted packets)` of every message not yet fully acknowledged.
    pub fn unacked_retransmissions(&self, out: &mut Vec<(u32, u64)>) {
        out.extend(self.msgs.iter().map(|m| (m.msg.seq, m.retx)));
    }

    fn msg_of(&self, psn: u32) -> Option<usize> {
        let i = self.msgs.partition_point(|m| m.first_psn + m.npkts <= psn);
        (i < self.msgs.len() && self.msgs[i].first_psn <= psn).then_some(i)
    }

    /// The data packet for `psn` sent on `ev` at `now`: RETH in every packet, the
    /// extension header with the entropy value, the send time and the first PSN of the
    /// message.
    pub fn build(&self, info: &ConnInfo, psn: u32, ev: u32, now: Time, retransmission: bool) -> Packet {
        let m = &self.msgs[self.msg_of(psn).expect("PSN of a posted message")];
        let k = (psn - m.first_psn) as u64;
        let offset = k * self.mtu as u64;
        let payload = m.msg.len.saturating_sub(offset).min(self.mtu as u64) as u32;
        let (first, last) = (k == 0, k + 1 == m.npkts as u64);
        let imm = last && self.imm;
        let op = match (first, last, imm) {
            (true, true, false) => opcode::RC_WRITE_ONLY,
            (true, true, true) => opcode::RC_WRITE_ONLY_IMM,
            (true, false, _) => opcode::RC_WRITE_FIRST,
            (false, true, false) => opcode::RC_WRITE_LAST,
            (false, true, true) => opcode::RC_WRITE_LAST_IMM,
            (false, false, _) => opcode::RC_WRITE_MIDDLE,
        };
        let mut net = NetHdr {
            src: info.local_host,
            dst: info.remote_host,
            class: TrafficClass::Data,
            ecn: Ecn::Ect0,
            ..Default::default()
        };
        net.set_entropy(ev);
        Packet {
            net,
            bth: Bth { opcode: op, ack_req: true, dest_qp: info.remote_qpn, psn },
            payload,
            hdrs: hdr::RETH | hdr::EXT | if imm { hdr::IMM } else { 0 },
            imm: if imm { m.msg.seq } else { 0 },
            reth: Reth { va: m.msg.va + offset, rkey: m.msg.rkey, len: m.msg.len.min(u32::MAX as u64) as u32 },
            ext: Ext {
                ev,
                cum_psn: m.first_psn,
                ts: now.ps(),
                flags: if retransmission { Ext::F_RETX } else { 0 },
                ..Default::default()
            },
            ..Default::default()
        }
    }

    /// Selective acknowledgement of `psn`. Returns its record as it was if this is news
    /// (the PSN was in flight or declared lost), `None` for duplicates.
    ///
    /// RACK's clock (the newest acknowledged send) only moves if the PSN was sent once:
    /// for a resent one it is unknown which copy arrived (RFC 8985 section 6.2), and
    /// taking the latest send when a late first copy arrived would declare everything
    /// sent between the two lost. [`ack_copy`](Self::ack_copy) names the copy.
    pub fn ack(&mut self, psn: u32) -> Option<PsnRecord> {
        let before = self.ack_record(psn)?;
        if before.sends <= 1 {
            self.newest_acked_sent = self.newest_acked_sent.max(before.sent_at);
            self.acked_any = true;
        }
        self.advance();
        self.prune();
        Some(before)
    }

    /// Acknowledgement of the copy of `psn` sent at `sent` (a timestamp echoed by the
    /// receiver), which moves RACK's clock to `sent`.
    pub fn ack_copy(&mut self, psn: u32, sent: Time) -> Option<PsnRecord> {
        let before = self.ack_record(psn)?;
        self.newest_acked_sent = self.newest_acked_sent.max(sent.min(before.sent_at));
        self.acked_any = true;
        self.advance();
        self.prune();
        Some(before)
    }

    fn ack_record(&mut self, psn: u32) -> Option<PsnRecord> {
        let rec = self.record_mut(psn)?;
        if rec.acked {
            return None;
        }
        let before = *rec;
        rec.acked = true;
        if !before.lost {
            self.inflight -= 1;
        }
        Some(before)
    }

    /// Cumulative acknowledgement: every PSN below `cum` arrived.
    pub fn cum_ack(&mut self, cum: u32) {
        self.cum_ack_with(cum, |_, _| {});
    }

    /// [`cum_ack`](Self::cum_ack), calling `newly(psn, record)` for every PSN that it
    /// acknowledges while in flight (not selectively acknowledged before, nor declared
    /// lost): a packet known to have arrived whose own acknowledgement has not.
    pub fn cum_ack_with(&mut self, cum: u32, mut newly: impl FnMut(u32, PsnRecord)) {
        let end = cum.min(self.next_new);
        while self.una < end {
            let psn = self.una;
            let rec = self.recs[0];
            if !rec.acked {
                if !rec.lost {
                    newly(psn, rec);
                }
                self.ack(psn);
            } else {
                self.advance_one();
            }
        }
        self.prune();
    }

    fn advance_one(&mut self) {
        self.recs.pop_front();
        self.una += 1;
        while let Some(front) = self.msgs.front() {
            if front.first_psn + front.npkts > self.una {
                break;
            }
            self.events.push_back(AppEvent::Acked { seq: front.msg.seq, retransmitted: front.retx });
            self.msgs.pop_front();
        }
    }

    fn advance(&mut self) {
        while self.recs.front().is_some_and(|r| r.acked) {
            self.advance_one();
        }
    }

    /// Declares the oldest unacknowledged PSN lost (see [`mark_lost`](Self::mark_lost))
    /// if its last transmission is at least `age` old. A receiver that NACKs PSNs beyond
    /// its bitmap says that bitmap is full: the PSN at its base, still missing after a
    /// round trip, is what holds it (a packet stuck on a slow path), and resending it on
    /// another path frees the window. At most once per `age`, since the resend restarts
    /// the clock.
    pub fn mark_lost_head_if_older(&mut self, now: Time, age: Dur) -> Option<PsnRecord> {
        let rec = self.record(self.una)?;
        if now < rec.sent_at + age {
            return None;
        }
        self.mark_lost(self.una)
    }

    /// Notes that lost `psn` was found by a retransmission timeout.
    pub fn mark_timed_out(&mut self, psn: u32) {
        if let Some(r) = self.record_mut(psn) {
            r.timed_out = r.lost;
        }
    }

    /// Puts `psn`, just taken by [`take_next`](Self::take_next) as a retransmission,
    /// back at the head of the retransmission queue.
    pub fn requeue(&mut self, psn: u32) {
        self.retx.push_front(psn);
    }

    /// Declares `psn` lost (if it is in flight) and queues it for retransmission.
    /// Returns its record as it was.
    pub fn mark_lost(&mut self, psn: u32) -> Option<PsnRecord> {
        let rec = self.record_mut(psn)?;
        if rec.acked || rec.lost || rec.sends == 0 {
            return None;
        }
        let before = *rec;
        rec.lost = true;
        self.inflight -= 1;
        self.retx.push_back(psn);
        self.prune();
        Some(before)
    }

    /// Drops send-log entries that no longer describe a live transmission. Every
    /// mutator calls it, so the log's front is always live.
    fn prune(&mut self) {
        while let Some(&(_, psn, sends)) = self.log.front() {
            match self.record(psn) {
                Some(r) if !r.acked && !r.lost && r.sends == sends => return,
                _ => {
                    self.log.pop_front();
                }
            }
        }
    }

    /// When the oldest live transmission was sent (its RTO runs from then).
    pub fn oldest_send(&self) -> Option<Time> {
        self.log.front().map(|&(t, _, _)| t)
    }

    /// Send time of the most recently sent packet that has been acknowledged.
    pub fn newest_acked_sent(&self) -> Time {
        self.newest_acked_sent
    }

    /// [`newest_acked_sent`](Self::newest_acked_sent), `None` before any.
    pub fn newest_acked_send(&self) -> Option<Time> {
        self.acked_any.then_some(self.newest_acked_sent)
    }

    /// Declares lost every live packet sent at least `reo` before the newest
    /// acknowledged one (RACK), appending their PSNs and records to `out`.
    pub fn rack(&mut self, reo: Dur, out: &mut Vec<(u32, PsnRecord)>) {
        loop {
            self.prune();
            let Some(&(t, psn, _)) = self.log.front() else { return };
            if t + reo > self.newest_acked_sent {
                return;
            }
            self.log.pop_front();
            if let Some(r) = self.mark_lost(psn) {
                out.push((psn, r));
            }
        }
    }

    /// When RACK's reordering timer expires (RFC 8985 section 6.3): the oldest live
    /// packet sent before the newest acknowledged one is lost once `rtt + reo` has
    /// passed since it was sent, even if nothing sent `reo` after it is acknowledged
    /// (the last packets of a burst, which [`rack`](Self::rack) alone leaves to the
    /// RTO). `None` while no live packet was sent before the newest acknowledged one.
    pub fn rack_deadline(&self, rtt: Dur, reo: Dur) -> Option<Time> {
        let &(t, _, _) = self.log.front()?;
        (self.acked_any && t < self.newest_acked_sent).then(|| t + rtt + reo)
    }

    /// Declares lost every live packet whose reordering timer expired by `now` (see
    /// [`rack_deadline`](Self::rack_deadline)), appending them to `out`.
    pub fn rack_expire(&mut self, now: Time, rtt: Dur, reo: Dur, out: &mut Vec<(u32, PsnRecord)>) {
        loop {
            self.prune();
            match self.rack_deadline(rtt, reo) {
                Some(d) if d <= now => {}
                _ => return,
            }
            let Some((_, psn, _)) = self.log.pop_front() else { return };
            if let Some(r) = self.mark_lost(psn) {
                out.push((psn, r));
            }
        }
    }

    /// Declares lost every live packet sent at or before `now - rto`, appending them to
    /// `out`.
    pub fn expire(&mut self, now: Time, rto: Dur, out: &mut Vec<(u32, PsnRecord)>) {
        while self.expire_oldest(now, rto, out) {}
    }

    /// Declares lost the oldest live packet if it was sent at or before `now - rto`
    /// (appending it to `out`); returns whether it did.
    pub fn expire_oldest(&mut self, now: Time, rto: Dur, out: &mut Vec<(u32, PsnRecord)>) -> bool {
        loop {
            self.prune();
            let Some(&(t, psn, _)) = self.log.front() else { return false };
            if t + rto > now {
                return false;
            }
            self.log.pop_front();
            if let Some(r) = self.mark_lost(psn) {
                out.push((psn, r));
                return true;
            }
        }
    }

    /// Live PSNs last sent from NIC port `port` (for remapping after a port fails).
    pub fn live_on_port(&self, port: u8) -> Vec<u32> {
        (self.una..self.next_new)
            .filter(|&p| self.record(p).is_some_and(|r| !r.acked && !r.lost && r.sends > 0 && r.port == port))
            .collect()
    }

    /// The next application event (a message fully acknowledged).
    pub fn poll_event(&mut self) -> Option<AppEvent> {
        self.events.pop_front()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fabricsim_engine::Rate;

    fn info() -> ConnInfo {
        ConnInfo {
            local_host: 0,
            remote_host: 1,
            remote_qpn: 1,
            local_qpn: 0,
            first_port: 0,
            ports: 1,
            port_rate: Rate::gbps(100),
            mtu: 1000,
        }
    }

    fn send_all(b: &mut SendBuffer, now: Time) -> Vec<u32> {
        let mut sent = Vec::new();
        while let Some((p, _)) = b.take_next() {
            b.record_send(p, p, 0, now);
            sent.push(p);
        }
        sent
    }

    #[test]
    fn packets_carry_their_address_and_message_start() {
        let mut b = SendBuffer::new(1000);
        b.post(Message { seq: 0, len: 2500, va: 0x1000, rkey: 9 });
        b.post(Message { seq: 1, len: 10, va: 0x9000, rkey: 9 });
        let p = b.build(&info(), 2, 7, Time(5), false);
        assert_eq!((p.payload, p.reth.va, p.reth.len, p.ext.cum_psn, p.ext.ev), (500, 0x1000 + 2000, 2500, 0, 7));
        assert_eq!(p.bth.opcode, opcode::RC_WRITE_LAST);
        let q = b.build(&info(), 3, 1, Time(5), false);
        assert_eq!((q.bth.opcode, q.ext.cum_psn, q.payload), (opcode::RC_WRITE_ONLY, 3, 10));
        assert_eq!(q.net.entropy(), 1);
    }

    #[test]
    fn selective_acks_complete_messages_in_order() {
        let mut b = SendBuffer::new(1000);
        b.post(Message { seq: 0, len: 3000, va: 0, rkey: 0 });
        b.post(Message { seq: 1, len: 1000, va: 0, rkey: 0 });
        assert_eq!(send_all(&mut b, Time(0)), vec![0, 1, 2, 3]);
        assert_eq!(b.inflight(), 4);
        b.ack(3);
        b.ack(1);
        assert!(b.poll_event().is_none(), "message 0 still misses PSN 0 and 2");
        b.ack(0);
        b.ack(2);
        assert_eq!(b.poll_event(), Some(AppEvent::Acked { seq: 0, retransmitted: 0 }));
        assert_eq!(b.poll_event(), Some(AppEvent::Acked { seq: 1, retransmitted: 0 }));
        assert!(b.all_acked() && b.inflight() == 0);
    }

    #[test]
    fn lost_packets_are_resent_first_and_counted_per_message() {
        let mut b = SendBuffer::new(1000);
        b.post(Message { seq: 0, len: 5000, va: 0, rkey: 0 });
        for _ in 0..3 {
            let (p, _) = b.take_next().unwrap();
            b.record_send(p, 10 + p, 0, Time(0));
        }
        assert!(b.mark_lost(1).is_some());
        assert!(b.mark_lost(1).is_none(), "already lost");
        assert_eq!(b.inflight(), 2);
        assert_eq!(b.take_next(), Some((1, Some(11))));
        b.record_send(1, 99, 0, Time(10));
        b.cum_ack(5);
        assert_eq!(b.poll_event(), None, "PSNs 3 and 4 were never sent");
        assert_eq!(b.take_next(), Some((3, None)));
    }

    #[test]
    fn new_data_stays_within_the_receivers_window() {
        let mut b = SendBuffer::new(1000).with_window(3);
        b.post(Message { seq: 0, len: 10_000, va: 0, rkey: 0 });
        assert_eq!(send_all(&mut b, Time(0)), vec![0, 1, 2]);
        b.ack(1);
        assert!(b.take_next().is_none(), "PSN 0 still holds the window");
        b.ack(0);
        assert_eq!(send_all(&mut b, Time(0)), vec![3, 4]);
    }

    #[test]
    fn rack_declares_packets_sent_well_before_an_acked_one_lost() {
        let mut b = SendBuffer::new(1000);
        b.post(Message { seq: 0, len: 10_000, va: 0, rkey: 0 });
        for t in 0..10u64 {
            let (p, _) = b.take_next().unwrap();
            b.record_send(p, 0, 0, Time(t * 1000));
        }
        b.ack(8);
        let mut lost = Vec::new();
        b.rack(Dur(2500), &mut lost);
        let psns: Vec<u32> = lost.iter().map(|l| l.0).collect();
        assert_eq!(psns, vec![0, 1, 2, 3, 4, 5]);
        let mut expired = Vec::new();
        b.expire(Time(20_000), Dur(12_500), &mut expired);
        assert_eq!(expired.iter().map(|l| l.0).collect::<Vec<_>>(), vec![6, 7]);
    }

    #[test]
    fn rack_timer_finds_a_loss_no_later_acknowledgement_exposes() {
        // PSNs 0-3 sent 1 apart; 1-3 acknowledged. With a window of 5, no packet sent
        // 5 after PSN 0 is acknowledged, so only the timer finds it: at 0 + rtt + reo.
        let mut b = SendBuffer::new(1000);
        b.post(Message { seq: 0, len: 4000, va: 0, rkey: 0 });
        for t in 0..4u64 {
            let (p, _) = b.take_next().unwrap();
            b.record_send(p, 0, 0, Time(t));
        }
        let (rtt, reo) = (Dur(100), Dur(5));
        assert_eq!(b.rack_deadline(rtt, reo), None, "nothing acknowledged yet");
        for psn in 1..4 {
            b.ack_copy(psn, Time(psn as u64));
        }
        let mut lost = Vec::new();
        b.rack(reo, &mut lost);
        assert!(lost.is_empty());
        assert_eq!(b.rack_deadline(rtt, reo), Some(Time(105)));
        b.rack_expire(Time(104), rtt, reo, &mut lost);
        assert!(lost.is_empty(), "not before the deadline");
        b.rack_expire(Time(105), rtt, reo, &mut lost);
        assert_eq!(lost.iter().map(|l| l.0).collect::<Vec<_>>(), vec![0]);
        assert_eq!(b.rack_deadline(rtt, reo), None, "nothing live was sent before PSN 3");
    }

    #[test]
    fn rack_clock_moves_only_for_an_unambiguous_copy() {
        let mut b = SendBuffer::new(1000);
        b.post(Message { seq: 0, len: 4000, va: 0, rkey: 1 });
        let info = info();
        let mut stats = EndpointStats::default();
        for (psn, t) in [(0, 10), (1, 20), (2, 30), (3, 40)] {
            b.take_next();
            b.send(&info, psn, 7, 0, Time(t), false, None, &mut stats);
        }
        // PSN 0 is resent at 50; its late first copy (sent at 10) is acknowledged.
        b.mark_lost(0);
        assert_eq!(b.take_next(), Some((0, Some(7))));
        b.send(&info, 0, 8, 0, Time(50), true, None, &mut stats);
        b.ack(0);
        assert_eq!(b.newest_acked_sent(), Time::ZERO, "which copy of PSN 0 arrived is unknown");
        let mut lost = Vec::new();
        b.rack(Dur(5), &mut lost);
        assert!(lost.is_empty(), "nothing declared lost on an ambiguous acknowledgement");
        b.ack_copy(2, Time(30));
        assert_eq!(b.newest_acked_sent(), Time(30));
        b.rack(Dur(5), &mut lost);
        assert_eq!(lost.iter().map(|l| l.0).collect::<Vec<_>>(), vec![1], "sent 10 before the newest acknowledged");
    }
}
