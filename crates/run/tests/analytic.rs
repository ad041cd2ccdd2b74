//! Analytic expectations: a lone flow's completion time, a saturated bottleneck.

// rstest passes a test's cases and values as arguments.
#![allow(clippy::too_many_arguments)]

mod common;

use common::*;
use fabricsim_engine::{Dur, Rate};
use rstest::rstest;

/// Wire bytes of a RoCE WRITE of `size` bytes at MTU 4096: 102 bytes of Ethernet,
/// IPv6, UDP, BTH, ICRC, FCS, preamble and gap per packet, plus a 16-byte RETH once.
fn write_wire_bytes(size: u64) -> (u64, u64) {
    let n = size.div_ceil(4096);
    let last = size - (n - 1) * 4096 + 102 + if n == 1 { 16 } else { 0 };
    (size + n * 102 + 16, last)
}

#[rstest]
// Same leaf: host link, leaf, host link.
#[case::same_leaf("leaf_spine", "leaves = 2\nspines = 2\nhosts_per_leaf = 4", 1, "100Gbps", 1, 2)]
// Across the spine: 4 links, 3 switches.
#[case::across_spines("leaf_spine", "leaves = 2\nspines = 2\nhosts_per_leaf = 4", 5, "100Gbps", 3, 4)]
// Across pods of a k=4 fat-tree: 6 links, 5 switches.
#[case::across_pods("fat_tree", "k = 4", 15, "100Gbps", 5, 6)]
// A faster fabric: the last frame crosses the 400G core quicker.
#[case::fast_fabric("fat_tree", "k = 4", 15, "400Gbps", 5, 6)]
fn a_lone_flow_takes_serialization_plus_path_latency(
    #[case] kind: &str,
    #[case] shape: &str,
    #[case] dst: u32,
    #[case] fabric_link: &str,
    #[case] switches: u64,
    #[case] links: u64,
    #[values(1u64, 4096, 1_000_000, 3_333_333)] size: u64,
    // Without PFC switch ports depart lazily: the same times must come out.
    #[values(true, false)] pfc: bool,
) {
    let (sim, r) = run(&format!(
        "[topology]\nkind = \"{kind}\"\n{shape}\nfabric_link = \"{fabric_link}\"\n\
         [fabric]\npfc = {pfc}\n\
         [[workload]]\nkind = \"flows\"\nflows = [{{ src = 0, dst = {dst}, size = {size} }}]"
    ));
    let (wire, last) = write_wire_bytes(size);
    let host = Rate::gbps(100);
    let fab = fabricsim_run::units::parse_rate(fabric_link).unwrap();
    let d = Dur::from_us(1).mul(links);
    let expected = if size <= 4096 {
        // One frame: stored and forwarded whole at every switch.
        host.tx_time(last) + d + fab.tx_time(last).mul(switches - 1) + host.tx_time(last)
    } else {
        // Store and forward of a back-to-back train: the short last frame waits at
        // every switch behind the frame ahead of it, which leaves one full frame's
        // serialization after arriving. The first frame is 16 bytes (its RETH)
        // longer: at every hop it closes its gap to the next frame by those bytes'
        // serialization, and a hop no faster than the source turns the accumulated
        // shortfall into delay for the whole train. Together each switch adds the
        // *first* frame's serialization at its egress rate; the last frame then
        // follows down the host link.
        let first = 4096 + 102 + 16;
        host.tx_time(wire - last) + d + fab.tx_time(first).mul(switches - 1) + host.tx_time(first) + host.tx_time(last)
    };
    let fct = col_i64(&r, "fct_ns")[0];
    assert_eq!(fct, expected.as_ns() as i64, "size {size}: {} ns expected", expected.as_ns());
    assert_eq!(col_u64(&r.flows, "ideal_fct_ns")[0], expected.as_ns());
    assert_eq!(sim.fabric.totals.ecn_marks, 0);
    assert_eq!(r.summary["retransmitted_packets"], 0);
}

const INCAST: &str = r#"
[topology]
kind = "leaf_spine"
leaves = 3
spines = 2
hosts_per_leaf = 4
switch_buffer = "4MB"
[transport]
kind = "roce"
cc = "none"
[workload]
kind = "incast"
senders = [1, 2, 3, 4, 5, 6, 7, 8]
receiver = 0
size = "2MB"
"#;

