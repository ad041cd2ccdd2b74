//! Helpers for scenario-level tests.

#![allow(dead_code)]

use fabricsim_run::{results, Column, RunResult, Scenario, Sim};

/// Parses `toml`, panicking with the error message (tests give valid scenarios).
pub fn scenario(toml: &str) -> Scenario {
    Scenario::from_toml(toml).unwrap_or_else(|e| panic!("invalid test scenario: {e}\n{toml}"))
}

/// Runs `toml` and returns the finished simulation and its results.
pub fn run(toml: &str) -> (Sim, RunResult) {
    run_scenario(scenario(toml))
}

/// Runs `sc` and returns the finished simulation and its results.
pub fn run_scenario(sc: Scenario) -> (Sim, RunResult) {
    run_sim(Sim::new(sc).unwrap_or_else(|e| panic!("{e}")))
}

/// Runs a built `sim` to the end and returns it with its results.
pub fn run_sim(mut sim: Sim) -> (Sim, RunResult) {
    let ending = sim.run(&mut |_| true);
    let r = results(&mut sim, ending);
    (sim, r)
}

/// Relative difference of `a` from `b`.
pub fn rel(a: f64, b: f64) -> f64 {
    (a - b).abs() / b.abs().max(1.0)
}

/// A loaded lossy k=4 fat-tree without its faults and output: a permutation and a 7:1
/// incast over MRC (trimming, ECN, drops at the dynamic threshold of a small buffer).
/// Tests append their `[[faults]]` and `[output]`.
pub const LOADED_K4_MRC: &str = r#"
seed = 11
[topology]
kind = "fat_tree"
k = 4
switch_buffer = "400KB"
[fabric]
pfc = false
trimming = { threshold = "40KB" }
ecn = { kmin = "10KB", kmax = "60KB", last_hop = false }
[transport]
kind = "mrc"
evs = 32
[[workload]]
kind = "permutation"
size = "400KB"
[[workload]]
kind = "incast"
senders = [4, 5, 6, 8, 9, 10, 12]
receiver = 1
size = "200KB"
"#;

/// What happens on [`LOADED_K4_MRC`]: a cable failing and recovering, a rate
/// degradation and random loss on others while queues are full, and port sampling in
/// between.
pub const BUSY_FAULTS: &str = r#"
[[faults]]
at = "6us"
kind = "link_down"
link = "edge[2].up[0]"
[[faults]]
at = "20us"
kind = "link_up"
link = "edge[2].up[0]"
[[faults]]
at = "8us"
kind = "rate"
link = "agg[1].up[1]"
rate = "40Gbps"
[[faults]]
at = "9us"
kind = "link_loss"
link = "core[3].down[0]"
loss = 0.02
[output]
sample_interval = "3us"
"#;

pub fn col_i64(r: &RunResult, name: &str) -> Vec<i64> {
    match r.flows.get(name) {
        Some(Column::I64(v)) => v.clone(),
        other => panic!("{name}: {other:?}"),
    }
}

pub fn col_u64(t: &fabricsim_run::Table, name: &str) -> Vec<u64> {
    match t.get(name) {
        Some(Column::U64(v)) => v.clone(),
        other => panic!("{name}: {other:?}"),
    }
}

pub fn col_u32(t: &fabricsim_run::Table, name: &str) -> Vec<u32> {
    match t.get(name) {
        Some(Column::U32(v)) => v.clone(),
        other => panic!("{name}: {other:?}"),
    }
}

pub fn col_f64(t: &fabricsim_run::Table, name: &str) -> Vec<f64> {
    match t.get(name) {
        Some(Column::F64(v)) => v.clone(),
        other => panic!("{name}: {other:?}"),
    }
}

/// Jain's fairness index of `x`.
pub fn jain(x: &[f64]) -> f64 {
    let s: f64 = x.iter().sum();
    let s2: f64 = x.iter().map(|v| v * v).sum();
    s * s / (x.len() as f64 * s2)
}

pub fn col_i64_of(t: &fabricsim_run::Table, name: &str) -> Vec<i64> {
    match t.get(name) {
        Some(Column::I64(v)) => v.clone(),
        other => panic!("{name}: {other:?}"),
    }
}

pub fn col_str(t: &fabricsim_run::Table, name: &str) -> Vec<String> {
    match t.get(name) {
        Some(Column::Str(v)) => v.clone(),
        other => panic!("{name}: {other:?}"),
    }
}
