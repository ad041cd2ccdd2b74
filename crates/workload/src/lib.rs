//! The workload layer: who sends what to whom, and when.
//!
//! Every workload becomes a [`Plan`]: a list of messages (RDMA WRITEs), the
//! connections (queue pairs) they travel on, and dependencies between messages. A
//! message starts at its own start time, once every message it depends on has been
//! *received* and, per dependency, a gap after that (the compute a rank does between
//! receiving data and sending the next): a [`TimePoint`] is exactly such a "latest of a
//! time and some receipts plus gaps". This is enough for independent flows, for
//! collectives whose steps wait for data (a ring all-reduce step forwards the chunk it
//! just received), and for training jobs whose compute sits between collectives.
//!
//! Connections matter: messages posted on one connection share its queue pair, its
//! PSN space and its congestion state, as a collective library's persistent QPs do.
//! Independent flows get a connection each.
//!
//! Modules:
//! * [`generators`](crate::build): flows, permutation, incast and the collective workloads.
//! * [`collectives`]: every collective as a message DAG (ring, double binary tree,
//!   halving-doubling, direct, dissemination), split over channels and pipelined in
//!   chunks, with nccl-tests' bus-bandwidth factors.
//! * [`jobs`]: training jobs: placement, parallelism groups, iterations of compute
//!   and collectives, stragglers, pipeline stages, on/off bursts.
//! * [`closed_loop`]: clients in a closed loop with one server (StaR's message rate
//!   and RPC evaluations).
//! * [`mix`]: Poisson flow arrivals with sizes from a CDF (WebSearch, FB Hadoop,
//!   AliStorage, or a user's) at a target load.
//! * [`startup`]: job start-up in secure containers (STELLAR's PVDMA against pin-all,
//!   the doorbell hazard, SR-IOV VFs against vSTELLAR devices).
//! * [`traces`]: htsim connection matrices (and Chakra execution traces) as flows with
//!   dependencies.
//! * [`timepoint`](TimePoint): the time algebra dependencies are written in.
//!
//! * `estimate`: [`plan_size`], the size of a workload's plan before it is built
//!   (memory checks).
//!
//! The layer knows only host indices; it never sees the fabric.

mod builder;
pub mod closed_loop;
pub mod collectives;
mod estimate;
mod generators;
pub mod jobs;
pub mod mix;
pub mod startup;
mod timepoint;
pub mod traces;

pub use closed_loop::{ClosedLoop, Operation};
pub use collectives::{Algorithm, CollectiveKind, CollectiveOp};
pub use estimate::{plan_size, PlanSize};
pub use generators::{build, build_with, HostSet, Pin, RateFlow, WorkloadKind, WorkloadSpec};
pub use jobs::{Group, Job, JobComm, OnOff, Pace, Placement};
pub use timepoint::TimePoint;

use fabricsim_engine::Dur;
use thiserror::Error;

/// One application message, or a *mark*.
///
/// A mark (`size == 0`) is a point of a rank's timeline, such as "its compute for
/// iteration 3 is done": it is reached the moment its dependencies (with their gaps)
/// are, sends nothing, and lets a long [`TimePoint`] be named once instead of being
/// repeated in every message that waits for it. Its connection is one leaving the
/// rank's host (the run learns the host from it); it is no flow in the results.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MessageSpec {
    /// Index of the connection it is posted on.
    pub conn: u32,
    /// Bytes to write (0: a mark).
    pub size: u64,
    /// Earliest start, relative to the run's start.
    pub start: Dur,
    /// Messages (indices) that must be received before this one starts.
    pub deps: Vec<u32>,
    /// Per dependency (same order as `deps`), how long after it is received this
    /// message may start at the earliest; empty when every gap is zero.
    pub after: Vec<Dur>,
    /// The workload that produced it.
    pub workload: u32,
    /// The collective it belongs to, if any (index into [`Plan::collectives`]).
    pub collective: Option<u32>,
    /// Its dependents are released when it is acknowledged at its sender rather than
    /// when it is received: a closed-loop client issues its next WRITE once the last
    /// has completed at the client.
    pub on_ack: bool,
}

impl MessageSpec {
    /// Whether it is a mark, not a message (see [`MessageSpec`]).
    #[inline]
    pub fn is_mark(&self) -> bool {
        self.size == 0
    }

