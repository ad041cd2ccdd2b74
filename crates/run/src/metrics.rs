//! Metrics: sampled port time series, flow and collective records, the summary.

use crate::results::{Column, Table};
use crate::sim::{Ending, Sim};
use fabricsim_engine::{Dur, Time};
use fabricsim_transport::common::OooHistogram;
use fabricsim_transport::EndpointStats;
use serde_json::{json, Value};

fn or_none(t: Time) -> i64 {
    if t == Time::MAX {
        -1
    } else {
        t.as_ns() as i64
    }
}

/// A message's completion time in whole nanoseconds, from `start` to `end` as the flow
/// table writes them (each rounded down to a nanosecond), so that `fct_ns ==
/// finish_ns - start_ns` exactly and the summary's figures are those of the table.
/// `None` if it never completed.
fn fct_ns(start: Time, end: Time) -> Option<i64> {
    (end != Time::MAX && start != Time::MAX).then(|| or_none(end) - or_none(start))
}

/// A completion time over its ideal (picosecond precision).
fn slowdown(start: Time, end: Time, ideal: Dur) -> Option<f64> {
    (end != Time::MAX && start != Time::MAX).then(|| (end - start).ps() as f64 / ideal.ps().max(1) as f64)
}

/// Per message, the completion time (ns) and slowdown by the convention `fct_at`.
fn completions(sim: &Sim, sender: bool) -> impl Iterator<Item = Option<(i64, f64)>> + '_ {
    sim.msgs.iter().map(move |m| {
        let (end, ideal) = if sender { (m.acked, m.sender_ideal) } else { (m.finish, m.ideal) };
        Some((fct_ns(m.start, end)?, slowdown(m.start, end, ideal)?))
    })
}

/// The messages that are flows: every one but the marks (points of a job's timeline).
pub fn flow_ids(sim: &Sim) -> Vec<usize> {
    (0..sim.msgs.len()).filter(|&i| !sim.plan.messages[i].is_mark()).collect()
}

/// One record per message (marks excluded).
pub fn flow_table(sim: &Sim) -> Table {
    let rows = flow_ids(sim);
    let mut t = Table::default();
    let spec = |i: usize| &sim.plan.messages[i];
    let conn = |i: usize| sim.plan.conns[spec(i).conn as usize];
    let u32s = |f: &dyn Fn(usize) -> u32| Column::U32(rows.iter().map(|&i| f(i)).collect());
    let i64s = |f: &dyn Fn(usize) -> i64| Column::I64(rows.iter().map(|&i| f(i)).collect());
    let u64s = |f: &dyn Fn(usize) -> u64| Column::U64(rows.iter().map(|&i| f(i)).collect());
    let f64s = |f: &dyn Fn(usize) -> f64| Column::F64(rows.iter().map(|&i| f(i)).collect());
    let retransmitted = sim.message_retransmissions();
    let (receiver, sender): (Vec<_>, Vec<_>) = (completions(sim, false).collect(), completions(sim, true).collect());
    t.push("flow_id", u32s(&|i| i as u32))
        .push("src", u32s(&|i| conn(i).src))
        .push("dst", u32s(&|i| conn(i).dst))
        .push("size_bytes", u64s(&|i| spec(i).size))
        .push("start_ns", i64s(&|i| or_none(sim.msgs[i].start)))
        .push("finish_ns", i64s(&|i| or_none(sim.msgs[i].finish)))
        .push("fct_ns", i64s(&|i| receiver[i].map_or(-1, |c| c.0)))
        .push("ideal_fct_ns", u64s(&|i| sim.msgs[i].ideal.as_ns()))
        .push("slowdown", f64s(&|i| receiver[i].map_or(f64::NAN, |c| c.1)))
        .push("acked_ns", i64s(&|i| or_none(sim.msgs[i].acked)))
        .push("sender_fct_ns", i64s(&|i| sender[i].map_or(-1, |c| c.0)))
        .push("sender_ideal_fct_ns", u64s(&|i| sim.msgs[i].sender_ideal.as_ns()))
        .push("sender_slowdown", f64s(&|i| sender[i].map_or(f64::NAN, |c| c.1)))
        .push("retransmitted_packets", u64s(&|i| retransmitted[i]))
        .push("workload", u32s(&|i| spec(i).workload))
        .push("collective", i64s(&|i| spec(i).collective.map_or(-1, |c| c as i64)))
        .push("connection", u32s(&|i| spec(i).conn));
    t
}

