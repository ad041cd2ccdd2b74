"""Runs the larger versions of STELLAR's multipath experiments (paper section 7.2) and
writes one CSV per figure into ``results/`` beside this script.

    python experiments/stellar/run.py                 # everything, about 5 minutes on 1 core
    python experiments/stellar/run.py imbalance drop  # some of: imbalance drop allreduce algos background placement startup gdr
    python experiments/stellar/run.py --jobs 1        # on one core (default: every core)

The scenarios come from ``fabricsim.papers.stellar``, the same builders the trend tests
(``tests/test_trends_stellar.py``) run at small scale. Each experiment's runs are
sweeps (``fabricsim.sweep``: every core, resumable) whose point folders stay in
``results/sweeps/``; running an experiment again reads them back instead of running
them (delete that folder after changing fabricsim).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import pandas as pd

import fabricsim
from fabricsim.papers import stellar
from fabricsim.papers.common import experiment_main, quiet, sweep_runs
from fabricsim.results import Result

OUT = Path(__file__).resolve().parent / "results"

#: Random drop rates of the Fig. 11 sweep (the paper shows 1 % and 3 %).
LOSSES = (0.0, 0.005, 0.01, 0.02, 0.03, 0.05)

#: Worker processes of the sweeps (None: one per core); set by --jobs.
JOBS: Optional[int] = None


def run(sc: Dict[str, Any]) -> Result:
    """One run, plots off (the experiments that are not sweeps: background, placement,
    startup)."""
    return fabricsim.run(quiet(sc))


def runs(name: str, build, points: Sequence[Dict[str, Any]]) -> Iterator[Tuple[Dict[str, Any], Result]]:
    """``build(**p)`` for every ``p`` of ``points``, run as the sweep ``results/sweeps/<name>``:
    each point's parameters and Result, in order."""
    return sweep_runs(build, points, OUT / "sweeps" / name, jobs=JOBS)


