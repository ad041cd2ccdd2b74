//! The mechanisms' expected behaviour at small scale: DCQCN keeps queues near the ECN
//! thresholds, ECMP collides like balls into bins, bytes are conserved under loss, and
//! runs are deterministic.

mod common;

use common::*;
use fabricsim_fabric::PortKind;
use fabricsim_run::Column;
use proptest::prelude::*;

/// The sampled data-queue depth of the port called `name`, over time.
fn queue_series(sim: &fabricsim_run::Sim, r: &fabricsim_run::RunResult, name: &str) -> Vec<(u64, u64)> {
    let id = r.port_names.iter().position(|n| n == name).unwrap_or_else(|| panic!("no port {name}")) as u32;
    let Some(Column::U32(ports)) = r.ports.get("port_id") else { panic!() };
    let t = col_u64(&r.ports, "time_ns");
    let q = col_u64(&r.ports, "queue_max_bytes");
    let _ = sim;
    (0..ports.len()).filter(|&i| ports[i] == id).map(|i| (t[i], q[i])).collect()
}

const DCQCN_INCAST: &str = r#"
[topology]
kind = "leaf_spine"
leaves = 1
spines = 1
hosts_per_leaf = 9
[fabric]
pfc = true
ecn = { kmin = "40KB", kmax = "160KB", pmax = 0.2 }
[transport]
kind = "roce"
cc = "CC"
[workload]
kind = "incast"
senders = 8
receiver = 0
size = "12MB"
[output]
sample_interval = "10us"
"#;

#[test]
fn dcqcn_keeps_the_incast_queue_near_the_ecn_thresholds() {
    let (sim, r) = run(&DCQCN_INCAST.replace("CC", "dcqcn"));
    assert_eq!(r.summary["flows"]["unfinished"], 0);
    let series = queue_series(&sim, &r, "leaf[0].down[0]");
    let end = *series.iter().map(|(t, _)| t).max().unwrap();
    // Once rates have converged (after the first few hundred microseconds) the
    // bottleneck queue oscillates around Kmin..Kmax instead of growing.
    let settled: Vec<u64> = series.iter().filter(|(t, _)| *t > 1_000_000 && *t < end - 200_000).map(|s| s.1).collect();
    assert!(settled.len() > 50, "too few samples: {}", settled.len());
    let mut sorted = settled.clone();
    sorted.sort();
    let median = sorted[sorted.len() / 2];
    let p90 = sorted[sorted.len() * 9 / 10];
    println!("DCQCN incast queue: median {median} B, p90 {p90} B, max {}", sorted[sorted.len() - 1]);
    assert!(median <= 240_000, "median queue {median} B, well above Kmax = 160KB");
    assert!(p90 <= 400_000, "p90 queue {p90} B");
    assert!(r.summary["cnps"].as_u64().unwrap() > 100);

    // Without congestion control the same incast fills the buffer up to PFC.
    let (sim2, r2) = run(&DCQCN_INCAST.replace("CC", "none"));
    let uncontrolled = queue_series(&sim2, &r2, "leaf[0].down[0]").iter().map(|s| s.1).max().unwrap();
    println!("without DCQCN: max queue {uncontrolled} B, {} PAUSEs", r2.summary["pfc_pauses"]);
    assert!(uncontrolled > 4 * p90, "DCQCN must be what keeps the queue short ({uncontrolled} vs {p90})");
}

fn permutation(seed: u64) -> String {
    format!(
        "seed = {seed}\n[topology]\nkind = \"fat_tree\"\nk = 8\n[fabric]\necn = false\n\
         [transport]\nkind = \"roce\"\ncc = \"none\"\n[workload]\nkind = \"permutation\"\nsize = \"1MB\"\n[output]\nsample_interval = \"0us\""
    )
}