/// When each collective started (its first message posted) and finished (its last
/// placed; `None` while any is not).
fn collective_spans(sim: &Sim) -> Vec<(Time, Option<Time>)> {
    let k = sim.plan.collectives.len();
    let mut start = vec![Time::MAX; k];
    let mut finish = vec![Some(Time::ZERO); k];
    for (m, st) in sim.plan.messages.iter().zip(&sim.msgs) {
        if let Some(c) = m.collective {
            let c = c as usize;
            start[c] = start[c].min(st.start);
            finish[c] = if st.finish == Time::MAX { None } else { finish[c].map(|f| f.max(st.finish)) };
        }
    }
    start.into_iter().zip(finish).collect()
}

/// One record per job iteration: when it ran, its step time, compute, communication
/// and the communication the compute did not hide.
pub fn job_table(sim: &Sim) -> Table {
    let spans = collective_spans(sim);
    let reached = |m: u32| {
        let f = sim.msgs[m as usize].finish;
        (f != Time::MAX).then_some(f)
    };
    let mut t = Table::default();
    let (mut job, mut name, mut iteration, mut burst, mut ranks) = (vec![], vec![], vec![], vec![], vec![]);
    let (mut start, mut end, mut step, mut compute, mut comm, mut exposed) =
        (vec![], vec![], vec![], vec![], vec![], vec![]);
    for (j, rec) in sim.plan.jobs.iter().enumerate() {
        for (i, it) in rec.iterations.iter().enumerate() {
            let all = |points: &[fabricsim_workload::TimePoint]| -> Option<Vec<Time>> {
                points.iter().map(|p| p.eval(reached)).collect()
            };
            let (starts, ends) = (all(&it.starts), all(&it.ends));
            let first = starts.as_ref().and_then(|s| s.iter().min().copied());
            let last_start = starts.as_ref().and_then(|s| s.iter().max().copied());
            let last = ends.as_ref().and_then(|e| e.iter().max().copied());
            // The union of the spans in which some collective or transfer was under way.
            let mut busy: Vec<(Time, Option<Time>)> = it.collectives.iter().map(|&c| spans[c as usize]).collect();
            busy.extend(it.transfers.iter().map(|&m| (sim.msgs[m as usize].start, reached(m))));
            let comm_time = busy.iter().all(|b| b.1.is_some() && b.0 != Time::MAX).then(|| {
                let mut v: Vec<(Time, Time)> = busy.iter().map(|b| (b.0, b.1.expect("finished"))).collect();
                v.sort_unstable();
                let (mut total, mut cur): (u64, Option<(Time, Time)>) = (0, None);
                for (a, b) in v {
                    cur = match cur {
                        Some((s, e)) if a <= e => Some((s, e.max(b))),
                        Some((s, e)) => {
                            total += (e - s).ps();
                            Some((a, b))
                        }
                        None => Some((a, b)),
                    };
                }
                total + cur.map_or(0, |(s, e)| (e - s).ps())
            });
            let step_time = last.zip(last_start).map(|(e, s)| e - s);
            job.push(j as u32);
            name.push(rec.name.clone());
            iteration.push(i as u32);
            burst.push(it.burst);
            ranks.push(rec.hosts.len() as u32);
            start.push(first.map_or(-1, |t| t.as_ns() as i64));
            end.push(last.map_or(-1, |t| t.as_ns() as i64));
            step.push(step_time.map_or(-1, |d| d.as_ns() as i64));
            compute.push(it.compute.as_ns());
            comm.push(comm_time.map_or(-1, |ps| (ps / 1000) as i64));
            exposed.push(step_time.map_or(-1, |d| d.as_ns().saturating_sub(it.compute.as_ns()) as i64));
        }
    }
    t.push("job", Column::U32(job))
        .push("name", Column::Str(name))
        .push("iteration", Column::U32(iteration))
        .push("burst", Column::U32(burst))
        .push("ranks", Column::U32(ranks))
        .push("start_ns", Column::I64(start))
        .push("end_ns", Column::I64(end))
        .push("step_ns", Column::I64(step))
        .push("compute_ns", Column::U64(compute))
        .push("comm_ns", Column::I64(comm))
        .push("exposed_comm_ns", Column::I64(exposed));
    t
}

