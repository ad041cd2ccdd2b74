//! Scenario files: TOML (or the same structure as JSON) into a validated [`Scenario`].
//!
//! Every error names the key path (`topology.leaves`, `workload[1].receiver`) and, for
//! choices, the allowed values. Nothing is built until the whole file is valid.

use crate::schema::{self, params_for, Reader};
use crate::ScenarioError;
use fabricsim_engine::{Dur, Rate};
use fabricsim_fabric::{EcnConfig, FabricConfig, LinkParams, PfcConfig, Routing, TopologySpec, TrimConfig};
use fabricsim_transport::mprdma::EcnCut;
use fabricsim_transport::roce::{DcqcnConfig, RoceConfig};
use fabricsim_transport::stellar::PathAlgo;
use fabricsim_workload::collectives::MAX_CHANNELS;
use fabricsim_workload::mix::{PoissonMix, SizeCdf, BUNDLED};
use fabricsim_workload::startup::{Device, Pinning, Startup};
use fabricsim_workload::traces::chakra;
use fabricsim_workload::traces::htsim::{self, Failure};
use fabricsim_workload::{
    Algorithm, ClosedLoop, CollectiveKind, CollectiveOp, Group, HostSet, Job, JobComm, OnOff, Operation, Pin,
    Placement, RateFlow, WorkloadKind, WorkloadSpec,
};
use std::path::Path;
use toml::Value;

/// A validated scenario.
#[derive(Clone, Debug)]
pub struct Scenario {
    /// Name, for output folders.
    pub name: String,
    /// Seed of every random stream.
    pub seed: u64,
    /// Simulated time limit, if any.
    pub stop: Option<Dur>,
    /// Topology shape.
    pub topology: TopologySpec,
    /// Link rates and delay.
    pub links: LinkParams,
    /// RoCE path MTU (payload bytes per packet).
    pub mtu: u32,
    /// Switch behaviour (its seed is set from `seed`).
    pub fabric: FabricConfig,
    /// Transport of every connection.
    pub transport: TransportSpec,
    /// Traffic.
    pub workloads: Vec<WorkloadSpec>,
    /// Per workload, a transport overriding `transport` for its connections.
    pub workload_transports: Vec<Option<TransportSpec>>,
    /// Recording.
    pub output: OutputSpec,
    /// The hosts' NICs (`[nic]`).
    pub nic: crate::nicspec::NicSpec,
    /// Failures during the run, in scenario order.
    pub faults: Vec<FaultSpec>,
    /// With ECMP, how long after a topology change the tables are recomputed.
    pub reroute_after: Option<Dur>,
    /// How long messages may be under way without progress before the run ends as
    /// stalled (`None`: forever).
    pub stall_after: Option<Dur>,
    /// Partitions simulated side by side, one thread each (1: a plain run).
    pub partitions: u8,
    /// The document as given, echoed into the summary.
    pub document: serde_json::Value,
}

pub use crate::factory::{
    MaestroSpec, MprdmaSpec, MrcSpec, PathSelection, StarServerEnd, StarSpec, StellarSpec, TransportKind,
    TransportSpec, UdmpSpec,
};

/// What a fault does.
#[derive(Clone, Debug, PartialEq)]
pub enum FaultKind {
    /// The cable goes down.
    LinkDown,
    /// The cable comes back.
    LinkUp,
    /// The cable goes down for `duty × period` every `period` until `until`.
    LinkFlap {
        /// One cycle.
        period: Dur,
        /// Fraction of a cycle spent down.
        duty: f64,
        /// When flapping stops (cable left up).
        until: Option<Dur>,
    },
    /// Random loss on the cable.
    LinkLoss(f64),
    /// Loss of one entropy value's packets on the cable.
    EvLoss {
        /// The entropy value.
        ev: u32,
        /// Loss probability.
        loss: f64,
    },
    /// The switch fails.
    SwitchDown,
    /// The switch comes back.
    SwitchUp,
    /// Extra delay.
    Delay(Dur),
    /// A new rate.
    Rate(Rate),
}

/// What a fault applies to (validated against the fabric when the run is built).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FaultTarget {
    /// A cable, named by one of its ports.
    Link(String),
    /// A switch.
    Switch(String),
}

/// One `[[faults]]` entry.
#[derive(Clone, Debug, PartialEq)]
pub struct FaultSpec {
    /// When.
    pub at: Dur,
    /// What.
    pub kind: FaultKind,
    /// Where.
    pub target: FaultTarget,
}

impl FaultKind {
    /// The scenario name.
    pub fn name(&self) -> &'static str {
        match self {
            FaultKind::LinkDown => "link_down",
            FaultKind::LinkUp => "link_up",
            FaultKind::LinkFlap { .. } => "link_flap",
            FaultKind::LinkLoss(_) => "link_loss",
            FaultKind::EvLoss { .. } => "ev_loss",
            FaultKind::SwitchDown => "switch_down",
            FaultKind::SwitchUp => "switch_up",
            FaultKind::Delay(_) => "delay",
            FaultKind::Rate(_) => "rate",
        }
    }
}

/// What the run records.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OutputSpec {
    /// Port sampling period (zero: off).
    pub sample_interval: Dur,
    /// Whether to draw plots (read by the Python layer).
    pub plots: bool,
    /// Where a message completes for the summary and the run's end.
    pub fct_at: FctAt,
}

/// Where a message counts as complete (`output.fct_at`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FctAt {
    /// Its last byte is placed at the receiver.
    #[default]
    Receiver,
    /// Its sender has every acknowledgement (HPCC's convention).
    Sender,
}

impl Scenario {
    /// Parses TOML text; files it names (traces) are read relative to the current
    /// directory.
    pub fn from_toml(text: &str) -> Result<Scenario, ScenarioError> {
        Scenario::from_toml_in(text, Path::new(""))
    }

    /// Parses TOML text whose relative file names (traces) are relative to `base`
    /// (the scenario file's folder).
    pub fn from_toml_in(text: &str, base: &Path) -> Result<Scenario, ScenarioError> {
        let doc: Value = toml::from_str::<toml::Table>(text).map(Value::Table).map_err(|e| {
            // The parser's message shows the offending line, which may be a megabyte long.
            let lines: Vec<String> = (e.to_string().trim().lines())
                .map(|l| crate::cut(l, 2 * crate::QUOTE_MAX).map_or_else(|| l.to_string(), |s| format!("{s}...")))
                .collect();
            ScenarioError::new("", format!("not valid TOML: {}", lines.join("\n")))
        })?;
        Scenario::from_value_in(&doc, base)
    }

    /// The transport of workload `w`'s connections.
    pub fn transport_of(&self, w: u32) -> &TransportSpec {
        self.workload_transports.get(w as usize).and_then(|t| t.as_ref()).unwrap_or(&self.transport)
    }

    /// The same scenario under another seed (every random stream changes).
    /// The same scenario in `n` partitions (see [`crate::parallel`]); `n` must be in
    /// 1 ..= 8. The echoed document records the override.
    pub fn with_partitions(mut self, n: u8) -> Result<Scenario, ScenarioError> {
        if !(1..=crate::parallel::MAX_PARTITIONS).contains(&n) {
            return Err(ScenarioError::new(
                "partitions",
                format!("expected an integer between 1 and {}, got {n}", crate::parallel::MAX_PARTITIONS),
            ));
        }
        self.partitions = n;
        if let serde_json::Value::Object(o) = &mut self.document {
            o.insert("partitions".into(), n.into());
        }
        Ok(self)
    }

    pub fn with_seed(mut self, seed: u64) -> Scenario {
        self.seed = seed;
        self.fabric.seed = seed;
        if let serde_json::Value::Object(o) = &mut self.document {
            o.insert("seed".into(), seed.into());
        }
        self
    }

    /// Parses JSON text with the same structure as the TOML format.
    pub fn from_json(text: &str) -> Result<Scenario, ScenarioError> {
        Scenario::from_json_in(text, Path::new(""))
    }

    /// [`from_json`](Self::from_json) with relative file names relative to `base`.
    pub fn from_json_in(text: &str, base: &Path) -> Result<Scenario, ScenarioError> {
        let doc: Value = serde_json::from_str(text)
            .map_err(|e| ScenarioError::new("", format!("not a valid scenario object: {e}")))?;
        Scenario::from_value_in(&doc, base)
    }

    /// Parses an already-decoded document (files relative to the current directory).
    pub fn from_value(doc: &Value) -> Result<Scenario, ScenarioError> {
        Scenario::from_value_in(doc, Path::new(""))
    }

