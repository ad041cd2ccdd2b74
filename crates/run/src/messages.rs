//! Message bookkeeping: when each message starts, completes and is acknowledged, and
//! the dependencies that release one message when others have been received.
//!
//! The NIC layer moves a message's parts; this layer knows the application's view: a
//! message starts at its workload's time once every message it depends on has been
//! received (or, for one marked `on_ack`, acknowledged at its sender), and its record (the flow table's row) collects its times.

use crate::factory::{self, TransportSpec};
use crate::ideal::{ideal_fct, sender_ideal_fct};
use crate::sim::{Event, FabricWire, Sim};
use fabricsim_engine::{Dur, Rate, Time};
use fabricsim_nic::{NicOutput, Split};
use fabricsim_workload::Plan;

/// Per-message bookkeeping, exported as the flow records.
#[derive(Clone, Copy, Debug)]
pub struct MsgState {
    pub(crate) deps_left: u32,
    /// The earliest it may start given the dependencies received so far: its own
    /// start, and each received one's time plus its gap (`MessageSpec::after`).
    pub(crate) ready: Time,
    /// When it was posted (`Time::MAX` if never).
    pub start: Time,
    /// When its last byte was placed (`Time::MAX` if never).
    pub finish: Time,
    /// When the sender had every part acknowledged (`Time::MAX` if never).
    pub acked: Time,
    /// Packets sent more than once for it.
    pub retransmitted: u64,
    /// Ideal completion time on an empty fabric.
    pub ideal: Dur,
    /// Ideal completion time at the sender, by HPCC's convention
    /// ([`crate::ideal::sender_ideal_fct`]).
    pub sender_ideal: Dur,
}

impl MsgState {
    /// A message not yet posted, waiting for `deps` others, with its ideal times.
    pub(crate) fn new(deps: u32, start: Time, ideal: Dur, sender_ideal: Dur) -> MsgState {
        MsgState {
            deps_left: deps,
            ready: start,
            start: Time::MAX,
            finish: Time::MAX,
            acked: Time::MAX,
            retransmitted: 0,
            ideal,
            sender_ideal,
        }
    }
}

/// Which messages wait for which, in compressed form: message `d` depends on `m` when
/// `(d, gap)` is among `dependents[start[m]..start[m + 1]]`, `gap` the time `d` waits
/// after `m` is received (a compute gap, `MessageSpec::after`).
///
/// Multishot triggers ([`fabricsim_workload::Shot`]) release as the run goes: `fires`
/// lists `(activator, trigger)` sorted, and `next[s]` is trigger `s`'s next target.
#[derive(Clone, Debug, Default)]
pub struct Dependencies {
    start: Vec<u32>,
    pub(crate) dependents: Vec<(u32, Dur)>,
    fires: Vec<(u32, u32)>,
    next: Vec<u32>,
}

impl Dependencies {
    /// The index of `plan`'s dependencies.
    pub(crate) fn new(plan: &Plan) -> Dependencies {
        let mut start = vec![0u32; plan.messages.len() + 1];
        for m in &plan.messages {
            for &d in &m.deps {
                start[d as usize + 1] += 1;
            }
        }
        for i in 1..start.len() {
            start[i] += start[i - 1];
        }
        let mut fill = start.clone();
        let mut dependents = vec![(0u32, Dur::ZERO); *start.last().expect("one more than the messages") as usize];
        for (i, m) in plan.messages.iter().enumerate() {
            for (k, &d) in m.deps.iter().enumerate() {
                dependents[fill[d as usize] as usize] = (i as u32, m.gap(k));
                fill[d as usize] += 1;
            }
        }
        let mut fires: Vec<(u32, u32)> = plan
            .shots
            .iter()
            .enumerate()
            .flat_map(|(s, shot)| shot.activators.iter().map(move |&a| (a, s as u32)))
            .collect();
        fires.sort_unstable();
        Dependencies { start, dependents, fires, next: vec![0; plan.shots.len()] }
    }

    /// How many dependencies each message of `plan` waits for: its own, and one for
    /// each multishot trigger it is a target of.
    pub(crate) fn waits(plan: &Plan) -> Vec<u32> {
        let mut n: Vec<u32> = plan.messages.iter().map(|m| m.deps.len() as u32).collect();
        for t in plan.shots.iter().flat_map(|s| &s.targets) {
            n[*t as usize] += 1;
        }
        n
    }