def imbalance() -> pd.DataFrame:
    """Fig. 12: ToR uplink imbalance against paths on fat-trees (k=8: 4 uplinks per ToR,
    5 seeds, OBS and RR; k=16: 8 uplinks per ToR, 3 seeds, OBS), 2 MB permutation,
    beside the balls-into-bins imbalance of pure hashing for the same flows."""
    points = [{"paths": paths, "k": k, "size": "2MB", "seed": seed, "algo": algo}
              for k, seeds, algos in ((8, range(1, 6), ("obs", "rr")), (16, range(1, 4), ("obs",)))
              for algo in algos for paths in stellar.PATHS if not (paths == 1 and algo != algos[0]) for seed in seeds]
    last_seed = {8: 5, 16: 3}
    out: List[Dict] = []
    for p, r in runs("imbalance", stellar.fat_tree_permutation, points):
        k, paths, algo = p["k"], p["paths"], p["algo"]
        out.append({"k": k, "algo": "single" if paths == 1 else algo, "paths": paths, "seed": p["seed"],
                    "imbalance": stellar.imbalance(r, uplinks=k // 2),
                    "hash_model": stellar.hash_imbalance(r.flows, k // 2, k // 2, paths, draws=100 if k == 8 else 20),
                    **stellar.summary_row(r)})
        if p["seed"] == last_seed[k]:
            print(f"  imbalance k={k} {algo} {paths}: {out[-1]['imbalance']:.3f}", flush=True)
    return pd.DataFrame(out)


def drop() -> pd.DataFrame:
    """Fig. 11 on a permutation: 4 leaves x 16 spines x 4 hosts, 32 MB flows, random
    loss on one leaf uplink cable: the one a single-path flow has to itself ("solo"),
    or the busiest one ("busiest", usually an ECMP collision). Worst per-flow FCT ratio
    against the same run without loss."""
    seeds = range(1, 6)
    links = {}
    for p, probe in runs("drop-probe", stellar.leaf_spine_permutation,
                         [{"paths": 1, "seed": seed, "sample_interval": "50us"} for seed in seeds]):
        solo, busiest = stellar.solo_uplink(probe, 32e6), stellar.busiest_uplink(probe)
        # A busiest cable that is the solo one is not run twice.
        links[p["seed"]] = {"solo": solo} if busiest == solo else {"solo": solo, "busiest": busiest}
    # Each (seed, paths): the run without loss, then every lossy run on each cable.
    points = [{"paths": paths, "loss": loss, "link": link if loss else None, "seed": seed}
              for seed in seeds for paths in (1, 4, 16, 128)
              for loss, link in [(0.0, None)] + [(loss, link) for link in links[seed].values() for loss in LOSSES[1:]]]
    out: List[Dict] = []
    base: Optional[Result] = None
    for p, r in runs("drop", stellar.leaf_spine_permutation, points):
        seed, paths, loss = p["seed"], p["paths"], p["loss"]
        if loss == 0:
            base = r
        assert base is not None
        for choice, link in links[seed].items():
            if loss == 0 or link == p["link"]:
                out.append({"seed": seed, "link_choice": choice, "link": link, "paths": paths, "loss": loss,
                            "worst_slowdown": stellar.worst_slowdown(base, r),
                            "makespan_ratio": r.flows["fct_ns"].max() / base.flows["fct_ns"].max(),
                            "link_drops": r.summary["drops_by_cause"]["link"], **stellar.summary_row(r)})
        if loss == LOSSES[-1] and p["link"] == list(links[seed].values())[-1]:
            solo3 = next(o for o in out[::-1] if o["link_choice"] == "solo" and o["loss"] == 0.03
                         and o["seed"] == seed and o["paths"] == paths)
            print(f"  drop seed {seed} paths {paths}: 3% on {links[seed]['solo']} x{solo3['worst_slowdown']:.2f}", flush=True)
    # Rows per (seed, paths): the solo cable's losses, then the busiest one's.
    out.sort(key=lambda o: (o["seed"], (1, 4, 16, 128).index(o["paths"]), o["link_choice"] != "solo",
                            LOSSES.index(o["loss"])))
    return pd.DataFrame(out)


def allreduce() -> pd.DataFrame:
    """Fig. 11's workload: one ring all-reduce over the 16 hosts of the same leaf-spine,
    32 MB and 128 MB per host (steps of 2 MB and 8 MB), loss on the solo uplink of the
    single-path run. Collective time against the same run without loss."""
    cases = [(size, nbytes, seed) for size, nbytes in (("32MB", 32e6), ("128MB", 128e6)) for seed in (1, 2)]
    links = {}
    probes = [{"paths": 1, "size": size, "seed": seed, "sample_interval": "50us"} for size, _, seed in cases]
    for (size, nbytes, seed), (_, probe) in zip(cases, runs("allreduce-probe", stellar.leaf_spine_all_reduce, probes)):
        links[size, seed] = stellar.solo_uplink(probe, nbytes * 2 * 15 / 16)
    points = [{"paths": paths, "loss": loss, "link": links[size, seed] if loss else None, "size": size, "seed": seed}
              for size, _, seed in cases for paths in (1, 4, 128) for loss in LOSSES]
    out: List[Dict] = []
    d0 = 0.0
    for p, r in runs("allreduce", stellar.leaf_spine_all_reduce, points):
        c = r.collectives.iloc[0]
        if p["loss"] == 0:
            d0 = float(c["duration_ns"])
        out.append({"size": p["size"], "seed": p["seed"], "link": links[p["size"], p["seed"]], "paths": p["paths"],
                    "loss": p["loss"], "duration_us": float(c["duration_ns"]) / 1e3,
                    "duration_ratio": float(c["duration_ns"]) / d0, "busbw_gbps": float(c["busbw_gbps"]),
                    "retransmits": r.summary["retransmitted_packets"]})
        if p["loss"] == LOSSES[-1]:
            loss3 = next(o for o in out[::-1] if o["loss"] == 0.03)
            print(f"  allreduce {p['size']} seed {p['seed']} paths {p['paths']}: 3% x{loss3['duration_ratio']:.2f}",
                  flush=True)
    return pd.DataFrame(out)


def algos() -> pd.DataFrame:
    """Fig. 9: the path-selection algorithms at 4 and 128 paths (and the single path)
    on a k=8 fat-tree permutation of 2 MB and 8 MB, 3 seeds: ToR (edge) queue depth on
    up and down ports, FCT and paths used."""
    points = [{"paths": 1 if algo == "single" else paths, "k": 8, "size": size, "seed": seed, "algo": algo}
              for size in ("2MB", "8MB") for paths in (4, 128) for algo in ("single",) + stellar.ALGOS
              if not (algo == "single" and paths != 4) for seed in (1, 2, 3)]
    out: List[Dict] = []
    for p, r in runs("algos", stellar.fat_tree_permutation, points):
        up, down = stellar.queue_depth(r, direction="up"), stellar.queue_depth(r, direction="down")
        out.append({"size": p["size"], "algo": p["algo"], "paths": p["paths"], "seed": p["seed"],
                    "up_queue_mean_bytes": up["queue_mean_bytes"], "up_queue_max_bytes": up["queue_max_bytes"],
                    "down_queue_mean_bytes": down["queue_mean_bytes"], "down_queue_max_bytes": down["queue_max_bytes"],
                    "imbalance": stellar.imbalance(r, uplinks=4), "ecn_marks": r.summary["ecn_marks"],
                    **stellar.summary_row(r)})
        if p["seed"] == 3:
            print(f"  algos {p['size']} {p['algo']} {p['paths']}: fct_max {out[-1]['fct_max_us']:.0f} us", flush=True)
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


def gdr() -> pd.DataFrame:
    """Fig. 8: GDR WRITE throughput against message size, 16 connections, 4 KB pages,
    the server's GPU memory behind the ATC or eMTT."""
    # Message size: WRITEs per connection, enough for the caches' first (cold) round to
    # matter little, fewer where the runs are long.
    sizes = {"256KiB": 16, "512KiB": 12, "1MiB": 8, "2MiB": 6, "4MiB": 4, "8MiB": 3, "16MiB": 3, "32MiB": 2,
             "64MiB": 2, "128MiB": 2}
    points = [{"gdr": g, "size": s, "ops": n} for g in ("atc", "emtt") for s, n in sizes.items()]
    out: List[Dict] = []
    for p, r in runs("gdr", stellar.gdr_write, points):
        out.append({**p, "gbps": stellar.gdr_gbps(r), "atc_misses": r.summary["nic"]["atc_misses"],
                    "iotlb_misses": r.summary["nic"]["iotlb_misses"]})
        print(f"  gdr {p['gdr']} {p['size']}: {out[-1]['gbps']:.1f} Gb/s", flush=True)
    return pd.DataFrame(out)


EXPERIMENTS: Dict[str, Callable[[], pd.DataFrame]] = {"imbalance": imbalance, "drop": drop, "allreduce": allreduce,
                                                      "algos": algos, "background": background,
                                                      "placement": placement, "startup": startup, "gdr": gdr}


def set_jobs(jobs: Optional[int]) -> None:
    global JOBS
    JOBS = jobs


if __name__ == "__main__":
    sys.exit(experiment_main(sys.argv[1:], EXPERIMENTS, OUT, "STELLAR's experiments, larger than the tests; one CSV per experiment", set_jobs))
