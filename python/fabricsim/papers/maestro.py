"""Maestro (Tian et al., SOSR '21): its evaluation (section 6) as scenarios.

The paper's testbed (Fig. 7) is a two-tier leaf-spine: two leaves, four spines (four
core paths), 40 Gb/s links, with synthetic bottlenecks made by slowing the core links
(10 Gb/s for Fig. 8, 25 Gb/s for Figs. 9-11). ``testbed`` builds it; the figures:

- Fig. 8, end-to-end bandwidth against paths (``bandwidth``): one 4 MB WRITE stream
  from a host on leaf 0 to one on leaf 1, Maestro with 1-8 paths against single-QP RoCE
  and K RoCE QPs on random ports (QP-Scaling, the "multi-thread ECMP" baseline).
- Figs. 9-11, a ring all-reduce over four hosts alternating between the leaves, 1.6 MB
  per ring step (``ring_all_reduce``), for the chunk-size sweep and the transport time
  against RoCE.
- Fig. 12c, 10/20/30 Gb/s of constant-rate background pinned to three of the four
  spines (``background``).
- ``comparison``: Maestro beside the other multipath transports on one permutation and
  one all-reduce (the issue's table).

The Rust tests in ``crates/run/tests/maestro.rs`` check the same trends small;
``experiments/maestro/`` runs them larger.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

import numpy as np
import pandas as pd

from ..results import Result

#: Transports of the comparison table, by the names used in results.
TRANSPORTS: Dict[str, Dict[str, Any]] = {
    "roce": {"kind": "roce"},
    "maestro": {"kind": "maestro"},
    "maestro_rr": {"kind": "maestro", "balancer": "round_robin"},
    "qp_scaling": {"kind": "qp_scaling", "qps": 4},
    "mprdma": {"kind": "mprdma"},
    "stellar": {"kind": "stellar"},
    "mrc": {"kind": "mrc"},
}


def testbed(seed: int = 1, hosts_per_leaf: int = 1, access: str = "40Gbps", core: str = "10Gbps",
            spines: int = 4, leaves: int = 2) -> Dict[str, Any]:
    """The paper's Fig. 7 fabric without transport or workload."""
    return {
        "seed": seed,
        "topology": {"kind": "leaf_spine", "leaves": leaves, "spines": spines, "hosts_per_leaf": hosts_per_leaf,
                     "host_link": access, "fabric_link": core},
        "output": {"plots": False, "sample_interval": "0us", "fct_at": "sender"},
    }


def bandwidth(transport: Dict[str, Any], seed: int = 1, size: str = "4MB") -> Dict[str, Any]:
    """Fig. 8: one flow across the 10 Gb/s core from a 40 Gb/s host."""
    sc = testbed(seed)
    sc["transport"] = dict(transport)
    sc["workload"] = [{"kind": "flows", "flows": [{"src": 0, "dst": 1, "size": size}]}]
    return sc


def ring_all_reduce(transport: Dict[str, Any], seed: int = 1, core: str = "25Gbps",
                    step: int = 1_600_000) -> Dict[str, Any]:
    """Figs. 9-11: a ring all-reduce of four ranks alternating between the leaves (every
    ring hop crosses the core), ``step`` bytes per ring step."""
    sc = testbed(seed, hosts_per_leaf=2, core=core)
    sc["transport"] = dict(transport)
    sc["workload"] = [{"kind": "all_reduce", "size": f"{4 * step}B", "hosts": [0, 2, 1, 3], "channels": 1}]
    return sc


def background(balancer: str, seed: int = 1, size: str = "20MB") -> Dict[str, Any]:
    """Fig. 12c: a Maestro flow from a 100 Gb/s host over four 40 Gb/s spines, three of
    which carry 10, 20 and 30 Gb/s of constant-rate RoCE background."""
    sc = testbed(seed, hosts_per_leaf=4, access="100Gbps", core="40Gbps")
    sc["transport"] = {"kind": "maestro", "balancer": balancer}
    sc["workload"] = [{"kind": "flows", "flows": [{"src": 0, "dst": 4, "size": size, "start": "100us"}]}] + [
        {"kind": "constant_rate", "src": i, "dst": i + 4, "rate": f"{10 * i}Gbps", "duration": "4ms",
         "via": f"spine[{i}]", "transport": {"kind": "roce", "cc": "none"}}
        for i in (1, 2, 3)
    ]
    return sc


