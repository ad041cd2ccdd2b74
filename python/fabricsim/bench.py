"""``fabricsim bench``: fixed benchmark scenarios, each in its own process so its peak
memory is its own.

For each case it reports wall time, events, packet-hops (every frame crossing one
link), packet-hops per second, the process's peak resident memory, and the core's
memory per packet in flight: the Rust heap's peak during the run minus its size once
the world was built, divided by the peak number of packets in flight. The benchmark
scenarios record no port time series, so that figure is the simulator's own state
(packet slots, queue and wire entries, events, and whatever grows with traffic).
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from importlib import resources
from pathlib import Path
from typing import Dict, List, Optional

CASES: Dict[str, str] = {
    "a": "a_fat_tree_k8_roce.toml",
    "b": "b_fat_tree_k16_roce.toml",
    "c": "c_fat_tree_k16_mrc.toml",
    "c2": "c2_fat_tree_k16_mrc_2_partitions.toml",
    "d": "d_fat_tree_k16_mrc_rnic.toml",
}


def case_path(case: str) -> Path:
    return Path(str(resources.files("fabricsim") / "scenarios" / "bench" / CASES[case]))


def _max_rss_bytes() -> int:
    # Linux reports kilobytes.
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def run_one(path: str) -> dict:
    """Runs one scenario in this process and measures it (the child's side)."""
    import time

    from . import _core

    text = Path(path).read_text()
    t0 = time.perf_counter()
    raw = _core.run(text, "toml", None, False)
    wall = time.perf_counter() - t0
    s = json.loads(raw["summary"])
    pkts = max(1, s["peak_packets_in_flight"])
    return {
        "wall_seconds": wall,
        "events": s["events"],
        "packet_hops": s["packet_hops"],
        "sim_time_ns": s["sim_time_ns"],
        "flows_finished": s["flows"]["finished"],
        "flows": s["flows"]["total"],
        "ending": s["ending"],
        "peak_rss_bytes": _max_rss_bytes(),
        "heap_built_bytes": raw["heap_built_bytes"],
        "heap_peak_bytes": raw["heap_peak_bytes"],
        "peak_packets_in_flight": s["peak_packets_in_flight"],
        "packet_slot_bytes": s["packet_slot_bytes"],
        "bytes_per_packet": (raw["heap_peak_bytes"] - raw["heap_built_bytes"]) / pkts,
    }


def main(cases: Optional[List[str]] = None, quiet: bool = False) -> int:
    cases = cases or list(CASES)
    for c in cases:
        if c not in CASES:
            sys.stderr.write(f"fabricsim: error: --case: unknown case {c!r} (allowed: {', '.join(CASES)})\n")
            return 2
    header = (f"{'case':<5}{'wall s':>8}{'events':>13}{'packet-hops':>13}{'M hops/s':>10}{'M ev/s':>8}"
              f"{'RSS MB':>8}{'heap MB':>9}{'pkts':>9}{'B/pkt':>7}  scenario")
    if not quiet:
        from . import _core

        # The figures depend on it: about 12-17 % less time per event with it.
        kind = "with" if _core.PGO else "without"
        sys.stderr.write(f"build: fabricsim {_core.__version__}, {kind} profile-guided optimisation\n")
    print(header)
    unfinished = []
    for c in cases:
        path = case_path(c)
        if not quiet:
            sys.stderr.write(f"running case {c} ({path.name})...\n")
        proc = subprocess.run([sys.executable, "-m", "fabricsim.bench", "--one", str(path)], capture_output=True, text=True)
        if proc.returncode != 0:
            sys.stderr.write(proc.stderr)
            return 1
        m = json.loads(proc.stdout.strip().splitlines()[-1])
        print(f"{c:<5}{m['wall_seconds']:>8.2f}{m['events']:>13,}{m['packet_hops']:>13,}"
              f"{m['packet_hops'] / m['wall_seconds'] / 1e6:>10.2f}{m['events'] / m['wall_seconds'] / 1e6:>8.2f}"
              f"{m['peak_rss_bytes'] / 1e6:>8.0f}{m['heap_peak_bytes'] / 1e6:>9.1f}{m['peak_packets_in_flight']:>9,}"
              f"{m['bytes_per_packet']:>7.0f}  {path.name}")
        sys.stdout.flush()
        if m["flows_finished"] != m["flows"]:
            # A run that stalled or stopped early did less work: its speed says nothing.
            sys.stderr.write(f"fabricsim: error: case {c}: {m['flows_finished']} of {m['flows']} flows finished "
                             f"(ending: {m['ending']}); its figures are not comparable\n")
            unfinished.append(c)
    return 1 if unfinished else 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--one":
        print(json.dumps(run_one(sys.argv[2])))
    else:
        sys.exit(main(sys.argv[1:] or None))
