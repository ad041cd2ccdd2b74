"""fabricsim: a fast, deterministic packet-level simulator of RDMA fabrics.

    import fabricsim
    r = fabricsim.run("scenario.toml")      # or a dict with the same structure
    r.flows        # pandas DataFrame, one row per flow (message)
    r.ports        # pandas DataFrame, sampled port time series
    r.summary      # dict
    r.save("out")  # Parquet tables, summary.json, scenario.toml and plots, written atomically
    fabricsim.load("out")                   # the same Result, read back

    sw = fabricsim.sweep("scenario.toml", {"fabric.link_loss": [0, 0.01]}, seeds=[1, 2], out="sw")
    sw.table       # pandas DataFrame (sweep.parquet), one row per point
    fabricsim.report("sw")                  # sw/report.html: one self-contained page

Scenario errors raise :class:`ScenarioError` (a ``ValueError``) whose message names the
key and the allowed values, exactly as the command line prints it. A plot matplotlib
cannot draw does not lose a run: ``save`` writes the tables and warns (:class:`PlotWarning`).

The submodules load on first use (pandas takes a good part of a second to import), so
``fabricsim --help`` and ``import fabricsim`` stay quick.
"""

# Only modules Python has loaded at start-up come before the handler below: `_signal` is
# the C module behind `signal`, whose import (enum) takes 6 ms more of that window.
import _signal
import os as _os
import sys as _sys


def _interrupted_early(signum, frame) -> None:  # type: ignore[no-untyped-def]
    _os.write(2, b"fabricsim: interrupted\n")
    _os._exit(130)


def _command() -> bool:
    """Whether this process is the ``fabricsim`` command: its console script, or
    ``python -m fabricsim`` (on Python 3.10+, which tells the module in orig_argv)."""
    argv0 = _sys.argv[0] if _sys.argv else ""
    if _os.path.basename(argv0) in ("fabricsim", "fabricsim.exe"):
        return True
    if argv0 != "-m":  # "-m" while python -m locates its module (and imports this package)
        return False
    orig = list(getattr(_sys, "orig_argv", []))
    return "-m" in orig and orig[orig.index("-m") + 1:][:1] == ["fabricsim"]


# The command's own KeyboardInterrupt handling (cli.main) starts only once the package
# and the command module are imported; a Ctrl-C before that printed a traceback. Until
# main() takes over (and puts Python's handler back), Ctrl-C ends the command at once
# with its usual message and status. Not for other programs importing fabricsim, and not
# where SIGINT is ignored (a background job).
if _command() and _signal.getsignal(_signal.SIGINT) is _signal.default_int_handler:
    try:
        _signal.signal(_signal.SIGINT, _interrupted_early)
    except ValueError:  # not the main thread
        pass

from typing import Any  # noqa: E402 - after the handler: every import before it is a window

from ._core import ScenarioError, __version__  # noqa: E402

#: Where each public name lives: imported on first use, so that `fabricsim validate`
#: and `list` need none of pandas, pyarrow or matplotlib (their imports took about
#: 0.65 s before anything ran).
_LAZY = {
    "run": "api", "validate": "api", "catalog": "api", "default_scenario": "api",
    "Result": "results", "PlotWarning": "results", "load": "results",
    "slowdown_by_size": "fct",
    "sweep": "sweeps", "Sweep": "sweeps", "report": "reports",
}

__all__ = ["run", "validate", "catalog", "default_scenario", "load", "slowdown_by_size", "sweep", "Sweep", "report",
           "Result", "ScenarioError", "PlotWarning", "__version__"]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'fabricsim' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list:
    return sorted(set(globals()) | set(__all__))
