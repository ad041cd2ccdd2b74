//! Building a run's world: the fabric, the plan, every connection's endpoints on the
//! NICs, the messages' ideal times and dependencies, the faults; and its first events.

use crate::checks::{check_delay_target, check_message_sizes, check_planes};
use crate::factory;
use crate::faults::resolve_faults;
use crate::messages::{ideal_times, Dependencies, MsgState};
use crate::sampling::{Sampler, ThroughputRows};
use crate::scenario::Scenario;
use crate::sim::{Event, FabricWire, Sim, DEEP_PREFETCH_PORTS};
use crate::watchdog::Watchdog;
use crate::ScenarioError;
use fabricsim_engine::{Dur, EventQueue, Rng, Time};
use fabricsim_fabric::Fabric;
use fabricsim_nic::{EndpointPlace, Nic, Split};

/// The unloaded round trip of a connection (a full data frame out, an ACK back along
/// the same links) and the bytes that fill its ports for that long.
pub(crate) fn path_context(
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
    factory::PathContext {
        base_rtt,
        bdp_bytes: rate / 8.0 * base_rtt.as_secs_f64(),
        star: factory::StarChoice::default(),
        sport: None,
    }
}

/// The UDP source ports of a Maestro connection's QPs (empty: random ones, as RoCE
/// draws them). `hash` works out the path of each of 64 candidate ports with the
/// switches' ECMP hash and picks those sharing fewest links; `probe` follows the
/// paper's procedure (section 4.1): rounds of 2K candidate QPs, each probed once (the
/// path its probe took is read off its headers with the known hash, as the paper's
/// sniffer does), until K of them share no link or 8 rounds have passed. The
/// candidates come from a stream of their own: other connections' draws never move.
fn maestro_ports(
    fabric: &Fabric,
    sc: &Scenario,
    c: &fabricsim_workload::ConnSpec,
    spec: &factory::MaestroSpec,
    port_of: impl Fn(u32) -> u8,
) -> (Vec<u16>, Vec<u16>) {
    let mut rng = Rng::stream(sc.seed, &[0x3AE5, c.workload as u64, c.index as u64]);
    let mut draw = |n: usize, out: &mut Vec<u16>| {
        while out.len() < n {
            let p = 0xC000 | rng.below(0x4000) as u16;
            if !out.contains(&p) {
                out.push(p);
            }
        }
    };
    let k = spec.paths as usize;
    let trace = |i: usize, sport: u16| fabric.ecmp_trace(c.src, c.dst, port_of(i as u32), sport);
    let mut candidates = Vec::new();
    let picked = match spec.path_selection {
        factory::PathSelection::Random => Vec::new(),
        factory::PathSelection::Hash => {
            draw(64.max(2 * k), &mut candidates);
            fabricsim_nic::maestro::disjoint_ports(&candidates, k, trace)
        }
        factory::PathSelection::Probe => {
            let mut picked = Vec::new();
            for round in 1..=8 {
                draw(2 * k * round, &mut candidates);
                picked = fabricsim_nic::maestro::disjoint_ports(&candidates, k, trace);
                if fabricsim_nic::maestro::shared_links(&picked, trace) == 0 {
                    break;
                }
            }
            picked
        }
    };
    (picked, candidates)
}

/// A Maestro connection whose paths are re-selected during the run (see
/// `reselect_interval`).
#[derive(Clone, Debug)]
pub(crate) struct Reselect {
    conn: u32,
    src: u32,
    dst: u32,
    /// The source ports its set-up selection drew from.
    candidates: Vec<u16>,
    interval: Dur,
    /// A [`Event::Reselect`](crate::sim::Event::Reselect) for it is queued.
    pub(crate) armed: bool,
}

impl Sim {
    /// Arms connection `conn`'s path re-selection, if it has one and it is not armed
    /// (a message was posted on it).
    pub(crate) fn arm_reselect(&mut self, now: Time, conn: u32) {
        let Some(&i) = self.reselect_of.get(conn as usize) else { return };
        if i == u32::MAX || self.reselect[i as usize].armed {
            return;
        }
        self.reselect[i as usize].armed = true;
        self.q.push(now + self.reselect[i as usize].interval, Event::Reselect(i));
    }

