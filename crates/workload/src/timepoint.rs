//! Times that depend on messages: the algebra jobs and traces are written in.
//!
//! A [`TimePoint`] is `max(at, max_i(received(m_i) + gap_i))`: "50 us after the job
//! starts, and 2 ms of compute after rank 3 received its last all-reduce chunk". Adding
//! a duration shifts every term, and the latest of two points merges their terms, so a
//! rank's timeline (compute, then a collective it waits for, then more compute) folds
//! into one point per event without any compute task existing in the run: a message
//! that starts at a point becomes a [`MessageSpec`](crate::MessageSpec) with `start =
//! at`, `deps = m_i` and `after = gap_i`, and the run releases it exactly then.

use fabricsim_engine::{Dur, Time};

/// The latest of a fixed time and some message receipts plus gaps.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TimePoint {
    /// The fixed part, from the run's start.
    pub at: Dur,
    /// `(message, gap)`: the message received plus the gap; sorted by message, each
    /// message once (with its largest gap).
    pub after: Vec<(u32, Dur)>,
}

impl TimePoint {
    /// A fixed time.
    pub fn at(at: Dur) -> TimePoint {
        TimePoint { at, after: Vec::new() }
    }

    /// The receipt of the last of `messages` (at once).
    pub fn received(messages: &[u32]) -> TimePoint {
        let mut after: Vec<(u32, Dur)> = messages.iter().map(|&m| (m, Dur::ZERO)).collect();
        after.sort_unstable();
        after.dedup_by_key(|e| e.0);
        TimePoint { at: Dur::ZERO, after }
    }

    /// This point `d` later.
    pub fn plus(&self, d: Dur) -> TimePoint {
        TimePoint { at: self.at + d, after: self.after.iter().map(|&(m, g)| (m, g + d)).collect() }
    }

    /// Makes this the latest of itself and `o`.
    pub fn merge(&mut self, o: &TimePoint) {
        self.at = self.at.max(o.at);
        if o.after.is_empty() {
            return;
        }
        let mut out = Vec::with_capacity(self.after.len() + o.after.len());
        let (mut i, mut j) = (0, 0);
        while i < self.after.len() || j < o.after.len() {
            match (self.after.get(i), o.after.get(j)) {
                (Some(&a), Some(&b)) if a.0 == b.0 => {
                    out.push((a.0, a.1.max(b.1)));
                    i += 1;
                    j += 1;
                }
                (Some(&a), Some(&b)) if a.0 < b.0 => {
                    out.push(a);
                    i += 1;
                }
                (Some(&a), None) => {
                    out.push(a);
                    i += 1;
                }
                (_, Some(&b)) => {
                    out.push(b);
                    j += 1;
                }
                (None, None) => unreachable!("the loop condition"),
            }
        }
        self.after = out;
    }

    /// The latest of both.
    pub fn max(mut self, o: &TimePoint) -> TimePoint {
        self.merge(o);
        self
    }

    /// When the point is reached, given each message's receipt time (`None`: never
    /// received, and then neither is the point).
    pub fn eval(&self, received: impl Fn(u32) -> Option<Time>) -> Option<Time> {
        let mut t = Time::ZERO + self.at;
        for &(m, g) in &self.after {
            t = t.max(received(m)? + g);
        }
        Some(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merging_keeps_each_message_once_with_its_largest_gap() {
        let mut a = TimePoint::received(&[3, 1]).plus(Dur::from_us(2));
        let b = TimePoint { at: Dur::from_us(7), after: vec![(1, Dur::from_us(5)), (2, Dur::ZERO)] };
        a.merge(&b);
        assert_eq!(a.at, Dur::from_us(7));
        assert_eq!(a.after, vec![(1, Dur::from_us(5)), (2, Dur::ZERO), (3, Dur::from_us(2))]);
    }

    #[test]
    fn a_point_is_reached_at_its_latest_term_or_never() {
        let p = TimePoint { at: Dur::from_us(10), after: vec![(0, Dur::from_us(4)), (1, Dur::ZERO)] };
        let t = |us: u64| Some(Time::ZERO + Dur::from_us(us));
        assert_eq!(p.eval(|m| if m == 0 { t(3) } else { t(5) }), t(10));
        assert_eq!(p.eval(|m| if m == 0 { t(9) } else { t(5) }), t(13));
        assert_eq!(p.eval(|m| if m == 0 { t(9) } else { None }), None);
    }
}
