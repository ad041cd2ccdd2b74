//! MRC's entropy-value sets (MRC sections 2.1, 2.4, 3, 4).
//!
//! Per plane (NIC port) an ordered *active* list the sender rotates through, a
//! *backup* pool that replaces retired values from the same plane (so planes stay
//! equally loaded), and the *retired* values being probed. An entropy value (EV) holds
//! its plane in the top 3 bits ([`fabricsim_wire::ev_with_plane`]) and random bits
//! below, which select its path (ECMP hashes them; SRv6 turns them into uSIDs).
//!
//! Per-EV health: an ECN echo adds a skip *penalty*; rotation skips a penalised EV and
//! takes one off its penalty (only the first skipped EV per send), so one mark makes
//! an EV sit out about one rotation. A suspected loss ([`EvSets::demote`]) takes the EV
//! out of the rotation at once; a proven one retires it. A retired EV is probed every
//! `probe_interval` (±25 % jitter); `probe_successes` consecutive answers resurrect it
//! into the active slot it lost, a missed answer restarts the count and doubles its
//! interval (up to `probe_backoff_max`). These numbers are fabricsim's (the paper gives
//! none; see the README).

use crate::common::{EvState, PathLog, PathStats, MAX_PLANES};
use fabricsim_engine::{Dur, Rng, Time};
use std::collections::VecDeque;

/// EV-set parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EvSetConfig {
    /// Active EVs in all (split equally over planes).
    pub active: u32,
    /// Backup EVs per plane.
    pub backup_per_plane: u32,
    /// Penalty one ECN echo adds.
    pub ecn_penalty: u8,
    /// Penalty a trim NACK adds (0: trims at the last hop say nothing about the path).
    pub trim_penalty: u8,
    /// An EV that collects this many ECN echoes within `ecn_swap_window` is swapped
    /// with a backup of its plane (0: never): with few active EVs, skipping alone cannot
    /// move a flow off a congested path (MRC Fig. 14).
    pub ecn_swap: u8,
    /// Window for counting `ecn_swap` echoes.
    pub ecn_swap_window: Dur,
    /// Probe period of a retired EV.
    pub probe_interval: Dur,
    /// Consecutive answered probes that resurrect an EV.
    pub probe_successes: u8,
    /// A probe unanswered this long failed.
    pub probe_timeout: Dur,
    /// Each failed probe doubles the EV's probe period, up to this.
    pub probe_backoff_max: Dur,
}

#[derive(Clone, Copy, Debug)]
struct Probe {
    due: Time,
    interval: Dur,
    successes: u8,
    sent: Option<Time>,
}

/// An active entry and its EV, as the rotation lists hold them, with the data packets
/// the fast rotation sent on it while it was in the list (moved to [`Hot::packets`] as
/// it leaves): such a send writes only the line it read.
#[derive(Clone, Copy, Debug)]
struct Slot {
    entry: u32,
    ev: u32,
    packets: u64,
}

/// What the per-packet rotation touches of an EV, apart from the rest of its entry: 16
/// bytes, four to a cache line, where a whole [`Entry`] spans two. A send reads the next
/// EV's penalty only while some EV of its plane has one, and counts itself here only
/// then (and for retransmissions and copies); on a large fabric these were the sender's
/// most frequent cache misses.
#[derive(Clone, Copy, Debug)]
struct Hot {
    ev: u32,
    /// Rotations left to skip this EV (ECN or trim feedback).
    penalty: u8,
    /// Data packets sent on it (`PathStats::packets`), but for those the fast rotation
    /// counts in its [`Slot`] while it is active.
    packets: u64,
}

#[derive(Clone, Copy, Debug)]
struct Entry {
    ev: u32,
    plane: u8,
    state: EvState,
    /// The state last written to the log (active/avoided flaps are coalesced).
    logged: EvState,
    /// ECN echoes counted since `marks_since`.
    marks: u8,
    marks_since: Time,
    probe: Probe,
    /// The entry that took this one's active slot when it was demoted or retired
    /// (`NONE` if none): a resurrected EV takes its slot back (see `probe_answered`).
    replaced_by: u32,
    /// Taken out of the rotation on a suspected loss ([`EvSets::demote`]): held out of
    /// the backup pool until [`EvSets::clear`]ed or [`EvSets::retire`]d.
    suspect: bool,
    stats: PathStats,
}

/// A small open-addressing map from EV to entry index (EVs are random 32-bit values;
/// every ACK needs this lookup).
#[derive(Clone, Debug)]
struct EvMap {
    slots: Vec<(u32, u32)>,
    len: usize,
}

const EMPTY: u32 = u32::MAX;
/// No entry.
const NONE: u32 = u32::MAX;

impl EvMap {
    fn new() -> EvMap {
        EvMap { slots: vec![(0, EMPTY); 64], len: 0 }
    }
    fn home(&self, ev: u32) -> usize {
        (ev.wrapping_mul(0x9E37_79B9) >> 8) as usize & (self.slots.len() - 1)
    }
    fn get(&self, ev: u32) -> Option<usize> {
        let mut i = self.home(ev);
        loop {
            let (k, v) = self.slots[i];
            if v == EMPTY {
                return None;
            }
            if k == ev {
                return Some(v as usize);
            }
            i = (i + 1) & (self.slots.len() - 1);
        }
    }
    fn insert(&mut self, ev: u32, idx: u32) {
        if (self.len + 1) * 2 > self.slots.len() {
            let grown = vec![(0, EMPTY); self.slots.len() * 2];
            let old = std::mem::replace(&mut self.slots, grown);
            self.len = 0;
            for (k, v) in old.into_iter().filter(|s| s.1 != EMPTY) {
                self.insert(k, v);
            }
        }
        let mut i = self.home(ev);
        while self.slots[i].1 != EMPTY {
            i = (i + 1) & (self.slots.len() - 1);
        }
        self.slots[i] = (ev, idx);
        self.len += 1;
    }
}

/// How many times their configured size (active plus backups) the EV sets may grow by
/// replacing retired EVs with fresh ones.
pub const MAX_GROWTH: u32 = 8;

