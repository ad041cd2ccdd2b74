"""STELLAR (Alibaba, SIGCOMM '25): the multipath experiments of its section 7.2.

The sending RNIC sprays every RDMA connection over N paths (``transport = {kind =
"stellar", paths = N, path_algo = ...}``); switches stay plain ECMP and hash each path's
UDP source port. The figures are reproduced here as trends:

- Fig. 12: ToR uplink imbalance falls as the number of paths grows
  (:func:`fat_tree_permutation`, :func:`imbalance`, with :func:`hash_imbalance` as the
  balls-into-bins reference).
- Fig. 11: random drop on one link costs almost nothing with 128 paths
  (:func:`leaf_spine_permutation`, :func:`solo_uplink`, :func:`worst_slowdown`; and
  :func:`leaf_spine_all_reduce` for the paper's collective).
- Fig. 9: ToR queue depth of the path-selection algorithms at 4 and 128 paths
  (:func:`fat_tree_permutation` with ``algo``, :func:`queue_depth`).
- Fig. 10: an all-reduce job's bus bandwidth beside static or bursty background
  all-reduce jobs (:func:`background_jobs`, :func:`foreground_busbw`).
- Fig. 16: training-step time under random and re-ranked placement, STELLAR against a
  single-path RoCE NIC (:func:`training_job`, :func:`step_time`).
- Fig. 6: container start-up against memory, pin-all against PVDMA (:func:`startup`,
  :func:`startup_seconds`).

The fabric is fabricsim's default (PFC and ECN on), as in the paper's RoCE network; only
the transport changes. The paper's HPN fabric (60 aggregation switches, 2 x 200G NIC
ports, 960-GPU all-reduce) is scaled down by the arguments.
"""

from __future__ import annotations

import random
from typing import Any, Dict, List, Optional

import numpy as np
import pandas as pd

#: The path-selection algorithms of Fig. 9, as ``path_algo`` values.
ALGOS = ("obs", "rr", "dwrr", "best_rtt", "mprdma")

#: The path counts of Fig. 12, plus the single path.
PATHS = (1, 4, 8, 16, 32, 64, 128, 256)


def transport(paths: int, algo: Optional[str] = None) -> Dict[str, Any]:
    """A STELLAR transport over ``paths`` paths. One path means ``path_algo =
    "single"``; otherwise ``algo`` defaults to oblivious spraying (OBS, the paper's
    production choice)."""
    if paths == 1:
        return {"kind": "stellar", "paths": 1, "path_algo": "single"}
    return {"kind": "stellar", "paths": paths, "path_algo": algo or "obs"}


# --- Fig. 12 (and Fig. 9's setting): a fat-tree permutation -------------------------

def fat_tree_permutation(paths: int, k: int = 8, size: str = "2MB", seed: int = 1, algo: Optional[str] = None,
                         sample_interval: str = "20us") -> Dict[str, Any]:
    """Every host of a k-ary fat-tree sends ``size`` to a distinct random host over
    ``paths`` paths. Edge switches are the ToRs; each has k/2 uplinks."""
    return {"name": f"stellar-permutation-{paths}", "seed": seed, "topology": {"kind": "fat_tree", "k": k},
            "transport": transport(paths, algo), "workload": {"kind": "permutation", "size": size},
            "output": {"sample_interval": sample_interval}}


def _up_ports(r, tier: str) -> pd.DataFrame:
    ports = r.ports
    return ports[ports["port"].str.startswith(f"{tier}[") & ports["port"].str.contains(r"\.up\[", regex=True)]


def uplink_bytes(r, uplinks: int, tier: str = "edge") -> pd.DataFrame:
    """Bytes each up port of each ``tier`` switch sent over the run: one row per switch
    index, one column per up port. A port that never sent is 0 (the port table has rows
    only for ports active in an interval). Needs port sampling on."""
    p = _up_ports(r, tier)
    idx = p["port"].astype(str).str.extract(rf"^{tier}\[(\d+)\]\.up\[(\d+)\]$").astype(int)
    tot = p.assign(switch=idx[0].to_numpy(), up=idx[1].to_numpy()).groupby(["switch", "up"])["tx_bytes"].sum()
    return tot.unstack("up").reindex(columns=range(uplinks)).fillna(0)


def imbalance(r, uplinks: int, tier: str = "edge") -> float:
    """Fig. 12's metric: for every ToR (``tier`` switch) whose uplinks carried traffic,
    (max - min) / sum of the bytes its ``uplinks`` up ports sent, averaged over the ToRs.
    0 is perfect balance; 1 means one uplink carried everything."""
    b = uplink_bytes(r, uplinks, tier).to_numpy(dtype=float)
    b = b[b.sum(axis=1) > 0]
    return float(np.mean((b.max(axis=1) - b.min(axis=1)) / b.sum(axis=1)))


