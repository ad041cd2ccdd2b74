//! A multipath receiver: places every packet on arrival and answers each one.
//!
//! Every data packet gets an acknowledgement carrying the cumulative point, the PSN it
//! acknowledges, the entropy value it came on, its send timestamp and whether it was
//! ECN-marked: this is all the per-path feedback MPRDMA, STELLAR, UDMP and MRC need.
//! Options select the protocol's flavour: a SACK bitmap (MRC), a NACK for trimmed
//! headers (MRC) or for PSNs beyond a bounded bitmap (UDMP, MPRDMA), and a reverse
//! entropy set for control packets, kept fresh by probes (MRC section 2.4).

use super::recvwin::{Arrival, RecvWindow};
use super::MAX_PLANES;
use crate::conn::{AppEvent, ConnInfo, EndpointStats, Message, Poll};
use crate::Endpoint;
use fabricsim_engine::{Dur, Rng, Time};
use fabricsim_wire::{opcode, Ecn, Ext, Packet};
use std::collections::VecDeque;

/// How a [`SprayResponder`] behaves.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SprayResponderConfig {
    /// Bitmap window in packets (`u32::MAX`: unbounded).
    pub window: u32,
    /// Refuse a PSN beyond the window with a NACK (otherwise silently).
    pub nack_beyond: bool,
    /// Answer a trimmed header with a NACK (fast retransmission).
    pub nack_trimmed: bool,
    /// Send SACKs (with a 64-PSN bitmap) rather than plain per-packet ACKs.
    pub sack: bool,
    /// Keep a reverse entropy value per plane for control packets, probed every this
    /// often while data arrives (MRC); `None`: control packets echo the data's entropy.
    pub reverse_probe: Option<Dur>,
}

/// The receiving side of a multipath connection.
///
/// `repr(C)`, in the order a data packet's arrival reads the fields: the run loop
/// prefetches an endpoint's first lines one event before it delivers a packet, and
/// with the compiler's order what every packet reads (the receive window, the
/// counters) sat past those lines, behind the per-plane queues and the rarely used
/// stored acknowledgement. The per-plane control queues come last among the hot
/// fields (a connection on one plane reads only the first, which is still within the
/// prefetched lines); what only probes and port changes read follows them.
#[derive(Clone, Debug)]
#[repr(C)]
pub struct SprayResponder {
    info: ConnInfo,
    cfg: SprayResponderConfig,
    win: RecvWindow,
    /// The highest PSN that arrived, with the entropy value and send time of its copy:
    /// what a repeated acknowledgement reports (see `unheard_ack`).
    highest: Option<(u32, u32, u64)>,
    /// Per plane, the entropy value of the latest data packet that arrived (0: none).
    last_data_ev: [u32; MAX_PLANES],
    rev_ev: [u32; MAX_PLANES],
    next_rev_probe: Time,
    stats: EndpointStats,
    /// Bit `p` set while local NIC port `p` is up.
    ports_up: u8,
    /// Changes of `ports_up` so far (wrapping), sent with it ([`Ext::port_epoch`]).
    port_epoch: u16,
    /// The plane of `unheard_ack` while one is stored.
    unheard_port: Option<u8>,
    /// Per plane, rounds of forced reverse probes left after its port came back up
    /// (0: none): repeated until one is answered, as the sender has nothing in flight
    /// that would make us probe again.
    reprobe: [u8; MAX_PLANES],
    /// Control packets waiting, per local NIC port (offset from `first_port`).
    ctrl: [VecDeque<Packet>; MAX_PLANES],
    /// Per plane, when duplicates (or a port coming back up) last forced a reverse
    /// probe: one round per probe interval, not one per duplicate (a timeout's resends
    /// arrive as a burst).
    forced_probe_at: [Time; MAX_PLANES],
    rng: Rng,
    /// While `unheard_port` is set, the latest acknowledgement while a duplicate says
    /// they are being lost (on that plane): repeated once a reverse probe finds a path.
    unheard_ack: Packet,
}

impl SprayResponder {
    /// A responder for `info`; `rng` picks reverse entropy values.
    pub fn new(info: ConnInfo, cfg: SprayResponderConfig, mut rng: Rng) -> SprayResponder {
        let planes = info.ports as usize;
        assert!(planes <= MAX_PLANES, "{planes} planes: at most {MAX_PLANES}");
        let mut rev_ev = [0; MAX_PLANES];
        for (p, ev) in rev_ev[..planes].iter_mut().enumerate() {
            *ev = Self::random_ev(&mut rng, info.first_port + p as u8);
        }
        SprayResponder {
            win: RecvWindow::new(info.mtu, cfg.window),
            ctrl: Default::default(),
            ports_up: u8::MAX,
            port_epoch: 0,
            rev_ev,
            last_data_ev: [0; MAX_PLANES],
            unheard_port: None,
            unheard_ack: Packet::default(),
            next_rev_probe: Time::ZERO,
            forced_probe_at: [Time::ZERO; MAX_PLANES],
            reprobe: [0; MAX_PLANES],
            highest: None,
            rng,
            info,
            cfg,
            stats: EndpointStats::default(),
        }
    }

