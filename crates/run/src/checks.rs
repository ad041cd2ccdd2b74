//! What a scenario must satisfy beyond its keys' own ranges, checked while its world is
//! built: message sizes, EVs per plane, memory (before any is spent), delay targets.

use crate::factory;
use crate::messages::MsgState;
use crate::scenario::Scenario;
use crate::ScenarioError;
use fabricsim_engine::Dur;

/// An amount of memory in words: GB from one, MB, or KB below a tenth of a MB.
pub(crate) fn per_connection(bytes: u64) -> String {
    if bytes >= 1_000_000_000 {
        format!("{:.1} GB", bytes as f64 / 1e9)
    } else if bytes >= 100_000 {
        format!("{:.1} MB", bytes as f64 / 1e6)
    } else {
        format!("{:.1} KB", bytes as f64 / 1e3)
    }
}

/// The largest RDMA message: the InfiniBand specification's 2^31 bytes. (Longer ones
/// also overflowed the RETH's 32-bit length, and a multipath receiver then counted
/// the message complete before its last packets arrived.)
pub const MAX_MESSAGE: u64 = 1 << 31;

/// Refuses a workload whose messages exceed [`MAX_MESSAGE`], naming the size key: a
/// `flows` entry's own, or the workload's.
pub(crate) fn check_message_sizes(
    scenario: &Scenario,
    messages: &[fabricsim_workload::MessageSpec],
) -> Result<(), ScenarioError> {
    match messages.iter().find(|m| m.size > MAX_MESSAGE) {
        Some(m) => Err(ScenarioError::new(
            &match scenario.workloads.get(m.workload as usize).map(|w| &w.kind) {
                Some(fabricsim_workload::WorkloadKind::Flows(flows)) => {
                    let i = flows.iter().position(|f| f.2 > MAX_MESSAGE).unwrap_or(0);
                    format!("workload[{}].flows[{i}].size", m.workload)
                }
                // A job is its own table (`jobs[j]`), its sizes its collectives'.
                Some(fabricsim_workload::WorkloadKind::Job(job)) => format!("{}.collectives", job.key),
                Some(fabricsim_workload::WorkloadKind::Chakra { trace, .. }) => trace.key.clone(),
                Some(fabricsim_workload::WorkloadKind::Dag { source, .. }) => source.0.clone(),
                Some(fabricsim_workload::WorkloadKind::ClosedLoop(l)) => match l.op {
                    fabricsim_workload::Operation::Call { request, .. } if request > MAX_MESSAGE => {
                        format!("workload[{}].request", m.workload)
                    }
                    fabricsim_workload::Operation::Call { .. } => format!("workload[{}].reply", m.workload),
                    fabricsim_workload::Operation::Write { .. } => format!("workload[{}].size", m.workload),
                },
                _ => format!("workload[{}].size", m.workload),
            },
            format!(
                "makes messages of {} bytes; an RDMA message is at most 2^31 bytes (2147483648, \"2GiB\"): use a smaller size, or several messages",
                m.size
            ),
        )),
        None => Ok(()),
    }
}

