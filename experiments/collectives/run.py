"""The collectives' crossover: all-reduce bus bandwidth against message size for the
ring, NCCL's double binary tree and halving-doubling, on 16 to 128 hosts.

    python experiments/collectives/run.py        # writes results/crossover.csv

The scenarios come from ``fabricsim.papers.collectives`` (leaf-spine, 8 hosts per leaf,
non-blocking, 100 Gb/s, RoCE), the builder ``tests/test_trends_collectives.py`` runs at
32 hosts. Runs are sequential (one core).
"""

from __future__ import annotations

import time
from pathlib import Path

import pandas as pd

import fabricsim
from fabricsim.papers import collectives as C
from fabricsim.papers.common import quiet

OUT = Path(__file__).resolve().parent / "results"
HOSTS = (16, 32, 64, 128)
SIZES = ("8KB", "64KB", "512KB", "4MB", "32MB", "128MB")


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    rows = []
    t0 = time.time()
    for hosts in HOSTS:
        for size in SIZES:
            for alg in C.ALGORITHMS:
                r = fabricsim.run(quiet(C.all_reduce(hosts, size, alg)))
                rows.append({"hosts": hosts, "size": size, "size_bytes": int(r.collectives.iloc[0]["size_bytes"]),
                             "algorithm": alg, "duration_us": C.duration_us(r), "busbw_gbps": C.busbw(r),
                             "messages": len(r.flows)})
                print(f"  {hosts} hosts {size} {alg}: {rows[-1]['busbw_gbps']:.1f} Gb/s", flush=True)
    pd.DataFrame(rows).to_csv(OUT / "crossover.csv", index=False, float_format="%.6g")
    print(f"{len(rows)} runs in {time.time() - t0:.0f} s -> {OUT / 'crossover.csv'}")


if __name__ == "__main__":
    main()