    /// The gap after dependency number `i` (see [`MessageSpec::after`]).
    #[inline]
    pub fn gap(&self, i: usize) -> Dur {
        self.after.get(i).copied().unwrap_or(Dur::ZERO)
    }
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
    /// For a transport that puts a QP on one NIC port: the port of its first QP
    /// (modulo the ports), as a collective library pins channel `c` to rail `c`.
    /// `None`: spread by connection number.
    pub port: Option<u32>,
    /// Every message on it reads and writes the same buffer, the connection's (a
    /// benchmark loop's), rather than one of its own.
    pub reuse_buffer: bool,
}

/// A collective operation, reported as one record.
#[derive(Clone, Debug, PartialEq)]
pub struct CollectiveSpec {
    /// `all_reduce`, `all_gather`, ... (see [`CollectiveKind::name`]).
    pub kind: &'static str,
    /// `ring`, `tree`, ... (see [`Algorithm::name`]).
    pub algorithm: &'static str,
    /// The workload that produced it.
    pub workload: u32,
    /// Participating hosts.
    pub hosts: u32,
    /// nccl-tests' size: the bytes its algorithm bandwidth divides (the all-reduce,
    /// broadcast and reduce buffer, the all-gather output and reduce-scatter input
    /// buffers, the root's whole gather or scatter buffer, an all-to-all rank's whole
    /// send buffer; 0 for a barrier).
    pub size: u64,
    /// Channels it was split over.
    pub channels: u32,
    /// nccl-tests' bus-bandwidth factor: busbw = algbw x this.
    pub bus_factor: f64,
    /// The job and iteration it belongs to, if any.
    pub job: Option<(u32, u32)>,
}

/// One iteration of a job, as the results report it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IterationRecord {
    /// The burst it belongs to (on/off jobs; 0 otherwise).
    pub burst: u32,
    /// When each rank starts it.
    pub starts: Vec<TimePoint>,
    /// When each rank ends it (its compute done and its part of every collective and
    /// pipeline transfer of the iteration).
    pub ends: Vec<TimePoint>,
    /// The slowest rank's compute time in the iteration.
    pub compute: Dur,
    /// Its collectives (indices into [`Plan::collectives`]).
    pub collectives: Vec<u32>,
    /// Its pipeline-parallel transfers (message indices).
    pub transfers: Vec<u32>,
}

/// A job, as the results report it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct JobRecord {
    /// Its name.
    pub name: String,
    /// The workload index it occupies.
    pub workload: u32,
    /// The host of each rank.
    pub hosts: Vec<u32>,
    /// Its iterations, in order.
    pub iterations: Vec<IterationRecord>,
    /// Its ranks' start-up before the first iteration.
    pub startup: Dur,
    /// The 2 MiB blocks each rank registers for DMA.
    pub blocks: u64,
}

/// A closed-loop workload's operations, as the results report them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LoopRecord {
    /// The workload.
    pub workload: u32,
    /// `message_rate` or `rpc`.
    pub kind: &'static str,
    /// Its clients.
    pub clients: u32,
    /// Per operation, the message that starts it and the one that ends it (a WRITE:
    /// the same; a call: its request and its reply).
    pub ops: Vec<(u32, u32)>,
    /// An operation ends when its last message is acknowledged at its sender (else
    /// when it is received).
    pub on_ack: bool,
}

/// Everything the run needs to know about the traffic.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Plan {
    /// Connections, indexed by [`MessageSpec::conn`].
    pub conns: Vec<ConnSpec>,
    /// Messages; their index is the flow id in the results.
    pub messages: Vec<MessageSpec>,
    /// Collectives.
    pub collectives: Vec<CollectiveSpec>,
    /// Jobs.
    pub jobs: Vec<JobRecord>,
    /// Closed-loop workloads.
    pub loops: Vec<LoopRecord>,
    /// Multishot triggers: releases decided by the order messages complete.
    pub shots: Vec<Shot>,
}

/// A multishot trigger, as htsim's connection matrices have them: the `k`-th time
/// one of `activators` completes (is received, or acknowledged for one marked
/// [`MessageSpec::on_ack`]), `targets[k]` is released; completions beyond the last
/// target release nothing. Which message completes `k`-th is learnt during the run,
/// so a target waits for the trigger on top of its `deps` (the run counts one more
/// dependency for each), and a target may itself be an activator (a pool of
/// transfers with a fixed number in flight). The workload layer refuses a trigger
/// with more targets than completions can ever start.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Shot {
    /// Messages whose completions activate it.
    pub activators: Vec<u32>,
    /// Messages it releases, one per activation, in this order.
    pub targets: Vec<u32>,
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

/// A [`WorkloadError::Invalid`].
pub(crate) fn invalid(field: impl Into<String>, message: impl Into<String>) -> WorkloadError {
    WorkloadError::Invalid { field: field.into(), message: message.into() }
}