/// The EV sets of one MRC connection.
#[derive(Clone, Debug)]
pub struct EvSets {
    cfg: EvSetConfig,
    first_port: u8,
    /// Indexed like `entries`.
    hot: Vec<Hot>,
    /// Per entry, the send time of the newest packet on its EV known to have arrived.
    /// Apart from `entries` (two cache lines each) because every acknowledgement
    /// writes it: eight to a cache line here.
    delivered: Vec<Time>,
    entries: Vec<Entry>,
    map: EvMap,
    /// Planes in use (the first `planes` entries of `active` and `rot`).
    planes: u8,
    /// Per plane index, the active entries in rotation order, each with its EV. In
    /// the struct rather than behind a pointer: every send reads its plane's list and
    /// rotation point. With the EV beside the entry, a send on a plane where no EV is
    /// penalised reads nothing else (see `penalised`).
    active: [Vec<Slot>; MAX_PLANES],
    rot: [usize; MAX_PLANES],
    /// Per plane index, how many of its entries have a penalty. While none has, the
    /// rotation needs no per-EV state: on a large fabric reading it was the sender's
    /// costliest cache miss, one per packet.
    penalised: [u32; MAX_PLANES],
    backup: Vec<VecDeque<u32>>,
    /// Per plane, active slots given up because nothing was left to fill them (see
    /// [`retire`](EvSets::retire)); refilled as EVs come back.
    empty_slots: Vec<u32>,
    retired: Vec<u32>,
    log: Vec<PathLog>,
    /// Per plane, the low bits of its next EV of the first active set.
    next_bits: Vec<u32>,
    /// The first sets are being built.
    building: bool,
    rng: Rng,
}

impl EvSets {
    /// Fresh sets over planes `first_port .. first_port + planes`.
    pub fn new(cfg: EvSetConfig, first_port: u8, planes: u8, now: Time, rng: Rng) -> EvSets {
        let n = planes as usize;
        assert!(n <= MAX_PLANES, "{n} planes: at most {MAX_PLANES}");
        let mut s = EvSets {
            cfg,
            first_port,
            hot: Vec::new(),
            delivered: Vec::new(),
            entries: Vec::new(),
            map: EvMap::new(),
            planes,
            active: Default::default(),
            rot: [0; MAX_PLANES],
            penalised: [0; MAX_PLANES],
            backup: vec![VecDeque::new(); n],
            empty_slots: vec![0; n],
            retired: Vec::new(),
            log: Vec::new(),
            next_bits: Vec::new(),
            building: true,
            rng,
        };
        s.next_bits = (0..n).map(|_| s.rng.next_u64() as u32).collect();
        let per_plane = (cfg.active / planes as u32).max(1);
        // Sized once: grown by doubling, a 1024-connection run's sets were copied
        // and their fresh pages zeroed several times over while it was built.
        let total = n * (per_plane + cfg.backup_per_plane) as usize;
        s.hot.reserve_exact(total);
        s.delivered.reserve_exact(total);
        s.entries.reserve_exact(total);
        s.log.reserve_exact(total);
        for p in 0..n {
            s.active[p].reserve_exact(per_plane as usize);
            s.backup[p].reserve_exact(cfg.backup_per_plane as usize);
            for _ in 0..per_plane {
                let i = s.fresh(p as u8, EvState::Active, now);
                s.active[p].push(s.slot(i));
            }
            for _ in 0..cfg.backup_per_plane {
                let i = s.fresh(p as u8, EvState::Backup, now);
                s.backup[p].push_back(i);
            }
            // Start each plane's rotation at a random point so connections that
            // started together do not move in lockstep.
            s.rot[p] = s.rng.below(per_plane as u64) as usize;
        }
        s.building = false;
        s
    }

    /// A new EV for plane index `p` (its bits above the plane: consecutive for the first
    /// active set, random otherwise), logged in `state`.
    fn fresh(&mut self, p: u8, state: EvState, now: Time) -> u32 {
        let plane = self.first_port + p;
        let ev = loop {
            // The first active set takes consecutive values, so that each sender
            // spreads evenly over the paths (SRv6 reads the EV's low bits digit by
            // digit, one per tier). Spares and replacements are random: consecutive
            // spares would move colliding senders in lockstep, each swap flipping the
            // same digit of both.
            let bits = if state == EvState::Active && self.building {
                let b = self.next_bits[p as usize];
                self.next_bits[p as usize] = b.wrapping_add(1);
                b
            } else {
                self.rng.next_u64() as u32
            };
            let ev = fabricsim_wire::ev_with_plane(bits, plane);
            if self.map.get(ev).is_none() {
                break ev;
            }
        };
        let idx = self.entries.len() as u32;
        self.hot.push(Hot { ev, penalty: 0, packets: 0 });
        self.delivered.push(Time::ZERO);
        self.entries.push(Entry {
            ev,
            plane: p,
            state,
            logged: state,
            marks: 0,
            marks_since: now,
            probe: Probe { due: Time::MAX, interval: self.cfg.probe_interval, successes: 0, sent: None },
            replaced_by: NONE,
            suspect: false,
            stats: PathStats { ev, ..Default::default() },
        });
        self.map.insert(ev, idx);
        self.log.push(PathLog { time: now, ev, state });
        idx
    }

    /// Entry `i` as an active list holds it.
    fn slot(&self, i: u32) -> Slot {
        Slot { entry: i, ev: self.hot[i as usize].ev, packets: 0 }
    }

    /// `slot` leaves its active list: its packet count joins the entry's.
    fn leave(&mut self, slot: Slot) -> u32 {
        self.hot[slot.entry as usize].packets += slot.packets;
        slot.entry
    }

    /// Where entry `i` is in plane index `p`'s active list, if it is.
    fn position(&self, p: usize, i: u32) -> Option<usize> {
        self.active[p].iter().position(|a| a.entry == i)
    }

