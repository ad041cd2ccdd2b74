//! The scenario schema: every key, its type, default, unit and meaning.
//!
//! This table is the single source of truth: the parser reads defaults from it,
//! `fabricsim list` prints it and the README's tables are generated from it. A
//! [`Reader`] walks one TOML table, takes keys through their [`Param`], names the full
//! key path in every error and refuses keys the schema does not know.

use crate::factory::TransportKind;
use crate::units::{parse_duration, parse_rate, parse_size};
use crate::{quoted, ScenarioError};
use fabricsim_engine::{Dur, Rate};
use serde::Serialize;
use toml::Value;

/// The type of a scenario value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Ty {
    /// A non-negative integer.
    Int,
    /// A number.
    Float,
    /// `true` / `false`.
    Bool,
    /// A string such as `"100Gbps"`.
    Rate,
    /// A string such as `"1us"`.
    Duration,
    /// A string such as `"8MB"` or an integer number of bytes.
    Size,
    /// One of a fixed set of strings.
    Choice,
    /// A string.
    Str,
    /// A count, a list of host indices, or `"all"`.
    Hosts,
    /// A boolean or a table of sub-parameters.
    Table,
    /// An array of tables.
    List,
    /// A list of names (strings).
    Names,
}

/// One key of the schema.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Param {
    /// Key name.
    pub key: &'static str,
    /// Value type.
    pub ty: Ty,
    /// Default, as written in a scenario file ("" if required; prose if derived).
    pub default: &'static str,
    /// Allowed values for choices.
    pub choices: &'static [&'static str],
    /// What it means, its unit and its source.
    pub doc: &'static str,
}

/// A group of keys: a section, or one `kind` of a section.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Section {
    /// TOML table name (`topology`, `fabric`, ...).
    pub section: &'static str,
    /// The `kind` this group applies to, if any.
    pub kind: Option<&'static str>,
    /// What it is.
    pub doc: &'static str,
    /// Its keys.
    pub params: &'static [Param],
}

const fn p(key: &'static str, ty: Ty, default: &'static str, doc: &'static str) -> Param {
    Param { key, ty, default, choices: &[], doc }
}
const fn c(key: &'static str, default: &'static str, choices: &'static [&'static str], doc: &'static str) -> Param {
    Param { key, ty: Ty::Choice, default, choices, doc }
}

/// Topology kinds.
pub const TOPOLOGY_KINDS: &[&str] = &["leaf_spine", "fat_tree", "multi_plane", "htsim"];
/// Transport kinds.
pub const TRANSPORT_KINDS: &[&str] = TransportKind::NAMES;
/// Workload kinds.
pub const WORKLOAD_KINDS: &[&str] = &[
    "flows",
    "permutation",
    "incast",
    "all_to_all",
    "all_reduce",
    "all_gather",
    "reduce_scatter",
    "broadcast",
    "reduce",
    "gather",
    "scatter",
    "all_to_allv",
    "barrier",
    "htsim",
    "chakra",
    "message_rate",
    "rpc",
    "poisson",
    "constant_rate",
];

/// Top-level keys.
pub const TOP: &[Param] = &[
    p("name", Ty::Str, "\"scenario\"", "Name of the scenario, used in output folder names."),
    p("seed", Ty::Int, "1", "Seed of every random stream (ECMP seeds, source ports, permutations, loss)."),
    p("stop", Ty::Duration, "none", "Stop simulating at this time even if flows remain (they are reported unfinished). Default: run until every flow has finished."),
    p("stall_after", Ty::Duration, "1s", "End the run as stalled when messages are under way but for this long of simulated time none started or completed and no new data was placed (a transport retrying forever into a dead link would otherwise never end); the run ends at most a quarter of this later. Keep it above the longest retransmission timeout (10 ms after backoff), or a flow waiting one out counts as stalled. \"none\" waits forever."),
    p("partitions", Ty::Int, "1", "Split the fabric into this many partitions (1 to 8), simulated side by side on as many threads and synchronised every smallest cross-partition link delay. Results depend on the number of partitions, never on thread timing: a scenario gives the same results on any machine, and differ from partitions = 1 only in the order of simultaneous events. Needs links with a delay."),
    p("topology", Ty::Table, "", "The fabric's shape and links."),
    p("fabric", Ty::Table, "see [fabric]", "Switch behaviour: buffers, ECN, PFC, trimming, routing."),
    p("transport", Ty::Table, "kind = \"roce\"", "The protocol every connection uses."),
    p("workload", Ty::List, "", "One table or an array of tables of traffic (optional with `jobs`)."),
    p("jobs", Ty::List, "none", "Array of tables: training jobs (ranks on hosts, parallelism groups, iterations of compute and collectives). With jobs, `workload` may be left out."),
    p("faults", Ty::List, "none", "Array of tables: failures and degradations during the run, each at a time."),
    p("output", Ty::Table, "see [output]", "What the run records."),
    p("nic", Ty::Table, "model = \"ideal\"", "The hosts' NICs: ideal (every packet processed in no time) or modelled resources (pipelines, QP context cache, address translation, PCIe)."),
];

/// Keys every topology has.
pub const TOPOLOGY_COMMON: &[Param] = &[
    c("kind", "", TOPOLOGY_KINDS, "The topology builder."),
    p("host_link", Ty::Rate, "100Gbps", "Rate of each host NIC port and its leaf link."),
    p("fabric_link", Ty::Rate, "= host_link", "Rate of switch-to-switch links."),
    p("link_delay", Ty::Duration, "1us", "One-way propagation delay of every link."),
    p("mtu", Ty::Int, "4096", "RoCE path MTU: largest payload per packet, bytes (256..9000). Headers come on top."),
    p("switch_buffer", Ty::Size, "32MB", "Shared packet buffer per switch. Under PFC it must hold, for every port at once, fabric.pfc.min_xoff plus the headroom for what arrives after a PAUSE (two link delays of bytes and two frames), or PFC could not be lossless and the scenario is refused."),
];

const LEAF_SPINE: &[Param] = &[
    p("leaves", Ty::Int, "4", "Leaf (ToR) switches."),
    p("spines", Ty::Int, "4", "Spine switches; every leaf has one link to every spine."),
    p("hosts_per_leaf", Ty::Int, "8", "Hosts under each leaf."),
];
const HTSIM_TOPO: &[Param] = &[p(
    "file",
    Ty::Str,
    "",
    "An htsim fat-tree topology file (.topo), relative to the scenario's folder: Nodes, Tiers (2: a leaf_spine, 3: a fat_tree), Podsize, and per tier Downlink_speed_Gbps, Radix_Down, Radix_Up, Downlink_Latency_ns (host_link, fabric_link and link_delay come from it). Bundles, unequal latencies, switch latencies and non-fat-tree pods are refused (see the README).",
)];
const FAT_TREE: &[Param] = &[
    p(
        "k",
        Ty::Int,
        "4",
        "Switch radix (even): k pods of k/2 edge and k/2 aggregation switches, (k/2)^2 cores, k^3/4 hosts. At most 1024 switches per tier (k up to 44 with every pod).",
    ),
    p("pods", Ty::Int, "= k", "Number of pods (fewer than k makes a partial fat-tree, e.g. UDMP's 5-pod fabric)."),
    p("hosts_per_edge", Ty::Int, "= k/2", "Hosts per edge switch (more than k/2 oversubscribes the edge)."),
    p(
        "oversubscription",
        Ty::Int,
        "1",
        "Aggregation-to-core ratio: each aggregation switch keeps (k/2)/ratio core uplinks. Must divide k/2.",
    ),
];
const MULTI_PLANE: &[Param] = &[
    p("planes", Ty::Int, "4", "Parallel planes = NIC ports per host (MRC: 4 x 200G or 8 x 100G). At most 8."),
    p("groups", Ty::Int, "4", "Host groups = T0 switches per plane."),
    p("hosts_per_group", Ty::Int, "8", "Hosts per group."),
    p("t1_per_plane", Ty::Int, "4", "T1 switches per plane; every T0 links to every T1 of its plane."),
];

/// `[fabric]` keys.
pub const FABRIC: &[Param] = &[
    p("pfc", Ty::Table, "true", "Lossless data class with PFC. `false` drops when full. A table sets the keys of [fabric.pfc]; `true` is their defaults."),
    p("ecn", Ty::Table, "true", "RED ECN marking at dequeue. `false`: none. A table sets the keys of [fabric.ecn]; `true` is their defaults."),
    p("trimming", Ty::Table, "false", "Cut the payload of a data packet that would be dropped and forward its header at control priority. A table sets `threshold` (size): also trim once the data queue holds that much."),
    c("routing", "ecmp", &["ecmp", "srv6"], "ecmp: switches hash the 5-tuple with a per-switch seed. srv6: the sender's entropy value picks the path, encoded as a uSID destination address (MRC section 2.3)."),
    p("drop_alpha", Ty::Float, "1.0", "Lossy admission: a port's data queue may hold at most drop_alpha x free buffer (dynamic threshold); switch_buffer x drop_alpha must hold one MTU-sized packet."),
    p("link_loss", Ty::Float, "0.0", "Probability that a frame is lost on a link, on every link (random loss)."),
    p("reroute_after", Ty::Duration, "10ms", "With ECMP: after a link or switch fails or recovers, the tables are recomputed around it this long later (a converged routing protocol); \"none\" keeps them static. SRv6 tables are always static."),
];

