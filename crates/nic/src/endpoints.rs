//! The endpoint table: every QP's two endpoints, where they live, and what they count.

use crate::multiqp::{ConnState, Split};
use crate::{EpMeta, Nic, Report};
use fabricsim_engine::{Rate, Time};
use fabricsim_transport::common::{OooHistogram, PathLog, PathStats};
use fabricsim_transport::{AnyEndpoint, ConnInfo, Endpoint, EndpointStats};

/// Where one QP of a connection sits on its hosts' NICs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EndpointPlace {
    /// The first NIC port it uses.
    pub first_port: u8,
    /// How many consecutive ports (every one for a transport spraying over planes).
    pub ports: u8,
}

impl Nic {
    /// Adds a connection from `src` to `dst` of `qps` QPs, QP `i` on the ports
    /// `place(i)`, messages split over the QPs by `split`. `make(i, requester,
    /// responder)` builds QP `i`'s two endpoints from their views of the connection
    /// (QP numbers are endpoint ids: a packet's destination QP finds its endpoint
    /// directly). Returns the connection's id.
    #[allow(clippy::too_many_arguments)]
    pub fn add_connection(
        &mut self,
        src: u32,
        dst: u32,
        qps: u32,
        split: Split,
        port_rate: Rate,
        mtu: u32,
        place: impl Fn(u32) -> EndpointPlace,
        mut make: impl FnMut(u32, ConnInfo, ConnInfo) -> (AnyEndpoint, AnyEndpoint),
    ) -> u32 {
        let conn = self.conns.len() as u32;
        let first = self.eps.len() as u32;
        for i in 0..qps {
            let r = first + 2 * i;
            let EndpointPlace { first_port, ports } = place(i);
            let info = |local_host, remote_host, local_qpn, remote_qpn| ConnInfo {
                local_host,
                remote_host,
                remote_qpn,
                local_qpn,
                first_port,
                ports,
                port_rate,
                mtu,
            };
            // Requester and responder of QP i sit side by side.
            let (req, resp) = make(i, info(src, dst, r, r + 1), info(dst, src, r + 1, r));
            for (ep, host, responder) in [(req, src, false), (resp, dst, true)] {
                let local = self.host_eps[host as usize].len() as u32;
                self.host_eps[host as usize].push(self.eps.len() as u32);
                let (dual, stateless) = (ep.dual(), ep.stateless());
                self.eps.push(ep);
                self.meta.push(EpMeta {
                    host,
                    first_port,
                    ports,
                    responder,
                    dual,
                    stateless,
                    local,
                    conn,
                    queued: 0,
                    offer_first: 0,
                    timer_at: Time::MAX,
                    wake_at: Time::MAX,
                });
            }
        }
        self.conns.push(ConnState {
            first_ep: first,
            qps,
            split,
            report: Report::Messages,
            msgs: vec![Vec::new(); qps as usize],
            reuse_buffer: false,
            maestro: None,
        });
        conn
    }

    /// Adds a connection of one QP whose two endpoints the caller built (with QP
    /// numbers [`next_endpoint`](Self::next_endpoint) and the one after, requester
    /// first), reporting their own events ([`Report::Endpoints`]): for an owner that
    /// posts transport messages itself. Returns the connection's id.
    pub fn add_endpoint_pair(
        &mut self,
        src: u32,
        dst: u32,
        place: EndpointPlace,
        req: AnyEndpoint,
        resp: AnyEndpoint,
    ) -> u32 {
        let (mut pair, rate, mtu) = (Some((req, resp)), Rate(0), 0);
        let conn =
            self.add_connection(src, dst, 1, Split::Even, rate, mtu, |_| place, |_, _, _| pair.take().expect("one QP"));
        self.conns[conn as usize].report = Report::Endpoints;
        conn
    }

    /// The id (and QP number) the next endpoint added will have.
    pub fn next_endpoint(&self) -> u32 {
        self.eps.len() as u32
    }

    /// Endpoint `ep`.
    pub fn endpoint(&self, ep: u32) -> &AnyEndpoint {
        &self.eps[ep as usize]
    }

    /// Endpoint `ep`, to change directly (tests): its driver bookkeeping does not
    /// follow, so afterwards let the NIC [`kick`](Self::kick) it.
    pub fn endpoint_mut(&mut self, ep: u32) -> &mut AnyEndpoint {
        &mut self.eps[ep as usize]
    }

    /// Connections.
    pub fn connections(&self) -> usize {
        self.conns.len()
    }

    /// QPs of connection `c`.
    pub fn qps_of(&self, c: usize) -> u32 {
        self.conns[c].qps
    }

    /// The ports of QP `qp` of connection `c`.
    pub fn place_of(&self, c: usize, qp: u32) -> EndpointPlace {
        let m = &self.meta[(self.conns[c].first_ep + 2 * qp) as usize];
        EndpointPlace { first_port: m.first_port, ports: m.ports }
    }

