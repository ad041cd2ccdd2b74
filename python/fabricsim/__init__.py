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

from typing import Any

from ._core import ScenarioError, __version__

#: Where each public name lives.
_LAZY = {
    "run": "api", "validate": "api", "catalog": "api", "default_scenario": "api",
    "Result": "results", "PlotWarning": "results", "load": "results",
    "sweep": "sweeps", "Sweep": "sweeps", "report": "reports",
}

__all__ = ["run", "validate", "catalog", "default_scenario", "load", "sweep", "Sweep", "report", "Result",
           "ScenarioError", "PlotWarning", "__version__"]


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
