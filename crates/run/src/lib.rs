//! Scenarios and runs: from a TOML file to result tables.
//!
//! * [`units`]: `"100Gbps"`, `"1us"`, `"8MB"`.
//! * [`schema`]: every scenario key with type, default and meaning; the [`schema::Reader`]
//!   that validates with messages naming the key and the allowed values.
//! * [`scenario`]: the validated [`Scenario`].
//! * [`factory`]: endpoints for a connection from the scenario's transport.
//! * [`ideal`]: the ideal completion time of a message on an empty fabric.
//! * [`sim`]: the wired world and its run loop ([`Sim`]).
//! * [`parallel`]: partitioned runs, the world split over threads in lookahead windows.
//! * [`plan`]: from the scenario's workloads to the traffic plan (channels per port).
//! * [`metrics`], [`results`](mod@results): flow, port and collective tables and the summary.
//!
//! [`run`] is the one-call entry point the Python binding uses.

pub mod capture;
pub mod checks;
pub mod factory;
pub mod faults;
pub mod ideal;
pub mod messages;
pub mod metrics;
pub mod nicspec;
pub mod parallel;
pub mod plan;
pub mod results;
pub mod sampling;
pub mod scenario;
pub mod schema;
pub mod sim;
pub mod star;
pub mod units;
pub mod watchdog;
pub mod world;

pub use results::{Column, Table};
pub use scenario::Scenario;
pub use sim::{Ending, Progress, Sim};

use thiserror::Error;

/// A scenario that is invalid: `path` names the key (`topology.leaves`).
#[derive(Clone, Debug, Error, PartialEq, Eq)]
#[error("{}", if path.is_empty() { message.clone() } else { format!("{path}: {message}") })]
pub struct ScenarioError {
    /// Key path, empty for whole-document errors.
    pub path: String,
    /// What is wrong and what is allowed.
    pub message: String,
}

impl ScenarioError {
    /// An error about `path`.
    pub fn new(path: &str, message: impl Into<String>) -> ScenarioError {
        ScenarioError { path: path.to_string(), message: message.into() }
    }
}

impl From<fabricsim_fabric::TopologyError> for ScenarioError {
    fn from(e: fabricsim_fabric::TopologyError) -> ScenarioError {
        match e {
            fabricsim_fabric::TopologyError::Invalid { field, message } => {
                ScenarioError { path: format!("topology.{field}"), message }
            }
        }
    }
}

/// The most characters of a scenario's string that an error message quotes.
pub const QUOTE_MAX: usize = 64;

/// `value` as an error message quotes it: in double quotes with quotes, backslashes and
/// control characters escaped (`{:?}`), so that the message stays one line; a value longer
/// than [`QUOTE_MAX`] characters is cut there, followed by `...` and its full length (a
/// 1 MB `transport.kind` made a 1 MB error line).
pub fn quoted(value: &str) -> String {
    match cut(value, QUOTE_MAX) {
        None => format!("{value:?}"),
        Some(start) => format!("{start:?}... ({} characters)", value.chars().count()),
    }
}

/// The first `max` characters of `text`, if it has more.
pub(crate) fn cut(text: &str, max: usize) -> Option<&str> {
    text.char_indices().nth(max).map(|(end, _)| &text[..end])
}

impl From<fabricsim_workload::WorkloadError> for ScenarioError {
    fn from(e: fabricsim_workload::WorkloadError) -> ScenarioError {
        match e {
            fabricsim_workload::WorkloadError::Invalid { field, message } => ScenarioError { path: field, message },
        }
    }
}

/// Defines [`RunResult`], the list of its tables ([`TABLES`]) and how each is made
/// ([`results`]) from one list, so that a table is added in one place: the Python
/// package, `runfile --summary` and the output folder all take the list from here.
macro_rules! result_tables {
    ($($(#[$doc:meta])* $name:ident => $build:expr),* $(,)?) => {
        /// Everything a run produces.
        pub struct RunResult {
            $($(#[$doc])* pub $name: Table,)*
            /// Port names indexed by `port_id`.
            pub port_names: Vec<String>,
            /// The summary (no wall-clock figures).
            pub summary: serde_json::Value,
            /// Why the run ended.
            pub ending: Ending,
        }

        /// The result tables, by name, in the order they are written.
        pub const TABLES: &[&str] = &[$(stringify!($name)),*];

        impl RunResult {
            /// Every table with its name, in the order of [`TABLES`].
            pub fn tables(&self) -> Vec<(&'static str, &Table)> {
                vec![$((stringify!($name), &self.$name)),*]
            }
        }

        /// The result tables of a finished simulation (the port time series is moved
        /// out of it: the largest table, not copied).
        pub fn results(sim: &mut Sim, ending: Ending) -> RunResult {
            // The summary first: it reads what the tables take away.
            let summary = metrics::summary(sim, ending);
            RunResult {
                $($name: { let build: fn(&mut Sim) -> Table = $build; build(sim) },)*
                port_names: (0..sim.fabric.ports.len() as u32).map(|p| sim.fabric.port_name(p)).collect(),
                summary,
                ending,
            }
        }
    };
}

result_tables! {
    /// One row per message (see the README for columns).
    flows => |sim| metrics::flow_table(sim),
    /// Sampled port time series.
    ports => |sim| sim.sampler.take_table(),
    /// One row per collective.
    collectives => |sim| metrics::collective_table(sim),
    /// One row per job iteration.
    jobs => |sim| metrics::job_table(sim),
    /// One row per connection.
    connections => |sim| metrics::connection_table(sim),
    /// Per-path (entropy value) counters of multipath senders.
    paths => |sim| metrics::path_table(sim),
    /// Entropy-value state changes over time.
    ev_states => |sim| metrics::ev_state_table(sim),
    /// Out-of-order degree histogram at receivers.
    ooo => |sim| metrics::ooo_table(sim).0,
    /// Delivered bytes per connection per sampling interval.
    throughput => |sim| metrics::throughput_table(sim),
    /// Faults that happened.
    faults => |sim| metrics::fault_table(sim),
    /// What each modelled NIC did.
    nics => |sim| metrics::nic_table(sim),
}

/// Checks everything about `scenario` that running it would check (topology, hosts
/// named by workloads) without simulating. Returns the number of hosts, connections
/// and messages.
pub fn validate(scenario: &Scenario) -> Result<(u32, usize, usize), ScenarioError> {
    let sim = Sim::new(scenario.clone())?;
    Ok((sim.fabric.hosts(), sim.plan.conns.len(), sim.plan.messages.len()))
}

/// Builds and runs `scenario`, reporting progress every 65,536 events (return `false`
/// from `progress` to stop early).
pub fn run(scenario: Scenario, progress: &mut dyn FnMut(&Progress) -> bool) -> Result<RunResult, ScenarioError> {
    let mut sim = Sim::new(scenario)?;
    let ending = sim.run(progress);
    Ok(results(&mut sim, ending))
}
