//! MRC, the Multipath Reliable Connection (OpenAI, Microsoft, AMD, Broadcom, NVIDIA):
//! RoCEv2 RC WRITEs sprayed per packet over 128-256 entropy values split equally across
//! the planes of a multi-plane NIC, on a lossy fabric.
//!
//! * Every packet carries its RDMA address and rkey and a 32-bit EV; the receiver places
//!   packets in any order and answers each with a SACK echoing the EV, its ECN mark and
//!   its local port-state bitmap ([`crate::common::SprayResponder`] with SACKs, trim
//!   NACKs and a probed reverse EV set).
//! * Each NIC port pulls packets for its own plane: rotation over that plane's active
//!   EVs ([`evset`]), skipping EVs penalised by ECN echoes (ECN is off on the last hop,
//!   so it only signals path congestion).
//! * A trimmed packet is NACKed and resent at once on another EV. An untrimmed loss
//!   retires its EV; a backup of the same plane replaces it; background probes bring
//!   retired EVs back. Losses are detected RACK-style from SACKs (a packet sent `reo`
//!   before an acknowledged one, or by RACK's timer any packet sent before one since
//!   acknowledged, two round trips on) or by timeout, and resent at once; a packet lost
//!   on its plane's only active EV is resent on a backup. RACK only suspects
//!   the path, though: sprayed packets reorder by the queueing differences between
//!   paths, which can exceed any window short of the RTT. A suspected EV leaves the
//!   rotation at once for a backup (held apart from the backup pool meanwhile, so a
//!   broken path cannot come back into use) and is retired once its
//!   path is shown to have lost the packet: a packet sent later on the same EV (the
//!   same path, which delivers in order) arrives while the suspect's first copy has
//!   not, or no copy of it has come back an RTO after it was sent while later packets
//!   have. If the first copy arrives after all, the suspicion is dropped and the EV
//!   joins the backups.
//! * With nothing new left to send, two round trips without an acknowledgement send a
//!   tail loss probe: the newest packet out, again, on another EV (RFC 8985 section 7).
//! * A timeout proves a path lost its packet only if a packet sent later has come
//!   back. If nothing has, every path may be merely slow (a degraded last hop behind a
//!   deep buffer): only the oldest packet is resent and the timer restarts, as TCP's
//!   RTO does, and no EV is judged. When round trips were near the base until then
//!   (paths went silent, not slow), that packet goes on two EVs, so a fabric where
//!   part of the paths died in both directions costs one timeout rather than a chain
//!   of doubling ones. A plane whose latest news is a loss is suspect:
//!   lost packets go to another plane, timed-out ones to a plane known to deliver.
//! * A local port going down, or a peer's SACK bitmap showing its port down, takes that
//!   plane out; packets in flight on it are resent on the others. A receiver whose port
//!   comes back up says so at once ([`Ext::F_PORT_UP`] on a repeated SACK and on
//!   reverse probes repeated until answered), and a sender whose timeouts backed off
//!   meanwhile resends at once (RFC 6069's idea) rather than at its next timeout.
//! * A sender that has heard no acknowledgement for a round trip while packets are out
//!   says so ([`Ext::F_UNHEARD`]) in its answer to the receiver's reverse probe, and
//!   the receiver repeats its latest state on the reverse EV the answer proved.
//! * Congestion control is not specified by the paper; fabricsim uses one window per
//!   connection ([`cc`]): additive increase per acknowledged packet, a multiplicative
//!   cut on trim NACKs at most once per RTT (incast is where trims happen), and
//!   optionally a cut in proportion to how far an RTT sample exceeds a delay target.

pub mod cc;
pub mod evset;

pub use cc::{MrcCc, MrcCcConfig};
pub use evset::{EvSetConfig, EvSets};

use crate::common::{PathLog, PathStats, PsnRecord, RttEstimator, SendBuffer, MAX_PLANES};
use crate::conn::{AppEvent, ConnInfo, EndpointStats, Message, Poll};
use crate::Endpoint;
use fabricsim_engine::{Dur, Rng, Time};
use fabricsim_wire::{opcode, Ext, Packet};
use std::collections::VecDeque;

/// MRC parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MrcConfig {
    /// EV sets.
    pub evs: EvSetConfig,
    /// The window.
    pub cc: MrcCcConfig,
    /// Initial reordering allowance for RACK loss detection (it adapts, see below).
    pub reo: Dur,
    /// Smallest and largest retransmission timeout.
    pub min_rto: Dur,
    /// Largest retransmission timeout.
    pub max_rto: Dur,
    /// Unloaded round trip (sets the timeout before the first RTT sample).
    pub base_rtt: Dur,
    /// End messages with WRITE with immediate (MRC's completion signal).
    pub write_imm: bool,
    /// Send tail loss probes (RFC 8985 section 7).
    pub tail_probe: bool,
    /// Send the packet a silent timeout resends (nothing sent since got through) on a
    /// second EV too, when round trips were near the base.
    pub timeout_copy: bool,
}

/// A packet that goes before data on its plane.
#[derive(Clone, Copy, Debug)]
enum Urgent {
    /// An answer to the receiver's probe.
    Reply(Packet),
    /// An extra copy of a PSN on the EV of its rotation slot: a silent timeout's
    /// second copy, or a tail loss probe (`true`).
    Copy(Packet, u32, bool),
}

