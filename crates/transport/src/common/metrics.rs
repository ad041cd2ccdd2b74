//! Per-path counters, path-state logs and out-of-order degree histograms.

use fabricsim_engine::Time;

/// Counters of one path (entropy value) of one connection, kept by the sender.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PathStats {
    /// The entropy value.
    pub ev: u32,
    /// Data packets sent on it (first transmissions and retransmissions).
    pub packets: u64,
    /// Acknowledgements that echoed an ECN mark for it.
    pub ecn_marks: u64,
    /// NACKs for packets of it that were trimmed.
    pub trims: u64,
    /// Packets of it declared lost (timeout, RACK, NACK beyond the window).
    pub losses: u64,
    /// Retransmissions sent on it.
    pub retransmissions: u64,
}

/// States an entropy value goes through (MRC; other protocols log `Active` only).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EvState {
    /// In the active set and used.
    Active,
    /// In the active set but temporarily skipped after ECN feedback.
    Avoided,
    /// Removed after an untrimmed loss (or its plane is down).
    Retired,
    /// Retired and being probed.
    Probing,
    /// Healthy, waiting in the backup set.
    Backup,
}

impl EvState {
    /// Name used in result tables.
    pub fn name(self) -> &'static str {
        match self {
            EvState::Active => "active",
            EvState::Avoided => "avoided",
            EvState::Retired => "retired",
            EvState::Probing => "probing",
            EvState::Backup => "backup",
        }
    }
}

/// One state change of one entropy value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PathLog {
    /// When.
    pub time: Time,
    /// Which entropy value.
    pub ev: u32,
    /// Its new state.
    pub state: EvState,
}

/// Log-linear histogram of out-of-order degrees (PSN minus the receiver's next
/// expected PSN at arrival): exact below 64, then 16 sub-buckets per power of two.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct OooHistogram {
    counts: Vec<u64>,
    max: u64,
    total: u64,
}

const LINEAR: u64 = 64;
const SUB: u64 = 16;

impl OooHistogram {
    fn bucket(d: u64) -> usize {
        if d < LINEAR {
            return d as usize;
        }
        let p = 63 - d.leading_zeros() as u64; // d in [2^p, 2^(p+1))
        let sub = ((d - (1 << p)) * SUB) >> p;
        (LINEAR + (p - 6) * SUB + sub) as usize
    }

    /// The smallest degree counted in bucket `b`.
    pub fn bucket_low(b: usize) -> u64 {
        let b = b as u64;
        if b < LINEAR {
            return b;
        }
        let p = (b - LINEAR) / SUB + 6;
        let sub = (b - LINEAR) % SUB;
        (1 << p) + (sub << p) / SUB
    }

    /// Records one packet of degree `d`.
    #[inline]
    pub fn record(&mut self, d: u64) {
        let b = Self::bucket(d);
        if b >= self.counts.len() {
            self.counts.resize(b + 1, 0);
        }
        self.counts[b] += 1;
        self.max = self.max.max(d);
        self.total += 1;
    }

    /// Adds another histogram into this one.
    pub fn merge(&mut self, o: &OooHistogram) {
        if o.counts.len() > self.counts.len() {
            self.counts.resize(o.counts.len(), 0);
        }
        for (a, b) in self.counts.iter_mut().zip(&o.counts) {
            *a += b;
        }
        self.max = self.max.max(o.max);
        self.total += o.total;
    }

    /// Largest degree seen.
    pub fn max(&self) -> u64 {
        self.max
    }

    /// Packets recorded.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// `(lowest degree of bucket, packets)` for every non-empty bucket.
    pub fn buckets(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.counts.iter().enumerate().filter(|(_, &c)| c > 0).map(|(b, &c)| (Self::bucket_low(b), c))
    }

    /// The degree at quantile `q` (lower edge of its bucket).
    pub fn quantile(&self, q: f64) -> u64 {
        let target = (q * self.total as f64).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (b, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= target {
                return Self::bucket_low(b);
            }
        }
        self.max
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_buckets_are_exact_below_64_and_monotone_above() {
        let mut h = OooHistogram::default();
        for d in [0u64, 0, 5, 63, 64, 100, 1000, 70_000] {
            h.record(d);
        }
        assert_eq!(h.total(), 8);
        assert_eq!(h.max(), 70_000);
        assert_eq!(h.quantile(0.25), 0);
        assert_eq!(h.quantile(0.3), 5);
        assert_eq!(h.quantile(0.5), 63);
        let lows: Vec<u64> = h.buckets().map(|b| b.0).collect();
        assert!(lows.windows(2).all(|w| w[0] < w[1]), "{lows:?}");
        for d in [64u64, 100, 1000, 70_000] {
            let low = OooHistogram::bucket_low(OooHistogram::bucket(d));
            assert!(low <= d && d - low <= d / SUB + 1, "{d} -> {low}");
        }
    }
}
