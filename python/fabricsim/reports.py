"""``fabricsim report DIR``: one self-contained HTML page for a run or a sweep.

The page needs nothing else: plots are PNGs inside it (base64), the fabric view's data
and script are inline, no request leaves it. A run's page has the summary, the fabric
as built with every cable's load over time (:mod:`fabricsim.fabric_view`), the standard
plots, the flows, collectives and faults tables, and the scenario. A sweep's page has
the grid, every figure that varies drawn against each varied parameter (the mean over
seeds, with the seeds' range as error bars), the points table with failures and errors,
and the base scenario.
"""

from __future__ import annotations

import base64
import html
import json
import math
import numbers
import os
import secrets
import tempfile
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

#: Rows of a table shown in full; longer tables show their first rows and say so.
MAX_ROWS = 500


class ReportError(ValueError):
    """A folder that is neither a run's nor a sweep's output, or one that cannot be read."""


def kind_of(folder: Path) -> Optional[str]:
    """"run", "sweep" or None."""
    if (folder / "sweep.json").is_file() and (folder / "sweep.parquet").is_file():
        return "sweep"
    if (folder / "summary.json").is_file() and (folder / "flows.parquet").is_file():
        return "run"
    return None


def report(folder: Union[str, "os.PathLike[str]"], out: Union[str, "os.PathLike[str]", None] = None) -> Path:
    """Writes the report of a run's or a sweep's folder to ``out`` (default
    ``<folder>/report.html``), atomically, and returns its path."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ReportError(f"report: {folder} is not a folder; name a run's output folder (fabricsim run --out) "
                          f"or a sweep folder (fabricsim sweep)")
    kind = kind_of(folder)
    if kind is None and (folder / "sweep.json").is_file():
        raise ReportError(f"report: the sweep in {folder} has not finished (no sweep.parquet yet): run the same "
                          f"fabricsim sweep again to complete it, then report")
    if kind is None:
        raise ReportError(f"report: {folder} is neither a run's output folder (summary.json and flows.parquet, as "
                          f"fabricsim run writes) nor a sweep folder (sweep.json and sweep.parquet, as fabricsim "
                          f"sweep writes)")
    page = run_page(folder) if kind == "run" else sweep_page(folder)
    out = Path(out) if out is not None else folder / "report.html"
    if out.is_dir():
        raise ReportError(f"report: --out {out} is a folder; name the HTML file to write")
    tmp = out.parent / f".{out.name[:40]}.{secrets.token_hex(4)}.tmp"
    try:
        tmp.write_text(page, encoding="utf-8")
        os.replace(tmp, out)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return out


# ---------------------------------------------------------------------------------------
# Pieces of a page


_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 1.5em auto; max-width: 1180px;
       color: #222; padding: 0 1em; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; font-size: 0.85em; margin: 0.5em 0; }
th, td { border: 1px solid #ddd; padding: 2px 6px; text-align: right; }
th { background: #f4f4f4; } td.text, th.text { text-align: left; }
pre { background: #f7f7f7; padding: 0.8em; overflow-x: auto; font-size: 0.85em; }
figure { display: inline-block; margin: 0.4em; vertical-align: top; }
figure img { max-width: 100%; border: 1px solid #eee; }
figcaption { font-size: 0.8em; color: #555; max-width: 560px; }
.note { color: #555; font-size: 0.85em; } .failed { color: #a00; }
.fabric .controls { margin: 0.5em 0; } .fabric .controls label { margin-right: 1.2em; }
.fabric svg { border: 1px solid #eee; background: #fff; }
.fabric rect.agg { stroke: #2c5d99; stroke-width: 2; cursor: pointer; }
.fabric rect.switch { stroke: #333; } .fabric rect.host { stroke: none; }
.legend { font-size: 0.85em; color: #444; }
.scroll { max-height: 420px; overflow: auto; display: inline-block; }
"""