/// One record per collective operation.
pub fn collective_table(sim: &Sim) -> Table {
    let k = sim.plan.collectives.len();
    let spans = collective_spans(sim);
    let start: Vec<Time> = spans.iter().map(|s| s.0).collect();
    let done: Vec<bool> = spans.iter().map(|s| s.1.is_some()).collect();
    let finish: Vec<Time> = spans.iter().map(|s| s.1.unwrap_or(Time::ZERO)).collect();
    let dur = |c: usize| (done[c] && start[c] != Time::MAX).then(|| finish[c] - start[c]);
    let specs = &sim.plan.collectives;
    // nccl-tests' figures: algbw = size / time, busbw = algbw x the kind's factor (the
    // share of the buffer the busiest rank must move: 2(N-1)/N for all-reduce, (N-1)/N
    // for all-gather, reduce-scatter, gather, scatter and all-to-all, 1 for broadcast
    // and reduce). A barrier moves no data and has neither.
    let algbw = |c: usize| match dur(c) {
        Some(d) if specs[c].size > 0 => specs[c].size as f64 * 8.0 / d.as_secs_f64() / 1e9,
        _ => f64::NAN,
    };
    let job = |f: fn((u32, u32)) -> u32| Column::I64(specs.iter().map(|c| c.job.map_or(-1, |j| f(j) as i64)).collect());
    let mut t = Table::default();
    t.push("collective", Column::U32((0..k as u32).collect()))
        .push("kind", Column::Str(specs.iter().map(|c| c.kind.to_string()).collect()))
        .push("algorithm", Column::Str(specs.iter().map(|c| c.algorithm.to_string()).collect()))
        .push("workload", Column::U32(specs.iter().map(|c| c.workload).collect()))
        .push("job", job(|j| j.0))
        .push("iteration", job(|j| j.1))
        .push("hosts", Column::U32(specs.iter().map(|c| c.hosts).collect()))
        .push("channels", Column::U32(specs.iter().map(|c| c.channels).collect()))
        .push("size_bytes", Column::U64(specs.iter().map(|c| c.size).collect()))
        .push("start_ns", Column::I64(start.iter().map(|&s| or_none(s)).collect()))
        .push("finish_ns", Column::I64((0..k).map(|c| if done[c] { finish[c].as_ns() as i64 } else { -1 }).collect()))
        .push("duration_ns", Column::I64((0..k).map(|c| dur(c).map_or(-1, |d| d.as_ns() as i64)).collect()))
        .push("algbw_gbps", Column::F64((0..k).map(algbw).collect()))
        .push(
            "busbw_gbps",
            Column::F64(
                (0..k)
                    .map(|c| if specs[c].bus_factor > 0.0 { algbw(c) * specs[c].bus_factor } else { f64::NAN })
                    .collect(),
            ),
        );
    t
}

/// Nearest-rank percentile of sorted values.
fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil().max(1.0) as usize;
    sorted[rank.min(sorted.len()) - 1]
}

fn distribution(mut v: Vec<f64>) -> Value {
    if v.is_empty() {
        return Value::Null;
    }
    v.sort_by(|a, b| a.partial_cmp(b).expect("no NaN"));
    let mean = v.iter().sum::<f64>() / v.len() as f64;
    json!({
        "mean": mean,
        "p50": percentile(&v, 50.0),
        "p90": percentile(&v, 90.0),
        "p99": percentile(&v, 99.0),
        "p999": percentile(&v, 99.9),
        "max": v[v.len() - 1],
    })
}

