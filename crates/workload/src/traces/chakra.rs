//! Chakra execution traces, replayed as a job.
//!
//! A Chakra trace is one file per rank (`<prefix>.<rank>.et`): protobuf records, each
//! preceded by its length as a varint, the first a `GlobalMetadata` and every other a
//! `Node`. fabricsim reads them with its own decoder and schema, using Chakra's field
//! numbers and types (`et_def.proto`; the wire format is a fact, the code is ours):
//!
//! | `Node` field | number | used as |
//! |---|---|---|
//! | `id` | 1 | the node's id within its rank |
//! | `name` | 2 | in errors |
//! | `type` | 3 | `COMP_NODE` (4), `COMM_SEND_NODE` (5), `COMM_RECV_NODE` (6), `COMM_COLL_NODE` (7); others pass their dependencies through |
//! | `ctrl_deps`, `data_deps` | 4, 5 | nodes of the same rank that must be done first |
//! | `duration_micros` | 7 | a compute node's time |
//! | `attr` | 10 | `AttributeProto` (`name` 1; values `int32` 7, `int64` 9, `uint32` 11, `uint64` 13, `sint32` 15, `sint64` 17, `bool` 27, `string` 29) |
//!
//! Attributes: `comm_type` (a `CollectiveCommType`: `ALL_REDUCE` 0, `REDUCE` 1,
//! `ALL_GATHER` 2, `GATHER` 3, `SCATTER` 4, `BROADCAST` 5, `ALL_TO_ALL` 6,
//! `REDUCE_SCATTER` 7 and `REDUCE_SCATTER_BLOCK` 8, `BARRIER` 9), `comm_size` (bytes,
//! as nccl-tests counts a collective's size, the root's whole buffer for gather and
//! scatter; a send's bytes), `comm_src` / `comm_dst` (the
//! peer rank of a receive / send), `comm_tag` (matches a send with a receive), `pg_name`
//! (the process group of a collective; none: every rank), and the root of a broadcast,
//! reduce, gather or scatter (below).
//!
//! Roots: `et_def.proto` has no root field and Chakra's converters write no root
//! attribute, so a rooted collective's root is read, when the trace has it, from an
//! integer attribute of its nodes: `root`, else the attribute Chakra names the data's
//! end with, `comm_src` for a broadcast or scatter (where the data comes from) and
//! `comm_dst` for a reduce or gather (where it goes). Like a send's `comm_dst`, it is a
//! rank of the trace (a global rank, not one within the process group); every member's
//! node must name the same one, and it must be a member. Without one the collective
//! is rooted at the group's lowest rank (its rank 0).
//!
//! Replay: a node starts once its dependencies are done. A compute node is done its
//! duration later (compute nodes do not queue behind each other: the trace's own
//! dependencies order them). A send becomes a message from its rank's host to its
//! peer's, done when received; the receive it matches (the k-th receive from that rank
//! with that tag matches the k-th such send) is done when both its own dependencies
//! and the message are. The k-th collective of a process group on each of its ranks
//! is one collective, expanded as fabricsim's collectives are (each rank entering when
//! its node's dependencies are done), rooted as above. A trace whose dependencies (within a rank or
//! through messages and collectives) form a cycle is refused before running, naming
//! a node on it.

use super::protobuf::{self, Field};
use crate::builder::Builder;
use crate::collectives::{self, CollectiveKind, CollectiveOp, Ctx};
use crate::{invalid, IterationRecord, JobRecord, TimePoint, WorkloadError};
use fabricsim_engine::Dur;
use std::collections::{BTreeMap, VecDeque};

/// What a node does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NodeKind {
    /// Compute for its duration.
    Compute,
    /// Send `size` bytes to rank `peer`.
    Send,
    /// Receive from rank `peer`.
    Recv,
    /// Take part in a collective.
    Collective(CollectiveKind),
    /// Anything else: done when its dependencies are.
    Other,
}

