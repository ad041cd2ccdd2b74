//! Traffic users already have in files: htsim connection matrices ([`htsim`]) and
//! Chakra execution traces ([`chakra`], decoded by [`protobuf`]), turned into flows
//! with dependencies and collectives.
//!
//! Both become a [`DagFlow`] list: flows with a start time and the flows whose
//! receipt each waits for (plus a gap). The list may come in any order and is refused,
//! naming a flow on the loop, if its dependencies form a cycle: such a trace could
//! never finish.

pub mod chakra;
pub mod htsim;
pub mod protobuf;

use fabricsim_engine::Dur;

/// A flow of a trace: from `src` to `dst`, at `start` at the earliest and once every
/// flow in `deps` (indices into the list) is received plus its gap.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DagFlow {
    /// Sending host.
    pub src: u32,
    /// Receiving host.
    pub dst: u32,
    /// Bytes.
    pub size: u64,
    /// Earliest start, from the workload's start.
    pub start: Dur,
    /// `(flow, gap)`: flows (indices into the list) that must be received first, and
    /// how long after each.
    pub deps: Vec<(u32, Dur)>,
    /// What waits for it waits for its acknowledgement at the sender, not its arrival
    /// (an htsim send-done trigger).
    pub on_ack: bool,
    /// Where it comes from, for errors (`line 12`).
    pub origin: String,
}

/// An order of `flows` in which every flow comes after its dependencies (the list's
/// own order where it allows), or the origin of a flow on a cycle.
pub fn topological_order(flows: &[DagFlow]) -> Result<Vec<u32>, String> {
    let n = flows.len();
    let mut waiting: Vec<u32> = flows.iter().map(|f| f.deps.len() as u32).collect();
    let mut dependents: Vec<Vec<u32>> = vec![Vec::new(); n];
    for (i, f) in flows.iter().enumerate() {
        for &(d, _) in &f.deps {
            dependents[d as usize].push(i as u32);
        }
    }
    // Kahn's algorithm with the smallest ready index first: the list's order when
    // it is already topological.
    let mut ready: std::collections::BinaryHeap<std::cmp::Reverse<u32>> =
        (0..n as u32).filter(|&i| waiting[i as usize] == 0).map(std::cmp::Reverse).collect();
    let mut order = Vec::with_capacity(n);
    while let Some(std::cmp::Reverse(i)) = ready.pop() {
        order.push(i);
        for &d in &dependents[i as usize] {
            waiting[d as usize] -= 1;
            if waiting[d as usize] == 0 {
                ready.push(std::cmp::Reverse(d));
            }
        }
    }
    if order.len() == n {
        return Ok(order);
    }
    // Walk back from a flow still waiting along waiting dependencies until one
    // repeats: that one is on a cycle.
    let mut x = (0..n).find(|&i| waiting[i] > 0).expect("some flow still waits");
    let mut seen = vec![false; n];
    while !seen[x] {
        seen[x] = true;
        x = flows[x].deps.iter().map(|d| d.0 as usize).find(|&d| waiting[d] > 0).expect("a waiting dependency");
    }
    let next = |y: usize| flows[y].deps.iter().map(|d| d.0 as usize).find(|&d| waiting[d] > 0).expect("on the cycle");
    let mut cycle = vec![x];
    let mut y = next(x);
    while y != x && cycle.len() < 8 {
        cycle.push(y);
        y = next(y);
    }
    let name = |i: &usize| flows[*i].origin.clone();
    let path = if cycle.len() == 1 {
        format!("{} waits for itself", name(&x))
    } else {
        let rest: Vec<String> = cycle[1..].iter().map(name).collect();
        let more = if y == x { String::new() } else { ", ...".to_string() };
        format!("{} waits for {}{more}, which waits for {}", name(&x), rest.join(", which waits for "), name(&x))
    };
    Err(format!("the dependencies form a cycle, so the trace could never finish: {path}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow(deps: &[u32], origin: &str) -> DagFlow {
        DagFlow {
            on_ack: false,
            src: 0,
            dst: 1,
            size: 1,
            start: Dur::ZERO,
            deps: deps.iter().map(|&d| (d, Dur::ZERO)).collect(),
            origin: origin.into(),
        }
    }

    #[test]
    fn flows_come_after_their_dependencies_in_list_order_otherwise() {
        let f = [flow(&[2], "a"), flow(&[], "b"), flow(&[1], "c"), flow(&[], "d")];
        assert_eq!(topological_order(&f).unwrap(), vec![1, 2, 0, 3]);
    }

    #[test]
    fn a_cycle_is_named() {
        let f = [flow(&[], "line 1"), flow(&[3], "line 2"), flow(&[1], "line 3"), flow(&[2, 0], "line 4")];
        let e = topological_order(&f).unwrap_err();
        assert!(e.contains("cycle"), "{e}");
        for l in ["line 2", "line 3", "line 4"] {
            assert!(e.contains(l), "{e}");
        }
        assert!(!e.contains("line 1"), "{e}");
    }
}
