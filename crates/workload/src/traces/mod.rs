//! Traffic users already have in files: htsim connection matrices ([`htsim`]) and
//! Chakra execution traces ([`chakra`], decoded by [`protobuf`]), turned into flows
//! with dependencies and collectives.
//!
//! Both become a [`DagFlow`] list: flows with a start time and the flows whose
//! receipt each waits for (plus a gap). The list may come in any order and is refused,
//! naming a flow on the loop, if its dependencies form a cycle: such a trace could
//! never finish. htsim's multishot triggers ([`MultiShot`]) release flows in the order
//! others complete; [`check_shots`] refuses a list in which some flow could never start.

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

/// An htsim multishot trigger over a [`DagFlow`] list: the `k`-th completion among
/// `activators` (in time order) starts `targets[k]`, further completions start
/// nothing (htsim's `MultiShotTrigger`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MultiShot {
    /// Flows (indices into the list) whose completion activates it.
    pub activators: Vec<u32>,
    /// Flows it starts, one per activation, in this order (the file's).
    pub targets: Vec<u32>,
    /// Where it comes from, for errors (`multishot trigger 3 (line 9)`).
    pub origin: String,
}

/// Checks that every flow can start when `shots` release their targets as flows
/// complete: runs the list abstractly (every flow once its dependencies ran; each
/// run of an activator starts its trigger's next target) and names the first target,
/// in list order, that no activation is left for. `flows` must be free of cycles
/// (refused as by [`topological_order`] if not); a target carries no `deps` of its own.
pub fn check_shots(flows: &[DagFlow], shots: &[MultiShot]) -> Result<(), String> {
    if shots.is_empty() {
        return Ok(());
    }
    topological_order(flows)?;
    let n = flows.len();
    let (mut waiting, dependents) = dependency_graph(flows);
    let mut fires: Vec<Vec<u32>> = vec![Vec::new(); n];
    for (s, shot) in shots.iter().enumerate() {
        for &a in &shot.activators {
            fires[a as usize].push(s as u32);
        }
        for &t in &shot.targets {
            waiting[t as usize] += 1;
        }
    }
    // Which target an activation starts depends on the order flows complete, but how
    // many targets start does not: a trigger activated j times starts its first j.
    let mut fired = vec![0usize; shots.len()];
    let mut ready: Vec<u32> = (0..n as u32).filter(|&i| waiting[i as usize] == 0).collect();
    let mut ran = vec![false; n];
    while let Some(i) = ready.pop() {
        ran[i as usize] = true;
        let shot_targets = fires[i as usize].iter().filter_map(|&s| {
            let k = fired[s as usize];
            fired[s as usize] += 1;
            shots[s as usize].targets.get(k).copied()
        });
        let released: Vec<u32> = dependents[i as usize].iter().copied().chain(shot_targets).collect();
        for d in released {
            waiting[d as usize] -= 1;
            if waiting[d as usize] == 0 {
                ready.push(d);
            }
        }
    }
    if ran.iter().all(|&r| r) {
        return Ok(());
    }
    // A flow that never runs waits, directly or through others, for a target that
    // no activation is left for: name the first such target.
    for (s, shot) in shots.iter().enumerate() {
        if let Some((k, &t)) = shot.targets.iter().enumerate().find(|&(_, &t)| !ran[t as usize]) {
            let (have, all) = (fired[s], shot.activators.len());
            let why = if have == all {
                format!("{all} flows activate it")
            } else {
                format!("{all} flows activate it but only {have} of them can ever run")
            };
            return Err(format!(
                "{}, target {} of {} starts with the trigger's activation number {}, and {why}: it would never start (htsim starts one target per activation, in file order)",
                flows[t as usize].origin,
                k + 1,
                shot.origin,
                k + 1
            ));
        }
    }
    unreachable!("a flow that never runs waits for a multishot target that never runs")
}

/// Per flow, how many dependencies it waits for, and the flows that wait for it.
fn dependency_graph(flows: &[DagFlow]) -> (Vec<u32>, Vec<Vec<u32>>) {
    let waiting = flows.iter().map(|f| f.deps.len() as u32).collect();
    let mut dependents: Vec<Vec<u32>> = vec![Vec::new(); flows.len()];
    for (i, f) in flows.iter().enumerate() {
        for &(d, _) in &f.deps {
            dependents[d as usize].push(i as u32);
        }
    }
    (waiting, dependents)
}

/// An order of `flows` in which every flow comes after its dependencies (the list's
/// own order where it allows), or the origin of a flow on a cycle.
pub fn topological_order(flows: &[DagFlow]) -> Result<Vec<u32>, String> {
    let n = flows.len();
    let (mut waiting, dependents) = dependency_graph(flows);
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

    fn shot(activators: &[u32], targets: &[u32]) -> MultiShot {
        MultiShot {
            activators: activators.into(),
            targets: targets.into(),
            origin: "multishot trigger 1 (line 9)".into(),
        }
    }

    #[test]
    fn a_pool_whose_targets_activate_their_own_trigger_runs_every_flow() {
        // Two flows start; each completion starts the next of three queued ones, which
        // activate the trigger too (two in flight at a time).
        let f = [flow(&[], "a"), flow(&[], "b"), flow(&[], "c"), flow(&[], "d"), flow(&[], "e")];
        assert_eq!(check_shots(&f, &[shot(&[0, 1, 2, 3, 4], &[2, 3, 4])]), Ok(()));
    }

    #[test]
    fn a_target_no_activation_is_left_for_is_named() {
        let f = [flow(&[], "line 2"), flow(&[], "line 3"), flow(&[], "line 4"), flow(&[2], "line 5")];
        let e = check_shots(&f, &[shot(&[0], &[1, 2])]).unwrap_err();
        assert!(e.starts_with("line 4, target 2 of multishot trigger 1 (line 9)"), "{e}");
        assert!(e.contains("1 flows activate it: it would never start"), "{e}");
        // A target that activates its own trigger cannot start itself.
        let e = check_shots(&f[..2], &[shot(&[1], &[1])]).unwrap_err();
        assert!(e.contains("1 flows activate it but only 0 of them can ever run"), "{e}");
    }
}
