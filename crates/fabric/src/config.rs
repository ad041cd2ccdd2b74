//! Switch behaviour knobs, filled in by the scenario layer.
//!
//! Defaults follow the DCQCN/HPCC ns-3 models where they exist and are documented on
//! each field; the scenario layer documents the same values to users.

use fabricsim_engine::Dur;

/// ECN marking with RED on a port's data queue.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EcnConfig {
    /// Below this many queued bytes nothing is marked.
    pub kmin: u64,
    /// At or above this many queued bytes every ECN-capable packet is marked.
    pub kmax: u64,
    /// Marking probability just below `kmax` (linear from 0 at `kmin`).
    pub pmax: f64,
    /// Whether switch ports facing hosts mark too. MRC turns this off: the last hop's
    /// congestion is the receiver's incast, which path choice cannot fix.
    pub last_hop: bool,
    /// Whether `kmin`/`kmax` are per 25 Gb/s of port rate (scaled for each port), as in
    /// the HPCC ns-3 configuration, rather than absolute.
    pub per_25g: bool,
}

impl EcnConfig {
    /// The HPCC ns-3 defaults: 100 KB / 400 KB per 25 Gb/s, pmax 0.2, on every hop.
    pub fn hpcc() -> EcnConfig {
        EcnConfig { kmin: 100_000, kmax: 400_000, pmax: 0.2, last_hop: true, per_25g: true }
    }

    /// `(kmin, kmax)` in bytes for a port of `rate_bps`.
    pub fn thresholds(&self, rate_bps: u64) -> (u64, u64) {
        if self.per_25g {
            let scale = |k: u64| (k as u128 * rate_bps as u128 / 25_000_000_000u128) as u64;
            (scale(self.kmin), scale(self.kmax))
        } else {
            (self.kmin, self.kmax)
        }
    }

    /// Marking probability for a queue of `q` bytes with thresholds `(kmin, kmax)`.
    #[inline]
    pub fn probability(&self, (kmin, kmax): (u64, u64), q: u64) -> f64 {
        if q < kmin {
            0.0
        } else if q >= kmax {
            1.0
        } else {
            self.pmax * (q - kmin) as f64 / (kmax - kmin) as f64
        }
    }
}

/// Priority flow control (IEEE 802.1Qbb) on the data class.
///
/// Each switch counts, per ingress port, the bytes that arrived through it and are
/// still buffered. Crossing `xoff` sends PAUSE upstream; falling to `xon` sends
/// RESUME. The threshold is dynamic, as in the HPCC ns-3 model and Broadcom's
/// shared-buffer MMUs: `xoff = max(min_xoff, free_shared_buffer * alpha)`, where the
/// free shared buffer excludes the headroom every port reserves for the bytes still in
/// flight when the upstream port stops.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PfcConfig {
    /// Fraction of the free shared buffer one ingress port may hold before pausing.
    pub alpha: f64,
    /// Lower bound of the XOFF threshold in bytes.
    pub min_xoff: u64,
    /// Hysteresis: RESUME once the ingress bytes fall this far below XOFF.
    pub xon_delta: u64,
}

/// Packet trimming: instead of dropping a data packet, cut its payload and forward the
/// headers in the control class.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TrimConfig {
    /// Trim once the egress data queue holds this many bytes (a packet that would not
    /// fit the buffer is trimmed regardless).
    pub threshold: u64,
}

/// How switches choose among equal-cost next hops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Routing {
    /// Hash the 5-tuple (source/destination host, UDP ports, protocol) with a
    /// per-switch seed.
    Ecmp,
    /// SRv6 uSID source routing: the sender's entropy value selects the path, encoded
    /// in the destination address; switches shift and look up.
    Srv6,
}

/// Behaviour of every switch in a fabric.
#[derive(Clone, Debug, PartialEq)]
pub struct FabricConfig {
    /// Shared buffer per switch, bytes.
    pub buffer: u64,
    /// ECN marking, if enabled.
    pub ecn: Option<EcnConfig>,
    /// PFC, if enabled (lossless data class); otherwise the fabric drops when full.
    pub pfc: Option<PfcConfig>,
    /// Trimming, if enabled.
    pub trim: Option<TrimConfig>,
    /// Dynamic-threshold factor for lossy admission: a port's data queue may hold at
    /// most `alpha * free_buffer` bytes (Choudhury-Hahne dynamic thresholds).
    pub drop_alpha: f64,
    /// Probability that any frame is lost on any link (random loss).
    pub link_loss: f64,
    /// Forwarding mode.
    pub routing: Routing,
    /// Seed for the per-switch ECMP hash seeds.
    pub seed: u64,
    /// Whether every switch port schedules an event per departure even without PFC
    /// (off: such ports depart lazily, see "Lazy departures" in [`crate::fabric`]).
    /// The two agree up to the order of simultaneous events; this is the reference
    /// the tests hold the faster lazy ports to.
    pub eager_departures: bool,
}

impl Default for FabricConfig {
    fn default() -> Self {
        FabricConfig {
            buffer: 32_000_000,
            ecn: None,
            pfc: Some(PfcConfig::default()),
            trim: None,
            drop_alpha: 1.0,
            link_loss: 0.0,
            routing: Routing::Ecmp,
            seed: 0,
            eager_departures: false,
        }
    }
}

impl Default for PfcConfig {
    fn default() -> Self {
        // HPCC's ns-3 model pauses at free_buffer >> 3; the floor keeps a few MTUs of
        // room when the buffer is nearly full so the class is not paused on every frame.
        PfcConfig { alpha: 1.0 / 8.0, min_xoff: 20_000, xon_delta: 10_000 }
    }
}

/// Bytes a port must reserve to absorb what arrives after it sends PAUSE: two
/// propagation delays of data at `rate` plus a maximum frame in each direction.
pub fn pfc_headroom(rate_bps: u64, delay: Dur, max_frame: u64) -> u64 {
    let rtt_bytes = (rate_bps as u128 * 2 * delay.ps() as u128 / 8_000_000_000_000u128) as u64;
    rtt_bytes + 2 * max_frame
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn red_probability_is_linear_between_thresholds() {
        let e = EcnConfig { kmin: 100, kmax: 300, pmax: 0.2, last_hop: true, per_25g: false };
        let k = e.thresholds(100_000_000_000);
        assert_eq!(e.probability(k, 99), 0.0);
        assert_eq!(e.probability(k, 100), 0.0);
        assert!((e.probability(k, 200) - 0.1).abs() < 1e-12);
        assert_eq!(e.probability(k, 300), 1.0);
    }

    #[test]
    fn hpcc_thresholds_scale_with_port_rate() {
        assert_eq!(EcnConfig::hpcc().thresholds(100_000_000_000), (400_000, 1_600_000));
        assert_eq!(EcnConfig::hpcc().thresholds(25_000_000_000), (100_000, 400_000));
    }

    #[test]
    fn headroom_covers_a_round_trip_of_bytes() {
        // 100 Gb/s, 1 us each way: 25 KB in flight plus two 4 KB frames.
        assert_eq!(pfc_headroom(100_000_000_000, Dur::from_us(1), 4_200), 25_000 + 8_400);
    }
}
