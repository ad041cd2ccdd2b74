//! Sampling: every port's counters and each connection's delivered bytes per interval
//! of the sampling grid, and the entropy-value state changes since the last sample.
//!
//! A sample at time `t` covers everything that happened up to and including `t`, in
//! plain and partitioned runs alike: a plain run takes the grid's samples as the first
//! later event comes up, a partitioned one between windows that end just after a grid
//! point. The run's end takes the last, part interval.

use crate::results::{Column, Table};
use crate::sim::{owns, Sim};
use fabricsim_engine::{Dur, Time};
use fabricsim_fabric::{Fabric, PortStats};

#[derive(Clone, Copy, Default)]
pub(crate) struct Snap {
    stats: PortStats,
    paused_ps: u64,
    /// Serialization time up to the sample (see `Port::busy_ps_at`).
    busy_ps: u64,
}

/// One port's row of a sample.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Row {
    tx_bytes: u64,
    util: f64,
    queue_bytes: u64,
    queue_max: u64,
    ecn_marks: u64,
    drops: u64,
    trims: u64,
    pause_ns: u64,
    pauses_sent: u64,
}

impl Row {
    /// Two rows of one port at one time (the owner's and another partition's): the
    /// counts add, the queue readings are the owner's (the other's are zero).
    pub(crate) fn plus(self, o: Row) -> Row {
        Row {
            tx_bytes: self.tx_bytes + o.tx_bytes,
            util: self.util + o.util,
            queue_bytes: self.queue_bytes.max(o.queue_bytes),
            queue_max: self.queue_max.max(o.queue_max),
            ecn_marks: self.ecn_marks + o.ecn_marks,
            drops: self.drops + o.drops,
            trims: self.trims + o.trims,
            pause_ns: self.pause_ns + o.pause_ns,
            pauses_sent: self.pauses_sent + o.pauses_sent,
        }
    }
}

/// The sampling instant after `last` (on the grid of `interval`) when nothing is
/// scheduled before `next_event`: the next boundary, or, across an idle stretch, the
/// last boundary at or before `next_event`. The samples skipped would have found no
/// port doing anything, and stepping through them one by one made a run whose flows
/// start late (or whose links are very slow) take forever.
pub(crate) fn sample_after(last: Time, interval: Dur, next_event: Time) -> Time {
    let step = last + interval;
    if next_event <= step {
        return step;
    }
    let whole = next_event.since(last).ps() / interval.ps();
    last + Dur::from_ps(whole * interval.ps())
}

/// Rows the port time series may hold (about 1 GB of columns): sampling stops there,
/// and the summary says when. A long run of a large or busy fabric at a fine interval
/// otherwise filled the memory and the process aborted (16 s simulated at 10 us).
pub const MAX_SAMPLE_ROWS: usize = 12_000_000;

/// Samples every port each interval, keeping rows only for ports that did something
/// (sent, queued, marked, dropped, paused) in that interval: a missing row means idle.
pub struct Sampler {
    interval: Dur,
    last: Time,
    /// Rows this sampler may hold (a partition's share of [`MAX_SAMPLE_ROWS`]).
    pub(crate) max_rows: usize,
    /// When sampling stopped at `max_rows`.
    stopped: Option<Time>,
    prev: Vec<Snap>,
    time_ns: Vec<u64>,
    port: Vec<u32>,
    tx_bytes: Vec<u64>,
    util: Vec<f64>,
    queue_bytes: Vec<u64>,
    queue_max: Vec<u64>,
    ecn_marks: Vec<u64>,
    drops: Vec<u64>,
    trims: Vec<u64>,
    pause_ns: Vec<u64>,
    pauses_sent: Vec<u64>,
}

impl Sampler {
    /// A sampler for `fabric` (disabled when `interval` is zero), one of `partitions`.
    pub fn new(fabric: &Fabric, interval: Dur, partitions: u8) -> Sampler {
        Sampler {
            prev: vec![Snap::default(); fabric.ports.len()],
            max_rows: MAX_SAMPLE_ROWS / partitions.max(1) as usize,
            ..Sampler::empty(interval, Time::ZERO)
        }
    }

