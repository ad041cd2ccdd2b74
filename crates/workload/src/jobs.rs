//! Training jobs: ranks placed on hosts, parallelism groups, and iterations of compute
//! and collectives, with stragglers, pipeline stages and on/off bursts.
//!
//! A job of `ranks` ranks (one per host by default: a host is one NIC, so a server
//! with several NICs is several hosts; `ranks_per_host` puts several ranks behind one
//! NIC, whose traffic to each other then takes no network time) is laid out as
//! Megatron lays out its ranks, tensor parallel innermost: rank `r = t + tp (d + dp p)` has tensor index `t`, data index `d` and
//! pipeline stage `p`; expert-parallel groups split each data-parallel group into
//! `dp / ep` groups of `ep` consecutive data indices. Each group kind gives the
//! communicators its collectives run on (`tp`, `dp`, `ep`, `pp`, or the whole `world`).
//!
//! An iteration on rank `r` is `compute` (times the rank's slowdown, times a seeded
//! jitter) with the job's collectives issued at fractions `at` of it: a collective of
//! group `g` starts on `r` once `r`'s compute reached that point and `r`'s previous
//! collective on `g` is over (one stream per communicator, as NCCL runs them); a
//! `blocking` one holds the compute until it is over (a tensor-parallel all-reduce).
//! The iteration ends on `r` when its compute and its part of every collective are
//! done, and the next one starts there: ranks drift apart as far as the collectives
//! let them, as they do in a real job. With `pp > 1` each iteration pushes
//! `microbatches` through the stages (GPipe: every forward, then every backward, each
//! stage one microbatch at a time; a backward costs twice a forward), sending
//! `activation` bytes to the next stage after each forward and back after each
//! backward.
//!
//! An on/off job (STELLAR's bursty background) runs its iterations in bursts: burst
//! `k` starts `k` periods after the job (or when burst `k-1` ends, if later), with as
//! many iterations as fill `duty` of a period at the job's solo pace.
//!
//! All of this is time points ([`TimePoint`]) over the messages' receipts, so the run
//! needs no notion of compute: a rank's timeline folds into its messages'
//! dependencies, named once per point by a mark where it has several terms.

use crate::builder::Builder;
use crate::collectives::{self, CollectiveOp, Ctx};
use crate::generators::{resolve, HostSet};
use crate::startup::{Cost, Startup};
use crate::{invalid, IterationRecord, JobRecord, TimePoint, WorkloadError};
use fabricsim_engine::{Dur, Rng};

/// How ranks are placed on the job's hosts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Placement {
    /// Rank `i` on the `i`-th host of the pool (neighbours in rank order share a leaf).
    Packed,
    /// A random set of the pool's hosts in random rank order (a fragmented cluster's
    /// allocation, ranked without regard to the topology).
    Random,
    /// The same random set as `Random`, ranked in topology order (host index order:
    /// leaf by leaf), STELLAR's re-ranking: communicating ranks sit close.
    Rerank,
    /// Rank `i` on `hosts[i]`.
    List(Vec<u32>),
}

impl Placement {
    /// The scenario names of the policies.
    pub const NAMES: [&'static str; 3] = ["packed", "random", "rerank"];
}

/// A kind of parallelism group (communicator).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Group {
    /// Every rank.
    World,
    /// Data parallel: the ranks holding the same model shard.
    Dp,
    /// Tensor parallel: consecutive ranks.
    Tp,
    /// Pipeline parallel: the stages of one pipeline.
    Pp,
    /// Expert parallel: `ep` consecutive members of a data-parallel group.
    Ep,
}

impl Group {
    /// Every group kind.
    pub const ALL: [Group; 5] = [Group::World, Group::Dp, Group::Tp, Group::Pp, Group::Ep];

    /// The scenario name.
    pub fn name(self) -> &'static str {
        match self {
            Group::World => "world",
            Group::Dp => "dp",
            Group::Tp => "tp",
            Group::Pp => "pp",
            Group::Ep => "ep",
        }
    }

    /// The group called `name`.
    pub fn from_name(name: &str) -> Option<Group> {
        Group::ALL.into_iter().find(|g| g.name() == name)
    }
}

