//! The run loop: wires a scenario into a fabric and endpoints and drives them.
//!
//! # Hosts
//! Each NIC port keeps two ready queues of endpoints: responders (ACK/NAK/CNP) are
//! served before requesters, as RNICs serve their ACK engine first; requesters share
//! the port round-robin, one packet per turn. A requester that must wait (DCQCN
//! pacing) is woken by a `Wake` event at the time it asked for.
//!
//! # Timers
//! Each endpoint has at most one pending `Timer` event that matters: the one at the
//! time recorded in its metadata. Deadlines that move later leave the old event to
//! fire harmlessly and re-arm; deadlines that move earlier push a new event.
//!
//! # Ending
//! The run ends when every message has been received, when the scenario's `stop`
//! time is reached, or when nothing is left to happen (failed connections).

use crate::factory;
use crate::ideal::ideal_fct;
use crate::metrics::Sampler;
use crate::scenario::Scenario;
use crate::ScenarioError;
use fabricsim_engine::{Dur, EventQueue, Rng, Time};
use fabricsim_fabric::{Fabric, FabricEvent, FabricOutput};
use fabricsim_transport::{AnyEndpoint, AppEvent, ConnInfo, Endpoint, EndpointStats, Message, Poll};
use fabricsim_wire::TrafficClass;
use fabricsim_workload::Plan;
use std::collections::VecDeque;

/// Every event of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// A fabric event.
    Fabric(FabricEvent),
    /// An endpoint's deadline.
    Timer(u32),
    /// An endpoint may send again (pacing).
    Wake(u32),
    /// A message's start time has come and its dependencies are met.
    Start(u32),
    /// Sample the ports.
    Sample,
}

impl From<FabricEvent> for Event {
    #[inline]
    fn from(e: FabricEvent) -> Event {
        Event::Fabric(e)
    }
}

/// How far a run has got, for progress reports.
#[derive(Clone, Copy, Debug, Default)]
pub struct Progress {
    /// Simulated time.
    pub sim_time: Time,
    /// Events processed.
    pub events: u64,
    /// Packet-hops so far.
    pub packet_hops: u64,
    /// Messages received completely.
    pub flows_done: usize,
    /// Messages in the plan.
    pub flows_total: usize,
}

/// Why a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ending {
    /// Every message was received.
    AllFinished,
    /// The scenario's stop time was reached.
    StopTime,
    /// Nothing was left to happen but some messages never completed.
    Stalled,
    /// The progress callback asked to stop.
    Cancelled,
}

#[derive(Clone, Copy, Debug)]
struct EpMeta {
    host: u32,
    first_port: u8,
    ports: u8,
    responder: bool,
    conn: u32,
    /// Bit `i` set while queued on port `first_port + i`.
    queued: u16,
    timer_at: Time,
    wake_at: Time,
}

#[derive(Clone, Debug, Default)]
struct NicQueues {
    ctrl: VecDeque<u32>,
    data: VecDeque<u32>,
}

#[derive(Clone, Debug)]
struct ConnState {
    /// Endpoint ids of the connection's QPs: requester `first + 2i`, responder `+1`.
    first_ep: u32,
    qps: u32,
    /// Per QP, the message ids it carries parts of, by its own sequence numbers.
    msgs: Vec<Vec<u32>>,
}

/// Per-message bookkeeping, exported as the flow records.
#[derive(Clone, Copy, Debug)]
pub struct MsgState {
    deps_left: u32,
    parts_left: u32,
    /// When it was posted (`Time::MAX` if never).
    pub start: Time,
    /// When its last byte was placed (`Time::MAX` if never).
    pub finish: Time,
    /// Packets sent more than once for it.
    pub retransmitted: u64,
    /// Ideal completion time on an empty fabric.
    pub ideal: Dur,
}

