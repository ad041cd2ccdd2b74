"""The standard plots: FCT CDF, per-flow throughput, queue depth of the busiest ports.

Titles, labels and legends that contain names (the scenario's, ports') are drawn as
literal text: a ``$`` in a scenario name is not matplotlib math text (which could fail
to parse after the run, or silently draw ``$5 vs $10`` as math).
"""

from __future__ import annotations

import math
import re
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np

if TYPE_CHECKING:
    from .results import Result


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


#: Text properties of user-given text: never math text, never handed to TeX.
LITERAL: Dict[str, Any] = {"parse_math": False, "usetex": False}


def _title(ax, r: "Result", what: str) -> None:
    """``<scenario name>: <what>`` as the title, literally."""
    ax.set_title(f"{r.summary['name']}: {what}", **LITERAL)


def _legend(ax, **kwargs) -> None:
    """A legend whose entries (port names and such) are literal text."""
    for t in ax.legend(**kwargs).get_texts():
        t.set_parse_math(False)
        t.set_usetex(False)


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


_DURATION = re.compile(r"\s*([0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?)\s*(ps|ns|us|µs|μs|ms|s)\s*", re.I)
_NS = {"ps": 1e-3, "ns": 1.0, "us": 1e3, "µs": 1e3, "μs": 1e3, "ms": 1e6, "s": 1e9}


def sample_interval_ns(r: "Result") -> Optional[float]:
    """The run's ``output.sample_interval`` in ns (default 10 us), None if off or not
    understood."""
    output = (r.summary.get("scenario") or {}).get("output") or {}
    text = output.get("sample_interval", "10us") if isinstance(output, dict) else "10us"
    m = _DURATION.fullmatch(text) if isinstance(text, str) else None
    if not m:
        return None
    ns = float(m.group(1)) * _NS[m.group(2).lower()]
    return ns if ns > 0 else None


def interval_steps(time_ns: Sequence[float], values: Sequence[float], interval_ns: Optional[float]) -> Tuple[np.ndarray, np.ndarray]:
    """Points for ``ax.step(x, y, where="pre")`` of a time series whose ``time_ns`` is
    the END of each sampling interval: each value is drawn over its own interval
    ``(time_ns - interval, time_ns]``, from the start of the first one, and a stretch
    without rows (nothing happened there) is drawn at 0."""
    x: List[float] = []
    y: List[float] = []
    prev = None
    for t, v in zip(time_ns, values):
        t = float(t)
        if interval_ns is None:
            start = t if prev is None else prev
        else:
            # Intervals end on multiples of the interval, except the run's last one,
            # which ends with the run: either way it starts at the multiple before.
            start = max((math.ceil(t / interval_ns - 1e-9) - 1) * interval_ns, 0.0)
        if prev is not None:
            start = max(start, prev)
        if prev is None or start > prev:
            x.append(start)
            y.append(0.0)
        x.append(t)
        y.append(float(v))
        prev = t
    return np.asarray(x), np.asarray(y)


def fct_cdf(r: "Result", path: Path) -> Path:
    """CDF of flow completion times, one curve per workload."""
    with _figure(path) as ax:
        done = r.flows.dropna(subset=["fct_ns"])
        for w, g in done.groupby("workload"):
            x = np.sort(g["fct_ns"].to_numpy(dtype=float) / 1e3)
            ax.step(x, np.arange(1, len(x) + 1) / len(x), where="post", label=f"workload {w}")
        ax.set_xlabel("flow completion time (us)")
        ax.set_ylabel("fraction of flows")
        _title(ax, r, f"FCT CDF ({len(done)}/{len(r.flows)} flows finished)")
        if done["workload"].nunique() > 1:
            _legend(ax)
    return path


def throughput(r: "Result", path: Path) -> Path:
    """Average throughput of every flow (size / FCT), sorted, against the line rate."""
    with _figure(path) as ax:
        done = r.flows.dropna(subset=["fct_ns"])
        gbps = np.sort(done["size_bytes"].to_numpy(dtype=float) * 8 / done["fct_ns"].to_numpy(dtype=float))
        ax.plot(np.arange(len(gbps)), gbps, marker=".", linestyle="none")
        ax.set_xlabel("flows, sorted")
        ax.set_ylabel("average throughput (Gb/s)")
        _title(ax, r, "per-flow throughput")
        ax.set_ylim(bottom=0)
    return path


