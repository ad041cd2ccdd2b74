//! htsim connection matrices (`.cm`): the same traffic in htsim and here, like for
//! like.
//!
//! The format, as htsim's `ConnectionMatrix::load` reads it (our own parser):
//!
//! ```text
//! Nodes 16
//! Connections 3
//! Triggers 1
//! Failures 1
//! 0->1 id 1 start 0 size 2000000 send_done_trigger 1
//! 1->2 id 2 trigger 1 size 2000000
//! 3->4 id 3 start 12.5 size 64000
//! trigger id 1 oneshot
//! failure switch_type TOR switch_id 0 link_id 1
//! ```
//!
//! A connection line is `src->dst` followed by `key value` pairs: `id` (required when
//! triggers are used), `start` (microseconds, a number) or `trigger` (the trigger that
//! starts it), `size` (bytes), `send_done_trigger` / `recv_done_trigger` (the trigger
//! its completion activates) and `prio` (read and ignored: fabricsim has one data
//! class). A trigger line is `trigger id N` with `oneshot` (fires on its activation),
//! `barrier count C` (fires once C flows have activated it) or `multishot` (each
//! activation starts the next waiting flow). Header counts are checked as htsim does;
//! `#` starts a comment line.
//!
//! A `recv_done_trigger` is activated when the flow's last byte has arrived, a
//! `send_done_trigger` when the sender has it all acknowledged, as in htsim. A flow
//! activates its triggers at one of the two points, so one with both kinds is refused.
//!
//! The triggers behave as htsim's `trigger.cpp` defines them:
//! * `oneshot` starts all its flows on its activation; htsim aborts on a second
//!   activation, so one activated by more than one flow is refused.
//! * `barrier count C` starts all its flows on its C-th activation; htsim aborts on
//!   one more and never fires with fewer, so a count other than the number of flows
//!   activating it is refused.
//! * `multishot` starts its flows one per activation, in file order: the k-th flow
//!   (in time) to activate it starts its k-th flow, whichever that activator is;
//!   activations beyond its last flow start nothing (htsim prints "Noone left to
//!   activate"). A flow started by a multishot may activate it in turn (a queue of
//!   transfers with a fixed number in flight). A multishot with more flows than
//!   activations can ever reach leaves some never started, and is refused naming the
//!   first of them.
//!
//! Every trigger starts its flows at the moment it fires (htsim's
//! `triggerIsPending`), with no gap.

use super::{DagFlow, MultiShot};
use fabricsim_engine::Dur;
use std::collections::BTreeMap;

/// A trigger's kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TriggerKind {
    /// Fires on its (single) activation.
    OneShot,
    /// Each activation starts the next target.
    MultiShot,
    /// Fires after `count` activations.
    Barrier(u32),
}

/// A `failure` line: a link of a switch, down from the start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    /// `TOR`, `AGG` or `CORE`.
    pub switch_type: String,
    /// The switch's number among its type.
    pub switch_id: u32,
    /// The link's number on the switch.
    pub link_id: u32,
    /// The line it was on.
    pub line: usize,
}

/// A parsed connection matrix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConnectionMatrix {
    /// `Nodes` of the header.
    pub nodes: u32,
    /// Its flows, in file order, dependencies resolved.
    pub flows: Vec<DagFlow>,
    /// Its failure lines.
    pub failures: Vec<Failure>,
    /// Its multishot triggers (flow indices), in trigger id order.
    pub shots: Vec<MultiShot>,
}

fn num<T: std::str::FromStr>(tok: Option<&&str>, line: usize, field: &str, what: &str) -> Result<T, String> {
    let tok = tok.ok_or_else(|| format!("line {line}, {field}: missing value ({what})"))?;
    tok.parse().map_err(|_| format!("line {line}, {field}: expected {what}, got \"{tok}\""))
}

