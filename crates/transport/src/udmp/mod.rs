//! UDMP (Huang et al., IEEE ToN): delay-gradient congestion control and delay-assisted
//! ACK-clocked load balancing joined by a token pool, with no per-path state.
//!
//! Algorithm 1 (the CC loop), on every ACK:
//! * the ACK's RTT (now minus the echoed send timestamp) feeds an EWMA `smooth_rtt`
//!   averaged over all paths (weight `alpha`);
//! * the bytes pool is credited `rate × (now − last refill)`;
//! * severe congestion: if `smooth_rtt > T_high`, `rate = min(rate, linerate ×
//!   base_rtt / smooth_rtt)`;
//! * about once per RTT (after as many ACKs as were in flight at the last update) the
//!   gradient `g = Δsmooth_rtt / Δt` moves the rate: `g > 0` ⇒ `rate ×= 1 − |g|`, else
//!   `rate += max(|g|, min_increase) × (linerate − rate)` (multiplicative both ways,
//!   fair by Appendix A; see below for `min_increase`).
//!
//! Algorithm 2 (the adaptive load balancer), on the same ACK: an ACK faster than
//! `smooth_rtt` clocks out two packets *on its own path* if the pool holds two
//! packets' bytes; one faster than `smooth_rtt + base_rtt` clocks out one; a slower one
//! clocks out nothing and its credit stays in the pool for faster paths.
//!
//! Out-of-order awareness (section III-D): "an ACK whose PSN exceeds the bitmap window is
//! prevented from clocking out new packets", the window being `delta` PSNs from the
//! oldest unacknowledged one (Fig. 7's "OOO control threshold"; the receiver's bitmap
//! is larger). A packet stuck on a slow path thus stops the ACK clock after `delta`
//! more rather than letting it run into the bitmap. Unlike MPRDMA the window is not
//! cut: "the transmission opportunity lost on the affected path is implicitly
//! redistributed to other active paths, since the overall cwnd remains unchanged". So
//! each held-back ACK that was not slow is owed its packet, on its own path, paid once
//! the oldest unacknowledged PSN has moved to within `delta` of it (owed only while
//! data is left to send, as a packet clocked without data is dropped). (Dropping the
//! opportunity instead shrank the window to the packets on the slow path: a link 50 us
//! slower each way, below the RTO, left a flow at one packet per round trip on it.) Once
//! per RTT, with probability `explore`, the next clocked packet tries a new random path.
//! The first RTT sprays `BDP / packet` packets on random paths (the initial token pool).
//!
//! Readings where the paper's listing is ambiguous (documented in the README): the
//! pool is refilled before the balancer runs (the paper's Fig. 3 walk-through needs
//! it); the first ACK only initialises `smooth_rtt` and the gradient reference; `|g|`
//! is clamped to 1 and the rate to `[min_rate, linerate]`; a connection whose pipe
//! empties (all in flight acknowledged, data left) restarts with a new first RTT, and
//! a message posted while the last one's final packets are in flight tops them up to
//! a BDP, paid from the pool (the ACK clock alone would keep the window of those few).
//! Under `fixed_rate` the restart spends the pool instead (at most a BDP of it, after
//! a timer if it holds less than a packet): below one packet per RTT the ACK clock
//! alone cannot pace, and a free BDP per restart would ignore the rate.
//! The paper's text says a zero or negative gradient "indicates unused network
//! bandwidth, allowing the endpoint to increase the sending rate", but its formula gives
//! no increase at `g = 0`. Taken literally, a rise and fall of the RTT (a queue that
//! builds and drains) leaves `1 − g + g²` of the rate, never restored once the RTT is
//! flat, and zero-mean RTT noise drifts the rate to about half line rate. fabricsim
//! follows the text: the increase factor is at least `min_increase` (0 gives the
//! formula exactly).
//! Losses: the receiver NACKs PSNs beyond its one-BDP bitmap, and a timeout (RFC 6298,
//! at least `min_rto`) catches the rest. A NACK also says the bitmap is full, so its
//! missing base is resent if a round trip late (what the paper's "NACKs ... trigger
//! retransmission" can mean when the NACKed packet is not the one holding the window).
//! A lost packet is resent on the path of the latest ACK that was not slow, which the
//! paper leaves open ("retransmission on the other paths", after MPRDMA).
//! Optionally (`window`), new PSNs stay within the receiver's bitmap (flow control, not
//! in the paper).

