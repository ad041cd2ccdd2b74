//! The run loop: the events of a run, dispatched in time order.
//!
//! A [`Sim`] is a scenario's world ([`crate::world`] builds it): the fabric, the hosts'
//! NICs ([`fabricsim_nic`]), the messages ([`crate::messages`]), the faults
//! ([`crate::faults`]), the sampler ([`crate::sampling`]). The loop pops the next event
//! and hands it to the layer it belongs to; what a layer reports (a frame delivered, a
//! port free, a message received) is passed on here, never by one layer calling into
//! another.
//!
//! # Ending
//! The run ends when every message has been received (or acknowledged at its sender,
//! by `output.fct_at`), when the scenario's `stop` time is reached, when nothing is left
//! to happen (failed connections), or when the watchdog ([`crate::watchdog`]) finds it
//! stalled.

use crate::capture::Pcap;
use crate::faults::{Fault, FaultRecord};
use crate::messages::MsgState;
use crate::sampling::{Sampler, ThroughputRows};
use crate::scenario::Scenario;
use crate::watchdog::Watchdog;
use fabricsim_engine::{EventQueue, Time};
use fabricsim_fabric::{Fabric, FabricEvent, FabricOutput};
use fabricsim_nic::{Nic, NicEvent, Wire};
use fabricsim_transport::common::PathLog;
use fabricsim_transport::EndpointStats;
use fabricsim_wire::{Packet, TrafficClass};
use fabricsim_workload::Plan;

/// Every event of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// A fabric event.
    Fabric(FabricEvent),
    /// A NIC's deadline (an endpoint's timer or pacing wake-up).
    Nic(NicEvent),
    /// A message's start time has come and its dependencies are met.
    Start(u32),
    /// Fault number `n` happens (or a flapping cable toggles).
    Fault(u32),
    /// ECMP tables are recomputed around failed links.
    Reroute,
    /// Maestro path re-selection `n` is due (see `reselect_interval`).
    Reselect(u32),
}

// The event queue's nodes hold an event beside its time: up to 16 bytes they take half
// a cache line each (see `fabricsim_engine::queue`).
const _: () = assert!(std::mem::size_of::<Event>() <= 16);

/// Fabrics with at least this many ports are prefetched three events ahead. Smaller ones
/// keep their hot state in the L2 cache, where the extra work costs more than the
/// misses it hides (benchmark (a), 768 ports: +20 % time); on benchmark (c), 6144
/// ports, it saves about 10 % (paired runs).
pub const DEEP_PREFETCH_PORTS: usize = 2048;

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
    /// Every message was received (acknowledged, with `output.fct_at = "sender"`).
    AllFinished,
    /// The scenario's stop time was reached.
    StopTime,
    /// Nothing was left to happen but some messages never completed.
    Stalled,
    /// The progress callback asked to stop.
    Cancelled,
}

/// Whether a copy simulating partition `part` (`None`: all of them) owns `host`.
#[inline]
pub(crate) fn owns(part: &Option<(Vec<u8>, u8)>, host: u32) -> bool {
    part.as_ref().is_none_or(|(owner, me)| owner[host as usize] == *me)
}