#[test]
fn incast_with_pfc_is_lossless_keeps_the_bottleneck_busy_and_shares_it() {
    let (sim, r) = run(&INCAST.replace("[transport]", "[fabric]\npfc = true\necn = false\n[transport]"));
    assert_eq!(r.summary["drops"], 0, "PFC must not drop");
    assert!(r.summary["pfc_pauses"].as_u64().unwrap() > 0, "8:1 into 4MB must pause");
    let (wire, _) = write_wire_bytes(2_000_000);
    let busy = Rate::gbps(100).tx_time(8 * wire);
    let last = col_i64(&r, "finish_ns").into_iter().max().unwrap();
    // The receiver's link never idles: the incast ends within a few microseconds of
    // the time needed to push all 8 flows through one 100G link.
    assert!(last as u64 >= busy.as_ns(), "{last} < {}", busy.as_ns());
    assert!((last as u64) < busy.as_ns() + 20_000, "bottleneck idled: {last} ns vs {} ns", busy.as_ns());
    let thr: Vec<f64> = col_i64(&r, "fct_ns").iter().map(|&f| 2e6 / f as f64).collect();
    let j = jain(&thr);
    println!("Jain's index of the 8 incast flows with PFC: {j:.3}");
    assert!(j > 0.8, "flows must share the bottleneck: Jain {j:.3}");
    assert_eq!(sim.fabric.totals.buffer_drops, 0);
}

#[test]
fn incast_without_pfc_drops_and_go_back_n_still_delivers_every_byte() {
    let (_, r) =
        run(&INCAST.replace("[transport]", "[fabric]\npfc = false\necn = false\n[transport]\nrto = \"200us\""));
    assert!(r.summary["drops_by_cause"]["buffer"].as_u64().unwrap() > 0, "a 4MB buffer must overflow");
    assert!(r.summary["retransmitted_packets"].as_u64().unwrap() > 0);
    assert_eq!(r.summary["flows"]["unfinished"], 0);
    assert_eq!(r.summary["bytes_delivered"], r.summary["bytes_offered"]);
}

/// A lone flow at line rate sampled every 1.5 us (not a whole number of frames): each
/// interval's utilization is the share of it the sender's NIC spent serializing, so it
/// never exceeds 1 though frames straddle the boundaries, and the busy time summed
/// over the intervals is the serialization time of every frame sent.
#[test]
fn port_utilization_is_the_busy_share_of_each_interval() {
    let (sim, r) = run("[topology]\nkind = \"leaf_spine\"\nleaves = 2\nspines = 2\nhosts_per_leaf = 2\n\
         [transport]\ncc = \"none\"\n\
         [[workload]]\nkind = \"flows\"\nflows = [{ src = 0, dst = 2, size = 1000000 }]\n\
         [output]\nsample_interval = \"1500ns\"");
    let nic = r.port_names.iter().position(|n| n == "host[0].nic[0]").unwrap() as u32;
    let ports = col_u32(&r.ports, "port_id");
    let time = col_u64(&r.ports, "time_ns");
    let util = col_f64(&r.ports, "utilization");
    let rows: Vec<(u64, f64)> = (0..ports.len()).filter(|&i| ports[i] == nic).map(|i| (time[i], util[i])).collect();
    assert!(util.iter().all(|&u| (0.0..=1.0).contains(&u)), "{util:?}");
    // Back to back at line rate between the first frame and the last.
    let full = &rows[1..rows.len() - 2];
    assert!(full.iter().all(|&(_, u)| u > 0.999), "{rows:?}");
    let (wire, _) = write_wire_bytes(1_000_000);
    let busy_ps: f64 = rows
        .iter()
        .scan(0u64, |prev, &(t, u)| {
            let dt = (t - *prev) * 1000;
            *prev = t;
            Some(u * dt as f64)
        })
        .sum();
    let expected = Rate::gbps(100).tx_time(wire).ps() as f64;
    assert!(rel(busy_ps, expected) < 1e-3, "{busy_ps} vs {expected}");
    assert_eq!(sim.fabric.ports[nic as usize].stats.tx_bytes, wire);
}

