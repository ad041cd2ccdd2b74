"""UDMP (Huang et al., IEEE/ACM ToN): its load-balancing, fairness and permutation
experiments as scenarios.

- Fig. 3, the token-pool example (``token_pool`` / ``token_pool_sweep``): two paths with
  RTT 2 and 3 units, tokens at one packet per unit; the faster path carries 4 of every
  6 packets when the paths' ACKs arrive in the walk-through's order, all of them
  otherwise (the balancer is greedy).
- Fig. 1 / 4a, avoidable congestion (``collision`` / ``collision_phases``): a UDMP flow
  meets a single-path RoCE flow on one spine and moves its traffic to the other.
- Fig. 4b/4c, unavoidable congestion (``incast`` / ``stage_gbps``): three senders to one
  receiver, staggered, converge to fair shares at every stage.
- Fig. 6a, permutation on a non-blocking fat-tree (``permutation``): tail ("P99") flow
  throughput of UDMP, QP-Scaling-32/16, MPRDMA and single-path RoCE.
- Fig. 7, out-of-order control under a delay anomaly (1 us -> 1 ms on one link) and a
  rate degradation (to 40 %) (``anomaly``, ``anomaly_single``).

Fabric settings of the paper's simulations (section V-B): 100 Gb/s hosts, 400 Gb/s
switch links, 1 us per link, 32 MB switch buffers, RED/ECN as a step at 36 packets with
Pmax 1.0 where one BDP is about 108 packets (``ECN_STEP``: a third of a BDP, 55 KB on
these fabrics). The paper does not state
PFC; fabricsim's default (PFC on) is kept, and the multipath transports never pause
in these runs. Fig. 1/3/4 use a two-tier leaf-spine as the paper's testbed, at 100 Gb/s
with fabricsim's default fabric (ECN 400 KB-1.6 MB per 100 Gb/s port).
"""

from __future__ import annotations

import math
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np
import pandas as pd

from .. import _core
from ..api import run
from ..results import Result
from .common import flow_gbps, jain, low_percentile_gbps

#: Bytes a full multipath data packet adds to its payload on the wire: Ethernet, IPv6,
#: UDP, BTH, ICRC, FCS (82), preamble and gap (20), RETH (16), extension header (32),
#: in the core's figures (every multipath packet carries a RETH and the extension).
MULTIPATH_OVERHEAD = _core.HEADER_BYTES + _core.PREAMBLE_IFG_BYTES + _core.RETH_BYTES + _core.EXT_BYTES
#: Wire bytes of a multipath transport's ACK (base headers, preamble/gap, extension).
ACK_WIRE = _core.HEADER_BYTES + _core.PREAMBLE_IFG_BYTES + _core.EXT_BYTES
#: Bytes a RoCE data packet after a message's first adds to its payload on the wire (the
#: first also carries a RETH).
ROCE_OVERHEAD = _core.HEADER_BYTES + _core.PREAMBLE_IFG_BYTES
#: The paper's RED setting "(P_max, K_min, K_max) = (1.0, 36 packets, 36 packets)" with
#: "the BDP size ... approximately 108 packets": a step at a third of a BDP. The
#: fat-trees here (100 Gb/s hosts, 1 us links, 4 KB packets) have an inter-pod base RTT
#: of about 13.1 us, a BDP of 164 KB, so the step is at 55 KB. (Kept as a fraction of the
#: BDP rather than as 36 of fabricsim's 4 KB packets, which would put it at a whole BDP:
#: a window that halves on marks then never sees them.)
ECN_STEP = {"kmin": "55KB", "kmax": "55KB", "pmax": 1.0}

#: Transports of the Fig. 6a comparison, by the names used in results.
TRANSPORTS: Dict[str, Dict[str, Any]] = {
    "udmp": {"kind": "udmp"},
    "qps32": {"kind": "qp_scaling", "qps": 32},
    "qps16": {"kind": "qp_scaling", "qps": 16},
    # MPRDMA as the paper describes it: the window "decreases by 1/2 when an ACK with
    # an ECN mark is received", read as halving (see ``mprdma_nsdi``).
    "mprdma": {"kind": "mprdma", "ecn_cut": "halve"},
    "roce": {"kind": "roce"},
    # Diagnostics (not in the paper): UDMP's load balancer alone, Algorithm 1's rate
    # replaced by a constant 90 Gb/s (below the ~93.5 Gb/s a NIC can send while it also
    # carries per-packet ACKs for the host's incoming flow: at line rate the bytes pool,
    # which nothing caps, would grow without bound and the ACK clock with it; other
    # packet sizes scale it, see `lb_only_rate_gbps`); and UDMP without out-of-order
    # awareness (Fig. 7).
    "udmp_lb_only": {"kind": "udmp", "fixed_rate": "90Gbps"},
    "udmp_no_ooo": {"kind": "udmp", "ooo_aware": False},
    # MPRDMA with MP-RDMA's own rule (NSDI '18: the window loses half a packet per
    # marked ACK), fabricsim's default: the other reading of the paper's sentence.
    "mprdma_nsdi": {"kind": "mprdma"},
    "stellar": {"kind": "stellar"},
}