/// One node of a rank's trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Node {
    /// Its id.
    pub id: u64,
    /// Its name.
    pub name: String,
    /// What it does.
    pub kind: NodeKind,
    /// Ids of the nodes it waits for (control and data dependencies).
    pub deps: Vec<u64>,
    /// A compute node's time.
    pub duration: Dur,
    /// Bytes of a send or collective.
    pub size: u64,
    /// The peer rank of a send or receive.
    pub peer: u32,
    /// The tag matching a send with a receive.
    pub tag: i64,
    /// A collective's process group.
    pub group: String,
    /// A rooted collective's root (a rank of the trace), if the node names one, and
    /// the attribute that does (`root`, `comm_src` or `comm_dst`).
    pub root: Option<(u32, &'static str)>,
    /// Its record number in the file (the metadata is record 1).
    pub record: usize,
}

/// A signed integer attribute value (protobuf's int32/int64 are two's complement
/// varints, sint zig-zag).
fn attr_int(f: &Field<'_>) -> Option<i64> {
    match *f {
        Field::Varint(7 | 9 | 11 | 13 | 27, v) => Some(v as i64),
        Field::Varint(15 | 17, v) => Some(((v >> 1) as i64) ^ -((v & 1) as i64)),
        _ => None,
    }
}

/// Decodes one rank's file. Errors give the record number and the field.
pub fn parse(bytes: &[u8]) -> Result<Vec<Node>, String> {
    let records = protobuf::records(bytes).map_err(|(i, e)| format!("record {}: {e}", i + 1))?;
    let mut nodes = Vec::new();
    for (i, rec) in records.iter().enumerate() {
        let record = i + 1;
        let at = |field: &str, m: String| format!("record {record}, field {field}: {m}");
        let fields = protobuf::fields(rec).map_err(|e| format!("record {record}: {e}"))?;
        // The metadata record: its field 1 is the version string, a node's its id.
        if i == 0 && matches!(fields.first(), Some(Field::Bytes(1, _))) {
            continue;
        }
        let mut n = Node {
            id: u64::MAX,
            name: String::new(),
            kind: NodeKind::Other,
            deps: Vec::new(),
            duration: Dur::ZERO,
            size: 0,
            peer: u32::MAX,
            tag: 0,
            group: String::new(),
            root: None,
            record,
        };
        let mut ty = 0;
        let mut attrs: BTreeMap<String, (Option<i64>, Option<String>)> = BTreeMap::new();
        for f in &fields {
            match f {
                Field::Varint(1, v) => n.id = *v,
                Field::Bytes(2, b) => n.name = String::from_utf8_lossy(b).into_owned(),
                Field::Varint(3, v) => ty = *v,
                Field::Varint(4 | 5, _) | Field::Bytes(4 | 5, _) => {
                    n.deps.extend(protobuf::packed(f).map_err(|e| at("ctrl_deps/data_deps", e))?)
                }
                Field::Varint(7, v) => {
                    n.duration =
                        Dur::from_ps(v.checked_mul(1_000_000).ok_or_else(|| at("duration_micros", "too long".into()))?)
                }
                Field::Bytes(10, b) => {
                    let af = protobuf::fields(b).map_err(|e| at("attr", e))?;
                    let name = af.iter().find_map(|x| match x {
                        Field::Bytes(1, s) => Some(String::from_utf8_lossy(s).into_owned()),
                        _ => None,
                    });
                    let Some(name) = name else { continue };
                    let int = af.iter().find_map(attr_int);
                    let text = af.iter().find_map(|x| match x {
                        Field::Bytes(29, s) => Some(String::from_utf8_lossy(s).into_owned()),
                        _ => None,
                    });
                    attrs.insert(name, (int, text));
                }
                _ => {}
            }
        }
        if n.id == u64::MAX {
            return Err(at("id", "missing (every node needs an id)".into()));
        }
        let int = |k: &str| attrs.get(k).and_then(|a| a.0);
        let need = |k: &str, what: &str| {
            int(k).ok_or_else(|| format!("record {record} (node {}), field attr {k}: missing ({what})", n.id))
        };
        n.kind = match ty {
            4 => NodeKind::Compute,
            5 | 6 => {
                let (peer_key, what) =
                    if ty == 5 { ("comm_dst", "the receiving rank") } else { ("comm_src", "the sending rank") };
                let peer = need(peer_key, what)?;
                n.peer = u32::try_from(peer).map_err(|_| {
                    format!("record {record} (node {}), field attr {peer_key}: {peer} is not a rank", n.id)
                })?;
                n.tag = int("comm_tag").unwrap_or(0);
                if ty == 5 {
                    n.size = need("comm_size", "bytes sent")?.max(0) as u64;
                    if n.size == 0 {
                        return Err(format!(
                            "record {record} (node {}), field attr comm_size: a send needs at least 1 byte",
                            n.id
                        ));
                    }
                    NodeKind::Send
                } else {
                    n.size = int("comm_size").unwrap_or(0).max(0) as u64;
                    NodeKind::Recv
                }
            }
            7 => {
                let t = need("comm_type", "the collective")?;
                let kind = match t {
                    0 => CollectiveKind::AllReduce,
                    1 => CollectiveKind::Reduce,
                    2 => CollectiveKind::AllGather,
                    3 => CollectiveKind::Gather,
                    4 => CollectiveKind::Scatter,
                    5 => CollectiveKind::Broadcast,
                    6 => CollectiveKind::AllToAll,
                    7 | 8 => CollectiveKind::ReduceScatter,
                    9 => CollectiveKind::Barrier,
                    other => {
                        return Err(format!(
                            "record {record} (node {}), field attr comm_type: unknown value {other}",
                            n.id
                        ))
                    }
                };
                n.size = if kind == CollectiveKind::Barrier { 0 } else { need("comm_size", "bytes")?.max(0) as u64 };
                n.group = attrs.get("pg_name").and_then(|a| a.1.clone()).unwrap_or_default();
                let end = match kind {
                    CollectiveKind::Broadcast | CollectiveKind::Scatter => Some("comm_src"),
                    CollectiveKind::Reduce | CollectiveKind::Gather => Some("comm_dst"),
                    CollectiveKind::AllReduce
                    | CollectiveKind::AllGather
                    | CollectiveKind::ReduceScatter
                    | CollectiveKind::AllToAll
                    | CollectiveKind::AllToAllV
                    | CollectiveKind::Barrier => None,
                };
                if let Some(end) = end {
                    if let Some((key, v)) = ["root", end].into_iter().find_map(|k| int(k).map(|v| (k, v))) {
                        let r = u32::try_from(v).map_err(|_| {
                            format!("record {record} (node {}), field attr {key}: {v} is not a rank", n.id)
                        })?;
                        n.root = Some((r, key));
                    }
                }
                NodeKind::Collective(kind)
            }
            0 => return Err(at("type", "INVALID_NODE (0)".into())),
            1..=3 | 8..=10 => NodeKind::Other,
            other => return Err(at("type", format!("unknown node type {other}"))),
        };
        nodes.push(n);
    }
    Ok(nodes)
}

