"""The ``fabricsim`` command: run, validate, list, bench, sweep, report."""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import sys
import tempfile
import textwrap
import time
import warnings
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, List, NoReturn, Optional

from . import __version__, _interrupted_early
from ._core import MAX_PARTITIONS, ScenarioError
from .api import shown



class _Parser(argparse.ArgumentParser):
    """argparse that reports errors as one paragraph and exits with status 2."""

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"fabricsim: error: {message} (see `{self.prog} --help`)\n")
        sys.exit(2)


def _fail(message: str, status: int = 2) -> int:
    sys.stderr.write("fabricsim: error: " + " ".join(message.split()) + "\n")
    return status


#: Longest scenario-name part of a default output folder's name (a file name may have
#: 255 bytes; the time stamp and a counter are added).
_MAX_NAME = 80


def _default_out(name: str) -> Path:
    safe = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-")
    safe = safe[:_MAX_NAME].rstrip("-.") or "run"
    base = Path("fabricsim-out") / f"{safe}-{time.strftime('%Y%m%d-%H%M%S')}"
    out, n = base, 1
    while out.exists():
        n += 1
        out = base.with_name(f"{base.name}-{n}")
    return out


def _fmt_ns(ns) -> str:
    if ns is None:
        return "-"
    ns = float(ns)
    if ns >= 1e6:
        return f"{ns / 1e6:.3f} ms"
    if ns >= 1e3:
        return f"{ns / 1e3:.2f} us"
    return f"{ns:.0f} ns"


def summary_table(s: dict, out: Optional[Path]) -> str:
    """The human-readable summary printed after a run."""
    fct = s.get("fct_ns") or {}
    slow = s.get("slowdown") or {}
    run = s.get("run", {})
    rows = [
        ("scenario", f"{s['name']} (seed {s['seed']}, {s['transport']}, {s['hosts']} hosts)"),
        ("ended", f"{s['ending']} at {_fmt_ns(s['sim_time_ns'])} simulated"),
        ("flows", f"{s['flows']['finished']} finished / {s['flows']['total']} ({s['flows']['unfinished']} unfinished)"),
        ("FCT", f"p50 {_fmt_ns(fct.get('p50'))}, p99 {_fmt_ns(fct.get('p99'))}, max {_fmt_ns(fct.get('max'))}"),
        ("slowdown", "p50 {:.2f}, p99 {:.2f}".format(slow["p50"], slow["p99"]) if slow else "-"),
        ("network", f"{s['drops']} drops, {s['pfc_pauses']} PFC pauses, {s['ecn_marks']} ECN marks, {s['trims']} trims"),
        ("transport", f"{s['retransmitted_packets']} retransmitted packets, {s['cnps']} CNPs, {s['timeouts']} timeouts"),
    ]
    colls = s.get("collectives", [])
    for c in colls[:8]:
        bw = c.get("busbw_gbps")
        rows.append((c["kind"], f"{c['hosts']} hosts, {_fmt_ns(c.get('duration_ns'))}" + (f", bus bandwidth {bw:.1f} Gb/s" if bw else "")))
    if len(colls) > 8:
        rows.append(("collectives", f"{len(colls) - 8} more in collectives.parquet"))
    for j in s.get("jobs", []):
        step, exposed = j.get("step_ns_mean"), j.get("exposed_comm_ns_mean")
        rows.append((f"job {j['name']}", f"{j['ranks']} ranks, {j['finished_iterations']}/{j['iterations']} iterations"
                     + (f", step {_fmt_ns(step)} (exposed communication {_fmt_ns(exposed)})" if step is not None else "")))
    for lp in s.get("loops", []):
        lat = lp.get("latency_ns") or {}
        what = "WRITEs" if lp["kind"] == "message_rate" else "calls"
        rows.append((lp["kind"], f"{lp['clients']} clients, {lp['ops_per_s'] / 1e6:.2f} M {what}/s "
                                 f"({lp['completed']}/{lp['ops']}), latency p50 {_fmt_ns(lat.get('p50'))}, p99 {_fmt_ns(lat.get('p99'))}"))
    if s.get("security_refused"):
        rows.append(("security", f"{s['security_refused']} StaR requests refused by the clients' security tables"))
    if run:
        parts = int((s.get("scenario") or {}).get("partitions", 1))
        threads = f" on {parts} threads" if parts > 1 else ""
        rows.append(("speed", f"{s['events']:,} events, {s['packet_hops']:,} packet-hops in {run['wall_seconds']:.2f} s{threads} "
                              f"({(run.get('packet_hops_per_second') or 0) / 1e6:.2f} M hops/s)"))
    if out is not None:
        rows.append(("output", str(out)))
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"  {k:<{width}}  {v}" for k, v in rows)