    /// Sets entry `i`'s penalty, keeping its plane's count of penalised entries.
    fn set_penalty(&mut self, i: u32, v: u8) {
        let old = std::mem::replace(&mut self.hot[i as usize].penalty, v);
        if (old > 0) != (v > 0) {
            let p = self.entries[i as usize].plane as usize;
            if v > 0 {
                self.penalised[p] += 1;
            } else {
                self.penalised[p] -= 1;
            }
        }
        debug_assert_eq!(
            self.penalised[self.entries[i as usize].plane as usize] as usize,
            (0..self.entries.len())
                .filter(|&k| self.entries[k].plane == self.entries[i as usize].plane && self.hot[k].penalty > 0)
                .count()
        );
    }

    /// Moves entry `i` to `state`. Retirements, probes and backups are logged at once;
    /// the active/avoided flicker of ECN skipping is logged when the log is drained, at
    /// most once per EV per drain.
    fn set_state(&mut self, i: u32, state: EvState, now: Time) {
        let e = &mut self.entries[i as usize];
        if e.state == state {
            return;
        }
        e.state = state;
        if !matches!(state, EvState::Active | EvState::Avoided)
            || !matches!(e.logged, EvState::Active | EvState::Avoided)
        {
            e.logged = state;
            self.log.push(PathLog { time: now, ev: e.ev, state });
        }
    }

    /// Counters of `ev`, if it belongs to this connection (all but `packets`, which
    /// [`count_send`](Self::count_send) keeps apart).
    pub fn stats_mut(&mut self, ev: u32) -> Option<&mut PathStats> {
        let i = self.map.get(ev)?;
        Some(&mut self.entries[i].stats)
    }

    /// A packet sent on `ev` at `sent` arrived (its SACK echoes both).
    pub fn delivered(&mut self, ev: u32, sent: Time) {
        if let Some(i) = self.map.get(ev) {
            self.delivered_slot(i as u32, sent);
        }
    }

    /// [`delivered`](Self::delivered) for the EV in `slot` (from
    /// [`next_slot`](Self::next_slot)), without looking it up.
    pub fn delivered_slot(&mut self, slot: u32, sent: Time) {
        let d = &mut self.delivered[slot as usize];
        *d = (*d).max(sent);
    }

    /// Whether `slot` (from [`next_slot`](Self::next_slot)) holds `ev`.
    pub fn slot_holds(&self, slot: u32, ev: u32) -> bool {
        self.hot.get(slot as usize).is_some_and(|h| h.ev == ev)
    }

    /// Whether a packet sent on `ev` after `sent` has arrived. One EV is one path, and
    /// a path delivers its frames in order: if so, a packet sent at `sent` on `ev` that
    /// has not arrived was lost on that path.
    pub fn delivered_after(&self, ev: u32, sent: Time) -> bool {
        self.map.get(ev).is_some_and(|i| self.delivered[i] > sent)
    }

    /// Counts a data packet (a retransmission if `retx`) sent on the EV in `slot` (from
    /// [`next_slot`](Self::next_slot)).
    pub fn count_send(&mut self, slot: u32, retx: bool) {
        self.hot[slot as usize].packets += 1;
        if retx {
            self.entries[slot as usize].stats.retransmissions += 1;
        }
    }

    /// Counters of every EV that carried traffic.
    pub fn stats(&self) -> Vec<PathStats> {
        let mut packets: Vec<u64> = self.hot.iter().map(|h| h.packets).collect();
        for a in self.active[..self.planes as usize].iter().flatten() {
            packets[a.entry as usize] += a.packets;
        }
        self.entries
            .iter()
            .zip(packets)
            .map(|(e, packets)| PathStats { packets, ..e.stats })
            .filter(|s| s.packets > 0 || s.losses > 0)
            .collect()
    }

    /// Active EVs per plane.
    pub fn active_per_plane(&self) -> Vec<usize> {
        self.active[..self.planes as usize].iter().map(|a| a.len()).collect()
    }

    /// Whether plane index `p` has an active EV.
    pub fn has_active(&self, p: u8) -> bool {
        self.active.get(p as usize).is_some_and(|a| !a.is_empty())
    }

    /// The current state of `ev`.
    pub fn state(&self, ev: u32) -> Option<EvState> {
        self.map.get(ev).map(|i| self.entries[i].state)
    }

    /// The EVs now in the active set of plane index `p`.
    pub fn active(&self, p: u8) -> Vec<u32> {
        self.active[p as usize].iter().map(|a| a.ev).collect()
    }

    /// The next EV of plane index `p` in rotation, skipping penalised ones (and
    /// `avoid`, the EV a retransmitted packet was lost on). `None` if the plane has no
    /// active EV.
    pub fn next(&mut self, p: u8, now: Time, avoid: Option<u32>) -> Option<u32> {
        self.next_slot(p, now, avoid).map(|(ev, _)| ev)
    }

    /// [`next`](Self::next), with the EV's slot for [`count_send`](Self::count_send): the
    /// sender counts the packet without looking the EV up again.
    pub fn next_slot(&mut self, p: u8, now: Time, avoid: Option<u32>) -> Option<(u32, u32)> {
        let list = &self.active[p as usize];
        let n = list.len();
        if n == 0 {
            return None;
        }
        // A packet lost on the plane's only active EV is resent on a backup (once, not
        // activating it): "resent on another path". On the same EV it was lost for ever
        // when that one path was dead and nothing else was sent to prove it (a timeout
        // only retires an EV once a later packet got through elsewhere).
        if n == 1 && avoid.is_some_and(|a| list[0].ev == a) {
            if let Some(&b) = self.backup[p as usize].front() {
                return Some((self.hot[b as usize].ev, b));
            }
        }
        if let Some(a) = self.fast_turn(p as usize, avoid) {
            return Some((a.ev, a.entry));
        }
        let mut decremented = false;
        let mut fallback = None;
        for _ in 0..n {
            let i = self.next_in_turn(p as usize, n).entry;
            let e = self.hot[i as usize];
            if Some(e.ev) == avoid && n > 1 {
                continue;
            }
            fallback.get_or_insert((e.ev, i));
            if e.penalty > 0 {
                if !decremented {
                    decremented = true;
                    self.set_penalty(i, e.penalty - 1);
                    if e.penalty == 1 {
                        self.set_state(i, EvState::Active, now);
                    }
                }
                continue;
            }
            return Some((e.ev, i));
        }
        // Every EV is penalised: use one anyway rather than stop sending.
        fallback
    }

