//! MPRDMA (Lu et al., NSDI '18) as the UDMP paper describes it (its sections I, III-D).
//!
//! One congestion window for all virtual paths (UDP source ports). Every ACK echoes
//! the path its data took; an unmarked ACK grows the window by `1/cwnd`, a marked one
//! shrinks it by `1/2` (MP-RDMA's rule) or halves it ([`EcnCut`]: the UDMP paper's
//! "decreases by 1/2" reads both ways, and only halving reproduces its Fig. 6a), and
//! the ACK clocks new packets out *on its own path* while the
//! window allows. The window counts packets in the network, one fewer per ACK, so each
//! path keeps the packets its ACKs return: a packet a fast path's ACK acknowledges
//! cumulatively still holds its slot until its own ACK comes (or, that ACK lost, for
//! one RTO), rather than handing it to the fast path. Out-of-order awareness: an ACK
//! for a PSN more than `delta` below the highest acknowledged PSN comes from a slow
//! path; it shrinks the window by one and clocks nothing out, so the slow path loses
//! its share (once per packet: the second ACK of a resent packet, lagging, is not
//! judged again). Once per round trip, with
//! probability `explore`, the next packet tries a fresh random path. The receiver keeps
//! a bitmap of `window` packets and NACKs PSNs beyond it; losses are detected by those
//! NACKs and by a retransmission timeout, and a lost packet is resent on another path.

use crate::common::{clocked, PathStats, PsnRecord, RttEstimator, SendBuffer};
use crate::conn::{AppEvent, ConnInfo, EndpointStats, Message, Poll};
use crate::Endpoint;
use fabricsim_engine::{Dur, Rng, Time};
use fabricsim_wire::{opcode, Ext, Packet};
use std::collections::VecDeque;

/// MPRDMA parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MprdmaConfig {
    /// Virtual paths (entropy values `0..paths`).
    pub paths: u32,
    /// Initial window in packets (one BDP is the usual choice).
    pub init_cwnd: u32,
    /// OOO tolerance `delta` in packets (UDMP Fig. 7: 64); must be below `window`.
    pub delta: u32,
    /// Receiver bitmap in packets (one BDP).
    pub window: u32,
    /// Probability per round trip of trying a new path.
    pub explore: f64,
    /// Smallest retransmission timeout.
    pub min_rto: Dur,
    /// What an ECN-marked ACK does to the window.
    pub ecn_cut: EcnCut,
}

/// The window's reaction to an ECN-marked ACK. The UDMP paper says MPRDMA's window
/// "decreases by 1/2 when an ACK with an ECN mark is received", which reads either way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EcnCut {
    /// `cwnd -= 1/2` per marked ACK (MP-RDMA's rule: a window of marked ACKs halves it).
    HalfPacket,
    /// `cwnd /= 2` per marked ACK (the text read as "halves"; a window with a few
    /// marks falls to a packet or two and regrows by one packet per round trip).
    Halve,
}

impl EcnCut {
    /// Scenario names, in the order of the variants.
    pub const NAMES: &'static [&'static str] = &["half_packet", "halve"];

    /// The variant named `name` (one of [`EcnCut::NAMES`]).
    pub fn from_name(name: &str) -> Option<EcnCut> {
        match name {
            "half_packet" => Some(EcnCut::HalfPacket),
            "halve" => Some(EcnCut::Halve),
            _ => None,
        }
    }
}