/// A collective a job runs every iteration.
#[derive(Clone, Debug, PartialEq)]
pub struct JobComm {
    /// The communicators it runs on (one instance per group of this kind).
    pub group: Group,
    /// The operation.
    pub op: CollectiveOp,
    /// Fractions of the iteration's compute at which an instance starts (one each).
    pub at: Vec<f64>,
    /// Whether the compute waits for it.
    pub blocking: bool,
}

/// Bursts of an on/off job.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OnOff {
    /// A burst starts every period.
    pub period: Dur,
    /// The share of a period a burst should fill at the job's solo pace.
    pub duty: f64,
    /// How many bursts.
    pub bursts: u32,
}

/// What the run knows of the fabric, for sizing bursts: the host link rate and the
/// latency of one dependent hop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pace {
    /// Host link rate, bits per second.
    pub rate_bps: u64,
    /// One hop of a collective step: propagation and a frame's serialization.
    pub latency: Dur,
}

/// A training job.
#[derive(Clone, Debug, PartialEq)]
pub struct Job {
    /// Its key path (`jobs[0]`), for errors.
    pub key: String,
    /// Its name.
    pub name: String,
    /// Ranks.
    pub ranks: u32,
    /// The hosts it may be placed on.
    pub hosts: HostSet,
    /// How ranks are placed on them.
    pub placement: Placement,
    /// Ranks sharing each host (a server's GPUs behind one NIC); their traffic to
    /// each other takes no network time.
    pub ranks_per_host: u32,
    /// Tensor-parallel size.
    pub tp: u32,
    /// Pipeline-parallel size (stages).
    pub pp: u32,
    /// Expert-parallel size (divides the data-parallel size).
    pub ep: u32,
    /// Iterations (per burst for an on/off job; `None` there: as many as fill `duty`).
    pub iterations: Option<u32>,
    /// Compute per iteration per rank.
    pub compute: Dur,
    /// Each rank's compute varies per iteration uniformly within +- this fraction.
    pub jitter: f64,
    /// `(rank, factor)`: ranks whose compute takes `factor` times as long.
    pub slowdown: Vec<(u32, f64)>,
    /// Its collectives.
    pub comms: Vec<JobComm>,
    /// Microbatches per iteration (pipeline parallel).
    pub microbatches: u32,
    /// Bytes sent between stages per microbatch, each way (pipeline parallel).
    pub activation: u64,
    /// Bursts, for an on/off background job.
    pub on_off: Option<OnOff>,
    /// Its containers' start-up (memory registration, virtual devices), if modelled.
    pub startup: Option<Startup>,
    /// For sizing bursts (set by the run).
    pub pace: Option<Pace>,
}

impl Job {
    /// A job of `ranks` data-parallel ranks with every default: one iteration, no
    /// compute, no collective.
    pub fn new(key: &str, ranks: u32) -> Job {
        Job {
            key: key.to_string(),
            name: key.to_string(),
            ranks,
            hosts: HostSet::All,
            placement: Placement::Packed,
            ranks_per_host: 1,
            tp: 1,
            pp: 1,
            ep: 1,
            iterations: Some(1),
            compute: Dur::ZERO,
            jitter: 0.0,
            slowdown: Vec::new(),
            comms: Vec::new(),
            microbatches: 1,
            activation: 0,
            on_off: None,
            startup: None,
            pace: None,
        }
    }

    /// The data-parallel size.
    pub fn dp(&self) -> u32 {
        self.ranks / (self.tp * self.pp).max(1)
    }

    fn field(&self, k: &str) -> String {
        format!("{}.{k}", self.key)
    }