    /// Counters of every endpoint, with whether it is a responder and its connection.
    pub fn endpoint_stats(&self) -> impl Iterator<Item = (&EndpointStats, bool, u32)> {
        self.eps.iter().zip(&self.meta).map(|(e, m)| (e.stats(), m.responder, m.conn))
    }

    /// Payload bytes placed by the responders of hosts `owned` accepts.
    pub fn bytes_placed(&self, owned: impl Fn(u32) -> bool) -> u64 {
        (0..self.eps.len())
            .filter(|&i| self.meta[i].responder && owned(self.meta[i].host))
            .map(|i| self.eps[i].stats().bytes_placed)
            .sum()
    }

    /// Payload bytes connection `c`'s receivers have placed.
    pub fn conn_bytes_placed(&self, c: usize) -> u64 {
        let conn = &self.conns[c];
        (0..conn.qps).map(|i| self.eps[(conn.first_ep + 2 * i + 1) as usize].stats().bytes_placed).sum()
    }

    /// Drains the entropy-value state changes of the endpoints of hosts `owned`
    /// accepts, as `(connection, change)`.
    pub fn drain_path_logs(&mut self, now: Time, owned: impl Fn(u32) -> bool, out: &mut Vec<(u32, PathLog)>) {
        let mut log = Vec::new();
        for (i, ep) in self.eps.iter_mut().enumerate() {
            if !owned(self.meta[i].host) {
                continue;
            }
            ep.drain_path_log(now, &mut log);
            let conn = self.meta[i].conn;
            out.extend(log.drain(..).map(|l| (conn, l)));
        }
    }

    /// Per-path counters of every sender: `(connection, qp, counters, Maestro's
    /// monitor)`. A Maestro connection has a row per QP (its path): the entropy value
    /// is the QP's UDP source port, the ECN marks the CNPs it received, the losses its
    /// timeouts.
    pub fn path_stats(&self) -> Vec<(u32, u32, PathStats, Option<crate::maestro::QpPath>)> {
        let mut out = Vec::new();
        for (c, conn) in self.conns.iter().enumerate() {
            for q in 0..conn.qps {
                let ep = &self.eps[(conn.first_ep + 2 * q) as usize];
                if let Some(m) = &conn.maestro {
                    let s = ep.stats();
                    let ev = match ep {
                        AnyEndpoint::RoceRequester(r) => r.sport() as u32,
                        _ => 0,
                    };
                    let row = PathStats {
                        ev,
                        packets: s.data_sent,
                        ecn_marks: s.cnps,
                        trims: 0,
                        losses: s.timeouts,
                        retransmissions: s.retransmitted,
                    };
                    out.push((c as u32, q, row, Some(m.paths[q as usize])));
                    continue;
                }
                for s in ep.path_stats() {
                    out.push((c as u32, q, s, None));
                }
            }
        }
        out
    }

    /// Out-of-order degrees per connection (merged over its QPs), for multipath
    /// receivers.
    pub fn ooo(&self) -> Vec<Option<OooHistogram>> {
        self.conns
            .iter()
            .map(|conn| {
                let mut h: Option<OooHistogram> = None;
                for q in 0..conn.qps {
                    if let Some(o) = self.eps[(conn.first_ep + 2 * q + 1) as usize].ooo() {
                        h.get_or_insert_with(Default::default).merge(o);
                    }
                }
                h
            })
            .collect()
    }

    /// Takes over the endpoints of the hosts `theirs` accepts, and the message maps of
    /// the connections they send on, from `other` (a copy that simulated them).
    pub fn absorb(&mut self, other: &mut Nic, theirs: impl Fn(u32) -> bool) {
        for i in 0..self.eps.len() {
            if theirs(self.meta[i].host) {
                std::mem::swap(&mut self.eps[i], &mut other.eps[i]);
            }
        }
        for c in 0..self.conns.len() {
            let src = self.meta[self.conns[c].first_ep as usize].host;
            if theirs(src) {
                // Which message each of its sequence numbers carries (for the
                // retransmissions of messages not yet acknowledged).
                std::mem::swap(&mut self.conns[c].msgs, &mut other.conns[c].msgs);
                // And Maestro's sender state: the path monitor the results report.
                std::mem::swap(&mut self.conns[c].maestro, &mut other.conns[c].maestro);
            }
        }
        self.misdelivered += other.misdelivered;
        for h in 0..self.rnic.len() {
            if theirs(h as u32) {
                std::mem::swap(&mut self.rnic[h], &mut other.rnic[h]);
            }
        }
    }

    /// Asks the cache for endpoint `ep`'s first lines (its kind, what receiving reads
    /// first) and its driver bookkeeping: a packet for it is about to arrive.
    #[inline]
    pub fn prefetch_endpoint(&self, ep: usize) {
        if let (Some(e), Some(m)) = (self.eps.get(ep), self.meta.get(ep)) {
            fabricsim_engine::prefetch::lines(e, 8);
            fabricsim_engine::prefetch::lines(m, 1);
        }
    }
}
