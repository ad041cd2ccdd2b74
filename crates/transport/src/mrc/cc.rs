//! MRC's congestion window (fabricsim's choice: the paper names no algorithm).
//!
//! One window per connection, shared by every EV and plane: `cwnd += mtu²/cwnd` per
//! acknowledged packet (one MTU per window per round trip), `cwnd ×= 1 − md` on a trim
//! NACK at most once per smoothed RTT, within `[mtu, max]`. ECN echoes do not touch the
//! window: with ECN off on the last hop they mark path congestion, which the EV
//! rotation avoids instead (MRC section 2.1).

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
        if self.last_cut.is_some_and(|t| now < t + srtt) {
            return;
        }
        self.last_cut = Some(now);
        self.cwnd = (self.cwnd * (1.0 - self.cfg.md)).max(self.cfg.mtu);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trims_cut_once_per_rtt_and_acks_grow_back() {
        let mut c = MrcCc::new(MrcCcConfig { init: 100_000.0, max: 150_000.0, md: 0.5, mtu: 4096.0 });
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
}
