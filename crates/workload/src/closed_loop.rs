//! Closed-loop clients against one server: StaR's two evaluations.
//!
//! * `message_rate` (StaR Fig. 5a): each client keeps `outstanding` WRITEs of `size`
//!   bytes (8 B in the paper) in flight on its one connection to the server and issues
//!   the next as soon as one completes, that is, is acknowledged back at the client.
//! * `rpc` (StaR Fig. 5b): each client sends a request of `request` bytes (2.8 KB) to
//!   the server, which answers with `reply` bytes (1.4 KB) the moment the request has
//!   arrived (zero compute); the client calls again `think` after the reply arrived,
//!   with `outstanding` calls in flight. A request and its reply travel on the
//!   client's two connections (one each way).
//!
//! Each client runs `connections` such loops, each on its own connection(s) and
//! making `ops` operations; every message of a loop reads and writes its connection's
//! one buffer, as a benchmark loop does. The run reports operations per second and
//! the operations' latencies ([`crate::LoopRecord`]).

use crate::builder::Builder;
use crate::generators::{resolve, HostSet};
use crate::{invalid, LoopRecord, TimePoint, WorkloadError};
use fabricsim_engine::{Dur, Rng};

/// What each operation is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    /// A WRITE of this many bytes, complete when acknowledged.
    Write {
        /// Bytes per WRITE.
        size: u64,
    },
    /// A request and its reply.
    Call {
        /// Request bytes.
        request: u64,
        /// Reply bytes.
        reply: u64,
        /// Time between a reply's arrival and the client's next call.
        think: Dur,
    },
}

impl Operation {
    /// The workload kind's name.
    pub fn name(&self) -> &'static str {
        match self {
            Operation::Write { .. } => "message_rate",
            Operation::Call { .. } => "rpc",
        }
    }

    /// Connections per client.
    pub fn conns_per_client(&self) -> u64 {
        match self {
            Operation::Write { .. } => 1,
            Operation::Call { .. } => 2,
        }
    }
}

/// Clients in a closed loop with one server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClosedLoop {
    /// The clients (a count: hosts other than the server, in order).
    pub clients: HostSet,
    /// The server.
    pub server: u32,
    /// What each operation is.
    pub op: Operation,
    /// Operations each client keeps in flight.
    pub outstanding: u32,
    /// Operations per client and connection.
    pub ops: u32,
    /// Connections (independent loops) per client.
    pub connections: u32,
}

/// Appends `spec`'s clients, connections and operations to `b`, starting at `at`.
pub(crate) fn build(
    b: &mut Builder,
    spec: &ClosedLoop,
    at: &TimePoint,
    nhosts: u32,
    field: &dyn Fn(&str) -> String,
) -> Result<LoopRecord, WorkloadError> {
    if spec.server >= nhosts {
        return Err(invalid(
            field("server"),
            format!("host {} does not exist (hosts are 0..{})", spec.server, nhosts.saturating_sub(1)),
        ));
    }
    let clients = resolve(&spec.clients, nhosts, &field("clients"), &mut Rng::new(0), false, Some(spec.server))?;
    if clients.is_empty() {
        return Err(invalid(field("clients"), "at least one client is required"));
    }
    let mut rec = LoopRecord {
        workload: b.workload,
        kind: spec.op.name(),
        clients: clients.len() as u32,
        ops: Vec::with_capacity(clients.len() * (spec.ops * spec.connections) as usize),
        on_ack: matches!(spec.op, Operation::Write { .. }),
    };
    let k = spec.outstanding.max(1) as usize;
    for &c in &clients {
        for _ in 0..spec.connections {
            let to_server = b.conn(c, spec.server, None);
            let back = match spec.op {
                Operation::Call { .. } => Some(b.conn(spec.server, c, None)),
                Operation::Write { .. } => None,
            };
            for conn in [Some(to_server), back].into_iter().flatten() {
                b.plan.conns[conn as usize].reuse_buffer = true;
            }
            // Per slot, the message whose completion releases the slot's next operation.
            let mut last: Vec<Option<u32>> = vec![None; k];
            for i in 0..spec.ops as usize {
                let slot = i % k;
                let (gap, size) = match spec.op {
                    Operation::Write { size } => (Dur::ZERO, size),
                    Operation::Call { request, think, .. } => (think, request),
                };
                let tp = match last[slot] {
                    None => at.clone(),
                    Some(m) => at.clone().max(&TimePoint { at: Dur::ZERO, after: vec![(m, gap)] }),
                };
                let first = b.message(to_server, size, &tp, &[], None);
                let end = match (spec.op, back) {
                    (Operation::Call { reply, .. }, Some(back)) => {
                        b.message(back, reply, &TimePoint::received(&[first]), &[], None)
                    }
                    _ => {
                        b.release_on_ack(first);
                        first
                    }
                };
                rec.ops.push((first, end));
                last[slot] = Some(end);
            }
        }
    }
    Ok(rec)
}

