#!/usr/bin/env python3
"""Runs MRC's section-5.2 experiments (and appendix Fig. 20) at a larger scale than the
test suite and writes one CSV per figure into ``results/``. ``plot.py`` draws them.

    python experiments/mrc/run.py            # everything, under a minute on 2 cores
    python experiments/mrc/run.py fig16      # one figure
    python experiments/mrc/run.py --jobs 1   # on one core

The scenarios come from ``fabricsim.papers.mrc``, the same builders the trend tests
use (tests/test_trends_mrc.py), here with more planes, hosts, sizes and seeds. Each
figure's runs are one sweep (``fabricsim.sweep``: every core, resumable) whose point
folders stay in ``results/sweeps/<figure>/``; running a figure again reads them back
instead of running them (delete that folder after changing fabricsim).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

import pandas as pd

from fabricsim.papers import mrc
from fabricsim.papers.common import flow_gbps, sweep_runs
from fabricsim.results import Result

OUT = Path(__file__).resolve().parent / "results"

#: Worker processes of the sweeps (None: one per core); set by --jobs.
JOBS: Optional[int] = None


def runs(name: str, build, points: Sequence[Dict[str, Any]]) -> Iterator[Tuple[Dict[str, Any], Result]]:
    """``build(**p)`` for every ``p`` of ``points``, run as the sweep ``results/sweeps/<name>``:
    each point's parameters and Result, in order."""
    return sweep_runs(build, points, OUT / "sweeps" / name, jobs=JOBS)


def throughput_of(r: Result, **keys: Any) -> pd.DataFrame:
    """Connection 0's delivered throughput over time."""
    t = r.throughput[r.throughput["connection"] == 0]
    return pd.DataFrame({**keys, "time_us": t["time_ns"] / 1e3, "gbps": t["gbps"]})


def fig1() -> pd.DataFrame:
    """Section 2 / Fig. 1: the same 16 hosts at 800 Gb/s with full bisection, as a 3-tier
    fat-tree of 800G links or a 2-tier Clos of eight 100G planes: a 2-byte message across
    the fabric, and a permutation healthy and with one uplink of the first T0 dead from
    20 us on (seeds 1-3)."""
    lone = {"kind": "flows", "flows": [{"src": 0, "dst": 15, "size": "2B"}]}
    points = [{"design": d, "workload": lone, "fail_at_us": None, "seed": 1} for d in ("tiers", "planes")]
    points += [{"design": d, "workload": {"kind": "permutation", "size": size}, "fail_at_us": fail, "seed": seed}
               for d in ("tiers", "planes") for size in ("8MB", "32MB") for seed in (1, 2, 3) for fail in (None, 20)]
    latency, makespan = {}, {}
    for p, r in runs("fig1", mrc.planes_vs_tiers, points):
        if p["workload"]["kind"] == "flows":
            latency[p["design"]] = r.flows["fct_ns"].iloc[0] / 1e3
        else:
            makespan[p["design"], p["workload"]["size"], p["seed"], p["fail_at_us"]] = r.flows["fct_ns"].max()
    rows = []
    for design in ("tiers", "planes"):
        for size in ("8MB", "32MB"):
            for seed in (1, 2, 3):
                clean, hurt = makespan[design, size, seed, None], makespan[design, size, seed, 20]
                rows.append({"design": design, "latency_us": latency[design], "size": size, "seed": seed,
                             "makespan_us": clean / 1e3, "failed_makespan_us": hurt / 1e3, "slowdown": hurt / clean})
    return pd.DataFrame(rows)


def fig9a() -> pd.DataFrame:
    """8 x 100G NIC: three NIC-T0 links fail 200 us apart, then recover."""
    points = [{"planes": 8, "groups": 2, "hosts_per_group": 4, "t1_per_plane": 4, "size": "120MB"}]
    (_, r), = runs("fig9a", mrc.nic_link_failures, points)
    return throughput_of(r)


def fig9bd() -> pd.DataFrame:
    """8 x 100G, one flow: four NIC links flap together (9b), or eight T0-T1 links, one per
    plane on the sender's T0s (9d), down from 200 to 600 us."""
    return pd.concat([throughput_of(r, variant=p["kind"])
                      for p, r in runs("fig9bd", mrc.link_flaps, [{"kind": k} for k in ("nic", "t0_t1")])])


def fig9c() -> pd.DataFrame:
    """Permutation while 0..4 of every T0's 8 uplinks are dead (static SRv6)."""
    rows = []
    base = None
    points = [{"links_per_t0": links, "size": "20MB"} for links in range(5)]
    for p, r in runs("fig9c", mrc.t0_t1_failures, points):
        links = p["links_per_t0"]
        makespan = r.flows["fct_ns"].max()
        base = base or makespan
        rows.append({"failed_uplinks_per_t0": links, "capacity_left": 1 - links / 8, "makespan_us": makespan / 1e3,
                     "relative": makespan / base, "ev_retirements": r.summary["ev_retirements"],
                     "link_drops": r.summary["drops_by_cause"]["link"]})
    return pd.DataFrame(rows)