const ROCE: &[Param] = &[
    c("cc", "dcqcn", &["dcqcn", "none"], "Congestion control: DCQCN rate control, or none (line rate)."),
    p("dcqcn", Ty::Table, "preset hpcc", "DCQCN parameters: `preset` (\"hpcc\": HPCC ns-3's run.py --cc dcqcn; \"hpcc_paper\": its dcqcn_paper; \"firmware\": ConnectX defaults; \"paper\": Zhu et al. 2015) and any of `g`, `alpha_interval`, `decrease_interval`, `increase_interval`, `byte_counter`, `fast_recovery`, `rate_ai`, `rate_hai`, `min_rate`, `clamp_target`, `cnp_interval` to override it."),
    p("ack_interval", Ty::Int, "1", "The responder ACKs every this many in-order packets (HPCC ns-3: 1), and every message end."),
    p("rto", Ty::Duration, "67.108864ms", "Retransmission timeout (at least 1us): go back to the first unacknowledged PSN. Default: InfiniBand's local ACK timeout 4.096us x 2^14, ConnectX's usual setting (NCCL sets 2^18-2^20, 1-4 s); a shorter one fires on a lossless fabric whose PFC holds packets longer (a 32:1 incast with PFC held them over 1 ms). Lossy scenarios that want quick recovery set their own."),
    p("retry_limit", Ty::Int, "7", "Timeouts in a row without progress before the QP fails (InfiniBand retry_cnt)."),
    p("nak_interval", Ty::Duration, "500us", "The responder repeats a NAK for the same missing PSN at most this often (HPCC ns-3). \"none\": never, as InfiniBand specifies (one NAK per sequence error); a resend lost again is then found by the timeout and counts against retry_limit, where repeats send the QP back each time, for ever if that PSN is always lost."),
];

const QP_SCALING: &[Param] = &[
    p("qps", Ty::Int, "4", "RoCE QPs per connection (UDMP's baselines: 16, 32). A message is split evenly over them; each has its own UDP source port, go-back-N and DCQCN."),
    c("cc", "dcqcn", &["dcqcn", "none"], "Per-QP congestion control, as for roce."),
    p("dcqcn", Ty::Table, "preset hpcc", "Per-QP DCQCN parameters, as for roce."),
    p("ack_interval", Ty::Int, "1", "As for roce."),
    p("rto", Ty::Duration, "67.108864ms", "As for roce."),
    p("retry_limit", Ty::Int, "7", "As for roce."),
    p("nak_interval", Ty::Duration, "500us", "As for roce."),
];

const MPRDMA: &[Param] = &[
    p("paths", Ty::Int, "256", "Virtual paths (entropy values) per connection."),
    p("init_cwnd", Ty::Int, "auto", "Initial window in packets; auto = one BDP of the connection's path."),
    p("delta", Ty::Int, "64", "OOO tolerance: an ACK more than delta PSNs below the highest acknowledged shrinks the window by one and clocks nothing out (UDMP Fig. 7 uses 64)."),
    p("window", Ty::Int, "auto", "Receiver bitmap in packets (PSNs beyond it are NACKed); auto = one BDP, at least 2 x delta (128 packets with the default delta)."),
    p("explore", Ty::Float, "0.01", "Probability per round trip that the next packet tries a new random path."),
    p("min_rto", Ty::Duration, "100us", "Smallest retransmission timeout, at least 1us (RFC 6298 estimate with backoff above it)."),
    c("ecn_cut", "half_packet", &["half_packet", "halve"], "Reaction to an ECN-marked ACK (the UDMP paper's \"decreases by 1/2\" reads either way): cwnd -= 1/2 per marked ACK (MP-RDMA's rule), or cwnd /= 2 per marked ACK (the reading that reproduces the paper's Fig. 6a)."),
];

const STELLAR: &[Param] = &[
    p("paths", Ty::Int, "128", "Paths (entropy values) per connection (STELLAR production: 128)."),
    c("path_algo", "obs", &["obs", "rr", "dwrr", "best_rtt", "mprdma", "single"], "Per-packet path choice: oblivious spraying, round robin, dynamic weighted round robin, lowest RTT, ACK-clocked on the ACK's path, or one fixed path."),
    p("rto", Ty::Duration, "250us", "Fixed retransmission timeout, at least 1us (STELLAR section 7.2); the lost packet is resent on another path."),
    p("window", Ty::Int, "auto", "Receiver bitmap in packets; the sender keeps new PSNs within it. auto = max(4 BDP, 2 RTOs at line rate, 512): losses are only found by the RTO."),
    p("g", Ty::Float, "0.0625", "ECN-fraction gain of the shared window (DCTCP-style; fabricsim's, the paper gives no CC parameters)."),
    p("beta", Ty::Float, "0.5", "Strength of the delay cut once the smoothed RTT exceeds target (fabricsim's)."),
    p("target", Ty::Duration, "auto", "RTT above which the window is cut; auto = 1.5 x the path's base RTT (fabricsim's). At least every connection's unloaded round trip."),
    p("cwnd_max", Ty::Float, "1.5", "Largest window, in BDPs (the window starts at one BDP; fabricsim's)."),
];

const UDMP: &[Param] = &[
    p("paths", Ty::Int, "256", "Entropy values (virtual paths) per connection."),
    p("alpha", Ty::Float, "0.125", "EWMA weight of a new RTT sample in smooth_rtt (unspecified in the paper)."),
    p("min_increase", Ty::Float, "0.1", "Smallest increase when the gradient is zero or negative: rate += max(|g|, min_increase) x (linerate - rate) once per RTT. The paper's text says a zero gradient lets the rate grow; its formula alone would not (0 = the formula exactly)."),
    p("t_high", Ty::Duration, "auto", "Severe-congestion threshold on smooth_rtt; auto = 5 x the path's base RTT (unspecified in the paper)."),
    p("explore", Ty::Float, "0.01", "Probability per RTT that the next clocked packet takes a new random path (unspecified in the paper)."),
    p("ooo_aware", Ty::Bool, "true", "Hold back ACKs for PSNs delta or more beyond the oldest unacknowledged one from clocking packets out (\"an ACK whose PSN exceeds the bitmap window\"; Fig. 7 compares on and off); each is paid its packet, on its path, once the window reaches it (\"the overall cwnd remains unchanged\")."),
    p("delta", Ty::Int, "auto", "OOO control threshold in packets; auto = one BDP (bytes over the MTU), at least 64, at most an explicit window (UDMP Fig. 7 uses 64; with 1 KB packets spraying alone reorders by more than 64)."),
    p("window", Ty::Int, "auto", "Receiver bitmap in packets; PSNs beyond it are dropped and NACKed; auto = 2 x delta (two BDPs, at least 128 packets), room for the OOO control to act before the bitmap fills (the paper: one BDP, with delta below it)."),
    p("min_rto", Ty::Duration, "100us", "Smallest retransmission timeout, at least 1us (the paper gives none)."),
    p("fixed_rate", Ty::Rate, "none", "Inject tokens at this rate instead of running Algorithm 1 (isolates the load balancer, as the paper's Fig. 3 example does; exploration goes on, once per round trip). An upper bound: the ACK clock sends 2 packets per ACK only when the RTT falls below its average, so on a flat RTT the window stays where the first RTT left it. Below a packet per RTT a restart waits for the pool to hold a packet."),
    p("flow_control", Ty::Bool, "false", "Keep new PSNs within the receiver's bitmap (not in the paper, whose receiver drops and NACKs what lands beyond it: with a packet stuck on a slow path, every later one then bounces and is resent each round trip)."),
];

const STAR: &[Param] = &[
    c("mode", "stateless", &["stateless", "auto"], "stateless: every connection is a StaR one (the paper's evaluation). auto: the paper's section 3.3 mode: a connection is an ordinary RoCE one (RC, DCQCN, the roce defaults but this table's rto and retry_limit) while both its hosts' NICs have a free QP context (nic.qp_cache, counting each end's QP), and a StaR one once either is full; with ideal NICs every connection is stateful."),
    c("server", "busier", &["busier", "receiver", "sender"], "Which end of a connection is the stateless server: the receiver (clients WRITE to it: RDP/RA), the sender (its WRITEs are fetched: WQEP, GD/SDP, CQEP), or busier: the end with more connections (the receiver on a tie), which makes the one server of an incast, message_rate or rpc workload stateless in both directions."),
    p("init_cwnd", Ty::Size, "auto", "The client's initial window (its largest is twice this); auto = one BDP of the connection's path."),
    p("g", Ty::Float, "0.0625", "DCTCP's gain for the marked fraction's moving average (DCTCP's 1/16; the paper names DCTCP as a window scheme StaR can run, without parameters)."),
    p("rto", Ty::Duration, "1ms", "Retransmission timeout of RDPs, GDs, CQEPs and (in the server's driver) WQEPs (the paper gives none; its evaluation is lossless)."),
    p("retry_limit", Ty::Int, "7", "Times a piece (an RDP, GD, CQEP, or in the server's driver a WQEP) is sent again after a timeout before the connection fails (InfiniBand's largest retry count, counted per request as InfiniBand does). A piece that later answers show lost (three answered after it) is sent again at once, without a timeout."),
];

