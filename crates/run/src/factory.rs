//! Transports as the scenario gives them, and the endpoints they become.
//!
//! Values a scenario may leave as `auto` depend on the connection's path (a BDP, a
//! base RTT); [`PathContext`] carries what the run computed for that connection, and
//! [`endpoint_pair`] resolves them.
//!
//! # Adding a transport kind
//! Every fact about a kind is an exhaustive `match` here or in the scenario parser:
//! add the kind to [`transport_kinds!`]'s list and a variant to [`TransportSpec`], and
//! the compiler lists the rest: its name's parsing (`scenario::parse_transport_at`),
//! its schema section (checked by a test), [`TransportSpec::kind`], its QPs, the ports
//! it spans, its headers, its state's size, the keys the run checks, and the endpoints
//! it becomes.

use fabricsim_engine::{Dur, Rate, Rng, Time};
use fabricsim_transport::common::{SprayResponder, SprayResponderConfig};
use fabricsim_transport::mprdma::{EcnCut, MprdmaConfig, MprdmaSender};
use fabricsim_transport::mrc::{EvSetConfig, MrcCcConfig, MrcConfig, MrcSender};
use fabricsim_transport::roce::{RoceConfig, RoceRequester, RoceResponder};
use fabricsim_transport::star::{Role, StarClient, StarConfig, StarServer};
use fabricsim_transport::stellar::{PathAlgo, StellarConfig, StellarSender, WindowCcConfig};
use fabricsim_transport::udmp::{UdmpConfig, UdmpSender};
use fabricsim_transport::{AnyEndpoint, ConnInfo};
use fabricsim_wire::packet::{BASE_HEADER_BYTES, EXT_BYTES, PREAMBLE_IFG_BYTES, RETH_BYTES, STH_BYTES};

/// Defines [`TransportKind`] and its list of every kind from one list of names, so that
/// the list cannot miss a kind.
macro_rules! transport_kinds {
    ($($(#[$doc:meta])* $kind:ident => $name:literal),* $(,)?) => {
        /// A transport kind (`transport.kind`).
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum TransportKind {
            $($(#[$doc])* $kind),*
        }

        impl TransportKind {
            /// Every kind, in the order the documentation lists them.
            pub const ALL: &'static [TransportKind] = &[$(TransportKind::$kind),*];
            /// Their scenario names, in the same order.
            pub const NAMES: &'static [&'static str] = &[$($name),*];

            /// The scenario name (`transport.kind`).
            pub const fn name(self) -> &'static str {
                match self {
                    $(TransportKind::$kind => $name),*
                }
            }
        }
    };
}

transport_kinds! {
    /// RoCEv2 RC with DCQCN.
    Roce => "roce",
    /// K RoCE QPs per connection.
    QpScaling => "qp_scaling",
    /// MPRDMA.
    Mprdma => "mprdma",
    /// STELLAR spraying.
    Stellar => "stellar",
    /// UDMP.
    Udmp => "udmp",
    /// MRC.
    Mrc => "mrc",
    /// StaR.
    Star => "star",
    /// Maestro: chunks over K RoCE QPs.
    Maestro => "maestro",
}

impl TransportKind {
    /// The kind named `name`, if any.
    pub fn from_name(name: &str) -> Option<TransportKind> {
        TransportKind::ALL.iter().copied().find(|k| k.name() == name)
    }

    /// Whether every data packet carries a RETH and fabricsim's extension header
    /// (direct placement in any order and per-packet feedback), or only the first of a
    /// message a RETH (RoCE's WRITE).
    pub const fn every_packet_addressed(self) -> bool {
        match self {
            TransportKind::Roce | TransportKind::QpScaling | TransportKind::Star | TransportKind::Maestro => false,
            TransportKind::Mprdma | TransportKind::Stellar | TransportKind::Udmp | TransportKind::Mrc => true,
        }
    }

    /// Whether one QP sprays over every NIC port of its host (MRC's planes), rather
    /// than being bound to one port.
    pub const fn spans_all_ports(self) -> bool {
        match self {
            TransportKind::Mrc => true,
            TransportKind::Roce
            | TransportKind::QpScaling
            | TransportKind::Mprdma
            | TransportKind::Stellar
            | TransportKind::Udmp
            | TransportKind::Star
            | TransportKind::Maestro => false,
        }
    }
}

/// The protocol every connection uses, as the scenario gives it.
#[derive(Clone, Debug, PartialEq)]
pub enum TransportSpec {
    /// RoCEv2 RC.
    Roce(RoceConfig),
    /// K RoCE QPs per connection.
    QpScaling {
        /// QPs per connection.
        qps: u32,
        /// Each QP's RoCE settings.
        roce: RoceConfig,
    },
    /// MPRDMA.
    Mprdma(MprdmaSpec),
    /// STELLAR spraying.
    Stellar(StellarSpec),
    /// UDMP.
    Udmp(UdmpSpec),
    /// MRC.
    Mrc(MrcSpec),
    /// StaR.
    Star(StarSpec),
    /// Maestro.
    Maestro(MaestroSpec),
}

/// How a Maestro connection's QPs get their UDP source ports (`path_selection`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PathSelection {
    /// Worked out from the switches' ECMP hash: the ports whose paths share fewest
    /// links, from a pool of candidates.
    Hash,
    /// Discovered by probing, in rounds of 2K candidate QPs (the paper's procedure).
    Probe,
    /// At random, as RoCE draws them (the naive baseline).
    Random,
}

impl PathSelection {
    /// Every choice's scenario name.
    pub const NAMES: &'static [&'static str] = &["hash", "probe", "random"];

    /// The choice named `name`, if any.
    pub fn from_name(name: &str) -> Option<PathSelection> {
        match name {
            "hash" => Some(PathSelection::Hash),
            "probe" => Some(PathSelection::Probe),
            "random" => Some(PathSelection::Random),
            _ => None,
        }
    }
}