use crate::common::{clocked, PathStats, PsnRecord, RttEstimator, SendBuffer};
use crate::conn::{AppEvent, ConnInfo, EndpointStats, Message, Poll};
use crate::Endpoint;
use fabricsim_engine::{Dur, Rng, Time};
use fabricsim_wire::packet::{BASE_HEADER_BYTES, EXT_BYTES, PREAMBLE_IFG_BYTES, RETH_BYTES};
use fabricsim_wire::{opcode, Ext, Packet};
use std::collections::VecDeque;

/// UDMP parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct UdmpConfig {
    /// Entropy values (virtual paths) `0..paths`.
    pub paths: u32,
    /// Unloaded round-trip time.
    pub base_rtt: Dur,
    /// EWMA weight of a new RTT sample.
    pub alpha: f64,
    /// Smallest multiplicative-increase factor applied when the gradient is zero or
    /// negative: `rate += max(|g|, min_increase) × (linerate − rate)`.
    pub min_increase: f64,
    /// Severe-congestion threshold on `smooth_rtt`.
    pub t_high: Dur,
    /// Probability per RTT of exploring a new path.
    pub explore: f64,
    /// Whether ACKs `delta` or more beyond the oldest unacknowledged PSN are kept from
    /// clocking out packets.
    pub ooo_aware: bool,
    /// OOO control threshold in packets.
    pub delta: u32,
    /// Bandwidth-delay product in packets (initial token pool).
    pub bdp_packets: u32,
    /// Smallest retransmission timeout.
    pub min_rto: Dur,
    /// Inject tokens at this fixed rate instead of running Algorithm 1's rate control
    /// (isolates the load balancer, as the paper's Fig. 3 example does).
    pub fixed_rate: Option<fabricsim_engine::Rate>,
    /// New PSNs are only sent within this many of the oldest unacknowledged one
    /// (flow control against the receiver's bitmap; `u32::MAX`: none, as in the paper).
    pub window: u32,
}

/// The sending side of a UDMP connection.
#[derive(Clone, Debug)]
pub struct UdmpSender {
    info: ConnInfo,
    cfg: UdmpConfig,
    buf: SendBuffer,
    rng: Rng,
    rto: RttEstimator,
    /// Line rate and sending rate, bits per second.
    line: f64,
    rate: f64,
    /// Smoothed RTT in picoseconds (`None` until the first ACK of a round).
    smooth: Option<f64>,
    bytes_pool: f64,
    last_add: Time,
    pkts_ignored: u32,
    pkts_to_ignore: u32,
    last_smooth: f64,
    last_update: Time,
    explore_next: bool,
    /// The path of the latest ACK faster than `smooth_rtt + base_rtt`.
    good_ev: Option<u32>,
    /// Packets clocked out, each on an entropy value.
    credits: VecDeque<u32>,
    /// ACKs held back by the out-of-order control that would have clocked a packet
    /// out: `(acknowledged PSN, path)`. Each is paid a packet on its path once that PSN
    /// is within `delta` of the oldest unacknowledged one.
    withheld: VecDeque<(u32, u32)>,
    /// The first RTT has been sprayed (later restarts under `fixed_rate` spend the pool).
    started: bool,
    /// Under `fixed_rate`, with the pipe empty: when the pool will hold a packet.
    next_token: Option<Time>,
    /// Wire bytes of a full packet (the token size).
    pkt: f64,
    paths: Vec<PathStats>,
    stats: EndpointStats,
}