/// A flow that starts 10 s in, sampled every microsecond: the idle 10 s cost one
/// sample, not ten million, and the flow takes as long as it does at time zero.
#[rstest]
fn an_idle_stretch_is_sampled_once(#[values(1, 2)] partitions: u32) {
    let toml = |start: &str| {
        format!(
            "partitions = {partitions}\n\
             [topology]\nkind = \"leaf_spine\"\nleaves = 2\nspines = 2\nhosts_per_leaf = 2\n\
             [[workload]]\nkind = \"flows\"\nflows = [{{ src = 0, dst = 2, size = 100000, start = \"{start}\" }}]\n\
             [output]\nsample_interval = \"1us\""
        )
    };
    // Half a microsecond off the sampling grid, so that no sample falls on the start.
    let (late_sim, late) = run(&toml("10000000500ns"));
    let (_, early) = run(&toml("500ns"));
    assert!(late_sim.events() < 10_000, "{} events", late_sim.events());
    assert_eq!(col_i64(&late, "fct_ns"), col_i64(&early, "fct_ns"));
    // The same port rows, shifted by 10 s (one sample lands on the last boundary
    // before the start, 10 s: it finds nothing to record).
    let shift = |t: &[u64]| t.iter().map(|&x| x % 10_000_000_000).collect::<Vec<_>>();
    assert_eq!(shift(&col_u64(&late.ports, "time_ns")), col_u64(&early.ports, "time_ns"));
    assert_eq!(col_u64(&late.ports, "tx_bytes"), col_u64(&early.ports, "tx_bytes"));
}

/// QP-Scaling over a multi-plane NIC: its K queue pairs take min(K, P) planes, and the
/// ideal completion time counts that many (it counted one, so a lone flow over 4
/// planes showed a slowdown of 0.25-0.3). Two QPs split evenly: exact; sixteen: at
/// least the ideal, within 0.1 %.
#[rstest]
#[case(1, 0.0)]
#[case(2, 0.0)]
#[case(16, 1e-3)]
fn qp_scaling_over_planes_is_credited_with_the_planes_it_uses(#[case] qps: u32, #[case] tolerance: f64) {
    let (_, r) = run(&format!(
        "[topology]\nkind = \"multi_plane\"\nplanes = 4\ngroups = 2\nhosts_per_group = 2\nt1_per_plane = 2\n\
         [transport]\nkind = \"qp_scaling\"\nqps = {qps}\n\
         [[workload]]\nkind = \"flows\"\nflows = [{{ src = 0, dst = 3, size = \"4MB\" }}]"
    ));
    let slowdown = col_f64(&r.flows, "slowdown")[0];
    assert!(slowdown >= 1.0 && slowdown <= 1.0 + tolerance, "{qps} QPs: slowdown {slowdown}");
}

/// QP-Scaling on one NIC port: the ideal completion time of a message split over K
/// QPs counts the parts' frames, the small last ones last, so a lone flow's slowdown
/// is never below 1. (Counted as one message, with fewer but larger frames, a 4097-byte
/// message over 4 QPs showed 0.87: four small frames pipeline through the hops better
/// than a full one and a one-byte one.)
#[test]
fn qp_scaling_on_one_port_is_never_faster_than_its_ideal() {
    for qps in [2, 4, 16] {
        for size in [1u64, 100, 4097, 10_000, 65_537, 1_000_000] {
            let (_, r) = run(&format!(
                "[topology]\nkind = \"leaf_spine\"\nleaves = 2\nspines = 1\nhosts_per_leaf = 1\n\
                 [transport]\nkind = \"qp_scaling\"\nqps = {qps}\ncc = \"none\"\n\
                 [[workload]]\nkind = \"flows\"\nflows = [{{ src = 0, dst = 1, size = {size} }}]"
            ));
            let slowdown = col_f64(&r.flows, "slowdown")[0];
            assert!((1.0..1.1).contains(&slowdown), "{qps} QPs, {size} bytes: slowdown {slowdown}");
        }
    }
}

