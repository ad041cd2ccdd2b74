"""A sweep's grid: axes of values (lists, ranges, zipped keys, seeds), dotted scenario
keys, and the points they make, each a whole scenario with its id (a hash of it).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

from ._core import ScenarioError

#: Base scenarios a sweep accepts: a TOML file, TOML text, a dict, or a function of the
#: point's parameters that returns a scenario dict (the papers' scenario builders).
BaseLike = Union[str, "os.PathLike[str]", Mapping[str, Any], Callable[..., Mapping[str, Any]]]

#: A dotted key: names and list indices, ``workload[1].size``, ``fabric.ecn.kmin``.
_KEY = re.compile(r"[A-Za-z0-9_-]+(\[[0-9]+\])*(\.[A-Za-z0-9_-]+(\[[0-9]+\])*)*")
_PART = re.compile(r"([A-Za-z0-9_-]+)((?:\[[0-9]+\])*)")

# ---------------------------------------------------------------------------------------
# The grid


@dataclass
class Axis:
    """One dimension of the grid: a key (or several zipped keys) and its values, one
    tuple per step with a value per key."""

    keys: Tuple[str, ...]
    values: List[Tuple[Any, ...]]
    #: The seeds: they set the scenario's top-level ``seed`` (of a builder's scenario
    #: too: they are not its argument).
    seeds: bool = False


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _clean(v: float) -> float:
    """``0.1 * 3`` as 0.3: steps are added in binary, the values meant are decimal."""
    return float(f"{v:.12g}")


def expand_range(spec: Mapping[str, Any], where: str) -> List[Any]:
    """The values of a range table: ``{from, to, step}`` (arithmetic) or ``{from, to,
    times}`` (geometric), ``to`` included, with an optional ``unit`` appended to every
    value (``{from = 12.5, to = 400, times = 2, unit = "KB"}``: "12.5KB" ... "400KB")."""
    allowed = {"from", "to", "step", "times", "unit"}
    unknown = sorted(set(spec) - allowed)
    if unknown:
        raise ScenarioError(f"{where}: unknown key {unknown[0]!r} in a range (allowed: from, to, and step or times; unit)")
    if "from" not in spec or "to" not in spec or ("step" in spec) == ("times" in spec):
        raise ScenarioError(f"{where}: a range needs from, to, and one of step (added) or times (multiplied), "
                            f"e.g. {{ from = 0, to = 0.03, step = 0.01 }}; got {dict(spec)}")
    lo, hi = spec["from"], spec["to"]
    for k in ("from", "to", "step", "times"):
        if k in spec and not _number(spec[k]):
            raise ScenarioError(f"{where}: range {k} must be a number, got {spec[k]!r}")
    if hi < lo:
        raise ScenarioError(f"{where}: range to ({hi}) is below from ({lo})")
    unit = spec.get("unit")
    if unit is not None and not isinstance(unit, str):
        raise ScenarioError(f"{where}: range unit must be a string such as \"KB\", got {unit!r}")
    out: List[Any] = []
    if "step" in spec:
        step = spec["step"]
        if not step > 0:
            raise ScenarioError(f"{where}: range step must be above 0, got {step}")
        n = int(math.floor((hi - lo) / step * (1 + 1e-12) + 1e-9)) + 1
        if n > MAX_POINTS:
            raise ScenarioError(f"{where}: the range has {n:,} values (at most {MAX_POINTS:,})")
        exact = all(isinstance(x, int) for x in (lo, hi, step))
        out = [lo + i * step if exact else _clean(lo + i * step) for i in range(n)]
    else:
        times = spec["times"]
        if not times > 1:
            raise ScenarioError(f"{where}: range times must be above 1, got {times}")
        if not lo > 0:
            raise ScenarioError(f"{where}: a range with times must start above 0, got from = {lo}")
        exact = all(isinstance(x, int) for x in (lo, hi, times))
        v = lo
        while v <= hi * (1 + 1e-9):
            out.append(v if exact else _clean(v))
            v = v * times
            if len(out) > MAX_POINTS:
                raise ScenarioError(f"{where}: the range has more than {MAX_POINTS:,} values")
    if unit is not None:
        out = [f"{x:g}{unit}" for x in out]
    return out


#: More points than any machine or cluster would run; a typo in a range is caught here.
MAX_POINTS = 1_000_000


def _values(v: Any, where: str) -> List[Any]:
    """A grid entry's list of values: a list, a range table, a Python range or a numpy
    array."""
    if type(v).__module__.split(".")[0] == "numpy" and hasattr(v, "tolist"):
        v = v.tolist()
    if isinstance(v, range):
        v = list(v)
    if isinstance(v, Mapping):
        return expand_range(v, where)
    if isinstance(v, (list, tuple)):
        if not v:
            raise ScenarioError(f"{where}: empty list of values; give at least one")
        return [x.tolist() if type(x).__module__.split(".")[0] == "numpy" and hasattr(x, "tolist") else x for x in v]
    raise ScenarioError(f"{where}: expected a list of values or a range table "
                        f"({{ from = 1, to = 8, step = 1 }} or {{ from = 4, to = 256, times = 2 }}), got {v!r}")


def _check_key(key: Any, where: str) -> str:
    if not isinstance(key, str) or not _KEY.fullmatch(key):
        raise ScenarioError(f"{where}: {key!r} is not a dotted key such as \"topology.k\", \"fabric.link_loss\" "
                            f"or \"workload[1].size\"")
    return key


def _flatten(grid: Mapping[str, Any], prefix: str = "") -> Iterator[Tuple[str, Any]]:
    """Grid entries with dotted keys: ``{fabric = {link_loss = [...]}}`` (unquoted dotted
    keys in TOML) is ``"fabric.link_loss"``. A table with ``from`` is a range, not a
    level of keys (no scenario key is named ``from``)."""
    for k, v in grid.items():
        key = f"{prefix}.{k}" if prefix else str(k)
        if isinstance(v, Mapping) and "from" not in v:
            if not v:
                raise ScenarioError(f"grid.{key}: empty table; give a list of values or a range")
            yield from _flatten(v, key)
        else:
            yield key, v


def axes(grid: Union[Mapping[str, Any], Sequence[Mapping[str, Any]], None], zip: Sequence[Mapping[str, Any]] = (),
         seeds: Any = None, *, named: bool = False, where: str = "sweep") -> List[Axis]:
    """The sweep's axes, in order: every grid key (or the grid's listed points, one axis),
    then each zipped group, then the seeds (the last axis varies fastest). ``named`` keys
    are parameters of a builder function rather than dotted scenario keys."""
    out: List[Axis] = []
    seen: Dict[str, str] = {}

    def add(key: str, field_: str) -> None:
        if not named:
            _check_key(key, f"{where}: {field_}")
        if key in seen:
            raise ScenarioError(f"{where}: {field_}: {key!r} is varied twice (also in {seen[key]})")
        seen[key] = field_

    if isinstance(grid, (list, tuple)):
        out.append(_listed(grid, named, where))
        for k in out[0].keys:
            add(k, "grid[0]")
        grid = None
    if grid is not None and not isinstance(grid, Mapping):
        raise ScenarioError(f"{where}: grid: expected a table of keys to their values, or a list of such "
                            f"tables (points), got {type(grid).__name__}")
    for key, v in (_flatten(grid) if grid and not named else (grid or {}).items()):
        add(key, f"grid.{json.dumps(key)}")
        out.append(Axis((key,), [(x,) for x in _values(v, f"{where}: grid.{json.dumps(key)}")]))
    if isinstance(zip, Mapping):
        zip = [zip]
    if not isinstance(zip, (list, tuple)):
        raise ScenarioError(f"{where}: zip: expected a list of tables of equally long lists, got {type(zip).__name__}")
    for i, group in enumerate(zip):
        field_ = f"zip[{i}]"
        if not isinstance(group, Mapping) or not group:
            raise ScenarioError(f"{where}: {field_}: expected a table of two or more keys to lists of equal length")
        entries = list(_flatten(group) if not named else group.items())
        lists = []
        for key, v in entries:
            add(key, f"{field_}.{json.dumps(key)}")
            lists.append(_values(v, f"{where}: {field_}.{json.dumps(key)}"))
        lengths = {len(x) for x in lists}
        if len(lengths) > 1:
            sizes = ", ".join(f"{k} has {len(x)}" for (k, _), x in builtin_zip(entries, lists))
            raise ScenarioError(f"{where}: {field_}: zipped keys must have as many values each ({sizes})")
        out.append(Axis(tuple(k for k, _ in entries), [tuple(t) for t in builtin_zip(*lists)]))
    if seeds is not None:
        if "seed" in seen:
            raise ScenarioError(f"{where}: seeds: the seed is also varied in {seen['seed']}; give it once")
        values = _values(seeds, f"{where}: seeds")
        for s in values:
            if not isinstance(s, int) or isinstance(s, bool) or not 0 <= s < 2**63:
                raise ScenarioError(f"{where}: seeds: expected integers between 0 and 2^63-1, got {s!r}")
        out.append(Axis(("seed",), [(s,) for s in values], seeds=True))
    if not out:
        raise ScenarioError(f"{where}: nothing to vary: the grid is empty and no seeds are given "
                            f"(give grid keys with lists of values or ranges, zipped keys, or seeds)")
    return out


builtin_zip = zip


def _listed(grid: Sequence[Any], named: bool, where: str) -> Axis:
    """A grid given as a list of points (tables of the same keys), run as listed."""
    if not grid:
        raise ScenarioError(f"{where}: grid: empty list of points; give at least one")
    keys: Optional[Tuple[str, ...]] = None
    values = []
    for i, point in enumerate(grid):
        if not isinstance(point, Mapping) or not point:
            raise ScenarioError(f"{where}: grid[{i}]: expected a table of keys to values, got {point!r}")
        these = tuple(point)
        if keys is None:
            keys = these
            if not named:
                for k in keys:
                    _check_key(k, f"{where}: grid[0]")
        elif set(these) != set(keys):
            raise ScenarioError(f"{where}: grid[{i}]: every point must have the same keys "
                                f"(grid[0] has {', '.join(keys)}; this one {', '.join(these)})")
        values.append(tuple(point[k] for k in keys))
    assert keys is not None
    return Axis(keys, values)


# ---------------------------------------------------------------------------------------
# Points


def _parts(key: str) -> List[Union[str, int]]:
    out: List[Union[str, int]] = []
    for name in key.split("."):
        m = _PART.fullmatch(name)
        assert m is not None  # checked by _check_key
        out.append(m.group(1))
        out.extend(int(i) for i in re.findall(r"\[([0-9]+)\]", m.group(2)))
    return out


def set_key(scenario: Dict[str, Any], key: str, value: Any) -> None:
    """Sets the dotted ``key`` of ``scenario`` (a plain dict, changed in place), making
    missing tables on the way. A single ``[workload]`` table is also ``workload[0]``, as
    the core names it in errors; a list of tables must be indexed."""
    parts = _parts(key)
    node: Any = scenario
    path = ""
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        if isinstance(part, int):
            if isinstance(node, dict) and part == 0 and not last:
                # ``workload[0]`` of a scenario with one [workload] table: that table.
                path = f"{path}[0]"
                continue
            if not isinstance(node, list):
                raise ScenarioError(f"{path} is {_kind(node)}, not a list")
            if part >= len(node):
                raise ScenarioError(f"{path} has {len(node)} entries ({path}[0] to {path}[{len(node) - 1}])")
            path = f"{path}[{part}]"
            if last:
                node[part] = value
                return
            node = node[part]
            continue
        if isinstance(node, list):
            raise ScenarioError(f"{path} is a list of {len(node)} tables; name one, e.g. {path}[0].{part}")
        if not isinstance(node, dict):
            raise ScenarioError(f"{path} is {_kind(node)}, not a table")
        path = f"{path}.{part}" if path else part
        if last:
            node[part] = value
            return
        if part not in node:
            if isinstance(parts[i + 1], int):
                raise ScenarioError(f"the base scenario has no {path} to index")
            node[part] = {}
        node = node[part]


def _kind(v: Any) -> str:
    return {dict: "a table", list: "a list", str: "a string", bool: "a boolean", int: "an integer",
            float: "a number"}.get(type(v), type(v).__name__)


def point_id(scenario: Mapping[str, Any]) -> str:
    """The id of a point: a hash of its whole scenario (key order aside)."""
    text = json.dumps(scenario, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass
class Point:
    """One run of a sweep."""

    #: Position in the sweep (the row of ``sweep.parquet``).
    index: int
    #: The varied parameters' values, by key (``seed`` last if seeds are varied).
    params: Dict[str, Any]
    #: The whole scenario this point runs (a plain dict).
    scenario: Dict[str, Any] = field(repr=False)
    #: Hash of ``scenario``: the point's folder is ``points/<id>``.
    id: str = ""


def _base_dict(base: Any, where: str) -> Dict[str, Any]:
    """A base scenario given as a file, TOML text or dict, as a plain dict."""
    from .api import _plain, load

    if isinstance(base, Mapping):
        return _plain(base, "")
    text, fmt, path = load(base)
    try:
        return _plain(loads_toml(text), "")
    except ValueError as e:
        raise ScenarioError(f"{path or 'base scenario'}: {e}") from None


def loads_toml(text: str) -> Dict[str, Any]:
    """TOML text as a dict (tomllib, or tomli before Python 3.11)."""
    try:
        import tomllib  # type: ignore[import-not-found]
    except ImportError:  # Python < 3.11
        import tomli as tomllib  # type: ignore[no-redef]
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ValueError(f"not valid TOML: {e}") from None


def points(base: BaseLike, ax: List[Axis], where: str = "sweep") -> List[Point]:
    """Every point of the grid: the cartesian product of the axes, the first axis
    varying slowest."""
    from .api import _plain

    total = math.prod(len(a.values) for a in ax)
    if total > MAX_POINTS:
        sizes = " x ".join(f"{len(a.values)} ({', '.join(a.keys)})" for a in ax)
        raise ScenarioError(f"{where}: the grid has {total:,} points ({sizes}); at most {MAX_POINTS:,}")
    builder = base if callable(base) and not isinstance(base, Mapping) else None
    template = None if builder is not None else _base_dict(base, where)
    out = []
    for i, combo in enumerate(itertools.product(*(a.values for a in ax))):
        params: Dict[str, Any] = {}
        kwargs: Dict[str, Any] = {}
        for a, values in builtin_zip(ax, combo):
            params.update(builtin_zip(a.keys, values))
            if not a.seeds:
                kwargs.update(builtin_zip(a.keys, values))
        if builder is not None:
            try:
                sc = builder(**kwargs)
            except Exception as e:  # noqa: BLE001 - the builder's own error, named with the point
                raise ScenarioError(f"{where}: point {i} ({_show(params)}): the builder failed: "
                                    f"{type(e).__name__}: {e}") from None
            if not isinstance(sc, Mapping):
                raise ScenarioError(f"{where}: the builder returned {type(sc).__name__}, not a scenario dict")
            sc = _plain(sc, "")
            if "seed" in params and "seed" not in kwargs:
                sc["seed"] = params["seed"]
        else:
            sc = json.loads(json.dumps(template))
            for key, value in params.items():
                try:
                    set_key(sc, key, _plain(value, key))
                except ScenarioError as e:
                    raise ScenarioError(f"{where}: grid key {json.dumps(key)}: {e}") from None
        out.append(Point(i, params, sc, point_id(sc)))
    return out


def _show(params: Mapping[str, Any]) -> str:
    return ", ".join(f"{k} = {json.dumps(v, default=str)}" for k, v in params.items())


def _normal(key: str) -> str:
    """A dotted key as the core names it in errors (``workload.size`` is
    ``workload[0].size``)."""
    return re.sub(r"^workload\.", "workload[0].", re.sub(r"^faults\.", "faults[0].", key))


def validate_points(pts: Sequence[Point], where: str = "sweep", skip: Sequence[bool] = ()) -> None:
    """Checks every point with the core before anything runs; the first bad one is
    refused, named by the grid key the core's message is about, or by its values."""
    from . import _core

    for p in pts:
        if skip and skip[p.index]:
            continue
        try:
            _core.validate(json.dumps(p.scenario, allow_nan=False), "json")
        except ScenarioError as e:
            msg = str(e)
            about = msg.split(":", 1)[0]
            for key, value in p.params.items():
                if about in (key, _normal(key)) or about.startswith((key + ".", _normal(key) + ".")):
                    raise ScenarioError(f"{where}: grid key {json.dumps(key)} = {json.dumps(value)}: {msg}") from None
            raise ScenarioError(f"{where}: point {p.index} ({_show(p.params)}): {msg}") from None