/// The sending side of an MRC connection.
#[derive(Clone, Debug)]
pub struct MrcSender {
    info: ConnInfo,
    cfg: MrcConfig,
    buf: SendBuffer,
    evs: EvSets,
    cc: MrcCc,
    rtt: RttEstimator,
    /// Bit `p` set while local NIC port `p` is up.
    local_up: u8,
    /// Bit `p` set while the peer's NIC port `p` is up (from its SACKs and reverse
    /// probes).
    peer_up: u8,
    /// The epoch of the peer's port bitmap in `peer_up` ([`Ext::port_epoch`]): an older
    /// one, from a SACK a later one overtook on another path, is ignored.
    peer_epoch: u16,
    /// When `peer_epoch` was applied.
    peer_epoch_at: Time,
    /// Packets that go before data, per plane index: probe answers and extra copies.
    /// (In the struct: every send checks its plane's queue.)
    ctrl: [VecDeque<Urgent>; MAX_PLANES],
    lost: Vec<(u32, PsnRecord)>,
    /// RACK losses whose path is not yet known to have lost them: `(psn, ev, sent)`.
    suspects: Vec<(u32, u32, Time)>,
    /// Per NIC port (plane): send time of the newest packet on it found lost, and of
    /// the newest acknowledged. A plane whose latest news is a loss is suspect: lost
    /// packets are resent elsewhere.
    plane_lost: [Time; 8],
    plane_acked: [Time; 8],
    /// Bit `p` set once any acknowledgement came back for a packet sent on plane `p`.
    plane_heard: u8,
    /// When the retransmission timer last fired (it restarts from there, RFC 6298).
    last_rto: Time,
    /// The receiver said its port came back up while we were backing off: the timer
    /// fires now (see [`Self::outage_over`]).
    rto_now: bool,
    /// When a data packet last went out.
    last_data_send: Time,
    /// The PSN a timeout with nothing later through resends; it goes on two EVs if
    /// round trips were near the base (see [`Self::second_copy`]).
    copy_psn: Option<u32>,
    /// The latest PSNs sent again on purpose whether or not they were lost (a
    /// timeout's resend, its second copy, a tail loss probe), `u32::MAX` if none: a
    /// duplicate they cause says nothing about RACK's window.
    deliberate: [u32; 16],
    deliberate_at: usize,
    /// The EVs the timer's resends (and their second copies) went out on since the last
    /// acknowledgement, and the EV the first of them had been lost on: with fewer
    /// packets out than active EVs, the live packets alone never cover the rotation
    /// (see `rotation_silent`). Cleared by any SACK or NACK.
    silent: Vec<u32>,
    /// A tail loss probe went out since the last acknowledgement with news.
    tlp_sent: bool,
    /// RACK's reordering window is `reo × reo_mult`, at most the smoothed RTT.
    reo_mult: u32,
    /// Acknowledgements since the last spurious retransmission (to relax `reo_mult`).
    acks_since_spurious: u32,
    /// When `reo_mult` last grew.
    reo_grown_at: Time,
    /// The RTT of the latest acknowledgement that gave a sample.
    latest_rtt: Option<Dur>,
    /// When the latest acknowledgement arrived.
    last_ack_at: Option<Time>,
    stats: EndpointStats,
}

impl MrcSender {
    /// A sender for `info` (planes `info.first_port .. + info.ports`), starting at `now`.
    pub fn new(info: ConnInfo, cfg: MrcConfig, now: Time, rng: Rng) -> MrcSender {
        MrcSender {
            buf: SendBuffer::new(info.mtu).with_imm(cfg.write_imm),
            evs: EvSets::new(cfg.evs, info.first_port, info.ports, now, rng),
            cc: MrcCc::new(cfg.cc),
            // Before any sample, time out after a few base RTTs rather than four
            // minimum RTOs: a short message whose packets and acknowledgements all
            // took a dead switch otherwise waited 200 us, then 400 more. A timeout
            // that proves nothing costs only one resend (see `on_timeout`).
            rtt: RttEstimator::new(cfg.min_rto, cfg.max_rto).with_initial(cfg.min_rto.max(cfg.base_rtt.mul(4))),
            local_up: u8::MAX,
            peer_up: u8::MAX,
            peer_epoch: 0,
            peer_epoch_at: Time::ZERO,
            ctrl: Default::default(),
            lost: Vec::new(),
            suspects: Vec::new(),
            plane_lost: [Time::ZERO; 8],
            plane_acked: [Time::ZERO; 8],
            plane_heard: 0,
            last_rto: Time::ZERO,
            rto_now: false,
            last_data_send: Time::ZERO,
            copy_psn: None,
            deliberate: [u32::MAX; 16],
            deliberate_at: 0,
            silent: Vec::new(),
            tlp_sent: false,
            reo_mult: 1,
            acks_since_spurious: 0,
            reo_grown_at: Time::ZERO,
            latest_rtt: None,
            last_ack_at: None,
            stats: EndpointStats::default(),
            info,
            cfg,
        }
    }

    /// RACK's current reordering window (RFC 8985 section 6.2: a multiple of the base
    /// window that grows with every spurious retransmission, capped by the smoothed
    /// RTT): sprayed packets reorder by the queueing differences between paths.
    fn reo(&self) -> Dur {
        let w = self.cfg.reo.mul(self.reo_mult as u64);
        self.rtt.srtt().map_or(w, |s| w.min(s.max(self.cfg.reo)))
    }

