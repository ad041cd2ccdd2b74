//! Collectives as message DAGs, the way NCCL and MPI move the data.
//!
//! A collective over `n` ranks (hosts, in rank order) is split over `channels`
//! independent instances of its algorithm, each carrying its share of the buffer on
//! its own connections (channel `c` on NIC port `c`, as NCCL gives each channel a
//! rail); within a channel, pipelined algorithms cut each step into `chunk`-sized
//! pieces that move on as soon as they arrive. Every message a rank sends waits for
//! the rank's *entry* [`TimePoint`] (its compute done, its previous collective over)
//! and for the data it forwards; a rank is *done* once the last message on each
//! connection into it has arrived (or, for a rank that receives nothing, such as a
//! broadcast's root, once the last on each connection out of it has).
//!
//! | kind | algorithms (default first) | messages per channel (power-of-two `n`) |
//! |---|---|---|
//! | all_reduce | ring, tree (NCCL's double binary tree), halving_doubling (Rabenseifner) | `n 2(n-1)`, `4(n-1)` per piece, `n 2 log2 n` |
//! | all_gather | ring, halving_doubling (recursive doubling) | `n (n-1)`, `n log2 n` |
//! | reduce_scatter | ring, halving_doubling (recursive halving) | `n (n-1)`, `n log2 n` |
//! | broadcast | ring (a pipelined chain from the root) | `n-1` per piece |
//! | reduce | ring (a pipelined chain ending at the root) | `n-1` per piece |
//! | gather, scatter | direct (every rank with the root at once) | `n-1` |
//! | all_to_all, all_to_allv | direct (every pair at once) | `n (n-1)` |
//! | barrier | dissemination | `n ceil(log2 n)` |
//!
//! Reduce and broadcast run NCCL's only algorithm for them, the ring's pipelined chain;
//! gather and scatter, which NCCL has no kernel for, run as nccl-tests runs them (a
//! group of sends and receives between the root and every other rank at once, MPI's
//! linear algorithm), not as MPI's binomial tree for small messages.
//!
//! The modules: [`ring`], [`tree`], [`halving_doubling`], [`direct`] (all-to-all,
//! gather, scatter and the dissemination barrier).

mod direct;
mod halving_doubling;
mod ring;
mod tree;

use crate::builder::Builder;
use crate::{invalid, CollectiveSpec, TimePoint, WorkloadError};
use fabricsim_engine::Dur;
use std::collections::BTreeMap;

/// What a collective computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum CollectiveKind {
    /// Every rank ends with the sum of all buffers.
    AllReduce,
    /// Every rank ends with every rank's part.
    AllGather,
    /// Every rank ends with its part of the sum.
    ReduceScatter,
    /// Every rank ends with the root's buffer.
    Broadcast,
    /// The root ends with the sum of all buffers.
    Reduce,
    /// The root ends with every rank's part.
    Gather,
    /// Every rank ends with its part of the root's buffer.
    Scatter,
    /// Every rank sends a distinct block to every other, all of one size.
    AllToAll,
    /// All-to-all with a size per (sender, receiver) pair.
    AllToAllV,
    /// No rank leaves before every rank has arrived.
    Barrier,
}

/// How a collective moves its data.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Algorithm {
    /// Neighbours on a ring (a chain from the root for broadcast, to it for reduce).
    Ring,
    /// NCCL's double binary tree: two trees, each with half the data, every rank a
    /// leaf in one of them; reduce up, broadcast down, pipelined.
    Tree,
    /// Recursive halving then doubling with partners at power-of-two distances.
    HalvingDoubling,
    /// Every pair at once (every rank with the root, for gather and scatter).
    Direct,
    /// The dissemination barrier: in round `k` rank `i` signals rank `i + 2^k`.
    Dissemination,
}

impl CollectiveKind {
    /// Every kind, in the order of the schema.
    pub const ALL: [CollectiveKind; 10] = [
        CollectiveKind::AllReduce,
        CollectiveKind::AllGather,
        CollectiveKind::ReduceScatter,
        CollectiveKind::Broadcast,
        CollectiveKind::Reduce,
        CollectiveKind::Gather,
        CollectiveKind::Scatter,
        CollectiveKind::AllToAll,
        CollectiveKind::AllToAllV,
        CollectiveKind::Barrier,
    ];

