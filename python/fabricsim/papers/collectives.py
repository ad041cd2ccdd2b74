"""The collectives' known crossover (NCCL's tuning tables, the MPI literature): latency-
bound algorithms (the double binary tree, halving-doubling: 2 log2 N hops) ahead at
small sizes, the ring (2(N-1) hops, but the fewest bytes per rank) ahead at large ones.

:func:`all_reduce` builds one all-reduce on a leaf-spine; :func:`busbw` reads its bus
bandwidth. ``experiments/collectives/run.py`` sweeps 16 to 128 hosts.
"""

from __future__ import annotations

from typing import Any, Dict

ALGORITHMS = ("ring", "tree", "halving_doubling")


def all_reduce(hosts: int, size: str, algorithm: str, hosts_per_leaf: int = 8, transport: str = "roce",
               seed: int = 1) -> Dict[str, Any]:
    """An all-reduce of ``size`` over ``hosts`` hosts (rank order = host order, 8 per
    leaf, as many spines as hosts per leaf: a non-blocking fabric) with ``algorithm``,
    100 Gb/s links, ``transport`` at its defaults."""
    leaves = max(1, hosts // hosts_per_leaf)
    return {"name": f"all-reduce-{algorithm}-{hosts}-{size}", "seed": seed,
            "topology": {"kind": "leaf_spine", "leaves": leaves, "spines": hosts_per_leaf,
                         "hosts_per_leaf": hosts_per_leaf},
            "transport": {"kind": transport},
            "workload": {"kind": "all_reduce", "size": size, "algorithm": algorithm, "hosts": hosts},
            "output": {"sample_interval": "0us"}}


def busbw(r) -> float:
    """The all-reduce's bus bandwidth, Gb/s (nccl-tests' convention)."""
    return float(r.collectives.iloc[0]["busbw_gbps"])


def duration_us(r) -> float:
    """The all-reduce's time, microseconds."""
    return float(r.collectives.iloc[0]["duration_ns"]) / 1e3