/// The sending side of an MPRDMA connection.
#[derive(Clone, Debug)]
pub struct MprdmaSender {
    info: ConnInfo,
    cfg: MprdmaConfig,
    buf: SendBuffer,
    cwnd: f64,
    /// Highest PSN acknowledged so far (+1; 0 before any).
    snd_ooh: u32,
    /// Send opportunities clocked out by ACKs, each on a path.
    credits: VecDeque<u32>,
    /// Packets acknowledged only cumulatively, by a later packet's ACK, whose own ACK
    /// has not come: `(psn, last sent)`, oldest first. The ACK clock counts them as
    /// still in the network (the window is over packets in flight, one fewer per ACK,
    /// as MP-RDMA counts): counting such a packet out when a fast path's ACK covers it
    /// would hand its slot to the fast path and leave the slow path's own ACK, when it
    /// comes, nothing to clock. One whose ACK is an RTO late is taken for lost.
    unheard: VecDeque<(u32, Time)>,
    rtt: RttEstimator,
    rng: Rng,
    /// ACKs until the next once-per-RTT exploration draw.
    acks_to_round: u32,
    explore_next: bool,
    /// The path of the latest ACK that did not lag.
    good_ev: Option<u32>,
    paths: Vec<PathStats>,
    stats: EndpointStats,
}

impl MprdmaSender {
    /// A sender for `info`.
    pub fn new(info: ConnInfo, cfg: MprdmaConfig, rng: Rng) -> MprdmaSender {
        MprdmaSender {
            buf: SendBuffer::new(info.mtu),
            cwnd: cfg.init_cwnd.max(1) as f64,
            snd_ooh: 0,
            credits: VecDeque::new(),
            unheard: VecDeque::new(),
            rtt: RttEstimator::new(cfg.min_rto, Dur::from_ms(10)),
            rng,
            acks_to_round: cfg.init_cwnd.max(1),
            explore_next: false,
            good_ev: None,
            paths: (0..cfg.paths).map(|ev| PathStats { ev, ..Default::default() }).collect(),
            stats: EndpointStats::default(),
            info,
            cfg,
        }
    }

    /// The congestion window in packets.
    pub fn cwnd(&self) -> f64 {
        self.cwnd
    }

    fn random_path(&mut self, not: Option<u32>) -> u32 {
        clocked::random_path(&mut self.rng, self.cfg.paths, not)
    }

    /// Opens the window on random paths when nothing is clocking packets out (start, or
    /// after timeouts emptied the pipe).
    fn restart_if_idle(&mut self) {
        if self.buf.inflight() == 0 && self.credits.is_empty() && self.buf.has_data() {
            let n = (self.cwnd as u32).max(1);
            for _ in 0..n {
                let ev = self.random_path(None);
                self.credits.push_back(ev);
            }
        }
    }

    /// A lost packet is resent on the path of the latest ACK that did not lag.
    fn lost(&mut self, rec: PsnRecord) {
        self.paths[rec.ev as usize].losses += 1;
        let ev = clocked::resend_path(&mut self.rng, self.cfg.paths, self.good_ev, rec.ev);
        self.credits.push_back(ev);
    }

