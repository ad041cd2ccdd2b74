//! A plain 4-ary min-heap event queue ordered by `(time, insertion sequence)`.
//!
//! The simulator uses the calendar queue in [`crate::queue`]; this heap is its
//! reference implementation in tests (same ordering guarantee, simplest possible
//! code) and the baseline in the engine's benchmark.

use crate::time::Time;

/// One scheduled event. The key packs `time` (high 64 bits) and the insertion
/// sequence (low 64 bits) so one integer comparison gives the total order.
#[derive(Clone, Copy)]
struct Entry<E> {
    key: u128,
    event: E,
}

/// A deterministic priority queue of events of type `E`.
pub struct HeapQueue<E> {
    heap: Vec<Entry<E>>,
    seq: u64,
    now: Time,
    popped: u64,
}

impl<E: Copy> Default for HeapQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E: Copy> HeapQueue<E> {
    /// An empty queue at time zero.
    pub fn new() -> Self {
        HeapQueue { heap: Vec::with_capacity(1024), seq: 0, now: Time::ZERO, popped: 0 }
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
        self.heap.len()
    }

    /// Whether no event is waiting.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// Time of the next event, if any.
    pub fn peek_time(&self) -> Option<Time> {
        self.heap.first().map(|e| Time((e.key >> 64) as u64))
    }

    /// The next event, without removing it.
    #[inline]
    pub fn peek(&self) -> Option<&E> {
        self.heap.first().map(|e| &e.event)
    }

    /// The event after the next, without removing either: the smallest of the root's
    /// children.
    pub fn peek_second(&self) -> Option<&E> {
        self.heap.get(1..self.heap.len().min(5))?.iter().min_by_key(|e| e.key).map(|e| &e.event)
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
        let key = ((at.0 as u128) << 64) | self.seq as u128;
        self.seq += 1;
        self.heap.push(Entry { key, event });
        self.sift_up(self.heap.len() - 1);
    }

    /// Removes and returns the earliest event, advancing [`now`](Self::now) to its time.
    #[inline]
    pub fn pop(&mut self) -> Option<(Time, E)> {
        let n = self.heap.len();
        if n == 0 {
            return None;
        }
        let top = self.heap.swap_remove(0);
        if n > 1 {
            self.sift_down(0);
        }
        let t = Time((top.key >> 64) as u64);
        self.now = t;
        self.popped += 1;
        Some((t, top.event))
    }

    #[inline]
    fn sift_up(&mut self, mut i: usize) {
        let item = self.heap[i];
        while i > 0 {
            let parent = (i - 1) / 4;
            if self.heap[parent].key <= item.key {
                break;
            }
            self.heap[i] = self.heap[parent];
            i = parent;
        }
        self.heap[i] = item;
    }

    #[inline]
    fn sift_down(&mut self, mut i: usize) {
        let n = self.heap.len();
        let item = self.heap[i];
        loop {
            let first = 4 * i + 1;
            if first >= n {
                break;
            }
            let last = (first + 4).min(n);
            let mut best = first;
            let mut best_key = self.heap[first].key;
            for c in first + 1..last {
                let k = self.heap[c].key;
                if k < best_key {
                    best = c;
                    best_key = k;
                }
            }
            if best_key >= item.key {
                break;
            }
            self.heap[i] = self.heap[best];
            i = best;
        }
        self.heap[i] = item;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn equal_times_pop_in_insertion_order() {
        let mut q = HeapQueue::new();
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
    #[should_panic(expected = "in the past")]
    fn scheduling_in_the_past_panics() {
        let mut q = HeapQueue::new();
        q.push(Time(10), ());
        q.pop();
        q.push(Time(9), ());
    }

    proptest! {
        #[test]
        fn pops_are_sorted_by_time_then_insertion(times in proptest::collection::vec(0u64..50, 0..300)) {
            let mut q = HeapQueue::new();
            for (i, t) in times.iter().enumerate() {
                q.push(Time(*t), i);
            }
            let mut expected: Vec<(u64, usize)> = times.iter().copied().zip(0..).collect();
            expected.sort();
            let got: Vec<(u64, usize)> = std::iter::from_fn(|| q.pop()).map(|(t, i)| (t.0, i)).collect();
            prop_assert_eq!(got, expected);
        }
    }
}