#[test]
fn ecmp_collisions_follow_balls_into_bins_and_halve_colliding_flows() {
    // At each edge switch the 4 hosts' flows leave on 4 uplinks chosen by hash: the
    // number of flows per uplink is Binomial(flows leaving, 1/4).
    let mut observed = [0u64; 5];
    let mut total = 0u64;
    let mut half_rate = 0usize;
    let mut line_rate = 0usize;
    let seeds = 12;
    for seed in 1..=seeds {
        let (sim, r) = run(&permutation(seed));
        // One 1MB flow puts this many bytes on each link it crosses.
        let flow_bytes: u64 = 1_000_000 + 245 * 102 + 16;
        for p in &sim.fabric.ports {
            let node = &sim.fabric.nodes[p.node as usize];
            if p.kind == PortKind::Up && node.tier == 1 {
                // ACKs of flows coming the other way add about 2.5%: round.
                let n = ((p.stats.tx_bytes as f64) / flow_bytes as f64).round() as usize;
                observed[n.min(4)] += 1;
                total += 1;
            }
        }
        let slow = col_f64(&r.flows, "slowdown");
        half_rate += slow.iter().filter(|&&s| s > 1.8).count();
        line_rate += slow.iter().filter(|&&s| s < 1.05).count();
    }
    // Flows leave an edge unless their destination is under the same edge (3 of 127).
    let m = 4.0 * 124.0 / 127.0;
    let p: f64 = 0.25;
    let binom = |k: i32| {
        let c = [1.0, 4.0, 6.0, 4.0, 1.0][k as usize];
        c * p.powi(k) * (1.0 - p).powi(4 - k)
    };
    for (k, &seen) in observed.iter().enumerate().take(5) {
        let frac = seen as f64 / total as f64;
        println!("uplinks carrying {k} flows: {frac:.3} (balls into bins {:.3})", binom(k as i32));
        assert!((frac - binom(k as i32)).abs() < 0.05, "k={k}: observed {frac:.3}, expected {:.3}", binom(k as i32));
    }
    let mean: f64 = (0..5).map(|k| k as f64 * observed[k] as f64).sum::<f64>() / total as f64;
    assert!((mean - m / 4.0 * 1.0).abs() < 0.1, "mean flows per uplink {mean}");
    let flows = seeds as usize * 128;
    println!("flows at line rate: {line_rate}/{flows}, at half rate or worse: {half_rate}/{flows}");
    // A flow crosses up to four hashed links (edge and aggregation uplinks, then the
    // core and aggregation downlinks it lands on); it runs at line rate only if it is
    // alone on all of them, which (3/4)^3 per hashed hop makes rare but not absent.
    assert!(half_rate > flows / 2, "collisions must halve most flows");
    assert!(line_rate > flows / 50, "flows that collide nowhere run at line rate");
}

