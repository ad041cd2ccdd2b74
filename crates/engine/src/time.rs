//! Integer virtual time in picoseconds, durations and link rates.
//!
//! Picoseconds make the serialization time of any byte count at any common link rate
//! (10G..1.6T) exact or off by under a picosecond, and a `u64` still spans 213 days.

use std::fmt;
use std::ops::{Add, AddAssign, Sub};

/// A point in virtual time, in picoseconds since the start of the run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Time(pub u64);

/// A span of virtual time, in picoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Dur(pub u64);

impl Time {
    /// The start of every run.
    pub const ZERO: Time = Time(0);
    /// Later than any event a run can schedule.
    pub const MAX: Time = Time(u64::MAX);

    /// Picoseconds since the start.
    pub const fn ps(self) -> u64 {
        self.0
    }
    /// Whole nanoseconds since the start (truncated).
    pub const fn as_ns(self) -> u64 {
        self.0 / 1_000
    }
    /// Time elapsed since `earlier`, zero if `earlier` is later.
    pub fn since(self, earlier: Time) -> Dur {
        Dur(self.0.saturating_sub(earlier.0))
    }
}

impl Dur {
    /// No time at all.
    pub const ZERO: Dur = Dur(0);
    /// A span longer than any run.
    pub const MAX: Dur = Dur(u64::MAX);

    /// `n` picoseconds.
    pub const fn from_ps(n: u64) -> Dur {
        Dur(n)
    }
    /// `n` nanoseconds.
    pub const fn from_ns(n: u64) -> Dur {
        Dur(n * 1_000)
    }
    /// `n` microseconds.
    pub const fn from_us(n: u64) -> Dur {
        Dur(n * 1_000_000)
    }
    /// `n` milliseconds.
    pub const fn from_ms(n: u64) -> Dur {
        Dur(n * 1_000_000_000)
    }
    /// Picoseconds in this span.
    pub const fn ps(self) -> u64 {
        self.0
    }
    /// Whole nanoseconds in this span (truncated).
    pub const fn as_ns(self) -> u64 {
        self.0 / 1_000
    }
    /// This span in seconds, for reporting only.
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 * 1e-12
    }
    /// This span multiplied by `k`, saturating. (A method, not `Mul<u64>`: durations
    /// scale by counts, and saturating is not what `*` promises.)
    #[allow(clippy::should_implement_trait)]
    pub fn mul(self, k: u64) -> Dur {
        Dur(self.0.saturating_mul(k))
    }
}

impl Add<Dur> for Time {
    type Output = Time;
    fn add(self, d: Dur) -> Time {
        Time(self.0.saturating_add(d.0))
    }
}
impl AddAssign<Dur> for Time {
    fn add_assign(&mut self, d: Dur) {
        self.0 = self.0.saturating_add(d.0);
    }
}
impl Sub<Time> for Time {
    type Output = Dur;
    fn sub(self, rhs: Time) -> Dur {
        Dur(self.0 - rhs.0)
    }
}
impl Add for Dur {
    type Output = Dur;
    fn add(self, d: Dur) -> Dur {
        Dur(self.0.saturating_add(d.0))
    }
}
impl AddAssign for Dur {
    fn add_assign(&mut self, d: Dur) {
        self.0 = self.0.saturating_add(d.0);
    }
}
impl Sub for Dur {
    type Output = Dur;
    fn sub(self, d: Dur) -> Dur {
        Dur(self.0.saturating_sub(d.0))
    }
}

impl fmt::Display for Time {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&Dur(self.0), f)
    }
}
impl fmt::Display for Dur {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ps = self.0;
        if ps.is_multiple_of(1_000_000_000) && ps != 0 {
            write!(f, "{}ms", ps / 1_000_000_000)
        } else if ps.is_multiple_of(1_000_000) && ps != 0 {
            write!(f, "{}us", ps / 1_000_000)
        } else if ps.is_multiple_of(1_000) {
            write!(f, "{}ns", ps / 1_000)
        } else {
            write!(f, "{}ps", ps)
        }
    }
}

