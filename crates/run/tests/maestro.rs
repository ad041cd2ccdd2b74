//! Maestro at small scale: the paper's trends (Tian et al., SOSR '21, section 6) on a
//! two-leaf, four-spine fabric like its testbed (Fig. 7), the middleware's mechanisms
//! end to end (chunks, failover, per-path rows), determinism and bad input.
//!
//! Where the figures differ from the paper's and why is said at each test and in the
//! README's Maestro section.

mod common;

use common::{col_i64, col_u32, col_u64, run, scenario};
use fabricsim_run::{results, Scenario, Sim};

/// Two leaves under four spines, `hosts` hosts per leaf, with the paper's synthetic
/// bottleneck: core links slower than the access links.
fn fabric(hosts: u32, access: &str, core: &str) -> String {
    format!(
        "seed = {{seed}}\n[topology]\nkind = \"leaf_spine\"\nleaves = 2\nspines = 4\nhosts_per_leaf = {hosts}\n\
         host_link = \"{access}\"\nfabric_link = \"{core}\"\n[output]\nsample_interval = \"0us\"\n"
    )
}

/// `base` (from [`fabric`]) with seed `seed`, a `[transport]` table and workloads.
fn with(base: &str, seed: u64, transport: &str, rest: &str) -> String {
    format!("{}\n[transport]\n{transport}\n{rest}", base.replace("{seed}", &seed.to_string()))
}

fn one_flow(size: &str) -> String {
    format!("[[workload]]\nkind = \"flows\"\nflows = [{{ src = 0, dst = 1, size = \"{size}\" }}]\n")
}

/// Goodput of the only flow of `toml`, Gb/s.
fn goodput(toml: &str) -> f64 {
    let (_, r) = run(toml);
    let fct = col_i64(&r, "fct_ns")[0];
    assert!(fct > 0, "the flow finished");
    col_u64(&r.flows, "size_bytes")[0] as f64 * 8.0 / fct as f64
}

/// Fig. 8: over 10 Gb/s core links and a 40 Gb/s access link, throughput grows about
/// linearly with the paths Maestro uses until the access link is full (4 paths), then
/// holds; single-QP RoCE gets one core link. Measured (seed 1): 8.1, 16.9, 26.3,
/// 38.4 Gb/s for 1-4 paths, 36.9 for 6 (two spines carry two QPs each: the
/// proportional balancer evens them out); RoCE 8.0.
#[test]
fn fig8_bandwidth_grows_with_paths_until_the_access_link_saturates() {
    let base = fabric(1, "40Gbps", "10Gbps");
    let flow = one_flow("4MB");
    let bw: Vec<f64> = [1, 2, 3, 4, 6]
        .iter()
        .map(|k| goodput(&with(&base, 1, &format!("kind = \"maestro\"\npaths = {k}"), &flow)))
        .collect();
    let roce = goodput(&with(&base, 1, "kind = \"roce\"", &flow));
    eprintln!("maestro 1,2,3,4,6 paths: {bw:?} Gb/s; roce {roce:.1}");
    for k in 0..3 {
        // Each path adds most of a core link (10 Gb/s less DCQCN's margin).
        assert!(bw[k + 1] > bw[k] + 6.0, "{bw:?}");
    }
    assert!(bw[3] > 0.9 * 40.0, "four disjoint paths fill the access link: {bw:?}");
    assert!(bw[4] > 0.95 * bw[3] && bw[4] <= 40.0, "more paths than spines hold at the access rate: {bw:?}");
    assert!(roce < 10.0 && (bw[0] - roce).abs() < 1.0, "one QP, one core link: {roce}");
}

/// Fig. 8's ECMP side: the same four QPs on random source ports (the RoCE driver's,
/// QP-Scaling's) collide on spines for most seeds; hash selection never does.
/// Measured over seeds 1-8: hash 38.4 Gb/s every time; random ports 17.4-38.4 (26.7
/// on average: Maestro's balancer still moves chunks off the shared spines);
/// QP-Scaling's 4 QPs (an even split, no balancer) 11.9-38.4 (18.5).
#[test]
fn fig8_random_ports_collide_where_hash_selection_does_not() {
    let base = fabric(1, "40Gbps", "10Gbps");
    let flow = one_flow("4MB");
    let (mut hash, mut random, mut qps) = (Vec::new(), Vec::new(), Vec::new());
    for seed in 1..=8 {
        hash.push(goodput(&with(&base, seed, "kind = \"maestro\"\npaths = 4", &flow)));
        random.push(goodput(&with(&base, seed, "kind = \"maestro\"\npaths = 4\npath_selection = \"random\"", &flow)));
        qps.push(goodput(&with(&base, seed, "kind = \"qp_scaling\"\nqps = 4", &flow)));
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    eprintln!("hash {hash:?}\nrandom {random:?}\nqp_scaling {qps:?}");
    assert!(hash.iter().all(|&b| b > 36.0), "{hash:?}");
    assert!(mean(&random) < 0.85 * mean(&hash), "random ports collide: {random:?}");
    assert!(mean(&qps) < 0.85 * mean(&hash), "QP-Scaling's even split waits for its slowest QP: {qps:?}");
}

/// The probing procedure finds disjoint paths as the hash computation does.
#[test]
fn probe_selection_finds_disjoint_paths() {
    let base = fabric(1, "40Gbps", "10Gbps");
    let flow = one_flow("4MB");
    for seed in 1..=4 {
        let probe = goodput(&with(&base, seed, "kind = \"maestro\"\npaths = 4\npath_selection = \"probe\"", &flow));
        assert!(probe > 36.0, "seed {seed}: {probe}");
    }
}