    /// The scenario name.
    pub fn name(self) -> &'static str {
        match self {
            CollectiveKind::AllReduce => "all_reduce",
            CollectiveKind::AllGather => "all_gather",
            CollectiveKind::ReduceScatter => "reduce_scatter",
            CollectiveKind::Broadcast => "broadcast",
            CollectiveKind::Reduce => "reduce",
            CollectiveKind::Gather => "gather",
            CollectiveKind::Scatter => "scatter",
            CollectiveKind::AllToAll => "all_to_all",
            CollectiveKind::AllToAllV => "all_to_allv",
            CollectiveKind::Barrier => "barrier",
        }
    }

    /// The kind called `name`.
    pub fn from_name(name: &str) -> Option<CollectiveKind> {
        CollectiveKind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// The algorithms it can run, the default first.
    pub fn algorithms(self) -> &'static [Algorithm] {
        use Algorithm::*;
        match self {
            CollectiveKind::AllReduce => &[Ring, Tree, HalvingDoubling],
            CollectiveKind::AllGather | CollectiveKind::ReduceScatter => &[Ring, HalvingDoubling],
            CollectiveKind::Broadcast | CollectiveKind::Reduce => &[Ring],
            CollectiveKind::Gather | CollectiveKind::Scatter | CollectiveKind::AllToAll | CollectiveKind::AllToAllV => {
                &[Direct]
            }
            CollectiveKind::Barrier => &[Dissemination],
        }
    }

    /// Whether it has a root rank (the `root` key).
    pub fn rooted(self) -> bool {
        match self {
            CollectiveKind::Broadcast | CollectiveKind::Reduce | CollectiveKind::Gather | CollectiveKind::Scatter => {
                true
            }
            CollectiveKind::AllReduce
            | CollectiveKind::AllGather
            | CollectiveKind::ReduceScatter
            | CollectiveKind::AllToAll
            | CollectiveKind::AllToAllV
            | CollectiveKind::Barrier => false,
        }
    }

    /// nccl-tests' bus-bandwidth factor over `n` ranks: busbw = algbw x this, the
    /// share of the buffer the busiest rank must move, so that a perfect collective's
    /// busbw is the link rate whatever `n` (0 for a barrier, which moves no data).
    /// Gather and scatter count the root's whole buffer, of which it receives or sends
    /// all but its own part, (n-1)/n.
    pub fn bus_factor(self, n: u32) -> f64 {
        let n = n as f64;
        match self {
            CollectiveKind::AllReduce => 2.0 * (n - 1.0) / n,
            CollectiveKind::AllGather
            | CollectiveKind::ReduceScatter
            | CollectiveKind::Gather
            | CollectiveKind::Scatter
            | CollectiveKind::AllToAll
            | CollectiveKind::AllToAllV => (n - 1.0) / n,
            CollectiveKind::Broadcast | CollectiveKind::Reduce => 1.0,
            CollectiveKind::Barrier => 0.0,
        }
    }
}

impl Algorithm {
    /// Every algorithm.
    pub const ALL: [Algorithm; 5] =
        [Algorithm::Ring, Algorithm::Tree, Algorithm::HalvingDoubling, Algorithm::Direct, Algorithm::Dissemination];

    /// The scenario name.
    pub fn name(self) -> &'static str {
        match self {
            Algorithm::Ring => "ring",
            Algorithm::Tree => "tree",
            Algorithm::HalvingDoubling => "halving_doubling",
            Algorithm::Direct => "direct",
            Algorithm::Dissemination => "dissemination",
        }
    }

    /// The algorithm called `name`.
    pub fn from_name(name: &str) -> Option<Algorithm> {
        Algorithm::ALL.into_iter().find(|a| a.name() == name)
    }

    /// Whether it cuts its transfers into `chunk`-sized pieces.
    pub fn pipelined(self) -> bool {
        match self {
            Algorithm::Ring | Algorithm::Tree => true,
            Algorithm::HalvingDoubling | Algorithm::Direct | Algorithm::Dissemination => false,
        }
    }
}

/// The piece size of pipelined algorithms when none is given: NCCL's step (its 4 MiB
/// buffer over 8 steps). Ring all-reduce, all-gather and reduce-scatter instead send
/// each step whole by default: the ring is already a pipeline over its ranks, and a
/// step waits for the step before it at its neighbour either way.
pub const DEFAULT_CHUNK: u64 = 512 * 1024;

/// Most channels a collective may be split over (NCCL's limit).
pub const MAX_CHANNELS: u32 = 64;

/// Bytes of each barrier message (a 64-bit flag).
pub const BARRIER_BYTES: u64 = 8;