/// A link or sending rate in bits per second.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Rate(pub u64);

impl Rate {
    /// `n` gigabits per second.
    pub const fn gbps(n: u64) -> Rate {
        Rate(n * 1_000_000_000)
    }
    /// `n` megabits per second.
    pub const fn mbps(n: u64) -> Rate {
        Rate(n * 1_000_000)
    }
    /// Bits per second.
    pub const fn bps(self) -> u64 {
        self.0
    }
    /// Time to serialize `bytes` at this rate, rounded up to the next picosecond so a
    /// port is never considered free before its last bit left.
    ///
    /// A zero rate never finishes: it returns [`Dur::MAX`].
    #[inline]
    pub fn tx_time(self, bytes: u64) -> Dur {
        if self.0 == 0 {
            return Dur::MAX;
        }
        // Frames (under 2 MiB) fit 64-bit arithmetic, far cheaper than 128-bit division.
        if bytes < (1 << 21) {
            return Dur((bytes * 8_000_000_000_000).div_ceil(self.0));
        }
        let bits_ps = bytes as u128 * 8 * 1_000_000_000_000u128;
        Dur(bits_ps.div_ceil(self.0 as u128).min(u64::MAX as u128) as u64)
    }
    /// Bytes this rate moves in `d` (truncated).
    pub fn bytes_in(self, d: Dur) -> u64 {
        (self.0 as u128 * d.0 as u128 / 8_000_000_000_000u128) as u64
    }
    /// This rate scaled by `f` (clamped to be non-negative), for congestion control.
    pub fn scale(self, f: f64) -> Rate {
        Rate((self.0 as f64 * f.max(0.0)) as u64)
    }
    /// Gigabits per second, for reporting only.
    pub fn as_gbps(self) -> f64 {
        self.0 as f64 * 1e-9
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        if b.is_multiple_of(1_000_000_000) && b != 0 {
            write!(f, "{}Gbps", b / 1_000_000_000)
        } else if b.is_multiple_of(1_000_000) && b != 0 {
            write!(f, "{}Mbps", b / 1_000_000)
        } else {
            write!(f, "{}bps", b)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serialization_time_is_exact_at_common_rates() {
        assert_eq!(Rate::gbps(100).tx_time(4096), Dur(327_680));
        assert_eq!(Rate::gbps(400).tx_time(1500), Dur(30_000));
        assert_eq!(Rate::gbps(800).tx_time(64), Dur(640));
        // 1 byte at 3 Gb/s is 2666.67 ps: rounded up, never down.
        assert_eq!(Rate::gbps(3).tx_time(1), Dur(2_667));
    }

    #[test]
    fn the_fast_and_wide_paths_agree() {
        for r in [Rate::gbps(100), Rate::gbps(3), Rate(12_345_678_901)] {
            for b in [(1u64 << 21) - 1, 1 << 21] {
                let wide = (b as u128 * 8_000_000_000_000).div_ceil(r.0 as u128) as u64;
                assert_eq!(r.tx_time(b).0, wide);
            }
        }
    }

    #[test]
    fn bytes_in_inverts_tx_time() {
        let r = Rate::gbps(100);
        assert_eq!(r.bytes_in(r.tx_time(1_000_000)), 1_000_000);
        assert_eq!(r.bytes_in(Dur::from_us(1)), 12_500);
    }

    #[test]
    fn durations_print_in_the_largest_exact_unit() {
        assert_eq!(Dur::from_us(250).to_string(), "250us");
        assert_eq!(Dur::from_ms(2).to_string(), "2ms");
        assert_eq!(Dur(1500).to_string(), "1500ps");
        assert_eq!(Rate::gbps(100).to_string(), "100Gbps");
    }

    #[test]
    fn time_arithmetic_saturates_instead_of_wrapping() {
        assert_eq!(Time::MAX + Dur(5), Time::MAX);
        assert_eq!(Time(5).since(Time(9)), Dur::ZERO);
    }
}
