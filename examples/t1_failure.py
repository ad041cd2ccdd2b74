"""What happens to an all-reduce if a T1 switch dies: MRC against RoCE, on 8 planes
against 4.

A ring all-reduce over 16 hosts of a multi-plane two-tier Clos (4 groups, 4 T1 switches
per plane). Every host has 800 Gb/s: 4 NIC ports of 200 Gb/s (4 planes) or 8 of
100 Gb/s (8 planes). Each configuration runs healthy and with switch ``t1[0]`` (in plane
0) going down 100 us into the collective, for three transports:

- ``mrc``: MRC on its lossy SRv6 fabric (trimming, ECN, no PFC). It retires the EVs
  whose packets vanish into the dead switch and sprays over the rest.
- ``roce16``: QP-Scaling, 16 RoCE QPs per ring neighbour spread over the NIC ports, on
  a lossless ECMP fabric (PFC, DCQCN), with the deployed retransmission timeout
  (fabricsim's default: InfiniBand's local ACK timeout 4.096 us x 2^14, 67 ms). ECMP
  sends part of the traffic into the dead switch until the routing tables are
  recomputed, `reroute_after` (10 ms) after the failure; the QPs whose packets died
  there wait out the timeout before they resend.
- ``roce16-4ms``: the same with a 4 ms timeout: a QP survives until routing converges
  because 7 timeouts of 4 ms outlast it, and resends sooner.
- ``roce16-1ms``: with a 1 ms timeout 7 timeouts take 7 ms, so QPs on the dead switch
  give up before routing converges and the collective never finishes.

Prints one row per configuration and writes a plot of the delivered throughput over
time of the runs with the failure::

    python examples/t1_failure.py [--size 64MB] [--out t1_failure.png]
"""

from __future__ import annotations

import argparse
from typing import Any, Dict, List, Optional

import numpy as np

import fabricsim
from fabricsim.papers import mrc

#: NIC ports per host and their rate: 800 Gb/s per host either way.
PLANES = ((4, "200Gbps"), (8, "100Gbps"))
#: Transports compared: (name, transport of `mrc.ring_all_reduce`, overrides).
TRANSPORTS = (("mrc", "mrc", {}), ("roce16", "roce16", {"rto": "67.108864ms"}), ("roce16-4ms", "roce16", {"rto": "4ms"}),
              ("roce16-1ms", "roce16", {"rto": "1ms"}))
FAILURE = {"at": "100us", "kind": "switch_down", "switch": "t1[0]"}
#: Throughput sample interval.
SAMPLE_US = 20


def scenario(transport: str, overrides: Dict[str, Any], planes: int, rate: str, size: str,
             fail: bool) -> Dict[str, Any]:
    """The ring all-reduce of one configuration, with or without the failure."""
    sc = mrc.ring_all_reduce(transport, 0.0, hosts=16, size=size, planes=planes, rate=rate)
    sc["transport"].update(overrides)
    sc["output"] = {"sample_interval": f"{SAMPLE_US}us", "plots": False}
    if fail:
        sc["faults"] = [dict(FAILURE)]
    return sc


def outcome(r: fabricsim.Result) -> str:
    """The collective's time and bus bandwidth, or why it did not finish."""
    s = r.summary
    if s["flows"]["unfinished"]:
        return f"not finished: {s['failed_connections']} QPs gave up"
    c = r.collectives.iloc[0]
    return f"{c['duration_ns'] / 1e3:8.0f} us {c['busbw_gbps']:6.1f} Gb/s"


def compare(size: str) -> List[Dict[str, Any]]:
    """Every configuration healthy and with the failure: one row each, with both
    results (``healthy``, ``failed``)."""
    rows = []
    for planes, rate in PLANES:
        for name, transport, overrides in TRANSPORTS:
            healthy = fabricsim.run(scenario(transport, overrides, planes, rate, size, False))
            failed = fabricsim.run(scenario(transport, overrides, planes, rate, size, True))
            finished = not failed.summary["flows"]["unfinished"]
            slowdown = (failed.collectives.iloc[0]["duration_ns"] / healthy.collectives.iloc[0]["duration_ns"]
                        if finished else None)
            rows.append({"planes": planes, "rate": rate, "transport": name, "healthy": healthy,
                         "failed": failed, "slowdown": slowdown})
    return rows


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    # A plain number is bytes, as in scenario files.
    ap.add_argument("--size", default="64MB", type=lambda s: int(s) if s.isdigit() else s,
                    help="all-reduce size per host, e.g. 64MB or a number of bytes (default 64MB)")
    ap.add_argument("--out", default="t1_failure.png", help="plot file (default t1_failure.png)")
    args = ap.parse_args(argv)

    try:
        rows = compare(args.size)
    except fabricsim.ScenarioError as e:
        ap.error(str(e))
    print(f"{'planes':<12}{'transport':<12}{'healthy':<26}{'t1[0] down at 100 us':<34}slowdown")
    for w in rows:
        slowdown = "-" if w["slowdown"] is None else f"{w['slowdown']:.2f}x"
        config = f"{w['planes']} x {w['rate']}"
        print(f"{config:<12}{w['transport']:<12}{outcome(w['healthy']):<26}"
              f"{outcome(w['failed']):<34}{slowdown}")
    plot(rows, args.out)
    print(f"wrote {args.out}")
    return 0


def plot(rows: List[Dict[str, Any]], path: str) -> None:
    """Delivered throughput over time (all connections) of the runs with the failure,
    one panel per plane count."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(PLANES), figsize=(11, 4), sharey=True)
    for ax, (planes, rate) in zip(axes, PLANES):
        for w in rows:
            if w["planes"] != planes:
                continue
            name, r = w["transport"], w["failed"]
            # Intervals in which nothing was delivered have no rows: fill them in.
            t = r.throughput.groupby("time_ns")["bytes"].sum()
            step = SAMPLE_US * 1000
            grid = np.arange(step, r.summary["sim_time_ns"] + step, step)
            t = t.reindex(grid, fill_value=0)
            ax.plot(t.index / 1e3, t.values * 8 / step, label=name, linestyle="--" if name.endswith("1ms") else "-")
        ax.axvline(100, color="grey", linestyle=":", label="t1[0] down")
        ax.set_title(f"{planes} planes x {rate}")
        ax.set_xlabel("time (us)")
        ax.set_xscale("log")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("delivered, all connections (Gb/s)")
    axes[-1].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    raise SystemExit(main())
