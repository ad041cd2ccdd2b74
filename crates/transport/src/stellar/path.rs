//! STELLAR's path-selection algorithms (paper section 7.2). The paper names them and
//! reports how they behave; the per-packet rules are fabricsim's readings of the cited
//! algorithms:
//!
//! * `single`: one fixed path per connection (the RoCEv2 baseline).
//! * `rr`: round robin over the N paths from a random start.
//! * `obs`: oblivious packet spraying, a uniformly random path per packet.
//! * `dwrr`: smooth weighted round robin; a path's weight falls with its ECN fraction
//!   and its RTT above the base, so weights concentrate on a few paths (the "few
//!   active paths" the paper observed).
//! * `best_rtt`: the path with the lowest smoothed RTT, which herds traffic onto one
//!   path at a time.
//!
//! `dwrr` and `best_rtt` break ties from a random index per connection: under SRv6
//! an EV names the same path for every connection, so ties to index 0 would start
//! every connection on one path.
//! * `mprdma`: ACK-clocked, a packet goes on the path of the ACK that freed window.
//!
//! Retransmissions avoid the path the packet was lost on.

use fabricsim_engine::{Dur, Rng};
use std::collections::VecDeque;

/// Which algorithm picks each packet's path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PathAlgo {
    /// Oblivious packet spraying.
    Obs,
    /// Round robin.
    Rr,
    /// Dynamic weighted round robin.
    Dwrr,
    /// Lowest smoothed RTT.
    BestRtt,
    /// ACK-clocked on the ACK's path.
    Mprdma,
    /// One path.
    Single,
}

impl PathAlgo {
    /// Scenario names, in the order of [`PathAlgo::ALL`].
    pub const NAMES: &'static [&'static str] = &["obs", "rr", "dwrr", "best_rtt", "mprdma", "single"];
    /// Every algorithm.
    pub const ALL: [PathAlgo; 6] =
        [PathAlgo::Obs, PathAlgo::Rr, PathAlgo::Dwrr, PathAlgo::BestRtt, PathAlgo::Mprdma, PathAlgo::Single];

    /// The algorithm called `name`.
    pub fn from_name(name: &str) -> Option<PathAlgo> {
        Self::NAMES.iter().position(|n| *n == name).map(|i| Self::ALL[i])
    }
}

/// Per-connection path selection state.
#[derive(Clone, Debug)]
pub struct PathSelector {
    algo: PathAlgo,
    n: u32,
    base_rtt: f64,
    /// `rr`'s next path; where `dwrr` and `best_rtt` start scanning (ties go to the
    /// first path scanned).
    next: u32,
    single: u32,
    srtt: Vec<f64>,
    ecn: Vec<f64>,
    current: Vec<f64>,
    acked_paths: VecDeque<u32>,
}

impl PathSelector {
    /// A selector over `n` paths.
    pub fn new(algo: PathAlgo, n: u32, base_rtt: Dur, rng: &mut Rng) -> PathSelector {
        let per_path = matches!(algo, PathAlgo::Dwrr | PathAlgo::BestRtt);
        let base = base_rtt.ps() as f64;
        PathSelector {
            algo,
            n,
            base_rtt: base,
            next: rng.below(n as u64) as u32,
            single: rng.below(n as u64) as u32,
            srtt: if per_path { vec![base; n as usize] } else { Vec::new() },
            ecn: if per_path { vec![0.0; n as usize] } else { Vec::new() },
            current: if per_path { vec![0.0; n as usize] } else { Vec::new() },
            acked_paths: VecDeque::new(),
        }
    }

    /// Path indices from this connection's random start, wrapping around.
    fn scan(n: u32, start: u32) -> impl Iterator<Item = usize> {
        let (n, start) = (n as usize, start as usize);
        (0..n).map(move |k| (start + k) % n)
    }

    /// Feedback from an ACK for a packet sent on `ev`.
    pub fn on_ack(&mut self, ev: u32, rtt: Dur, marked: bool) {
        let i = (ev % self.n) as usize;
        match self.algo {
            PathAlgo::Dwrr | PathAlgo::BestRtt => {
                self.srtt[i] = 0.875 * self.srtt[i] + 0.125 * rtt.ps() as f64;
                self.ecn[i] = 0.875 * self.ecn[i] + if marked { 0.125 } else { 0.0 };
            }
            PathAlgo::Mprdma => self.acked_paths.push_back(ev % self.n),
            _ => {}
        }
    }

