"""The Python API: run and validate scenarios given as files, TOML text or dicts."""

from __future__ import annotations

import errno
import json
import math
import os
import re
import stat
import tempfile
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, Mapping, Optional, Tuple, Union

from . import _core, _toml
from ._core import ScenarioError

if TYPE_CHECKING:
    from .results import Result

ScenarioLike = Union[str, "os.PathLike[str]", Mapping[str, Any]]

# Deeper than any real scenario (about 4 levels) and far below Python's recursion limit:
# a dict nested thousands deep failed with a RecursionError from inside json.
MAX_DEPTH = 64


def default_scenario() -> Path:
    """Path of the bundled default scenario."""
    return Path(str(resources.files("fabricsim") / "scenarios" / "default.toml"))


def _plain(value: Any, path: str, depth: int = 0) -> Any:
    """A copy of a scenario dict's value with only JSON types, or a ScenarioError naming
    the key path (as the core does: ``topology.k``, ``workload[0].size``).

    The core would refuse None, NaN or a numpy scalar only with a JSON line and column,
    so they are checked here. numpy scalars (and arrays) become Python values; numpy is
    recognised by module name so that it is not imported here.
    """
    where = path or "scenario"
    if depth > MAX_DEPTH:
        # The start of the path is enough to find it; the whole one is 64 keys long.
        raise ScenarioError(f"{where if len(where) <= 60 else where[:57] + '...'}: nested more than {MAX_DEPTH} levels deep")
    if type(value).__module__.split(".")[0] in ("numpy", "pandas") and hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, range):
        value = list(value)
    if value is None:
        raise ScenarioError(f"{where}: expected a value, got None (leave the key out for its default)")
    if isinstance(value, (str, bool)):
        return value
    if isinstance(value, int):
        # The core reads integers as 64-bit: a larger one failed with a JSON column
        # ("u64 value was too large") or, beyond 2^64, as "got a float".
        if not -2**63 <= value < 2**63:
            raise ScenarioError(f"{where}: integers must be between -2^63 and 2^63-1 "
                                f"(-9223372036854775808 and 9223372036854775807), got {value}")
        return int(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ScenarioError(f"{where}: expected a finite number, got {value!r}")
        return float(value)
    if isinstance(value, Mapping):
        out = {}
        # A single workload table is workload 0, as the core names it.
        prefix = "workload[0]" if path == "workload" else path
        for k, v in value.items():
            if not isinstance(k, str):
                raise ScenarioError(f"{where}: keys must be strings, got {type(k).__name__} {shown(k)}")
            key = k if _BARE_KEY.fullmatch(k) else json.dumps(k)
            out[k] = _plain(v, f"{prefix}.{key}" if prefix else key, depth + 1)
        return out
    if isinstance(value, (list, tuple)):
        return [_plain(v, f"{where}[{i}]", depth + 1) for i, v in enumerate(value)]
    if isinstance(value, (set, frozenset)):
        raise ScenarioError(f"{where}: expected a list, got a {type(value).__name__}, which has no order (use sorted(...))")
    raise ScenarioError(f"{where}: expected a string, number, boolean, table or list, got {type(value).__name__}")


def shown(value: Any) -> str:
    """``repr(value)`` for an error message, cut after 64 characters (followed by ``...``
    and the full length), as the core quotes the values it refuses."""
    text = repr(value)
    return text if len(text) <= 64 else f"{text[:64]}... ({len(text)} characters)"


#: A key TOML writes without quotes (others are quoted in error paths, as the core does).
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


#: The largest scenario file read, bytes. Scenario files are a few KB (a list of 100,000
#: flows is about 4 MB); reading /dev/zero or a runaway generated file would only fill
#: memory. Larger scenarios can be given as a dict.
MAX_SCENARIO_BYTES = 16 * 2**20

#: What a path that is not a regular file names, in words.
_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def _exists(path: Path) -> bool:
    """Whether ``path`` names anything (following links), false rather than an OSError for
    a string that cannot be a path at all (TOML text longer than a file name may be:
    ENAMETOOLONG)."""
    try:
        os.stat(path)
    except (OSError, ValueError):
        return False
    return True


def _not_a_file(path: Path, mode: int) -> ScenarioError:
    kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
    return ScenarioError(f"scenario: {path} is {kind}; name a scenario TOML file")


def _too_large(path: Path, size: str) -> ScenarioError:
    return ScenarioError(f"scenario: {path} has {size} bytes, more than the {MAX_SCENARIO_BYTES // 2**20} MiB "
                         f"({MAX_SCENARIO_BYTES} bytes) a scenario file may have (give a larger one as a dict)")


def _read(path: Path) -> str:
    """The text of scenario file ``path``. Anything but a regular file (a folder, a FIFO,
    /dev/zero, a socket) is named as what it is, and nothing larger than
    :data:`MAX_SCENARIO_BYTES` is read: the type and size are checked on the open file
    (opened without blocking, so a FIFO that nobody writes cannot hang the read)."""
    try:
        st = os.stat(path)
    except (OSError, ValueError) as e:
        if isinstance(e, ValueError) or e.errno in (errno.ENOENT, errno.ENOTDIR, errno.ENAMETOOLONG):
            raise ScenarioError(f"scenario file not found: {path}") from None
        raise ScenarioError(f"cannot read scenario file {path}: {(e.strerror or str(e)).lower()}") from None
    # Checked before opening: opening some devices has effects of its own.
    if not stat.S_ISREG(st.st_mode):
        raise _not_a_file(path, st.st_mode)
    if st.st_size > MAX_SCENARIO_BYTES:
        raise _too_large(path, f"{st.st_size}")
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
        with os.fdopen(fd, "rb") as f:
            # Checked again on what was opened: the path may have changed meanwhile.
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode):
                raise _not_a_file(path, st.st_mode)
            data = f.read(MAX_SCENARIO_BYTES + 1)
    except OSError as e:
        raise ScenarioError(f"cannot read scenario file {path}: {(e.strerror or str(e)).lower()}") from None
    if len(data) > MAX_SCENARIO_BYTES:
        raise _too_large(path, "more than that")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ScenarioError(f"cannot read scenario file {path}: not UTF-8 text ({e.reason} at byte {e.start})") from None


