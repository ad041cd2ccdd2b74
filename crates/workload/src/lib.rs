//! The workload layer: who sends what to whom, and when.
//!
//! Every workload becomes a [`Plan`]: a list of messages (RDMA WRITEs), the
//! connections (queue pairs) they travel on, and dependencies between messages. A
//! message starts at its workload's start time plus its own offset, once every message
//! it depends on has been *received*. This is enough for independent flows and for
//! collectives whose steps wait for data (a ring all-reduce step forwards the chunk
//! it just received).
//!
//! Connections matter: messages posted on one connection share its queue pair, its
//! PSN space and its congestion state, as a collective library's persistent QPs do.
//! Independent flows get a connection each.
//!
//! The layer knows only host indices; it never sees the fabric.
//!
//! * `generators`: [`build`], every workload kind's messages.
//! * `estimate`: [`plan_size`], the size of a plan before it is built (memory checks).

mod estimate;
mod generators;

pub use estimate::{plan_size, PlanSize};
pub use generators::{build, HostSet, WorkloadKind, WorkloadSpec};

use fabricsim_engine::Dur;
use thiserror::Error;

/// One application message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MessageSpec {
    /// Index of the connection it is posted on.
    pub conn: u32,
    /// Bytes to write.
    pub size: u64,
    /// Earliest start, relative to the run's start.
    pub start: Dur,
    /// Messages (indices) that must be received before this one starts.
    pub deps: Vec<u32>,
    /// The workload that produced it.
    pub workload: u32,
    /// The collective it belongs to, if any (index into [`Plan::collectives`]).
    pub collective: Option<u32>,
}

/// A connection (queue pair) between two hosts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConnSpec {
    /// Sending host.
    pub src: u32,
    /// Receiving host.
    pub dst: u32,
    /// The workload that opened it.
    pub workload: u32,
    /// Its number within that workload: with `workload`, the key of its random
    /// stream, so connections of other workloads never shift it.
    pub index: u32,
}

/// A collective operation, reported as one record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CollectiveSpec {
    /// `all_reduce` or `all_to_all`.
    pub kind: &'static str,
    /// The workload that produced it.
    pub workload: u32,
    /// Participating hosts.
    pub hosts: u32,
    /// Bytes per host (the all-reduce buffer, or the per-peer size of all-to-all).
    pub size: u64,
}

/// Everything the run needs to know about the traffic.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Plan {
    /// Connections, indexed by [`MessageSpec::conn`].
    pub conns: Vec<ConnSpec>,
    /// Messages; their index is the flow id in the results.
    pub messages: Vec<MessageSpec>,
    /// Collectives.
    pub collectives: Vec<CollectiveSpec>,
}

/// A workload that cannot be built.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum WorkloadError {
    /// A parameter is out of range.
    #[error("{field}: {message}")]
    Invalid {
        /// The scenario key at fault, e.g. `workload[1].receiver`.
        field: String,
        /// What is wrong and what is allowed.
        message: String,
    },
}
