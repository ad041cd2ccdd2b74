//! The event queue: a calendar queue ordered by `(time, insertion sequence)`.
//!
//! # Ordering guarantee
//! [`EventQueue::pop`] returns events in non-decreasing time; events scheduled for the
//! same time come out in the order they were pushed (FIFO). Every run of the same
//! scenario therefore processes the same events in the same order.
//!
//! # Cancellation
//! There is none: components cancel lazily. A component remembers which of its
//! scheduled events is current (a deadline or a generation number) and ignores stale
//! ones when they pop.
//!
//! # Structure
//! A packet simulator's events are overwhelmingly a few microseconds ahead of now
//! (serialization, propagation). They go into a wheel of [`BUCKETS`] buckets of
//! 2^[`BUCKET_SHIFT`] ps (128 ps) each, covering the next ~4 µs; a bitmap finds
//! the next non-empty bucket. A bucket is a sorted singly-linked list (head and tail)
//! through one shared slab of nodes: a new event almost always belongs at the tail
//! (O(1)), the earliest leaves from the head, and memory follows the number of
//! pending events rather than the largest burst each bucket ever saw. Events beyond
//! the horizon (timers) wait in an overflow heap and move into the wheel as time
//! approaches them.

use crate::time::Time;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// Log2 of a bucket's width in picoseconds (128 ps). Narrow buckets keep each one
/// short: a 1024-host fabric schedules dozens of events per nanosecond, and with 1 ns
/// buckets a sorted insertion walked 23 nodes on average (benchmark (c)).
pub const BUCKET_SHIFT: u32 = 7;
/// Buckets in the wheel (the horizon is `BUCKETS << BUCKET_SHIFT` ps, about 4.2 µs).
pub const BUCKETS: usize = 1 << 15;
const MASK: u64 = BUCKETS as u64 - 1;
const WORDS: usize = BUCKETS / 64;
const NIL: u32 = u32::MAX;

/// One scheduled event: ordered by `(time, seq)`, `seq` being the insertion count.
#[derive(Clone, Copy)]
struct Entry<E> {
    time: u64,
    seq: u64,
    event: E,
}

impl<E> Entry<E> {
    #[inline]
    fn key(&self) -> (u64, u64) {
        (self.time, self.seq)
    }
    #[inline]
    fn bucket(&self) -> u64 {
        self.time >> BUCKET_SHIFT
    }
}