def hash_imbalance(flows: pd.DataFrame, hosts_per_tor: int, uplinks: int, paths: int, draws: int = 200,
                   seed: int = 0) -> float:
    """The imbalance pure hashing would give for the same flows: every flow leaving its
    ToR splits its bytes equally over ``paths`` entropy values, each hashed uniformly
    at random onto one of the ToR's ``uplinks`` (ACKs ignored), averaged over
    ``draws`` hash draws. Spraying cannot beat this with random ECMP hashing."""
    rng = np.random.default_rng(seed)
    src = flows["src"].to_numpy() // hosts_per_tor
    dst = flows["dst"].to_numpy() // hosts_per_tor
    size = flows["size_bytes"].to_numpy(dtype=float)
    out = []
    for _ in range(draws):
        per_tor: Dict[int, np.ndarray] = {}
        for s, d, b in zip(src, dst, size):
            if s == d:
                continue
            load = per_tor.setdefault(int(s), np.zeros(uplinks))
            np.add.at(load, rng.integers(0, uplinks, paths), b / paths)
        out += [(v.max() - v.min()) / v.sum() for v in per_tor.values()]
    return float(np.mean(out))


# --- Fig. 11: random drop on one link ------------------------------------------------

def leaf_spine(leaves: int = 4, spines: int = 16, hosts_per_leaf: int = 4) -> Dict[str, Any]:
    """The leaf-spine of the drop experiments: many spines, so that 128 paths spread a
    flow thinly and one lossy cable carries a small share of it."""
    return {"kind": "leaf_spine", "leaves": leaves, "spines": spines, "hosts_per_leaf": hosts_per_leaf}


def _lossy(sc: Dict[str, Any], loss: float, link: Optional[str]) -> Dict[str, Any]:
    if loss > 0:
        if link is None:
            raise ValueError("a lossy run needs the link")
        sc["faults"] = [{"at": "0us", "kind": "link_loss", "link": link, "loss": loss}]
    return sc


def leaf_spine_permutation(paths: int, loss: float = 0.0, link: Optional[str] = None, size: str = "32MB", seed: int = 1,
                           algo: Optional[str] = None, sample_interval: str = "0us", **topo) -> Dict[str, Any]:
    """A permutation of ``size`` flows on a leaf-spine (:func:`leaf_spine`), with random
    loss ``loss`` on the cable ``link`` (both directions) from the start."""
    sc = {"name": f"stellar-drop-{paths}-{loss}", "seed": seed, "topology": leaf_spine(**topo),
          "transport": transport(paths, algo), "workload": {"kind": "permutation", "size": size},
          "output": {"sample_interval": sample_interval}}
    return _lossy(sc, loss, link)


def leaf_spine_all_reduce(paths: int, loss: float = 0.0, link: Optional[str] = None, size: str = "128MB", seed: int = 1,
                          algo: Optional[str] = None, sample_interval: str = "0us", **topo) -> Dict[str, Any]:
    """The paper's Fig. 11 workload, scaled down: one ring all-reduce of ``size`` per
    host over every host of the leaf-spine in a shuffled ring order (so neighbours sit
    on different leaves), with loss ``loss`` on ``link``. Each of the 2(n-1) steps moves
    size/n, and a step waits for its slowest transfer."""
    t = leaf_spine(**topo)
    order = list(range(t["leaves"] * t["hosts_per_leaf"]))
    random.Random(3).shuffle(order)
    sc = {"name": f"stellar-drop-all-reduce-{paths}-{loss}", "seed": seed, "topology": t,
          "transport": transport(paths, algo), "workload": {"kind": "all_reduce", "hosts": order, "size": size},
          "output": {"sample_interval": sample_interval}}
    return _lossy(sc, loss, link)


def busiest_uplink(r, tier: str = "leaf") -> str:
    """The up port of a ``tier`` switch that sent the most bytes. On a single-path run
    this is usually a cable two flows collided on. Needs port sampling on."""
    return str(_up_ports(r, tier).groupby("port", observed=True)["tx_bytes"].sum().idxmax())


