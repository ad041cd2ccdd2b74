//! Workload generators.

use crate::builder::Builder;
use crate::collectives::{self, CollectiveOp};
use crate::jobs::{self, Job};
use crate::mix::PoissonMix;
use crate::traces::{chakra, check_shots, topological_order, DagFlow, MultiShot};
use crate::{Plan, TimePoint, WorkloadError};
use fabricsim_engine::{Dur, Rng};

/// A set of hosts: all of them, the first `n`, or an explicit list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HostSet {
    /// Every host of the fabric.
    All,
    /// `n` hosts (the first `n`, or `n` chosen at random where the workload says so).
    Count(u32),
    /// These hosts, in this order.
    List(Vec<u32>),
}

/// What a workload generates.
#[derive(Clone, Debug, PartialEq)]
pub enum WorkloadKind {
    /// Explicit flows: `(src, dst, size, start)`.
    Flows(Vec<(u32, u32, u64, Dur)>),
    /// Every host in `hosts` sends `size` bytes to a distinct other host, a uniformly
    /// random derangement.
    Permutation {
        /// Participating hosts.
        hosts: HostSet,
        /// Bytes per flow.
        size: u64,
    },
    /// Senders to one receiver. A count picks that many distinct hosts at random.
    Incast {
        /// Sending hosts.
        senders: HostSet,
        /// Receiving host.
        receiver: u32,
        /// Bytes per sender.
        size: u64,
    },
    /// One collective over `hosts` (rank `i` on the `i`-th host; see
    /// [`collectives`](crate::collectives)).
    Collective {
        /// The ranks' hosts, in rank order.
        hosts: HostSet,
        /// The operation.
        op: CollectiveOp,
    },
    /// A training job (see [`jobs`](crate::jobs)).
    Job(Box<Job>),
    /// Flows arriving as a Poisson process at a target load, sizes from a CDF (see
    /// [`mix`](crate::mix)), among `hosts` (or within the mix's groups).
    Poisson {
        /// The senders and receivers (unless the mix has groups).
        hosts: HostSet,
        /// The mix.
        mix: PoissonMix,
    },
    /// A Chakra execution trace, replayed as a job (see [`chakra`](crate::traces::chakra)).
    Chakra {
        /// Its name in the results.
        name: String,
        /// Its ranks' nodes and hosts.
        trace: Box<chakra::Trace>,
    },
    /// Clients in a closed loop with one server (see [`closed_loop`](crate::closed_loop)).
    ClosedLoop(crate::ClosedLoop),
    /// Background traffic: one flow at a fixed rate, optionally on and off.
    ConstantRate(RateFlow),
    /// Flows with dependencies, from a trace file (see [`traces`](crate::traces)),
    /// in any order.
    Dag {
        /// The flows.
        flows: Vec<DagFlow>,
        /// Multishot triggers among them (htsim's), flows as indices into `flows`.
        shots: Vec<MultiShot>,
        /// The key of the file they come from, and its name, for errors
        /// (`("workload[0].file", "traffic.cm")`).
        source: (String, String),
    },
}

/// A flow at a fixed rate from `src` to `dst`: a message of `message` bytes every
/// `message x 8 / rate` seconds for `duration` after the workload's start, posted
/// whether or not the ones before have arrived (it does not back off). With `on_off`
/// `(period, duty)` only the messages that fall in the first `duty` of each period
/// are sent.
#[derive(Clone, Debug, PartialEq)]
pub struct RateFlow {
    /// Sending host.
    pub src: u32,
    /// Receiving host.
    pub dst: u32,
    /// Bits per second.
    pub rate: fabricsim_engine::Rate,
    /// How long it runs.
    pub duration: Dur,
    /// Bytes per message.
    pub message: u64,
    /// On/off bursts: `(period, duty)`.
    pub on_off: Option<(Dur, f64)>,
    /// The path it is pinned to (the run resolves it; `None`: its QP's own port).
    pub pin: Option<Pin>,
}

