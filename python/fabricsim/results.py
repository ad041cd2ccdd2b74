"""Run results as pandas DataFrames, and writing them to an output folder.

A run's tables are kept as Arrow tables, made from the core's columns without a copy
per element, and written to Parquet from there; each becomes a pandas DataFrame when it
is first asked for. A process that only runs and saves (a sweep's worker) never imports
pandas, whose import is most of a fresh interpreter's start. The files carry the same
pandas metadata pandas itself would write, so ``pd.read_parquet`` gives the frames
``Result`` gives (nullable ``Int64`` where -1 meant "none", ``string`` columns, the
ports' ``port`` as a category).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import shutil
import stat
import warnings
import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple

import numpy as np
import pyarrow as pa

from . import _arrow as arrow
from . import _core

if TYPE_CHECKING:
    import pandas as pd

# Integer columns where -1 means "none" (a flow that never started or finished).
_NULLABLE = {"start_ns", "finish_ns", "fct_ns", "acked_ns", "sender_fct_ns", "collective", "duration_ns", "ooo_max",
             "ooo_p99", "job", "iteration", "end_ns", "step_ns", "comm_ns", "exposed_comm_ns"}

# The tables a run produces, in the order they are written (the core's one list).
TABLES = tuple(_core.TABLES)


def _remove(path: str) -> None:
    """Deletes a temporary capture (finalizer of a Result: never raises)."""
    try:
        os.unlink(path)
    except OSError:
        pass


def _arrow(columns: Sequence[Tuple[str, Any]], port_names: Optional[List[str]] = None) -> pa.Table:
    """A core table as Arrow: numbers over their raw little-endian bytes, -1 as null in
    the :data:`_NULLABLE` columns, text as pandas' ``string``; with ``port_names``, the
    ports' ``port`` category (codes ``port_id``) after the first column."""
    cols: List[Tuple[str, pa.Array, arrow.Described]] = []
    port_ids = None
    for name, col in columns:
        if isinstance(col, list):
            cols.append((name, arrow.strings(col), arrow.STRING))
            continue
        dtype, raw = col
        values = np.frombuffer(raw, dtype=np.dtype(dtype))
        if name in _NULLABLE:
            values = values.astype(np.int64, copy=False)
            cols.append((name, arrow.numbers(values, valid=values >= 0), arrow.NULLABLE_INT))
        else:
            cols.append((name, arrow.numbers(values), arrow.described(values)))
        if name == "port_id":
            port_ids = values
    if port_names is not None:
        assert port_ids is not None, "the ports table has a port_id column"
        cols.insert(1, ("port",) + arrow.category(port_ids, port_names))
    return arrow.table(cols)


class _Tables(Mapping):
    """A run's tables by name: Arrow tables (``arrow``), each a pandas DataFrame when
    first asked for. ``load`` reads a saved run's file only when its table is used: a
    sweep's experiment reading hundreds of points back uses two or three tables of
    each."""

    def __init__(self, arrow: Optional[Dict[str, pa.Table]] = None, folder: Optional[Path] = None) -> None:
        self._arrow: Dict[str, pa.Table] = dict(arrow or {})
        self._folder = folder
        self._frames: Dict[str, "pd.DataFrame"] = {}

    def arrow(self, name: str) -> pa.Table:
        """Table ``name`` as Arrow, with its pandas metadata."""
        if name not in TABLES:
            raise KeyError(name)
        if name not in self._arrow:
            import pyarrow.parquet as pq

            assert self._folder is not None
            self._arrow[name] = pq.read_table(self._folder / f"{name}.parquet")
        return self._arrow[name]

    def __getitem__(self, name: str) -> "pd.DataFrame":
        if name not in self._frames:
            self._frames[name] = self.arrow(name).to_pandas()
        return self._frames[name]

    def __iter__(self) -> Iterator[str]:
        return iter(TABLES)

    def __len__(self) -> int:
        return len(TABLES)