/// Writes one rank's trace in Chakra's format (the metadata record, then the nodes):
/// for tests and for making small traces.
pub fn encode(nodes: &[Node]) -> Vec<u8> {
    let mut out = protobuf::Writer::default();
    let mut meta = protobuf::Writer::default();
    meta.bytes(1, b"0.0.4");
    out.record(&meta.buf);
    for n in nodes {
        let mut w = protobuf::Writer::default();
        w.varint(1, n.id);
        w.bytes(2, n.name.as_bytes());
        let attr = |name: &str, v: i64, w: &mut protobuf::Writer| {
            let mut a = protobuf::Writer::default();
            a.bytes(1, name.as_bytes());
            a.varint(9, v as u64);
            w.bytes(10, &a.buf);
        };
        let ty = match &n.kind {
            NodeKind::Compute => 4,
            NodeKind::Send => 5,
            NodeKind::Recv => 6,
            NodeKind::Collective(_) => 7,
            NodeKind::Other => 1,
        };
        w.varint(3, ty);
        w.packed(5, &n.deps);
        if n.duration > Dur::ZERO {
            w.varint(7, n.duration.ps() / 1_000_000);
        }
        match &n.kind {
            NodeKind::Send | NodeKind::Recv => {
                attr(if n.kind == NodeKind::Send { "comm_dst" } else { "comm_src" }, n.peer as i64, &mut w);
                attr("comm_size", n.size as i64, &mut w);
                attr("comm_tag", n.tag, &mut w);
            }
            NodeKind::Collective(k) => {
                let t = match k {
                    CollectiveKind::AllReduce => 0,
                    CollectiveKind::Reduce => 1,
                    CollectiveKind::AllGather => 2,
                    CollectiveKind::Gather => 3,
                    CollectiveKind::Scatter => 4,
                    CollectiveKind::Broadcast => 5,
                    CollectiveKind::AllToAll | CollectiveKind::AllToAllV => 6,
                    CollectiveKind::ReduceScatter => 7,
                    CollectiveKind::Barrier => 9,
                };
                attr("comm_type", t, &mut w);
                attr("comm_size", n.size as i64, &mut w);
                if let Some((root, key)) = n.root {
                    attr(key, root as i64, &mut w);
                }
                if !n.group.is_empty() {
                    let mut a = protobuf::Writer::default();
                    a.bytes(1, b"pg_name");
                    a.bytes(29, n.group.as_bytes());
                    w.bytes(10, &a.buf);
                }
            }
            _ => {}
        }
        out.record(&w.buf);
    }
    out.buf
}