def queues(r: "Result", path: Path, top: int = 6) -> Path:
    """Largest data-queue depth per sampling interval of the busiest ports (each value
    over its interval: ``time_ns`` is the end of the interval)."""
    with _figure(path) as ax:
        p = r.ports
        if len(p):
            interval = sample_interval_ns(r)
            busiest = p.groupby("port", observed=True)["queue_max_bytes"].max().sort_values(ascending=False)
            for name in busiest.index[:top]:
                if busiest[name] <= 0:
                    break
                g = p[p["port"] == name]
                x, y = interval_steps(g["time_ns"], g["queue_max_bytes"], interval)
                ax.step(x / 1e3, y / 1e3, where="pre", label=str(name))
            if busiest.max() > 0:
                _legend(ax, fontsize=7)
        ax.set_xlabel("time (us)")
        ax.set_ylabel("queue depth, max per interval (KB)")
        _title(ax, r, "busiest ports")
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
        _title(ax, r, "per-path load")
        ax.set_ylim(bottom=0)
        _legend(ax, fontsize=7)
    return path


STATES = ("active", "avoided", "retired", "probing", "backup")


def ev_states(r: "Result", path: Path) -> Path:
    """How many entropy values are in each state over time (all connections); a
    state change's ``time_ns`` is when it happened, so counts hold from then on."""
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
        _title(ax, r, "EV states over time")
        _legend(ax, fontsize=7)
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
        _title(ax, r, f"out-of-order degree (max {int(o['degree'].max())})")
    return path


def throughput_time(r: "Result", path: Path, top: int = 8) -> Path:
    """Throughput over time of the connections that moved the most bytes (each value
    over its interval: ``time_ns`` is the end of the interval)."""
    with _figure(path) as ax:
        t = r.throughput
        interval = sample_interval_ns(r)
        busiest = t.groupby("connection")["bytes"].sum().sort_values(ascending=False).index[:top]
        for c in busiest:
            g = t[t["connection"] == c]
            x, y = interval_steps(g["time_ns"], g["gbps"], interval)
            ax.step(x / 1e3, y, where="pre", label=f"connection {c}")
        ax.set_xlabel("time (us)")
        ax.set_ylabel("throughput (Gb/s)")
        _title(ax, r, "throughput over time")
        ax.set_ylim(bottom=0)
        _legend(ax, fontsize=7)
    return path


def fct_slowdown(r: "Result", path: Path, bins: int = 20) -> Path:
    """FCT slowdown (median, 95th and 99th percentile) against flow size, in bins of
    equally many flows (the plot of HPCC's and Parsimon's evaluations)."""
    from .fct import slowdown_by_size

    t = slowdown_by_size(r.flows, bins=bins)
    with _figure(path) as ax:
        x = (t["min_bytes"] + t["max_bytes"]) / 2
        for col, style in (("p50", "-"), ("p95", "--"), ("p99", ":")):
            ax.plot(x, t[col], style, marker=".", label=col)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("flow size (bytes)")
        ax.set_ylabel("FCT slowdown")
        _title(ax, r, "FCT slowdown by flow size")
        _legend(ax)
    return path


def draw_all(r: "Result", folder: Path) -> List[Path]:
    """Draws every standard plot into ``folder``; the queue and multipath ones only when
    their tables have rows."""
    folder = Path(folder)
    out = [fct_cdf(r, folder / "fct_cdf.png"), throughput(r, folder / "throughput.png")]
    if len(r.ports):
        # Not with port sampling off (output.sample_interval = "0us"): an empty chart.
        out.append(queues(r, folder / "queues.png"))
    if len(r.paths):
        out.append(path_load(r, folder / "paths.png"))
    if len(r.ev_states):
        out.append(ev_states(r, folder / "ev_states.png"))
    if len(r.ooo):
        out.append(ooo_cdf(r, folder / "ooo_cdf.png"))
    if len(r.throughput):
        out.append(throughput_time(r, folder / "throughput_time.png"))
    if len(r.summary.get("slowdown_by_size") or []) >= 3:
        # Flows of many sizes (a traffic mix): slowdown against size.
        out.append(fct_slowdown(r, folder / "fct_slowdown.png"))
    return out
