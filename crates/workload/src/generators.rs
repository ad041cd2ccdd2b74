//! Workload generators.

use crate::{CollectiveSpec, ConnSpec, MessageSpec, Plan, WorkloadError};
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
#[derive(Clone, Debug, PartialEq, Eq)]
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
    /// Every host in `hosts` sends `size` bytes to every other.
    AllToAll {
        /// Participating hosts.
        hosts: HostSet,
        /// Bytes per pair.
        size: u64,
    },
    /// Ring all-reduce of `size` bytes per host over `hosts` (in ring order): `2(N-1)`
    /// steps of `size/N`-byte chunks; host `i` forwards step `s` after receiving step
    /// `s-1` from host `i-1`.
    AllReduce {
        /// Ring members in order.
        hosts: HostSet,
        /// Buffer size per host.
        size: u64,
    },
}

/// One workload of a scenario.
#[derive(Clone, Debug, PartialEq, Eq)]
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
fn resolve(
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

struct Builder {
    plan: Plan,
    workload: u32,
    start: Dur,
    /// Connections opened by the current workload so far.
    local: u32,
}

impl Builder {
    fn conn(&mut self, src: u32, dst: u32) -> u32 {
        self.plan.conns.push(ConnSpec { src, dst, workload: self.workload, index: self.local });
        self.local += 1;
        (self.plan.conns.len() - 1) as u32
    }
    fn message(&mut self, conn: u32, size: u64, offset: Dur, deps: Vec<u32>, collective: Option<u32>) -> u32 {
        self.plan.messages.push(MessageSpec {
            conn,
            size,
            start: self.start + offset,
            deps,
            workload: self.workload,
            collective,
        });
        (self.plan.messages.len() - 1) as u32
    }
}

/// Builds the plan of `workloads` on a fabric of `nhosts` hosts. Random choices
/// (permutations, incast senders) use a stream per workload under `seed`.
pub fn build(workloads: &[WorkloadSpec], nhosts: u32, seed: u64) -> Result<Plan, WorkloadError> {
    let mut b = Builder { plan: Plan::default(), workload: 0, start: Dur::ZERO, local: 0 };
    for (w, spec) in workloads.iter().enumerate() {
        b.workload = w as u32;
        b.start = spec.start;
        b.local = 0;
        let f = |k: &str| format!("workload[{w}].{k}");
        let mut rng = Rng::stream(seed, &[0x3011, w as u64]);
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
                    let c = b.conn(src, dst);
                    b.message(c, size, start, Vec::new(), None);
                }
            }
            WorkloadKind::Permutation { hosts, size } => {
                let hosts = resolve(hosts, nhosts, &f("hosts"), &mut rng, false, None)?;
                if hosts.len() < 2 {
                    return Err(err(f("hosts"), "a permutation needs at least 2 hosts"));
                }
                let perm = derangement(hosts.len(), &mut rng);
                for (i, &j) in perm.iter().enumerate() {
                    let c = b.conn(hosts[i], hosts[j]);
                    b.message(c, *size, Dur::ZERO, Vec::new(), None);
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
                    let c = b.conn(s, *receiver);
                    b.message(c, *size, Dur::ZERO, Vec::new(), None);
                }
            }
            WorkloadKind::AllToAll { hosts, size } => {
                let hosts = resolve(hosts, nhosts, &f("hosts"), &mut rng, false, None)?;
                if hosts.len() < 2 {
                    return Err(err(f("hosts"), "all_to_all needs at least 2 hosts"));
                }
                b.plan.collectives.push(CollectiveSpec {
                    kind: "all_to_all",
                    workload: w as u32,
                    hosts: hosts.len() as u32,
                    size: *size,
                });
                let coll = (b.plan.collectives.len() - 1) as u32;
                for &s in &hosts {
                    for &d in &hosts {
                        if s != d {
                            let c = b.conn(s, d);
                            b.message(c, *size, Dur::ZERO, Vec::new(), Some(coll));
                        }
                    }
                }
            }
            WorkloadKind::AllReduce { hosts, size } => {
                let hosts = resolve(hosts, nhosts, &f("hosts"), &mut rng, false, None)?;
                let n = hosts.len();
                if n < 2 {
                    return Err(err(f("hosts"), "all_reduce needs at least 2 hosts"));
                }
                if *size < n as u64 {
                    // Each step moves size/N: at least a byte per host.
                    return Err(err(
                        f("size"),
                        format!("must be at least the number of hosts ({n}): each step moves size/N bytes, got {size}"),
                    ));
                }
                b.plan.collectives.push(CollectiveSpec {
                    kind: "all_reduce",
                    workload: w as u32,
                    hosts: n as u32,
                    size: *size,
                });
                let coll = (b.plan.collectives.len() - 1) as u32;
                let chunk = size.div_ceil(n as u64);
                let ring: Vec<u32> = (0..n).map(|i| b.conn(hosts[i], hosts[(i + 1) % n])).collect();
                let mut prev: Vec<u32> = Vec::new();
                for step in 0..2 * (n - 1) {
                    let cur: Vec<u32> = (0..n)
                        .map(|i| {
                            let deps = if step == 0 { Vec::new() } else { vec![prev[(i + n - 1) % n]] };
                            b.message(ring[i], chunk, Dur::ZERO, deps, Some(coll))
                        })
                        .collect();
                    prev = cur;
                }
            }
        }
    }
    for (i, m) in b.plan.messages.iter().enumerate() {
        if m.size == 0 {
            return Err(err(format!("workload[{}].size", m.workload), "must be at least 1 byte"));
        }
        debug_assert!(m.deps.iter().all(|&d| (d as usize) < i), "dependencies point backwards");
    }
    Ok(b.plan)
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
        let p = one(WorkloadKind::AllReduce { hosts: HostSet::Count(4), size: 4000 }).unwrap();
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
        let e = one(WorkloadKind::AllToAll { hosts: HostSet::Count(40), size: 1 }).unwrap_err();
        assert!(e.to_string().contains("only 16 are available"), "{e}");
        let e = one(WorkloadKind::Permutation { hosts: HostSet::List(vec![1, 1]), size: 1 }).unwrap_err();
        assert!(e.to_string().contains("listed twice"), "{e}");
    }
}