    /// The peer's NIC port bitmap as this sender knows it (bit `p`: port `p` up).
    pub fn peer_ports(&self) -> u8 {
        self.peer_up
    }

    /// The EV sets (for inspection).
    pub fn evs(&self) -> &EvSets {
        &self.evs
    }

    /// The window in bytes.
    pub fn cwnd(&self) -> f64 {
        self.cc.cwnd()
    }

    fn plane_usable(&self, port: u8) -> bool {
        self.local_up & self.peer_up & (1 << port) != 0
    }

    /// Bit `i` set while plane index `i` (port `first_port + i`) is usable.
    fn usable_planes(&self) -> u8 {
        ((self.local_up & self.peer_up & self.plane_mask()) as u16 >> self.info.first_port) as u8
    }

    /// Packets found lost in `self.lost`: untrimmed losses retire their EVs (unless the
    /// plane itself is down, which says nothing about the path), once the path is shown
    /// to have lost the packet. A timeout shows it if a packet sent as late or later has
    /// been acknowledged; RACK (a later packet was acknowledged, but sprayed packets reorder
    /// by whole queueing differences) only suspects the EV: it leaves the rotation
    /// until [`settle_suspects`](Self::settle_suspects) decides. A timeout with nothing
    /// later through says nothing about any one path (all may be merely slow, and
    /// retiring them all would only add probes to the queue that slows them).
    fn handle_losses(&mut self, now: Time, timeout: bool) {
        let progress = self.buf.newest_acked_send();
        for (psn, rec) in std::mem::take(&mut self.lost) {
            // (Sent at the same instant counts: the other planes' ports send together.)
            let later_through = progress.is_some_and(|p| p >= rec.sent_at);
            if !self.plane_usable(rec.port) || (timeout && !later_through) {
                if let Some(s) = self.evs.stats_mut(rec.ev) {
                    s.losses += 1;
                }
            } else if timeout || self.evs.delivered_after(rec.ev, rec.sent_at) {
                self.evs.retire(rec.ev, now, self.usable_planes());
            } else {
                self.evs.demote(rec.ev, now);
                self.suspects.push((psn, rec.ev, rec.sent_at));
            }
        }
    }

    /// Settles suspected losses, after a SACK `e` or (`None`) a timeout:
    /// * the SACK is for the suspect's own copy: it was reordering, not loss;
    /// * the SACK is for a packet sent later on the same EV (the same path, which
    ///   delivers in order), and its bitmap shows the receiver had no copy of the
    ///   suspect's PSN when that packet arrived: the path lost it. (Arrival order at the
    ///   sender proves nothing: SACKs come back over different reverse paths. If the
    ///   bitmap shows the PSN, some copy arrived first, so the suspicion stands until
    ///   one of the other rules settles it.)
    /// * an RTO passed with no copy back while a packet sent later got through: the
    ///   path lost it. (With nothing later through, the suspicion stands.)
    fn settle_suspects(&mut self, now: Time, sack: Option<&Ext>) {
        let mut i = 0;
        while i < self.suspects.len() {
            let (s_psn, s_ev, s_sent) = self.suspects[i];
            let own = sack.is_some_and(|e| e.ack_psn == s_psn && e.ts == s_sent.ps());
            let overtaken = sack.is_some_and(|e| e.ev == s_ev && e.ts > s_sent.ps() && !receiver_had(e, s_psn));
            if own {
                self.suspects.swap_remove(i);
                if !self.suspects.iter().any(|s| s.1 == s_ev) {
                    self.evs.clear(s_ev, now);
                }
            } else if overtaken || self.suspect_expiry(s_sent).is_some_and(|t| t <= now) {
                self.suspects.swap_remove(i);
                self.evs.retire(s_ev, now, self.usable_planes());
            } else {
                i += 1;
            }
        }
    }

    /// When [`settle_suspects`](Self::settle_suspects)' timeout rule retires a suspect
    /// sent at `sent`: an RTO after it, if a packet sent no earlier has been
    /// acknowledged (with nothing later through, never).
    fn suspect_expiry(&self, sent: Time) -> Option<Time> {
        self.buf.newest_acked_send().filter(|&p| p >= sent).map(|_| sent + self.rtt.rto())
    }

    /// The earliest [`suspect_expiry`](Self::suspect_expiry): the timer fires for it.
    /// (Checked only on input, the rule waited for the next acknowledgement or timer,
    /// and an idle connection kept the EV out of the rotation without retiring it until
    /// its next message.)
    fn suspect_deadline(&self) -> Option<Time> {
        self.suspects.iter().filter_map(|s| self.suspect_expiry(s.2)).min()
    }

    /// The packet a silent timeout resends (nothing sent since got through) goes on a
    /// second EV of its plane too, right behind the first (the record keeps the first;
    /// both carry its send time, so either acknowledgement settles it). When part of
    /// the paths die in both directions the sender hears nothing and cannot tell good
    /// EVs from dead ones: one copy on the next EV of the rotation was lost as often as
    /// that EV was dead, each loss doubling the timeout (a 100 KB flow with one of two
    /// spines down: 194 us on average over 8 seeds without the copy, 124 us with it).
    /// The caller sends it only when the smoothed round trip is under twice the base,
    /// i.e. paths went silent rather than slow, or, with no sample yet, from the third
    /// timeout in a row: behind a slow bottleneck that every path crosses (a 1 Gb/s host
    /// link in an all-to-all) a second copy only loads it (+4 % completion time when
    /// sent on every timeout, +1.4 % as gated).
    fn second_copy(&mut self, i: u8, first: u32, pkt: Packet, now: Time) {
        let Some((ev, slot)) = self.evs.next_slot(i, now, Some(first)) else { return };
        if ev == first {
            return;
        }
        self.note_silent(ev);
        let mut copy = pkt;
        copy.net.set_entropy(ev);
        copy.ext.ev = ev;
        self.queue_extra_copy(i, slot, copy, false);
    }