/// One collective operation, as a scenario gives it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CollectiveOp {
    /// What it computes.
    pub kind: CollectiveKind,
    /// How (`None`: the kind's default).
    pub algorithm: Option<Algorithm>,
    /// Bytes: the buffer per rank (all-reduce, broadcast, reduce), the whole output
    /// (all-gather) or input (reduce-scatter) buffer as nccl-tests counts it, the root's
    /// whole buffer of `n` parts (gather, scatter), bytes per pair (all-to-all); unused
    /// for all-to-allv and barrier.
    pub size: u64,
    /// All-to-allv: bytes from rank `i` to rank `j` at `i * n + j`.
    pub sizes: Vec<u64>,
    /// Broadcast, reduce, gather, scatter: the root's rank.
    pub root: u32,
    /// Channels (`None`: the run's default, one per NIC port a connection leaves unused).
    pub channels: Option<u32>,
    /// Pipeline piece (`None`: [`DEFAULT_CHUNK`], or whole steps on a ring).
    pub chunk: Option<u64>,
}

impl CollectiveOp {
    /// A collective of `kind` and `size` with every default.
    pub fn new(kind: CollectiveKind, size: u64) -> CollectiveOp {
        CollectiveOp { kind, algorithm: None, size, sizes: Vec::new(), root: 0, channels: None, chunk: None }
    }

    /// The algorithm it runs.
    pub fn algorithm(&self) -> Algorithm {
        self.algorithm.unwrap_or(self.kind.algorithms()[0])
    }

    /// nccl-tests' size over `n` ranks (see [`CollectiveSpec::size`]).
    pub fn nccl_size(&self, n: u32) -> u64 {
        match self.kind {
            CollectiveKind::AllToAll => self.size * n as u64,
            // n x the mean size per pair, so that equal sizes count as all-to-all's.
            CollectiveKind::AllToAllV => self.sizes.iter().sum::<u64>() / (n as u64 - 1).max(1),
            CollectiveKind::Barrier => 0,
            _ => self.size,
        }
    }

    /// Checks the operation over `n` ranks with `channels` channels; `field` is its key
    /// path (`workload[0]`). Errors name the key and what is allowed.
    pub fn validate(&self, n: u32, channels: u32, field: &str) -> Result<(), WorkloadError> {
        let f = |k: &str| format!("{field}.{k}");
        let kind = self.kind.name();
        let alg = self.algorithm();
        if n < 2 {
            return Err(invalid(f("hosts"), format!("{kind} needs at least 2 hosts, got {n}")));
        }
        if !self.kind.algorithms().contains(&alg) {
            let names: Vec<&str> = self.kind.algorithms().iter().map(|a| a.name()).collect();
            return Err(invalid(
                f("algorithm"),
                format!("{kind} cannot run \"{}\" (allowed: {})", alg.name(), names.join(", ")),
            ));
        }
        if self.kind.rooted() && self.root >= n {
            return Err(invalid(f("root"), format!("rank {} does not exist (ranks are 0..{})", self.root, n - 1)));
        }
        if !(1..=MAX_CHANNELS).contains(&channels) {
            return Err(invalid(f("channels"), format!("must be between 1 and {MAX_CHANNELS}, got {channels}")));
        }
        if let Some(c) = self.chunk {
            if !alg.pipelined() {
                return Err(invalid(
                    f("chunk"),
                    format!("applies to the pipelined algorithms (ring, tree), not to \"{}\"", alg.name()),
                ));
            }
            if c == 0 {
                return Err(invalid(f("chunk"), "must be at least 1 byte"));
            }
        }
        let c = channels as u64;
        let n64 = n as u64;
        match (self.kind, alg) {
            (
                CollectiveKind::AllReduce | CollectiveKind::AllGather | CollectiveKind::ReduceScatter,
                Algorithm::Ring,
            ) => {
                if self.size < n64 * c {
                    // Each step moves size/N per channel: at least a byte.
                    let what = if c == 1 {
                        format!("the number of hosts ({n}): each step moves size/N bytes")
                    } else {
                        format!("hosts x channels ({n} x {c}): each step moves size/(N x channels) bytes")
                    };
                    return Err(invalid(f("size"), format!("must be at least {what}, got {}", self.size)));
                }
            }
            (CollectiveKind::AllGather | CollectiveKind::ReduceScatter, Algorithm::HalvingDoubling) => {
                if !n.is_power_of_two() {
                    return Err(invalid(
                        f("algorithm"),
                        format!("halving_doubling {kind} needs a power-of-two number of hosts, got {n} (use ring)"),
                    ));
                }
                if self.size < n64 * c {
                    return Err(invalid(
                        f("size"),
                        format!("must be at least hosts x channels ({n} x {c}), got {}", self.size),
                    ));
                }
            }
            (CollectiveKind::AllToAllV, _) => {
                if self.sizes.len() as u64 != n64 * n64 {
                    return Err(invalid(
                        f("sizes"),
                        format!(
                            "needs {n} rows of {n} sizes (one per receiving host), got {} values",
                            self.sizes.len()
                        ),
                    ));
                }
                if let Some(i) = (0..n as usize).find(|&i| self.sizes[i * n as usize + i] != 0) {
                    return Err(invalid(
                        format!("{field}.sizes[{i}][{i}]"),
                        "must be 0: a host does not send to itself over the network",
                    ));
                }
                if self.sizes.iter().all(|&s| s == 0) {
                    return Err(invalid(f("sizes"), "at least one pair must send a byte"));
                }
            }
            (CollectiveKind::Barrier, _) => {
                if channels != 1 {
                    return Err(invalid(f("channels"), "a barrier moves no data: it has one channel"));
                }
            }
            (CollectiveKind::Gather | CollectiveKind::Scatter, _) => {
                if self.size < n64 * c {
                    // Each rank's part is size/N, split over the channels.
                    return Err(invalid(
                        f("size"),
                        format!(
                            "must be at least hosts x channels ({n} x {c}): each host's part is size/N bytes, got {}",
                            self.size
                        ),
                    ));
                }
            }
            (_, Algorithm::Tree) => {
                if self.size < 2 * c {
                    // Each of the two trees carries half of each channel's share.
                    return Err(invalid(
                        f("size"),
                        format!("must be at least 2 x channels ({}) for the two trees, got {}", 2 * c, self.size),
                    ));
                }
            }
            _ => {
                if self.size < c {
                    return Err(invalid(f("size"), format!("must be at least the channels ({c}), got {}", self.size)));
                }
            }
        }
        Ok(())
    }