#[test]
fn a_workload_can_run_its_own_transport() {
    // Background STELLAR traffic beside one QP-Scaling flow with 4 QPs: each workload's
    // connections get their own protocol, and only the sprayed ones report paths.
    let (sim, r) = run(r#"
[topology]
kind = "leaf_spine"
leaves = 2
spines = 4
hosts_per_leaf = 4
[transport]
kind = "stellar"
paths = 16
[[workload]]
kind = "flows"
flows = [{ src = 0, dst = 4, size = "1MB" }, { src = 1, dst = 5, size = "1MB" }]
[[workload]]
kind = "flows"
transport = { kind = "qp_scaling", qps = 4 }
flows = [{ src = 2, dst = 6, size = "1MB" }]
"#);
    assert_eq!(r.summary["flows"]["unfinished"].as_u64(), Some(0));
    let qps: Vec<u32> = (0..sim.plan.conns.len()).map(|c| sim.qps_of(c)).collect();
    assert_eq!(qps, [1, 1, 4]);
    let sprayed: std::collections::BTreeSet<u32> = sim.path_stats().iter().map(|p| p.0).collect();
    assert_eq!(sprayed.into_iter().collect::<Vec<_>>(), [0, 1]);
    assert_eq!(r.summary["transport"], "stellar");
}

#[test]
fn same_seed_same_results_other_seed_other_ecmp_choices() {
    let (_, a) = run(&permutation(7));
    let (_, b) = run(&permutation(7));
    assert_eq!(a.flows, b.flows);
    assert_eq!(a.summary, b.summary);
    let (_, c) = run(&permutation(8));
    assert_ne!(col_i64(&a, "fct_ns"), col_i64(&c, "fct_ns"));
}

#[test]
fn adding_a_workload_leaves_the_other_flows_random_choices_alone() {
    // Two flows leave leaf 0 over its four spine uplinks, chosen by hashing their
    // source ports. Adding a workload before them (a flow between other leaves, later
    // in time) must not change those ports, so the same uplinks carry the same bytes.
    let base = "[topology]\nkind = \"leaf_spine\"\nleaves = 4\nspines = 4\nhosts_per_leaf = 4\n";
    let flows = "[[workload]]\nkind = \"flows\"\nflows = [{ src = 0, dst = 8, size = \"50KB\" }, { src = 1, dst = 9, size = \"50KB\" }]\n";
    let extra = "[[workload]]\nkind = \"flows\"\nflows = [{ src = 12, dst = 5, size = \"10KB\", start = \"500us\" }]\n";
    let leaf0_uplinks = |s: &fabricsim_run::Sim| -> Vec<u64> {
        (0..s.fabric.ports.len() as u32)
            .filter(|&p| {
                s.fabric.ports[p as usize].kind == PortKind::Up && s.fabric.port_name(p).starts_with("leaf[0]")
            })
            .map(|p| s.fabric.ports[p as usize].stats.tx_bytes)
            .collect()
    };
    let (alone, _) = run(&format!("{base}{flows}"));
    let (with_extra, _) = run(&format!("{base}{extra}{flows}"));
    assert_eq!(with_extra.plan.conns[1].workload, 1, "the flows are now the second workload");
    assert_eq!(leaf0_uplinks(&alone), leaf0_uplinks(&with_extra));
}

fn conservation_scenario(seed: u64, loss: f64, pfc: bool, transport: &str) -> String {
    format!(
        r#"seed = {seed}
[topology]
kind = "leaf_spine"
leaves = 3
spines = 2
hosts_per_leaf = 3
switch_buffer = "1MB"
[fabric]
pfc = {pfc}
link_loss = {loss}
[transport]
{transport}
[[workload]]
kind = "permutation"
size = "300KB"
[[workload]]
kind = "incast"
senders = 4
receiver = 2
size = "200KB"
[[workload]]
kind = "all_reduce"
hosts = 4
size = "400KB"
start = "5us"
[[workload]]
kind = "flows"
flows = [{{ src = 1, dst = 7, size = 1 }}, {{ src = 8, dst = 0, size = "4097B", start = "3us" }}]
"#
    )
}

const TRANSPORTS: &[&str] = &[
    "kind = \"roce\"\nrto = \"100us\"\nretry_limit = 1000",
    "kind = \"roce\"\ncc = \"none\"\nrto = \"100us\"\nretry_limit = 1000",
    "kind = \"qp_scaling\"\nqps = 4\nrto = \"100us\"\nretry_limit = 1000",
    "kind = \"mprdma\"",
    "kind = \"stellar\"",
    "kind = \"stellar\"\npath_algo = \"single\"",
    "kind = \"stellar\"\npath_algo = \"dwrr\"",
    "kind = \"udmp\"",
    "kind = \"mrc\"\nevs = 16",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    /// Every byte an application sends is placed at the receiver exactly once, for
    /// every transport and workload, with or without PFC and random link loss.
    #[test]
    fn bytes_are_conserved_under_random_loss(seed in 0u64..1_000_000, loss in prop::sample::select(vec![0.0, 0.001, 0.01]), pfc: bool, t in 0..TRANSPORTS.len()) {
        let (sim, r) = run(&conservation_scenario(seed, loss, pfc, TRANSPORTS[t]));
        let unfinished = r.summary["flows"]["unfinished"].as_u64().unwrap();
        prop_assert_eq!(unfinished, 0, "seed {} loss {} pfc {}: {}", seed, loss, pfc, r.summary);
        prop_assert_eq!(&r.summary["bytes_delivered"], &r.summary["bytes_offered"]);
        // Exactly once per connection: each responder placed its messages' bytes.
        for (c, _) in sim.plan.conns.iter().enumerate() {
            let expected: u64 = sim.plan.messages.iter().filter(|m| m.conn as usize == c).map(|m| m.size).sum();
            let placed: u64 = sim.endpoint_stats().filter(|&(_, resp, conn)| resp && conn as usize == c).map(|(s, _, _)| s.bytes_placed).sum();
            prop_assert_eq!(placed, expected, "connection {}", c);
        }
        if loss > 0.0 {
            prop_assert!(r.summary["drops"].as_u64().unwrap() > 0);
        }
        // Every retransmission is charged to its message, also for messages whose
        // acknowledgement had not come back when the run ended.
        let per_flow: u64 = col_u64(&r.flows, "retransmitted_packets").iter().sum();
        prop_assert_eq!(per_flow, r.summary["retransmitted_packets"].as_u64().unwrap());
    }
}

/// A host link dies for good under a flow that retries for ever (MPRDMA and UDMP have
/// no retry limit): the run ends as stalled once nothing has progressed for
/// `stall_after` (within a quarter more), instead of never, whether or not the run is
/// partitioned. The backed-off timeouts are milliseconds apart: looking only when an
/// event came, the watchdog ended a 500 us limit at 1.6 ms. With the watchdog off the
/// scenario's stop ends it.
#[test]
fn a_flow_that_can_never_finish_ends_the_run_as_stalled() {
    let toml = |kind: &str, extra: &str| {
        format!(
            "{extra}\n[topology]\nkind = \"leaf_spine\"\nleaves = 2\nspines = 2\nhosts_per_leaf = 2\n\
             [transport]\nkind = \"{kind}\"\n\
             [[workload]]\nkind = \"flows\"\nflows = [{{ src = 0, dst = 2, size = 1000000 }}]\n\
             [[faults]]\nat = \"10us\"\nkind = \"link_down\"\nlink = \"host[2].nic[0]\"\n\
             [output]\nsample_interval = \"0us\""
        )
    };
    // The flow's last progress is within its first 20 us.
    let cases = [
        ("mprdma", "", 1000.0),
        ("mprdma", "stall_after = \"100ms\"", 100.0),
        ("udmp", "stall_after = \"500us\"", 0.5),
        ("udmp", "stall_after = \"2ms\"\npartitions = 2", 2.0),
        // A stop after the stall: the stall ends the run, though the next event (a
        // backed-off timeout) is after the stop (a review found these ended at the stop).
        ("udmp", "stall_after = \"2ms\"\nstop = \"3ms\"", 2.0),
        ("udmp", "stall_after = \"2ms\"\nstop = \"3ms\"\npartitions = 2", 2.0),
        // Many events (STELLAR retries every 250 us): periodic looks between the timed
        // ones, which ended a 500 ms limit at 730 ms when looks were a quarter apart.
        ("stellar", "stall_after = \"500ms\"", 500.0),
    ];
    for (kind, extra, limit_ms) in cases {
        let (_, r) = run(&toml(kind, extra));
        assert_eq!(r.summary["ending"], "stalled", "{kind} {extra}");
        assert_eq!(r.summary["flows"]["unfinished"], 1);
        let end_ms = r.summary["sim_time_ns"].as_f64().unwrap() / 1e6;
        assert!((limit_ms..limit_ms * 1.25 + 0.02).contains(&end_ms), "{kind} {extra}: ended at {end_ms} ms");
    }
    let (_, r) = run(&toml("mprdma", "stall_after = \"none\"\nstop = \"3s\""));
    assert_eq!(r.summary["ending"], "stop_time");
    assert_eq!(r.summary["sim_time_ns"], 3_000_000_000u64);
}

/// Fault kinds and their extra keys for [`faults_never_break_a_run`]: every kind, on a
/// leaf-spine cable or switch.
const FAULTS: &[&str] = &[
    "kind = \"link_down\"\nlink = \"leaf[{a}].up[{b}]\"",
    "kind = \"link_up\"\nlink = \"leaf[{a}].up[{b}]\"",
    "kind = \"link_down\"\nlink = \"host[{h}].nic[0]\"",
    "kind = \"link_up\"\nlink = \"host[{h}].nic[0]\"",
    "kind = \"link_flap\"\nlink = \"spine[{b}].down[{a}]\"\nperiod = \"7us\"\nuntil = \"150us\"",
    "kind = \"link_loss\"\nlink = \"leaf[{a}].up[{b}]\"\nloss = 0.3",
    "kind = \"ev_loss\"\nlink = \"host[{h}].nic[0]\"\nev = {ev}\nloss = 1.0",
    "kind = \"switch_down\"\nswitch = \"spine[{b}]\"",
    "kind = \"switch_up\"\nswitch = \"spine[{b}]\"",
    "kind = \"delay\"\nlink = \"leaf[{a}].up[{b}]\"\ndelay = \"{d}\"",
    "kind = \"rate\"\nlink = \"host[{h}].nic[0]\"\nrate = \"{r}\"",
    "kind = \"delay\"\nswitch = \"spine[{b}]\"\ndelay = \"{d}\"",
    "kind = \"rate\"\nswitch = \"leaf[{a}]\"\nrate = \"{r}\"",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]
    /// Random faults at random times, under every transport, never break a run (no
    /// panic, which a debug build's overflow checks make likelier to show), never place
    /// a byte twice, and a run that ends with every flow finished delivered everything.
    #[test]
    fn faults_never_break_a_run(
        seed in 0u64..1_000_000,
        t in 0..TRANSPORTS.len(),
        pfc: bool,
        faults in prop::collection::vec((0..FAULTS.len(), 0u32..3, 0u32..2, 0u32..9, 0u64..120, 0u32..3), 1..5),
    ) {
        let mut toml = conservation_scenario(seed, 0.0, pfc, TRANSPORTS[t]);
        toml = format!("stop = \"2ms\"\n{toml}");
        for &(k, a, b, h, at, v) in &faults {
            let f = FAULTS[k]
                .replace("{a}", &a.to_string())
                .replace("{b}", &b.to_string())
                .replace("{h}", &h.to_string())
                .replace("{ev}", &(v * 12_345).to_string())
                .replace("{d}", ["0us", "2us", "300us"][v as usize])
                .replace("{r}", ["1Gbps", "40Gbps", "100Gbps"][v as usize]);
            toml.push_str(&format!("[[faults]]\nat = \"{at}us\"\n{f}\n"));
        }
        let (sim, r) = run(&toml);
        let (delivered, offered) = (r.summary["bytes_delivered"].as_u64().unwrap(), r.summary["bytes_offered"].as_u64().unwrap());
        prop_assert!(delivered <= offered, "{delivered} > {offered}\n{toml}");
        for (c, _) in sim.plan.conns.iter().enumerate() {
            let expected: u64 = sim.plan.messages.iter().filter(|m| m.conn as usize == c).map(|m| m.size).sum();
            let placed: u64 = sim.endpoint_stats().filter(|&(_, resp, conn)| resp && conn as usize == c).map(|(s, _, _)| s.bytes_placed).sum();
            prop_assert!(placed <= expected, "connection {c}: {placed} > {expected}\n{toml}");
        }
        if r.summary["ending"] == "all_finished" {
            prop_assert_eq!(delivered, offered);
        }
        let per_flow: u64 = col_u64(&r.flows, "retransmitted_packets").iter().sum();
        prop_assert_eq!(per_flow, r.summary["retransmitted_packets"].as_u64().unwrap());
    }
}