    /// Queues `pkt`, a copy of a PSN beside its recorded send, for plane `i` on the EV
    /// of rotation slot `slot`. It is counted when it leaves (see `next_urgent`).
    fn queue_extra_copy(&mut self, i: u8, slot: u32, pkt: Packet, probe: bool) {
        self.ctrl[i as usize].push_back(Urgent::Copy(pkt, slot, probe));
    }

    /// The next packet that goes before data on plane `i`. A copy waits behind nothing
    /// but the packet on the wire (a plane going down drops its copies, see
    /// `plane_down`); one whose PSN was acknowledged or found lost meanwhile is
    /// dropped. A copy is counted (for its EV, the endpoint and its message) as it
    /// leaves.
    fn next_urgent(&mut self, i: u8) -> Option<Packet> {
        while let Some(u) = self.ctrl[i as usize].pop_front() {
            match u {
                Urgent::Reply(p) => {
                    // Counted as it leaves, like every control packet: one still
                    // queued when the run ends, or dropped with its plane, never went.
                    self.stats.control_sent += 1;
                    return Some(p);
                }
                Urgent::Copy(p, slot, probe) => {
                    if self.buf.record(p.bth.psn).is_none_or(|r| r.acked || r.lost) {
                        // Acknowledged meanwhile, or found lost and queued for a
                        // retransmission that will carry it.
                        continue;
                    }
                    self.evs.count_send(slot, true);
                    self.buf.count_extra_copy(p.bth.psn, &mut self.stats);
                    self.stats.tail_probes += u64::from(probe);
                    return Some(p);
                }
            }
        }
        None
    }

    /// Remembers that `psn` was sent again on purpose (see `deliberate`).
    fn note_deliberate(&mut self, psn: u32) {
        self.deliberate[self.deliberate_at] = psn;
        self.deliberate_at = (self.deliberate_at + 1) % self.deliberate.len();
    }

    /// When the tail loss probe is due (RFC 8985 section 7): two smoothed round trips
    /// after the latest send or acknowledgement, if packets are out and no new data
    /// is left to send (the tail), and before the retransmission timer. (While new
    /// data waits for the window, silence is a window stuck behind a slow path as
    /// often as a loss, and a probe only adds to that path's queue: with a 1 Gb/s host
    /// link in an all-to-all, probes there cost 2 %.)
    /// (`rto_deadline`: [`Self::rto_deadline`], which the caller has at hand.)
    fn tlp_deadline(&self, rto_deadline: Option<Time>) -> Option<Time> {
        if !self.cfg.tail_probe || self.tlp_sent || self.buf.inflight() == 0 || self.buf.has_new() {
            return None;
        }
        let srtt = self.rtt.srtt()?;
        let at = self.last_data_send.max(self.last_ack_at.unwrap_or(Time::ZERO)) + srtt.mul(2);
        (at < rto_deadline?).then_some(at)
    }

    /// The tail loss probe: the newest packet out, again, on another EV of its plane.
    /// The last packets of a burst have no later packet whose acknowledgement would
    /// expose their loss to RACK; without the probe such a loss waited for the
    /// retransmission timer (50 us or more against a round trip of a few), and a
    /// retransmission that went into the same dead link as its first copy (with part
    /// of the paths dead, as often as they are) waited for a second one. The probe's
    /// acknowledgement lets RACK find the rest. It is a copy beside the record: the
    /// PSN is not judged lost, and its EV is not blamed.
    fn loss_probe(&mut self, now: Time) {
        self.tlp_sent = true;
        let Some(psn) = self.buf.newest_outstanding() else { return };
        let rec = *self.buf.record(psn).expect("outstanding PSN has a record");
        // As for a timeout's resend: to a plane known to deliver, if its own is not.
        let port = match (
            self.plane_usable(rec.port) && self.plane_good(rec.port),
            self.find_other_plane(rec.port, Self::plane_good),
        ) {
            (false, Some(q)) => q,
            _ if self.plane_usable(rec.port) => rec.port,
            _ => return,
        };
        let i = port - self.info.first_port;
        let Some((ev, slot)) = self.evs.next_slot(i, now, Some(rec.ev)) else { return };
        let pkt = self.buf.build(&self.info, psn, ev, now, true);
        self.note_deliberate(psn);
        self.queue_extra_copy(i, slot, pkt, true);
    }

