//! How big a workload's plan will be, known before it is built.
//!
//! The run refuses a scenario whose state would not fit in memory before spending any:
//! an all-to-all over every host of a large fat tree makes hundreds of millions of
//! connections, and building their list first ran the process out of memory (an abort,
//! no message). Every workload kind answers here, exactly, from its parameters alone.

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

/// The size of `spec`'s plan on a fabric of `nhosts` hosts.
pub fn plan_size(spec: &WorkloadSpec, nhosts: u32) -> PlanSize {
    match &spec.kind {
        WorkloadKind::Flows(flows) => {
            let n = flows.len() as u64;
            PlanSize { conns: n, messages: n, deps: 0 }
        }
        WorkloadKind::Permutation { hosts: set, .. } => {
            let n = hosts(set, nhosts);
            PlanSize { conns: n, messages: n, deps: 0 }
        }
        WorkloadKind::Incast { senders, .. } => {
            // The receiver is not among the senders.
            let n = hosts(senders, nhosts.saturating_sub(1));
            PlanSize { conns: n, messages: n, deps: 0 }
        }
        WorkloadKind::AllToAll { hosts: set, .. } => {
            let n = hosts(set, nhosts);
            let pairs = n * n.saturating_sub(1);
            PlanSize { conns: pairs, messages: pairs, deps: 0 }
        }
        WorkloadKind::AllReduce { hosts: set, .. } => {
            // A connection to each ring neighbour; 2(N-1) steps of N messages, each
            // but the first step's waiting for one.
            let n = hosts(set, nhosts);
            let steps = 2 * n.saturating_sub(1);
            PlanSize { conns: n, messages: n * steps, deps: n * steps.saturating_sub(1) }
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
        let kinds = [
            WorkloadKind::Flows(vec![(0, 1, 5, Dur::ZERO), (2, 3, 5, Dur::ZERO)]),
            WorkloadKind::Permutation { hosts: HostSet::All, size: 10 },
            WorkloadKind::Permutation { hosts: HostSet::Count(5), size: 10 },
            WorkloadKind::Incast { senders: HostSet::All, receiver: 3, size: 10 },
            WorkloadKind::Incast { senders: HostSet::List(vec![1, 2]), receiver: 3, size: 10 },
            WorkloadKind::AllToAll { hosts: HostSet::Count(7), size: 10 },
            WorkloadKind::AllToAll { hosts: HostSet::All, size: 10 },
            WorkloadKind::AllReduce { hosts: HostSet::Count(6), size: 6000 },
            WorkloadKind::AllReduce { hosts: HostSet::List(vec![4, 2, 9]), size: 6000 },
        ];
        for kind in kinds {
            let spec = WorkloadSpec { kind, start: Dur::ZERO };
            let plan = build(std::slice::from_ref(&spec), 16, 1).unwrap();
            let deps = plan.messages.iter().map(|m| m.deps.len() as u64).sum();
            let built = PlanSize { conns: plan.conns.len() as u64, messages: plan.messages.len() as u64, deps };
            assert_eq!(plan_size(&spec, 16), built, "{:?}", spec.kind);
        }
    }
}