    /// Keeps `ack`, the latest acknowledgement on plane `port`, to repeat it once a
    /// reverse probe of that plane is answered.
    fn store_unheard(&mut self, port: u8, ack: Packet) {
        self.unheard_port = Some(port);
        self.unheard_ack = ack;
    }

    /// The stored acknowledgement if it is for plane `port`, which it then no longer is.
    fn take_unheard(&mut self, port: u8) -> Option<Packet> {
        self.unheard_port.take_if(|p| *p == port).map(|_| self.unheard_ack)
    }

    /// A random entropy value tagged with NIC port (plane) `port`.
    fn random_ev(rng: &mut Rng, port: u8) -> u32 {
        fabricsim_wire::ev_with_plane(rng.next_u64() as u32, port)
    }

    /// Rounds of two reverse probes a port that came back up sends until one is answered:
    /// with half the reverse paths dead, all eight fail once in 65 536.
    const PORT_UP_PROBE_ROUNDS: u8 = 8;

    /// Time between rounds of port-up probes: two probe intervals (an answer takes a
    /// round trip), at least 1 us (the interval may be zero: a probe per arrival).
    fn reprobe_gap(&self) -> Option<Dur> {
        self.cfg.reverse_probe.map(|i| i.mul(2).max(Dur::from_us(1)))
    }

    /// One round of [`Self::PORT_UP_PROBE_ROUNDS`] on plane `i`.
    fn port_up_probes(&mut self, now: Time, i: usize) {
        self.forced_probe_at[i] = Time::ZERO;
        self.maybe_probe_reverse(now, Some(self.info.first_port + i as u8), Ext::F_PORT_UP);
        self.reprobe[i] -= 1;
    }

    /// The receive window (for out-of-order statistics).
    pub fn window(&self) -> &RecvWindow {
        &self.win
    }

    /// The up local port to answer a packet that arrived on `port`.
    fn reply_port(&self, port: u8) -> Option<u8> {
        let n = self.info.ports;
        (0..n)
            .map(|i| self.info.first_port + (port - self.info.first_port + i) % n)
            .find(|&p| self.ports_up & (1 << p) != 0)
    }

    fn control(&self, op: u8, ev: u32) -> Packet {
        super::control_packet(&self.info, op, ev)
    }

    /// Queues `pkt` to leave from the port answering `arrival_port`.
    fn queue(&mut self, arrival_port: u8, mut pkt: Packet, data_ev: u32) {
        let Some(port) = self.reply_port(arrival_port) else { return };
        let ev = if self.cfg.reverse_probe.is_some() {
            self.rev_ev[(port - self.info.first_port) as usize]
        } else {
            data_ev
        };
        pkt.net.set_entropy(ev);
        pkt.net.src_port = port;
        pkt.ext.port_state = self.ports_up;
        pkt.ext.port_epoch = self.port_epoch;
        self.ctrl[(port - self.info.first_port) as usize].push_back(pkt);
    }

    /// The acknowledgement to repeat on a reverse path just found to work: for the
    /// highest PSN held, with its bitmap (the sender may have missed every one since,
    /// and would resend all they covered), or else `stored`. `None` before any data.
    fn repeat_ack(&self, stored: Option<Packet>) -> Option<Packet> {
        let mut ack = match (self.highest, stored) {
            (Some((h, _, _)), Some(ack)) if h <= ack.ext.ack_psn => ack,
            (Some((h, ev, ts)), stored) => {
                let op = if self.cfg.sack { opcode::X_SACK } else { opcode::X_ACK };
                let mut ack = stored.unwrap_or_else(|| self.control(op, 0));
                let bitmap = if self.cfg.sack { self.win.sack_bits(h) } else { 0 };
                ack.ext = Ext { ev, ts, ack_psn: h, bitmap, flags: 0, ..ack.ext };
                ack
            }
            (None, stored) => stored?,
        };
        ack.ext.cum_psn = self.win.rcv_nxt();
        ack.bth.psn = self.win.rcv_nxt();
        ack.ext.flags |= Ext::F_REPEAT;
        Some(ack)
    }

    fn arrival_port(&self, pkt: &Packet) -> u8 {
        // A packet stays in its plane: it arrives on the port of the sender's port.
        if self.info.ports > 1 {
            pkt.net.src_port
        } else {
            self.info.first_port
        }
    }