/// Faults the summary lists (the first ones; `faults.parquet` has them all).
pub const SUMMARY_FAULTS: usize = 100;

/// The run's summary (everything but wall-clock figures).
pub fn summary(sim: &Sim, ending: Ending) -> Value {
    let tot = sim.fabric.totals;
    let sender = sim.scenario.output.fct_at == crate::scenario::FctAt::Sender;
    let flows = flow_ids(sim);
    let all: Vec<Option<(i64, f64)>> = completions(sim, sender).collect();
    let finished: Vec<usize> = flows.iter().copied().filter(|&i| all[i].is_some()).collect();
    let done: Vec<(i64, f64)> = finished.iter().map(|&i| all[i].expect("finished")).collect();
    let fct: Vec<f64> = done.iter().map(|c| c.0 as f64).collect();
    let slow: Vec<f64> = done.iter().map(|c| c.1).collect();
    let mut ep = EndpointStats::default();
    for (s, _, _) in sim.endpoint_stats() {
        ep.data_sent += s.data_sent;
        ep.retransmitted += s.retransmitted;
        ep.control_sent += s.control_sent;
        ep.bytes_placed += s.bytes_placed;
        ep.duplicates += s.duplicates;
        ep.timeouts += s.timeouts;
        ep.tail_probes += s.tail_probes;
        ep.cnps += s.cnps;
        ep.ecn_marked += s.ecn_marked;
        ep.trimmed += s.trimmed;
    }
    let requester_cnps: u64 = sim.endpoint_stats().filter(|(_, r, _)| !r).map(|(s, _, _)| s.cnps).sum();
    let colls = collective_table(sim);
    let (_, ooo) = ooo_table(sim);
    let ooo = ooo.map_or(Value::Null, |h| json!({ "packets": h.total(), "p50": h.quantile(0.5), "p99": h.quantile(0.99), "p999": h.quantile(0.999), "max": h.max() }));
    let paths = sim.path_stats();
    let sc = &sim.scenario;
    let mut v = json!({
        "name": sc.name,
        "seed": sc.seed,
        "transport": sc.transport.name(),
        "hosts": sim.fabric.hosts(),
        "ending": match ending { Ending::AllFinished => "all_finished", Ending::StopTime => "stop_time", Ending::Stalled => "stalled", Ending::Cancelled => "cancelled" },
        "sim_time_ns": sim.now().as_ns(),
        "sampling_stopped_ns": sim.sampler.stopped().map(|t| t.as_ns()),
        "events": sim.events(),
        "packet_hops": tot.packet_hops,
        "drops": tot.drops(),
        "drops_by_cause": { "buffer": tot.buffer_drops, "link": tot.link_losses, "route": tot.route_drops },
        "pfc_pauses": tot.pfc_pauses,
        "ecn_marks": tot.ecn_marks,
        "trims": tot.trims,
        "flows": { "total": flows.len(), "finished": done.len(), "unfinished": flows.len() - done.len() },
        "fct_at": if sender { "sender" } else { "receiver" },
        "fct_ns": distribution(fct),
        "slowdown": distribution(slow.clone()),
        "slowdown_by_size": slowdown_by_size(sim, &finished, &slow),
        "bytes_delivered": ep.bytes_placed,
        // Posted messages only: a run that stops early never posts some.
        "bytes_offered": sim.plan.messages.iter().zip(&sim.msgs).filter(|(_, st)| st.start != Time::MAX).map(|(m, _)| m.size).sum::<u64>(),
        "data_packets_sent": ep.data_sent,
        "retransmitted_packets": ep.retransmitted,
        "control_packets_sent": ep.control_sent,
        "duplicate_packets": ep.duplicates,
        "timeouts": ep.timeouts,
        "tail_probes": ep.tail_probes,
        "cnps": requester_cnps,
        "failed_connections": sim.failed_conns,
        // A job's collectives (often thousands) are in its table and the jobs summary.
        "collectives": (0..colls.rows()).filter(|&i| sim.plan.collectives[i].job.is_none()).map(|i| collective_json(&colls, i)).collect::<Vec<_>>(),
        "jobs": job_summary(sim),
        "nic": nic_summary(sim),
        "ooo_degree": ooo,
        "paths_used": paths.len(),
        "ev_retirements": sim.ev_log.iter().filter(|l| l.1.state == fabricsim_transport::common::EvState::Retired).count(),
        // A link flapping every few nanoseconds logs millions of changes: the summary
        // keeps the first ones and the count, faults.parquet every one.
        "faults": sim.fault_log.iter().take(SUMMARY_FAULTS).map(|f| json!({ "time_ns": f.time.as_ns(), "kind": f.kind, "target": f.target, "value": f.value })).collect::<Vec<_>>(),
        "faults_total": sim.fault_log.len(),
        "peak_packets_in_flight": sim.fabric.pool.peak(),
        "packet_slot_bytes": fabricsim_fabric::Pool::slot_bytes(),
        "scenario": sc.document,
    });
    // Set apart: the one json! above is at the macro's recursion limit.
    v["loops"] = Value::Array(loop_summary(sim));
    v["security_refused"] = json!(sim.nic.security_refused().iter().sum::<u64>());
    v
}