impl UdmpSender {
    /// A sender for `info`.
    pub fn new(info: ConnInfo, cfg: UdmpConfig, rng: Rng) -> UdmpSender {
        let line = info.port_rate.bps() as f64;
        let rate = cfg.fixed_rate.map_or(line, |r| r.bps() as f64);
        UdmpSender {
            // Optional flow control against the receiver's bitmap (the paper has none
            // and NACKs what lands beyond it; then a packet stuck on a slow path makes
            // every later one bounce off the bitmap and be resent each round trip).
            buf: SendBuffer::new(info.mtu).with_window(cfg.window),
            rng,
            rto: RttEstimator::new(cfg.min_rto, Dur::from_ms(10)),
            line,
            rate,
            smooth: None,
            bytes_pool: 0.0,
            last_add: Time::ZERO,
            pkts_ignored: 0,
            pkts_to_ignore: 0,
            last_smooth: 0.0,
            last_update: Time::ZERO,
            explore_next: false,
            good_ev: None,
            credits: VecDeque::new(),
            withheld: VecDeque::new(),
            started: false,
            next_token: None,
            pkt: (info.mtu + BASE_HEADER_BYTES + PREAMBLE_IFG_BYTES + RETH_BYTES + EXT_BYTES) as f64,
            paths: (0..cfg.paths).map(|ev| PathStats { ev, ..Default::default() }).collect(),
            stats: EndpointStats::default(),
            info,
            cfg,
        }
    }

    /// The current sending rate in bits per second.
    pub fn rate(&self) -> f64 {
        self.rate
    }

    /// The smoothed RTT.
    pub fn smooth_rtt(&self) -> Option<Dur> {
        self.smooth.map(|s| Dur(s as u64))
    }

    /// Packets sent per entropy value (for load-ratio checks).
    pub fn packets_on(&self, ev: u32) -> u64 {
        self.paths[ev as usize].packets
    }

    fn random_path(&mut self, not: Option<u32>) -> u32 {
        clocked::random_path(&mut self.rng, self.cfg.paths, not)
    }

    /// A first RTT: the token pool holds one BDP, sprayed on random paths. Used at
    /// the start and whenever the pipe has emptied with data left.
    fn first_rtt(&mut self, now: Time) {
        if self.buf.inflight() > 0 || !self.credits.is_empty() || !self.buf.has_data() {
            return;
        }
        if self.started && self.cfg.fixed_rate.is_some() {
            self.restart_from_pool(now);
            return;
        }
        self.started = true;
        // A fresh spray replaces whatever held-back ACKs were owed.
        self.withheld.clear();
        for _ in 0..self.cfg.bdp_packets.max(1) {
            let ev = self.random_path(None);
            self.credits.push_back(ev);
        }
        self.smooth = None;
        self.bytes_pool = 0.0;
        self.last_add = now;
        self.pkts_ignored = 0;
        self.pkts_to_ignore = 0;
    }

    /// New data for a pipe the last message left nearly empty: the packets in flight
    /// and clocked are topped up to a BDP on random paths, paid from the pool. ACKs
    /// that come while there is nothing to send clock nothing, so a message posted
    /// just before the last one's final ACKs arrive would otherwise start with a window
    /// of the packet or two still in flight, and on a flat RTT, where no ACK clocks
    /// two, keep it (one packet per round trip: a ring all-reduce step over 1 % lossy
    /// links ran for milliseconds instead of tens of microseconds).
    fn top_up(&mut self, now: Time) {
        // Held-back ACKs are owed packets: part of the window already.
        let window = self.buf.inflight() + self.credits.len() as u32 + self.withheld.len() as u32;
        let bdp = self.cfg.bdp_packets.max(1);
        if window >= bdp || !self.buf.has_data() {
            return;
        }
        self.refill_pool(now);
        let n = ((self.bytes_pool / self.pkt) as u32).min(bdp - window);
        for _ in 0..n {
            self.bytes_pool -= self.pkt;
            let ev = self.random_path(None);
            self.credits.push_back(ev);
        }
    }

