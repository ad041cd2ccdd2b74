//! Partitioned runs (`partitions = N`: the fabric split over N threads that advance
//! in windows of the smallest cross-partition link delay) against plain runs: the same
//! traffic must come out, up to the order of simultaneous events, and every run of a
//! partitioned scenario must be identical.

mod common;

use common::*;
use fabricsim_run::{RunResult, Scenario, Sim};

fn run_parts(toml: &str, partitions: u8) -> (Sim, RunResult) {
    let mut sc = scenario(toml);
    sc.partitions = partitions;
    run_scenario(sc)
}

/// What happens on [`LOADED_K4_MRC`] (hosts 0-7 in one partition, 8-15 in the other,
/// the incast into host 1 from both halves): two cables failing and recovering (one
/// inside a partition, `core[0].down[2]` between them), random loss on a cable between
/// the halves, and port sampling.
const BUSY_FAULTS: &str = r#"
[[faults]]
at = "6us"
kind = "link_down"
link = "core[1].down[2]"
[[faults]]
at = "20us"
kind = "link_up"
link = "core[1].down[2]"
[[faults]]
at = "9us"
kind = "link_loss"
link = "core[3].down[0]"
loss = 0.02
[[faults]]
at = "12us"
kind = "link_down"
link = "core[0].down[2]"
[[faults]]
at = "25us"
kind = "link_up"
link = "core[0].down[2]"
[output]
sample_interval = "3us"
"#;

/// The whole scenario: [`LOADED_K4_MRC`] with these faults.
fn busy() -> String {
    format!("{LOADED_K4_MRC}{BUSY_FAULTS}")
}

#[test]
fn a_partitioned_run_carries_the_same_traffic_as_a_plain_one() {
    let (one, r1) = run_parts(&busy(), 1);
    let (two, r2) = run_parts(&busy(), 2);
    let (t1, t2) = (one.fabric.totals, two.fabric.totals);
    println!("1 partition  {t1:?} events {}", r1.summary["events"]);
    println!("2 partitions {t2:?} events {}", r2.summary["events"]);
    for r in [&r1, &r2] {
        assert_eq!(r.summary["flows"]["unfinished"], 0);
        assert_eq!(r.summary["bytes_delivered"], r.summary["bytes_offered"]);
    }
    assert!(t2.trims > 100 && t2.ecn_marks > 50 && t2.link_losses > 0, "{t2:?}");
    // The same traffic, as far as chaos allows: the order of simultaneous events
    // reshuffles later random choices as another seed would (a run with a few more
    // timeouts probes its retired EVs for longer: one seed's hops moved 14 % either
    // way). Over four seeds, hops, deliveries, trims and completion times agree.
    let mean = |v: &[i64]| v.iter().sum::<i64>() as f64 / v.len() as f64;
    let (mut h, mut d, mut tr, mut fct) = ([0f64; 2], [0f64; 2], [0f64; 2], [0f64; 2]);
    for seed in 11..15 {
        for (k, n) in [(0, 1), (1, 2)] {
            let (sim, r) = run_parts(&busy().replace("seed = 11", &format!("seed = {seed}")), n);
            h[k] += sim.fabric.totals.packet_hops as f64;
            d[k] += sim.fabric.totals.delivered as f64;
            tr[k] += sim.fabric.totals.trims as f64;
            fct[k] += mean(&col_i64(&r, "fct_ns"));
        }
    }
    println!("over 4 seeds: hops {h:?} delivered {d:?} trims {tr:?} mean FCT {fct:?}");
    assert!(rel(h[1], h[0]) < 0.03 && rel(d[1], d[0]) < 0.03, "hops {h:?}, delivered {d:?}");
    assert!(rel(tr[1], tr[0]) < 0.1, "trims {tr:?}");
    assert!(rel(fct[1], fct[0]) < 0.03, "mean FCT {fct:?}");
    // Each fault happened once (every partition applies it to its own copy, one logs).
    assert_eq!(r2.faults.rows(), 5);
    assert_eq!(r2.faults, r1.faults);
    // The merged port series adds up to the merged ports' totals, and no port is
    // sampled twice at one time.
    let sampled: u64 = col_u64(&r2.ports, "tx_bytes").iter().sum();
    let total: u64 = two.fabric.ports.iter().map(|p| p.stats.tx_bytes).sum();
    assert_eq!(sampled, total);
    // Every drop is on one port, also a frame that crossed the cut onto a dead cable.
    for (sim, r) in [(&one, &r1), (&two, &r2)] {
        let port_drops: u64 = sim.fabric.ports.iter().map(|p| p.stats.drops).sum();
        assert_eq!(port_drops, sim.fabric.totals.drops());
        assert_eq!(col_u64(&r.ports, "drops").iter().sum::<u64>(), port_drops);
    }
    let ports = match r2.ports.get("port_id") {
        Some(fabricsim_run::Column::U32(v)) => v.clone(),
        other => panic!("port_id: {other:?}"),
    };
    let times = col_u64(&r2.ports, "time_ns");
    // The cable between the halves that is down from 12 to 25 us loses frames only
    // then, also those that crossed the cut onto it (counted by the far side's copy):
    // sampled when they happen, not at the end of the run.
    let a = r2.port_names.iter().position(|n| n == "core[0].down[2]").expect("the cable's port") as u32;
    let b = two.fabric.ports[a as usize].peer;
    let drops = col_u64(&r2.ports, "drops");
    let cable: Vec<(u64, u64)> = (0..times.len())
        .filter(|&i| (ports[i] == a || ports[i] == b) && drops[i] > 0)
        .map(|i| (times[i], drops[i]))
        .collect();
    assert!(!cable.is_empty());
    assert!(cable.iter().all(|&(t, _)| (12_000..=28_000).contains(&t)), "{cable:?}");
    let mut keys: Vec<(u64, u32)> = times.into_iter().zip(ports).collect();
    let n = keys.len();
    keys.dedup();
    assert_eq!(keys.len(), n, "rows in (time, port) order, each once");
    // Per-connection throughput and EV states were merged from both halves.
    let delivered: u64 = col_u64(&r2.throughput, "bytes").iter().sum();
    assert_eq!(delivered, r2.summary["bytes_delivered"].as_u64().unwrap());
    assert_eq!(r2.ev_states.rows() > 0, r1.ev_states.rows() > 0);
    // Every partition's EV log made it into the merged one, sampled or not. (Losing
    // the second partition's halves it; timeouts make the count vary by ~12 %.)
    let busy = busy();
    let quiet = busy.replace("sample_interval = \"3us\"", "sample_interval = \"0us\"");
    for (r, toml) in [(&r2, busy.as_str()), (&run_parts(&quiet, 2).1, quiet.as_str())] {
        let plain = run_parts(toml, 1).1;
        let (a, b) = (r.ev_states.rows() as f64, plain.ev_states.rows() as f64);
        assert!(rel(a, b) < 0.25, "EV log rows {a} partitioned vs {b}");
    }
}

