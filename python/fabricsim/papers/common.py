"""Helpers shared by the paper modules."""

from __future__ import annotations

from typing import Any, Dict, Iterable, List

import numpy as np
import pandas as pd

from ..results import Result


def flow_gbps(flows: pd.DataFrame, fct: str = "fct_ns") -> np.ndarray:
    """Average throughput of every finished flow, Gb/s, over its completion time
    ``fct`` (``"sender_fct_ns"``: to its last acknowledgement, HPCC's convention)."""
    done = flows.dropna(subset=[fct])
    return done["size_bytes"].to_numpy(dtype=float) * 8 / done[fct].to_numpy(dtype=float)


def low_percentile_gbps(flows: pd.DataFrame, p: float = 1.0, fct: str = "fct_ns") -> float:
    """The ``p``-th percentile of per-flow throughput: the tail the UDMP paper calls
    "P99 throughput" (the throughput 99 % of flows exceed)."""
    return float(np.percentile(flow_gbps(flows, fct), p))


def jain(x: Iterable[float]) -> float:
    """Jain's fairness index."""
    a = np.asarray(list(x), dtype=float)
    return float(a.sum() ** 2 / (len(a) * (a * a).sum()))


def binned_gbps(r: Result, connection: int, width_ns: int) -> pd.Series:
    """A connection's delivered throughput in time bins of ``width_ns``."""
    t = r.throughput[r.throughput["connection"] == connection]
    bins = (t["time_ns"] // width_ns) * width_ns
    return (t.groupby(bins)["bytes"].sum() * 8 / width_ns).rename("gbps")


def quiet(sc: Dict[str, Any]) -> Dict[str, Any]:
    """The scenario with plots off (experiments draw their own)."""
    out = dict(sc)
    out["output"] = dict(out.get("output", {}), plots=False)
    return out


def seconds(ns: float) -> float:
    return ns * 1e-9


def rows(*dicts: Dict[str, Any]) -> List[Dict[str, Any]]:
    return list(dicts)
