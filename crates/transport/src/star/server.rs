//! The stateless side of a StaR connection: its NIC answers each RDP, GD and CQEP
//! from the packet's own header; its driver (host software) posts the server's WRITEs
//! as WQEPs and resends those not acknowledged.

use super::placement::Placement;
use super::{answer, star_packet, Role, StarConfig, To};
use crate::conn::{AppEvent, ConnInfo, EndpointStats, Message, Poll};
use crate::timer::Timers;
use crate::Endpoint;
use fabricsim_engine::Time;
use fabricsim_wire::{opcode, Ecn, Packet, Sth};
use std::collections::{BTreeMap, VecDeque};

const WQE_RTO: usize = 0;

/// A work request the driver posted: its message, when its WQEP last left, whether
/// the client acknowledged it.
#[derive(Clone, Copy, Debug)]
struct Posted {
    msg: Message,
    sent: Time,
    acknowledged: bool,
    resent: u64,
}

/// The server of a StaR connection.
#[derive(Clone, Debug)]
pub struct StarServer {
    info: ConnInfo,
    cfg: StarConfig,
    role: Role,
    sport: u16,
    /// Answers (RA, EA) and WQEPs waiting for the port.
    ctrl: VecDeque<Packet>,
    /// SDPs waiting for the port.
    data: VecDeque<Packet>,
    /// Driver: work requests posted and not complete, by number.
    posted: BTreeMap<u32, Posted>,
    /// Driver: WQEPs to send.
    wqes: VecDeque<u32>,
    timers: Timers<1>,
    failed: bool,
    /// The simulator's record of bytes placed (see the module documentation).
    placement: Placement,
    events: VecDeque<AppEvent>,
    stats: EndpointStats,
}

impl StarServer {
    /// The server end of connection `info` in `role`; its driver's WQEPs leave on UDP
    /// source port `sport` (its NIC's answers take the port each request names).
    pub fn new(info: ConnInfo, cfg: StarConfig, role: Role, sport: u16) -> StarServer {
        StarServer {
            info,
            cfg,
            role,
            sport,
            ctrl: VecDeque::new(),
            data: VecDeque::new(),
            posted: BTreeMap::new(),
            wqes: VecDeque::new(),
            timers: Timers::default(),
            failed: false,
            placement: Placement::default(),
            events: VecDeque::new(),
            stats: EndpointStats::default(),
        }
    }

    /// The NIC: an RDP's payload is placed at the address it names and answered.
    fn on_rdp(&mut self, pkt: &Packet) {
        let h = pkt.sth();
        if pkt.net.ecn == Ecn::Ce {
            self.stats.ecn_marked += 1;
        }
        match self.placement.place(pkt.bth.psn, h.elem, h.total, pkt.payload) {
            None => self.stats.duplicates += 1,
            Some(done) => {
                self.stats.bytes_placed += pkt.payload as u64;
                if done {
                    self.events.push_back(AppEvent::Received { seq: h.elem });
                }
            }
        }
        self.ctrl.push_back(answer(&self.info, pkt, opcode::STAR_RA, 0));
    }

    fn wqep(&self, p: &Posted, retx: bool) -> Packet {
        let h = Sth {
            addr: p.msg.va,
            elem: p.msg.seq,
            total: p.msg.len.min(u32::MAX as u64) as u32,
            len: 0,
            flags: if retx { Sth::F_RETX } else { 0 },
            reply_qp: self.info.local_qpn,
            reply_sport: self.sport,
        };
        let to = To { host: self.info.remote_host, qp: self.info.remote_qpn, sport: self.sport };
        star_packet(self.info.local_host, to, opcode::STAR_WQEP, p.msg.seq, h, 0)
    }

    fn arm(&mut self) {
        match self.posted.values().filter(|p| !p.acknowledged).map(|p| p.sent).min() {
            Some(t) => self.timers.set(WQE_RTO, t + self.cfg.rto),
            None => self.timers.stop(WQE_RTO),
        }
    }
}

impl Endpoint for StarServer {
    fn on_packet(&mut self, _now: Time, pkt: &Packet) {
        if self.failed {
            return;
        }
        match pkt.bth.opcode {
            opcode::STAR_RDP => self.on_rdp(pkt),
            opcode::STAR_GD => {
                // The NIC reads the bytes the GD names and sends them back.
                let len = pkt.sth().len as u32;
                self.data.push_back(answer(&self.info, pkt, opcode::STAR_SDP, len));
            }
            opcode::STAR_CQEP => {
                self.ctrl.push_back(answer(&self.info, pkt, opcode::STAR_EA, 0));
                // The driver: the work request is complete (once).
                if let Some(p) = self.posted.remove(&pkt.sth().elem) {
                    self.events.push_back(AppEvent::Acked { seq: p.msg.seq, retransmitted: p.resent });
                    self.arm();
                }
            }
            opcode::STAR_EA => {
                if let Some(p) = self.posted.get_mut(&pkt.sth().elem) {
                    p.acknowledged = true;
                }
                self.arm();
            }
            _ => {}
        }
    }

    fn on_timeout(&mut self, now: Time) {
        if !self.timers.expired(WQE_RTO, now) {
            return;
        }
        let rto = self.cfg.rto;
        let late: Vec<u32> =
            self.posted.values().filter(|p| !p.acknowledged && p.sent + rto <= now).map(|p| p.msg.seq).collect();
        if !late.is_empty() {
            self.stats.timeouts += 1;
            // A WQEP sent retry_limit times more than once, each unacknowledged.
            if late.iter().any(|e| self.posted[e].resent >= self.cfg.retry_limit as u64) {
                self.failed = true;
                self.events.push_back(AppEvent::Failed);
                self.timers.stop(WQE_RTO);
                return;
            }
            for e in late {
                let p = self.posted.get_mut(&e).expect("late");
                p.sent = now;
                p.resent += 1;
                self.wqes.push_back(e);
            }
        }
        self.arm();
    }

    fn post(&mut self, now: Time, msg: Message) {
        debug_assert_eq!(self.role, Role::ServerSends, "a receiving StaR server is not posted messages");
        if self.failed {
            return;
        }
        self.posted.insert(msg.seq, Posted { msg, sent: now, acknowledged: false, resent: 0 });
        self.wqes.push_back(msg.seq);
        self.arm();
    }

    fn poll_transmit(&mut self, _now: Time, _port: u8) -> Poll {
        match self.data.pop_front() {
            Some(p) => {
                self.stats.data_sent += 1;
                Poll::Send(p)
            }
            None => Poll::Idle,
        }
    }

    fn poll_control(&mut self, _now: Time, _port: u8) -> Poll {
        if let Some(p) = self.ctrl.pop_front() {
            self.stats.control_sent += 1;
            return Poll::Send(p);
        }
        while let Some(e) = self.wqes.pop_front() {
            let Some(p) = self.posted.get(&e).copied() else { continue };
            if p.acknowledged {
                continue;
            }
            self.stats.control_sent += 1;
            return Poll::Send(self.wqep(&p, p.resent > 0));
        }
        Poll::Idle
    }

    fn poll_timeout(&self) -> Option<Time> {
        self.timers.next()
    }

    fn poll_event(&mut self) -> Option<AppEvent> {
        self.events.pop_front()
    }

    fn stats(&self) -> &EndpointStats {
        &self.stats
    }
}