/// Parses `text`. Errors give the line and field, e.g. `line 12, size: expected a
/// number of bytes, got "2MB"`.
pub fn parse(text: &str) -> Result<ConnectionMatrix, String> {
    let mut nodes = None;
    let mut counts: BTreeMap<&str, (u64, usize)> = BTreeMap::new();
    // Per connection: src, dst, start, size, trigger, activates, line.
    struct Conn {
        src: u32,
        dst: u32,
        start: Option<Dur>,
        size: u64,
        trigger: Option<u32>,
        activates: Vec<u32>,
        /// Its triggers are send-done ones, `Some(true)`, or receive-done, `Some(false)`.
        send_done: Option<bool>,
        line: usize,
    }
    let mut conns: Vec<Conn> = Vec::new();
    let mut triggers: BTreeMap<u32, (TriggerKind, usize)> = BTreeMap::new();
    let mut failures = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let toks: Vec<&str> = raw.split_whitespace().collect();
        let Some(&first) = toks.first() else { continue };
        if first.starts_with('#') {
            continue;
        }
        match first {
            "Nodes" => nodes = Some(num::<u32>(toks.get(1), line, "Nodes", "a number of nodes")?),
            "Connections" | "Triggers" | "Failures" => {
                let c = num::<u64>(toks.get(1), line, first, "a count")?;
                counts.insert(first, (c, line));
            }
            "trigger" => {
                let mut id = None;
                let mut kind = None;
                let mut count = None;
                let mut k = 1;
                while k < toks.len() {
                    match toks[k] {
                        "id" => {
                            k += 1;
                            id = Some(num::<u32>(toks.get(k), line, "id", "a trigger id")?);
                        }
                        "count" => {
                            k += 1;
                            count = Some(num::<u32>(toks.get(k), line, "count", "a number of activations")?);
                        }
                        "oneshot" => kind = Some(TriggerKind::OneShot),
                        "multishot" => kind = Some(TriggerKind::MultiShot),
                        "barrier" => kind = Some(TriggerKind::Barrier(0)),
                        other => {
                            return Err(format!(
                                "line {line}: unknown trigger attribute \"{other}\" (allowed: id, oneshot, multishot, barrier, count)"
                            ))
                        }
                    }
                    k += 1;
                }
                let id = id.filter(|&i| i > 0).ok_or_else(|| format!("line {line}, id: a trigger needs an id above 0"))?;
                let kind = match kind {
                    None => return Err(format!("line {line}: trigger {id} has no type (oneshot, multishot or barrier)")),
                    Some(TriggerKind::Barrier(_)) => TriggerKind::Barrier(
                        count.ok_or_else(|| format!("line {line}, count: barrier trigger {id} needs a count"))?,
                    ),
                    Some(k) => k,
                };
                if triggers.insert(id, (kind, line)).is_some() {
                    return Err(format!("line {line}, id: trigger {id} is defined twice"));
                }
            }
            "failure" => {
                let mut f = Failure { switch_type: String::new(), switch_id: 0, link_id: 0, line };
                let mut k = 1;
                while k < toks.len() {
                    let key = toks[k];
                    k += 1;
                    match key {
                        "switch_type" => {
                            let t = toks.get(k).copied().unwrap_or("");
                            if !["TOR", "AGG", "CORE"].contains(&t) {
                                return Err(format!(
                                    "line {line}, switch_type: expected TOR, AGG or CORE, got \"{t}\""
                                ));
                            }
                            f.switch_type = t.to_string();
                        }
                        "switch_id" => f.switch_id = num(toks.get(k), line, "switch_id", "a switch number")?,
                        "link_id" => f.link_id = num(toks.get(k), line, "link_id", "a link number")?,
                        other => {
                            return Err(format!(
                                "line {line}: unknown failure attribute \"{other}\" (allowed: switch_type, switch_id, link_id)"
                            ))
                        }
                    }
                    k += 1;
                }
                if f.switch_type.is_empty() {
                    return Err(format!("line {line}, switch_type: a failure needs one (TOR, AGG or CORE)"));
                }
                failures.push(f);
            }
            pair if pair.contains("->") => {
                let (s, d) = pair.split_once("->").expect("contains ->");
                let src = num::<u32>(Some(&s), line, "src", "a node number before ->")?;
                let dst = num::<u32>(Some(&d), line, "dst", "a node number after ->")?;
                let mut c =
                    Conn { src, dst, start: None, size: 0, trigger: None, activates: Vec::new(), send_done: None, line };
                let mut k = 1;
                while k < toks.len() {
                    let key = toks[k];
                    k += 1;
                    let v = toks.get(k);
                    match key {
                        "id" => {
                            num::<u32>(v, line, "id", "a flow id")?;
                        }
                        "start" => {
                            let us: f64 = num(v, line, "start", "a time in microseconds")?;
                            if !(us.is_finite() && us >= 0.0) {
                                return Err(format!("line {line}, start: must be a time of 0 or more microseconds"));
                            }
                            c.start = Some(Dur::from_ps((us * 1e6).round() as u64));
                        }
                        "size" => c.size = num(v, line, "size", "a number of bytes")?,
                        "trigger" => c.trigger = Some(num(v, line, "trigger", "a trigger id")?),
                        "send_done_trigger" | "recv_done_trigger" => {
                            let send = key == "send_done_trigger";
                            if c.send_done.is_some_and(|s| s != send) {
                                return Err(format!(
                                    "line {line}: the flow has both a send_done_trigger and a recv_done_trigger; fabricsim releases what waits for a flow at one point, its acknowledgement (send done) or its arrival (receive done)"
                                ));
                            }
                            c.send_done = Some(send);
                            c.activates.push(num(v, line, key, "a trigger id")?)
                        }
                        "prio" => {
                            num::<i64>(v, line, "prio", "a priority")?;
                        }
                        other => {
                            return Err(format!(
                                "line {line}: unknown connection attribute \"{other}\" (allowed: id, start, size, trigger, send_done_trigger, recv_done_trigger, prio)"
                            ))
                        }
                    }
                    k += 1;
                }
                match (c.start, c.trigger) {
                    (None, None) => return Err(format!("line {line}: the flow has neither a start nor a trigger")),
                    (Some(_), Some(_)) => return Err(format!("line {line}: the flow has both a start and a trigger")),
                    _ => {}
                }
                if c.size == 0 {
                    return Err(format!("line {line}, size: a flow needs a size of at least 1 byte"));
                }
                if src == dst {
                    return Err(format!("line {line}: a flow needs two different nodes, got {src}->{dst}"));
                }
                conns.push(c);
            }
            other => {
                return Err(format!(
                    "line {line}: unknown line \"{other}\" (expected Nodes, Connections, Triggers, Failures, src->dst, trigger or failure)"
                ))
            }
        }
    }
    let nodes = nodes.ok_or("no \"Nodes N\" line")?;
    for (what, have) in [("Connections", conns.len()), ("Triggers", triggers.len()), ("Failures", failures.len())] {
        if let Some(&(c, line)) = counts.get(what) {
            if c != have as u64 {
                return Err(format!("line {line}, {what}: says {c} but the file has {have}"));
            }
        }
    }
    for c in &conns {
        for (h, side) in [(c.src, "src"), (c.dst, "dst")] {
            if h >= nodes {
                return Err(format!(
                    "line {}, {side}: node {h} does not exist (Nodes {nodes}: 0..{})",
                    c.line,
                    nodes - 1
                ));
            }
        }
    }
    // Who activates each trigger, who waits for it.
    let mut activators: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    let mut targets: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for (i, c) in conns.iter().enumerate() {
        for &t in &c.activates {
            activators.entry(t).or_default().push(i as u32);
        }
        if let Some(t) = c.trigger {
            targets.entry(t).or_default().push(i as u32);
        }
    }
    for (&t, flows) in activators.iter().chain(targets.iter()) {
        if !triggers.contains_key(&t) {
            return Err(format!("line {}: trigger {t} is used but never defined", conns[flows[0] as usize].line));
        }
    }
    let mut deps: Vec<Vec<(u32, Dur)>> = vec![Vec::new(); conns.len()];
    let mut shots = Vec::new();
    for (&t, &(kind, line)) in &triggers {
        let act = activators.get(&t).cloned().unwrap_or_default();
        let tgt = targets.get(&t).cloned().unwrap_or_default();
        if tgt.is_empty() {
            continue;
        }
        let on = match kind {
            TriggerKind::OneShot if act.len() == 1 => act,
            TriggerKind::OneShot => {
                return Err(format!(
                    "line {line}: oneshot trigger {t} is activated by {} flows (htsim fires a oneshot once and aborts on a second activation; use a barrier)",
                    act.len()
                ))
            }
            TriggerKind::Barrier(n) if n as usize == act.len() => act,
            TriggerKind::Barrier(n) => {
                return Err(format!(
                    "line {line}, count: barrier trigger {t} waits for {n} activations but {} flows activate it (it would fire {}): set count = {}",
                    act.len(),
                    if (n as usize) > act.len() { "never" } else { "at a time that depends on which finish first" },
                    act.len()
                ))
            }
            TriggerKind::MultiShot => {
                shots.push(MultiShot { activators: act, targets: tgt, origin: format!("multishot trigger {t} (line {line})") });
                continue;
            }
        };
        for &g in &tgt {
            deps[g as usize].extend(on.iter().map(|&a| (a, Dur::ZERO)));
        }
    }
    let flows = conns
        .iter()
        .zip(deps)
        .map(|(c, deps)| DagFlow {
            src: c.src,
            dst: c.dst,
            size: c.size,
            start: c.start.unwrap_or(Dur::ZERO),
            deps,
            on_ack: c.send_done == Some(true),
            origin: format!("line {}", c.line),
        })
        .collect::<Vec<_>>();
    super::check_shots(&flows, &shots)?;
    Ok(ConnectionMatrix { nodes, flows, failures, shots })
}