    /// The peer's NIC port bitmap, from one of its SACKs or reverse probes: a plane it
    /// lost is a plane we must stop using, and one it got back is usable again.
    ///
    /// A bitmap older than the one last applied, within a retransmission timeout of
    /// applying it, is ignored: it was overtaken in flight. Later than that an "older"
    /// epoch is taken as it comes: the 16-bit count may have wrapped while nothing got
    /// through (a link flapping tens of thousands of times), and refusing it could
    /// freeze the bitmap for good.
    fn learn_peer_ports(&mut self, now: Time, port_state: u8, epoch: u16) {
        let older = (epoch.wrapping_sub(self.peer_epoch) as i16) < 0;
        if older && now < self.peer_epoch_at + self.rtt.rto() {
            return;
        }
        (self.peer_epoch, self.peer_epoch_at) = (epoch, now);
        let changed = (self.peer_up ^ port_state) & self.plane_mask();
        self.peer_up = (self.peer_up & !self.plane_mask()) | (port_state & self.plane_mask());
        for p in 0..8u8 {
            if changed & (1 << p) != 0 && port_state & (1 << p) == 0 {
                self.plane_down(p);
            }
        }
    }

    /// Plane `port` became unusable: everything in flight on it is resent elsewhere,
    /// and extra copies waiting for it are dropped. (Kept, they waited out the outage
    /// and left stamped with the time they were queued: their acknowledgement then gave
    /// an RTT sample as long as the outage, which inflated every timer after it.)
    fn plane_down(&mut self, port: u8) {
        for psn in self.buf.live_on_port(port) {
            self.buf.mark_lost(psn);
        }
        if let Some(q) = self.ctrl[..self.info.ports as usize].get_mut(port.wrapping_sub(self.info.first_port) as usize)
        {
            q.retain(|u| matches!(u, Urgent::Reply(_)));
        }
    }

    /// A packet from the receiver says its NIC port came back up ([`Ext::F_PORT_UP`]).
    /// If our timeouts were backing off meanwhile, the next one could be a millisecond
    /// away: forget the backoff and fire the timer now (TCP does likewise when ICMP
    /// shows a long disruption is over, RFC 6069). It resends the oldest packet if that
    /// went out at least one un-backed-off timeout ago; else the timer restarts from
    /// there.
    /// (Only for a backoff of two timeouts or more: the flag comes on every probe and
    /// repeated acknowledgement of the announcement, and the timeout it forces leaves
    /// a backoff of one, which must not be forced again.)
    fn outage_over(&mut self, flags: u8) {
        if flags & Ext::F_PORT_UP != 0 && self.rtt.backoff() >= 2 {
            self.rtt.reset_backoff();
            self.rto_now = true;
        }
    }

    fn on_sack(&mut self, now: Time, e: &Ext) {
        self.outage_over(e.flags);
        self.last_ack_at = Some(now);
        let acked = self.buf.ack_copy(e.ack_psn, Time(e.ts));
        let plane = (fabricsim_wire::ev_plane(e.ev) & 7) as usize;
        self.plane_acked[plane] = self.plane_acked[plane].max(Time(e.ts));
        self.plane_heard |= 1 << plane;
        // The acknowledged send's record names its EV's slot (only `send` sets a
        // record's EV, and the slot with it); a copy that came on another EV than the
        // last send's is looked up.
        match acked {
            Some(rec) if rec.ev == e.ev => {
                debug_assert!(self.evs.slot_holds(rec.slot, e.ev));
                self.evs.delivered_slot(rec.slot, Time(e.ts))
            }
            _ => self.evs.delivered(e.ev, Time(e.ts)),
        }
        if !self.suspects.is_empty() {
            self.settle_suspects(now, Some(e));
        }
        let news = acked.is_some();
        // A retransmission was spurious if an earlier copy arrived: the echoed
        // timestamp names an earlier transmission than the last, or the receiver flags a
        // duplicate. Widen the reordering window. The SACK echoes the EV the arriving
        // copy took, a path just shown to work: if it was retired for that "loss", it
        // goes back to the backups. (For a duplicate the wrongly retired EV is unknown;
        // probes will bring it back.)
        let repeat = e.flags & Ext::F_REPEAT != 0;
        let late_copy = !repeat && acked.is_some_and(|rec| rec.sends > 1 && e.ts < rec.sent_at.ps());
        // A duplicate of a packet resent by a timeout (or sent twice on purpose) says
        // the acknowledgements were lost, or nothing, not that RACK misread
        // reordering. (The PSN's record may be gone by now: the acknowledgement this
        // SACK carries can complete it.) And a window widens at most once per round
        // trip (RFC 8985 section 6.2): a timeout's resends come back as a burst of
        // duplicates, and one doubling each took the window to its cap at once.
        let rack_dup = e.flags & Ext::F_DUP != 0 && !repeat && !self.deliberate.contains(&e.ack_psn);
        if (late_copy || rack_dup) && self.rtt.srtt().is_none_or(|s| now >= self.reo_grown_at + s) {
            self.reo_mult = (self.reo_mult * 2).min(64);
            self.reo_grown_at = now;
            self.acks_since_spurious = 0;
        }
        if late_copy {
            self.evs.unretire(e.ev, now);
        }
        self.acks_since_spurious += 1;
        if self.acks_since_spurious >= 4096 && self.reo_mult > 1 {
            self.reo_mult /= 2;
            self.acks_since_spurious = 0;
        }
        self.buf.cum_ack(e.cum_psn);
        // Bit i of the SACK bitmap is PSN ack_psn - 1 - i; only bits at or above the
        // cumulative point can be news (with per-packet SACKs most are not).
        let span = e.ack_psn.saturating_sub(self.buf.una()).min(64);
        let mut bits = if span == 64 { e.bitmap } else { e.bitmap & ((1u64 << span) - 1) };
        while bits != 0 {
            let i = bits.trailing_zeros();
            bits &= bits - 1;
            self.buf.ack(e.ack_psn - 1 - i);
        }
        if news {
            self.tlp_sent = false;
            if e.flags & Ext::F_REPEAT == 0 {
                let rtt = now.since(Time(e.ts));
                self.rtt.sample(rtt);
                self.latest_rtt = Some(rtt);
                self.cc.on_rtt(now, rtt, self.rtt.srtt().unwrap_or(rtt));
            }
            self.cc.on_ack(self.info.mtu as f64);
            if e.flags & Ext::F_ECE != 0 {
                self.evs.on_ecn(e.ev, now);
            }
        }
        self.learn_peer_ports(now, e.port_state, e.port_epoch);
        let reo = self.reo();
        self.buf.rack(reo, &mut self.lost);
        self.note_plane_losses();
        self.handle_losses(now, false);
    }