    /// Parses an already-decoded document, relative file names relative to `base`.
    pub fn from_value_in(doc: &Value, base: &Path) -> Result<Scenario, ScenarioError> {
        let mut top = Reader::new("", doc)?;
        top.documented(&schema::TOP.iter().collect::<Vec<_>>());
        let name = top.string("name", "scenario")?;
        if name.trim().is_empty() {
            return Err(top.error("name", "must not be empty"));
        }
        let seed = top.int("seed", 0, i64::MAX)? as u64;
        let stop = top.duration("stop")?;
        if stop == Some(Dur::ZERO) {
            return Err(top.error("stop", "must be later than 0"));
        }
        let stall_after = match top.raw("stall_after") {
            None => Some(
                crate::units::parse_duration(top.default_text("stall_after")).expect("the catalog's default parses"),
            ),
            Some(Value::String(s)) if s == "none" => None,
            Some(Value::String(s)) => {
                Some(crate::units::parse_duration(s).ok().filter(|d| *d > Dur::ZERO).ok_or_else(|| {
                    top.error(
                        "stall_after",
                        format!(
                            "expected a duration longer than 0 such as \"1s\", or \"none\", got {}",
                            crate::quoted(s)
                        ),
                    )
                })?)
            }
            Some(_) => return Err(top.error("stall_after", "expected a duration such as \"1s\" or \"none\"")),
        };
        let partitions = top.int("partitions", 1, crate::parallel::MAX_PARTITIONS as i64)? as u8;
        let Some(topo) = top.raw("topology") else {
            return Err(top.error(
                "topology",
                format!("is required (a table with kind = one of: {})", schema::TOPOLOGY_KINDS.join(", ")),
            ));
        };
        let (topology, links, mtu, buffer) = parse_topology(topo, base)?;
        let empty = Value::Table(toml::Table::new());
        let (mut fabric, reroute_after) = parse_fabric(top.raw("fabric").unwrap_or(&empty), buffer, mtu)?;
        fabric.seed = seed;
        // An empty queue must take a full data packet, or no data ever crosses a switch
        // (a lossy fabric then trims or drops every one, for ever).
        let admit = if fabric.pfc.is_some() { buffer as f64 } else { buffer as f64 * fabric.drop_alpha.min(1.0) };
        if admit < mtu as f64 {
            let key = if fabric.pfc.is_none() && fabric.drop_alpha < 1.0 {
                "fabric.drop_alpha"
            } else {
                "topology.switch_buffer"
            };
            return Err(ScenarioError::new(
                key,
                format!(
                    "a switch would admit at most {admit:.0} bytes into an empty queue, less than one {mtu}-byte packet (switch_buffer x drop_alpha, drop_alpha counting without PFC)"
                ),
            ));
        }
        // ECN whose first threshold no queue can reach never marks: DCQCN then never
        // acts, and nothing says so. (Without PFC a port's queue is bounded by the
        // dynamic threshold; with PFC the pauses bound it less plainly.)
        if let (Some(ecn), None) = (&fabric.ecn, &fabric.pfc) {
            let rate = links.host_link.min(links.fabric_link);
            let (kmin, _) = ecn.thresholds(rate.bps());
            let alpha = fabric.drop_alpha;
            let most = buffer as f64 * alpha / (1.0 + alpha);
            if kmin as f64 >= most {
                return Err(ScenarioError::new(
                    "fabric.ecn",
                    format!(
                        "marks from {kmin} bytes of queue on a {rate} port, but without PFC a port's queue holds at most \
                         {most:.0} bytes here (topology.switch_buffer x drop_alpha / (1 + drop_alpha)): ECN could never \
                         mark; lower kmin, raise switch_buffer, or set fabric.ecn = false"
                    ),
                ));
            }
        }
        let transport = parse_transport(top.raw("transport").unwrap_or(&empty), links.host_link)?;
        // "none", the documented default, is no jobs.
        let jobs = top.raw("jobs").filter(|v| !matches!(v, Value::String(s) if s == "none"));
        let mut failures: Vec<Vec<Failure>> = Vec::new();
        let (mut workloads, mut workload_transports) = match (top.raw("workload"), jobs) {
            (Some(w), _) => parse_workloads(w, links.host_link, base, &mut failures)?,
            (None, Some(_)) => (Vec::new(), Vec::new()),
            (None, None) => {
                return Err(top.error(
                    "workload",
                    format!(
                        "is required unless there are [[jobs]] (a table or array of tables with kind = one of: {})",
                        schema::WORKLOAD_KINDS.join(", ")
                    ),
                ))
            }
        };
        if let Some(jobs) = jobs {
            let Value::Array(list) = jobs else {
                return Err(top.error("jobs", "expected an array of tables ([[jobs]])"));
            };
            if list.is_empty() {
                return Err(top.error("jobs", "at least one job is required (or leave the key out)"));
            }
            for (j, v) in list.iter().enumerate() {
                let (spec, t) = parse_job(j, v, links.host_link, stop)?;
                workloads.push(spec);
                workload_transports.push(t);
                failures.push(Vec::new());
            }
        }
        let output = parse_output(top.raw("output").unwrap_or(&empty))?;
        let nic = crate::nicspec::parse_nic(top.raw("nic").unwrap_or(&empty))?;
        let mut faults: Vec<FaultSpec> = match top.raw("faults") {
            None => Vec::new(),
            Some(Value::Array(a)) => {
                a.iter().enumerate().map(|(i, f)| parse_fault(i, f, stop)).collect::<Result<_, _>>()?
            }
            Some(_) => return Err(ScenarioError::new("faults", "expected an array of tables ([[faults]])")),
        };
        // The failure lines of htsim connection matrices: links down from the start.
        for (w, spec) in workloads.iter_mut().enumerate() {
            if let WorkloadKind::Dag { source, .. } = &spec.kind {
                for f in std::mem::take(&mut failures[w]) {
                    faults.push(htsim_failure(&topology, source, &f)?);
                }
            }
        }

        top.finish(&schema::TOP.iter().collect::<Vec<_>>())?;
        let hosts = topology.hosts();
        if hosts == 0 {
            return Err(ScenarioError::new("topology", "the topology has no hosts"));
        }
        let document = serde_json::to_value(doc).unwrap_or(serde_json::Value::Null);
        Ok(Scenario {
            name,
            seed,
            stop,
            topology,
            links,
            mtu,
            fabric,
            transport,
            workloads,
            workload_transports,
            output,
            nic,
            faults,
            reroute_after,
            stall_after,
            partitions,
            document,
        })
    }
}

/// A positive count whose default is the catalog's.
fn u32_key(r: &mut Reader<'_>, key: &'static str) -> Result<u32, ScenarioError> {
    Ok(r.int(key, 1, u32::MAX as i64)? as u32)
}

/// A positive count whose default depends on another key (the catalog states it in
/// words).
fn u32_key_or(r: &mut Reader<'_>, key: &'static str, default: i64) -> Result<u32, ScenarioError> {
    Ok(r.int_or(key, default, 1, u32::MAX as i64)? as u32)
}

fn parse_topology(v: &Value, base: &Path) -> Result<(TopologySpec, LinkParams, u32, u64), ScenarioError> {
    let mut r = Reader::new("topology", v)?;
    r.documented(&params_for("topology", ""));
    let kind = r.choose("kind")?;
    r.documented(&params_for("topology", &kind));
    if kind == "htsim" {
        // The file gives the links' rates and delay.
        for (key, from) in [
            ("host_link", "tier 0's Downlink_speed_Gbps"),
            ("fabric_link", "tier 1's Downlink_speed_Gbps"),
            ("link_delay", "the tiers' Downlink_Latency_ns"),
        ] {
            if r.raw_peek(key).is_some() {
                return Err(r.error(key, format!("is set by the .topo file ({from}); leave it out")));
            }
        }
    }
    let host_link = r.rate_d("host_link")?;
    // The catalog's default: the host links' rate.
    let fabric_link = r.rate("fabric_link")?.unwrap_or(host_link);
    let delay = r.duration_d("link_delay")?;
    let mut links = LinkParams { host_link, fabric_link, delay };
    let mtu = r.int("mtu", 256, 9000)? as u32;
    let buffer = r.size_d("switch_buffer")?;
    if buffer < 16_384 {
        return Err(r.error(
            "switch_buffer",
            format!("must hold a few packets (at least 16KiB = 16384 bytes), got {buffer} bytes"),
        ));
    }
    let spec = match kind.as_str() {
        "leaf_spine" => TopologySpec::LeafSpine {
            leaves: u32_key(&mut r, "leaves")?,
            spines: u32_key(&mut r, "spines")?,
            hosts_per_leaf: u32_key(&mut r, "hosts_per_leaf")?,
        },
        "fat_tree" => {
            let k = u32_key(&mut r, "k")?;
            if k % 2 != 0 {
                return Err(r.error("k", format!("must be even, got {k}")));
            }
            TopologySpec::FatTree {
                k,
                pods: u32_key_or(&mut r, "pods", k as i64)?,
                hosts_per_edge: u32_key_or(&mut r, "hosts_per_edge", (k / 2) as i64)?,
                oversubscription: u32_key(&mut r, "oversubscription")?,
            }
        }
        "multi_plane" => TopologySpec::MultiPlane {
            planes: r.int("planes", 1, 8)? as u32,
            groups: u32_key(&mut r, "groups")?,
            hosts_per_group: u32_key(&mut r, "hosts_per_group")?,
            t1_per_plane: u32_key(&mut r, "t1_per_plane")?,
        },
        "htsim" => {
            let (name, text) = read_file(&mut r, "file", base)?;
            let t = fabricsim_fabric::htsim_topo::parse(&text).map_err(|m| r.error("file", format!("{name}: {m}")))?;
            links = LinkParams { host_link: t.host_link, fabric_link: t.fabric_link, delay: t.delay };
            t.spec
        }
        _ => unreachable!("choice() only returns allowed kinds"),
    };
    r.finish(&params_for("topology", &kind))?;
    Ok((spec, links, mtu, buffer))
}