const MRC: &[Param] = &[
    p("evs", Ty::Int, "128", "Active entropy values per connection, split equally over the NIC's planes (MRC: 128-256): a multiple of the planes; the default is rounded down to one (126 on 3 planes)."),
    p("backup", Ty::Int, "auto", "Backup EVs per plane; auto = max(2, active per plane / 4) (the paper gives no size)."),
    p("ecn_penalty", Ty::Int, "1", "Rotation skips an EV this many times per ECN echo on it (fabricsim's; the paper: the sender avoids the EV for a while)."),
    p("trim_penalty", Ty::Int, "0", "Skips per trim NACK (0: trims at the last hop say nothing about the path)."),
    p("ecn_swap", Ty::Int, "8", "An EV that collects this many ECN echoes within 4 base RTTs is swapped with a backup of its plane, so a flow with few EVs can leave a congested path (MRC Fig. 14); 0 = never."),
    p("probe_interval", Ty::Duration, "100us", "Probe period of a retired EV (+-25% jitter; fabricsim's, the paper gives none)."),
    p("probe_successes", Ty::Int, "5", "Consecutive answered probes that bring a retired EV back into the active slot it lost, the EV holding that slot stepping down to the backups (the paper: \"if enough probes succeed\")."),
    p("probe_timeout", Ty::Duration, "auto", "An unanswered probe failed after this; auto = 4 x base RTT. A failure doubles the EV's probe interval (up to probe_backoff_max)."),
    p("probe_backoff_max", Ty::Duration, "10ms", "Longest probe interval of an EV whose probes keep failing: after a long outage its path is found again within about this long (the paper gives no figure)."),
    p("reo", Ty::Duration, "auto", "Initial RACK reordering window: a packet sent this long before an acknowledged one is lost, and by RACK's timer one sent before it at all once a round trip and the larger of this window and a round trip have passed (RFC 8985). It doubles on a spurious retransmission, at most once per round trip and up to the smoothed RTT; auto = the base RTT."),
    p("min_rto", Ty::Duration, "50us", "Smallest retransmission timeout, at least 1us."),
    p("max_rto", Ty::Duration, "1ms", "Largest retransmission timeout after backoff; a measured srtt + 4 rttvar above it is used as it is (a timeout shorter than the RTT fires on every packet)."),
    p("write_imm", Ty::Bool, "true", "End every message with an RDMA WRITE with immediate (opcode LAST_IMM / ONLY_IMM, the message number as immediate data), MRC's completion signal: the receiver completes the message only once every packet is placed. false: plain WRITEs."),
    p("tail_probe", Ty::Bool, "true", "Tail loss probe (RFC 8985 section 7; fabricsim's addition, the paper gives no loss detection details): with nothing new left to send and no acknowledgement for two smoothed RTTs, the newest outstanding packet is sent again on another EV, once per silence."),
    p("timeout_copy", Ty::Bool, "true", "A timeout with nothing sent since acknowledged resends its packet on two EVs of the plane when the smoothed RTT is under twice the base (paths went silent, not slow) or, before any sample, from the third timeout in a row (fabricsim's addition)."),
    p("md", Ty::Float, "0.5", "Window cut on a trim NACK (at most once per RTT; fabricsim's, the paper leaves congestion control out)."),
    p("cwnd_max", Ty::Float, "1.5", "Largest window, in BDPs of the whole NIC (the window starts at one BDP; fabricsim's)."),
    p("delay_target", Ty::Duration, "none", "An RTT sample above this cuts the window by (rtt - target) / rtt, at most md, at most once per RTT (fabricsim's addition, as in Swift: trims need a full queue, so a slow last hop behind a deep buffer keeps every window queued). Off by default: a fixed target also takes added propagation delay (a delay fault) for congestion and pins the window; \"none\" = off. At least every connection's unloaded round trip."),
    p("reverse_probe", Ty::Duration, "auto", "The receiver probes a random reverse EV this often while data arrives (MRC section 2.4); auto = base RTT."),
];

/// `[transport]` keys every transport has.
pub const TRANSPORT_COMMON: &[Param] = &[c("kind", "roce", TRANSPORT_KINDS, "The protocol.")];

/// `[fabric.pfc]` keys (`fabric.pfc = true` is their defaults).
pub const PFC: &[Param] = &[
    p("alpha", Ty::Float, "0.125", "An ingress port pauses its upstream once it holds more than alpha x the free shared buffer (HPCC ns-3's free_buffer >> 3)."),
    p("min_xoff", Ty::Size, "20KB", "Lowest XOFF threshold: a few MTUs of room when the buffer is nearly full, so the class is not paused on every frame."),
    p("xon_delta", Ty::Size, "10KB", "Hysteresis: RESUME once the port's bytes fall this far below XOFF."),
];

/// `[fabric.ecn]` keys (`fabric.ecn = true` is their defaults).
pub const ECN: &[Param] = &[
    p("kmin", Ty::Size, "auto", "Queue depth where marking starts; auto = HPCC ns-3's 100KB per 25 Gb/s of the port's rate. Give kmin and kmax together (for every port), or neither."),
    p("kmax", Ty::Size, "auto", "Queue depth where the marking probability reaches pmax (every packet above it is marked); auto = 400KB per 25 Gb/s."),
    p("pmax", Ty::Float, "0.2", "Marking probability at kmax (HPCC ns-3)."),
    p("last_hop", Ty::Bool, "true", "Host-facing switch ports mark too (false: MRC's deployment, marks only inside the fabric)."),
];

/// DCQCN override keys (inside `[transport.dcqcn]`).
pub const DCQCN: &[Param] = &[
    c("preset", "hpcc", DCQCN_PRESETS, "Starting point for the values below: hpcc = HPCC ns-3's run.py --cc dcqcn as its rdma-hw.cc runs it; hpcc_paper = its dcqcn_paper (alpha and decrease every 50us, increase every 55us, else as hpcc); firmware = ConnectX defaults (g 5/1024, steps of 5 and 50 Mbps at any speed, 1 Mbps floor, one CNP per 4us); paper = Zhu et al. 2015 (a cut at every CNP, byte counter, F = 5). The first cut of the timer-driven presets comes one decrease_interval (+1ns) after the first CNP, as in HPCC."),
    p("g", Ty::Float, "1/256 (firmware 5/1024)", "Alpha EWMA gain."),
    p("alpha_interval", Ty::Duration, "1us (hpcc_paper 50us, paper 55us)", "Alpha update period."),
    p("decrease_interval", Ty::Duration, "4us (hpcc_paper 50us, paper 0: every CNP)", "Minimum spacing of rate cuts."),
    p("increase_interval", Ty::Duration, "300us (hpcc_paper 55us, paper 55us)", "Rate-increase timer."),
    p("byte_counter", Ty::Size, "0 = off (paper 10MB)", "Bytes sent per increase event."),
    p("fast_recovery", Ty::Int, "1 (paper 5)", "Fast-recovery steps F."),
    p("rate_ai", Ty::Rate, "5Mbps per 25Gbps (firmware 5Mbps, paper 40Mbps)", "Additive increase step."),
    p("rate_hai", Ty::Rate, "50Mbps per 25Gbps (firmware 50Mbps, paper 200Mbps)", "Hyper increase step."),
    p("min_rate", Ty::Rate, "1Gbps (firmware 1Mbps, paper 100Mbps)", "Lowest rate."),
    p("clamp_target", Ty::Bool, "false (paper true)", "Set the target to the current rate at every cut (else only after an increase)."),
    p(
        "cnp_interval",
        Ty::Duration,
        "0 (firmware 4us, paper 50us)",
        "The responder sends at most one CNP per QP per this interval; 0: one for every ECN-marked packet (HPCC's model flags every ACK of one), coalesced only while one waits to leave.",
    ),
];

const MAESTRO: &[Param] = &[
    p("paths", Ty::Int, "4", "QPs per connection, K (1 to 256): Maestro's virtual paths, each a RoCE RC QP with its own UDP source port, go-back-N and DCQCN. Paper: 4 paths fill its 40 Gb/s access link over 10 Gb/s core links (section 6.1, Fig. 8), 8 logical paths over 4 physical ones in Fig. 12."),
    c("path_selection", "hash", PATH_SELECTIONS, "How the QPs get their source ports (paper section 4.1, Disjoint Path Selection): hash = work out each of 64 candidate ports' path with the switches' ECMP hash and seeds (known to the operator) and keep the K sharing fewest links; probe = the paper's procedure, rounds of 2K candidate QPs each probed once and read with the known hash, until K share no link (at most 8 rounds); random = ports drawn at random, as the RoCE driver does (the naive baseline, QP-Scaling's)."),
    p("chunk", Ty::Size, "50KB", "Chunk size: a message is cut into chunks of this many bytes, each an RDMA WRITE at its offset of the receiver's buffer (paper section 4.2; 50 KB is its chosen default, section 6.1 Fig. 9, which tries 12.5 KB to 400 KB). 1 byte to 2 GiB (the message cap)."),
    c("balancer", "proportional", BALANCERS, "Which QP a chunk goes to (paper section 4.4): round_robin = in turn over the healthy QPs; proportional = the QP that would finish it soonest at the bandwidth the path monitor measured on it, so each path's load follows its free bandwidth (section 6.2, Fig. 12c); lowest_latency = every chunk to the QP of lowest measured latency."),
    p("small", Ty::Size, "4KB", "Messages of at most this many bytes go whole, at once, on the healthy QP of lowest measured latency (paper section 4.4: mice such as control messages take the minimum-latency path; Fig. 12f's 2-byte barrier token). 0: none. The threshold is fabricsim's; the paper gives none."),
    p("max_wrs", Ty::Int, "auto", "Chunks outstanding per connection (1 to 4096); the others wait and get their QP from the balancer when a slot frees. auto = 2 per path (2 x paths): the paper's 8 for its 4 paths (section 6.3: at least one alive WR per path, at most 8, enough for pipelining). A fixed 8 over 8 paths leaves one chunk per QP, and each QP idles from a chunk's completion until its next chunk is posted (Fig. 8 with 8 paths: 34.6 Gb/s against 38.3 with 16)."),
    p("reselect_interval", Ty::Duration, "1ms", "Path re-selection (paper section 6.2, Fig. 12d: new paths detected and used during a run): every this often while a connection has chunks waiting or in flight, each QP's path is worked out again with the switches' hash on the routing tables as they stand (after a link comes back and routes are recomputed, say), and a QP whose path shares more links with the QPs before it than one of the selection's 64 candidate ports would is moved to that port: once its chunks in flight are acknowledged (the balancer gives it nothing meanwhile), as Maestro binds a virtual path to a new address. paths.parquet's moves counts them. \"none\": paths stay as chosen at set-up. Only with path_selection = hash or probe (random ports are the naive baseline). The interval is fabricsim's; the paper's paths appeared every 30 s. Longer than 0."),
    c("verb", "write", fabricsim_nic::Verb::NAMES, "The verb the application posts its messages with (paper section 4.3): write = RDMA WRITE, each chunk a WRITE at its offset, the message complete at the receiver once every byte is placed; send = a two-sided SEND, cut into the same WRITE chunks and, once all have completed at the sender, closed by an empty SEND with immediate (RoCEv2 SEND Only with Immediate, opcode 0x05, the message's id as its ImmDt) on the QP of lowest latency: the message completes at the receiver when that SEND arrives. A send message of at most small bytes goes whole as one SEND with immediate. Only Maestro has it: other transports' messages are all WRITEs."),
    p("post_cost", Ty::Duration, "1us", "CPU time to post one work request (a chunk, a probe, a small message): each QP's worker thread (paper section 4.2, one worker per QP) spends it on every WR it posts, one after the other, before the NIC has the WR; so small chunks pay it more often (Fig. 9's trade-off). The paper gives no figure (Fig. 13 reports CPU use, about 6 % per worker); 1 us is fabricsim's choice for an ibv_post_send with its doorbell plus the descriptor's hand-off through the decomposer's ring to the worker. 0: free. At most 1 s."),
    p("probe_interval", Ty::Duration, "100us", "A QP whose newest latency sample is older than this gets a 2-byte probe WRITE when a message is posted (paper section 4.4: periodic end-to-end probes, qperf in its prototype; the interval is fabricsim's). Probing runs while the connection is in use."),
    c("cc", "dcqcn", &["dcqcn", "none"], "Per-QP congestion control, as for roce (the paper relies on the NIC's DCQCN)."),
    p("dcqcn", Ty::Table, "preset hpcc", "Per-QP DCQCN parameters, as for roce."),
    p("ack_interval", Ty::Int, "1", "As for roce."),
    p("rto", Ty::Duration, "67.108864ms", "As for roce. A path failure is found when a QP exceeds retry_limit timeouts in a row (a CQE error), so failover takes about (retry_limit + 1) x rto: scenarios with failures set a shorter one."),
    p("retry_limit", Ty::Int, "7", "As for roce: the QP then fails, is taken out of use, and its unacknowledged chunks are posted again on healthy QPs."),
    p("nak_interval", Ty::Duration, "500us", "As for roce."),
];

