//! The driver of the transport contract: packets in, ports served, timers run.
//!
//! # Ports
//! Each NIC port keeps two ready queues of endpoints: responders (ACK/NAK/CNP) are
//! served before requesters, as RNICs serve their ACK engine first; requesters share
//! the port round-robin, one packet per turn. A requester that must wait (pacing) is
//! woken by a [`NicEvent::Wake`] at the time it asked for.
//!
//! # Timers
//! Each endpoint has at most one pending [`NicEvent::Timer`] that matters: the one at
//! the time recorded in its bookkeeping. Deadlines that move later leave the old event
//! to fire harmlessly and re-arm; deadlines that move earlier schedule a new one.

use crate::multiqp::part_of;
use crate::rnic::Work;
use crate::{Nic, NicEvent, NicOutput, Wire};
use fabricsim_engine::Time;
use fabricsim_transport::{AppEvent, Endpoint, Poll};
use fabricsim_wire::{hdr, opcode, Packet, TrafficClass};

impl Nic {
    /// A packet arrived at its destination host: its endpoint (by destination QP)
    /// takes it. Returns `false` if no endpoint of that host has that QP number.
    #[inline]
    pub fn deliver<W: Wire>(&mut self, now: Time, pkt: &Packet, wire: &mut W) -> bool {
        let ep = pkt.bth.dest_qp;
        if ep as usize >= self.eps.len() || self.meta[ep as usize].host != pkt.net.dst {
            self.misdelivered += 1;
            return false;
        }
        if self.modelled() {
            self.receive_modelled(now, ep, pkt, wire);
            return true;
        }
        self.take(now, ep, pkt, wire);
        true
    }

    /// Endpoint `ep` takes `pkt` (inlined into the delivery of every packet).
    #[inline(always)]
    fn take<W: Wire>(&mut self, now: Time, ep: u32, pkt: &Packet, wire: &mut W) {
        self.eps[ep as usize].on_packet(now, pkt);
        self.after_input(now, ep, wire);
        self.ready(now, ep, wire);
    }

    /// What `pkt`, sent or received by endpoint `ep`, asks of its NIC. A RoCE packet
    /// after a message's first carries no address: the NIC keeps where the next byte
    /// goes, as the QP context does.
    fn work(&mut self, ep: u32, pkt: &Packet, transmit: bool) -> Work {
        let payload = if pkt.is_data() { pkt.payload as u64 } else { 0 };
        let addr = if pkt.hdrs & hdr::RETH != 0 {
            pkt.reth.va
        } else if pkt.hdrs & hdr::STH != 0 {
            pkt.sth().addr
        } else {
            self.next_addr[ep as usize]
        };
        self.next_addr[ep as usize] = addr + payload;
        let wqe = transmit && opcode::starts_message(pkt.bth.opcode);
        let m = &self.meta[ep as usize];
        Work { qp: m.local, payload, addr, wqe, stateless: m.stateless }
    }

    /// A packet for endpoint `ep` reaches its modelled NIC: it passes the receive
    /// pipeline, in order, before the endpoint takes it.
    fn receive_modelled<W: Wire>(&mut self, now: Time, ep: u32, pkt: &Packet, wire: &mut W) {
        let host = pkt.net.dst as usize;
        let w = self.work(ep, pkt, false);
        let done = self.rnic[host].receive(now, w);
        let q = &mut self.rx_queue[host];
        if q.is_empty() && done <= now {
            self.take(now, ep, pkt, wire);
            return;
        }
        if q.is_empty() {
            wire.schedule(done, NicEvent::Rx(host as u32));
        }
        q.push_back((done, *pkt));
    }

    /// Host `host`'s NIC has processed the packets at the head of its receive queue.
    fn received<W: Wire>(&mut self, now: Time, host: u32, wire: &mut W) {
        while let Some(&(done, _)) = self.rx_queue[host as usize].front() {
            if done > now {
                wire.schedule(done, NicEvent::Rx(host));
                return;
            }
            let (_, pkt) = self.rx_queue[host as usize].pop_front().expect("a head");
            self.take(now, pkt.bth.dest_qp, &pkt, wire);
        }
    }