/// Maestro settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MaestroSpec {
    /// QPs (paths) per connection, K.
    pub paths: u32,
    /// How their source ports are chosen.
    pub path_selection: PathSelection,
    /// Chunking, balancing and monitoring.
    pub policy: fabricsim_nic::MaestroConfig,
    /// How often a busy connection's QPs' paths are traced again and a QP whose path
    /// overlaps others' is moved to a candidate port of a better one (`None`: never;
    /// only with hash or probe selection).
    pub reselect_interval: Option<Dur>,
    /// Each QP's RoCE settings.
    pub roce: RoceConfig,
}

/// StaR settings (`None` = auto).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StarSpec {
    /// Every connection stateless, or stateful while the NICs have contexts free.
    pub auto: bool,
    /// Which end is the server.
    pub server: StarServerEnd,
    /// Initial window, bytes.
    pub init_cwnd: Option<u64>,
    /// DCTCP gain.
    pub g: f64,
    /// Retransmission timeout.
    pub rto: Dur,
    /// Resends of one piece after timeouts before the connection fails.
    pub retry_limit: u32,
    /// The RoCE settings of auto mode's stateful connections.
    pub roce: RoceConfig,
}

/// Which end of a StaR connection is the stateless server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StarServerEnd {
    /// The receiver.
    Receiver,
    /// The sender.
    Sender,
    /// The end with more connections (the receiver on a tie).
    Busier,
}

/// How one StaR connection is built (see [`PathContext::star`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StarChoice {
    /// The sender is the stateless server (else the receiver is).
    pub server_sends: bool,
    /// Auto mode found contexts free at both ends: an ordinary RoCE connection.
    pub stateful: bool,
}

/// MPRDMA settings (`None` = auto).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MprdmaSpec {
    /// Virtual paths.
    pub paths: u32,
    /// Initial window, packets.
    pub init_cwnd: Option<u32>,
    /// OOO tolerance.
    pub delta: u32,
    /// Receiver bitmap, packets.
    pub window: Option<u32>,
    /// Exploration probability per RTT.
    pub explore: f64,
    /// Smallest RTO.
    pub min_rto: Dur,
    /// Reaction to an ECN-marked ACK.
    pub ecn_cut: EcnCut,
}

/// STELLAR settings (`None` = auto).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StellarSpec {
    /// Paths per connection.
    pub paths: u32,
    /// Path algorithm.
    pub algo: PathAlgo,
    /// Fixed RTO.
    pub rto: Dur,
    /// Receiver bitmap, packets.
    pub window: Option<u32>,
    /// ECN gain.
    pub g: f64,
    /// Delay-cut strength.
    pub beta: f64,
    /// Delay target.
    pub target: Option<Dur>,
    /// Largest window in BDPs.
    pub cwnd_max: f64,
}

