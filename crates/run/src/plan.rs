//! From the scenario's workloads and jobs to the traffic plan the run executes.
//!
//! The workload layer knows hosts only; what it needs of the fabric and the transports
//! is decided here: how many channels a collective gets when it leaves that to the run
//! (one per NIC port its connections would otherwise leave unused), the pace an on/off
//! job's bursts are sized by, and whether the plan fits in memory before it is built.

use crate::factory::{self, TransportSpec};
use crate::{Scenario, ScenarioError};
use fabricsim_fabric::Fabric;
use fabricsim_workload::{HostSet, Pace, Plan, WorkloadKind};

/// Bytes of plan and run state per message: its spec and dependencies, its state,
/// and the result columns (measured on ring all-reduces and jobs: 150-250).
const BYTES_PER_MESSAGE: u64 = 256;

/// The plan of `sc` on `fabric`.
pub(crate) fn build(sc: &Scenario, fabric: &Fabric) -> Result<Plan, ScenarioError> {
    let nics = fabric.nics();
    let auto: Vec<u32> = (0..sc.workloads.len()).map(|w| auto_channels(sc.transport_of(w as u32), nics)).collect();
    // One dependent hop of a collective step: a full frame serialised and the
    // propagation of a host-leaf-host path.
    let pace = Pace {
        rate_bps: sc.links.host_link.bps(),
        latency: sc.links.host_link.tx_time(sc.mtu as u64 + 100) + sc.links.delay.mul(2),
    };
    let mut workloads = sc.workloads.clone();
    let mut messages = 0u64;
    for (w, spec) in workloads.iter_mut().enumerate() {
        match &mut spec.kind {
            WorkloadKind::Job(job) => {
                job.pace = Some(pace);
                let n = job.message_count(auto[w]);
                messages += n;
                check_memory(messages, &format!("{}.iterations", job.key), n)?;
            }
            WorkloadKind::Poisson { hosts, mix } => {
                mix.link_bps = sc.links.host_link.bps();
                let senders = match (&mix.groups[..], hosts) {
                    ([], HostSet::All) => fabric.hosts() as u64,
                    ([], HostSet::Count(n)) => *n as u64,
                    ([], HostSet::List(l)) => l.len() as u64,
                    (groups, _) => groups.iter().map(|g| g.len() as u64).sum(),
                };
                // Each flow is a connection too: its endpoints' state with the message.
                let n = mix.flows_at_most(senders);
                let per = factory::state_bytes(sc.transport_of(w as u32), 1).0 / BYTES_PER_MESSAGE + 1;
                messages += n * per;
                check_memory(messages, &format!("workload[{w}].duration"), n * per)?;
            }
            WorkloadKind::ConstantRate(flow) => {
                let n = flow.messages();
                messages += n;
                check_memory(messages, &format!("workload[{w}].duration"), n)?;
            }
            _ => {}
        }
    }
    Ok(fabricsim_workload::build_with(&workloads, fabric.hosts(), sc.seed, &auto)?)
}

/// Refuses a plan of `messages` messages in all that would not fit in memory, before
/// it is built, naming `key` (whose workload makes `own` of them).
fn check_memory(messages: u64, key: &str, own: u64) -> Result<(), ScenarioError> {
    let Some(available) = crate::units::available_memory() else { return Ok(()) };
    let need = messages.saturating_mul(BYTES_PER_MESSAGE);
    if need / 2 * 3 <= available {
        return Ok(());
    }
    Err(ScenarioError::new(
        key,
        format!(
            "makes about {own} messages ({:.1} GB of plan and run state with the others' {}), more than the {:.1} GB \
             this process can allocate; use fewer iterations, ranks or pieces",
            need as f64 / 1e9,
            messages - own,
            available as f64 / 1e9
        ),
    ))
}

/// Channels of a collective that leaves them to the run: one per NIC port a
/// connection of `transport` does not already use (a RoCE QP sits on one port of a
/// 4-port NIC: 4 channels; QP-Scaling's 16 QPs already cover them: 1; MRC sprays over
/// all: 1).
pub fn auto_channels(transport: &TransportSpec, nics: u32) -> u32 {
    let covered = if transport.spans_all_ports() { nics } else { transport.qps().min(nics) };
    (nics / covered.max(1)).max(1)
}