/// The closed-loop workloads (message_rate, rpc): per workload, operations completed,
/// the span from the first start to the last completion, operations per second over
/// it, and the operations' latencies (a WRITE: posted to acknowledged; a call: request
/// posted to reply received).
fn loop_summary(sim: &Sim) -> Vec<Value> {
    sim.plan
        .loops
        .iter()
        .map(|l| {
            let ends = |&(first, last): &(u32, u32)| {
                let (s, e) = (&sim.msgs[first as usize], &sim.msgs[last as usize]);
                let end = if l.on_ack { e.acked } else { e.finish };
                (s.start != Time::MAX && end != Time::MAX).then_some((s.start, end))
            };
            let done: Vec<(Time, Time)> = l.ops.iter().filter_map(ends).collect();
            let first = l.ops.iter().map(|&(m, _)| sim.msgs[m as usize].start).min().unwrap_or(Time::MAX);
            let last = done.iter().map(|d| d.1).max();
            let span = last.filter(|_| first != Time::MAX).map_or(Dur::ZERO, |t| t.since(first));
            let rate = if span > Dur::ZERO { done.len() as f64 / span.as_secs_f64() } else { 0.0 };
            json!({
                "workload": l.workload,
                "kind": l.kind,
                "clients": l.clients,
                "ops": l.ops.len(),
                "completed": done.len(),
                "span_ns": span.as_ns(),
                "ops_per_s": rate,
                "latency_ns": distribution(done.iter().map(|d| d.1.since(d.0).as_ns() as f64).collect()),
            })
        })
        .collect()
}

/// Upper edges of the flow-size buckets of `slowdown_by_size`, bytes (the last is open).
pub const SIZE_BUCKETS: [u64; 5] = [1_000, 10_000, 100_000, 1_000_000, 10_000_000];

/// FCT slowdown of the finished flows `flows` (with their slowdowns `slow`) by flow
/// size, in decades: the plot HPCC's and Parsimon's evaluations draw. Empty buckets
/// are left out.
fn slowdown_by_size(sim: &Sim, flows: &[usize], slow: &[f64]) -> Vec<Value> {
    let mut buckets: Vec<Vec<f64>> = vec![Vec::new(); SIZE_BUCKETS.len() + 1];
    for (&i, &s) in flows.iter().zip(slow) {
        let size = sim.plan.messages[i].size;
        buckets[SIZE_BUCKETS.partition_point(|&e| e < size)].push(s);
    }
    let word = |b: u64| match b {
        b if b >= 1_000_000 => format!("{}MB", b / 1_000_000),
        b => format!("{}KB", b / 1_000),
    };
    buckets
        .into_iter()
        .enumerate()
        .filter(|(_, v)| !v.is_empty())
        .map(|(k, mut v)| {
            let lo = if k == 0 { 0 } else { SIZE_BUCKETS[k - 1] };
            let hi = SIZE_BUCKETS.get(k).copied();
            v.sort_by(|a, b| a.partial_cmp(b).expect("no NaN"));
            json!({
                "bucket": match hi { Some(h) if k == 0 => format!("<={}", word(h)), Some(h) => format!("{}-{}", word(lo), word(h)), None => format!(">{}", word(lo)) },
                "min_bytes": lo + u64::from(k > 0),
                "max_bytes": hi,
                "flows": v.len(),
                "mean": v.iter().sum::<f64>() / v.len() as f64,
                "p50": percentile(&v, 50.0),
                "p95": percentile(&v, 95.0),
                "p99": percentile(&v, 99.0),
            })
        })
        .collect()
}