    /// A deadline the NIC scheduled has come.
    #[inline]
    pub fn on_event<W: Wire>(&mut self, now: Time, ev: NicEvent, wire: &mut W) {
        match ev {
            NicEvent::Timer(ep) => self.timer(now, ep, wire),
            NicEvent::Wake(ep) => {
                if self.meta[ep as usize].wake_at == now {
                    self.meta[ep as usize].wake_at = Time::MAX;
                    self.ready(now, ep, wire);
                }
            }
            NicEvent::Rx(host) => self.received(now, host, wire),
            NicEvent::Tx { host, port } => self.serve(now, host, port, wire),
            NicEvent::Post(ep) => self.posted(now, ep, wire),
        }
    }

    /// NIC port `port` of `host` went down or came up: its endpoints hear.
    pub fn port_state<W: Wire>(&mut self, now: Time, host: u32, port: u8, up: bool, wire: &mut W) {
        for k in 0..self.host_eps[host as usize].len() {
            let ep = self.host_eps[host as usize][k];
            let m = self.meta[ep as usize];
            if port >= m.first_port && port < m.first_port + m.ports {
                self.eps[ep as usize].on_port_state(now, port, up);
                self.after_input(now, ep, wire);
                self.ready(now, ep, wire);
            }
        }
    }

    /// Offers endpoint `ep` its ports now, as a NIC polls an endpoint it has no event
    /// for (after its owner changed it directly), and re-arms its timer.
    pub fn kick<W: Wire>(&mut self, now: Time, ep: u32, wire: &mut W) {
        self.after_input(now, ep, wire);
        self.ready(now, ep, wire);
    }

    fn timer<W: Wire>(&mut self, now: Time, ep: u32, wire: &mut W) {
        let m = &mut self.meta[ep as usize];
        if m.timer_at == now {
            m.timer_at = Time::MAX;
        }
        if self.eps[ep as usize].poll_timeout().is_some_and(|d| d <= now) {
            self.eps[ep as usize].on_timeout(now);
            debug_assert!(
                self.eps[ep as usize].poll_timeout().is_none_or(|d| d > now),
                "endpoint {ep} did not advance its deadline in on_timeout (transport contract)"
            );
            self.after_input(now, ep, wire);
            self.ready(now, ep, wire);
        } else {
            self.arm(now, ep, wire);
        }
    }

    /// Collects an endpoint's application events (as message-level outputs) and
    /// re-arms its timer.
    pub(crate) fn after_input<W: Wire>(&mut self, now: Time, ep: u32, wire: &mut W) {
        // Most inputs leave no event: the loop over them is kept out of line.
        match self.eps[ep as usize].poll_event() {
            None => self.arm(now, ep, wire),
            Some(e) => self.take_events(now, ep, e, wire),
        }
    }

    /// Endpoint `ep`'s events, `first` the first of them, as outputs (and Maestro's
    /// bookkeeping), then its timer re-armed.
    #[inline(never)]
    fn take_events<W: Wire>(&mut self, now: Time, ep: u32, first: AppEvent, wire: &mut W) {
        let mut dispatch = false;
        let mut next = Some(first);
        while let Some(e) = next {
            next = self.eps[ep as usize].poll_event();
            let conn = self.meta[ep as usize].conn as usize;
            if self.conns[conn].report == crate::Report::Endpoints {
                self.out.push_back(NicOutput::Endpoint { ep, event: e });
                continue;
            }
            let qp = ((ep - self.conns[conn].first_ep) / 2) as usize;
            if self.conns[conn].maestro.is_some() {
                dispatch |= self.maestro_event(now, conn, qp, e);
                continue;
            }
            match e {
                AppEvent::Received { seq } => {
                    let m = part_of(&self.conns[conn], qp, seq);
                    let p = &mut self.parts[m as usize];
                    p.unreceived -= 1;
                    if p.unreceived == 0 {
                        self.out.push_back(NicOutput::Received { msg: m });
                    }
                }
                AppEvent::Acked { seq, retransmitted } => {
                    let m = part_of(&self.conns[conn], qp, seq);
                    let p = &mut self.parts[m as usize];
                    p.unacked -= 1;
                    self.out.push_back(NicOutput::Acked { msg: m, retransmitted, all: p.unacked == 0 });
                }
                AppEvent::Failed => self.out.push_back(NicOutput::Failed { conn: conn as u32 }),
            }
        }
        self.arm(now, ep, wire);
        if dispatch {
            // Chunks waiting for a slot or a healthy QP (after this endpoint's timer is
            // armed: dispatching drives other endpoints of the connection).
            self.dispatch(now, self.meta[ep as usize].conn, wire);
        }
    }