/// Host 0's plane-0 cable fails, then plane 0's T0 switch of its group goes down and
/// comes back. The cable is still dead, and the host must still be told so: told "up"
/// when the switch returned, MRC sent a share of its packets into the dead cable.
#[test]
fn a_switch_back_up_leaves_a_failed_host_cable_dead_for_the_host_too() {
    let toml = r#"
seed = 3
[topology]
kind = "multi_plane"
planes = 2
groups = 2
hosts_per_group = 2
t1_per_plane = 2
[fabric]
pfc = false
trimming = true
[transport]
kind = "mrc"
evs = 16
[workload]
kind = "flows"
flows = [{ src = 0, dst = 2, size = "2MB", start = "0us" }]
[[faults]]
at = "5us"
kind = "link_down"
link = "host[0].nic[0]"
[[faults]]
at = "10us"
kind = "switch_down"
switch = "t0[0]"
[[faults]]
at = "20us"
kind = "switch_up"
switch = "t0[0]"
"#;
    let (sim, r) = run(toml);
    assert_eq!(r.summary["flows"]["unfinished"], 0);
    let nic = sim.fabric.port_by_name("host[0].nic[0]").expect("the port");
    assert!(!sim.fabric.ports[nic as usize].up, "the cable stays down");
    // Frames started on it before it failed at 5 us may die on it; none after.
    let dropped = sim.fabric.ports[nic as usize].stats.drops;
    assert!(dropped <= 4, "{dropped} frames sent into the dead cable");
}