/// The unloaded round trip of a connection (a full data frame out, an ACK back along
/// the same links) and the bytes that fill its ports for that long.
fn path_context(fabric: &Fabric, sc: &Scenario, src: u32, dst: u32, nic: u8, ports: u8) -> factory::PathContext {
    let data = factory::frame_wire_bytes(&sc.transport, sc.mtu as u64 * 2, sc.mtu, 0);
    let ack = factory::ack_wire_bytes(&sc.transport);
    let base_rtt = fabric.path(src, dst, nic).map_or(Dur::from_us(10), |hops| {
        hops.iter().map(|&(rate, delay)| rate.tx_time(data) + rate.tx_time(ack) + delay + delay).fold(Dur::ZERO, |a, b| a + b)
    });
    let rate = sc.links.host_link.bps() as f64 * ports as f64;
    factory::PathContext { base_rtt, bdp_bytes: rate / 8.0 * base_rtt.as_secs_f64() }
}

/// A scenario wired up and ready to run.
pub struct Sim {
    /// The scenario.
    pub scenario: Scenario,
    /// The traffic plan.
    pub plan: Plan,
    /// The fabric.
    pub fabric: Fabric,
    q: EventQueue<Event>,
    eps: Vec<AnyEndpoint>,
    meta: Vec<EpMeta>,
    nics: Vec<NicQueues>,
    conns: Vec<ConnState>,
    /// Message states, indexed by message id.
    pub msgs: Vec<MsgState>,
    dep_start: Vec<u32>,
    dependents: Vec<u32>,
    received: usize,
    /// Port sampler.
    pub sampler: Sampler,
    /// Packets that arrived for no endpoint.
    pub misdelivered: u64,
    /// Connections whose QP failed.
    pub failed_conns: u64,
    /// When the run ended.
    end: Option<Time>,
}

