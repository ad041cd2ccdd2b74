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

/// One record per message.
pub fn flow_table(sim: &Sim) -> Table {
    let n = sim.msgs.len();
    let mut t = Table::default();
    let conn = |i: usize| sim.plan.conns[sim.plan.messages[i].conn as usize];
    t.push("flow_id", Column::U32((0..n as u32).collect()))
        .push("src", Column::U32((0..n).map(|i| conn(i).src).collect()))
        .push("dst", Column::U32((0..n).map(|i| conn(i).dst).collect()))
        .push("size_bytes", Column::U64(sim.plan.messages.iter().map(|m| m.size).collect()))
        .push("start_ns", Column::I64(sim.msgs.iter().map(|m| or_none(m.start)).collect()))
        .push("finish_ns", Column::I64(sim.msgs.iter().map(|m| or_none(m.finish)).collect()))
        .push("fct_ns", Column::I64(completions(sim, false).map(|c| c.map_or(-1, |c| c.0)).collect()))
        .push("ideal_fct_ns", Column::U64(sim.msgs.iter().map(|m| m.ideal.as_ns()).collect()))
        .push("slowdown", Column::F64(completions(sim, false).map(|c| c.map_or(f64::NAN, |c| c.1)).collect()))
        .push("acked_ns", Column::I64(sim.msgs.iter().map(|m| or_none(m.acked)).collect()))
        .push("sender_fct_ns", Column::I64(completions(sim, true).map(|c| c.map_or(-1, |c| c.0)).collect()))
        .push("sender_ideal_fct_ns", Column::U64(sim.msgs.iter().map(|m| m.sender_ideal.as_ns()).collect()))
        .push("sender_slowdown", Column::F64(completions(sim, true).map(|c| c.map_or(f64::NAN, |c| c.1)).collect()))
        .push("retransmitted_packets", Column::U64(sim.message_retransmissions()))
        .push("workload", Column::U32(sim.plan.messages.iter().map(|m| m.workload).collect()))
        .push(
            "collective",
            Column::I64(sim.plan.messages.iter().map(|m| m.collective.map_or(-1, |c| c as i64)).collect()),
        )
        .push("connection", Column::U32(sim.plan.messages.iter().map(|m| m.conn).collect()));
    t
}

/// One record per collective operation.
pub fn collective_table(sim: &Sim) -> Table {
    let k = sim.plan.collectives.len();
    let mut start = vec![Time::MAX; k];
    let mut finish = vec![Time::ZERO; k];
    let mut done = vec![true; k];
    for (m, st) in sim.plan.messages.iter().zip(&sim.msgs) {
        if let Some(c) = m.collective {
            let c = c as usize;
            start[c] = start[c].min(st.start);
            if st.finish == Time::MAX {
                done[c] = false;
            } else {
                finish[c] = finish[c].max(st.finish);
            }
        }
    }
    let dur = |c: usize| (done[c] && start[c] != Time::MAX).then(|| finish[c] - start[c]);
    // Bus bandwidth normalises by the bytes each rank must move (NCCL's convention):
    // 2(N-1)/N of the buffer for all-reduce, (N-1)/N x N x size for all-to-all.
    let busbw = |c: usize| {
        let spec = &sim.plan.collectives[c];
        let n = spec.hosts as f64;
        let bytes = match spec.kind {
            "all_reduce" => spec.size as f64 * 2.0 * (n - 1.0) / n,
            _ => spec.size as f64 * (n - 1.0),
        };
        dur(c).map_or(f64::NAN, |d| bytes * 8.0 / d.as_secs_f64() / 1e9)
    };
    let mut t = Table::default();
    t.push("collective", Column::U32((0..k as u32).collect()))
        .push("kind", Column::Str(sim.plan.collectives.iter().map(|c| c.kind.to_string()).collect()))
        .push("workload", Column::U32(sim.plan.collectives.iter().map(|c| c.workload).collect()))
        .push("hosts", Column::U32(sim.plan.collectives.iter().map(|c| c.hosts).collect()))
        .push("size_bytes", Column::U64(sim.plan.collectives.iter().map(|c| c.size).collect()))
        .push("start_ns", Column::I64(start.iter().map(|&s| or_none(s)).collect()))
        .push("finish_ns", Column::I64((0..k).map(|c| if done[c] { finish[c].as_ns() as i64 } else { -1 }).collect()))
        .push("duration_ns", Column::I64((0..k).map(|c| dur(c).map_or(-1, |d| d.as_ns() as i64)).collect()))
        .push("busbw_gbps", Column::F64((0..k).map(busbw).collect()));
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
    let done: Vec<(i64, f64)> = completions(sim, sender).flatten().collect();
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
    json!({
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
        "flows": { "total": sim.msgs.len(), "finished": done.len(), "unfinished": sim.msgs.len() - done.len() },
        "fct_at": if sender { "sender" } else { "receiver" },
        "fct_ns": distribution(fct),
        "slowdown": distribution(slow),
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
        "collectives": (0..colls.rows()).map(|i| collective_json(&colls, i)).collect::<Vec<_>>(),
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
    })
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

/// One row per connection: endpoints, size, out-of-order degrees.
pub fn connection_table(sim: &Sim) -> Table {
    let ooo = sim.ooo();
    let n = sim.plan.conns.len();
    let mut bytes = vec![0u64; n];
    let mut messages = vec![0u32; n];
    for m in &sim.plan.messages {
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