/// A run that stalls (the receiver's link dies for good) still records its last
/// interval: port samples up to the end, and the entropy-value state changes since
/// the last sample. They used to be dropped: with 1 ms samples nothing at all.
#[test]
fn a_stalled_run_records_its_last_interval() {
    let toml = r#"
seed = 1
stall_after = "300us"
[topology]
kind = "leaf_spine"
leaves = 2
spines = 2
hosts_per_leaf = 2
[fabric]
pfc = false
trimming = true
[transport]
kind = "mrc"
evs = 8
[workload]
kind = "flows"
flows = [{ src = 0, dst = 2, size = "1MB" }]
[[faults]]
at = "20us"
kind = "link_down"
link = "host[2].nic[0]"
[output]
sample_interval = "1ms"
"#;
    let (_, r) = run(toml);
    assert_eq!(r.ending, fabricsim_run::Ending::Stalled);
    let drops: u64 = col_u64(&r.ports, "drops").iter().sum();
    assert!(drops > 0);
    assert_eq!(drops, r.summary["drops"].as_u64().unwrap(), "the port samples cover the whole run");
    assert!(r.ev_states.rows() > 0, "state changes since the last sample are recorded");
}

/// The flow table is consistent as written: `fct_ns` is exactly `finish_ns -
/// start_ns` (each rounded separately, they were off by a nanosecond for many flows).
#[test]
fn flow_completion_times_equal_finish_minus_start_as_written() {
    // Ring steps start when the step before them is received, at any picosecond.
    let toml = r#"
seed = 2
[topology]
kind = "leaf_spine"
leaves = 2
spines = 2
hosts_per_leaf = 2
[transport]
kind = "roce"
[workload]
kind = "all_reduce"
size = "1MB"
"#;
    let (_, r) = run(toml);
    let (start, finish, fct) = (col_i64(&r, "start_ns"), col_i64(&r, "finish_ns"), col_i64(&r, "fct_ns"));
    assert!(!fct.is_empty());
    for i in 0..fct.len() {
        if finish[i] >= 0 {
            assert_eq!(fct[i], finish[i] - start[i], "flow {i}");
        }
    }
}

