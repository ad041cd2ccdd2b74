//! Units in scenario files: rates (`"100Gbps"`), durations (`"250us"`) and sizes
//! (`"8MB"` = 8·10^6 bytes, `"8MiB"` = 8·2^20 bytes).

use crate::quoted;
use fabricsim_engine::{Dur, Rate};

const RATE_UNITS: &[(&str, f64)] = &[("bps", 1.0), ("kbps", 1e3), ("mbps", 1e6), ("gbps", 1e9), ("tbps", 1e12)];
const DUR_UNITS: &[(&str, f64)] = &[("ps", 1.0), ("ns", 1e3), ("us", 1e6), ("ms", 1e9), ("s", 1e12)];
const SIZE_UNITS: &[(&str, f64)] = &[
    ("b", 1.0),
    ("kb", 1e3),
    ("mb", 1e6),
    ("gb", 1e9),
    ("tb", 1e12),
    ("kib", 1024.0),
    ("mib", 1048576.0),
    ("gib", 1073741824.0),
    ("tib", 1099511627776.0),
];

/// Splits `"12.5Gbps"` into `12.5` and `"Gbps"`, the unit as written.
fn split(s: &str) -> Option<(f64, &str)> {
    let s = s.trim();
    let at = s.find(|c: char| c.is_alphabetic())?;
    let (num, unit) = s.split_at(at);
    let num = num.trim();
    if num.is_empty() || num.starts_with('-') || num.starts_with('+') {
        return None;
    }
    Some((num.parse().ok()?, unit.trim()))
}

/// `v` scaled by the factor of `unit` (matched without regard to case), if it is one
/// of `units` and the result is a finite non-negative value that fits in 64 bits.
fn scaled(v: f64, unit: &str, units: &[(&str, f64)]) -> Option<f64> {
    let unit = unit.to_ascii_lowercase();
    let x = v * units.iter().find(|(u, _)| *u == unit)?.1;
    (x.is_finite() && (0.0..1.8e19).contains(&x)).then_some(x)
}

/// Parses a rate such as `"100Gbps"`. The prefix may be in either case; the `bps`
/// must be lower case, since `"GBps"` usually means gigabytes per second.
pub fn parse_rate(s: &str) -> Result<Rate, String> {
    let bad = || {
        format!("expected a positive rate such as \"100Gbps\" (units: bps, Kbps, Mbps, Gbps, Tbps), got {}", quoted(s))
    };
    let (v, unit) = split(s).ok_or_else(bad)?;
    let x = scaled(v, unit, RATE_UNITS).filter(|&x| x >= 1.0).ok_or_else(bad)?;
    if !unit.ends_with("bps") {
        return Err(format!(
            "expected a rate in bits per second (units: bps, Kbps, Mbps, Gbps, Tbps), got {}: a capital B reads as bytes",
            quoted(s)
        ));
    }
    Ok(Rate(x.round() as u64))
}

/// The longest duration a scenario may give: 10^6 s (about 11.6 days). Virtual time is
/// 64-bit picoseconds (about 213 days), so starts, offsets and fault times added
/// together stay far inside it.
pub const MAX_DURATION: Dur = Dur(1_000_000 * 1_000_000_000_000);

/// Parses a duration such as `"1us"` (also `"1µs"`), at most [`MAX_DURATION`].
pub fn parse_duration(s: &str) -> Result<Dur, String> {
    let bad = || format!("expected a duration such as \"1us\" (units: ps, ns, us, ms, s), got {}", quoted(s));
    let (v, unit) = split(s).ok_or_else(bad)?;
    // The micro sign and the Greek mu both read as "u".
    let unit = unit.replace(['\u{b5}', '\u{3bc}'], "u");
    let x = scaled(v, &unit, DUR_UNITS).ok_or_else(bad)?;
    if x > MAX_DURATION.ps() as f64 {
        return Err(format!("must be at most 1000000s (about 11.6 days of simulated time), got {}", quoted(s)));
    }
    if x > 0.0 && x < 0.5 {
        // It would round to 0, which means something else (off, no delay).
        return Err(format!("must be 0 or at least 1ps (the simulator's resolution), got {}", quoted(s)));
    }
    Ok(Dur(x.round() as u64))
}

/// Parses a size such as `"8MB"` (decimal) or `"8MiB"` (binary). The prefix may be in
/// either case; the `B` must be a capital, since `"8Mb"` usually means megabits.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let bad = || {
        format!("expected a size such as \"8MB\" or \"4KiB\" (units: B, KB, MB, GB, KiB, MiB, GiB), got {}", quoted(s))
    };
    let (v, unit) = split(s).ok_or_else(bad)?;
    let x = scaled(v, unit, SIZE_UNITS).ok_or_else(bad)?;
    if !unit.ends_with('B') {
        return Err(format!(
            "expected a size in bytes (units: B, KB, MB, GB, KiB, MiB, GiB), got {}: a lower-case b reads as bits",
            quoted(s)
        ));
    }
    // Decimal units make binary fractions: 1.1MB is 1100000.0000000002 here, 17.1GB
    // 17100000000.000002 (a float's step there is 4e-6).
    if (x - x.round()).abs() > 1e-6f64.max(x * 1e-12) {
        return Err(format!("expected a whole number of bytes, got {} = {x} bytes", quoted(s)));
    }
    Ok(x.round() as u64)
}

