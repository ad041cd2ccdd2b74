//! DCQCN's reaction point (the sender's rate machine) and its parameters.
//!
//! The machine follows the Mellanox/NVIDIA variant that the HPCC ns-3 model
//! implements (`rdma-hw.cc`, `CC_MODE 1`) and, with [`DcqcnConfig::paper`], the
//! original algorithm of Zhu et al. (SIGCOMM 2015). Presets: [`DcqcnConfig::hpcc`]
//! (HPCC's `run.py --cc dcqcn`, exactly), [`DcqcnConfig::hpcc_paper`] (its
//! `dcqcn_paper`), [`DcqcnConfig::firmware`] (ConnectX defaults) and
//! [`DcqcnConfig::paper`].
//!
//! * **Alpha.** Starts at 1 on the first CNP. Every `alpha_interval` it becomes
//!   `(1-g)·α + g` if a CNP arrived during that interval, else `(1-g)·α`. In paper mode
//!   (`decrease_interval = 0`) the update happens at each CNP and the decay interval
//!   restarts there.
//! * **Decrease.** At most one cut per `decrease_interval`, checked on a grid that
//!   starts 1 ns after the first CNP (HPCC's `ScheduleDecreaseRateMlx(q, 1)`: the check
//!   follows the alpha update of the same instant), so the first cut comes one
//!   interval after the first CNP; or at each CNP in paper mode:
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
    /// Lowest rate a cut can reach (1 Gb/s in HPCC's `run.py`).
    pub min_rate: Rate,
    /// Always set `R_T = R_C` on a cut (paper) rather than only after an increase (HPCC).
    pub clamp_target: bool,
    /// Responder: at most one CNP per QP per this interval (zero: one for every marked
    /// packet, as HPCC's model flags every ACK of one; 4 us in ConnectX firmware; paper
    /// 50 us).
    pub cnp_interval: Dur,
}

/// `mbps` per 25 Gb/s of `line` (HPCC's `run.py` scales the increase steps by the NIC
/// rate). In u128: 50 Mb/s times a 400 Gb/s line overflows a u64.
fn per_25g(mbps: u64, line: Rate) -> Rate {
    Rate((mbps as u128 * 1_000_000 * line.bps() as u128 / 25_000_000_000) as u64)
}

impl DcqcnConfig {
    /// HPCC's `run.py --cc dcqcn` for a NIC of `line` rate, as its `rdma-hw.cc` runs it:
    /// ConnectX timings (1, 4 and 300 us, F = 1, g = 1/256), increase steps of 5 and 50
    /// Mb/s per 25 Gb/s, a 1 Gb/s floor, the target clamped only after an increase, and
    /// every ACK of a marked packet carrying a CNP.
    pub fn hpcc(line: Rate) -> DcqcnConfig {
        DcqcnConfig {
            g: 1.0 / 256.0,
            alpha_interval: Dur::from_us(1),
            decrease_interval: Dur::from_us(4),
            increase_interval: Dur::from_us(300),
            byte_counter: 0,
            fast_recovery: 1,
            rate_ai: per_25g(5, line),
            rate_hai: per_25g(50, line),
            min_rate: Rate::gbps(1),
            clamp_target: false,
            cnp_interval: Dur::ZERO,
        }
    }

    /// HPCC's `run.py --cc dcqcn_paper`: [`hpcc`](Self::hpcc) with the paper's slower
    /// timers (alpha and decrease every 50 us, increase every 55 us). `run.py` keeps
    /// `F = 1`, no byte counter, the 1 Gb/s floor and the unclamped target for it.
    pub fn hpcc_paper(line: Rate) -> DcqcnConfig {
        DcqcnConfig {
            alpha_interval: Dur::from_us(50),
            decrease_interval: Dur::from_us(50),
            increase_interval: Dur::from_us(55),
            ..DcqcnConfig::hpcc(line)
        }
    }

    /// ConnectX firmware defaults (`mlxconfig`, NVIDIA's DCQCN parameter table): alpha
    /// gain 5/1024 (`dce_tcp_g` 1019), alpha every 1 us, a cut checked every 4 us, the
    /// increase timer 300 us, `F = 1`, increase steps of 5 and 50 Mb/s whatever the link
    /// speed, a 1 Mb/s floor, and at most one CNP per QP per 4 us from the responder
    /// (`min_time_between_cnps`). The firmware's byte counter, whose unit the
    /// documentation leaves unclear, is off, as in HPCC's model.
    pub fn firmware() -> DcqcnConfig {
        DcqcnConfig {
            g: 5.0 / 1024.0,
            alpha_interval: Dur::from_us(1),
            decrease_interval: Dur::from_us(4),
            increase_interval: Dur::from_us(300),
            byte_counter: 0,
            fast_recovery: 1,
            rate_ai: Rate::mbps(5),
            rate_hai: Rate::mbps(50),
            min_rate: Rate::mbps(1),
            clamp_target: false,
            cnp_interval: Dur::from_us(4),
        }
    }