    fn on_ack(&mut self, now: Time, e: &Ext) {
        // The echoed timestamp names the transmission that arrived, so retransmitted
        // packets give valid samples too.
        let fresh = if self.buf.ack(e.ack_psn).is_some() {
            self.rtt.sample(now.since(Time(e.ts)));
            true
        } else if let Some(i) = self.unheard.iter().position(|u| u.0 == e.ack_psn) {
            self.unheard.remove(i);
            true
        } else {
            false
        };
        let unheard = &mut self.unheard;
        self.buf.cum_ack_with(e.cum_psn, |psn, rec| unheard.push_back((psn, rec.sent_at)));
        // An ACK lost on the way back would hold its packet's slot for ever. (Giving
        // the slot back to the packet's own path at once, instead of waiting, was
        // tried: it had to judge "lagging" by the cumulative point, which jumps after
        // a resent packet arrives, and the 1 ms delay anomaly then cost one flow 5.7x
        // instead of 1.13x.)
        let rto = self.rtt.rto();
        while self.unheard.front().is_some_and(|u| now.since(u.1) > rto) {
            self.unheard.pop_front();
        }
        let marked = e.flags & Ext::F_ECE != 0;
        if marked {
            let n = self.paths.len();
            self.paths[e.ev as usize % n].ecn_marks += 1;
        }
        let lagging = self.snd_ooh > self.cfg.delta && e.ack_psn + self.cfg.delta < self.snd_ooh;
        if lagging && !fresh {
            // The second ACK of a resent packet, lagging: the first already judged the
            // packet. Shrinking again would cut the window twice for one slow packet
            // (a spurious timeout then cost the late copy's ACK and the resend's).
            self.restart_if_idle();
            return;
        }
        self.snd_ooh = self.snd_ooh.max(e.ack_psn + 1);
        self.acks_to_round = self.acks_to_round.saturating_sub(1);
        if self.acks_to_round == 0 {
            self.acks_to_round = (self.cwnd as u32).max(1);
            self.explore_next = self.rng.chance(self.cfg.explore);
        }
        if lagging {
            // The ACK's path is slow: shrink, and give its turn to nobody.
            self.cwnd = (self.cwnd - 1.0).max(1.0);
        } else {
            self.good_ev = Some(e.ev % self.cfg.paths);
            self.cwnd = match (marked, self.cfg.ecn_cut) {
                (false, _) => self.cwnd + 1.0 / self.cwnd,
                (true, EcnCut::HalfPacket) => (self.cwnd - 0.5).max(1.0),
                (true, EcnCut::Halve) => (self.cwnd / 2.0).max(1.0),
            };
            let in_net = self.buf.inflight() + self.unheard.len() as u32;
            let allowed = (self.cwnd as u32).saturating_sub(in_net + self.credits.len() as u32);
            for _ in 0..allowed {
                let ev =
                    if std::mem::take(&mut self.explore_next) { self.random_path(None) } else { e.ev % self.cfg.paths };
                self.credits.push_back(ev);
            }
        }
        self.restart_if_idle();
    }
}

impl Endpoint for MprdmaSender {
    fn unacked_retransmissions(&self, out: &mut Vec<(u32, u64)>) {
        self.buf.unacked_retransmissions(out);
    }

    fn on_packet(&mut self, now: Time, pkt: &Packet) {
        match pkt.bth.opcode {
            opcode::X_ACK => self.on_ack(now, &pkt.ext),
            opcode::X_NACK => {
                let rtt = self.rtt.srtt().unwrap_or(self.cfg.min_rto);
                // Packets the NACK's cumulative point covers wait for their own ACKs
                // like those an ACK's covers.
                let unheard = &mut self.unheard;
                let lost = clocked::nack_losses_with(&mut self.buf, &pkt.ext, now, rtt, |psn, rec| {
                    unheard.push_back((psn, rec.sent_at));
                });
                for rec in lost.into_iter().flatten() {
                    self.lost(rec);
                }
                self.restart_if_idle();
            }
            _ => {}
        }
    }

    fn on_timeout(&mut self, now: Time) {
        let mut lost = Vec::new();
        self.buf.expire(now, self.rtt.rto(), &mut lost);
        if !lost.is_empty() {
            self.stats.timeouts += 1;
            self.rtt.on_timeout();
        }
        for (_, rec) in lost {
            self.lost(rec);
        }
        self.restart_if_idle();
    }

    fn post(&mut self, _now: Time, msg: Message) {
        self.buf.post(msg);
        self.restart_if_idle();
    }

    fn poll_transmit(&mut self, now: Time, port: u8) -> Poll {
        let s = self;
        clocked::transmit(&mut s.credits, &mut s.buf, &mut s.paths, &mut s.rng, &s.info, port, now, &mut s.stats)
    }

    fn poll_timeout(&self) -> Option<Time> {
        self.buf.oldest_send().map(|t| t + self.rtt.rto())
    }

    fn poll_event(&mut self) -> Option<AppEvent> {
        self.buf.poll_event()
    }

    fn stats(&self) -> &EndpointStats {
        &self.stats
    }

    fn path_stats(&self) -> Vec<PathStats> {
        self.paths.iter().filter(|p| p.packets > 0).copied().collect()
    }
}
