//! STELLAR's shared congestion context: one window for every path of a connection,
//! reacting to ECN and to RTT.
//!
//! The paper states only "in-house, window-based, adjusts based on ECN and RTT, one
//! context shared by all 128 paths". fabricsim's reading is a DCTCP-plus-delay window:
//! per ACK `alpha ← (1-g)·alpha + g·[marked]` and, if unmarked, additive increase of
//! one MTU per window; once per round (a window of PSNs) a multiplicative cut of
//! `alpha/2` if any ACK of the round was marked, else a delay cut
//! `β·(srtt − target)/srtt` if the smoothed RTT exceeds `target`. A timeout counts as a
//! mark. The window stays within one MTU and `cwnd_max`.

use fabricsim_engine::Dur;

/// Window congestion-control parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WindowCcConfig {
    /// Alpha gain `g` (1/16).
    pub g: f64,
    /// Delay-cut strength `β` (0.5).
    pub beta: f64,
    /// Smoothed RTT above which the window is cut.
    pub target: Dur,
    /// Initial window, bytes (one BDP).
    pub init: f64,
    /// Largest window, bytes (1.5 BDP).
    pub max: f64,
    /// Bytes of one packet on the wire (the additive step and the floor).
    pub mtu: f64,
}

/// The shared window.
#[derive(Clone, Debug)]
pub struct WindowCc {
    cfg: WindowCcConfig,
    cwnd: f64,
    alpha: f64,
    marked: bool,
    round_end: u32,
    srtt: Option<f64>,
}

impl WindowCc {
    /// A window at `cfg.init`.
    pub fn new(cfg: WindowCcConfig) -> WindowCc {
        WindowCc { cwnd: cfg.init, alpha: 0.0, marked: false, round_end: 0, srtt: None, cfg }
    }

    /// The window in bytes.
    pub fn cwnd(&self) -> f64 {
        self.cwnd
    }

    /// One ACK: for PSN `psn`, marked or not, with RTT sample `rtt`. `next_new` is the
    /// sender's next new PSN (the end of the current round).
    pub fn on_ack(&mut self, psn: u32, marked: bool, rtt: Dur, next_new: u32) {
        let r = rtt.ps() as f64;
        self.srtt = Some(self.srtt.map_or(r, |s| 0.875 * s + 0.125 * r));
        self.alpha = (1.0 - self.cfg.g) * self.alpha + if marked { self.cfg.g } else { 0.0 };
        if marked {
            self.marked = true;
        } else {
            self.cwnd += self.cfg.mtu * self.cfg.mtu / self.cwnd;
        }
        if psn >= self.round_end {
            let target = self.cfg.target.ps() as f64;
            if self.marked {
                self.cwnd *= 1.0 - self.alpha / 2.0;
            } else if let Some(s) = self.srtt.filter(|&s| s > target) {
                self.cwnd *= 1.0 - self.cfg.beta * (s - target) / s;
            }
            self.marked = false;
            self.round_end = next_new;
        }
        self.cwnd = self.cwnd.clamp(self.cfg.mtu, self.cfg.max);
    }

    /// A packet was declared lost by timeout: treated as a mark.
    pub fn on_loss(&mut self) {
        self.marked = true;
        self.alpha = (1.0 - self.cfg.g) * self.alpha + self.cfg.g;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cc() -> WindowCc {
        WindowCc::new(WindowCcConfig {
            g: 1.0 / 16.0,
            beta: 0.5,
            target: Dur::from_us(15),
            init: 100_000.0,
            max: 150_000.0,
            mtu: 4000.0,
        })
    }

    #[test]
    fn unmarked_acks_grow_to_the_cap_and_marks_cut() {
        let mut c = cc();
        for psn in 0..1000 {
            c.on_ack(psn, false, Dur::from_us(10), psn + 30);
        }
        assert_eq!(c.cwnd(), 150_000.0);
        for psn in 1000..1200 {
            c.on_ack(psn, true, Dur::from_us(10), psn + 30);
        }
        assert!(c.cwnd() < 20_000.0, "{}", c.cwnd());
    }

    #[test]
    fn a_delay_above_target_cuts_without_marks() {
        let mut c = cc();
        for psn in 0..200 {
            c.on_ack(psn, false, Dur::from_us(60), psn + 25);
        }
        assert!(c.cwnd() < 50_000.0, "{}", c.cwnd());
    }
}
