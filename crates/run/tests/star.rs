//! StaR at scenario level: its two evaluations (Fig. 5a, message rate; Fig. 5b, RPC)
//! at the paper's setting, auto mode, and bad input.
//!
//! The paper's setting: one server and its clients on one 100 Gb/s switch, a 12 us
//! base RTT (here 3 us per link), queues large enough for no PFC, ECN or loss, a PCIe
//! latency of 1 us and a stateful NIC with contexts for 300 connections (`[nic] model =
//! "rnic"` defaults: `qp_cache = 300`, `qp_fetch = 1us`, `fetches = 1`).

mod common;

use common::*;
use serde_json::Value;

/// The paper's fabric for `clients` clients, `transport`, and a closed-loop workload.
fn paper(transport: &str, clients: u32, workload: &str) -> String {
    format!(
        "[topology]\nkind = \"leaf_spine\"\nleaves = 1\nspines = 1\nhosts_per_leaf = {}\nlink_delay = \"3us\"\n\
         switch_buffer = \"1GB\"\n[fabric]\npfc = false\necn = false\n\
         [transport]\n{transport}\n[nic]\nmodel = \"rnic\"\n\
         [[workload]]\n{workload}\nclients = {clients}\n",
        clients + 1
    )
}

/// The run's one closed loop.
fn lp(toml: &str) -> Value {
    let (_, r) = run(toml);
    let l = r.summary["loops"][0].clone();
    assert_eq!(l["completed"], l["ops"], "every operation completes");
    assert_eq!(r.summary["security_refused"], 0, "nothing a client sends is refused");
    l
}

fn mops(l: &Value) -> f64 {
    l["ops_per_s"].as_f64().unwrap() / 1e6
}

const ROCE: &str = "kind = \"roce\"";
const STAR: &str = "kind = \"star\"";

#[test]
fn fig5a_stateful_writes_peak_at_the_cache_size_then_collapse_while_star_scales() {
    let rate = |t: &str, n: u32, ops: u32| mops(&lp(&paper(t, n, &format!("kind = \"message_rate\"\nops = {ops}"))));
    let (roce_300, roce_600, roce_1000) = (rate(ROCE, 300, 100), rate(ROCE, 600, 20), rate(ROCE, 1000, 20));
    let (star_300, star_600, star_1000) = (rate(STAR, 300, 100), rate(STAR, 600, 20), rate(STAR, 1000, 20));
    eprintln!(
        "RDMA {roce_300:.2} {roce_600:.2} {roce_1000:.2}  StaR {star_300:.2} {star_600:.2} {star_1000:.2} M ops/s"
    );
    // 300 clients fit the 300 contexts: one 8-byte WRITE per client per 12 us round
    // trip, 25 M/s (the paper: about 23 M), less the first round's 300 fetches.
    assert!((18.0..25.0).contains(&roce_300), "{roce_300}");
    // Past the cache every WRITE's context misses at the server: one fetch of 1 us
    // each, 1 M/s (the paper: about 1 M), more than 10x below the peak.
    for r in [roce_600, roce_1000] {
        assert!((0.9..1.0).contains(&r) && r < roce_300 / 10.0, "{r}");
    }
    // StaR's server looks nothing up: clients / RTT, up to the link (8-byte RDPs are
    // 134 bytes on the wire here: 93 M/s at 100 Gb/s).
    for (n, r) in [(300.0, star_300), (600.0, star_600), (1000.0, star_1000)] {
        let expect = n / 12.05;
        assert!(r > 0.9 * expect && r < 1.01 * expect, "{n} clients: {r} M/s, {expect} expected");
    }
    assert!(star_1000 / roce_1000 > 80.0, "{star_1000} vs {roce_1000}");
    // Two WRITEs in flight per client offer more than the link carries: StaR meets the
    // server's link, 100 Gb/s over 134-byte frames (8 bytes, 82 of RoCEv2 over IPv6,
    // 24 of StaR's header, 20 of preamble and gap), 93.3 M per second (measured 90.5,
    // the first and last round trips below it).
    let full = mops(&lp(&paper(STAR, 1000, "kind = \"message_rate\"\nops = 40\noutstanding = 2")));
    let link = 100e9 / 8.0 / 134.0 / 1e6;
    assert!(full > 0.95 * link && full <= link, "{full} against the link's {link}");
}

#[test]
fn fig5b_star_rpc_holds_the_link_rate_as_clients_grow_and_is_slower_at_low_concurrency() {
    let rate = |t: &str, n: u32, ops: u32| mops(&lp(&paper(t, n, &format!("kind = \"rpc\"\nops = {ops}"))));
    let (roce_10, star_10) = (rate(ROCE, 10, 50), rate(STAR, 10, 50));
    let (roce_600, star_600) = (rate(ROCE, 600, 10), rate(STAR, 600, 10));
    eprintln!("10 clients: RDMA {roce_10:.2} StaR {star_10:.2}; 600: RDMA {roce_600:.2} StaR {star_600:.2} M calls/s");
    // Few clients: a call is a round trip on RDMA; StaR's reply is a SEND by the
    // stateless server, whose WQE first travels to the client (one more round trip).
    assert!(star_10 < 0.7 * roce_10 && star_10 > 0.4 * roce_10, "{star_10} vs {roce_10}");
    // Many: RDMA's server misses a context per message (two per call here: a call
    // uses a connection each way, where the paper's uses one, so it falls to 0.5 M
    // rather than 0.9 M), while StaR's requests fill the server's link: 2800 bytes
    // each plus the GD, EA and CQEP that come with the reply (the paper: 3.8 M).
    assert!(roce_600 < 0.6, "{roce_600}");
    assert!(star_600 > 3.5 && star_600 < 4.3, "{star_600}");
}