/// One RoCE flow (no congestion control) of `size` bytes from host 0 to host 1 of a
/// leaf-spine `leaves` x 1 spine, one host per leaf unless there is a single leaf
/// (then both hosts share it), with `faults` appended.
fn lone_roce_flow(leaves: u32, pfc: bool, size: u64, faults: &str) -> String {
    let hosts = if leaves == 1 { 2 } else { 1 };
    format!(
        "[topology]\nkind = \"leaf_spine\"\nleaves = {leaves}\nspines = 1\nhosts_per_leaf = {hosts}\n\
         [fabric]\npfc = {pfc}\n[transport]\nkind = \"roce\"\ncc = \"none\"\n\
         [[workload]]\nkind = \"flows\"\nflows = [{{ src = 0, dst = 1, size = {size} }}]\n{faults}"
    )
}

/// A delay fault of 20 us on the sender's cable is lifted 5 us into a lone 1 MB RoCE
/// flow: the frames sent after that must not overtake the delayed ones still on the
/// wire (a go-back-N receiver would NAK the gap and the sender resend). The last frame
/// arrives when it would have without the cut, no earlier than the frames ahead of it.
#[rstest]
fn a_frame_never_overtakes_the_one_ahead_when_a_links_delay_is_cut(#[values(true, false)] pfc: bool) {
    let toml = |cut: &str| {
        let faults = format!(
            "[[faults]]\nat = \"0us\"\nkind = \"delay\"\nlink = \"host[0].nic[0]\"\ndelay = \"20us\"\n\
             [[faults]]\nat = \"{cut}\"\nkind = \"delay\"\nlink = \"host[0].nic[0]\"\ndelay = \"0us\""
        );
        lone_roce_flow(1, pfc, 1_000_000, &faults)
    };
    let (_, r) = run(&toml("5us"));
    assert_eq!(r.summary["flows"]["unfinished"], 0);
    assert_eq!(r.summary["retransmitted_packets"], 0, "{}", r.summary);
    // Frames leave back to back for 80 us; those sent in the first 5 us arrive 20 us
    // late, and the rest reach the leaf with the last of them, from where they leave
    // one by one at line rate: the whole train is 20 us late.
    let (_, clean) = run(&toml("0us"));
    let (fct, base) = (col_i64(&r, "fct_ns")[0], col_i64(&clean, "fct_ns")[0]);
    assert_eq!(fct, base + 20_000, "against {base} ns without the delay");
}

/// A switch's `delay` fault delays every frame it sends by that much, and its `rate`
/// fault sets every one of its egress ports' rate: a lone flow through the spine
/// finishes exactly `delay` later (its data cross the spine once), and at the new rate
/// it takes the serialization time of its bytes at that rate.
#[rstest]
fn switch_faults_delay_and_slow_every_frame_through_the_switch(#[values(true, false)] pfc: bool) {
    let fct = |fault: &str| {
        let (_, r) = run(&lone_roce_flow(2, pfc, 2_000_000, fault));
        assert_eq!(r.summary["flows"]["unfinished"], 0);
        assert_eq!(r.summary["retransmitted_packets"], 0, "{}", r.summary);
        col_i64(&r, "fct_ns")[0]
    };
    let base = fct("");
    let delayed = fct("[[faults]]\nat = \"0us\"\nkind = \"delay\"\nswitch = \"spine[0]\"\ndelay = \"37us\"");
    assert_eq!(delayed, base + 37_000, "against {base} ns without the delay");
    // At 40 Gb/s the spine is the bottleneck: the bytes on the wire at that rate, give
    // or take the first and last frames' path (a few microseconds).
    let slow = fct("[[faults]]\nat = \"0us\"\nkind = \"rate\"\nswitch = \"spine[0]\"\nrate = \"40Gbps\"");
    let at_40g = Rate::gbps(40).tx_time(write_wire_bytes(2_000_000).0).as_ns() as i64;
    assert!(slow >= at_40g && slow < at_40g + 10_000, "{slow} ns against {at_40g} ns of serialization at 40 Gb/s");
}

