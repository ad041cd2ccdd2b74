//! Maestro (Tian et al., SOSR '21): messages cut into chunks over K ordinary RoCE QPs.
//!
//! Maestro is middleware beside the application, so it lives here, in the multi-QP
//! layer, over unmodified RoCE RC QPs (each its own 5-tuple, go-back-N and DCQCN). A
//! connection's [`Maestro`] state is its policy object:
//!
//! * the *decomposer* cuts a message into chunks of [`MaestroConfig::chunk`] bytes, each
//!   posted as an RDMA WRITE at its offset of the message's buffer (sender-placed
//!   reassembly: the receiver copies nothing); a chunk record (the paper's WR
//!   descriptor: message, chunk, QP) ties the QP's completion back to its message,
//!   which completes once every chunk has;
//! * at most [`MaestroConfig::max_wrs`] chunks are outstanding per connection (the
//!   paper's limit of 8 alive WRs); the others wait, and each is given a QP by the
//!   *load balancer* only when a slot frees, so the balancer sees fresh path state;
//! * the *path monitor* keeps per QP its bandwidth (chunk bytes over the time the QP
//!   spent on the chunk), its latency (probes and small messages, posted to
//!   acknowledged), the CNPs DCQCN received, and whether the QP failed (a CQE error:
//!   its retry limit exceeded);
//! * a message of at most [`MaestroConfig::small`] bytes goes whole, at once, on the
//!   healthy QP of lowest latency (the paper's barrier token, Fig. 12f);
//! * a QP that fails is out: its unacknowledged chunks go back to the head of the
//!   queue and are posted again on healthy QPs (failover, Fig. 12e).
//!
//! Posting costs CPU time: each QP has a worker thread (the paper's design, section
//! 4.2 "Multi-QP WR Posting") that spends [`MaestroConfig::post_cost`] on every work
//! request it posts (`ibv_post_send` and the descriptor hand-off), one after the
//! other, before the NIC has it. Small chunks mean more work requests, so more of the
//! worker's time lies between a completion and the next chunk on the wire.
//!
//! Probes are 2-byte WRITEs (the paper's probe message): when a message is posted,
//! every healthy QP whose newest latency sample is older than
//! [`MaestroConfig::probe_interval`] is probed, so probing runs while the connection is
//! in use and stops when it idles (a run with nothing left to send ends).
//!
//! The state reports upward like the rest of the layer: the driver feeds it the QPs'
//! events and queues the message-level outputs; it never calls into the run loop.

use crate::{Nic, NicOutput, Wire};
use fabricsim_engine::{Dur, Time};
use fabricsim_transport::{AnyEndpoint, AppEvent, Endpoint, Message};
use std::collections::VecDeque;

/// How chunks are given to QPs (`transport.balancer`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Balancer {
    /// In turn over the healthy QPs.
    RoundRobin,
    /// To the QP that would finish it soonest at the bandwidth it shows: over a
    /// message, each path's share follows its bandwidth.
    Proportional,
    /// Every chunk to the healthy QP of lowest latency.
    LowestLatency,
}

impl Balancer {
    /// Every balancer's scenario name, in documentation order.
    pub const NAMES: &'static [&'static str] = &["round_robin", "proportional", "lowest_latency"];

    /// The balancer named `name`, if any.
    pub fn from_name(name: &str) -> Option<Balancer> {
        match name {
            "round_robin" => Some(Balancer::RoundRobin),
            "proportional" => Some(Balancer::Proportional),
            "lowest_latency" => Some(Balancer::LowestLatency),
            _ => None,
        }
    }
}

/// The verb the application posts its messages with (`transport.verb`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verb {
    /// RDMA WRITE: chunks written at their offsets; the message completes at the
    /// receiver when its last byte is placed.
    Write,
    /// SEND: the chunks are still WRITEs at their offsets (the paper's section 4.3: a
    /// SEND cut into WRITEs), and once all have completed an empty SEND with immediate
    /// data goes on one QP to consume the receiver's posted receive; the message
    /// completes at the receiver when that SEND arrives. A message of at most
    /// [`MaestroConfig::small`] bytes goes whole as one SEND with immediate.
    Send,
}