def lb_only_rate_gbps(mtu: int, line_gbps: float = 100.0) -> int:
    """``udmp_lb_only``'s constant rate for packets of ``mtu`` bytes: 96 % of the data
    rate a NIC can send while it also sends an ACK for every packet it receives, in
    whole Gb/s (90 with 4 KB packets, 75 with 1000 bytes)."""
    return round(0.96 * line_gbps * mtu / (mtu + MULTIPATH_OVERHEAD + ACK_WIRE))


def transport(name: str) -> Dict[str, Any]:
    """The transport table called ``name`` in ``TRANSPORTS`` (a copy)."""
    return dict(TRANSPORTS[name])


def _leaf_spine(hosts_per_leaf: int, spines: int = 2, rate: str = "100Gbps") -> Dict[str, Any]:
    return {"kind": "leaf_spine", "leaves": 2, "spines": spines, "hosts_per_leaf": hosts_per_leaf,
            "host_link": rate, "fabric_link": rate}


def _phase_gbps(r: Result, connection: int, a_ns: int, b_ns: int) -> float:
    t = r.throughput
    w = t[(t["connection"] == connection) & (t["time_ns"] > a_ns) & (t["time_ns"] <= b_ns)]
    return float(w["bytes"].sum() * 8 / (b_ns - a_ns))


def _port_gbps(r: Result, port: str, a_ns: int, b_ns: int) -> float:
    p = r.ports
    w = p[(p["port"] == port) & (p["time_ns"] > a_ns) & (p["time_ns"] <= b_ns)]
    return float(w["tx_bytes"].sum() * 8 / (b_ns - a_ns))


# --- Fig. 3: the token-pool example -------------------------------------------------

def token_pool_timing(mtu: int = 4096, rate_gbps: float = 100.0, link_delay_ns: float = 1000.0) -> Dict[str, float]:
    """The Fig. 3 scenario's time unit: the fast path's RTT (two hosts under two leaves,
    four links each way: every link stores and forwards a full data frame out and an
    ACK back) is 2 units; ``delay_ns`` added on one leaf-spine cable (crossed by data
    and ACK) makes the other path just under 3 units (by at most 2 ns), so that where
    the two paths' ACKs coincide the slower one is handled first, as in the paper's
    walk-through."""
    per_hop = ((mtu + MULTIPATH_OVERHEAD) + ACK_WIRE) * 8 / rate_gbps + 2 * link_delay_ns
    base = 4 * per_hop
    return {"base_rtt_ns": base, "unit_ns": base / 2, "delay_ns": math.ceil(base / 4) - 1,
            "packet_wire_bytes": mtu + MULTIPATH_OVERHEAD}


def token_pool(seed: int = 1, onset_ns: int = 100_000, cycles: int = 10, mtu: int = 4096) -> Dict[str, Any]:
    """Fig. 3: one UDMP flow over exactly two paths with tokens injected at one packet
    per unit (``fixed_rate``: Algorithm 1's rate control is off, isolating the load
    balancer, as in the paper's example).

    SRv6 routing pins entropy value 0 to spine 0 and 1 to spine 1, in both directions
    (ACKs echo the data's entropy). Both paths start equal (2 units); at ``onset_ns``
    the cable ``leaf[0].up[1]`` gains a quarter of the base RTT each way, so path 1
    takes 3 units. The first RTT sprays one BDP of packets at line rate (the toy starts
    with one packet per path); the onset waits until that burst has settled into the
    token rate (with equal paths: one packet per unit, the paths taking turns)."""
    t = token_pool_timing(mtu)
    rate = int(t["packet_wire_bytes"] * 8 / t["unit_ns"] * 1e9)
    stop_ns = onset_ns + (cycles + 1) * 6 * t["unit_ns"]
    return {"name": "udmp-token-pool", "seed": seed, "stop": f"{int(stop_ns)}ns",
            "topology": dict(_leaf_spine(1), mtu=mtu), "fabric": {"routing": "srv6"},
            "transport": {"kind": "udmp", "paths": 2, "explore": 0.0, "fixed_rate": f"{rate}bps"},
            "workload": {"kind": "flows", "flows": [{"src": 0, "dst": 1, "size": "100MB"}]},
            "faults": [{"at": f"{int(onset_ns)}ns", "kind": "delay", "link": "leaf[0].up[1]", "delay": f"{t['delay_ns']}ns"}],
            "output": {"sample_interval": "1us", "plots": False}}