/// `bytes_offered` counts what the applications posted: a flow that would start after
/// the stop time is planned (the connections table lists it) but never posted.
#[test]
fn bytes_offered_counts_only_posted_messages() {
    let (_, r) =
        run("stop = \"20us\"\n[topology]\nkind = \"leaf_spine\"\nleaves = 2\nspines = 2\nhosts_per_leaf = 2\n\
         [[workload]]\nkind = \"flows\"\n\
         flows = [{ src = 0, dst = 3, size = 1000 }, { src = 1, dst = 2, size = 5000000, start = \"1ms\" }]\n");
    assert_eq!(r.summary["ending"], "stop_time");
    assert_eq!(r.summary["bytes_offered"], 1000);
    assert_eq!(r.summary["bytes_delivered"], 1000);
    assert_eq!(col_u64(&r.connections, "bytes").iter().sum::<u64>(), 5_001_000);
}

/// A legal link flap every 2 ns for 2 ms logs a million changes: the summary keeps the
/// first hundred and the count (it held them all: 240 MB of summary.json), the fault
/// table every one.
#[test]
fn a_fast_flap_keeps_the_summary_small_and_the_fault_table_whole() {
    let toml = "stop = \"200us\"\n[topology]\nkind = \"leaf_spine\"\nleaves = 2\nspines = 1\nhosts_per_leaf = 2\n\
                [[workload]]\nkind = \"flows\"\nflows = [{ src = 0, dst = 1, size = 1000, start = \"300us\" }]\n\
                [[faults]]\nat = \"0us\"\nkind = \"link_flap\"\nlink = \"spine[0].down[1]\"\nperiod = \"2ns\"\nuntil = \"200us\"\n";
    let (_, r) = run(toml);
    // Down and up once per period until the stop: 100,000 cycles.
    let total = r.summary["faults_total"].as_u64().unwrap();
    assert!((200_000..=200_001).contains(&total), "{total}");
    assert_eq!(r.faults.rows() as u64, total);
    assert_eq!(r.summary["faults"].as_array().unwrap().len(), fabricsim_run::metrics::SUMMARY_FAULTS);
    assert!(r.summary.to_string().len() < 100_000);
}

