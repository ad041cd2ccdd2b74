//! Smoothed round-trip time and retransmission timeout (RFC 6298 style).

use fabricsim_engine::Dur;

/// `srtt`, `rttvar` and the RTO derived from them, with exponential backoff.
#[derive(Clone, Copy, Debug)]
pub struct RttEstimator {
    srtt: Option<u64>,
    rttvar: u64,
    min_rto: Dur,
    max_rto: Dur,
    /// The timeout before the first sample.
    initial: Dur,
    /// Consecutive timeouts without a new sample: the RTO doubles for each.
    backoff: u32,
}

impl RttEstimator {
    /// An estimator whose RTO stays within `[min_rto, max_rto]`.
    pub fn new(min_rto: Dur, max_rto: Dur) -> RttEstimator {
        RttEstimator { srtt: None, rttvar: 0, min_rto, max_rto, initial: min_rto.mul(4), backoff: 0 }
    }

    /// The timeout before the first sample (default: four times `min_rto`).
    pub fn with_initial(mut self, initial: Dur) -> RttEstimator {
        self.initial = initial;
        self
    }

    /// Folds in one sample (gains 1/8 and 1/4 as in RFC 6298).
    pub fn sample(&mut self, rtt: Dur) {
        self.backoff = 0;
        let r = rtt.ps();
        match self.srtt {
            None => {
                self.srtt = Some(r);
                self.rttvar = r / 2;
            }
            Some(s) => {
                self.rttvar = (3 * self.rttvar + s.abs_diff(r)) / 4;
                self.srtt = Some((7 * s + r) / 8);
            }
        }
    }

    /// Timeouts since the last sample (each doubled the RTO).
    pub fn backoff(&self) -> u32 {
        self.backoff
    }

    /// Forgets the timeouts' backoff (the silence they met is known to be over).
    pub fn reset_backoff(&mut self) {
        self.backoff = 0;
    }

    /// Smoothed RTT, if any sample was taken.
    pub fn srtt(&self) -> Option<Dur> {
        self.srtt.map(Dur)
    }

    /// A timeout fired: back off (the RTO doubles until the next sample).
    pub fn on_timeout(&mut self) {
        self.backoff = (self.backoff + 1).min(16);
    }

    /// `(srtt + 4 rttvar) × 2^backoff`, at least `min_rto`; the initial timeout
    /// before the first sample. `max_rto` caps the backoff but never the measured
    /// `srtt + 4 rttvar`: a timeout shorter than the RTT it has measured (a slowed link
    /// behind a deep buffer) would fire on every packet, and each spurious resend adds
    /// to the queue that caused it (RFC 6298 puts the maximum at 60 s for that reason).
    pub fn rto(&self) -> Dur {
        let base = match self.srtt {
            None => self.initial.min(self.max_rto),
            Some(s) => Dur(s + 4 * self.rttvar),
        }
        .max(self.min_rto);
        base.mul(1 << self.backoff).min(self.max_rto.max(base))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rto_follows_rfc6298_and_its_bounds() {
        let mut e = RttEstimator::new(Dur::from_us(50), Dur::from_ms(1));
        e.sample(Dur::from_us(10));
        assert_eq!(e.srtt(), Some(Dur::from_us(10)));
        // 10 + 4 * 5 = 30 us, below the 50 us floor.
        assert_eq!(e.rto(), Dur::from_us(50));
        for _ in 0..50 {
            e.sample(Dur::from_us(400));
        }
        assert!(e.rto() >= Dur::from_us(400) && e.rto() <= Dur::from_ms(1));
    }

    #[test]
    fn max_rto_caps_the_backoff_but_not_the_measured_rtt() {
        let mut e = RttEstimator::new(Dur::from_us(50), Dur::from_ms(1));
        for _ in 0..50 {
            e.sample(Dur::from_ms(5));
        }
        let base = e.rto();
        assert!(base >= Dur::from_ms(5), "{base:?}");
        e.on_timeout();
        e.on_timeout();
        assert_eq!(e.rto(), base, "no backoff beyond the larger of max_rto and the base");
        let mut f = RttEstimator::new(Dur::from_us(50), Dur::from_ms(1));
        f.sample(Dur::from_us(100));
        for _ in 0..10 {
            f.on_timeout();
        }
        assert_eq!(f.rto(), Dur::from_ms(1));
    }

    #[test]
    fn timeouts_back_off_until_a_sample_arrives() {
        let mut e = RttEstimator::new(Dur::from_us(50), Dur::from_ms(10));
        e.sample(Dur::from_us(100));
        let r = e.rto();
        e.on_timeout();
        e.on_timeout();
        assert_eq!(e.rto(), r.mul(4));
        e.sample(Dur::from_us(100));
        assert!(e.rto() <= r);
    }
}
