//! A two-endpoint harness on a point-to-point wire in virtual time (after quinn's
//! `tests/util.rs` `Pair`): no fabric, microseconds per test.
//!
//! Side 0 is the requester, side 1 the responder. Each direction has a rate, a delay,
//! a loss probability and an optional marking rule; the harness drives both endpoints
//! through the transport contract exactly as the simulator's hosts do.

#![allow(dead_code)]

use fabricsim_engine::{Dur, EventQueue, Rate, Rng, Time};
use fabricsim_transport::{AnyEndpoint, AppEvent, ConnInfo, Endpoint, Poll};
use fabricsim_wire::{Ecn, Packet};
use std::cell::RefCell;
use std::rc::Rc;

/// One single-port 100 Gb/s endpoint's view of a connection between hosts `local` and
/// `remote` (QPNs equal to the host numbers), MTU 4096.
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

#[derive(Clone, Copy)]
enum Ev {
    Deliver(usize, u32),
    PortFree(usize),
    Wake(usize),
    Timer(usize),
}

/// Decides the fate of one packet on the wire: `(lost, mark_ce)`; it may also change
/// the packet (trim it).
pub type Fate = Box<dyn FnMut(usize, &mut Packet, u64) -> (bool, bool)>;

/// The propagation delay of one packet (by direction and packet, e.g. its entropy).
pub type DelayFn = Box<dyn Fn(usize, &Packet) -> Dur>;

pub struct Pair {
    pub eps: [AnyEndpoint; 2],
    pub rate: Rate,
    pub delay: Dur,
    q: EventQueue<Ev>,
    busy: [bool; 2],
    in_flight: Vec<Option<Packet>>,
    timer_at: [Option<Time>; 2],
    pub fate: Fate,
    /// Overrides `delay` per packet when set.
    pub delay_of: Option<DelayFn>,
    pub events: Vec<(Time, usize, AppEvent)>,
    /// Data packets put on the wire in each direction.
    pub sent: [u64; 2],
    pub lost: [u64; 2],
}

impl Pair {
    pub fn new(req: AnyEndpoint, resp: AnyEndpoint, rate: Rate, delay: Dur) -> Pair {
        Pair {
            eps: [req, resp],
            rate,
            delay,
            q: EventQueue::new(),
            busy: [false; 2],
            in_flight: Vec::new(),
            timer_at: [None; 2],
            fate: Box::new(|_, _, _| (false, false)),
            delay_of: None,
            events: Vec::new(),
            sent: [0; 2],
            lost: [0; 2],
        }
    }

    /// Loses each packet in either direction with probability `p` (seeded).
    pub fn lossy(mut self, p: f64, seed: u64) -> Pair {
        let mut rng = Rng::new(seed);
        self.fate = Box::new(move |_, _, _| (rng.chance(p), false));
        self
    }

    pub fn now(&self) -> Time {
        self.q.now()
    }

    pub fn post(&mut self, msg: fabricsim_transport::Message) {
        let now = self.q.now();
        self.eps[0].post(now, msg);
        self.after_input(0);
    }

    /// Runs until `t` and leaves the clock there (a wake-up of the requester at `t`, as
    /// a NIC polls an idle endpoint), so that what follows happens at `t`.
    pub fn run_to(&mut self, t: Time) {
        self.q.push(t, Ev::Wake(0));
        self.run(t);
    }

    /// Tells endpoint `side` that its NIC port `port` went down or came up.
    pub fn port_state(&mut self, side: usize, port: u8, up: bool) {
        let now = self.q.now();
        self.eps[side].on_port_state(now, port, up);
        self.after_input(side);
    }

    fn after_input(&mut self, side: usize) {
        self.collect(side);
        self.serve(side);
    }

    /// Records `side`'s application events and arms its timer.
    fn collect(&mut self, side: usize) {
        let now = self.q.now();
        while let Some(e) = self.eps[side].poll_event() {
            self.events.push((now, side, e));
        }
        if let Some(t) = arm(&self.eps[side], now, &mut self.timer_at[side]) {
            self.q.push(t, Ev::Timer(side));
        }
    }

    fn serve(&mut self, side: usize) {
        if self.busy[side] {
            return;
        }
        let now = self.q.now();
        match self.eps[side].poll_transmit(now, 0) {
            Poll::Send(mut pkt) => {
                let ser = self.rate.tx_time(pkt.wire_bytes() as u64);
                self.busy[side] = true;
                self.q.push(now + ser, Ev::PortFree(side));
                let n = self.sent[side];
                self.sent[side] += 1;
                let (lost, mark) = (self.fate)(side, &mut pkt, n);
                if lost {
                    self.lost[side] += 1;
                } else {
                    if mark && pkt.net.ecn != Ecn::NotEct {
                        pkt.net.ecn = Ecn::Ce;
                    }
                    let delay = self.delay_of.as_ref().map_or(self.delay, |f| f(side, &pkt));
                    self.in_flight.push(Some(pkt));
                    let id = (self.in_flight.len() - 1) as u32;
                    self.q.push(now + ser + delay, Ev::Deliver(1 - side, id));
                }
            }
            Poll::Wait(t) => self.q.push(t, Ev::Wake(side)),
            Poll::Idle => {}
        }
        self.collect(side);
    }

