//! The RNIC resource model: what a NIC must do for each packet besides putting it on
//! the wire.
//!
//! An RNIC processes every packet it sends or receives in a pipeline that needs the
//! packet's QP context on chip and, for the payload, the translation of its buffer's
//! virtual address, then moves the payload over PCIe. [`NicModel`] describes one NIC's
//! resources; [`RnicState`] is one NIC's state while a run goes on. With
//! `model = "ideal"` (no [`NicModel`]) none of this exists and a packet is processed in
//! no time, as before the model was written.
//!
//! # The pipeline
//! Each direction (transmit, receive) is an in-order pipeline with a rate: a packet
//! may leave it no sooner than one service time after the one before (a message's first
//! packet also costs a work request's service time on transmit). Processing overlaps
//! with the wire, so a pipeline faster than the wire adds no time; one slower than it
//! sets the pace (8-byte WRITEs at line rate are 166 M packets per second at 100 Gb/s,
//! more than a NIC processes).
//!
//! # Caches
//! The QP context cache holds the contexts of `qp_cache` QPs (least recently used out);
//! a packet whose QP is not on chip waits for a fetch over PCIe (`qp_fetch`), and the
//! pipeline, in order, waits with it. At most `fetches` fetches are under way at once
//! (a packet arriving while the pipeline waits may start its own): with one, a NIC
//! whose packets all miss processes one per fetch time (StaR's collapse to about 1 M
//! operations per second past its 300 contexts).
//!
//! Address translation: every page a payload touches must be translated. Host memory
//! and, with eMTT, GPU memory are translated by the NIC's own table (MTT), cached on
//! chip (`mtt_cache` entries, a miss fetched like a context). GPU memory with the ATC
//! is translated by PCIe ATS: the NIC's address translation cache (`atc_cache`
//! entries) and, on a miss, a translation request to the host's IOMMU (`atc_miss`),
//! `atc_outstanding` at once, each `iotlb_miss` longer when the IOMMU's IOTLB (`iotlb`
//! pages) does not hold the page either (STELLAR section 6, Fig. 8).
//!
//! # PCIe
//! Payloads cross PCIe at `pcie_rate` (DMA reads on transmit, writes on receive, each
//! direction its own lanes); a pipeline faster than PCIe is held to it.

use fabricsim_engine::{Dur, Rate, Time};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

/// Where the buffers a NIC reads and writes live.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Memory {
    /// Host memory, translated by the NIC's MTT.
    Host,
    /// GPU memory (GPU Direct RDMA), translated by `gdr`.
    Gpu,
}

/// How GPU memory addresses are translated (STELLAR section 6).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GdrTranslation {
    /// PCIe Address Translation Services: the NIC's ATC, misses answered by the IOMMU.
    Atc,
    /// STELLAR's extended MTT: GPU translations held in the NIC's own table.
    Emtt,
}

/// One NIC's resources. Every limit is optional: `None` means unbounded.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NicModel {
    /// Packets per second each pipeline (transmit, receive) processes.
    pub packet_rate: Option<f64>,
    /// Work requests (messages posted) per second the transmit pipeline takes.
    pub wqe_rate: Option<f64>,
    /// QP contexts on chip.
    pub qp_cache: Option<u32>,
    /// Time to fetch a QP context (or an MTT entry) from host memory over PCIe.
    pub qp_fetch: Dur,
    /// Fetches under way at once.
    pub fetches: u32,
    /// MTT entries on chip.
    pub mtt_cache: Option<u32>,
    /// Page size of the translations, bytes.
    pub page: u64,
    /// Where the buffers live.
    pub memory: Memory,
    /// How GPU memory is translated.
    pub gdr: GdrTranslation,
    /// ATC entries.
    pub atc_cache: u32,
    /// Time an ATS translation request takes.
    pub atc_miss: Dur,
    /// ATS translation requests under way at once.
    pub atc_outstanding: u32,
    /// Pages the IOMMU's IOTLB holds (`None`: every one).
    pub iotlb: Option<u32>,
    /// Extra time of an ATS request for a page the IOTLB does not hold.
    pub iotlb_miss: Dur,
    /// PCIe bandwidth, each direction.
    pub pcie_rate: Option<Rate>,
}

impl NicModel {
    /// A NIC without limits: what `model = "ideal"` means, for a host among modelled
    /// ones.
    pub fn unbounded() -> NicModel {
        NicModel {
            packet_rate: None,
            wqe_rate: None,
            qp_cache: None,
            qp_fetch: Dur::ZERO,
            fetches: 1,
            mtt_cache: None,
            page: 4096,
            memory: Memory::Host,
            gdr: GdrTranslation::Emtt,
            atc_cache: 0,
            atc_miss: Dur::ZERO,
            atc_outstanding: 1,
            iotlb: None,
            iotlb_miss: Dur::ZERO,
            pcie_rate: None,
        }
    }
}