    /// Checks the shape: group sizes dividing the ranks, fractions, stragglers.
    pub fn validate(&self) -> Result<(), WorkloadError> {
        let f = |k: &str| self.field(k);
        if self.ranks < 1 {
            return Err(invalid(f("ranks"), "must be at least 1"));
        }
        if !self.ranks.is_multiple_of(self.tp * self.pp) {
            return Err(invalid(
                f("tp"),
                format!(
                    "tp x pp ({} x {} = {}) must divide ranks ({})",
                    self.tp,
                    self.pp,
                    self.tp * self.pp,
                    self.ranks
                ),
            ));
        }
        if !self.dp().is_multiple_of(self.ep) {
            return Err(invalid(
                f("ep"),
                format!("must divide the data-parallel size (ranks / (tp x pp) = {}), got {}", self.dp(), self.ep),
            ));
        }
        if self.pp > 1 && self.activation == 0 {
            return Err(invalid(f("activation"), "is required with pp > 1 (bytes sent between stages per microbatch)"));
        }
        for (i, c) in self.comms.iter().enumerate() {
            let cf = |k: &str| format!("{}.collectives[{i}].{k}", self.key);
            if c.at.is_empty() {
                return Err(invalid(cf("at"), "needs at least one fraction of the compute"));
            }
            if let Some(x) = c.at.iter().find(|x| !(0.0..=1.0).contains(*x)) {
                return Err(invalid(cf("at"), format!("fractions of the compute are between 0 and 1, got {x}")));
            }
            if c.blocking && self.pp > 1 {
                return Err(invalid(
                    cf("blocking"),
                    "blocking collectives inside a pipeline-parallel iteration are not modelled (use at = 1)",
                ));
            }
            let size = self.group_size(c.group);
            if size < 2 {
                return Err(invalid(
                    cf("group"),
                    format!("{} groups of this job have {size} rank: a collective needs 2 or more", c.group.name()),
                ));
            }
        }
        for (i, &(r, x)) in self.slowdown.iter().enumerate() {
            if r >= self.ranks {
                return Err(invalid(
                    format!("{}.stragglers[{i}].rank", self.key),
                    format!("rank {r} does not exist (ranks are 0..{})", self.ranks - 1),
                ));
            }
            if !(x > 0.0 && x.is_finite()) {
                return Err(invalid(format!("{}.stragglers[{i}].slowdown", self.key), "must be above 0"));
            }
        }
        Ok(())
    }

    /// Ranks per group of kind `g`.
    pub fn group_size(&self, g: Group) -> u32 {
        match g {
            Group::World => self.ranks,
            Group::Dp => self.dp(),
            Group::Tp => self.tp,
            Group::Pp => self.pp,
            Group::Ep => self.ep,
        }
    }

    /// The groups of kind `g`, each its ranks in rank order.
    pub fn groups(&self, g: Group) -> Vec<Vec<u32>> {
        let (tp, dp, pp, ep) = (self.tp, self.dp(), self.pp, self.ep);
        let rank = |t: u32, d: u32, p: u32| t + tp * (d + dp * p);
        match g {
            Group::World => vec![(0..self.ranks).collect()],
            Group::Tp => (0..pp).flat_map(|p| (0..dp).map(move |d| (0..tp).map(|t| rank(t, d, p)).collect())).collect(),
            Group::Dp => (0..pp).flat_map(|p| (0..tp).map(move |t| (0..dp).map(|d| rank(t, d, p)).collect())).collect(),
            Group::Pp => (0..dp).flat_map(|d| (0..tp).map(move |t| (0..pp).map(|p| rank(t, d, p)).collect())).collect(),
            Group::Ep => (0..pp)
                .flat_map(|p| {
                    (0..tp).flat_map(move |t| {
                        (0..dp / ep).map(move |e2| (0..ep).map(|e| rank(t, e + ep * e2, p)).collect())
                    })
                })
                .collect(),
        }
    }

