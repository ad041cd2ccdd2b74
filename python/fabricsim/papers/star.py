"""StaR (APNet '20, seed 001): scenario builders for its evaluation (section 4) and
the figures read from runs. ``crates/run/tests/star.rs`` checks the trends at small
scale; ``experiments/star/run.py`` runs the curves.

The paper's setting: one server and its clients on one 100 Gb/s switch, a 12 us base
round trip, queues deep enough for no PFC, ECN or loss, a PCIe latency of 1 us, and a
stateful NIC with on-chip contexts for 300 connections: here a one-leaf leaf-spine
with 3 us links, 1 GB switch buffers, PFC and ECN off, and ``[nic] model = "rnic"``
(whose defaults are those: ``qp_cache = 300``, ``qp_fetch = "1us"``, ``fetches = 1``).
"""

from __future__ import annotations

from typing import Any, Dict

#: Client counts of Fig. 5's x axis (a leaf holds at most 1024 hosts).
CLIENTS = (10, 50, 100, 200, 300, 400, 600, 800, 1000)

#: The transports compared: StaR with its server stateless, the stateful RNIC (RoCE),
#: and StaR's auto mode (stateful while contexts last).
TRANSPORTS: Dict[str, Dict[str, Any]] = {
    "star": {"kind": "star"},
    "rdma": {"kind": "roce"},
    "auto": {"kind": "star", "mode": "auto"},
}


def setting(clients: int) -> Dict[str, Any]:
    """The paper's fabric and NICs for ``clients`` clients and one server (host 0)."""
    return {
        "topology": {"kind": "leaf_spine", "leaves": 1, "spines": 1, "hosts_per_leaf": clients + 1,
                     "link_delay": "3us", "switch_buffer": "1GB"},
        "fabric": {"pfc": False, "ecn": False},
        "nic": {"model": "rnic"},
        "output": {"plots": False, "sample_interval": "0us"},
    }


def message_rate(transport: str, clients: int, ops: int = 20, seed: int = 1) -> Dict[str, Any]:
    """Fig. 5a: every client WRITEs 8 bytes to the server, one at a time, the next as
    soon as the last is acknowledged."""
    return {"name": f"star-fig5a-{transport}-{clients}", "seed": seed, **setting(clients),
            "transport": TRANSPORTS[transport],
            "workload": {"kind": "message_rate", "clients": clients, "server": 0, "size": "8B", "ops": ops}}


def rpc(transport: str, clients: int, ops: int = 10, seed: int = 1) -> Dict[str, Any]:
    """Fig. 5b: every client calls the server (2.8 KB request, 1.4 KB reply, zero
    compute), the next call as soon as the reply is in."""
    return {"name": f"star-fig5b-{transport}-{clients}", "seed": seed, **setting(clients),
            "transport": TRANSPORTS[transport],
            "workload": {"kind": "rpc", "clients": clients, "server": 0, "request": "2800B", "reply": "1400B",
                         "ops": ops}}


def loop_row(r) -> Dict[str, Any]:
    """The run's closed loop: operations per second (millions), completed, latencies (us)."""
    lp = r.summary["loops"][0]
    lat = lp["latency_ns"] or {}
    return {"mops": lp["ops_per_s"] / 1e6, "completed": lp["completed"], "operations": lp["ops"],
            "latency_p50_us": (lat.get("p50") or 0) / 1e3, "latency_p99_us": (lat.get("p99") or 0) / 1e3,
            "qp_misses": (r.summary["nic"] or {}).get("qp_misses", 0)}