impl Verb {
    /// Every verb's scenario name, in documentation order.
    pub const NAMES: &'static [&'static str] = &["write", "send"];

    /// The verb named `name`, if any.
    pub fn from_name(name: &str) -> Option<Verb> {
        match name {
            "write" => Some(Verb::Write),
            "send" => Some(Verb::Send),
            _ => None,
        }
    }
}

/// A Maestro connection's settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MaestroConfig {
    /// Chunk size in bytes (at least 1).
    pub chunk: u64,
    /// How chunks are given to QPs.
    pub balancer: Balancer,
    /// Messages of at most this many bytes go whole on the lowest-latency QP (0: none).
    pub small: u64,
    /// Chunks outstanding per connection (at least 1).
    pub max_wrs: u32,
    /// Latency samples older than this make a QP due for a probe.
    pub probe_interval: Dur,
    /// CPU time the QP's worker thread spends posting one work request (0: none).
    pub post_cost: Dur,
    /// The verb messages are posted with.
    pub verb: Verb,
}

impl MaestroConfig {
    /// The work requests a message of `size` bytes takes (probes aside): one for a
    /// small message, else its chunks, and for a SEND one more, the closing SEND
    /// with immediate.
    pub fn parts(&self, size: u64) -> u32 {
        if size <= self.small {
            1
        } else {
            size.div_ceil(self.chunk).max(1) as u32 + u32::from(self.verb == Verb::Send)
        }
    }
}

/// Bytes of a latency probe (the paper's 2-byte probe message).
pub const PROBE_BYTES: u64 = 2;

/// The address probes write to.
const PROBE_REGION: u64 = 0x7e00_0000_0000;

/// The message id a probe's chunk record carries.
const PROBE: u32 = u32::MAX;

/// Weight of a new sample in the monitor's moving averages (RFC 6298's 1/8).
const EWMA: f64 = 0.125;

/// One posted WRITE: a chunk of a message, a whole small message, or a probe.
#[derive(Clone, Copy, Debug)]
struct Chunk {
    msg: u32,
    offset: u64,
    len: u64,
    /// The QP it was last posted on, and when.
    qp: u32,
    posted: Time,
    received: bool,
    acked: bool,
    /// Counted against the connection's outstanding chunks (not probes or small
    /// messages).
    windowed: bool,
    /// Posted as a SEND with immediate (a SEND message's last work request, or a
    /// small SEND whole), else as a WRITE.
    send: bool,
}

/// What the path monitor knows of one QP, and its counters for the results.
#[derive(Clone, Copy, Debug, Default)]
pub struct QpPath {
    /// Failed (retry limit exceeded): out of use.
    pub failed: bool,
    /// Bytes posted on it not yet acknowledged.
    outstanding: u64,
    /// When it last completed something (its RC completions come in order: the next
    /// chunk's service starts no earlier).
    last_done: Time,
    /// Bytes per second it showed carrying chunks (0: not yet measured).
    pub bandwidth: f64,
    /// Smoothed latency of probes and small messages, posted to acknowledged.
    pub latency: Option<Dur>,
    last_sample: Option<Time>,
    probing: bool,
    /// Chunks of messages acknowledged on it (small messages included).
    pub chunks: u64,
    /// Their payload bytes.
    pub bytes: u64,
    /// Latency samples taken, and their sum in picoseconds.
    pub latency_samples: u64,
    pub latency_sum_ps: u128,
    /// Chunks taken off it when it failed, to be posted again elsewhere.
    pub reposted: u64,
    /// Time its worker thread spent posting work requests, picoseconds.
    pub post_busy_ps: u64,
    /// A source port it is to move to once nothing of it is in flight (path
    /// re-selection): meanwhile the balancer gives it nothing.
    pub moving: Option<u16>,
    /// Times it moved to a new source port.
    pub moves: u64,
}

/// A QP's worker thread: it posts the work requests given to it one after the other.
#[derive(Clone, Debug, Default)]
struct Worker {
    /// When it is done with the work requests given to it so far.
    free: Time,
    /// Work requests it is posting, with when each reaches the NIC.
    posting: VecDeque<(Time, u32)>,
}

