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
use crate::metrics::{sample_after, Sampler};
use crate::scenario::{FaultKind, FaultTarget, Scenario};
use crate::ScenarioError;
use fabricsim_engine::{Dur, EventQueue, Ring, Rng, Time};
use fabricsim_fabric::PortId;
use fabricsim_fabric::{Fabric, FabricEvent, FabricOutput};
use fabricsim_transport::common::PathLog;
use fabricsim_transport::{AnyEndpoint, AppEvent, ConnInfo, Endpoint, EndpointStats, Message, Poll};
use fabricsim_wire::{Packet, TrafficClass};
use fabricsim_workload::Plan;

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
    /// Fault number `n` happens (or a flapping cable toggles).
    Fault(u32),
    /// ECMP tables are recomputed around failed links.
    Reroute,
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

/// What the stall watchdog counts as progress: new data placed at receivers, messages
/// started and completed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Mark {
    pub(crate) placed: u64,
    pub(crate) started: usize,
    pub(crate) received: usize,
}

impl std::ops::Add for Mark {
    type Output = Mark;
    fn add(self, o: Mark) -> Mark {
        Mark { placed: self.placed + o.placed, started: self.started + o.started, received: self.received + o.received }
    }
}

/// Ends a run whose messages are under way but make no progress for `stall_after`
/// (`Scenario::stall_after`): a transport that retries forever into a dead link keeps
/// events coming, so the queue never runs dry. It looks at the progress every eighth
/// of the limit of simulated time and every 65,536 events (16 windows of a partitioned
/// run). Progress only changes at events, so looks due in a gap between two events are
/// taken before the later one with the progress as it stands (backed-off timers are
/// milliseconds apart: looking only at events ended runs up to 3.2 limits late). The
/// first look to see progress may come an eighth after it, and the stall is declared at
/// the first look a limit after that one: between one and one and a quarter limits
/// after the last progress.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Watchdog {
    limit: Option<Dur>,
    mark: Mark,
    since: Time,
    next_look: Time,
}

impl Watchdog {
    pub(crate) fn new(limit: Option<Dur>) -> Watchdog {
        let next_look = limit.map_or(Time::MAX, |l| Time::ZERO + Self::step(l));
        Watchdog { limit, mark: Mark::default(), since: Time::ZERO, next_look }
    }

    /// Simulated time between looks.
    fn step(limit: Dur) -> Dur {
        Dur((limit.ps() / 8).max(1))
    }

    /// Whether to look at the progress now: a look time reached, or `periodic` (every
    /// so many events).
    #[inline]
    pub(crate) fn due(&self, now: Time, periodic: bool) -> bool {
        self.limit.is_some() && (now >= self.next_look || periodic)
    }

    /// Whether looks fall due before the next event, at `next` (then call
    /// [`Watchdog::look_until`] before handling it).
    #[inline]
    pub(crate) fn gap_before(&self, next: Time) -> bool {
        next > self.next_look
    }

    /// Takes the looks due before `next` with progress `mark` (nothing happens between
    /// events, so each sees the same). Returns the look time at which the run stalled.
    /// (Rare: kept out of the run loop's code.)
    #[cold]
    #[inline(never)]
    pub(crate) fn look_until(&mut self, next: Time, mark: Mark) -> Option<Time> {
        let limit = self.limit?;
        let step = Self::step(limit).ps();
        let first = self.next_look;
        if first >= next {
            return None;
        }
        if self.stalled(first, mark) {
            return Some(first);
        }
        // The later looks see what this one saw: under way without progress, the run
        // stalls at the first look a limit after `since`.
        let looks_to = |t: Time| t.0.saturating_sub(first.0).div_ceil(step);
        if mark.started != mark.received {
            let at = Time(first.0.saturating_add(looks_to(self.since + limit).saturating_mul(step)));
            if at < next {
                self.next_look = Time(at.0.saturating_add(step));
                return Some(at);
            }
        }
        self.next_look = Time(first.0.saturating_add(looks_to(next).saturating_mul(step)));
        None
    }

    /// Whether, at `now` with progress `mark`, messages have been under way without
    /// progress for longer than the limit.
    pub(crate) fn stalled(&mut self, now: Time, mark: Mark) -> bool {
        let Some(limit) = self.limit else { return false };
        self.next_look = Time(now.0.saturating_add(Self::step(limit).ps()));
        if mark != self.mark || mark.started == mark.received {
            self.mark = mark;
            self.since = now;
            return false;
        }
        now.since(self.since) >= limit
    }
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
    /// The port (`first_port +` this) that [`Sim::ready`] offers first next time.
    offer_first: u8,
    timer_at: Time,
    wake_at: Time,
}

#[derive(Clone, Debug, Default)]
struct NicQueues {
    ctrl: Ring<u32, NIC_QUEUE_INLINE>,
    data: Ring<u32, NIC_QUEUE_INLINE>,
}

/// Endpoints a NIC's queue keeps inline (see [`Ring`]): most hosts have a few
/// connections, and the queue is read on every packet the NIC sends.
const NIC_QUEUE_INLINE: usize = 4;

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

/// Checks every fault's target against the fabric.
fn resolve_faults(sc: &Scenario, fabric: &Fabric) -> Result<Vec<Fault>, ScenarioError> {
    sc.faults
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let (port, node, target) = match &f.target {
                FaultTarget::Link(name) => {
                    let p = fabric.port_by_name(name).ok_or_else(|| {
                        ScenarioError::new(
                            &format!("faults[{i}].link"),
                            format!(
                                "no port {} in this topology ({}; names look like {})",
                                crate::quoted(name),
                                name_hint(fabric, name),
                                example_names(fabric)
                            ),
                        )
                    })?;
                    (Some(p), None, name.clone())
                }
                FaultTarget::Switch(name) => {
                    let n = fabric
                        .node_by_name(name)
                        .filter(|&n| fabric.nodes[n as usize].kind == fabricsim_fabric::NodeKind::Switch)
                        .ok_or_else(|| {
                            ScenarioError::new(
                                &format!("faults[{i}].switch"),
                                format!(
                                    "no switch {} in this topology ({}; for example {})",
                                    crate::quoted(name),
                                    name_hint(fabric, name),
                                    fabric.nodes[fabric.hosts() as usize].name
                                ),
                            )
                        })?;
                    (None, Some(n), name.clone())
                }
            };
            Ok(Fault { kind: f.kind.clone(), port, node, target, flap_down: false })
        })
        .collect()
}