/// Formats bytes the way scenario files write them (for documentation).
pub fn fmt_size(b: u64) -> String {
    for (unit, f) in [("GB", 1_000_000_000u64), ("MB", 1_000_000), ("KB", 1_000)] {
        if b >= f && b.is_multiple_of(f) {
            return format!("{}{unit}", b / f);
        }
    }
    format!("{b}B")
}

/// Bytes this process can still allocate: the smaller of the kernel's estimate of
/// available memory and the room left under its address-space limit (`ulimit -v`).
/// `None` where `/proc` does not say (not Linux).
pub fn available_memory() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kb = |text: &str, key: &str| -> Option<u64> {
        let line = text.lines().find(|l| l.starts_with(key))?;
        line.split_whitespace().nth(1)?.parse::<u64>().ok().map(|k| k * 1024)
    };
    let mut avail = kb(&meminfo, "MemAvailable:")?;
    let limits = std::fs::read_to_string("/proc/self/limits").unwrap_or_default();
    let limit = limits
        .lines()
        .find(|l| l.starts_with("Max address space"))
        .and_then(|l| l.split_whitespace().nth(3))
        .and_then(|v| v.parse::<u64>().ok());
    if let Some(limit) = limit {
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        let used = kb(&status, "VmSize:").unwrap_or(0);
        avail = avail.min(limit.saturating_sub(used));
    }
    Some(avail)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_durations_and_sizes_parse_with_their_units() {
        assert_eq!(parse_rate("100Gbps").unwrap(), Rate::gbps(100));
        assert_eq!(parse_rate("12.5Gbps").unwrap(), Rate(12_500_000_000));
        assert_eq!(parse_rate("400 Mbps").unwrap(), Rate::mbps(400));
        assert_eq!(parse_duration("1us").unwrap(), Dur::from_us(1));
        assert_eq!(parse_duration("2.5ms").unwrap(), Dur(2_500_000_000));
        assert_eq!(parse_duration("0ns").unwrap(), Dur::ZERO);
        assert_eq!(parse_size("8MB").unwrap(), 8_000_000);
        assert_eq!(parse_size("8MiB").unwrap(), 8 << 20);
        assert_eq!(parse_size("4096B").unwrap(), 4096);
        assert_eq!(parse_size("1.5KB").unwrap(), 1500);
        // Whole byte counts whose decimal is not exact in binary (a review found these
        // refused by an absolute tolerance); a fraction of a byte is refused.
        assert_eq!(parse_size("1.1MB").unwrap(), 1_100_000);
        assert_eq!(parse_size("17.1GB").unwrap(), 17_100_000_000);
        assert_eq!(parse_size("33.3GB").unwrap(), 33_300_000_000);
        assert!(parse_size("1.0005KB").unwrap_err().contains("whole number of bytes"));
    }

    #[test]
    fn nonsense_is_refused_with_the_allowed_units() {
        let e = parse_rate("fast").unwrap_err();
        assert!(e.contains("Gbps") && e.contains("\"fast\""), "{e}");
        assert!(parse_rate("-5Gbps").is_err());
        assert!(parse_rate("0Gbps").is_err());
        assert!(parse_rate("100").is_err());
        assert!(parse_duration("1 fortnight").is_err());
        // Sums of a few durations (a start plus an offset) must stay in 64-bit ps.
        assert_eq!(parse_duration("1000000s").unwrap(), MAX_DURATION);
        assert!(parse_duration("1000001s").unwrap_err().contains("at most 1000000s"));
        // Below the resolution a duration would silently become 0 (off, no delay).
        assert!(parse_duration("0.4ps").unwrap_err().contains("at least 1ps"));
        assert_eq!(parse_duration("0.6ps").unwrap(), Dur(1));
        assert!(parse_size("-8MB").is_err());
        assert!(parse_size("8XB").is_err());
        assert!(parse_size("MB").is_err());
    }

    #[test]
    fn bits_and_bytes_are_told_apart_by_the_case_of_b() {
        // Prefixes in either case; the b of bits and the B of bytes must be right.
        assert_eq!(parse_rate("100gbps").unwrap(), Rate::gbps(100));
        assert_eq!(parse_rate("10kbps").unwrap(), Rate(10_000));
        assert_eq!(parse_size("8mB").unwrap(), 8_000_000);
        assert_eq!(parse_size("4kiB").unwrap(), 4096);
        for s in ["100GBps", "100GBPS", "100Gbps/8B"] {
            assert!(parse_rate(s).is_err(), "{s}");
        }
        assert!(parse_rate("100GBps").unwrap_err().contains("bytes"));
        for s in ["1Mb", "8mb", "4KiB ", "4Kib"] {
            assert_eq!(parse_size(s).is_err(), s.trim_end().ends_with('b'), "{s}");
        }
        assert!(parse_size("1Mb").unwrap_err().contains("bits"));
        assert_eq!(parse_duration("3µs").unwrap(), Dur::from_us(3));
        assert_eq!(parse_duration("3\u{3bc}s").unwrap(), Dur::from_us(3));
        assert_eq!(parse_duration("2MS").unwrap(), Dur::from_ms(2));
    }

    #[test]
    fn sizes_print_in_scenario_units() {
        assert_eq!(fmt_size(8_000_000), "8MB");
        assert_eq!(fmt_size(4096), "4096B");
    }
}