/// A Maestro connection's policy state (see the module documentation).
#[derive(Clone, Debug)]
pub struct Maestro {
    cfg: MaestroConfig,
    /// The path monitor, per QP.
    pub paths: Vec<QpPath>,
    /// The posting worker, per QP.
    workers: Vec<Worker>,
    /// Every WRITE posted, by id (a QP's sequence number maps to one of these).
    chunks: Vec<Chunk>,
    /// Chunks waiting for a slot, in order.
    pending: VecDeque<u32>,
    /// Windowed chunks posted and not acknowledged.
    alive: u32,
    /// The QP round robin gives the next chunk to.
    turn: u32,
}

impl Maestro {
    /// The state of a connection of `qps` QPs.
    pub fn new(cfg: MaestroConfig, qps: u32) -> Maestro {
        assert!(cfg.chunk > 0 && cfg.max_wrs > 0 && qps > 0, "a chunk, a WR and a QP at least");
        Maestro {
            cfg,
            paths: vec![QpPath::default(); qps as usize],
            workers: vec![Worker::default(); qps as usize],
            chunks: Vec::new(),
            pending: VecDeque::new(),
            alive: 0,
            turn: 0,
        }
    }

    /// Its settings.
    pub fn config(&self) -> &MaestroConfig {
        &self.cfg
    }

    /// QPs the balancer may use: not failed, not moving to a new path.
    fn healthy(&self) -> impl Iterator<Item = u32> + '_ {
        (0..self.paths.len() as u32).filter(|&q| self.usable(q))
    }

    fn usable(&self, q: u32) -> bool {
        let p = &self.paths[q as usize];
        !p.failed && p.moving.is_none()
    }

    /// Whether the connection has anything to do: chunks waiting or in flight.
    pub fn busy(&self) -> bool {
        !self.pending.is_empty() || self.paths.iter().any(|p| p.outstanding > 0)
    }

    /// Whether QP `q` may move now: a move is due and nothing of it is in flight or
    /// with its worker.
    fn ready_to_move(&self, q: usize) -> bool {
        let p = &self.paths[q];
        p.moving.is_some() && p.outstanding == 0 && self.workers[q].posting.is_empty()
    }

    /// The healthy QP of lowest latency; a QP not yet measured first (it is
    /// explored), ties to the lowest number. `None` if every QP failed.
    fn lowest_latency(&self) -> Option<u32> {
        self.healthy().min_by_key(|&q| self.paths[q as usize].latency.map_or(0, |d| d.ps() + 1))
    }

    /// The QP the balancer gives a chunk of `len` bytes to, `None` if every QP failed.
    fn choose(&mut self, len: u64) -> Option<u32> {
        let k = self.paths.len() as u32;
        match self.cfg.balancer {
            Balancer::RoundRobin => {
                let q = (0..k).map(|i| (self.turn + i) % k).find(|&q| self.usable(q))?;
                self.turn = (q + 1) % k;
                Some(q)
            }
            Balancer::Proportional => {
                // A QP not yet measured is credited with the best bandwidth seen (all
                // equal before any measurement); ties go in turn.
                let best = self.healthy().map(|q| self.paths[q as usize].bandwidth).fold(0.0, f64::max);
                let finish = |p: &QpPath| {
                    let bw = if p.bandwidth > 0.0 { p.bandwidth } else { best.max(1.0) };
                    (p.outstanding + len) as f64 / bw
                };
                let mut pick: Option<(u32, f64)> = None;
                for i in 0..k {
                    let q = (self.turn + i) % k;
                    let p = &self.paths[q as usize];
                    if !self.usable(q) {
                        continue;
                    }
                    let f = finish(p);
                    if pick.is_none_or(|(_, b)| f < b) {
                        pick = Some((q, f));
                    }
                }
                let q = pick?.0;
                self.turn = (q + 1) % k;
                Some(q)
            }
            Balancer::LowestLatency => self.lowest_latency(),
        }
    }

    fn record(&mut self, msg: u32, offset: u64, len: u64, windowed: bool) -> u32 {
        self.chunks.push(Chunk {
            msg,
            offset,
            len,
            qp: 0,
            posted: Time::ZERO,
            received: false,
            acked: false,
            windowed,
            send: false,
        });
        self.chunks.len() as u32 - 1
    }

    /// The message chunk `id` belongs to (`None`: a probe).
    pub(crate) fn message_of(&self, id: u32) -> Option<u32> {
        let m = self.chunks[id as usize].msg;
        (m != PROBE).then_some(m)
    }
}