    /// Runs until nothing is left to do or `limit` is reached.
    pub fn run(&mut self, limit: Time) {
        while let Some(t) = self.q.peek_time() {
            if t > limit {
                break;
            }
            let (now, ev) = self.q.pop().unwrap();
            match ev {
                Ev::Deliver(side, id) => {
                    let pkt = self.in_flight[id as usize].take().unwrap();
                    self.eps[side].on_packet(now, &pkt);
                    self.after_input(side);
                }
                Ev::PortFree(side) => {
                    self.busy[side] = false;
                    self.serve(side);
                }
                Ev::Wake(side) => self.serve(side),
                Ev::Timer(side) => {
                    fire(&mut self.eps[side], side, now, &mut self.timer_at[side]);
                    self.after_input(side);
                }
            }
        }
    }

    /// Records `what` of every data packet the requester puts on the wire (a copy
    /// each time a packet is resent); nothing is lost or marked. Replaces `fate`.
    pub fn record_sent<T: 'static>(&mut self, what: impl Fn(&Packet) -> T + 'static) -> Rc<RefCell<Vec<T>>> {
        let seen = Rc::new(RefCell::new(Vec::new()));
        let s = seen.clone();
        self.fate = Box::new(move |side, pkt: &mut Packet, _| {
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
}

/// The time to schedule `ep`'s timer event for, if it needs one earlier than the one
/// `armed` (a deadline already past fires now; `armed` remembers when the event really
/// is), as the simulator's hosts arm theirs.
fn arm(ep: &dyn Endpoint, now: Time, armed: &mut Option<Time>) -> Option<Time> {
    let t = ep.poll_timeout()?.max(now);
    armed.is_none_or(|a| t < a).then(|| {
        *armed = Some(t);
        t
    })
}

/// A timer event of `side` at `now`: fires its timeout if due, and checks the transport
/// contract as the simulator does (after `on_timeout` the deadline is later than `now`).
fn fire(ep: &mut dyn Endpoint, side: usize, now: Time, armed: &mut Option<Time>) {
    if *armed == Some(now) {
        *armed = None;
    }
    if ep.poll_timeout().is_some_and(|d| d <= now) {
        ep.on_timeout(now);
        let next = ep.poll_timeout();
        assert!(next.is_none_or(|d| d > now), "side {side} left its deadline at {next:?} <= {now}");
    }
}

/// Everything `e` sends on NIC port `port` at `t`, until it has nothing more.
pub fn drain(e: &mut dyn Endpoint, t: Time, port: u8) -> Vec<Packet> {
    std::iter::from_fn(|| match e.poll_transmit(t, port) {
        Poll::Send(p) => Some(p),
        _ => None,
    })
    .collect()
}

/// `info` with two NIC ports (planes 0 and 1).
pub fn info2(local: u32, remote: u32) -> ConnInfo {
    ConnInfo { ports: 2, ..info(local, remote) }
}

/// Drives two endpoints with two ports each (which `Pair` cannot: it uses port 0
/// only), 2 us apart with no serialization, until `until`. `fate(side, port, pkt,
/// now)` says whether a packet sent gets through; `at(now, eps)` may change the
/// endpoints before each event (port states) and returns whether it did. Returns the
/// times side 0 saw its messages acknowledged. Asserts the timer contract.
pub fn run_two_ports(
    eps: &mut [Box<dyn Endpoint>; 2],
    until: Time,
    mut fate: impl FnMut(usize, u8, &Packet, Time) -> bool,
    mut at: impl FnMut(Time, &mut [Box<dyn Endpoint>; 2]) -> bool,
) -> Vec<Time> {
    #[derive(Clone, Copy)]
    enum Ev {
        Deliver(usize, Packet),
        Timer(usize),
        Kick(usize),
    }
    let mut q = EventQueue::new();
    let mut acked = Vec::new();
    let mut armed: [Option<Time>; 2] = [None; 2];
    let mut now = Time::ZERO;
    let mut inputs: Vec<usize> = vec![0, 1];
    loop {
        for side in inputs.drain(..) {
            // One packet per port in turn, until both have nothing.
            let mut busy = [true, true];
            while busy.iter().any(|&b| b) {
                for port in 0..2u8 {
                    if !busy[port as usize] {
                        continue;
                    }
                    match eps[side].poll_transmit(now, port) {
                        Poll::Send(mut p) => {
                            p.net.src_port = port;
                            if fate(side, port, &p, now) {
                                q.push(now + Dur::from_us(2), Ev::Deliver(1 - side, p));
                            }
                        }
                        Poll::Wait(t) => {
                            q.push(t, Ev::Kick(side));
                            busy[port as usize] = false;
                        }
                        Poll::Idle => busy[port as usize] = false,
                    }
                }
            }
            while let Some(e) = eps[side].poll_event() {
                if side == 0 && matches!(e, AppEvent::Acked { .. }) {
                    acked.push(now);
                }
            }
            if let Some(t) = arm(eps[side].as_ref(), now, &mut armed[side]) {
                q.push(t, Ev::Timer(side));
            }
        }
        let Some((t, ev)) = q.pop() else { break };
        if t > until {
            break;
        }
        now = t;
        if at(now, eps) {
            inputs.extend([0, 1]);
        }
        match ev {
            Ev::Deliver(side, p) => {
                eps[side].on_packet(now, &p);
                inputs.push(side);
            }
            Ev::Kick(side) => inputs.push(side),
            Ev::Timer(side) => {
                fire(eps[side].as_mut(), side, now, &mut armed[side]);
                inputs.push(side);
            }
        }
    }
    acked
}