    /// How many messages it makes over `n` ranks and `channels` channels (before
    /// building them, so that a plan too large for memory can be refused first).
    pub fn message_count(&self, n: u32, channels: u32) -> u64 {
        let n64 = n as u64;
        let c = channels as u64;
        let log2 = |x: u64| 63 - x.max(1).leading_zeros() as u64;
        let pieces = |len: u64, default: Option<u64>| match self.chunk.or(default) {
            Some(ch) => len.div_ceil(ch).max(1),
            None => 1,
        };
        let share = self.size.div_ceil(c);
        match (self.kind, self.algorithm()) {
            (CollectiveKind::AllReduce, Algorithm::Ring) => c * n64 * 2 * (n64 - 1) * pieces(share.div_ceil(n64), None),
            (CollectiveKind::AllGather | CollectiveKind::ReduceScatter, Algorithm::Ring) => {
                c * n64 * (n64 - 1) * pieces(share.div_ceil(n64), None)
            }
            (_, Algorithm::Tree) => {
                let half = share.div_ceil(2);
                c * 4 * (n64 - 1) * pieces(half, Some(tree::auto_chunk(half, tree::depth(n as usize))))
            }
            (CollectiveKind::AllReduce, Algorithm::HalvingDoubling) => {
                let p = 1u64 << log2(n64);
                c * (p * 2 * log2(p) + 2 * (n64 - p))
            }
            (_, Algorithm::HalvingDoubling) => c * n64 * log2(n64),
            (CollectiveKind::Broadcast | CollectiveKind::Reduce, _) => {
                c * (n64 - 1) * pieces(share, Some(DEFAULT_CHUNK))
            }
            (CollectiveKind::Gather | CollectiveKind::Scatter, _) => c * (n64 - 1),
            (CollectiveKind::AllToAllV, _) => c * self.sizes.iter().filter(|&&s| s > 0).count() as u64,
            (CollectiveKind::Barrier, _) => n64 * log2(2 * n64 - 1),
            _ => c * n64 * (n64 - 1),
        }
    }
}

