//! Datacenter traffic mixes: flow sizes drawn from a CDF, arriving as a Poisson
//! process at a target load of the host links (HPCC's and Parsimon's evaluations).
//!
//! A CDF is a list of points `(bytes, cumulative percent)` from `(x0, 0)` to `(xn, 100)`,
//! sizes interpolated linearly between points, as HPCC's traffic generator reads its
//! distribution files. The bundled ones are those files' numbers: WebSearch (the DCTCP
//! paper's web search cluster), FB Hadoop (Facebook's Hadoop cluster, Roy et al.) and
//! AliStorage (Alibaba's storage cluster, 2019).
//!
//! Every sending host draws exponential gaps of mean `mean size x 8 / (load x link
//! rate)` (so that on average it offers `load` of its link), each flow to a uniformly
//! random other host (of its group, if groups are given), from its own random stream
//! (a host's flows do not change when hosts are added).

use crate::invalid;
use crate::WorkloadError;
use fabricsim_engine::{Dur, Rng};

/// A flow-size distribution.
#[derive(Clone, Debug, PartialEq)]
pub struct SizeCdf {
    /// `(bytes, cumulative percent)`, both strictly increasing, from 0 % to 100 %.
    pub points: Vec<(f64, f64)>,
}

/// The bundled distributions: name, and points (bytes, cumulative percent).
pub const BUNDLED: &[(&str, &[(f64, f64)])] = &[
    (
        "websearch",
        &[
            (0.0, 0.0),
            (10e3, 15.0),
            (20e3, 20.0),
            (30e3, 30.0),
            (50e3, 40.0),
            (80e3, 53.0),
            (200e3, 60.0),
            (1e6, 70.0),
            (2e6, 80.0),
            (5e6, 90.0),
            (10e6, 97.0),
            (30e6, 100.0),
        ],
    ),
    (
        "fb_hadoop",
        &[
            (0.0, 0.0),
            (100.0, 1.0),
            (200.0, 2.0),
            (300.0, 5.0),
            (350.0, 15.0),
            (400.0, 20.0),
            (500.0, 30.0),
            (600.0, 40.0),
            (700.0, 50.0),
            (1000.0, 60.0),
            (2000.0, 67.0),
            (7000.0, 70.0),
            (30e3, 72.0),
            (50e3, 82.0),
            (80e3, 87.0),
            (120e3, 90.0),
            (300e3, 95.0),
            (1e6, 97.5),
            (2e6, 99.0),
            (10e6, 100.0),
        ],
    ),
    (
        "alistorage",
        &[
            (0.0, 0.0),
            (4000.0, 22.93),
            (8000.0, 69.21),
            (16000.0, 80.61),
            (32000.0, 90.47),
            (64000.0, 93.53),
            (128000.0, 96.77),
            (256000.0, 97.53),
            (2e6, 100.0),
        ],
    ),
];

impl SizeCdf {
    /// The bundled distribution called `name`.
    pub fn bundled(name: &str) -> Option<SizeCdf> {
        BUNDLED.iter().find(|b| b.0 == name).map(|b| SizeCdf { points: b.1.to_vec() })
    }