def _reason(e: OSError) -> str:
    """An OSError in words ("not a directory"), without the errno and repeated path."""
    return (e.strerror or str(e)).lower()


def _out_problem(out: Path) -> Optional[str]:
    """Why results could not be written to ``out``, found before the run so that its time
    is not wasted; nothing is left behind (the folder appears only when the run is saved;
    a probe folder is made and removed beside it)."""
    try:
        if out.is_symlink():
            if not out.exists():
                return f"--out: {out} is a symbolic link to nothing; name a folder"
            # Results go into the folder it names (see Result.save).
            out = Path(os.path.realpath(out))
        if out.exists() and not out.is_dir():
            return f"--out: {out} already exists and is not a folder; choose a new folder"
        if out.exists() and any(out.iterdir()):
            return f"--out: {out} already exists and is not empty; choose a new folder"
        # The folder is made beside ``out`` and renamed into place, so the nearest
        # existing ancestor must be a folder we may create entries in.
        parent = out.absolute().parent
        while not parent.exists():
            parent = parent.parent
        if not parent.is_dir():
            return f"--out {out}: cannot create the output folder: {parent} is not a directory"
        if not os.access(parent, os.W_OK | os.X_OK):
            return f"--out {out}: cannot create the output folder: permission denied in {parent}"
        # Permission bits do not tell everything (root, read-only or special file
        # systems such as /proc): make and remove a folder there to be sure.
        try:
            os.rmdir(tempfile.mkdtemp(prefix=".fabricsim-check-", dir=parent))
        except OSError as e:
            return f"--out {out}: cannot create the output folder: {parent} takes no new folder ({_reason(e)})"
    except OSError as e:
        return f"--out {out}: cannot create the output folder: {_reason(e)}"
    return None


def _flag_error(e: Exception, a: argparse.Namespace) -> Optional[str]:
    """A core error about a value a flag gave, named by the flag (as argparse names
    ``--seed``), or None for an error about the scenario."""
    key, rest = getattr(e, "key", ""), getattr(e, "reason", str(e))
    if key == "pcap" and a.pcap is not None:
        spec = a.pcap if len(a.pcap) <= 64 else f"{a.pcap[:64]}... ({len(a.pcap)} characters)"
        return f"--pcap {spec}: {rest}"
    if key == "partitions" and a.partitions is not None:
        return f"--partitions {a.partitions}: {rest}"
    return None


#: Whether this process is the ``fabricsim`` command, whose Ctrl-C may end it at once
#: (the package's early handler was in place when main() began); false when main() is
#: called from Python.
_quick_exit = False


@contextmanager
def _third_party_imports() -> Iterator[None]:
    """Imports of pandas, pyarrow and matplotlib, during which Ctrl-C ends the command at
    once with "interrupted" and status 130. A KeyboardInterrupt raised inside their
    imports was sometimes swallowed (the run went on) or made Python end itself by
    SIGINT after the message (status -SIGINT, not 130). Outside these imports Ctrl-C is a
    KeyboardInterrupt, so that the run and the save clean up."""
    if not _quick_exit:
        yield
        return
    signal.signal(signal.SIGINT, _interrupted_early)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def _cmd_run(a: argparse.Namespace) -> int:
    with _third_party_imports():
        import pyarrow.parquet  # noqa: F401 - what saving the tables imports

        from .api import default_scenario, run
        from .results import PlotWarning

    if a.scenario == "":
        # An empty string used to fall back to the bundled default scenario silently.
        return _fail("scenario: empty path; name a scenario TOML file, or leave it out to run the bundled default")
    # Always a file: a missing "loss=0.01.toml" is not TOML text.
    scenario = default_scenario() if a.scenario is None else Path(a.scenario)
    if a.pcap_snap is not None and a.pcap is None:
        return _fail("--pcap-snap: applies to a capture; give --pcap SPEC too")
    if a.out is not None:
        problem = _out_problem(a.out)
        if problem:
            return _fail(problem)
    try:
        result = run(scenario, seed=a.seed, progress=not a.quiet and sys.stderr.isatty(), pcap=a.pcap,
                     pcap_snap=a.pcap_snap, partitions=a.partitions)
    except ScenarioError as e:
        return _fail(_flag_error(e, a) or f"{scenario}: {e}")
    out = a.out or _default_out(result.summary["name"])
    # The scenario's output.plots decides, unless --no-plots.
    plots = False if a.no_plots else None
    if result.draws_plots(plots):
        with _third_party_imports():
            try:
                from .plots import _pyplot

                _pyplot()
            except Exception:  # noqa: BLE001 - save() draws the plots and reports why it cannot
                pass
    where = f"--out {out}" if a.out is not None else f"output folder {out}"
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", PlotWarning)
            result.save(out, plots=plots)
        for w in caught:
            if issubclass(w.category, PlotWarning):
                sys.stderr.write(f"fabricsim: warning: {w.message} (the tables are saved)\n")
            else:
                warnings.showwarning(w.message, w.category, w.filename, w.lineno)
    except OSError as e:
        # Checked before the run, but the disk can fill or the folder appear meanwhile;
        # save() leaves nothing behind.
        return _fail(f"{where}: cannot write the output folder: {_reason(e)}", 1)
    except MemoryError:
        # A huge result (a fault schedule of millions of flaps, say) can exhaust memory
        # while its tables are encoded; save() has removed what it wrote.
        return _fail(f"{where}: out of memory while writing the results; nothing was written "
                     "(a shorter run, coarser output.sample_interval or fewer faults make smaller results)", 1)
    if not a.quiet:
        print(summary_table(result.summary, out))
    return 0


