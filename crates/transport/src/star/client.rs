//! The stateful side of a StaR connection: it writes to the stateless server with
//! RDPs, or reads what the server's driver posted with GDs, and keeps every piece of
//! the connection's state, the window included.

use super::cc::Window;
use super::placement::Seen;
use super::{star_packet, Role, StarConfig, To};
use crate::conn::{AppEvent, ConnInfo, EndpointStats, Message, Poll};
use crate::timer::Timers;
use crate::Endpoint;
use fabricsim_engine::Time;
use fabricsim_wire::{opcode, Ecn, Packet, Sth};
use std::collections::{BTreeMap, VecDeque};

const RTO: usize = 0;
const CQE_RTO: usize = 1;

/// A work request the client moves data for: a WRITE it was posted (writer) or a
/// server's WRITE it learnt from a WQEP (reader).
#[derive(Clone, Copy, Debug)]
struct Work {
    elem: u32,
    /// The server-side address of its first byte.
    addr: u64,
    total: u64,
    /// Bytes sent (writer) or asked for (reader) the first time.
    issued: u64,
    /// Bytes answered (writer: RAs; reader: SDPs).
    done: u64,
    /// Packets of it sent more than once.
    retx: u64,
}

/// An RDP or GD not yet answered.
#[derive(Clone, Copy, Debug)]
struct Outstanding {
    elem: u32,
    offset: u64,
    len: u32,
    /// When it last left (`Time::MAX` while queued to be sent again).
    sent: Time,
    /// Times sent.
    tries: u32,
    /// Pieces sent after it that have been answered since it last left.
    overtaken: u8,
}

/// Answers to pieces sent later after which an unanswered one is taken for lost and
/// sent again (TCP's duplicate-ACK threshold: a StaR connection takes one path, so
/// its packets do not overtake each other on the way).
const DUPTHRESH: u8 = 3;

/// The client of a StaR connection.
#[derive(Clone, Debug)]
pub struct StarClient {
    info: ConnInfo,
    cfg: StarConfig,
    role: Role,
    sport: u16,
    window: Window,
    /// Work requests not complete, by number.
    work: BTreeMap<u32, Work>,
    /// RDPs or GDs unanswered, by PSN.
    outstanding: BTreeMap<u32, Outstanding>,
    in_flight: u64,
    next_psn: u32,
    /// PSNs to send again.
    resend: VecDeque<u32>,
    /// Reader: completions sent and not yet acknowledged, with when and how many times.
    cqes: BTreeMap<u32, (Time, u32)>,
    /// Reader: the work request numbers seen in WQEPs.
    wqes_seen: Seen,
    /// Control packets waiting (EAs, CQEPs).
    ctrl: VecDeque<Packet>,
    timers: Timers<2>,
    /// When the window was last halved for a loss.
    last_cut: Time,
    failed: bool,
    events: VecDeque<AppEvent>,
    stats: EndpointStats,
}

impl StarClient {
    /// The client end of connection `info` in `role`, sending on UDP source port
    /// `sport` and asking the server's answers to come back on it.
    pub fn new(info: ConnInfo, cfg: StarConfig, role: Role, sport: u16) -> StarClient {
        StarClient {
            info,
            cfg,
            role,
            sport,
            window: Window::new(cfg.init_cwnd, info.mtu, cfg.dctcp_g),
            work: BTreeMap::new(),
            outstanding: BTreeMap::new(),
            in_flight: 0,
            next_psn: 0,
            resend: VecDeque::new(),
            cqes: BTreeMap::new(),
            wqes_seen: Seen::default(),
            ctrl: VecDeque::new(),
            timers: Timers::default(),
            last_cut: Time::ZERO,
            failed: false,
            events: VecDeque::new(),
            stats: EndpointStats::default(),
        }
    }

    /// The congestion window, bytes.
    pub fn cwnd(&self) -> u64 {
        self.window.bytes()
    }

    /// The server's QP, reached on this client's source port.
    fn peer(&self) -> To {
        To { host: self.info.remote_host, qp: self.info.remote_qpn, sport: self.sport }
    }

    fn header(&self, w: &Work, offset: u64, len: u32, retx: bool) -> Sth {
        Sth {
            addr: w.addr + offset,
            elem: w.elem,
            total: w.total.min(u32::MAX as u64) as u32,
            len: len as u16,
            flags: if retx { Sth::F_RETX } else { 0 },
            reply_qp: self.info.local_qpn,
            reply_sport: self.sport,
        }
    }

    /// The RDP or GD for `o` (PSN `psn`).
    fn request(&self, psn: u32, o: &Outstanding, retx: bool) -> Packet {
        let w = &self.work[&o.elem];
        let h = self.header(w, o.offset, o.len, retx);
        let (op, payload) = match self.role {
            Role::ServerReceives => (opcode::STAR_RDP, o.len),
            Role::ServerSends => (opcode::STAR_GD, 0),
        };
        star_packet(self.info.local_host, self.peer(), op, psn, h, payload)
    }