/// Maestro's path selections (`path_selection`).
pub const PATH_SELECTIONS: &[&str] = crate::factory::PathSelection::NAMES;
/// Maestro's load balancers (`balancer`).
pub const BALANCERS: &[&str] = fabricsim_nic::Balancer::NAMES;

/// The DCQCN presets (`dcqcn.preset`).
pub const DCQCN_PRESETS: &[&str] = &["hpcc", "hpcc_paper", "firmware", "paper"];

/// `[workload]` keys every workload has.
pub const WORKLOAD_COMMON: &[Param] = &[
    c("kind", "", WORKLOAD_KINDS, "The generator."),
    p("start", Ty::Duration, "0us", "When this workload starts (a flow's own start counts from here)."),
    p(
        "transport",
        Ty::Table,
        "the scenario's",
        "A [transport] table for this workload's connections only (e.g. a RoCE job beside MRC background traffic).",
    ),
];
const W_FLOWS: &[Param] = &[p(
    "flows",
    Ty::List,
    "",
    "Array of tables `{ src, dst, size, start }` (start: after the workload's start, default 0).",
)];
const W_PERMUTATION: &[Param] = &[
    p("size", Ty::Size, "", "Bytes per flow."),
    p("hosts", Ty::Hosts, "all", "Participating hosts: \"all\", a count (the first n) or a list."),
];
const CLIENTS_DOC: &str = "A count (the first hosts other than the server) or a list of client hosts.";
const W_MESSAGE_RATE: &[Param] = &[
    p("clients", Ty::Hosts, "", CLIENTS_DOC),
    p("server", Ty::Int, "0", "The server every client WRITEs to (StaR's stateless side)."),
    p("size", Ty::Size, "8B", "Bytes per WRITE (StaR Fig. 5a: 8)."),
    p(
        "outstanding",
        Ty::Int,
        "1",
        "WRITEs each client keeps in flight (StaR Fig. 5a: 1); the next goes once one is acknowledged.",
    ),
    p("ops", Ty::Int, "100", "WRITEs per client and connection."),
    p("connections", Ty::Int, "1", "Connections per client, each its own loop (STELLAR Fig. 8: one client, 16 connections). Every message of a loop writes its connection's one buffer, as a benchmark loop does."),
];
const W_RPC: &[Param] = &[
    p("clients", Ty::Hosts, "", CLIENTS_DOC),
    p("server", Ty::Int, "0", "The server every client calls (StaR's stateless side)."),
    p("request", Ty::Size, "2800B", "Request bytes, client to server (StaR Fig. 5b: 2.8 KB)."),
    p(
        "reply",
        Ty::Size,
        "1400B",
        "Reply bytes, sent back the moment the request has arrived (StaR Fig. 5b: 1.4 KB, zero compute).",
    ),
    p("think", Ty::Duration, "0s", "Time between a reply's arrival and the client's next call."),
    p("outstanding", Ty::Int, "1", "Calls each client keeps in flight."),
    p("ops", Ty::Int, "100", "Calls per client and connection pair."),
    p("connections", Ty::Int, "1", "Connection pairs (one each way) per client, each its own loop; every message of a loop uses its connection's one buffer."),
];
const W_INCAST: &[Param] = &[
    p("size", Ty::Size, "", "Bytes per sender."),
    p("senders", Ty::Hosts, "", "A count (chosen at random, seeded) or a list of sending hosts."),
    p("receiver", Ty::Int, "0", "The receiving host."),
];
const CHANNELS_DOC: &str = "Independent instances of the algorithm the buffer is split over, each on its own connections (NCCL's channels); channel c's connections start on NIC port c. auto = one per NIC port a connection leaves unused: the NIC's ports for roce, stellar, mprdma and udmp, ports / qps for qp_scaling, ports / paths for maestro, 1 for mrc (which sprays over every port), and never more than the size can fill. 1 to 64.";
const W_ALL_TO_ALL: &[Param] = &[
    p("size", Ty::Size, "", "Bytes per ordered pair (nccl-tests' size, in the collectives table, is hosts x this)."),
    p("hosts", Ty::Hosts, "all", "Participating hosts."),
    p("channels", Ty::Int, "auto", CHANNELS_DOC),
];
const W_ALL_REDUCE: &[Param] = &[
    p("size", Ty::Size, "", "Buffer per host. ring: at least hosts x channels bytes, each of the 2(N-1) steps moving size/(N x channels) per channel (rounded up); tree: each of the two trees carries half of each channel's share."),
    p("hosts", Ty::Hosts, "all", "Participating hosts, in rank order (the ring's order)."),
    c("algorithm", "ring", &["ring", "tree", "halving_doubling"], "ring: 2(N-1) steps around the ranks. tree: NCCL's double binary tree, reduce up and broadcast down two trees, pipelined (2 log2 N hops of latency). halving_doubling: Rabenseifner's recursive halving then doubling, 2 log2 N steps (a number of hosts that is not a power of two pairs the extra ranks up first)."),
    p("channels", Ty::Int, "auto", CHANNELS_DOC),
    p("chunk", Ty::Size, "auto", "Pipeline piece of ring and tree: each transfer is cut into pieces of at most this many bytes, each moving on as soon as it arrived. auto = whole ring steps, 512KiB tree pieces (NCCL's step)."),
];
const W_ALL_GATHER: &[Param] = &[
    p("size", Ty::Size, "", "The whole gathered buffer (nccl-tests' size): each host contributes size/N."),
    p("hosts", Ty::Hosts, "all", "Participating hosts, in rank order."),
    c("algorithm", "ring", &["ring", "halving_doubling"], "ring: N-1 steps of size/N. halving_doubling: recursive doubling, log2 N steps of growing size (a power-of-two number of hosts)."),
    p("channels", Ty::Int, "auto", CHANNELS_DOC),
    p("chunk", Ty::Size, "auto", "Pipeline piece of a ring step (auto: whole steps)."),
];
const W_REDUCE_SCATTER: &[Param] = &[
    p("size", Ty::Size, "", "The whole input buffer per host (nccl-tests' size): each host ends with size/N of the sum."),
    p("hosts", Ty::Hosts, "all", "Participating hosts, in rank order."),
    c("algorithm", "ring", &["ring", "halving_doubling"], "ring: N-1 steps of size/N. halving_doubling: recursive halving, log2 N steps of shrinking size (a power-of-two number of hosts)."),
    p("channels", Ty::Int, "auto", CHANNELS_DOC),
    p("chunk", Ty::Size, "auto", "Pipeline piece of a ring step (auto: whole steps)."),
];
const W_BROADCAST: &[Param] = &[
    p("size", Ty::Size, "", "The root's buffer, sent to every host."),
    p("hosts", Ty::Hosts, "all", "Participating hosts, in rank order: the chain runs root, root+1, ..."),
    p("root", Ty::Int, "0", "The rank (index into hosts) that broadcasts."),
    p("channels", Ty::Int, "auto", CHANNELS_DOC),
    p("chunk", Ty::Size, "512KiB", "Pipeline piece: each hop forwards a piece as soon as it arrived."),
];
const W_REDUCE: &[Param] = &[
    p("size", Ty::Size, "", "The buffer every host contributes; the root ends with their sum."),
    p("hosts", Ty::Hosts, "all", "Participating hosts, in rank order: the chain runs root+1, root+2, ..., root."),
    p("root", Ty::Int, "0", "The rank (index into hosts) that receives the sum."),
    c(
        "algorithm",
        "ring",
        &["ring"],
        "ring: a pipelined chain ending at the root, NCCL's ring reduce (NCCL's only algorithm for reduce).",
    ),
    p("channels", Ty::Int, "auto", CHANNELS_DOC),
    p(
        "chunk",
        Ty::Size,
        "512KiB",
        "Pipeline piece: each hop adds its part and forwards a piece as soon as it arrived.",
    ),
];
const W_GATHER: &[Param] = &[
    p("size", Ty::Size, "", "The root's whole buffer (nccl-tests' size): each host contributes size/N; at least hosts x channels."),
    p("hosts", Ty::Hosts, "all", "Participating hosts, in rank order."),
    p("root", Ty::Int, "0", "The rank (index into hosts) that gathers."),
    c("algorithm", "direct", &["direct"], "direct: every host sends its part to the root at once, as nccl-tests' gather does with grouped sends and receives (NCCL has no gather kernel)."),
    p("channels", Ty::Int, "auto", CHANNELS_DOC),
];
const W_SCATTER: &[Param] = &[
    p("size", Ty::Size, "", "The root's whole buffer (nccl-tests' size): each host receives size/N; at least hosts x channels."),
    p("hosts", Ty::Hosts, "all", "Participating hosts, in rank order."),
    p("root", Ty::Int, "0", "The rank (index into hosts) that scatters."),
    c("algorithm", "direct", &["direct"], "direct: the root sends every host its part at once, as nccl-tests' scatter does with grouped sends and receives (NCCL has no scatter kernel)."),
    p("channels", Ty::Int, "auto", CHANNELS_DOC),
];
const W_ALL_TO_ALLV: &[Param] = &[
    p("sizes", Ty::List, "", "N rows of N sizes: row i gives the bytes host i sends to each host (0 on the diagonal and for pairs that send nothing)."),
    p("hosts", Ty::Hosts, "all", "Participating hosts, in rank order (a count or a list of N)."),
    p("channels", Ty::Int, "auto", CHANNELS_DOC),
];
const W_BARRIER: &[Param] = &[p("hosts", Ty::Hosts, "all", "Participating hosts, in rank order.")];
const W_POISSON: &[Param] = &[
    p("cdf", Ty::Str, "", "Flow sizes: websearch (DCTCP's web search), fb_hadoop (Facebook Hadoop) or alistorage (Alibaba storage 2019), the distributions of HPCC's and Parsimon's evaluations; or a CSV file (relative to the scenario's folder) of points `bytes,cumulative percent` (or fractions), interpolated linearly."),
    p("load", Ty::Float, "", "The share of each sending host's link it offers on average (0 to 1): flows start as a Poisson process of rate load x link rate / (8 x mean size)."),
    p("duration", Ty::Duration, "", "Flows start during this long after the workload's start."),
    p("hosts", Ty::Hosts, "all", "Senders and receivers: each flow goes to a uniformly random other one."),
    p("groups", Ty::List, "none", "Lists of hosts that send only within their list (instead of hosts), e.g. [[0, 1, 2, 3], [4, 5, 6, 7]]."),
];
const W_CONSTANT_RATE: &[Param] = &[
    p("src", Ty::Int, "", "The sending host."),
    p("dst", Ty::Int, "", "The receiving host."),
    p("rate", Ty::Rate, "", "The rate it sends at: a message every message x 8 / rate seconds, posted whether or not the ones before have arrived (Maestro Fig. 12c: 10, 20 and 30 Gb/s on three of four paths). Give the workload a transport that does not back off, e.g. transport = { kind = \"roce\", cc = \"none\" }, for a rate that holds under congestion."),
    p("duration", Ty::Duration, "", "How long it sends, from the workload's start."),
    p("message", Ty::Size, "4KB", "Bytes per message: one packet's worth by default, so the flow is paced packet by packet rather than in bursts."),
    p("on_off", Ty::Table, "none", "Bursts: { period, duty = 0.5 }: only messages in the first duty x period of each period are sent (STELLAR Fig. 10's on/off background)."),
    p("sport", Ty::Int, "none", "Pins the flow to one path: its QP's UDP source port (0 to 65535), the entropy ECMP hashes, or under SRv6 (routing = \"srv6\") its entropy value, which selects the uSID path (RoCE-family transports)."),
    p("via", Ty::Str, "none", "Pins the flow to a path through this switch, e.g. \"spine[2]\": the run works out a source port (entropy value) whose path crosses it, with the switches' ECMP hash or, under SRv6, the uSID path the value selects. Not with sport."),
];
const W_CHAKRA: &[Param] = &[
    p("trace", Ty::Str, "", "The trace's file name prefix, relative to the scenario's folder: rank r is <trace>.<r>.et (Chakra execution trace: length-prefixed protobuf Node records)."),
    p("ranks", Ty::Int, "auto", "Ranks to read (files <trace>.0.et to <trace>.<ranks-1>.et); auto = every file from rank 0 on."),
    p("ranks_per_host", Ty::Int, "1", "Ranks sharing each host: consecutive ranks r, r+1, ... on one host, their traffic to each other free (NVLink). A trace taken at N ranks runs on N / ranks_per_host hosts."),
    p("hosts", Ty::Hosts, "all", "The host of each group of ranks_per_host ranks, in rank order; all: hosts 0, 1, 2, ..."),
    p("replicas", Ty::Int, "1", "Copies of the trace side by side: a trace taken at N ranks replays on N x replicas ranks (copy j's rank r is rank jN + r), the collectives of the process groups in span running over every copy (see the README)."),
    p("span", Ty::Names, "auto", "With replicas: the process groups (pg_name; \"\" for collectives without one) whose collectives span every copy, each rank's buffer kept (data parallelism scaled out); the others stay within each copy. auto = the groups that have every rank of the trace."),
    p("name", Ty::Str, "= trace", "Its name in the jobs table."),
];
const W_HTSIM: &[Param] = &[
    p("file", Ty::Str, "", "An htsim connection matrix (.cm), relative to the scenario's folder: Nodes/Connections/Triggers/Failures headers, `src->dst id N start <us> size <bytes>` flows, oneshot, barrier and multishot triggers as htsim runs them (recv_done_trigger: the flow's arrival; send_done_trigger: its acknowledgement at the sender), failure lines (links down from the start)."),
    p("hosts", Ty::Hosts, "all", "The host of each node of the file, in node order; all: node i is host i."),
];

