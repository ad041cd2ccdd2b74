//! How big a workload's plan will be, known before it is built.
//!
//! The run refuses a scenario whose state would not fit in memory before spending any:
//! an all-to-all over every host of a large fat tree makes hundreds of millions of
//! connections, and building their list first ran the process out of memory (an abort,
//! no message). Every workload kind answers here from its parameters alone: exactly for
//! flows, permutations, incasts and collectives' messages, as an upper bound otherwise
//! (a Poisson mix's flows, a job's or a trace's connections).

use crate::{HostSet, WorkloadKind, WorkloadSpec};

/// The connections and messages a workload's plan holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PlanSize {
    /// Connections (queue pairs between two hosts) it opens.
    pub conns: u64,
    /// Messages it posts.
    pub messages: u64,
    /// Dependencies between its messages.
    pub deps: u64,
}

/// Hosts a host set names on a fabric of `nhosts` (a count beyond the fabric is
/// refused later, when the plan is built; here it only bounds the size).
fn hosts(set: &HostSet, nhosts: u32) -> u64 {
    match set {
        HostSet::All => nhosts as u64,
        HostSet::Count(n) => (*n).min(nhosts) as u64,
        HostSet::List(list) => list.len() as u64,
    }
}

/// The size of `spec`'s plan on a fabric of `nhosts` hosts, a job's collectives split
/// over `channels` channels where it leaves that to the run.
pub fn plan_size(spec: &WorkloadSpec, nhosts: u32, channels: u32) -> PlanSize {
    match &spec.kind {
        WorkloadKind::Flows(flows) => {
            let n = flows.len() as u64;
            PlanSize { conns: n, messages: n, deps: 0 }
        }
        WorkloadKind::Permutation { hosts: set, .. } => {
            let n = hosts(set, nhosts);
            PlanSize { conns: n, messages: n, deps: 0 }
        }
        WorkloadKind::ClosedLoop(l) => {
            let clients = hosts(&l.clients, nhosts.saturating_sub(1));
            let per = l.op.conns_per_client() * l.connections as u64;
            let messages = clients * l.ops as u64 * per;
            PlanSize { conns: clients * per, messages, deps: messages }
        }
        WorkloadKind::Incast { senders, .. } => {
            // The receiver is not among the senders.
            let n = hosts(senders, nhosts.saturating_sub(1));
            PlanSize { conns: n, messages: n, deps: 0 }
        }
        WorkloadKind::Collective { hosts: set, op } => {
            // Its messages, exactly; its connections at most one per ordered pair or
            // per message (a ring's are a few per rank, all-to-all's every pair).
            let n = hosts(set, nhosts);
            let messages = op.message_count(n as u32, op.channels.unwrap_or(1));
            // A message waits for at most one per halving or doubling round and two more
            // (a tree node's children).
            let rounds = 64 - n.leading_zeros() as u64;
            PlanSize { conns: messages.min(n * n.saturating_sub(1)), messages, deps: messages * (rounds + 2) }
        }
        WorkloadKind::Job(job) => {
            let messages = job.message_count(channels);
            PlanSize { conns: messages.min(job.ranks as u64 * job.ranks as u64), messages, deps: messages }
        }
        WorkloadKind::Poisson { hosts: set, mix } => {
            let senders = match &mix.groups[..] {
                [] => hosts(set, nhosts),
                groups => groups.iter().map(|g| g.len() as u64).sum(),
            };
            // Each flow its own connection.
            let n = mix.flows_at_most(senders);
            PlanSize { conns: n, messages: n, deps: 0 }
        }
        WorkloadKind::Chakra { trace, .. } => {
            // At most a message per node (compute nodes make none).
            let n: u64 = trace.ranks.iter().map(|r| r.1.len() as u64).sum();
            PlanSize { conns: n, messages: n, deps: n }
        }
        WorkloadKind::ConstantRate(flow) => PlanSize { conns: 1, messages: flow.messages(), deps: 0 },
        WorkloadKind::Dag { flows, .. } => {
            let n = flows.len() as u64;
            PlanSize { conns: n, messages: n, deps: n }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::build;
    use fabricsim_engine::Dur;

    #[test]
    fn the_estimate_is_the_size_of_the_plan_built() {
        use crate::{Algorithm, CollectiveKind, CollectiveOp};
        let coll = |kind, algorithm, size| {
            let mut op = CollectiveOp::new(kind, size);
            op.algorithm = algorithm;
            op.channels = Some(1);
            op
        };
        let exact = [
            WorkloadKind::Flows(vec![(0, 1, 5, Dur::ZERO), (2, 3, 5, Dur::ZERO)]),
            WorkloadKind::Permutation { hosts: HostSet::All, size: 10 },
            WorkloadKind::Permutation { hosts: HostSet::Count(5), size: 10 },
            WorkloadKind::Incast { senders: HostSet::All, receiver: 3, size: 10 },
            WorkloadKind::Incast { senders: HostSet::List(vec![1, 2]), receiver: 3, size: 10 },
        ];
        let bounded = [
            WorkloadKind::Collective { hosts: HostSet::Count(7), op: coll(CollectiveKind::AllToAll, None, 10) },
            WorkloadKind::Collective { hosts: HostSet::All, op: coll(CollectiveKind::AllToAll, None, 10) },
            WorkloadKind::Collective { hosts: HostSet::Count(6), op: coll(CollectiveKind::AllReduce, None, 6000) },
            WorkloadKind::Collective {
                hosts: HostSet::Count(8),
                op: coll(CollectiveKind::AllReduce, Some(Algorithm::HalvingDoubling), 6000),
            },
        ];
        for (kind, is_exact) in exact.into_iter().map(|k| (k, true)).chain(bounded.into_iter().map(|k| (k, false))) {
            let spec = WorkloadSpec { kind, start: Dur::ZERO };
            let plan = build(std::slice::from_ref(&spec), 16, 1).unwrap();
            let deps = plan.messages.iter().map(|m| m.deps.len() as u64).sum();
            let built = PlanSize { conns: plan.conns.len() as u64, messages: plan.messages.len() as u64, deps };
            let est = plan_size(&spec, 16, 1);
            if is_exact {
                assert_eq!(est, built, "{:?}", spec.kind);
            } else {
                // A collective's messages exactly; its connections and dependencies
                // no more than estimated.
                assert_eq!(est.messages, built.messages, "{:?}", spec.kind);
                assert!(est.conns >= built.conns && est.deps >= built.deps, "{est:?} vs {built:?}");
            }
        }
    }
}
