#!/usr/bin/env python3
"""Runs MRC's section-5.2 experiments (and appendix Fig. 20) at a larger scale than the
test suite and writes one CSV per figure into ``results/``. ``plot.py`` draws them.

    python experiments/mrc/run.py            # everything, under a minute on 1 core
    python experiments/mrc/run.py fig16      # one figure

The scenarios come from ``fabricsim.papers.mrc``, the same builders the trend tests
use (tests/test_trends_mrc.py), here with more planes, hosts, sizes and seeds.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pandas as pd

import fabricsim
from fabricsim.papers import mrc
from fabricsim.papers.common import flow_gbps

OUT = Path(__file__).resolve().parent / "results"


def fig1() -> pd.DataFrame:
    """Section 2 / Fig. 1: the same 16 hosts at 800 Gb/s with full bisection, as a 3-tier
    fat-tree of 800G links or a 2-tier Clos of eight 100G planes: a 2-byte message across
    the fabric, and a permutation healthy and with one uplink of the first T0 dead from
    20 us on (seeds 1-3)."""
    rows = []
    for design in ("tiers", "planes"):
        lone = fabricsim.run(mrc.planes_vs_tiers(design, {"kind": "flows", "flows": [{"src": 0, "dst": 15, "size": "2B"}]}))
        for size in ("8MB", "32MB"):
            for seed in (1, 2, 3):
                perm = {"kind": "permutation", "size": size}
                clean = fabricsim.run(mrc.planes_vs_tiers(design, perm, seed=seed)).flows["fct_ns"].max()
                hurt = fabricsim.run(mrc.planes_vs_tiers(design, perm, fail_at_us=20, seed=seed)).flows["fct_ns"].max()
                rows.append({"design": design, "latency_us": lone.flows["fct_ns"].iloc[0] / 1e3, "size": size, "seed": seed,
                             "makespan_us": clean / 1e3, "failed_makespan_us": hurt / 1e3, "slowdown": hurt / clean})
    return pd.DataFrame(rows)


def fig9a() -> pd.DataFrame:
    """8 x 100G NIC: three NIC-T0 links fail 200 us apart, then recover."""
    r = fabricsim.run(mrc.nic_link_failures(planes=8, groups=2, hosts_per_group=4, t1_per_plane=4, size="120MB"))
    t = r.throughput[r.throughput["connection"] == 0]
    return pd.DataFrame({"time_us": t["time_ns"] / 1e3, "gbps": t["gbps"]})


def fig9bd() -> pd.DataFrame:
    """8 x 100G, one flow: four NIC links flap together (9b), or eight T0-T1 links, one per
    plane on the sender's T0s (9d), down from 200 to 600 us."""
    out = []
    for kind in ("nic", "t0_t1"):
        r = fabricsim.run(mrc.link_flaps(kind))
        t = r.throughput[r.throughput["connection"] == 0]
        out.append(pd.DataFrame({"variant": kind, "time_us": t["time_ns"] / 1e3, "gbps": t["gbps"]}))
    return pd.concat(out)


def fig9c() -> pd.DataFrame:
    """Permutation while 0..4 of every T0's 8 uplinks are dead (static SRv6)."""
    rows = []
    base = None
    for links in range(5):
        r = fabricsim.run(mrc.t0_t1_failures(links_per_t0=links, size="20MB"))
        makespan = r.flows["fct_ns"].max()
        base = base or makespan
        rows.append({"failed_uplinks_per_t0": links, "capacity_left": 1 - links / 8, "makespan_us": makespan / 1e3,
                     "relative": makespan / base, "ev_retirements": r.summary["ev_retirements"],
                     "link_drops": r.summary["drops_by_cause"]["link"]})
    return pd.DataFrame(rows)


