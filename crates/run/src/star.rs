//! How each StaR connection is built: which end is its stateless server, and, in
//! auto mode, whether it is still an ordinary stateful one.
//!
//! Auto mode (the paper's section 3.3): connections are taken in the plan's order; one
//! is stateful (RoCE) while both its hosts' NICs have a QP context free (each end's QP
//! takes one at its host, `nic.qp_cache`), and stateless once either is full. A NIC
//! without a bounded cache (ideal, or `qp_cache = "none"`) never fills.

use crate::factory::{StarChoice, StarServerEnd, TransportSpec};
use crate::scenario::Scenario;
use fabricsim_workload::{ConnSpec, Plan};

/// The choices so far, per host.
pub struct Choices {
    /// Connections per host (for `server = "busier"`).
    conns: Vec<u32>,
    /// Contexts left on each host's NIC (`u32::MAX`: unbounded).
    free: Vec<u32>,
}

impl Choices {
    /// Nothing chosen yet for `plan`'s connections on `hosts` hosts.
    pub(crate) fn new(scenario: &Scenario, plan: &Plan, hosts: u32) -> Choices {
        let mut conns = vec![0u32; hosts as usize];
        for c in &plan.conns {
            conns[c.src as usize] += 1;
            conns[c.dst as usize] += 1;
        }
        let free = (0..hosts).map(|h| scenario.nic.model_of(h).and_then(|m| m.qp_cache).unwrap_or(u32::MAX)).collect();
        Choices { conns, free }
    }

    /// How connection `c` is built with `transport` (default for other kinds).
    pub(crate) fn choose(&mut self, transport: &TransportSpec, c: &ConnSpec) -> StarChoice {
        let TransportSpec::Star(s) = transport else { return StarChoice::default() };
        let server_sends = match s.server {
            StarServerEnd::Receiver => false,
            StarServerEnd::Sender => true,
            StarServerEnd::Busier => self.conns[c.src as usize] > self.conns[c.dst as usize],
        };
        let (a, b) = (c.src as usize, c.dst as usize);
        let stateful = s.auto && self.free[a] > 0 && self.free[b] > 0;
        if stateful {
            for h in [a, b] {
                self.free[h] = self.free[h].saturating_sub(u32::from(self.free[h] != u32::MAX));
            }
        }
        StarChoice { server_sends, stateful }
    }
}