/// What one NIC did, for the per-NIC results table.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RnicStats {
    /// Packets its transmit pipeline processed.
    pub tx_packets: u64,
    /// Packets its receive pipeline processed.
    pub rx_packets: u64,
    /// Work requests (messages) it took.
    pub wqes: u64,
    /// QP context lookups that hit.
    pub qp_hits: u64,
    /// QP context lookups that missed (each a fetch).
    pub qp_misses: u64,
    /// MTT lookups that hit.
    pub mtt_hits: u64,
    /// MTT lookups that missed.
    pub mtt_misses: u64,
    /// ATC lookups that hit.
    pub atc_hits: u64,
    /// ATC lookups that missed (each an ATS request).
    pub atc_misses: u64,
    /// ATS requests whose page the IOMMU's IOTLB did not hold.
    pub iotlb_misses: u64,
    /// Picoseconds the transmit pipeline was busy.
    pub tx_busy_ps: u64,
    /// Picoseconds the receive pipeline was busy.
    pub rx_busy_ps: u64,
    /// Picoseconds packets waited for fetches and translations.
    pub stall_ps: u64,
    /// Payload bytes read over PCIe (transmit).
    pub pcie_read_bytes: u64,
    /// Payload bytes written over PCIe (receive).
    pub pcie_write_bytes: u64,
}

/// A least-recently-used set of keys with a fixed capacity: O(1) per access, its
/// order kept in a doubly linked list over a slab (nothing allocated once full).
#[derive(Clone, Debug, Default)]
pub(crate) struct Lru {
    capacity: usize,
    /// Key -> slot, for keys below its length (QP contexts: a NIC's QPs numbered from
    /// 0); `NIL` where not held.
    dense: Vec<u32>,
    /// Key -> slot, for the others (pages).
    index: HashMap<u64, u32, BuildFx>,
    keys: Vec<u64>,
    prev: Vec<u32>,
    next: Vec<u32>,
    /// Most and least recently used slots.
    head: u32,
    tail: u32,
}

const NIL: u32 = u32::MAX;

impl Lru {
    pub(crate) fn new(capacity: usize) -> Lru {
        Lru::with_dense_keys(capacity, 0)
    }

    /// An LRU whose keys below `dense` are indexed by a table rather than hashed.
    pub(crate) fn with_dense_keys(capacity: usize, dense: usize) -> Lru {
        Lru {
            capacity,
            dense: vec![NIL; dense],
            index: HashMap::default(),
            keys: Vec::new(),
            prev: Vec::new(),
            next: Vec::new(),
            head: NIL,
            tail: NIL,
        }
    }

    fn unlink(&mut self, s: u32) {
        let (p, n) = (self.prev[s as usize], self.next[s as usize]);
        if p == NIL {
            self.head = n;
        } else {
            self.next[p as usize] = n;
        }
        if n == NIL {
            self.tail = p;
        } else {
            self.prev[n as usize] = p;
        }
    }

    fn push_front(&mut self, s: u32) {
        self.prev[s as usize] = NIL;
        self.next[s as usize] = self.head;
        if self.head != NIL {
            self.prev[self.head as usize] = s;
        }
        self.head = s;
        if self.tail == NIL {
            self.tail = s;
        }
    }

    /// Touches `key`: `true` if it was held (now the most recent), `false` if not (now
    /// held, the least recent evicted if full).
    pub(crate) fn touch(&mut self, key: u64) -> bool {
        if let Some(s) = self.slot(key) {
            if self.head != s {
                self.unlink(s);
                self.push_front(s);
            }
            return true;
        }
        if self.capacity == 0 {
            return false;
        }
        let s = if self.keys.len() < self.capacity {
            self.keys.push(key);
            self.prev.push(NIL);
            self.next.push(NIL);
            (self.keys.len() - 1) as u32
        } else {
            let s = self.tail;
            self.unlink(s);
            self.set_slot(self.keys[s as usize], NIL);
            self.keys[s as usize] = key;
            s
        };
        self.set_slot(key, s);
        self.push_front(s);
        false
    }

    /// The slot holding `key`, if held.
    #[inline]
    fn slot(&self, key: u64) -> Option<u32> {
        match self.dense.get(key as usize) {
            Some(&s) => (s != NIL).then_some(s),
            None => self.index.get(&key).copied(),
        }
    }