/// How a constant-rate flow is pinned to one path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Pin {
    /// This UDP source port (the entropy ECMP hashes).
    Sport(u16),
    /// A source port whose ECMP path crosses the switch of this name.
    Via(String),
}

impl RateFlow {
    /// When each message starts, after the workload's start.
    pub fn starts(&self) -> impl Iterator<Item = Dur> + '_ {
        // Picoseconds between messages, exactly (the rate is in bits per second).
        let gap = self.message as u128 * 8 * 1_000_000_000_000 / self.rate.bps().max(1) as u128;
        let gap = gap.max(1) as u64;
        (0..).map(move |k: u64| Dur(k * gap)).take_while(|t| *t < self.duration).filter(|t| match self.on_off {
            None => true,
            Some((period, duty)) => ((t.ps() % period.ps().max(1)) as f64) < duty * period.ps() as f64,
        })
    }

    /// Messages it makes.
    pub fn messages(&self) -> u64 {
        let gap = (self.message as u128 * 8 * 1_000_000_000_000 / self.rate.bps().max(1) as u128).max(1);
        (self.duration.ps() as u128).div_ceil(gap) as u64
    }
}

/// One workload of a scenario.
#[derive(Clone, Debug, PartialEq)]
pub struct WorkloadSpec {
    /// What it generates.
    pub kind: WorkloadKind,
    /// Start offset of every message of this workload.
    pub start: Dur,
}

fn err(field: String, message: impl Into<String>) -> WorkloadError {
    WorkloadError::Invalid { field, message: message.into() }
}

/// Resolves a host set against `nhosts`; `random` picks counts at random.
pub(crate) fn resolve(
    set: &HostSet,
    nhosts: u32,
    field: &str,
    rng: &mut Rng,
    random: bool,
    exclude: Option<u32>,
) -> Result<Vec<u32>, WorkloadError> {
    let pool: Vec<u32> = (0..nhosts).filter(|h| Some(*h) != exclude).collect();
    match set {
        HostSet::All => Ok(pool),
        HostSet::Count(n) => {
            if *n as usize > pool.len() {
                return Err(err(field.into(), format!("{n} hosts requested but only {} are available", pool.len())));
            }
            if random {
                let mut p = pool;
                rng.shuffle(&mut p);
                p.truncate(*n as usize);
                Ok(p)
            } else {
                Ok(pool[..*n as usize].to_vec())
            }
        }
        HostSet::List(list) => {
            let mut seen = vec![false; nhosts as usize];
            for &h in list {
                if h >= nhosts {
                    return Err(err(
                        field.into(),
                        format!("host {h} does not exist (hosts are 0..{})", nhosts.saturating_sub(1)),
                    ));
                }
                if Some(h) == exclude {
                    return Err(err(field.into(), format!("host {h} cannot be both a sender and the receiver")));
                }
                if std::mem::replace(&mut seen[h as usize], true) {
                    return Err(err(field.into(), format!("host {h} is listed twice")));
                }
            }
            Ok(list.clone())
        }
    }
}

/// Builds the plan of `workloads` on a fabric of `nhosts` hosts, every collective on
/// one channel unless it names its own. Random choices (permutations, incast senders)
/// use a stream per workload under `seed`.
pub fn build(workloads: &[WorkloadSpec], nhosts: u32, seed: u64) -> Result<Plan, WorkloadError> {
    build_with(workloads, nhosts, seed, &[])
}