impl Sim {
    /// Builds the fabric, the connections and the plan of `scenario`.
    pub fn new(scenario: Scenario) -> Result<Sim, ScenarioError> {
        let max_frame = scenario.mtu as u64 + 200;
        let fabric = Fabric::new(&scenario.topology, &scenario.links, scenario.fabric.clone(), max_frame)
            .map_err(|e| ScenarioError::from_message(&e.to_string()))?;
        let plan = fabricsim_workload::build(&scenario.workloads, fabric.hosts(), scenario.seed)
            .map_err(|e| ScenarioError::from_message(&e.to_string()))?;
        let nics_per_host = fabric.nics();
        let all_ports = factory::uses_all_ports(&scenario.transport);
        let mut eps = Vec::new();
        let mut meta = Vec::new();
        let mut conns = Vec::with_capacity(plan.conns.len());
        for (ci, c) in plan.conns.iter().enumerate() {
            let (first_port, ports) = if all_ports { (0u8, nics_per_host as u8) } else { ((ci as u32 % nics_per_host) as u8, 1u8) };
            // Keyed by workload and position in it: adding a workload or appending a
            // flow never changes another connection's random choices.
            let mut rng = Rng::stream(scenario.seed, &[0xC044, c.workload as u64, c.index as u64]);
            let first = eps.len() as u32;
            let base = |host, remote, local_qpn, remote_qpn| ConnInfo {
                local_host: host,
                remote_host: remote,
                remote_qpn,
                local_qpn,
                first_port,
                ports,
                port_rate: scenario.links.host_link,
                mtu: scenario.mtu,
            };
            // QPNs are endpoint indices: a packet's BTH destination QP finds its
            // endpoint directly. Requester and responder of QP i sit side by side.
            let qps = factory::qps(&scenario.transport);
            let ctx = path_context(&fabric, &scenario, c.src, c.dst, first_port, ports);
            for i in 0..qps {
                let r = first + 2 * i;
                let (req, resp) = factory::endpoint_pair(&scenario.transport, base(c.src, c.dst, r, r + 1), base(c.dst, c.src, r + 1, r), &ctx, Time::ZERO, &mut rng);
                for (ep, host, responder) in [(req, c.src, false), (resp, c.dst, true)] {
                    eps.push(ep);
                    meta.push(EpMeta { host, first_port, ports, responder, conn: ci as u32, queued: 0, timer_at: Time::MAX, wake_at: Time::MAX });
                }
            }
            conns.push(ConnState { first_ep: first, qps, msgs: vec![Vec::new(); qps as usize] });
        }
        let msgs = plan
            .messages
            .iter()
            .map(|m| {
                let c = plan.conns[m.conn as usize];
                let nic = meta[conns[m.conn as usize].first_ep as usize].first_port;
                // A transport spraying over every plane sends 1/P of the frames on each.
                let width = if all_ports { nics_per_host as u64 } else { 1 };
                let n = factory::packets(m.size, scenario.mtu);
                let per_plane = n.div_ceil(width);
                let ideal = fabric.path(c.src, c.dst, nic).map_or(Dur::ZERO, |hops| {
                    ideal_fct(&hops, per_plane, |j| factory::frame_wire_bytes(&scenario.transport, m.size, scenario.mtu, n - per_plane + j))
                });
                MsgState { deps_left: m.deps.len() as u32, parts_left: 0, start: Time::MAX, finish: Time::MAX, retransmitted: 0, ideal }
            })
            .collect();
        // Dependents in compressed form: message d depends on m => d in dependents(m).
        let mut counts = vec![0u32; plan.messages.len() + 1];
        for m in &plan.messages {
            for &d in &m.deps {
                counts[d as usize + 1] += 1;
            }
        }
        for i in 1..counts.len() {
            counts[i] += counts[i - 1];
        }
        let mut fill = counts.clone();
        let mut dependents = vec![0u32; *counts.last().unwrap() as usize];
        for (i, m) in plan.messages.iter().enumerate() {
            for &d in &m.deps {
                dependents[fill[d as usize] as usize] = i as u32;
                fill[d as usize] += 1;
            }
        }
        let nics = vec![NicQueues::default(); (fabric.hosts() * nics_per_host) as usize];
        let sampler = Sampler::new(&fabric, scenario.output.sample_interval);
        let mut sim = Sim {
            scenario,
            plan,
            fabric,
            q: EventQueue::new(),
            eps,
            meta,
            nics,
            conns,
            msgs,
            dep_start: counts,
            dependents,
            received: 0,
            sampler,
            misdelivered: 0,
            failed_conns: 0,
            end: None,
        };
        for (i, m) in sim.plan.messages.iter().enumerate() {
            if m.deps.is_empty() {
                sim.q.push(Time::ZERO + m.start, Event::Start(i as u32));
            }
        }
        if sim.sampler.enabled() {
            sim.q.push(Time::ZERO + sim.scenario.output.sample_interval, Event::Sample);
        }
        Ok(sim)
    }

    /// Events processed so far.
    pub fn events(&self) -> u64 {
        self.q.popped()
    }

    /// The current simulated time (once the run is over: when it ended).
    pub fn now(&self) -> Time {
        self.end.unwrap_or(self.q.now())
    }

    /// Messages received completely.
    pub fn finished(&self) -> usize {
        self.received
    }

    /// Counters of every endpoint, with whether it is a responder and its connection.
    pub fn endpoint_stats(&self) -> impl Iterator<Item = (&EndpointStats, bool, u32)> {
        self.eps.iter().zip(&self.meta).map(|(e, m)| (e.stats(), m.responder, m.conn))
    }

    fn progress(&self) -> Progress {
        Progress {
            sim_time: self.q.now(),
            events: self.q.popped(),
            packet_hops: self.fabric.totals.packet_hops,
            flows_done: self.received,
            flows_total: self.msgs.len(),
        }
    }