/// Per job: its iterations and their mean step time and exposed communication (over
/// the finished ones).
fn job_summary(sim: &Sim) -> Vec<Value> {
    let t = job_table(sim);
    let (Some(Column::U32(job)), Some(Column::I64(step)), Some(Column::I64(exposed))) =
        (t.get("job"), t.get("step_ns"), t.get("exposed_comm_ns"))
    else {
        return Vec::new();
    };
    sim.plan
        .jobs
        .iter()
        .enumerate()
        .map(|(j, rec)| {
            let rows: Vec<usize> = (0..job.len()).filter(|&i| job[i] == j as u32 && step[i] >= 0).collect();
            let mean = |v: &[i64]| {
                if rows.is_empty() {
                    Value::Null
                } else {
                    json!(rows.iter().map(|&i| v[i] as f64).sum::<f64>() / rows.len() as f64)
                }
            };
            json!({
                "name": rec.name,
                "ranks": rec.hosts.len(),
                "iterations": rec.iterations.len(),
                "finished_iterations": rows.len(),
                "startup_ns": rec.startup.as_ns(),
                "dma_blocks": rec.blocks,
                "step_ns_mean": mean(step),
                "exposed_comm_ns_mean": mean(exposed),
            })
        })
        .collect()
}

fn collective_json(t: &Table, i: usize) -> Value {
    let mut o = serde_json::Map::new();
    for (name, col) in &t.columns {
        let v = match col {
            Column::U32(v) => json!(v[i]),
            Column::U64(v) => json!(v[i]),
            Column::I64(v) => {
                if v[i] < 0 {
                    Value::Null
                } else {
                    json!(v[i])
                }
            }
            Column::F64(v) => {
                if v[i].is_nan() {
                    Value::Null
                } else {
                    json!(v[i])
                }
            }
            Column::Str(v) => json!(v[i]),
        };
        o.insert(name.to_string(), v);
    }
    Value::Object(o)
}

/// Per-path (entropy value) counters of every multipath sender.
pub fn path_table(sim: &Sim) -> Table {
    let rows = sim.path_stats();
    let mut t = Table::default();
    t.push("connection", Column::U32(rows.iter().map(|r| r.0).collect()))
        .push("qp", Column::U32(rows.iter().map(|r| r.1).collect()))
        .push("ev", Column::U32(rows.iter().map(|r| r.2.ev).collect()))
        .push("plane", Column::U32(rows.iter().map(|r| sim.path_plane(r.0, r.1, r.2.ev)).collect()))
        .push("packets", Column::U64(rows.iter().map(|r| r.2.packets).collect()))
        .push("ecn_marks", Column::U64(rows.iter().map(|r| r.2.ecn_marks).collect()))
        .push("trims", Column::U64(rows.iter().map(|r| r.2.trims).collect()))
        .push("losses", Column::U64(rows.iter().map(|r| r.2.losses).collect()))
        .push("retransmissions", Column::U64(rows.iter().map(|r| r.2.retransmissions).collect()));
    // Maestro's path monitor (zero, or NaN, for other transports' paths).
    let m = |f: fn(&fabricsim_nic::maestro::QpPath) -> u64| {
        Column::U64(rows.iter().map(|r| r.3.as_ref().map_or(0, f)).collect())
    };
    t.push("chunks", m(|p| p.chunks))
        .push("bytes", m(|p| p.bytes))
        .push("latency_samples", m(|p| p.latency_samples))
        .push(
            "latency_ns",
            Column::F64(
                rows.iter()
                    .map(|r| match r.3 {
                        Some(p) if p.latency_samples > 0 => p.latency_sum_ps as f64 / p.latency_samples as f64 / 1e3,
                        _ => f64::NAN,
                    })
                    .collect(),
            ),
        )
        .push("failed", m(|p| u64::from(p.failed)))
        .push("reposted", m(|p| p.reposted))
        .push("post_busy_ns", m(|p| p.post_busy_ps / 1000))
        .push("moves", m(|p| p.moves));
    t
}