    /// Where message `m`'s dependents are in `dependents`.
    #[inline]
    pub(crate) fn range(&self, m: u32) -> std::ops::Range<usize> {
        self.start[m as usize] as usize..self.start[m as usize + 1] as usize
    }
}

/// A `size`-byte message's ideal completion times over `hops` (its connection's first
/// path): at the receiver ([`ideal_fct`], store and forward of every frame) and at the
/// sender ([`sender_ideal_fct`], HPCC's convention). A transport spraying over every
/// plane is credited with all of them; one split over K QPs with the min(K, P) planes
/// those use, each carrying its parts (see the README's Ideal FCT).
pub(crate) fn ideal_times(
    hops: &[(Rate, Dur)],
    transport: &TransportSpec,
    size: u64,
    mtu: u32,
    planes: u32,
    host_link: Rate,
) -> (Dur, Dur) {
    let n = factory::packets(size, mtu);
    let planes = planes as u64;
    let qps = transport.qps();
    let parts: Vec<(u32, u64)> = Split::Even.parts(size, qps).collect();
    // The sender's NIC bandwidth: every port for a sprayed connection, the ports its
    // QPs are bound to for a split one.
    let ports_used = if transport.spans_all_ports() { planes } else { (qps as u64).min(planes) };
    let wire: u64 = parts.iter().map(|&(_, len)| factory::message_wire_bytes(transport, len, mtu)).sum();
    let sender = sender_ideal_fct(hops, mtu as u64, wire, Rate(host_link.0 * ports_used));
    let receiver = if transport.spans_all_ports() {
        // Sprayed over every plane: 1/P of the frames on each.
        let per_plane = n.div_ceil(planes);
        ideal_fct(hops, per_plane, |j| factory::frame_wire_bytes(transport, size, mtu, n - per_plane + j))
    } else if qps > 1 {
        // K queue pairs over P NIC ports, the message split evenly over them (the
        // larger parts first): the busiest plane carries parts 0, P, 2P, ... Their
        // frames largest first, the small last ones at the end (the order that
        // finishes soonest when the links run at one rate). Counting the parts as one
        // message, with fewer but larger frames, gave a 4097-byte message over 4 QPs a
        // slowdown of 0.87. A part's frames come in at most three sizes, kept as runs
        // `(size, count)`: a 256 MB message is 65 K frames.
        let mut runs: Vec<(u64, u64)> = Vec::new();
        for &(_, len) in parts.iter().filter(|&&(i, _)| (i as u64).is_multiple_of(planes)) {
            let k = factory::packets(len, mtu);
            let frame = |j| factory::frame_wire_bytes(transport, len, mtu, j);
            runs.push((frame(0), 1));
            if k > 2 {
                runs.push((frame(1), k - 2));
            }
            if k > 1 {
                runs.push((frame(k - 1), 1));
            }
        }
        runs.sort_unstable_by_key(|r| std::cmp::Reverse(r.0));
        let ends: Vec<u64> = runs
            .iter()
            .scan(0, |acc, r| {
                *acc += r.1;
                Some(*acc)
            })
            .collect();
        let total = ends.last().copied().unwrap_or(0);
        ideal_fct(hops, total, |j| runs[ends.partition_point(|&e| e <= j)].0)
    } else {
        ideal_fct(hops, n, |j| factory::frame_wire_bytes(transport, size, mtu, j))
    };
    (receiver, sender)
}

impl Sim {
    pub(crate) fn start(&mut self, now: Time, m: u32) {
        self.started += 1;
        if self.plan.messages[m as usize].is_mark() {
            // A mark (a point of a rank's timeline) is reached as it is released, and
            // complete by either convention (nothing is sent, nothing acknowledged).
            let st = &mut self.msgs[m as usize];
            (st.start, st.finish, st.acked) = (now, now, now);
            self.received += 1;
            self.done += 1;
            self.release_dependents(now, m);
            return;
        }
        self.msgs[m as usize].start = now;
        let spec = &self.plan.messages[m as usize];
        let (c, size) = (spec.conn, spec.size);
        if !self.owns_host(self.plan.conns[c as usize].dst) {
            // The receiving partition learns of it before any of its packets arrive.
            self.started_elsewhere.push(m);
        }
        self.nic.post(now, c, m, size, &mut FabricWire { fabric: &mut self.fabric, q: &mut self.q });
        self.drain_nic(now);
        if !self.reselect.is_empty() {
            self.arm_reselect(now, c);
        }
    }