#[test]
fn auto_mode_is_stateful_while_contexts_last_and_stateless_beyond() {
    let auto = "kind = \"star\"\nmode = \"auto\"";
    // Few clients: every connection stateful, as fast as RDMA (StaR is slower here).
    let rpc = |t: &str| mops(&lp(&paper(t, 10, "kind = \"rpc\"\nops = 50")));
    let (a, r) = (rpc(auto), rpc(ROCE));
    assert!((a - r).abs() < 0.01 * r, "auto {a} vs RDMA {r}");
    // 600 writers: the first 300 connections take the server's 300 contexts and keep
    // them, the other 300 go stateless: no collapse (RDMA: 1 M/s, above). The first
    // round's 300 fetches, one at a time, still cost the stateful half 300 us.
    let toml = paper(auto, 600, "kind = \"message_rate\"\nops = 50");
    let (_, res) = run(&toml);
    let l = &res.summary["loops"][0];
    assert!(mops(l) > 20.0, "{}", mops(l));
    // The server's NIC fetched each stateful connection's context once.
    let misses = col_u64(&res.nics, "qp_misses")[0];
    assert_eq!(misses, 300);
}

#[test]
fn star_runs_are_deterministic_and_conserve_bytes_in_both_directions() {
    let toml = "seed = 3\n[topology]\nkind = \"leaf_spine\"\nleaves = 2\nspines = 2\nhosts_per_leaf = 4\n\
                [fabric]\nlink_loss = 0.01\n[transport]\nkind = \"star\"\nrto = \"50us\"\n\
                [[workload]]\nkind = \"rpc\"\nclients = 7\nops = 20\nrequest = \"20KB\"\nreply = \"9KB\"\n";
    let (_, a) = run(toml);
    let (_, b) = run(toml);
    assert_eq!(a.summary, b.summary);
    assert_eq!(a.flows, b.flows);
    let l = &a.summary["loops"][0];
    assert_eq!(l["completed"], 140);
    assert_eq!(a.summary["bytes_delivered"], 7 * 20 * (20_000 + 9_000));
    assert!(a.summary["retransmitted_packets"].as_u64().unwrap() > 0, "1 % loss costs resends");
    // Partitioned, too: each release happens where the next message leaves.
    let (_, p) = run(&format!("partitions = 2\n{toml}"));
    let (_, q) = run(&format!("partitions = 2\n{toml}"));
    assert_eq!(p.summary["loops"], q.summary["loops"]);
    assert_eq!(p.summary["bytes_delivered"], a.summary["bytes_delivered"]);
}

#[test]
fn bad_star_and_closed_loop_input_is_refused_by_name() {
    let base = "[topology]\nkind = \"leaf_spine\"\nleaves = 2\nspines = 2\nhosts_per_leaf = 2\n";
    let star = |keys: &str| {
        format!("{base}[transport]\nkind = \"star\"\n{keys}\n[[workload]]\nkind = \"message_rate\"\nclients = 2\n")
    };
    let wl = |keys: &str| format!("{base}[[workload]]\n{keys}\n");
    for (toml, expected) in [
        (
            star("paths = 8"),
            "transport.paths: unknown key (allowed here: kind, mode, server, init_cwnd, g, rto, retry_limit)",
        ),
        (star("mode = \"sometimes\""), "transport.mode: unknown value \"sometimes\" (allowed: stateless, auto)"),
        (star("server = \"left\""), "transport.server: unknown value \"left\" (allowed: busier, receiver, sender)"),
        (star("g = 0"), "transport.g: must be between"),
        (star("rto = \"0us\""), "transport.rto"),
        (star("retry_limit = 8"), "transport.retry_limit: must be between 0 and 7, got 8"),
        (star("init_cwnd = \"0B\""), "transport.init_cwnd: must be between 1 byte and 4 GiB"),
        (wl("kind = \"message_rate\""), "workload[0].clients: is required"),
        (
            wl("kind = \"message_rate\"\nclients = 2\nserver = 9"),
            "workload[0].server: host 9 does not exist (hosts are 0..3)",
        ),
        (wl("kind = \"message_rate\"\nclients = [0, 1]"), "workload[0].clients: host 0 cannot be both"),
        (wl("kind = \"message_rate\"\nclients = 4"), "workload[0].clients: 4 hosts requested but only 3 are available"),
        (wl("kind = \"message_rate\"\nclients = 2\nsize = 0"), "workload[0].size: must be at least 1 byte"),
        (wl("kind = \"rpc\"\nclients = 2\nops = 0"), "workload[0].ops: must be between 1 and"),
        (wl("kind = \"rpc\"\nclients = 2\noutstanding = 0"), "workload[0].outstanding: must be between 1 and"),
        (wl("kind = \"rpc\"\nclients = 2\nreply = \"0B\""), "workload[0].reply: must be at least 1 byte"),
        (wl("kind = \"rpc\"\nclients = 2\npaths = 3"), "workload[0].paths: unknown key"),
        (wl("kind = \"rpc\"\nclients = 2\nreply = \"3GB\""), "workload[0].reply: makes messages of 3000000000 bytes"),
    ] {
        let e = match fabricsim_run::Scenario::from_toml(&toml) {
            Err(e) => e.to_string(),
            Ok(sc) => match fabricsim_run::Sim::new(sc) {
                Err(e) => e.to_string(),
                Ok(_) => panic!("accepted:\n{toml}"),
            },
        };
        assert!(e.contains(expected), "expected «{expected}» in «{e}»");
    }
}
