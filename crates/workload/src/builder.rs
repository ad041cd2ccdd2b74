//! Appends connections and messages to a plan, one workload at a time.

use crate::{ConnSpec, MessageSpec, Plan, TimePoint};
use std::collections::BTreeMap;

/// Builds a [`Plan`]: opens connections (fresh, or shared within a workload as a
/// collective library keeps persistent queue pairs per peer and channel) and appends
/// messages whose start is a [`TimePoint`].
#[derive(Default)]
pub(crate) struct Builder {
    pub(crate) plan: Plan,
    /// The workload being built.
    pub(crate) workload: u32,
    /// Connections it opened so far (the next one's [`ConnSpec::index`]).
    local: u32,
    /// Its shared connections by (communicator, src, dst, channel).
    shared: BTreeMap<(u32, u32, u32, u32), u32>,
    /// Its first connection out of each host (the connection its marks name).
    out_of: BTreeMap<u32, u32>,
    /// Its marks still without a connection, with their host.
    marks: Vec<(u32, u32)>,
}

impl Builder {
    /// Starts workload `w`.
    pub(crate) fn begin(&mut self, w: u32) {
        self.workload = w;
        self.local = 0;
        self.shared.clear();
        self.out_of.clear();
        debug_assert!(self.marks.is_empty(), "finish() ends every workload with marks");
    }

    /// Ends the current workload: gives each of its marks a connection out of its host,
    /// opening one (to the next host of `nhosts`) for a host that has none.
    pub(crate) fn finish(&mut self, nhosts: u32) {
        for (m, host) in std::mem::take(&mut self.marks) {
            let conn = match self.out_of.get(&host) {
                Some(&c) => c,
                None => self.conn(host, (host + 1) % nhosts.max(2), None),
            };
            self.plan.messages[m as usize].conn = conn;
        }
    }

    /// A mark of `host`'s timeline at `at` (see [`crate::MessageSpec`]). Returns its index.
    pub(crate) fn mark(&mut self, host: u32, at: &TimePoint) -> u32 {
        let m = self.message(u32::MAX, 0, at, &[], None);
        self.marks.push((m, host));
        m
    }

    /// A transfer between two ranks on one host (NVLink, shared memory): no network,
    /// done the moment it may start. A mark of `host` at `at` after `deps`.
    pub(crate) fn local(&mut self, host: u32, at: &TimePoint, deps: &[u32]) -> u32 {
        let m = self.message(u32::MAX, 0, at, deps, None);
        self.marks.push((m, host));
        m
    }

    /// `at` as a point with at most one message term: itself if it has none or one,
    /// else a mark of `host` reached at `at`.
    pub(crate) fn collapse(&mut self, host: u32, at: TimePoint) -> TimePoint {
        if at.after.len() <= 1 {
            return at;
        }
        let m = self.mark(host, &at);
        TimePoint::received(&[m])
    }

    /// A new connection from `src` to `dst`.
    pub(crate) fn conn(&mut self, src: u32, dst: u32, port: Option<u32>) -> u32 {
        self.plan.conns.push(ConnSpec {
            src,
            dst,
            workload: self.workload,
            index: self.local,
            port,
            reuse_buffer: false,
        });
        self.out_of.entry(src).or_insert(self.plan.conns.len() as u32 - 1);
        self.local += 1;
        (self.plan.conns.len() - 1) as u32
    }

    /// The connection of communicator `comm` from `src` to `dst` on `channel`, opened
    /// the first time it is asked for.
    pub(crate) fn shared_conn(&mut self, comm: u32, src: u32, dst: u32, channel: u32, port: Option<u32>) -> u32 {
        if let Some(&c) = self.shared.get(&(comm, src, dst, channel)) {
            return c;
        }
        let c = self.conn(src, dst, port);
        self.shared.insert((comm, src, dst, channel), c);
        c
    }

    /// A message of `size` bytes on `conn` that starts at `at` and once `deps` are
    /// received. Returns its index.
    pub(crate) fn message(
        &mut self,
        conn: u32,
        size: u64,
        at: &TimePoint,
        deps: &[u32],
        collective: Option<u32>,
    ) -> u32 {
        let (deps, after) =
            if deps.is_empty() { split(&at.after) } else { split(&TimePoint::received(deps).max(at).after) };
        self.plan.messages.push(MessageSpec {
            conn,
            size,
            start: at.at,
            deps,
            after,
            workload: self.workload,
            collective,
            on_ack: false,
        });
        (self.plan.messages.len() - 1) as u32
    }

    /// Makes message `m` release its dependents when acknowledged, not received.
    pub(crate) fn release_on_ack(&mut self, m: u32) {
        self.plan.messages[m as usize].on_ack = true;
    }
}

/// Terms of a time point as dependency lists (no gap list when every gap is zero).
fn split(terms: &[(u32, fabricsim_engine::Dur)]) -> (Vec<u32>, Vec<fabricsim_engine::Dur>) {
    let deps = terms.iter().map(|t| t.0).collect();
    let after = if terms.iter().all(|t| t.1 == fabricsim_engine::Dur::ZERO) {
        Vec::new()
    } else {
        terms.iter().map(|t| t.1).collect()
    };
    (deps, after)
}
