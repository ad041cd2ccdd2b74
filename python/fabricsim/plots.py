"""The standard plots: FCT CDF, per-flow throughput, queue depth of the busiest ports."""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Iterator, List

import numpy as np

if TYPE_CHECKING:
    from .results import Result


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


@contextmanager
def _figure(path: Path) -> Iterator:
    """One standard plot: yields the axes to draw on, then adds the grid and writes
    ``path``."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    try:
        yield ax
        ax.grid(alpha=0.3)
        fig.tight_layout()
        fig.savefig(path, dpi=110)
    finally:
        plt.close(fig)


def fct_cdf(r: "Result", path: Path) -> Path:
    """CDF of flow completion times, one curve per workload."""
    with _figure(path) as ax:
        done = r.flows.dropna(subset=["fct_ns"])
        for w, g in done.groupby("workload"):
            x = np.sort(g["fct_ns"].to_numpy(dtype=float) / 1e3)
            ax.step(x, np.arange(1, len(x) + 1) / len(x), where="post", label=f"workload {w}")
        ax.set_xlabel("flow completion time (us)")
        ax.set_ylabel("fraction of flows")
        ax.set_title(f"{r.summary['name']}: FCT CDF ({len(done)}/{len(r.flows)} flows finished)")
        if done["workload"].nunique() > 1:
            ax.legend()
    return path


def throughput(r: "Result", path: Path) -> Path:
    """Average throughput of every flow (size / FCT), sorted, against the line rate."""
    with _figure(path) as ax:
        done = r.flows.dropna(subset=["fct_ns"])
        gbps = np.sort(done["size_bytes"].to_numpy(dtype=float) * 8 / done["fct_ns"].to_numpy(dtype=float))
        ax.plot(np.arange(len(gbps)), gbps, marker=".", linestyle="none")
        ax.set_xlabel("flows, sorted")
        ax.set_ylabel("average throughput (Gb/s)")
        ax.set_title(f"{r.summary['name']}: per-flow throughput")
        ax.set_ylim(bottom=0)
    return path


def queues(r: "Result", path: Path, top: int = 6) -> Path:
    """Largest data-queue depth per sampling interval of the busiest ports."""
    with _figure(path) as ax:
        p = r.ports
        if len(p):
            busiest = p.groupby("port", observed=True)["queue_max_bytes"].max().sort_values(ascending=False)
            for name in busiest.index[:top]:
                if busiest[name] <= 0:
                    break
                g = p[p["port"] == name]
                ax.step(g["time_ns"] / 1e3, g["queue_max_bytes"] / 1e3, where="post", label=str(name))
            if busiest.max() > 0:
                ax.legend(fontsize=7)
        ax.set_xlabel("time (us)")
        ax.set_ylabel("queue depth, max per interval (KB)")
        ax.set_title(f"{r.summary['name']}: busiest ports")
    return path


def path_load(r: "Result", path: Path, top: int = 4) -> Path:
    """Packets per path (entropy value) of the busiest multipath connections, sorted:
    a flat curve is an even spray."""
    with _figure(path) as ax:
        p = r.paths
        busiest = p.groupby("connection")["packets"].sum().sort_values(ascending=False).index[:top]
        for c in busiest:
            g = np.sort(p[p["connection"] == c]["packets"].to_numpy())[::-1]
            ax.plot(np.arange(len(g)), g, marker=".", label=f"connection {c} ({len(g)} paths)")
        ax.set_xlabel("paths, busiest first")
        ax.set_ylabel("packets sent")
        ax.set_title(f"{r.summary['name']}: per-path load")
        ax.set_ylim(bottom=0)
        ax.legend(fontsize=7)
    return path


STATES = ("active", "avoided", "retired", "probing", "backup")


def ev_states(r: "Result", path: Path) -> Path:
    """How many entropy values are in each state over time (all connections)."""
    with _figure(path) as ax:
        log = r.ev_states.sort_values("time_ns", kind="stable")
        current = {}
        counts = {s: 0 for s in STATES}
        times, series = [], {s: [] for s in STATES}
        for t, c, ev, state in zip(log["time_ns"], log["connection"], log["ev"], log["state"]):
            old = current.get((c, ev))
            if old is not None:
                counts[old] -= 1
            counts[state] += 1
            current[(c, ev)] = state
            times.append(t / 1e3)
            for s in STATES:
                series[s].append(counts[s])
        for s in STATES:
            if any(series[s]):
                ax.step(times, series[s], where="post", label=s)
        ax.set_xlabel("time (us)")
        ax.set_ylabel("entropy values")
        ax.set_title(f"{r.summary['name']}: EV states over time")
        ax.legend(fontsize=7)
    return path


def ooo_cdf(r: "Result", path: Path) -> Path:
    """CDF of the out-of-order degree of packets at multipath receivers."""
    with _figure(path) as ax:
        o = r.ooo
        cum = np.cumsum(o["packets"].to_numpy(dtype=float))
        ax.step(o["degree"].to_numpy() + 1, cum / cum[-1], where="post")
        ax.set_xscale("log")
        ax.set_xlabel("out-of-order degree + 1 (PSN - next expected PSN)")
        ax.set_ylabel("fraction of packets")
        ax.set_title(f"{r.summary['name']}: out-of-order degree (max {int(o['degree'].max())})")
    return path


def throughput_time(r: "Result", path: Path, top: int = 8) -> Path:
    """Throughput over time of the connections that moved the most bytes."""
    with _figure(path) as ax:
        t = r.throughput
        busiest = t.groupby("connection")["bytes"].sum().sort_values(ascending=False).index[:top]
        for c in busiest:
            g = t[t["connection"] == c]
            ax.step(g["time_ns"] / 1e3, g["gbps"], where="post", label=f"connection {c}")
        ax.set_xlabel("time (us)")
        ax.set_ylabel("throughput (Gb/s)")
        ax.set_title(f"{r.summary['name']}: throughput over time")
        ax.set_ylim(bottom=0)
        ax.legend(fontsize=7)
    return path


def draw_all(r: "Result", folder: Path) -> List[Path]:
    """Draws every standard plot into ``folder``; the multipath ones only when their
    tables have rows."""
    folder = Path(folder)
    out = [fct_cdf(r, folder / "fct_cdf.png"), throughput(r, folder / "throughput.png"), queues(r, folder / "queues.png")]
    if len(r.paths):
        out.append(path_load(r, folder / "paths.png"))
    if len(r.ev_states):
        out.append(ev_states(r, folder / "ev_states.png"))
    if len(r.ooo):
        out.append(ooo_cdf(r, folder / "ooo_cdf.png"))
    if len(r.throughput):
        out.append(throughput_time(r, folder / "throughput_time.png"))
    return out