/// The switches' behaviour, and how long after a topology change ECMP tables are
/// recomputed (`None`: never).
fn parse_fabric(v: &Value, buffer: u64, mtu: u32) -> Result<(FabricConfig, Option<Dur>), ScenarioError> {
    let mut r = Reader::new("fabric", v)?;
    r.documented(&params_for("fabric", ""));
    let mut cfg = FabricConfig { buffer, ..FabricConfig::default() };
    let empty = Value::Table(toml::map::Map::new());
    cfg.pfc = match r.raw("pfc") {
        None | Some(Value::Boolean(true)) => Some(parse_pfc(&empty)?),
        Some(Value::Boolean(false)) => None,
        Some(t @ Value::Table(_)) => Some(parse_pfc(t)?),
        Some(_) => return Err(r.error("pfc", "expected true, false or a table { alpha, min_xoff, xon_delta }")),
    };
    cfg.ecn = match r.raw("ecn") {
        None | Some(Value::Boolean(true)) => Some(parse_ecn(&empty)?),
        Some(Value::Boolean(false)) => None,
        Some(t @ Value::Table(_)) => Some(parse_ecn(t)?),
        Some(_) => return Err(r.error("ecn", "expected true, false or a table { kmin, kmax, pmax, last_hop }")),
    };
    cfg.trim = match r.raw("trimming") {
        None | Some(Value::Boolean(false)) => None,
        Some(Value::Boolean(true)) => Some(TrimConfig { threshold: u64::MAX }),
        Some(t @ Value::Table(_)) => {
            let mut s = Reader::new("fabric.trimming", t)?;
            let threshold = s.size("threshold")?.unwrap_or(u64::MAX);
            if threshold < mtu as u64 {
                // Below one packet every data packet meets a "full" queue: all trimmed.
                return Err(
                    s.error("threshold", format!("must be at least one packet (mtu = {mtu} bytes), got {threshold}"))
                );
            }
            s.finish(&[&key_doc("threshold")])?;
            Some(TrimConfig { threshold })
        }
        Some(_) => return Err(r.error("trimming", "expected true, false or a table { threshold }")),
    };
    cfg.routing = match r.choose("routing")?.as_str() {
        "srv6" => Routing::Srv6,
        _ => Routing::Ecmp,
    };
    cfg.drop_alpha = r.float("drop_alpha", 1e-6, 64.0)?;
    cfg.link_loss = r.float("link_loss", 0.0, 1.0)?;
    let reroute_after = duration_or_none(&mut r, "reroute_after")?;
    r.finish(&params_for("fabric", ""))?;
    Ok((cfg, reroute_after))
}

/// `[fabric.pfc]` (an empty table: the catalog's defaults).
fn parse_pfc(t: &Value) -> Result<PfcConfig, ScenarioError> {
    let mut s = Reader::new("fabric.pfc", t)?;
    let params = params_for("fabric.pfc", "");
    s.documented(&params);
    let pfc = PfcConfig {
        alpha: s.float("alpha", 1e-6, 64.0)?,
        min_xoff: s.size_d("min_xoff")?,
        xon_delta: s.size_d("xon_delta")?,
    };
    s.finish(&params)?;
    Ok(pfc)
}

/// `[fabric.ecn]` (an empty table: the catalog's defaults, HPCC's thresholds per port).
fn parse_ecn(t: &Value) -> Result<EcnConfig, ScenarioError> {
    let mut s = Reader::new("fabric.ecn", t)?;
    let params = params_for("fabric.ecn", "");
    s.documented(&params);
    let kmin = s.size("kmin")?;
    let kmax = s.size("kmax")?;
    let pmax = s.float("pmax", 0.0, 1.0)?;
    let last_hop = s.bool("last_hop")?;
    s.finish(&params)?;
    let thresholds = match (kmin, kmax) {
        (None, None) => EcnConfig::hpcc(),
        (Some(a), Some(b)) if a > b => {
            return Err(ScenarioError::new("fabric.ecn.kmin", format!("must not exceed kmax ({a} > {b} bytes)")))
        }
        (Some(a), Some(b)) => EcnConfig { kmin: a, kmax: b, per_25g: false, ..EcnConfig::hpcc() },
        _ => return Err(ScenarioError::new("fabric.ecn", "give both kmin and kmax, or neither")),
    };
    Ok(EcnConfig { pmax, last_hop, ..thresholds })
}

/// A duration or the word "none" (`None`), or the catalog's default, which is one or
/// the other.
fn duration_or_none<'a>(r: &mut Reader<'a>, key: &'a str) -> Result<Option<Dur>, ScenarioError> {
    let default = r.default_text(key);
    let example = if default == "none" { "20us" } else { default };
    match r.raw(key) {
        None if default == "none" => Ok(None),
        None => Ok(Some(crate::units::parse_duration(default).expect("the catalog's default parses"))),
        Some(Value::String(s)) if s == "none" => Ok(None),
        Some(Value::String(s)) => Ok(Some(crate::units::parse_duration(s).map_err(|m| r.error(key, m))?)),
        Some(_) => Err(r.error(key, format!("expected a duration such as \"{example}\" or \"none\""))),
    }
}

/// A schema entry naming a nested key (for unknown-key messages in sub-tables).
fn key_doc(key: &'static str) -> schema::Param {
    schema::Param { key, ty: schema::Ty::Str, default: "", choices: &[], doc: "" }
}

fn parse_transport(v: &Value, line: Rate) -> Result<TransportSpec, ScenarioError> {
    parse_transport_at("transport", v, line)
}

fn parse_transport_at(path: &str, v: &Value, line: Rate) -> Result<TransportSpec, ScenarioError> {
    let mut r = Reader::new(path, v)?;
    r.documented(&params_for("transport", ""));
    let kind = r.choose("kind")?;
    r.documented(&params_for("transport", &kind));
    let kind = TransportKind::from_name(&kind).expect("choice() only returns allowed kinds");
    let spec = match kind {
        TransportKind::Roce => TransportSpec::Roce(parse_roce(&mut r, line)?),
        TransportKind::QpScaling => {
            let qps = r.int("qps", 1, 256)? as u32;
            TransportSpec::QpScaling { qps, roce: parse_roce(&mut r, line)? }
        }
        TransportKind::Maestro => {
            let paths = r.int("paths", 1, 256)? as u32;
            let selection = r.choose("path_selection")?;
            let chunk = r.size_d("chunk")?;
            if chunk == 0 || chunk > crate::checks::MAX_MESSAGE {
                return Err(r.error(
                    "chunk",
                    format!("must be 1 byte to 2 GiB (an RDMA message's cap, 2147483648 bytes), got {chunk}"),
                ));
            }
            let balancer = r.choose("balancer")?;
            let post_cost = r.duration_d("post_cost")?;
            if post_cost > Dur::from_ms(1000) {
                return Err(
                    r.error("post_cost", format!("must be 0 to 1s (CPU time per work request), got {post_cost}"))
                );
            }
            let policy = fabricsim_nic::MaestroConfig {
                chunk,
                balancer: fabricsim_nic::Balancer::from_name(&balancer).expect("choice() only returns allowed names"),
                small: r.size_d("small")?,
                // auto: two per path, the paper's 8 for its 4 (see the catalog).
                max_wrs: r.opt_int("max_wrs", 1, 4096)?.map_or(2 * paths, |n| n as u32),
                probe_interval: positive_duration(&mut r, "probe_interval")?,
                post_cost,
                verb: fabricsim_nic::Verb::from_name(&r.choose("verb")?).expect("choice() only returns allowed names"),
            };
            let reselect_interval = duration_or_none(&mut r, "reselect_interval")?;
            if reselect_interval == Some(Dur::ZERO) {
                return Err(r.error("reselect_interval", "must be longer than 0, or \"none\""));
            }
            TransportSpec::Maestro(MaestroSpec {
                reselect_interval,
                paths,
                path_selection: PathSelection::from_name(&selection).expect("choice() only returns allowed names"),
                policy,
                roce: parse_roce(&mut r, line)?,
            })
        }
        TransportKind::Mprdma => {
            let delta = r.int("delta", 1, 1 << 20)? as u32;
            TransportSpec::Mprdma(MprdmaSpec {
                paths: paths(&mut r)?,
                init_cwnd: r.opt_int("init_cwnd", 1, 1 << 20)?.map(|v| v as u32),
                delta,
                window: window(&mut r, delta)?,
                explore: r.float("explore", 0.0, 1.0)?,
                min_rto: rto_duration(&mut r, "min_rto")?,
                ecn_cut: {
                    let name = r.choose("ecn_cut")?;
                    EcnCut::from_name(&name).expect("choice() only returns allowed names")
                },
            })
        }
        TransportKind::Stellar => {
            let algo = r.choose("path_algo")?;
            TransportSpec::Stellar(StellarSpec {
                paths: paths(&mut r)?,
                algo: PathAlgo::from_name(&algo).expect("choice() only returns allowed names"),
                rto: rto_duration(&mut r, "rto")?,
                window: window(&mut r, 1)?,
                g: r.float("g", 1e-6, 1.0)?,
                beta: r.float("beta", 0.0, 1.0)?,
                target: auto_duration(&mut r, "target")?,
                cwnd_max: r.float("cwnd_max", 0.1, 100.0)?,
            })
        }
        TransportKind::Udmp => {
            let delta = r.opt_int("delta", 1, 1 << 20)?.map(|v| v as u32);
            TransportSpec::Udmp(UdmpSpec {
                paths: paths(&mut r)?,
                alpha: r.float("alpha", 1e-6, 1.0)?,
                min_increase: r.float("min_increase", 0.0, 1.0)?,
                t_high: auto_duration(&mut r, "t_high")?,
                explore: r.float("explore", 0.0, 1.0)?,
                ooo_aware: r.bool("ooo_aware")?,
                delta,
                window: window(&mut r, delta.unwrap_or(1))?,
                min_rto: rto_duration(&mut r, "min_rto")?,
                fixed_rate: r.rate("fixed_rate")?,
                flow_control: r.bool("flow_control")?,
            })
        }
        TransportKind::Mrc => {
            let spec = MrcSpec {
                evs: r.opt_int("evs", 1, 8192)?.map(|n| n as u32),
                backup: r.opt_int("backup", 0, 4096)?.map(|v| v as u32),
                ecn_penalty: r.int("ecn_penalty", 0, 15)? as u8,
                trim_penalty: r.int("trim_penalty", 0, 15)? as u8,
                ecn_swap: r.int("ecn_swap", 0, 15)? as u8,
                probe_interval: positive_duration(&mut r, "probe_interval")?,
                probe_successes: r.int("probe_successes", 1, 255)? as u8,
                probe_timeout: auto_duration(&mut r, "probe_timeout")?,
                probe_backoff_max: positive_duration(&mut r, "probe_backoff_max")?,
                reo: auto_duration(&mut r, "reo")?,
                min_rto: rto_duration(&mut r, "min_rto")?,
                max_rto: positive_duration(&mut r, "max_rto")?,
                write_imm: r.bool("write_imm")?,
                tail_probe: r.bool("tail_probe")?,
                timeout_copy: r.bool("timeout_copy")?,
                md: r.float("md", 0.0, 1.0)?,
                cwnd_max: r.float("cwnd_max", 0.1, 100.0)?,
                delay_target: duration_or_none(&mut r, "delay_target")?,
                reverse_probe: auto_duration(&mut r, "reverse_probe")?,
            };
            if spec.delay_target == Some(Dur::ZERO) {
                return Err(r.error("delay_target", "must be longer than 0 (\"none\" turns the delay cut off)"));
            }
            if spec.max_rto < spec.min_rto {
                return Err(r.error("max_rto", "must not be below min_rto"));
            }
            if spec.probe_backoff_max < spec.probe_interval {
                // Blame the key the user wrote (the other may be its default).
                return Err(if r.raw_peek("probe_backoff_max").is_some() {
                    r.error("probe_backoff_max", format!("must not be below probe_interval ({})", spec.probe_interval))
                } else {
                    r.error(
                        "probe_interval",
                        format!("must not exceed probe_backoff_max ({}, its default)", spec.probe_backoff_max),
                    )
                });
            }
            TransportSpec::Mrc(spec)
        }
        TransportKind::Star => {
            let auto = r.choose("mode")? == "auto";
            let server = match r.choose("server")?.as_str() {
                "receiver" => StarServerEnd::Receiver,
                "sender" => StarServerEnd::Sender,
                _ => StarServerEnd::Busier,
            };
            // Auto mode's stateful connections are RoCE ones with RoCE's defaults, but
            // for the timeout and the retry limit (below).
            let roce_table = toml::Value::Table(toml::map::Map::from_iter([("kind".to_string(), "roce".into())]));
            let roce = match parse_transport_at(path, &roce_table, line)? {
                TransportSpec::Roce(c) => c,
                _ => unreachable!("kind roce parses as RoCE"),
            };
            let init_cwnd = r.size("init_cwnd")?;
            if init_cwnd.is_some_and(|b| b == 0 || b > u32::MAX as u64) {
                return Err(r.error("init_cwnd", "must be between 1 byte and 4 GiB, or \"auto\""));
            }
            let rto = rto_duration(&mut r, "rto")?;
            let retry_limit = r.int("retry_limit", 0, 7)? as u32;
            // The stateful ones time out as the StaR ones do (RoCE's own default, 67 ms,
            // would stall a lossy run that sets a StaR timeout of microseconds).
            let roce = RoceConfig { rto, retry_limit, ..roce };
            TransportSpec::Star(StarSpec {
                auto,
                server,
                init_cwnd,
                g: r.float("g", 1e-6, 1.0)?,
                rto,
                retry_limit,
                roce,
            })
        }
    };
    if let Err(e) = r.finish(&params_for("transport", kind.name())) {
        if let Value::Table(t) = v {
            // Without `kind` a table is RoCE; a key of another kind (`evs`, say) says
            // the user meant that one.
            let own = params_for("transport", kind.name());
            let stray = t.keys().find(|k| !own.iter().any(|p| p.key == k.as_str()));
            let other = stray.and_then(|k| {
                schema::TRANSPORT_KINDS.iter().find(|o| params_for("transport", o).iter().any(|p| p.key == k.as_str()))
            });
            if let (false, Some(k), Some(o)) = (t.contains_key("kind"), stray, other) {
                return Err(ScenarioError {
                    message: format!(
                        "{}; this table has no kind, so it is kind = \"roce\" (`{k}` is a key of kind = \"{o}\")",
                        e.message
                    ),
                    ..e
                });
            }
        }
        return Err(e);
    }
    Ok(spec)
}