    /// How many messages (and marks) it makes, before building them: for refusing a
    /// plan too large for memory.
    pub fn message_count(&self, auto_channels: u32) -> u64 {
        let per_iter: u64 = self
            .comms
            .iter()
            .map(|c| {
                let n = self.group_size(c.group);
                let groups = (self.ranks / n.max(1)) as u64;
                let ch = collectives::channels(&c.op, auto_channels, n);
                groups * c.at.len() as u64 * (c.op.message_count(n, ch) + n as u64)
            })
            .sum::<u64>()
            + self.ranks as u64 * (2 + 4 * self.microbatches as u64 * u64::from(self.pp > 1));
        per_iter * self.iterations.unwrap_or(8) as u64 * self.on_off.map_or(1, |o| o.bursts as u64)
    }

    /// The buffers each rank registers for DMA, bytes: every collective's send and
    /// receive buffers (nccl-tests' size), the pipeline's activations both ways, and
    /// NCCL's staging buffers (4 MiB per channel, each way, per collective).
    pub fn dma_buffers(&self, auto_channels: u32) -> Vec<u64> {
        let mut out = Vec::new();
        for c in &self.comms {
            let n = self.group_size(c.group);
            let size = c.op.nccl_size(n);
            out.extend([size, size]);
            let ch = collectives::channels(&c.op, auto_channels, n) as u64;
            out.push(2 * ch * (4 << 20));
        }
        if self.pp > 1 {
            out.extend([self.activation, self.activation]);
        }
        out
    }

    /// Iterations per burst: given, or as many as fill `duty` of a period at the
    /// estimated solo pace (at least one).
    fn iterations_per_burst(&self) -> u32 {
        if let Some(i) = self.iterations {
            return i;
        }
        let (Some(o), Some(pace)) = (self.on_off, self.pace) else { return 1 };
        let c = self.compute.ps() as f64;
        let mut est = c;
        for comm in &self.comms {
            let n = self.group_size(comm.group);
            let t = comm.op.estimate(n, pace.rate_bps, pace.latency).ps() as f64;
            for &f in &comm.at {
                // Overlapped with compute, only what outlasts it counts.
                est += if comm.blocking { t } else { (f * c + t - c).max(0.0) };
            }
        }
        ((o.duty * o.period.ps() as f64 / est.max(1.0)).floor() as u32).max(1)
    }
}

/// The hosts of the job's ranks: `ranks_per_host` consecutive ranks on each host the
/// placement picks.
fn place(job: &Job, nhosts: u32, rng: &mut Rng) -> Result<Vec<u32>, WorkloadError> {
    let k = job.ranks_per_host.max(1);
    let servers = job.ranks.div_ceil(k);
    let chosen = if let Placement::List(list) = &job.placement {
        if list.len() as u32 != servers {
            return Err(invalid(
                job.field("placement"),
                format!(
                    "lists {} hosts for {} ranks (one host per {} in rank order)",
                    list.len(),
                    job.ranks,
                    if k == 1 { "rank".to_string() } else { format!("{k} ranks") }
                ),
            ));
        }
        resolve(&HostSet::List(list.clone()), nhosts, &job.field("placement"), rng, false, None)?
    } else {
        let pool = resolve(&job.hosts, nhosts, &job.field("hosts"), rng, false, None)?;
        if servers as usize > pool.len() {
            let per = if k == 1 { "one rank per host".to_string() } else { format!("{k} ranks per host") };
            return Err(invalid(
                job.field("ranks"),
                format!("{} ranks but only {} hosts to place them on ({per})", job.ranks, pool.len()),
            ));
        }
        let n = servers as usize;
        match job.placement {
            Placement::Packed => pool[..n].to_vec(),
            Placement::Random | Placement::Rerank => {
                let mut p = pool;
                rng.shuffle(&mut p);
                p.truncate(n);
                if job.placement == Placement::Rerank {
                    p.sort_unstable();
                }
                p
            }
            Placement::List(_) => unreachable!("handled above"),
        }
    };
    Ok((0..job.ranks).map(|r| chosen[(r / k) as usize]).collect())
}

