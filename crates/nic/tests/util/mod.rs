//! A two-host harness on a point-to-point wire in virtual time (after quinn's
//! `tests/util.rs` `Pair`): no fabric, microseconds per test.
//!
//! Host 0 holds the requester, host 1 the responder. The endpoints are driven by the
//! simulator's own NIC layer ([`Nic`]) over this harness's [`Wire`]: a cable per NIC
//! port with a rate, a delay, a loss rule and an optional marking rule in each
//! direction. What the tests see is what a run would do with the same packets.

#![allow(dead_code)]

use fabricsim_engine::{Dur, EventQueue, Rate, Rng, Time};
use fabricsim_nic::{EndpointPlace, Nic, NicEvent, NicOutput, Wire};
use fabricsim_transport::{AnyEndpoint, AppEvent, ConnInfo, Endpoint, Poll};
use fabricsim_wire::{opcode, Ecn, Packet, TrafficClass};
use std::cell::RefCell;
use std::rc::Rc;

/// One single-port 100 Gb/s endpoint's view of a connection between hosts `local` and
/// `remote` (QPNs equal to the host numbers, which are the endpoints' ids in the
/// harness's NIC), MTU 4096.
pub fn info(local: u32, remote: u32) -> ConnInfo {
    ConnInfo {
        local_host: local,
        remote_host: remote,
        remote_qpn: remote,
        local_qpn: local,
        first_port: 0,
        ports: 1,
        port_rate: Rate::gbps(100),
        mtu: 4096,
    }
}

/// `info` with two NIC ports (planes 0 and 1).
pub fn info2(local: u32, remote: u32) -> ConnInfo {
    ConnInfo { ports: 2, ..info(local, remote) }
}

#[derive(Clone, Copy)]
enum Ev {
    /// Packet `id` of `in_flight` reaches host `side`.
    Deliver(usize, u32),
    /// Host `side`'s NIC port is free again.
    PortFree(usize, u8),
    /// The NIC's own deadline.
    Nic(NicEvent),
    /// Offer host `side`'s endpoint its ports (a NIC polling an idle endpoint).
    Kick(usize),
}

/// Decides the fate of one packet on the wire: `(lost, mark_ce)`; it may also change
/// the packet (trim it). Arguments: sending side, the packet, how many packets that
/// side sent before it.
pub type Fate = Box<dyn FnMut(usize, &mut Packet, u64) -> (bool, bool)>;

/// The propagation delay of one packet (by direction and packet, e.g. its entropy).
pub type DelayFn = Box<dyn Fn(usize, &Packet) -> Dur>;

/// The cables between the two hosts, as the NIC's [`Wire`].
pub struct Link {
    /// Serialization rate (`None`: none, frames leave at once).
    pub rate: Option<Rate>,
    pub delay: Dur,
    q: EventQueue<Ev>,
    /// Per side and port, busy sending.
    busy: [[bool; 8]; 2],
    in_flight: Vec<Option<Packet>>,
    pub fate: Fate,
    /// Overrides `delay` per packet when set.
    pub delay_of: Option<DelayFn>,
    /// Packets put on the wire in each direction.
    pub sent: [u64; 2],
    pub lost: [u64; 2],
    /// Per side, from when its data class is paused (as PFC pauses it; `Time::MAX`:
    /// never).
    pub data_paused_from: [Time; 2],
}

impl Wire for Link {
    fn can_send(&self, host: u32, port: u8, class: TrafficClass, now: Time) -> bool {
        !self.busy[host as usize][port as usize]
            && (class != TrafficClass::Data || now < self.data_paused_from[host as usize])
    }