    /// The next new piece of work within the window: `(elem, offset, len)`.
    fn next_piece(&mut self) -> Option<(u32, u64, u32)> {
        let mtu = self.info.mtu as u64;
        let w = self.work.values_mut().find(|w| w.issued < w.total)?;
        let len = (w.total - w.issued).min(mtu).min(u16::MAX as u64) as u32;
        if self.in_flight > 0 && self.in_flight + len as u64 > self.window.bytes() {
            return None;
        }
        let piece = (w.elem, w.issued, len);
        w.issued += len as u64;
        Some(piece)
    }

    fn on_answer(&mut self, now: Time, pkt: &Packet) {
        let Some(o) = self.outstanding.remove(&pkt.bth.psn) else {
            self.stats.duplicates += 1;
            return;
        };
        self.in_flight -= o.len as u64;
        if o.sent != Time::MAX {
            // (A piece answered while queued to go again was not sent after anything.)
            self.overtake(now, pkt.bth.psn, o.sent);
        }
        let marked = match self.role {
            Role::ServerReceives => pkt.sth().flags & Sth::F_ECE != 0,
            Role::ServerSends => pkt.net.ecn == Ecn::Ce,
        };
        if marked {
            self.stats.ecn_marked += 1;
        }
        self.window.on_answer(o.len, marked);
        if self.role == Role::ServerSends {
            self.stats.bytes_placed += o.len as u64;
        }
        let w = self.work.get_mut(&o.elem).expect("an outstanding piece's work request");
        w.done += o.len as u64;
        if w.done >= w.total {
            let (elem, retx) = (w.elem, w.retx);
            self.work.remove(&elem);
            match self.role {
                Role::ServerReceives => self.events.push_back(AppEvent::Acked { seq: elem, retransmitted: retx }),
                Role::ServerSends => {
                    self.events.push_back(AppEvent::Received { seq: elem });
                    self.send_cqe(now, elem, false);
                }
            }
        }
        self.arm_rto();
    }

    /// Piece `psn`, sent at `sent`, was answered at `now`: the pieces sent before it and
    /// still unanswered were overtaken once more; those overtaken `DUPTHRESH` times are
    /// taken for lost and sent again at once rather than after the timeout. The window
    /// halves once per episode: for a loss of a piece sent after the last cut.
    fn overtake(&mut self, now: Time, psn: u32, sent: Time) {
        let mut new_episode = false;
        for (&p, o) in self.outstanding.range_mut(..psn) {
            if o.sent == Time::MAX || o.sent >= sent {
                continue;
            }
            o.overtaken += 1;
            if o.overtaken >= DUPTHRESH {
                new_episode |= o.sent > self.last_cut;
                o.sent = Time::MAX;
                self.resend.push_back(p);
            }
        }
        if new_episode {
            self.window.on_loss();
            self.last_cut = now;
        }
    }

    /// Queues the completion of the server's work request `elem`.
    fn send_cqe(&mut self, now: Time, elem: u32, retx: bool) {
        let h = Sth {
            elem,
            flags: if retx { Sth::F_RETX } else { 0 },
            reply_qp: self.info.local_qpn,
            reply_sport: self.sport,
            ..Sth::default()
        };
        self.ctrl.push_back(star_packet(self.info.local_host, self.peer(), opcode::STAR_CQEP, elem, h, 0));
        let tries = self.cqes.get(&elem).map_or(1, |c| c.1 + 1);
        self.cqes.insert(elem, (now, tries));
        if self.timers.get(CQE_RTO).is_none() {
            self.timers.set(CQE_RTO, now + self.cfg.rto);
        }
    }

    /// A WQEP from the server's driver: acknowledge it and, if new, take its work.
    fn on_wqe(&mut self, pkt: &Packet) {
        let h = pkt.sth();
        let ea = Sth { elem: h.elem, ..Sth::default() };
        let to = To { host: self.info.remote_host, qp: h.reply_qp, sport: h.reply_sport };
        self.ctrl.push_back(star_packet(self.info.local_host, to, opcode::STAR_EA, pkt.bth.psn, ea, 0));
        if !self.wqes_seen.first(h.elem) {
            self.stats.duplicates += 1;
            return;
        }
        let w = Work { elem: h.elem, addr: h.addr, total: h.total as u64, issued: 0, done: 0, retx: 0 };
        if w.total == 0 {
            self.events.push_back(AppEvent::Received { seq: h.elem });
            return;
        }
        self.work.insert(h.elem, w);
    }

    fn arm_rto(&mut self) {
        // Pieces waiting to be sent again (`sent` = MAX) are timed from their resend.
        match self.outstanding.values().map(|o| o.sent).filter(|&t| t != Time::MAX).min() {
            Some(t) => self.timers.set(RTO, t + self.cfg.rto),
            None => self.timers.stop(RTO),
        }
    }