/// Refuses an MRC EV count that does not split equally over the hosts' planes (NIC
/// ports): the EV set gives every plane the same number of active EVs.
pub(crate) fn check_planes(scenario: &Scenario, nics: u32) -> Result<(), ScenarioError> {
    let own = scenario
        .workload_transports
        .iter()
        .enumerate()
        .filter_map(|(w, t)| Some((format!("workload[{w}].transport"), t.as_ref()?)));
    for (path, t) in std::iter::once(("transport".to_string(), &scenario.transport)).chain(own) {
        if let Some(Some(evs)) = t.planed_evs() {
            if !evs.is_multiple_of(nics) {
                let near = (evs.div_ceil(nics) * nics).max(nics);
                return Err(ScenarioError::new(
                    &format!("{path}.evs"),
                    format!(
                        "must be a multiple of the {nics} planes (NIC ports per host), so that every plane gets as many EVs, got {} (for example {near})",
                        evs
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// Bytes the plan and the run's bookkeeping keep per message beyond its connection's
/// state: its spec, its state, its place in its QP's list and in the dependency index.
pub(crate) const MESSAGE_BYTES: u64 =
    (std::mem::size_of::<fabricsim_workload::MessageSpec>() + std::mem::size_of::<MsgState>() + 2 * 4) as u64;

/// Refuses a scenario whose connection and message state would not fit in the memory
/// this process may use (the allocator would abort the process half-way through
/// building it, with no message). It runs before the plan is built, from each
/// workload's [`fabricsim_workload::plan_size`]: an all-to-all of every host of a large
/// fat tree is refused in a moment instead of building its connection list first. The
/// estimate counts each connection's endpoints ([`factory::state_bytes`]) and each
/// message, once per partition, with half again for the rest.
///
/// `workloads` are the scenario's with what the run decides filled in (a job's pace, a
/// traffic mix's link rate), `channels` their collectives' channels where they leave
/// them to the run.
pub(crate) fn check_memory(
    scenario: &Scenario,
    workloads: &[fabricsim_workload::WorkloadSpec],
    channels: &[u32],
    nhosts: u32,
    nics: u32,
) -> Result<(), ScenarioError> {
    let Some(available) = crate::units::available_memory() else { return Ok(()) };
    // Per workload: bytes, connections, the key that drives the state.
    let per: Vec<(u64, u64, &str)> = workloads
        .iter()
        .enumerate()
        .map(|(w, spec)| {
            let size = fabricsim_workload::plan_size(spec, nhosts, channels.get(w).copied().unwrap_or(1));
            let t = scenario.transport_of(w as u32);
            let planes = if t.spans_all_ports() { nics } else { 1 };
            let (conn_bytes, key) = factory::state_bytes(t, planes);
            let bytes = size
                .conns
                .saturating_mul(conn_bytes)
                .saturating_add(size.messages.saturating_mul(MESSAGE_BYTES))
                .saturating_add(size.deps.saturating_mul(8));
            (bytes, size.conns, key)
        })
        .collect();
    let total = per.iter().fold(0u64, |a, w| a.saturating_add(w.0)).saturating_mul(scenario.partitions.max(1) as u64);
    if per.is_empty() {
        return Ok(());
    }
    // The allocator's own overhead and the rest of the world come on top: a run whose
    // estimate was 3.2 GB needed 3.9 GB resident and between 4.5 and 5 GB of address
    // space.
    if total / 2 * 3 <= available {
        return Ok(());
    }
    let (w, &(bytes, n, key)) = per.iter().enumerate().max_by_key(|(_, w)| w.0).expect("a workload");
    // The transport's key when it sets the state per connection (QPs, paths, EVs),
    // else the workload's key that sets how many connections and messages there are.
    let path = match key {
        "kind" => size_key(w, &scenario.workloads[w].kind),
        _ => transport_key(scenario, w as u32, key),
    };
    let gb = |b: u64| b as f64 / 1e9;
    Err(ScenarioError::new(
        &path,
        format!(
            "the connections' and messages' state needs about {:.1} GB ({n} connections of workload {w}, \
             {} each with their messages{}), and with the simulator's other memory more than the {} this \
             process can still allocate once the fabric is built; use fewer {} or fewer hosts",
            gb(total),
            per_connection(bytes / n.max(1)),
            if scenario.partitions > 1 { format!(", x {} partitions", scenario.partitions) } else { String::new() },
            per_connection(available),
            match key {
                "qps" => "QPs",
                "paths" => "paths",
                "evs" => "entropy values",
                _ => "connections",
            },
        ),
    ))
}

/// The key that sets how many connections and messages workload `w` makes: its hosts
/// (or flows, senders, trace), or a job's iterations.
pub(crate) fn size_key(w: usize, kind: &fabricsim_workload::WorkloadKind) -> String {
    use fabricsim_workload::WorkloadKind as K;
    let own = |k: &str| format!("workload[{w}].{k}");
    match kind {
        K::Flows(_) => own("flows"),
        K::Incast { .. } => own("senders"),
        K::ClosedLoop(_) => own("clients"),
        K::Permutation { .. } | K::Collective { .. } => own("hosts"),
        // A traffic mix's flows are its hosts' arrivals over its duration.
        K::Poisson { .. } => own("duration"),
        // A job's key is its own table's (`jobs[0]`).
        K::Job(job) => format!("{}.iterations", job.key),
        K::Chakra { trace, .. } => trace.key.clone(),
        K::Dag { source, .. } => source.0.clone(),
        K::ConstantRate(_) => own("duration"),
    }
}

/// Where `key` of workload `workload`'s transport is set: its own `transport` table if
/// it has one, else the scenario's.
pub(crate) fn transport_key(scenario: &Scenario, workload: u32, key: &str) -> String {
    match scenario.workload_transports.get(workload as usize).and_then(|t| t.as_ref()) {
        Some(_) => format!("workload[{workload}].transport.{key}"),
        None => format!("transport.{key}"),
    }
}

/// Refuses a window-cutting delay target below a connection's unloaded round trip: every
/// ACK would cut the window, which stays at its floor (an MRC all-reduce with
/// `delay_target = "1us"` ran 18x slower, silently).
pub(crate) fn check_delay_target(
    scenario: &Scenario,
    conn: &fabricsim_workload::ConnSpec,
    transport: &factory::TransportSpec,
    base_rtt: Dur,
) -> Result<(), ScenarioError> {
    let workload = conn.workload;
    let Some((key, target)) = transport.window_cutting_target() else { return Ok(()) };
    match target {
        Some(t) if t < base_rtt => Err(ScenarioError::new(
            &transport_key(scenario, workload, key),
            format!(
                "{t} is below the unloaded round trip from host {} to host {} ({:.2}us): every \
                     acknowledgement would cut the window",
                conn.src,
                conn.dst,
                base_rtt.ps() as f64 / 1e6
            ),
        )),
        _ => Ok(()),
    }
}
