"""Run results as pandas DataFrames, and writing them to an output folder."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np
import pandas as pd

# Integer columns where -1 means "none" (a flow that never started or finished).
_NULLABLE = {"start_ns", "finish_ns", "fct_ns", "collective", "duration_ns", "ooo_max", "ooo_p99"}

# The tables a run produces, in the order they are written.
TABLES = ("flows", "ports", "collectives", "connections", "paths", "ev_states", "ooo", "throughput", "faults")


def _frame(columns: Sequence[Tuple[str, Any]]) -> pd.DataFrame:
    data: Dict[str, Any] = {}
    for name, col in columns:
        if isinstance(col, list):
            data[name] = pd.Series(col, dtype="string")
            continue
        dtype, raw = col
        arr = np.frombuffer(raw, dtype=np.dtype(dtype)).copy()
        if name in _NULLABLE:
            s = pd.Series(arr, dtype="Int64")
            data[name] = s.mask(s < 0)
        else:
            data[name] = arr
    return pd.DataFrame(data)


class Result:
    """What a run produced.

    Attributes:
        flows: one row per flow (message); see the README for every column.
        ports: sampled port time series (rows only for ports active in an interval).
        collectives: one row per collective operation.
        summary: totals, percentiles and the scenario echo; wall-clock figures are
            under the ``run`` key only.
    """

    def __init__(self, tables: Dict[str, pd.DataFrame], summary: Dict[str, Any],
                 scenario_text: Optional[str] = None, source: Optional[Path] = None, pcap: Optional[Path] = None):
        self.tables = tables
        self.summary = summary
        self.scenario_text = scenario_text
        self.source = source
        #: A pcap capture written during the run (moved into the folder by ``save``).
        self.pcap = pcap

    flows = property(lambda self: self.tables["flows"], doc="One row per flow (message).")
    ports = property(lambda self: self.tables["ports"], doc="Sampled port time series.")
    collectives = property(lambda self: self.tables["collectives"], doc="One row per collective.")
    connections = property(lambda self: self.tables["connections"], doc="One row per connection (queue pairs).")
    paths = property(lambda self: self.tables["paths"], doc="Per-path (entropy value) counters of multipath senders.")
    ev_states = property(lambda self: self.tables["ev_states"], doc="Entropy-value state changes over time (MRC).")
    ooo = property(lambda self: self.tables["ooo"], doc="Out-of-order degree histogram at multipath receivers.")
    throughput = property(lambda self: self.tables["throughput"], doc="Bytes each connection delivered per sampling interval.")
    faults = property(lambda self: self.tables["faults"], doc="Faults that happened, with their times.")

    @classmethod
    def from_core(cls, raw: Dict[str, Any], scenario_text: Optional[str] = None, source: Optional[Path] = None,
                  pcap: Optional[Path] = None) -> "Result":
        names: List[str] = raw["port_names"]
        tables = {name: _frame(raw[name]) for name in TABLES}
        ports = tables["ports"]
        ports.insert(1, "port", pd.Categorical.from_codes(ports["port_id"].astype(np.int64), categories=names) if names else [])
        summary = json.loads(raw["summary"])
        wall = float(raw["wall_seconds"])
        summary["run"] = {
            "wall_seconds": wall,
            "events_per_second": summary["events"] / wall if wall > 0 else None,
            "packet_hops_per_second": summary["packet_hops"] / wall if wall > 0 else None,
        }
        if raw.get("pcap_frames") is not None:
            summary["run"]["pcap_frames"] = raw["pcap_frames"]
        return cls(tables, summary, scenario_text, source, pcap)

    def __repr__(self) -> str:
        s = self.summary
        return (f"<fabricsim.Result {s['name']!r}: {s['flows']['finished']}/{s['flows']['total']} flows, "
                f"{s['sim_time_ns'] / 1e6:.3f} ms simulated>")

    def save(self, out: "os.PathLike[str] | str", plots: bool = True) -> Path:
        """Writes every table as Parquet (``flows``, ``ports``, ``collectives``,
        ``connections``, ``paths``, ``ev_states``, ``ooo``, ``throughput``, ``faults``),
        ``summary.json``, the scenario, a pcap capture if one was taken
        (``capture.pcap``) and (optionally) the plots into ``out``.

        The folder appears complete or not at all: everything is written to a
        temporary sibling folder that is renamed into place at the end. ``out`` must
        not exist or must be empty.
        """
        out = Path(out)
        if out.exists() and (not out.is_dir() or any(out.iterdir())):
            raise FileExistsError(f"output folder {out} already exists and is not empty")
        # The missing parents are made here and removed again if anything fails.
        made = []
        parent = out.parent
        while not parent.exists():
            made.append(parent)
            parent = parent.parent
        tmp = None
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
            for name in TABLES:
                self.tables[name].to_parquet(tmp / f"{name}.parquet", index=False)
            if self.pcap is not None and Path(self.pcap).exists():
                shutil.move(str(self.pcap), tmp / "capture.pcap")
                self.pcap = out / "capture.pcap"
            with open(tmp / "summary.json", "w", encoding="utf-8") as f:
                json.dump(self.summary, f, indent=2, sort_keys=True, allow_nan=False, default=str)
                f.write("\n")
            if self.scenario_text is not None:
                (tmp / "scenario.toml").write_text(self.scenario_text, encoding="utf-8")
            if plots:
                from .plots import draw_all

                draw_all(self, tmp)
            if out.exists():
                out.rmdir()
            os.replace(tmp, out)
        except BaseException:
            if tmp is not None:
                shutil.rmtree(tmp, ignore_errors=True)
            for d in made:
                try:
                    d.rmdir()
                except OSError:
                    break
            raise
        return out