class Result:
    """What a run produced.

    Attributes:
        flows: one row per flow (message); see the README for every column.
        ports: sampled port time series (rows only for ports active in an interval).
        collectives: one row per collective operation.
        summary: totals, percentiles and the scenario echo; wall-clock figures are
            under the ``run`` key only.
        scenario_text: the scenario as TOML that runs the same (``scenario.toml``).
        pcap: the capture file of a run with ``pcap=`` (else None).
    """

    def __init__(self, tables: _Tables, summary: Dict[str, Any],
                 scenario_text: Optional[str] = None, source: Optional[Path] = None, pcap: Optional[Path] = None,
                 pcap_is_temporary: bool = False):
        self.tables = tables
        self.summary = summary
        self.scenario_text = scenario_text
        self.source = source
        #: The pcap capture written during the run. A temporary file (``pcap_is_temporary``)
        #: belongs to this Result: it is deleted when the Result is garbage collected or
        #: Python exits, or once ``save`` has written it into an output folder, from then
        #: on ``pcap`` is that folder's ``capture.pcap``.
        self.pcap = pcap
        self._pcap_cleanup = weakref.finalize(self, _remove, str(pcap)) if pcap is not None and pcap_is_temporary else None

    flows = property(lambda self: self.tables["flows"], doc="One row per flow (message).")
    ports = property(lambda self: self.tables["ports"], doc="Sampled port time series.")
    collectives = property(lambda self: self.tables["collectives"], doc="One row per collective.")
    jobs = property(lambda self: self.tables["jobs"], doc="One row per job iteration: step time, compute, communication.")
    connections = property(lambda self: self.tables["connections"], doc="One row per connection (queue pairs).")
    paths = property(lambda self: self.tables["paths"], doc="Per-path (entropy value) counters of multipath senders.")
    ev_states = property(lambda self: self.tables["ev_states"], doc="Entropy-value state changes over time (MRC).")
    ooo = property(lambda self: self.tables["ooo"], doc="Out-of-order degree histogram at multipath receivers.")
    throughput = property(lambda self: self.tables["throughput"], doc="Bytes each connection delivered per sampling interval.")
    faults = property(lambda self: self.tables["faults"], doc="Faults that happened, with their times.")
    nics = property(lambda self: self.tables["nics"], doc="One row per modelled NIC: packets, QP-cache and translation misses, PCIe bytes.")

    @classmethod
    def from_core(cls, raw: Dict[str, Any], scenario_text: Optional[str] = None, source: Optional[Path] = None,
                  pcap: Optional[Path] = None, pcap_is_temporary: bool = False) -> "Result":
        names: List[str] = raw["port_names"]
        tables = _Tables({name: _arrow(raw[name], names if name == "ports" else None) for name in TABLES})
        summary = json.loads(raw["summary"])
        wall = float(raw["wall_seconds"])
        summary["run"] = {
            "wall_seconds": wall,
            "events_per_second": summary["events"] / wall if wall > 0 else None,
            "packet_hops_per_second": summary["packet_hops"] / wall if wall > 0 else None,
        }
        if raw.get("pcap_frames") is not None:
            summary["run"]["pcap_frames"] = raw["pcap_frames"]
        return cls(tables, summary, scenario_text, source, pcap, pcap_is_temporary)

    @classmethod
    def load(cls, folder: "os.PathLike[str] | str") -> "Result":
        """Reads a saved output folder back (what ``save`` or ``fabricsim run`` wrote):
        the same tables, with the same column types, the summary, the scenario, and
        ``pcap`` naming its ``capture.pcap`` if it has one."""
        folder = Path(folder)
        if not (folder / "summary.json").is_file():
            raise FileNotFoundError(f"{folder} is not a run's output folder (no summary.json)")
        for name in TABLES:
            if not (folder / f"{name}.parquet").is_file():
                raise FileNotFoundError(f"{folder} lacks {name}.parquet (written by an older fabricsim?)")
        with open(folder / "summary.json", encoding="utf-8") as f:
            summary = json.load(f)
        scenario = folder / "scenario.toml"
        text = scenario.read_text(encoding="utf-8") if scenario.is_file() else None
        capture = folder / "capture.pcap"
        return cls(_Tables(folder=folder), summary, text, source=scenario if text is not None else None,
                   pcap=capture.absolute() if capture.is_file() else None)

    def __repr__(self) -> str:
        s = self.summary
        return (f"<fabricsim.Result {s['name']!r}: {s['flows']['finished']}/{s['flows']['total']} flows, "
                f"{s['sim_time_ns'] / 1e6:.3f} ms simulated>")

    def _draw_plots(self, folder: Path) -> None:
        """Draws the plots into ``folder``; if matplotlib fails (a bad MPLBACKEND, a
        missing font cache directory...), the results are still worth saving: what was
        drawn is removed and a :class:`PlotWarning` says why."""
        try:
            from .plots import draw_all

            draw_all(self, folder)
        except Exception as e:  # noqa: BLE001 - any plotting failure, reported as such
            for png in folder.glob("*.png"):
                png.unlink()
            warnings.warn(f"plots not drawn: {type(e).__name__}: {e}", PlotWarning, stacklevel=3)

    def draws_plots(self, plots: Optional[bool] = None) -> bool:
        """Whether ``save(out, plots)`` draws the plots: ``plots`` if given, else the
        scenario's ``output.plots``."""
        if plots is not None:
            return plots
        output = (self.summary.get("scenario") or {}).get("output") or {}
        return bool(output.get("plots", True)) if isinstance(output, dict) else True

    def save(self, out: "os.PathLike[str] | str", plots: Optional[bool] = None) -> Path:
        """Writes every table as Parquet (``flows``, ``ports``, ``collectives``,
        ``connections``, ``paths``, ``ev_states``, ``ooo``, ``throughput``, ``faults``, ``nics``),
        ``summary.json``, the scenario (``scenario.toml``: the input with the run's
        ``seed``/``partitions`` overrides, or a dict scenario written as TOML), a pcap
        capture if one was taken (``capture.pcap``) and the plots into ``out``.

        ``plots`` draws the plots (True) or not (False); by default the scenario's
        ``output.plots`` decides.

        The folder appears complete or not at all: everything is written to a
        temporary sibling folder that is renamed into place at the end, and a saved
        folder is never changed afterwards (a second ``save`` copies the capture). The
        folder gets the usual permissions (0o777 less the umask); ``out`` must not exist
        or must be an empty folder, whose permissions are kept. Temporary folders that
        killed saves left beside ``out`` (their process is gone) are removed first.

        The first save of a run's temporary capture ends its life as a temporary file:
        ``Result.pcap`` becomes ``out/capture.pcap``.
        """
        if not isinstance(out, (str, os.PathLike)):
            raise TypeError(f"save: out must be a path (str or os.PathLike), got {type(out).__name__}")
        if plots is not None and not isinstance(plots, bool):
            raise TypeError(f"save: plots must be True, False or None, got {plots!r}")
        out = Path(out)
        if out.is_symlink():
            if not out.exists():
                raise FileNotFoundError(f"output folder {out} is a symbolic link to nothing")
            # The folder it names is the one to fill (renaming onto the link would
            # replace the link, not fill its folder).
            out = Path(os.path.realpath(out))
        if out.exists() and not out.is_dir():
            raise FileExistsError(f"output folder {out} already exists and is not a folder")
        if out.exists() and any(out.iterdir()):
            raise FileExistsError(f"output folder {out} already exists and is not empty")
        plots = self.draws_plots(plots)
        # The missing parents are made here and removed again if anything fails.
        made = []
        parent = out.parent
        while not parent.exists():
            made.append(parent)
            parent = parent.parent
        tmp = None
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
            _remove_abandoned(out.parent)
            tmp = _temporary_sibling(out)
            import pyarrow.parquet as pq

            for name in TABLES:
                pq.write_table(self.tables.arrow(name), tmp / f"{name}.parquet")
            captured = self.pcap is not None and Path(self.pcap).exists()
            if captured:
                # Copied, never moved: the capture may be another output folder's.
                shutil.copyfile(self.pcap, tmp / "capture.pcap")
            with open(tmp / "summary.json", "w", encoding="utf-8") as f:
                json.dump(self.summary, f, indent=2, sort_keys=True, allow_nan=False, default=str)
                f.write("\n")
            if self.scenario_text is not None:
                (tmp / "scenario.toml").write_text(self.scenario_text, encoding="utf-8")
            if plots:
                self._draw_plots(tmp)
            mode = None
            if out.is_dir():
                # An (empty) folder the user made keeps its permissions, set once the
                # files are in place: a read-only one would refuse them, and a
                # read-only temporary folder could not be removed if the rename failed.
                mode = stat.S_IMODE(out.stat().st_mode)
                out.rmdir()
            os.replace(tmp, out)
            tmp = None
            if mode is not None:
                os.chmod(out, mode)
        except BaseException:
            if tmp is not None:
                shutil.rmtree(tmp, ignore_errors=True)
            for d in made:
                try:
                    d.rmdir()
                except OSError:
                    break
            raise
        if captured:
            self.pcap = out.absolute() / "capture.pcap"
            if self._pcap_cleanup is not None:
                self._pcap_cleanup()  # the temporary capture is no longer needed
                self._pcap_cleanup = None
        return out