    /// Records `key` in slot `s` (`NIL`: no longer held).
    #[inline]
    fn set_slot(&mut self, key: u64, s: u32) {
        match self.dense.get_mut(key as usize) {
            Some(d) => *d = s,
            None if s == NIL => {
                self.index.remove(&key);
            }
            None => {
                self.index.insert(key, s);
            }
        }
    }
}

/// A multiplicative hash for the LRUs' sparse keys (page numbers): the standard
/// library's SipHash guards against adversarial keys, which a simulation has none of,
/// at several times the cost.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct BuildFx;

impl std::hash::BuildHasher for BuildFx {
    type Hasher = FxHasher;
    fn build_hasher(&self) -> FxHasher {
        FxHasher(0)
    }
}

/// See [`BuildFx`] (the constant is the golden ratio's, as in Firefox's and rustc's hash).
pub(crate) struct FxHasher(u64);

impl std::hash::Hasher for FxHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(b as u64);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// Requests under way at once when a model says "none" (unbounded): more than a run's
/// packets can have waiting.
pub const MAX_SLOTS: u32 = 4096;

/// Slots of a bounded number of concurrent requests: when each is free again, the
/// earliest (then the lowest-numbered) on top, so a request costs O(log n) even with
/// [`MAX_SLOTS`] of them.
#[derive(Clone, Debug, Default)]
struct Slots(BinaryHeap<Reverse<(Time, u32)>>);

impl Slots {
    /// `n` slots (at most [`MAX_SLOTS`]: as good as unbounded).
    fn new(n: u32) -> Slots {
        Slots((0..n.clamp(1, MAX_SLOTS)).map(|i| Reverse((Time::ZERO, i))).collect())
    }

    /// Starts a request of `cost` at `now` or when a slot frees: its completion.
    fn request(&mut self, now: Time, cost: Dur) -> Time {
        let mut top = self.0.peek_mut().expect("a slot");
        let Reverse((free, i)) = *top;
        let done = now.max(free) + cost;
        *top = Reverse((done, i));
        done
    }
}

/// A pipeline that takes one packet at a time, in order.
#[derive(Clone, Copy, Debug, Default)]
struct Pipeline {
    /// When it can take the next packet.
    free: Time,
}

/// The time one of `rate` things per second takes (none for an unbounded rate).
fn per(rate: Option<f64>) -> Dur {
    rate.map_or(Dur::ZERO, |r| Dur((1e12 / r).round() as u64))
}

/// One NIC's resources while a run goes on.
#[derive(Clone, Debug)]
pub struct RnicState {
    model: NicModel,
    /// A packet's time in a pipeline, and a work request's extra (from the rates).
    packet_service: Dur,
    wqe_service: Dur,
    tx: Pipeline,
    rx: Pipeline,
    qp: Lru,
    mtt: Lru,
    atc: Lru,
    /// The IOMMU's IOTLB behind this NIC's ATS requests.
    iotlb: Lru,
    fetches: Slots,
    ats: Slots,
    pcie_read_free: Time,
    pcie_write_free: Time,
    /// Counters.
    pub stats: RnicStats,
}

/// What a packet asks of its NIC.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Work {
    /// Its QP, numbered among its NIC's (contexts are per QP, requester and responder
    /// apart).
    pub(crate) qp: u32,
    /// Payload bytes to move over PCIe (0 for control packets).
    pub(crate) payload: u64,
    /// The buffer address the payload is read from or written to.
    pub(crate) addr: u64,
    /// Whether it starts a message (a work request to take).
    pub(crate) wqe: bool,
    /// Whether the packet's QP is a stateless one (StaR's server): the packet carries
    /// its context and its DMA address, so there is nothing to look up or translate.
    pub(crate) stateless: bool,
}

impl RnicState {
    /// A NIC with the resources of `model`, idle.
    pub fn new(model: NicModel) -> RnicState {
        RnicState::with_qps(model, 0)
    }

    /// A NIC whose QPs are numbered `0..qps` (their contexts indexed, not hashed).
    pub fn with_qps(model: NicModel, qps: usize) -> RnicState {
        let unbounded = |c: Option<u32>| c.map_or(usize::MAX, |c| c as usize);
        RnicState {
            model,
            packet_service: per(model.packet_rate),
            wqe_service: per(model.wqe_rate),
            tx: Pipeline::default(),
            rx: Pipeline::default(),
            qp: Lru::with_dense_keys(unbounded(model.qp_cache), qps),
            mtt: Lru::new(unbounded(model.mtt_cache)),
            atc: Lru::new(model.atc_cache as usize),
            iotlb: Lru::new(unbounded(model.iotlb)),
            fetches: Slots::new(model.fetches),
            ats: Slots::new(model.atc_outstanding),
            pcie_read_free: Time::ZERO,
            pcie_write_free: Time::ZERO,
            stats: RnicStats::default(),
        }
    }

