//! Faults during a run: targets resolved against the fabric (with hints for names
//! that name nothing), and each fault applied at its time.

use crate::scenario::{FaultKind, FaultTarget, Scenario};
use crate::sim::{Event, FabricWire, Sim};
use crate::ScenarioError;
use fabricsim_engine::{Dur, Time};
use fabricsim_fabric::{Fabric, PortId};

/// Checks every fault's target against the fabric.
pub(crate) fn resolve_faults(sc: &Scenario, fabric: &Fabric) -> Result<Vec<Fault>, ScenarioError> {
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
pub(crate) fn name_hint(fabric: &Fabric, name: &str) -> String {
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

pub(crate) fn example_names(fabric: &Fabric) -> String {
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

/// A fault resolved against the fabric.
#[derive(Clone, Debug)]
pub(crate) struct Fault {
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

impl Sim {
    pub(crate) fn apply_fault(&mut self, now: Time, i: usize) {
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
    pub(crate) fn cable_up(&mut self, now: Time, p: PortId, up: bool) -> String {
        self.fabric.set_cable_up(p, up, now, &mut self.q);
        self.notify_hosts(now, p);
        self.schedule_reroute(now);
        String::from(if up { "up" } else { "down" })
    }

    pub(crate) fn schedule_reroute(&mut self, now: Time) {
        if self.scenario.fabric.routing == fabricsim_fabric::Routing::Ecmp {
            if let Some(d) = self.scenario.reroute_after {
                self.q.push(now + d, Event::Reroute);
            }
        }
    }

    /// A host NIC port at an end of the cable at `p` changed state: its endpoints hear.
    pub(crate) fn notify_hosts(&mut self, now: Time, p: PortId) {
        // The link's state now, not the fault's: a cable back up stays dead while a
        // switch at its end is down, and a switch back up does not revive a host cable
        // that failed on its own.
        let up = self.fabric.ports[p as usize].up;
        for (host, port) in self.fabric.hosts_on_cable(p) {
            if self.owns_host(host) {
                self.nic.port_state(now, host, port, up, &mut FabricWire { fabric: &mut self.fabric, q: &mut self.q });
                self.drain_nic(now);
            }
        }
    }
}