def _cmd_validate(a: argparse.Namespace) -> int:
    from .api import validate

    if a.scenario == "":
        return _fail("scenario: empty path; name a scenario TOML file")
    try:
        info = validate(Path(a.scenario))
    except ScenarioError as e:
        return _fail(f"{a.scenario}: {e}")
    print(f"{a.scenario}: valid ({info['name']}: {info['hosts']} hosts, {info['flows']} flows on "
          f"{info['connections']} connections, transport {info['transport']})")
    return 0


def catalog_text(sections: list) -> str:
    """The catalog as aligned text for the terminal."""
    lines = ["Units: rates \"100Gbps\" (bps, Kbps, Mbps, Gbps, Tbps); durations \"1us\" (ps, ns, us, ms, s);",
             "sizes \"8MB\" = 8*10^6 bytes, \"8MiB\" = 8*2^20 bytes, or an integer number of bytes.", ""]
    for sec in sections:
        head = f"[{sec['section']}]" if sec["section"] else "top level"
        if sec["kind"]:
            head += f" kind = \"{sec['kind']}\""
        lines.append(f"{head}: {sec['doc']}")
        for p in sec["params"]:
            default = p["default"] or "required"
            doc = p["doc"] + (f" One of: {', '.join(p['choices'])}." if p["choices"] else "")
            wrapped = textwrap.wrap(doc, 80) or [""]
            lines.append(f"  {p['key']:<20} {p['ty']:<9} {default:<22} {wrapped[0]}")
            lines.extend(" " * 56 + w for w in wrapped[1:])
        lines.append("")
    return "\n".join(lines)


def catalog_markdown(sections: list) -> str:
    """The catalog as Markdown tables (the README's scenario reference)."""
    out = []
    for sec in sections:
        head = f"`[{sec['section']}]`" if sec["section"] else "Top level"
        if sec["kind"]:
            head += f" `kind = \"{sec['kind']}\"`"
        out.append(f"**{head}**: {sec['doc']}\n")
        out.append("| key | type | default | meaning |")
        out.append("|---|---|---|---|")
        for p in sec["params"]:
            doc = p["doc"].replace("|", "\\|") + (f" One of: {', '.join(p['choices'])}." if p["choices"] else "")
            out.append(f"| `{p['key']}` | {p['ty']} | {p['default'] or 'required'} | {doc} |")
        out.append("")
    return "\n".join(out)


def _cmd_list(a: argparse.Namespace) -> int:
    from .api import catalog

    sections = catalog()
    if a.json:
        print(json.dumps(sections, indent=2))
    elif a.markdown:
        print(catalog_markdown(sections))
    else:
        print(catalog_text(sections))
    return 0


def _cmd_bench(a: argparse.Namespace) -> int:
    from .bench import main as bench_main

    return bench_main(a.case, quiet=a.quiet)