#[cfg(test)]
mod tests {
    use super::*;

    const RING: &str = "# a 3-node triggered ring\nNodes 4\nConnections 3\nTriggers 2\n\
        0->1 id 1 start 1.5 size 1000 send_done_trigger 1\n\
        1->2 id 2 trigger 1 size 1000 recv_done_trigger 2 prio 3\n\
        2->0 id 3 trigger 2 size 1000\n\
        trigger id 1 oneshot\ntrigger id 2 oneshot\n";

    #[test]
    fn a_triggered_ring_becomes_a_chain() {
        let cm = parse(RING).unwrap();
        assert_eq!(cm.nodes, 4);
        assert_eq!(cm.flows.len(), 3);
        assert_eq!(cm.flows[0].start, Dur::from_ns(1500));
        assert_eq!(cm.flows[1].deps, vec![(0, Dur::ZERO)]);
        assert_eq!(cm.flows[2].deps, vec![(1, Dur::ZERO)]);
        assert_eq!(cm.flows[2].origin, "line 7");
        // Flow 1's trigger counts its acknowledgement, flow 2's its arrival.
        assert_eq!(cm.flows.iter().map(|f| f.on_ack).collect::<Vec<_>>(), [true, false, false]);
    }

    #[test]
    fn a_flow_with_both_kinds_of_trigger_is_refused() {
        let e = parse(
            "Nodes 3
0->1 id 1 start 0 size 5 send_done_trigger 1 recv_done_trigger 2
",
        )
        .unwrap_err();
        assert!(e.starts_with("line 2: the flow has both a send_done_trigger and a recv_done_trigger"), "{e}");
    }