    /// Re-selection `i` is due: while its connection is busy, each QP's path is
    /// traced on the tables as they stand, and a QP whose path shares more links with
    /// the paths of the QPs before it than a candidate port's would is moved there
    /// (the candidate sharing fewest; ties to the first drawn). Re-armed while busy.
    pub(crate) fn reselect(&mut self, now: Time, i: u32) {
        let r = &mut self.reselect[i as usize];
        r.armed = false;
        let (conn, src, dst) = (r.conn, r.src, r.dst);
        if !self.nic.maestro(conn).is_some_and(|m| m.busy()) {
            return;
        }
        let qps = self.nic.qps_of(conn as usize);
        let mut used: Vec<u32> = Vec::new();
        // Ports in use or being moved to are not candidates.
        let mut taken: Vec<u16> = Vec::new();
        for q in 0..qps {
            let (port, moving) = self.nic.qp_sport(conn, q);
            taken.push(port);
            taken.extend(moving);
        }
        for q in 0..qps {
            let failed = self.nic.maestro(conn).is_some_and(|m| m.paths[q as usize].failed);
            let (now_port, moving) = self.nic.qp_sport(conn, q);
            if failed {
                continue;
            }
            let nic = self.nic.place_of(conn as usize, q).first_port;
            let trace = |s: u16| self.fabric.ecmp_trace(src, dst, nic, s);
            let shared = |links: &[u32]| fabricsim_nic::maestro::overlap(links, &used);
            let port = moving.unwrap_or(now_port);
            let here = trace(port);
            let cost = here.as_deref().map_or(usize::MAX, shared);
            let mut best: Option<(usize, u16, Vec<u32>)> = None;
            if cost > 0 {
                for &c in &self.reselect[i as usize].candidates {
                    if taken.contains(&c) {
                        continue;
                    }
                    if let Some(links) = trace(c) {
                        let n = shared(&links);
                        if n < cost && best.as_ref().is_none_or(|b| n < b.0) {
                            best = Some((n, c, links));
                        }
                    }
                }
            }
            match best {
                Some((_, c, links)) => {
                    used.extend(links);
                    taken.push(c);
                    self.nic.move_qp(now, conn, q, c, &mut FabricWire { fabric: &mut self.fabric, q: &mut self.q });
                    self.drain_nic(now);
                }
                None => used.extend(here.unwrap_or_default()),
            }
        }
        self.reselect[i as usize].armed = true;
        let at = now + self.reselect[i as usize].interval;
        self.q.push(at, Event::Reselect(i));
    }
}