def _cmd_sweep(a: argparse.Namespace) -> int:
    from .sweeps import POINTS, load_spec, sweep

    if a.sweep == "":
        return _fail("sweep: empty path; name a sweep TOML file")
    try:
        spec = load_spec(a.sweep)
    except ScenarioError as e:
        return _fail(str(e))
    where = spec.pop("where")
    out = a.out if a.out is not None else spec.pop("out") or Path("fabricsim-out") / Path(a.sweep).stem
    spec.pop("out", None)
    try:
        sw = sweep(**spec, out=out, jobs=a.jobs, ray=a.ray, timeout=a.timeout, plots=a.plots,
                   progress=not a.quiet and sys.stderr.isatty(), where=where)
    except ScenarioError as e:
        # An error about a flag's value is named by the flag, as argparse names them.
        message = str(e)
        key, _, rest = message.partition(": ")
        given = {"jobs": a.jobs, "out": a.out, "ray": a.ray, "timeout": a.timeout}
        if given.get(key) is not None:
            message = f"--{key} {given[key]}: {rest}"
        elif key == "out":
            message = f"{where}: out {out}: {rest}"
        return _fail(message)
    except KeyboardInterrupt:
        done = sum(1 for p in (Path(out) / POINTS).glob("*/point.json"))
        sys.stderr.write(f"fabricsim: interrupted; {done} points are done in {out}: run the same command "
                         f"again to resume\n")
        return 130
    if not a.quiet:
        print(f"sweep: {len(sw.points)} points ({sw.ran - sw.failed} run now, {sw.skipped} done before, "
              f"{sw.failed} failed) -> {sw.out / 'sweep.parquet'}")
    if sw.failed:
        failed = [p for p, st in zip(sw.points, sw.table["status"]) if st == "failed"]
        errors = sw.table["error"]
        for p in failed[:10]:
            params = ", ".join(f"{k} = {json.dumps(v, default=str)}" for k, v in p.params.items())
            sys.stderr.write(f"fabricsim: point {p.index} ({params}) failed: {errors.iloc[p.index]}\n")
        if len(failed) > 10:
            sys.stderr.write(f"fabricsim: ... and {len(failed) - 10} more (see the error column of sweep.parquet)\n")
        return 1
    return 0


def _cmd_report(a: argparse.Namespace) -> int:
    from .reports import ReportError, report

    if a.folder == "":
        return _fail("report: empty path; name a run's output folder or a sweep folder")
    try:
        path = report(a.folder, a.out)
    except ReportError as e:
        return _fail(str(e))
    if not a.quiet:
        print(path)
    return 0


def _jobs(text: str) -> int:
    return _int_in(1, 1024, "1 and 1024")(text)


def _seconds(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        v = float("nan")
    if not v > 0 or v == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a number of seconds above 0, got {text!r}")
    return v


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="fabricsim", description="A fast, deterministic packet-level simulator of RDMA fabrics.")
    p.add_argument("--version", action="version", version=f"fabricsim {__version__}")
    sub = p.add_subparsers(dest="command", parser_class=_Parser, metavar="COMMAND")
    sub.required = True

    r = sub.add_parser("run", help="run a scenario (default: the bundled one) and write its results")
    r.add_argument("scenario", nargs="?", help="scenario TOML file (default: the bundled default scenario)")
    r.add_argument("--seed", type=_seed, help="override the scenario's seed")
    r.add_argument("--partitions", type=_partitions, metavar="N",
                   help=f"override the scenario's partitions: simulate on N threads (1-{MAX_PARTITIONS}; results depend on N)")
    r.add_argument("--out", type=Path, help="output folder (default: a new folder under ./fabricsim-out/)")
    r.add_argument("--quiet", action="store_true", help="no progress line and no summary table")
    r.add_argument("--no-plots", action="store_true", help="do not draw the PNG plots")
    r.add_argument("--pcap", metavar="SPEC", help="capture the frames crossing these cables into capture.pcap: comma-separated "
                   "port names (leaf[0].up[1]), hosts (host[3]) or switches (spine[0]); both directions")
    r.add_argument("--pcap-snap", type=_pcap_snap, metavar="BYTES", help="payload bytes kept per captured frame (default: whole frames; with --pcap)")
    r.set_defaults(func=_cmd_run)

    v = sub.add_parser("validate", help="check a scenario without running it")
    v.add_argument("scenario", help="scenario TOML file")
    v.set_defaults(func=_cmd_validate)

    ls = sub.add_parser("list", help="topologies, transports, workloads and every parameter with defaults and units")
    fmt = ls.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="as JSON")
    fmt.add_argument("--markdown", action="store_true", help="as Markdown tables")
    ls.set_defaults(func=_cmd_list)

    b = sub.add_parser("bench", help="run the fixed benchmark scenarios and report speed and memory")
    b.add_argument("--case", action="append", help="run only this case (a, b, ...); repeatable")
    b.add_argument("--quiet", action="store_true", help="print only the table")
    b.set_defaults(func=_cmd_bench)

    s = sub.add_parser("sweep", help="run every point of a grid over a base scenario (resumable), into one table")
    s.add_argument("sweep", help="sweep TOML file: base, [grid], [[zip]], seeds, out")
    s.add_argument("--out", type=Path, help="sweep folder (default: the file's out, else ./fabricsim-out/<file name>); "
                   "points already done there are not run again")
    s.add_argument("--jobs", type=_jobs, metavar="N", help="worker processes (default: one per core)")
    s.add_argument("--ray", metavar="ADDRESS", help="run the points on a Ray cluster: auto (this machine's cluster), "
                   "local (start one here), or an address (ray://head:10001); needs pip install 'fabricsim[ray]'")
    s.add_argument("--timeout", type=_seconds, metavar="SECONDS", help="stop and fail a point that runs longer")
    s.add_argument("--plots", action="store_true", help="draw each point's PNG plots into its folder")
    s.add_argument("--quiet", action="store_true", help="no progress line and no closing line")
    s.set_defaults(func=_cmd_sweep)

    rp = sub.add_parser("report", help="write one self-contained HTML page about a run's or a sweep's folder")
    rp.add_argument("folder", help="a run's output folder (fabricsim run) or a sweep folder (fabricsim sweep)")
    rp.add_argument("--out", type=Path, help="HTML file to write (default: FOLDER/report.html)")
    rp.add_argument("--quiet", action="store_true", help="do not print the page's path")
    rp.set_defaults(func=_cmd_report)
    return p


