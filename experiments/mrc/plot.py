#!/usr/bin/env python3
"""Draws the figures of ``run.py``'s CSVs into ``results/*.png``."""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

RES = Path(__file__).resolve().parent / "results"


def save(fig, name):
    fig.tight_layout()
    fig.savefig(RES / f"{name}.png", dpi=110)
    plt.close(fig)
    print(RES / f"{name}.png")


def fig1(d):
    fig, ax = plt.subplots(figsize=(5.5, 3.2))
    g = d.groupby(["size", "design"])["slowdown"].mean().unstack()
    g = g.loc[[s for s in ("8MB", "32MB") if s in g.index]]
    g.plot.bar(ax=ax, rot=0)
    lat = d.groupby("design")["latency_us"].first()
    ax.set(xlabel="permutation size per host", ylabel="makespan with one T0 uplink dead / healthy",
           title=f"Fig. 1: 3-tier 800G ({lat['tiers']:.1f} us) vs 8 x 100G planes ({lat['planes']:.1f} us)")
    save(fig, "fig1")


def fig9a(d):
    fig, ax = plt.subplots(figsize=(6, 3.2))
    ax.plot(d["time_us"], d["gbps"])
    for i, t in enumerate((200, 400, 600)):
        ax.axvline(t, color="r", ls=":", lw=1)
        ax.axvline(t + 600, color="g", ls=":", lw=1)
    ax.set(xlabel="time (us)", ylabel="Gb/s", title="Fig. 9a: NIC-T0 links down (red) and up (green), 8 x 100G")
    save(fig, "fig9a")


def fig9c(d):
    fig, ax = plt.subplots(figsize=(5, 3.2))
    ax.plot(d["failed_uplinks_per_t0"], d["relative"], "o-")
    ax.set(xlabel="dead uplinks of every T0 (of 8)", ylabel="permutation makespan / healthy",
           title="Fig. 9c: many T0-T1 links down")
    save(fig, "fig9c")


def fig10_11(d):
    fig, ax = plt.subplots(figsize=(6, 3.2))
    for v, g in d.groupby("variant"):
        ax.plot(g["time_us"], g["gbps"], label=v)
    ax.axvline(200, color="r", ls=":", lw=1)
    ax.axvline(700, color="g", ls=":", lw=1)
    ax.set(xlabel="time (us)", ylabel="Gb/s", title="Fig. 10/11: a T0 or T1 switch down (red) and up (green)")
    ax.legend()
    save(fig, "fig10_11")


def fig12(d):
    fig, ax = plt.subplots(figsize=(5, 3.2))
    ax.plot(d["loss"] * 100, d["relative"], "o-")
    ax.set(xlabel="drop rate of one EV (%)", ylabel="FCT / no drop", ylim=(0.95, 1.1), title="Fig. 12: one EV drops packets")
    save(fig, "fig12")


def fig14(d):
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.2), sharey=True)
    for ax, (v, g) in zip(axes, d.groupby("variant")):
        for c, h in g.groupby("connection"):
            ax.plot(h["time_us"], h["gbps"], label=f"flow {c + 1}")
        ax.set(title=f"Fig. 14: two flows on one EV ({v})", xlabel="time (us)")
        ax.legend()
    axes[0].set_ylabel("Gb/s")
    save(fig, "fig14")


def collective_bars(d, fig_no: int, what: str):
    sizes = list(dict.fromkeys(d["size"]))
    fig, axes = plt.subplots(1, len(sizes), figsize=(4 * len(sizes), 3.2), sharey=True)
    for ax, s in zip(axes, sizes):
        g = d[d["size"] == s].pivot(index="loss", columns="transport", values="busbw_gbps")
        g.index = [f"{x * 100:g}%" for x in g.index]
        g[["roce", "roce16", "mrc"]].plot.bar(ax=ax, rot=0, legend=False)
        ax.set(title=f"Fig. {fig_no}: {what} {s}", xlabel="random loss", ylabel="bus bandwidth (Gb/s)")
    # One legend, where the first (smallest) size leaves room: on every panel it hid
    # the tallest bars of the larger sizes.
    axes[0].legend(title="transport", loc="upper right")
    save(fig, f"fig{fig_no}")


def fig16(d):
    collective_bars(d, 16, "ring all-reduce")


def fig17(d):
    collective_bars(d, 17, "all-to-all")


def fig18(d):
    fig, ax = plt.subplots(figsize=(5, 3.2))
    ax.bar(d["variant"], d["victim_gbps"])
    ax.set(ylabel="victim Gb/s", title="Fig. 18/21: victim beside a 7:1 incast")
    save(fig, "fig18")


def fig20(d):
    fig, ax = plt.subplots(figsize=(5, 3.2))
    for t, g in d.groupby("transport"):
        v = g["flow_gbps"].sort_values().to_numpy()
        ax.plot(v, [i / len(v) for i in range(1, len(v) + 1)], label=t, drawstyle="steps-post")
    ax.set(xlabel="flow throughput (Gb/s)", ylabel="CDF", title="Fig. 20: permutation, 5 seeds")
    ax.legend()
    save(fig, "fig20")


def fig9bd(d):
    fig, ax = plt.subplots(figsize=(5, 3.2))
    for v, g in d.groupby("variant", sort=False):
        ax.plot(g["time_us"], g["gbps"], label={"nic": "9b: 4 NIC links", "t0_t1": "9d: 8 T0-T1 links"}[v])
    ax.axvspan(200, 600, color="0.9")
    ax.set(xlabel="time (us)", ylabel="Gb/s", title="Fig. 9b/9d: links flap together (shaded)")
    ax.legend()
    save(fig, "fig9bd")


def fig19(d):
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.2), sharey=True)
    for ax, (v, g) in zip(axes, d.groupby("variant", sort=False)):
        ax.plot(g["time_us"], g["gbps"])
        ax.set(title=f"Fig. 19: T0 uplinks fail ({v.replace('_', ' ')})", xlabel="time (us)")
    axes[0].set_ylabel("Gb/s")
    save(fig, "fig19")


def fig22(d):
    profiles = list(dict.fromkeys(d["profile"]))
    fig, axes = plt.subplots(1, len(profiles), figsize=(4 * len(profiles), 3.2), sharey=True)
    for ax, p in zip(axes, profiles):
        g = d[d["profile"] == p]
        ax.plot(g["time_us"], g["queue_kb"] / 1e3)
        util = g[g["time_us"] > 20]["utilization"].mean()
        ax.set(title=f"Fig. 22: {p} ({util:.0%} busy, {g['pfc_pauses'].iloc[0]} PAUSE)", xlabel="time (us)")
        ax.set_yscale("symlog", linthresh=0.01)
    axes[0].set_ylabel("ToR queue to the receiver (MB)")
    save(fig, "fig22")


if __name__ == "__main__":
    for name, draw in list(globals().items()):
        if name.startswith("fig") and (RES / f"{name}.csv").exists():
            draw(pd.read_csv(RES / f"{name}.csv"))