fn paths(r: &mut Reader<'_>) -> Result<u32, ScenarioError> {
    Ok(r.int("paths", 1, 65_536)? as u32)
}

/// A receiver bitmap size: `None` = derived from the path (auto).
fn window(r: &mut Reader<'_>, at_least: u32) -> Result<Option<u32>, ScenarioError> {
    let w = r.opt_int("window", 1, 1 << 24)?.map(|v| v as u32);
    if let Some(w) = w {
        if w < at_least {
            return Err(r.error("window", format!("must be at least delta ({at_least}) packets, got {w}")));
        }
    }
    Ok(w)
}

/// The RoCE keys shared by `roce` and `qp_scaling`.
fn parse_roce(r: &mut Reader<'_>, line: Rate) -> Result<RoceConfig, ScenarioError> {
    let cc = r.choose("cc")?;
    if cc == "none" && r.raw("dcqcn").is_some() {
        // It would be ignored: nothing runs DCQCN.
        return Err(r.error("dcqcn", "applies to cc = \"dcqcn\"; this transport has cc = \"none\""));
    }
    let dcqcn = parse_dcqcn(r.path("dcqcn"), r.raw("dcqcn"), line)?;
    Ok(RoceConfig {
        ack_interval: r.int("ack_interval", 1, 1 << 20)? as u32,
        rto: rto_duration(r, "rto")?,
        retry_limit: r.int("retry_limit", 0, 1 << 20)? as u32,
        nak_interval: duration_or_none(r, "nak_interval")?,
        dcqcn: (cc == "dcqcn").then_some(dcqcn),
    })
}

/// A duration longer than 0, or the catalog's default.
fn positive_duration(r: &mut Reader<'_>, key: &'static str) -> Result<Dur, ScenarioError> {
    let d = r.duration_d(key)?;
    if d == Dur::ZERO {
        return Err(r.error(key, "must be longer than 0"));
    }
    Ok(d)
}

/// A duration longer than 0, or `default` (which a preset sets).
pub(crate) fn positive_duration_or(r: &mut Reader<'_>, key: &'static str, default: Dur) -> Result<Dur, ScenarioError> {
    match r.duration(key)? {
        Some(Dur::ZERO) => Err(r.error(key, "must be longer than 0")),
        Some(d) => Ok(d),
        None => Ok(default),
    }
}

/// A duration whose default is worked out from the path ("auto", left out): an
/// explicit one must be longer than 0 (a zero STELLAR `target` cut the window on every
/// ACK and ran 3x slower, silently).
fn auto_duration(r: &mut Reader<'_>, key: &'static str) -> Result<Option<Dur>, ScenarioError> {
    match r.duration(key)? {
        Some(Dur::ZERO) => Err(r.error(key, "must be longer than 0 (leave it out for the default, auto)")),
        d => Ok(d),
    }
}

/// A retransmission timeout: at least 1 us, since one shorter than any round trip in a
/// data centre only resends (a 1 ps timeout made a tiny incast take a minute).
fn rto_duration(r: &mut Reader<'_>, key: &'static str) -> Result<Dur, ScenarioError> {
    let d = positive_duration(r, key)?;
    if d < Dur::from_us(1) {
        return Err(r.error(key, format!("must be at least 1us, got {d}")));
    }
    Ok(d)
}

/// `path`: where the table is (`transport.dcqcn` or `workload[i].transport.dcqcn`).
fn parse_dcqcn(path: String, v: Option<&Value>, line: Rate) -> Result<DcqcnConfig, ScenarioError> {
    let Some(v) = v else { return Ok(DcqcnConfig::hpcc(line)) };
    let mut r = Reader::new(path, v)?;
    r.documented(&schema::DCQCN.iter().collect::<Vec<_>>());
    let d = match r.choose("preset")?.as_str() {
        "hpcc_paper" => DcqcnConfig::hpcc_paper(line),
        "firmware" => DcqcnConfig::firmware(),
        "paper" => DcqcnConfig::paper(),
        _ => DcqcnConfig::hpcc(line),
    };
    let cfg = DcqcnConfig {
        g: r.float_or("g", d.g, 1e-9, 1.0)?,
        alpha_interval: positive_duration_or(&mut r, "alpha_interval", d.alpha_interval)?,
        decrease_interval: r.duration("decrease_interval")?.unwrap_or(d.decrease_interval),
        increase_interval: positive_duration_or(&mut r, "increase_interval", d.increase_interval)?,
        byte_counter: r.size("byte_counter")?.unwrap_or(d.byte_counter),
        fast_recovery: r.int_or("fast_recovery", d.fast_recovery as i64, 0, 1000)? as u32,
        rate_ai: r.rate("rate_ai")?.unwrap_or(d.rate_ai),
        rate_hai: r.rate("rate_hai")?.unwrap_or(d.rate_hai),
        min_rate: r.rate("min_rate")?.unwrap_or(d.min_rate),
        clamp_target: r.bool_or("clamp_target", d.clamp_target)?,
        cnp_interval: r.duration("cnp_interval")?.unwrap_or(d.cnp_interval),
    };
    r.finish(&schema::DCQCN.iter().collect::<Vec<_>>())?;
    if cfg.min_rate > line {
        // Every cut would stop at or above line rate: DCQCN silently off.
        return Err(r.error("min_rate", format!("must not exceed the host link rate ({line}), got {}", cfg.min_rate)));
    }
    Ok(cfg)
}

