//! STELLAR's multipath RDMA transport (Alibaba, SIGCOMM '25, section 7): packets of one
//! connection sprayed over `paths` entropy values (128 in production) by a
//! [`PathAlgo`], one shared window ([`cc`]) reacting to ECN and RTT, direct placement
//! at the receiver (every packet carries its address), loss detection by a fixed
//! 250 µs RTO, and a lost packet resent on a different path.

pub mod cc;
pub mod path;

pub use cc::{WindowCc, WindowCcConfig};
pub use path::{PathAlgo, PathSelector};

use crate::common::{PathStats, SendBuffer};
use crate::conn::{AppEvent, ConnInfo, EndpointStats, Message, Poll};
use crate::Endpoint;
use fabricsim_engine::{Dur, Rng, Time};
use fabricsim_wire::{opcode, Ext, Packet};

/// STELLAR parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StellarConfig {
    /// Paths (entropy values) per connection.
    pub paths: u32,
    /// Path-selection algorithm.
    pub algo: PathAlgo,
    /// Retransmission timeout (fixed, no backoff, as in the paper).
    pub rto: Dur,
    /// Unloaded RTT (for DWRR/BestRTT weights).
    pub base_rtt: Dur,
    /// The receiver's bitmap in packets: new PSNs stay within it.
    pub window: u32,
    /// The shared window.
    pub cc: WindowCcConfig,
}

/// The sending side of a STELLAR connection.
#[derive(Clone, Debug)]
pub struct StellarSender {
    info: ConnInfo,
    cfg: StellarConfig,
    buf: SendBuffer,
    cc: WindowCc,
    sel: PathSelector,
    rng: Rng,
    paths: Vec<PathStats>,
    stats: EndpointStats,
}

impl StellarSender {
    /// A sender for `info`.
    pub fn new(info: ConnInfo, cfg: StellarConfig, mut rng: Rng) -> StellarSender {
        StellarSender {
            buf: SendBuffer::new(info.mtu).with_window(cfg.window),
            cc: WindowCc::new(cfg.cc),
            sel: PathSelector::new(cfg.algo, cfg.paths, cfg.base_rtt, &mut rng),
            rng,
            paths: (0..cfg.paths).map(|ev| PathStats { ev, ..Default::default() }).collect(),
            stats: EndpointStats::default(),
            info,
            cfg,
        }
    }

    /// The shared window in bytes.
    pub fn cwnd(&self) -> f64 {
        self.cc.cwnd()
    }

    fn on_ack(&mut self, now: Time, e: &Ext) {
        let news = self.buf.ack(e.ack_psn).is_some();
        self.buf.cum_ack(e.cum_psn);
        if !news {
            return;
        }
        let marked = e.flags & Ext::F_ECE != 0;
        let rtt = now.since(Time(e.ts));
        let ev = e.ev % self.cfg.paths;
        if marked {
            self.paths[ev as usize].ecn_marks += 1;
        }
        self.cc.on_ack(e.ack_psn, marked, rtt, self.buf.next_new());
        self.sel.on_ack(ev, rtt, marked);
    }
}

impl Endpoint for StellarSender {
    fn unacked_retransmissions(&self, out: &mut Vec<(u32, u64)>) {
        self.buf.unacked_retransmissions(out);
    }

    fn on_packet(&mut self, now: Time, pkt: &Packet) {
        if pkt.bth.opcode == opcode::X_ACK {
            self.on_ack(now, &pkt.ext);
        }
    }

    fn on_timeout(&mut self, now: Time) {
        let mut lost = Vec::new();
        self.buf.expire(now, self.cfg.rto, &mut lost);
        if !lost.is_empty() {
            self.stats.timeouts += 1;
            self.cc.on_loss();
        }
        for (_, rec) in lost {
            self.paths[rec.ev as usize].losses += 1;
        }
    }

    fn post(&mut self, _now: Time, msg: Message) {
        self.buf.post(msg);
    }

    fn poll_transmit(&mut self, now: Time, port: u8) -> Poll {
        // The window counts packets in flight at one MTU each.
        if self.buf.inflight() as f64 * self.cfg.cc.mtu >= self.cc.cwnd() {
            return Poll::Idle;
        }
        let Some((psn, old)) = self.buf.take_next() else { return Poll::Idle };
        let ev = self.sel.choose(&mut self.rng, old);
        let path = Some(&mut self.paths[ev as usize]);
        Poll::Send(self.buf.send(&self.info, psn, ev, port, now, old.is_some(), path, &mut self.stats))
    }

    fn poll_timeout(&self) -> Option<Time> {
        self.buf.oldest_send().map(|t| t + self.cfg.rto)
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