/// `[[jobs]]` keys.
pub const JOBS: &[Param] = &[
    p("name", Ty::Str, "\"job<i>\"", "Its name in the results."),
    p("ranks", Ty::Int, "", "Ranks, one per host (a host is one NIC: model a server's NICs as hosts)."),
    p("hosts", Ty::Hosts, "all", "The hosts it may be placed on (the pool the placement picks from)."),
    p("ranks_per_host", Ty::Int, "1", "Ranks sharing each host (a server's GPUs behind one NIC): consecutive ranks on one host, their traffic to each other (tensor-parallel all-reduces, pipeline transfers) taking no network time."),
    p("placement", Ty::Choice, "packed", "packed: rank i on the i-th host of the pool. random: a random set of the pool's hosts in random rank order (a fragmented cluster). rerank: the same set as random, ranked in topology order (STELLAR's re-ranking: communicating ranks close). Or a list of hosts, one per rank."),
    p("tp", Ty::Int, "1", "Tensor-parallel size: ranks r = t + tp (d + dp p) with t the tensor index, innermost (Megatron's order)."),
    p("pp", Ty::Int, "1", "Pipeline-parallel size (stages, outermost). The data-parallel size is ranks / (tp x pp)."),
    p("ep", Ty::Int, "1", "Expert-parallel size: each data-parallel group splits into groups of ep consecutive members (must divide the data-parallel size)."),
    p("iterations", Ty::Int, "1", "Iterations, back to back on each rank (for an on/off job: per burst; auto there = as many as fill duty x period at the job's estimated solo pace)."),
    p("compute", Ty::Duration, "0us", "Compute per iteration per rank (with pp > 1: all its microbatches, a backward twice a forward)."),
    p("jitter", Ty::Float, "0.0", "Each rank's compute varies per iteration, uniformly within +- this fraction (seeded)."),
    p("stragglers", Ty::List, "none", "Array of tables { rank, slowdown }: ranks whose compute takes slowdown times as long (stragglers, slower GPUs)."),
    p("microbatches", Ty::Int, "1", "With pp > 1: microbatches per iteration (GPipe: all forwards, then all backwards)."),
    p("activation", Ty::Size, "", "With pp > 1 (required): bytes sent to the next stage after each microbatch's forward and back after its backward."),
    p("start", Ty::Duration, "0us", "When the job starts."),
    p("transport", Ty::Table, "the scenario's", "A [transport] table for this job's connections only."),
    p("on_off", Ty::Table, "none", "Bursts, for a background job (STELLAR Fig. 10): { period, duty = 0.5, bursts }. Burst k starts k periods after the job (or when burst k-1 ends, if later) and runs `iterations` iterations (auto: as many as fill duty x period at the estimated solo pace); bursts defaults to as many as fit before the scenario's stop."),
    p("collectives", Ty::List, "none", "Array of tables ([[jobs.collectives]]): the collectives each iteration runs."),
    p("startup", Ty::Table, "none", "The start-up of its ranks' secure containers before the first iteration ([jobs.startup]): memory registration (STELLAR's PVDMA or pin-all) and virtual devices."),
];

/// `[jobs.startup]` keys.
pub const STARTUP: &[Param] = &[
    c("pinning", "pvdma", &["none", "pin_all", "pvdma"], "pin_all: the hypervisor pins all of the container's memory at boot. pvdma: nothing at boot; the first DMA to each 2 MiB block pins it through the map cache (the blocks of the job's buffers, charged before the first iteration). none: no start-up cost."),
    c("device", "none", &["none", "vf", "vstellar"], "The container's RDMA device: an SR-IOV VF (checked against the VF count and the PCIe switch's BDF lookup table) or a vSTELLAR device (1.5 s to create, up to 64k per host)."),
    p("memory", Ty::Size, "16GB", "Memory of each rank's container."),
    p("boot", Ty::Duration, "6s", "Container boot without pinning (fitted to STELLAR Fig. 6: PVDMA under 20 s at every size)."),
    p("hypervisor_per_gb", Ty::Duration, "7.64ms", "Hypervisor time per GB of memory, pinned or not (Fig. 6: 11 s more at 1.6 TB than at 160 GB)."),
    p("pin_per_gb", Ty::Duration, "232ms", "IOMMU pinning time per GB (fitted: pin-all start-up of a 1.6 TB container 390 s)."),
    p("map_miss", Ty::Duration, "25us", "PVDMA's cost per block beyond pinning it: the trap to the hypervisor and the map cache update (fabricsim's)."),
    p("map_cache", Ty::Int, "65536", "2 MiB blocks the map cache holds (128 GiB; fabricsim's). A job touching more re-pins every block every iteration."),
    p("vstellar_create", Ty::Duration, "1.5s", "Time to create a vSTELLAR device (STELLAR section 4)."),
    p("vstellar_max", Ty::Int, "65536", "vSTELLAR devices per host at most (STELLAR: 64k)."),
    p("max_vfs", Ty::Int, "16", "VFs per NIC at most (SR-IOV; fabricsim's)."),
    p("bdfs_per_switch", Ty::Int, "32", "BDF entries of the PCIe switch's lookup table (STELLAR section 3)."),
    p("bdfs_per_vf", Ty::Int, "4", "Entries a GPU-direct VF takes (fabricsim's reading of the paper's 32 entries for at most 8 VFs per NIC)."),
    p("containers_per_host", Ty::Int, "auto", "Containers on each of the job's hosts, each with its own device; auto = the ranks of all jobs placed there."),
    p("doorbell", Ty::Str, "shm", "Where the device's doorbell page is mapped: \"shm\" (virtio shared memory, STELLAR's fix) or a guest-physical address; with pvdma, an address inside a 2 MiB block of a DMA region is refused (Fig. 5)."),
    p("regions", Ty::List, "auto", "DMA regions [{ gpa, size }]; auto = the job's buffers (each collective's send and receive buffers, pipeline activations, NCCL's 4 MiB staging buffers per channel) laid out from 4 GiB."),
];