    fn fail(&mut self) {
        self.failed = true;
        self.events.push_back(AppEvent::Failed);
        self.outstanding.clear();
        self.resend.clear();
        self.ctrl.clear();
        self.timers = Timers::default();
    }
}

impl Endpoint for StarClient {
    fn on_packet(&mut self, now: Time, pkt: &Packet) {
        if self.failed {
            return;
        }
        match pkt.bth.opcode {
            opcode::STAR_RA | opcode::STAR_SDP => self.on_answer(now, pkt),
            opcode::STAR_WQEP => self.on_wqe(pkt),
            opcode::STAR_EA => {
                // The acknowledgement of a completion.
                self.cqes.remove(&pkt.sth().elem);
                if self.cqes.is_empty() {
                    self.timers.stop(CQE_RTO);
                }
            }
            _ => {}
        }
    }

    fn on_timeout(&mut self, now: Time) {
        if self.timers.expired(RTO, now) {
            let rto = self.cfg.rto;
            let late: Vec<u32> = self
                .outstanding
                .iter()
                .filter(|(_, o)| o.sent != Time::MAX && o.sent + rto <= now)
                .map(|(&p, _)| p)
                .collect();
            if !late.is_empty() {
                self.stats.timeouts += 1;
                // A piece sent `retry_limit` times more than once, each time unanswered:
                // the connection has failed (InfiniBand counts retries per request).
                if late.iter().any(|p| self.outstanding[p].tries > self.cfg.retry_limit) {
                    self.fail();
                    return;
                }
                self.window.on_timeout();
                for p in late {
                    // Timed again from when it is sent again (it stays in flight).
                    self.outstanding.get_mut(&p).expect("late").sent = Time::MAX;
                    self.resend.push_back(p);
                }
            }
            self.arm_rto();
        }
        if self.timers.expired(CQE_RTO, now) {
            let rto = self.cfg.rto;
            let due: Vec<(u32, u32)> =
                self.cqes.iter().filter(|(_, c)| c.0 + rto <= now).map(|(&e, c)| (e, c.1)).collect();
            if due.iter().any(|d| d.1 > self.cfg.retry_limit) {
                self.fail();
                return;
            }
            for (e, _) in due {
                self.send_cqe(now, e, true);
            }
            if let Some(first) = self.cqes.values().map(|c| c.0).min() {
                self.timers.set(CQE_RTO, (first + rto).max(now + rto));
            }
        }
    }

    fn post(&mut self, _now: Time, msg: Message) {
        // Only the writer is posted messages: the reader's come in WQEPs.
        debug_assert_eq!(self.role, Role::ServerReceives, "a StaR reader is not posted messages");
        if self.failed {
            return;
        }
        if msg.len == 0 {
            self.events.push_back(AppEvent::Acked { seq: msg.seq, retransmitted: 0 });
            return;
        }
        let w = Work { elem: msg.seq, addr: msg.va, total: msg.len, issued: 0, done: 0, retx: 0 };
        self.work.insert(msg.seq, w);
    }

    fn poll_transmit(&mut self, now: Time, _port: u8) -> Poll {
        if self.failed {
            return Poll::Idle;
        }
        while let Some(psn) = self.resend.pop_front() {
            let Some(o) = self.outstanding.get_mut(&psn) else { continue };
            if o.sent != Time::MAX {
                // Queued twice (a timeout and the overtaking rule) and already sent.
                continue;
            }
            o.sent = now;
            o.tries += 1;
            o.overtaken = 0;
            let o = *o;
            self.work.get_mut(&o.elem).expect("its work request").retx += 1;
            self.stats.retransmitted += 1;
            self.stats.data_sent += 1;
            self.arm_rto();
            return Poll::Send(self.request(psn, &o, true));
        }
        let Some((elem, offset, len)) = self.next_piece() else { return Poll::Idle };
        let psn = self.next_psn;
        self.next_psn = self.next_psn.wrapping_add(1);
        let o = Outstanding { elem, offset, len, sent: now, tries: 1, overtaken: 0 };
        self.outstanding.insert(psn, o);
        self.in_flight += len as u64;
        self.stats.data_sent += 1;
        if self.timers.get(RTO).is_none() {
            self.timers.set(RTO, now + self.cfg.rto);
        }
        Poll::Send(self.request(psn, &o, false))
    }

    fn poll_control(&mut self, _now: Time, _port: u8) -> Poll {
        match self.ctrl.pop_front() {
            Some(p) => {
                self.stats.control_sent += 1;
                Poll::Send(p)
            }
            None => Poll::Idle,
        }
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

    fn unacked_retransmissions(&self, out: &mut Vec<(u32, u64)>) {
        if self.role == Role::ServerReceives {
            out.extend(self.work.values().filter(|w| w.retx > 0).map(|w| (w.elem, w.retx)));
        }
    }
}