/// The communicator number of group `i` of kind `g` (connections are shared within it).
fn comm_id(g: Group, i: usize) -> u32 {
    (g as u32 + 1) << 24 | i as u32
}

/// Appends job `job` (workload `w`, starting at `start`) to the plan; `j` is its job
/// number. Returns its record.
#[allow(clippy::too_many_arguments)]
pub(crate) fn build(
    b: &mut Builder,
    job: &Job,
    j: u32,
    start: Dur,
    nhosts: u32,
    seed: u64,
    auto_channels: u32,
) -> Result<JobRecord, WorkloadError> {
    job.validate()?;
    let w = b.workload;
    let mut rng = Rng::stream(seed, &[0x10B, w as u64]);
    let hosts = place(job, nhosts, &mut rng)?;
    let n = job.ranks as usize;
    let factor: Vec<f64> =
        (0..n).map(|r| job.slowdown.iter().filter(|s| s.0 as usize == r).map(|s| s.1).product::<f64>()).collect();
    // Each comm's groups, and per group kind the group of each rank.
    let groups: Vec<Vec<Vec<u32>>> = job.comms.iter().map(|c| job.groups(c.group)).collect();
    // Issue points in order of the compute fraction (ties in declaration order).
    let mut events: Vec<(f64, usize)> =
        job.comms.iter().enumerate().flat_map(|(i, c)| c.at.iter().map(move |&f| (f, i))).collect();
    events.sort_by(|a, b| a.0.total_cmp(&b.0));
    let per_burst = job.iterations_per_burst();
    let bursts = job.on_off.map_or(1, |o| o.bursts);
    let cost = match &job.startup {
        Some(s) => {
            let regions = s.layout(&job.dma_buffers(auto_channels));
            s.check_doorbell(&regions, &job.field("startup"))?;
            s.cost(&regions)
        }
        None => Cost::default(),
    };
    let first = start + cost.startup;
    let mut rec = JobRecord {
        name: job.name.clone(),
        workload: w,
        hosts: hosts.clone(),
        iterations: Vec::new(),
        startup: cost.startup,
        blocks: cost.blocks,
    };
    let mut t: Vec<TimePoint> = vec![TimePoint::at(first); n];
    let mut iteration = 0u32;
    for burst in 0..bursts {
        if let Some(o) = job.on_off {
            let open = TimePoint::at(first + o.period.mul(burst as u64));
            t = t.into_iter().enumerate().map(|(r, p)| b.collapse(hosts[r], p.max(&open))).collect();
        }
        for _ in 0..per_burst {
            let compute: Vec<Dur> = (0..n)
                .map(|r| {
                    let mut x = factor[r];
                    if job.jitter > 0.0 {
                        let mut jr = Rng::stream(seed, &[0x10B5, w as u64, iteration as u64, r as u64]);
                        x *= 1.0 + job.jitter * (2.0 * jr.unit() - 1.0);
                    }
                    Dur::from_ps((job.compute.ps() as f64 * x).round() as u64) + cost.per_iteration
                })
                .collect();
            let cx = Iter {
                job,
                hosts: &hosts,
                groups: &groups,
                events: &events,
                compute: &compute,
                j,
                iteration,
                auto_channels,
            };
            let it = if job.pp > 1 { cx.pipelined(b, &t)? } else { cx.flat(b, &t)? };
            t = it.ends.clone();
            rec.iterations.push(IterationRecord { burst, ..it });
            iteration += 1;
        }
    }
    Ok(rec)
}

/// One iteration being built.
struct Iter<'a> {
    job: &'a Job,
    hosts: &'a [u32],
    groups: &'a [Vec<Vec<u32>>],
    events: &'a [(f64, usize)],
    compute: &'a [Dur],
    j: u32,
    iteration: u32,
    auto_channels: u32,
}