def path_detection(reselect: bool, seed: int = 1, size: str = "20MB") -> Dict[str, Any]:
    """Fig. 12d: spines 2 and 3 cut from leaf 0 at the start (ECMP reroutes within 50
    us, before the flow starts), spine 2 back at 1 ms, spine 3 at 2 ms; one 20 MB
    Maestro flow from a 40 Gb/s host over 10 Gb/s core links, with path re-selection
    (every 1 ms, the default) or without (``reselect_interval = "none"``)."""
    sc = testbed(seed)
    sc["fabric"] = {"reroute_after": "50us"}
    sc["transport"] = {"kind": "maestro"} if reselect else {"kind": "maestro", "reselect_interval": "none"}
    sc["workload"] = [{"kind": "flows", "flows": [{"src": 0, "dst": 1, "size": size, "start": "100us"}]}]
    sc["faults"] = [{"at": "0us", "kind": "link_down", "link": "leaf[0].up[2]"},
                    {"at": "0us", "kind": "link_down", "link": "leaf[0].up[3]"},
                    {"at": "1ms", "kind": "link_up", "link": "leaf[0].up[2]"},
                    {"at": "2ms", "kind": "link_up", "link": "leaf[0].up[3]"}]
    return sc


def comparison(transport: str, workload: str, seed: int = 1) -> Dict[str, Any]:
    """Maestro beside the other transports: a 16-host leaf-spine (4 leaves, 4 spines,
    100 Gb/s hosts, 2:1 oversubscribed core of 50 Gb/s links, lossless), a random
    permutation of 8 MB flows or a 16-rank ring all-reduce of 32 MB."""
    sc = testbed(seed, hosts_per_leaf=4, access="100Gbps", core="50Gbps", leaves=4)
    sc["transport"] = dict(TRANSPORTS[transport])
    if workload == "permutation":
        sc["workload"] = [{"kind": "permutation", "size": "8MB"}]
    else:
        sc["workload"] = [{"kind": "all_reduce", "size": "32MB", "channels": 1}]
    return sc


def goodput_gbps(r: Result) -> float:
    """The only flow's goodput, Gb/s (to its last byte placed)."""
    f = r.flows
    return float(f["size_bytes"].iloc[0] * 8 / f["fct_ns"].iloc[0])


def spine_loads(r: Result, connection: int = 0) -> pd.DataFrame:
    """Maestro's per-QP rows of ``connection`` (paths.parquet)."""
    p = r.paths
    return p[p["connection"] == connection].reset_index(drop=True)


def comparison_row(r: Result, workload: str) -> Dict[str, Any]:
    """The comparison table's figures: the permutation's mean and 1st-percentile flow
    throughput and its makespan, or the all-reduce's duration and bus bandwidth."""
    if workload == "permutation":
        gbps = r.flows["size_bytes"].to_numpy(float) * 8 / r.flows["fct_ns"].to_numpy(float)
        return {"mean_gbps": float(gbps.mean()), "p1_gbps": float(np.percentile(gbps, 1)),
                "makespan_us": float(r.flows["finish_ns"].max() / 1e3)}
    c = r.collectives
    return {"duration_us": float(c["duration_ns"].iloc[0] / 1e3), "algbw_gbps": float(c["algbw_gbps"].iloc[0])}


def rows_of(points: List[Dict[str, Any]], results: List[Result], fn) -> pd.DataFrame:
    """A table of ``fn(result)`` beside each point's parameters."""
    out: List[Dict[str, Any]] = []
    for p, r in zip(points, results):
        row: Dict[str, Optional[Any]] = {k: v for k, v in p.items() if not isinstance(v, dict)}
        row.update(fn(r))
        out.append(row)
    return pd.DataFrame(out)


#: Fig. 8's senders, by the names used in results: Maestro with hash or random source
#: ports, QP-Scaling (K QPs, an even split), single-QP RoCE.
FIG8: Dict[str, Dict[str, Any]] = {
    "maestro": {"kind": "maestro"},
    "maestro_random": {"kind": "maestro", "path_selection": "random"},
    "qp_scaling": {"kind": "qp_scaling"},
    "roce": {"kind": "roce"},
}


def fig8(sender: str, paths: int, seed: int = 1) -> Dict[str, Any]:
    """Fig. 8's point: ``sender`` (a key of ``FIG8``) with ``paths`` QPs."""
    t = dict(FIG8[sender])
    if t["kind"] == "maestro":
        t["paths"] = paths
    elif t["kind"] == "qp_scaling":
        t["qps"] = paths
    return bandwidth(t, seed)


def fig9(chunk: int, seed: int = 1) -> Dict[str, Any]:
    """Fig. 9's point: the ring all-reduce with ``chunk``-byte chunks."""
    return ring_all_reduce({"kind": "maestro", "chunk": f"{chunk}B"}, seed)


def fig10(transport: str, seed: int = 1) -> Dict[str, Any]:
    """Fig. 10/11's point: the ring all-reduce over ``transport`` (a key of
    ``TRANSPORTS``)."""
    return ring_all_reduce(TRANSPORTS[transport], seed)