def solo_uplink(r, flow_bytes: float, tier: str = "leaf") -> str:
    """The busiest up port of a ``tier`` switch that carried at most one flow's worth of
    data (under 1.5 x ``flow_bytes``, ACKs included). On a single-path run, the cable of
    a flow that had its path to itself and ran at line rate, so a loss there is not
    hidden behind an ECMP collision that already halves the flow's rate. Needs port
    sampling on."""
    tot = _up_ports(r, tier).groupby("port", observed=True)["tx_bytes"].sum()
    return str(tot[tot < 1.5 * flow_bytes].idxmax())


def worst_slowdown(base, hurt) -> float:
    """The largest per-flow FCT ratio of a run with a fault over the same scenario
    without it (same seed, so the same flows)."""
    b = base.flows.set_index("flow_id")["fct_ns"].astype(float)
    h = hurt.flows.set_index("flow_id")["fct_ns"].astype(float)
    return float((h / b).max())


# --- Fig. 9: queue depth of the path-selection algorithms -----------------------------

def queue_depth(r, tier: str = "edge", direction: str = "up") -> Dict[str, float]:
    """Fig. 9's metric: queue depth of the ``direction`` ports (``up``, ``down``) of the
    ToRs (``tier`` switches), in bytes: the time-average of the sampled queue lengths
    over those ports and the run (an inactive port-interval counts as empty), and the
    largest queue any of them held in any interval. Needs port sampling on."""
    p = r.ports[r.ports["port"].str.startswith(f"{tier}[") & r.ports["port"].str.contains(rf"\.{direction}\[", regex=True)]
    cells = r.ports["time_ns"].nunique() * p["port"].nunique()
    return {"queue_mean_bytes": float(p["queue_bytes"].sum() / max(cells, 1)),
            "queue_max_bytes": float(p["queue_max_bytes"].max())}


def summary_row(r) -> Dict[str, Any]:
    """FCT, loss and path-use figures of a run, for tables (times in microseconds)."""
    f = r.flows["fct_ns"].astype(float)
    used = r.paths.groupby("connection").size() if len(r.paths) else pd.Series([0])
    return {"fct_max_us": f.max() / 1e3, "fct_mean_us": f.mean() / 1e3,
            "retransmits": r.summary["retransmitted_packets"], "timeouts": r.summary["timeouts"],
            "unfinished": r.summary["flows"]["unfinished"], "paths_used": float(used.mean())}


def rows(records: List[Dict[str, Any]]) -> pd.DataFrame:
    """Records as a table (for experiments)."""
    return pd.DataFrame.from_records(records)


# --- Fig. 10: an all-reduce beside static and bursty background jobs -----------------

def background_jobs(paths: int, algo: str = "obs", background: str = "static", seed: int = 1, size: str = "2MB",
                    iterations: int = 10, ranks: int = 8, leaves: int = 6, spines: int = 4, hosts_per_leaf: int = 4,
                    period: str = "1ms", stop: str = "8ms") -> Dict[str, Any]:
    """Fig. 10, scaled down: three all-reduce jobs of ``ranks`` ranks on a leaf-spine
    (1:1 at the default shape), each on every third host (so every job's ring crosses
    leaves and the jobs meet on the spine links), placed at random within its hosts.
    Job 0, the foreground, runs ``iterations`` all-reduces of ``size``; the two
    background jobs run all-reduces back to back (``background = "static"``), in bursts
    filling half of every ``period`` (``"bursty"``, the paper's 5 s on / 5 s off scaled
    down), or not at all (``"none"``). Every job sprays over ``paths`` paths with
    ``algo``. The run stops at ``stop``."""
    hosts = leaves * hosts_per_leaf

    def job(k: int, **extra) -> Dict[str, Any]:
        return {"name": ("foreground", "background1", "background2")[k], "ranks": ranks,
                "hosts": [h for h in range(hosts) if h % 3 == k], "placement": "random",
                "collectives": [{"kind": "all_reduce", "size": size}], **extra}

    jobs = [job(0, iterations=iterations)]
    if background == "static":
        jobs += [job(1, iterations=1000), job(2, iterations=1000)]
    elif background == "bursty":
        jobs += [job(k, on_off={"period": period, "duty": 0.5}) for k in (1, 2)]
    elif background != "none":
        raise ValueError(f"background: {background!r} (allowed: none, static, bursty)")
    return {"name": f"stellar-fig10-{background}-{algo}-{paths}", "seed": seed, "stop": stop,
            "topology": {"kind": "leaf_spine", "leaves": leaves, "spines": spines, "hosts_per_leaf": hosts_per_leaf},
            "transport": transport(paths, algo), "jobs": jobs, "output": {"sample_interval": "0us"}}