def fig10_11() -> pd.DataFrame:
    """Fig. 10/11: a switch fails and recovers under one flow between two hosts: a T0
    of the sender's group in plane 0 (T0-local: the flow loses a plane) or a T1 of
    plane 0 (cross-T1: other T1s of the plane remain). 4 x 100G, 4 T1 per plane."""
    out = []
    for label, switch, dst in (("t0_local", "t0[0]", 1), ("t1_cross", "t1[0]", 7)):
        sc = mrc.nic_link_failures(size="60MB", planes=4, groups=2, hosts_per_group=4, t1_per_plane=4)
        sc["name"] = f"mrc-{label}"
        sc["workload"] = {"kind": "flows", "flows": [{"src": 0, "dst": dst, "size": "60MB"}]}
        sc["faults"] = [{"at": "200us", "kind": "switch_down", "switch": switch},
                        {"at": "700us", "kind": "switch_up", "switch": switch}]
        r = fabricsim.run(sc)
        t = r.throughput[r.throughput["connection"] == 0]
        out.append(pd.DataFrame({"variant": label, "time_us": t["time_ns"] / 1e3, "gbps": t["gbps"]}))
    return pd.concat(out)


def fig12() -> pd.DataFrame:
    """One EV of plane 0 drops 5..100 % of its packets from 100 us on (16 EVs, 4 planes)."""
    clean = fabricsim.run(mrc.ev_drop(None))
    ev = int(clean.paths[clean.paths["plane"] == 0].sort_values("ev").iloc[0]["ev"])
    rows = [{"loss": 0.0, "fct_us": clean.flows["fct_ns"].iloc[0] / 1e3, "relative": 1.0, "retired_at_us": None}]
    for loss in (0.05, 0.2, 0.5, 1.0):
        r = fabricsim.run(mrc.ev_drop(ev, loss=loss))
        s = r.ev_states[(r.ev_states["ev"] == ev) & (r.ev_states["state"] == "retired")]
        rows.append({"loss": loss, "fct_us": r.flows["fct_ns"].iloc[0] / 1e3,
                     "relative": r.flows["fct_ns"].iloc[0] / clean.flows["fct_ns"].iloc[0],
                     "retired_at_us": s["time_ns"].min() / 1e3 if len(s) else None})
    return pd.DataFrame(rows)


def fig14() -> pd.DataFrame:
    """Two flows forced onto one EV, with and without the ECN swap rule."""
    seed = mrc.colliding_seed()
    out = []
    for label, tr in (("ecn_swap", {"kind": "mrc", "evs": 1, "backup": 4}),
                      ("no_swap", {"kind": "mrc", "evs": 1, "backup": 4, "ecn_swap": 0})):
        r = fabricsim.run(dict(mrc.forced_collision(seed, size="40MB"), transport=tr))
        t = r.throughput.copy()
        t["variant"] = label
        out.append(t.assign(time_us=t["time_ns"] / 1e3)[["variant", "connection", "time_us", "gbps"]])
    return pd.concat(out)


def collective_grid(build, sizes) -> pd.DataFrame:
    """Bus bandwidth of the collective ``build(transport, loss, size=...)`` builds, for
    every size, transport (RoCE 1 and 16 QPs, MRC) and random loss 0 / 0.1 % / 1 %."""
    rows = []
    for size in sizes:
        for t in ("roce", "roce16", "mrc"):
            for loss in (0.0, 0.001, 0.01):
                r = fabricsim.run(build(t, loss, size=size))
                rows.append({"size": size, "transport": t, "loss": loss, "busbw_gbps": mrc.busbw(r),
                             "finished": r.summary["flows"]["unfinished"] == 0})
    return pd.DataFrame(rows)


def fig16() -> pd.DataFrame:
    """Ring all-reduce over 16 hosts (4 x 100G planes for MRC; RoCE with 1 and 16 QPs),
    sizes 8-64 MB, random loss 0 / 0.1 % / 1 % on every link."""
    return collective_grid(mrc.ring_all_reduce, ("8MB", "32MB", "64MB"))


def fig17() -> pd.DataFrame:
    """All-to-all among 16 hosts (MRC on 4 x 100G planes, RoCE with 1 and 16 QPs per
    destination on one 400G plane), 256 KB - 4 MB per pair, random loss 0 / 0.1 % / 1 %
    on every link."""
    return collective_grid(mrc.all_to_all, ("256KB", "1MB", "4MB"))


