"""The standard plots: FCT CDF, per-flow throughput, queue depth of the busiest ports."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, List

import numpy as np

if TYPE_CHECKING:
    from .results import Result


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def fct_cdf(r: "Result", path: Path) -> Path:
    """CDF of flow completion times, one curve per workload."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    done = r.flows.dropna(subset=["fct_ns"])
    for w, g in done.groupby("workload"):
        x = np.sort(g["fct_ns"].to_numpy(dtype=float) / 1e3)
        ax.step(x, np.arange(1, len(x) + 1) / len(x), where="post", label=f"workload {w}")
    ax.set_xlabel("flow completion time (us)")
    ax.set_ylabel("fraction of flows")
    ax.set_title(f"{r.summary['name']}: FCT CDF ({len(done)}/{len(r.flows)} flows finished)")
    ax.grid(alpha=0.3)
    if done["workload"].nunique() > 1:
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def throughput(r: "Result", path: Path) -> Path:
    """Average throughput of every flow (size / FCT), sorted, against the line rate."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    done = r.flows.dropna(subset=["fct_ns"])
    gbps = np.sort(done["size_bytes"].to_numpy(dtype=float) * 8 / done["fct_ns"].to_numpy(dtype=float))
    ax.plot(np.arange(len(gbps)), gbps, marker=".", linestyle="none")
    ax.set_xlabel("flows, sorted")
    ax.set_ylabel("average throughput (Gb/s)")
    ax.set_title(f"{r.summary['name']}: per-flow throughput")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def queues(r: "Result", path: Path, top: int = 6) -> Path:
    """Largest data-queue depth per sampling interval of the busiest ports."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
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
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def draw_all(r: "Result", folder: Path) -> List[Path]:
    """Draws every standard plot into ``folder``."""
    folder = Path(folder)
    return [fct_cdf(r, folder / "fct_cdf.png"), throughput(r, folder / "throughput.png"), queues(r, folder / "queues.png")]