    pub(crate) fn empty(interval: Dur, last: Time) -> Sampler {
        Sampler {
            interval,
            last,
            max_rows: MAX_SAMPLE_ROWS,
            stopped: None,
            prev: Vec::new(),
            time_ns: Vec::new(),
            port: Vec::new(),
            tx_bytes: Vec::new(),
            util: Vec::new(),
            queue_bytes: Vec::new(),
            queue_max: Vec::new(),
            ecn_marks: Vec::new(),
            drops: Vec::new(),
            trims: Vec::new(),
            pause_ns: Vec::new(),
            pauses_sent: Vec::new(),
        }
    }

    /// Whether sampling is on (and has not stopped at its row limit).
    pub fn enabled(&self) -> bool {
        self.interval > Dur::ZERO && self.stopped.is_none()
    }

    /// When sampling stopped at [`MAX_SAMPLE_ROWS`], if it did.
    pub fn stopped(&self) -> Option<Time> {
        self.stopped
    }

    /// Records the interval ending at `now` and restarts the ports' queue maxima.
    pub fn sample(&mut self, now: Time, fabric: &mut Fabric) {
        self.sample_ports(now, fabric, |_| true);
    }

    /// [`sample`](Self::sample) of the ports `keep` accepts (a partition's own).
    pub fn sample_ports(&mut self, now: Time, fabric: &mut Fabric, keep: impl Fn(&fabricsim_fabric::Port) -> bool) {
        if !self.enabled() || now <= self.last {
            return;
        }
        let dt = now.since(self.last);
        for (i, port) in fabric.ports.iter_mut().enumerate() {
            if !keep(port) {
                // Another partition's port: this copy only counts the frames that
                // crossed to it after the cable went down. Their drops get a row of
                // their own when they happen, added to the owner's in `merge`.
                let drops = port.stats.drops - self.prev[i].stats.drops;
                if drops > 0 {
                    self.push_row(now.as_ns(), i as u32, Row { drops, ..Row::default() });
                    self.prev[i].stats.drops = port.stats.drops;
                }
                continue;
            }
            let cur = Snap { stats: port.stats, paused_ps: port.paused_ps_at(now), busy_ps: port.busy_ps_at(now) };
            let prev = self.prev[i];
            let tx = cur.stats.tx_bytes - prev.stats.tx_bytes;
            let q = port.data_queue_bytes();
            let qmax = cur.stats.queue_max.max(q);
            let marks = cur.stats.ecn_marks - prev.stats.ecn_marks;
            let drops = cur.stats.drops - prev.stats.drops;
            let trims = cur.stats.trims - prev.stats.trims;
            let paused = cur.paused_ps - prev.paused_ps;
            let pauses = cur.stats.pauses_sent - prev.stats.pauses_sent;
            if tx > 0 || q > 0 || qmax > 0 || drops > 0 || paused > 0 || pauses > 0 {
                let row = Row {
                    tx_bytes: tx,
                    // Saturating: a partitioned run's last sample (at the end) finds
                    // ports that went on for up to one lookahead; their busy time then
                    // counts frames started after the end, and may read less than
                    // before.
                    util: cur.busy_ps.saturating_sub(prev.busy_ps) as f64 / dt.ps() as f64,
                    queue_bytes: q,
                    queue_max: qmax,
                    ecn_marks: marks,
                    drops,
                    trims,
                    pause_ns: paused / 1000,
                    pauses_sent: pauses,
                };
                self.push_row(now.as_ns(), i as u32, row);
            }
            self.prev[i] = cur;
            port.stats.queue_max = q;
        }
        self.last = now;
        if self.time_ns.len() >= self.max_rows {
            self.stopped = Some(now);
        }
    }