    /// Sends a reverse probe (forced: two on `force_port` now, at most once per probe
    /// interval; else one on a random port if the periodic one is due), with `flags`.
    fn maybe_probe_reverse(&mut self, now: Time, force_port: Option<u8>, flags: u8) {
        let Some(interval) = self.cfg.reverse_probe else { return };
        match force_port {
            None if now < self.next_rev_probe => return,
            Some(p) => {
                let at = &mut self.forced_probe_at[(p - self.info.first_port) as usize];
                if *at != Time::ZERO && now < *at + interval {
                    return;
                }
                *at = now;
            }
            None => {}
        }
        self.next_rev_probe = now + interval;
        let port = match force_port {
            Some(p) => p,
            None => self.info.first_port + self.rng.below(self.info.ports as u64) as u8,
        };
        if self.ports_up & (1 << port) == 0 {
            return;
        }
        // A forced probe answers a duplicate: our acknowledgements are being lost on
        // this plane, and the sender is waiting on a retransmission timeout. Two
        // random EVs find a working reverse path with twice the odds.
        for _ in 0..if force_port.is_some() { 2 } else { 1 } {
            let ev = Self::random_ev(&mut self.rng, port);
            let mut probe = self.control(opcode::X_PROBE, ev);
            probe.ext.ev = ev;
            probe.ext.ts = now.ps();
            probe.ext.flags = flags;
            // The reply must reach us too: name a forward path that just did.
            let hint = self.last_data_ev[(port - self.info.first_port) as usize];
            if hint != 0 {
                probe.ext.flags |= Ext::F_HINT;
                probe.ext.bitmap = hint as u64;
            }
            probe.net.src_port = port;
            probe.ext.port_state = self.ports_up;
            probe.ext.port_epoch = self.port_epoch;
            self.ctrl[(port - self.info.first_port) as usize].push_back(probe);
        }
    }
}

impl Endpoint for SprayResponder {
    fn on_packet(&mut self, now: Time, pkt: &Packet) {
        let port = self.arrival_port(pkt);
        match pkt.bth.opcode {
            opcode::X_PROBE => {
                // The requester tests a path: answer on our reverse path.
                let mut reply = self.control(opcode::X_PROBE_REPLY, 0);
                reply.ext = Ext { ev: pkt.ext.ev, ts: pkt.ext.ts, ..Default::default() };
                self.queue(port, reply, pkt.ext.ev);
                return;
            }
            opcode::X_PROBE_REPLY => {
                // Our reverse probe came back: that entropy value works for its plane.
                let p = fabricsim_wire::ev_plane(pkt.ext.ev);
                if p >= self.info.first_port && p < self.info.first_port + self.info.ports {
                    self.rev_ev[(p - self.info.first_port) as usize] = pkt.ext.ev;
                    self.reprobe[(p - self.info.first_port) as usize] = 0;
                    // The sender may be waiting on a timeout for an acknowledgement
                    // that died on the old path (a duplicate showed it, or the sender
                    // says it has heard none): repeat the latest on the new one.
                    let stored = self.take_unheard(p);
                    if stored.is_some() || pkt.ext.flags & Ext::F_UNHEARD != 0 {
                        if let Some(ack) = self.repeat_ack(stored) {
                            self.queue(p, ack, 0);
                        }
                    }
                }
                return;
            }
            _ if !pkt.is_data() => return,
            _ => {}
        }
        let psn = pkt.bth.psn;
        if pkt.net.trimmed {
            self.stats.trimmed += 1;
            if self.cfg.nack_trimmed {
                let mut nack = self.control(opcode::X_NACK, 0);
                nack.bth.psn = psn;
                nack.ext = Ext {
                    ev: pkt.ext.ev,
                    cum_psn: self.win.rcv_nxt(),
                    ack_psn: psn,
                    ts: pkt.ext.ts,
                    flags: Ext::F_TRIMMED,
                    ..Default::default()
                };
                self.queue(port, nack, pkt.ext.ev);
            }
            return;
        }
        if let Some(last) =
            self.last_data_ev[..self.info.ports as usize].get_mut((port - self.info.first_port) as usize)
        {
            *last = pkt.net.entropy();
        }
        let ce = pkt.net.ecn == Ecn::Ce;
        if ce {
            self.stats.ecn_marked += 1;
        }
        let arrival = self.win.arrive(psn, pkt.ext.cum_psn, pkt.reth.len);
        if arrival == Arrival::Placed && self.highest.is_none_or(|h| psn > h.0) {
            self.highest = Some((psn, pkt.ext.ev, pkt.ext.ts));
        }
        let duplicate = arrival == Arrival::Duplicate;
        match arrival {
            Arrival::Placed => self.stats.bytes_placed += pkt.payload as u64,
            Arrival::Duplicate => {
                self.stats.duplicates += 1;
                // The sender resent something we acknowledged: our acknowledgement may
                // have died on the reverse path of this plane. Test it now.
                self.maybe_probe_reverse(now, Some(port), 0);
            }
            Arrival::BeyondWindow => {
                self.stats.duplicates += 1;
                if self.cfg.nack_beyond {
                    let mut nack = self.control(opcode::X_NACK, 0);
                    nack.bth.psn = psn;
                    nack.ext = Ext {
                        ev: pkt.ext.ev,
                        cum_psn: self.win.rcv_nxt(),
                        ack_psn: psn,
                        ts: pkt.ext.ts,
                        ..Default::default()
                    };
                    self.queue(port, nack, pkt.ext.ev);
                }
                return;
            }
        }
        let op = if self.cfg.sack { opcode::X_SACK } else { opcode::X_ACK };
        let mut ack = self.control(op, 0);
        ack.bth.psn = self.win.rcv_nxt();
        ack.ext = Ext {
            ev: pkt.ext.ev,
            cum_psn: self.win.rcv_nxt(),
            ack_psn: psn,
            ts: pkt.ext.ts,
            flags: if ce { Ext::F_ECE } else { 0 } | if duplicate { Ext::F_DUP } else { 0 },
            bitmap: if self.cfg.sack { self.win.sack_bits(psn) } else { 0 },
            ..Default::default()
        };
        if self.cfg.reverse_probe.is_some() && (duplicate || self.unheard_port.is_some()) {
            self.store_unheard(port, ack);
        }
        self.queue(port, ack, pkt.ext.ev);
        self.maybe_probe_reverse(now, None, 0);
    }