/// The sender-side completion (HPCC's convention): the lone flow's last acknowledgement
/// comes back one ACK's trip after its last byte is placed, and its ideal is the base
/// round trip (twice every delay plus an MTU's serialization per hop) plus the wire
/// bytes at the NIC rate. With `fct_at = "sender"` the run waits for that
/// acknowledgement and the summary's figures come from the sender's columns.
#[rstest]
fn a_lone_flows_sender_side_completion_is_its_placement_plus_the_acks_trip(
    #[values(1u64, 4096, 1_000_000)] size: u64,
    #[values("receiver", "sender")] fct_at: &str,
) {
    let (sim, r) = run(&format!(
        "[topology]\nkind = \"leaf_spine\"\nleaves = 2\nspines = 2\nhosts_per_leaf = 4\n\
         [[workload]]\nkind = \"flows\"\nflows = [{{ src = 0, dst = 5, size = {size} }}]\n[output]\nfct_at = \"{fct_at}\""
    ));
    let fct = col_i64(&r, "fct_ns")[0];
    let acked = col_i64(&r, "acked_ns")[0];
    let sender_fct = col_i64(&r, "sender_fct_ns")[0];
    let (wire, _) = write_wire_bytes(size);
    // Four hops of 1 us; an ACK frame (Ethernet, IPv6, UDP, BTH, AETH, ICRC, FCS,
    // preamble and gap: 106 bytes) serialized at each.
    let hop = Rate::gbps(100);
    let ideal = Dur::from_us(8) + hop.tx_time(4096).mul(4) + hop.tx_time(wire);
    assert_eq!(col_u64(&r.flows, "sender_ideal_fct_ns")[0], ideal.as_ns());
    if fct_at == "receiver" {
        // The run ended with the last byte placed; the acknowledgement was still out.
        assert_eq!((acked, sender_fct), (-1, -1));
        assert_eq!(r.summary["sim_time_ns"].as_i64().unwrap(), fct);
        return;
    }
    let ack_trip = Dur::from_us(4) + hop.tx_time(106).mul(4);
    // (Each time is rounded down to a nanosecond on its own.)
    let trip = ack_trip.as_ns() as i64;
    assert!((trip..=trip + 1).contains(&(sender_fct - fct)), "size {size}: {} ns after placement", sender_fct - fct);
    assert_eq!(r.summary["sim_time_ns"].as_i64().unwrap(), acked);
    assert_eq!(r.summary["fct_at"], "sender");
    assert_eq!(r.summary["fct_ns"]["max"].as_f64().unwrap(), sender_fct as f64);
    let slowdown = col_f64(&r.flows, "sender_slowdown")[0];
    // Store and forward costs the first frame's serialization at each switch; the
    // ideal counts a whole MTU per hop: within a few percent of 1 from a full frame on,
    // and below 1 for a message shorter than one (as in HPCC's own tables).
    if size >= 4096 {
        assert!((0.95..1.05).contains(&slowdown), "{slowdown}");
    } else {
        assert!((0.8..1.0).contains(&slowdown), "{slowdown}");
    }
    assert_eq!(sim.fabric.totals.drops(), 0);
}

/// The summary's FCT figures are those of flows.parquet's `fct_ns`, whatever the
/// sub-nanosecond start times (a ring all-reduce's steps start when the one before is
/// placed: they used to differ by a nanosecond, rounded once as a difference and once
/// as two times).
#[rstest]
fn the_summarys_fct_figures_are_the_flow_tables(#[values("receiver", "sender")] fct_at: &str) {
    let (_, r) = run(&format!(
        "[topology]\nkind = \"fat_tree\"\nk = 4\nfabric_link = \"400Gbps\"\n\
         [[workload]]\nkind = \"all_reduce\"\nhosts = 8\nsize = \"333333B\"\n[output]\nfct_at = \"{fct_at}\""
    ));
    let col = if fct_at == "sender" { "sender_fct_ns" } else { "fct_ns" };
    let mut fct: Vec<i64> = col_i64(&r, col);
    assert!(fct.iter().all(|&f| f > 0));
    let starts = col_i64(&r, "start_ns");
    assert!(starts.iter().any(|&s| s > 0), "released steps start later");
    fct.sort();
    let s = &r.summary["fct_ns"];
    let mean = fct.iter().sum::<i64>() as f64 / fct.len() as f64;
    assert_eq!(s["max"].as_f64().unwrap(), *fct.last().unwrap() as f64);
    assert_eq!(s["mean"].as_f64().unwrap(), mean);
    let p50 = fct[(fct.len() as f64 * 0.5).ceil() as usize - 1];
    assert_eq!(s["p50"].as_f64().unwrap(), p50 as f64);
}