def token_pool_loads(r: Result, onset_ns: int = 100_000, mtu: int = 4096) -> pd.DataFrame:
    """Packets each path carried per 6-unit cycle (one period of the paper's
    walk-through), counted on the two uplinks of the sender's leaf (``fast``: spine 0,
    ``slow``: spine 1, delayed from the onset). Cycle 0 starts at the onset; negative
    cycles are before it (equal paths)."""
    t = token_pool_timing(mtu)
    p = r.ports[r.ports["port"].isin(["leaf[0].up[0]", "leaf[0].up[1]"])]
    cyc = np.floor((p["time_ns"].to_numpy(dtype=float) - 1 - onset_ns) / (6 * t["unit_ns"])).astype(int)
    pk = p["tx_bytes"].to_numpy(dtype=float) / t["packet_wire_bytes"]
    df = pd.DataFrame({"cycle": cyc, "path": np.where(p["port"].astype(str) == "leaf[0].up[0]", "fast", "slow"), "packets": pk})
    out = df.groupby(["cycle", "path"])["packets"].sum().unstack("path").reindex(columns=["fast", "slow"]).fillna(0.0)
    return out.round().astype(int)


def token_pool_seed(limit: int = 40, onset_ns: int = 100_000) -> int:
    """The first seed whose first-RTT spray leaves both paths with an ACK clock in the
    two cycles before the onset (the burst of one BDP at line rate can leave one path
    without packets in flight, and with exploration off nothing brings it back)."""
    for seed in range(1, limit):
        loads = token_pool_loads(run(token_pool(seed, onset_ns=onset_ns, cycles=0)), onset_ns)
        if {-2, -1} <= set(loads.index) and (loads.loc[[-2, -1]] > 0).all().all():
            return seed
    raise RuntimeError("no seed keeps both paths busy")


def token_pool_sweep(seed: int, onsets: int = 8, first_ns: int = 100_000, cycles: int = 10) -> pd.DataFrame:
    """Fig. 3 with the delay's onset at ``onsets`` phases spread over one 2-unit period
    of the equal-path pattern: packets per path in the ``cycles`` cycles after the first
    one following the onset, and in the two cycles before it."""
    rows = [token_pool_row(run(token_pool(seed, onset_ns=on, cycles=cycles + 1)), seed, on, cycles)
            for on in token_pool_onsets(onsets, first_ns)]
    return pd.DataFrame(rows)


def token_pool_onsets(onsets: int = 8, first_ns: int = 100_000) -> List[int]:
    """``onsets`` delay onsets spread over one 2-unit period of the equal-path pattern."""
    unit = token_pool_timing()["unit_ns"]
    return [int(first_ns + i * 2 * unit / onsets) for i in range(onsets)]


def token_pool_row(r: Result, seed: int, onset_ns: int, cycles: int = 10) -> Dict[str, Any]:
    """One row of :func:`token_pool_sweep`: the run ``token_pool(seed, onset_ns,
    cycles + 1)``'s packets per path in the ``cycles`` cycles after the onset's first
    one, and in the two before it."""
    loads = token_pool_loads(r, onset_ns)
    after = loads.reindex(range(1, cycles + 1), fill_value=0)
    before = loads.reindex([-2, -1], fill_value=0).sum()
    return {"seed": seed, "onset_ns": onset_ns, "fast_before": int(before["fast"]), "slow_before": int(before["slow"]),
            "fast": int(after["fast"].sum()), "slow": int(after["slow"].sum()),
            "walkthrough": bool(((after["fast"] == 4) & (after["slow"] == 2)).all())}


# --- Fig. 1 / 4a: two colliding flows -----------------------------------------------