impl CollectiveOp {
    /// A rough solo time over `n` ranks on host links of
    /// `rate_bps` with `latency` per dependent hop: the bytes each rank must send at
    /// line rate plus one latency per step the algorithm waits on (used to size an
    /// on/off job's bursts before running anything).
    pub fn estimate(&self, n: u32, rate_bps: u64, latency: Dur) -> Dur {
        let n64 = n.max(2) as u64;
        let log2 = 64 - (n64 - 1).leading_zeros() as u64;
        let steps = match (self.kind, self.algorithm()) {
            (CollectiveKind::AllReduce, Algorithm::Ring) => 2 * (n64 - 1),
            (CollectiveKind::AllGather | CollectiveKind::ReduceScatter, Algorithm::Ring) => n64 - 1,
            (_, Algorithm::Tree) => 2 * (tree::depth(n as usize) + 1),
            (CollectiveKind::AllReduce, Algorithm::HalvingDoubling) => 2 * log2,
            (_, Algorithm::HalvingDoubling) | (CollectiveKind::Barrier, _) => log2,
            (CollectiveKind::Broadcast | CollectiveKind::Reduce, _) => n64 - 1,
            _ => 1,
        };
        let bytes = match self.kind {
            CollectiveKind::Barrier => BARRIER_BYTES * steps,
            CollectiveKind::Broadcast | CollectiveKind::Reduce => self.size,
            k => (self.nccl_size(n) as f64 * k.bus_factor(n)) as u64,
        };
        Dur::from_ps(((bytes as f64 * 8.0 / rate_bps.max(1) as f64) * 1e12) as u64) + latency.mul(steps)
    }
}

/// Where and how a collective is built.
pub(crate) struct Ctx<'a> {
    /// Its communicator: connections are shared among the collectives of one
    /// communicator of one workload (per pair and channel).
    pub comm: u32,
    /// Its key path, for errors.
    pub field: &'a str,
    /// Channels to use when the operation leaves them to the run.
    pub auto_channels: u32,
    /// The job and iteration it belongs to.
    pub job: Option<(u32, u32)>,
}

/// The channels `op` runs on: its own, or the run's default (at most what its size
/// allows: a small collective is not cut into empty channels).
pub(crate) fn channels(op: &CollectiveOp, auto: u32, n: u32) -> u32 {
    match op.channels {
        Some(c) => c,
        None if op.kind == CollectiveKind::Barrier => 1,
        None => {
            // The fewest bytes a channel must carry.
            let per = match (op.kind, op.algorithm()) {
                (CollectiveKind::Broadcast | CollectiveKind::Reduce, _) => 1,
                (CollectiveKind::Gather | CollectiveKind::Scatter, _) => n as u64,
                (_, Algorithm::Ring) => n as u64,
                (_, Algorithm::Tree) => 2,
                _ => 1,
            };
            (auto.max(1) as u64).min((op.size / per).max(1)) as u32
        }
    }
}

/// Appends `op` over the ranks `hosts` (rank `i` on `hosts[i]`), each rank starting at
/// `entry[i]`. Returns when each rank is done (see the module doc).
pub(crate) fn expand(
    b: &mut Builder,
    op: &CollectiveOp,
    hosts: &[u32],
    entry: &[TimePoint],
    cx: &Ctx<'_>,
) -> Result<Vec<TimePoint>, WorkloadError> {
    let n = hosts.len() as u32;
    let channels = channels(op, cx.auto_channels, n);
    op.validate(n, channels, cx.field)?;
    debug_assert_eq!(entry.len(), hosts.len());
    b.plan.collectives.push(CollectiveSpec {
        kind: op.kind.name(),
        algorithm: op.algorithm().name(),
        workload: b.workload,
        hosts: n,
        size: op.nccl_size(n),
        channels,
        bus_factor: op.kind.bus_factor(n),
        job: cx.job,
    });
    let coll = (b.plan.collectives.len() - 1) as u32;
    let mut e = Emit {
        b,
        hosts,
        entry,
        coll,
        comm: cx.comm,
        channels,
        into: vec![BTreeMap::new(); hosts.len()],
        out_of: vec![BTreeMap::new(); hosts.len()],
    };
    let shares: Vec<u64> = split(op.size, channels as u64);
    match (op.kind, op.algorithm()) {
        (CollectiveKind::AllReduce, Algorithm::Ring) => ring::steps(&mut e, &shares, 2 * (n as usize - 1), op.chunk),
        (CollectiveKind::AllGather | CollectiveKind::ReduceScatter, Algorithm::Ring) => {
            ring::steps(&mut e, &shares, n as usize - 1, op.chunk)
        }
        (CollectiveKind::Broadcast, _) => {
            ring::chain(&mut e, &shares, op.root as usize, op.chunk.unwrap_or(DEFAULT_CHUNK))
        }
        (CollectiveKind::Reduce, _) => {
            // The mirror of broadcast: the chain starts after the root and ends at it.
            let first = (op.root as usize + 1) % n as usize;
            ring::chain(&mut e, &shares, first, op.chunk.unwrap_or(DEFAULT_CHUNK))
        }
        (CollectiveKind::Gather, _) => direct::gather(&mut e, op.size, op.root as usize),
        (CollectiveKind::Scatter, _) => direct::scatter(&mut e, op.size, op.root as usize),
        (CollectiveKind::AllReduce, Algorithm::Tree) => tree::all_reduce(&mut e, &shares, op.chunk),
        (CollectiveKind::AllReduce, Algorithm::HalvingDoubling) => halving_doubling::all_reduce(&mut e, &shares),
        (CollectiveKind::ReduceScatter, Algorithm::HalvingDoubling) => halving_doubling::halving(&mut e, &shares),
        (CollectiveKind::AllGather, Algorithm::HalvingDoubling) => halving_doubling::doubling(&mut e, &shares),
        (CollectiveKind::AllToAll, _) => {
            let sizes: Vec<u64> = (0..n * n).map(|i| if i / n == i % n { 0 } else { op.size }).collect();
            direct::all_to_all(&mut e, &sizes)
        }
        (CollectiveKind::AllToAllV, _) => direct::all_to_all(&mut e, &op.sizes),
        (CollectiveKind::Barrier, _) => direct::dissemination(&mut e),
        (kind, alg) => unreachable!("validate() refuses {} with {}", kind.name(), alg.name()),
    }
    Ok(e.done())
}

