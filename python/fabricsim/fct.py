"""FCT slowdown by flow size: the plot HPCC's and Parsimon's evaluations draw."""

from __future__ import annotations

from typing import Sequence, Union

import numpy as np
import pandas as pd

#: Decade edges in bytes, as the summary's ``slowdown_by_size`` uses them.
DECADES = (0, 1_000, 10_000, 100_000, 1_000_000, 10_000_000, np.inf)


def slowdown_by_size(flows: pd.DataFrame, bins: Union[str, int, Sequence[float]] = "decade") -> pd.DataFrame:
    """Slowdown percentiles of the finished flows, by flow size.

    ``bins``: ``"decade"`` (sizes up to 1 KB, 1-10 KB, ... above 10 MB, as the
    summary), an integer ``k`` (``k`` bins of equally many flows by size, HPCC's
    analysis), or a list of byte edges. One row per non-empty bin: its size range,
    ``flows``, the ``mean`` and ``p50``/``p95``/``p99`` slowdown.
    """
    done = flows.dropna(subset=["fct_ns"]).sort_values("size_bytes", kind="stable")
    size = done["size_bytes"].to_numpy(dtype=float)
    slow = done["slowdown"].to_numpy(dtype=float)
    if isinstance(bins, str):
        if bins != "decade":
            raise ValueError(f"bins: expected \"decade\", a number of bins or a list of edges, got {bins!r}")
        edges = np.asarray(DECADES, dtype=float)
        which = np.searchsorted(edges[1:-1], size, side="left")
    elif isinstance(bins, (int, np.integer)):
        if bins < 1:
            raise ValueError(f"bins: expected at least 1 bin, got {bins}")
        which = (np.arange(len(size)) * bins) // max(len(size), 1)
        edges = None
    else:
        edges = np.asarray(list(bins), dtype=float)
        which = np.searchsorted(edges[1:-1], size, side="left")
    rows = []
    for k in np.unique(which):
        s = slow[which == k]
        z = size[which == k]
        rows.append({"min_bytes": float(z.min()) if edges is None else float(edges[k]),
                     "max_bytes": float(z.max()) if edges is None else float(edges[k + 1]),
                     "flows": int(len(s)), "mean": float(s.mean()),
                     "p50": float(np.percentile(s, 50)), "p95": float(np.percentile(s, 95)),
                     "p99": float(np.percentile(s, 99))})
    return pd.DataFrame(rows, columns=["min_bytes", "max_bytes", "flows", "mean", "p50", "p95", "p99"])