    /// Reads a user's CSV: one point per line, `bytes,percent` (or separated by
    /// spaces), percents from 0 to 100 (or fractions from 0 to 1); `#` comments and a
    /// header line of words are skipped. Errors give the line.
    pub fn from_csv(text: &str) -> Result<SizeCdf, String> {
        let mut points = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let cols: Vec<&str> =
                line.split(|c: char| c == ',' || c.is_whitespace()).filter(|c| !c.is_empty()).collect();
            if points.is_empty() && cols.iter().all(|c| c.parse::<f64>().is_err()) {
                continue; // a header
            }
            let [x, y] = cols[..] else {
                return Err(format!(
                    "line {}: expected two columns (bytes, cumulative percent), got {}",
                    i + 1,
                    cols.len()
                ));
            };
            let num = |s: &str, what: &str| {
                s.parse::<f64>()
                    .ok()
                    .filter(|v| v.is_finite())
                    .ok_or(format!("line {}: {what}: expected a number, got \"{s}\"", i + 1))
            };
            points.push((num(x, "bytes")?, num(y, "percent")?, i + 1));
        }
        // Fractions become percents.
        let scale = if points.last().is_some_and(|p| (p.1 - 1.0).abs() < 1e-9) { 100.0 } else { 1.0 };
        let cdf = SizeCdf { points: points.iter().map(|p| (p.0, p.1 * scale)).collect() };
        cdf.check().map_err(|(k, m)| match points.get(k) {
            Some(p) => format!("line {}: {m}", p.2),
            None => m,
        })?;
        Ok(cdf)
    }

    /// Checks the shape; on error, the index of the point at fault.
    pub fn check(&self) -> Result<(), (usize, String)> {
        let p = &self.points;
        if p.len() < 2 {
            return Err((0, "a distribution needs at least two points".into()));
        }
        if p[0].1 != 0.0 {
            return Err((0, format!("the first point must be at 0 %, got {} %", p[0].1)));
        }
        if (p[p.len() - 1].1 - 100.0).abs() > 1e-9 {
            return Err((p.len() - 1, format!("the last point must be at 100 %, got {} %", p[p.len() - 1].1)));
        }
        if p[0].0 < 0.0 {
            return Err((0, "sizes must not be negative".into()));
        }
        for k in 1..p.len() {
            if p[k].0 <= p[k - 1].0 || p[k].1 <= p[k - 1].1 {
                return Err((k, "sizes and percents must both increase from one point to the next".into()));
            }
        }
        Ok(())
    }

    /// The mean size in bytes (of the interpolated distribution).
    pub fn mean(&self) -> f64 {
        self.points.windows(2).map(|w| (w[0].0 + w[1].0) / 2.0 * (w[1].1 - w[0].1) / 100.0).sum()
    }

    /// The size at cumulative percent `y` (0..=100).
    pub fn quantile(&self, y: f64) -> f64 {
        let p = &self.points;
        let k = p.partition_point(|q| q.1 < y).clamp(1, p.len() - 1);
        let ((x0, y0), (x1, y1)) = (p[k - 1], p[k]);
        x0 + (x1 - x0) * (y - y0) / (y1 - y0)
    }

    /// A size drawn at random (at least 1 byte).
    pub fn sample(&self, rng: &mut Rng) -> u64 {
        (self.quantile(rng.unit() * 100.0).round() as u64).max(1)
    }
}

/// A Poisson traffic mix.
#[derive(Clone, Debug, PartialEq)]
pub struct PoissonMix {
    /// Flow sizes.
    pub cdf: SizeCdf,
    /// Target load of each sending host's link (0..1].
    pub load: f64,
    /// Flows arrive during this long after the workload's start.
    pub duration: Dur,
    /// Groups of hosts sending to each other (empty: all the workload's hosts).
    pub groups: Vec<Vec<u32>>,
    /// The host link rate, bits per second (set by the run).
    pub link_bps: u64,
}

impl PoissonMix {
    /// Flows a host starts per second.
    pub fn rate(&self) -> f64 {
        self.load * self.link_bps as f64 / 8.0 / self.cdf.mean().max(1.0)
    }

    /// The number of flows `senders` hosts will start, at most (the mean plus six
    /// standard deviations), for refusing a plan too large before drawing it.
    pub fn flows_at_most(&self, senders: u64) -> u64 {
        let mean = self.rate() * self.duration.as_secs_f64() * senders as f64;
        (mean + 6.0 * mean.sqrt() + 1.0) as u64
    }