    /// The next slot of plane index `p`'s rotation, taking its turn, when nothing is
    /// to be skipped: no EV of the plane is penalised and none is to be `avoid`ed. The
    /// per-EV records need not be read then. `None` otherwise (or for an empty plane).
    #[inline]
    fn fast_turn(&mut self, p: usize, avoid: Option<u32>) -> Option<&mut Slot> {
        let n = self.active[p].len();
        (n > 0 && avoid.is_none() && self.penalised[p] == 0).then(|| self.next_in_turn(p, n))
    }

    /// The next slot of plane index `p`'s rotation (of `n`, not 0), taking its turn.
    #[inline]
    fn next_in_turn(&mut self, p: usize, n: usize) -> &mut Slot {
        // The list may have shrunk since the last send; `%` only then (a division per
        // packet showed in profiles).
        let mut r = self.rot[p];
        if r >= n {
            r %= n;
        }
        self.rot[p] = r + 1;
        &mut self.active[p][r]
    }

    /// [`next_slot`](Self::next_slot) for a data packet about to be sent, counted on its
    /// EV as [`count_send`](Self::count_send) would count it.
    pub fn next_sent(&mut self, p: u8, now: Time, avoid: Option<u32>, retx: bool) -> Option<(u32, u32)> {
        if !retx {
            if let Some(a) = self.fast_turn(p as usize, avoid) {
                a.packets += 1;
                return Some((a.ev, a.entry));
            }
        }
        let (ev, slot) = self.next_slot(p, now, avoid)?;
        self.count_send(slot, retx);
        Some((ev, slot))
    }

    /// An EV of plane index `p` outside the rotation, for a packet resent when every
    /// active EV of the plane has gone silent (see `MrcSender::poll_transmit`): a fresh
    /// one, which joins the backups, while the sets may still grow, else a backup drawn
    /// at random; counted as a retransmission on it. `None` if there is neither.
    pub fn explore(&mut self, p: u8, now: Time) -> Option<(u32, u32)> {
        let i = if self.entries.len() < self.max_entries() {
            let i = self.fresh(p, EvState::Backup, now);
            self.backup[p as usize].push_back(i);
            i
        } else {
            let pool = &self.backup[p as usize];
            if pool.is_empty() {
                return None;
            }
            pool[self.rng.below(pool.len() as u64) as usize]
        };
        self.count_send(i, true);
        Some((self.hot[i as usize].ev, i))
    }

    /// An active EV of plane index `p` for a control packet, chosen without moving the
    /// data rotation.
    pub fn any_active(&mut self, p: u8) -> Option<u32> {
        let list = &self.active[p as usize];
        if list.is_empty() {
            return None;
        }
        Some(list[self.rng.below(list.len() as u64) as usize].ev)
    }

    /// An ECN echo for `ev`: penalise it, and swap it for a backup once it collects
    /// `ecn_swap` echoes within `ecn_swap_window`.
    pub fn on_ecn(&mut self, ev: u32, now: Time) {
        let Some(i) = self.map.get(ev) else { return };
        self.entries[i].stats.ecn_marks += 1;
        self.add_penalty(i as u32, self.cfg.ecn_penalty, now);
        let e = &mut self.entries[i];
        if now.since(e.marks_since) > self.cfg.ecn_swap_window {
            e.marks = 0;
            e.marks_since = now;
        }
        e.marks = e.marks.saturating_add(1);
        if self.cfg.ecn_swap > 0 && e.marks >= self.cfg.ecn_swap {
            self.swap_out(i, now);
        }
    }

    /// A packet on `ev` is overdue (RACK): the path is slow, perhaps broken. It leaves
    /// the rotation at once for a backup (or a fresh EV), and is held apart, in the
    /// backup state but not in the pool, until [`clear`](Self::clear)ed (it was only
    /// slow) or [`retire`](Self::retire)d (it lost the packet): a broken path must not
    /// come back into use meanwhile.
    pub fn demote(&mut self, ev: u32, now: Time) {
        let Some(i) = self.map.get(ev) else { return };
        let e = self.entries[i];
        if !matches!(e.state, EvState::Active | EvState::Avoided) {
            return;
        }
        let p = e.plane as usize;
        let Some(pos) = self.position(p, i as u32) else { return };
        if !self.replace_active(p, pos, now) {
            // Nothing left to replace it with: it stays in the rotation.
            return;
        }
        self.set_penalty(i as u32, 0);
        self.entries[i].marks = 0;
        self.entries[i].suspect = true;
        self.set_state(i as u32, EvState::Backup, now);
    }

    /// A suspected `ev` delivered what it was suspected of losing: it joins the backups.
    pub fn clear(&mut self, ev: u32, now: Time) {
        let Some(i) = self.map.get(ev) else { return };
        if std::mem::take(&mut self.entries[i].suspect) {
            let p = self.entries[i].plane as usize;
            self.backup[p].push_back(i as u32);
            self.set_state(i as u32, EvState::Backup, now);
            self.refill(p, now);
        }
    }

    /// Fills plane index `p`'s empty active slots from its backups.
    fn refill(&mut self, p: usize, now: Time) {
        while self.empty_slots[p] > 0 {
            let Some(b) = self.take_backup(p) else { return };
            self.fill_empty_slot(p, b, now);
        }
    }

    /// Entry `i` takes one of plane index `p`'s empty active slots.
    fn fill_empty_slot(&mut self, p: usize, i: u32, now: Time) {
        self.empty_slots[p] -= 1;
        self.active[p].push(self.slot(i));
        self.set_penalty(i, 0);
        self.set_state(i, EvState::Active, now);
    }