/// A 32:1 incast of 8 MB on a k = 8 fat tree (uet-htsim's incast) with PFC and DCQCN
/// loses nothing, yet PFC holds packets in queues for over a millisecond: with a 1 ms
/// timeout (the old default) RoCE timed out and went back N for nothing (26 timeouts,
/// 10,442 needless resends, 80 instead of 93 Gb/s into the receiver). The default is
/// the deployed InfiniBand local ACK timeout, 67 ms, which never fires here.
#[test]
fn a_lossless_incast_never_times_out_with_the_deployed_timeout() {
    let toml = |rto: &str| {
        format!(
            "[topology]\nkind = \"fat_tree\"\nk = 8\n[fabric]\npfc = true\n[transport]\nkind = \"roce\"\n{rto}\n\
             [[workload]]\nkind = \"incast\"\nsenders = {:?}\nreceiver = 0\nsize = \"8MB\"\n[output]\nsample_interval = \"0us\"\n",
            (1..=32).collect::<Vec<u32>>()
        )
    };
    let (_, r) = run(&toml(""));
    assert_eq!(r.summary["drops"], 0);
    assert_eq!((r.summary["timeouts"].as_u64(), r.summary["retransmitted_packets"].as_u64()), (Some(0), Some(0)));
    let gbps = 32.0 * 8e6 * 8.0 / r.summary["sim_time_ns"].as_f64().unwrap();
    assert!(gbps > 90.0, "{gbps} Gb/s into the receiver");
    let (_, short) = run(&toml("rto = \"1ms\""));
    assert_eq!(short.summary["drops"], 0);
    assert!(short.summary["timeouts"].as_u64().unwrap() > 0, "PFC holds packets over 1 ms");
}