    /// Notes that `ev` carries one of the timer's resends: if the next timeout comes
    /// before any acknowledgement, it went unanswered (see `silent`).
    fn note_silent(&mut self, ev: u32) {
        if !self.silent.contains(&ev) {
            self.silent.push(ev);
        }
    }

    /// Whether plane index `i` has active EVs and every one has gone unanswered since
    /// the last acknowledgement: a packet out on it, neither acknowledged nor found
    /// lost, sent two round trips or more before `now`, or a timer's resend on it.
    fn rotation_silent(&self, i: u8, now: Time) -> bool {
        let by = self.rack_rtt().mul(2);
        let mut out: Vec<u32> = self
            .buf
            .live_on_port(self.info.first_port + i)
            .into_iter()
            .filter_map(|psn| self.buf.record(psn).filter(|r| r.sent_at + by <= now).map(|r| r.ev))
            .chain(self.silent.iter().copied())
            .collect();
        out.sort_unstable();
        let active = self.evs.active(i);
        !active.is_empty() && active.iter().all(|ev| out.binary_search(ev).is_ok())
    }

    /// Records the losses in `self.lost` against their planes.
    fn note_plane_losses(&mut self) {
        for &(_, rec) in &self.lost {
            let p = rec.port as usize & 7;
            self.plane_lost[p] = self.plane_lost[p].max(rec.sent_at);
        }
    }

    /// Whether plane `port`'s latest news is a lost packet.
    fn plane_suspect(&self, port: u8) -> bool {
        self.plane_lost[port as usize & 7] > self.plane_acked[port as usize & 7]
    }

    /// Whether plane `port` has delivered and its latest news is not a timeout.
    fn plane_good(&self, port: u8) -> bool {
        self.plane_heard & (1 << (port & 7)) != 0 && !self.plane_suspect(port)
    }

    /// A plane other than `port`'s that is usable, has an active EV and passes `ok`.
    fn find_other_plane(&self, port: u8, ok: impl Fn(&Self, u8) -> bool) -> Option<u8> {
        (0..self.info.ports).map(|k| self.info.first_port + k).find(|&q| {
            q != port && self.plane_usable(q) && self.evs.has_active(q - self.info.first_port) && ok(self, q)
        })
    }

    /// Whether [`find_other_plane`](Self::find_other_plane) finds one.
    fn other_plane(&self, port: u8, ok: impl Fn(&Self, u8) -> bool) -> bool {
        self.find_other_plane(port, ok).is_some()
    }

    /// Whether no acknowledgement has come back for a round trip although packets are
    /// outstanding: the receiver's reverse path may be dead (its probe then learns so).
    fn unheard(&self, now: Time) -> bool {
        let rtt = self.rack_rtt();
        self.buf.oldest_send().is_some_and(|t| now >= t + rtt) && self.last_ack_at.is_none_or(|t| now >= t + rtt)
    }

    /// When RACK's reordering timer expires (a round trip and the reordering window
    /// after the oldest packet sent before one since acknowledged).
    fn rack_deadline(&self) -> Option<Time> {
        self.buf.rack_deadline(self.rack_rtt(), self.rack_timer_window())
    }

    /// The reordering RACK's timer allows beyond a round trip: the reordering window,
    /// or if more a whole round trip (RFC 8985 caps the window at the smoothed RTT).
    /// Behind a slow or deep bottleneck a few microseconds of reordering upstream
    /// become tens, as other senders' frames queue between the two: with the
    /// reordering window alone the timer resent 56 packets that had arrived (a 1 Gb/s
    /// host link), with a quarter round trip it still retired 15 % more healthy EVs
    /// behind a 4:1 bottleneck (MRC Fig. 19). Two round trips still find a burst's
    /// last losses long before the RTO.
    fn rack_timer_window(&self) -> Dur {
        self.reo().max(self.rack_rtt())
    }

    /// The round trip RACK's timer allows: that of the latest acknowledged packet
    /// (RFC 8985's RACK.rtt, which follows a growing queue faster than the smoothed
    /// RTT), or before any sample (every acknowledgement so far lost or repeated) the
    /// unloaded one.
    fn rack_rtt(&self) -> Dur {
        self.latest_rtt.unwrap_or(self.cfg.base_rtt)
    }