#[test]
fn partitioned_runs_are_deterministic() {
    let (_, a) = run_parts(&busy(), 2);
    let (_, b) = run_parts(&busy(), 2);
    assert_eq!(a.flows, b.flows);
    assert_eq!(a.ports, b.ports);
    assert_eq!(a.paths, b.paths);
    assert_eq!(a.ev_states, b.ev_states);
    assert_eq!(a.throughput, b.throughput);
    assert_eq!(a.summary, b.summary);
    // Three partitions on a machine with fewer cores give one answer too.
    let (_, c) = run_parts(&busy(), 3);
    let (_, d) = run_parts(&busy(), 3);
    assert_eq!(c.flows, d.flows);
    assert_eq!(c.summary, d.summary);
    assert_eq!(c.summary["flows"]["unfinished"], 0);
}

#[test]
fn a_lone_flow_across_partitions_is_identical_to_a_plain_run() {
    // No simultaneous events to order differently: the flow completes at the same
    // picosecond. (The partitions finish the window in which it completed, so they
    // count a few more frames, the acknowledgements in flight at the end.)
    let toml = "[topology]\nkind = \"fat_tree\"\nk = 4\n[fabric]\npfc = false\n\
                [[workload]]\nkind = \"flows\"\nflows = [{ src = 0, dst = 15, size = \"3MB\" }]";
    let (one, r1) = run_parts(toml, 1);
    let (two, r2) = run_parts(toml, 2);
    assert_eq!(col_i64(&r1, "fct_ns"), col_i64(&r2, "fct_ns"));
    assert_eq!(r1.summary["sim_time_ns"], r2.summary["sim_time_ns"]);
    let (t1, t2) = (one.fabric.totals, two.fabric.totals);
    assert!(t2.packet_hops >= t1.packet_hops && t2.packet_hops - t1.packet_hops < 20, "{t1:?} vs {t2:?}");
    assert_eq!(t2.drops(), 0);
    // A fault due just after the end (inside the last window) did not happen.
    let end = r1.summary["sim_time_ns"].as_u64().unwrap();
    let late =
        format!("{toml}\n[[faults]]\nat = \"{}ns\"\nkind = \"link_down\"\nlink = \"core[0].down[0]\"", end + 300);
    let (_, l1) = run_parts(&late, 1);
    let (_, l2) = run_parts(&late, 2);
    assert_eq!((l1.faults.rows(), l2.faults.rows()), (0, 0));
}