    /// Adds the tokens injected at `rate` since the last refill to the pool.
    fn refill_pool(&mut self, now: Time) {
        self.bytes_pool += self.rate / 8.0 * now.since(self.last_add).as_secs_f64();
        self.last_add = now;
    }

    /// A restart under `fixed_rate`: the pool, refilled to `now`, pays for up to a BDP
    /// of packets on random paths; if it holds less than one, a timer fires when it
    /// will hold one.
    fn restart_from_pool(&mut self, now: Time) {
        self.refill_pool(now);
        let n = ((self.bytes_pool / self.pkt) as u32).min(self.cfg.bdp_packets.max(1));
        if n == 0 {
            let wait = (self.pkt - self.bytes_pool) * 8.0 / self.rate;
            self.next_token = Some(now + Dur((wait * 1e12).ceil() as u64).max(Dur(1)));
            return;
        }
        self.next_token = None;
        self.withheld.clear();
        for _ in 0..n {
            self.bytes_pool -= self.pkt;
            let ev = self.random_path(None);
            self.credits.push_back(ev);
        }
        self.smooth = None;
    }

    /// A lost packet is resent on the path of the latest ACK that was not slow (the
    /// balancer's judgement of a good path).
    fn lost(&mut self, rec: PsnRecord) {
        self.paths[rec.ev as usize].losses += 1;
        let ev = clocked::resend_path(&mut self.rng, self.cfg.paths, self.good_ev, rec.ev);
        self.credits.push_back(ev);
    }

    /// Pays the held-back ACKs whose PSN the window has caught up with (see
    /// `withheld`) a packet each on their paths, while the pool has tokens.
    fn pay_withheld(&mut self) {
        let limit = self.buf.una() + self.cfg.delta;
        let mut i = 0;
        while i < self.withheld.len() && self.bytes_pool >= self.pkt {
            let (psn, ev) = self.withheld[i];
            if psn < limit {
                self.withheld.remove(i);
                self.bytes_pool -= self.pkt;
                self.credits.push_back(ev);
            } else {
                i += 1;
            }
        }
    }

    /// Algorithm 1's rate control: the severe-congestion cap on every ACK, the
    /// gradient step about once per RTT. Under `fixed_rate` only the round is kept:
    /// the once-per-RTT exploration draw belongs to the balancer, not to the rate.
    fn adapt_rate(&mut self, now: Time, smooth: f64, first: bool) {
        let adapt = self.cfg.fixed_rate.is_none();
        let base = self.cfg.base_rtt.ps() as f64;
        if adapt && smooth > self.cfg.t_high.ps() as f64 {
            self.rate = self.rate.min(self.line * base / smooth);
        }
        if first {
            self.last_smooth = smooth;
            self.last_update = now;
            self.pkts_to_ignore = self.buf.inflight();
            self.pkts_ignored = 0;
        } else if self.pkts_ignored > self.pkts_to_ignore && now > self.last_update {
            if adapt {
                let g = ((smooth - self.last_smooth) / now.since(self.last_update).ps() as f64).clamp(-1.0, 1.0);
                if g > 0.0 {
                    self.rate -= g * self.rate;
                } else {
                    self.rate += (-g).max(self.cfg.min_increase) * (self.line - self.rate);
                }
                self.rate = self.rate.clamp(self.line / 1000.0, self.line);
            }
            self.last_smooth = smooth;
            self.last_update = now;
            self.pkts_ignored = 0;
            self.pkts_to_ignore = self.buf.inflight();
            self.explore_next = self.rng.chance(self.cfg.explore);
        }
    }