    fn on_timeout(&mut self, now: Time) {
        let Some(gap) = self.reprobe_gap() else { return };
        for i in 0..self.info.ports as usize {
            if self.reprobe[i] > 0 && now >= self.forced_probe_at[i] + gap {
                self.port_up_probes(now, i);
            }
        }
    }

    fn on_port_state(&mut self, now: Time, port: u8, up: bool) {
        if (self.ports_up & (1 << port) != 0) != up {
            self.port_epoch = self.port_epoch.wrapping_add(1);
        }
        if up {
            let was_down = self.ports_up & (1 << port) == 0;
            self.ports_up |= 1 << port;
            if was_down && self.cfg.reverse_probe.is_some() {
                // Back up: the sender has been timing out against this port, its
                // timeout backed off (a second or more after a long outage). Tell it at
                // once, with what arrived if anything did ([`Ext::F_PORT_UP`]), and
                // probe until a reverse path answers: with part of the paths dead the
                // first copies may die, and the sender has nothing in flight that
                // would make us try again.
                let i = (port - self.info.first_port) as usize;
                if let Some(ack) = self.repeat_ack(None) {
                    // (Repeated after a probe's answer without the flag: the
                    // announcement is made once.)
                    self.store_unheard(port, ack);
                    let mut flagged = ack;
                    flagged.ext.flags |= Ext::F_PORT_UP;
                    self.queue(port, flagged, 0);
                }
                self.reprobe[i] = Self::PORT_UP_PROBE_ROUNDS;
                self.port_up_probes(now, i);
            }
        } else {
            self.ports_up &= !(1 << port);
            self.reprobe[(port - self.info.first_port) as usize] = 0;
            // Control packets queued for a dead port move to a live one.
            let i = (port - self.info.first_port) as usize;
            let stranded: Vec<Packet> = self.ctrl[i].drain(..).collect();
            for p in stranded {
                let ev = p.net.entropy();
                self.queue(port, p, ev);
            }
        }
    }

    fn post(&mut self, _now: Time, _msg: Message) {}

    fn poll_transmit(&mut self, _now: Time, port: u8) -> Poll {
        match self.ctrl[..self.info.ports as usize]
            .get_mut((port.wrapping_sub(self.info.first_port)) as usize)
            .and_then(|q| q.pop_front())
        {
            Some(p) => {
                // Counted as it leaves: one still queued when the run ends never went.
                self.stats.control_sent += 1;
                Poll::Send(p)
            }
            None => Poll::Idle,
        }
    }

    fn poll_timeout(&self) -> Option<Time> {
        let gap = self.reprobe_gap()?;
        (0..self.info.ports as usize).filter(|&i| self.reprobe[i] > 0).map(|i| self.forced_probe_at[i] + gap).min()
    }

    fn poll_event(&mut self) -> Option<AppEvent> {
        self.win.poll_event()
    }

    fn stats(&self) -> &EndpointStats {
        &self.stats
    }

    fn ooo(&self) -> Option<&super::OooHistogram> {
        Some(&self.win.ooo)
    }
}
