"""Sweeps: one base scenario, a grid of values to vary, and seeds; every point a run of
its own, on a local process pool (default) or a Ray cluster.

    import fabricsim
    sw = fabricsim.sweep("base.toml", {"fabric.link_loss": [0, 0.01, 0.03],
                                       "transport.kind": ["roce", "mrc"]},
                         seeds=[1, 2, 3], out="loss-sweep")
    sw.table                   # pandas DataFrame: sweep.parquet
    sw.result(0).flows         # any point's full results

A sweep folder holds::

    sweep.json       the sweep: base scenario, axes, every point's parameters and id
    sweep.parquet    one row per point: varied parameters, status, summary figures
    points/<id>/     each point's run folder (as ``fabricsim run`` writes it) + point.json

A point's id is a hash of its whole scenario (seed included), so a point is found again
whatever sweep asks for it: a rerun, an interrupted sweep started again, or a larger
grid over the same folder runs only what is not there yet. A failed point is recorded
with its error and the sweep goes on; the next run of the sweep tries it again.

Results never depend on where a point ran: each is the same deterministic run, and the
table is put together in point order from what the points saved, so the process pool
and Ray give a byte-identical ``sweep.parquet``.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

from ._core import ScenarioError
from .grid import Axis, BaseLike, Point, axes, loads_toml, points, validate_points
from .point import Task, build_id, figure_columns, point_state, record_failure, write_files

#: Keys a sweep file may have.
SPEC_KEYS = ("base", "grid", "zip", "seeds", "out")

#: The points' folders inside a sweep folder.
POINTS = "points"

#: Figure columns holding counts (nullable integers: a failed point has none).
_INT_FIGURES = {"sim_time_ns", "flows", "flows_finished", "flows_unfinished", "bytes_delivered", "drops", "pfc_pauses",
                "ecn_marks", "trims", "retransmitted_packets", "timeouts", "cnps", "ev_retirements", "failed_connections",
                "events", "packet_hops"}


class Sweep:
    """A sweep's folder and points, as :func:`sweep` leaves them.

    Attributes:
        out: the sweep folder.
        points: every point, in order (the rows of ``table``).
        ran, skipped, failed: points run now, found done before, and failed now.
    """

    def __init__(self, out: Path, pts: List[Point], ran: int = 0, skipped: int = 0, failed: int = 0):
        self.out = out
        self.points = pts
        self.ran, self.skipped, self.failed = ran, skipped, failed

    @property
    def table(self):
        """``sweep.parquet`` as a pandas DataFrame: one row per point."""
        import pandas as pd

        return pd.read_parquet(self.out / "sweep.parquet")

    def folder(self, point: Union[int, Point]) -> Path:
        """A point's folder (``points/<id>``), by index or :class:`Point`."""
        p = self.points[point] if isinstance(point, int) else point
        return self.out / POINTS / p.id

    def result(self, point: Union[int, Point]):
        """A point's full :class:`~fabricsim.Result`, read back from its folder."""
        from .results import Result

        folder = self.folder(point)
        state = point_state(folder)
        if state is None or state["status"] != "ok":
            why = state.get("error") if state else "not run"
            p = self.points[point] if isinstance(point, int) else point
            raise LookupError(f"point {p.index} ({_show(p.params)}) has no results: {why}")
        return Result.load(folder)

    def results(self) -> Iterator[Tuple[Point, Any]]:
        """Every point that ran to its end, with its :class:`~fabricsim.Result`."""
        for p in self.points:
            state = point_state(self.folder(p))
            if state is not None and state["status"] == "ok":
                yield p, self.result(p)

    def __repr__(self) -> str:
        return (f"<fabricsim.Sweep {str(self.out)!r}: {len(self.points)} points, {self.ran} run, "
                f"{self.skipped} done before, {self.failed} failed>")


def _show(params: Mapping[str, Any]) -> str:
    return ", ".join(f"{k} = {json.dumps(v, default=str)}" for k, v in params.items())