    /// Puts the next backup of plane index `p` (or a fresh EV if the pool is empty)
    /// into active position `pos`.
    /// A spare of plane index `p`, drawn at random (EVs brought back together by probes
    /// join the spares together: taking them in order would move the active set onto
    /// their paths in a body).
    fn take_backup(&mut self, p: usize) -> Option<u32> {
        let n = self.backup[p].len();
        if n == 0 {
            return None;
        }
        let k = self.rng.below(n as u64) as usize;
        self.backup[p].swap_remove_back(k)
    }

    /// Puts a backup (or a fresh EV) in active slot `pos` of plane `p`. Returns false,
    /// changing nothing, once the sets have grown to [`MAX_GROWTH`] times their
    /// configured size: a receiver whose only port is down loses every packet, and
    /// fresh EVs for ever made each probe scan longer (minutes for one second).
    fn replace_active(&mut self, p: usize, pos: usize, now: Time) -> bool {
        let replacement = match self.take_backup(p) {
            Some(b) => b,
            None if self.entries.len() < self.max_entries() => self.fresh(p as u8, EvState::Backup, now),
            None => return false,
        };
        let slot = self.slot(replacement);
        let out = std::mem::replace(&mut self.active[p][pos], slot);
        let out = self.leave(out);
        self.entries[out as usize].replaced_by = replacement;
        self.set_state(replacement, EvState::Active, now);
        self.set_penalty(replacement, 0);
        true
    }

    /// The most entries the sets may grow to (fresh EVs replacing retired ones).
    fn max_entries(&self) -> usize {
        let planes = self.planes as u32;
        (MAX_GROWTH * (self.cfg.active + self.cfg.backup_per_plane * planes).max(planes)) as usize
    }

    /// Swaps active (or avoided) entry `i` for a backup of its plane, if there is one.
    /// Congested, not broken: it waits in the backups rather than being retired.
    fn swap_out(&mut self, i: usize, now: Time) {
        let e = self.entries[i];
        if !matches!(e.state, EvState::Active | EvState::Avoided) {
            return;
        }
        let p = e.plane as usize;
        let Some(pos) = self.position(p, i as u32) else { return };
        let Some(b) = self.take_backup(p) else { return };
        self.step_down(p, pos, b, now);
    }

    /// A trim NACK for `ev`.
    pub fn on_trim(&mut self, ev: u32, now: Time) {
        let Some(i) = self.map.get(ev) else { return };
        self.entries[i].stats.trims += 1;
        self.add_penalty(i as u32, self.cfg.trim_penalty, now);
    }

    fn add_penalty(&mut self, i: u32, k: u8, now: Time) {
        if k == 0 || !matches!(self.entries[i as usize].state, EvState::Active | EvState::Avoided) {
            return;
        }
        self.set_penalty(i, self.hot[i as usize].penalty.saturating_add(k).min(15));
        self.set_state(i, EvState::Avoided, now);
    }

    /// An untrimmed loss on `ev`: the path is assumed broken. Retire it and promote a
    /// backup of the same plane (or a fresh EV if the plane's pool is empty). Once the
    /// sets may not grow any more, its slot is left empty: a plane whose paths to this
    /// peer are all dead (both of its T1 switches down) then carries nothing for the
    /// connection, and the other planes everything, until probes bring an EV back.
    /// `usable`: bit `q` set while plane index `q` can carry packets (both ends' NIC
    /// ports up); EVs of the other planes do not count as a way out (see below).
    pub fn retire(&mut self, ev: u32, now: Time, usable: u8) {
        let Some(i) = self.map.get(ev) else { return };
        let i = i as u32;
        let p = self.entries[i as usize].plane as usize;
        self.entries[i as usize].stats.losses += 1;
        if let Some(pos) = self.position(p, i) {
            if !self.replace_active(p, pos, now) {
                let elsewhere: usize = (0..self.planes as usize)
                    .filter(|&q| q != p && usable & (1 << q) != 0)
                    .map(|q| self.active[q].len())
                    .sum();
                if self.active[p].len() == 1 && elsewhere == 0 {
                    // The last active EV of the connection's usable planes stays in
                    // use: with no plane left to carry it, a link losing half its
                    // packets (which retires EV after EV) would stop the connection
                    // until probes, which need several answers in a row, brought one
                    // back. (EVs of a plane whose port is down carry nothing: counted
                    // as a way out, they let the only working plane be emptied, and a
                    // connection took twice as long.)
                    return;
                }
                let out = self.active[p].remove(pos);
                self.leave(out);
                self.empty_slots[p] += 1;
            }
        } else if std::mem::take(&mut self.entries[i as usize].suspect) {
            // Held apart since RACK suspected it (see `demote`): nothing to take out.
        } else if self.entries[i as usize].state == EvState::Backup {
            // A backup lost a packet it carried: sent there by `explore` because the
            // rotation had gone silent, or by `next_slot` with every active EV
            // penalised, or while it was active, before it left the rotation (ECN, a
            // cleared suspicion, a resurrected EV taking its slot). Left in the pool it
            // could be drawn again, or fill the next active slot that empties, and
            // lose that plane's packets. Its `replaced_by`, if it once left the
            // rotation, stays: probes that bring it back return it to the slot it
            // held, as they do an EV retired from the rotation (see `resurrect`).
            // (Forgetting it, so that it rejoined the backups instead, measured worse:
            // 18 random fault scenarios changed, 7 slower and 1 faster, slowest flows
            // 6.7 % slower in geometric mean.)
            self.backup[p].retain(|&b| b != i);
        } else {
            // Already retired or being probed: nothing to take out.
            return;
        }
        self.set_state(i, EvState::Retired, now);
        let jitter = self.jitter(self.cfg.probe_interval);
        self.set_penalty(i, 0);
        let e = &mut self.entries[i as usize];
        e.probe = Probe { due: now + jitter, interval: self.cfg.probe_interval, successes: 0, sent: None };
        self.retired.push(i);
    }