/// Entropy-value state changes over time.
pub fn ev_state_table(sim: &Sim) -> Table {
    let log = &sim.ev_log;
    let mut t = Table::default();
    t.push("time_ns", Column::U64(log.iter().map(|l| l.1.time.as_ns()).collect()))
        .push("connection", Column::U32(log.iter().map(|l| l.0).collect()))
        .push("ev", Column::U32(log.iter().map(|l| l.1.ev).collect()))
        .push(
            "plane",
            Column::U32(
                // EV states come from the connection's only multipath QP (0).
                log.iter().map(|l| sim.path_plane(l.0, 0, l.1.ev)).collect(),
            ),
        )
        .push("state", Column::Str(log.iter().map(|l| l.1.state.name().to_string()).collect()));
    t
}

/// Out-of-order degrees of every multipath receiver, aggregated.
pub fn ooo_table(sim: &Sim) -> (Table, Option<OooHistogram>) {
    let mut all: Option<OooHistogram> = None;
    for h in sim.ooo().into_iter().flatten() {
        all.get_or_insert_with(Default::default).merge(&h);
    }
    let buckets: Vec<(u64, u64)> = all.as_ref().map_or(Vec::new(), |h| h.buckets().collect());
    let mut t = Table::default();
    t.push("degree", Column::U64(buckets.iter().map(|b| b.0).collect()))
        .push("packets", Column::U64(buckets.iter().map(|b| b.1).collect()));
    (t, all)
}

/// Delivered bytes per connection per sampling interval.
pub fn throughput_table(sim: &Sim) -> Table {
    let r = &sim.throughput;
    let mut t = Table::default();
    t.push("time_ns", Column::U64(r.time_ns.clone()))
        .push("connection", Column::U32(r.connection.clone()))
        .push("bytes", Column::U64(r.bytes.clone()))
        .push("gbps", Column::F64(r.gbps.clone()));
    t
}

/// The faults that happened.
pub fn fault_table(sim: &Sim) -> Table {
    let f = &sim.fault_log;
    let mut t = Table::default();
    t.push("time_ns", Column::U64(f.iter().map(|r| r.time.as_ns()).collect()))
        .push("kind", Column::Str(f.iter().map(|r| r.kind.to_string()).collect()))
        .push("target", Column::Str(f.iter().map(|r| r.target.clone()).collect()))
        .push("value", Column::Str(f.iter().map(|r| r.value.clone()).collect()));
    t
}

/// One row per modelled NIC (none when every NIC is ideal): what its pipelines, caches
/// and PCIe did.
pub fn nic_table(sim: &Sim) -> Table {
    let stats = sim.nic.rnic_stats();
    let hosts: Vec<u32> = (0..stats.len() as u32).filter(|&h| sim.scenario.nic.model_of(h).is_some()).collect();
    let col = |f: fn(&fabricsim_nic::rnic::RnicStats) -> u64| {
        Column::U64(hosts.iter().map(|&h| f(&stats[h as usize])).collect())
    };
    let mut t = Table::default();
    t.push("host", Column::U32(hosts.clone()))
        .push("tx_packets", col(|s| s.tx_packets))
        .push("rx_packets", col(|s| s.rx_packets))
        .push("wqes", col(|s| s.wqes))
        .push("qp_hits", col(|s| s.qp_hits))
        .push("qp_misses", col(|s| s.qp_misses))
        .push("mtt_hits", col(|s| s.mtt_hits))
        .push("mtt_misses", col(|s| s.mtt_misses))
        .push("atc_hits", col(|s| s.atc_hits))
        .push("atc_misses", col(|s| s.atc_misses))
        .push("iotlb_misses", col(|s| s.iotlb_misses))
        .push("tx_busy_ns", col(|s| s.tx_busy_ps / 1000))
        .push("rx_busy_ns", col(|s| s.rx_busy_ps / 1000))
        .push("stall_ns", col(|s| s.stall_ps / 1000))
        .push("pcie_read_bytes", col(|s| s.pcie_read_bytes))
        .push("pcie_write_bytes", col(|s| s.pcie_write_bytes));
    t
}

