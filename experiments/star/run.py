"""Runs StaR's evaluation (paper section 4, Fig. 5a and 5b) over client counts and
writes one CSV per figure into ``results/`` beside this script.

    python experiments/star/run.py              # both figures, a few minutes on 2 cores
    python experiments/star/run.py fig5a        # one of: fig5a fig5b
    python experiments/star/run.py --jobs 1     # on one core (default: every core)

The scenarios come from ``fabricsim.papers.star``, the same setting as the trend tests
(``crates/run/tests/star.rs``). Each figure's runs are a sweep (``fabricsim.sweep``:
every core, resumable) whose point folders stay in ``results/sweeps/``; running a
figure again reads them back (delete that folder after changing fabricsim).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Dict, List, Optional

import pandas as pd

from fabricsim.papers import star
from fabricsim.papers.common import experiment_main, sweep_runs

OUT = Path(__file__).resolve().parent / "results"
JOBS: Optional[int] = None


def figure(name: str, build, ops) -> pd.DataFrame:
    """``build(transport, clients, ops(clients))`` over every transport and client count."""
    points = [{"transport": t, "clients": n, "ops": ops(n)} for t in star.TRANSPORTS for n in star.CLIENTS]
    rows: List[Dict] = []
    for p, r in sweep_runs(build, points, OUT / "sweeps" / name, jobs=JOBS):
        rows.append({**p, **star.loop_row(r)})
        print(f"  {name} {p['transport']:>5} {p['clients']:>5} clients: {rows[-1]['mops']:8.2f} M/s", flush=True)
    return pd.DataFrame(rows)


# A stateful NIC fetches every context once at the start (a microsecond each, one at a
# time: 300 us for 300 clients), which many operations amortise; past the cache every
# operation pays a fetch, and fewer keep those runs short.


def fig5a() -> pd.DataFrame:
    return figure("fig5a", star.message_rate, lambda n: 200 if n <= 300 else 20)


def fig5b() -> pd.DataFrame:
    return figure("fig5b", star.rpc, lambda n: 100 if n <= 300 else 10)


EXPERIMENTS = {"fig5a": fig5a, "fig5b": fig5b}


def set_jobs(jobs: Optional[int]) -> None:
    global JOBS
    JOBS = jobs


if __name__ == "__main__":
    sys.exit(experiment_main(sys.argv[1:], EXPERIMENTS, OUT, "StaR's Fig. 5 over client counts; one CSV per figure", set_jobs))