fn parse_hosts(r: &mut Reader<'_>, key: &'static str, default: HostSet) -> Result<HostSet, ScenarioError> {
    match r.raw(key) {
        None => Ok(default),
        Some(Value::String(s)) if s == "all" => Ok(HostSet::All),
        Some(Value::Integer(n)) if *n >= 1 && *n <= u32::MAX as i64 => Ok(HostSet::Count(*n as u32)),
        Some(Value::Integer(n)) => Err(r.error(key, format!("a host count must be at least 1, got {n}"))),
        Some(Value::Array(a)) => a
            .iter()
            .enumerate()
            .map(|(i, v)| match v {
                Value::Integer(h) if *h >= 0 && *h <= u32::MAX as i64 => Ok(*h as u32),
                _ => Err(ScenarioError::new(&format!("{}[{i}]", r.path(key)), "expected a host index (integer >= 0)")),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(HostSet::List),
        Some(_) => Err(r.error(key, "expected \"all\", a host count, or a list of host indices")),
    }
}

type Workloads = (Vec<WorkloadSpec>, Vec<Option<TransportSpec>>);

fn parse_workloads(
    v: &Value,
    line: Rate,
    base: &Path,
    failures: &mut Vec<Vec<Failure>>,
) -> Result<Workloads, ScenarioError> {
    let items: Vec<&Value> = match v {
        Value::Table(_) => vec![v],
        Value::Array(a) if !a.is_empty() => a.iter().collect(),
        Value::Array(_) => return Err(ScenarioError::new("workload", "at least one workload is required")),
        _ => return Err(ScenarioError::new("workload", "expected a table or an array of tables")),
    };
    items
        .into_iter()
        .enumerate()
        .map(|(i, w)| {
            let (spec, t, f) = parse_workload(i, w, line, base)?;
            failures.push(f);
            Ok((spec, t))
        })
        .unzip_ok()
}

/// `Iterator<Result<(A, B)>>` into `Result<(Vec<A>, Vec<B>)>`.
trait UnzipOk<A, B> {
    fn unzip_ok(self) -> Result<(Vec<A>, Vec<B>), ScenarioError>;
}

impl<I: Iterator<Item = Result<(A, B), ScenarioError>>, A, B> UnzipOk<A, B> for I {
    fn unzip_ok(self) -> Result<(Vec<A>, Vec<B>), ScenarioError> {
        let mut a = Vec::new();
        let mut b = Vec::new();
        for item in self {
            let (x, y) = item?;
            a.push(x);
            b.push(y);
        }
        Ok((a, b))
    }
}

fn parse_workload(
    i: usize,
    v: &Value,
    line: Rate,
    base: &Path,
) -> Result<(WorkloadSpec, Option<TransportSpec>, Vec<Failure>), ScenarioError> {
    let mut failures = Vec::new();
    let mut r = Reader::new(format!("workload[{i}]"), v)?;
    r.documented(&params_for("workload", ""));
    let kind = r.choose("kind")?;
    r.documented(&params_for("workload", &kind));
    let start = r.duration_d("start")?;
    let transport = match r.raw("transport") {
        None => None,
        Some(t) => Some(parse_transport_at(&format!("workload[{i}].transport"), t, line)?),
    };
    let kind_spec = match kind.as_str() {
        "flows" => {
            let Some(list) = r.raw("flows") else {
                return Err(r.error("flows", "is required (an array of { src, dst, size, start })"));
            };
            let Value::Array(list) = list else { return Err(r.error("flows", "expected an array of tables")) };
            let mut flows = Vec::with_capacity(list.len());
            for (j, f) in list.iter().enumerate() {
                let mut fr = Reader::new(format!("workload[{i}].flows[{j}]"), f)?;
                let src = fr
                    .opt_int("src", 0, u32::MAX as i64)?
                    .ok_or_else(|| fr.error("src", "is required (a host index)"))? as u32;
                let dst = fr
                    .opt_int("dst", 0, u32::MAX as i64)?
                    .ok_or_else(|| fr.error("dst", "is required (a host index)"))? as u32;
                let size = fr.required_size("size")?;
                let fstart = fr.duration("start")?.unwrap_or(Dur::ZERO);
                fr.finish(&[&key_doc("src"), &key_doc("dst"), &key_doc("size"), &key_doc("start")])?;
                flows.push((src, dst, size, fstart));
            }
            WorkloadKind::Flows(flows)
        }
        "permutation" => WorkloadKind::Permutation {
            size: r.required_size("size")?,
            hosts: parse_hosts(&mut r, "hosts", HostSet::All)?,
        },
        "poisson" => {
            let cdf = match r.raw("cdf") {
                Some(Value::String(name)) => match SizeCdf::bundled(name.trim()) {
                    Some(c) => c,
                    None if name.contains('.') || name.contains('/') => {
                        let (file, text) = read_file(&mut r, "cdf", base)?;
                        SizeCdf::from_csv(&text).map_err(|m| r.error("cdf", format!("{file}: {m}")))?
                    }
                    None => {
                        let names: Vec<&str> = BUNDLED.iter().map(|b| b.0).collect();
                        return Err(r.error(
                            "cdf",
                            format!("unknown value \"{name}\" (allowed: {}, or a CSV file name)", names.join(", ")),
                        ));
                    }
                },
                Some(_) => return Err(r.error("cdf", "expected a distribution name or a CSV file name")),
                None => {
                    let names: Vec<&str> = BUNDLED.iter().map(|b| b.0).collect();
                    return Err(r.error("cdf", format!("is required (one of: {}, or a CSV file)", names.join(", "))));
                }
            };
            if r.raw_peek("load").is_none() {
                return Err(r.error("load", "is required (the share of each host link to offer, e.g. 0.5)"));
            }
            let load = r.float_or("load", 0.5, 1e-6, 1.0)?;
            let duration = r
                .duration("duration")?
                .filter(|d| *d > Dur::ZERO)
                .ok_or_else(|| r.error("duration", "is required (flows arrive for this long, e.g. \"10ms\")"))?;
            let hosts = parse_hosts(&mut r, "hosts", HostSet::All)?;
            let groups = match r.raw("groups") {
                None => Vec::new(),
                Some(Value::Array(gs)) => {
                    let mut out = Vec::new();
                    for (g, v) in gs.iter().enumerate() {
                        let Value::Array(list) = v else {
                            return Err(ScenarioError::new(
                                &format!("{}[{g}]", r.path("groups")),
                                "expected a list of hosts",
                            ));
                        };
                        let mut members = Vec::new();
                        for (k, h) in list.iter().enumerate() {
                            match h {
                                Value::Integer(h) if *h >= 0 && *h <= u32::MAX as i64 => members.push(*h as u32),
                                _ => {
                                    return Err(ScenarioError::new(
                                        &format!("{}[{g}][{k}]", r.path("groups")),
                                        "expected a host index (integer >= 0)",
                                    ))
                                }
                            }
                        }
                        out.push(members);
                    }
                    out
                }
                Some(Value::String(w)) if w == "none" => Vec::new(),
                Some(_) => return Err(r.error("groups", "expected a list of lists of hosts")),
            };
            WorkloadKind::Poisson { hosts, mix: PoissonMix { cdf, load, duration, groups, link_bps: 0 } }
        }
        "chakra" => {
            r.documented(&params_for("workload", "chakra"));
            let prefix = match r.raw("trace") {
                Some(Value::String(t)) if !t.trim().is_empty() => t.trim().to_string(),
                Some(_) => return Err(r.error("trace", "expected a file name prefix such as \"traces/llm\"")),
                None => return Err(r.error("trace", "is required (the files are <trace>.<rank>.et)")),
            };
            let ranks = r.opt_int("ranks", 1, 1 << 20)?.map(|n| n as usize);
            let per_host = r.int("ranks_per_host", 1, 1 << 10)? as u32;
            let mut list = Vec::new();
            for rank in 0.. {
                if ranks.is_some_and(|n| rank >= n) {
                    break;
                }
                let file = format!("{prefix}.{rank}.et");
                let path = base.join(&file);
                let bytes = match std::fs::read(&path) {
                    Ok(b) => b,
                    Err(_) if ranks.is_none() && rank > 0 => break,
                    Err(e) => {
                        return Err(r.error(
                            "trace",
                            format!("cannot read {} (rank {rank}): {}", path.display(), e.to_string().to_lowercase()),
                        ))
                    }
                };
                let name =
                    std::path::Path::new(&file).file_name().map_or(file.clone(), |n| n.to_string_lossy().into_owned());
                let nodes = chakra::parse(&bytes).map_err(|m| r.error("trace", format!("{name}: {m}")))?;
                list.push((name, nodes));
            }
            let copies = r.int("replicas", 1, 1 << 16)? as u32;
            let span: Option<Vec<String>> = match r.raw("span") {
                None => None,
                Some(Value::String(w)) if w == "auto" => None,
                Some(Value::Array(a)) => Some(
                    a.iter()
                        .map(|v| match v {
                            Value::String(g) => Ok(g.clone()),
                            _ => Err(r.error("span", "expected a list of process group names (pg_name), or \"auto\"")),
                        })
                        .collect::<Result<_, _>>()?,
                ),
                Some(_) => return Err(r.error("span", "expected a list of process group names (pg_name), or \"auto\"")),
            };
            if span.is_some() && copies == 1 {
                return Err(r.error("span", "applies only with replicas above 1"));
            }
            if list.len().saturating_mul(copies as usize) > 1 << 20 {
                return Err(
                    r.error("replicas", format!("{copies} copies of {} ranks exceed 1048576 ranks", list.len()))
                );
            }
            let list = chakra::replicate(list, copies, span.as_deref()).map_err(|m| r.error("span", m))?;
            let servers = (list.len() as u32).div_ceil(per_host);
            let hosts: Vec<u32> = match parse_hosts(&mut r, "hosts", HostSet::All)? {
                HostSet::All => (0..servers).collect(),
                HostSet::List(l) if l.len() as u32 == servers => l,
                HostSet::List(l) => {
                    return Err(r.error(
                        "hosts",
                        format!(
                            "lists {} hosts for {} ranks ({per_host} per host: {servers} hosts)",
                            l.len(),
                            list.len()
                        ),
                    ))
                }
                HostSet::Count(_) => return Err(r.error("hosts", "expected a list of hosts")),
            };
            let name = r.string("name", &prefix)?;
            let ranks = list
                .into_iter()
                .enumerate()
                .map(|(rank, (file, nodes))| (file, nodes, hosts[rank / per_host as usize]))
                .collect();
            WorkloadKind::Chakra { name, trace: Box::new(chakra::Trace { ranks, key: r.path("trace") }) }
        }
        "htsim" => {
            r.documented(&params_for("workload", "htsim"));
            let (name, text) = read_file(&mut r, "file", base)?;
            let cm = htsim::parse(&text).map_err(|m| r.error("file", format!("{name}: {m}")))?;
            let mut flows = cm.flows;
            if let Some(map) = parse_node_map(&mut r, cm.nodes)? {
                for f in &mut flows {
                    f.src = map[f.src as usize];
                    f.dst = map[f.dst as usize];
                }
            }
            failures = cm.failures;
            WorkloadKind::Dag { flows, shots: cm.shots, source: (r.path("file"), name) }
        }
        "message_rate" | "rpc" => {
            if r.raw_peek("clients").is_none() {
                return Err(r.error("clients", "is required (a count or a list of hosts)"));
            }
            let clients = parse_hosts(&mut r, "clients", HostSet::All)?;
            let server = r.int("server", 0, u32::MAX as i64)? as u32;
            let positive = |r: &mut Reader<'_>, key: &'static str| -> Result<u64, ScenarioError> {
                match r.size_d(key)? {
                    0 => Err(r.error(key, "must be at least 1 byte")),
                    s => Ok(s),
                }
            };
            let op = if kind == "rpc" {
                Operation::Call {
                    request: positive(&mut r, "request")?,
                    reply: positive(&mut r, "reply")?,
                    think: r.duration_d("think")?,
                }
            } else {
                Operation::Write { size: positive(&mut r, "size")? }
            };
            let outstanding = r.int("outstanding", 1, 1 << 16)? as u32;
            let ops = r.int("ops", 1, 1 << 24)? as u32;
            let connections = r.int("connections", 1, 1 << 16)? as u32;
            WorkloadKind::ClosedLoop(ClosedLoop { clients, server, op, outstanding, ops, connections })
        }
        "constant_rate" => {
            let host = |r: &mut Reader<'_>, key: &'static str| -> Result<u32, ScenarioError> {
                Ok(r.opt_int(key, 0, u32::MAX as i64)?.ok_or_else(|| r.error(key, "is required (a host index)"))?
                    as u32)
            };
            let (src, dst) = (host(&mut r, "src")?, host(&mut r, "dst")?);
            let rate = match r.rate("rate")? {
                Some(rate) if rate.bps() > 0 => rate,
                Some(_) => return Err(r.error("rate", "must be above 0")),
                None => return Err(r.error("rate", "is required (e.g. \"10Gbps\")")),
            };
            let duration = r
                .duration("duration")?
                .filter(|d| *d > Dur::ZERO)
                .ok_or_else(|| r.error("duration", "is required and above 0 (e.g. \"1ms\")"))?;
            let message = r.size_d("message")?;
            if message == 0 || message > crate::checks::MAX_MESSAGE {
                return Err(r.error("message", format!("must be 1 byte to 2 GiB, got {message}")));
            }
            let on_off = match r.raw("on_off") {
                None => None,
                Some(v) => {
                    let mut o = Reader::new(r.path("on_off"), v)?;
                    let period = o
                        .duration("period")?
                        .filter(|d| *d > Dur::ZERO)
                        .ok_or_else(|| o.error("period", "is required and above 0"))?;
                    let duty = o.float_or("duty", 0.5, 0.0, 1.0)?;
                    o.finish(&[&key_doc("period"), &key_doc("duty")])?;
                    Some((period, duty))
                }
            };
            let sport = r.opt_int("sport", 0, u16::MAX as i64)?.map(|p| Pin::Sport(p as u16));
            let via = match r.raw("via") {
                None => None,
                Some(Value::String(name)) if name == "none" => None,
                Some(Value::String(name)) => Some(Pin::Via(name.trim().to_string())),
                Some(_) => return Err(r.error("via", "expected a switch name such as \"spine[2]\"")),
            };
            if sport.is_some() && via.is_some() {
                return Err(r.error("via", "pins the path as sport does: give one of them"));
            }
            WorkloadKind::ConstantRate(RateFlow { src, dst, rate, duration, message, on_off, pin: sport.or(via) })
        }
        "incast" => {
            let size = r.required_size("size")?;
            if r.raw_peek("senders").is_none() {
                return Err(r.error("senders", "is required (a count or a list of hosts)"));
            }
            let senders = parse_hosts(&mut r, "senders", HostSet::All)?;
            let receiver = r.int("receiver", 0, u32::MAX as i64)? as u32;
            WorkloadKind::Incast { senders, receiver, size }
        }
        other => {
            let kind = CollectiveKind::from_name(other).expect("choice() only returns allowed kinds");
            r.documented(&params_for("workload", other));
            let hosts = parse_hosts(&mut r, "hosts", HostSet::All)?;
            WorkloadKind::Collective { hosts, op: parse_collective(&mut r, kind)? }
        }
    };
    r.finish(&params_for("workload", &kind))?;
    Ok((WorkloadSpec { kind: kind_spec, start }, transport, failures))
}

/// Reads the file named by `key`, relative to `base`. Returns its name as written and
/// its text.
fn read_file(r: &mut Reader<'_>, key: &'static str, base: &Path) -> Result<(String, String), ScenarioError> {
    let name = match r.raw(key) {
        Some(Value::String(s)) if !s.trim().is_empty() => s.trim().to_string(),
        Some(_) => return Err(r.error(key, "expected a file name")),
        None => return Err(r.error(key, "is required (a file name, relative to the scenario's folder)")),
    };
    let path = base.join(&name);
    let text = std::fs::read_to_string(&path).map_err(|e| {
        // Quoted (and cut when long), as every value an error shows.
        r.error(
            key,
            format!("cannot read {}: {}", crate::quoted(&path.display().to_string()), e.to_string().to_lowercase()),
        )
    })?;
    Ok((name, text))
}

/// `hosts`: a list mapping the trace's node `i` to host `hosts[i]` (one per node), or
/// `None` (node `i` is host `i`).
fn parse_node_map(r: &mut Reader<'_>, nodes: u32) -> Result<Option<Vec<u32>>, ScenarioError> {
    match parse_hosts(r, "hosts", HostSet::All)? {
        HostSet::All => Ok(None),
        HostSet::List(l) if l.len() as u32 == nodes => Ok(Some(l)),
        HostSet::List(l) => Err(
            r.error("hosts", format!("maps {} nodes but the file has {nodes} (one host per node, in order)", l.len()))
        ),
        HostSet::Count(_) => Err(r.error("hosts", "expected a list of hosts, one per node of the file")),
    }
}

/// An htsim `failure` line as a link that is down from the start: `TOR` is a leaf,
/// edge or T0 switch (the link its `link_id`-th uplink), `AGG` a spine, aggregation or
/// T1 switch (its `link_id`-th uplink on a fat-tree, downlink otherwise), `CORE` a core
/// switch (its `link_id`-th downlink).
fn htsim_failure(topology: &TopologySpec, source: &(String, String), f: &Failure) -> Result<FaultSpec, ScenarioError> {
    let (tor, agg, core) = match topology {
        TopologySpec::LeafSpine { .. } => ("leaf", Some(("spine", "down")), None),
        TopologySpec::FatTree { .. } => ("edge", Some(("agg", "up")), Some("core")),
        TopologySpec::MultiPlane { .. } => ("t0", Some(("t1", "down")), None),
    };
    let name = match f.switch_type.as_str() {
        "TOR" => format!("{tor}[{}].up[{}]", f.switch_id, f.link_id),
        "AGG" => {
            let (s, dir) = agg.expect("every topology has a second tier");
            format!("{s}[{}].{dir}[{}]", f.switch_id, f.link_id)
        }
        _ => match core {
            Some(c) => format!("{c}[{}].down[{}]", f.switch_id, f.link_id),
            None => {
                return Err(ScenarioError::new(
                    &source.0,
                    format!(
                        "{}: line {}, switch_type: CORE has no counterpart in a two-tier topology",
                        source.1, f.line
                    ),
                ))
            }
        },
    };
    Ok(FaultSpec { at: Dur::ZERO, kind: FaultKind::LinkDown, target: FaultTarget::Link(name) })
}

/// One `[[jobs]]` entry, as a workload.
fn parse_job(
    j: usize,
    v: &Value,
    line: Rate,
    stop: Option<Dur>,
) -> Result<(WorkloadSpec, Option<TransportSpec>), ScenarioError> {
    let key = format!("jobs[{j}]");
    let mut r = Reader::new(key.clone(), v)?;
    r.documented(&schema::JOBS.iter().collect::<Vec<_>>());
    let ranks = r
        .opt_int("ranks", 1, u32::MAX as i64)?
        .ok_or_else(|| r.error("ranks", "is required (the number of ranks, one per host)"))? as u32;
    let mut job = Job::new(&key, ranks);
    job.name = r.string("name", &format!("job{j}"))?;
    job.hosts = parse_hosts(&mut r, "hosts", HostSet::All)?;
    job.placement = match r.raw("placement") {
        None => Placement::Packed,
        Some(Value::String(s)) => match s.as_str() {
            "packed" => Placement::Packed,
            "random" => Placement::Random,
            "rerank" => Placement::Rerank,
            other => {
                return Err(r.error(
                    "placement",
                    format!("unknown value \"{other}\" (allowed: {}, or a list of hosts)", Placement::NAMES.join(", ")),
                ))
            }
        },
        Some(Value::Array(_)) => match parse_hosts(&mut r, "placement", HostSet::All)? {
            HostSet::List(l) => Placement::List(l),
            _ => unreachable!("an array is a list"),
        },
        Some(_) => {
            return Err(r.error(
                "placement",
                format!("expected one of: {}, or a list of hosts (one per rank)", Placement::NAMES.join(", ")),
            ))
        }
    };
    job.ranks_per_host = r.int("ranks_per_host", 1, 1 << 10)? as u32;
    job.tp = r.int("tp", 1, 1 << 20)? as u32;
    job.pp = r.int("pp", 1, 1 << 20)? as u32;
    job.ep = r.int("ep", 1, 1 << 20)? as u32;
    job.compute = r.duration("compute")?.unwrap_or(Dur::ZERO);
    job.jitter = r.float("jitter", 0.0, 0.99)?;
    job.microbatches = r.int("microbatches", 1, 1 << 16)? as u32;
    job.activation = r.size("activation")?.unwrap_or(0);
    let start = r.duration("start")?.unwrap_or(Dur::ZERO);
    let transport = match r.raw("transport") {
        None => None,
        Some(t) => Some(parse_transport_at(&format!("{key}.transport"), t, line)?),
    };
    job.on_off = match r.raw("on_off") {
        None => None,
        Some(t) => {
            let mut o = Reader::new(format!("{key}.on_off"), t)?;
            o.documented(&schema::ON_OFF.iter().collect::<Vec<_>>());
            let period = o.duration("period")?.filter(|d| *d > Dur::ZERO).ok_or_else(|| {
                o.error("period", "is required (a duration longer than 0: a burst starts every period)")
            })?;
            let duty = o.float("duty", 1e-6, 1.0)?;
            let bursts = match (o.opt_int("bursts", 1, 1 << 20)?, stop) {
                (Some(b), _) => b as u32,
                (None, Some(stop)) => (stop.ps().saturating_sub(start.ps())).div_ceil(period.ps()).max(1) as u32,
                (None, None) => {
                    return Err(o.error("bursts", "is required unless the scenario has a stop time (bursts until then)"))
                }
            };
            o.finish(&schema::ON_OFF.iter().collect::<Vec<_>>())?;
            Some(OnOff { period, duty, bursts })
        }
    };
    job.startup = match r.raw("startup") {
        None => None,
        Some(t) => Some(parse_startup(&format!("{key}.startup"), t)?),
    };
    job.iterations = match r.opt_int("iterations", 1, 1 << 24)? {
        Some(i) => Some(i as u32),
        None if job.on_off.is_some() => None,
        None => Some(1),
    };
    job.slowdown = match r.raw("stragglers") {
        None => Vec::new(),
        Some(Value::Array(a)) => a
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let mut sr = Reader::new(format!("{key}.stragglers[{i}]"), s)?;
                sr.documented(&schema::STRAGGLERS.iter().collect::<Vec<_>>());
                let rank =
                    sr.opt_int("rank", 0, u32::MAX as i64)?.ok_or_else(|| sr.error("rank", "is required (a rank)"))?;
                let x = sr.float("slowdown", 0.01, 1000.0)?;
                sr.finish(&schema::STRAGGLERS.iter().collect::<Vec<_>>())?;
                Ok((rank as u32, x))
            })
            .collect::<Result<_, ScenarioError>>()?,
        Some(_) => return Err(r.error("stragglers", "expected an array of tables { rank, slowdown }")),
    };
    job.comms = match r.raw("collectives") {
        None => Vec::new(),
        Some(Value::Array(a)) => {
            a.iter().enumerate().map(|(i, c)| parse_job_comm(&key, i, c)).collect::<Result<_, _>>()?
        }
        Some(_) => return Err(r.error("collectives", "expected an array of tables ([[jobs.collectives]])")),
    };
    r.finish(&schema::JOBS.iter().collect::<Vec<_>>())?;
    Ok((WorkloadSpec { kind: WorkloadKind::Job(Box::new(job)), start }, transport))
}