/// The source port a constant-rate flow is pinned to, if it is: as given, or the
/// first of a stream of candidates whose ECMP path crosses the switch it names.
fn pinned_port(
    fabric: &Fabric,
    sc: &Scenario,
    c: &fabricsim_workload::ConnSpec,
    nic: u8,
) -> Result<Option<u16>, ScenarioError> {
    let Some(fabricsim_workload::WorkloadKind::ConstantRate(flow)) =
        sc.workloads.get(c.workload as usize).map(|w| &w.kind)
    else {
        return Ok(None);
    };
    let key = format!("workload[{}].via", c.workload);
    match &flow.pin {
        None => Ok(None),
        Some(fabricsim_workload::Pin::Sport(p)) => Ok(Some(*p)),
        Some(fabricsim_workload::Pin::Via(name)) => {
            let node = fabric.node_by_name(name).ok_or_else(|| {
                ScenarioError::new(
                    &key,
                    format!(
                        "no switch is named {} (names as in ports.parquet, e.g. \"spine[0]\")",
                        crate::quoted(name)
                    ),
                )
            })?;
            let mut rng = Rng::stream(sc.seed, &[0x91A5, c.workload as u64, c.index as u64]);
            for _ in 0..4096 {
                let sport = 0xC000 | rng.below(0x4000) as u16;
                let path = fabric.ecmp_trace(c.src, c.dst, nic, sport).unwrap_or_default();
                if path.iter().any(|&p| fabric.ports[p as usize].node == node) {
                    return Ok(Some(sport));
                }
            }
            Err(ScenarioError::new(
                &key,
                format!(
                    "no path from host {} to host {} crosses {} (4096 source ports tried)",
                    c.src,
                    c.dst,
                    crate::quoted(name)
                ),
            ))
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
        let fabric = Fabric::new(&scenario.topology, &scenario.links, scenario.fabric.clone(), max_frame)?;
        let nics_per_host = fabric.nics();
        let plan = crate::plan::build(&scenario, &fabric)?;
        check_planes(&scenario, nics_per_host)?;
        check_message_sizes(&scenario, &plan.messages)?;
        let mut nic = Nic::new(fabric.hosts(), nics_per_host, plan.messages.len());
        let mut star = crate::star::Choices::new(&scenario, &plan, fabric.hosts());
        let (mut reselect, mut reselect_of) = (Vec::new(), Vec::new());
        for (ci, c) in plan.conns.iter().enumerate() {
            let transport = scenario.transport_of(c.workload);
            let all_ports = transport.spans_all_ports();
            // A single-port connection's QP i uses NIC port (connection + i) mod ports, as
            // collective libraries spread queue pairs over a multi-rail NIC, or (port + i)
            // for a connection pinned to a port (a collective's channel).
            let place = |qp: u32| {
                if all_ports {
                    EndpointPlace { first_port: 0, ports: nics_per_host as u8 }
                } else {
                    EndpointPlace { first_port: ((c.port.unwrap_or(ci as u32) + qp) % nics_per_host) as u8, ports: 1 }
                }
            };
            // Keyed by workload and position in it: adding a workload or appending a
            // flow never changes another connection's random choices.
            let mut rng = Rng::stream(scenario.seed, &[0xC044, c.workload as u64, c.index as u64]);
            let EndpointPlace { first_port, ports } = place(0);
            let mut ctx = path_context(&fabric, &scenario, transport, c.src, c.dst, first_port, ports);
            ctx.star = star.choose(transport, c);
            check_delay_target(&scenario, c, transport, ctx.base_rtt)?;
            let sports = match transport {
                factory::TransportSpec::Maestro(m) => {
                    let (ports, candidates) = maestro_ports(&fabric, &scenario, c, m, |i| place(i).first_port);
                    if let (Some(interval), false) =
                        (m.reselect_interval, m.path_selection == factory::PathSelection::Random)
                    {
                        reselect_of.resize(ci, u32::MAX);
                        reselect_of.push(reselect.len() as u32);
                        reselect.push(Reselect {
                            conn: ci as u32,
                            src: c.src,
                            dst: c.dst,
                            candidates,
                            interval,
                            armed: false,
                        });
                    }
                    ports
                }
                _ => pinned_port(&fabric, &scenario, c, first_port)?.into_iter().collect(),
            };
            let conn = nic.add_connection(
                c.src,
                c.dst,
                transport.qps(),
                Split::Even,
                scenario.links.host_link,
                scenario.mtu,
                place,
                |i, req, resp| {
                    let ctx = factory::PathContext { sport: sports.get(i as usize).copied(), ..ctx };
                    factory::endpoint_pair(transport, req, resp, &ctx, Time::ZERO, &mut rng)
                },
            );
            if c.reuse_buffer {
                nic.reuse_buffer(conn);
            }
            if let factory::TransportSpec::Maestro(m) = transport {
                nic.set_maestro(conn, m.policy);
            }
        }
        for (key, h) in scenario.nic.hosts_named() {
            if h >= fabric.hosts() {
                return Err(ScenarioError::new(
                    &key,
                    format!("host {h} does not exist (hosts are 0..{})", fabric.hosts() - 1),
                ));
            }
        }
        nic.set_models(|h| scenario.nic.model_of(h));
        // A connection's first path, walked once for a run of its messages (a closed
        // loop's client posts hundreds in a row on one or two connections); the last
        // two kept, not every connection's (an all-to-all has a million).
        let mut recent: [(u32, Option<Vec<_>>); 2] = [(u32::MAX, None), (u32::MAX, None)];
        let waits = Dependencies::waits(&plan);
        let msgs = plan
            .messages
            .iter()
            .zip(waits)
            .map(|(m, waits)| {
                let c = plan.conns[m.conn as usize];
                let transport = scenario.transport_of(c.workload);
                if recent[0].0 != m.conn {
                    recent.swap(0, 1);
                    if recent[0].0 != m.conn {
                        let first_port = nic.place_of(m.conn as usize, 0).first_port;
                        recent[0] = (m.conn, fabric.path(c.src, c.dst, first_port));
                    }
                }
                let (ideal, sender_ideal) = recent[0].1.as_ref().map_or((Dur::ZERO, Dur::ZERO), |hops| {
                    ideal_times(hops, transport, m.size, scenario.mtu, nics_per_host, scenario.links.host_link)
                });
                MsgState::new(waits, Time::ZERO + m.start, ideal, sender_ideal)
            })
            .collect();
        let deps = Dependencies::new(&plan);
        let faults = resolve_faults(&scenario, &fabric)?;
        let nconns = nic.connections();
        let done_when_acked = scenario.output.fct_at == crate::scenario::FctAt::Sender;
        let sampler = Sampler::new(&fabric, scenario.output.sample_interval, scenario.partitions);
        let deep_prefetch = fabric.ports.len() >= DEEP_PREFETCH_PORTS;
        let sim = Sim {
            scenario,
            plan,
            fabric,
            q: EventQueue::new(),
            deep_prefetch,
            nic,
            msgs,
            deps,
            received: 0,
            done: 0,
            done_when_acked,
            started: 0,
            watchdog: Watchdog::new(stall_after),
            sampler,
            failed_conns: 0,
            end: None,
            ending: None,
            faults,
            fault_log: Vec::new(),
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
            reselect,
            reselect_of,
        };
        Ok(sim)
    }

    /// Schedules the run's first events: faults, messages without dependencies whose
    /// sender this copy simulates, and (unpartitioned) the first sample.
    pub(crate) fn seed_events(&mut self) {
        self.q = EventQueue::new();
        for (i, f) in self.scenario.faults.iter().enumerate() {
            self.q.push(Time::ZERO + f.at, Event::Fault(i as u32));
        }
        for (i, m) in self.plan.messages.iter().enumerate() {
            if self.msgs[i].deps_left == 0 && self.owns_host(self.plan.conns[m.conn as usize].src) {
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
        // Maestro's receivers learn from the senders' copies which QP carries a chunk.
        self.nic.keep_handovers();
        self.seed_events();
        self.refresh_next();
        lookahead
    }
}