/// A scenario wired up and ready to run.
pub struct Sim {
    /// The scenario.
    pub scenario: Scenario,
    /// The traffic plan.
    pub plan: Plan,
    /// The fabric.
    pub fabric: Fabric,
    pub(crate) q: EventQueue<Event>,
    /// Whether the run loop prefetches three events ahead (see [`DEEP_PREFETCH_PORTS`]).
    pub(crate) deep_prefetch: bool,
    /// Every host's NIC: endpoints, their queues and timers, the messages on them.
    pub nic: Nic,
    /// Message states, indexed by message id.
    pub msgs: Vec<MsgState>,
    /// Which messages wait for which.
    pub(crate) deps: crate::messages::Dependencies,
    pub(crate) received: usize,
    /// Messages complete by the scenario's convention (`output.fct_at`): received, or
    /// acknowledged at their sender. The run ends when all are.
    pub(crate) done: usize,
    /// Whether a message is complete when acknowledged (else when received).
    pub(crate) done_when_acked: bool,
    /// Messages this copy started (the watchdog's count of messages under way).
    pub(crate) started: usize,
    pub(crate) watchdog: Watchdog,
    /// Port sampler.
    pub sampler: Sampler,
    /// Connections whose QP failed.
    pub failed_conns: u64,
    /// When the run ended.
    pub(crate) end: Option<Time>,
    /// How the run ended.
    pub(crate) ending: Option<Ending>,
    pub(crate) faults: Vec<Fault>,
    /// What happened, when.
    pub fault_log: Vec<FaultRecord>,
    /// Entropy-value state changes: `(connection, change)`.
    pub ev_log: Vec<(u32, PathLog)>,
    /// Per-connection delivery sampled over time.
    pub throughput: ThroughputRows,
    pub(crate) conn_bytes: Vec<u64>,
    pub(crate) last_sample: Time,
    /// The next point of the sampling grid (`Time::MAX` when not sampling here: off, or
    /// a partition, whose samples the coordinator takes). A sample at `t` covers every
    /// event at or before `t`: it is taken when the first later event comes up.
    pub(crate) next_sample: Time,
    /// The capture being written (held by the coordinator during a partitioned run).
    pub(crate) pcap: Option<Pcap>,
    /// In a partitioned run, which partition simulates each node and which one this
    /// copy is (see [`crate::parallel`]).
    pub(crate) part: Option<(Vec<u8>, u8)>,
    /// Events processed by the other partitions (added when they are absorbed).
    pub(crate) events_absorbed: u64,
    /// Messages started here since the last window that another partition receives.
    pub(crate) started_elsewhere: Vec<u32>,
    /// What other partitions sent here, to inject before the next window.
    pub(crate) inbox: Vec<fabricsim_fabric::partition::Remote>,
    /// The earliest arrival in `inbox`.
    pub(crate) inbox_min: Option<Time>,
    /// The next event here when the last window ended (with lazy cross ports' next
    /// starts), computed by this partition's own thread.
    pub(crate) next_local: Option<Time>,
    /// A sample to take before the next window (partitioned runs).
    pub(crate) sample_due: Option<Time>,
    /// The copies simulating the other partitions, until a partitioned run absorbs them.
    pub(crate) replicas: Vec<Sim>,
    /// Maestro connections whose paths are re-selected during the run.
    pub(crate) reselect: Vec<crate::world::Reselect>,
    /// Per connection, its entry in `reselect` (`u32::MAX`: none; shorter than the
    /// connections when the last have none).
    pub(crate) reselect_of: Vec<u32>,
}

impl Sim {
    /// Whether this copy simulates `host` (every host, unpartitioned).
    #[inline]
    pub(crate) fn owns_host(&self, host: u32) -> bool {
        owns(&self.part, host)
    }

    /// Events processed so far.
    pub fn events(&self) -> u64 {
        self.q.popped() + self.events_absorbed
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
        self.nic.endpoint_stats()
    }

    pub(crate) fn progress(&self) -> Progress {
        Progress {
            sim_time: self.q.now(),
            events: self.q.popped(),
            packet_hops: self.fabric.totals.packet_hops,
            flows_done: self.received,
            flows_total: self.msgs.len(),
        }
    }

    /// Turns the run loop's deep prefetching (three events ahead, see
    /// [`DEEP_PREFETCH_PORTS`]) on or off, whatever the fabric's size. Results never
    /// depend on it; tests hold it to that, and speed comparisons use it.
    pub fn set_deep_prefetch(&mut self, on: bool) {
        self.deep_prefetch = on;
        for r in &mut self.replicas {
            r.set_deep_prefetch(on);
        }
    }

    /// Runs to the end. `progress` is called every 65,536 events; returning `false`
    /// cancels the run (the result then covers what was simulated). A scenario with
    /// `partitions > 1` runs on that many threads (see [`crate::parallel`]).
    pub fn run(&mut self, progress: &mut dyn FnMut(&Progress) -> bool) -> Ending {
        if let Some(ending) = self.ending {
            // A run that ended stays ended.
            return ending;
        }
        let ending = self.run_to_end(progress);
        self.ending = Some(ending);
        ending
    }

