"""Runs the larger versions of Maestro's experiments (paper section 6) and writes one
CSV per figure into ``results/`` beside this script.

    python experiments/maestro/run.py                  # everything, about a minute on 2 cores
    python experiments/maestro/run.py fig8 comparison  # some of: fig8 fig9 fig10 fig12c fig12d comparison
    python experiments/maestro/run.py --jobs 1         # on one core (default: every core)

The scenarios come from ``fabricsim.papers.maestro``; ``crates/run/tests/maestro.rs``
and ``tests/test_trends_maestro.py`` run the same ones small. Each experiment's runs
are sweeps (resumable; point folders in ``results/sweeps/``, not committed).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional

import numpy as np
import pandas as pd

from fabricsim.papers import maestro
from fabricsim.papers.common import sweep_runs

OUT = Path(__file__).resolve().parent / "results"
JOBS: Optional[int] = None


def runs(name, build, points):
    return sweep_runs(build, points, OUT / "sweeps" / name, jobs=JOBS)


def fig8() -> pd.DataFrame:
    """Goodput of one 4 MB flow against paths (1-8), 10 Gb/s core, 40 Gb/s access, seeds 1-5."""
    points = [{"sender": s, "paths": k, "seed": seed} for s in maestro.FIG8 for k in range(1, 9)
              if not (s == "roce" and k > 1) for seed in range(1, 6)]
    return pd.DataFrame([{**p, "gbps": maestro.goodput_gbps(r)} for p, r in runs("fig8", maestro.fig8, points)])


def fig9() -> pd.DataFrame:
    """Ring step completion times against the chunk size, seeds 1-5."""
    points = [{"chunk": c, "seed": seed} for c in (12_500, 25_000, 50_000, 100_000, 200_000, 400_000)
              for seed in range(1, 6)]
    out = []
    for p, r in runs("fig9", maestro.fig9, points):
        fct = r.flows["fct_ns"].to_numpy(float) / 1e3
        out.append({**p, "median_us": np.median(fct), "p99_us": np.percentile(fct, 99), "max_us": fct.max(),
                    "all_reduce_us": r.collectives["duration_ns"].iloc[0] / 1e3})
    return pd.DataFrame(out)


def fig10() -> pd.DataFrame:
    """Ring all-reduce transport time, Maestro against RoCE and QP-Scaling, seeds 1-10."""
    points = [{"transport": t, "seed": seed} for t in ("maestro", "roce", "qp_scaling") for seed in range(1, 11)]
    return pd.DataFrame([{**p, "all_reduce_us": r.collectives["duration_ns"].iloc[0] / 1e3}
                         for p, r in runs("fig10", maestro.fig10, points)])


def fig12c() -> pd.DataFrame:
    """Bytes per path under 10/20/30 Gb/s background, per balancer, seeds 1-3."""
    points = [{"balancer": b, "seed": seed} for b in ("proportional", "round_robin", "lowest_latency")
              for seed in range(1, 4)]
    out = []
    for p, r in runs("fig12c", maestro.background, points):
        rows = maestro.spine_loads(r)
        out += [{**p, "qp": int(q.qp), "ev": int(q.ev), "bytes": int(q.bytes), "chunks": int(q.chunks),
                 "cnps": int(q.ecn_marks), "fct_us": r.flows["fct_ns"].iloc[0] / 1e3} for q in rows.itertuples()]
    return pd.DataFrame(out)


def fig12d() -> pd.DataFrame:
    """Paths appearing during a run, with and without path re-selection, seeds 1-16."""
    points = [{"reselect": rs, "seed": seed} for rs in (True, False) for seed in range(1, 17)]
    out = []
    for p, r in runs("fig12d", maestro.path_detection, points):
        rows = maestro.spine_loads(r)
        out.append({**p, "fct_us": r.flows["fct_ns"].iloc[0] / 1e3, "moves": int(rows["moves"].sum()),
                    "min_qp_share": float(rows["bytes"].min() / rows["bytes"].sum())})
    return pd.DataFrame(out)


def comparison() -> pd.DataFrame:
    """Maestro beside the other transports on a permutation and an all-reduce, seeds 1-3."""
    points = [{"transport": t, "workload": w, "seed": seed} for w in ("permutation", "all_reduce")
              for t in maestro.TRANSPORTS for seed in range(1, 4)]
    return pd.DataFrame([{**p, **maestro.comparison_row(r, p["workload"])}
                         for p, r in runs("comparison", maestro.comparison, points)])


EXPERIMENTS = {"fig8": fig8, "fig9": fig9, "fig10": fig10, "fig12c": fig12c, "fig12d": fig12d,
               "comparison": comparison}


def main(argv: List[str]) -> None:
    global JOBS
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("which", nargs="*", choices=[[]] + list(EXPERIMENTS), default=[])
    ap.add_argument("--jobs", type=int)
    a = ap.parse_args(argv)
    JOBS = a.jobs
    OUT.mkdir(parents=True, exist_ok=True)
    for name in a.which or EXPERIMENTS:
        df = EXPERIMENTS[name]()
        df.to_csv(OUT / f"{name}.csv", index=False)
        print(f"{name}: {len(df)} rows -> {OUT / (name + '.csv')}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