/// [`build`], with `auto_channels[w]` the channels of workload `w`'s collectives that
/// leave them to the run (1 beyond the list).
pub fn build_with(
    workloads: &[WorkloadSpec],
    nhosts: u32,
    seed: u64,
    auto_channels: &[u32],
) -> Result<Plan, WorkloadError> {
    let mut b = Builder::default();
    for (w, spec) in workloads.iter().enumerate() {
        b.begin(w as u32);
        let f = |k: &str| format!("workload[{w}].{k}");
        let mut rng = Rng::stream(seed, &[0x3011, w as u64]);
        let at = TimePoint::at(spec.start);
        match &spec.kind {
            WorkloadKind::Flows(flows) => {
                if flows.is_empty() {
                    return Err(err(f("flows"), "at least one flow is required"));
                }
                for (i, &(src, dst, size, start)) in flows.iter().enumerate() {
                    let ff = |k: &str| format!("workload[{w}].flows[{i}].{k}");
                    for (k, h) in [("src", src), ("dst", dst)] {
                        if h >= nhosts {
                            return Err(err(ff(k), format!("host {h} does not exist (hosts are 0..{})", nhosts - 1)));
                        }
                    }
                    if src == dst {
                        return Err(err(ff("dst"), "a flow needs two different hosts"));
                    }
                    let c = b.conn(src, dst, None);
                    b.message(c, size, &at.plus(start), &[], None);
                }
            }
            WorkloadKind::Permutation { hosts, size } => {
                let hosts = resolve(hosts, nhosts, &f("hosts"), &mut rng, false, None)?;
                if hosts.len() < 2 {
                    return Err(err(f("hosts"), "a permutation needs at least 2 hosts"));
                }
                let perm = derangement(hosts.len(), &mut rng);
                for (i, &j) in perm.iter().enumerate() {
                    let c = b.conn(hosts[i], hosts[j], None);
                    b.message(c, *size, &at, &[], None);
                }
            }
            WorkloadKind::Incast { senders, receiver, size } => {
                if *receiver >= nhosts {
                    return Err(err(
                        f("receiver"),
                        format!("host {receiver} does not exist (hosts are 0..{})", nhosts - 1),
                    ));
                }
                let senders = resolve(senders, nhosts, &f("senders"), &mut rng, true, Some(*receiver))?;
                if senders.is_empty() {
                    return Err(err(f("senders"), "at least one sender is required"));
                }
                for s in senders {
                    let c = b.conn(s, *receiver, None);
                    b.message(c, *size, &at, &[], None);
                }
            }
            WorkloadKind::Collective { hosts, op } => {
                let hosts = resolve(hosts, nhosts, &f("hosts"), &mut rng, false, None)?;
                let entry = vec![at.clone(); hosts.len()];
                let cx = collectives::Ctx {
                    comm: 0,
                    field: &format!("workload[{w}]"),
                    auto_channels: auto_channels.get(w).copied().unwrap_or(1),
                    job: None,
                };
                collectives::expand(&mut b, op, &hosts, &entry, &cx)?;
            }
            WorkloadKind::ConstantRate(flow) => {
                for (side, h) in [("src", flow.src), ("dst", flow.dst)] {
                    if h >= nhosts {
                        return Err(err(f(side), format!("host {h} does not exist (hosts are 0..{})", nhosts - 1)));
                    }
                }
                if flow.src == flow.dst {
                    return Err(err(f("dst"), "must differ from src"));
                }
                let c = b.conn(flow.src, flow.dst, None);
                for t in flow.starts() {
                    b.message(c, flow.message, &at.plus(t), &[], None);
                }
            }
            WorkloadKind::Dag { flows, shots, source } => {
                let bad = |m: String| err(source.0.clone(), format!("{}: {m}", source.1));
                for f in flows {
                    for (side, h) in [("src", f.src), ("dst", f.dst)] {
                        if h >= nhosts {
                            return Err(bad(format!(
                                "{}, {side}: host {h} does not exist (hosts are 0..{})",
                                f.origin,
                                nhosts - 1
                            )));
                        }
                    }
                }
                let order = topological_order(flows).map_err(bad)?;
                check_shots(flows, shots).map_err(bad)?;
                let mut id = vec![u32::MAX; flows.len()];
                for i in order {
                    let f = &flows[i as usize];
                    let mut tp = at.plus(f.start);
                    for &(d, gap) in &f.deps {
                        tp.merge(&TimePoint { at: Dur::ZERO, after: vec![(id[d as usize], gap)] });
                    }
                    let c = b.conn(f.src, f.dst, None);
                    id[i as usize] = b.message(c, f.size, &tp, &[], None);
                    if f.on_ack {
                        b.release_on_ack(id[i as usize]);
                    }
                }
                for shot in shots {
                    let ids = |l: &[u32]| -> Vec<u32> { l.iter().map(|&i| id[i as usize]).collect() };
                    b.plan.shots.push(crate::Shot { activators: ids(&shot.activators), targets: ids(&shot.targets) });
                }
            }
            WorkloadKind::Poisson { hosts, mix } => {
                let hosts = resolve(hosts, nhosts, &f("hosts"), &mut rng, false, None)?;
                for (g, members) in mix.groups.iter().enumerate() {
                    resolve(
                        &HostSet::List(members.clone()),
                        nhosts,
                        &format!("workload[{w}].groups[{g}]"),
                        &mut rng,
                        false,
                        None,
                    )?;
                }
                if mix.groups.is_empty() && hosts.len() < 2 {
                    return Err(err(f("hosts"), "a traffic mix needs at least 2 hosts"));
                }
                debug_assert!(mix.link_bps > 0, "the run sets the link rate");
                for (src, dst, size, start) in mix.flows(&hosts, seed, w as u64, &format!("workload[{w}]"))? {
                    let c = b.conn(src, dst, None);
                    b.message(c, size, &at.plus(start), &[], None);
                }
            }
            WorkloadKind::Chakra { name, trace } => {
                for (r, (file, _, h)) in trace.ranks.iter().enumerate() {
                    if *h >= nhosts {
                        return Err(err(
                            trace.key.clone(),
                            format!(
                                "{file}: rank {r} is placed on host {h}, which does not exist (hosts are 0..{})",
                                nhosts - 1
                            ),
                        ));
                    }
                }
                let j = b.plan.jobs.len() as u32;
                let auto = auto_channels.get(w).copied().unwrap_or(1);
                let rec = chakra::build(&mut b, trace, j, name, spec.start, auto)?;
                b.plan.jobs.push(rec);
            }
            WorkloadKind::Job(job) => {
                let j = b.plan.jobs.len() as u32;
                let auto = auto_channels.get(w).copied().unwrap_or(1);
                let rec = jobs::build(&mut b, job, j, spec.start, nhosts, seed, auto)?;
                b.plan.jobs.push(rec);
            }
            WorkloadKind::ClosedLoop(spec) => {
                let rec = crate::closed_loop::build(&mut b, spec, &at, nhosts, &f)?;
                b.plan.loops.push(rec);
            }
        }
        b.finish(nhosts);
    }
    check_devices(workloads, &b.plan)?;
    for (i, m) in b.plan.messages.iter().enumerate() {
        // Every message moves a byte at least (sizes are checked as they are read);
        // the empty ones are marks.
        debug_assert!(m.deps.iter().all(|&d| (d as usize) < i), "dependencies point backwards");
        debug_assert!((m.conn as usize) < b.plan.conns.len(), "every message and mark has a connection");
    }
    Ok(b.plan)
}