    /// When the retransmission timer fires: an RTO after the oldest live send, and
    /// after the timer last fired.
    fn rto_deadline(&self) -> Option<Time> {
        let rto = self.rtt.rto();
        let deadline = |t: Time| if self.rto_now { Time::ZERO } else { (t + rto).max(self.last_rto + rto) };
        self.buf.oldest_send().map(deadline)
    }

    fn plane_mask(&self) -> u8 {
        (((1u16 << self.info.ports) - 1) << self.info.first_port) as u8
    }

    fn control(&self, op: u8, ev: u32) -> Packet {
        crate::common::control_packet(&self.info, op, ev)
    }
}

/// Whether the receiver held `psn` when it sent the SACK `e` (as far as the SACK
/// tells: PSNs above its 64-bit bitmap count as not held).
fn receiver_had(e: &Ext, psn: u32) -> bool {
    psn < e.cum_psn || psn == e.ack_psn || {
        let back = e.ack_psn.wrapping_sub(1).wrapping_sub(psn);
        psn < e.ack_psn && back < 64 && e.bitmap & (1 << back) != 0
    }
}

impl Endpoint for MrcSender {
    fn unacked_retransmissions(&self, out: &mut Vec<(u32, u64)>) {
        self.buf.unacked_retransmissions(out);
    }

    fn on_packet(&mut self, now: Time, pkt: &Packet) {
        if matches!(pkt.bth.opcode, opcode::X_SACK | opcode::X_NACK) && !self.silent.is_empty() {
            // Something came back: the silence is over.
            self.silent.clear();
        }
        match pkt.bth.opcode {
            opcode::X_SACK => self.on_sack(now, &pkt.ext),
            opcode::X_NACK => {
                // A trimmed packet: congestion, not a broken path. Resend it now on
                // another EV, and let the window react.
                self.evs.on_trim(pkt.ext.ev, now);
                if self.buf.mark_lost(pkt.ext.ack_psn).is_some() {
                    self.cc.on_trim(now, self.rtt.srtt().unwrap_or(self.cfg.min_rto));
                }
                self.buf.cum_ack(pkt.ext.cum_psn);
            }
            opcode::X_PROBE_REPLY => self.evs.probe_answered(pkt.ext.ev, now),
            opcode::X_PROBE => {
                self.outage_over(pkt.ext.flags);
                // Reverse probes carry the receiver's port bitmap too: after its port
                // came back, they may be all that reaches us (the SACK announcing it
                // can be lost), and a plane still marked down would never be used,
                // nor our answer on it sent.
                self.learn_peer_ports(now, pkt.ext.port_state, pkt.ext.port_epoch);
                // The receiver tests its reverse path: answer on one of our EVs.
                let p = fabricsim_wire::ev_plane(pkt.ext.ev);
                let i = p.wrapping_sub(self.info.first_port);
                if i < self.info.ports {
                    // On the forward path the receiver saw working, if it names one
                    // of this plane (while our EV set may still hold dead paths).
                    let hint = (pkt.ext.flags & Ext::F_HINT != 0)
                        .then_some(pkt.ext.bitmap as u32)
                        .filter(|&h| fabricsim_wire::ev_plane(h) == p);
                    if let Some(ev) = hint.or_else(|| self.evs.any_active(i)) {
                        let mut reply = self.control(opcode::X_PROBE_REPLY, ev);
                        reply.ext = Ext { ev: pkt.ext.ev, ts: pkt.ext.ts, ..Default::default() };
                        if self.unheard(now) {
                            reply.ext.flags |= Ext::F_UNHEARD;
                        }
                        self.ctrl[i as usize].push_back(Urgent::Reply(reply));
                    }
                }
            }
            _ => {}
        }
    }

    fn on_timeout(&mut self, now: Time) {
        if self.rack_deadline().is_some_and(|d| d <= now) {
            // Losses by RACK's timer are losses by RACK: a path, not a timeout.
            self.buf.rack_expire(now, self.rack_rtt(), self.rack_timer_window(), &mut self.lost);
            self.note_plane_losses();
            self.handle_losses(now, false);
        }
        let rto = self.rtt.rto();
        let expired = self.rto_deadline().is_some_and(|d| d <= now);
        self.rto_now = false;
        if expired && self.buf.expire_oldest(now, rto, &mut self.lost) {
            self.stats.timeouts += 1;
            self.rtt.on_timeout();
            self.last_rto = now;
            // If a packet sent as late or later has been acknowledged, the paths work
            // and whatever is an RTO old was lost on its path. If nothing sent since
            // has come back, the paths may all be merely slow (a slowed last hop behind
            // a deep queue): resend only the oldest and restart the timer, as TCP's RTO
            // does (resending a whole window into that queue would double it). That
            // one copy is also what gets through when only the acknowledgements are
            // lost: the receiver sees a duplicate and repairs its reverse path.
            if self.buf.newest_acked_send().is_some_and(|p| p >= self.lost[0].1.sent_at) {
                self.buf.expire(now, rto, &mut self.lost);
            } else {
                self.copy_psn = Some(self.lost[0].0);
            }
        }
        for &(psn, _) in &self.lost {
            self.buf.mark_timed_out(psn);
        }
        self.note_plane_losses();
        self.handle_losses(now, true);
        self.settle_suspects(now, None);
        self.evs.expire_probes(now);
        if self.tlp_deadline(self.rto_deadline()).is_some_and(|d| d <= now) {
            self.loss_probe(now);
        }
    }