def load(folder: "os.PathLike[str] | str") -> Result:
    """A saved run's :class:`Result` (see :meth:`Result.load`)."""
    return Result.load(folder)


class PlotWarning(UserWarning):
    """The plots could not be drawn; the tables were saved without them."""


#: This machine, in the names of temporary folders (a folder shared between machines
#: holds others' folders, whose process numbers mean nothing here).
_HOST = hashlib.sha256(os.uname().nodename.encode()).hexdigest()[:8]

#: The name of a temporary output folder: ``.<start of the output folder's name>``, then
#: ``fabricsim-<process id>-<host>-<random>.tmp``.
_TEMPORARY = re.compile(r"\..*\.fabricsim-(\d{1,10})-([0-9a-f]{8})-[0-9a-f]{8}\.tmp", re.S)


def _temporary_sibling(out: Path) -> Path:
    """A new empty folder beside ``out`` named by :data:`_TEMPORARY` (short, whatever
    the length of ``out``'s name), made with the usual permissions (0o777 less the
    umask; ``tempfile.mkdtemp`` makes 0o700). Its name records this process, so that a
    later save can remove it if this one is killed before it can (:func:`_remove_abandoned`)."""
    for _ in range(100):
        tmp = out.parent / f".{out.name[:32]}.fabricsim-{os.getpid()}-{_HOST}-{secrets.token_hex(4)}.tmp"
        try:
            os.mkdir(tmp)
        except FileExistsError:
            continue
        return tmp
    raise FileExistsError(f"cannot create a temporary folder beside {out}")


def _alive(pid: int) -> bool:
    """Whether process ``pid`` exists (when in doubt, yes)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (OSError, OverflowError, ValueError):
        return True  # another user's process (EPERM), or a number we cannot ask about
    return True


def _remove_abandoned(folder: Path) -> None:
    """Removes the temporary folders that saves killed outright (SIGKILL, a power cut)
    left in ``folder``: named as :func:`_temporary_sibling` names them, made on this
    machine by a process that no longer exists, and holding only files (save writes no
    folders). Another run's folder, live or on another machine, is left alone; nothing
    here fails a save."""
    try:
        entries = [e for e in os.scandir(folder) if e.name.endswith(".tmp") and e.name.startswith(".")]
    except OSError:
        return
    for entry in entries:
        m = _TEMPORARY.fullmatch(entry.name)
        if m is None or m.group(2) != _HOST or _alive(int(m.group(1))):
            continue
        try:
            if not entry.is_dir(follow_symlinks=False):
                continue
            inside = list(os.scandir(entry.path))
            if any(not f.is_file(follow_symlinks=False) for f in inside):
                continue
            for f in inside:
                os.unlink(f.path)
            os.rmdir(entry.path)
        except OSError:
            continue
