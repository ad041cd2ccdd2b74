//! The RoCE requester: sends WRITEs, reacts to ACK/NAK/CNP.

use super::{Dcqcn, RoceConfig};
use crate::conn::{AppEvent, ConnInfo, EndpointStats, Message, Poll};
use crate::timer::Timers;
use crate::Endpoint;
use fabricsim_engine::{Rate, Time};
use fabricsim_wire::{hdr, opcode, Bth, Ecn, NetHdr, Packet, Reth, TrafficClass};
use std::collections::VecDeque;

const RTO: usize = 0;

/// A message being sent: its PSN range and retransmission count.
#[derive(Clone, Copy, Debug)]
struct Outgoing {
    msg: Message,
    first_psn: u32,
    npkts: u32,
    /// Packets of it sent more than once (u32 with `send` keeps the record 40 bytes).
    retx: u32,
    /// A SEND ending with immediate data (else an RDMA WRITE).
    send: bool,
}

const _: () = assert!(std::mem::size_of::<Outgoing>() <= 40);

impl Outgoing {
    fn end_psn(&self) -> u32 {
        self.first_psn + self.npkts
    }
}

/// The sending side of a RoCE QP.
#[derive(Clone, Debug)]
pub struct RoceRequester {
    info: ConnInfo,
    cfg: RoceConfig,
    sport: u16,
    /// Messages not yet fully acknowledged, oldest first.
    msgs: VecDeque<Outgoing>,
    /// PSN the next posted message starts at.
    next_msg_psn: u32,
    /// First unacknowledged PSN.
    snd_una: u32,
    /// Next PSN to transmit.
    snd_nxt: u32,
    /// One past the highest PSN ever transmitted (below it, a send is a retransmission).
    high_psn: u32,
    dcqcn: Option<Dcqcn>,
    next_send: Time,
    timers: Timers<1>,
    retries: u32,
    failed: bool,
    events: VecDeque<AppEvent>,
    stats: EndpointStats,
}

impl RoceRequester {
    /// A requester for `info`, sending from UDP source port `sport`.
    pub fn new(info: ConnInfo, cfg: RoceConfig, sport: u16) -> RoceRequester {
        RoceRequester {
            info,
            cfg,
            sport,
            msgs: VecDeque::new(),
            next_msg_psn: 0,
            snd_una: 0,
            snd_nxt: 0,
            high_psn: 0,
            dcqcn: cfg.dcqcn.map(|c| Dcqcn::new(c, info.port_rate)),
            next_send: Time::ZERO,
            timers: Timers::default(),
            retries: 0,
            failed: false,
            events: VecDeque::new(),
            stats: EndpointStats::default(),
        }
    }

    /// Queues `msg` as an RC SEND with immediate data (the message's key): `SEND Only
    /// with Immediate`, or `SEND First`, `Middle`s and `SEND Last with Immediate`, no
    /// RETH (the responder places it in its next receive buffer). Maestro ends a large
    /// SEND with an empty one; [`Endpoint::post`] queues a WRITE.
    pub fn post_send(&mut self, msg: Message) {
        self.post_verb(msg, true);
    }

    fn post_verb(&mut self, msg: Message, send: bool) {
        let npkts = msg.len.div_ceil(self.info.mtu as u64).max(1) as u32;
        self.msgs.push_back(Outgoing { msg, first_psn: self.next_msg_psn, npkts, retx: 0, send });
        self.next_msg_psn += npkts;
    }

    /// The UDP source port its packets carry (the entropy ECMP hashes).
    pub fn sport(&self) -> u16 {
        self.sport
    }

    /// Moves the QP to UDP source port `sport` (a new 5-tuple, hence a new ECMP path):
    /// Maestro re-binding a virtual path. Its packets from now on carry the new port;
    /// call it when nothing is in flight, or the two paths reorder the QP's packets.
    pub fn set_sport(&mut self, sport: u16) {
        self.sport = sport;
    }

    /// The current sending rate (line rate without congestion control).
    pub fn rate(&self) -> Rate {
        self.dcqcn.as_ref().map_or(self.info.port_rate, |d| d.rate())
    }

    /// The DCQCN state, if enabled.
    pub fn dcqcn(&self) -> Option<&Dcqcn> {
        self.dcqcn.as_ref()
    }

    /// Builds the packet with sequence number `psn`, which must belong to a message
    /// still in `msgs`.
    fn packet(&mut self, psn: u32) -> (Packet, bool) {
        let idx = self.msgs.iter().position(|m| psn < m.end_psn()).expect("PSN of an unacknowledged message");
        let retransmission = psn < self.high_psn;
        let out = &mut self.msgs[idx];
        if retransmission {
            out.retx = out.retx.saturating_add(1);
        }
        let mtu = self.info.mtu as u64;
        let k = (psn - out.first_psn) as u64;
        let offset = k * mtu;
        let payload = out.msg.len.saturating_sub(offset).min(mtu) as u32;
        let last = psn + 1 == out.end_psn();
        let first = k == 0;
        let op = match (out.send, first, last) {
            (false, true, true) => opcode::RC_WRITE_ONLY,
            (false, true, false) => opcode::RC_WRITE_FIRST,
            (false, false, true) => opcode::RC_WRITE_LAST,
            (false, false, false) => opcode::RC_WRITE_MIDDLE,
            (true, true, true) => opcode::RC_SEND_ONLY_IMM,
            (true, true, false) => opcode::RC_SEND_FIRST,
            (true, false, true) => opcode::RC_SEND_LAST_IMM,
            (true, false, false) => opcode::RC_SEND_MIDDLE,
        };
        let mut pkt = Packet {
            net: NetHdr {
                src: self.info.local_host,
                dst: self.info.remote_host,
                sport: self.sport,
                class: TrafficClass::Data,
                ecn: Ecn::Ect0,
                ..Default::default()
            },
            bth: Bth { opcode: op, ack_req: last, dest_qp: self.info.remote_qpn, psn },
            payload,
            ..Default::default()
        };
        if out.send {
            // A SEND consumes a receive at the responder (no RETH); its last packet
            // carries the message's key as immediate data.
            if last {
                pkt.hdrs |= hdr::IMM;
                pkt.imm = out.msg.rkey;
            }
        } else if first {
            pkt.hdrs |= hdr::RETH;
            pkt.reth = Reth { va: out.msg.va, rkey: out.msg.rkey, len: out.msg.len.min(u32::MAX as u64) as u32 };
        }
        (pkt, retransmission)
    }