    fn on_port_state(&mut self, _now: Time, port: u8, up: bool) {
        if up {
            self.local_up |= 1 << port;
        } else {
            self.local_up &= !(1 << port);
            self.plane_down(port);
        }
    }

    fn post(&mut self, _now: Time, msg: Message) {
        self.buf.post(msg);
    }

    fn poll_transmit(&mut self, now: Time, port: u8) -> Poll {
        if !self.plane_usable(port) {
            return Poll::Idle;
        }
        let i = port - self.info.first_port;
        if let Some(p) = self.next_urgent(i) {
            return Poll::Send(p);
        }
        // Background probes of retired EVs go before data and outside the window.
        if let Some(ev) = self.evs.probe_due(i, now) {
            let mut probe = self.control(opcode::X_PROBE, ev);
            probe.ext = Ext { ev, ts: now.ps(), ..Default::default() };
            self.stats.control_sent += 1;
            return Poll::Send(probe);
        }
        // A probe not yet due is announced as a wake-up time: sending it needs this
        // port, which only a transmit opportunity gives.
        let idle = match self.evs.next_probe_due(i) {
            Some(t) => Poll::Wait(t),
            None => Poll::Idle,
        };
        if self.buf.inflight() as f64 * self.info.mtu as f64 >= self.cc.cwnd() || !self.buf.has_data() {
            return idle;
        }
        let Some((psn, old)) = self.buf.take_next() else { return Poll::Idle };
        let timed_out = self.buf.record(psn).is_some_and(|r| r.timed_out);
        let elsewhere = old.is_some()
            && ((timed_out && !self.plane_good(port) && self.other_plane(port, Self::plane_good))
                || (self.plane_suspect(port) && self.other_plane(port, |s, q| !s.plane_suspect(q))));
        if elsewhere {
            // A lost packet is not resent on a plane whose latest news is a loss (all
            // of its paths may be dead: its T1s down), while another can take it; one
            // lost to a timeout goes to a plane known to deliver if there is one
            // (Linux rehashes a flow's path on a timeout for the same reason). Else a
            // lone tail packet was retried on a dead plane, or on two in turn, for
            // ever, and a dead plane lost a third of every round of resends.
            // The plane then sends nothing until the connection's next input (an
            // acknowledgement or a timer), new data included: a suspect plane's paths
            // may be dead. (New data on it at once measured worse: a 4 MB all-to-all
            // at 1 % loss +4.8 %, a 4-plane permutation with 96 T0-T1 links down,
            // as in Fig. 9c, +1.9 %.)
            self.buf.requeue(psn);
            return idle;
        }
        // A second silent timeout in a row, and every active EV of the plane has gone
        // unanswered (a packet out on it for two round trips, or one of the timer's
        // resends since the last acknowledgement): the whole rotation may be dead
        // (ECMP hashed it into a switch that then failed). With nothing later
        // acknowledged no timeout can show which EVs lost their packets, so none is
        // retired, and resent round the rotation the packet was lost for ever (a 256 KB
        // flow over two EVs, both through a dead spine of two, stalled with 14 timeouts
        // and no retirement). It goes on a path outside the rotation instead; if that
        // delivers, RACK and the timeouts find the dead EVs.
        let by_timer = timed_out && self.copy_psn == Some(psn);
        if let Some(ev) = old.filter(|_| by_timer) {
            // Its last copy, unanswered for a whole RTO.
            self.note_silent(ev);
        }
        let explored = if by_timer && self.rtt.backoff() >= 2 && self.rotation_silent(i, now) {
            self.evs.explore(i, now)
        } else {
            None
        };
        let Some((ev, slot)) = explored.or_else(|| self.evs.next_sent(i, now, old, old.is_some())) else {
            // No active EV on this plane (its slots were given up): the
            // retransmission goes back to the head of the queue for another plane.
            // (It is still marked lost, which `mark_lost` would refuse to queue again.)
            if old.is_some() {
                self.buf.requeue(psn);
            }
            return idle;
        };
        if by_timer {
            self.note_silent(ev);
        }
        let pkt = self.buf.send(&self.info, psn, ev, port, now, old.is_some(), None, &mut self.stats);
        self.buf.set_slot(psn, slot);
        self.last_data_send = now;
        if timed_out {
            self.note_deliberate(psn);
        }
        if timed_out && self.copy_psn.take_if(|&mut p| p == psn).is_some() {
            let silent_not_slow = self.rtt.srtt().map_or(self.rtt.backoff() >= 3, |s| s < self.cfg.base_rtt.mul(2));
            if silent_not_slow && self.cfg.timeout_copy {
                self.second_copy(i, ev, pkt, now);
            }
        }
        Poll::Send(pkt)
    }

    fn poll_timeout(&self) -> Option<Time> {
        let rto = self.rto_deadline();
        [rto, self.rack_deadline(), self.evs.next_probe_timeout(), self.tlp_deadline(rto), self.suspect_deadline()]
            .into_iter()
            .flatten()
            .min()
    }

    fn poll_event(&mut self) -> Option<AppEvent> {
        self.buf.poll_event()
    }

    fn stats(&self) -> &EndpointStats {
        &self.stats
    }

    fn path_stats(&self) -> Vec<PathStats> {
        self.evs.stats()
    }

    fn drain_path_log(&mut self, now: Time, out: &mut Vec<PathLog>) {
        self.evs.drain_log(now, out);
    }
}
