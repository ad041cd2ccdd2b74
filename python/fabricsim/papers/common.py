"""Helpers shared by the paper modules."""

from __future__ import annotations

import os
from typing import Any, Callable, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

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


def sweep_runs(build: Callable[..., Dict[str, Any]], points: Sequence[Mapping[str, Any]],
               out: Union[str, "os.PathLike[str]"], jobs: Optional[int] = None) -> Iterator[Tuple[Dict[str, Any], Result]]:
    """Runs ``build(**p)`` for every parameter table ``p`` of ``points`` as one sweep in
    ``out`` (on ``jobs`` worker processes, default one per core; points already in
    ``out`` are not run again), then yields each point's parameters and Result in the
    order given, read back one at a time. An experiment needs every point: a failed one
    is an error naming it."""
    from ..sweeps import sweep

    sw = sweep(build, list(points), out=out, jobs=jobs)
    table = sw.table
    bad = [f"point {p.index} ({p.params}): {err}" for p, status, err in zip(sw.points, table["status"], table["error"])
           if status != "ok"]
    if bad:
        raise RuntimeError(f"{len(bad)} of {len(sw.points)} points failed in {out}: " + "; ".join(bad[:3]))
    return ((p.params, sw.result(p)) for p in sw.points)


def experiment_main(argv: Sequence[str], experiments: Mapping[str, Callable[[], pd.DataFrame]], out: "os.PathLike[str]",
                    description: str, set_jobs: Callable[[Optional[int]], None], float_format: str = "%.6g") -> int:
    """The command line of an ``experiments/<paper>/run.py``: the experiments named in
    ``argv`` (default all of ``experiments``), ``--jobs N`` handed to ``set_jobs``,
    each one's table written to ``out/<name>.csv``. Returns the exit status (2 for an
    unknown name)."""
    import argparse
    import sys
    import time
    from pathlib import Path

    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("names", nargs="*", metavar="EXPERIMENT", help=f"default all: {', '.join(experiments)}")
    ap.add_argument("--jobs", type=int, help="worker processes (default: one per core)")
    a = ap.parse_args(list(argv))
    names = a.names or list(experiments)
    unknown = [n for n in names if n not in experiments]
    if unknown:
        print(f"unknown experiment(s) {unknown}; choose from {list(experiments)}", file=sys.stderr)
        return 2
    set_jobs(a.jobs)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    for name in names:
        t0 = time.time()
        print(f"{name} ...", flush=True)
        df = experiments[name]()
        df.to_csv(out / f"{name}.csv", index=False, float_format=float_format)
        print(f"{name}: {len(df)} rows in {time.time() - t0:.0f} s -> {out / (name + '.csv')}", flush=True)
    return 0
