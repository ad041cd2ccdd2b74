//! Partitioned runs: one scenario simulated on several threads.
//!
//! `partitions = N` splits the fabric into N parts ([`partition::assign`]: hosts in
//! runs of consecutive indices, each switch with most of its lower neighbours). Each
//! part is simulated by its own copy of the [`Sim`] on its own thread, acting only for
//! the nodes and endpoints it owns. The copies advance together in windows no longer
//! than the lookahead, the smallest delay of a link between two partitions: nothing
//! one partition does inside a window can reach another before the window ends. Between
//! windows the frames and PFC frames that crossed the cut are handed over, in partition
//! order, and the port samples are taken.
//!
//! # Determinism
//! Each partition handles its own events in the usual `(time, insertion)` order and
//! receives what crossed in a fixed order at fixed points, so results depend on the
//! scenario (its number of partitions included) and never on thread timing: a
//! scenario with `partitions = 2` gives byte-identical results on every run and
//! machine. They differ from the same scenario with `partitions = 1` only in the order
//! of simultaneous events, like a change of seed.
//!
//! # Limits
//! A message released by the completion of another (collectives) must be sent from the
//! partition that received the one it waits for, since the release has no delay to
//! look ahead by. Ring all-reduce always satisfies this (each step waits for what the
//! same host received); a scenario that does not is refused, naming the message.
//! Links need a delay (it is the lookahead).
//!
//! # Packet capture
//! Every copy taps the captured cables, and a frame is captured by the partition that
//! sends it. Between windows the coordinator merges the partitions' frames by start
//! time (partition order for simultaneous ones) into the one pcap file.
//!
//! # End of a run
//! The partitions learn that every message has arrived at the end of a window, so they
//! may handle up to one lookahead of events past the last completion: the run's end
//! time and every completion time are exact, while counters (events, packet-hops)
//! include the acknowledgements still in flight for that long.

use crate::sampling::sample_after;
use crate::sim::{Ending, Progress, Sim};
use crate::watchdog::{Mark, Watchdog};
use crate::ScenarioError;
use fabricsim_engine::{Dur, Time};
use fabricsim_fabric::partition::{self, Remote};
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex};

/// The most partitions a scenario may ask for.
pub const MAX_PARTITIONS: u8 = 8;