    fn on_ack(&mut self, now: Time, e: &Ext) {
        // The echoed timestamp names the transmission that arrived, so retransmitted
        // packets give valid samples too.
        if self.buf.ack(e.ack_psn).is_some() {
            self.rto.sample(now.since(Time(e.ts)));
        }
        self.buf.cum_ack(e.cum_psn);
        let rtt = now.since(Time(e.ts)).ps() as f64;
        let base = self.cfg.base_rtt.ps() as f64;
        // Refill before the balancer (see the module docs). The pool has no cap, as in
        // the paper: a cap makes Algorithm 1's per-flow rates, rather than the ACK
        // clock, decide the shares after a flow leaves (an incast's shares then drift
        // apart). Without one, a `fixed_rate` the NIC cannot reach (its port also
        // carries ACKs) piles up credit that fast ACKs spend two packets at a time.
        self.refill_pool(now);
        self.pkts_ignored += 1;
        let first = self.smooth.is_none();
        let smooth = match self.smooth {
            None => rtt,
            Some(s) => self.cfg.alpha * rtt + (1.0 - self.cfg.alpha) * s,
        };
        self.smooth = Some(smooth);
        // Algorithm 2, unless the ACK is beyond the OOO window (out-of-order awareness).
        let beyond = self.cfg.ooo_aware && e.ack_psn >= self.buf.una() + self.cfg.delta;
        if beyond {
            // Owed only what it would have clocked: a packet for data still to send (one
            // clocked without data is dropped at the NIC; owed, it would be paid to the
            // next message on top of its own window).
            if rtt < smooth + base && (self.withheld.len() as u32) < self.buf.unsent() {
                self.withheld.push_back((e.ack_psn, e.ev % self.cfg.paths));
            }
        } else {
            if rtt < smooth + base {
                self.good_ev = Some(e.ev % self.cfg.paths);
            }
            let n = if rtt < smooth && self.bytes_pool >= 2.0 * self.pkt {
                2
            } else if self.bytes_pool >= self.pkt && rtt < smooth + base {
                1
            } else {
                0
            };
            for _ in 0..n {
                self.bytes_pool -= self.pkt;
                let ev =
                    if std::mem::take(&mut self.explore_next) { self.random_path(None) } else { e.ev % self.cfg.paths };
                self.credits.push_back(ev);
            }
        }
        if !self.withheld.is_empty() {
            self.pay_withheld();
        }
        self.adapt_rate(now, smooth, first);
        self.first_rtt(now);
    }
}

impl Endpoint for UdmpSender {
    fn unacked_retransmissions(&self, out: &mut Vec<(u32, u64)>) {
        self.buf.unacked_retransmissions(out);
    }

    fn on_packet(&mut self, now: Time, pkt: &Packet) {
        match pkt.bth.opcode {
            opcode::X_ACK => self.on_ack(now, &pkt.ext),
            opcode::X_NACK => {
                let rtt = self.smooth_rtt().unwrap_or(self.cfg.base_rtt).max(self.cfg.base_rtt);
                for rec in clocked::nack_losses(&mut self.buf, &pkt.ext, now, rtt).into_iter().flatten() {
                    self.lost(rec);
                }
                self.first_rtt(now);
            }
            _ => {}
        }
    }

    fn on_timeout(&mut self, now: Time) {
        if self.next_token.is_some_and(|t| t <= now) {
            self.next_token = None;
        }
        let mut lost = Vec::new();
        self.buf.expire(now, self.rto.rto(), &mut lost);
        if !lost.is_empty() {
            self.stats.timeouts += 1;
            self.rto.on_timeout();
        }
        for (_, rec) in lost {
            self.lost(rec);
        }
        self.first_rtt(now);
    }

    fn post(&mut self, now: Time, msg: Message) {
        self.buf.post(msg);
        self.first_rtt(now);
        self.top_up(now);
    }

    fn poll_transmit(&mut self, now: Time, port: u8) -> Poll {
        let s = self;
        clocked::transmit(&mut s.credits, &mut s.buf, &mut s.paths, &mut s.rng, &s.info, port, now, &mut s.stats)
    }

    fn poll_timeout(&self) -> Option<Time> {
        let rto = self.buf.oldest_send().map(|t| t + self.rto.rto());
        match (rto, self.next_token) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
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