/// A job's `startup` table.
fn parse_startup(path: &str, v: &Value) -> Result<Startup, ScenarioError> {
    let mut r = Reader::new(path, v)?;
    r.documented(&schema::STARTUP.iter().collect::<Vec<_>>());
    let d = Startup::default();
    let pinning = match r.choose("pinning")?.as_str() {
        "none" => Pinning::None,
        "pin_all" => Pinning::PinAll,
        _ => Pinning::Pvdma,
    };
    let device = match r.choose("device")?.as_str() {
        "vf" => Device::Vf,
        "vstellar" => Device::Vstellar,
        _ => Device::None,
    };
    let memory = r.size("memory")?.unwrap_or(d.memory);
    let doorbell = match r.raw("doorbell") {
        None => None,
        Some(Value::String(s)) if s == "shm" => None,
        Some(Value::String(s)) => Some(parse_address(s).ok_or_else(|| {
            r.error(
                "doorbell",
                format!("expected \"shm\" or a guest-physical address such as \"0x7f000000\", got \"{s}\""),
            )
        })?),
        Some(Value::Integer(a)) if *a >= 0 => Some(*a as u64),
        Some(_) => return Err(r.error("doorbell", "expected \"shm\" or a guest-physical address")),
    };
    let regions = match r.raw("regions") {
        None => Vec::new(),
        Some(Value::Array(a)) => a
            .iter()
            .enumerate()
            .map(|(i, x)| {
                let mut g = Reader::new(format!("{path}.regions[{i}]"), x)?;
                let gpa = match g.raw("gpa") {
                    Some(Value::String(s)) => parse_address(s),
                    Some(Value::Integer(a)) if *a >= 0 => Some(*a as u64),
                    _ => None,
                }
                .ok_or_else(|| g.error("gpa", "is required (a guest-physical address such as \"0x40000000\")"))?;
                let size = g.required_size("size")?;
                g.finish(&[&key_doc("gpa"), &key_doc("size")])?;
                Ok((gpa, size))
            })
            .collect::<Result<_, ScenarioError>>()?,
        Some(Value::String(w)) if w == "auto" => Vec::new(),
        Some(_) => return Err(r.error("regions", "expected an array of tables { gpa, size }")),
    };
    let dur =
        |r: &mut Reader<'_>, k: &'static str, d: Dur| -> Result<Dur, ScenarioError> { Ok(r.duration(k)?.unwrap_or(d)) };
    let s = Startup {
        pinning,
        device,
        memory,
        boot: dur(&mut r, "boot", d.boot)?,
        hypervisor_per_gb: dur(&mut r, "hypervisor_per_gb", d.hypervisor_per_gb)?,
        pin_per_gb: dur(&mut r, "pin_per_gb", d.pin_per_gb)?,
        map_miss: dur(&mut r, "map_miss", d.map_miss)?,
        map_cache: r.int_or("map_cache", d.map_cache as i64, 1, 1 << 40)? as u64,
        vstellar_create: dur(&mut r, "vstellar_create", d.vstellar_create)?,
        vstellar_max: r.int_or("vstellar_max", d.vstellar_max as i64, 1, u32::MAX as i64)? as u32,
        max_vfs: r.int_or("max_vfs", d.max_vfs as i64, 0, 1 << 16)? as u32,
        bdfs_per_switch: r.int_or("bdfs_per_switch", d.bdfs_per_switch as i64, 1, 1 << 16)? as u32,
        bdfs_per_vf: r.int_or("bdfs_per_vf", d.bdfs_per_vf as i64, 1, 1 << 16)? as u32,
        containers_per_host: r.opt_int("containers_per_host", 1, 1 << 24)?.map(|c| c as u32),
        doorbell,
        regions,
    };
    r.finish(&schema::STARTUP.iter().collect::<Vec<_>>())?;
    Ok(s)
}