/// What exists near a name that names nothing: the ports of its node (`leaf[0]: up[0]
/// to up[1], down[0] to down[1]`), the range of its kind of node (`spine[0] to
/// spine[1]`), or the kinds of node there are.
fn name_hint(fabric: &Fabric, name: &str) -> String {
    let node_part = name.split_once('.').map_or(name, |(n, _)| n);
    if let Some(n) = fabric.node_by_name(node_part) {
        let mut labels: Vec<(&str, usize)> = Vec::new();
        for p in fabric.nodes[n as usize].ports() {
            let label = fabric.ports[p as usize].kind.label();
            match labels.iter_mut().find(|(l, _)| *l == label) {
                Some((_, c)) => *c += 1,
                None => labels.push((label, 1)),
            }
        }
        if fabric.nodes[n as usize].kind == fabricsim_fabric::NodeKind::Host && !name.contains('.') {
            return format!("{name} is a host, not a switch");
        }
        let ports: Vec<String> = labels
            .iter()
            .map(|(l, c)| if *c == 1 { format!("{l}[0]") } else { format!("{l}[0] to {l}[{}]", c - 1) })
            .collect();
        return format!("{node_part} has ports {}", ports.join(", "));
    }
    let kind = node_part.split('[').next().unwrap_or("");
    let count = fabric.nodes.iter().filter(|n| n.name.split('[').next() == Some(kind)).count();
    if count > 0 {
        return format!("there are {count} {kind} nodes: {kind}[0] to {kind}[{}]", count - 1);
    }
    let mut kinds: Vec<&str> = fabric.nodes.iter().filter_map(|n| n.name.split('[').next()).collect();
    kinds.dedup();
    format!("its nodes are {}", kinds.iter().map(|k| format!("{k}[..]")).collect::<Vec<_>>().join(", "))
}

fn example_names(fabric: &Fabric) -> String {
    let leaf_up = fabric
        .nodes
        .iter()
        .position(|n| n.kind == fabricsim_fabric::NodeKind::Switch)
        .and_then(|n| fabric.nodes[n].ports().map(|p| fabric.port_name(p)).find(|name| name.contains(".up[")));
    let host = fabric.port_name(fabric.nic_port(0, 0));
    match leaf_up {
        Some(l) => format!("\"{l}\" or \"{host}\""),
        None => format!("\"{host}\""),
    }
}

/// An amount of memory in words: GB from one, MB, or KB below a tenth of a MB.
fn per_connection(bytes: u64) -> String {
    if bytes >= 1_000_000_000 {
        format!("{:.1} GB", bytes as f64 / 1e9)
    } else if bytes >= 100_000 {
        format!("{:.1} MB", bytes as f64 / 1e6)
    } else {
        format!("{:.1} KB", bytes as f64 / 1e3)
    }
}

/// The largest RDMA message: the InfiniBand specification's 2^31 bytes. (Longer ones
/// also overflowed the RETH's 32-bit length, and a multipath receiver then counted
/// the message complete before its last packets arrived.)
pub const MAX_MESSAGE: u64 = 1 << 31;

/// Refuses a workload whose messages exceed [`MAX_MESSAGE`], naming the size key: a
/// `flows` entry's own, or the workload's.
fn check_message_sizes(scenario: &Scenario, messages: &[fabricsim_workload::MessageSpec]) -> Result<(), ScenarioError> {
    match messages.iter().find(|m| m.size > MAX_MESSAGE) {
        Some(m) => Err(ScenarioError::new(
            &match scenario.workloads.get(m.workload as usize).map(|w| &w.kind) {
                Some(fabricsim_workload::WorkloadKind::Flows(flows)) => {
                    let i = flows.iter().position(|f| f.2 > MAX_MESSAGE).unwrap_or(0);
                    format!("workload[{}].flows[{i}].size", m.workload)
                }
                _ => format!("workload[{}].size", m.workload),
            },
            format!(
                "makes messages of {} bytes; an RDMA message is at most 2^31 bytes (2147483648, \"2GiB\"): use a smaller size, or several messages",
                m.size
            ),
        )),
        None => Ok(()),
    }
}

