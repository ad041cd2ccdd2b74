//! A deadline table indexed by a small enum, after quinn-proto's `TimerTable`.
//!
//! An endpoint keeps one optional deadline per timer kind; the host only ever asks
//! for the earliest one.

use fabricsim_engine::Time;

/// Deadlines for `N` timer kinds, indexed by `usize` (an enum cast).
#[derive(Clone, Copy, Debug)]
pub struct Timers<const N: usize> {
    at: [Option<Time>; N],
}

impl<const N: usize> Default for Timers<N> {
    fn default() -> Self {
        Timers { at: [None; N] }
    }
}

impl<const N: usize> Timers<N> {
    /// Arms timer `k` for `t` (replacing its previous deadline).
    #[inline]
    pub fn set(&mut self, k: usize, t: Time) {
        self.at[k] = Some(t);
    }
    /// Disarms timer `k`.
    #[inline]
    pub fn stop(&mut self, k: usize) {
        self.at[k] = None;
    }
    /// The deadline of timer `k`.
    #[inline]
    pub fn get(&self, k: usize) -> Option<Time> {
        self.at[k]
    }
    /// Whether timer `k` is armed and due at `now`; if so it is disarmed.
    #[inline]
    pub fn expired(&mut self, k: usize, now: Time) -> bool {
        match self.at[k] {
            Some(t) if t <= now => {
                self.at[k] = None;
                true
            }
            _ => false,
        }
    }
    /// The earliest armed deadline.
    #[inline]
    pub fn next(&self) -> Option<Time> {
        self.at.iter().flatten().min().copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn earliest_deadline_wins_and_expiry_disarms() {
        let mut t = Timers::<3>::default();
        assert_eq!(t.next(), None);
        t.set(0, Time(50));
        t.set(2, Time(20));
        assert_eq!(t.next(), Some(Time(20)));
        assert!(!t.expired(0, Time(20)));
        assert!(t.expired(2, Time(20)));
        assert_eq!(t.next(), Some(Time(50)));
        t.stop(0);
        assert_eq!(t.next(), None);
    }
}