    /// Everything below `psn` is acknowledged.
    fn acknowledge(&mut self, now: Time, psn: u32) {
        if psn <= self.snd_una {
            return;
        }
        self.snd_una = psn;
        self.retries = 0;
        if self.snd_nxt < self.snd_una {
            self.snd_nxt = self.snd_una;
        }
        while let Some(front) = self.msgs.front() {
            if front.end_psn() > self.snd_una {
                break;
            }
            self.events.push_back(AppEvent::Acked { seq: front.msg.seq, retransmitted: front.retx as u64 });
            self.msgs.pop_front();
        }
        self.restart_rto(now);
    }

    /// Runs the retransmission timer from `now` while packets are in flight, and
    /// stops it otherwise: with everything sent acknowledged there is nothing to time
    /// out (data the pacer holds back, or none left), and a timer left running then
    /// counted retries, and failed the QP, without any loss.
    fn restart_rto(&mut self, now: Time) {
        if self.snd_nxt > self.snd_una {
            self.timers.set(RTO, now + self.cfg.rto);
        } else {
            self.timers.stop(RTO);
        }
    }
}

impl Endpoint for RoceRequester {
    fn unacked_retransmissions(&self, out: &mut Vec<(u32, u64)>) {
        out.extend(self.msgs.iter().map(|m| (m.msg.seq, m.retx as u64)));
    }

    fn on_packet(&mut self, now: Time, pkt: &Packet) {
        if self.failed {
            return;
        }
        match pkt.bth.opcode {
            opcode::RC_ACK => {
                if pkt.aeth.is_nak() {
                    // NAK carries the PSN the responder expects: everything before it
                    // arrived; resend from it.
                    self.acknowledge(now, pkt.bth.psn);
                    if pkt.bth.psn >= self.snd_una && pkt.bth.psn < self.snd_nxt {
                        // Go back. Nothing is in flight until the resend, which starts
                        // the timer. (A stale NAK, from before an acknowledgement that
                        // covers it, changes nothing.)
                        self.snd_nxt = pkt.bth.psn;
                        self.timers.stop(RTO);
                    }
                } else {
                    self.acknowledge(now, pkt.bth.psn.wrapping_add(1));
                }
            }
            opcode::CNP => {
                self.stats.cnps += 1;
                if let Some(d) = &mut self.dcqcn {
                    d.on_cnp(now);
                }
            }
            _ => {}
        }
    }

    fn on_timeout(&mut self, now: Time) {
        if let Some(d) = &mut self.dcqcn {
            if d.next_timeout().is_some_and(|t| t <= now) {
                d.on_timeout(now);
            }
        }
        if self.timers.expired(RTO, now) && !self.failed {
            self.stats.timeouts += 1;
            self.retries += 1;
            if self.retries > self.cfg.retry_limit {
                self.failed = true;
                self.events.push_back(AppEvent::Failed);
                return;
            }
            // Go back; the resend starts the timer again.
            self.snd_nxt = self.snd_una;
            self.timers.stop(RTO);
        }
    }

    fn post(&mut self, _now: Time, msg: Message) {
        self.post_verb(msg, false);
    }

    fn poll_transmit(&mut self, now: Time, _port: u8) -> Poll {
        if self.failed || self.snd_nxt >= self.next_msg_psn {
            return Poll::Idle;
        }
        if now < self.next_send {
            return Poll::Wait(self.next_send);
        }
        let psn = self.snd_nxt;
        let (pkt, retransmission) = self.packet(psn);
        self.snd_nxt += 1;
        self.high_psn = self.high_psn.max(self.snd_nxt);
        self.stats.data_sent += 1;
        if retransmission {
            self.stats.retransmitted += 1;
        }
        let wire = pkt.wire_bytes() as u64;
        if let Some(d) = &mut self.dcqcn {
            d.on_sent(wire);
            // Pace at the current rate; at line rate this equals the port's own
            // serialization time, so an unthrottled QP never waits.
            self.next_send = now + d.rate().tx_time(wire);
        }
        if self.timers.get(RTO).is_none() {
            // The first packet in flight: the timer runs from it.
            self.timers.set(RTO, now + self.cfg.rto);
        }
        Poll::Send(pkt)
    }

    fn poll_timeout(&self) -> Option<Time> {
        let d = self.dcqcn.as_ref().and_then(|d| d.next_timeout());
        match (self.timers.next(), d) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn poll_event(&mut self) -> Option<AppEvent> {
        self.events.pop_front()
    }

    fn stats(&self) -> &EndpointStats {
        &self.stats
    }
}