def collision(transport_table: Optional[Dict[str, Any]] = None, seed: int = 1, start_us: int = 400,
              stop_us: int = 2000, size: str = "50MB", rate: str = "100Gbps", flow1_bytes: Optional[int] = None,
              sample_interval: str = "10us") -> Dict[str, Any]:
    """Fig. 1: flow 1 (host 0 under leaf 0 to host 2 under leaf 1) runs the multipath
    transport from t = 0; flow 2 (host 1 to host 3, the same two leaves) is a single-path
    RoCE flow with DCQCN (a per-workload transport) starting at ``start_us``. ECMP puts
    flow 2 on one spine; flow 1 should leave that spine for the other one."""
    tr = transport_table or {"kind": "udmp"}
    f1 = {"src": 0, "dst": 2, "size": flow1_bytes if flow1_bytes is not None else size}
    return {"name": f"udmp-collision-{tr['kind']}", "seed": seed, "stop": f"{stop_us}us",
            "topology": _leaf_spine(2, rate=rate), "transport": tr,
            "workload": [{"kind": "flows", "flows": [f1]},
                         {"kind": "flows", "start": f"{start_us}us", "transport": {"kind": "roce"},
                          "flows": [{"src": 1, "dst": 3, "size": "40MB"}]}],
            "output": {"sample_interval": sample_interval, "plots": False}}


def shared_uplink(transport_table: Optional[Dict[str, Any]] = None, seed: int = 1, start_us: int = 400) -> str:
    """The uplink of leaf 0 that ECMP gives flow 2 in ``collision``, learnt from the same
    scenario with a one-packet flow 1 (every random choice of flow 2 is unchanged)."""
    return shared_uplink_of(run(shared_uplink_probe(transport_table, seed, start_us)), start_us)


def shared_uplink_probe(transport_table: Optional[Dict[str, Any]] = None, seed: int = 1,
                        start_us: int = 400) -> Dict[str, Any]:
    """The run :func:`shared_uplink` learns from: ``collision`` with a one-packet flow 1,
    stopped 40 us after flow 2 starts."""
    return collision(transport_table, seed, start_us, stop_us=start_us + 40, flow1_bytes=4096)


def shared_uplink_of(r: Result, start_us: int = 400) -> str:
    """The uplink of leaf 0 that carried flow 2 in a :func:`shared_uplink_probe` run."""
    p = r.ports[r.ports["port"].str.startswith("leaf[0].up") & (r.ports["time_ns"] > start_us * 1000)]
    return str(p.groupby("port", observed=True)["tx_bytes"].sum().idxmax())


def collision_series(r: Result, shared: str, mtu: int = 4096, roce_overhead: int = ROCE_OVERHEAD) -> pd.DataFrame:
    """Fig. 1's curves, one row per sample: flow 1's delivered Gb/s, its data rate on
    each leaf uplink (the shared one less flow 2's frames) and flow 2's Gb/s."""
    t = r.throughput.pivot_table(index="time_ns", columns="connection", values="gbps", aggfunc="sum")
    t = t.reindex(columns=[0, 1]).fillna(0.0)
    p = r.ports[r.ports["port"].str.startswith("leaf[0].up")]
    tx = p.pivot_table(index="time_ns", columns="port", values="tx_bytes", aggfunc="sum", observed=True)
    dt = float(np.diff(t.index.to_numpy()).min()) if len(t) > 1 else 1.0
    other = "leaf[0].up[1]" if shared == "leaf[0].up[0]" else "leaf[0].up[0]"
    tx = tx.reindex(index=t.index, columns=[shared, other]).fillna(0.0) * 8 / dt * mtu / (mtu + MULTIPATH_OVERHEAD)
    f2_wire = t[1] * (mtu + roce_overhead) / mtu * mtu / (mtu + MULTIPATH_OVERHEAD)
    return pd.DataFrame({"time_us": t.index / 1e3, "flow1_gbps": t[0], "flow1_shared_gbps": (tx[shared] - f2_wire).clip(lower=0),
                         "flow1_other_gbps": tx[other], "flow2_gbps": t[1]}).reset_index(drop=True)


def collision_phases(r: Result, shared: str, edges_us: Sequence[int], mtu: int = 4096) -> pd.DataFrame:
    """Per phase between consecutive ``edges_us``: flow 1's and flow 2's delivered Gb/s,
    and the fraction of flow 1's data that went over the leaf uplink flow 2 does not use
    (``flow1_off_shared``; the uplink carries only flow 1's data, converted from wire
    bytes to payload)."""
    other = "leaf[0].up[1]" if shared == "leaf[0].up[0]" else "leaf[0].up[0]"
    rows = []
    for a, b in zip(edges_us, edges_us[1:]):
        f1 = _phase_gbps(r, 0, a * 1000, b * 1000)
        off = _port_gbps(r, other, a * 1000, b * 1000) * mtu / (mtu + MULTIPATH_OVERHEAD)
        rows.append({"from_us": a, "to_us": b, "flow1_gbps": f1, "flow2_gbps": _phase_gbps(r, 1, a * 1000, b * 1000),
                     "flow1_off_shared": off / f1 if f1 > 0 else float("nan")})
    return pd.DataFrame(rows)


