//! DCQCN's reaction point (the sender's rate machine) and its parameters.
//!
//! The machine follows the Mellanox/NVIDIA variant that the HPCC ns-3 model
//! implements (`rdma-hw.cc`, `CC_MODE 1`) and, with [`DcqcnConfig::paper`], the
//! original algorithm of Zhu et al. (SIGCOMM 2015):
//!
//! * **Alpha.** Starts at 1 on the first CNP. Every `alpha_interval` it becomes
//!   `(1-g)·α + g` if a CNP arrived during that interval, else `(1-g)·α`. In paper mode
//!   (`decrease_interval = 0`) the update happens at each CNP and the decay interval
//!   restarts there.
//! * **Decrease.** At most one cut per `decrease_interval` (checked on a grid that
//!   starts at the first CNP), or at each CNP in paper mode:
//!   `R_T = R_C` (unless `clamp_target` is off and no increase happened since the last
//!   cut), then `R_C = max(min_rate, R_C·(1-α/2))`.
//! * **Increase.** A timer of `increase_interval`, restarted by every cut, and an
//!   optional byte counter of `byte_counter` bytes, each produce increase events. With
//!   `T` timer events and `B` byte events since the cut and `F = fast_recovery`:
//!   fast recovery `R_C = (R_T+R_C)/2` while `max(T,B) < F`; hyper increase
//!   `R_T += rate_hai` once `min(T,B) > F` (with the byte counter off, once `T > F`);
//!   additive increase `R_T += rate_ai` otherwise; each followed by `R_C = (R_T+R_C)/2`.
//!   Both rates are capped at line rate; at line rate the machine goes quiet.
//!
//! The periodic alpha timer is evaluated lazily (its effect is a closed form of the
//! number of intervals elapsed), so an idle or recovered QP schedules nothing.

use fabricsim_engine::{Dur, Rate, Time};

/// DCQCN parameters. Defaults ([`DcqcnConfig::hpcc`]) are those of the HPCC ns-3
/// model's `run.py --cc dcqcn`, themselves ConnectX firmware defaults scaled by link
/// speed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DcqcnConfig {
    /// Alpha EWMA gain `g` (1/256).
    pub g: f64,
    /// Alpha update period (1 us; paper 55 us).
    pub alpha_interval: Dur,
    /// Minimum spacing of rate cuts (4 us); zero cuts at every CNP (paper).
    pub decrease_interval: Dur,
    /// Rate-increase timer (300 us; paper 55 us).
    pub increase_interval: Dur,
    /// Byte counter for increase events, bytes; zero disables it (paper 10 MB).
    pub byte_counter: u64,
    /// Fast-recovery steps `F` (1; paper 5).
    pub fast_recovery: u32,
    /// Additive increase step (5 Mb/s per 25 Gb/s of line rate; paper 40 Mb/s).
    pub rate_ai: Rate,
    /// Hyper increase step (50 Mb/s per 25 Gb/s of line rate; paper 200 Mb/s in ns3-rdma).
    pub rate_hai: Rate,
    /// Lowest rate a cut can reach.
    pub min_rate: Rate,
    /// Always set `R_T = R_C` on a cut (paper) rather than only after an increase (HPCC).
    pub clamp_target: bool,
    /// Responder: at most one CNP per QP per this interval (4 us in ConnectX firmware;
    /// paper 50 us).
    pub cnp_interval: Dur,
}

impl DcqcnConfig {
    /// The HPCC ns-3 model's defaults for a NIC of `line` rate.
    pub fn hpcc(line: Rate) -> DcqcnConfig {
        // In u128: 50 Mb/s times a 400 Gb/s line overflows a u64.
        let per25 = |mbps: u64| Rate((mbps as u128 * 1_000_000 * line.bps() as u128 / 25_000_000_000) as u64);
        DcqcnConfig {
            g: 1.0 / 256.0,
            alpha_interval: Dur::from_us(1),
            decrease_interval: Dur::from_us(4),
            increase_interval: Dur::from_us(300),
            byte_counter: 0,
            fast_recovery: 1,
            rate_ai: per25(5),
            rate_hai: per25(50),
            min_rate: Rate::mbps(100),
            clamp_target: false,
            cnp_interval: Dur::from_us(4),
        }
    }

    /// The DCQCN paper's parameters (Zhu et al. 2015, with ns3-rdma's hyper step).
    pub fn paper() -> DcqcnConfig {
        DcqcnConfig {
            g: 1.0 / 256.0,
            alpha_interval: Dur::from_us(55),
            decrease_interval: Dur::ZERO,
            increase_interval: Dur::from_us(55),
            byte_counter: 10_000_000,
            fast_recovery: 5,
            rate_ai: Rate::mbps(40),
            rate_hai: Rate::mbps(200),
            min_rate: Rate::mbps(100),
            clamp_target: true,
            cnp_interval: Dur::from_us(50),
        }
    }
}