// The overflow `BinaryHeap` is a max-heap: order entries by reversed key.
impl<E> PartialEq for Entry<E> {
    fn eq(&self, o: &Self) -> bool {
        self.key() == o.key()
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl<E> Ord for Entry<E> {
    fn cmp(&self, o: &Self) -> Ordering {
        o.key().cmp(&self.key())
    }
}

/// A node of the slab: an event, its time and the next node of its bucket (or of the
/// free list).
///
/// It needs no insertion sequence: an event is linked after every event of the same
/// time already in its bucket, and equal times always enter the wheel in sequence
/// order (a push carries the highest sequence yet, and the overflow hands its events
/// over in `(time, seq)` order before any push can reach their buckets, because an
/// event goes to the overflow only while its bucket is beyond the horizon, and
/// [`advance`](EventQueue::advance) moves every event inside the new horizon). Without
/// it a node is 32 bytes (for a 16-byte event), so none straddles two cache lines.
#[derive(Clone, Copy)]
struct Node<E> {
    time: u64,
    event: E,
    next: u32,
}

/// A deterministic priority queue of events of type `E`.
pub struct EventQueue<E> {
    nodes: Vec<Node<E>>,
    free: u32,
    /// Per bucket, its first and last node (one access reads both).
    ends: Vec<(u32, u32)>,
    /// Bit `b` set while bucket `b` is non-empty.
    occupied: [u64; WORDS],
    /// Absolute bucket number (`time >> BUCKET_SHIFT`) of the current bucket; the
    /// wheel holds buckets `cursor .. cursor + BUCKETS`.
    cursor: u64,
    overflow: BinaryHeap<Entry<E>>,
    in_wheel: usize,
    seq: u64,
    now: Time,
    popped: u64,
}

impl<E: Copy> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E: Copy> EventQueue<E> {
    /// An empty queue at time zero.
    pub fn new() -> Self {
        EventQueue {
            nodes: Vec::new(),
            free: NIL,
            ends: vec![(NIL, NIL); BUCKETS],
            occupied: [0; WORDS],
            cursor: 0,
            overflow: BinaryHeap::new(),
            in_wheel: 0,
            seq: 0,
            now: Time::ZERO,
            popped: 0,
        }
    }

    /// The time of the last popped event (the simulation's "now").
    pub fn now(&self) -> Time {
        self.now
    }

    /// Number of events popped so far.
    pub fn popped(&self) -> u64 {
        self.popped
    }

    /// Number of events waiting.
    pub fn len(&self) -> usize {
        self.in_wheel + self.overflow.len()
    }

    /// Whether no event is waiting.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Schedules `event` at `at`.
    ///
    /// # Panics
    /// If `at` is earlier than the current time: an event in the past is always a bug
    /// in the component that scheduled it, and silently reordering it would break
    /// determinism.
    #[inline]
    pub fn push(&mut self, at: Time, event: E) {
        assert!(at >= self.now, "event scheduled in the past: {} < {}", at, self.now);
        let e = Entry { time: at.0, seq: self.seq, event };
        self.seq += 1;
        if e.bucket() < self.cursor + BUCKETS as u64 {
            self.insert(e);
        } else {
            self.overflow.push(e);
        }
    }

    #[inline]
    fn node(&mut self, entry: Entry<E>) -> u32 {
        let node = Node { time: entry.time, event: entry.event, next: NIL };
        if self.free == NIL {
            self.nodes.push(node);
            (self.nodes.len() - 1) as u32
        } else {
            let n = self.free;
            self.free = self.nodes[n as usize].next;
            self.nodes[n as usize] = node;
            n
        }
    }

    #[inline]
    fn time_of(&self, n: u32) -> u64 {
        self.nodes[n as usize].time
    }

    /// Links `e` into its bucket after every event of the same or an earlier time,
    /// keeping the bucket sorted by `(time, seq)` (see [`Node`]).
    #[inline]
    fn insert(&mut self, e: Entry<E>) {
        let slot = (e.bucket() & MASK) as usize;
        let time = e.time;
        let n = self.node(e);
        let (head, tail) = self.ends[slot];
        if head == NIL {
            self.ends[slot] = (n, n);
            self.occupied[slot / 64] |= 1 << (slot % 64);
        } else if self.time_of(tail) <= time {
            self.nodes[tail as usize].next = n;
            self.ends[slot].1 = n;
        } else if time < self.time_of(head) {
            self.nodes[n as usize].next = head;
            self.ends[slot].0 = n;
        } else {
            let mut prev = head;
            loop {
                let next = self.nodes[prev as usize].next;
                if self.time_of(next) > time {
                    self.nodes[n as usize].next = next;
                    self.nodes[prev as usize].next = n;
                    break;
                }
                prev = next;
            }
        }
        self.in_wheel += 1;
    }

    /// Distance from the cursor to the next non-empty bucket of the wheel, if any.
    #[inline]
    fn next_occupied(&self) -> Option<u64> {
        let start = (self.cursor & MASK) as usize;
        let (w0, b0) = (start / 64, start % 64);
        let first = self.occupied[w0] >> b0;
        if first != 0 {
            return Some(first.trailing_zeros() as u64);
        }
        for i in 1..=WORDS {
            let w = (w0 + i) % WORDS;
            let mut bits = self.occupied[w];
            if i == WORDS {
                // Wrapped back to the first word: only the bits before the cursor.
                bits &= (1u64 << b0).wrapping_sub(1);
            }
            if bits != 0 {
                let slot = w * 64 + bits.trailing_zeros() as usize;
                return Some((slot as u64).wrapping_sub(start as u64) & MASK);
            }
        }
        None
    }

    /// Moves the cursor to the bucket holding the earliest event (the wheel's next
    /// occupied bucket, or the overflow's first) and pulls every overflow event now
    /// inside the horizon into the wheel.
    fn advance(&mut self) {
        let target = match self.next_occupied() {
            Some(d) => self.cursor + d,
            None => match self.overflow.peek() {
                Some(e) => e.bucket(),
                None => return,
            },
        };
        self.cursor = target;
        while let Some(e) = self.overflow.peek() {
            if e.bucket() >= self.cursor + BUCKETS as u64 {
                break;
            }
            let e = self.overflow.pop().expect("peeked");
            self.insert(e);
        }
    }

    /// Removes and returns the earliest event, advancing [`now`](Self::now) to its time.
    #[inline]
    pub fn pop(&mut self) -> Option<(Time, E)> {
        if self.is_empty() {
            return None;
        }
        let mut slot = (self.cursor & MASK) as usize;
        if self.ends[slot].0 == NIL {
            self.advance();
            slot = (self.cursor & MASK) as usize;
        }
        let n = self.ends[slot].0;
        debug_assert!(n != NIL, "advance found an occupied bucket");
        let node = self.nodes[n as usize];
        self.ends[slot].0 = node.next;
        if node.next == NIL {
            self.ends[slot].1 = NIL;
            self.occupied[slot / 64] &= !(1 << (slot % 64));
        }
        self.nodes[n as usize].next = self.free;
        self.free = n;
        self.in_wheel -= 1;
        self.now = Time(node.time);
        self.popped += 1;
        Some((self.now, node.event))
    }

    /// The next event and its time, without removing it.
    fn peek_entry(&self) -> Option<(u64, &E)> {
        match self.next_occupied() {
            Some(d) => {
                let node = &self.nodes[self.ends[((self.cursor + d) & MASK) as usize].0 as usize];
                Some((node.time, &node.event))
            }
            None => self.overflow.peek().map(|e| (e.time, &e.event)),
        }
    }

    /// The next event, without removing it.
    pub fn peek(&self) -> Option<&E> {
        self.peek_entry().map(|(_, e)| e)
    }

    /// The next `N` events in order, without removing them (for prefetching several
    /// steps ahead). Stops early (`None`s) where the wheel's next events are not
    /// found cheaply: beyond the next non-empty bucket after a few words of bitmap, or
    /// in the overflow heap.
    ///
    /// Also starts loading the node of the event after those `N`: nodes are scattered
    /// over the slab, and reading the one `N` ahead cold cost a cache miss per event on
    /// large fabrics. Asked for one call ahead, it is in cache when it is read.
    #[inline]
    pub fn peek_ahead<const N: usize>(&self) -> [Option<&E>; N] {
        let mut out = [None; N];
        let Some(d) = self.next_occupied() else {
            if N > 0 {
                out[0] = self.overflow.peek().map(|e| &e.event);
            }
            return out;
        };
        let mut bucket = self.cursor + d;
        let mut n = self.ends[(bucket & MASK) as usize].0;
        for slot in out.iter_mut() {
            let node = &self.nodes[n as usize];
            *slot = Some(&node.event);
            if node.next != NIL {
                n = node.next;
            } else {
                match self.next_occupied_after(bucket) {
                    Some(b) => {
                        bucket = b;
                        n = self.ends[(b & MASK) as usize].0;
                    }
                    None => return out,
                }
            }
        }
        if let Some(node) = self.nodes.get(n as usize) {
            crate::prefetch::lines(node, 1);
        }
        out
    }

    /// The first non-empty bucket after absolute bucket `b` within the wheel, if any
    /// (only the next few words of the bitmap are looked at: this is a hint).
    #[inline]
    fn next_occupied_after(&self, b: u64) -> Option<u64> {
        let start = b + 1;
        let (w0, b0) = (((start & MASK) as usize) / 64, (start & MASK) as usize % 64);
        let first = self.occupied[w0] >> b0;
        if first != 0 {
            return Some(start + first.trailing_zeros() as u64);
        }
        let next = self.occupied[(w0 + 1) % WORDS];
        (next != 0).then(|| start + (64 - b0) as u64 + next.trailing_zeros() as u64)
    }

    /// Time of the next event, if any.
    pub fn peek_time(&self) -> Option<Time> {
        self.peek_entry().map(|(t, _)| Time(t))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::heap::HeapQueue;
    use proptest::prelude::*;

    #[test]
    fn equal_times_pop_in_insertion_order() {
        let mut q = EventQueue::new();
        for i in 0..100u32 {
            q.push(Time(7), i);
        }
        q.push(Time(3), 1000);
        assert_eq!(q.pop(), Some((Time(3), 1000)));
        for i in 0..100u32 {
            assert_eq!(q.pop(), Some((Time(7), i)));
        }
        assert_eq!(q.pop(), None);
    }

    #[test]
    fn a_node_of_a_16_byte_event_fits_half_a_cache_line() {
        assert_eq!(std::mem::size_of::<Node<[u32; 4]>>(), 32);
    }

    #[test]
    #[should_panic(expected = "in the past")]
    fn scheduling_in_the_past_panics() {
        let mut q = EventQueue::new();
        q.push(Time(10), ());
        q.pop();
        q.push(Time(9), ());
    }

    #[test]
    fn far_events_wait_beyond_the_horizon_and_come_back_in_order() {
        let mut q = EventQueue::new();
        let horizon = (BUCKETS as u64) << BUCKET_SHIFT;
        q.push(Time(5 * horizon + 3), 'c');
        q.push(Time(1), 'a');
        q.push(Time(5 * horizon + 3), 'd');
        q.push(Time(2 * horizon), 'b');
        assert_eq!(q.peek_time(), Some(Time(1)));
        let got: Vec<char> = std::iter::from_fn(|| q.pop().map(|e| e.1)).collect();
        assert_eq!(got, vec!['a', 'b', 'c', 'd']);
    }

    /// Operations for the equivalence test: push at `now + delta`, push at a fixed time
    /// (or now, if that has passed), or pop.
    #[derive(Clone, Debug)]
    enum Op {
        Push(u64),
        PushAt(u64),
        Pop,
    }

    /// A few absolute times around the first horizons, so that events of one time are
    /// pushed both while it is beyond the horizon (overflow) and after it has entered the
    /// wheel, which must still pop them in push order.
    fn fixed_times() -> impl Strategy<Value = u64> {
        let h = (BUCKETS as u64) << BUCKET_SHIFT;
        prop_oneof![Just(h), Just(h + 1), Just(3 * h / 2), Just(2 * h), Just(2 * h + 128)]
    }

    fn ops() -> impl Strategy<Value = Vec<Op>> {
        let delta = prop_oneof![
            4 => 0u64..5,
            4 => 0u64..5_000,
            3 => 0u64..20_000_000,
            1 => 0u64..u64::MAX / 4,
        ];
        proptest::collection::vec(
            prop_oneof![
                3 => delta.prop_map(Op::Push),
                1 => fixed_times().prop_map(Op::PushAt),
                2 => Just(Op::Pop),
            ],
            0..600,
        )
    }

    proptest! {
        /// The calendar queue pops exactly what the plain heap pops, interleaved with
        /// pushes relative to the current time, near and far.
        #[test]
        fn behaves_exactly_like_the_reference_heap(ops in ops()) {
            let mut cal = EventQueue::new();
            let mut heap = HeapQueue::new();
            for (i, op) in ops.iter().enumerate() {
                match op {
                    Op::Push(d) => {
                        let t = Time(cal.now().0.saturating_add(*d));
                        cal.push(t, i);
                        heap.push(t, i);
                    }
                    Op::PushAt(t) => {
                        let t = Time(cal.now().0.max(*t));
                        cal.push(t, i);
                        heap.push(t, i);
                    }
                    Op::Pop => {
                        prop_assert_eq!(cal.peek_time(), heap.peek_time());
                        let [first, second] = cal.peek_ahead::<2>();
                        prop_assert_eq!(first.copied(), heap.peek().copied());
                        if let Some(s) = second {
                            prop_assert_eq!(Some(*s), heap.peek_second().copied());
                        }
                        prop_assert_eq!(cal.pop(), heap.pop());
                    }
                }
                prop_assert_eq!(cal.len(), heap.len());
            }
            while let Some(h) = heap.pop() {
                prop_assert_eq!(cal.pop(), Some(h));
            }
            prop_assert!(cal.pop().is_none());
        }
    }
}