/// Checks that `sim`'s scenario can run partitioned.
pub(crate) fn check(sim: &Sim) -> Result<(), ScenarioError> {
    let n = sim.scenario.partitions;
    if sim.scenario.links.delay == Dur::ZERO {
        return Err(ScenarioError::new(
            "partitions",
            format!("{n} partitions need links with a delay (topology.link_delay is 0): partitions synchronise every link delay"),
        ));
    }
    let owner = partition::assign(&sim.fabric, n);
    let msgs = &sim.plan.messages;
    for (d, m) in msgs.iter().enumerate() {
        let sender = sim.plan.conns[m.conn as usize].src;
        for &w in &m.deps {
            // A mark is reached on its own host (its connection's sender), as is the
            // acknowledgement of a message that releases on it.
            let c = sim.plan.conns[msgs[w as usize].conn as usize];
            let receiver = if msgs[w as usize].is_mark() || msgs[w as usize].on_ack { c.src } else { c.dst };
            if owner[receiver as usize] != owner[sender as usize] {
                return Err(ScenarioError::new(
                    "partitions",
                    format!(
                        "with {n} partitions, message {d} (sent by host {sender}, partition {}) waits for message {w} received by host {receiver} in partition {}; a release across partitions has no delay to synchronise on. Use partitions = 1 for this workload",
                        owner[sender as usize], owner[receiver as usize]
                    ),
                ));
            }
        }
    }
    // A multishot trigger's k-th completion is known only where the completions
    // happen: all of them, and the targets' senders, in one partition.
    for (s, shot) in sim.plan.shots.iter().enumerate() {
        let at = |m: u32, released: bool| {
            let spec = &msgs[m as usize];
            let c = sim.plan.conns[spec.conn as usize];
            let host = if !released || spec.is_mark() || spec.on_ack { c.src } else { c.dst };
            (host, owner[host as usize])
        };
        let hosts = shot.activators.iter().map(|&a| at(a, true)).chain(shot.targets.iter().map(|&t| at(t, false)));
        let mut first = None;
        for (host, part) in hosts {
            let (h0, p0) = *first.get_or_insert((host, part));
            if part != p0 {
                return Err(ScenarioError::new(
                    "partitions",
                    format!(
                        "with {n} partitions, a multishot trigger (number {s} of the plan) involves host {h0} (partition {p0}) and host {host} (partition {part}); which flow it starts depends on the order of completions in both. Use partitions = 1 for this workload"
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// Builds the copies of `sim`'s world for partitions 1 and up, each on its own thread
/// (building is a good part of a short run).
pub(crate) fn build_replicas(sim: &Sim) -> Vec<Sim> {
    let n = sim.scenario.partitions;
    let owner = partition::assign(&sim.fabric, n);
    std::thread::scope(|s| {
        let handles: Vec<_> = (1..n)
            .map(|k| {
                let sc = sim.scenario.clone();
                let owner = &owner;
                s.spawn(move || {
                    let mut copy = Sim::build(sc).expect("the scenario was built once already");
                    copy.make_partition(owner, k);
                    copy
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("building a partition panicked")).collect()
    })
}

/// Runs `sim` (a fresh, unpartitioned copy) partitioned and leaves the merged outcome in
/// it, as if it had run alone.
pub(crate) fn run(sim: &mut Sim, progress: &mut dyn FnMut(&Progress) -> bool) -> Ending {
    let n = sim.scenario.partitions;
    let owner = partition::assign(&sim.fabric, n);
    let stop = sim.stop_time();
    let interval = sim.scenario.output.sample_interval;
    let stall_after = sim.scenario.stall_after;
    let total = sim.msgs.len();
    let mut others = std::mem::take(&mut sim.replicas);
    // The coordinator writes the capture, merging the partitions' frames in time order.
    let mut capture = sim.pcap.take().map(|pcap| Capture { pcap, held: Vec::new() });
    // With no link between partitions any window length is safe.
    let lookahead = sim.make_partition(&owner, 0).unwrap_or(Dur::from_us(100));
    // The partition each crossing goes to: a frame to the far end of its wire, a PFC
    // frame to the owner of the port it pauses.
    let far: Vec<u8> = sim.fabric.ports.iter().map(|p| owner[p.peer_node as usize]).collect();
    let near: Vec<u8> = sim.fabric.ports.iter().map(|p| owner[p.node as usize]).collect();
    let receiver: Vec<u8> =
        sim.plan.messages.iter().map(|m| owner[sim.plan.conns[m.conn as usize].dst as usize]).collect();
    let conn_receiver: Vec<u8> = sim.plan.conns.iter().map(|c| owner[c.dst as usize]).collect();
    let dest = |r: &Remote| -> usize {
        match *r {
            Remote::Frame { port, .. } => far[port as usize] as usize,
            Remote::Pfc { port, .. } => near[port as usize] as usize,
        }
    };

    let (ending, end) = {
        let cells: Vec<Mutex<&mut Sim>> =
            std::iter::once(Mutex::new(&mut *sim)).chain(others.iter_mut().map(Mutex::new)).collect();
        let start = SpinBarrier::new(n as usize);
        let done = SpinBarrier::new(n as usize);
        let until = AtomicU64::new(0);
        let quit = AtomicBool::new(false);
        std::thread::scope(|s| {
            for cell in &cells[1..] {
                let (start, done, until, quit) = (&start, &done, &until, &quit);
                s.spawn(move || {
                    let _guard = PoisonOnPanic([start, done]);
                    loop {
                        start.wait();
                        if quit.load(Ordering::Acquire) {
                            break;
                        }
                        cell.lock().expect("partition lock").run_window(Time(until.load(Ordering::Acquire)));
                        done.wait();
                    }
                });
            }
            let _guard = PoisonOnPanic([&start, &done]);
            let mut next_sample = if interval > Dur::ZERO { Time::ZERO + interval } else { Time::MAX };
            let mut out: Vec<Remote> = Vec::new();
            let mut windows = 0u64;
            let mut watchdog = Watchdog::new(stall_after);
            let outcome = loop {
                let window_end = {
                    // Between windows the workers wait at `start`, holding no lock.
                    let mut all: Vec<_> = cells.iter().map(|c| c.lock().expect("partition lock")).collect();
                    if let Some(c) = &mut capture {
                        c.window_done(&mut all);
                    }
                    // Hand over what crossed, sources in partition order: first the
                    // messages started (their packets may be among the frames).
                    for k in 0..all.len() {
                        for m in all[k].take_started() {
                            let to = receiver[m as usize] as usize;
                            all[to].started_remotely(m);
                        }
                        // Then which QP carries each Maestro chunk of them.
                        for (conn, qp, m, len) in all[k].nic.take_handovers() {
                            let to = conn_receiver[conn as usize] as usize;
                            if to != k {
                                all[to].nic.book_handover(conn, qp, m, len);
                            }
                        }
                    }
                    for k in 0..all.len() {
                        let Some(first) = all[k].fabric.take_outbox(&mut out) else { continue };
                        if all.len() == 2 && all[1 - k].inbox.is_empty() {
                            // Everything goes to the other one: hand the buffer over.
                            std::mem::swap(&mut out, &mut all[1 - k].inbox);
                            all[1 - k].inbox_min = Some(first);
                            continue;
                        }
                        for r in out.drain(..) {
                            let to = &mut all[dest(&r)];
                            to.inbox_min = Some(to.inbox_min.map_or(r.at(), |m| m.min(r.at())));
                            to.inbox.push(r);
                        }
                    }
                    let done: usize = all.iter().map(|c| c.done()).sum();
                    let now = all.iter().map(|c| c.now()).max().unwrap_or(Time::ZERO);
                    if done == total {
                        let end = all.iter().filter_map(|c| c.last_finish()).max().unwrap_or(now);
                        break (Ending::AllFinished, end);
                    }
                    let Some(next) = all.iter().filter_map(|c| c.next_event()).min() else {
                        break (Ending::Stalled, now);
                    };
                    // Looks due before the next event, up to the stop time (a stall there
                    // ends the run even if that event is after the stop). A look due
                    // during the last window is taken now, with its progress, so that
                    // the stall counts from after it.
                    let gap_end = next.min(Time(stop.0.saturating_add(1)));
                    let (look_now, look_gap) = (watchdog.due(now, false), watchdog.gap_before(gap_end));
                    if look_now || look_gap {
                        let mark = all.iter().map(|c| c.mark()).fold(Mark::default(), |a, b| a + b);
                        if look_now && watchdog.stalled(now, mark) {
                            break (Ending::Stalled, now);
                        }
                        if let Some(at) = watchdog.look_until(gap_end, mark) {
                            // Not before what the last window ran (it made no progress).
                            let at = at.max(now);
                            sample_through(&mut all, &mut next_sample, interval, at);
                            break (Ending::Stalled, at);
                        }
                    }
                    if next > stop {
                        sample_through(&mut all, &mut next_sample, interval, stop);
                        break (Ending::StopTime, stop);
                    }
                    // Samples due before the next event (a sample at `t` covers the
                    // events at `t` too, as in a plain run): all but the last are taken
                    // now (nothing happened between them), the last by each partition as
                    // it starts the window.
                    while next_sample < next {
                        for c in all.iter_mut() {
                            if let Some(t) = c.sample_due.replace(next_sample) {
                                c.sample(t);
                            }
                        }
                        next_sample = sample_after(next_sample, interval, next);
                    }
                    windows += 1;
                    if windows.is_multiple_of(16) && !progress(&merged_progress(&all)) {
                        break (Ending::Cancelled, now);
                    }
                    if watchdog.due(now, windows.is_multiple_of(16)) {
                        let mark = all.iter().map(|c| c.mark()).fold(Mark::default(), |a, b| a + b);
                        if watchdog.stalled(now, mark) {
                            break (Ending::Stalled, now);
                        }
                    }
                    // A window ends with the events at the next grid point, which its
                    // sample (taken as the next window starts) covers.
                    (next + lookahead).min(Time(next_sample.0.saturating_add(1))).min(Time(stop.0.saturating_add(1)))
                };
                until.store(window_end.0, Ordering::Release);
                start.wait();
                cells[0].lock().expect("partition lock").run_window(window_end);
                done.wait();
            };
            quit.store(true, Ordering::Release);
            start.wait();
            outcome
        })
    };
    for c in std::iter::once(&mut *sim).chain(others.iter_mut()) {
        if let Some(t) = c.sample_due.take() {
            c.sample(t);
        }
    }
    sim.pcap = capture.map(|c| c.finish(end));
    for (i, mut other) in others.into_iter().enumerate() {
        sim.absorb(&mut other, &owner, i as u8 + 1);
    }
    sim.finish_partitioned(end);
    ending
}

impl Sim {
    /// Takes over what partition `k` of `owner` simulated, from its copy `other`: its
    /// endpoints, the messages it sent (start, retransmissions) and received
    /// (completion), its ports and switches, its samples and logs; counters are summed.
    pub(crate) fn absorb(&mut self, other: &mut Sim, owner: &[u8], k: u8) {
        let theirs = |host: u32| owner[host as usize] == k;
        self.nic.absorb(&mut other.nic, theirs);
        for (m, spec) in self.plan.messages.iter().enumerate() {
            let c = self.plan.conns[spec.conn as usize];
            if theirs(c.src) {
                self.msgs[m].start = other.msgs[m].start;
                self.msgs[m].acked = other.msgs[m].acked;
                self.msgs[m].retransmitted = other.msgs[m].retransmitted;
            }
            // A mark is reached where it is released: its sender's partition.
            if theirs(if spec.is_mark() { c.src } else { c.dst }) {
                self.msgs[m].finish = other.msgs[m].finish;
                if spec.is_mark() {
                    self.msgs[m].acked = other.msgs[m].acked;
                }
            }
        }
        self.fabric.absorb(&mut other.fabric, |node| owner[node as usize] == k);
        let fabric = &self.fabric;
        self.sampler.merge(&other.sampler, |p| owner[fabric.ports[p].node as usize] == k);
        self.throughput.merge(&other.throughput);
        for (c, conn) in self.plan.conns.iter().enumerate() {
            if theirs(conn.dst) {
                self.conn_bytes[c] = other.conn_bytes[c];
            }
        }
        self.last_sample = self.last_sample.max(other.last_sample);
        self.ev_log.append(&mut other.ev_log);
        self.received += other.received;
        self.done += other.done;
        self.failed_conns += other.failed_conns;
        self.events_absorbed += other.events();
    }

    /// Ends a partitioned run at `end`: the last sample, and the end time.
    pub(crate) fn finish_partitioned(&mut self, end: Time) {
        // Whole again: the last sample drains every endpoint's log (a stalled run's
        // too: its last interval is part of the record).
        self.part = None;
        self.sample(end);
        self.end = Some(end);
        // The partitions may have run up to one lookahead past the end; the merged
        // log is in time order (stable: simultaneous entries by connection).
        self.ev_log.retain(|(_, l)| l.time <= end);
        self.fault_log.retain(|f| f.time <= end);
        self.ev_log.sort_by_key(|(conn, l)| (l.time, *conn));
    }
}

/// The samples of a run that ends at `end`, as a plain run takes them: each partition's
/// pending one, then every grid point up to `end` (nothing happened between them).
fn sample_through(all: &mut [std::sync::MutexGuard<'_, &mut Sim>], next_sample: &mut Time, interval: Dur, end: Time) {
    for c in all.iter_mut() {
        if let Some(t) = c.sample_due.take() {
            c.sample(t);
        }
    }
    while *next_sample <= end {
        for c in all.iter_mut() {
            c.sample(*next_sample);
        }
        *next_sample = sample_after(*next_sample, interval, end);
    }
}

/// Frames captured by the partitions, merged a window at a time.
///
/// Every frame of a window starts before its end and those of the next window at or
/// after it, so merging each window's frames by start time (partitions in order for
/// simultaneous ones) keeps the file in time order. A window's frames are written
/// only once the next one has run: the run may end with the last window, whose frames
/// after the end (the partitions go on for up to one lookahead past the last
/// completion) a plain run would not have sent.
struct Capture {
    pcap: crate::capture::Pcap,
    /// The last window's frames, merged: `(start, partition, frame)`.
    held: Vec<(Time, u8, fabricsim_wire::Packet)>,
}

impl Capture {
    /// Writes the frames held from the window before, then takes the last window's.
    fn window_done(&mut self, all: &mut [std::sync::MutexGuard<'_, &mut Sim>]) {
        for (t, _, pkt) in self.held.drain(..) {
            self.pcap.write(t, &pkt);
        }
        for (k, c) in all.iter_mut().enumerate() {
            self.held.extend(c.fabric.captured.drain(..).map(|(t, _, pkt)| (t, k as u8, pkt)));
        }
        // Stable, and each partition's frames are already in time order.
        self.held.sort_by_key(|&(t, k, _)| (t, k));
    }

    /// Writes the frames held that started by `end`, and gives the capture back.
    fn finish(mut self, end: Time) -> crate::capture::Pcap {
        for (t, _, pkt) in self.held.drain(..).filter(|&(t, _, _)| t <= end) {
            self.pcap.write(t, &pkt);
        }
        self.pcap
    }
}

/// Progress summed over the partitions.
fn merged_progress(all: &[std::sync::MutexGuard<'_, &mut Sim>]) -> Progress {
    let mut p = Progress::default();
    for c in all {
        let q = c.progress();
        p.sim_time = p.sim_time.max(q.sim_time);
        p.events += q.events;
        p.packet_hops += q.packet_hops;
        p.flows_done += q.flows_done;
        p.flows_total = q.flows_total;
    }
    p
}

/// A barrier that spins, then sleeps: windows are short, and waking a sleeping thread
/// (a futex) costs a good part of one on a virtual machine, so a waiter first spins
/// for a while. With more partitions than free cores the threads that must still
/// arrive need the cores the spinners hold: a waiter that has spun long enough sleeps
/// until the last one arrives (yielding instead left each window waiting for the
/// scheduler's tick, milliseconds). A thread that panics poisons it
/// ([`PoisonOnPanic`]), and the others then panic in `wait` instead of waiting for ever.
struct SpinBarrier {
    n: usize,
    arrived: AtomicUsize,
    generation: AtomicUsize,
    poisoned: AtomicBool,
    /// Spins before a waiter sleeps: a millisecond or so with a core for every thread,
    /// none without (the threads still to arrive need the cores).
    spins: u32,
    /// Waiters asleep on `wake` (the last arriver only takes the lock if some are).
    sleepers: AtomicUsize,
    lock: Mutex<()>,
    wake: Condvar,
}

/// Poisons the barriers if its thread unwinds.
struct PoisonOnPanic<'a>([&'a SpinBarrier; 2]);

impl Drop for PoisonOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            for b in self.0 {
                b.poisoned.store(true, Ordering::Release);
            }
        }
    }
}

impl SpinBarrier {
    fn new(n: usize) -> SpinBarrier {
        SpinBarrier {
            n,
            arrived: AtomicUsize::new(0),
            generation: AtomicUsize::new(0),
            poisoned: AtomicBool::new(false),
            spins: if std::thread::available_parallelism().map_or(1, |c| c.get()) >= n { 1 << 16 } else { 0 },
            sleepers: AtomicUsize::new(0),
            lock: Mutex::new(()),
            wake: Condvar::new(),
        }
    }

    fn check(&self) {
        assert!(!self.poisoned.load(Ordering::Acquire), "another partition's thread panicked");
    }

    fn wait(&self) {
        self.check();
        let g = self.generation.load(Ordering::SeqCst);
        if self.arrived.fetch_add(1, Ordering::AcqRel) + 1 == self.n {
            self.arrived.store(0, Ordering::Relaxed);
            // SeqCst with the sleepers' count: a waiter either sees the new generation
            // or is counted here (and then woken).
            self.generation.store(g.wrapping_add(1), Ordering::SeqCst);
            if self.sleepers.load(Ordering::SeqCst) > 0 {
                let _guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
                self.wake.notify_all();
            }
            return;
        }
        let mut spins = 0u32;
        while self.generation.load(Ordering::SeqCst) == g {
            self.check();
            if spins < self.spins {
                spins += 1;
                std::hint::spin_loop();
                continue;
            }
            let mut guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
            self.sleepers.fetch_add(1, Ordering::SeqCst);
            while self.generation.load(Ordering::SeqCst) == g && !self.poisoned.load(Ordering::Acquire) {
                // The timeout only bounds how late a poisoning is noticed.
                guard = self
                    .wake
                    .wait_timeout(guard, std::time::Duration::from_millis(1))
                    .map(|(g, _)| g)
                    .unwrap_or_else(|e| e.into_inner().0);
            }
            self.sleepers.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Scenario;

    #[test]
    fn a_panicking_partition_does_not_leave_the_others_waiting() {
        let b = [SpinBarrier::new(2), SpinBarrier::new(2)];
        let (panicked, waiter) = std::thread::scope(|s| {
            let p = s.spawn(|| {
                let _g = PoisonOnPanic([&b[0], &b[1]]);
                panic!("a partition fails");
            });
            let w = s.spawn(|| {
                let _g = PoisonOnPanic([&b[0], &b[1]]);
                b[0].wait();
            });
            (p.join().is_err(), w.join().is_err())
        });
        assert!(panicked && waiter, "the waiting thread gives up instead of spinning for ever");
    }

    #[test]
    fn a_release_across_partitions_is_refused() {
        // No workload kind makes one yet (a ring step waits on its own host), so the
        // plan is edited: host 9's message waits for one host 0 receives.
        let toml = "partitions = 2\n[topology]\nkind = \"fat_tree\"\nk = 4\n[[workload]]\nkind = \"flows\"\n\
                    flows = [{ src = 8, dst = 0, size = \"10KB\" }, { src = 9, dst = 1, size = \"10KB\" }]";
        let mut sim = Sim::new(Scenario::from_toml(toml).unwrap()).unwrap();
        assert!(check(&sim).is_ok());
        sim.plan.messages[1].deps = vec![0];
        let err = check(&sim).unwrap_err().to_string();
        assert!(err.starts_with("partitions") && err.contains("host 9") && err.contains("host 0"), "{err}");
        // Waiting on a message received by the sender's own partition is fine.
        let flows = "flows = [{ src = 0, dst = 9, size = \"10KB\" }, { src = 9, dst = 1, size = \"10KB\" }]";
        let mut sim =
            Sim::new(Scenario::from_toml(&toml.replace(toml.split('\n').next_back().unwrap(), flows)).unwrap())
                .unwrap();
        sim.plan.messages[1].deps = vec![0];
        assert!(check(&sim).is_ok());
        // A multishot trigger whose activation is received in host 9's partition and
        // whose target is sent from host 0's.
        sim.plan.messages[1].deps.clear();
        sim.plan.shots.push(fabricsim_workload::Shot { activators: vec![0], targets: vec![1] });
        assert!(check(&sim).is_ok(), "message 0 arrives at host 9, which sends message 1");
        sim.plan.shots[0] = fabricsim_workload::Shot { activators: vec![1], targets: vec![1] };
        let err = check(&sim).unwrap_err().to_string();
        assert!(err.contains("multishot") && err.contains("host 1") && err.contains("host 9"), "{err}");
    }
}