impl Iter<'_> {
    /// `d` times the fraction `f`.
    fn part(d: Dur, f: f64) -> Dur {
        Dur::from_ps((d.ps() as f64 * f).round() as u64)
    }

    /// Issues comm `ci` with every rank entering at `point[r]` (after its stream on
    /// that group kind); returns when each rank is done, updating the streams.
    fn issue(
        &self,
        b: &mut Builder,
        ci: usize,
        point: &[TimePoint],
        stream: &mut [Vec<Option<TimePoint>>],
        rec: &mut IterationRecord,
    ) -> Result<Vec<Option<TimePoint>>, WorkloadError> {
        let comm = &self.job.comms[ci];
        let g = comm.group as usize;
        let mut done: Vec<Option<TimePoint>> = vec![None; self.hosts.len()];
        for (gi, members) in self.groups[ci].iter().enumerate() {
            let entry: Vec<TimePoint> = members
                .iter()
                .map(|&r| {
                    let r = r as usize;
                    let p = match &stream[g][r] {
                        Some(s) => point[r].clone().max(s),
                        None => point[r].clone(),
                    };
                    b.collapse(self.hosts[r], p)
                })
                .collect();
            let member_hosts: Vec<u32> = members.iter().map(|&r| self.hosts[r as usize]).collect();
            let field = format!("{}.collectives[{ci}]", self.job.key);
            let cx = Ctx {
                comm: comm_id(comm.group, gi),
                field: &field,
                auto_channels: self.auto_channels,
                job: Some((self.j, self.iteration)),
            };
            let ends = collectives::expand(b, &comm.op, &member_hosts, &entry, &cx)?;
            rec.collectives.push(b.plan.collectives.len() as u32 - 1);
            for (&r, e) in members.iter().zip(ends) {
                let e = b.collapse(self.hosts[r as usize], e);
                stream[g][r as usize] = Some(e.clone());
                done[r as usize] = Some(e);
            }
        }
        Ok(done)
    }

    /// The end of each rank: its compute end and every stream it used.
    fn ends(&self, b: &mut Builder, compute_end: Vec<TimePoint>, stream: &[Vec<Option<TimePoint>>]) -> Vec<TimePoint> {
        compute_end
            .into_iter()
            .enumerate()
            .map(|(r, mut e)| {
                for s in stream.iter().filter_map(|s| s[r].as_ref()) {
                    e.merge(s);
                }
                b.collapse(self.hosts[r], e)
            })
            .collect()
    }

    fn record(&self, starts: &[TimePoint]) -> IterationRecord {
        IterationRecord {
            starts: starts.to_vec(),
            compute: self.compute.iter().copied().max().unwrap_or(Dur::ZERO),
            ..IterationRecord::default()
        }
    }

    /// An iteration without pipeline stages.
    fn flat(&self, b: &mut Builder, starts: &[TimePoint]) -> Result<IterationRecord, WorkloadError> {
        let n = self.hosts.len();
        let mut rec = self.record(starts);
        let mut stream: Vec<Vec<Option<TimePoint>>> = vec![vec![None; n]; Group::ALL.len()];
        let mut cur: Vec<TimePoint> = starts.to_vec();
        let mut last = 0.0;
        for &(f, ci) in self.events {
            let point: Vec<TimePoint> = (0..n).map(|r| cur[r].plus(Self::part(self.compute[r], f - last))).collect();
            let done = self.issue(b, ci, &point, &mut stream, &mut rec)?;
            cur = if self.job.comms[ci].blocking {
                (0..n)
                    .map(|r| match &done[r] {
                        Some(d) => b.collapse(self.hosts[r], point[r].clone().max(d)),
                        None => point[r].clone(),
                    })
                    .collect()
            } else {
                point
            };
            last = f;
        }
        let compute_end: Vec<TimePoint> =
            (0..n).map(|r| cur[r].plus(Self::part(self.compute[r], 1.0 - last))).collect();
        rec.ends = self.ends(b, compute_end, &stream);
        Ok(rec)
    }

    /// A pipeline transfer of the job's activation from host `from` to `to` at `at`
    /// (free between two ranks of one host).
    #[allow(clippy::too_many_arguments)]
    fn transfer(
        &self,
        b: &mut Builder,
        comm: u32,
        from: u32,
        to: u32,
        lane: u32,
        at: &TimePoint,
        rec: &mut IterationRecord,
    ) -> u32 {
        if from == to {
            return b.local(from, at, &[]);
        }
        let c = b.shared_conn(comm, from, to, lane, None);
        let m = b.message(c, self.job.activation, at, &[], None);
        rec.transfers.push(m);
        m
    }

    /// An iteration through pipeline stages (GPipe), collectives at points of each
    /// rank's sequence of forward and backward microbatch computations.
    fn pipelined(&self, b: &mut Builder, starts: &[TimePoint]) -> Result<IterationRecord, WorkloadError> {
        let job = self.job;
        let n = self.hosts.len();
        let m_count = job.microbatches.max(1) as usize;
        let mut rec = self.record(starts);
        // Per rank, its compute units in order: (ready point, duration).
        let mut units: Vec<Vec<(TimePoint, Dur)>> = vec![Vec::new(); n];
        let fwd = |r: usize| Self::part(self.compute[r], 1.0 / (3 * m_count) as f64);
        let bwd = |r: usize| Self::part(self.compute[r], 2.0 / (3 * m_count) as f64);
        for (pi, stages) in job.groups(Group::Pp).iter().enumerate() {
            let comm = comm_id(Group::Pp, pi);
            let pp = stages.len();
            let mut done: Vec<TimePoint> = stages.iter().map(|&r| starts[r as usize].clone()).collect();
            let mut act: Vec<Option<u32>> = vec![None; pp];
            for _ in 0..m_count {
                for s in 0..pp {
                    let r = stages[s] as usize;
                    let mut ready = done[s].clone();
                    if let Some(a) = act[s] {
                        ready.merge(&TimePoint::received(&[a]));
                    }
                    let ready = b.collapse(self.hosts[r], ready);
                    units[r].push((ready.clone(), fwd(r)));
                    done[s] = ready.plus(fwd(r));
                    act[s] = None;
                    if s + 1 < pp {
                        let to = self.hosts[stages[s + 1] as usize];
                        act[s + 1] = Some(self.transfer(b, comm, self.hosts[r], to, 0, &done[s], &mut rec));
                    }
                }
            }
            let mut grad: Vec<Option<u32>> = vec![None; pp];
            for _ in 0..m_count {
                for s in (0..pp).rev() {
                    let r = stages[s] as usize;
                    let mut ready = done[s].clone();
                    if let Some(g) = grad[s] {
                        ready.merge(&TimePoint::received(&[g]));
                    }
                    let ready = b.collapse(self.hosts[r], ready);
                    units[r].push((ready.clone(), bwd(r)));
                    done[s] = ready.plus(bwd(r));
                    grad[s] = None;
                    if s > 0 {
                        let to = self.hosts[stages[s - 1] as usize];
                        grad[s - 1] = Some(self.transfer(b, comm, self.hosts[r], to, 1, &done[s], &mut rec));
                    }
                }
            }
        }
        let compute_end: Vec<TimePoint> =
            units.iter().map(|u| u.last().map(|(p, d)| p.plus(*d)).expect("every rank computes")).collect();
        let mut stream: Vec<Vec<Option<TimePoint>>> = vec![vec![None; n]; Group::ALL.len()];
        for &(f, ci) in self.events {
            // The point of each rank's unit sequence where a fraction f of its work is done.
            let point: Vec<TimePoint> = (0..n)
                .map(|r| {
                    let target = Self::part(self.compute[r], f);
                    let mut before = Dur::ZERO;
                    for (ready, d) in &units[r] {
                        if before + *d >= target {
                            return ready.plus(target - before);
                        }
                        before += *d;
                    }
                    compute_end[r].clone()
                })
                .collect();
            self.issue(b, ci, &point, &mut stream, &mut rec)?;
        }
        rec.ends = self.ends(b, compute_end, &stream);
        Ok(rec)
    }
}