    #[test]
    fn a_barrier_waits_for_every_activation() {
        let cm = parse(
            "Nodes 3\n0->2 id 1 start 0 size 5 send_done_trigger 9\n1->2 id 2 start 0 size 5 send_done_trigger 9\n\
             2->0 id 3 trigger 9 size 5\ntrigger id 9 barrier count 2\nfailure switch_type AGG switch_id 1 link_id 2\n",
        )
        .unwrap();
        assert_eq!(cm.flows[2].deps, vec![(0, Dur::ZERO), (1, Dur::ZERO)]);
        assert_eq!(cm.failures[0], Failure { switch_type: "AGG".into(), switch_id: 1, link_id: 2, line: 6 });
    }

    #[test]
    fn a_multishot_starts_its_flows_in_file_order_one_per_activation() {
        let cm = parse(
            "Nodes 4\nTriggers 1\n0->1 id 1 start 0 size 5 send_done_trigger 7\n2->1 id 2 start 0 size 5 send_done_trigger 7\n\
             1->3 id 3 trigger 7 size 5 recv_done_trigger 7\n3->0 id 4 trigger 7 size 5\ntrigger id 7 multishot\n",
        )
        .unwrap();
        assert_eq!(
            cm.shots,
            vec![MultiShot {
                activators: vec![0, 1, 2],
                targets: vec![2, 3],
                origin: "multishot trigger 7 (line 7)".into()
            }]
        );
        // Its flows wait for the trigger alone, not for a particular flow.
        assert!(cm.flows.iter().all(|f| f.deps.is_empty()));
    }

    #[test]
    fn bad_files_name_the_line_and_field() {
        let e = |t: &str| parse(t).unwrap_err();
        assert_eq!(e("Nodes 4\n0->1 start 0 size 2MB\n"), "line 2, size: expected a number of bytes, got \"2MB\"");
        assert_eq!(e("Nodes 4\n0->9 start 0 size 5\n"), "line 2, dst: node 9 does not exist (Nodes 4: 0..3)");
        assert_eq!(
            e("Nodes 4\nConnections 2\n0->1 start 0 size 5\n"),
            "line 2, Connections: says 2 but the file has 1"
        );
        assert!(e("Nodes 4\n0->1 size 5\n").contains("neither a start nor a trigger"));
        assert!(e("Nodes 4\n0->1 id 1 trigger 3 size 5\n").contains("trigger 3 is used but never defined"));
        assert!(e("Nodes 4\n0->1 start 0 size 5 colour red\n")
            .starts_with("line 2: unknown connection attribute \"colour\""));
        let two =
            "Nodes 4\n0->1 id 1 start 0 size 5 send_done_trigger 1\n2->1 id 2 start 0 size 5 send_done_trigger 1\n\
                   1->3 id 3 trigger 1 size 5\n";
        assert!(e(&format!("{two}trigger id 1 oneshot\n")).contains("activated by 2 flows"));
        assert!(e(&format!("{two}trigger id 1 barrier count 3\n")).contains("would fire never"));
        let e3 = e(&format!("{two}2->0 id 4 trigger 1 size 5\n2->3 id 5 trigger 1 size 5\ntrigger id 1 multishot\n"));
        assert!(e3.starts_with("line 6, target 3 of multishot trigger 1 (line 7)"), "{e3}");
        assert!(e("Nodes 4\nfailure switch_type SPINE\n").starts_with("line 2, switch_type: expected TOR, AGG or CORE"));
    }
}