    fn send(&mut self, now: Time, host: u32, port: u8, mut pkt: Packet) {
        let side = host as usize;
        pkt.net.src_port = port;
        let ser = self.rate.map_or(Dur::ZERO, |r| r.tx_time(pkt.wire_bytes() as u64));
        self.busy[side][port as usize] = true;
        self.q.push(now + ser, Ev::PortFree(side, port));
        let n = self.sent[side];
        self.sent[side] += 1;
        let (lost, mark) = (self.fate)(side, &mut pkt, n);
        if lost {
            self.lost[side] += 1;
            return;
        }
        if mark && pkt.net.ecn != Ecn::NotEct {
            pkt.net.ecn = Ecn::Ce;
        }
        let delay = self.delay_of.as_ref().map_or(self.delay, |f| f(side, &pkt));
        self.in_flight.push(Some(pkt));
        let id = (self.in_flight.len() - 1) as u32;
        self.q.push(now + ser + delay, Ev::Deliver(1 - side, id));
    }

    fn schedule(&mut self, at: Time, ev: NicEvent) {
        self.q.push(at, Ev::Nic(ev));
    }
}

pub struct Pair {
    /// The two hosts' NIC: endpoint 0 (the requester) on host 0, 1 on host 1.
    pub nic: Nic,
    pub link: Link,
    /// Every application event: `(time, side, event)`.
    pub events: Vec<(Time, usize, AppEvent)>,
}

impl Pair {
    /// `req` on host 0 and `resp` on host 1 over one cable of `rate` and `delay`
    /// each way.
    pub fn new(req: AnyEndpoint, resp: AnyEndpoint, rate: Rate, delay: Dur) -> Pair {
        Pair::with_ports(req, resp, 1, Some(rate), delay)
    }

    /// `req` and `resp` on hosts with `ports` NIC ports each (every endpoint on all
    /// of them), a cable between same-numbered ports; `rate: None` serializes nothing.
    pub fn with_ports(req: AnyEndpoint, resp: AnyEndpoint, ports: u8, rate: Option<Rate>, delay: Dur) -> Pair {
        let mut nic = Nic::new(2, ports as u32, 0);
        assert_eq!(nic.next_endpoint(), 0);
        nic.add_endpoint_pair(0, 1, EndpointPlace { first_port: 0, ports }, req, resp);
        let link = Link {
            rate,
            delay,
            q: EventQueue::new(),
            busy: [[false; 8]; 2],
            in_flight: Vec::new(),
            fate: Box::new(|_, _, _| (false, false)),
            delay_of: None,
            sent: [0; 2],
            lost: [0; 2],
            data_paused_from: [Time::MAX; 2],
        };
        Pair { nic, link, events: Vec::new() }
    }

    /// Loses each packet in either direction with probability `p` (seeded).
    pub fn lossy(mut self, p: f64, seed: u64) -> Pair {
        let mut rng = Rng::new(seed);
        self.link.fate = Box::new(move |_, _, _| (rng.chance(p), false));
        self
    }

    /// Endpoint `side`.
    pub fn ep(&self, side: usize) -> &AnyEndpoint {
        self.nic.endpoint(side as u32)
    }

    /// Endpoint `side`, to change directly; [`kick`](Self::kick) it afterwards.
    pub fn ep_mut(&mut self, side: usize) -> &mut AnyEndpoint {
        self.nic.endpoint_mut(side as u32)
    }

    pub fn now(&self) -> Time {
        self.link.q.now()
    }

    /// Posts `msg` on the requester now.
    pub fn post(&mut self, msg: fabricsim_transport::Message) {
        self.post_on(0, msg);
    }

    /// Posts `msg` on endpoint `ep` now (a requester of a connection added to `nic`).
    pub fn post_on(&mut self, ep: u32, msg: fabricsim_transport::Message) {
        let now = self.now();
        self.nic.post_message(now, ep, msg, &mut self.link);
        self.collect();
    }

    /// Lets the NIC offer `side`'s endpoint its ports now (after a direct change).
    pub fn kick(&mut self, side: usize) {
        let now = self.now();
        self.nic.kick(now, side as u32, &mut self.link);
        self.collect();
    }

    /// Runs until `t` and leaves the clock there (a kick of the requester at `t`, as a
    /// NIC polls an idle endpoint), so that what follows happens at `t`.
    pub fn run_to(&mut self, t: Time) {
        self.link.q.push(t, Ev::Kick(0));
        self.run(t);
    }