/// The modelled NICs' totals for the summary (`null` when every NIC is ideal).
fn nic_summary(sim: &Sim) -> Value {
    let t = nic_table(sim);
    if t.rows() == 0 {
        return Value::Null;
    }
    let mut o = serde_json::Map::new();
    o.insert("nics".into(), json!(t.rows()));
    for (name, col) in &t.columns {
        if let (Column::U64(v), true) = (col, *name != "host") {
            o.insert(name.to_string(), json!(v.iter().sum::<u64>()));
        }
    }
    Value::Object(o)
}

/// One row per connection: endpoints, size, out-of-order degrees.
pub fn connection_table(sim: &Sim) -> Table {
    let ooo = sim.ooo();
    let n = sim.plan.conns.len();
    let mut bytes = vec![0u64; n];
    let mut messages = vec![0u32; n];
    for m in sim.plan.messages.iter().filter(|m| !m.is_mark()) {
        bytes[m.conn as usize] += m.size;
        messages[m.conn as usize] += 1;
    }
    let mut t = Table::default();
    t.push("connection", Column::U32((0..n as u32).collect()))
        .push("src", Column::U32(sim.plan.conns.iter().map(|c| c.src).collect()))
        .push("dst", Column::U32(sim.plan.conns.iter().map(|c| c.dst).collect()))
        .push("workload", Column::U32(sim.plan.conns.iter().map(|c| c.workload).collect()))
        .push("qps", Column::U32((0..n).map(|c| sim.qps_of(c)).collect()))
        .push("messages", Column::U32(messages))
        .push("bytes", Column::U64(bytes))
        .push("ooo_max", Column::I64(ooo.iter().map(|h| h.as_ref().map_or(-1, |h| h.max() as i64)).collect()))
        .push("ooo_p99", Column::I64(ooo.iter().map(|h| h.as_ref().map_or(-1, |h| h.quantile(0.99) as i64)).collect()));
    t
}

#[cfg(test)]
mod tests {
    use crate::sim::Sim;
    use crate::Scenario;

    #[test]
    fn sampling_stops_at_its_row_limit_and_the_summary_says_when() {
        let toml = "[topology]\nkind = \"leaf_spine\"\nleaves = 2\nspines = 2\nhosts_per_leaf = 2\n\
                    [[workload]]\nkind = \"permutation\"\nsize = \"2MB\"\n[output]\nsample_interval = \"1us\"";
        let full = crate::run(Scenario::from_toml(toml).unwrap(), &mut |_| true).unwrap();
        let mut sim = Sim::new(Scenario::from_toml(toml).unwrap()).unwrap();
        sim.sampler.max_rows = 100;
        let ending = sim.run(&mut |_| true);
        let r = crate::results(&mut sim, ending);
        let rows = r.ports.rows();
        assert!((100..100 + 16).contains(&rows), "{rows} rows: stopped within one sample of the limit");
        let stopped = r.summary["sampling_stopped_ns"].as_u64().expect("the summary says when");
        assert!(stopped > 0 && stopped < r.summary["sim_time_ns"].as_u64().unwrap());
        // Everything else is as in the run that sampled to the end.
        assert_eq!(full.summary["sampling_stopped_ns"], serde_json::Value::Null);
        assert!(full.ports.rows() > rows);
        assert_eq!(full.summary["events"], r.summary["events"]);
        assert_eq!(full.flows.rows(), r.flows.rows());
    }
}