    /// The path for the next packet; `avoid` is the path a retransmitted packet was
    /// lost on.
    pub fn choose(&mut self, rng: &mut Rng, avoid: Option<u32>) -> u32 {
        let pick = match self.algo {
            PathAlgo::Single => self.single,
            PathAlgo::Rr => {
                let p = self.next;
                self.next = (self.next + 1) % self.n;
                p
            }
            PathAlgo::Obs => rng.below(self.n as u64) as u32,
            PathAlgo::Mprdma => match self.acked_paths.pop_front() {
                Some(p) => p,
                None => rng.below(self.n as u64) as u32,
            },
            PathAlgo::BestRtt => {
                let mut best = self.next as usize;
                for i in Self::scan(self.n, self.next) {
                    if self.srtt[i] < self.srtt[best] {
                        best = i;
                    }
                }
                best as u32
            }
            PathAlgo::Dwrr => {
                let mut total = 0.0;
                let mut best = self.next as usize;
                for i in Self::scan(self.n, self.next) {
                    let w = ((1.0 - self.ecn[i]) * self.base_rtt / self.srtt[i].max(self.base_rtt)).max(0.01);
                    self.current[i] += w;
                    total += w;
                    if self.current[i] > self.current[best] {
                        best = i;
                    }
                }
                self.current[best] -= total;
                best as u32
            }
        };
        match avoid {
            Some(a) if a == pick && self.n > 1 => (pick + 1 + rng.below(self.n as u64 - 1) as u32) % self.n,
            _ => pick,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sel(a: PathAlgo) -> (PathSelector, Rng) {
        let mut rng = Rng::new(4);
        (PathSelector::new(a, 8, Dur::from_us(10), &mut rng), rng)
    }

    #[test]
    fn round_robin_covers_every_path_once_per_round() {
        let (mut s, mut r) = sel(PathAlgo::Rr);
        let mut seen: Vec<u32> = (0..8).map(|_| s.choose(&mut r, None)).collect();
        seen.sort();
        assert_eq!(seen, (0..8).collect::<Vec<_>>());
    }

    #[test]
    fn best_rtt_herds_onto_the_fastest_path() {
        let (mut s, mut r) = sel(PathAlgo::BestRtt);
        for ev in 0..8 {
            s.on_ack(ev, Dur::from_us(if ev == 5 { 10 } else { 30 }), false);
        }
        assert!((0..20).all(|_| s.choose(&mut r, None) == 5));
    }

    #[test]
    fn dwrr_shifts_weight_away_from_marked_paths() {
        let (mut s, mut r) = sel(PathAlgo::Dwrr);
        for _ in 0..50 {
            s.on_ack(2, Dur::from_us(10), true);
        }
        let picks: Vec<u32> = (0..800).map(|_| s.choose(&mut r, None)).collect();
        let on2 = picks.iter().filter(|&&p| p == 2).count();
        assert!(on2 < 30, "marked path still got {on2} of 800");
    }

    #[test]
    fn connections_without_feedback_start_on_different_paths() {
        // Under SRv6 an EV is the same path for every connection: starting all of them
        // on EV 0 would put a whole permutation's first packets on one spine.
        for algo in [PathAlgo::BestRtt, PathAlgo::Dwrr] {
            let firsts: std::collections::BTreeSet<u32> = (0..32)
                .map(|seed| {
                    let mut rng = Rng::new(seed);
                    let mut s = PathSelector::new(algo, 8, Dur::from_us(10), &mut rng);
                    s.choose(&mut rng, None)
                })
                .collect();
            assert!(firsts.len() >= 6, "{algo:?}: 32 connections started on only {firsts:?}");
        }
    }

    #[test]
    fn dwrr_with_equal_weights_is_a_round_robin_from_the_random_start() {
        let (mut s, mut r) = sel(PathAlgo::Dwrr);
        let picks: Vec<u32> = (0..16).map(|_| s.choose(&mut r, None)).collect();
        let start = picks[0];
        assert!(picks.iter().enumerate().all(|(k, &p)| p == (start + k as u32) % 8), "{picks:?}");
    }

    #[test]
    fn mprdma_sends_each_packet_on_the_path_of_an_ack_in_arrival_order() {
        // ACK-clocked path reuse: every ACK hands its path to the next packet, first
        // come first served; with no ACK waiting the packet takes a random path.
        let (mut s, mut r) = sel(PathAlgo::Mprdma);
        let acked = [3u32, 5, 3, 7, 0, 6, 6, 1, 4, 2, 13];
        for &ev in &acked {
            s.on_ack(ev, Dur::from_us(10), false);
        }
        let picks: Vec<u32> = (0..acked.len()).map(|_| s.choose(&mut r, None)).collect();
        assert_eq!(picks, acked.iter().map(|ev| ev % 8).collect::<Vec<_>>());
        let fresh: std::collections::BTreeSet<u32> = (0..64).map(|_| s.choose(&mut r, None)).collect();
        assert!(fresh.len() >= 6, "without ACKs the paths should be random: {fresh:?}");
    }

    #[test]
    fn a_retransmission_never_reuses_the_lost_path() {
        let (mut s, mut r) = sel(PathAlgo::Single);
        let p = s.choose(&mut r, None);
        assert!((0..50).all(|_| s.choose(&mut r, Some(p)) != p));
    }
}