/// A trace taken at N ranks as `copies` copies side by side, on `copies x N` ranks:
/// copy `j`'s rank `r` is rank `j N + r`, with the nodes of the trace's rank `r`
/// (file names `llm.3.et (copy 1)` in errors).
///
/// Sends and receives stay within a copy (a pipeline's stages are copied with it).
/// A collective of a process group named in `span` (`None`: every group that has all
/// N ranks, such as the collectives without a `pg_name`) spans every copy: the
/// group's ranks in all copies run it together, each rank's buffer as in the trace
/// (all-gather, reduce-scatter, gather and scatter, whose nccl-tests size counts a part
/// per rank, grow `copies` times; the others keep their size), rooted where the trace
/// roots it (copy 0's rank). This is data parallelism scaled out: a trace of one
/// data-parallel group, or of a job whose data-parallel groups are named, replays
/// as the same job with `copies` times the data-parallel degree. Every other group's
/// collectives stay within each copy (tensor and pipeline parallel groups, renamed
/// `<name> (copy j)`). A name in `span` that no collective uses is refused.
pub fn replicate(
    ranks: Vec<(String, Vec<Node>)>,
    copies: u32,
    span: Option<&[String]>,
) -> Result<Vec<(String, Vec<Node>)>, String> {
    let n = ranks.len();
    let mut members: BTreeMap<&str, Vec<bool>> = BTreeMap::new();
    for (r, (_, nodes)) in ranks.iter().enumerate() {
        for node in nodes {
            if let NodeKind::Collective(_) = node.kind {
                members.entry(&node.group).or_insert_with(|| vec![false; n])[r] = true;
            }
        }
    }
    let spanned: Vec<String> = match span {
        Some(names) => {
            for g in names {
                if !members.contains_key(g.as_str()) {
                    let have: Vec<String> = members.keys().map(|k| format!("\"{k}\"")).collect();
                    return Err(format!(
                        "process group \"{g}\" has no collective in the trace (its groups: {})",
                        if have.is_empty() { "none".to_string() } else { have.join(", ") }
                    ));
                }
            }
            names.to_vec()
        }
        None => members.iter().filter(|(_, m)| m.iter().all(|&x| x)).map(|(g, _)| g.to_string()).collect(),
    };
    if copies <= 1 {
        return Ok(ranks);
    }
    let mut out = Vec::with_capacity(n * copies as usize);
    for j in 0..copies {
        let shift = j * n as u32;
        for (file, nodes) in &ranks {
            let file = if j == 0 { file.clone() } else { format!("{file} (copy {j})") };
            let nodes = nodes
                .iter()
                .map(|node| {
                    let mut c = node.clone();
                    match c.kind {
                        NodeKind::Send | NodeKind::Recv => c.peer += shift,
                        NodeKind::Collective(kind) if spanned.contains(&c.group) => {
                            c.size *= match kind {
                                CollectiveKind::AllGather
                                | CollectiveKind::ReduceScatter
                                | CollectiveKind::Gather
                                | CollectiveKind::Scatter => copies as u64,
                                CollectiveKind::AllReduce
                                | CollectiveKind::Reduce
                                | CollectiveKind::Broadcast
                                | CollectiveKind::AllToAll
                                | CollectiveKind::AllToAllV
                                | CollectiveKind::Barrier => 1,
                            };
                        }
                        NodeKind::Collective(_) => {
                            if j > 0 {
                                c.group = format!("{} (copy {j})", c.group);
                            }
                            if let Some((root, _)) = &mut c.root {
                                *root += shift;
                            }
                        }
                        NodeKind::Compute | NodeKind::Other => {}
                    }
                    c
                })
                .collect();
            out.push((file, nodes));
        }
    }
    Ok(out)
}

