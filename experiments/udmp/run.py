"""Runs the larger versions of UDMP's experiments and writes one CSV per figure into
``results/`` beside this script.

    python experiments/udmp/run.py                      # everything, about 10 minutes on 1 core
    python experiments/udmp/run.py token_pool collision # some of: token_pool collision
                                                        #   incast permutation decay anomaly
    python experiments/udmp/run.py --jobs 1             # on one core (default: every core)

The scenarios come from ``fabricsim.papers.udmp``, the same builders the trend tests
(``tests/test_trends_udmp.py``) run at small scale. Each experiment's runs are sweeps
(``fabricsim.sweep``: every core, resumable) whose point folders stay in
``results/sweeps/``; running an experiment again reads them back instead of running
them (delete that folder after changing fabricsim).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, Optional, Sequence, Tuple

import pandas as pd

from fabricsim.papers import udmp
from fabricsim.papers.common import experiment_main, sweep_runs
from fabricsim.results import Result

OUT = Path(__file__).resolve().parent / "results"

#: Worker processes of the sweeps (None: one per core); set by --jobs.
JOBS: Optional[int] = None


def runs(name: str, build, points: Sequence[Dict[str, Any]]) -> Iterator[Tuple[Dict[str, Any], Result]]:
    """``build(**p)`` for every ``p`` of ``points``, run as the sweep ``results/sweeps/<name>``:
    each point's parameters and Result, in order."""
    return sweep_runs(build, points, OUT / "sweeps" / name, jobs=JOBS)


#: Fig. 6a comparison, in the paper's order, plus MPRDMA with MP-RDMA's own ECN rule
#: and UDMP's load balancer alone.
PERM_TRANSPORTS = ("udmp", "qps32", "qps16", "mprdma", "roce", "mprdma_nsdi", "udmp_lb_only")

#: Permutation scales: (label, builder arguments, seeds, sizes).
PERM_SCALES = (
    ("k4-64h", {"k": 4, "hosts_per_edge": 8}, (1, 2, 3, 4), ("2MB", "8MB", "16MB")),
    ("k4-16h-overprov", {"k": 4, "hosts_per_edge": 2}, (1, 2, 3, 4), ("8MB",)),
    ("k4-64h-mtu1000", {"k": 4, "hosts_per_edge": 8, "mtu": 1000,
                        "ecn": {"kmin": "36KB", "kmax": "36KB", "pmax": 1.0}}, (1, 2), ("8MB",)),
    ("k6-216h", {"k": 6, "hosts_per_edge": 12}, (1, 2), ("2MB", "8MB", "16MB")),
    ("k8p5-320h", {"k": 8, "pods": 5, "hosts_per_edge": 16}, (1, 2), ("2MB", "8MB", "16MB", "32MB")),
)


def token_pool() -> pd.DataFrame:
    """Fig. 3: every seed (1-20) whose first RTT leaves both paths busy, with the
    delay's onset at 16 phases of the equal-path pattern."""
    seeds = []
    for p, r in runs("token_pool-first_rtt", udmp.token_pool, [{"seed": seed, "cycles": 0} for seed in range(1, 21)]):
        pre = udmp.token_pool_loads(r)
        if (pre.reindex([-2, -1], fill_value=0) > 0).all().all():
            seeds.append(p["seed"])
    onsets = udmp.token_pool_onsets(16)
    points = [{"seed": seed, "onset_ns": on, "cycles": 11} for seed in seeds for on in onsets]
    rows = [udmp.token_pool_row(r, p["seed"], p["onset_ns"]) for p, r in runs("token_pool", udmp.token_pool, points)]
    out = []
    for i, seed in enumerate(seeds):
        sw = pd.DataFrame(rows[i * len(onsets):(i + 1) * len(onsets)])
        out.append(sw)
        print(f"  token_pool seed {seed}: walk-through at {int(sw['walkthrough'].sum())}/16 onsets, "
              f"fast:slow {sw['fast'].sum()}:{sw['slow'].sum()}", flush=True)
    return pd.concat(out, ignore_index=True)

def token_pool_cycles() -> pd.DataFrame:
    """Per-cycle packets of one walk-through onset and one greedy onset (seed 1)."""
    cases = (("walkthrough", 100_000), ("greedy", 102_350))
    points = [{"seed": 1, "onset_ns": on, "cycles": 20} for _, on in cases]
    out = []
    for (label, on), (_, r) in zip(cases, runs("token_pool_cycles", udmp.token_pool, points)):
        loads = udmp.token_pool_loads(r, on)
        out.append(loads.loc[-4:20].reset_index().assign(case=label, onset_ns=on))
    return pd.concat(out, ignore_index=True)

