"""One point of a sweep: running it, the figures of its row, and its folder.

A point's folder is a run folder (as ``fabricsim run`` writes it) plus ``point.json``
(``status`` "ok" with the row's figures, or "failed" with the error). It appears
complete or not at all: it is written beside its final name and renamed into place, so
a worker killed midway leaves only a ``.<id>.<random>.tmp`` folder, which the next sweep
removes.
"""

from __future__ import annotations

import json
import math
import os
import secrets
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Tuple

from ._core import ScenarioError

#: Summary figures copied into ``sweep.parquet`` (dotted paths into summary.json) with
#: their column names: totals, and the per-flow percentiles of completion time and
#: slowdown (finished flows). Wall-clock figures are left out: the table is
#: deterministic.
SUMMARY_FIGURES = (
    ("ending", "ending"), ("sim_time_ns", "sim_time_ns"), ("flows.total", "flows"),
    ("flows.finished", "flows_finished"), ("flows.unfinished", "flows_unfinished"),
    ("bytes_delivered", "bytes_delivered"), ("drops", "drops"), ("pfc_pauses", "pfc_pauses"),
    ("ecn_marks", "ecn_marks"), ("trims", "trims"), ("retransmitted_packets", "retransmitted_packets"),
    ("timeouts", "timeouts"), ("cnps", "cnps"), ("ev_retirements", "ev_retirements"),
    ("failed_connections", "failed_connections"), ("events", "events"), ("packet_hops", "packet_hops"),
) + tuple((f"{fig}.{st}", f"{fig}_{st}") for fig in ("fct_ns", "slowdown")
          for st in ("mean", "p50", "p90", "p99", "p999", "max"))

#: Per-flow throughput (size / completion time of each finished flow, Gb/s): the
#: statistics and their columns; the low percentiles are the slow flows.
GBPS_FIGURES = (("min", "flow_gbps_min"), (1, "flow_gbps_p1"), (10, "flow_gbps_p10"), (50, "flow_gbps_p50"),
                ("mean", "flow_gbps_mean"))

#: Per-collective figures over the run's collectives: (column, collectives column, how).
COLLECTIVE_FIGURES = (("collective_ns_max", "duration_ns", "max"), ("busbw_gbps_min", "busbw_gbps", "min"))


def figure_columns() -> List[str]:
    """The figure columns of ``sweep.parquet``, in order."""
    return [c for _, c in SUMMARY_FIGURES] + [c for _, c in GBPS_FIGURES] + [c for c, _, _ in COLLECTIVE_FIGURES]


def figures(result: Any) -> Dict[str, Any]:
    """A run's row of figures (None where the run has none, e.g. percentiles when no
    flow finished). Read from the Arrow tables: a worker never needs pandas."""
    import numpy as np

    row: Dict[str, Any] = {}
    for path, col in SUMMARY_FIGURES:
        v: Any = result.summary
        for part in path.split("."):
            v = v.get(part) if isinstance(v, Mapping) else None
        row[col] = v
    from ._arrow import floats

    flows = result.tables.arrow("flows")
    # A flow that did not finish has a null completion time: NaN here, dropped below.
    fct = floats(flows.column("fct_ns"))
    size = floats(flows.column("size_bytes"))
    done = ~np.isnan(fct)
    with np.errstate(divide="ignore", invalid="ignore"):
        gbps = size[done] * 8 / fct[done]
    gbps = gbps[np.isfinite(gbps)]
    for how, col in GBPS_FIGURES:
        if not len(gbps):
            row[col] = None
        elif how == "min":
            row[col] = float(gbps.min())
        elif how == "mean":
            row[col] = float(gbps.mean())
        else:
            row[col] = float(np.percentile(gbps, how))
    coll = result.tables.arrow("collectives")
    for col, src, how in COLLECTIVE_FIGURES:
        x = floats(coll.column(src))
        x = x[~np.isnan(x)]
        row[col] = None if not len(x) else float(x.max() if how == "max" else x.min())
    # JSON (point.json) has no NaN or infinity: a figure that is not a number is none.
    return {k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in row.items()}