    /// `ev` was retired for a loss that turned out spurious (the packet arrived after
    /// all): it is healthy, so it goes back to its plane's backup pool.
    pub fn unretire(&mut self, ev: u32, now: Time) {
        let Some(i) = self.map.get(ev) else { return };
        let i = i as u32;
        if !matches!(self.entries[i as usize].state, EvState::Retired | EvState::Probing) {
            return;
        }
        self.retired.retain(|&r| r != i);
        let e = &mut self.entries[i as usize];
        e.stats.losses = e.stats.losses.saturating_sub(1);
        e.probe.sent = None;
        let p = e.plane as usize;
        self.backup[p].push_back(i);
        self.set_state(i, EvState::Backup, now);
        self.refill(p, now);
    }

    /// `d` ±25 %.
    fn jitter(&mut self, d: Dur) -> Dur {
        let quarter = d.ps() / 4;
        Dur(d.ps() - quarter + self.rng.below(2 * quarter + 1))
    }

    /// A retired EV of plane index `p` whose probe is due, marked as probed.
    pub fn probe_due(&mut self, p: u8, now: Time) -> Option<u32> {
        let k = self.retired.iter().position(|&i| {
            let e = &self.entries[i as usize];
            e.plane == p && e.probe.sent.is_none() && e.probe.due <= now
        })?;
        let i = self.retired[k];
        self.entries[i as usize].probe.sent = Some(now);
        self.set_state(i, EvState::Probing, now);
        Some(self.entries[i as usize].ev)
    }

    /// A probe on `ev` was answered.
    pub fn probe_answered(&mut self, ev: u32, now: Time) {
        let Some(i) = self.map.get(ev) else { return };
        let i = i as u32;
        let needed = self.cfg.probe_successes;
        let e = &mut self.entries[i as usize];
        if e.probe.sent.is_none() || !matches!(e.state, EvState::Probing | EvState::Retired) {
            return;
        }
        e.probe.sent = None;
        e.probe.successes += 1;
        if e.probe.successes >= needed {
            self.retired.retain(|&r| r != i);
            self.resurrect(i, now);
        } else {
            // The path answers: confirm it at the base pace, not the backed-off one
            // its failed probes reached while it was down.
            e.probe.interval = self.cfg.probe_interval;
            e.probe.due = now + e.probe.interval;
        }
    }

    /// Enough probes on retired entry `i` succeeded: its path works again. It takes
    /// back the active slot it lost: following who replaced whom (a replacement may
    /// itself have been replaced), the EV now holding that slot steps down to the
    /// backups. The active set thus returns to the spread over paths it had before the
    /// failure, and traffic to a restored link (MRC appendix Fig. 19b). If the slot is
    /// gone (its holder left for the backups on ECN), it replaces the most penalised
    /// avoided EV, or else joins the backups.
    fn resurrect(&mut self, i: u32, now: Time) {
        let p = self.entries[i as usize].plane as usize;
        let mut j = std::mem::replace(&mut self.entries[i as usize].replaced_by, NONE);
        // The chain is short (a slot changes hands once per failure); the bound only
        // guards against a cycle.
        for _ in 0..self.entries.len() {
            if j == NONE {
                break;
            }
            if let Some(pos) = self.position(p, j) {
                self.step_down(p, pos, i, now);
                return;
            }
            j = self.entries[j as usize].replaced_by;
        }
        // A slot given up for want of EVs takes it.
        if self.empty_slots[p] > 0 {
            self.fill_empty_slot(p, i, now);
            return;
        }
        // The slot is gone: take the place of the most penalised avoided EV, a
        // congested path, if there is one.
        let congested = (0..self.active[p].len())
            .filter(|&k| self.entries[self.active[p][k].entry as usize].state == EvState::Avoided)
            .max_by_key(|&k| (self.hot[self.active[p][k].entry as usize].penalty, std::cmp::Reverse(k)));
        if let Some(pos) = congested {
            self.step_down(p, pos, i, now);
            return;
        }
        self.backup[p].push_back(i);
        self.set_state(i, EvState::Backup, now);
        self.refill(p, now);
    }

    /// Entry `i` takes active position `pos` of plane index `p`; the EV there steps
    /// down to the backups.
    fn step_down(&mut self, p: usize, pos: usize, i: u32, now: Time) {
        let slot = self.slot(i);
        let j = std::mem::replace(&mut self.active[p][pos], slot);
        let j = self.leave(j);
        self.set_penalty(i, 0);
        self.set_state(i, EvState::Active, now);
        self.set_penalty(j, 0);
        self.entries[j as usize].marks = 0;
        self.backup[p].push_back(j);
        self.set_state(j, EvState::Backup, now);
    }

    /// Probes unanswered for `probe_timeout` failed: restart their count and back off.
    pub fn expire_probes(&mut self, now: Time) {
        for k in 0..self.retired.len() {
            let i = self.retired[k];
            let timeout = self.cfg.probe_timeout;
            let e = &mut self.entries[i as usize];
            if e.probe.sent.is_some_and(|t| t + timeout <= now) {
                e.probe.sent = None;
                e.probe.successes = 0;
                e.probe.interval = e.probe.interval.mul(2).min(self.cfg.probe_backoff_max.max(self.cfg.probe_interval));
                let interval = e.probe.interval;
                let j = self.jitter(interval);
                self.entries[i as usize].probe.due = now + j;
            }
        }
    }

    /// The next time an outstanding probe times out.
    pub fn next_probe_timeout(&self) -> Option<Time> {
        self.retired
            .iter()
            .filter_map(|&i| self.entries[i as usize].probe.sent)
            .map(|t| t + self.cfg.probe_timeout)
            .min()
    }

    /// The next time a probe falls due on plane index `p`.
    pub fn next_probe_due(&self, p: u8) -> Option<Time> {
        self.retired
            .iter()
            .map(|&i| &self.entries[i as usize])
            .filter(|e| e.plane == p && e.probe.sent.is_none())
            .map(|e| e.probe.due)
            .min()
    }