impl Nic {
    /// Makes connection `conn` (built with [`Nic::add_connection`]) a Maestro
    /// connection: its messages are chunked and balanced over its QPs by `cfg`.
    pub fn set_maestro(&mut self, conn: u32, cfg: MaestroConfig) {
        let c = &mut self.conns[conn as usize];
        c.maestro = Some(Box::new(Maestro::new(cfg, c.qps)));
    }

    /// The path monitor of connection `conn`, if it is a Maestro connection.
    pub fn maestro(&self, conn: u32) -> Option<&Maestro> {
        self.conns[conn as usize].maestro.as_deref()
    }

    fn maestro_mut(&mut self, conn: u32) -> &mut Maestro {
        self.conns[conn as usize].maestro.as_deref_mut().expect("a Maestro connection")
    }

    /// Posts message `msg` of `size` bytes on Maestro connection `conn`: a small one
    /// whole on the lowest-latency QP, a larger one as chunks queued for the balancer;
    /// QPs due for a probe are probed.
    pub(crate) fn post_chunked<W: Wire>(&mut self, now: Time, conn: u32, msg: u32, size: u64, wire: &mut W) {
        let cfg = self.maestro_mut(conn).cfg;
        let n = cfg.parts(size);
        self.parts[msg as usize] = crate::multiqp::Parts { unreceived: n, unacked: n };
        let m = self.maestro_mut(conn);
        let due: Vec<u32> = m
            .healthy()
            .filter(|&q| {
                let p = &m.paths[q as usize];
                !p.probing && p.last_sample.is_none_or(|t| t + cfg.probe_interval <= now)
            })
            .collect();
        for q in due {
            let m = self.maestro_mut(conn);
            let id = m.record(PROBE, 0, PROBE_BYTES, false);
            m.paths[q as usize].probing = true;
            self.post_chunk(now, conn, id, q, wire);
        }
        let m = self.maestro_mut(conn);
        if size <= cfg.small {
            let id = m.record(msg, 0, size, false);
            m.chunks[id as usize].send = cfg.verb == Verb::Send;
            match m.lowest_latency() {
                Some(q) => self.post_chunk(now, conn, id, q, wire),
                None => m.pending.push_back(id),
            }
        } else {
            let mut offset = 0;
            while offset < size {
                let len = cfg.chunk.min(size - offset);
                let id = m.record(msg, offset, len, true);
                m.pending.push_back(id);
                offset += len;
            }
            self.dispatch(now, conn, wire);
        }
    }

    /// Gives waiting chunks to QPs while the connection has slots and a healthy QP.
    pub(crate) fn dispatch<W: Wire>(&mut self, now: Time, conn: u32, wire: &mut W) {
        loop {
            let m = self.maestro_mut(conn);
            let Some(&id) = m.pending.front() else { return };
            let c = m.chunks[id as usize];
            if c.windowed && m.alive >= m.cfg.max_wrs {
                return;
            }
            let q = if c.windowed { m.choose(c.len) } else { m.lowest_latency() };
            let Some(q) = q else { return };
            m.pending.pop_front();
            self.post_chunk(now, conn, id, q, wire);
        }
    }

