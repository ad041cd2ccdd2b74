//! The run loop's deep prefetching (three events ahead, on large fabrics) is only a
//! hint to the cache, except for one thing it hands on: the ECMP egress port it
//! computed for the next arrival, which that arrival then uses instead of routing
//! again. Runs with it on and off must come out byte-identical, also while links and
//! switches fail and the tables are recomputed.

mod common;

use common::*;
use fabricsim_run::{RunResult, Sim};

fn run_deep(toml: &str, deep: bool) -> (Sim, RunResult) {
    let mut sim = Sim::new(scenario(toml)).unwrap_or_else(|e| panic!("{e}"));
    sim.set_deep_prefetch(deep);
    run_sim(sim)
}

/// [`LOADED_K4_MRC`] with its `[fabric]` recomputing routes 3 us after each change,
/// a switch failing and coming back and a cable flapping while queues are full, and
/// [`BUSY_FAULTS`].
fn churn() -> String {
    let base = LOADED_K4_MRC.replace("[fabric]\n", "[fabric]\nreroute_after = \"3us\"\n");
    assert_ne!(base, LOADED_K4_MRC, "the base scenario has a [fabric] table");
    format!(
        r#"{base}
[[faults]]
at = "5us"
kind = "switch_down"
switch = "agg[1]"
[[faults]]
at = "12us"
kind = "switch_up"
switch = "agg[1]"
[[faults]]
at = "14us"
kind = "link_flap"
link = "core[1].down[2]"
period = "4us"
duty = 0.5
until = "40us"
{BUSY_FAULTS}"#
    )
}

/// Three leaf uplinks flapping every few hundred nanoseconds with the tables
/// recomputed at once after each change: a reroute almost every event, so the arrival
/// right after one often had its egress computed under the old tables. (Without
/// `reroute()` forgetting the handed-on route this run differs; the `churn()` run above
/// reroutes too rarely to notice.)
const FLAPPY: &str = r#"
seed = 5
[topology]
kind = "leaf_spine"
leaves = 4
spines = 2
hosts_per_leaf = 4
[fabric]
pfc = false
reroute_after = "0ns"
[transport]
kind = "mrc"
evs = 64
[workload]
kind = "permutation"
size = "400KB"
[[faults]]
at = "3us"
kind = "link_flap"
link = "leaf[0].up[0]"
period = "0.3us"
duty = 0.5
until = "60us"
[[faults]]
at = "3.1us"
kind = "link_flap"
link = "leaf[1].up[1]"
period = "0.37us"
duty = 0.5
until = "60us"
[[faults]]
at = "3.2us"
kind = "link_flap"
link = "leaf[2].up[0]"
period = "0.41us"
duty = 0.5
until = "60us"
"#;

/// Runs `toml` both ways and requires every result to be the same.
fn same_either_way(toml: &str) -> (Sim, RunResult) {
    let (deep, rd) = run_deep(toml, true);
    let (flat, rf) = run_deep(toml, false);
    assert_eq!(rd.summary, rf.summary);
    assert_eq!(deep.fabric.totals, flat.fabric.totals);
    for (name, a, b) in [
        ("flows", &rd.flows, &rf.flows),
        ("ports", &rd.ports, &rf.ports),
        ("paths", &rd.paths, &rf.paths),
        ("ev_states", &rd.ev_states, &rf.ev_states),
        ("ooo", &rd.ooo, &rf.ooo),
        ("throughput", &rd.throughput, &rf.throughput),
        ("faults", &rd.faults, &rf.faults),
        ("connections", &rd.connections, &rf.connections),
    ] {
        assert!(a == b, "table {name} differs with deep prefetching");
    }
    (deep, rd)
}

#[test]
fn deep_prefetching_changes_no_result_under_failures_and_reroutes() {
    let (deep, rd) = same_either_way(&churn());
    // The run exercises what the handed-on route must survive.
    let t = deep.fabric.totals;
    assert!(t.link_losses > 0 && t.trims > 0 && t.packet_hops > 10_000, "{t:?}");
    assert!(rd.faults.rows() >= 5, "{} faults logged", rd.faults.rows());
}

#[test]
fn deep_prefetching_changes_no_result_while_the_tables_change_all_the_time() {
    let (deep, rd) = same_either_way(FLAPPY);
    assert!(rd.faults.rows() > 500, "{} faults logged", rd.faults.rows());
    assert!(deep.fabric.totals.link_losses > 0, "{:?}", deep.fabric.totals);
    assert_eq!(rd.summary["flows"]["unfinished"], 0);
}

#[test]
fn deep_prefetching_reaches_every_partition() {
    let two = churn().replacen("seed = 11", "seed = 11\npartitions = 2", 1);
    assert_ne!(two, churn());
    same_either_way(&two);
}