    /// Runs to the end. `progress` is called every 65,536 events; returning `false`
    /// cancels the run (the result then covers what was simulated).
    pub fn run(&mut self, progress: &mut dyn FnMut(&Progress) -> bool) -> Ending {
        let stop = self.scenario.stop.map_or(Time::MAX, |d| Time::ZERO + d);
        if self.msgs.is_empty() {
            return Ending::AllFinished;
        }
        loop {
            let Some((now, ev)) = self.q.pop() else {
                self.end = Some(self.q.now());
                return Ending::Stalled;
            };
            if now > stop {
                // The event belongs after the end; nothing of it happens.
                self.end = Some(stop);
                self.sampler.sample(stop, &mut self.fabric);
                return Ending::StopTime;
            }
            match ev {
                Event::Fabric(fe) => match self.fabric.handle(now, fe, &mut self.q) {
                    Some(FabricOutput::Deliver { slot, .. }) => self.deliver(now, slot),
                    Some(FabricOutput::NicReady { host, nic }) => self.serve(now, host, nic),
                    None => {}
                },
                Event::Timer(ep) => self.timer(now, ep),
                Event::Wake(ep) => {
                    if self.meta[ep as usize].wake_at == now {
                        self.meta[ep as usize].wake_at = Time::MAX;
                        self.ready(now, ep);
                    }
                }
                Event::Start(m) => self.start(now, m),
                Event::Sample => {
                    self.sampler.sample(now, &mut self.fabric);
                    if !self.q.is_empty() {
                        self.q.push(now + self.scenario.output.sample_interval, Event::Sample);
                    }
                }
            }
            if self.received == self.msgs.len() {
                self.end = Some(now);
                self.sampler.sample(now, &mut self.fabric);
                return Ending::AllFinished;
            }
            if self.q.popped() & 0xFFFF == 0 && !progress(&self.progress()) {
                self.end = Some(now);
                return Ending::Cancelled;
            }
        }
    }

    fn deliver(&mut self, now: Time, slot: u32) {
        let pkt = *self.fabric.packet(slot);
        self.fabric.release(slot);
        let ep = pkt.bth.dest_qp;
        if ep as usize >= self.eps.len() || self.meta[ep as usize].host != pkt.net.dst {
            self.misdelivered += 1;
            return;
        }
        self.eps[ep as usize].on_packet(now, &pkt);
        self.after_input(now, ep);
        self.ready(now, ep);
    }