/// UDMP settings (`None` = auto).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct UdmpSpec {
    /// Paths per connection.
    pub paths: u32,
    /// EWMA weight.
    pub alpha: f64,
    /// Smallest increase factor when the gradient is not positive.
    pub min_increase: f64,
    /// Severe-congestion threshold.
    pub t_high: Option<Dur>,
    /// Exploration probability per RTT.
    pub explore: f64,
    /// OOO-aware path selection.
    pub ooo_aware: bool,
    /// Lag tolerance in packets (`None`: one BDP, at least 64).
    pub delta: Option<u32>,
    /// Receiver bitmap, packets.
    pub window: Option<u32>,
    /// Smallest RTO.
    pub min_rto: Dur,
    /// Fixed token rate (load balancer only).
    pub fixed_rate: Option<Rate>,
    /// Sender flow control against the receiver's bitmap.
    pub flow_control: bool,
}

/// MRC settings (`None` = auto).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MrcSpec {
    /// Active EVs per connection (`None`: 128, rounded down to a multiple of the
    /// planes).
    pub evs: Option<u32>,
    /// Backup EVs per plane.
    pub backup: Option<u32>,
    /// Skips per ECN echo.
    pub ecn_penalty: u8,
    /// Skips per trim NACK.
    pub trim_penalty: u8,
    /// Penalty at which an EV is swapped for a backup (0: never).
    pub ecn_swap: u8,
    /// Probe period.
    pub probe_interval: Dur,
    /// Answers that resurrect an EV.
    pub probe_successes: u8,
    /// Probe timeout.
    pub probe_timeout: Option<Dur>,
    /// Longest probe period after failed probes.
    pub probe_backoff_max: Dur,
    /// RACK reordering window.
    pub reo: Option<Dur>,
    /// Smallest RTO.
    pub min_rto: Dur,
    /// Largest RTO.
    pub max_rto: Dur,
    /// WRITE with immediate at message ends.
    pub write_imm: bool,
    /// Tail loss probes.
    pub tail_probe: bool,
    /// A silent timeout's resend on two EVs.
    pub timeout_copy: bool,
    /// Window cut on a trim.
    pub md: f64,
    /// Largest window in BDPs.
    pub cwnd_max: f64,
    /// RTT above which the window is cut (`None`: never, the default).
    pub delay_target: Option<Dur>,
    /// Reverse-EV probe period.
    pub reverse_probe: Option<Dur>,
}

impl MrcSpec {
    /// The active EVs of a connection over `planes` planes: as given (a multiple of
    /// them, checked when the run is built), or 128 rounded down to a multiple.
    pub fn evs_for(&self, planes: u32) -> u32 {
        let planes = planes.max(1);
        self.evs.unwrap_or((128 / planes * planes).max(planes))
    }
}

impl TransportSpec {
    /// Its kind.
    pub fn kind(&self) -> TransportKind {
        match self {
            TransportSpec::Roce(_) => TransportKind::Roce,
            TransportSpec::QpScaling { .. } => TransportKind::QpScaling,
            TransportSpec::Mprdma(_) => TransportKind::Mprdma,
            TransportSpec::Stellar(_) => TransportKind::Stellar,
            TransportSpec::Udmp(_) => TransportKind::Udmp,
            TransportSpec::Mrc(_) => TransportKind::Mrc,
            TransportSpec::Star(_) => TransportKind::Star,
            TransportSpec::Maestro(_) => TransportKind::Maestro,
        }
    }

