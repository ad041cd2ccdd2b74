//! Helpers for scenario-level tests.

#![allow(dead_code)]

use fabricsim_run::{results, Column, RunResult, Scenario, Sim};

/// Parses `toml`, panicking with the error message (tests give valid scenarios).
pub fn scenario(toml: &str) -> Scenario {
    Scenario::from_toml(toml).unwrap_or_else(|e| panic!("invalid test scenario: {e}\n{toml}"))
}

/// Runs `toml` and returns the finished simulation and its results.
pub fn run(toml: &str) -> (Sim, RunResult) {
    let mut sim = Sim::new(scenario(toml)).unwrap_or_else(|e| panic!("{e}"));
    let ending = sim.run(&mut |_| true);
    let r = results(&sim, ending);
    (sim, r)
}

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
