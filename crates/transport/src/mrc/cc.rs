//! MRC's congestion window (fabricsim's choice: the paper names no algorithm).
//!
//! One window per connection, shared by every EV and plane: `cwnd += mtu²/cwnd` per
//! acknowledged packet (one MTU per window per round trip), `cwnd ×= 1 − md` on a trim
//! NACK at most once per smoothed RTT, within `[mtu, max]`. ECN echoes do not touch the
//! window: with ECN off on the last hop they mark path congestion, which the EV
//! rotation avoids instead (MRC section 2.1).
//!
//! Trims come only from a full queue, so a last hop slower than the senders (a
//! degraded host link behind a deep buffer) would otherwise hold a standing queue of
//! every sender's whole window: milliseconds, past any timeout. An RTT sample above
//! `target` therefore also cuts the window, at most once per smoothed RTT and in
//! proportion to the excess, `(rtt − target) / rtt` capped at `md`, as Swift does.

use fabricsim_engine::{Dur, Time};

/// Window parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MrcCcConfig {
    /// Initial window in bytes (one BDP of the whole NIC).
    pub init: f64,
    /// Largest window in bytes.
    pub max: f64,
    /// Fraction cut on a trim.
    pub md: f64,
    /// Payload bytes of a full packet (the additive step and the floor).
    pub mtu: f64,
    /// RTT above which the window is cut (`None`: never).
    pub target: Option<Dur>,
}

/// The window.
#[derive(Clone, Debug)]
pub struct MrcCc {
    cfg: MrcCcConfig,
    cwnd: f64,
    last_cut: Option<Time>,
}

impl MrcCc {
    /// A window at `cfg.init`.
    pub fn new(cfg: MrcCcConfig) -> MrcCc {
        MrcCc { cwnd: cfg.init, last_cut: None, cfg }
    }

    /// The window in bytes.
    pub fn cwnd(&self) -> f64 {
        self.cwnd
    }

    /// `bytes` were acknowledged.
    pub fn on_ack(&mut self, bytes: f64) {
        self.cwnd = (self.cwnd + self.cfg.mtu * bytes / self.cwnd).min(self.cfg.max);
    }

    /// A trim NACK arrived; `srtt` spaces the cuts.
    pub fn on_trim(&mut self, now: Time, srtt: Dur) {
        self.cut(now, srtt, self.cfg.md);
    }

    /// An RTT sample `rtt` arrived; `srtt` spaces the cuts.
    pub fn on_rtt(&mut self, now: Time, rtt: Dur, srtt: Dur) {
        if let Some(target) = self.cfg.target.filter(|&t| rtt > t) {
            let excess = (rtt.ps() - target.ps()) as f64 / rtt.ps() as f64;
            self.cut(now, srtt, excess.min(self.cfg.md));
        }
    }

    fn cut(&mut self, now: Time, srtt: Dur, by: f64) {
        if self.last_cut.is_some_and(|t| now < t + srtt) {
            return;
        }
        self.last_cut = Some(now);
        self.cwnd = (self.cwnd * (1.0 - by)).max(self.cfg.mtu);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trims_cut_once_per_rtt_and_acks_grow_back() {
        let mut c = MrcCc::new(MrcCcConfig { init: 100_000.0, max: 150_000.0, md: 0.5, mtu: 4096.0, target: None });
        c.on_trim(Time(0), Dur::from_us(10));
        c.on_trim(Time(5_000_000), Dur::from_us(10));
        assert_eq!(c.cwnd(), 50_000.0);
        c.on_trim(Time(10_000_000), Dur::from_us(10));
        assert_eq!(c.cwnd(), 25_000.0);
        for _ in 0..10_000 {
            c.on_ack(4096.0);
        }
        assert_eq!(c.cwnd(), 150_000.0);
    }

    #[test]
    fn rtt_above_target_cuts_in_proportion_once_per_rtt() {
        let cfg = MrcCcConfig { init: 100_000.0, max: 150_000.0, md: 0.5, mtu: 4096.0, target: Some(Dur::from_us(20)) };
        let mut c = MrcCc::new(cfg);
        let srtt = Dur::from_us(25);
        c.on_rtt(Time(0), Dur::from_us(20), srtt);
        assert_eq!(c.cwnd(), 100_000.0, "at the target: no cut");
        c.on_rtt(Time(0), Dur::from_us(25), srtt);
        assert_eq!(c.cwnd(), 80_000.0, "5 us over 25 us: cut by a fifth");
        c.on_rtt(Time(10_000_000), Dur::from_us(1000), srtt);
        assert_eq!(c.cwnd(), 80_000.0, "within one RTT of the last cut");
        c.on_rtt(Time(30_000_000), Dur::from_us(1000), srtt);
        assert_eq!(c.cwnd(), 40_000.0, "a cut is at most md");
        let mut off = MrcCc::new(MrcCcConfig { target: None, ..cfg });
        off.on_rtt(Time(0), Dur::from_ms(1), srtt);
        assert_eq!(off.cwnd(), 100_000.0);
    }
}