# --- Fig. 4b/4c: incast with staggered arrivals and departures -----------------------

def incast_sizes(step_us: int, senders: int = 3, goodput_gbps: float = 100.0 * 4096 / (4096 + MULTIPATH_OVERHEAD)) -> List[int]:
    """Flow sizes that, under fair sharing, make sender i active from ``i x step`` for
    ``senders x step`` (Fig. 4c: 30 ms each, starting at 0, 10, 20 ms): the bottleneck's
    goodput split equally among the flows active in each ``step``."""
    sizes = []
    for i in range(senders):
        bits = 0.0
        for s in range(i, i + senders):
            active = sum(1 for j in range(senders) if j <= s < j + senders)
            bits += goodput_gbps / active * step_us * 1e3
        sizes.append(int(bits / 8))
    return sizes


def incast(transport_table: Optional[Dict[str, Any]] = None, seed: int = 1, senders: Sequence[int] = (4, 5, 6),
           receiver: int = 0, step_us: int = 300, sample_interval: str = "10us") -> Dict[str, Any]:
    """Fig. 4c: ``len(senders)`` senders under the other leaf send to one receiver,
    starting ``step_us`` apart, sized so that each stays ``len(senders) x step_us`` under
    fair sharing; the fair share steps 1, 1/2, 1/3, 1/2, 1 of the link."""
    n = len(senders)
    sizes = incast_sizes(step_us, n)
    flows = [{"src": h, "dst": receiver, "size": sizes[i], "start": f"{i * step_us}us"} for i, h in enumerate(senders)]
    return {"name": "udmp-incast", "seed": seed, "stop": f"{(2 * n + 1) * step_us}us",
            "topology": _leaf_spine(4), "transport": transport_table or {"kind": "udmp"},
            "workload": {"kind": "flows", "flows": flows}, "output": {"sample_interval": sample_interval, "plots": False}}


def stage_gbps(r: Result, step_us: int, senders: int = 3, settle_us: int = 50) -> pd.DataFrame:
    """Each flow's delivered Gb/s in every stage of ``incast`` (stage s spans
    ``[s x step + settle, (s+1) x step]``), with the stage's active flows and their Jain
    index."""
    rows = []
    for s in range(2 * senders - 1):
        a, b = s * step_us + settle_us, (s + 1) * step_us
        rates = [_phase_gbps(r, c, a * 1000, b * 1000) for c in range(senders)]
        active = [c for c in range(senders) if c <= s < c + senders]
        rows.append({"stage": s, "from_us": a, "to_us": b, "active": len(active),
                     **{f"flow{c}": g for c, g in enumerate(rates)},
                     "total": sum(rates), "jain": jain([rates[c] for c in active])})
    return pd.DataFrame(rows)


def bottleneck_queue(r: Result, port: str = "leaf[0].down[0]") -> Tuple[float, int]:
    """Largest queue (bytes) at the incast bottleneck and PFC pauses of the run."""
    q = r.ports[r.ports["port"] == port]
    return float(q["queue_max_bytes"].max()), int(r.summary["pfc_pauses"])


# --- Fig. 6a: permutation on a non-blocking fat-tree ---------------------------------

#: The completion time the permutation figures use: to the sender's last ACK, as the
#: paper's NS3 (built on HPCC's model) counts it.
FCT = "sender_fct_ns"


