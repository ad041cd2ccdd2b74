//! The packet arena.
//!
//! Every packet in the network lives in one [`Slot`]; queues and link FIFOs are
//! intrusive singly-linked lists through [`Slot::next`]. A freed slot is reused by the
//! next allocation, so in steady state the simulator allocates nothing per packet.

use fabricsim_engine::Time;
use fabricsim_wire::Packet;

/// "No slot": the end of an intrusive list.
pub const NIL: u32 = u32::MAX;

/// A packet plus the fabric's bookkeeping about it.
#[derive(Clone, Copy, Debug)]
pub struct Slot {
    /// The packet itself.
    pub pkt: Packet,
    /// While on a wire: the time its last bit reaches the far end.
    pub arrive: Time,
    /// Next slot in whichever list this slot is on.
    pub next: u32,
    /// While buffered in a switch: the port it arrived through (for PFC accounting).
    pub in_port: u32,
}

/// A growable arena of packet slots with a free list.
#[derive(Default)]
pub struct Pool {
    slots: Vec<Slot>,
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
        let slot = Slot { pkt, arrive: Time::ZERO, next: NIL, in_port: NIL };
        match self.free.pop() {
            Some(i) => {
                self.slots[i as usize] = slot;
                i
            }
            None => {
                self.slots.push(slot);
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

    /// The slot at `i`.
    #[inline]
    pub fn get(&self, i: u32) -> &Slot {
        &self.slots[i as usize]
    }

    /// The slot at `i`, mutably.
    #[inline]
    pub fn get_mut(&mut self, i: u32) -> &mut Slot {
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

    /// Bytes one slot occupies (for the memory-per-packet figure).
    pub const fn slot_bytes() -> usize {
        std::mem::size_of::<Slot>() + std::mem::size_of::<u32>()
    }
}

/// An intrusive FIFO of slots (head, tail) threaded through [`Slot::next`].
#[derive(Clone, Copy, Debug)]
pub struct Fifo {
    head: u32,
    tail: u32,
}

impl Default for Fifo {
    fn default() -> Self {
        Fifo { head: NIL, tail: NIL }
    }
}

impl Fifo {
    /// Whether the FIFO holds no slot.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.head == NIL
    }

    /// The first slot, if any.
    #[inline]
    pub fn front(&self) -> Option<u32> {
        (self.head != NIL).then_some(self.head)
    }

    /// The last slot, if any.
    #[inline]
    pub fn back(&self) -> Option<u32> {
        (self.tail != NIL).then_some(self.tail)
    }

    /// Appends slot `i` (which must not be on any list).
    #[inline]
    pub fn push(&mut self, pool: &mut Pool, i: u32) {
        pool.get_mut(i).next = NIL;
        if self.tail == NIL {
            self.head = i;
        } else {
            pool.get_mut(self.tail).next = i;
        }
        self.tail = i;
    }

    /// Removes and returns the first slot.
    #[inline]
    pub fn pop(&mut self, pool: &Pool) -> Option<u32> {
        if self.head == NIL {
            return None;
        }
        let i = self.head;
        self.head = pool.get(i).next;
        if self.head == NIL {
            self.tail = NIL;
        }
        Some(i)
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
    fn fifo_keeps_order() {
        let mut pool = Pool::default();
        let mut f = Fifo::default();
        let ids: Vec<u32> = (0..5).map(|_| pool.alloc(Packet::default())).collect();
        for &i in &ids {
            f.push(&mut pool, i);
        }
        let out: Vec<u32> = std::iter::from_fn(|| f.pop(&pool)).collect();
        assert_eq!(out, ids);
        assert!(f.is_empty());
    }

    #[test]
    fn slot_bookkeeping_stays_within_the_memory_budget() {
        assert!(Pool::slot_bytes() <= 200, "{}", Pool::slot_bytes());
    }
}