    /// Gives chunk `id` of connection `conn` to its QP `q`: the balancer's books
    /// follow at once; the QP's worker posts it after the work requests before it, at
    /// [`MaestroConfig::post_cost`] each.
    fn post_chunk<W: Wire>(&mut self, now: Time, conn: u32, id: u32, q: u32, wire: &mut W) {
        let c = &mut self.conns[conn as usize];
        let m = c.maestro.as_deref_mut().expect("a Maestro connection");
        let chunk = &mut m.chunks[id as usize];
        chunk.qp = q;
        let (len, windowed) = (chunk.len, chunk.windowed);
        m.alive += u32::from(windowed);
        let cost = m.cfg.post_cost;
        let p = &mut m.paths[q as usize];
        p.outstanding += len;
        if cost == Dur::ZERO {
            return self.hand_over(now, conn, id, q, wire);
        }
        p.post_busy_ps += cost.ps();
        let w = &mut m.workers[q as usize];
        let ready = w.free.max(now) + cost;
        w.free = ready;
        w.posting.push_back((ready, id));
        if w.posting.len() == 1 {
            let ep = c.first_ep + 2 * q;
            wire.schedule(ready, crate::NicEvent::Post(ep));
        }
    }

    /// Requester `ep`'s worker is done with the work requests due by `now`: the NIC
    /// takes them, in order.
    pub(crate) fn posted<W: Wire>(&mut self, now: Time, ep: u32, wire: &mut W) {
        let conn = self.meta[ep as usize].conn;
        let q = (ep - self.conns[conn as usize].first_ep) / 2;
        loop {
            let w = &mut self.maestro_mut(conn).workers[q as usize];
            match w.posting.front() {
                Some(&(at, id)) if at <= now => {
                    w.posting.pop_front();
                    self.hand_over(now, conn, id, q, wire);
                }
                Some(&(at, _)) => return wire.schedule(at, crate::NicEvent::Post(ep)),
                None => return,
            }
        }
    }

    /// Chunk `id` of connection `conn` reaches its QP `q`'s NIC queue as the QP's next
    /// message: an RDMA WRITE at its offset of the message's buffer.
    fn hand_over<W: Wire>(&mut self, now: Time, conn: u32, id: u32, q: u32, wire: &mut W) {
        let c = &mut self.conns[conn as usize];
        let m = c.maestro.as_deref_mut().expect("a Maestro connection");
        let chunk = &mut m.chunks[id as usize];
        chunk.posted = now;
        let Chunk { msg, offset, len, send, .. } = *chunk;
        if let Some(log) = &mut self.handovers {
            log.push((conn, q, msg, len));
        }
        let queue = &mut c.msgs[q as usize];
        queue.push(id);
        let seq = queue.len() as u32 - 1;
        let ep = c.first_ep + 2 * q;
        // A probe writes into a region of its own, below every message's.
        let va = if msg == PROBE { PROBE_REGION } else { crate::multiqp::address(c.reuse_buffer, conn, msg, offset) };
        let wr = Message { seq, len, va, rkey: msg };
        match &mut self.eps[ep as usize] {
            AnyEndpoint::RoceRequester(r) if send => r.post_send(wr),
            e => e.post(now, wr),
        }
        self.after_input(now, ep, wire);
        self.ready(now, ep, wire);
    }

    /// Chunk `chunk` of a message, acknowledged on QP `qp` of connection `conn`: the
    /// counters and the message's parts follow, a SEND's closing work request is
    /// queued once its WRITEs are done. Returns whether chunks wait for a slot.
    fn account_acked(&mut self, conn: usize, qp: usize, chunk: Chunk, retransmitted: u64) -> bool {
        let m = self.conns[conn].maestro.as_deref_mut().expect("a Maestro connection");
        let p = &mut m.paths[qp];
        p.chunks += 1;
        p.bytes += chunk.len;
        if chunk.windowed {
            m.alive -= 1;
        }
        let parts = &mut self.parts[chunk.msg as usize];
        parts.unacked -= 1;
        self.out.push_back(NicOutput::Acked { msg: chunk.msg, retransmitted, all: parts.unacked == 0 });
        if m.cfg.verb == Verb::Send && chunk.windowed && parts.unacked == 1 {
            // Every WRITE of a SEND message has completed: its closing SEND with
            // immediate goes next, on the QP of lowest latency.
            let id = m.record(chunk.msg, 0, 0, false);
            m.chunks[id as usize].send = true;
            m.pending.push_front(id);
        }
        !m.pending.is_empty()
    }