def permutation(name: str, k: int = 4, hosts_per_edge: int = 8, pods: Optional[int] = None, size: str = "8MB",
                seed: int = 1, mtu: int = 4096, ecn: Optional[Dict[str, Any]] = None, sample_interval: str = "0us",
                faults: Optional[List[Dict[str, Any]]] = None) -> Dict[str, Any]:
    """Fig. 6a: every host sends ``size`` to a distinct random host on a fat-tree with
    100 Gb/s hosts and 400 Gb/s switch links, non-blocking when ``hosts_per_edge`` =
    2k (the paper's fabric: ``k = 8, pods = 5, hosts_per_edge = 16``, 320 hosts).
    ``name`` is a key of ``TRANSPORTS``."""
    topo = {"kind": "fat_tree", "k": k, "hosts_per_edge": hosts_per_edge, "host_link": "100Gbps",
            "fabric_link": "400Gbps", "mtu": mtu}
    if pods:
        topo["pods"] = pods
    tr = transport(name)
    if name == "udmp_lb_only":
        tr["fixed_rate"] = f"{lb_only_rate_gbps(mtu)}Gbps"
    sc = {"name": f"udmp-permutation-{name}", "seed": seed, "topology": topo,
          "fabric": {"ecn": ecn or ECN_STEP}, "transport": tr,
          "workload": {"kind": "permutation", "size": size},
          # The paper's NS3 counts a flow complete at its sender's last ACK (HPCC's
          # convention): the run waits for them (see FCT).
          "output": {"sample_interval": sample_interval, "plots": False, "fct_at": "sender"}}
    if faults:
        sc["faults"] = faults
    return sc


def tail_gbps(r: Result) -> float:
    """The paper's "P99 throughput": the throughput 99 % of flows exceed, Gb/s."""
    return low_percentile_gbps(r.flows, 1.0, FCT)


def permutation_row(name: str, r: Result, **keys: Any) -> Dict[str, Any]:
    """One result row of a permutation run."""
    g = flow_gbps(r.flows, FCT)
    s = r.summary
    return {**keys, "transport": name, "p1_gbps": tail_gbps(r), "mean_gbps": float(np.mean(g)),
            "min_gbps": float(np.min(g)), "unfinished": s["flows"]["unfinished"], "pfc_pauses": s["pfc_pauses"],
            "ecn_marks": s["ecn_marks"], "retransmitted": s["retransmitted_packets"], "timeouts": s["timeouts"]}


# --- Fig. 7: delay anomaly and rate degradation --------------------------------------

#: Faults of Fig. 7 on one aggregation-core cable (both directions): 1 us -> 1 ms of
#: propagation, and 400 -> 160 Gb/s (the paper's 100 -> 40 Gb/s, to 40 %).
ANOMALIES: Dict[str, Optional[Dict[str, Any]]] = {
    "normal": None,
    "delay": {"at": "0us", "kind": "delay", "link": "agg[0].up[0]", "delay": "999us"},
    "rate": {"at": "0us", "kind": "rate", "link": "agg[0].up[0]", "rate": "160Gbps"},
}


def anomaly(name: str, condition: str, seed: int = 1, size: str = "8MB", k: int = 4, hosts_per_edge: int = 8) -> Dict[str, Any]:
    """Fig. 7: the permutation with one of ``ANOMALIES`` from the start."""
    fault = ANOMALIES[condition]
    return permutation(name, k=k, hosts_per_edge=hosts_per_edge, size=size, seed=seed,
                       faults=[fault] if fault else None)


def anomaly_single(name: str, condition: str, at_us: int = 200, size: str = "20MB", spines: int = 4) -> Dict[str, Any]:
    """Fig. 7 on one flow: 2 leaves x ``spines`` spines at 100 Gb/s everywhere, one flow
    from leaf 0 to leaf 1; at ``at_us`` one of its leaf uplinks (cable ``leaf[0].up[1]``)
    gains 1 ms of delay (``delay``) or drops to 40 Gb/s (``rate``, the paper's 100 ->
    40 Gb/s exactly)."""
    sc = {"name": f"udmp-anomaly-{name}-{condition}", "seed": 1, "topology": _leaf_spine(1, spines=spines),
          "transport": transport(name), "workload": {"kind": "flows", "flows": [{"src": 0, "dst": 1, "size": size}]},
          "output": {"sample_interval": "50us", "plots": False, "fct_at": "sender"}}
    if condition == "delay":
        sc["faults"] = [{"at": f"{at_us}us", "kind": "delay", "link": "leaf[0].up[1]", "delay": "999us"}]
    elif condition == "rate":
        sc["faults"] = [{"at": f"{at_us}us", "kind": "rate", "link": "leaf[0].up[1]", "rate": "40Gbps"}]
    return sc


def fct_stats(r: Result) -> Dict[str, float]:
    """Mean and largest FCT (us) of the finished flows, and how many did not finish."""
    f = r.flows[FCT].dropna().to_numpy(dtype=float)
    return {"mean_fct_us": float(f.mean() / 1e3), "max_fct_us": float(f.max() / 1e3),
            "unfinished": int(r.summary["flows"]["unfinished"])}