    pub(crate) fn push_row(&mut self, time_ns: u64, port: u32, r: Row) {
        self.time_ns.push(time_ns);
        self.port.push(port);
        self.tx_bytes.push(r.tx_bytes);
        self.util.push(r.util);
        self.queue_bytes.push(r.queue_bytes);
        self.queue_max.push(r.queue_max);
        self.ecn_marks.push(r.ecn_marks);
        self.drops.push(r.drops);
        self.trims.push(r.trims);
        self.pause_ns.push(r.pause_ns);
        self.pauses_sent.push(r.pauses_sent);
    }

    pub(crate) fn row(&self, i: usize) -> Row {
        Row {
            tx_bytes: self.tx_bytes[i],
            util: self.util[i],
            queue_bytes: self.queue_bytes[i],
            queue_max: self.queue_max[i],
            ecn_marks: self.ecn_marks[i],
            drops: self.drops[i],
            trims: self.trims[i],
            pause_ns: self.pause_ns[i],
            pauses_sent: self.pauses_sent[i],
        }
    }

    /// Merges the samples another partition took of its ports (`theirs(port)`) into
    /// these, ordered by time then port, and takes over its snapshots of them. Rows
    /// of one port at one time from both (the owner's, and the other's drops of
    /// frames that crossed to it) become one.
    pub fn merge(&mut self, o: &Sampler, theirs: impl Fn(usize) -> bool) {
        for (p, snap) in o.prev.iter().enumerate() {
            // The drops a copy counted on a port it does not own are summed into the
            // owner's counter at the end (`Fabric::absorb`), so the snapshots add too.
            let drops = self.prev[p].stats.drops + snap.stats.drops;
            if theirs(p) {
                self.prev[p] = *snap;
            }
            self.prev[p].stats.drops = drops;
        }
        self.last = self.last.max(o.last);
        let stopped = match (self.stopped, o.stopped) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let mut order: Vec<(u64, u32, bool, usize)> = (0..self.time_ns.len())
            .map(|i| (self.time_ns[i], self.port[i], false, i))
            .chain((0..o.time_ns.len()).map(|i| (o.time_ns[i], o.port[i], true, i)))
            .collect();
        order.sort_by_key(|r| (r.0, r.1));
        let mut merged = Sampler {
            prev: std::mem::take(&mut self.prev),
            max_rows: self.max_rows,
            stopped,
            ..Sampler::empty(self.interval, self.last)
        };
        // A row is pushed once the next one is of another port or time.
        let mut pending: Option<(u64, u32, Row)> = None;
        for (time, port, other, i) in order {
            let r = (if other { o } else { &*self }).row(i);
            pending = match pending {
                Some((t, p, acc)) if (t, p) == (time, port) => Some((t, p, acc.plus(r))),
                Some((t, p, acc)) => {
                    merged.push_row(t, p, acc);
                    Some((time, port, r))
                }
                None => Some((time, port, r)),
            };
        }
        if let Some((t, p, acc)) = pending {
            merged.push_row(t, p, acc);
        }
        *self = merged;
    }

    /// The port time series, moved out (a copy would double the largest table's
    /// memory just as the run ends).
    pub fn take_table(&mut self) -> Table {
        let mut t = Table::default();
        t.push("time_ns", Column::U64(std::mem::take(&mut self.time_ns)))
            .push("port_id", Column::U32(std::mem::take(&mut self.port)))
            .push("tx_bytes", Column::U64(std::mem::take(&mut self.tx_bytes)))
            .push("utilization", Column::F64(std::mem::take(&mut self.util)))
            .push("queue_bytes", Column::U64(std::mem::take(&mut self.queue_bytes)))
            .push("queue_max_bytes", Column::U64(std::mem::take(&mut self.queue_max)))
            .push("ecn_marks", Column::U64(std::mem::take(&mut self.ecn_marks)))
            .push("drops", Column::U64(std::mem::take(&mut self.drops)))
            .push("trims", Column::U64(std::mem::take(&mut self.trims)))
            .push("pause_ns", Column::U64(std::mem::take(&mut self.pause_ns)))
            .push("pfc_pauses_sent", Column::U64(std::mem::take(&mut self.pauses_sent)));
        t
    }
}