# ---------------------------------------------------------------------------------------
# The sweep file


def load_spec(path: Union[str, "os.PathLike[str]"]) -> Dict[str, Any]:
    """A sweep file (TOML) as the keyword arguments of :func:`sweep`: ``base`` (a
    scenario file, relative to the sweep file, or an inline ``[base]`` table), ``grid``,
    ``zip`` (``[[zip]]`` tables), ``seeds`` and ``out`` (relative to the sweep file)."""
    path = Path(path)
    where = str(path)
    if path.is_dir():
        raise ScenarioError(f"{where}: is a folder; name a sweep TOML file")
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ScenarioError(f"sweep file not found: {where}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ScenarioError(f"cannot read sweep file {where}: {e}") from None
    try:
        doc = loads_toml(text)
    except ValueError as e:
        raise ScenarioError(f"{where}: {e}") from None
    unknown = [k for k in doc if k not in SPEC_KEYS]
    if unknown:
        raise ScenarioError(f"{where}: unknown key {unknown[0]!r} (allowed: {', '.join(SPEC_KEYS)}); "
                            f"scenario keys go in the base scenario or, to vary them, in [grid]")
    if "base" not in doc:
        raise ScenarioError(f"{where}: base: required: the scenario file to vary (base = \"scenario.toml\", "
                            f"relative to the sweep file) or an inline [base] table")
    base = doc["base"]
    if isinstance(base, str):
        if not base:
            raise ScenarioError(f"{where}: base: empty path; name a scenario TOML file")
        file = path.parent / base
        if not file.is_file():
            raise ScenarioError(f"{where}: base: scenario file not found: {file}")
        base = file
    elif not isinstance(base, dict):
        raise ScenarioError(f"{where}: base: expected a scenario file name or a [base] table, got {base!r}")
    out = doc.get("out")
    if out is not None:
        if not isinstance(out, str) or not out:
            raise ScenarioError(f"{where}: out: expected a folder name (relative to the sweep file), got {out!r}")
        out = path.parent / out
    grid = doc.get("grid", {})
    if not isinstance(grid, dict):
        raise ScenarioError(f"{where}: grid: expected a table ([grid]) of dotted keys to lists or ranges, got {grid!r}")
    zipped = doc.get("zip", [])
    if isinstance(zipped, dict):
        zipped = [zipped]
    return {"base": base, "grid": grid, "zip": zipped, "seeds": doc.get("seeds"), "out": out, "where": where}


# ---------------------------------------------------------------------------------------
# Running a sweep


def _done(folder: Path) -> bool:
    """Whether a point's folder holds its results, from this build of the core."""
    state = point_state(folder)
    return state is not None and state["status"] == "ok" and state.get("build") == build_id()


def _out_problem(out: Path) -> Optional[str]:
    """Why ``out`` cannot hold this sweep: an existing folder must be a sweep folder
    (or empty), so a typo never mixes a sweep into someone's other files."""
    if out.exists() and not out.is_dir():
        return f"{out} exists and is not a folder"
    if out.is_dir() and any(out.iterdir()) and not (out / "sweep.json").exists() and not (out / POINTS).is_dir():
        return f"{out} exists and is not a sweep folder (no sweep.json or points/); choose a new or empty folder"
    return None


class _Lock:
    """One sweep at a time per folder (two would remove each other's unfinished
    points)."""

    def __init__(self, out: Path) -> None:
        self.file = open(out / ".lock", "a")
        try:
            import fcntl
        except ImportError:  # not POSIX: no lock
            return
        try:
            fcntl.flock(self.file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            self.file.close()
            raise ScenarioError(f"{out}: another sweep is running in this folder") from None

    def release(self) -> None:
        self.file.close()


class _Bar:
    """The progress line on stderr: points done, failed, done before, time left."""

    def __init__(self, total: int, skipped: int, show: bool) -> None:
        self.total, self.skipped, self.show = total, skipped, show
        self.ok = self.failed = 0
        self.t0 = time.monotonic()
        self.last = 0.0

    def draw(self, final: bool = False) -> None:
        if not self.show:
            return
        now = time.monotonic()
        if not final and now - self.last < 0.2:
            return
        self.last = now
        finished = self.ok + self.failed
        todo = self.total - self.skipped
        done_all = self.skipped + finished
        width = 24
        filled = int(width * done_all / self.total) if self.total else width
        elapsed = now - self.t0
        if finished and todo > finished:
            left = f"{_clock(elapsed / finished * (todo - finished))} left"
        elif todo > finished:
            left = "time left: after the first point"
        else:
            left = f"took {_clock(elapsed)}"
        line = (f"\r  sweep [{'#' * filled}{'.' * (width - filled)}] {done_all}/{self.total} points | "
                f"{self.ok} done, {self.failed} failed, {self.skipped} done before | {left}   ")
        sys.stderr.write(line + ("\n" if final else ""))
        sys.stderr.flush()


def _clock(seconds: float) -> str:
    s = int(round(seconds))
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"


def _spec_doc(base: Any, ax: List[Axis], pts: List[Point]) -> Dict[str, Any]:
    from . import __version__

    if callable(base) and not isinstance(base, Mapping):
        described: Dict[str, Any] = {"builder": f"{getattr(base, '__module__', '?')}.{getattr(base, '__qualname__', repr(base))}"}
    else:
        from .grid import _base_dict

        described = {"scenario": _base_dict(base, "base")}
    return {
        "fabricsim": __version__,
        "base": described,
        "axes": [{"keys": list(a.keys), "values": [list(v) for v in a.values]} for a in ax],
        "points": [{"id": p.id, "params": p.params} for p in pts],
    }


def _write_atomic(path: Path, write) -> None:
    """Writes ``path`` through a temporary sibling renamed into place."""
    import secrets

    tmp = path.parent / f".{path.name}.{secrets.token_hex(4)}.tmp"
    try:
        write(tmp)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _param_column(values: List[Any]) -> Tuple[Any, Any]:
    """A varied parameter's column and its pandas description: numbers, booleans or
    strings as they are; tables, lists and mixed types as JSON text (Parquet columns
    have one type)."""
    import numpy as np

    from . import _arrow as arrow

    numbers = None
    if all(isinstance(v, bool) for v in values):
        numbers = np.array(values, dtype=bool)
    elif all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        numbers = np.array(values, dtype=np.int64)
    elif all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        numbers = np.array([float(v) for v in values], dtype=np.float64)
    if numbers is not None:
        return arrow.numbers(numbers), arrow.described(numbers)
    texts = [v if isinstance(v, str) else json.dumps(v, sort_keys=True, default=str) for v in values]
    return arrow.strings(texts), arrow.STRING


def _prepare_table() -> None:
    """Imports what :func:`table` and writing it need (Arrow, numpy: a quarter of a
    second), while the pool's last points run and a core is free."""
    import pyarrow.parquet  # noqa: F401

    from . import _arrow  # noqa: F401


def table(pts: Sequence[Point], states: Sequence[Optional[Dict[str, Any]]]):
    """``sweep.parquet``'s table (Arrow, with the metadata that makes ``pd.read_parquet``
    give these dtypes): the varied parameters, ``point``, ``status``, ``error``, then
    every figure (empty for a point that failed or has not run): counts as nullable
    ``Int64``, the rest ``float64`` (NaN when empty). Made without pandas: importing it
    would hold up the end of every sweep by half a second."""
    import numpy as np

    from . import _arrow as arrow

    cols: List[Tuple[str, Any, Any]] = []
    keys: List[str] = []
    for p in pts:
        keys.extend(k for k in p.params if k not in keys)
    for k in keys:
        cols.append((k,) + _param_column([p.params.get(k) for p in pts]))
    cols.append(("point", arrow.strings([p.id for p in pts]), arrow.STRING))
    cols.append(("status", arrow.strings([s["status"] if s else "not run" for s in states]), arrow.STRING))
    cols.append(("error", arrow.strings([s.get("error") if s else None for s in states]), arrow.STRING))
    for c in figure_columns():
        vals = [(s.get("figures") or {}).get(c) if s and s["status"] == "ok" else None for s in states]
        if c == "ending":
            cols.append((c, arrow.strings(vals), arrow.STRING))
        elif c in _INT_FIGURES:
            ints = np.array([0 if v is None else v for v in vals], dtype=np.int64)
            cols.append((c, arrow.numbers(ints, valid=np.array([v is not None for v in vals], dtype=bool)),
                         arrow.NULLABLE_INT))
        else:
            floats = np.array([np.nan if v is None else float(v) for v in vals], dtype=np.float64)
            cols.append((c, arrow.numbers(floats), arrow.described(floats)))
    return arrow.table(cols)


def sweep(base: BaseLike, grid: Union[Mapping[str, Any], Sequence[Mapping[str, Any]], None] = None, *,
          zip: Sequence[Mapping[str, Any]] = (), seeds: Any = None, out: Union[str, "os.PathLike[str]", None] = None, jobs: Optional[int] = None,
          ray: Union[None, bool, str] = None, timeout: Optional[float] = None, plots: bool = False,
          progress: Optional[bool] = None, where: str = "sweep") -> Sweep:
    """Runs every point of a grid over a base scenario and writes the sweep folder.

    ``base`` is a scenario (file, TOML text or dict) whose dotted keys the grid sets
    (``{"fabric.link_loss": [0, 0.01], "workload[1].size": ["1MB", "4MB"]}``), or a
    function returning a scenario dict, called with each point's values as keyword
    arguments (the grid's keys are then its parameters' names). A grid value is a list,
    a range table (``{"from": 0, "to": 0.03, "step": 0.01}``, or ``"times": 2`` for a
    geometric range; ``"unit": "KB"`` appends a unit), a Python ``range`` or a numpy
    array. The grid may also be a list of points, tables of the same keys, run as
    listed (irregular grids). ``zip`` is a list of tables of equally long lists whose
    values move together. ``seeds`` (a list or range) set the scenario's seed (a
    builder's scenario's too: they are not passed to it; to pass one, vary ``seed`` in
    the grid). The first axis varies slowest, the seeds fastest. Every point is checked
    before anything runs (a bad one raises :class:`ScenarioError` naming its key and
    values).

    ``out`` is the sweep folder (default ``fabricsim-out/sweep-<hash of its points>``);
    points already there are not run again. ``jobs`` worker processes run the points
    (default: one per core), or the Ray cluster ``ray`` names ("auto", an address,
    "local", or True: the cluster this process has initialised, else a local one).
    ``timeout`` (seconds) stops and fails a point that runs longer. ``plots`` draws
    each point's standard plots into its folder (off: a report draws them on demand).
    ``progress`` shows the progress line on stderr (default: when stderr is a terminal).

    A point that fails is recorded (``status`` "failed" with its ``error``) and the
    others go on. Ctrl-C stops the sweep; what finished stays for the next run.
    """
    if jobs is not None and (not isinstance(jobs, int) or isinstance(jobs, bool) or not 1 <= jobs <= 1024):
        raise ScenarioError(f"jobs: expected an integer between 1 and 1024, got {jobs!r}")
    if timeout is not None and (not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or not timeout > 0):
        raise ScenarioError(f"timeout: expected a number of seconds above 0, got {timeout!r}")
    if ray is not None and not isinstance(ray, (bool, str)):
        raise ScenarioError(f"ray: expected \"auto\", \"local\", a cluster address or True, got {ray!r}")
    if isinstance(ray, str) and not ray:
        raise ScenarioError("ray: empty address (give \"auto\", \"local\" or a cluster address)")
    builder = callable(base) and not isinstance(base, Mapping)
    ax = axes(grid, zip, seeds, named=builder, where=where)
    pts = points(base, ax, where)
    if out is None:
        import hashlib

        digest = hashlib.sha256(",".join(p.id for p in pts).encode()).hexdigest()[:8]
        out = Path("fabricsim-out") / f"sweep-{digest}"
    out = Path(out)
    problem = _out_problem(out)
    if problem:
        raise ScenarioError(f"out: {problem}")
    address = None if ray is None or ray is False else ("local" if ray is True else ray)
    if address is not None:
        from .pool import ray_address_problem

        problem = ray_address_problem(address)
        if problem:
            raise ScenarioError(problem)

    folder = out / POINTS
    # Checked before the folder is made: a bad sweep leaves nothing behind.
    done = [_done(folder / p.id) for p in pts]
    validate_points(pts, where, skip=done)
    own_ray = False
    if address is not None:
        from .pool import ray_connect

        own_ray = ray_connect(address)
    try:
        out.mkdir(parents=True, exist_ok=True)
        lock = _Lock(out)
    except BaseException:
        if own_ray:
            import ray as ray_

            ray_.shutdown()
        raise
    try:
        folder.mkdir(exist_ok=True)
        # What a killed worker or sweep left half-written (never a finished point).
        for stale in folder.glob(".*.tmp"):
            shutil.rmtree(stale, ignore_errors=True)
        for stale in out.glob(".*.tmp"):
            stale.unlink(missing_ok=True)
        # Again under the lock: another sweep may have finished points meanwhile.
        done = [_done(folder / p.id) for p in pts]
        _write_atomic(out / "sweep.json", lambda tmp: tmp.write_text(
            json.dumps(_spec_doc(base, ax, pts), indent=1, allow_nan=False, default=str) + "\n", encoding="utf-8"))

        todo: List[Point] = []
        seen = set()
        for p, d in zip_(pts, done):
            if not d and p.id not in seen:
                seen.add(p.id)
                todo.append(p)
        skipped = len({p.id for p, d in zip_(pts, done) if d})
        total = len({p.id for p in pts})
        tasks = [Task(p.id, json.dumps(p.scenario, allow_nan=False),
                      None if address is not None else str(folder / p.id), plots) for p in todo]
        bar = _Bar(total, skipped, sys.stderr.isatty() if progress is None else bool(progress))

        def finished(i: int, status: str, payload: Any) -> None:
            dest = folder / todo[i].id
            if status == "ok":
                if tasks[i].dest is None:
                    write_files(dest, payload[1])
                bar.ok += 1
            else:
                record_failure(dest, todo[i].id, str(payload))
                bar.failed += 1
            bar.draw()

        bar.draw(final=not tasks)
        if tasks:
            try:
                if address is None:
                    from .pool import default_jobs, run_pool

                    run_pool(tasks, jobs or default_jobs(), finished, timeout=timeout, tick=bar.draw,
                             drained=_prepare_table)
                else:
                    from .pool import run_ray

                    # run_ray closes the connection it is handed.
                    handed, own_ray = own_ray, False
                    run_ray(tasks, handed, finished, timeout=timeout, tick=bar.draw)
            finally:
                if bar.show and bar.last:
                    bar.draw(final=True)
        states = [point_state(folder / p.id) for p in pts]
        rows = table(pts, states)

        def write(tmp: Path) -> None:
            import pyarrow.parquet as pq

            pq.write_table(rows, tmp)

        _write_atomic(out / "sweep.parquet", write)
    finally:
        lock.release()
        if own_ray:  # nothing was left to run on it
            import ray as ray_

            ray_.shutdown()
    return Sweep(out, pts, ran=bar.ok + bar.failed, skipped=skipped, failed=bar.failed)


zip_ = zip