def load(scenario: ScenarioLike) -> Tuple[str, str, Optional[Path]]:
    """Turns a scenario argument into ``(text, format, source path)``.

    A mapping is sent as JSON; a path (or a string naming something that exists) is
    read; any other string containing ``=`` or a newline is taken as TOML text, except a
    one-line string ending in ``.toml``, which is a path (``"sweeps/loss=0.01.toml"``
    that does not exist is "scenario file not found", not a TOML error).
    """
    if isinstance(scenario, Mapping):
        return json.dumps(_plain(scenario, ""), allow_nan=False), "json", None
    if isinstance(scenario, str) and not scenario:
        # Path("") is ".", which was reported as "scenario file not found: .".
        raise ScenarioError("scenario: empty path (expected a file path, TOML text or a dict)")
    if isinstance(scenario, (str, os.PathLike)):
        path = Path(scenario)
        text = str(scenario)
        if (isinstance(scenario, os.PathLike) or _exists(path) or not ("=" in text or "\n" in text)
                or (text.endswith(".toml") and "\n" not in text)):
            return _read(path), "toml", path
        return str(scenario), "toml", None
    raise ScenarioError(f"scenario: expected a file path, TOML text or a dict, got {type(scenario).__name__}")


def run(scenario: ScenarioLike, *, seed: Optional[int] = None, progress: bool = False,
        pcap: Optional[str] = None, pcap_snap: Optional[int] = None, partitions: Optional[int] = None) -> Result:
    """Runs a scenario and returns its :class:`Result`.

    ``seed`` overrides the scenario's seed, ``partitions`` its number of partitions (1 to
    ``_core.MAX_PARTITIONS``, 8, simulated on as many threads; results depend on it, as
    on the seed); ``progress`` draws a progress line on stderr. The overrides are recorded in the summary's echo of
    the scenario and in the ``scenario.toml`` that ``Result.save`` writes, so that
    running that file again gives the same results.
    ``pcap`` (comma-separated port, host or switch names, e.g. ``"leaf[0].up[1],host[3]"``)
    captures the frames crossing those cables, both directions, whole, or with payloads cut
    to ``pcap_snap`` bytes (only with ``pcap``; Wireshark then marks RoCE frames malformed,
    since their headers give the uncut length) (on any number of partitions: their frames are
    merged by time). The capture is ``Result.pcap``, a temporary file that lives as
    long as the Result: it is removed when the Result is garbage collected or Python
    exits, unless ``Result.save`` has copied it into an output folder as
    ``capture.pcap``; ``Result.pcap`` is then that copy (and later saves copy it again).
    """
    # numpy integers (a sweep over numpy.arange) are plain integers here.
    seed, partitions, pcap_snap = (v.item() if type(v).__module__ == "numpy" and hasattr(v, "item") else v
                                   for v in (seed, partitions, pcap_snap))
    if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool) or seed < 0 or seed >= 2**63):
        raise ScenarioError(f"seed: expected an integer between 0 and 2^63-1, got {shown(seed)}")
    top = _core.MAX_PARTITIONS
    if partitions is not None and (not isinstance(partitions, int) or isinstance(partitions, bool) or not 1 <= partitions <= top):
        raise ScenarioError(f"partitions: expected an integer between 1 and {top}, got {shown(partitions)}")
    if pcap_snap is not None and pcap is None:
        raise ScenarioError("pcap_snap: applies to a capture; give pcap (the links to capture) too")
    if pcap_snap is None:
        # Whole frames (no frame is longer): Wireshark's InfiniBand dissector reports a
        # frame whose payload is cut as "[Malformed Packet]".
        pcap_snap = 65535
    if not isinstance(pcap_snap, int) or isinstance(pcap_snap, bool) or not 0 <= pcap_snap <= 65535:
        raise ScenarioError(f"pcap_snap: expected an integer between 0 and 65535, got {shown(pcap_snap)}")
    # The core takes only these exact types and would raise a bare TypeError.
    if not isinstance(progress, bool):
        raise ScenarioError(f"progress: expected True or False, got {shown(progress)}")
    if pcap is not None and not isinstance(pcap, str):
        raise ScenarioError(f"pcap: expected a string of comma-separated port, host or switch names "
                            f"(e.g. \"leaf[0].up[1],host[3]\") or None, got {shown(pcap)}")
    plain = _plain(scenario, "") if isinstance(scenario, Mapping) else None
    if plain is not None:
        text, fmt, path = json.dumps(plain, allow_nan=False), "json", None
    else:
        text, fmt, path = load(scenario)
    # Imported here, not at the top: fabricsim.results brings pandas and pyarrow, which
    # validating or listing does not need.
    from .results import Result

    capture = None
    if pcap is not None:
        fd, name = tempfile.mkstemp(prefix="fabricsim-", suffix=".pcap")
        os.close(fd)
        capture = Path(name)
    try:
        raw = _core.run(text, fmt, seed, progress, pcap, None if capture is None else str(capture), pcap_snap, partitions,
                        _base(path))
    except BaseException:
        if capture is not None:
            capture.unlink(missing_ok=True)
        raise
    result = Result.from_core(raw, source=path, pcap=capture, pcap_is_temporary=True)
    overrides = {k: v for k, v in (("seed", seed), ("partitions", partitions)) if v is not None}
    result.scenario_text = _scenario_toml(text if plain is None else None, plain, overrides, result.summary)
    return result


def _scenario_toml(text: Optional[str], plain: Optional[Dict[str, Any]], overrides: Dict[str, Any],
                   summary: Dict[str, Any]) -> str:
    """The scenario that ran, as TOML that runs the same: the TOML text with the run's
    ``seed`` and ``partitions`` overrides set in it, or a dict written as TOML."""
    if text is not None:
        saved = _toml.with_overrides(text, overrides, "override of this run")
        if saved is not None:
            return saved
        # The text's top-level keys could not be edited safely: the document as the core
        # read it, overrides included (comments and layout are lost).
        return _toml.dumps(summary["scenario"])
    return _toml.dumps({**plain, **overrides})


def validate(scenario: ScenarioLike) -> Dict[str, Any]:
    """Checks a scenario without running it; returns its name, hosts, connections and flows."""
    text, fmt, path = load(scenario)
    return dict(_core.validate(text, fmt, _base(path)))


def _base(path: Optional[Path]) -> Optional[str]:
    """The folder trace files named by a scenario are relative to: the scenario file's
    (None for text and dicts: the current directory)."""
    return None if path is None else str(path.resolve().parent)


def catalog() -> list:
    """Every scenario section, kind and key, with types, defaults and meaning."""
    return json.loads(_core.catalog())