/// Traffic each connection delivered per sampling interval.
#[derive(Clone, Debug, Default)]
pub struct ThroughputRows {
    /// Interval end.
    pub time_ns: Vec<u64>,
    /// Connection.
    pub connection: Vec<u32>,
    /// Payload bytes placed at the receiver during the interval.
    pub bytes: Vec<u64>,
    /// The same as a rate.
    pub gbps: Vec<f64>,
}

impl ThroughputRows {
    /// Merges another partition's rows into these, ordered by time then connection.
    pub(crate) fn merge(&mut self, o: &ThroughputRows) {
        let mut rows: Vec<(u64, u32, u64, f64)> = (0..self.time_ns.len())
            .map(|i| (self.time_ns[i], self.connection[i], self.bytes[i], self.gbps[i]))
            .chain((0..o.time_ns.len()).map(|i| (o.time_ns[i], o.connection[i], o.bytes[i], o.gbps[i])))
            .collect();
        rows.sort_by_key(|r| (r.0, r.1));
        *self = ThroughputRows::default();
        for (t, c, b, g) in rows {
            self.time_ns.push(t);
            self.connection.push(c);
            self.bytes.push(b);
            self.gbps.push(g);
        }
    }
}

impl Sim {
    /// Takes the samples of the grid before `now`, when an event at `now` comes up:
    /// each covers what happened up to and including its time. Across an idle stretch
    /// only the last grid point before it is sampled (see [`sample_after`]). (Once per
    /// interval at most: kept out of the run loop's code.)
    #[cold]
    #[inline(never)]
    pub(crate) fn sample_before(&mut self, now: Time) {
        let interval = self.scenario.output.sample_interval;
        while self.next_sample < now {
            let t = self.next_sample;
            self.sample(t);
            self.next_sample = if self.sampler.enabled() { sample_after(t, interval, now) } else { Time::MAX };
        }
    }

    /// Ends the sampling of a run that ends at `end`: the grid points up to `end`, then
    /// the last, part interval (nothing if `end` is on the grid).
    pub(crate) fn sample_through(&mut self, end: Time) {
        self.sample_before(Time(end.0.saturating_add(1)));
        self.sample(end);
    }

    /// Records the interval ending at `now`: port counters, each connection's
    /// delivered bytes, entropy-value state changes.
    pub(crate) fn sample(&mut self, now: Time) {
        // Lazy switch ports catch up, so counters and queues read as of now.
        self.fabric.settle(now);
        match &self.part {
            // A partition samples the ports it owns (its copies of the others' may
            // count drops of frames that crossed to it; they are merged at the end).
            Some((owner, me)) => self.sampler.sample_ports(now, &mut self.fabric, |p| owner[p.node as usize] == *me),
            None => self.sampler.sample(now, &mut self.fabric),
        }
        let part = &self.part;
        self.nic.drain_path_logs(now, |h| owns(part, h), &mut self.ev_log);
        if !self.sampler.enabled() || now <= self.last_sample {
            return;
        }
        // Rows cover whole intervals, the last one too (a short one ending with the run
        // made a packet that had taken a whole interval to arrive look like a burst
        // at twice the line rate): it ends on the grid, after the run's end.
        let interval = self.scenario.output.sample_interval;
        let end = if interval > Dur::ZERO { now.max(self.last_sample + interval) } else { now };
        let dt = end.since(self.last_sample).as_secs_f64();
        for c in 0..self.nic.connections() {
            let placed = self.nic.conn_bytes_placed(c);
            let delta = placed - self.conn_bytes[c];
            if delta > 0 {
                self.throughput.time_ns.push(end.as_ns());
                self.throughput.connection.push(c as u32);
                self.throughput.bytes.push(delta);
                self.throughput.gbps.push(delta as f64 * 8.0 / dt / 1e9);
                self.conn_bytes[c] = placed;
            }
        }
        self.last_sample = now;
    }
}