    /// The scenario name of this transport.
    pub fn name(&self) -> &'static str {
        self.kind().name()
    }

    /// Whether every packet carries a RETH and fabricsim's extension header.
    fn multipath_headers(&self) -> bool {
        self.kind().every_packet_addressed()
    }

    /// Number of QPs (requester/responder pairs) one connection uses.
    pub fn qps(&self) -> u32 {
        match self {
            TransportSpec::QpScaling { qps, .. } => *qps,
            TransportSpec::Maestro(s) => s.paths,
            TransportSpec::Roce(_)
            | TransportSpec::Mprdma(_)
            | TransportSpec::Stellar(_)
            | TransportSpec::Udmp(_)
            | TransportSpec::Mrc(_)
            | TransportSpec::Star(_) => 1,
        }
    }

    /// Whether one QP sprays over every NIC port of its host.
    pub fn spans_all_ports(&self) -> bool {
        self.kind().spans_all_ports()
    }

    /// The active entropy values it asks for, which must split equally over the planes:
    /// `Some(None)` for the default, `None` for a kind without EV sets.
    pub fn planed_evs(&self) -> Option<Option<u32>> {
        match self {
            TransportSpec::Mrc(s) => Some(s.evs),
            TransportSpec::Roce(_)
            | TransportSpec::QpScaling { .. }
            | TransportSpec::Mprdma(_)
            | TransportSpec::Stellar(_)
            | TransportSpec::Udmp(_)
            | TransportSpec::Star(_)
            | TransportSpec::Maestro(_) => None,
        }
    }

    /// A delay target that cuts the window whenever an RTT sample exceeds it, with its
    /// key: `None` for a kind without one.
    pub fn window_cutting_target(&self) -> Option<(&'static str, Option<Dur>)> {
        match self {
            TransportSpec::Mrc(s) => Some(("delay_target", s.delay_target)),
            TransportSpec::Stellar(s) => Some(("target", s.target)),
            TransportSpec::Roce(_)
            | TransportSpec::QpScaling { .. }
            | TransportSpec::Mprdma(_)
            | TransportSpec::Udmp(_)
            | TransportSpec::Star(_)
            | TransportSpec::Maestro(_) => None,
        }
    }
}

/// What the run knows about one connection's path.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PathContext {
    /// Unloaded round trip: a full data frame out, an ACK back.
    pub base_rtt: Dur,
    /// Bytes in flight that fill the connection's NIC ports for one base RTT.
    pub bdp_bytes: f64,
    /// StaR: which end is the server and whether auto mode made it stateful (unused by
    /// other kinds).
    pub star: StarChoice,
    /// The UDP source port the run chose for this QP (Maestro's path selection);
    /// `None`: a random one, as RoCE drivers draw it.
    pub sport: Option<u16>,
}

/// Heap bytes of one connection's endpoints as built, measured with the Python
/// package's counting allocator (`heap_built_bytes` over 56 and 240 connections): a
/// RoCE QP pair, one path of MPRDMA / STELLAR / UDMP, one MRC entropy value.
const QP_BYTES: u64 = 2_500;
const PATH_BYTES: u64 = 48;
const EV_BYTES: u64 = 350;

/// Estimated heap bytes of one connection's endpoints over `planes` NIC ports, and
/// the transport key that drives it.
pub fn state_bytes(spec: &TransportSpec, planes: u32) -> (u64, &'static str) {
    match spec {
        TransportSpec::Roce(_) | TransportSpec::Star(_) => (QP_BYTES, "kind"),
        TransportSpec::QpScaling { qps, .. } => (QP_BYTES * *qps as u64, "qps"),
        TransportSpec::Maestro(s) => (QP_BYTES * s.paths as u64, "paths"),
        TransportSpec::Mprdma(MprdmaSpec { paths, .. })
        | TransportSpec::Stellar(StellarSpec { paths, .. })
        | TransportSpec::Udmp(UdmpSpec { paths, .. }) => (QP_BYTES + PATH_BYTES * *paths as u64, "paths"),
        TransportSpec::Mrc(s) => {
            let evs = s.evs_for(planes);
            let per_plane = (evs / planes.max(1)).max(1);
            let backups = s.backup.unwrap_or((per_plane / 4).max(2)) as u64 * planes as u64;
            (QP_BYTES + EV_BYTES * (evs as u64 + backups), "evs")
        }
    }
}