    /// The DCQCN paper's parameters (Zhu et al. 2015, with ns3-rdma's hyper step): a cut
    /// at every CNP, CNPs at most every 50 us, a 10 MB byte counter, `F = 5`.
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
            if self.cfg.decrease_interval == Dur::ZERO {
                self.cut(now);
            } else {
                // HPCC checks for a cut every interval from 1 ns after the first CNP
                // (after the alpha update of the same instant); the first CNP's flag
                // is set, so the first check cuts.
                self.dec_origin = now + Dur::from_ns(1);
                self.dec_at = Some(self.dec_origin + self.cfg.decrease_interval);
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

    fn at(us: f64) -> Time {
        Time((us * 1e6).round() as u64)
    }

    /// Runs `d` through CNPs at `cnps` (sorted) until it goes quiet or `until`, and
    /// returns every change of its rate, `(time, bits per second)`.
    fn trace(d: &mut Dcqcn, cnps: &[Time], until: Time) -> Vec<(Time, f64)> {
        let mut out = Vec::new();
        let mut last = d.rate().bps() as f64;
        let mut next_cnp = 0;
        loop {
            let timer = d.next_timeout().filter(|&t| t <= until);
            let cnp = cnps.get(next_cnp).copied();
            let now = match (timer, cnp.filter(|&c| c <= until)) {
                (Some(t), Some(c)) if t <= c => {
                    d.on_timeout(t);
                    t
                }
                (_, Some(c)) => {
                    next_cnp += 1;
                    d.on_cnp(c);
                    c
                }
                (Some(t), None) => {
                    d.on_timeout(t);
                    t
                }
                (None, None) => return out,
            };
            let r = d.rc.min(d.line);
            if r != last {
                out.push((now, r));
                last = r;
            }
        }
    }

    /// HPCC's `rdma-hw.cc` (`CC_MODE 1`), written out as its three periodic timers
    /// without our machine's shortcuts (lazy alpha, the quiet line rate): the
    /// reference our rate trace must equal.
    fn hpcc_reference(cfg: &DcqcnConfig, line: f64, cnps: &[Time], until: Time) -> Vec<(Time, f64)> {
        let (mut rate, mut target, mut alpha) = (line, line, 1.0);
        let (mut alpha_cnp, mut dec_cnp, mut stage) = (false, false, 0u32);
        let (mut alpha_at, mut dec_at, mut inc_at): (Option<Time>, Option<Time>, Option<Time>) = (None, None, None);
        let mut out = Vec::new();
        let mut next_cnp = 0;
        loop {
            // The earliest of the CNPs and the timers; at one instant the alpha update
            // first, then the decrease check, then the increase (HPCC's +1 ns keeps
            // the first two apart; the test's CNPs never coincide with a timer).
            let cands = [cnps.get(next_cnp).copied(), alpha_at, dec_at, inc_at];
            let Some(now) = cands.iter().flatten().copied().filter(|&t| t <= until).min() else { return out };
            let before = rate;
            if cands[0] == Some(now) {
                next_cnp += 1;
                alpha_cnp = true;
                dec_cnp = true;
                if alpha_at.is_none() {
                    alpha = 1.0;
                    alpha_cnp = false;
                    alpha_at = Some(now + cfg.alpha_interval);
                    dec_at = Some(now + cfg.decrease_interval + Dur::from_ns(1));
                }
            } else if alpha_at == Some(now) {
                alpha = (1.0 - cfg.g) * alpha + if alpha_cnp { cfg.g } else { 0.0 };
                alpha_cnp = false;
                alpha_at = Some(now + cfg.alpha_interval);
            } else if dec_at == Some(now) {
                dec_at = Some(now + cfg.decrease_interval);
                if dec_cnp {
                    if cfg.clamp_target || stage != 0 {
                        target = rate;
                    }
                    rate = (rate * (1.0 - alpha / 2.0)).max(cfg.min_rate.bps() as f64);
                    stage = 0;
                    dec_cnp = false;
                    inc_at = Some(now + cfg.increase_interval);
                }
            } else {
                inc_at = Some(now + cfg.increase_interval);
                if stage == cfg.fast_recovery {
                    target = (target + cfg.rate_ai.bps() as f64).min(line);
                } else if stage > cfg.fast_recovery {
                    target = (target + cfg.rate_hai.bps() as f64).min(line);
                }
                rate = rate / 2.0 + target / 2.0;
                stage += 1;
            }
            if rate != before {
                out.push((now, rate));
            }
        }
    }

    #[test]
    fn the_first_cut_comes_one_decrease_interval_after_the_first_cnp() {
        // By hand, HPCC's rules at 100 Gb/s: the CNP at 0 sets alpha to 1; four alpha
        // updates without CNPs leave (255/256)^4; the check at 4 us + 1 ns cuts to
        // 100 x (1 - 0.98446/2) = 50.777 Gb/s. Fast recovery 300 us later: (50.777 +
        // 100) / 2. Then an additive step (the target, still at line rate, stays there).
        let mut d = mlx();
        d.on_cnp(Time(0));
        assert_eq!(d.next_timeout(), Some(at(4.001)));
        let t = trace(&mut d, &[], at(700.0));
        let alpha = (255.0f64 / 256.0).powi(4);
        let cut = 100e9 * (1.0 - alpha / 2.0);
        assert_eq!(t[0].0, at(4.001));
        assert!((t[0].1 - cut).abs() < 1.0, "{t:?}");
        assert_eq!(t[1].0, at(304.001));
        assert!((t[1].1 - (cut + 100e9) / 2.0).abs() < 1.0, "{t:?}");
        assert_eq!(t[2].0, at(604.001));
        assert!((t[2].1 - ((cut + 100e9) / 2.0 + 100e9) / 2.0).abs() < 1.0, "{t:?}");
        // Target stays at line rate: no increase happened before the cut.
        assert_eq!(d.target(), Rate::gbps(100));
    }

    #[test]
    fn the_rate_trace_is_hpccs_for_every_preset() {
        // CNP trains of every shape: a burst, a steady stream every 2.3 us, sparse
        // CNPs around the increase timer, a second burst during the recovery.
        let mut cnps: Vec<Time> = (0..5).map(|i| at(0.37 + 0.11 * i as f64)).collect();
        cnps.extend((0..60).map(|i| at(13.7 + 2.3 * i as f64)));
        cnps.extend([at(401.3), at(733.9), at(1234.5)]);
        cnps.extend((0..40).map(|i| at(2500.3 + 0.9 * i as f64)));
        let line = Rate::gbps(100);
        for (name, cfg) in [
            ("hpcc", DcqcnConfig::hpcc(line)),
            ("hpcc_paper", DcqcnConfig::hpcc_paper(line)),
            ("firmware", DcqcnConfig::firmware()),
        ] {
            let until = at(20_000.0);
            let ours = trace(&mut Dcqcn::new(cfg, line), &cnps, until);
            let theirs = hpcc_reference(&cfg, line.bps() as f64, &cnps, until);
            assert!(ours.len() > 20, "{name}: {} changes", ours.len());
            // Step for step, until ours goes quiet within a billionth of line rate
            // (where HPCC's halves the last gap for ever, a rounding error at a time).
            let last = *ours.last().expect("changes");
            let quiet = if last.1 == line.bps() as f64 { last.0 } else { Time::MAX };
            let before: Vec<_> = theirs.iter().filter(|c| c.0 < quiet).collect();
            let after: Vec<_> = theirs.iter().filter(|c| c.0 >= quiet).collect();
            let compared = if quiet == Time::MAX { ours.len() } else { ours.len() - 1 };
            assert_eq!(compared, before.len(), "{name}:\n{ours:?}\n{theirs:?}");
            for (a, b) in ours.iter().zip(&before) {
                assert_eq!(a.0, b.0, "{name}: {a:?} vs {b:?}");
                assert!((a.1 - b.1).abs() <= 1e-9 * b.1, "{name}: {a:?} vs {b:?}");
            }
            assert!(after.iter().all(|c| (c.1 - line.bps() as f64).abs() <= 1e-9 * c.1), "{name}: {after:?}");
        }
    }

    #[test]
    fn cuts_are_spaced_by_the_decrease_interval() {
        let mut d = mlx();
        d.on_cnp(Time(0));
        d.on_timeout(at(4.001));
        assert_eq!(d.cuts(), 1);
        d.on_cnp(at(4.5));
        // The next check on the grid 1 ns after the first CNP.
        assert_eq!(d.next_timeout(), Some(at(8.001)));
        d.on_timeout(at(8.001));
        assert_eq!(d.cuts(), 2);
        assert!(d.rate() < Rate::gbps(50));
    }

    #[test]
    fn alpha_decays_without_cnps() {
        let mut d = mlx();
        d.on_cnp(Time(0));
        d.on_timeout(at(4.001));
        let a = d.alpha(Time(Dur::from_us(100).ps()));
        let expected = (1.0f64 - 1.0 / 256.0).powi(100);
        assert!((a - expected).abs() < 1e-12, "{a} vs {expected}");
    }

    #[test]
    fn recovery_goes_fast_then_additive_then_hyper_and_stops_at_line_rate() {
        let mut d = mlx();
        d.on_cnp(Time(0));
        d.on_timeout(at(4.001));
        let cut = d.rate().as_gbps();
        let mut now = Time(0);
        let mut rates = vec![d.rate().as_gbps()];
        while let Some(t) = d.next_timeout() {
            now = t;
            d.on_timeout(now);
            rates.push(d.rate().as_gbps());
            assert!(rates.len() < 10_000, "never recovered");
        }
        assert_eq!(d.rate(), Rate::gbps(100));
        // Fast recovery first: halfway to the target, still 100 Gb/s.
        assert!((rates[1] - (cut + 100.0) / 2.0).abs() < 1e-6, "{rates:?}");
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
            d.on_timeout(now + Dur::from_ns(1));
        }
        assert_eq!(d.rate(), Rate::gbps(1));
    }
}