    /// QP `qp` (requester `ep`) of connection `conn` takes source port `sport`: a new
    /// path, whose bandwidth and latency the monitor has yet to learn.
    fn rebind(&mut self, conn: usize, qp: usize, ep: u32, sport: u16) {
        let m = self.conns[conn].maestro.as_deref_mut().expect("a Maestro connection");
        let p = &mut m.paths[qp];
        p.moving = None;
        p.moves += 1;
        p.bandwidth = 0.0;
        p.latency = None;
        p.last_sample = None;
        match &mut self.eps[ep as usize] {
            AnyEndpoint::RoceRequester(r) => r.set_sport(sport),
            _ => unreachable!("Maestro's QPs are RoCE"),
        }
    }

    /// Moves QP `qp` of Maestro connection `conn` to UDP source port `sport` (a path
    /// re-selection): at once if nothing of it is in flight, else once its chunks in
    /// flight are acknowledged; until then the balancer gives it nothing.
    pub fn move_qp<W: Wire>(&mut self, now: Time, conn: u32, qp: u32, sport: u16, wire: &mut W) {
        let m = self.maestro_mut(conn);
        if m.paths[qp as usize].failed {
            return;
        }
        m.paths[qp as usize].moving = Some(sport);
        if m.ready_to_move(qp as usize) {
            let ep = self.conns[conn as usize].first_ep + 2 * qp;
            self.rebind(conn as usize, qp as usize, ep, sport);
            self.dispatch(now, conn, wire);
        }
    }

    /// Keeps, from now, each Maestro chunk handed to its QP for
    /// [`take_handovers`](Self::take_handovers) (a partitioned run: the copy that
    /// receives a connection learns so which message each sequence number carries).
    pub fn keep_handovers(&mut self) {
        self.handovers = Some(Vec::new());
    }