    fn arm<W: Wire>(&mut self, now: Time, ep: u32, wire: &mut W) {
        if let Some(t) = self.eps[ep as usize].poll_timeout() {
            // A deadline already past fires now; `timer_at` must be the time the event
            // is really scheduled for, or it would never be recognised and re-armed.
            let t = t.max(now);
            let m = &mut self.meta[ep as usize];
            if t < m.timer_at {
                m.timer_at = t;
                wire.schedule(t, NicEvent::Timer(ep));
            }
        }
    }

    /// Queues `ep` on its ports and serves any that are idle, starting from a
    /// different port each time: an endpoint on several ports whose window opens by one
    /// packet sends it on whichever idle port it is offered first. Always offering the
    /// first port first gave it the lion's share whenever the window, not the ports,
    /// set the pace (an MRC incast over two planes split its packets 60:40, one plane's
    /// last hop queued 340 KB while the other's ran dry, and the reordering between
    /// them cost 20-35 % spurious resends).
    pub(crate) fn ready<W: Wire>(&mut self, now: Time, ep: u32, wire: &mut W) {
        let m = self.meta[ep as usize];
        let nics = self.ports_per_host;
        if m.ports > 1 {
            self.meta[ep as usize].offer_first = (m.offer_first + 1) % m.ports;
        }
        for k in 0..m.ports {
            // (offer_first + k) mod ports, without a division on every packet.
            let i = if m.offer_first + k >= m.ports { m.offer_first + k - m.ports } else { m.offer_first + k };
            let bit = 1u16 << i;
            let nic = m.first_port + i;
            if m.queued & bit == 0 {
                self.meta[ep as usize].queued |= bit;
                let q = &mut self.queues[(m.host * nics + nic as u32) as usize];
                if m.responder {
                    q.ctrl.push_back(ep);
                } else {
                    q.data.push_back(ep);
                }
            }
            if m.dual && m.queued & (bit << 8) == 0 {
                // Its other queue (see `EpMeta::queued`).
                self.meta[ep as usize].queued |= bit << 8;
                let q = &mut self.queues[(m.host * nics + nic as u32) as usize];
                if m.responder {
                    q.data.push_back(ep);
                } else {
                    q.ctrl.push_back(ep);
                }
            }
            if wire.can_send(m.host, nic, TrafficClass::Control, now) {
                self.serve(now, m.host, nic, wire);
            }
        }
    }

