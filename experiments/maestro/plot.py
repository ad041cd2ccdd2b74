"""Draws the figures of ``results/*.csv`` (written by ``run.py``) as PNGs beside them.

    python experiments/maestro/plot.py
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

OUT = Path(__file__).resolve().parent / "results"
LABELS = {"maestro": "Maestro (hash ports)", "maestro_random": "Maestro (random ports)",
          "qp_scaling": "QP-Scaling", "roce": "RoCE"}


def _save(fig, name: str) -> None:
    fig.tight_layout()
    fig.savefig(OUT / name, dpi=110)
    plt.close(fig)


def fig8() -> None:
    d = pd.read_csv(OUT / "fig8.csv").groupby(["sender", "paths"])["gbps"].mean().unstack(0)
    fig, ax = plt.subplots(figsize=(5, 3.5))
    for s in d.columns:
        col = d[s].dropna()
        ax.plot(col.index, col.values, marker="o" if len(col) > 1 else "s", label=LABELS.get(s, s))
    ax.axhline(40, color="grey", lw=0.8, ls=":", label="access link")
    ax.set(xlabel="paths (QPs)", ylabel="goodput, Gb/s", title="Fig. 8: 10 Gb/s core, 40 Gb/s access")
    ax.legend(fontsize=8)
    _save(fig, "fig8.png")


def fig9() -> None:
    d = pd.read_csv(OUT / "fig9.csv").groupby("chunk")[["median_us", "p99_us"]].mean()
    fig, ax = plt.subplots(figsize=(5, 3.5))
    kb = d.index / 1000
    ax.plot(kb, d["median_us"], marker="o", label="median step")
    ax.plot(kb, d["p99_us"], marker="^", label="p99 step")
    ax.set(xscale="log", xlabel="chunk, KB", ylabel="ring step time, us", title="Fig. 9: chunk size")
    ax.legend(fontsize=8)
    _save(fig, "fig9.png")


def fig10() -> None:
    d = pd.read_csv(OUT / "fig10.csv").pivot(index="seed", columns="transport", values="all_reduce_us")
    fig, ax = plt.subplots(figsize=(5, 3.5))
    for t in d.columns:
        ax.plot(d.index, d[t] / 1e3, marker="o", label=LABELS.get(t, t))
    ax.set(xlabel="seed", ylabel="all-reduce, ms", title="Fig. 10: ring all-reduce, 25 Gb/s core")
    ax.legend(fontsize=8)
    _save(fig, "fig10.png")


def fig12c() -> None:
    d = pd.read_csv(OUT / "fig12c.csv")
    d = d[d["seed"] == 1]
    fig, ax = plt.subplots(figsize=(5, 3.5))
    for i, (b, g) in enumerate(d.groupby("balancer")):
        ax.bar([q + 0.27 * (i - 1) for q in g["qp"]], g["bytes"] / 1e6, width=0.27, label=b)
    ax.set(xlabel="QP (one per spine)", ylabel="MB carried", title="Fig. 12c: 10/20/30 Gb/s background")
    ax.legend(fontsize=8)
    _save(fig, "fig12c.png")


if __name__ == "__main__":
    for f in (fig8, fig9, fig10, fig12c):
        f()
    print(f"PNGs in {OUT}")