def _page(title: str, sections: Sequence[Tuple[str, str, str]]) -> str:
    from . import __version__

    nav = " · ".join(f"<a href='#{sid}'>{html.escape(name)}</a>" for sid, name, _ in sections)
    body = "\n".join(f"<section id='{sid}'><h2>{html.escape(name)}</h2>\n{content}\n</section>"
                     for sid, name, content in sections)
    return (f"<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
            f"<meta name='viewport' content='width=device-width, initial-scale=1'>"
            f"<title>{html.escape(title)}</title><style>{_CSS}</style></head>\n<body>\n"
            f"<h1>{html.escape(title)}</h1>\n<p class='note'>fabricsim {html.escape(__version__)} · {nav}</p>\n"
            f"{body}\n</body></html>\n")


def _png(path: Path) -> str:
    return "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode("ascii")


def _figure(src: str, caption: str) -> str:
    return f"<figure><img src='{src}' alt='{html.escape(caption)}'><figcaption>{html.escape(caption)}</figcaption></figure>"


def _cell(v: Any) -> Tuple[str, bool]:
    """A value as table text, and whether it is text (left-aligned)."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "", False
    try:
        import pandas as pd

        if v is pd.NA:
            return "", False
    except ImportError:  # pragma: no cover
        pass
    if isinstance(v, (bool, np.bool_)):
        return str(bool(v)).lower(), True
    if isinstance(v, numbers.Integral):
        return f"{int(v):,}", False
    if isinstance(v, numbers.Real):
        v = float(v)
        return (f"{v:.4g}" if abs(v) < 1e6 else f"{v:.6g}"), False
    return str(v), True


def _table(columns: Optional[Sequence[str]], rows: Sequence[Sequence[Any]], cls: str = "",
           note_total: Optional[int] = None) -> str:
    """A table; without ``columns`` a key-value table whose first column is the header."""
    head = "".join(f"<th class='text'>{html.escape(str(c))}</th>" for c in columns or ())
    body = []
    for row in rows:
        cells = []
        for j, v in enumerate(row):
            text, is_text = _cell(v)
            tag = "th" if columns is None and j == 0 else "td"
            cells.append(f"<{tag}{' class=text' if is_text else ''}>{html.escape(text)}</{tag}>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    more = ""
    if note_total is not None and note_total > len(rows):
        more = f"<p class='note'>The first {len(rows)} of {note_total:,} rows.</p>"
    thead = f"<thead><tr>{head}</tr></thead>" if columns else ""
    return (f"<div class='scroll'><table class='{cls}'>{thead}<tbody>{''.join(body)}"
            f"</tbody></table></div>{more}")


def _frame_table(df, cls: str = "") -> str:
    shown = df.head(MAX_ROWS)
    rows = [[None if _isna(v) else v for v in r] for r in shown.itertuples(index=False, name=None)]
    return _table(list(df.columns), rows, cls, note_total=len(df))


def _isna(v: Any) -> bool:
    try:
        import pandas as pd

        return bool(pd.isna(v)) if not isinstance(v, (list, dict, tuple)) else False
    except (TypeError, ValueError):
        return False


def _ns(ns: Any) -> str:
    if ns is None or _isna(ns):
        return "-"
    ns = float(ns)
    return f"{ns / 1e6:.3f} ms" if ns >= 1e6 else (f"{ns / 1e3:.2f} us" if ns >= 1e3 else f"{ns:.0f} ns")


# ---------------------------------------------------------------------------------------
# A run


def run_page(folder: Path) -> str:
    from . import fabric_view
    from .plots import draw_all, sample_interval_ns
    from .results import Result

    try:
        r = Result.load(folder)
    except (OSError, ValueError) as e:
        raise ReportError(f"report: cannot read the run in {folder}: {e}") from None
    s = r.summary
    fct, slow = s.get("fct_ns") or {}, s.get("slowdown") or {}
    drops = s.get("drops_by_cause") or {}
    rows = [
        ("scenario", f"{s.get('name')} (seed {s.get('seed')}, transport {s.get('transport')}, {s.get('hosts')} hosts)"),
        ("ended", f"{s.get('ending')} at {_ns(s.get('sim_time_ns'))} simulated"),
        ("flows", f"{s['flows']['finished']} finished of {s['flows']['total']} ({s['flows']['unfinished']} unfinished)"),
        ("flow completion time", f"mean {_ns(fct.get('mean'))}, p50 {_ns(fct.get('p50'))}, p99 {_ns(fct.get('p99'))}, "
                                 f"max {_ns(fct.get('max'))}"),
        ("slowdown", ", ".join(f"{k} {slow[k]:.2f}" for k in ("p50", "p99", "max") if slow.get(k) is not None) or "-"),
        ("drops", f"{s.get('drops')} ({', '.join(f'{k} {v}' for k, v in drops.items())})"),
        ("network", f"{s.get('pfc_pauses')} PFC pauses, {s.get('ecn_marks')} ECN marks, {s.get('trims')} trims"),
        ("transport", f"{s.get('retransmitted_packets')} retransmitted packets, {s.get('timeouts')} timeouts, "
                      f"{s.get('cnps')} CNPs, {s.get('ev_retirements')} EV retirements, "
                      f"{s.get('failed_connections')} failed connections"),
        ("work", f"{s.get('events'):,} events, {s.get('packet_hops'):,} packet-hops"),
    ]
    for c in s.get("collectives") or []:
        bw = c.get("busbw_gbps")
        rows.append((str(c.get("kind")), f"{c.get('hosts')} hosts, {_ns(c.get('duration_ns'))}"
                     + (f", bus bandwidth {bw:.1f} Gb/s" if bw else "")))
    run = s.get("run") or {}
    if run.get("wall_seconds") is not None:
        rows.append(("wall clock", f"{run['wall_seconds']:.2f} s"))
    summary = _table(None, rows, "summary")

    interval = sample_interval_ns(r)
    fabric = fabric_view.section(r, interval)

    with tempfile.TemporaryDirectory(prefix="fabricsim-report-") as tmp:
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            pngs = draw_all(r, Path(tmp))
        captions = {"fct_cdf": "Flow completion times (CDF)", "throughput": "Average throughput of every flow",
                    "queues": "Queue depth of the busiest ports", "paths": "Packets per path (multipath senders)",
                    "ev_states": "Entropy-value states over time (MRC)", "ooo_cdf": "Out-of-order degree (CDF)",
                    "throughput_time": "Throughput over time of the busiest connections"}
        plots = "\n".join(_figure(_png(p), captions.get(p.stem, p.stem)) for p in pngs)

    tables = [f"<h3>Flows</h3>{_frame_table(r.flows)}"]
    if len(r.collectives):
        tables.append(f"<h3>Collectives</h3>{_frame_table(r.collectives)}")
    if len(r.faults):
        tables.append(f"<h3>Faults</h3>{_frame_table(r.faults)}")
    scenario = f"<pre>{html.escape(r.scenario_text or json.dumps(s.get('scenario'), indent=2))}</pre>"
    return _page(f"fabricsim report: {s.get('name')}", [
        ("summary", "Summary", summary),
        ("fabric", "Fabric", fabric),
        ("plots", "Plots", plots),
        ("tables", "Tables", "\n".join(tables)),
        ("scenario", "Scenario", scenario),
    ])


# ---------------------------------------------------------------------------------------
# A sweep


#: Figures drawn against the parameters, in this order, when they vary: (column, label,
#: scale to the shown unit).
SWEEP_FIGURES = (
    ("fct_ns_p50", "FCT p50 (us)", 1e-3), ("fct_ns_p99", "FCT p99 (us)", 1e-3), ("fct_ns_max", "FCT max (us)", 1e-3),
    ("slowdown_p50", "slowdown p50", 1.0), ("slowdown_p99", "slowdown p99", 1.0),
    ("flow_gbps_p1", "per-flow throughput p1 (Gb/s)", 1.0), ("flow_gbps_p50", "per-flow throughput p50 (Gb/s)", 1.0),
    ("collective_ns_max", "collective time, longest (us)", 1e-3), ("busbw_gbps_min", "bus bandwidth, lowest (Gb/s)", 1.0),
    ("sim_time_ns", "end of the run (us)", 1e-3), ("flows_unfinished", "unfinished flows", 1.0),
    ("drops", "drops", 1.0), ("trims", "trims", 1.0), ("pfc_pauses", "PFC pauses", 1.0), ("ecn_marks", "ECN marks", 1.0),
    ("retransmitted_packets", "retransmitted packets", 1.0), ("timeouts", "timeouts", 1.0),
    ("ev_retirements", "EV retirements", 1.0),
)

#: Lines per plot at most (one per combination of some of the other parameters); the
#: points are pooled over the parameters left out.
MAX_LINES = 6


def _axis_values(values: List[Any]) -> Tuple[List[float], Optional[List[str]], bool]:
    """x positions for a parameter's values (in grid order), tick labels when they are
    not numbers, and whether a log scale suits them."""
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        xs = [float(v) for v in values]
        positive = [x for x in xs if x > 0]
        log = len(positive) == len(xs) and len(xs) >= 3 and max(xs) / min(xs) >= 50
        return xs, None, log
    return [float(i) for i in range(len(values))], [_label(v) for v in values], False


def _label(v: Any) -> str:
    return v if isinstance(v, str) else json.dumps(v, default=str)


def _key(v: Any) -> str:
    return json.dumps(v, sort_keys=True, default=str)


def sweep_plots(doc: Dict[str, Any], df) -> List[Tuple[str, str]]:
    """(image source, caption) for each varying figure against each varied parameter."""
    import numpy as np

    from .plots import LITERAL, _pyplot

    plt = _pyplot()
    points = doc["points"]
    params = [k for a in doc["axes"] for k in a["keys"]]
    # Zipped keys move together: drawn against the first, named with the others.
    together = {a["keys"][0]: a["keys"][1:] for a in doc["axes"]}
    varied = [k for k in together if k != "seed" and len({_key(p["params"].get(k)) for p in points}) > 1]
    ok = (df["status"] == "ok").to_numpy()
    out = []
    for col, label, scale in SWEEP_FIGURES:
        if col not in df:
            continue
        y_all = df[col].astype("Float64").to_numpy(dtype=float, na_value=np.nan) * scale
        y_all[~ok] = np.nan
        finite = y_all[np.isfinite(y_all)]
        if len(finite) < 2 or np.all(finite == finite[0]):
            continue
        for p in varied:
            order: List[Any] = []
            for pt in points:
                v = pt["params"].get(p)
                if _key(v) not in {_key(o) for o in order}:
                    order.append(v)
            xs, ticks, log = _axis_values(order)
            pos = {_key(v): x for v, x in zip(order, xs)}
            # One line per combination of the other parameters, those with the fewest
            # values first while there are at most MAX_LINES lines; the rest pooled.
            others = sorted((k for k in varied if k != p), key=lambda k: len({_key(pt["params"].get(k)) for pt in points}))
            lines: List[str] = []
            for k in others:
                if math.prod(len({_key(pt["params"].get(x)) for pt in points}) for x in lines + [k]) > MAX_LINES:
                    break
                lines.append(k)
            pooled = [k for k in others if k not in lines]
            combos: Dict[str, List[int]] = {}
            for i, pt in enumerate(points):
                c = ", ".join(f"{k} = {_label(pt['params'].get(k))}" for k in lines)
                combos.setdefault(c, []).append(i)
            fig, ax = plt.subplots(figsize=(5.4, 3.4))
            try:
                drawn = False
                for name, idx in combos.items():
                    by_x: Dict[float, List[float]] = {}
                    for i in idx:
                        y = y_all[i]
                        if np.isfinite(y):
                            by_x.setdefault(pos[_key(points[i]["params"].get(p))], []).append(y)
                    if not by_x:
                        continue
                    x = sorted(by_x)
                    mean = np.array([np.mean(by_x[v]) for v in x])
                    lo = mean - np.array([np.min(by_x[v]) for v in x])
                    hi = np.array([np.max(by_x[v]) for v in x]) - mean
                    ax.errorbar(x, mean, yerr=[lo, hi], marker="o", ms=4, capsize=3, label=name or None)
                    drawn = True
                if not drawn:
                    continue
                if ticks is not None:
                    ax.set_xticks(xs)
                    ax.set_xticklabels(ticks, rotation=30 if max(len(t) for t in ticks) > 6 else 0, fontsize=8)
                    for t in ax.get_xticklabels():
                        t.set_parse_math(False)
                elif log:
                    ax.set_xscale("log")
                elif len(xs) <= 8:
                    ax.set_xticks(xs)
                else:
                    from matplotlib.ticker import MaxNLocator

                    ax.xaxis.set_major_locator(MaxNLocator(6))
                ax.set_xlabel(p + (f" (with {', '.join(together[p])})" if together[p] else ""), **LITERAL)
                ax.set_ylabel(label)
                ax.grid(alpha=0.3)
                if len(combos) > 1:
                    leg = ax.legend(fontsize=7)
                    for t in leg.get_texts():
                        t.set_parse_math(False)
                fig.tight_layout()
                with tempfile.TemporaryDirectory(prefix="fabricsim-report-") as tmp:
                    png = Path(tmp) / "plot.png"
                    fig.savefig(png, dpi=80)
                    src = _png(png)
            finally:
                plt.close(fig)
            over = (["seeds"] if "seed" in params else []) + pooled
            caption = (f"{label} against {p} (mean over {' and '.join(over)}, bars from the lowest to the highest)"
                       if over else f"{label} against {p} (one run per point)")
            out.append((src, caption))
    return out


def sweep_page(folder: Path) -> str:
    import pandas as pd

    try:
        with open(folder / "sweep.json", encoding="utf-8") as f:
            doc = json.load(f)
        df = pd.read_parquet(folder / "sweep.parquet")
    except (OSError, ValueError) as e:
        raise ReportError(f"report: cannot read the sweep in {folder}: {e}") from None
    if not isinstance(doc, dict) or "points" not in doc or "axes" not in doc or len(doc["points"]) != len(df):
        raise ReportError(f"report: {folder}/sweep.json does not describe sweep.parquet's points; run the sweep again")
    n = len(df)
    status = df["status"].value_counts().to_dict()
    axes_rows = [[", ".join(a["keys"]), ", ".join(" / ".join(_label(x) for x in v) for v in a["values"])]
                 for a in doc["axes"]]
    overview = (f"<p>{n} points: {status.get('ok', 0)} ran to their end, {status.get('failed', 0)} failed"
                + (f", {status.get('not run', 0)} not run" if status.get("not run") else "") + ".</p>"
                + _table(["varied", "values (in order)"], axes_rows, "axes"))
    figures = sweep_plots(doc, df)
    plots = ("\n".join(_figure(src, cap) for src, cap in figures) if figures
             else "<p class='note'>No figure varies across the points.</p>")
    params = [k for a in doc["axes"] for k in a["keys"]]
    shown = params + [c for c in ("status", "ending", "fct_ns_p50", "fct_ns_p99", "slowdown_p99", "flow_gbps_p1",
                                  "collective_ns_max", "drops", "retransmitted_packets", "timeouts", "point")
                      if c in df and (c in ("status", "point") or df[c].notna().any())]
    points_table = _frame_table(df[shown], "points")
    failed = df[df["status"] == "failed"]
    failures = (_frame_table(failed[params + ["point", "error"]], "failures") if len(failed)
                else "<p>No point failed.</p>")
    base = doc.get("base") or {}
    if "scenario" in base:
        from . import _toml

        base_text = f"<pre>{html.escape(_toml.dumps(base['scenario']))}</pre>"
    else:
        base_text = f"<p>Each point's scenario is built by <code>{html.escape(str(base.get('builder')))}</code>.</p>"
    name = folder.resolve().name
    return _page(f"fabricsim sweep report: {name}", [
        ("overview", "Overview", overview),
        ("figures", "Figures against the varied parameters", plots),
        ("points", "Points", points_table),
        ("failures", "Failures", failures),
        ("base", "Base scenario", base_text),
    ])