/// Refuses more containers on a host than its virtual devices allow: every rank of
/// every job is a container, and a job that models its devices must fit beside the
/// others on its hosts (or the count it gives).
fn check_devices(workloads: &[WorkloadSpec], plan: &Plan) -> Result<(), WorkloadError> {
    let mut per_host: std::collections::BTreeMap<u32, u32> = std::collections::BTreeMap::new();
    for rec in &plan.jobs {
        for &h in &rec.hosts {
            *per_host.entry(h).or_default() += 1;
        }
    }
    let jobs = workloads.iter().filter_map(|w| match &w.kind {
        WorkloadKind::Job(j) => Some(j),
        _ => None,
    });
    for (job, rec) in
        jobs.zip(plan.jobs.iter().filter(|r| matches!(workloads[r.workload as usize].kind, WorkloadKind::Job(_))))
    {
        let Some(s) = &job.startup else { continue };
        let Some((cap, why)) = s.capacity() else { continue };
        for &h in &rec.hosts {
            let n = s.containers_per_host.unwrap_or(per_host[&h]);
            if n > cap {
                return Err(err(
                    format!("{}.startup.device", job.key),
                    format!("host {h} would hold {n} containers: {why}"),
                ));
            }
        }
    }
    Ok(())
}

/// A uniformly random permutation of `0..n` without fixed points (rejection sampling:
/// about e shuffles on average).
fn derangement(n: usize, rng: &mut Rng) -> Vec<usize> {
    let mut p: Vec<usize> = (0..n).collect();
    loop {
        rng.shuffle(&mut p);
        if p.iter().enumerate().all(|(i, &j)| i != j) {
            return p;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::CollectiveKind;

    fn one(kind: WorkloadKind) -> Result<Plan, WorkloadError> {
        build(&[WorkloadSpec { kind, start: Dur::ZERO }], 16, 1)
    }

    #[test]
    fn permutation_sends_each_host_to_another_distinct_host() {
        let p = one(WorkloadKind::Permutation { hosts: HostSet::All, size: 10 }).unwrap();
        assert_eq!(p.messages.len(), 16);
        let mut dsts: Vec<u32> = p.conns.iter().map(|c| c.dst).collect();
        assert!(p.conns.iter().all(|c| c.src != c.dst));
        dsts.sort();
        assert_eq!(dsts, (0..16).collect::<Vec<_>>());
    }

    #[test]
    fn permutations_differ_by_seed_and_repeat_by_seed() {
        let spec =
            [WorkloadSpec { kind: WorkloadKind::Permutation { hosts: HostSet::All, size: 1 }, start: Dur::ZERO }];
        let a = build(&spec, 64, 1).unwrap();
        assert_eq!(a, build(&spec, 64, 1).unwrap());
        assert_ne!(a, build(&spec, 64, 2).unwrap());
    }

    #[test]
    fn incast_picks_distinct_senders_other_than_the_receiver() {
        let p = one(WorkloadKind::Incast { senders: HostSet::Count(15), receiver: 3, size: 10 }).unwrap();
        let mut srcs: Vec<u32> = p.conns.iter().map(|c| c.src).collect();
        srcs.sort();
        assert_eq!(srcs, (0..16).filter(|&h| h != 3).collect::<Vec<_>>());
        assert!(p.conns.iter().all(|c| c.dst == 3));
    }

    #[test]
    fn ring_all_reduce_has_2n_minus_2_dependent_steps_on_n_connections() {
        let op = CollectiveOp::new(CollectiveKind::AllReduce, 4000);
        let p = one(WorkloadKind::Collective { hosts: HostSet::Count(4), op }).unwrap();
        assert_eq!(p.conns.len(), 4);
        assert_eq!(p.messages.len(), 4 * 6);
        assert!(p.messages.iter().all(|m| m.size == 1000));
        // Step 1 of host 2 waits for step 0 of host 1.
        assert_eq!(p.messages[4 + 2].deps, vec![1]);
        assert_eq!(p.messages[4 + 2].conn, 2);
        assert!(p.messages[..4].iter().all(|m| m.deps.is_empty()));
    }

    #[test]
    fn bad_hosts_are_refused_with_the_field_named() {
        let e = one(WorkloadKind::Incast { senders: HostSet::Count(3), receiver: 99, size: 1 }).unwrap_err();
        assert_eq!(e.to_string(), "workload[0].receiver: host 99 does not exist (hosts are 0..15)");
        let e = one(WorkloadKind::Flows(vec![(0, 0, 5, Dur::ZERO)])).unwrap_err();
        assert!(e.to_string().starts_with("workload[0].flows[0].dst"), "{e}");
        let op = CollectiveOp::new(CollectiveKind::AllToAll, 1);
        let e = one(WorkloadKind::Collective { hosts: HostSet::Count(40), op }).unwrap_err();
        assert!(e.to_string().contains("only 16 are available"), "{e}");
        let e = one(WorkloadKind::Permutation { hosts: HostSet::List(vec![1, 1]), size: 1 }).unwrap_err();
        assert!(e.to_string().contains("listed twice"), "{e}");
    }
}
