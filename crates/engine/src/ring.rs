//! A FIFO whose first entries live inside its owner.
//!
//! A port's class queues and its wire, and a NIC's queues of endpoints waiting to
//! send, are FIFOs touched on every packet. As `VecDeque`s their entries sat in a
//! separate heap buffer per queue, one more cache miss per access on a large fabric
//! that no prefetch could hide (the buffer's address is only known once its owner is
//! loaded): on benchmark (c) the load of a port's dequeued entry alone was 9 % of the
//! run time. A [`Ring`] keeps its oldest `N` entries in an inline array,
//! so they arrive with the port's own cache lines, and only entries beyond `N` go to a
//! heap FIFO behind them (allocated at the first overflow and kept, so a port that
//! once queued deeply does not allocate again).

use std::collections::VecDeque;

/// A FIFO of `T` holding its oldest `N` entries inline (`N` at most 255).
#[derive(Clone, Debug)]
pub struct Ring<T: Copy + Default, const N: usize> {
    buf: [T; N],
    /// Index in `buf` of the oldest entry.
    head: u8,
    /// Entries in `buf`.
    len: u8,
    /// Entries in `spill` (read without touching the heap).
    spilled: u32,
    /// Entries after the first `N`, oldest first.
    spill: VecDeque<T>,
}

impl<T: Copy + Default, const N: usize> Default for Ring<T, N> {
    fn default() -> Self {
        const { assert!(N > 0 && N < 256) };
        Ring { buf: [T::default(); N], head: 0, len: 0, spilled: 0, spill: VecDeque::new() }
    }
}

impl<T: Copy + Default, const N: usize> Ring<T, N> {
    /// Number of entries.
    #[inline]
    pub fn len(&self) -> usize {
        self.len as usize + self.spilled as usize
    }

    /// Whether the ring holds nothing.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline]
    fn at(&self, k: usize) -> usize {
        let i = self.head as usize + k;
        if i >= N {
            i - N
        } else {
            i
        }
    }

    /// Appends `x` at the back.
    #[inline]
    pub fn push_back(&mut self, x: T) {
        if (self.len as usize) < N && self.spilled == 0 {
            let i = self.at(self.len as usize);
            self.buf[i] = x;
            self.len += 1;
        } else {
            self.spill.push_back(x);
            self.spilled += 1;
        }
    }

    /// Removes and returns the oldest entry.
    #[inline]
    pub fn pop_front(&mut self) -> Option<T> {
        if self.len == 0 {
            return None;
        }
        let x = self.buf[self.head as usize];
        self.head = self.at(1) as u8;
        self.len -= 1;
        if self.spilled > 0 {
            // The oldest spilled entry moves up into the array, behind the others.
            let y = self.spill.pop_front().expect("spilled entries are in the spill");
            self.spilled -= 1;
            let i = self.at(self.len as usize);
            self.buf[i] = y;
            self.len += 1;
        }
        Some(x)
    }

    /// The oldest entry.
    #[inline]
    pub fn front(&self) -> Option<&T> {
        (self.len > 0).then(|| &self.buf[self.head as usize])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;

    /// Random pushes and pops agree with a `VecDeque` at every step, across the
    /// inline/spill boundary and the array's wrap-around.
    #[test]
    fn behaves_as_a_fifo() {
        let mut ring: Ring<u32, 3> = Ring::default();
        let mut model = VecDeque::new();
        let mut x = 12345u32;
        for step in 0..20_000u32 {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            // Phases that grow deep, then drain, so both regimes are long.
            let deep_phase = (step / 500).is_multiple_of(2);
            let push = x.is_multiple_of(3) != deep_phase;
            if push {
                ring.push_back(step);
                model.push_back(step);
            } else {
                assert_eq!(ring.pop_front(), model.pop_front());
            }
            assert_eq!(ring.len(), model.len());
            assert_eq!(ring.is_empty(), model.is_empty());
            assert_eq!(ring.front(), model.front());
        }
        assert!(ring.spill.capacity() > 0, "the test reached the spill");
    }

    #[test]
    fn empty_ring_has_no_ends() {
        let mut ring: Ring<u64, 2> = Ring::default();
        assert_eq!(ring.pop_front(), None);
        assert_eq!(ring.front(), None);
        ring.push_back(7);
        assert_eq!(ring.front(), Some(&7));
    }
}