    /// When the translations and context `w` needs are on chip, fetching what is not
    /// (from `now`).
    fn lookups(&mut self, now: Time, w: &Work) -> Time {
        let mut ready = now;
        if w.stateless {
            return ready;
        }
        if self.model.qp_cache.is_some() {
            if self.qp.touch(w.qp as u64) {
                self.stats.qp_hits += 1;
            } else {
                self.stats.qp_misses += 1;
                ready = ready.max(self.fetches.request(now, self.model.qp_fetch));
            }
        }
        // GPU memory behind the ATC is translated by it; everything else by the MTT,
        // which costs nothing when its cache is unbounded.
        let atc = self.model.memory == Memory::Gpu && self.model.gdr == GdrTranslation::Atc;
        if w.payload > 0 && (atc || self.model.mtt_cache.is_some()) {
            let page = self.model.page.max(1);
            let (first, last) = (w.addr / page, (w.addr + w.payload - 1) / page);
            for p in first..=last {
                if atc {
                    if self.atc.touch(p) {
                        self.stats.atc_hits += 1;
                    } else {
                        self.stats.atc_misses += 1;
                        let mut cost = self.model.atc_miss;
                        if self.model.iotlb.is_some() && !self.iotlb.touch(p) {
                            self.stats.iotlb_misses += 1;
                            cost += self.model.iotlb_miss;
                        }
                        ready = ready.max(self.ats.request(now, cost));
                    }
                } else if self.mtt.touch(p) {
                    self.stats.mtt_hits += 1;
                } else {
                    self.stats.mtt_misses += 1;
                    ready = ready.max(self.fetches.request(now, self.model.qp_fetch));
                }
            }
        }
        ready
    }

    /// A packet the NIC is to send, handed to it at `now`: when it can go on the wire.
    pub(crate) fn transmit(&mut self, now: Time, w: Work) -> Time {
        self.stats.tx_packets += 1;
        let ready = self.lookups(now, &w);
        let mut service = self.packet_service;
        if w.wqe {
            self.stats.wqes += 1;
            service += self.wqe_service;
        }
        let start = ready.max(self.tx.free);
        let mut out = start;
        if w.payload > 0 {
            self.stats.pcie_read_bytes += w.payload;
            if let Some(rate) = self.model.pcie_rate {
                // The payload is read before the packet leaves; reads are pipelined
                // ahead of the wire, so only the bandwidth shows: a read starts when
                // the one before has the lanes no more.
                let read = start.max(self.pcie_read_free);
                self.pcie_read_free = read + rate.tx_time(w.payload);
                out = read;
            }
        }
        self.tx.free = out + service;
        self.stats.tx_busy_ps += service.ps();
        self.stats.stall_ps += ready.since(now).ps();
        out
    }