/// `0x...` hexadecimal or a decimal address.
fn parse_address(s: &str) -> Option<u64> {
    let s = s.trim();
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(&h.replace('_', ""), 16).ok(),
        None => s.parse().ok(),
    }
}

/// One `[[jobs.collectives]]` entry.
fn parse_job_comm(key: &str, i: usize, v: &Value) -> Result<JobComm, ScenarioError> {
    let mut r = Reader::new(format!("{key}.collectives[{i}]"), v)?;
    let group = r.choice("group", "dp", &Group::ALL.map(|g| g.name()))?;
    let names: Vec<&str> = CollectiveKind::ALL.iter().map(|k| k.name()).collect();
    let kind_name = r.choice("kind", "", &names)?;
    let kind = CollectiveKind::from_name(&kind_name).expect("choice() only returns allowed kinds");
    // The keys of the workload of this kind, but its hosts: the group gives them.
    let own: Vec<&'static schema::Param> = params_for("workload", &kind_name)
        .into_iter()
        .filter(|p| !["kind", "start", "transport", "hosts"].contains(&p.key))
        .collect();
    r.documented(&schema::JOB_COLLECTIVES.iter().chain(own.iter().copied()).collect::<Vec<_>>());
    let op = parse_collective(&mut r, kind)?;
    let at = match r.raw("at") {
        None => vec![1.0],
        Some(Value::Float(x)) => vec![*x],
        Some(Value::Integer(x)) => vec![*x as f64],
        Some(Value::Array(a)) => a
            .iter()
            .enumerate()
            .map(|(k, x)| match x {
                Value::Float(x) => Ok(*x),
                Value::Integer(x) => Ok(*x as f64),
                _ => Err(ScenarioError::new(&format!("{}[{k}]", r.path("at")), "expected a fraction between 0 and 1")),
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(r.error("at", "expected a fraction of the compute (0 to 1) or a list of them")),
    };
    let blocking = r.bool("blocking")?;
    let allowed: Vec<&schema::Param> = schema::JOB_COLLECTIVES.iter().chain(own).collect();
    r.finish(&allowed)?;
    Ok(JobComm { group: Group::from_name(&group).expect("a choice"), op, at, blocking })
}

/// The operation of a collective workload (or a job's collective): every key but
/// `hosts`, per the kind's schema.
pub(crate) fn parse_collective(r: &mut Reader<'_>, kind: CollectiveKind) -> Result<CollectiveOp, ScenarioError> {
    let mut op = CollectiveOp::new(kind, 0);
    match kind {
        CollectiveKind::Barrier => {}
        CollectiveKind::AllToAllV => op.sizes = parse_size_matrix(r, "sizes")?,
        _ => op.size = r.required_size("size")?,
    }
    // The kinds whose section documents `algorithm` (those with one algorithm may name it).
    if params_for("workload", kind.name()).iter().any(|p| p.key == "algorithm") {
        let names: Vec<&str> = kind.algorithms().iter().map(|a| a.name()).collect();
        let alg = r.choice("algorithm", names[0], &names)?;
        op.algorithm = Algorithm::from_name(&alg);
    }
    if kind.rooted() {
        op.root = r.int("root", 0, u32::MAX as i64)? as u32;
    }
    if kind != CollectiveKind::Barrier {
        op.channels = r.opt_int("channels", 1, MAX_CHANNELS as i64)?.map(|c| c as u32);
    }
    if kind.algorithms().iter().any(|a| a.pipelined()) {
        op.chunk = match r.size("chunk")? {
            Some(0) => return Err(r.error("chunk", "must be at least 1 byte")),
            c => c,
        };
    }
    Ok(op)
}

/// `key`: rows of sizes, one row per sending host (`sizes[i][j]` named in errors).
fn parse_size_matrix(r: &mut Reader<'_>, key: &'static str) -> Result<Vec<u64>, ScenarioError> {
    let Some(v) = r.raw(key) else {
        return Err(r.error(key, "is required (rows of sizes, one row per sending host)"));
    };
    let Value::Array(rows) = v else { return Err(r.error(key, "expected an array of rows of sizes")) };
    let n = rows.len();
    let mut out = Vec::with_capacity(n * n);
    for (i, row) in rows.iter().enumerate() {
        let Value::Array(row) = row else {
            return Err(ScenarioError::new(&format!("{}[{i}]", r.path(key)), "expected a row (an array of sizes)"));
        };
        if row.len() != n {
            return Err(ScenarioError::new(
                &format!("{}[{i}]", r.path(key)),
                format!("has {} sizes; every row needs one per host ({n}, as many as there are rows)", row.len()),
            ));
        }
        for (j, x) in row.iter().enumerate() {
            let at = || format!("{}[{i}][{j}]", r.path(key));
            out.push(match x {
                Value::Integer(b) if *b >= 0 => *b as u64,
                Value::String(s) => crate::units::parse_size(s).map_err(|m| ScenarioError::new(&at(), m))?,
                _ => return Err(ScenarioError::new(&at(), "expected a size such as \"64KB\" or a number of bytes")),
            });
        }
    }
    Ok(out)
}

/// Most toggles one `link_flap` may make (each is an event and a row of the fault log).
pub const MAX_FLAPS: u64 = 1_000_000;

fn parse_fault(i: usize, v: &Value, stop: Option<Dur>) -> Result<FaultSpec, ScenarioError> {
    let mut r = Reader::new(format!("faults[{i}]"), v)?;
    r.documented(&schema::FAULTS.iter().collect::<Vec<_>>());
    let at = r.duration("at")?.ok_or_else(|| r.error("at", "is required (a time such as \"200us\")"))?;
    if let Some(stop) = stop.filter(|&s| at > s) {
        // It would never happen: a run with a stop time ends there.
        return Err(
            r.error("at", format!("{at} is after the scenario's stop time ({stop}): the fault would never happen"))
        );
    }
    let kind = r.choose("kind")?;
    // Names are trimmed, as `--pcap` trims them.
    let link = match r.raw("link") {
        None => None,
        Some(Value::String(s)) => Some(s.trim().to_string()),
        Some(_) => return Err(r.error("link", "expected a port name such as \"leaf[0].up[1]\"")),
    };
    let switch = match r.raw("switch") {
        None => None,
        Some(Value::String(s)) => Some(s.trim().to_string()),
        Some(_) => return Err(r.error("switch", "expected a switch name such as \"spine[1]\"")),
    };
    let need_link = |r: &Reader<'_>| {
        link.clone().map(FaultTarget::Link).ok_or_else(|| {
            r.error("link", format!("is required for kind = \"{kind}\" (a port name such as \"leaf[0].up[1]\")"))
        })
    };
    let need_switch = |r: &Reader<'_>| {
        switch.clone().map(FaultTarget::Switch).ok_or_else(|| {
            r.error("switch", format!("is required for kind = \"{kind}\" (a switch name such as \"spine[1]\")"))
        })
    };
    let either = |r: &Reader<'_>| match (&link, &switch) {
        (Some(l), None) => Ok(FaultTarget::Link(l.clone())),
        (None, Some(s)) => Ok(FaultTarget::Switch(s.clone())),
        _ => Err(r.error("link", format!("kind = \"{kind}\" needs exactly one of link or switch"))),
    };
    let loss = |r: &mut Reader<'_>| -> Result<f64, ScenarioError> {
        if r.raw_peek("loss").is_none() {
            return Err(r.error("loss", "is required (a probability between 0 and 1)"));
        }
        // Required (checked above): the catalog has no default.
        r.float_or("loss", 0.0, 0.0, 1.0)
    };
    let (kind_spec, target) = match kind.as_str() {
        "link_down" => (FaultKind::LinkDown, need_link(&r)?),
        "link_up" => (FaultKind::LinkUp, need_link(&r)?),
        "link_flap" => {
            let period = r
                .duration("period")?
                .filter(|d| *d > Dur::ZERO)
                .ok_or_else(|| r.error("period", "is required for link_flap (a duration longer than 0)"))?;
            let duty = r.float("duty", 0.0, 1.0)?;
            // Both phases must last, or the cable never really changes state.
            let down = period.as_secs_f64() * duty;
            if down < 1e-9 || period.as_secs_f64() - down < 1e-9 {
                return Err(r.error(
                    "duty",
                    format!("period x duty and period x (1 - duty) must each be at least 1ns (got duty {duty} of {period}; a cable that stays down or up does not flap: use link_down or link_up)"),
                ));
            }
            let until = r.duration("until")?;
            if let Some(u) = until.filter(|&u| u <= at) {
                return Err(r.error("until", format!("must be later than at ({at}), got {u}")));
            }
            // A link flapping forever keeps the event queue alive: a run whose flows
            // cannot finish (a QP that gave up) would never end.
            let Some(end) = until.or(stop) else {
                return Err(r.error("until", "is required for link_flap unless the scenario has a stop time"));
            };
            let flaps = end.ps().saturating_sub(at.ps()) / period.ps();
            if flaps > MAX_FLAPS {
                return Err(r.error(
                    "period",
                    format!(
                        "flapping every {period} from {at} to {end} is {flaps} cycles; at most {MAX_FLAPS} are allowed"
                    ),
                ));
            }
            (FaultKind::LinkFlap { period, duty, until }, need_link(&r)?)
        }
        "link_loss" => (FaultKind::LinkLoss(loss(&mut r)?), need_link(&r)?),
        "ev_loss" => {
            let ev =
                r.opt_int("ev", 0, u32::MAX as i64)?
                    .ok_or_else(|| r.error("ev", "is required for ev_loss (an entropy value)"))? as u32;
            (FaultKind::EvLoss { ev, loss: loss(&mut r)? }, need_link(&r)?)
        }
        "switch_down" => (FaultKind::SwitchDown, need_switch(&r)?),
        "switch_up" => (FaultKind::SwitchUp, need_switch(&r)?),
        "delay" => {
            let d = r
                .duration("delay")?
                .ok_or_else(|| r.error("delay", "is required for kind = \"delay\" (a duration)"))?;
            (FaultKind::Delay(d), either(&r)?)
        }
        "rate" => {
            let rate = r
                .rate("rate")?
                .ok_or_else(|| r.error("rate", "is required for kind = \"rate\" (a rate such as \"40Gbps\")"))?;
            (FaultKind::Rate(rate), either(&r)?)
        }
        _ => unreachable!("choice() only returns allowed kinds"),
    };
    // Keys of other kinds were read above (to give each its own message) but do not
    // apply to this one: a `loss` on a link_down would otherwise be silently ignored.
    let applies: &[&str] = match kind.as_str() {
        "link_down" | "link_up" => &["link"],
        "link_flap" => &["link", "period", "duty", "until"],
        "link_loss" => &["link", "loss"],
        "ev_loss" => &["link", "ev", "loss"],
        "switch_down" | "switch_up" => &["switch"],
        "delay" => &["link", "switch", "delay"],
        _ => &["link", "switch", "rate"],
    };
    let allowed: Vec<&schema::Param> =
        schema::FAULTS.iter().filter(|p| ["at", "kind"].contains(&p.key) || applies.contains(&p.key)).collect();
    for p in schema::FAULTS {
        if r.raw_peek(p.key).is_some() && !allowed.iter().any(|a| a.key == p.key) {
            let names: Vec<&str> = allowed.iter().map(|a| a.key).collect();
            return Err(
                r.error(p.key, format!("does not apply to kind = \"{kind}\" (allowed here: {})", names.join(", ")))
            );
        }
    }
    r.finish(&allowed)?;
    Ok(FaultSpec { at, kind: kind_spec, target })
}

fn parse_output(v: &Value) -> Result<OutputSpec, ScenarioError> {
    let mut r = Reader::new("output", v)?;
    r.documented(&schema::OUTPUT.iter().collect::<Vec<_>>());
    let sample_interval = r.duration_d("sample_interval")?;
    if sample_interval > Dur::ZERO && sample_interval < Dur::from_ns(1) {
        // Sample times are written in whole nanoseconds.
        return Err(r.error("sample_interval", format!("must be \"0us\" (off) or at least 1ns, got {sample_interval}")));
    }
    let fct_at = match r.choice("fct_at", "receiver", &["receiver", "sender"])?.as_str() {
        "sender" => FctAt::Sender,
        _ => FctAt::Receiver,
    };
    let out = OutputSpec { sample_interval, plots: r.bool("plots")?, fct_at };
    r.finish(&schema::OUTPUT.iter().collect::<Vec<_>>())?;
    Ok(out)
}