/// `[[jobs.collectives]]` keys (besides the keys of the workload of its kind, but hosts).
pub const JOB_COLLECTIVES: &[Param] = &[
    c("group", "dp", &["world", "dp", "tp", "pp", "ep"], "The communicators it runs on: one instance per group of this kind each iteration."),
    c("kind", "", &["all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "gather", "scatter", "all_to_all", "all_to_allv", "barrier"], "The collective; its keys (size, algorithm, channels, chunk, root, sizes) are those of the workload of that kind."),
    p("at", Ty::Float, "1.0", "Fraction of the iteration's compute at which it starts on each rank (after the rank's previous collective of the same group), or a list of fractions: an instance at each (gradient buckets overlapping the backward pass)."),
    p("blocking", Ty::Bool, "false", "The compute waits for it (a tensor-parallel all-reduce in the forward pass); otherwise only the iteration's end does."),
];

/// `on_off` keys of a job.
pub const ON_OFF: &[Param] = &[
    p("period", Ty::Duration, "", "A burst starts every period."),
    p(
        "duty",
        Ty::Float,
        "0.5",
        "The share of a period a burst fills at the job's solo pace (sizes `iterations = auto`).",
    ),
    p("bursts", Ty::Int, "auto", "How many bursts; auto = as many as start before the scenario's stop."),
];

/// `stragglers` entries of a job.
pub const STRAGGLERS: &[Param] = &[
    p("rank", Ty::Int, "", "The rank."),
    p("slowdown", Ty::Float, "1.0", "Its compute takes this many times as long."),
];

/// Fault kinds.
pub const FAULT_KINDS: &[&str] =
    &["link_down", "link_up", "link_flap", "link_loss", "ev_loss", "switch_down", "switch_up", "delay", "rate"];

/// `[[faults]]` keys.
pub const FAULTS: &[Param] = &[
    p("at", Ty::Duration, "", "When the fault happens (not after the scenario's stop time)."),
    c("kind", "", FAULT_KINDS, "What happens: a cable goes down / up / flaps; random loss on a cable, or only for packets of one entropy value; a switch goes down / up (all its cables; back up, it does not revive a cable that failed on its own); extra delay or a new rate on a cable or a switch's egress ports."),
    p("link", Ty::Str, "", "The cable, named by either end's port, e.g. \"t0[3].up[5]\" or \"host[2].nic[0]\" (both directions are affected). For link_*, ev_loss, and delay/rate on a cable."),
    p("switch", Ty::Str, "", "The switch, e.g. \"t1[2]\" or \"core[0]\". For switch_down, switch_up, and delay/rate on all its egress ports."),
    p("loss", Ty::Float, "", "link_loss, ev_loss: loss probability (0 restores)."),
    p("ev", Ty::Int, "", "ev_loss: the 32-bit entropy value whose packets are lost (UDP source port in the low 16 bits)."),
    p("period", Ty::Duration, "", "link_flap: one down-and-up cycle (at most 1000000 cycles until the end)."),
    p("duty", Ty::Float, "0.5", "link_flap: fraction of each period the cable is down (each phase at least 1ns)."),
    p("until", Ty::Duration, "none", "link_flap: stop flapping (cable up) at this time; required unless the scenario has a stop time, which then ends the flapping."),
    p("delay", Ty::Duration, "", "delay: extra one-way delay (0us restores), e.g. UDMP's 1us -> 1ms anomaly."),
    p("rate", Ty::Rate, "", "rate: the new link rate, e.g. UDMP's 100 -> 40 Gb/s degradation."),
];

/// `[nic]` keys: the RNIC resource model (see `fabricsim_nic::rnic`).
pub const NIC: &[Param] = &[
    c("model", "ideal", &["ideal", "rnic"], "ideal: a NIC processes every packet in no time (the simulator before the model; the default). rnic: every packet passes the resources below on its way to the wire or to its endpoint."),
    p("packet_rate", Ty::Float, "2e8", "Packets per second each pipeline (transmit, receive) processes; \"none\": unbounded. 200 M: ConnectX-6 Dx's quoted 215 M messages per second."),
    p("wqe_rate", Ty::Float, "none", "Work requests (messages posted) per second the transmit pipeline takes on top of their packets; \"none\": no extra cost."),
    p("qp_cache", Ty::Int, "300", "QP contexts on chip (least recently used out); a packet whose QP's context is not there waits for a fetch. 300: StaR's setting (its Fig. 1 testbed NIC); \"none\": unbounded."),
    p("qp_fetch", Ty::Duration, "1us", "Time to fetch a QP context or an MTT entry from host memory over PCIe (StaR's PCIe latency, 1 us). The pipeline, in order, waits with the packet."),
    p("fetches", Ty::Int, "1", "Fetches under way at once: with 1 a NIC whose packets all miss processes one per qp_fetch (StaR's collapse to about 1 M operations per second); \"none\": unbounded."),
    p("mtt_cache", Ty::Int, "none", "MTT entries on chip (one per page of a buffer translated); a miss is fetched as a context. \"none\": unbounded (no public figure for ConnectX's; set it to study MTT thrashing)."),
    p("page_size", Ty::Size, "4KiB", "Page size of the translations: 4KiB or 2MiB (STELLAR Fig. 8 uses 4 KB pages)."),
    c("memory", "host", &["host", "gpu"], "Where the buffers this NIC reads and writes live: host memory (translated by the MTT) or GPU memory (GPU Direct RDMA, translated by gdr_translation)."),
    c("gdr_translation", "atc", &["atc", "emtt"], "GPU memory translation (STELLAR section 6): atc = PCIe ATS, the NIC's address translation cache with misses answered by the host's IOMMU; emtt = STELLAR's extended MTT, GPU translations in the NIC's own table."),
    p("atc_cache", Ty::Int, "8192", "ATC entries (pages). 8192 x 4 KB = 32 MB, fitted to STELLAR Fig. 8, where 16 connections' GDR WRITEs lose throughput past 2 MB each (32 MB in all); the paper says only \"tens of thousands of memory pages\"."),
    p("atc_miss", Ty::Duration, "740ns", "Time an ATS translation request takes when the IOMMU's IOTLB holds the page (a PCIe round trip). Fitted to STELLAR Fig. 8: with atc_outstanding = 4, GDR WRITEs of 4 KB pages run at 170 Gb/s, the figure's throughput past the ATC's reach."),
    p("atc_outstanding", Ty::Int, "4", "ATS translation requests under way at once (no public figure; with atc_miss it sets the throughput past the ATC's reach)."),
    p("iotlb", Ty::Int, "131072", "IOTLB entries (pages) of the host's IOMMU, which answers ATS requests; a request for a page it does not hold costs iotlb_miss more (a page walk). 131072 x 4 KB = 512 MB, fitted to STELLAR Fig. 8's second drop past 32 MB per connection (16 x 32 MB), which the paper puts down to IOTLB misses; \"none\": unbounded."),
    p("iotlb_miss", Ty::Duration, "130ns", "Extra time of an ATS request whose page the IOTLB does not hold. Fitted to STELLAR Fig. 8: 870 ns per request, 4 at once, gives the figure's 150 Gb/s past 32 MB."),
    p("pcie_rate", Ty::Rate, "256Gbps", "PCIe bandwidth each direction for payload DMA (Gen4 x16: 16 GT/s x 16 lanes, 128b/130b); \"none\": unbounded."),
    p("groups", Ty::List, "none", "Array of tables [[nic.groups]]: `hosts` (a list of host indices) and any keys above, which override the scenario's for those hosts' NICs (later groups win)."),
];

/// `[[nic.groups]]` keys beside the `[nic]` ones.
pub const NIC_GROUP: &[Param] = &[p("hosts", Ty::List, "", "The hosts whose NICs this group describes.")];

/// `[output]` keys.
pub const OUTPUT: &[Param] = &[
    p("sample_interval", Ty::Duration, "10us", "Port time-series period, at least 1ns; \"0us\" turns sampling off. Sampling stops once ports.parquet holds 12,000,000 rows (the summary says when: sampling_stopped_ns)."),
    p("plots", Ty::Bool, "true", "Draw the standard PNG plots into the output folder."),
    p("fct_at", Ty::Str, "\"receiver\"", "Where a message completes for the summary's FCT and slowdown figures: \"receiver\" (its last byte placed; the run ends when every message is; ideal: the frames' one-way store-and-forward time) or \"sender\" (its last acknowledgement back at the sender, as the HPCC ns-3 simulator and the papers built on it count; the run waits for every message's last acknowledgement; ideal: base RTT + wire bytes / NIC rate). flows.parquet has both (fct_ns, sender_fct_ns) either way."),
];

/// The whole catalog, for `fabricsim list` and the README.
pub const CATALOG: &[Section] = &[
    Section { section: "", kind: None, doc: "Top-level keys.", params: TOP },
    Section { section: "topology", kind: None, doc: "Keys of every topology.", params: TOPOLOGY_COMMON },
    Section { section: "topology", kind: Some("leaf_spine"), doc: "Two-tier leaf-spine.", params: LEAF_SPINE },
    Section { section: "topology", kind: Some("fat_tree"), doc: "Three-tier k-ary fat-tree (edge, aggregation, core).", params: FAT_TREE },
    Section { section: "topology", kind: Some("htsim"), doc: "The fat-tree of an htsim .topo file, as the leaf_spine or fat_tree it describes.", params: HTSIM_TOPO },
    Section { section: "topology", kind: Some("multi_plane"), doc: "Multi-plane two-tier Clos (MRC): one NIC port per plane, T0 per plane per group, T1 per plane.", params: MULTI_PLANE },
    Section { section: "fabric", kind: None, doc: "Switch behaviour.", params: FABRIC },
    Section { section: "fabric.pfc", kind: None, doc: "PFC's thresholds.", params: PFC },
    Section { section: "fabric.ecn", kind: None, doc: "ECN marking (RED at dequeue).", params: ECN },
    Section { section: "transport", kind: None, doc: "Keys of every transport.", params: TRANSPORT_COMMON },
    Section { section: "transport", kind: Some(TransportKind::Roce.name()), doc: "RoCEv2 RC: one 5-tuple per QP, go-back-N, DCQCN.", params: ROCE },
    Section { section: "transport", kind: Some(TransportKind::QpScaling.name()), doc: "QP-Scaling: one transfer split over K RoCE QPs, each with its own 5-tuple and DCQCN.", params: QP_SCALING },
    Section { section: "transport", kind: Some(TransportKind::Mprdma.name()), doc: "MPRDMA (NSDI '18, as the UDMP paper describes it): one window over virtual paths, ACK-clocked on the ACK's path, ECN 1/cwnd increase and -1/2 or halving per marked ACK (ecn_cut), OOO-aware path choice with delta, receiver bitmap with NACK, path exploration.", params: MPRDMA },
    Section { section: "transport", kind: Some(TransportKind::Stellar.name()), doc: "STELLAR: N-path spraying with one shared window reacting to ECN and RTT, direct placement, 250us RTO, lost packets resent on another path.", params: STELLAR },
    Section { section: "transport", kind: Some(TransportKind::Udmp.name()), doc: "UDMP: delay-gradient rate control (Algorithm 1) and delay-driven ACK-clocked load balancing (Algorithm 2) joined by a token pool, per-packet ACKs with timestamps, receiver bitmap with NACK, OOO-aware path selection, exploration.", params: UDMP },
    Section { section: "transport", kind: Some(TransportKind::Star.name()), doc: "StaR (APNet '20): the server's NIC keeps no per-connection state. The client keeps it all and carries what the server needs in every packet (WQEP, CQEP, EA, RDP, RA, GD, SDP; see the README for their header); a DCTCP window at the client; WQE loss recovered by the server's driver; a security table on the client's NIC lets only requests within memory the server registered leave. On a modelled NIC ([nic]) the server's packets need no context and no translation.", params: STAR },
    Section { section: "transport", kind: Some(TransportKind::Mrc.name()), doc: "MRC: per-packet rotation over EV sets split across planes, SACK, trimming with NACK fast retransmit, ECN-driven EV avoidance, EV retirement on untrimmed loss with backups and probing, port-state remapping, reverse EV set. Use it on a lossy fabric (pfc = false) with trimming, and with ECN off on the last hop as the paper deploys it (ecn = { last_hop = false }: marks at a receiver's own port would make the sender avoid healthy EVs).", params: MRC },
    Section { section: "transport", kind: Some(TransportKind::Maestro.name()), doc: "Maestro (SOSR '21): software multipath over unmodified RoCE, K RoCE RC QPs per connection on source ports chosen to take disjoint paths, messages cut into chunks written at their offsets, a load balancer and a path monitor per QP, failover of a failed QP's chunks.", params: MAESTRO },
    Section { section: "transport.dcqcn", kind: None, doc: "DCQCN overrides.", params: DCQCN },
    Section { section: "workload", kind: None, doc: "Keys of every workload.", params: WORKLOAD_COMMON },
    Section { section: "workload", kind: Some("flows"), doc: "An explicit list of flows.", params: W_FLOWS },
    Section { section: "workload", kind: Some("permutation"), doc: "Every host sends to a distinct random other host.", params: W_PERMUTATION },
    Section { section: "workload", kind: Some("incast"), doc: "N senders to one receiver.", params: W_INCAST },
    Section { section: "workload", kind: Some("all_to_all"), doc: "Every host to every other at once (busbw factor (N-1)/N).", params: W_ALL_TO_ALL },
    Section { section: "workload", kind: Some("all_reduce"), doc: "All-reduce: ring, double binary tree or halving-doubling (busbw factor 2(N-1)/N).", params: W_ALL_REDUCE },
    Section { section: "workload", kind: Some("all_gather"), doc: "All-gather: ring or recursive doubling (busbw factor (N-1)/N).", params: W_ALL_GATHER },
    Section { section: "workload", kind: Some("reduce_scatter"), doc: "Reduce-scatter: ring or recursive halving (busbw factor (N-1)/N).", params: W_REDUCE_SCATTER },
    Section { section: "workload", kind: Some("broadcast"), doc: "Broadcast from a root down a pipelined chain, NCCL's ring broadcast (busbw factor 1).", params: W_BROADCAST },
    Section { section: "workload", kind: Some("reduce"), doc: "Reduce to a root along a pipelined chain that ends there, NCCL's ring reduce (busbw factor 1).", params: W_REDUCE },
    Section { section: "workload", kind: Some("gather"), doc: "Gather to a root: every host sends it its part at once (busbw factor (N-1)/N on the root's whole buffer, as nccl-tests).", params: W_GATHER },
    Section { section: "workload", kind: Some("scatter"), doc: "Scatter from a root: it sends every host its part at once (busbw factor (N-1)/N on the root's whole buffer, as nccl-tests).", params: W_SCATTER },
    Section { section: "workload", kind: Some("all_to_allv"), doc: "All-to-all with a size per pair (busbw factor (N-1)/N on nccl-tests' size: N x the mean size per pair).", params: W_ALL_TO_ALLV },
    Section { section: "workload", kind: Some("poisson"), doc: "A datacenter traffic mix: Poisson arrivals at a target load, sizes from a CDF; the summary reports FCT slowdown by flow size.", params: W_POISSON },
    Section { section: "workload", kind: Some("constant_rate"), doc: "Background traffic: one flow at a fixed rate, optionally on/off, optionally pinned to one path.", params: W_CONSTANT_RATE },
    Section { section: "workload", kind: Some("chakra"), doc: "A Chakra execution trace replayed as a job: compute, send/receive and collective nodes with their dependencies (see the README).", params: W_CHAKRA },
    Section { section: "workload", kind: Some("htsim"), doc: "The flows of an htsim connection matrix, with its triggers as dependencies and its failures as links down (see the README).", params: W_HTSIM },
    Section { section: "workload", kind: Some("message_rate"), doc: "Clients in a closed loop of small WRITEs to one server (StaR Fig. 5a); the summary's loops entry reports operations per second and latencies.", params: W_MESSAGE_RATE },
    Section { section: "workload", kind: Some("rpc"), doc: "Clients in a closed loop of calls to one server: a request, the reply back (StaR Fig. 5b); the summary's loops entry reports calls per second and latencies.", params: W_RPC },
    Section { section: "workload", kind: Some("barrier"), doc: "Dissemination barrier: ceil(log2 N) rounds of 8-byte messages (time only).", params: W_BARRIER },
    Section { section: "jobs", kind: None, doc: "One [[jobs]] entry: a training job.", params: JOBS },
    Section { section: "jobs.collectives", kind: None, doc: "One [[jobs.collectives]] entry of a job.", params: JOB_COLLECTIVES },
    Section { section: "jobs.startup", kind: None, doc: "A job's container start-up (STELLAR section 5).", params: STARTUP },
    Section { section: "jobs.on_off", kind: None, doc: "A job's bursts.", params: ON_OFF },
    Section { section: "jobs.stragglers", kind: None, doc: "One straggler of a job.", params: STRAGGLERS },
    Section { section: "faults", kind: None, doc: "One [[faults]] entry. Names (as in ports.parquet): switches leaf[i], spine[i] (leaf_spine), edge[i], agg[i], core[i] (fat_tree), t0[p*groups+g], t1[p*t1_per_plane+k] (multi_plane, plane p); ports <switch>.up[j] (toward higher tiers) and <switch>.down[j] (toward hosts), numbered per switch; host[h].nic[p] for host h's NIC port p. A cable is named by either end's port.", params: FAULTS },
    Section { section: "output", kind: None, doc: "Recording.", params: OUTPUT },
    Section { section: "nic", kind: None, doc: "The hosts' NICs: the RNIC resource model.", params: NIC },
    Section { section: "nic.groups", kind: None, doc: "One [[nic.groups]] entry: NICs described apart.", params: NIC_GROUP },
];

/// The keys of `section` with `kind`, common keys first.
pub fn params_for(section: &str, kind: &str) -> Vec<&'static Param> {
    CATALOG
        .iter()
        .filter(|s| s.section == section && (s.kind.is_none() || s.kind == Some(kind)))
        .flat_map(|s| s.params.iter())
        .collect()
}

/// Walks one TOML table, taking keys through the schema.
pub struct Reader<'a> {
    path: String,
    table: &'a toml::Table,
    taken: Vec<&'a str>,
    /// Keys whose documented default is a word ("auto", "none") rather than a value:
    /// writing that word is the same as leaving the key out.
    words: Vec<(&'static str, &'static str)>,
    /// The keys documented for this table: their defaults are the parser's (one
    /// source: the catalog).
    params: Vec<&'static Param>,
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::String(_) => "a string",
        Value::Integer(_) => "an integer",
        Value::Float(_) => "a float",
        Value::Boolean(_) => "a boolean",
        Value::Datetime(_) => "a date",
        Value::Array(_) => "an array",
        Value::Table(_) => "a table",
    }
}