    fn run_to_end(&mut self, progress: &mut dyn FnMut(&Progress) -> bool) -> Ending {
        if self.msgs.is_empty() {
            return Ending::AllFinished;
        }
        if self.scenario.partitions > 1 && self.part.is_none() {
            return crate::parallel::run(self, progress);
        }
        let stop = self.stop_time();
        loop {
            let Some((now, ev)) = self.q.pop() else {
                let now = self.q.now();
                self.end = Some(now);
                // The last interval too: port samples and EV state changes since
                // the last sample (with 1 ms samples a stalled run had none at all).
                self.sample_through(now);
                return Ending::Stalled;
            };
            // Looks due in the gap before this event, up to the stop time: a stall
            // there ends the run even if the event is after the stop.
            let gap_end = now.min(Time(stop.0.saturating_add(1)));
            if self.watchdog.gap_before(gap_end) {
                if let Some(at) = self.watchdog.look_until(gap_end, self.mark()) {
                    // Stalled in the gap before this event, which belongs after the end.
                    self.end = Some(at);
                    self.sample_through(at);
                    return Ending::Stalled;
                }
            }
            if now > stop {
                // The event belongs after the end; nothing of it happens.
                self.end = Some(stop);
                self.sample_through(stop);
                return Ending::StopTime;
            }
            if now > self.next_sample {
                self.sample_before(now);
            }
            self.prefetch_next();
            self.step(now, ev);
            if self.done == self.msgs.len() {
                self.end = Some(now);
                self.sample_through(now);
                return Ending::AllFinished;
            }
            if self.q.popped() & 0xFFFF == 0 && !progress(&self.progress()) {
                self.end = Some(now);
                self.fabric.settle(now);
                return Ending::Cancelled;
            }
            if self.watchdog.due(now, self.q.popped() & 0xFFFF == 0) {
                let mark = self.mark();
                if self.watchdog.stalled(now, mark) {
                    self.end = Some(now);
                    self.sample_through(now);
                    return Ending::Stalled;
                }
            }
        }
    }

    /// The scenario's stop time (`Time::MAX` without one).
    pub(crate) fn stop_time(&self) -> Time {
        self.scenario.stop.map_or(Time::MAX, |d| Time::ZERO + d)
    }

    /// Receives what other partitions sent, takes a due sample, then handles every
    /// event before `until` (one window of a partitioned run).
    pub(crate) fn run_window(&mut self, until: Time) {
        for r in &self.inbox {
            self.fabric.inject(r, &mut self.q);
        }
        self.inbox.clear();
        self.inbox_min = None;
        if let Some(t) = self.sample_due.take() {
            self.sample(t);
        }
        while self.q.peek_time().is_some_and(|t| t < until) {
            let (now, ev) = self.q.pop().expect("peeked");
            self.prefetch_next();
            self.step(now, ev);
        }
        self.fabric.flush_cross(until);
        self.refresh_next();
    }

    /// Records when this partition next has something to do (see `next_event`).
    pub(crate) fn refresh_next(&mut self) {
        self.next_local = [self.q.peek_time(), self.fabric.next_cross_start()].into_iter().flatten().min();
    }

    /// The time of the next event, if any, counting what waits in the inbox and frames
    /// lazy cross ports will start (as of the last [`refresh_next`](Self::refresh_next)).
    pub(crate) fn next_event(&self) -> Option<Time> {
        [self.next_local, self.inbox_min].into_iter().flatten().min()
    }

    /// Messages complete here by the scenario's convention (in a partitioned run:
    /// those this copy receives, or sends when complete means acknowledged).
    pub(crate) fn done(&self) -> usize {
        self.done
    }

    /// Asks the cache for what the next events will touch.
    #[inline]
    fn prefetch_next(&mut self) {
        if self.deep_prefetch {
            // Three events ahead the port and packet; one ahead what they point to.
            // (Two ahead, the packet's header was often still on its way when the
            // egress port was looked up: 4-6 % slower on benchmark (c); four ahead
            // gains nothing more.)
            let [near, _, far] = self.q.peek_ahead::<3>();
            if let Some(Event::Fabric(far)) = far {
                self.fabric.prefetch(far);
            }
            // Called for every event: it also hands the route it found one event ago
            // to the event about to be handled.
            let near = match near {
                Some(Event::Fabric(near)) => Some(near),
                _ => None,
            };
            if let Some(pkt) = self.fabric.prefetch_near(near) {
                // A delivery: the receiving endpoint's first lines (its kind, what
                // receiving reads first; with more than eight, no faster) and its NIC
                // bookkeeping.
                self.nic.prefetch_endpoint(pkt.bth.dest_qp as usize);
            }
        } else if let Some(Event::Fabric(next)) = self.q.peek() {
            self.fabric.prefetch(next);
        }
    }

