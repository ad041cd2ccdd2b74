//! The receiver's side of a multipath connection: which PSNs have arrived, and which
//! messages are complete.
//!
//! Packets are placed the moment they arrive (each carries its address); a bitmap over
//! `[rcv_nxt, rcv_nxt + window)` remembers which PSNs are in, so duplicates are never
//! placed twice. A message completes once every PSN up to its last has arrived, so
//! completions are in order even though placement is not. The window may be bounded
//! (UDMP's and MPRDMA's one-BDP bitmap: PSNs beyond it are refused) or unbounded.

use super::metrics::OooHistogram;
use crate::conn::AppEvent;
use std::collections::VecDeque;

/// What happened to an arriving PSN.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arrival {
    /// New: placed.
    Placed,
    /// Already received (or below the window): not placed again.
    Duplicate,
    /// Beyond the bitmap window: refused.
    BeyondWindow,
}

/// A known message: `[first, end)` PSNs.
#[derive(Clone, Copy, Debug)]
struct Incoming {
    first: u32,
    end: u32,
}

/// Receive bitmap, placement and completion.
#[derive(Clone, Debug)]
pub struct RecvWindow {
    mtu: u32,
    /// Window in packets; `u32::MAX` for unbounded.
    window: u32,
    rcv_nxt: u32,
    /// Bit `i` of word `k`: PSN `base + 64k + i` arrived; `base = rcv_nxt & !63`.
    words: VecDeque<u64>,
    msgs: VecDeque<Incoming>,
    completed: u32,
    events: VecDeque<AppEvent>,
    /// Out-of-order degree of placed packets (`psn - rcv_nxt` on arrival).
    pub ooo: OooHistogram,
}

impl RecvWindow {
    /// A window of `window` packets (`u32::MAX` = unbounded) for packets of `mtu`
    /// payload bytes.
    pub fn new(mtu: u32, window: u32) -> RecvWindow {
        RecvWindow {
            mtu,
            window: window.max(1),
            rcv_nxt: 0,
            words: VecDeque::new(),
            msgs: VecDeque::new(),
            completed: 0,
            events: VecDeque::new(),
            ooo: OooHistogram::default(),
        }
    }

    /// The next PSN expected in order: every PSN below it has arrived.
    #[inline]
    pub fn rcv_nxt(&self) -> u32 {
        self.rcv_nxt
    }

    fn base(&self) -> u32 {
        self.rcv_nxt & !63
    }

    /// Whether `psn` has arrived.
    pub fn has(&self, psn: u32) -> bool {
        if psn < self.rcv_nxt {
            return true;
        }
        let off = (psn - self.base()) as usize;
        self.words.get(off / 64).is_some_and(|w| w & (1 << (off % 64)) != 0)
    }

    /// Bitmap of the 64 PSNs below `psn` (bit `i` = PSN `psn - 1 - i` arrived), for
    /// SACKs.
    ///
    /// Built a word at a time: a SACK goes out for every data packet, and testing the 64
    /// PSNs one by one was 2-3 % of a sprayed run's instructions.
    pub fn sack_bits(&self, psn: u32) -> u64 {
        match psn {
            0 => 0,
            // Bit j of `arrived_from` is PSN psn - 64 + j: reversed, bit i is psn - 1 - i.
            64.. => self.arrived_from(psn - 64).reverse_bits(),
            // Only PSNs 0..psn exist: keep their bits, reverse, and drop the empty top.
            _ => (self.arrived_from(0) & ((1u64 << psn) - 1)).reverse_bits() >> (64 - psn),
        }
    }

    /// Bit `j` set when PSN `lo + j` has arrived (`j` in 0..64), as [`has`](Self::has).
    fn arrived_from(&self, lo: u32) -> u64 {
        // Word `k` of the window covers PSNs base + 64k ..; words before the first are
        // wholly below `rcv_nxt` (arrived) and words past the last hold nothing yet. The
        // stored bits of base..rcv_nxt are set (`rcv_nxt` only moves over set bits).
        let word = |k: i64| -> u64 {
            if k < 0 {
                u64::MAX
            } else {
                self.words.get(k as usize).copied().unwrap_or(0)
            }
        };
        let off = lo as i64 - self.base() as i64;
        let (k, s) = (off.div_euclid(64), off.rem_euclid(64) as u32);
        if s == 0 {
            word(k)
        } else {
            (word(k) >> s) | (word(k + 1) << (64 - s))
        }
    }

    /// Registers an arriving data packet `psn` of the message starting at `first_psn`
    /// whose length is `msg_len` bytes.
    pub fn arrive(&mut self, psn: u32, first_psn: u32, msg_len: u32) -> Arrival {
        if psn < self.rcv_nxt || self.has(psn) {
            return Arrival::Duplicate;
        }
        if self.window != u32::MAX && psn - self.rcv_nxt >= self.window {
            return Arrival::BeyondWindow;
        }
        self.ooo.record((psn - self.rcv_nxt) as u64);
        self.learn(first_psn, msg_len);
        let off = (psn - self.base()) as usize;
        if self.words.len() <= off / 64 {
            self.words.resize(off / 64 + 1, 0);
        }
        self.words[off / 64] |= 1 << (off % 64);
        self.advance();
        Arrival::Placed
    }

