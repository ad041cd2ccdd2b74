//! The client's congestion window, DCTCP's rule (Alizadeh et al., SIGCOMM '10), in
//! bytes: the paper names DCTCP as a window scheme StaR can run at the client.
//!
//! Each round trip (a window's worth of answered bytes) the fraction of answered bytes
//! that carried an ECN mark updates a moving average `alpha` (gain `g`); a round with
//! any mark cuts the window by `alpha / 2`. Unmarked answers grow it by one MTU per
//! window (congestion avoidance). A loss found from later answers halves it, a timeout
//! sets it to one MTU.

/// DCTCP's window over bytes.
#[derive(Clone, Copy, Debug)]
pub struct Window {
    cwnd: f64,
    max: f64,
    mtu: f64,
    g: f64,
    alpha: f64,
    /// Bytes answered in the current round, and of those marked.
    acked: u64,
    marked: u64,
}

impl Window {
    /// A window of `init` bytes (at most `2 init`), for packets of at most `mtu`.
    pub fn new(init: u32, mtu: u32, g: f64) -> Window {
        let mtu = mtu.max(1) as f64;
        let init = (init as f64).max(mtu);
        Window { cwnd: init, max: 2.0 * init, mtu, g, alpha: 1.0, acked: 0, marked: 0 }
    }

    /// Bytes that may be outstanding.
    #[inline]
    pub fn bytes(&self) -> u64 {
        self.cwnd as u64
    }

    /// The marked fraction's moving average.
    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    /// `len` bytes were answered, `marked` if their answer carried an ECN mark.
    pub fn on_answer(&mut self, len: u32, marked: bool) {
        self.acked += len as u64;
        if marked {
            self.marked += len as u64;
        }
        if self.acked as f64 >= self.cwnd {
            let f = self.marked as f64 / self.acked as f64;
            self.alpha = (1.0 - self.g) * self.alpha + self.g * f;
            if self.marked > 0 {
                self.cwnd = (self.cwnd * (1.0 - self.alpha / 2.0)).max(self.mtu);
            }
            self.acked = 0;
            self.marked = 0;
        }
        if !marked {
            self.cwnd = (self.cwnd + self.mtu * len as f64 / self.cwnd).min(self.max);
        }
    }

    /// A loss was found from later answers: half the window (TCP's fast recovery).
    pub fn on_loss(&mut self) {
        self.cwnd = (self.cwnd / 2.0).max(self.mtu);
    }

    /// A retransmission timeout fired.
    pub fn on_timeout(&mut self) {
        self.cwnd = self.mtu;
        self.acked = 0;
        self.marked = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fully_marked_round_halves_the_window_once_alpha_is_one() {
        let mut w = Window::new(100_000, 1000, 1.0 / 16.0);
        for _ in 0..100 {
            w.on_answer(1000, true);
        }
        // alpha starts at 1 and every byte is marked: it stays 1, the cut is a half.
        assert!((w.alpha() - 1.0).abs() < 1e-12);
        assert_eq!(w.bytes(), 50_000);
    }

    #[test]
    fn unmarked_answers_grow_the_window_by_about_an_mtu_per_round_up_to_twice_the_start() {
        let mut w = Window::new(10_000, 1000, 1.0 / 16.0);
        for _ in 0..10 {
            w.on_answer(1000, false);
        }
        assert!((10_900..=11_000).contains(&w.bytes()), "{}", w.bytes());
        for _ in 0..10_000 {
            w.on_answer(1000, false);
        }
        assert_eq!(w.bytes(), 20_000);
        // alpha decays without marks: 1 - 1/16 per round.
        assert!(w.alpha() < 0.01);
        w.on_timeout();
        assert_eq!(w.bytes(), 1000);
    }
}