    /// Handles one event.
    #[inline]
    fn step(&mut self, now: Time, ev: Event) {
        match ev {
            Event::Fabric(fe) => {
                match self.fabric.handle(now, fe, &mut self.q) {
                    Some(FabricOutput::Deliver { slot, .. }) => {
                        let pkt = *self.fabric.packet(slot);
                        self.fabric.release(slot);
                        self.nic.deliver(now, &pkt, &mut FabricWire { fabric: &mut self.fabric, q: &mut self.q });
                        self.drain_nic(now);
                    }
                    Some(FabricOutput::NicReady { host, nic }) => {
                        self.nic.serve(now, host, nic, &mut FabricWire { fabric: &mut self.fabric, q: &mut self.q });
                        self.drain_nic(now);
                    }
                    None => {}
                }
                if !self.fabric.captured.is_empty() {
                    self.flush_capture();
                }
            }
            Event::Nic(ev) => {
                self.nic.on_event(now, ev, &mut FabricWire { fabric: &mut self.fabric, q: &mut self.q });
                self.drain_nic(now);
            }
            Event::Start(m) => self.start(now, m),
            Event::Fault(i) => self.apply_fault(now, i as usize),
            Event::Reroute => self.fabric.reroute(),
            Event::Reselect(i) => self.reselect(now, i),
        }
    }

    /// Per-path counters of every sender: `(connection, qp, counters)`.
    pub fn path_stats(
        &self,
    ) -> Vec<(u32, u32, fabricsim_transport::common::PathStats, Option<fabricsim_nic::maestro::QpPath>)> {
        self.nic.path_stats()
    }

    /// The plane a path of QP `qp` of connection `conn` runs in: a transport spanning
    /// every NIC port tags its entropy values with their plane; a single-port one sends
    /// all of them from the port it is bound to (their tags say plane 0).
    pub fn path_plane(&self, conn: u32, qp: u32, ev: u32) -> u32 {
        if self.fabric.nics() == 1 {
            return 0;
        }
        let place = self.nic.place_of(conn as usize, qp);
        if place.ports > 1 {
            fabricsim_wire::ev_plane(ev) as u32
        } else {
            place.first_port as u32
        }
    }

    /// Out-of-order degrees per connection (merged over its QPs), for multipath
    /// receivers.
    pub fn ooo(&self) -> Vec<Option<fabricsim_transport::common::OooHistogram>> {
        self.nic.ooo()
    }

    /// Number of QPs of connection `c`.
    pub fn qps_of(&self, c: usize) -> u32 {
        self.nic.qps_of(c)
    }
}

/// The fabric as the NICs' [`Wire`]: frames go onto the hosts' NIC ports, and the NICs'
/// deadlines into the run's event queue.
pub(crate) struct FabricWire<'a> {
    pub(crate) fabric: &'a mut Fabric,
    pub(crate) q: &'a mut EventQueue<Event>,
}

// Always inlined: the NIC calls these for every packet, and a call would copy the
// packet once more (measured: 35 M instructions of benchmark (a)'s 3.9 G).
impl Wire for FabricWire<'_> {
    #[inline(always)]
    fn can_send(&self, host: u32, port: u8, class: TrafficClass, now: Time) -> bool {
        self.fabric.nic_can_send(host, port, class, now)
    }

    #[inline(always)]
    fn send(&mut self, now: Time, host: u32, port: u8, pkt: Packet) {
        self.fabric.nic_send(now, host, port, pkt, self.q);
    }

    #[inline]
    fn schedule(&mut self, at: Time, ev: NicEvent) {
        self.q.push(at, Event::Nic(ev));
    }
}
