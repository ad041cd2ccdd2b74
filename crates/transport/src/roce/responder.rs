//! The RoCE responder: places in-order data, answers ACK/NAK, sends CNPs.

use super::RoceConfig;
use crate::conn::{AppEvent, ConnInfo, EndpointStats, Message, Poll};
use crate::Endpoint;
use fabricsim_engine::{Dur, Time};
use fabricsim_wire::{hdr, opcode, Aeth, Bth, Ecn, NetHdr, Packet, TrafficClass};
use std::collections::VecDeque;

/// The receiving side of a RoCE QP.
#[derive(Clone, Debug)]
pub struct RoceResponder {
    info: ConnInfo,
    cfg: RoceConfig,
    sport: u16,
    /// Expected PSN.
    e_psn: u32,
    /// Messages completed.
    msn: u32,
    since_ack: u32,
    /// An ACK (`Some(false)`) or NAK (`Some(true)`) waiting to be sent.
    pending: Option<bool>,
    cnp_pending: bool,
    last_cnp: Option<Time>,
    /// The expected PSN we last NAKed, and when.
    naked: Option<(u32, Time)>,
    events: VecDeque<AppEvent>,
    stats: EndpointStats,
}

impl RoceResponder {
    /// A responder for `info`; its control packets leave from UDP port `sport`.
    pub fn new(info: ConnInfo, cfg: RoceConfig, sport: u16) -> RoceResponder {
        RoceResponder {
            info,
            cfg,
            sport,
            e_psn: 0,
            msn: 0,
            since_ack: 0,
            pending: None,
            cnp_pending: false,
            last_cnp: None,
            naked: None,
            events: VecDeque::new(),
            stats: EndpointStats::default(),
        }
    }

    fn cnp_interval(&self) -> Dur {
        self.cfg.dcqcn.map_or(Dur::ZERO, |d| d.cnp_interval)
    }

    fn control(&self, op: u8, psn: u32) -> Packet {
        Packet {
            net: NetHdr {
                src: self.info.local_host,
                dst: self.info.remote_host,
                sport: self.sport,
                class: TrafficClass::Control,
                ecn: Ecn::NotEct,
                ..Default::default()
            },
            bth: Bth { opcode: op, ack_req: false, dest_qp: self.info.remote_qpn, psn },
            ..Default::default()
        }
    }
}

impl Endpoint for RoceResponder {
    fn on_packet(&mut self, now: Time, pkt: &Packet) {
        if !pkt.is_data() {
            return;
        }
        if pkt.net.trimmed {
            // A RoCE NIC cannot use a truncated packet: it is as good as lost, and the
            // next packet after it will reveal the gap.
            self.stats.trimmed += 1;
            return;
        }
        if pkt.net.ecn == Ecn::Ce {
            self.stats.ecn_marked += 1;
            if self.cfg.dcqcn.is_some() && self.last_cnp.is_none_or(|t| now.since(t) >= self.cnp_interval()) {
                self.cnp_pending = true;
                self.last_cnp = Some(now);
            }
        }
        let psn = pkt.bth.psn;
        if psn == self.e_psn {
            self.e_psn += 1;
            self.stats.bytes_placed += pkt.payload as u64;
            self.naked = None;
            self.since_ack += 1;
            let ends = opcode::ends_message(pkt.bth.opcode);
            if ends {
                self.events.push_back(AppEvent::Received { seq: self.msn });
                self.msn += 1;
            }
            if ends || pkt.bth.ack_req || self.since_ack >= self.cfg.ack_interval {
                self.pending = Some(false);
                self.since_ack = 0;
            }
        } else if psn > self.e_psn {
            self.stats.duplicates += 1;
            let repeat = match self.naked {
                Some((p, t)) => p != self.e_psn || self.cfg.nak_interval.is_some_and(|i| now.since(t) >= i),
                None => true,
            };
            if repeat {
                self.naked = Some((self.e_psn, now));
                self.pending = Some(true);
            }
        } else {
            // A duplicate: our ACK was lost or the requester went back too far.
            // Re-acknowledge so it resynchronises.
            self.stats.duplicates += 1;
            if self.pending.is_none() {
                self.pending = Some(false);
            }
        }
    }

    fn on_timeout(&mut self, _now: Time) {}

    fn post(&mut self, _now: Time, _msg: Message) {}

    fn poll_transmit(&mut self, _now: Time, _port: u8) -> Poll {
        if self.cnp_pending {
            self.cnp_pending = false;
            self.stats.control_sent += 1;
            self.stats.cnps += 1;
            return Poll::Send(self.control(opcode::CNP, 0));
        }
        let Some(nak) = self.pending.take() else { return Poll::Idle };
        let (psn, syndrome) =
            if nak { (self.e_psn, Aeth::NAK_SEQ_ERR) } else { (self.e_psn.wrapping_sub(1), Aeth::ACK) };
        let mut p = self.control(opcode::RC_ACK, psn);
        p.hdrs = hdr::AETH;
        p.aeth = Aeth { syndrome, msn: self.msn };
        self.stats.control_sent += 1;
        Poll::Send(p)
    }

    fn poll_timeout(&self) -> Option<Time> {
        None
    }

    fn poll_event(&mut self) -> Option<AppEvent> {
        self.events.pop_front()
    }

    fn stats(&self) -> &EndpointStats {
        &self.stats
    }
}