#[test]
fn pfc_pauses_cross_partitions() {
    // RoCE with PFC: an incast from the far half fills host 0's edge switch, whose
    // PAUSE frames travel back across the cut.
    let toml = r#"
[topology]
kind = "fat_tree"
k = 4
switch_buffer = "300KB"
[transport]
kind = "roce"
[[workload]]
kind = "incast"
senders = [8, 9, 10, 11, 12, 13, 14]
receiver = 0
size = "300KB"
"#;
    let (one, r1) = run_parts(toml, 1);
    let (two, r2) = run_parts(toml, 2);
    let (t1, t2) = (one.fabric.totals, two.fabric.totals);
    println!("pauses {} vs {}; drops {} vs {}", t1.pfc_pauses, t2.pfc_pauses, t1.drops(), t2.drops());
    assert_eq!(r2.summary["flows"]["unfinished"], 0);
    assert!(t1.pfc_pauses > 0 && t2.pfc_pauses > 0);
    assert_eq!(t2.drops(), 0, "PFC across the cut keeps the fabric lossless");
    assert!(rel(t2.pfc_pauses as f64, t1.pfc_pauses as f64) < 0.3, "{} vs {}", t2.pfc_pauses, t1.pfc_pauses);
    let last = |r: &RunResult| *col_i64(r, "fct_ns").iter().max().unwrap() as f64;
    assert!(rel(last(&r2), last(&r1)) < 0.03, "{} vs {}", last(&r2), last(&r1));
}

#[test]
fn a_ring_all_reduce_runs_partitioned() {
    // Each step waits for what the same host received: never across partitions.
    let toml = r#"
[topology]
kind = "fat_tree"
k = 4
[fabric]
pfc = false
trimming = true
[transport]
kind = "mrc"
[[workload]]
kind = "all_reduce"
size = "1MB"
"#;
    let (_, r1) = run_parts(toml, 1);
    let (_, r2) = run_parts(toml, 2);
    let t = |r: &RunResult| r.summary["collectives"][0]["duration_ns"].as_f64().expect("collective time");
    println!("all-reduce {} vs {}", t(&r1), t(&r2));
    assert_eq!(r2.summary["flows"]["unfinished"], 0);
    assert!(rel(t(&r2), t(&r1)) < 0.03);
}

#[test]
fn bad_partition_settings_are_refused() {
    let base = "[topology]\nkind = \"fat_tree\"\nk = 4\n[[workload]]\nkind = \"permutation\"\nsize = \"10KB\"\n";
    for value in ["0", "9", "\"two\""] {
        let err = Scenario::from_toml(&format!("partitions = {value}\n{base}")).unwrap_err().to_string();
        assert!(err.starts_with("partitions"), "{value}: {err}");
        assert!(value.starts_with('"') || err.contains('8'), "{value}: the allowed range: {err}");
    }
    let zero = base.replace("k = 4", "k = 4\nlink_delay = \"0us\"");
    let err = Sim::new(scenario(&format!("partitions = 2\n{zero}"))).err().expect("refused").to_string();
    assert!(err.contains("partitions") && err.contains("link_delay"), "{err}");
}