def _int_in(lo: int, hi: int, between: str, base: int = 10):
    """An argparse type: an integer from ``lo`` to ``hi``, written ``between`` in errors
    (``base`` 0 also takes ``0x`` and ``0o`` prefixes)."""
    def parse(text: str) -> int:
        try:
            # Decimal first: base 0 refuses leading zeros ("010").
            v = int(text, 10)
        except ValueError:
            try:
                v = int(text, base)
            except ValueError:
                raise argparse.ArgumentTypeError(f"expected an integer between {between}, got {shown(text)}") from None
        if not lo <= v <= hi:
            raise argparse.ArgumentTypeError(f"expected an integer between {between}, got {shown(text)}")
        return v
    return parse


_partitions = _int_in(1, MAX_PARTITIONS, f"1 and {MAX_PARTITIONS}")
_pcap_snap = _int_in(0, 65535, "0 and 65535")
_seed = _int_in(0, 2**63 - 1, "0 and 2^63-1", base=0)


def main(argv: Optional[List[str]] = None) -> int:
    # Everything, the parsing and the imports the commands make (pandas takes a good
    # part of a second), runs inside this try: a Ctrl-C at any moment is "interrupted"
    # and status 130, never a KeyboardInterrupt traceback. (Before this, the package's
    # own early handler answered Ctrl-C; from here Python's KeyboardInterrupt does, so
    # that the run and save() can clean up, except during _third_party_imports.)
    global _quick_exit
    try:
        if signal.getsignal(signal.SIGINT) is _interrupted_early:
            _quick_exit = True
            signal.signal(signal.SIGINT, signal.default_int_handler)
        args = build_parser().parse_args(argv)
        return int(args.func(args))
    except KeyboardInterrupt:
        sys.stderr.write("fabricsim: interrupted\n")
        return 130
    except BrokenPipeError:
        # The reader went away (`fabricsim list | head`): nothing more to say, and
        # Python's flush of stdout at exit must not fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except (OSError, FileExistsError) as e:
        return _fail(str(e), 1)
    except MemoryError:
        return _fail("out of memory (the run's results did not fit: a shorter run, a coarser "
                     "output.sample_interval or fewer faults make smaller results)", 1)
    except Exception as e:  # noqa: BLE001 - a fault of fabricsim: one paragraph, not a traceback
        what = " ".join(str(e).split())
        what = what if len(what) <= 200 else what[:200] + f"... ({len(what)} characters)"
        return _fail(f"internal error, please report it: {type(e).__name__}" + (f": {what}" if what else ""), 1)


if __name__ == "__main__":
    sys.exit(main())