    /// NIC port `port` of `host` is free: send the next packet, responders first.
    #[inline]
    pub fn serve<W: Wire>(&mut self, now: Time, host: u32, port: u8, wire: &mut W) {
        if !wire.can_send(host, port, TrafficClass::Control, now) {
            return;
        }
        let qi = (host * self.ports_per_host + port as u32) as usize;
        let mut data_held = false;
        if self.modelled() {
            match self.send_staged(now, host, port, qi, wire) {
                Staged::None => {}
                Staged::Waits => return,
                Staged::DataPaused => data_held = true,
            }
        }
        for data in [false, true] {
            if data && (data_held || !wire.can_send(host, port, TrafficClass::Data, now)) {
                return;
            }
            let mut budget = if data { self.queues[qi].data.len() } else { self.queues[qi].ctrl.len() };
            while budget > 0 {
                budget -= 1;
                let queue = if data { &mut self.queues[qi].data } else { &mut self.queues[qi].ctrl };
                let Some(ep) = queue.pop_front() else { break };
                let m = &self.meta[ep as usize];
                let (dual, mut bit) = (m.dual, 1u16 << (port - m.first_port));
                if dual && data == m.responder {
                    // A dual endpoint's other queue has its own bit (`EpMeta::queued`).
                    bit <<= 8;
                }
                self.meta[ep as usize].queued &= !bit;
                let poll = if dual && !data {
                    self.poll_control_of(ep, now, port)
                } else {
                    self.eps[ep as usize].poll_transmit(now, port)
                };
                match poll {
                    Poll::Send(pkt) if self.security.is_some() && self.refused(host, &pkt) => {
                        // Refused by StaR's security table: dropped before the wire,
                        // the port still free for the next endpoint.
                        self.meta[ep as usize].queued |= bit;
                        let queue = if data { &mut self.queues[qi].data } else { &mut self.queues[qi].ctrl };
                        queue.push_back(ep);
                    }
                    Poll::Send(pkt) => {
                        // The ideal NIC's branch is kept apart: it is every packet's path.
                        if self.modelled() {
                            let w = self.work(ep, &pkt, true);
                            let ready = self.rnic[host as usize].transmit(now, w);
                            if ready > now {
                                let slot = &mut self.staged[qi][pkt.net.class as usize];
                                debug_assert!(slot.is_none(), "a staged packet's slot taken again");
                                *slot = Some((ready, pkt));
                                wire.schedule(ready, NicEvent::Tx { host, port });
                            } else {
                                wire.send(now, host, port, pkt);
                            }
                        } else {
                            wire.send(now, host, port, pkt);
                        }
                        // Back of the line: one packet per endpoint per turn.
                        self.meta[ep as usize].queued |= bit;
                        let queue = if data { &mut self.queues[qi].data } else { &mut self.queues[qi].ctrl };
                        queue.push_back(ep);
                        self.after_input(now, ep, wire);
                        return;
                    }
                    Poll::Wait(t) => {
                        let m = &mut self.meta[ep as usize];
                        if t < m.wake_at {
                            m.wake_at = t;
                            wire.schedule(t, NicEvent::Wake(ep));
                        }
                    }
                    Poll::Idle => {}
                }
                self.after_input(now, ep, wire);
            }
        }
    }

    /// A dual endpoint's next control packet (kept out of line: most endpoints are not
    /// dual, and `serve` is every packet's path).
    #[inline(never)]
    fn poll_control_of(&mut self, ep: u32, now: Time, port: u8) -> Poll {
        self.eps[ep as usize].poll_control(now, port)
    }

    /// Whether StaR's security table refuses `pkt`, leaving host `host` (counted).
    #[cold]
    #[inline(never)]
    fn refused(&mut self, host: u32, pkt: &fabricsim_wire::Packet) -> bool {
        self.security.as_mut().is_some_and(|s| !s.allows(host, pkt))
    }

    /// The packets staged on a port of a modelled NIC go on the wire once ready, control
    /// first. A staged control frame, or a data frame still being prepared, holds the
    /// port (the transmit pipeline is in order: nothing polled now would be ready
    /// sooner); a ready data frame whose class PFC pauses holds only the data class.
    fn send_staged<W: Wire>(&mut self, now: Time, host: u32, port: u8, qi: usize, wire: &mut W) -> Staged {
        const CTRL: usize = TrafficClass::Control as usize;
        const DATA: usize = TrafficClass::Data as usize;
        let ctrl = self.staged[qi][CTRL];
        if let Some((ready, pkt)) = ctrl {
            if ready <= now {
                self.staged[qi][CTRL] = None;
                wire.send(now, host, port, pkt);
                return Staged::Waits;
            }
        }
        match self.staged[qi][DATA] {
            Some((ready, pkt)) if ready <= now && wire.can_send(host, port, TrafficClass::Data, now) => {
                self.staged[qi][DATA] = None;
                wire.send(now, host, port, pkt);
                Staged::Waits
            }
            Some((ready, _)) if ready <= now && ctrl.is_none() => Staged::DataPaused,
            Some(_) => Staged::Waits,
            None if ctrl.is_some() => Staged::Waits,
            None => Staged::None,
        }
    }
}

/// What the packets staged on a modelled NIC's port leave the port to do.
enum Staged {
    /// Nothing staged: serve the queues.
    None,
    /// A staged frame went out or is still being prepared: the port has nothing more
    /// to do now.
    Waits,
    /// A ready data frame waits for its class's pause to end: control frames may go.
    DataPaused,
}