/// The requester/responder pair of one QP of a connection, created at `now`.
pub fn endpoint_pair(
    spec: &TransportSpec,
    req: ConnInfo,
    resp: ConnInfo,
    ctx: &PathContext,
    now: Time,
    rng: &mut Rng,
) -> (AnyEndpoint, AnyEndpoint) {
    // Like Linux's RoCEv2 driver: a random UDP source port in 0xC000..=0xFFFF per QP.
    let sport = 0xC000 | (rng.below(0x4000) as u16);
    let sport = ctx.sport.unwrap_or(sport);
    let rsport = 0xC000 | (rng.below(0x4000) as u16);
    let sender_rng = Rng::new(rng.next_u64());
    let receiver_rng = Rng::new(rng.next_u64());
    let bdp_pkts = (ctx.bdp_bytes / req.mtu as f64).ceil().max(1.0) as u32;
    let spray = |window: u32, nack_beyond: bool| SprayResponderConfig {
        window,
        nack_beyond,
        nack_trimmed: false,
        sack: false,
        reverse_probe: None,
    };
    match spec {
        TransportSpec::Roce(cfg)
        | TransportSpec::QpScaling { roce: cfg, .. }
        | TransportSpec::Maestro(MaestroSpec { roce: cfg, .. }) => (
            AnyEndpoint::RoceRequester(RoceRequester::new(req, *cfg, sport)),
            AnyEndpoint::RoceResponder(RoceResponder::new(resp, *cfg, rsport)),
        ),
        TransportSpec::Mprdma(s) => {
            let window = s.window.unwrap_or(bdp_pkts.max(2 * s.delta));
            let cfg = MprdmaConfig {
                paths: s.paths,
                init_cwnd: s.init_cwnd.unwrap_or(bdp_pkts),
                delta: s.delta,
                window,
                explore: s.explore,
                min_rto: s.min_rto,
                ecn_cut: s.ecn_cut,
            };
            (
                AnyEndpoint::Mprdma(MprdmaSender::new(req, cfg, sender_rng)),
                AnyEndpoint::Spray(SprayResponder::new(resp, spray(window, true), receiver_rng)),
            )
        }
        TransportSpec::Stellar(s) => {
            // Loss is found only by the RTO, so the bitmap must cover what the sender
            // can send meanwhile: twice an RTO at line rate (at least 4 BDPs).
            let rto_pkts = (req.port_rate.bps() as f64 / 8.0 * s.rto.as_secs_f64() / req.mtu as f64) as u32;
            let window = s.window.unwrap_or((4 * bdp_pkts).max(2 * rto_pkts).max(512));
            let mtu = req.mtu as f64;
            let cc = WindowCcConfig {
                g: s.g,
                beta: s.beta,
                target: s.target.unwrap_or(Dur(ctx.base_rtt.ps() * 3 / 2)),
                init: ctx.bdp_bytes.max(mtu),
                max: (ctx.bdp_bytes * s.cwnd_max).max(mtu),
                mtu,
            };
            let cfg = StellarConfig { paths: s.paths, algo: s.algo, rto: s.rto, base_rtt: ctx.base_rtt, window, cc };
            (
                AnyEndpoint::Stellar(StellarSender::new(req, cfg, sender_rng)),
                AnyEndpoint::Spray(SprayResponder::new(resp, spray(window, false), receiver_rng)),
            )
        }
        TransportSpec::Udmp(s) => {
            // The lag that marks a path slow: one BDP by default (the paper finds
            // UDMP's reordering stays within a BDP; a fixed 64 packets, its Fig. 7
            // value, is below what spraying reorders with 1 KB packets, and the test
            // then herded whole switches' traffic onto one uplink). Within the bitmap
            // if that is set.
            let delta = s.delta.unwrap_or(bdp_pkts.max(64)).min(s.window.unwrap_or(u32::MAX));
            let window = s.window.unwrap_or(bdp_pkts.max(2 * delta));
            let cfg = UdmpConfig {
                paths: s.paths,
                base_rtt: ctx.base_rtt,
                alpha: s.alpha,
                min_increase: s.min_increase,
                t_high: s.t_high.unwrap_or(ctx.base_rtt.mul(5)),
                explore: s.explore,
                ooo_aware: s.ooo_aware,
                delta,
                bdp_packets: bdp_pkts,
                min_rto: s.min_rto,
                fixed_rate: s.fixed_rate,
                window: if s.flow_control { window } else { u32::MAX },
            };
            (
                AnyEndpoint::Udmp(UdmpSender::new(req, cfg, sender_rng)),
                AnyEndpoint::Spray(SprayResponder::new(resp, spray(window, true), receiver_rng)),
            )
        }
        TransportSpec::Mrc(s) => {
            let planes = req.ports.max(1) as u32;
            let evs = s.evs_for(planes);
            let per_plane = (evs / planes).max(1);
            let mtu = req.mtu as f64;
            let cfg = MrcConfig {
                evs: EvSetConfig {
                    active: evs,
                    backup_per_plane: s.backup.unwrap_or((per_plane / 4).max(2)),
                    ecn_penalty: s.ecn_penalty,
                    trim_penalty: s.trim_penalty,
                    ecn_swap: s.ecn_swap,
                    ecn_swap_window: ctx.base_rtt.mul(4),
                    probe_interval: s.probe_interval,
                    probe_successes: s.probe_successes,
                    probe_timeout: s.probe_timeout.unwrap_or(ctx.base_rtt.mul(4)),
                    probe_backoff_max: s.probe_backoff_max,
                },
                cc: MrcCcConfig {
                    init: ctx.bdp_bytes.max(mtu),
                    max: (ctx.bdp_bytes * s.cwnd_max).max(mtu),
                    md: s.md,
                    mtu,
                    target: s.delay_target,
                },
                // Sprayed packets reorder by whole queueing delays: start RACK's window at
                // one base RTT (still a few tens of microseconds to spot a dead path).
                reo: s.reo.unwrap_or(ctx.base_rtt.max(Dur::from_us(2))),
                min_rto: s.min_rto,
                max_rto: s.max_rto,
                base_rtt: ctx.base_rtt,
                write_imm: s.write_imm,
                tail_probe: s.tail_probe,
                timeout_copy: s.timeout_copy,
            };
            let rcfg = SprayResponderConfig {
                window: u32::MAX,
                nack_beyond: false,
                nack_trimmed: true,
                sack: true,
                reverse_probe: Some(s.reverse_probe.unwrap_or(ctx.base_rtt)),
            };
            (
                AnyEndpoint::Mrc(MrcSender::new(req, cfg, now, sender_rng)),
                AnyEndpoint::Spray(SprayResponder::new(resp, rcfg, receiver_rng)),
            )
        }
        TransportSpec::Star(s) if ctx.star.stateful => (
            AnyEndpoint::RoceRequester(RoceRequester::new(req, s.roce, sport)),
            AnyEndpoint::RoceResponder(RoceResponder::new(resp, s.roce, rsport)),
        ),
        TransportSpec::Star(s) => {
            let cfg = StarConfig {
                init_cwnd: s.init_cwnd.unwrap_or(ctx.bdp_bytes as u64).clamp(req.mtu as u64, u32::MAX as u64) as u32,
                dctcp_g: s.g,
                rto: s.rto,
                retry_limit: s.retry_limit,
            };
            if ctx.star.server_sends {
                (
                    AnyEndpoint::StarServer(StarServer::new(req, cfg, Role::ServerSends, sport)),
                    AnyEndpoint::StarClient(StarClient::new(resp, cfg, Role::ServerSends, rsport)),
                )
            } else {
                (
                    AnyEndpoint::StarClient(StarClient::new(req, cfg, Role::ServerReceives, sport)),
                    AnyEndpoint::StarServer(StarServer::new(resp, cfg, Role::ServerReceives, rsport)),
                )
            }
        }
    }
}

