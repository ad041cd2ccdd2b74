//! The packet arena.
//!
//! Every packet in the network lives in one slot of the [`Pool`] and moves between
//! queues and links by index. A freed slot is reused by the next allocation, so in
//! steady state the simulator allocates nothing per packet. Queues and links keep the
//! bookkeeping they need (arrival times, sizes, ingress ports) beside the index, so a
//! hop touches the packet itself only to route it.

use fabricsim_wire::Packet;

/// A growable arena of packets with a free list.
#[derive(Default)]
pub struct Pool {
    slots: Vec<Packet>,
    free: Vec<u32>,
    live: usize,
    peak: usize,
}

impl Pool {
    /// Stores `pkt` and returns its slot index.
    #[inline]
    pub fn alloc(&mut self, pkt: Packet) -> u32 {
        self.live += 1;
        self.peak = self.peak.max(self.live);
        match self.free.pop() {
            Some(i) => {
                self.slots[i as usize] = pkt;
                i
            }
            None => {
                self.slots.push(pkt);
                (self.slots.len() - 1) as u32
            }
        }
    }

    /// Returns slot `i` to the free list. The caller must not use `i` again.
    #[inline]
    pub fn free(&mut self, i: u32) {
        debug_assert!(self.live > 0);
        self.live -= 1;
        self.free.push(i);
    }

    /// The packet in slot `i`.
    #[inline]
    pub fn get(&self, i: u32) -> &Packet {
        &self.slots[i as usize]
    }

    /// The packet in slot `i`, mutably.
    #[inline]
    pub fn get_mut(&mut self, i: u32) -> &mut Packet {
        &mut self.slots[i as usize]
    }

    /// Packets currently allocated.
    pub fn live(&self) -> usize {
        self.live
    }

    /// Largest number of packets allocated at once.
    pub fn peak(&self) -> usize {
        self.peak
    }

    /// Bytes the simulator keeps per packet in flight: the slot, its free-list entry,
    /// and the queue or wire entry that points at it.
    pub const fn slot_bytes() -> usize {
        std::mem::size_of::<Packet>() + std::mem::size_of::<u32>() + 16
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn freed_slots_are_reused() {
        let mut pool = Pool::default();
        let a = pool.alloc(Packet::default());
        let _b = pool.alloc(Packet::default());
        pool.free(a);
        let c = pool.alloc(Packet::default());
        assert_eq!(a, c);
        assert_eq!(pool.live(), 2);
        assert_eq!(pool.peak(), 2);
    }

    #[test]
    fn slot_bookkeeping_stays_within_the_memory_budget() {
        assert!(Pool::slot_bytes() <= 200, "{}", Pool::slot_bytes());
    }
}