    /// A packet that arrived at `now`: when the NIC has processed it (placed its payload,
    /// so its endpoint may take it).
    pub(crate) fn receive(&mut self, now: Time, w: Work) -> Time {
        self.stats.rx_packets += 1;
        let ready = self.lookups(now, &w);
        let service = self.packet_service;
        let start = ready.max(self.rx.free);
        let mut done = start + service;
        if w.payload > 0 {
            self.stats.pcie_write_bytes += w.payload;
            if let Some(rate) = self.model.pcie_rate {
                // Posted writes: the packet is done once its bytes have the lanes.
                let write = start.max(self.pcie_write_free) + rate.tx_time(w.payload);
                self.pcie_write_free = write;
                done = done.max(write);
            }
        }
        self.rx.free = done;
        self.stats.rx_busy_ps += service.ps();
        self.stats.stall_ps += ready.since(now).ps();
        done
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model() -> NicModel {
        NicModel {
            packet_rate: None,
            wqe_rate: None,
            qp_cache: None,
            qp_fetch: Dur::from_us(1),
            fetches: 1,
            mtt_cache: None,
            page: 4096,
            memory: Memory::Host,
            gdr: GdrTranslation::Atc,
            atc_cache: 64,
            atc_miss: Dur::from_us(1),
            atc_outstanding: 1,
            iotlb: None,
            iotlb_miss: Dur::ZERO,
            pcie_rate: None,
        }
    }

    fn work(qp: u32) -> Work {
        Work { qp, payload: 0, addr: 0, wqe: false, stateless: false }
    }

    #[test]
    fn the_lru_evicts_the_least_recently_used() {
        let mut l = Lru::new(2);
        assert!(!l.touch(1));
        assert!(!l.touch(2));
        assert!(l.touch(1));
        // 2 is the least recent: 3 evicts it.
        assert!(!l.touch(3));
        assert!(l.touch(1) && l.touch(3));
        assert!(!l.touch(2));
    }

    #[test]
    fn a_round_robin_over_more_qps_than_the_cache_misses_every_time() {
        // 4 contexts, 5 QPs in turn: LRU evicts exactly the next one needed.
        let mut n = RnicState::new(NicModel { qp_cache: Some(4), ..model() });
        let mut now = Time::ZERO;
        for i in 0..100 {
            now = n.receive(now, work(i % 5));
        }
        assert_eq!((n.stats.qp_hits, n.stats.qp_misses), (0, 100));
        // One fetch at a time: a microsecond each.
        assert_eq!(now, Time::ZERO + Dur::from_us(100));
        // Four QPs fit: after the first round every lookup hits, nothing waits.
        let mut n = RnicState::new(NicModel { qp_cache: Some(4), ..model() });
        let mut now = Time::ZERO;
        for i in 0..100 {
            now = n.receive(now, work(i % 4));
        }
        assert_eq!((n.stats.qp_hits, n.stats.qp_misses), (96, 4));
        assert_eq!(now, Time::ZERO + Dur::from_us(4));
    }

    #[test]
    fn misses_overlap_up_to_the_outstanding_fetches() {
        // Eight misses arriving together: with 4 fetch slots, two rounds of 1 us.
        let mut n = RnicState::new(NicModel { qp_cache: Some(1), fetches: 4, ..model() });
        let done: Vec<Time> = (0..8).map(|i| n.receive(Time::ZERO, work(i))).collect();
        assert_eq!(done[3], Time::ZERO + Dur::from_us(1));
        assert_eq!(done[7], Time::ZERO + Dur::from_us(2));
        // In order: a packet never finishes before the one ahead of it.
        assert!(done.windows(2).all(|w| w[0] <= w[1]));
    }

    #[test]
    fn the_packet_rate_sets_the_pace_and_overlaps_with_the_wire() {
        // 10 M packets per second: one every 100 ns, the first at once.
        let mut n = RnicState::new(NicModel { packet_rate: Some(1e7), ..model() });
        let out: Vec<Time> = (0..5).map(|_| n.transmit(Time::ZERO, work(0))).collect();
        let expect: Vec<Time> = (0..5).map(|i| Time::ZERO + Dur::from_ns(100 * i)).collect();
        assert_eq!(out, expect);
        // Handed over slower than that, packets pass without delay.
        let mut n = RnicState::new(NicModel { packet_rate: Some(1e7), ..model() });
        for i in 0..5 {
            let t = Time::ZERO + Dur::from_ns(200 * i);
            assert_eq!(n.transmit(t, work(0)), t);
        }
    }

    #[test]
    fn pcie_holds_payloads_to_its_bandwidth() {
        // 4096-byte payloads over 100 Gb/s of PCIe: 327.68 ns each.
        let mut n = RnicState::new(NicModel { pcie_rate: Some(Rate::gbps(100)), ..model() });
        let w = Work { qp: 0, payload: 4096, addr: 0, wqe: false, stateless: false };
        let done: Vec<Time> = (0..3).map(|_| n.receive(Time::ZERO, w)).collect();
        assert_eq!(done[2], Time::ZERO + Rate::gbps(100).tx_time(4096).mul(3));
        assert_eq!(n.stats.pcie_write_bytes, 3 * 4096);
    }

    #[test]
    fn gpu_pages_miss_the_atc_beyond_its_capacity_but_not_the_emtt() {
        // 64 ATC entries; 128 pages written in turn, twice: every access misses.
        let gpu = NicModel { memory: Memory::Gpu, mtt_cache: Some(1 << 20), ..model() };
        let mut atc = RnicState::new(gpu);
        let mut emtt = RnicState::new(NicModel { gdr: GdrTranslation::Emtt, ..gpu });
        for _round in 0..2 {
            for p in 0..128u64 {
                let w = Work { qp: 0, payload: 4096, addr: p * 4096, wqe: false, stateless: false };
                atc.receive(Time::ZERO, w);
                emtt.receive(Time::ZERO, w);
            }
        }
        assert_eq!((atc.stats.atc_hits, atc.stats.atc_misses), (0, 256));
        assert_eq!((emtt.stats.mtt_hits, emtt.stats.mtt_misses), (128, 128));
        assert_eq!(emtt.stats.atc_misses, 0);
    }
}