@dataclass
class Task:
    """What a worker needs to run a point."""

    id: str
    #: The scenario as JSON text.
    scenario: str
    #: Where the point's folder goes (None: return its files instead, for Ray).
    dest: Optional[str]
    plots: bool


_BUILD: Optional[str] = None


def build_id() -> str:
    """This installation's core: a hash of the compiled extension. A point run by
    another build is run again (a change to the simulator changes results)."""
    global _BUILD
    if _BUILD is None:
        import hashlib

        from . import _core

        digest = hashlib.sha256()
        with open(_core.__file__, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                digest.update(chunk)
        _BUILD = digest.hexdigest()[:16]
    return _BUILD


def _write_point_json(folder: Path, doc: Dict[str, Any]) -> None:
    with open(folder / "point.json", "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=2, sort_keys=True, allow_nan=False)
        f.write("\n")


def _staging(dest: Path) -> Path:
    """A temporary folder beside a point's final folder (``.<id>.<random>.tmp``),
    removed by the next sweep if the worker dies before the rename."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    return dest.parent / f".{dest.name}.{secrets.token_hex(4)}.tmp"


def _install(staging: Path, dest: Path) -> None:
    """Renames a finished point folder into place, over a failed attempt if any."""
    old = None
    if dest.exists():
        old = dest.parent / f".{dest.name}.{secrets.token_hex(4)}.old.tmp"
        os.replace(dest, old)
    os.replace(staging, dest)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def run_task(task: Task) -> Tuple[str, Any]:
    """Runs a point: ``("ok", figures)`` or ``("failed", error)``, and with ``dest`` its
    folder written; without, ``("ok", (figures, {file name: bytes}))``."""
    import tempfile

    from . import __version__
    from .api import run

    try:
        result = run(json.loads(task.scenario))
        row = figures(result)
        doc = {"id": task.id, "status": "ok", "figures": row, "fabricsim": __version__, "build": build_id()}
        if task.dest is None:
            with tempfile.TemporaryDirectory(prefix="fabricsim-point-") as tmp:
                folder = result.save(Path(tmp) / task.id, plots=task.plots)
                _write_point_json(folder, doc)
                files = {p.name: p.read_bytes() for p in sorted(folder.iterdir())}
            return "ok", (row, files)
        dest = Path(task.dest)
        staging = _staging(dest)
        try:
            result.save(staging, plots=task.plots)
            _write_point_json(staging, doc)
            _install(staging, dest)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        return "ok", row
    except Exception as e:  # noqa: BLE001 - any failure of one point is recorded, the sweep goes on
        return "failed", f"{type(e).__name__}: {e}" if not isinstance(e, ScenarioError) else str(e)


def record_failure(dest: Path, task_id: str, error: str) -> None:
    """Writes a failed point's folder: ``point.json`` with its error."""
    from . import __version__

    staging = _staging(dest)
    try:
        staging.mkdir()
        _write_point_json(staging, {"id": task_id, "status": "failed", "error": error, "fabricsim": __version__,
                                    "build": build_id()})
        _install(staging, dest)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def write_files(dest: Path, files: Mapping[str, bytes]) -> None:
    """Writes a point folder returned as files (from a Ray task), atomically."""
    staging = _staging(dest)
    try:
        staging.mkdir()
        for name, data in files.items():
            if "/" in name or name.startswith("."):
                raise ValueError(f"unexpected file name {name!r} from a worker")
            (staging / name).write_bytes(data)
        _install(staging, dest)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def point_state(folder: Path) -> Optional[Dict[str, Any]]:
    """A point folder's ``point.json``, or None if it is not there (not run yet)."""
    try:
        with open(folder / "point.json", encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) and doc.get("status") in ("ok", "failed") else None
