"""The Python API: run and validate scenarios given as files, TOML text or dicts."""

from __future__ import annotations

import json
import os
import tempfile
from importlib import resources
from pathlib import Path
from typing import Any, Dict, Mapping, Optional, Tuple, Union

from . import _core
from ._core import ScenarioError
from .results import Result

ScenarioLike = Union[str, "os.PathLike[str]", Mapping[str, Any]]


def default_scenario() -> Path:
    """Path of the bundled default scenario."""
    return Path(str(resources.files("fabricsim") / "scenarios" / "default.toml"))


def load(scenario: ScenarioLike) -> Tuple[str, str, Optional[Path]]:
    """Turns a scenario argument into ``(text, format, source path)``.

    A mapping is sent as JSON; a path (or a string naming an existing file) is read;
    any other string containing ``=`` or a newline is taken as TOML text.
    """
    if isinstance(scenario, Mapping):
        try:
            return json.dumps(scenario), "json", None
        except (TypeError, ValueError) as e:
            raise ScenarioError(f"the scenario dict cannot be encoded: {e}") from None
    if isinstance(scenario, (str, os.PathLike)):
        path = Path(scenario)
        if isinstance(scenario, os.PathLike) or path.is_file() or not ("=" in str(scenario) or "\n" in str(scenario)):
            if not path.is_file():
                raise ScenarioError(f"scenario file not found: {path}")
            try:
                return path.read_text(encoding="utf-8"), "toml", path
            except (OSError, UnicodeDecodeError) as e:
                raise ScenarioError(f"cannot read scenario file {path}: {e}") from None
        return str(scenario), "toml", None
    raise ScenarioError(f"scenario: expected a file path, TOML text or a dict, got {type(scenario).__name__}")


def run(scenario: ScenarioLike, *, seed: Optional[int] = None, progress: bool = False,
        pcap: Optional[str] = None, pcap_snap: int = 128, partitions: Optional[int] = None) -> Result:
    """Runs a scenario and returns its :class:`Result`.

    ``seed`` overrides the scenario's seed, ``partitions`` its number of partitions (1 to
    8, simulated on as many threads; results depend on it, as on the seed); ``progress``
    draws a progress line on stderr.
    ``pcap`` (comma-separated port, host or switch names, e.g. ``"leaf[0].up[1],host[3]"``)
    captures the frames crossing those cables, both directions, with payloads cut to
    ``pcap_snap`` bytes; the file is ``Result.pcap`` and ``Result.save`` moves it into
    the output folder as ``capture.pcap``.
    """
    if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool) or seed < 0 or seed >= 2**63):
        raise ScenarioError(f"seed: expected an integer between 0 and 2^63-1, got {seed!r}")
    if partitions is not None and (not isinstance(partitions, int) or isinstance(partitions, bool) or not 1 <= partitions <= 8):
        raise ScenarioError(f"partitions: expected an integer between 1 and 8, got {partitions!r}")
    if not isinstance(pcap_snap, int) or isinstance(pcap_snap, bool) or not 0 <= pcap_snap <= 65535:
        raise ScenarioError(f"pcap_snap: expected an integer between 0 and 65535, got {pcap_snap!r}")
    text, fmt, path = load(scenario)
    capture = None
    if pcap is not None:
        fd, name = tempfile.mkstemp(prefix="fabricsim-", suffix=".pcap")
        os.close(fd)
        capture = Path(name)
    try:
        raw = _core.run(text, fmt, seed, progress, pcap, None if capture is None else str(capture), pcap_snap, partitions)
    except BaseException:
        if capture is not None:
            capture.unlink(missing_ok=True)
        raise
    return Result.from_core(raw, scenario_text=text if fmt == "toml" else None, source=path, pcap=capture)


def validate(scenario: ScenarioLike) -> Dict[str, Any]:
    """Checks a scenario without running it; returns its name, hosts, connections and flows."""
    text, fmt, _ = load(scenario)
    return dict(_core.validate(text, fmt))


def catalog() -> list:
    """Every scenario section, kind and key, with types, defaults and meaning."""
    return json.loads(_core.catalog())