#: Fig. 1's cases: transport, then (rate, stop in us, seeds).
COLLISION = [(name, rate, stop, seed) for name in ("udmp", "mprdma", "stellar", "qps16")
             for rate, stop, seeds in (("100Gbps", 2000, (1, 2, 3, 4)), ("10Gbps", 8000, (1,))) for seed in seeds]


def collision() -> pd.DataFrame:
    """Fig. 1: flow 1 (UDMP, MPRDMA, STELLAR or QP-Scaling-16) meets a RoCE flow at
    400 us; seeds 1-4 at 100 Gb/s, and the paper's 10 Gb/s testbed speed (seed 1)."""
    # The uplink ECMP gives flow 2, learnt at 100 Gb/s (the same probe for both rates).
    probes = [{"transport_table": udmp.transport(name), "seed": seed} for name, _, _, seed in COLLISION]
    shared = [udmp.shared_uplink_of(r) for _, r in runs("collision-probe", udmp.shared_uplink_probe, probes)]
    points = [{"transport_table": udmp.transport(name), "seed": seed, "stop_us": stop, "rate": rate}
              for name, rate, stop, seed in COLLISION]
    out = []
    for (name, rate, stop, seed), sh, (_, r) in zip(COLLISION, shared, runs("collision", udmp.collision, points)):
        edges = [100, 400, 600, 1000, stop] if rate == "100Gbps" else [200, 400, 1000, 3000, stop]
        ph = udmp.collision_phases(r, sh, edges).assign(transport=name, seed=seed, rate=rate, shared=sh)
        out.append(ph)
        if seed == 1:
            udmp.collision_series(r, sh).assign(transport=name, rate=rate).to_csv(
                OUT / f"collision_series_{name}_{rate}.csv", index=False, float_format="%.3f")
        last = ph.iloc[-1]
        print(f"  collision {name} {rate} seed {seed}: flow1 {ph.iloc[0]['flow1_gbps']:.1f} -> "
              f"{last['flow1_gbps']:.1f} Gb/s, off shared {last['flow1_off_shared']:.2f}", flush=True)
    return pd.concat(out, ignore_index=True)

def incast() -> pd.DataFrame:
    """Fig. 4c: three staggered senders to one receiver (seeds 1-3), per stage."""
    cases = [(name, seed) for name in ("udmp", "udmp_lb_only", "mprdma", "stellar", "roce") for seed in (1, 2, 3)]
    points = [{"transport_table": udmp.transport(name), "seed": seed} for name, seed in cases]
    out = []
    for (name, seed), (_, r) in zip(cases, runs("incast", udmp.incast, points)):
        st = udmp.stage_gbps(r, 300)
        q, pauses = udmp.bottleneck_queue(r)
        out.append(st.assign(transport=name, seed=seed, max_queue_kb=q / 1e3, pfc_pauses=pauses,
                             finish_us=",".join(str(int(x / 1e3)) for x in r.flows["finish_ns"].fillna(-1e3))))
        if seed == 1:
            t = r.throughput.pivot_table(index="time_ns", columns="connection", values="gbps").fillna(0.0)
            t.columns = [f"flow{c}" for c in t.columns]
            t.reset_index().assign(transport=name).to_csv(OUT / f"incast_series_{name}.csv", index=False, float_format="%.3f")
        print(f"  incast {name} seed {seed}: min Jain {st['jain'].min():.3f}, max queue {q / 1e3:.0f} KB", flush=True)
    return pd.concat(out, ignore_index=True)

def permutation_at(scale: str, name: str, size: str, seed: int) -> Dict[str, Any]:
    """Fig. 6a's permutation at one of ``PERM_SCALES`` (by label)."""
    args = next(a for label, a, _, _ in PERM_SCALES if label == scale)
    return udmp.permutation(name, size=size, seed=seed, **args)


def permutation() -> pd.DataFrame:
    """Fig. 6a at several scales, sizes and seeds."""
    points = [{"scale": label, "name": name, "size": size, "seed": seed}
              for label, _, seeds, sizes in PERM_SCALES for size in sizes for seed in seeds for name in PERM_TRANSPORTS]
    out = []
    row = []
    for p, r in runs("permutation", permutation_at, points):
        out.append(udmp.permutation_row(p["name"], r, scale=p["scale"], hosts=r.summary["hosts"], size=p["size"],
                                        seed=p["seed"], wall_s=round(r.summary["run"]["wall_seconds"], 2)))
        row.append(f"{p['name']} {out[-1]['p1_gbps']:.1f}")
        if p["name"] == PERM_TRANSPORTS[-1]:
            print(f"  permutation {p['scale']} {p['size']} seed {p['seed']}: " + ", ".join(row), flush=True)
            row = []
    return pd.DataFrame(out)