/// Packets needed for a `size`-byte message.
pub fn packets(size: u64, mtu: u32) -> u64 {
    size.div_ceil(mtu as u64).max(1)
}

/// Bytes all the packets of a `size`-byte message occupy on the wire (its first, middle
/// and last frames differ at most).
pub fn message_wire_bytes(spec: &TransportSpec, size: u64, mtu: u32) -> u64 {
    let n = packets(size, mtu);
    let frame = |j| frame_wire_bytes(spec, size, mtu, j);
    match n {
        1 => frame(0),
        _ => frame(0) + frame(1) * (n - 2) + frame(n - 1),
    }
}

/// Bytes packet `j` of a `size`-byte message occupies on the wire (preamble and gap
/// included).
pub fn frame_wire_bytes(spec: &TransportSpec, size: u64, mtu: u32, j: u64) -> u64 {
    let n = packets(size, mtu);
    let payload = if j + 1 == n { size - (n - 1) * mtu as u64 } else { mtu as u64 };
    let base = payload + (BASE_HEADER_BYTES + PREAMBLE_IFG_BYTES) as u64;
    if spec.kind() == TransportKind::Star {
        // Every RDP (and SDP) carries the StaR header.
        base + STH_BYTES as u64
    } else if spec.multipath_headers() {
        // Every packet carries its address and the extension header.
        base + (RETH_BYTES + EXT_BYTES) as u64
    } else {
        // RETH only on the first packet.
        base + if j == 0 { RETH_BYTES as u64 } else { 0 }
    }
}

/// Wire bytes of an acknowledgement (for base RTTs).
pub fn ack_wire_bytes(spec: &TransportSpec) -> u64 {
    let header = match spec.kind() {
        TransportKind::Star => STH_BYTES,
        _ if spec.multipath_headers() => EXT_BYTES,
        _ => 4,
    };
    (BASE_HEADER_BYTES + PREAMBLE_IFG_BYTES + header) as u64
}