    fn timer(&mut self, now: Time, ep: u32) {
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
            self.after_input(now, ep);
            self.ready(now, ep);
        } else {
            self.arm(now, ep);
        }
    }

    fn start(&mut self, now: Time, m: u32) {
        let spec = &self.plan.messages[m as usize];
        let (c, size) = (spec.conn as usize, spec.size);
        let (first, qps) = (self.conns[c].first_ep, self.conns[c].qps);
        // A message over several QPs is split evenly, the remainder on the first ones;
        // a QP whose share is empty carries nothing of it.
        let parts: Vec<(u32, u64)> = (0..qps)
            .map(|i| (i, size / qps as u64 + u64::from((i as u64) < size % qps as u64)))
            .filter(|&(_, len)| len > 0)
            .collect();
        let st = &mut self.msgs[m as usize];
        st.start = now;
        st.parts_left = parts.len() as u32;
        let mut offset = 0;
        for (i, len) in parts {
            let ep = first + 2 * i;
            let queue = &mut self.conns[c].msgs[i as usize];
            let seq = queue.len() as u32;
            queue.push(m);
            let va = 0x7f00_0000_0000u64 + ((m as u64) << 32) + offset;
            offset += len;
            self.eps[ep as usize].post(now, Message { seq, len, va, rkey: m });
            self.after_input(now, ep);
            self.ready(now, ep);
        }
    }

    /// Drains an endpoint's application events and re-arms its timer.
    fn after_input(&mut self, now: Time, ep: u32) {
        while let Some(e) = self.eps[ep as usize].poll_event() {
            let conn = self.meta[ep as usize].conn as usize;
            let qp = ((ep - self.conns[conn].first_ep) / 2) as usize;
            match e {
                AppEvent::Received { seq } => {
                    let m = self.conns[conn].msgs[qp][seq as usize];
                    let st = &mut self.msgs[m as usize];
                    st.parts_left -= 1;
                    if st.parts_left == 0 {
                        st.finish = now;
                        self.received += 1;
                        self.release_dependents(now, m);
                    }
                }
                AppEvent::Acked { seq, retransmitted } => {
                    let m = self.conns[conn].msgs[qp][seq as usize];
                    self.msgs[m as usize].retransmitted += retransmitted;
                }
                AppEvent::Failed => self.failed_conns += 1,
            }
        }
        self.arm(now, ep);
    }

    fn release_dependents(&mut self, now: Time, m: u32) {
        let (a, b) = (self.dep_start[m as usize] as usize, self.dep_start[m as usize + 1] as usize);
        for i in a..b {
            let d = self.dependents[i];
            let st = &mut self.msgs[d as usize];
            st.deps_left -= 1;
            if st.deps_left == 0 {
                let at = now.max(Time::ZERO + self.plan.messages[d as usize].start);
                self.q.push(at, Event::Start(d));
            }
        }
    }

    fn arm(&mut self, now: Time, ep: u32) {
        if let Some(t) = self.eps[ep as usize].poll_timeout() {
            // A deadline already past fires now; `timer_at` must be the time the event
            // is really scheduled for, or it would never be recognised and re-armed.
            let t = t.max(now);
            let m = &mut self.meta[ep as usize];
            if t < m.timer_at {
                m.timer_at = t;
                self.q.push(t, Event::Timer(ep));
            }
        }
    }

    /// Queues `ep` on its ports and serves any that are idle.
    fn ready(&mut self, now: Time, ep: u32) {
        let m = self.meta[ep as usize];
        let nics = self.fabric.nics();
        for i in 0..m.ports {
            let bit = 1u16 << i;
            let nic = m.first_port + i;
            if m.queued & bit == 0 {
                self.meta[ep as usize].queued |= bit;
                let q = &mut self.nics[(m.host * nics + nic as u32) as usize];
                if m.responder {
                    q.ctrl.push_back(ep);
                } else {
                    q.data.push_back(ep);
                }
            }
            if self.fabric.nic_can_send(m.host, nic, TrafficClass::Control, now) {
                self.serve(now, m.host, nic);
            }
        }
    }

    /// NIC port `nic` of `host` is free: send the next packet, responders first.
    fn serve(&mut self, now: Time, host: u32, nic: u8) {
        if !self.fabric.nic_can_send(host, nic, TrafficClass::Control, now) {
            return;
        }
        let qi = (host * self.fabric.nics() + nic as u32) as usize;
        for data in [false, true] {
            if data && !self.fabric.nic_can_send(host, nic, TrafficClass::Data, now) {
                return;
            }
            let mut budget = if data { self.nics[qi].data.len() } else { self.nics[qi].ctrl.len() };
            while budget > 0 {
                budget -= 1;
                let queue = if data { &mut self.nics[qi].data } else { &mut self.nics[qi].ctrl };
                let Some(ep) = queue.pop_front() else { break };
                let bit = 1u16 << (nic - self.meta[ep as usize].first_port);
                self.meta[ep as usize].queued &= !bit;
                let poll = self.eps[ep as usize].poll_transmit(now, nic);
                match poll {
                    Poll::Send(pkt) => {
                        self.fabric.nic_send(now, host, nic, pkt, &mut self.q);
                        // Back of the line: one packet per endpoint per turn.
                        self.meta[ep as usize].queued |= bit;
                        let queue = if data { &mut self.nics[qi].data } else { &mut self.nics[qi].ctrl };
                        queue.push_back(ep);
                        self.after_input(now, ep);
                        return;
                    }
                    Poll::Wait(t) => {
                        let m = &mut self.meta[ep as usize];
                        if t < m.wake_at {
                            m.wake_at = t;
                            self.q.push(t, Event::Wake(ep));
                        }
                    }
                    Poll::Idle => {}
                }
                self.after_input(now, ep);
            }
        }
    }
}