/// The reaction point of one QP.
#[derive(Clone, Debug)]
pub struct Dcqcn {
    cfg: DcqcnConfig,
    line: f64,
    /// Current rate `R_C`, bits per second.
    rc: f64,
    /// Target rate `R_T`, bits per second.
    rt: f64,
    alpha: f64,
    started: bool,
    /// Origin of the alpha-interval grid and how many intervals have been applied.
    alpha_origin: Time,
    alpha_applied: u64,
    cnp_in_interval: bool,
    /// Origin of the decrease-check grid.
    dec_origin: Time,
    dec_at: Option<Time>,
    inc_at: Option<Time>,
    timer_events: u32,
    byte_events: u32,
    bytes_since: u64,
    increased_since_cut: bool,
    cuts: u64,
}

impl Dcqcn {
    /// A QP starting at line rate.
    pub fn new(cfg: DcqcnConfig, line: Rate) -> Dcqcn {
        let l = line.bps() as f64;
        Dcqcn {
            cfg,
            line: l,
            rc: l,
            rt: l,
            alpha: 1.0,
            started: false,
            alpha_origin: Time::ZERO,
            alpha_applied: 0,
            cnp_in_interval: false,
            dec_origin: Time::ZERO,
            dec_at: None,
            inc_at: None,
            timer_events: 0,
            byte_events: 0,
            bytes_since: 0,
            increased_since_cut: false,
            cuts: 0,
        }
    }

    /// The current sending rate.
    #[inline]
    pub fn rate(&self) -> Rate {
        if self.rc >= self.line {
            Rate(self.line as u64)
        } else {
            Rate(self.rc as u64)
        }
    }

    /// The current target rate.
    pub fn target(&self) -> Rate {
        Rate(self.rt as u64)
    }

    /// Alpha as of `now`.
    pub fn alpha(&mut self, now: Time) -> f64 {
        self.sync_alpha(now);
        self.alpha
    }

    /// Rate cuts so far.
    pub fn cuts(&self) -> u64 {
        self.cuts
    }