/// Runs `toml` on `partitions` capturing `spec` into a fresh file; returns the result,
/// the frames written and the records as `(nanoseconds, bytes)`.
fn run_captured(toml: &str, partitions: u8, spec: &str) -> (RunResult, u64, Vec<(u64, Vec<u8>)>) {
    let mut sc = scenario(toml);
    sc.partitions = partitions;
    static FILES: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = FILES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let path = std::env::temp_dir().join(format!("fabricsim-part-{}-{n}.pcap", std::process::id()));
    let mut sim = Sim::new(sc).unwrap();
    sim.capture(spec, &path, 64).unwrap();
    let (mut sim, r) = run_sim(sim);
    let frames = sim.finish_capture().expect("capturing").expect("written");
    let bytes = std::fs::read(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    let mut records = Vec::new();
    let mut at = 24;
    while at < bytes.len() {
        let word = |i: usize| u32::from_le_bytes(bytes[at + i..at + i + 4].try_into().unwrap()) as u64;
        let (ns, incl) = (word(0) * 1_000_000_000 + word(4), word(8) as usize);
        records.push((ns, bytes[at + 16..at + 16 + incl].to_vec()));
        at += 16 + incl;
    }
    (r, frames, records)
}

#[test]
fn a_capture_across_partitions_is_that_of_a_plain_run() {
    // Both hosts' cables and every core switch's (the cables between the halves),
    // around a lone flow from one partition to the other: the same frames at the same
    // times, the acknowledgements the partitions send after the end left out.
    let toml = "[topology]\nkind = \"fat_tree\"\nk = 4\n[fabric]\npfc = false\n\
                [[workload]]\nkind = \"flows\"\nflows = [{ src = 0, dst = 15, size = \"300KB\" }]";
    let spec = "host[0],host[15],core[0],core[1],core[2],core[3]";
    let (r1, n1, one) = run_captured(toml, 1, spec);
    let (r2, n2, two) = run_captured(toml, 2, spec);
    assert_eq!(r1.summary["sim_time_ns"], r2.summary["sim_time_ns"]);
    // 75 data packets cross two host cables and one core's two cables each.
    assert!(n1 > 4 * 75 && n1 == one.len() as u64, "{n1} frames, {} records", one.len());
    assert_eq!(n2, n1);
    assert!(one == two, "the partitioned capture differs");
}

#[test]
fn a_partitioned_capture_is_in_time_order_and_deterministic() {
    // A loaded run with failures and loss between the halves, three partitions: the
    // partitions' frames merged by time, the same file every run, and every frame the
    // tapped ports sent up to the stop.
    let stopped = format!("stop = \"30us\"\n{}", busy());
    let spec = "core[0],core[1],core[2],core[3],host[1]";
    let (r, n, a) = run_captured(&stopped, 3, spec);
    let (_, _, b) = run_captured(&stopped, 3, spec);
    assert!(a == b, "two runs captured different frames");
    assert!(a.windows(2).all(|w| w[0].0 <= w[1].0), "frames out of time order");
    assert_eq!(r.summary["ending"], "stop_time");
    let (_, n1, _) = run_captured(&stopped, 1, spec);
    println!("{n} frames partitioned, {n1} plain");
    assert!(n > 1000 && rel(n as f64, n1 as f64) < 0.05, "{n} vs {n1}");
}

#[test]
fn a_partitioned_run_stopped_early_reports_like_a_plain_one() {
    // Stopped mid-run: unfinished flows' retransmissions (booked by whichever
    // partition sends them) and the samples up to the stop time.
    let stopped = format!("stop = \"40us\"\n{}", busy());
    let (_, r1) = run_parts(&stopped, 1);
    let (_, r2) = run_parts(&stopped, 2);
    assert_eq!(r2.summary["ending"], "stop_time");
    assert!(r2.summary["flows"]["unfinished"].as_u64().unwrap() > 0);
    let retx = |r: &RunResult| col_u64(&r.flows, "retransmitted_packets").iter().sum::<u64>() as f64;
    println!("retransmissions {} vs {}", retx(&r1), retx(&r2));
    assert!(retx(&r1) > 0.0 && rel(retx(&r2), retx(&r1)) < 0.3, "{} vs {}", retx(&r2), retx(&r1));
    // Every resent packet is charged to its message, acknowledged or not.
    for r in [&r1, &r2] {
        assert_eq!(retx(r), r.summary["retransmitted_packets"].as_u64().unwrap() as f64);
    }
    let times = |r: &RunResult| {
        let mut t = col_u64(&r.ports, "time_ns");
        t.dedup();
        t
    };
    assert_eq!(times(&r1), times(&r2), "samples at the same times, up to the stop");
}

/// The sampled tables of `r`: bytes in `throughput`, bytes sent in `ports`, and the
/// last time of each.
fn sampled(sim: &Sim, r: &RunResult) -> (u64, u64, u64, u64) {
    let _ = sim;
    let tput = col_u64(&r.throughput, "bytes").iter().sum();
    let sent = col_u64(&r.ports, "tx_bytes").iter().sum();
    let last = |t: &fabricsim_run::Table| col_u64(t, "time_ns").iter().copied().max().unwrap_or(0);
    (tput, sent, last(&r.throughput), last(&r.ports))
}

#[test]
fn partitioned_runs_keep_every_sample_of_a_plain_run() {
    // The audit's cases: one 4 KB MRC flow within a leaf sampled every nanosecond (its
    // last event falls on the grid: the partitions' sample there came before it and the
    // last one was skipped, so throughput.parquet was empty), the same over four
    // partitions with 32 KB, and RoCE on a multi-plane fabric sampled every 7 ns.
    let one_leaf = |kind: &str, size: u32| {
        format!(
            "[topology]\nkind = \"leaf_spine\"\nleaves = 2\nspines = 2\nhosts_per_leaf = 4\n\
             [transport]\nkind = \"{kind}\"\n[output]\nsample_interval = \"1ns\"\n\
             [[workload]]\nkind = \"flows\"\nflows = [{{ src = 0, dst = 1, size = {size} }}]\n"
        )
    };
    let planes = "[topology]\nkind = \"multi_plane\"\nplanes = 2\ngroups = 2\nhosts_per_group = 4\nt1_per_plane = 2\n\
                  [transport]\nkind = \"roce\"\n[output]\nsample_interval = \"7ns\"\n\
                  [[workload]]\nkind = \"permutation\"\nsize = \"64KB\"\n";
    for (toml, parts) in [(one_leaf("mrc", 4096), 2), (one_leaf("mrc", 32768), 4), (planes.to_string(), 2)] {
        let (sim1, r1) = run_parts(&toml, 1);
        let (simn, rn) = run_parts(&toml, parts);
        let delivered = r1.summary["bytes_delivered"].as_u64().unwrap();
        assert_eq!(rn.summary["bytes_delivered"].as_u64().unwrap(), delivered);
        let (t1, s1, tt1, pt1) = sampled(&sim1, &r1);
        let (tn, sn, ttn, ptn) = sampled(&simn, &rn);
        // Every byte placed shows in the throughput table, every byte a port sent in
        // the port series, and both reach the end of the run.
        assert_eq!((t1, tn), (delivered, delivered), "throughput bytes, {parts} partitions:\n{toml}");
        assert_eq!(sn, s1, "bytes sent by ports, {parts} partitions:\n{toml}");
        let end = r1.summary["sim_time_ns"].as_u64().unwrap();
        assert_eq!(rn.summary["sim_time_ns"].as_u64().unwrap(), end);
        assert!(pt1 == end && ptn == end, "last port sample at {pt1} and {ptn} ns of {end}:\n{toml}");
        assert_eq!(tt1, ttn, "last throughput row");
        assert!(rn.summary["sampling_stopped_ns"].is_null());
    }
}

#[test]
fn a_multishot_trigger_within_a_partition_runs_as_in_a_plain_run() {
    // A pool of transfers among hosts 0-7 (one partition), each started by the
    // arrival of the one before through an htsim multishot trigger, beside a flow
    // between hosts 8 and 9 (the other partition): the same flows at the same times,
    // partitioned or not, and every partitioned run alike.
    let dir = std::env::temp_dir().join(format!("fabricsim-multishot-parts-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut cm = String::from("Nodes 16\n0->1 id 1 start 0 size 300000 recv_done_trigger 4\n");
    for k in 0..5u32 {
        cm += &format!("{}->{} id {} trigger 4 size 300000 recv_done_trigger 4\n", (k + 1) % 8, (k + 3) % 8, k + 2);
    }
    cm += "8->9 id 20 start 0 size 1000000\ntrigger id 4 multishot\n";
    std::fs::write(dir.join("pool.cm"), cm).unwrap();
    let toml = "[topology]\nkind = \"fat_tree\"\nk = 4\n[[workload]]\nkind = \"htsim\"\nfile = \"pool.cm\"";
    let run = |partitions: u8| {
        let mut sc = Scenario::from_toml_in(toml, &dir).unwrap();
        sc.partitions = partitions;
        run_scenario(sc).1
    };
    let (plain, a, b) = (run(1), run(2), run(2));
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(a.flows, b.flows);
    assert_eq!(a.summary["flows"]["unfinished"], 0);
    let (start, finish) = (col_i64(&plain, "start_ns"), col_i64(&plain, "finish_ns"));
    for k in 1..6 {
        assert_eq!(start[k], finish[k - 1], "transfer {k} starts as the one before arrives");
    }
    assert_eq!(col_i64(&a, "start_ns"), start);
    assert_eq!(col_i64(&a, "finish_ns"), finish);
}
