//! The simulator's record of what a stateless server placed: bytes per work request,
//! each RDP counted once. It exists for the flow table (when a WRITE's last byte was
//! placed); nothing in the protocol reads it, and a real StaR NIC has no such state.

use crate::common::{Arrival, RecvWindow};
use std::collections::BTreeMap;

/// Which numbers (PSNs, work requests) have been seen, each a one-packet "message" of
/// a receive window, so that memory stays bounded by how far they run out of order.
#[derive(Clone, Debug)]
pub(crate) struct Seen(RecvWindow);

impl Default for Seen {
    fn default() -> Self {
        Seen(RecvWindow::new(1, u32::MAX))
    }
}

impl Seen {
    /// Whether `n` is seen for the first time (it is seen from now on).
    pub(crate) fn first(&mut self, n: u32) -> bool {
        let placed = self.0.arrive(n, n, 1) == Arrival::Placed;
        while self.0.poll_event().is_some() {}
        placed
    }
}

/// Bytes placed per work request, and which RDPs have been seen.
#[derive(Clone, Debug, Default)]
pub struct Placement {
    /// RDP PSNs seen.
    seen: Seen,
    /// Work request -> bytes placed so far (removed once complete).
    placed: BTreeMap<u32, u64>,
}

impl Placement {
    /// An RDP with PSN `psn` placed `len` bytes of work request `elem` (`total` bytes):
    /// `None` if it is a duplicate, else whether the work request is now complete.
    pub fn place(&mut self, psn: u32, elem: u32, total: u32, len: u32) -> Option<bool> {
        if !self.seen.first(psn) {
            return None;
        }
        let p = self.placed.entry(elem).or_insert(0);
        *p += len as u64;
        if *p >= total as u64 {
            self.placed.remove(&elem);
            return Some(true);
        }
        Some(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_work_request_completes_once_each_of_its_packets_is_counted_once() {
        let mut p = Placement::default();
        assert_eq!(p.place(0, 0, 3000, 1400), Some(false));
        assert_eq!(p.place(0, 0, 3000, 1400), None, "a duplicate adds nothing");
        assert_eq!(p.place(2, 1, 8, 8), Some(true), "another request, out of order");
        assert_eq!(p.place(1, 0, 3000, 1600), Some(true));
    }
}