def switch_failure(label: str, switch: str, dst: int) -> Dict[str, Any]:
    """Fig. 10/11's scenario: one 60 MB flow from host 0 to ``dst`` while ``switch`` is
    down from 200 to 700 us (4 x 100G, 4 T1 per plane)."""
    sc = mrc.nic_link_failures(size="60MB", planes=4, groups=2, hosts_per_group=4, t1_per_plane=4)
    sc["name"] = f"mrc-{label}"
    sc["workload"] = {"kind": "flows", "flows": [{"src": 0, "dst": dst, "size": "60MB"}]}
    sc["faults"] = [{"at": "200us", "kind": "switch_down", "switch": switch},
                    {"at": "700us", "kind": "switch_up", "switch": switch}]
    return sc


def fig10_11() -> pd.DataFrame:
    """Fig. 10/11: a switch fails and recovers under one flow between two hosts: a T0
    of the sender's group in plane 0 (T0-local: the flow loses a plane) or a T1 of
    plane 0 (cross-T1: other T1s of the plane remain). 4 x 100G, 4 T1 per plane."""
    points = [{"label": "t0_local", "switch": "t0[0]", "dst": 1}, {"label": "t1_cross", "switch": "t1[0]", "dst": 7}]
    return pd.concat([throughput_of(r, variant=p["label"]) for p, r in runs("fig10_11", switch_failure, points)])


def fig12() -> pd.DataFrame:
    """One EV of plane 0 drops 5..100 % of its packets from 100 us on (16 EVs, 4 planes)."""
    (_, clean), = runs("fig12-clean", mrc.ev_drop, [{"ev": None}])
    ev = int(clean.paths[clean.paths["plane"] == 0].sort_values("ev").iloc[0]["ev"])
    rows = [{"loss": 0.0, "fct_us": clean.flows["fct_ns"].iloc[0] / 1e3, "relative": 1.0, "retired_at_us": None}]
    for p, r in runs("fig12", mrc.ev_drop, [{"ev": ev, "loss": loss} for loss in (0.05, 0.2, 0.5, 1.0)]):
        s = r.ev_states[(r.ev_states["ev"] == ev) & (r.ev_states["state"] == "retired")]
        rows.append({"loss": p["loss"], "fct_us": r.flows["fct_ns"].iloc[0] / 1e3,
                     "relative": r.flows["fct_ns"].iloc[0] / clean.flows["fct_ns"].iloc[0],
                     "retired_at_us": s["time_ns"].min() / 1e3 if len(s) else None})
    return pd.DataFrame(rows)


def collision_variant(seed: int, transport: Dict[str, Any]) -> Dict[str, Any]:
    """Fig. 14's two flows forced onto one EV, with the given MRC transport table."""
    return dict(mrc.forced_collision(seed, size="40MB"), transport=transport)


def fig14() -> pd.DataFrame:
    """Two flows forced onto one EV, with and without the ECN swap rule."""
    seed = mrc.colliding_seed()
    variants = (("ecn_swap", {"kind": "mrc", "evs": 1, "backup": 4}),
                ("no_swap", {"kind": "mrc", "evs": 1, "backup": 4, "ecn_swap": 0}))
    out = []
    for (label, _), (_, r) in zip(variants, runs("fig14", collision_variant,
                                                 [{"seed": seed, "transport": tr} for _, tr in variants])):
        t = r.throughput.copy()
        t["variant"] = label
        out.append(t.assign(time_us=t["time_ns"] / 1e3)[["variant", "connection", "time_us", "gbps"]])
    return pd.concat(out)


def collective_grid(name: str, build, sizes) -> pd.DataFrame:
    """Bus bandwidth of the collective ``build(transport, loss, size=...)`` builds, for
    every size, transport (RoCE 1 and 16 QPs, MRC) and random loss 0 / 0.1 % / 1 %."""
    points = [{"transport": t, "loss": loss, "size": size}
              for size in sizes for t in ("roce", "roce16", "mrc") for loss in (0.0, 0.001, 0.01)]
    return pd.DataFrame([{"size": p["size"], "transport": p["transport"], "loss": p["loss"], "busbw_gbps": mrc.busbw(r),
                          "finished": r.summary["flows"]["unfinished"] == 0} for p, r in runs(name, build, points)])


def fig16() -> pd.DataFrame:
    """Ring all-reduce over 16 hosts (4 x 100G planes for MRC; RoCE with 1 and 16 QPs),
    sizes 8-64 MB, random loss 0 / 0.1 % / 1 % on every link."""
    return collective_grid("fig16", mrc.ring_all_reduce, ("8MB", "32MB", "64MB"))


def fig17() -> pd.DataFrame:
    """All-to-all among 16 hosts (MRC on 4 x 100G planes, RoCE with 1 and 16 QPs per
    destination on one 400G plane), 256 KB - 4 MB per pair, random loss 0 / 0.1 % / 1 %
    on every link."""
    return collective_grid("fig17", mrc.all_to_all, ("256KB", "1MB", "4MB"))


