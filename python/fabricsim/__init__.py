"""fabricsim: a fast, deterministic packet-level simulator of RDMA fabrics.

    import fabricsim
    r = fabricsim.run("scenario.toml")      # or a dict with the same structure
    r.flows        # pandas DataFrame, one row per flow (message)
    r.ports        # pandas DataFrame, sampled port time series
    r.summary      # dict
    r.save("out")  # Parquet tables, summary.json, scenario.toml and plots, written atomically

Scenario errors raise :class:`ScenarioError` (a ``ValueError``) whose message names the
key and the allowed values, exactly as the command line prints it. A plot matplotlib
cannot draw does not lose a run: ``save`` writes the tables and warns (:class:`PlotWarning`).
"""

from ._core import ScenarioError, __version__
from .api import catalog, default_scenario, run, validate
from .fct import slowdown_by_size
from .results import PlotWarning, Result

__all__ = ["run", "validate", "catalog", "default_scenario", "slowdown_by_size", "Result", "ScenarioError", "PlotWarning",
           "__version__"]