/// A trace to replay: each rank's file name (for errors), nodes and host.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trace {
    /// Per rank: its file's name, its nodes, its host.
    pub ranks: Vec<(String, Vec<Node>, u32)>,
    /// The scenario key it comes from (`workload[0].trace`).
    pub key: String,
}

impl Trace {
    fn error(&self, r: usize, n: &Node, m: String) -> WorkloadError {
        invalid(self.key.clone(), format!("{}, record {} (node {}): {m}", self.ranks[r].0, n.record, n.id))
    }
}

/// A collective instance: its group, its kind and size, each member's node.
struct Instance {
    kind: CollectiveKind,
    size: u64,
    members: Vec<(usize, usize)>,
    /// A rooted collective's root: its position among `members`.
    root: u32,
}

/// Appends `trace`'s messages and collectives, starting at `start`; returns it as a
/// job of one iteration (the whole trace).
pub(crate) fn build(
    b: &mut Builder,
    trace: &Trace,
    j: u32,
    name: &str,
    start: Dur,
    auto_channels: u32,
) -> Result<JobRecord, WorkloadError> {
    let nr = trace.ranks.len();
    // Each rank's ids to positions, and its dependencies as positions.
    let mut deps: Vec<Vec<Vec<usize>>> = Vec::with_capacity(nr);
    for (r, (_, nodes, _)) in trace.ranks.iter().enumerate() {
        let mut pos: BTreeMap<u64, usize> = BTreeMap::new();
        for (i, n) in nodes.iter().enumerate() {
            if pos.insert(n.id, i).is_some() {
                return Err(trace.error(r, n, "field id: a second node with this id".into()));
            }
        }
        let mut d = Vec::with_capacity(nodes.len());
        for n in nodes {
            let mut v = Vec::with_capacity(n.deps.len());
            for id in &n.deps {
                v.push(*pos.get(id).ok_or_else(|| {
                    trace.error(r, n, format!("field ctrl_deps/data_deps: node {id} is not in this rank's trace"))
                })?);
            }
            if matches!(n.kind, NodeKind::Send | NodeKind::Recv) && n.peer as usize >= nr {
                let field = if n.kind == NodeKind::Send { "comm_dst" } else { "comm_src" };
                return Err(trace.error(
                    r,
                    n,
                    format!("field attr {field}: rank {} does not exist (the trace has {nr} ranks)", n.peer),
                ));
            }
            d.push(v);
        }
        deps.push(d);
    }
    // Sends matched with receives, in order per (sender, receiver, tag).
    let mut sends: BTreeMap<(usize, usize, i64), VecDeque<usize>> = BTreeMap::new();
    for (r, (_, nodes, _)) in trace.ranks.iter().enumerate() {
        for (i, n) in nodes.iter().enumerate() {
            if n.kind == NodeKind::Send {
                sends.entry((r, n.peer as usize, n.tag)).or_default().push_back(i);
            }
        }
    }
    let mut recv_of_send: BTreeMap<(usize, usize), (usize, usize)> = BTreeMap::new();
    let mut send_of_recv: BTreeMap<(usize, usize), (usize, usize)> = BTreeMap::new();
    for (r, (_, nodes, _)) in trace.ranks.iter().enumerate() {
        for (i, n) in nodes.iter().enumerate() {
            if n.kind == NodeKind::Recv {
                let s = sends.get_mut(&(n.peer as usize, r, n.tag)).and_then(|q| q.pop_front()).ok_or_else(|| {
                    trace.error(r, n, format!("a receive from rank {} with tag {} that no send matches", n.peer, n.tag))
                })?;
                recv_of_send.insert((n.peer as usize, s), (r, i));
                send_of_recv.insert((r, i), (n.peer as usize, s));
            }
        }
    }
    if let Some((&(r, _, tag), q)) = sends.iter().find(|(_, q)| !q.is_empty()) {
        let n = &trace.ranks[r].1[q[0]];
        return Err(trace.error(r, n, format!("a send to rank {} with tag {tag} that no receive matches", n.peer)));
    }
    // Collective instances: the k-th of a group on each of its ranks.
    let mut by_group: BTreeMap<&str, Vec<Vec<usize>>> = BTreeMap::new();
    for (r, (_, nodes, _)) in trace.ranks.iter().enumerate() {
        for (i, n) in nodes.iter().enumerate() {
            if let NodeKind::Collective(_) = n.kind {
                let g = by_group.entry(&n.group).or_insert_with(|| vec![Vec::new(); nr]);
                g[r].push(i);
            }
        }
    }
    let mut instances: Vec<Instance> = Vec::new();
    let mut instance_of: BTreeMap<(usize, usize), usize> = BTreeMap::new();
    for (group, per_rank) in &by_group {
        let members: Vec<usize> = (0..nr).filter(|&r| !per_rank[r].is_empty()).collect();
        let count = per_rank[members[0]].len();
        for &r in &members {
            if per_rank[r].len() != count {
                let n = &trace.ranks[r].1[per_rank[r][0]];
                return Err(trace.error(
                    r,
                    n,
                    format!(
                        "rank {r} takes part in {} collectives of process group \"{group}\", rank {} in {count}: they cannot be matched",
                        per_rank[r].len(),
                        members[0]
                    ),
                ));
            }
        }
        // The k-th of every member rank: indexes each rank's list, not one.
        #[allow(clippy::needless_range_loop)]
        for k in 0..count {
            let first = &trace.ranks[members[0]].1[per_rank[members[0]][k]];
            let NodeKind::Collective(kind) = first.kind else { unreachable!("collective nodes") };
            for &r in &members {
                let n = &trace.ranks[r].1[per_rank[r][k]];
                if n.kind != first.kind || n.size != first.size {
                    return Err(trace.error(
                        r,
                        n,
                        format!(
                            "collective {k} of process group \"{group}\" differs from rank {}'s ({:?} of {} bytes against {:?} of {})",
                            members[0], n.kind, n.size, first.kind, first.size
                        ),
                    ));
                }
                instance_of.insert((r, per_rank[r][k]), instances.len());
            }
            // The root, as every member names it (none: the group's first rank).
            let mut root = 0;
            if let Some((want, key)) = first.root {
                root = members.iter().position(|&r| r == want as usize).ok_or_else(|| {
                    trace.error(
                        members[0],
                        first,
                        format!(
                            "field attr {key}: rank {want} is not in process group \"{group}\" (its ranks: {})",
                            members.iter().map(|r| r.to_string()).collect::<Vec<_>>().join(", ")
                        ),
                    )
                })? as u32;
            }
            for &r in &members {
                let n = &trace.ranks[r].1[per_rank[r][k]];
                if n.root.map(|x| x.0) != first.root.map(|x| x.0) {
                    let says = |x: Option<(u32, &str)>| match x {
                        Some((v, key)) => format!("rank {v} ({key})"),
                        None => "none".to_string(),
                    };
                    return Err(trace.error(
                        r,
                        n,
                        format!(
                            "field attr {}: collective {k} of process group \"{group}\" names root {} here and {} on rank {}",
                            n.root.or(first.root).map_or("root", |x| x.1),
                            says(n.root),
                            says(first.root),
                            members[0]
                        ),
                    ));
                }
            }
            instances.push(Instance {
                kind,
                size: first.size,
                members: members.iter().map(|&r| (r, per_rank[r][k])).collect(),
                root,
            });
        }
    }
    // Replay in dependency order.
    let host = |r: usize| trace.ranks[r].2;
    let t0 = TimePoint::at(start);
    let mut waiting: Vec<Vec<usize>> = deps.iter().map(|d| d.iter().map(|v| v.len()).collect()).collect();
    let mut dependents: Vec<Vec<Vec<usize>>> = deps.iter().map(|d| vec![Vec::new(); d.len()]).collect();
    for (r, d) in deps.iter().enumerate() {
        for (i, v) in d.iter().enumerate() {
            for &x in v {
                dependents[r][x].push(i);
            }
        }
    }
    // A receive also waits for its send.
    for &(r, i) in send_of_recv.keys() {
        waiting[r][i] += 1;
    }
    let mut done: Vec<Vec<Option<TimePoint>>> = deps.iter().map(|d| vec![None; d.len()]).collect();
    let mut sent: BTreeMap<(usize, usize), u32> = BTreeMap::new();
    let mut ready_members = vec![0usize; instances.len()];
    let mut queue: VecDeque<(usize, usize)> = VecDeque::new();
    for (r, w) in waiting.iter().enumerate() {
        queue.extend(w.iter().enumerate().filter(|(_, &c)| c == 0).map(|(i, _)| (r, i)));
    }
    let mut rec = IterationRecord::default();
    let mut processed = 0usize;
    let total: usize = deps.iter().map(|d| d.len()).sum();
    let entry_of = |done: &Vec<Vec<Option<TimePoint>>>, r: usize, i: usize| -> TimePoint {
        deps[r][i].iter().fold(t0.clone(), |acc, &x| acc.max(done[r][x].as_ref().expect("dependencies first")))
    };
    while let Some((r, i)) = queue.pop_front() {
        let n = &trace.ranks[r].1[i];
        let mut finished: Vec<(usize, usize, TimePoint)> = Vec::new();
        match &n.kind {
            NodeKind::Compute => {
                let e = entry_of(&done, r, i).plus(n.duration);
                finished.push((r, i, b.collapse(host(r), e)));
            }
            NodeKind::Other => finished.push((r, i, b.collapse(host(r), entry_of(&done, r, i)))),
            NodeKind::Send => {
                let entry = b.collapse(host(r), entry_of(&done, r, i));
                let (pr, _) = recv_of_send[&(r, i)];
                let m = if host(r) == host(pr) {
                    b.local(host(r), &entry, &[])
                } else {
                    let c = b.shared_conn(u32::MAX, host(r), host(pr), 0, None);
                    let m = b.message(c, n.size, &entry, &[], None);
                    rec.transfers.push(m);
                    m
                };
                sent.insert((r, i), m);
                finished.push((r, i, TimePoint::received(&[m])));
                // Its receive no longer waits for it.
                let (pr, pi) = recv_of_send[&(r, i)];
                waiting[pr][pi] -= 1;
                if waiting[pr][pi] == 0 {
                    queue.push_back((pr, pi));
                }
            }
            NodeKind::Recv => {
                let m = sent[&send_of_recv[&(r, i)]];
                let e = entry_of(&done, r, i).max(&TimePoint::received(&[m]));
                finished.push((r, i, b.collapse(host(r), e)));
            }
            NodeKind::Collective(_) => {
                let k = instance_of[&(r, i)];
                ready_members[k] += 1;
                let inst = &instances[k];
                if ready_members[k] == inst.members.len() {
                    let entry: Vec<TimePoint> =
                        inst.members.iter().map(|&(mr, mi)| b.collapse(host(mr), entry_of(&done, mr, mi))).collect();
                    let hosts: Vec<u32> = inst.members.iter().map(|&(mr, _)| host(mr)).collect();
                    let mut op = CollectiveOp::new(inst.kind, inst.size);
                    op.root = inst.root;
                    if inst.kind == CollectiveKind::AllToAll {
                        // Chakra's size is a rank's whole buffer; ours is per pair.
                        op.size = (inst.size / hosts.len() as u64).max(1);
                    }
                    let field = format!("{} ({}, record {})", trace.key, trace.ranks[r].0, n.record);
                    let cx = Ctx { comm: k as u32, field: &field, auto_channels, job: Some((j, 0)) };
                    let ends = collectives::expand(b, &op, &hosts, &entry, &cx)?;
                    rec.collectives.push(b.plan.collectives.len() as u32 - 1);
                    for (&(mr, mi), e) in inst.members.iter().zip(ends) {
                        finished.push((mr, mi, b.collapse(host(mr), e)));
                    }
                }
            }
        }
        for (fr, fi, tp) in finished {
            done[fr][fi] = Some(tp);
            processed += 1;
            for &d in &dependents[fr][fi] {
                waiting[fr][d] -= 1;
                if waiting[fr][d] == 0 {
                    queue.push_back((fr, d));
                }
            }
        }
    }
    if processed < total {
        // Something waits for ever: name a node that never became ready.
        let (r, i) = (0..nr)
            .flat_map(|r| (0..done[r].len()).map(move |i| (r, i)))
            .find(|&(r, i)| done[r][i].is_none())
            .expect("an unprocessed node");
        let n = &trace.ranks[r].1[i];
        let why = if waiting[r][i] == 0 {
            "a collective some of whose ranks never reach it".to_string()
        } else if let Some(&x) = deps[r][i].iter().find(|&&x| done[r][x].is_none()) {
            format!("it waits for node {}, which never completes", trace.ranks[r].1[x].id)
        } else {
            "its matching send never happens".to_string()
        };
        return Err(trace.error(
            r,
            n,
            format!("the dependencies (with sends, receives and collectives) form a cycle, so the trace could never finish: {why}"),
        ));
    }
    let hosts: Vec<u32> = (0..nr).map(host).collect();
    rec.starts = vec![t0; nr];
    rec.ends = (0..nr)
        .map(|r| {
            let end = done[r].iter().flatten().fold(TimePoint::at(start), |acc, t| acc.max(t));
            b.collapse(host(r), end)
        })
        .collect();
    rec.compute = trace
        .ranks
        .iter()
        .map(|(_, nodes, _)| {
            nodes.iter().filter(|n| n.kind == NodeKind::Compute).map(|n| n.duration).fold(Dur::ZERO, |a, d| a + d)
        })
        .max()
        .unwrap_or(Dur::ZERO);
    Ok(JobRecord { name: name.to_string(), workload: b.workload, hosts, iterations: vec![rec], ..JobRecord::default() })
}