    /// The flows `(src, dst, size, start)` among `hosts` (the groups' hosts if there
    /// are groups), each host's from its own stream under `key`.
    pub fn flows(
        &self,
        hosts: &[u32],
        seed: u64,
        key: u64,
        field: &str,
    ) -> Result<Vec<(u32, u32, u64, Dur)>, WorkloadError> {
        let groups: Vec<Vec<u32>> = if self.groups.is_empty() { vec![hosts.to_vec()] } else { self.groups.clone() };
        for (g, members) in groups.iter().enumerate() {
            if members.len() < 2 {
                return Err(invalid(format!("{field}.groups[{g}]"), "a group needs at least 2 hosts"));
            }
        }
        let rate = self.rate();
        let end = self.duration.as_secs_f64();
        let mut out = Vec::new();
        for members in &groups {
            for (i, &src) in members.iter().enumerate() {
                let mut rng = Rng::stream(seed, &[0x9015, key, src as u64]);
                let mut t = 0.0;
                loop {
                    // Exponential gaps: -ln(1 - U) / rate.
                    t += -(1.0 - rng.unit()).ln() / rate;
                    if t >= end {
                        break;
                    }
                    let mut j = rng.below(members.len() as u64 - 1) as usize;
                    if j >= i {
                        j += 1;
                    }
                    let size = self.cdf.sample(&mut rng);
                    out.push((src, members[j], size, Dur::from_ps((t * 1e12) as u64)));
                }
            }
        }
        // In order of start (ties by sender), as a trace would list them.
        out.sort_by_key(|f| (f.3, f.0));
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bundled_means_are_hpccs() {
        // The means HPCC's generator (getAvg) computes from the same files.
        let mean = |n| SizeCdf::bundled(n).unwrap().mean();
        assert!((mean("websearch") - 1_711_250.0).abs() < 1.0, "{}", mean("websearch"));
        assert!((mean("fb_hadoop") - 120_420.75).abs() < 1.0, "{}", mean("fb_hadoop"));
        assert!((mean("alistorage") - 40_869.8).abs() < 1.0, "{}", mean("alistorage"));
        for (name, _) in BUNDLED {
            SizeCdf::bundled(name).unwrap().check().unwrap();
        }
    }

    #[test]
    fn samples_follow_the_cdf() {
        let cdf = SizeCdf::bundled("websearch").unwrap();
        let mut rng = Rng::new(5);
        let n = 200_000;
        let mut v: Vec<u64> = (0..n).map(|_| cdf.sample(&mut rng)).collect();
        v.sort_unstable();
        // The empirical CDF stays within a Kolmogorov-Smirnov band of the points.
        for &(x, y) in &cdf.points[1..cdf.points.len() - 1] {
            let below = v.partition_point(|&s| (s as f64) <= x) as f64 / n as f64 * 100.0;
            assert!((below - y).abs() < 0.5, "{x} bytes: {below} % against {y} %");
        }
        let mean = v.iter().sum::<u64>() as f64 / n as f64;
        assert!((mean / cdf.mean() - 1.0).abs() < 0.02, "{mean}");
    }

    #[test]
    fn a_mix_offers_its_load_with_exponential_gaps() {
        let mix = PoissonMix {
            cdf: SizeCdf::bundled("alistorage").unwrap(),
            load: 0.4,
            duration: Dur::from_ms(20),
            groups: Vec::new(),
            link_bps: 100_000_000_000,
        };
        let hosts: Vec<u32> = (0..16).collect();
        let flows = mix.flows(&hosts, 1, 0, "w").unwrap();
        let bytes: u64 = flows.iter().map(|f| f.2).sum();
        let offered = bytes as f64 * 8.0 / (0.02 * 16.0 * 1e11);
        assert!((offered - 0.4).abs() < 0.02, "offered load {offered}");
        assert!(flows.len() as u64 <= mix.flows_at_most(16));
        // Host 3's gaps: exponential, so their standard deviation is their mean.
        let t: Vec<f64> = flows.iter().filter(|f| f.0 == 3).map(|f| f.3.as_secs_f64()).collect();
        let gaps: Vec<f64> = t.windows(2).map(|w| w[1] - w[0]).collect();
        let m = gaps.iter().sum::<f64>() / gaps.len() as f64;
        let sd = (gaps.iter().map(|g| (g - m).powi(2)).sum::<f64>() / gaps.len() as f64).sqrt();
        assert!((m * mix.rate() - 1.0).abs() < 0.05 && (sd / m - 1.0).abs() < 0.1, "mean {m} sd {sd}");
        assert!(flows.iter().all(|f| f.0 != f.1));
        assert_eq!(flows, mix.flows(&hosts, 1, 0, "w").unwrap());
        // Host 3's flows do not change when host 16 joins.
        let more: Vec<u32> = (0..17).collect();
        let again: Vec<_> =
            mix.flows(&more, 1, 0, "w").unwrap().into_iter().filter(|f| f.0 == 3).map(|f| (f.2, f.3)).collect();
        let before: Vec<_> = flows.iter().filter(|f| f.0 == 3).map(|f| (f.2, f.3)).collect();
        assert_eq!(again, before);
    }

    #[test]
    fn groups_keep_traffic_inside() {
        let mix = PoissonMix {
            cdf: SizeCdf::bundled("fb_hadoop").unwrap(),
            load: 0.3,
            duration: Dur::from_ms(2),
            groups: vec![vec![0, 1, 2], vec![5, 6]],
            link_bps: 100_000_000_000,
        };
        let flows = mix.flows(&[], 2, 0, "w").unwrap();
        assert!(!flows.is_empty());
        for f in flows {
            let g = |h: u32| if h < 3 { 0 } else { 1 };
            assert_eq!(g(f.0), g(f.1), "{f:?}");
        }
    }

    #[test]
    fn bad_csvs_name_the_line() {
        assert_eq!(
            SizeCdf::from_csv("size,cdf\n0,0\n100,50\n90,100\n").unwrap_err(),
            "line 4: sizes and percents must both increase from one point to the next"
        );
        assert_eq!(SizeCdf::from_csv("0 0\n1e3 x\n").unwrap_err(), "line 2: percent: expected a number, got \"x\"");
        assert!(SizeCdf::from_csv("0 0\n100 0.5\n200 0.9\n").unwrap_err().contains("100 %"));
        let f = SizeCdf::from_csv("# fractions\n0 0\n1000 0.5\n3000 1.0\n").unwrap();
        assert_eq!(f.points, vec![(0.0, 0.0), (1000.0, 50.0), (3000.0, 100.0)]);
        assert_eq!(f.mean(), 1250.0);
    }
}
