//! The run loop's deep prefetching (three events ahead, on large fabrics) is only a
//! hint to the cache, except for one thing it hands on: the ECMP egress port it
//! computed for the next arrival, which that arrival then uses instead of routing
//! again. Runs with it on and off must come out byte-identical, also while links and
//! switches fail and the tables are recomputed.

mod common;

use common::*;
use fabricsim_run::{results, RunResult, Sim};

fn run_deep(toml: &str, deep: bool) -> (Sim, RunResult) {
    let mut sim = Sim::new(scenario(toml)).unwrap_or_else(|e| panic!("{e}"));
    sim.set_deep_prefetch(deep);
    let ending = sim.run(&mut |_| true);
    let r = results(&mut sim, ending);
    (sim, r)
}

/// [`LOADED_K4_MRC`] with its `[fabric]` recomputing routes 3 us after each change,
/// and a switch and cables failing and coming back while queues are full.
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
at = "6us"
kind = "link_down"
link = "edge[2].up[0]"
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
[[faults]]
at = "9us"
kind = "link_loss"
link = "core[3].down[0]"
loss = 0.02
[output]
sample_interval = "3us"
"#
    )
}

#[test]
fn deep_prefetching_changes_no_result_under_failures_and_reroutes() {
    let toml = churn();
    let (deep, rd) = run_deep(&toml, true);
    let (flat, rf) = run_deep(&toml, false);
    // The run exercises what the handed-on route must survive.
    let t = deep.fabric.totals;
    assert!(t.link_losses > 0 && t.trims > 0 && t.packet_hops > 10_000, "{t:?}");
    assert!(rd.faults.rows() >= 5, "{} faults logged", rd.faults.rows());
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
}
