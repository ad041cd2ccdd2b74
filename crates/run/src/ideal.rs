//! The ideal completion time of a message on an empty fabric.
//!
//! Store-and-forward makes this more than "serialization plus latency": a short last
//! frame queues behind the full frame ahead of it at every hop whose serialization of
//! that frame is longer than the gap between them. The exact answer is the tandem
//! recurrence over frames `j` and hops `i`:
//!
//! ```text
//! depart[i][j] = max(arrive[i][j], depart[i][j-1]) + ser_i(frame_j)
//! arrive[i+1][j] = depart[i][j] + delay_i          (arrive[0][j] = 0: all posted at once)
//! ```
//!
//! and the message is complete when its last frame arrives after the last hop. A long
//! message's identical middle frames settle into a period after a handful of frames;
//! the computation simulates a head and a tail and jumps over the middle.

use fabricsim_engine::{Dur, Rate, Time};

const HEAD: u64 = 32;

/// Ideal completion time of `n` frames whose wire sizes `frame(j)` are sent back to
/// back over `hops` (`(rate, delay)` of each egress port, source NIC first). Beyond the
/// first frames sizes must not grow: a long run of equal frames is jumped over.
pub fn ideal_fct(hops: &[(Rate, Dur)], n: u64, frame: impl Fn(u64) -> u64) -> Dur {
    let mut depart = vec![Time::ZERO; hops.len()];
    let mut arrive_last = Time::ZERO;
    let step = |j: u64, depart: &mut Vec<Time>| {
        let mut arrive = Time::ZERO;
        let size = frame(j);
        for (i, &(rate, delay)) in hops.iter().enumerate() {
            let start = if j == 0 { arrive } else { arrive.max(depart[i]) };
            depart[i] = start + rate.tx_time(size);
            arrive = depart[i] + delay;
        }
        arrive
    };
    // The jump below needs identical middle frames, settled for a while: frames in
    // decreasing size, as callers give them, are identical from the first `u` whose
    // size is the one before the tail's (a QP-Scaling message's first frames are its
    // parts' larger first ones).
    let mut head = HEAD;
    if n > 2 * HEAD + 2 {
        let middle = frame(n - HEAD - 1);
        let mut u = 0;
        while u < n - HEAD - 1 && frame(u) != middle {
            u += 1;
        }
        // (A single message's first frame alone differs, by its RETH: 32 frames settle it.)
        head = if u <= 1 { HEAD } else { u + HEAD };
    }
    if n <= head + HEAD + 2 {
        for j in 0..n {
            arrive_last = step(j, &mut depart);
        }
        return arrive_last - Time::ZERO;
    }
    for j in 0..head {
        step(j, &mut depart);
    }
    let before = depart.clone();
    step(head, &mut depart);
    // Identical middle frames: every hop now departs one period later per frame.
    let period: Vec<Dur> = depart.iter().zip(&before).map(|(a, b)| *a - *b).collect();
    let skip = n - head - HEAD - 1;
    for (d, p) in depart.iter_mut().zip(&period) {
        *d += p.mul(skip);
    }
    for j in n - HEAD..n {
        arrive_last = step(j, &mut depart);
    }
    arrive_last - Time::ZERO
}

/// The ideal completion time by the convention of the HPCC ns-3 simulator and the
/// papers built on it, which count a message complete when its sender has the last
/// acknowledgement: the unloaded round trip (`2 x` every hop's delay plus one
/// `mtu`-byte payload's serialization at every hop) plus every byte the message puts on
/// the wire, headers included, at `bandwidth` (the sender's NIC rate). (HPCC's
/// `qp_finish` computes `base_rtt + total_bytes x 8 / b` this way.)
pub fn sender_ideal_fct(hops: &[(Rate, Dur)], mtu: u64, wire_bytes: u64, bandwidth: Rate) -> Dur {
    let base_rtt = hops.iter().fold(Dur::ZERO, |acc, &(rate, delay)| acc + delay + delay + rate.tx_time(mtu));
    base_rtt + bandwidth.tx_time(wire_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sender_side_ideal_is_hpccs_base_rtt_plus_bytes_over_bandwidth() {
        // Two hops of 100 Gb/s and 1 us: base RTT 2 x 2 us + 2 x 1000 B / 100 Gb/s
        // (80 ns each); 1048 wire bytes at 100 Gb/s take 83.84 ns.
        let hops = [(Rate::gbps(100), Dur::from_us(1)), (Rate::gbps(100), Dur::from_us(1))];
        let t = sender_ideal_fct(&hops, 1000, 1048, Rate::gbps(100));
        assert_eq!(t, Dur::from_ps(4_000_000 + 160_000 + 83_840));
    }

    fn brute(hops: &[(Rate, Dur)], n: u64, frame: impl Fn(u64) -> u64) -> Dur {
        let mut depart = vec![Time::ZERO; hops.len()];
        let mut last = Time::ZERO;
        for j in 0..n {
            let mut arrive = Time::ZERO;
            for (i, &(rate, delay)) in hops.iter().enumerate() {
                depart[i] = arrive.max(if j == 0 { Time::ZERO } else { depart[i] }) + rate.tx_time(frame(j));
                arrive = depart[i] + delay;
            }
            last = arrive;
        }
        last - Time::ZERO
    }

    #[test]
    fn the_jump_over_the_middle_is_exact() {
        let hops = [
            (Rate::gbps(100), Dur::from_us(1)),
            (Rate::gbps(400), Dur::from_us(1)),
            (Rate::gbps(400), Dur::from_ns(500)),
            (Rate::gbps(100), Dur::from_us(1)),
        ];
        for n in [1u64, 2, 3, 66, 67, 500, 2049] {
            let frame = |j: u64| {
                if j == 0 {
                    4214
                } else if j == n - 1 {
                    678
                } else {
                    4198
                }
            };
            assert_eq!(ideal_fct(&hops, n, frame), brute(&hops, n, frame), "n = {n}");
        }
    }

    #[test]
    fn the_jump_is_exact_after_many_larger_first_frames() {
        // QP-Scaling's frames, largest first: each of K parts starts with a RETH frame,
        // and K can exceed the 32 frames the jump usually settles on.
        let hops =
            [(Rate::gbps(100), Dur::from_us(1)), (Rate::gbps(400), Dur::from_us(1)), (Rate::gbps(100), Dur::ZERO)];
        for (k, n) in [(4u64, 3000u64), (40, 3000), (64, 200), (100, 5000)] {
            let frame = |j: u64| {
                if j < k {
                    4214
                } else if j + k < n {
                    4198
                } else {
                    900
                }
            };
            assert_eq!(ideal_fct(&hops, n, frame), brute(&hops, n, frame), "K = {k}, n = {n}");
        }
    }

    #[test]
    fn a_slow_middle_hop_sets_the_pace() {
        let hops = [(Rate::gbps(400), Dur::ZERO), (Rate::gbps(100), Dur::ZERO), (Rate::gbps(400), Dur::ZERO)];
        let t = ideal_fct(&hops, 1000, |_| 1000);
        // 1000 frames through the 100G hop dominate: 1000 x 80 ns.
        assert!(t >= Dur::from_ns(80_000) && t < Dur::from_ns(80_100), "{t}");
    }
}