    /// The earliest deadline of the machine's timers.
    #[inline]
    pub fn next_timeout(&self) -> Option<Time> {
        match (self.dec_at, self.inc_at) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Applies the alpha updates of every interval boundary passed by `now`.
    fn sync_alpha(&mut self, now: Time) {
        if !self.started || self.cfg.alpha_interval == Dur::ZERO {
            return;
        }
        let k = now.since(self.alpha_origin).ps() / self.cfg.alpha_interval.ps();
        if k <= self.alpha_applied {
            return;
        }
        let g = self.cfg.g;
        let n = k - self.alpha_applied;
        self.alpha = if self.cnp_in_interval { (1.0 - g) * self.alpha + g } else { (1.0 - g) * self.alpha };
        if n > 1 {
            self.alpha *= (1.0 - g).powi((n - 1).min(i32::MAX as u64) as i32);
        }
        self.cnp_in_interval = false;
        self.alpha_applied = k;
    }

    /// A CNP arrived for this QP.
    pub fn on_cnp(&mut self, now: Time) {
        if !self.started {
            self.started = true;
            self.alpha = 1.0;
            self.alpha_origin = now;
            self.alpha_applied = 0;
            self.cnp_in_interval = false;
            self.dec_origin = now;
            if self.cfg.decrease_interval == Dur::ZERO {
                self.cut(now);
            } else {
                self.dec_at = Some(now);
            }
            return;
        }
        self.sync_alpha(now);
        if self.cfg.decrease_interval == Dur::ZERO {
            // Paper: alpha rises at the CNP and its decay interval restarts there.
            self.alpha = (1.0 - self.cfg.g) * self.alpha + self.cfg.g;
            self.alpha_origin = now;
            self.alpha_applied = 0;
            self.cut(now);
        } else {
            self.cnp_in_interval = true;
            if self.dec_at.is_none() {
                let step = self.cfg.decrease_interval.ps();
                let k = now.since(self.dec_origin).ps().div_ceil(step);
                self.dec_at = Some(self.dec_origin + Dur(k * step));
            }
        }
    }

    fn cut(&mut self, now: Time) {
        self.sync_alpha(now);
        if self.cfg.clamp_target || self.increased_since_cut {
            self.rt = self.rc;
        }
        self.rc = (self.rc * (1.0 - self.alpha / 2.0)).max(self.cfg.min_rate.bps() as f64);
        self.timer_events = 0;
        self.byte_events = 0;
        self.bytes_since = 0;
        self.increased_since_cut = false;
        self.inc_at = Some(now + self.cfg.increase_interval);
        self.cuts += 1;
    }

    /// `bytes` were sent (drives the byte counter).
    #[inline]
    pub fn on_sent(&mut self, bytes: u64) {
        if self.cfg.byte_counter == 0 || self.inc_at.is_none() {
            return;
        }
        self.bytes_since += bytes;
        while self.bytes_since >= self.cfg.byte_counter {
            self.bytes_since -= self.cfg.byte_counter;
            self.byte_events += 1;
            self.increase();
        }
    }

    /// Runs whatever timer is due at `now`.
    pub fn on_timeout(&mut self, now: Time) {
        if self.dec_at.is_some_and(|t| t <= now) {
            self.dec_at = None;
            self.cut(now);
        }
        if let Some(t) = self.inc_at {
            if t <= now {
                // Stage first, then advance: the first tick after a cut is fast
                // recovery (HPCC `RateIncEventTimerMlx`).
                self.increase();
                self.timer_events += 1;
                if self.inc_at.is_some() {
                    self.inc_at = Some(t + self.cfg.increase_interval);
                }
            }
        }
    }

    fn increase(&mut self) {
        let f = self.cfg.fast_recovery;
        let (t, b) = (self.timer_events, self.byte_events);
        let (hi, lo) = if self.cfg.byte_counter == 0 { (t, t) } else { (t.max(b), t.min(b)) };
        if hi < f {
            // Fast recovery: close half the gap to the target.
        } else if lo > f {
            self.rt = (self.rt + self.cfg.rate_hai.bps() as f64).min(self.line);
        } else {
            self.rt = (self.rt + self.cfg.rate_ai.bps() as f64).min(self.line);
        }
        self.rc = ((self.rt + self.rc) / 2.0).min(self.line);
        self.increased_since_cut = true;
        if self.rc >= self.line * (1.0 - 1e-9) && self.rt >= self.line {
            self.rc = self.line;
            self.inc_at = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mlx() -> Dcqcn {
        Dcqcn::new(DcqcnConfig::hpcc(Rate::gbps(100)), Rate::gbps(100))
    }

    #[test]
    fn defaults_scale_with_line_rate() {
        let c = DcqcnConfig::hpcc(Rate::gbps(100));
        assert_eq!(c.rate_ai, Rate::mbps(20));
        assert_eq!(c.rate_hai, Rate::mbps(200));
    }

    #[test]
    fn first_cnp_halves_the_rate() {
        let mut d = mlx();
        d.on_cnp(Time(0));
        assert_eq!(d.next_timeout(), Some(Time(0)));
        d.on_timeout(Time(0));
        assert_eq!(d.rate(), Rate::gbps(50));
        // Target stays at line rate: no increase happened before this cut.
        assert_eq!(d.target(), Rate::gbps(100));
    }

    #[test]
    fn cuts_are_spaced_by_the_decrease_interval() {
        let mut d = mlx();
        d.on_cnp(Time(0));
        d.on_timeout(Time(0));
        let t1 = Time(Dur::from_ns(500).ps());
        d.on_cnp(t1);
        assert_eq!(d.next_timeout(), Some(Time(Dur::from_us(4).ps())));
        d.on_timeout(Time(Dur::from_us(4).ps()));
        assert_eq!(d.cuts(), 2);
        assert!(d.rate() < Rate::gbps(50));
    }

    #[test]
    fn alpha_decays_without_cnps() {
        let mut d = mlx();
        d.on_cnp(Time(0));
        d.on_timeout(Time(0));
        let a = d.alpha(Time(Dur::from_us(100).ps()));
        let expected = (1.0f64 - 1.0 / 256.0).powi(100);
        assert!((a - expected).abs() < 1e-12, "{a} vs {expected}");
    }

    #[test]
    fn recovery_goes_fast_then_additive_then_hyper_and_stops_at_line_rate() {
        let mut d = mlx();
        d.on_cnp(Time(0));
        d.on_timeout(Time(0));
        let mut now = Time(0);
        let mut rates = vec![d.rate().as_gbps()];
        while let Some(t) = d.next_timeout() {
            now = t;
            d.on_timeout(now);
            rates.push(d.rate().as_gbps());
            assert!(rates.len() < 10_000, "never recovered");
        }
        assert_eq!(d.rate(), Rate::gbps(100));
        // Fast recovery first: 50 -> 75 (target still 100 Gb/s).
        assert!((rates[1] - 75.0).abs() < 1e-6, "{rates:?}");
        assert!(rates.windows(2).all(|w| w[1] >= w[0]));
        assert!(now > Time::ZERO);
    }

    #[test]
    fn paper_mode_cuts_at_every_cnp() {
        let mut d = Dcqcn::new(DcqcnConfig::paper(), Rate::gbps(40));
        d.on_cnp(Time(0));
        let r1 = d.rate();
        d.on_cnp(Time(1_000));
        assert!(d.rate() < r1);
        assert_eq!(d.cuts(), 2);
        // Every cut clamps the target to the current rate.
        assert_eq!(d.target(), r1);
    }

    #[test]
    fn min_rate_bounds_the_cuts() {
        let mut d = mlx();
        let mut now = Time(0);
        for _ in 0..2000 {
            d.on_cnp(now);
            now += Dur::from_us(4);
            d.on_timeout(now);
        }
        assert_eq!(d.rate(), Rate::mbps(100));
    }
}