#[cfg(test)]
mod tests {
    use crate::{build, ClosedLoop, HostSet, Operation, WorkloadKind, WorkloadSpec};
    use fabricsim_engine::Dur;

    fn plan(op: Operation, outstanding: u32) -> crate::Plan {
        let spec = ClosedLoop { clients: HostSet::Count(3), server: 0, op, outstanding, ops: 4, connections: 1 };
        build(&[WorkloadSpec { kind: WorkloadKind::ClosedLoop(spec), start: Dur::ZERO }], 8, 1).unwrap()
    }

    #[test]
    fn each_write_waits_for_the_acknowledgement_of_the_one_before_in_its_slot() {
        let p = plan(Operation::Write { size: 8 }, 2);
        assert_eq!(p.conns.len(), 3);
        assert!(p.conns.iter().all(|c| c.dst == 0) && p.conns.iter().map(|c| c.src).eq(1..4));
        assert_eq!(p.messages.len(), 12);
        // Client 1's four WRITEs: two slots, each a chain released on acknowledgement.
        let m = &p.messages[..4];
        assert!(m[0].deps.is_empty() && m[1].deps.is_empty());
        assert_eq!((m[2].deps.clone(), m[3].deps.clone()), (vec![0], vec![1]));
        assert!(m.iter().all(|m| m.on_ack && m.size == 8));
        let rec = &p.loops[0];
        assert_eq!((rec.kind, rec.clients, rec.ops.len(), rec.on_ack), ("message_rate", 3, 12, true));
    }

    #[test]
    fn a_call_is_a_request_then_a_reply_back_and_the_next_call_follows_the_reply() {
        let think = Dur::from_us(3);
        let p = plan(Operation::Call { request: 2800, reply: 1400, think }, 1);
        assert_eq!(p.conns.len(), 6);
        let (req, rep) = (&p.messages[0], &p.messages[1]);
        assert_eq!((req.size, rep.size), (2800, 1400));
        assert_eq!((p.conns[req.conn as usize].dst, p.conns[rep.conn as usize].src), (0, 0));
        assert_eq!(rep.deps, vec![0]);
        assert_eq!((p.messages[2].deps.clone(), p.messages[2].after.clone()), (vec![1], vec![think]));
        assert!(p.messages.iter().all(|m| !m.on_ack));
        assert_eq!(p.loops[0].ops[1], (2, 3));
    }

    #[test]
    fn a_server_among_the_clients_or_missing_is_refused_by_name() {
        let spec = ClosedLoop {
            clients: HostSet::List(vec![1, 0]),
            server: 0,
            op: Operation::Write { size: 8 },
            outstanding: 1,
            ops: 1,
            connections: 1,
        };
        let e = build(&[WorkloadSpec { kind: WorkloadKind::ClosedLoop(spec.clone()), start: Dur::ZERO }], 8, 1);
        assert!(e.unwrap_err().to_string().starts_with("workload[0].clients: host 0 cannot be both"));
        let spec = ClosedLoop { server: 9, clients: HostSet::Count(2), ..spec };
        let e = build(&[WorkloadSpec { kind: WorkloadKind::ClosedLoop(spec), start: Dur::ZERO }], 8, 1);
        assert_eq!(e.unwrap_err().to_string(), "workload[0].server: host 9 does not exist (hosts are 0..7)");
    }
}