def fig22() -> pd.DataFrame:
    """15:1 incast, a flow arriving every 50 us, under three DCQCN profiles: the
    receiver's ToR queue and utilization over time (2 us samples)."""
    points = [{"profile": prof} for prof in mrc.DCQCN_PROFILES]
    return pd.concat([mrc.tor_queue(r).assign(profile=p["profile"], pfc_pauses=r.summary["pfc_pauses"])
                      for p, r in runs("fig22", mrc.dcqcn_incast, points)])


def incast_variant(label: str) -> Dict[str, Any]:
    """Fig. 18's incast and victim with RoCE (PFC only), RoCE+DCQCN+PFC or MRC."""
    sc = mrc.incast_victim("mrc" if label == "mrc" else "roce")
    if label == "roce_pfc_only":
        sc["transport"] = {"kind": "roce", "cc": "none"}
    return sc


def fig18() -> pd.DataFrame:
    """7:1 incast plus a victim in the target's rack: RoCE (PFC only), RoCE+DCQCN+PFC, MRC."""
    rows = []
    points = [{"label": label} for label in ("roce_pfc_only", "roce_dcqcn", "mrc")]
    for p, r in runs("fig18", incast_variant, points):
        v = mrc.victim_and_incast(r)
        incast = flow_gbps(r.flows[r.flows["workload"] == 0])
        rows.append({"variant": p["label"], **v, "incast_min_gbps": incast.min(), "incast_max_gbps": incast.max()})
    return pd.DataFrame(rows)


def fig19() -> pd.DataFrame:
    """Appendix Fig. 19b/c: 400G NIC, four 100G T0 uplinks as the bottleneck; three fail
    one by one and recover (b), or two at once (c). 2 ms steps."""
    variants = (("one_by_one", False), ("two_at_once", True))
    points = [{"size": "600MB", "step_us": 2000, "together": together} for _, together in variants]
    return pd.concat([throughput_of(r, variant=label)
                      for (label, _), (_, r) in zip(variants, runs("fig19", mrc.t0_uplink_failures, points))])


#: Fig. 20's transports: label, fabric, transport table.
FIG20 = (("roce", {"pfc": True, "ecn": True}, {"kind": "roce"}),
         ("roce8", {"pfc": True, "ecn": True}, {"kind": "qp_scaling", "qps": 8}),
         ("mrc", mrc.FABRIC | {"routing": "ecmp"}, {"kind": "mrc"}))


def rack_to_rack(seed: int, label: str) -> Dict[str, Any]:
    """Fig. 20's scenario: hosts 0-7 (two racks) each send 16 MB to host s + 8."""
    _, fabric, tr = next(v for v in FIG20 if v[0] == label)
    flows = [{"src": s, "dst": s + 8, "size": "16MB"} for s in range(8)]
    return {"seed": seed, "topology": {"kind": "leaf_spine", "leaves": 4, "spines": 4, "hosts_per_leaf": 4},
            "fabric": fabric, "transport": tr, "workload": {"kind": "flows", "flows": flows},
            "output": {"sample_interval": "0us", "plots": False}}


def fig20() -> pd.DataFrame:
    """Appendix Fig. 20: two racks send one-to-one to the other two (4 racks x 4 hosts,
    4 spines, single plane): per-flow throughput for RoCE 1 QP, RoCE 8 QPs, MRC."""
    points = [{"seed": seed, "label": label} for seed in range(1, 6) for label, _, _ in FIG20]
    return pd.DataFrame([{"seed": p["seed"], "transport": p["label"], "flow_gbps": g}
                         for p, r in runs("fig20", rack_to_rack, points) for g in flow_gbps(r.flows)])


FIGURES = {"fig1": fig1, "fig9a": fig9a, "fig9bd": fig9bd, "fig9c": fig9c, "fig10_11": fig10_11, "fig12": fig12, "fig14": fig14, "fig16": fig16, "fig17": fig17, "fig18": fig18, "fig19": fig19, "fig20": fig20, "fig22": fig22}


def main(argv: Optional[List[str]] = None) -> int:
    global JOBS
    ap = argparse.ArgumentParser(description="MRC's experiments, larger than the tests; one CSV per figure")
    ap.add_argument("names", nargs="*", metavar="FIGURE", help=f"figures to run (default all: {', '.join(FIGURES)})")
    ap.add_argument("--jobs", type=int, help="worker processes (default: one per core)")
    a = ap.parse_args(argv)
    unknown = [n for n in a.names if n not in FIGURES]
    if unknown:
        ap.error(f"unknown figure {unknown[0]!r} (allowed: {', '.join(FIGURES)})")
    JOBS = a.jobs
    OUT.mkdir(exist_ok=True)
    for name in a.names or FIGURES:
        t0 = time.time()
        df = FIGURES[name]()
        df.to_csv(OUT / f"{name}.csv", index=False)
        print(f"{name}: {len(df)} rows in {time.time() - t0:.0f} s -> {OUT / (name + '.csv')}")
        if len(df) <= 60:
            print(df.to_string(index=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
