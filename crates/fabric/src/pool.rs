//! The packet arena.
//!
//! Every packet in the network lives in one slot of the [`Pool`] and moves between
//! queues and links by index. A freed slot is reused by the next allocation, so in
//! steady state the simulator allocates nothing per packet. Queues and links keep the
//! bookkeeping they need (arrival times, sizes, ingress ports) beside the index, so a
//! hop touches the packet itself only to route it.

use fabricsim_wire::Packet;

/// Packets per chunk of the arena.
const CHUNK_SHIFT: u32 = 12;
const CHUNK: usize = 1 << CHUNK_SHIFT;

/// A growable arena of packets with a free list.
///
/// Slots live in fixed chunks of 4096 that are never moved: growing the pool
/// allocates one more chunk instead of reallocating (and briefly doubling) one big
/// buffer, so its memory stays within one chunk of the peak number of packets.
#[derive(Default)]
pub struct Pool {
    chunks: Vec<Box<[Packet]>>,
    /// Slots handed out so far (the high-water mark of indices).
    used: u32,
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
        let i = match self.free.pop() {
            Some(i) => i,
            None => {
                if self.used as usize == self.chunks.len() * CHUNK {
                    self.chunks.push(vec![Packet::default(); CHUNK].into_boxed_slice());
                    self.free.reserve_exact(CHUNK);
                }
                self.used += 1;
                self.used - 1
            }
        };
        *self.get_mut(i) = pkt;
        i
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
        &self.chunks[(i >> CHUNK_SHIFT) as usize][i as usize & (CHUNK - 1)]
    }

    /// Starts loading slot `i`'s packet (both cache lines) into the cache; a hint.
    #[inline]
    pub fn prefetch(&self, i: u32) {
        if let Some(p) = self.chunks.get((i >> CHUNK_SHIFT) as usize).and_then(|c| c.get(i as usize & (CHUNK - 1))) {
            fabricsim_engine::prefetch::lines(p, 2);
        }
    }

    /// The packet in slot `i`, mutably.
    #[inline]
    pub fn get_mut(&mut self, i: u32) -> &mut Packet {
        &mut self.chunks[(i >> CHUNK_SHIFT) as usize][i as usize & (CHUNK - 1)]
    }

    /// Heap bytes held (chunks and free list).
    pub fn heap_bytes(&self) -> usize {
        self.chunks.len() * CHUNK * std::mem::size_of::<Packet>() + self.free.capacity() * 4
    }

    /// Packets currently allocated.
    pub fn live(&self) -> usize {
        self.live
    }

    /// Largest number of packets allocated at once.
    pub fn peak(&self) -> usize {
        self.peak
    }

    /// Adds another pool's peak (the partitions of one run: an upper bound of the
    /// run's peak, since the partitions need not peak together).
    pub fn add_peak(&mut self, peak: usize) {
        self.peak += peak;
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
    fn slots_survive_growth_across_chunks() {
        let mut pool = Pool::default();
        let ids: Vec<u32> =
            (0..3 * CHUNK as u32 + 5).map(|k| pool.alloc(Packet { payload: k, ..Default::default() })).collect();
        for (k, &i) in ids.iter().enumerate() {
            assert_eq!(pool.get(i).payload, k as u32);
        }
        assert_eq!(pool.heap_bytes() / std::mem::size_of::<Packet>() / CHUNK, 4);
    }

    #[test]
    fn slot_bookkeeping_stays_within_the_memory_budget() {
        assert!(Pool::slot_bytes() <= 200, "{}", Pool::slot_bytes());
    }
}