def foreground_busbw(r) -> float:
    """Fig. 10's metric: the foreground job's (job 0) mean bus bandwidth over its
    finished all-reduces, Gb/s."""
    c = r.collectives
    return float(c.loc[c["job"] == 0, "busbw_gbps"].dropna().mean())


# --- Fig. 16: placement and transport in a training job ------------------------------

def training_job(transport_kind: str, placement: str, seed: int = 1, iterations: int = 4, compute: str = "300us",
                 dp_size: str = "8MB", leaves: int = 4, spines: int = 2, hosts_per_leaf: int = 4) -> Dict[str, Any]:
    """Fig. 16, scaled down: one training job on every host of a 2:1 oversubscribed
    leaf-spine (the paper's two network segments become leaves), 2 ranks per host
    (STELLAR's servers: 8 GPUs on 4 NICs) with tensor parallelism 2 inside the host and
    data parallelism across hosts: a blocking tensor all-reduce in the forward pass and
    two gradient buckets overlapping the backward. ``placement``: ``"rerank"``
    (topology order: the data-parallel ring crosses each leaf boundary once) or
    ``"random"`` (the same hosts in random order: most ring hops cross the spines).
    ``transport_kind``: ``"stellar"`` (128-path spraying) or ``"roce"`` (one path per
    QP, ECMP: the paper's CX7 baseline)."""
    ranks = 2 * leaves * hosts_per_leaf
    job = {"name": "llm", "ranks": ranks, "ranks_per_host": 2, "tp": 2, "placement": placement,
           "iterations": iterations, "compute": compute,
           "collectives": [{"group": "tp", "kind": "all_reduce", "size": "16MB", "at": [0.3], "blocking": True},
                           {"group": "dp", "kind": "all_reduce", "size": dp_size, "at": [0.6, 1.0]}]}
    tr = {"kind": "roce"} if transport_kind == "roce" else transport(128)
    return {"name": f"stellar-fig16-{transport_kind}-{placement}", "seed": seed,
            "topology": {"kind": "leaf_spine", "leaves": leaves, "spines": spines, "hosts_per_leaf": hosts_per_leaf},
            "transport": tr, "jobs": [job], "output": {"sample_interval": "0us"}}


def step_time(r) -> float:
    """Mean step time after the first iteration, microseconds."""
    return float(r.jobs["step_ns"].iloc[1:].astype(float).mean() / 1e3)


# --- Fig. 6: container start-up --------------------------------------------------------

def startup(memory: str, pinning: str, ranks: int = 4) -> Dict[str, Any]:
    """Fig. 6: a small job whose containers of ``memory`` start with ``pinning``
    (``"pin_all"`` or ``"pvdma"``) before one all-reduce."""
    return {"name": f"stellar-fig6-{pinning}-{memory}",
            "topology": {"kind": "leaf_spine", "leaves": 1, "spines": 1, "hosts_per_leaf": ranks},
            "jobs": [{"name": "pod", "ranks": ranks, "startup": {"pinning": pinning, "memory": memory},
                      "collectives": [{"kind": "all_reduce", "size": "64MB"}]}],
            "output": {"sample_interval": "0us"}}


def startup_seconds(r) -> float:
    """The job's start-up (its first iteration's start), seconds."""
    return r.summary["jobs"][0]["startup_ns"] / 1e9


def gdr_write(gdr: str, size: str, ops: int = 3, connections: int = 16) -> Dict[str, Any]:
    """Fig. 8: one client GDR-WRITEs to a server's GPU memory over ``connections``
    connections at 200 Gb/s, 4 KB pages, messages of ``size`` each reusing its
    connection's buffer, with the server's GPU memory translated by the ATC (``gdr =
    "atc"``) or by eMTT. The client's memory is translated by its MTT (see the README:
    the model's transmit side prepares one packet per port at a time)."""
    return {"name": f"stellar-fig8-{gdr}-{size}", "seed": 1,
            "topology": {"kind": "leaf_spine", "leaves": 1, "spines": 1, "hosts_per_leaf": 2, "host_link": "200Gbps"},
            "transport": {"kind": "roce", "cc": "none"},
            "nic": {"model": "rnic", "gdr_translation": gdr, "groups": [{"hosts": [1], "memory": "gpu"}]},
            "workload": {"kind": "message_rate", "clients": [0], "server": 1, "connections": connections,
                         "size": size, "ops": ops},
            "output": {"plots": False, "sample_interval": "0us"}}


def gdr_gbps(r) -> float:
    """Fig. 8's throughput: bytes delivered over the loop's span, Gb/s."""
    return r.summary["bytes_delivered"] * 8 / r.summary["loops"][0]["span_ns"]