    /// The chunks handed to their QPs since the last call, in order: `(connection,
    /// qp, message, bytes)`.
    pub fn take_handovers(&mut self) -> Vec<(u32, u32, u32, u64)> {
        self.handovers.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// Records, on a copy of the world that only receives connection `conn`, that the
    /// sender handed a chunk of `message` (`len` bytes) to QP `qp` as its next work
    /// request (a [`take_handovers`](Self::take_handovers) entry of the sender's copy).
    pub fn book_handover(&mut self, conn: u32, qp: u32, message: u32, len: u64) {
        let c = &mut self.conns[conn as usize];
        let m = c.maestro.as_deref_mut().expect("a Maestro connection");
        let id = m.record(message, 0, len, false);
        c.msgs[qp as usize].push(id);
    }

    /// The UDP source port QP `qp` of connection `conn` sends from now, and the one
    /// it is moving to, if any.
    pub fn qp_sport(&self, conn: u32, qp: u32) -> (u16, Option<u16>) {
        let c = &self.conns[conn as usize];
        let moving = c.maestro.as_deref().and_then(|m| m.paths[qp as usize].moving);
        match &self.eps[(c.first_ep + 2 * qp) as usize] {
            AnyEndpoint::RoceRequester(r) => (r.sport(), moving),
            _ => unreachable!("Maestro's QPs are RoCE"),
        }
    }

    /// An event of QP `qp` of Maestro connection `conn` about chunk `id` (or the QP's
    /// failure): message-level outputs queued, the monitor fed. Returns whether chunks
    /// may now be dispatched.
    pub(crate) fn maestro_event(&mut self, now: Time, conn: usize, qp: usize, e: AppEvent) -> bool {
        let c = &mut self.conns[conn];
        let m = c.maestro.as_deref_mut().expect("a Maestro connection");
        match e {
            AppEvent::Received { seq } => {
                let id = c.msgs[qp][seq as usize];
                let chunk = &mut m.chunks[id as usize];
                // A chunk posted again after its QP failed may arrive twice.
                if chunk.msg == PROBE || chunk.received {
                    return false;
                }
                chunk.received = true;
                let p = &mut self.parts[chunk.msg as usize];
                p.unreceived -= 1;
                if p.unreceived == 0 {
                    self.out.push_back(NicOutput::Received { msg: chunk.msg });
                }
                false
            }
            AppEvent::Acked { seq, retransmitted } => {
                let id = c.msgs[qp][seq as usize];
                let chunk = m.chunks[id as usize];
                if chunk.acked || chunk.qp != qp as u32 {
                    // Acknowledged on a QP it was taken off (it failed meanwhile).
                    return false;
                }
                m.chunks[id as usize].acked = true;
                let p = &mut m.paths[qp];
                p.outstanding = p.outstanding.saturating_sub(chunk.len);
                let start = chunk.posted.max(p.last_done);
                p.last_done = now;
                if !chunk.windowed {
                    // A probe or a small message: a latency sample.
                    let d = now - chunk.posted;
                    p.latency = Some(
                        p.latency.map_or(d, |l| Dur((l.ps() as f64 * (1.0 - EWMA) + d.ps() as f64 * EWMA) as u64)),
                    );
                    p.last_sample = Some(now);
                    p.latency_samples += 1;
                    p.latency_sum_ps += d.ps() as u128;
                } else if now > start {
                    let bw = chunk.len as f64 / (now - start).as_secs_f64();
                    p.bandwidth = if p.bandwidth > 0.0 { p.bandwidth * (1.0 - EWMA) + bw * EWMA } else { bw };
                }
                if m.ready_to_move(qp) {
                    // Nothing of it in flight now: it takes its new path.
                    let sport = m.paths[qp].moving.take().expect("a move due");
                    let ep = c.first_ep + 2 * qp as u32;
                    m.paths[qp].probing = false;
                    self.rebind(conn, qp, ep, sport);
                    if chunk.msg != PROBE {
                        self.account_acked(conn, qp, chunk, retransmitted);
                    }
                    return true;
                }
                if chunk.msg == PROBE {
                    m.paths[qp].probing = false;
                    return false;
                }
                self.account_acked(conn, qp, chunk, retransmitted)
            }

            AppEvent::Failed => {
                // A CQE error: the QP is out, and what it had not completed goes back
                // to the head of the queue, in order.
                // Those its worker has not posted yet come after those it has.
                let p = &mut m.paths[qp];
                p.failed = true;
                p.moving = None;
                p.outstanding = 0;
                p.probing = false;
                let waiting: Vec<u32> = m.workers[qp].posting.drain(..).map(|(_, id)| id).collect();
                let lost: Vec<u32> = c.msgs[qp]
                    .iter()
                    .copied()
                    .chain(waiting)
                    .filter(|&id| {
                        let ch = &m.chunks[id as usize];
                        ch.qp == qp as u32 && !ch.acked && ch.msg != PROBE
                    })
                    .collect();
                m.paths[qp].reposted += lost.len() as u64;
                for &id in lost.iter().rev() {
                    if m.chunks[id as usize].windowed {
                        m.alive -= 1;
                    }
                    m.pending.push_front(id);
                }
                if m.paths.iter().all(|p| p.failed) {
                    self.out.push_back(NicOutput::Failed { conn: conn as u32 });
                }
                true
            }
        }
    }
}

/// Picks `k` of `candidates` (UDP source ports in the order drawn) whose paths share as
/// few links as possible: greedily, pick `i` the candidate whose path (`trace(i,
/// port)`: the links it crosses for the QP of that pick, `None` if it has none)
/// overlaps least with those already picked, the first drawn on ties. Overlap counts
/// each link once per picked path on it, so that with more QPs than disjoint paths
/// the extra QPs spread evenly (two per spine for 8 QPs over 4, not three on one).
/// Returns fewer than `k` only if fewer candidates have paths.
pub fn disjoint_ports(candidates: &[u16], k: usize, trace: impl Fn(usize, u16) -> Option<Vec<u32>>) -> Vec<u16> {
    let mut used: Vec<u32> = Vec::new();
    let mut picked: Vec<u16> = Vec::new();
    while picked.len() < k {
        let i = picked.len();
        let best = candidates
            .iter()
            .filter(|s| !picked.contains(s))
            .filter_map(|&s| Some((s, trace(i, s)?)))
            .map(|(s, links)| (overlap(&links, &used), s, links))
            .min_by_key(|&(shared, _, _)| shared);
        let Some((_, s, links)) = best else { break };
        used.extend(links);
        picked.push(s);
    }
    picked
}

/// How many times the links of `path` appear in `used` (the links of the paths picked
/// so far, each path's listed once).
pub fn overlap(path: &[u32], used: &[u32]) -> usize {
    path.iter().map(|l| used.iter().filter(|u| *u == l).count()).sum()
}

/// Links that more than one of `ports`' paths cross (counted once per extra path).
pub fn shared_links(ports: &[u16], trace: impl Fn(usize, u16) -> Option<Vec<u32>>) -> usize {
    let mut seen: Vec<u32> = Vec::new();
    let mut shared = 0;
    for (i, &s) in ports.iter().enumerate() {
        for l in trace(i, s).unwrap_or_default() {
            if seen.contains(&l) {
                shared += 1;
            } else {
                seen.push(l);
            }
        }
    }
    shared
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(balancer: Balancer, qps: u32) -> Maestro {
        let cfg = MaestroConfig {
            chunk: 100,
            balancer,
            small: 8,
            max_wrs: 8,
            probe_interval: Dur::from_us(10),
            post_cost: Dur::ZERO,
            verb: Verb::Write,
        };
        Maestro::new(cfg, qps)
    }

    #[test]
    fn round_robin_skips_failed_qps() {
        let mut m = state(Balancer::RoundRobin, 3);
        m.paths[1].failed = true;
        let picks: Vec<_> = (0..4).map(|_| m.choose(100).unwrap()).collect();
        assert_eq!(picks, [0, 2, 0, 2]);
        m.paths[0].failed = true;
        m.paths[2].failed = true;
        assert_eq!(m.choose(100), None);
    }

    #[test]
    fn proportional_shares_follow_bandwidth() {
        let mut m = state(Balancer::Proportional, 3);
        for (q, bw) in [(0, 1e9), (1, 2e9), (2, 3e9)] {
            m.paths[q].bandwidth = bw;
        }
        // Give 60 chunks out, each adding to its QP's backlog, none completing.
        let mut n = [0u32; 3];
        for _ in 0..60 {
            let q = m.choose(100).unwrap();
            m.paths[q as usize].outstanding += 100;
            n[q as usize] += 1;
        }
        assert_eq!(n, [10, 20, 30], "shares 1:2:3 as the bandwidths");
    }

    #[test]
    fn lowest_latency_explores_unmeasured_qps_then_takes_the_fastest() {
        let mut m = state(Balancer::LowestLatency, 3);
        m.paths[0].latency = Some(Dur::from_us(5));
        m.paths[2].latency = Some(Dur::from_us(2));
        assert_eq!(m.lowest_latency(), Some(1), "QP 1 has no sample yet");
        m.paths[1].latency = Some(Dur::from_us(9));
        assert_eq!(m.lowest_latency(), Some(2));
        m.paths[2].failed = true;
        assert_eq!(m.lowest_latency(), Some(0));
    }

    #[test]
    fn disjoint_ports_prefer_paths_sharing_no_link() {
        // Ports 1 and 2 share link 10; 3 is disjoint from 1.
        let paths = |_: usize, s: u16| match s {
            1 => Some(vec![10, 11]),
            2 => Some(vec![10, 12]),
            3 => Some(vec![20, 21]),
            4 => Some(vec![20, 22]),
            _ => None,
        };
        assert_eq!(disjoint_ports(&[1, 2, 3, 4, 5], 2, paths), [1, 3]);
        assert_eq!(disjoint_ports(&[1, 2, 3, 4, 5], 3, paths), [1, 3, 2]);
        assert_eq!(disjoint_ports(&[1, 2, 3, 4, 5], 9, paths).len(), 4, "5 has no path");
        // Two spines (first links 10 and 20), three ports each: four QPs go two and
        // two, although every further port shares a link with a pick.
        let spines = |_: usize, s: u16| Some(vec![if s < 4 { 10 } else { 20 }, 30 + s as u32, 99]);
        let picked = disjoint_ports(&[1, 2, 3, 4, 5, 6], 4, spines);
        assert_eq!(picked.iter().filter(|&&s| s < 4).count(), 2, "{picked:?}");
        assert_eq!(shared_links(&[1, 3], paths), 0);
        assert_eq!(shared_links(&[1, 2, 3], paths), 1);
    }
}