    /// Another partition started message `m`, which this one receives.
    pub(crate) fn started_remotely(&mut self, m: u32) {
        let spec = &self.plan.messages[m as usize];
        self.nic.book(spec.conn, m, spec.size);
    }

    /// Takes the messages started here that other partitions receive.
    pub(crate) fn take_started(&mut self) -> Vec<u32> {
        std::mem::take(&mut self.started_elsewhere)
    }

    /// Takes in what the NIC reported: messages received (which may release others)
    /// and acknowledged, QPs failed. Most calls find nothing: the check is inline, the
    /// work out of line.
    #[inline(always)]
    pub(crate) fn drain_nic(&mut self, now: Time) {
        if self.nic.has_output() {
            self.take_nic_output(now);
        }
    }

    #[cold]
    #[inline(never)]
    fn take_nic_output(&mut self, now: Time) {
        while let Some(o) = self.nic.poll_output() {
            match o {
                NicOutput::Received { msg } => {
                    self.msgs[msg as usize].finish = now;
                    self.received += 1;
                    // A message that releases on its acknowledgement is done then, so
                    // that a closed loop's last operations complete before the run ends.
                    let on_ack = self.plan.messages[msg as usize].on_ack;
                    self.done += usize::from(!(self.done_when_acked || on_ack));
                    if !on_ack {
                        self.release_dependents(now, msg);
                    }
                }
                NicOutput::Acked { msg, retransmitted, all } => {
                    let st = &mut self.msgs[msg as usize];
                    st.retransmitted += retransmitted;
                    if all {
                        st.acked = now;
                        let on_ack = self.plan.messages[msg as usize].on_ack;
                        self.done += usize::from(self.done_when_acked || on_ack);
                        if on_ack {
                            self.release_dependents(now, msg);
                        }
                    }
                }
                NicOutput::Failed { .. } => self.failed_conns += 1,
                // The run posts messages, never raw transport messages.
                NicOutput::Endpoint { .. } => unreachable!("every connection of a run reports messages"),
            }
        }
    }

    pub(crate) fn release_dependents(&mut self, now: Time, m: u32) {
        for i in self.deps.range(m) {
            let (d, gap) = self.deps.dependents[i];
            let st = &mut self.msgs[d as usize];
            st.deps_left -= 1;
            st.ready = st.ready.max(now + gap);
            if st.deps_left == 0 {
                self.q.push(st.ready, Event::Start(d));
            }
        }
        if !self.deps.fires.is_empty() {
            self.fire_shots(now, m);
        }
    }

    /// Message `m` completed: each multishot trigger it activates releases its next
    /// target, if it has one left, at once (htsim's `MultiShotTrigger::activate`).
    #[cold]
    #[inline(never)]
    fn fire_shots(&mut self, now: Time, m: u32) {
        let from = self.deps.fires.partition_point(|&(a, _)| a < m);
        for k in from..self.deps.fires.len() {
            let (a, s) = self.deps.fires[k];
            if a != m {
                break;
            }
            let targets = &self.plan.shots[s as usize].targets;
            let next = &mut self.deps.next[s as usize];
            let Some(&d) = targets.get(*next as usize) else { continue };
            *next += 1;
            let st = &mut self.msgs[d as usize];
            st.deps_left -= 1;
            st.ready = st.ready.max(now);
            if st.deps_left == 0 {
                self.q.push(st.ready, Event::Start(d));
            }
        }
    }

    /// When the last message completed here (by the scenario's convention), if any did.
    pub(crate) fn last_finish(&self) -> Option<Time> {
        self.msgs
            .iter()
            .map(|m| if self.done_when_acked { m.acked } else { m.finish })
            .filter(|&t| t != Time::MAX)
            .max()
    }

    /// Packets of each message sent more than once: the counts reported with each
    /// acknowledgement, and for messages the run ended on before their acknowledgement
    /// came back, the sender's count so far.
    pub fn message_retransmissions(&self) -> Vec<u64> {
        let mut out: Vec<u64> = self.msgs.iter().map(|m| m.retransmitted).collect();
        for (m, n) in self.nic.unacked_retransmissions() {
            out[m as usize] += n;
        }
        out
    }
}