def decay() -> pd.DataFrame:
    """UDMP's per-flow throughput over time in a long permutation (48 MB, 64 hosts):
    1st / 50th / 99th percentile over flows per 250 us, beside its load balancer alone
    and MPRDMA."""
    points = [{"name": name, "size": "48MB", "seed": 1, "sample_interval": "250us"}
              for name in ("udmp", "udmp_lb_only", "mprdma")]
    out = []
    for p, r in runs("decay", udmp.permutation, points):
        piv = r.throughput.pivot_table(index="time_ns", columns="connection", values="gbps")
        q = piv.quantile([0.01, 0.5, 0.99], axis=1).T
        q.columns = ["p1_gbps", "p50_gbps", "p99_gbps"]
        out.append(q.reset_index().assign(transport=p["name"]))
        print(f"  decay {p['name']}: median {q['p50_gbps'].iloc[1]:.1f} -> {q['p50_gbps'].iloc[-3]:.1f} Gb/s", flush=True)
    return pd.concat(out, ignore_index=True)

def anomaly_single(name: str, condition: str, spines: int, size: str) -> Dict[str, Any]:
    """Fig. 7b's single flow; ``udmp_no_explore`` is UDMP without exploration."""
    s = udmp.anomaly_single("udmp" if name == "udmp_no_explore" else name, condition, spines=spines, size=size)
    if name == "udmp_no_explore":
        s["transport"] = dict(s["transport"], explore=0.0)
    return s


def anomaly() -> pd.DataFrame:
    """Fig. 7: FCT under a 1 ms delay anomaly or a 40 % rate on one link, normalised to
    the same run without the fault. (a) The 64-host permutation (8 MB, seeds 1-2, fault
    on cable agg[0]-core[0] from t = 0); (b) one 20/50 MB flow over 2/4/8 spines (fault on
    one leaf uplink at 200 us), UDMP also without exploration."""
    out = []
    names = ("udmp", "udmp_no_ooo", "mprdma", "stellar")
    conditions = ("normal", "delay", "rate")

    def rows(setting: str, results, keys: Callable[[Dict[str, Any]], Dict[str, Any]]) -> Iterator[Dict[str, Any]]:
        """Appends each faulty run's row, normalised by the run before it without the
        fault; yields each point whose rows are all in."""
        base = None
        for p, r in results:
            s = udmp.fct_stats(r)
            if p["condition"] == "normal":
                base = s
                continue
            assert base is not None
            k = keys(p)
            out.append({"setting": setting, "transport": p["name"], "seed": k["seed"], "condition": p["condition"],
                        "spines": k["spines"], "size": k["size"],
                        "mean_fct_norm": s["mean_fct_us"] / base["mean_fct_us"],
                        "max_fct_norm": s["max_fct_us"] / base["max_fct_us"], "unfinished": s["unfinished"],
                        "retransmitted": r.summary["retransmitted_packets"], "timeouts": r.summary["timeouts"]})
            if p["condition"] == conditions[-1]:
                yield p

    points = [{"name": name, "condition": cond, "seed": seed} for name in names for seed in (1, 2) for cond in conditions]
    for p in rows("permutation-64h", runs("anomaly", udmp.anomaly, points),
                  lambda p: {"seed": p["seed"], "spines": None, "size": "8MB"}):
        print(f"  anomaly permutation {p['name']} seed {p['seed']}: delay x{out[-2]['mean_fct_norm']:.2f}, "
              f"rate x{out[-1]['mean_fct_norm']:.2f}", flush=True)
    points = [{"name": name, "condition": cond, "spines": spines, "size": size}
              for name in names + ("udmp_no_explore",) for spines, size in ((2, "20MB"), (4, "20MB"), (4, "50MB"), (8, "50MB"))
              for cond in conditions]
    for p in rows("single-flow", runs("anomaly-single", anomaly_single, points),
                  lambda p: {"seed": 1, "spines": p["spines"], "size": p["size"]}):
        print(f"  anomaly single {p['name']} {p['spines']} spines {p['size']}: delay x{out[-2]['mean_fct_norm']:.2f}, "
              f"rate x{out[-1]['mean_fct_norm']:.2f}", flush=True)
    return pd.DataFrame(out)

EXPERIMENTS: Dict[str, Callable[[], pd.DataFrame]] = {
    "token_pool": token_pool,
    "token_pool_cycles": token_pool_cycles,
    "collision": collision,
    "incast": incast,
    "permutation": permutation,
    "decay": decay,
    "anomaly": anomaly,
}


def set_jobs(jobs: Optional[int]) -> None:
    global JOBS
    JOBS = jobs


if __name__ == "__main__":
    sys.exit(experiment_main(sys.argv[1:], EXPERIMENTS, OUT, "UDMP's experiments, larger than the tests; one CSV per experiment", set_jobs, float_format="%.4f"))