/// Refuses an MRC EV count that does not split equally over the hosts' planes (NIC
/// ports): the EV set gives every plane the same number of active EVs.
fn check_planes(scenario: &Scenario, nics: u32) -> Result<(), ScenarioError> {
    let own = scenario
        .workload_transports
        .iter()
        .enumerate()
        .filter_map(|(w, t)| Some((format!("workload[{w}].transport"), t.as_ref()?)));
    for (path, t) in std::iter::once(("transport".to_string(), &scenario.transport)).chain(own) {
        if let factory::TransportSpec::Mrc(s) = t {
            if let Some(evs) = s.evs.filter(|e| !e.is_multiple_of(nics)) {
                let near = (evs.div_ceil(nics) * nics).max(nics);
                return Err(ScenarioError::new(
                    &format!("{path}.evs"),
                    format!(
                        "must be a multiple of the {nics} planes (NIC ports per host), so that every plane gets as many EVs, got {} (for example {near})",
                        evs
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// Refuses a scenario whose connection state would not fit in the memory this process
/// may use (the allocator would abort the process half-way through building it, with
/// no message). The estimate counts each connection's endpoints
/// ([`factory::state_bytes`]), once per partition, with half again for the rest.
fn check_memory(scenario: &Scenario, conns: &[fabricsim_workload::ConnSpec], nics: u32) -> Result<(), ScenarioError> {
    let Some(available) = crate::units::available_memory() else { return Ok(()) };
    // Per workload: bytes, connections, the key that drives the state.
    let mut per = vec![(0u64, 0u64, ""); scenario.workloads.len().max(1)];
    for c in conns {
        let t = scenario.transport_of(c.workload);
        let planes = if factory::uses_all_ports(t) { nics } else { 1 };
        let (bytes, key) = factory::state_bytes(t, planes);
        let w = &mut per[c.workload as usize];
        *w = (w.0 + bytes, w.1 + 1, key);
    }
    let total: u64 = per.iter().map(|w| w.0).sum::<u64>() * scenario.partitions.max(1) as u64;
    // The allocator's own overhead and the rest of the world come on top: a run whose
    // estimate was 3.2 GB needed 3.9 GB resident and between 4.5 and 5 GB of address
    // space.
    if total / 2 * 3 <= available {
        return Ok(());
    }
    let (w, &(bytes, n, key)) = per.iter().enumerate().max_by_key(|(_, w)| w.0).expect("a workload");
    let path = transport_key(scenario, w as u32, key);
    let gb = |b: u64| b as f64 / 1e9;
    Err(ScenarioError::new(
        &path,
        format!(
            "the connections' state needs about {:.1} GB ({n} connections of workload {w} at {} each{}), \
             and with the simulator's other memory more than the {} this process can still allocate \
             once the fabric is built; use fewer {} or fewer hosts",
            gb(total),
            per_connection(bytes / n.max(1)),
            if scenario.partitions > 1 { format!(", x {} partitions", scenario.partitions) } else { String::new() },
            per_connection(available),
            match key {
                "qps" => "QPs",
                "paths" => "paths",
                "evs" => "entropy values",
                _ => "connections",
            },
        ),
    ))
}

/// Where `key` of workload `workload`'s transport is set: its own `transport` table if
/// it has one, else the scenario's.
fn transport_key(scenario: &Scenario, workload: u32, key: &str) -> String {
    match scenario.workload_transports.get(workload as usize).and_then(|t| t.as_ref()) {
        Some(_) => format!("workload[{workload}].transport.{key}"),
        None => format!("transport.{key}"),
    }
}

/// Refuses a window-cutting delay target below a connection's unloaded round trip: every
/// ACK would cut the window, which stays at its floor (an MRC all-reduce with
/// `delay_target = "1us"` ran 18x slower, silently).
fn check_delay_target(
    scenario: &Scenario,
    conn: &fabricsim_workload::ConnSpec,
    transport: &factory::TransportSpec,
    base_rtt: Dur,
) -> Result<(), ScenarioError> {
    let workload = conn.workload;
    let (key, target) = match transport {
        factory::TransportSpec::Mrc(s) => ("delay_target", s.delay_target),
        factory::TransportSpec::Stellar(s) => ("target", s.target),
        _ => return Ok(()),
    };
    match target {
        Some(t) if t < base_rtt => Err(ScenarioError::new(
            &transport_key(scenario, workload, key),
            format!(
                "{t} is below the unloaded round trip from host {} to host {} ({:.2}us): every \
                     acknowledgement would cut the window",
                conn.src,
                conn.dst,
                base_rtt.ps() as f64 / 1e6
            ),
        )),
        _ => Ok(()),
    }
}

/// The unloaded round trip of a connection (a full data frame out, an ACK back along
/// the same links) and the bytes that fill its ports for that long.
fn path_context(
    fabric: &Fabric,
    sc: &Scenario,
    transport: &factory::TransportSpec,
    src: u32,
    dst: u32,
    nic: u8,
    ports: u8,
) -> factory::PathContext {
    let data = factory::frame_wire_bytes(transport, sc.mtu as u64 * 2, sc.mtu, 0);
    let ack = factory::ack_wire_bytes(transport);
    let base_rtt = fabric.path(src, dst, nic).map_or(Dur::from_us(10), |hops| {
        hops.iter()
            .map(|&(rate, delay)| rate.tx_time(data) + rate.tx_time(ack) + delay + delay)
            .fold(Dur::ZERO, |a, b| a + b)
    });
    let rate = sc.links.host_link.bps() as f64 * ports as f64;
    factory::PathContext { base_rtt, bdp_bytes: rate / 8.0 * base_rtt.as_secs_f64() }
}

/// A fault resolved against the fabric.
#[derive(Clone, Debug)]
struct Fault {
    kind: FaultKind,
    /// The cable (one of its ports), for link faults.
    port: Option<PortId>,
    /// The switch, for switch faults.
    node: Option<u32>,
    target: String,
    /// A flapping cable is currently down.
    flap_down: bool,
}

/// One entry of the fault log.
#[derive(Clone, Debug, PartialEq)]
pub struct FaultRecord {
    /// When it happened.
    pub time: Time,
    /// Kind (`link_down`, ...).
    pub kind: &'static str,
    /// The link or switch name.
    pub target: String,
    /// Its value (loss, delay, rate), if any.
    pub value: String,
}

/// Traffic each connection delivered per sampling interval.
#[derive(Clone, Debug, Default)]
pub struct ThroughputRows {
    /// Interval end.
    pub time_ns: Vec<u64>,
    /// Connection.
    pub connection: Vec<u32>,
    /// Payload bytes placed at the receiver during the interval.
    pub bytes: Vec<u64>,
    /// The same as a rate.
    pub gbps: Vec<f64>,
}

impl ThroughputRows {
    /// Merges another partition's rows into these, ordered by time then connection.
    fn merge(&mut self, o: &ThroughputRows) {
        let mut rows: Vec<(u64, u32, u64, f64)> = (0..self.time_ns.len())
            .map(|i| (self.time_ns[i], self.connection[i], self.bytes[i], self.gbps[i]))
            .chain((0..o.time_ns.len()).map(|i| (o.time_ns[i], o.connection[i], o.bytes[i], o.gbps[i])))
            .collect();
        rows.sort_by_key(|r| (r.0, r.1));
        *self = ThroughputRows::default();
        for (t, c, b, g) in rows {
            self.time_ns.push(t);
            self.connection.push(c);
            self.bytes.push(b);
            self.gbps.push(g);
        }
    }
}

/// Whether a copy simulating partition `part` (`None`: all of them) owns `host`.
#[inline]
fn owns(part: &Option<(Vec<u8>, u8)>, host: u32) -> bool {
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
    q: EventQueue<Event>,
    /// Whether the run loop prefetches three events ahead (see [`DEEP_PREFETCH_PORTS`]).
    deep_prefetch: bool,
    eps: Vec<AnyEndpoint>,
    meta: Vec<EpMeta>,
    nics: Vec<NicQueues>,
    conns: Vec<ConnState>,
    /// Message states, indexed by message id.
    pub msgs: Vec<MsgState>,
    dep_start: Vec<u32>,
    dependents: Vec<u32>,
    received: usize,
    /// Messages this copy started (the watchdog's count of messages under way).
    started: usize,
    watchdog: Watchdog,
    /// Port sampler.
    pub sampler: Sampler,
    /// Packets that arrived for no endpoint.
    pub misdelivered: u64,
    /// Connections whose QP failed.
    pub failed_conns: u64,
    /// When the run ended.
    end: Option<Time>,
    /// How the run ended.
    ending: Option<Ending>,
    faults: Vec<Fault>,
    /// What happened, when.
    pub fault_log: Vec<FaultRecord>,
    /// Endpoints per host.
    host_eps: Vec<Vec<u32>>,
    /// Entropy-value state changes: `(connection, change)`.
    pub ev_log: Vec<(u32, PathLog)>,
    /// Per-connection delivery sampled over time.
    pub throughput: ThroughputRows,
    conn_bytes: Vec<u64>,
    last_sample: Time,
    /// The next point of the sampling grid (`Time::MAX` when not sampling here: off, or
    /// a partition, whose samples the coordinator takes). A sample at `t` covers every
    /// event at or before `t`: it is taken when the first later event comes up.
    next_sample: Time,
    /// The capture being written (held by the coordinator during a partitioned run).
    pub(crate) pcap: Option<Pcap>,
    /// In a partitioned run, which partition simulates each node and which one this
    /// copy is (see [`crate::parallel`]).
    pub(crate) part: Option<(Vec<u8>, u8)>,
    /// Events processed by the other partitions (added when they are absorbed).
    events_absorbed: u64,
    /// Messages started here since the last window that another partition receives.
    started_elsewhere: Vec<u32>,
    /// What other partitions sent here, to inject before the next window.
    pub(crate) inbox: Vec<fabricsim_fabric::partition::Remote>,
    /// The earliest arrival in `inbox`.
    pub(crate) inbox_min: Option<Time>,
    /// The next event here when the last window ended (with lazy cross ports' next
    /// starts), computed by this partition's own thread.
    next_local: Option<Time>,
    /// A sample to take before the next window (partitioned runs).
    pub(crate) sample_due: Option<Time>,
    /// The copies simulating the other partitions, until a partitioned run absorbs them.
    pub(crate) replicas: Vec<Sim>,
}

/// A pcap capture being written.
pub(crate) struct Pcap {
    writer: fabricsim_wire::PcapWriter<std::io::BufWriter<std::fs::File>>,
    encode: fabricsim_wire::EncodeConfig,
    error: Option<std::io::Error>,
    frames: u64,
}

impl Pcap {
    /// Writes the frame `pkt` that started onto its wire at `t`; after a write error
    /// nothing more is written and the error is reported at the end.
    pub(crate) fn write(&mut self, t: Time, pkt: &Packet) {
        if self.error.is_none() {
            match self.writer.write_sim_packet(t.ps(), pkt, &self.encode) {
                Ok(()) => self.frames += 1,
                Err(e) => self.error = Some(e),
            }
        }
    }
}

impl Sim {
    /// Builds the fabric, the connections and the plan of `scenario` (with
    /// `partitions > 1`, a copy of the world for each further partition).
    pub fn new(scenario: Scenario) -> Result<Sim, ScenarioError> {
        let mut sim = Sim::build(scenario)?;
        if sim.scenario.partitions > 1 {
            crate::parallel::check(&sim)?;
            sim.replicas = crate::parallel::build_replicas(&sim);
        }
        sim.seed_events();
        Ok(sim)
    }

    /// One copy of the world, with no events yet.
    pub(crate) fn build(scenario: Scenario) -> Result<Sim, ScenarioError> {
        let stall_after = scenario.stall_after;
        let max_frame = scenario.mtu as u64 + 200;
        let fabric = Fabric::new(&scenario.topology, &scenario.links, scenario.fabric.clone(), max_frame)
            .map_err(|e| ScenarioError::from_message(&e.to_string()))?;
        let plan = fabricsim_workload::build(&scenario.workloads, fabric.hosts(), scenario.seed)
            .map_err(|e| ScenarioError::from_message(&e.to_string()))?;
        let nics_per_host = fabric.nics();
        check_planes(&scenario, nics_per_host)?;
        check_message_sizes(&scenario, &plan.messages)?;
        check_memory(&scenario, &plan.conns, nics_per_host)?;
        let mut eps = Vec::new();
        let mut meta = Vec::new();
        let mut conns = Vec::with_capacity(plan.conns.len());
        for (ci, c) in plan.conns.iter().enumerate() {
            let transport = scenario.transport_of(c.workload);
            let all_ports = factory::uses_all_ports(transport);
            // A single-port connection's QP i uses NIC port (connection + i) mod ports, as
            // collective libraries spread queue pairs over a multi-rail NIC.
            let port_of = |qp: u32| -> (u8, u8) {
                if all_ports {
                    (0, nics_per_host as u8)
                } else {
                    (((ci as u32 + qp) % nics_per_host) as u8, 1)
                }
            };
            // Keyed by workload and position in it: adding a workload or appending a
            // flow never changes another connection's random choices.
            let mut rng = Rng::stream(scenario.seed, &[0xC044, c.workload as u64, c.index as u64]);
            let first = eps.len() as u32;
            let base = |host, remote, local_qpn, remote_qpn, (first_port, ports): (u8, u8)| ConnInfo {
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
            let qps = factory::qps(transport);
            let (first_port, ports) = port_of(0);
            let ctx = path_context(&fabric, &scenario, transport, c.src, c.dst, first_port, ports);
            check_delay_target(&scenario, c, transport, ctx.base_rtt)?;
            for i in 0..qps {
                let r = first + 2 * i;
                let (first_port, ports) = port_of(i);
                let (req, resp) = factory::endpoint_pair(
                    transport,
                    base(c.src, c.dst, r, r + 1, (first_port, ports)),
                    base(c.dst, c.src, r + 1, r, (first_port, ports)),
                    &ctx,
                    Time::ZERO,
                    &mut rng,
                );
                for (ep, host, responder) in [(req, c.src, false), (resp, c.dst, true)] {
                    eps.push(ep);
                    meta.push(EpMeta {
                        host,
                        first_port,
                        ports,
                        responder,
                        conn: ci as u32,
                        queued: 0,
                        offer_first: 0,
                        timer_at: Time::MAX,
                        wake_at: Time::MAX,
                    });
                }
            }
            conns.push(ConnState { first_ep: first, qps, msgs: vec![Vec::new(); qps as usize] });
        }
        let msgs = plan
            .messages
            .iter()
            .map(|m| {
                let c = plan.conns[m.conn as usize];
                let transport = scenario.transport_of(c.workload);
                let nic = meta[conns[m.conn as usize].first_ep as usize].first_port;
                let n = factory::packets(m.size, scenario.mtu);
                let planes = nics_per_host as u64;
                let qps = factory::qps(transport) as u64;
                let ideal = fabric.path(c.src, c.dst, nic).map_or(Dur::ZERO, |hops| {
                    if factory::uses_all_ports(transport) {
                        // Sprayed over every plane: 1/P of the frames on each.
                        let per_plane = n.div_ceil(planes);
                        ideal_fct(&hops, per_plane, |j| {
                            factory::frame_wire_bytes(transport, m.size, scenario.mtu, n - per_plane + j)
                        })
                    } else if qps > 1 {
                        // K queue pairs over P NIC ports, the message split evenly over
                        // them (the larger parts first): the busiest plane carries parts
                        // 0, P, 2P, ... Their frames largest first, the small last ones
                        // at the end (the order that finishes soonest when the links run
                        // at one rate). Counting the parts as one message, with fewer but
                        // larger frames, gave a 4097-byte message over 4 QPs a slowdown
                        // of 0.87. A part's frames come in at most three sizes, kept as
                        // runs `(size, count)`: a 256 MB message is 65 K frames.
                        let mut runs: Vec<(u64, u64)> = Vec::new();
                        for i in (0..qps).step_by(planes as usize) {
                            let len = m.size / qps + u64::from(i < m.size % qps);
                            if len == 0 {
                                continue;
                            }
                            let k = factory::packets(len, scenario.mtu);
                            let frame = |j| factory::frame_wire_bytes(transport, len, scenario.mtu, j);
                            runs.push((frame(0), 1));
                            if k > 2 {
                                runs.push((frame(1), k - 2));
                            }
                            if k > 1 {
                                runs.push((frame(k - 1), 1));
                            }
                        }
                        runs.sort_unstable_by_key(|r| std::cmp::Reverse(r.0));
                        let ends: Vec<u64> = runs
                            .iter()
                            .scan(0, |acc, r| {
                                *acc += r.1;
                                Some(*acc)
                            })
                            .collect();
                        let total = ends.last().copied().unwrap_or(0);
                        ideal_fct(&hops, total, |j| runs[ends.partition_point(|&e| e <= j)].0)
                    } else {
                        ideal_fct(&hops, n, |j| factory::frame_wire_bytes(transport, m.size, scenario.mtu, j))
                    }
                });
                MsgState {
                    deps_left: m.deps.len() as u32,
                    parts_left: 0,
                    start: Time::MAX,
                    finish: Time::MAX,
                    retransmitted: 0,
                    ideal,
                }
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
        let faults = resolve_faults(&scenario, &fabric)?;
        let mut host_eps = vec![Vec::new(); fabric.hosts() as usize];
        for (i, m) in meta.iter().enumerate() {
            host_eps[m.host as usize].push(i as u32);
        }
        let nconns = conns.len();
        let nics = vec![NicQueues::default(); (fabric.hosts() * nics_per_host) as usize];
        let sampler = Sampler::new(&fabric, scenario.output.sample_interval, scenario.partitions);
        let deep_prefetch = fabric.ports.len() >= DEEP_PREFETCH_PORTS;
        let sim = Sim {
            scenario,
            plan,
            fabric,
            q: EventQueue::new(),
            deep_prefetch,
            eps,
            meta,
            nics,
            conns,
            msgs,
            dep_start: counts,
            dependents,
            received: 0,
            started: 0,
            watchdog: Watchdog::new(stall_after),
            sampler,
            misdelivered: 0,
            failed_conns: 0,
            end: None,
            ending: None,
            faults,
            fault_log: Vec::new(),
            host_eps,
            ev_log: Vec::new(),
            throughput: ThroughputRows::default(),
            conn_bytes: vec![0; nconns],
            last_sample: Time::ZERO,
            next_sample: Time::MAX,
            pcap: None,
            part: None,
            events_absorbed: 0,
            started_elsewhere: Vec::new(),
            inbox: Vec::new(),
            inbox_min: None,
            next_local: None,
            sample_due: None,
            replicas: Vec::new(),
        };
        Ok(sim)
    }

    /// Schedules the run's first events: faults, messages without dependencies whose
    /// sender this copy simulates, and (unpartitioned) the first sample.
    fn seed_events(&mut self) {
        self.q = EventQueue::new();
        for (i, f) in self.scenario.faults.iter().enumerate() {
            self.q.push(Time::ZERO + f.at, Event::Fault(i as u32));
        }
        for (i, m) in self.plan.messages.iter().enumerate() {
            if m.deps.is_empty() && self.owns_host(self.plan.conns[m.conn as usize].src) {
                self.q.push(Time::ZERO + m.start, Event::Start(i as u32));
            }
        }
        // A partitioned run samples between windows instead.
        self.next_sample = if self.sampler.enabled() && self.part.is_none() {
            Time::ZERO + self.scenario.output.sample_interval
        } else {
            Time::MAX
        };
    }

    /// Makes this copy simulate partition `me` of `owner` (per node) and schedules its
    /// first events. Returns the lookahead (see [`fabricsim_fabric::partition`]).
    pub(crate) fn make_partition(&mut self, owner: &[u8], me: u8) -> Option<Dur> {
        let lookahead = self.fabric.set_partition(owner, me);
        self.part = Some((owner.to_vec(), me));
        self.seed_events();
        self.refresh_next();
        lookahead
    }

    /// Whether this copy simulates `host` (every host, unpartitioned).
    #[inline]
    pub(crate) fn owns_host(&self, host: u32) -> bool {
        owns(&self.part, host)
    }

    /// What the stall watchdog counts as progress, over this copy's hosts. (Rare: kept
    /// out of the run loop's code.)
    #[inline(never)]
    pub(crate) fn mark(&self) -> Mark {
        let placed = (0..self.eps.len())
            .filter(|&i| self.meta[i].responder && owns(&self.part, self.meta[i].host))
            .map(|i| self.eps[i].stats().bytes_placed)
            .sum();
        Mark { placed, started: self.started, received: self.received }
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
        self.eps.iter().zip(&self.meta).map(|(e, m)| (e.stats(), m.responder, m.conn))
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
            if self.received == self.msgs.len() {
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

    /// Takes the samples of the grid before `now`, when an event at `now` comes up:
    /// each covers what happened up to and including its time. Across an idle stretch
    /// only the last grid point before it is sampled (see [`sample_after`]). (Once per
    /// interval at most: kept out of the run loop's code.)
    #[cold]
    #[inline(never)]
    fn sample_before(&mut self, now: Time) {
        let interval = self.scenario.output.sample_interval;
        while self.next_sample < now {
            let t = self.next_sample;
            self.sample(t);
            self.next_sample = if self.sampler.enabled() { sample_after(t, interval, now) } else { Time::MAX };
        }
    }

    /// Ends the sampling of a run that ends at `end`: the grid points up to `end`, then
    /// the last, part interval (nothing if `end` is on the grid).
    fn sample_through(&mut self, end: Time) {
        self.sample_before(Time(end.0.saturating_add(1)));
        self.sample(end);
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

    /// Messages completed here (in a partitioned run: those this copy receives).
    pub(crate) fn received(&self) -> usize {
        self.received
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
                let ep = pkt.bth.dest_qp as usize;
                if let (Some(e), Some(m)) = (self.eps.get(ep), self.meta.get(ep)) {
                    fabricsim_engine::prefetch::lines(e, 8);
                    fabricsim_engine::prefetch::lines(m, 1);
                }
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
                    Some(FabricOutput::Deliver { slot, .. }) => self.deliver(now, slot),
                    Some(FabricOutput::NicReady { host, nic }) => self.serve(now, host, nic),
                    None => {}
                }
                if !self.fabric.captured.is_empty() {
                    self.flush_capture();
                }
            }
            Event::Timer(ep) => self.timer(now, ep),
            Event::Wake(ep) => {
                if self.meta[ep as usize].wake_at == now {
                    self.meta[ep as usize].wake_at = Time::MAX;
                    self.ready(now, ep);
                }
            }
            Event::Start(m) => self.start(now, m),
            Event::Fault(i) => self.apply_fault(now, i as usize),
            Event::Reroute => self.fabric.reroute(),
        }
    }

    /// When the last message completed here, if any did.
    pub(crate) fn last_finish(&self) -> Option<Time> {
        self.msgs.iter().map(|m| m.finish).filter(|&t| t != Time::MAX).max()
    }

    /// Takes over what partition `k` of `owner` simulated, from its copy `other`: its
    /// endpoints, the messages it sent (start, retransmissions) and received
    /// (completion), its ports and switches, its samples and logs; counters are summed.
    pub(crate) fn absorb(&mut self, other: &mut Sim, owner: &[u8], k: u8) {
        let theirs = |host: u32| owner[host as usize] == k;
        for i in 0..self.eps.len() {
            if theirs(self.meta[i].host) {
                std::mem::swap(&mut self.eps[i], &mut other.eps[i]);
            }
        }
        for (m, spec) in self.plan.messages.iter().enumerate() {
            let c = self.plan.conns[spec.conn as usize];
            if theirs(c.src) {
                self.msgs[m].start = other.msgs[m].start;
                self.msgs[m].retransmitted = other.msgs[m].retransmitted;
            }
            if theirs(c.dst) {
                self.msgs[m].finish = other.msgs[m].finish;
            }
        }
        self.fabric.absorb(&mut other.fabric, |node| owner[node as usize] == k);
        let fabric = &self.fabric;
        self.sampler.merge(&other.sampler, |p| owner[fabric.ports[p].node as usize] == k);
        self.throughput.merge(&other.throughput);
        for (c, conn) in self.plan.conns.iter().enumerate() {
            if theirs(conn.dst) {
                self.conn_bytes[c] = other.conn_bytes[c];
            }
        }
        self.last_sample = self.last_sample.max(other.last_sample);
        self.ev_log.append(&mut other.ev_log);
        for (c, conn) in self.plan.conns.iter().enumerate() {
            if theirs(conn.src) {
                // Which message each of its sequence numbers carries (for the
                // retransmissions of messages not yet acknowledged).
                std::mem::swap(&mut self.conns[c].msgs, &mut other.conns[c].msgs);
            }
        }
        self.received += other.received;
        self.misdelivered += other.misdelivered;
        self.failed_conns += other.failed_conns;
        self.events_absorbed += other.events();
    }

    /// Ends a partitioned run at `end`: the last sample, and the end time.
    pub(crate) fn finish_partitioned(&mut self, end: Time) {
        // Whole again: the last sample drains every endpoint's log (a stalled run's
        // too: its last interval is part of the record).
        self.part = None;
        self.sample(end);
        self.end = Some(end);
        // The partitions may have run up to one lookahead past the end; the merged
        // log is in time order (stable: simultaneous entries by connection).
        self.ev_log.retain(|(_, l)| l.time <= end);
        self.fault_log.retain(|f| f.time <= end);
        self.ev_log.sort_by_key(|(conn, l)| (l.time, *conn));
    }

    /// Records the interval ending at `now`: port counters, each connection's
    /// delivered bytes, entropy-value state changes.
    pub(crate) fn sample(&mut self, now: Time) {
        // Lazy switch ports catch up, so counters and queues read as of now.
        self.fabric.settle(now);
        match &self.part {
            // A partition samples the ports it owns (its copies of the others' may
            // count drops of frames that crossed to it; they are merged at the end).
            Some((owner, me)) => self.sampler.sample_ports(now, &mut self.fabric, |p| owner[p.node as usize] == *me),
            None => self.sampler.sample(now, &mut self.fabric),
        }
        for (i, ep) in self.eps.iter_mut().enumerate() {
            if !owns(&self.part, self.meta[i].host) {
                continue;
            }
            let mut log = Vec::new();
            ep.drain_path_log(now, &mut log);
            let conn = self.meta[i].conn;
            self.ev_log.extend(log.into_iter().map(|l| (conn, l)));
        }
        if !self.sampler.enabled() || now <= self.last_sample {
            return;
        }
        // Rows cover whole intervals, the last one too (a short one ending with the run
        // made a packet that had taken a whole interval to arrive look like a burst
        // at twice the line rate): it ends on the grid, after the run's end.
        let interval = self.scenario.output.sample_interval;
        let end = if interval > Dur::ZERO { now.max(self.last_sample + interval) } else { now };
        let dt = end.since(self.last_sample).as_secs_f64();
        for (c, conn) in self.conns.iter().enumerate() {
            let placed: u64 =
                (0..conn.qps).map(|i| self.eps[(conn.first_ep + 2 * i + 1) as usize].stats().bytes_placed).sum();
            let delta = placed - self.conn_bytes[c];
            if delta > 0 {
                self.throughput.time_ns.push(end.as_ns());
                self.throughput.connection.push(c as u32);
                self.throughput.bytes.push(delta);
                self.throughput.gbps.push(delta as f64 * 8.0 / dt / 1e9);
                self.conn_bytes[c] = placed;
            }
        }
        self.last_sample = now;
    }

    fn apply_fault(&mut self, now: Time, i: usize) {
        let f = self.faults[i].clone();
        let value = match &f.kind {
            FaultKind::LinkDown => self.cable_up(now, f.port.expect("link fault"), false),
            FaultKind::LinkUp => self.cable_up(now, f.port.expect("link fault"), true),
            FaultKind::LinkFlap { period, duty, until } => {
                let p = f.port.expect("link fault");
                let end = until.map(|u| Time::ZERO + u);
                let over = end.is_some_and(|u| now >= u);
                let down = !f.flap_down && !over;
                self.faults[i].flap_down = down;
                self.cable_up(now, p, !down);
                if !over {
                    let phase = if down { period.ps() as f64 * duty } else { period.ps() as f64 * (1.0 - duty) };
                    let next = now + Dur(phase.max(1.0) as u64);
                    // The flapping ends at `until`: a cable down then comes up at that
                    // time, one up then stays up.
                    match end {
                        Some(u) if next >= u => {
                            if down {
                                self.q.push(u, Event::Fault(i as u32));
                            }
                        }
                        _ => self.q.push(next, Event::Fault(i as u32)),
                    }
                }
                String::from(if down { "down" } else { "up" })
            }
            FaultKind::LinkLoss(loss) => {
                self.fabric.set_cable_loss(f.port.expect("link fault"), *loss, now);
                loss.to_string()
            }
            FaultKind::EvLoss { ev, loss } => {
                self.fabric.set_cable_ev_loss(f.port.expect("link fault"), (*loss > 0.0).then_some((*ev, *loss)), now);
                format!("ev {ev}: {loss}")
            }
            FaultKind::SwitchDown | FaultKind::SwitchUp => {
                let up = f.kind == FaultKind::SwitchUp;
                let n = f.node.expect("switch fault");
                let ports = self.fabric.ports_of(n).to_vec();
                self.fabric.set_switch_up(n, up, now, &mut self.q);
                for p in ports {
                    self.notify_hosts(now, p);
                }
                self.schedule_reroute(now);
                String::new()
            }
            FaultKind::Delay(d) => {
                match (f.port, f.node) {
                    (Some(p), _) => self.fabric.set_cable_delay(p, *d, now),
                    (_, Some(n)) => {
                        for p in self.fabric.ports_of(n).to_vec() {
                            self.fabric.set_port_delay(p, *d, now);
                        }
                    }
                    _ => unreachable!("resolved faults have a target"),
                }
                d.to_string()
            }
            FaultKind::Rate(r) => {
                match (f.port, f.node) {
                    (Some(p), _) => self.fabric.set_cable_rate(p, *r, now),
                    (_, Some(n)) => {
                        for p in self.fabric.ports_of(n).to_vec() {
                            self.fabric.set_port_rate(p, *r, now);
                        }
                    }
                    _ => unreachable!("resolved faults have a target"),
                }
                r.to_string()
            }
        };
        self.fault_log.push(FaultRecord { time: now, kind: f.kind.name(), target: f.target, value });
    }

    /// Takes a cable down or up, tells the hosts at its ends, and has ECMP reroute.
    fn cable_up(&mut self, now: Time, p: PortId, up: bool) -> String {
        self.fabric.set_cable_up(p, up, now, &mut self.q);
        self.notify_hosts(now, p);
        self.schedule_reroute(now);
        String::from(if up { "up" } else { "down" })
    }

    fn schedule_reroute(&mut self, now: Time) {
        if self.scenario.fabric.routing == fabricsim_fabric::Routing::Ecmp {
            if let Some(d) = self.scenario.reroute_after {
                self.q.push(now + d, Event::Reroute);
            }
        }
    }

    /// A host NIC port at an end of the cable at `p` changed state: its endpoints hear.
    fn notify_hosts(&mut self, now: Time, p: PortId) {
        // The link's state now, not the fault's: a cable back up stays dead while a
        // switch at its end is down, and a switch back up does not revive a host cable
        // that failed on its own.
        let up = self.fabric.ports[p as usize].up;
        for (host, nic) in self.fabric.hosts_on_cable(p) {
            for k in 0..self.host_eps[host as usize].len() {
                let ep = self.host_eps[host as usize][k];
                let m = self.meta[ep as usize];
                if nic >= m.first_port && nic < m.first_port + m.ports && self.owns_host(host) {
                    self.eps[ep as usize].on_port_state(now, nic, up);
                    self.after_input(now, ep);
                    self.ready(now, ep);
                }
            }
        }
    }

    /// Captures the frames crossing the cables named in `spec` (comma-separated port,
    /// host or switch names; a node means all its cables) into a pcap file at `path`.
    /// Payloads are cut to `snap` bytes in the file (headers are always whole).
    pub fn capture(&mut self, spec: &str, path: &std::path::Path, snap: u32) -> Result<(), ScenarioError> {
        let mut ports = Vec::new();
        for name in spec.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            if let Some(p) = self.fabric.port_by_name(name) {
                ports.push(p);
            } else if let Some(n) = self.fabric.node_by_name(name) {
                ports.extend_from_slice(self.fabric.ports_of(n));
            } else {
                return Err(ScenarioError::new(
                    "pcap",
                    format!(
                        "no port or node {} in this topology ({}; names look like {}, or a node such as \"host[0]\")",
                        crate::quoted(name),
                        name_hint(&self.fabric, name),
                        example_names(&self.fabric)
                    ),
                ));
            }
        }
        if ports.is_empty() {
            return Err(ScenarioError::new("pcap", "name at least one port or node to capture"));
        }
        let file = std::fs::File::create(path)
            .map_err(|e| ScenarioError::new("pcap", format!("cannot create {}: {e}", path.display())))?;
        let writer = fabricsim_wire::PcapWriter::new(std::io::BufWriter::new(file), 65_535)
            .map_err(|e| ScenarioError::new("pcap", e.to_string()))?;
        for &p in &ports {
            self.fabric.tap_cable(p);
        }
        for r in &mut self.replicas {
            // Every copy taps the cables; only the one owning a port's node sends on it
            // (see `parallel::Capture`). Tapping makes a lazy port eager, so
            // each copy's cross ports are listed again.
            for &p in &ports {
                r.fabric.tap_cable(p);
            }
            if let Some((owner, me)) = &r.part {
                r.fabric.set_partition(owner, *me);
            }
        }
        let encode = fabricsim_wire::EncodeConfig { payload_snaplen: Some(snap), ..Default::default() };
        self.pcap = Some(Pcap { writer, encode, error: None, frames: 0 });
        Ok(())
    }

    /// Writes frames captured since the last call.
    fn flush_capture(&mut self) {
        let Some(pcap) = &mut self.pcap else { return };
        for (t, _, pkt) in self.fabric.captured.drain(..) {
            pcap.write(t, &pkt);
        }
    }

    /// Finishes the capture: frames written, or the first write error.
    pub fn finish_capture(&mut self) -> Option<Result<u64, String>> {
        self.flush_capture();
        let mut pcap = self.pcap.take()?;
        if let Err(e) = pcap.writer.flush() {
            pcap.error.get_or_insert(e);
        }
        Some(match pcap.error {
            Some(e) => Err(e.to_string()),
            None => Ok(pcap.frames),
        })
    }

    /// Per-path counters of every sender: `(connection, qp, counters)`.
    pub fn path_stats(&self) -> Vec<(u32, u32, fabricsim_transport::common::PathStats)> {
        let mut out = Vec::new();
        for (c, conn) in self.conns.iter().enumerate() {
            for q in 0..conn.qps {
                for s in self.eps[(conn.first_ep + 2 * q) as usize].path_stats() {
                    out.push((c as u32, q, s));
                }
            }
        }
        out
    }

    /// The plane a path of QP `qp` of connection `conn` runs in: a transport spanning
    /// every NIC port tags its entropy values with their plane; a single-port one sends
    /// all of them from the port it is bound to (their tags say plane 0).
    pub fn path_plane(&self, conn: u32, qp: u32, ev: u32) -> u32 {
        if self.fabric.nics() == 1 {
            return 0;
        }
        let m = &self.meta[(self.conns[conn as usize].first_ep + 2 * qp) as usize];
        if m.ports > 1 {
            fabricsim_wire::ev_plane(ev) as u32
        } else {
            m.first_port as u32
        }
    }

    /// Packets of each message sent more than once: the counts reported with each
    /// acknowledgement, and for messages the run ended on before their acknowledgement
    /// came back, the sender's count so far.
    pub fn message_retransmissions(&self) -> Vec<u64> {
        let mut out: Vec<u64> = self.msgs.iter().map(|m| m.retransmitted).collect();
        let mut pending = Vec::new();
        for conn in &self.conns {
            for q in 0..conn.qps {
                pending.clear();
                self.eps[(conn.first_ep + 2 * q) as usize].unacked_retransmissions(&mut pending);
                for &(seq, n) in &pending {
                    if let Some(&m) = conn.msgs[q as usize].get(seq as usize) {
                        out[m as usize] += n;
                    }
                }
            }
        }
        out
    }

    /// Out-of-order degrees per connection (merged over its QPs), for multipath
    /// receivers.
    pub fn ooo(&self) -> Vec<Option<fabricsim_transport::common::OooHistogram>> {
        self.conns
            .iter()
            .map(|conn| {
                let mut h: Option<fabricsim_transport::common::OooHistogram> = None;
                for q in 0..conn.qps {
                    if let Some(o) = self.eps[(conn.first_ep + 2 * q + 1) as usize].ooo() {
                        h.get_or_insert_with(Default::default).merge(o);
                    }
                }
                h
            })
            .collect()
    }

    /// Number of QPs of connection `c`.
    pub fn qps_of(&self, c: usize) -> u32 {
        self.conns[c].qps
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
        self.started += 1;
        let parts = self.book_start(m, now);
        let (first, c) = {
            let c = self.plan.messages[m as usize].conn as usize;
            (self.conns[c].first_ep, c)
        };
        if !self.owns_host(self.plan.conns[c].dst) {
            // The receiving partition learns of it before any of its packets arrive.
            self.started_elsewhere.push(m);
        }
        let mut offset = 0;
        for (i, len, seq) in parts {
            let ep = first + 2 * i;
            let va = 0x7f00_0000_0000u64 + ((m as u64) << 32) + offset;
            offset += len;
            self.eps[ep as usize].post(now, Message { seq, len, va, rkey: m });
            self.after_input(now, ep);
            self.ready(now, ep);
        }
    }

    /// Records that message `m` starts at `now`: splits it over its connection's QPs
    /// and numbers each part in its QP's sequence. Returns `(qp, bytes, sequence)`.
    fn book_start(&mut self, m: u32, now: Time) -> Vec<(u32, u64, u32)> {
        let spec = &self.plan.messages[m as usize];
        let (c, size) = (spec.conn as usize, spec.size);
        let qps = self.conns[c].qps;
        // A message over several QPs is split evenly, the remainder on the first ones;
        // a QP whose share is empty carries nothing of it.
        let parts: Vec<(u32, u64, u32)> = (0..qps)
            .map(|i| (i, size / qps as u64 + u64::from((i as u64) < size % qps as u64)))
            .filter(|&(_, len)| len > 0)
            .map(|(i, len)| {
                let queue = &mut self.conns[c].msgs[i as usize];
                queue.push(m);
                (i, len, queue.len() as u32 - 1)
            })
            .collect();
        let st = &mut self.msgs[m as usize];
        st.start = now;
        st.parts_left = parts.len() as u32;
        parts
    }

    /// Another partition started message `m`, which this one receives.
    pub(crate) fn started_remotely(&mut self, m: u32) {
        self.book_start(m, Time::MAX);
    }

    /// Takes the messages started here that other partitions receive.
    pub(crate) fn take_started(&mut self) -> Vec<u32> {
        std::mem::take(&mut self.started_elsewhere)
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

    /// Queues `ep` on its ports and serves any that are idle, starting from a
    /// different port each time: an endpoint on several ports whose window opens by one
    /// packet sends it on whichever idle port it is offered first. Always offering the
    /// first port first gave it the lion's share whenever the window, not the ports,
    /// set the pace (an MRC incast over two planes split its packets 60:40, one plane's
    /// last hop queued 340 KB while the other's ran dry, and the reordering between
    /// them cost 20-35 % spurious resends).
    fn ready(&mut self, now: Time, ep: u32) {
        let m = self.meta[ep as usize];
        let nics = self.fabric.nics();
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