impl<'a> Reader<'a> {
    /// A reader over `value`, which must be a table, at key path `path`.
    pub fn new(path: impl Into<String>, value: &'a Value) -> Result<Reader<'a>, ScenarioError> {
        let path = path.into();
        match value {
            Value::Table(table) => Ok(Reader { path, table, taken: Vec::new(), words: Vec::new(), params: Vec::new() }),
            other => Err(ScenarioError::new(&path, format!("expected a table, got {}", type_name(other)))),
        }
    }

    /// The full path of `key`.
    pub fn path(&self, key: &str) -> String {
        let key = toml_key(key);
        if self.path.is_empty() {
            key.into_owned()
        } else {
            format!("{}.{}", self.path, key)
        }
    }

    /// An error about `key`.
    pub fn error(&self, key: &str, message: impl Into<String>) -> ScenarioError {
        ScenarioError::new(&self.path(key), message)
    }

    /// The raw value of `key`, if present, without marking it as used.
    pub fn raw_peek(&self, key: &str) -> Option<&'a Value> {
        self.table.get(key)
    }

    /// The raw value of `key`, if present (marks it as used).
    pub fn raw(&mut self, key: &'a str) -> Option<&'a Value> {
        let v = self.table.get(key)?;
        self.taken.push(key);
        Some(v)
    }

    /// Takes the documented defaults of `params`: a key whose default is the word
    /// "auto" or "none" then also accepts that word, meaning the default.
    pub fn documented(&mut self, params: &[&'static Param]) {
        self.words =
            params.iter().filter(|p| matches!(p.default, "auto" | "none")).map(|p| (p.key, p.default)).collect();
        self.params = params.to_vec();
    }

    /// The catalog's default of `key`, as written in a scenario. Panics if `key` is not
    /// documented for this table (a parser bug: the catalog is the one list of keys; a
    /// test parses every section, so none reaches a user).
    pub fn default_text(&self, key: &str) -> &'static str {
        match self.params.iter().find(|p| p.key == key) {
            Some(p) => p.default,
            None => {
                panic!("{}: not in the schema catalog (documented() not called, or the key missing)", self.path(key))
            }
        }
    }

    /// The catalog's default of `key` parsed by `parse`. Panics on a default that does
    /// not parse (a catalog bug, caught by the catalog's tests).
    pub(crate) fn parsed_default<T>(&self, key: &str, parse: impl FnOnce(&str) -> Option<T>) -> T {
        let text = self.default_text(key);
        parse(text).unwrap_or_else(|| panic!("{}: the catalog's default {text:?} does not parse", self.path(key)))
    }

    /// An integer in `min..=max`, or the catalog's default.
    pub fn int(&mut self, key: &'a str, min: i64, max: i64) -> Result<i64, ScenarioError> {
        let default = self.parsed_default(key, |t| t.parse().ok());
        self.int_or(key, default, min, max)
    }

    /// A number in `min..=max`, or the catalog's default.
    pub fn float(&mut self, key: &'a str, min: f64, max: f64) -> Result<f64, ScenarioError> {
        let default = self.parsed_default(key, parse_float_default);
        self.float_or(key, default, min, max)
    }

    /// A boolean, or the catalog's default.
    pub fn bool(&mut self, key: &'a str) -> Result<bool, ScenarioError> {
        let default = self.parsed_default(key, |t| t.parse().ok());
        self.bool_or(key, default)
    }

    /// One of the catalog's choices of `key`, or its default (required if it has none).
    pub fn choose(&mut self, key: &'a str) -> Result<String, ScenarioError> {
        let p = self.params.iter().find(|p| p.key == key).copied();
        let p = p.unwrap_or_else(|| panic!("{}: not in the schema catalog", self.path(key)));
        self.choice(key, p.default, p.choices)
    }

    /// A duration, or the catalog's default.
    pub fn duration_d(&mut self, key: &'a str) -> Result<Dur, ScenarioError> {
        let default = self.parsed_default(key, |t| parse_duration(t).ok());
        Ok(self.duration(key)?.unwrap_or(default))
    }

    /// A rate, or the catalog's default.
    pub fn rate_d(&mut self, key: &'a str) -> Result<Rate, ScenarioError> {
        let default = self.parsed_default(key, |t| parse_rate(t).ok());
        Ok(self.rate(key)?.unwrap_or(default))
    }

    /// A size, or the catalog's default.
    pub fn size_d(&mut self, key: &'a str) -> Result<u64, ScenarioError> {
        let default = self.parsed_default(key, |t| parse_size(t).ok());
        Ok(self.size(key)?.unwrap_or(default))
    }

    /// The default word of `key`, if it has one.
    fn word(&self, key: &str) -> Option<&'static str> {
        self.words.iter().find(|(k, _)| *k == key).map(|(_, w)| *w)
    }

