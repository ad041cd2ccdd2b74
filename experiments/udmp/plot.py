"""Draws the figures of ``results/*.csv`` (written by ``run.py``) as PNGs beside them.

    python experiments/udmp/plot.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

OUT = Path(__file__).resolve().parent / "results"
COLORS = {"udmp": "C0", "udmp_lb_only": "C9", "udmp_no_ooo": "C6", "udmp_no_explore": "C8", "qps32": "C1",
          "qps16": "C2", "mprdma": "C3", "mprdma_nsdi": "C5", "roce": "C7", "stellar": "C4"}
LABELS = {"udmp": "UDMP", "udmp_lb_only": "UDMP LB only", "udmp_no_ooo": "UDMP w/o OOO-aware",
          "udmp_no_explore": "UDMP explore=0", "qps32": "QP-Scaling-32", "qps16": "QP-Scaling-16",
          "mprdma": "MPRDMA", "mprdma_nsdi": "MPRDMA (-1/2 per mark)", "roce": "RoCE",
          "stellar": "STELLAR"}


def _save(fig, name: str) -> None:
    fig.tight_layout()
    fig.savefig(OUT / name, dpi=110)
    plt.close(fig)
    print(OUT / name)


def token_pool() -> None:
    c = pd.read_csv(OUT / "token_pool_cycles.csv")
    s = pd.read_csv(OUT / "token_pool.csv")
    fig, axes = plt.subplots(1, 3, figsize=(14, 3.6))
    for ax, case in zip(axes, ("walkthrough", "greedy")):
        d = c[c["case"] == case]
        ax.bar(d["cycle"] - 0.2, d["fast"], 0.4, label="path 1 (RTT 2 units)")
        ax.bar(d["cycle"] + 0.2, d["slow"], 0.4, label="path 2 (RTT 3 units from cycle 0)")
        ax.axvline(-0.5, color="k", lw=0.8, ls="--")
        ax.set_title(f"Fig. 3, seed 1, onset {d['onset_ns'].iloc[0] / 1e3:.2f} us ({case})")
        ax.set_xlabel("6-unit cycle")
        ax.set_ylabel("packets")
        ax.legend(fontsize=7)
    frac = s.assign(share=s["fast"] / (s["fast"] + s["slow"]))
    for seed, d in frac.groupby("seed"):
        axes[2].plot((d["onset_ns"] - d["onset_ns"].min()) / 4700.8, d["share"], "o-", ms=3, label=f"seed {seed}")
    axes[2].axhline(4 / 6, color="k", ls=":", lw=1, label="paper 4:2")
    axes[2].set_xlabel("onset phase (units)")
    axes[2].set_ylabel("fast path's share, 10 cycles")
    axes[2].set_ylim(0.5, 1.02)
    axes[2].legend(fontsize=6, ncol=2)
    _save(fig, "token_pool.png")


def collision() -> None:
    fig, axes = plt.subplots(1, 4, figsize=(16, 3.6), sharey=True)
    for ax, name in zip(axes, ("udmp", "mprdma", "stellar", "qps16")):
        p = OUT / f"collision_series_{name}_100Gbps.csv"
        if not p.exists():
            continue
        d = pd.read_csv(p).select_dtypes("number")
        d = d.assign(t=d["time_us"]).rolling(3, center=True, on="t").mean()
        ax.plot(d["t"], d["flow1_gbps"], label="flow 1 total", color="k")
        ax.plot(d["t"], d["flow1_shared_gbps"], label="flow 1 on flow 2's spine")
        ax.plot(d["t"], d["flow1_other_gbps"], label="flow 1 on the other spine")
        ax.plot(d["t"], d["flow2_gbps"], label="flow 2 (RoCE)", ls="--")
        ax.axvline(400, color="grey", lw=0.8)
        ax.set_title(f"Fig. 1: flow 1 = {LABELS[name]}")
        ax.set_xlabel("time (us)")
        ax.set_xlim(0, 1200)
    axes[0].set_ylabel("Gb/s (30 us average)")
    axes[0].legend(fontsize=7)
    _save(fig, "collision.png")


def incast() -> None:
    names = ("udmp", "mprdma", "stellar", "roce")
    fig, axes = plt.subplots(1, len(names), figsize=(16, 3.6), sharey=True)
    for ax, name in zip(axes, names):
        p = OUT / f"incast_series_{name}.csv"
        if not p.exists():
            continue
        d = pd.read_csv(p)
        for c in [c for c in d.columns if c.startswith("flow")]:
            ax.plot(d["time_ns"] / 1e3, d[c].rolling(3, center=True).mean(), label=c.replace("flow", "sender "))
        for k, share in enumerate((1, 2, 3, 2, 1)):
            ax.hlines(96.47 / share, k * 300, (k + 1) * 300, color="k", ls=":", lw=1)
        ax.set_title(f"Fig. 4c: {LABELS[name]}")
        ax.set_xlabel("time (us)")
    axes[0].set_ylabel("Gb/s (30 us average)")
    axes[0].legend(fontsize=7)
    _save(fig, "incast.png")


def permutation() -> None:
    d = pd.read_csv(OUT / "permutation.csv")
    sizes = {"2MB": 0, "8MB": 1, "16MB": 2, "32MB": 3}
    scales = list(dict.fromkeys(d["scale"]))
    groups = sorted(dict.fromkeys(zip(d["scale"], d["size"])), key=lambda g: (scales.index(g[0]), sizes.get(g[1], 9)))
    names = [n for n in ("udmp", "qps32", "qps16", "mprdma", "roce", "mprdma_nsdi", "udmp_lb_only")
             if n in set(d["transport"])]
    fig, ax = plt.subplots(figsize=(max(8, 1.3 * len(groups)), 4.2))
    w = 0.8 / len(names)
    for i, n in enumerate(names):
        for j, g in enumerate(groups):
            v = d[(d["scale"] == g[0]) & (d["size"] == g[1]) & (d["transport"] == n)]["p1_gbps"]
            x = j + (i - len(names) / 2 + 0.5) * w
            ax.bar(x, v.mean(), w, color=COLORS[n], label=LABELS[n] if j == 0 else None)
            ax.plot([x] * len(v), v, "k.", ms=2)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels([f"{s}\n{z}" for s, z in groups], fontsize=7)
    ax.set_ylabel("P99 (1st-percentile) flow throughput, Gb/s")
    ax.set_title("Fig. 6a: permutation on non-blocking fat-trees (bars: mean over seeds, dots: seeds)")
    ax.set_ylim(0, 120)
    ax.legend(fontsize=7, ncol=6, loc="upper center")
    _save(fig, "permutation.png")


def decay() -> None:
    d = pd.read_csv(OUT / "decay.csv")
    fig, ax = plt.subplots(figsize=(7, 3.8))
    for n, g in d.groupby("transport"):
        ax.plot(g["time_ns"] / 1e3, g["p50_gbps"], color=COLORS[n], label=f"{LABELS[n]} median")
        ax.fill_between(g["time_ns"] / 1e3, g["p1_gbps"], g["p99_gbps"], color=COLORS[n], alpha=0.15)
    ax.axhline(96.47 / 2, color="k", ls=":", lw=1, label="half line rate")
    ax.set_xlabel("time (us)")
    ax.set_ylabel("per-flow Gb/s (band: P1-P99)")
    ax.set_title("48 MB permutation, 64 hosts: UDMP's rate drifts toward L/2")
    ax.legend(fontsize=7)
    _save(fig, "decay.png")


def anomaly() -> None:
    d = pd.read_csv(OUT / "anomaly.csv")
    fig, axes = plt.subplots(1, 2, figsize=(13, 3.8))
    perm = d[d["setting"] == "permutation-64h"].groupby(["transport", "condition"])["mean_fct_norm"].mean().unstack()
    perm.plot.bar(ax=axes[0], logy=True)
    axes[0].set_title("Fig. 7, permutation (64 hosts, 8 MB): mean FCT / normal")
    axes[0].axhline(1, color="k", lw=0.8)
    single = d[(d["setting"] == "single-flow")]
    single = single.assign(case=single["spines"].astype(int).astype(str) + " spines " + single["size"])
    piv = single[single["condition"] == "delay"].pivot_table(index="case", columns="transport", values="mean_fct_norm")
    piv.plot.bar(ax=axes[1], logy=True)
    axes[1].set_title("Fig. 7, one flow, 1 ms delay on one spine path: FCT / normal")
    axes[1].axhline(1, color="k", lw=0.8)
    for ax in axes:
        ax.tick_params(axis="x", labelrotation=0, labelsize=7)
        ax.legend(fontsize=7)
    _save(fig, "anomaly.png")


def main() -> int:
    for f in (token_pool, collision, incast, permutation, decay, anomaly):
        try:
            f()
        except FileNotFoundError as e:
            print(f"skip {f.__name__}: {e}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