    /// Moves the state changes logged so far into `out`, with the active/avoided
    /// state of every active EV that changed since the last drain, as of `now`.
    pub fn drain_log(&mut self, now: Time, out: &mut Vec<PathLog>) {
        out.append(&mut self.log);
        for list in &self.active[..self.planes as usize] {
            for a in list {
                let e = &mut self.entries[a.entry as usize];
                if e.state != e.logged {
                    e.logged = e.state;
                    out.push(PathLog { time: now, ev: e.ev, state: e.state });
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> EvSetConfig {
        EvSetConfig {
            active: 16,
            backup_per_plane: 2,
            ecn_penalty: 1,
            trim_penalty: 0,
            ecn_swap: 8,
            ecn_swap_window: Dur::from_us(40),
            probe_interval: Dur::from_us(100),
            probe_successes: 5,
            probe_timeout: Dur::from_us(40),
            probe_backoff_max: Dur::from_ms(10),
        }
    }

    fn sets() -> EvSets {
        EvSets::new(cfg(), 0, 4, Time::ZERO, Rng::new(9))
    }

    #[test]
    fn endless_losses_grow_the_sets_only_so_far_then_empty_the_plane() {
        // Every packet on plane 0 lost (its switches are down): each loss retires an
        // active EV. Fresh ones replace them up to a bound, then the plane's slots are
        // left empty, and the other planes keep theirs.
        let mut s = sets();
        let mut k = 0u64;
        while let Some(ev) = s.next(0, Time(k * 1_000_000), None) {
            s.retire(ev, Time(k * 1_000_000), u8::MAX);
            k += 1;
            assert!(k < 100_000, "plane 0 never emptied");
        }
        assert!(s.entries.len() <= s.max_entries(), "{} entries", s.entries.len());
        assert_eq!(s.active_per_plane(), vec![0, 4, 4, 4]);
        // Five answered probes bring a retired EV of plane 0 back into an empty slot.
        let mut now = Time(k * 1_000_000);
        let back = loop {
            now += Dur::from_us(10);
            if let Some(ev) = s.probe_due(0, now) {
                break ev;
            }
        };
        for n in 0..5 {
            s.probe_answered(back, now);
            if n < 4 {
                now += Dur::from_us(100);
                assert_eq!(s.probe_due(0, now), Some(back), "the answered EV is probed again at the base pace");
            }
        }
        assert_eq!(s.active_per_plane(), vec![1, 4, 4, 4]);
        assert_eq!(s.next(0, now, None), Some(back));
    }

    #[test]
    fn an_explored_backup_that_loses_a_packet_is_retired_not_drawn_again() {
        // The rotation went silent and a resend went out on a backup (`explore`); the
        // backup lost it too. It leaves the pool for the probes, and neither further
        // exploration nor a refill of the rotation draws it again.
        let mut s = EvSets::new(cfg(), 0, 1, Time::ZERO, Rng::new(5));
        // Grow the set to its bound, so that exploring draws an existing backup.
        while s.entries.len() < s.max_entries() {
            s.explore(0, Time::ZERO).expect("a fresh EV");
        }
        let (dead, _) = s.explore(0, Time(1_000)).expect("a backup");
        assert_eq!(s.state(dead), Some(EvState::Backup));
        let before = s.backup[0].len();
        s.retire(dead, Time(2_000), u8::MAX);
        assert_eq!(s.state(dead), Some(EvState::Retired));
        assert_eq!(s.backup[0].len(), before - 1);
        for k in 0..200u64 {
            let (ev, _) = s.explore(0, Time(3_000 + k)).expect("backups remain");
            assert_ne!(ev, dead, "a dead backup drawn again");
        }
        // Retiring every active EV refills the rotation from the pool, never with it.
        for k in 0..s.active(0).len() as u64 {
            let ev = s.next(0, Time(10_000 + k), None).unwrap();
            s.retire(ev, Time(10_000 + k), u8::MAX);
            assert!(!s.active(0).contains(&dead), "a dead backup refilled the rotation");
        }
    }

    #[test]
    fn the_last_active_ev_of_a_connection_stays_in_use() {
        // One plane losing every packet (or half of them): slots empty down to one,
        // which keeps carrying the connection rather than leave it nothing to send on.
        let mut s = EvSets::new(cfg(), 0, 1, Time::ZERO, Rng::new(3));
        for k in 0..100_000u64 {
            let now = Time(k * 1_000_000);
            let ev = s.next(0, now, None).expect("an active EV is always left");
            s.retire(ev, now, u8::MAX);
        }
        assert_eq!(s.active_per_plane(), vec![1]);
        assert!(s.entries.len() <= s.max_entries());
    }

    #[test]
    fn active_evs_split_equally_and_rotate_without_repeats() {
        let mut s = sets();
        assert_eq!(s.active_per_plane(), vec![4, 4, 4, 4]);
        let evs: Vec<u32> = (0..4).map(|_| s.next(2, Time::ZERO, None).unwrap()).collect();
        let mut sorted = evs.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), 4, "one rotation visits every active EV once");
        assert!(evs.iter().all(|&ev| fabricsim_wire::ev_plane(ev) == 2), "EVs carry their plane");
    }

    #[test]
    fn the_first_active_set_spreads_evenly_over_paths_and_spares_do_not_follow_it() {
        // SRv6 picks the uplink from the EV's low digits (here 4 uplinks): every
        // sender's first set covers them equally; its spares are random.
        let s = sets();
        for p in 0..4u8 {
            let mut per_uplink = [0; 4];
            for ev in s.active(p) {
                per_uplink[(ev % 4) as usize] += 1;
            }
            assert_eq!(per_uplink, [1, 1, 1, 1], "plane {p}");
        }
        let spares: Vec<u32> = s.backup[0].iter().map(|&i| s.entries[i as usize].ev).collect();
        assert!(spares.windows(2).any(|w| w[1] != w[0].wrapping_add(1)), "{spares:?}");
    }

    #[test]
    fn packets_counted_in_the_rotation_stay_with_their_ev_when_it_leaves() {
        let mut s = sets();
        let mut sent = std::collections::BTreeMap::new();
        for k in 0..40u64 {
            let (ev, _) = s.next_sent((k % 4) as u8, Time(k), None, false).unwrap();
            *sent.entry(ev).or_insert(0u64) += 1;
        }
        // One EV retired (its slot refilled from a backup), one demoted, one
        // retransmission counted the slow way; then more sends on the new sets.
        let gone = s.active(0)[0];
        s.retire(gone, Time(100), u8::MAX);
        let slow = s.active(1)[1];
        s.demote(slow, Time(101));
        let (ev, _) = s.next_sent(2, Time(102), Some(s.active(2)[0]), true).unwrap();
        *sent.entry(ev).or_insert(0) += 1;
        for k in 0..40u64 {
            let (ev, _) = s.next_sent((k % 4) as u8, Time(200 + k), None, false).unwrap();
            *sent.entry(ev).or_insert(0) += 1;
        }
        let counted: std::collections::BTreeMap<u32, u64> =
            s.stats().iter().filter(|p| p.packets > 0).map(|p| (p.ev, p.packets)).collect();
        assert_eq!(counted, sent);
        assert!(counted[&gone] > 0 && counted[&slow] > 0);
        let retx: u64 = s.stats().iter().map(|p| p.retransmissions).sum();
        assert_eq!(retx, 1);
    }

    #[test]
    fn an_ecn_echo_makes_an_ev_sit_out_one_rotation() {
        let mut s = sets();
        let x = s.active(0)[1];
        // The rotation starts just after x, so x's turn comes last in the round.
        s.rot[0] = 2;
        s.on_ecn(x, Time::ZERO);
        assert_eq!(s.state(x), Some(EvState::Avoided));
        let mut log = Vec::new();
        s.drain_log(Time(7), &mut log);
        assert_eq!(log.last(), Some(&PathLog { time: Time(7), ev: x, state: EvState::Avoided }));
        // Only plane 0 leaves the fast rotation, and only until x has sat out.
        assert_eq!(s.penalised[..4], [1, 0, 0, 0]);
        let round: Vec<u32> = (0..4).map(|_| s.next(0, Time::ZERO, None).unwrap()).collect();
        assert!(!round.contains(&x), "{round:?}");
        assert_eq!(s.state(x), Some(EvState::Active));
        assert_eq!(s.penalised[..4], [0, 0, 0, 0]);
        let next: Vec<u32> = (0..4).map(|_| s.next(0, Time::ZERO, None).unwrap()).collect();
        assert!(next.contains(&x));
        // The fast rotation takes the list in order from where the slow one left it.
        let list = s.active(0);
        let at = list.iter().position(|&e| e == next[0]).unwrap();
        assert_eq!(next, (0..4).map(|k| list[(at + k) % 4]).collect::<Vec<_>>());
    }

    #[test]
    fn repeated_ecn_swaps_an_ev_for_a_backup() {
        let mut s = sets();
        let x = s.active(2)[0];
        // Seven echoes spread out never reach the threshold within the window.
        for k in 0..7 {
            s.on_ecn(x, Time(Dur::from_us(50).ps() * k));
        }
        assert!(s.active(2).contains(&x));
        for _ in 0..8 {
            s.on_ecn(x, Time(Dur::from_ms(1).ps()));
        }
        assert_eq!(s.state(x), Some(EvState::Backup));
        assert!(!s.active(2).contains(&x));
        assert_eq!(s.active_per_plane(), vec![4, 4, 4, 4]);
    }

    #[test]
    fn retiring_promotes_a_backup_of_the_same_plane() {
        let mut s = sets();
        let x = s.active(3)[0];
        s.retire(x, Time::ZERO, u8::MAX);
        assert_eq!(s.state(x), Some(EvState::Retired));
        assert_eq!(s.active_per_plane(), vec![4, 4, 4, 4]);
        assert!(!s.active(3).contains(&x));
        assert!(s.active(3).iter().all(|&ev| fabricsim_wire::ev_plane(ev) == 3));
    }

    #[test]
    fn enough_answered_probes_resurrect_and_a_miss_backs_off() {
        let mut s = sets();
        let x = s.active(1)[2];
        s.retire(x, Time::ZERO, u8::MAX);
        let stand_in = s.active(1)[2];
        let mut now = Time::ZERO;
        let mut answered = 0;
        while s.state(x) != Some(EvState::Active) {
            now = match (s.next_probe_timeout(), s.next_probe_due(1)) {
                (Some(a), Some(b)) => a.min(b),
                (a, b) => a.or(b).unwrap(),
            };
            s.expire_probes(now);
            if let Some(ev) = s.probe_due(1, now) {
                assert_eq!(ev, x);
                assert_eq!(s.state(x), Some(EvState::Probing));
                if answered == 2 {
                    // Third probe lost: the count restarts.
                    answered += 1;
                    continue;
                }
                s.probe_answered(x, now);
                answered += 1;
            }
            assert!(answered < 20);
        }
        assert_eq!(answered, 3 + 5, "two answers, one miss, then five in a row");
        assert!(now > Time::ZERO + Dur::from_us(500));
        // Resurrected into the slot it lost; the EV that stood in steps down.
        assert_eq!(s.active(1)[2], x);
        assert_eq!(s.state(stand_in), Some(EvState::Backup));
        assert_eq!(s.active_per_plane(), vec![4, 4, 4, 4]);
    }

    #[test]
    fn a_resurrected_ev_whose_slot_is_gone_replaces_the_most_avoided_one() {
        let mut s = sets();
        let x = s.active(0)[0];
        s.retire(x, Time::ZERO, u8::MAX);
        // Its stand-in leaves on ECN, so the slot's chain ends in the backups.
        let stand_in = s.active(0)[0];
        for _ in 0..8 {
            s.on_ecn(stand_in, Time(1));
        }
        assert_eq!(s.state(stand_in), Some(EvState::Backup));
        let congested = s.active(0)[3];
        s.on_ecn(congested, Time(2));
        assert_eq!(s.state(congested), Some(EvState::Avoided));
        let mut now = Time::ZERO;
        while s.state(x) != Some(EvState::Active) {
            now = s.next_probe_due(0).unwrap().max(now);
            if let Some(ev) = s.probe_due(0, now) {
                s.probe_answered(ev, now);
            }
        }
        assert_eq!(s.active(0)[3], x, "took the congested EV's place");
        assert_eq!(s.state(congested), Some(EvState::Backup));
    }
}