    /// Tells endpoint `side` that its NIC port `port` went down or came up.
    pub fn port_state(&mut self, side: usize, port: u8, up: bool) {
        let now = self.now();
        self.nic.port_state(now, side as u32, port, up, &mut self.link);
        self.collect();
    }

    /// Records what the NIC reported.
    fn collect(&mut self) {
        let now = self.now();
        while let Some(o) = self.nic.poll_output() {
            match o {
                NicOutput::Endpoint { ep, event } => self.events.push((now, ep as usize, event)),
                other => unreachable!("a pair reports its endpoints' events: {other:?}"),
            }
        }
    }

    /// Runs until nothing is left to do or `limit` is reached.
    pub fn run(&mut self, limit: Time) {
        self.run_with(limit, |_, _| {});
    }

    /// [`run`](Self::run), calling `before(now, pair)` before each event (to change
    /// port states as time passes).
    pub fn run_with(&mut self, limit: Time, mut before: impl FnMut(Time, &mut Pair)) {
        while let Some(t) = self.link.q.peek_time() {
            if t > limit {
                break;
            }
            let (now, ev) = self.link.q.pop().unwrap();
            before(now, self);
            match ev {
                Ev::Deliver(side, id) => {
                    let pkt = self.link.in_flight[id as usize].take().unwrap();
                    assert_eq!(pkt.net.dst as usize, side, "a cable delivers to the host at its far end");
                    assert!(self.nic.deliver(now, &pkt, &mut self.link), "packet for no endpoint: {pkt:?}");
                }
                Ev::PortFree(side, port) => {
                    self.link.busy[side][port as usize] = false;
                    self.nic.serve(now, side as u32, port, &mut self.link);
                }
                Ev::Nic(e) => self.nic.on_event(now, e, &mut self.link),
                Ev::Kick(side) => self.nic.kick(now, side as u32, &mut self.link),
            }
            self.collect();
        }
    }

    /// Records `what` of every data packet the requester puts on the wire (a copy
    /// each time a packet is resent); nothing is lost or marked. Replaces `fate`.
    pub fn record_sent<T: 'static>(&mut self, what: impl Fn(&Packet) -> T + 'static) -> Rc<RefCell<Vec<T>>> {
        let seen = Rc::new(RefCell::new(Vec::new()));
        let s = seen.clone();
        self.link.fate = Box::new(move |side, pkt: &mut Packet, _| {
            if side == 0 && pkt.is_data() {
                s.borrow_mut().push(what(pkt));
            }
            (false, false)
        });
        seen
    }

    /// Times at which the responder completed each message.
    pub fn received(&self) -> Vec<(u32, Time)> {
        self.events
            .iter()
            .filter_map(|&(t, side, e)| match e {
                AppEvent::Received { seq } if side == 1 => Some((seq, t)),
                _ => None,
            })
            .collect()
    }

    /// Messages the requester saw fully acknowledged, with their retransmissions.
    pub fn acked(&self) -> Vec<(u32, u64)> {
        self.events
            .iter()
            .filter_map(|&(_, side, e)| match e {
                AppEvent::Acked { seq, retransmitted } if side == 0 => Some((seq, retransmitted)),
                _ => None,
            })
            .collect()
    }

    /// When the requester saw each message fully acknowledged.
    pub fn acked_times(&self) -> Vec<Time> {
        self.events
            .iter()
            .filter(|&&(_, side, e)| side == 0 && matches!(e, AppEvent::Acked { .. }))
            .map(|e| e.0)
            .collect()
    }
}

/// Everything `e` sends on NIC port `port` at `t`, until it has nothing more (for
/// tests that drive one endpoint by hand).
pub fn drain(e: &mut dyn Endpoint, t: Time, port: u8) -> Vec<Packet> {
    std::iter::from_fn(|| match e.poll_transmit(t, port) {
        Poll::Send(p) => Some(p),
        _ => None,
    })
    .collect()
}

/// Entropy of a sprayed packet's path: data carry it in their header, ACKs echo it.
pub fn path_of(p: &Packet) -> u32 {
    if p.bth.opcode == opcode::X_ACK {
        p.ext.ev
    } else {
        p.net.entropy()
    }
}