    /// Whether `key` holds its default word.
    fn is_word(&self, key: &str) -> bool {
        matches!((self.table.get(key), self.word(key)), (Some(Value::String(s)), Some(w)) if s == w)
    }

    fn expect<T>(&self, key: &str, v: &Value, what: &str) -> Result<T, ScenarioError> {
        let or_word = self.word(key).map(|w| format!(" or \"{w}\"")).unwrap_or_default();
        Err(self.error(key, format!("expected {what}{or_word}, got {}", type_name(v))))
    }

    /// An integer in `min..=max`, or `default` if absent (a default the catalog cannot
    /// state as one value: it depends on a preset or another key).
    pub fn int_or(&mut self, key: &'a str, default: i64, min: i64, max: i64) -> Result<i64, ScenarioError> {
        let Some(v) = self.raw(key) else { return Ok(default) };
        let Value::Integer(i) = v else { return self.expect(key, v, "an integer") };
        if *i < min || *i > max {
            return Err(self.error(key, format!("must be between {min} and {max}, got {i}")));
        }
        Ok(*i)
    }

    /// An optional integer in `min..=max`.
    pub fn opt_int(&mut self, key: &'a str, min: i64, max: i64) -> Result<Option<i64>, ScenarioError> {
        if self.is_word(key) {
            self.taken.push(key);
            Ok(None)
        } else if self.table.contains_key(key) {
            self.int_or(key, 0, min, max).map(Some)
        } else {
            Ok(None)
        }
    }

    /// A number in `min..=max` (integers accepted), or `default`.
    pub fn float_or(&mut self, key: &'a str, default: f64, min: f64, max: f64) -> Result<f64, ScenarioError> {
        let Some(v) = self.raw(key) else { return Ok(default) };
        let x = match v {
            Value::Float(f) => *f,
            Value::Integer(i) => *i as f64,
            other => return self.expect(key, other, "a number"),
        };
        if !(min..=max).contains(&x) {
            return Err(self.error(key, format!("must be between {min} and {max}, got {x}")));
        }
        Ok(x)
    }

    /// A boolean, or `default`.
    pub fn bool_or(&mut self, key: &'a str, default: bool) -> Result<bool, ScenarioError> {
        match self.raw(key) {
            None => Ok(default),
            Some(Value::Boolean(b)) => Ok(*b),
            Some(v) => self.expect(key, v, "true or false"),
        }
    }

    /// A string, or `default`.
    pub fn string(&mut self, key: &'a str, default: &str) -> Result<String, ScenarioError> {
        match self.raw(key) {
            None => Ok(default.to_string()),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(v) => self.expect(key, v, "a string"),
        }
    }

    /// One of `choices`, or `default` (`""` = required).
    pub fn choice(&mut self, key: &'a str, default: &str, choices: &[&str]) -> Result<String, ScenarioError> {
        let allowed = choices.join(", ");
        match self.raw(key) {
            None if default.is_empty() => Err(self.error(key, format!("is required (one of: {allowed})"))),
            None => Ok(default.to_string()),
            Some(Value::String(s)) if choices.contains(&s.as_str()) => Ok(s.clone()),
            Some(Value::String(s)) => Err(self.error(key, format!("unknown value {} (allowed: {allowed})", quoted(s)))),
            Some(v) => self.expect(key, v, &format!("one of: {allowed}")),
        }
    }

    fn unit<T>(&mut self, key: &'a str, parse: fn(&str) -> Result<T, String>) -> Result<Option<T>, ScenarioError> {
        if self.is_word(key) {
            self.taken.push(key);
            return Ok(None);
        }
        match self.raw(key) {
            None => Ok(None),
            Some(Value::String(s)) => parse(s).map(Some).map_err(|m| self.error(key, m)),
            Some(v) => self.expect(key, v, "a string with a unit"),
        }
    }

    /// A rate, if present.
    pub fn rate(&mut self, key: &'a str) -> Result<Option<Rate>, ScenarioError> {
        self.unit(key, parse_rate)
    }

    /// A duration, if present.
    pub fn duration(&mut self, key: &'a str) -> Result<Option<Dur>, ScenarioError> {
        self.unit(key, parse_duration)
    }

    /// A size (a string with a unit or an integer number of bytes), if present.
    pub fn size(&mut self, key: &'a str) -> Result<Option<u64>, ScenarioError> {
        match self.table.get(key) {
            Some(Value::Integer(i)) => {
                self.taken.push(key);
                if *i < 0 {
                    Err(self.error(key, format!("must not be negative, got {i}")))
                } else {
                    Ok(Some(*i as u64))
                }
            }
            _ => self.unit(key, parse_size),
        }
    }

    /// A required size of at least one byte.
    pub fn required_size(&mut self, key: &'a str) -> Result<u64, ScenarioError> {
        match self.size(key)? {
            None => Err(self.error(key, "is required (a size such as \"2MB\")")),
            Some(0) => Err(self.error(key, "must be at least 1 byte")),
            Some(s) => Ok(s),
        }
    }

    /// Fails on any key not taken so far, listing the keys `allowed`.
    pub fn finish(&self, allowed: &[&Param]) -> Result<(), ScenarioError> {
        for key in self.table.keys() {
            if !self.taken.contains(&key.as_str()) {
                let names: Vec<&str> = allowed.iter().map(|p| p.key).collect();
                return Err(self.error(key, format!("unknown key (allowed here: {})", names.join(", "))));
            }
        }
        Ok(())
    }
}

/// A float default as the catalog writes it: a number or a fraction (`1/256`).
pub(crate) fn parse_float_default(text: &str) -> Option<f64> {
    match text.split_once('/') {
        Some((a, b)) => Some(a.trim().parse::<f64>().ok()? / b.trim().parse::<f64>().ok()?),
        None => text.parse().ok(),
    }
}

/// `key` as TOML would write it in a dotted path: bare if it can be, quoted otherwise,
/// so that a key `"k.x"` is not reported as the nested `k.x`; a long key is cut (see
/// [`quoted`]).
fn toml_key(key: &str) -> std::borrow::Cow<'_, str> {
    let bare = key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if !key.is_empty() && bare && key.len() <= crate::QUOTE_MAX {
        key.into()
    } else {
        quoted(key).into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_transport_kind_has_its_section_of_keys() {
        for kind in TransportKind::ALL {
            let sections = CATALOG.iter().filter(|s| s.section == "transport" && s.kind == Some(kind.name())).count();
            assert_eq!(sections, 1, "transport kind {}", kind.name());
        }
        assert_eq!(TRANSPORT_KINDS.len(), TransportKind::ALL.len());
    }
}
