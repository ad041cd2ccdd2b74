"""Runs the larger versions of STELLAR's multipath experiments (paper section 7.2) and
writes one CSV per figure into ``results/`` beside this script.

    python experiments/stellar/run.py                 # everything, about 5 minutes
    python experiments/stellar/run.py imbalance drop  # some of: imbalance drop allreduce algos background placement startup

The scenarios come from ``fabricsim.papers.stellar``, the same builders the trend tests
(``tests/test_trends_stellar.py``) run at small scale. Runs are sequential (one core).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Callable, Dict, List

import pandas as pd

import fabricsim
from fabricsim.papers import stellar
from fabricsim.papers.common import quiet

OUT = Path(__file__).resolve().parent / "results"

#: Random drop rates of the Fig. 11 sweep (the paper shows 1 % and 3 %).
LOSSES = (0.0, 0.005, 0.01, 0.02, 0.03, 0.05)


def run(sc):
    return fabricsim.run(quiet(sc))


def imbalance() -> pd.DataFrame:
    """Fig. 12: ToR uplink imbalance against paths on fat-trees (k=8: 4 uplinks per ToR,
    5 seeds, OBS and RR; k=16: 8 uplinks per ToR, 3 seeds, OBS), 2 MB permutation,
    beside the balls-into-bins imbalance of pure hashing for the same flows."""
    out: List[Dict] = []
    for k, seeds, algos in ((8, range(1, 6), ("obs", "rr")), (16, range(1, 4), ("obs",))):
        for algo in algos:
            for paths in stellar.PATHS:
                if paths == 1 and algo != algos[0]:
                    continue
                for seed in seeds:
                    r = run(stellar.fat_tree_permutation(paths, k=k, size="2MB", seed=seed, algo=algo))
                    out.append({"k": k, "algo": "single" if paths == 1 else algo, "paths": paths, "seed": seed,
                                "imbalance": stellar.imbalance(r, uplinks=k // 2),
                                "hash_model": stellar.hash_imbalance(r.flows, k // 2, k // 2, paths, draws=100 if k == 8 else 20),
                                **stellar.summary_row(r)})
                print(f"  imbalance k={k} {algo} {paths}: {out[-1]['imbalance']:.3f}", flush=True)
    return pd.DataFrame(out)


def drop() -> pd.DataFrame:
    """Fig. 11 on a permutation: 4 leaves x 16 spines x 4 hosts, 32 MB flows, random
    loss on one leaf uplink cable: the one a single-path flow has to itself ("solo"),
    or the busiest one ("busiest", usually an ECMP collision). Worst per-flow FCT ratio
    against the same run without loss."""
    out: List[Dict] = []
    for seed in range(1, 6):
        probe = run(stellar.leaf_spine_permutation(1, seed=seed, sample_interval="50us"))
        links = {"solo": stellar.solo_uplink(probe, 32e6), "busiest": stellar.busiest_uplink(probe)}
        for paths in (1, 4, 16, 128):
            base = run(stellar.leaf_spine_permutation(paths, seed=seed))
            for choice, link in links.items():
                if choice == "busiest" and link == links["solo"]:
                    continue
                for loss in LOSSES:
                    r = base if loss == 0 else run(stellar.leaf_spine_permutation(paths, loss, link, seed=seed))
                    out.append({"seed": seed, "link_choice": choice, "link": link, "paths": paths, "loss": loss,
                                "worst_slowdown": stellar.worst_slowdown(base, r),
                                "makespan_ratio": r.flows["fct_ns"].max() / base.flows["fct_ns"].max(),
                                "link_drops": r.summary["drops_by_cause"]["link"], **stellar.summary_row(r)})
            solo3 = next(o for o in out[::-1] if o["link_choice"] == "solo" and o["loss"] == 0.03)
            print(f"  drop seed {seed} paths {paths}: 3% on {links['solo']} x{solo3['worst_slowdown']:.2f}", flush=True)
    return pd.DataFrame(out)


def allreduce() -> pd.DataFrame:
    """Fig. 11's workload: one ring all-reduce over the 16 hosts of the same leaf-spine,
    32 MB and 128 MB per host (steps of 2 MB and 8 MB), loss on the solo uplink of the
    single-path run. Collective time against the same run without loss."""
    out: List[Dict] = []
    for size, nbytes in (("32MB", 32e6), ("128MB", 128e6)):
        for seed in (1, 2):
            probe = run(stellar.leaf_spine_all_reduce(1, size=size, seed=seed, sample_interval="50us"))
            link = stellar.solo_uplink(probe, nbytes * 2 * 15 / 16)
            for paths in (1, 4, 128):
                base = run(stellar.leaf_spine_all_reduce(paths, size=size, seed=seed))
                d0 = float(base.collectives.iloc[0]["duration_ns"])
                for loss in LOSSES:
                    r = base if loss == 0 else run(stellar.leaf_spine_all_reduce(paths, loss, link, size=size, seed=seed))
                    c = r.collectives.iloc[0]
                    out.append({"size": size, "seed": seed, "link": link, "paths": paths, "loss": loss,
                                "duration_us": float(c["duration_ns"]) / 1e3, "duration_ratio": float(c["duration_ns"]) / d0,
                                "busbw_gbps": float(c["busbw_gbps"]), "retransmits": r.summary["retransmitted_packets"]})
                loss3 = next(o for o in out[::-1] if o["loss"] == 0.03)
                print(f"  allreduce {size} seed {seed} paths {paths}: 3% x{loss3['duration_ratio']:.2f}", flush=True)
    return pd.DataFrame(out)


def algos() -> pd.DataFrame:
    """Fig. 9: the path-selection algorithms at 4 and 128 paths (and the single path)
    on a k=8 fat-tree permutation of 2 MB and 8 MB, 3 seeds: ToR (edge) queue depth on
    up and down ports, FCT and paths used."""
    out: List[Dict] = []
    for size in ("2MB", "8MB"):
        for paths in (4, 128):
            for algo in ("single",) + stellar.ALGOS:
                if algo == "single" and paths != 4:
                    continue
                for seed in (1, 2, 3):
                    r = run(stellar.fat_tree_permutation(1 if algo == "single" else paths, k=8, size=size, seed=seed, algo=algo))
                    up, down = stellar.queue_depth(r, direction="up"), stellar.queue_depth(r, direction="down")
                    out.append({"size": size, "algo": algo, "paths": 1 if algo == "single" else paths, "seed": seed,
                                "up_queue_mean_bytes": up["queue_mean_bytes"], "up_queue_max_bytes": up["queue_max_bytes"],
                                "down_queue_mean_bytes": down["queue_mean_bytes"], "down_queue_max_bytes": down["queue_max_bytes"],
                                "imbalance": stellar.imbalance(r, uplinks=4), "ecn_marks": r.summary["ecn_marks"],
                                **stellar.summary_row(r)})
                print(f"  algos {size} {algo} {paths}: fct_max {out[-1]['fct_max_us']:.0f} us", flush=True)
    return pd.DataFrame(out)


def background() -> pd.DataFrame:
    """Fig. 10: the foreground all-reduce job's bus bandwidth beside two static or
    bursty background all-reduce jobs, per path algorithm at 4 and 128 paths: 8 leaves
    x 4 spines x 4 hosts (32 hosts, 1:1), jobs of 10 ranks on every third host, 2 MB
    all-reduces, bursts filling half of every 1 ms, 3 seeds."""
    out: List[Dict] = []
    for bg in ("none", "static", "bursty"):
        for algo in ("obs", "rr", "dwrr", "best_rtt"):
            for paths in (4, 128):
                for seed in (1, 2, 3):
                    r = run(stellar.background_jobs(paths, algo, bg, seed=seed, ranks=10, leaves=8, stop="10ms"))
                    out.append({"background": bg, "algo": algo, "paths": paths, "seed": seed,
                                "busbw_gbps": stellar.foreground_busbw(r)})
                print(f"  background {bg} {algo} {paths}: {out[-1]['busbw_gbps']:.1f} Gb/s", flush=True)
    return pd.DataFrame(out)


def placement() -> pd.DataFrame:
    """Fig. 16: training-step time of one job on every host (2 ranks per host, tensor
    parallel inside, data parallel across) of a 2:1 oversubscribed leaf-spine of 8
    leaves x 4 hosts, re-ranked against random ranking, STELLAR (128 paths) against
    single-path RoCE, 4 seeds."""
    out: List[Dict] = []
    for seed in (1, 2, 3, 4):
        for tr in ("roce", "stellar"):
            for p in ("rerank", "random"):
                r = run(stellar.training_job(tr, p, seed=seed, leaves=8, iterations=5))
                out.append({"seed": seed, "transport": tr, "placement": p, "step_us": stellar.step_time(r),
                            "exposed_comm_us": float(r.jobs["exposed_comm_ns"].iloc[1:].astype(float).mean() / 1e3)})
                print(f"  placement seed {seed} {tr} {p}: {out[-1]['step_us']:.0f} us", flush=True)
    return pd.DataFrame(out)


def startup() -> pd.DataFrame:
    """Fig. 6: container start-up against memory, pin-all against PVDMA."""
    out: List[Dict] = []
    for mem in ("16GB", "64GB", "160GB", "400GB", "800GB", "1.6TB"):
        for pinning in ("pin_all", "pvdma"):
            out.append({"memory": mem, "pinning": pinning,
                        "startup_s": stellar.startup_seconds(run(stellar.startup(mem, pinning)))})
        print(f"  startup {mem}: {out[-2]['startup_s']:.1f} s / {out[-1]['startup_s']:.1f} s", flush=True)
    return pd.DataFrame(out)


EXPERIMENTS: Dict[str, Callable[[], pd.DataFrame]] = {"imbalance": imbalance, "drop": drop, "allreduce": allreduce,
                                                      "algos": algos, "background": background,
                                                      "placement": placement, "startup": startup}


def main(argv: List[str]) -> None:
    names = argv or list(EXPERIMENTS)
    unknown = set(names) - set(EXPERIMENTS)
    if unknown:
        sys.exit(f"unknown experiment(s) {sorted(unknown)}; choose from {list(EXPERIMENTS)}")
    OUT.mkdir(parents=True, exist_ok=True)
    for name in names:
        t = time.time()
        print(f"{name}:", flush=True)
        df = EXPERIMENTS[name]()
        df.to_csv(OUT / f"{name}.csv", index=False, float_format="%.6g")
        print(f"{name}: {len(df)} rows in {time.time() - t:.0f} s -> {OUT / (name + '.csv')}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