/// `total` split into `k` near-equal parts, the larger first.
pub(crate) fn split(total: u64, k: u64) -> Vec<u64> {
    (0..k).map(|i| total / k + u64::from(i < total % k)).collect()
}

/// The pieces of a `len`-byte transfer cut at `chunk` bytes (one piece without).
fn pieces(len: u64, chunk: Option<u64>) -> Vec<u64> {
    match chunk {
        Some(c) if len > c => split(len, len.div_ceil(c)),
        _ => vec![len],
    }
}

/// Appends one collective's messages and tracks what each rank waits for.
struct Emit<'a> {
    b: &'a mut Builder,
    hosts: &'a [u32],
    entry: &'a [TimePoint],
    coll: u32,
    comm: u32,
    channels: u32,
    /// Per rank, the last message on each connection into it.
    into: Vec<BTreeMap<u32, u32>>,
    /// Per rank, the last message on each connection out of it.
    out_of: Vec<BTreeMap<u32, u32>>,
}

impl Emit<'_> {
    /// Ranks.
    fn n(&self) -> usize {
        self.hosts.len()
    }

    /// Rank `from` sends `size` bytes to rank `to` on `channel` once `deps` are received.
    fn send(&mut self, channel: u32, from: usize, to: usize, size: u64, deps: &[u32]) -> u32 {
        self.send_lane(channel, channel, from, to, size, deps)
    }

    /// [`send`](Self::send) on a connection of its own within the channel: `lane`
    /// tells apart the connections of one pair and channel (the two trees of a double
    /// binary tree).
    fn send_lane(&mut self, channel: u32, lane: u32, from: usize, to: usize, size: u64, deps: &[u32]) -> u32 {
        if self.hosts[from] == self.hosts[to] {
            // Two ranks of one host: no network (a transfer over NVLink takes no time
            // here); keyed apart from real connections by the sending rank.
            let m = self.b.local(self.hosts[from], &self.entry[from], deps);
            let key = u32::MAX - from as u32;
            self.into[to].insert(key, m);
            self.out_of[from].insert(key, m);
            return m;
        }
        // One channel keeps the connection's port to its number, as before channels.
        let port = (self.channels > 1).then_some(channel);
        let conn = self.b.shared_conn(self.comm, self.hosts[from], self.hosts[to], lane, port);
        let m = self.b.message(conn, size, &self.entry[from], deps, Some(self.coll));
        self.into[to].insert(conn, m);
        self.out_of[from].insert(conn, m);
        m
    }

    /// When each rank is done.
    fn done(self) -> Vec<TimePoint> {
        (0..self.n())
            .map(|r| {
                let last = if self.into[r].is_empty() { &self.out_of[r] } else { &self.into[r] };
                let msgs: Vec<u32> = last.values().copied().collect();
                TimePoint::received(&msgs).max(&self.entry[r])
            })
            .collect()
    }
}

#[cfg(test)]
mod tests;