    /// Notes the message `[first_psn, first_psn + packets)`, keeping them sorted.
    fn learn(&mut self, first_psn: u32, msg_len: u32) {
        if first_psn < self.rcv_nxt && self.msgs.front().is_none_or(|m| m.first > first_psn) {
            // A message already completed (a straggler of it arrived).
            return;
        }
        let i = self.msgs.partition_point(|m| m.first < first_psn);
        if self.msgs.get(i).is_some_and(|m| m.first == first_psn) {
            return;
        }
        let n = (msg_len as u64).div_ceil(self.mtu as u64).max(1) as u32;
        self.msgs.insert(i, Incoming { first: first_psn, end: first_psn + n });
    }

    fn advance(&mut self) {
        loop {
            let off = (self.rcv_nxt - self.base()) as usize;
            let Some(&w) = self.words.front() else { break };
            let run = (w >> off).trailing_ones() as usize;
            self.rcv_nxt += run as u32;
            if off + run < 64 {
                break;
            }
            self.words.pop_front();
        }
        while let Some(m) = self.msgs.front() {
            if m.end > self.rcv_nxt {
                break;
            }
            self.events.push_back(AppEvent::Received { seq: self.completed });
            self.completed += 1;
            self.msgs.pop_front();
        }
    }

    /// The next application event (a message completely placed).
    pub fn poll_event(&mut self) -> Option<AppEvent> {
        self.events.pop_front()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fabricsim_engine::Rng;

    #[test]
    fn each_placed_packet_records_its_distance_from_the_next_expected_psn() {
        // Arrivals 0, 3, 1, 2, 6, 5, 4 (and a duplicate of 3): the next expected PSN is
        // 1 when 3 comes (degree 2), 1 for 1 (0), 2 for 2 (0), 4 for 6 (2), 4 for 5 (1)
        // and 4 for 4 (0). Duplicates and packets beyond the window are not placed, so
        // not counted.
        let mut w = RecvWindow::new(100, 8);
        for psn in [0, 3, 1, 2, 6, 5, 4, 3] {
            w.arrive(psn, 0, 100 * 20);
        }
        assert_eq!(w.arrive(7 + 8, 0, 100 * 20), Arrival::BeyondWindow);
        assert_eq!(w.ooo.total(), 7);
        assert_eq!(w.ooo.max(), 2);
        assert_eq!(w.ooo.buckets().collect::<Vec<_>>(), vec![(0, 4), (1, 1), (2, 2)]);
    }

    #[test]
    fn any_arrival_order_completes_every_message_once_and_in_order() {
        let mut rng = Rng::new(5);
        // Messages of 3, 1 and 70 packets (mtu 100).
        let msgs = [(0u32, 300u32), (3, 50), (4, 7000)];
        let mut psns: Vec<(u32, u32, u32)> = Vec::new();
        for &(first, len) in &msgs {
            for k in 0..(len as u64).div_ceil(100) as u32 {
                psns.push((first + k, first, len));
            }
        }
        rng.shuffle(&mut psns);
        let mut w = RecvWindow::new(100, u32::MAX);
        for &(p, f, l) in &psns {
            assert_eq!(w.arrive(p, f, l), Arrival::Placed);
        }
        for &(p, f, l) in psns.iter().take(5) {
            assert_eq!(w.arrive(p, f, l), Arrival::Duplicate);
        }
        assert_eq!(w.rcv_nxt(), 74);
        let done: Vec<AppEvent> = std::iter::from_fn(|| w.poll_event()).collect();
        assert_eq!(
            done,
            vec![AppEvent::Received { seq: 0 }, AppEvent::Received { seq: 1 }, AppEvent::Received { seq: 2 }]
        );
        assert!(w.ooo.max() > 0);
    }

    #[test]
    fn sack_bits_match_the_arrival_of_each_of_the_64_psns_below() {
        let mut rng = Rng::new(11);
        for trial in 0..200 {
            let mut w = RecvWindow::new(100, u32::MAX);
            // A random arrival pattern over 300 PSNs, the early ones more likely, so the
            // window's base moves and stragglers leave holes behind it.
            let arrived = 1 + rng.below(300) as u32;
            for p in 0..arrived {
                let keep = (100 - p as u64 * 100 / 400).saturating_sub(if trial % 3 == 0 { 30 } else { 0 });
                if rng.below(100) < keep {
                    w.arrive(p, 0, 1_000_000);
                }
            }
            for psn in 0..arrived + 140 {
                let naive = (0..64u32.min(psn)).filter(|&i| w.has(psn - 1 - i)).fold(0u64, |b, i| b | 1 << i);
                assert_eq!(w.sack_bits(psn), naive, "trial {trial}, psn {psn}, rcv_nxt {}", w.rcv_nxt());
            }
        }
    }

    #[test]
    fn a_bounded_window_refuses_psns_beyond_it() {
        let mut w = RecvWindow::new(100, 8);
        assert_eq!(w.arrive(7, 0, 100_000), Arrival::Placed);
        assert_eq!(w.arrive(8, 0, 100_000), Arrival::BeyondWindow);
        assert_eq!(w.arrive(0, 0, 100_000), Arrival::Placed);
        assert_eq!(w.rcv_nxt(), 1);
        assert_eq!(w.sack_bits(9) & 0b11, 0b10, "PSN 7 = 9 - 1 - 1 arrived, PSN 8 did not");
        assert_eq!(w.arrive(8, 0, 100_000), Arrival::Placed);
    }
}
