//! From the scenario's workloads and jobs to the traffic plan the run executes.
//!
//! The workload layer knows hosts only; what it needs of the fabric and the transports
//! is decided here: how many channels a collective gets when it leaves that to the run
//! (one per NIC port its connections would otherwise leave unused), the pace an on/off
//! job's bursts are sized by, and whether the plan fits in memory before it is built.

use crate::factory::TransportSpec;
use crate::{Scenario, ScenarioError};
use fabricsim_fabric::Fabric;
use fabricsim_workload::{Pace, Plan, WorkloadKind};

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
    for spec in &mut workloads {
        match &mut spec.kind {
            WorkloadKind::Job(job) => job.pace = Some(pace),
            WorkloadKind::Poisson { mix, .. } => mix.link_bps = sc.links.host_link.bps(),
            _ => {}
        }
    }
    // Now that every workload's size is known, before any of it is built.
    crate::checks::check_memory(sc, &workloads, &auto, fabric.hosts(), nics)?;
    Ok(fabricsim_workload::build_with(&workloads, fabric.hosts(), sc.seed, &auto)?)
}

/// Channels of a collective that leaves them to the run: one per NIC port a
/// connection of `transport` does not already use (a RoCE QP sits on one port of a
/// 4-port NIC: 4 channels; QP-Scaling's 16 QPs already cover them: 1; MRC sprays over
/// all: 1).
pub fn auto_channels(transport: &TransportSpec, nics: u32) -> u32 {
    let covered = if transport.spans_all_ports() { nics } else { transport.qps().min(nics) };
    (nics / covered.max(1)).max(1)
}