def fig22() -> pd.DataFrame:
    """15:1 incast, a flow arriving every 50 us, under three DCQCN profiles: the
    receiver's ToR queue and utilization over time (2 us samples)."""
    out = []
    for prof in mrc.DCQCN_PROFILES:
        r = fabricsim.run(mrc.dcqcn_incast(prof))
        out.append(mrc.tor_queue(r).assign(profile=prof, pfc_pauses=r.summary["pfc_pauses"]))
    return pd.concat(out)


def fig18() -> pd.DataFrame:
    """7:1 incast plus a victim in the target's rack: RoCE (PFC only), RoCE+DCQCN+PFC, MRC."""
    rows = []
    for label in ("roce_pfc_only", "roce_dcqcn", "mrc"):
        sc = mrc.incast_victim("mrc" if label == "mrc" else "roce")
        if label == "roce_pfc_only":
            sc["transport"] = {"kind": "roce", "cc": "none"}
        r = fabricsim.run(sc)
        v = mrc.victim_and_incast(r)
        incast = flow_gbps(r.flows[r.flows["workload"] == 0])
        rows.append({"variant": label, **v, "incast_min_gbps": incast.min(), "incast_max_gbps": incast.max()})
    return pd.DataFrame(rows)


def fig19() -> pd.DataFrame:
    """Appendix Fig. 19b/c: 400G NIC, four 100G T0 uplinks as the bottleneck; three fail
    one by one and recover (b), or two at once (c). 2 ms steps."""
    out = []
    for label, together in (("one_by_one", False), ("two_at_once", True)):
        r = fabricsim.run(mrc.t0_uplink_failures(size="600MB", step_us=2000, together=together))
        t = r.throughput[r.throughput["connection"] == 0]
        out.append(pd.DataFrame({"variant": label, "time_us": t["time_ns"] / 1e3, "gbps": t["gbps"]}))
    return pd.concat(out)


def fig20() -> pd.DataFrame:
    """Appendix Fig. 20: two racks send one-to-one to the other two (4 racks x 4 hosts,
    4 spines, single plane): per-flow throughput for RoCE 1 QP, RoCE 8 QPs, MRC."""
    rows = []
    for seed in range(1, 6):
        flows = [{"src": s, "dst": s + 8, "size": "16MB"} for s in range(8)]
        for label, fabric, tr in (("roce", {"pfc": True, "ecn": True}, {"kind": "roce"}),
                                  ("roce8", {"pfc": True, "ecn": True}, {"kind": "qp_scaling", "qps": 8}),
                                  ("mrc", mrc.FABRIC | {"routing": "ecmp"}, {"kind": "mrc"})):
            r = fabricsim.run({"seed": seed, "topology": {"kind": "leaf_spine", "leaves": 4, "spines": 4, "hosts_per_leaf": 4},
                               "fabric": fabric, "transport": tr, "workload": {"kind": "flows", "flows": flows},
                               "output": {"sample_interval": "0us", "plots": False}})
            for g in flow_gbps(r.flows):
                rows.append({"seed": seed, "transport": label, "flow_gbps": g})
    return pd.DataFrame(rows)


FIGURES = {"fig1": fig1, "fig9a": fig9a, "fig9bd": fig9bd, "fig9c": fig9c, "fig10_11": fig10_11, "fig12": fig12, "fig14": fig14, "fig16": fig16, "fig17": fig17, "fig18": fig18, "fig19": fig19, "fig20": fig20, "fig22": fig22}


def main(names) -> None:
    OUT.mkdir(exist_ok=True)
    for name in names or FIGURES:
        if name not in FIGURES:
            sys.exit(f"unknown figure {name!r} (allowed: {', '.join(FIGURES)})")
        t0 = time.time()
        df = FIGURES[name]()
        df.to_csv(OUT / f"{name}.csv", index=False)
        print(f"{name}: {len(df)} rows in {time.time() - t0:.0f} s -> {OUT / (name + '.csv')}")
        if len(df) <= 60:
            print(df.to_string(index=False))


if __name__ == "__main__":
    main(sys.argv[1:])
