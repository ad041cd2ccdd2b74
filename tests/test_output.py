"""The output folder and what ``Result.save`` writes into it: plots with user text,
time-series plots, the capture file, the saved scenario, permissions and names."""

import gc
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import matplotlib.figure
import pandas as pd
import pytest

import fabricsim
import fabricsim.cli
import fabricsim.results
from fabricsim import _toml, plots
from conftest import SMALL

tomllib = pytest.importorskip("tomllib")

LONE = """
name = "lone"
[topology]
kind = "leaf_spine"
leaves = 2
spines = 2
hosts_per_leaf = 2
[[workload]]
kind = "flows"
flows = [{ src = 0, dst = 3, size = "300KB" }]
"""


def _multipath(name):
    """A small MRC run with rows in every table the plots draw (paths, EV states,
    out-of-order degrees, throughput)."""
    return {"name": name,
            "topology": {"kind": "multi_plane", "planes": 2, "groups": 2, "hosts_per_group": 2, "t1_per_plane": 2},
            "fabric": {"pfc": False, "trimming": True, "link_loss": 0.01},
            "transport": {"kind": "mrc"},
            "workload": {"kind": "flows", "flows": [{"src": 0, "dst": 3, "size": "200KB"}, {"src": 1, "dst": 3, "size": "200KB"}]},
            "output": {"sample_interval": "2us"}}


@pytest.fixture
def figures(monkeypatch):
    """Every figure the plots write, kept for inspection."""
    drawn = []
    save = matplotlib.figure.Figure.savefig

    def keep(fig, *args, **kwargs):
        drawn.append(fig)
        return save(fig, *args, **kwargs)

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", keep)
    return drawn


# --- 1. user text in plots ----------------------------------------------------------


@pytest.mark.parametrize("name", ["cost $_x_$", "price $5 vs $10", "a $\\frac{1}{$ b"])
def test_a_scenario_name_with_dollars_is_drawn_literally(tmp_path, figures, name):
    # "$_x_$" made matplotlib's math text parser fail after the run (the results were
    # lost); "$5 vs $10" was silently drawn as math.
    r = fabricsim.run(_multipath(name))
    out = r.save(tmp_path / "o", plots=True)
    pngs = sorted(p.name for p in out.glob("*.png"))
    assert pngs == ["ev_states.png", "fct_cdf.png", "ooo_cdf.png", "paths.png", "queues.png", "throughput.png", "throughput_time.png"]
    assert len(figures) == 7
    for fig in figures:
        # (Tick labels of a log axis are math text of matplotlib's own.)
        titles = [t for t in fig.findobj(matplotlib.text.Text) if name in t.get_text()]
        assert [t.get_text().startswith(name + ": ") for t in titles] == [True]
        legends = [t for ax in fig.axes if ax.get_legend() for t in ax.get_legend().get_texts()]
        for t in titles + legends:
            assert not t.get_parse_math() and not t.get_usetex(), t.get_text()


# --- 8. time series drawn over their own interval -----------------------------------


def test_time_series_are_drawn_over_the_interval_that_ends_at_time_ns(tmp_path, figures):
    # time_ns is the END of each interval: a value belongs to (time_ns - interval,
    # time_ns]. where="post" drew each one over the following interval.
    r = fabricsim.run(SMALL)  # sample_interval = "5us"
    plots.throughput_time(r, tmp_path / "t.png")
    plots.queues(r, tmp_path / "q.png")
    (tput,), (queues,) = (f.axes for f in figures)
    for ax, table, column, scale in [(tput, r.throughput, "gbps", 1.0), (queues, r.ports, "queue_max_bytes", 1e3)]:
        line = ax.lines[0]
        assert line.get_drawstyle() == "steps-pre"
        key = "connection" if table is r.throughput else "port"
        label = line.get_label()
        rows = table[table[key].astype(str) == (label.split()[-1] if key == "connection" else label)]
        x, y = list(line.get_xdata()), list(line.get_ydata())
        first_t, first_v = rows["time_ns"].iloc[0] / 1e3, rows[column].iloc[0] / scale
        # The first value is drawn from the start of its interval, 5 us earlier.
        assert x[:2] == [pytest.approx(first_t - 5), pytest.approx(first_t)]
        assert y[1] == pytest.approx(first_v)
        # Every sample is a point of the line at its own time with its own value.
        for t, v in zip(rows["time_ns"] / 1e3, rows[column] / scale):
            assert y[x.index(pytest.approx(t))] == pytest.approx(v)


def test_interval_steps_fill_quiet_stretches_with_zero():
    x, y = plots.interval_steps([10, 20, 50, 57], [1, 2, 3, 4], 10.0)
    # (0,10]=1, (10,20]=2, nothing until (40,50]=3, the run's last interval (50,57]=4.
    assert list(x) == [0, 10, 20, 40, 50, 57] and list(y) == [0, 1, 2, 0, 3, 4]


# --- 2. the capture file ------------------------------------------------------------


def test_saving_twice_copies_the_capture_and_leaves_the_first_folder_alone(tmp_path):
    r = fabricsim.run(LONE, pcap="host[0]")
    temp = Path(r.pcap)
    data = temp.read_bytes()
    assert len(data) > 24
    a = r.save(tmp_path / "a", plots=False)
    # The temporary file is gone; the Result's capture is now the saved one.
    assert not temp.exists()
    assert Path(r.pcap) == (tmp_path / "a" / "capture.pcap").absolute()
    before = {p.name: p.read_bytes() for p in a.iterdir()}
    b = r.save(tmp_path / "b", plots=False)
    # save used to move capture.pcap out of the first folder.
    assert {p.name: p.read_bytes() for p in a.iterdir()} == before
    assert (a / "capture.pcap").read_bytes() == (b / "capture.pcap").read_bytes() == data


def test_a_failed_save_keeps_the_temporary_capture(tmp_path, monkeypatch):
    r = fabricsim.run(LONE, pcap="host[0]")
    temp = Path(r.pcap)

    def fail(*args, **kwargs):
        raise OSError(28, "No space left on device")

    with monkeypatch.context() as m:
        m.setattr(json, "dump", fail)
        with pytest.raises(OSError):
            r.save(tmp_path / "a", plots=False)
    assert temp.exists() and Path(r.pcap) == temp
    assert (r.save(tmp_path / "a", plots=False) / "capture.pcap").exists()


def test_an_unsaved_capture_is_removed_with_its_result(tmp_path):
    r = fabricsim.run(LONE, pcap="host[0]")
    temp = Path(r.pcap)
    assert temp.exists()
    del r
    gc.collect()
    assert not temp.exists()
    # ... and when Python exits with the Result still alive.
    code = f"import fabricsim; r = fabricsim.run({LONE!r}, pcap='host[0]'); print(r.pcap)"
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip().endswith(".pcap") and not Path(p.stdout.strip()).exists()


# --- 3. the scenario of a dict, and output.plots ------------------------------------


def test_a_dict_scenario_is_saved_as_toml_that_runs_the_same(tmp_path):
    d = _multipath("dict")
    d["faults"] = [{"at": "3us", "kind": "link_down", "link": "host[0].nic[0]"}]
    d["output"]["plots"] = False
    r = fabricsim.run(d)
    out = r.save(tmp_path / "o")
    assert tomllib.loads((out / "scenario.toml").read_text()) == d
    again = fabricsim.run(out / "scenario.toml")
    pd.testing.assert_frame_equal(again.flows, r.flows)
    assert again.summary["scenario"] == r.summary["scenario"]


def test_the_toml_writer_reads_back_as_the_same_dict():
    d = {"name": 'quote " backslash \\ tab \t newline \n bell \x07 del \x7f é', "seed": -(2**63), "big": 2**63 - 1,
         "f": [0.1, 1e-05, 1e16, -0.0, 5e-324, 1.7976931348623157e308], "b": [True, False], "empty": [], "e": {},
         "odd key": {"": 1, "a.b": {"c": [[1, 2], [{"x": "y"}]]}},
         "workload": [{"kind": "flows", "flows": [{"src": 0, "dst": 1, "size": 10}] * 3}, {"kind": "incast", "hosts": []}],
         "mixed": [1, {"a": 1}]}
    assert tomllib.loads(_toml.dumps(d)) == d


@pytest.mark.parametrize("setting,explicit,drawn", [(False, None, False), (True, None, True), (False, True, True), (True, False, False)])
def test_save_draws_plots_as_output_plots_says_unless_told(tmp_path, setting, explicit, drawn):
    d = {"topology": {"kind": "leaf_spine", "leaves": 2, "spines": 1, "hosts_per_leaf": 1},
         "workload": {"kind": "flows", "flows": [{"src": 0, "dst": 1, "size": "10KB"}]}, "output": {"plots": setting}}
    out = fabricsim.run(d).save(tmp_path / "o", plots=explicit)
    assert bool(list(out.glob("*.png"))) == drawn


# --- 5. overrides in the saved scenario ---------------------------------------------


def test_the_saved_scenario_records_seed_and_partitions_overrides(tmp_path, small_toml):
    r = fabricsim.run(small_toml, seed=11, partitions=2)
    out = r.save(tmp_path / "o", plots=False)
    saved = (out / "scenario.toml").read_text()
    # The input's text is kept (comments and layout), with the overrides set.
    assert saved.startswith('\nname = "small"\nseed = 11  # ') and "partitions = 2  # " in saved
    assert tomllib.loads(saved) == {**tomllib.loads(SMALL), "seed": 11, "partitions": 2}
    again = fabricsim.run(out / "scenario.toml")
    assert again.summary["scenario"] == r.summary["scenario"]
    pd.testing.assert_frame_equal(again.flows, r.flows)
    # A dict scenario too.
    d = {"topology": {"kind": "leaf_spine", "leaves": 2, "spines": 2, "hosts_per_leaf": 4},
         "workload": {"kind": "permutation", "size": "200KB"}}
    r = fabricsim.run(d, seed=12)
    again = fabricsim.run(r.save(tmp_path / "d", plots=False) / "scenario.toml")
    assert again.summary["seed"] == 12
    pd.testing.assert_frame_equal(again.flows, r.flows)


@pytest.mark.parametrize("text", [
    "",
    'name = "x"',
    "[topology]\nseed = 1\n",
    'seed = 0x10 # hex\r\nname = "n"\r\n[a]\nseed = 4\n',
    "'seed' = 3\n[b]\n",
    "arr = [\n  [1],\n  [2],\n]\n[t]\n",
    "s = '''\n[x]\nseed = 1'''\n[z]\n",
    's = """ \\"""\n[x]\n"""\nseed=9\n[y]\nseed=1\n',
    'n = "a # [b]" # c = "d"\nt = { seed = 2 }\n[[w]]\n',
])
def test_top_level_keys_are_set_before_the_first_table(text):
    new = _toml.set_top_level(text, {"seed": 5, "partitions": 2})
    assert tomllib.loads(new) == {**tomllib.loads(text), "seed": 5, "partitions": 2}


# --- 4. permissions -----------------------------------------------------------------


def test_output_folders_get_the_usual_permissions(tmp_path):
    r = fabricsim.run(LONE)
    old = os.umask(0o027)
    try:
        a = r.save(tmp_path / "a", plots=False)
        mine = tmp_path / "mine"
        mine.mkdir(mode=0o705)
        os.chmod(mine, 0o705)
        b = r.save(mine, plots=False)
    finally:
        os.umask(old)
    # mkdtemp made 0o700, and replaced an existing folder's mode.
    assert stat.S_IMODE(a.stat().st_mode) == 0o750
    assert stat.S_IMODE(b.stat().st_mode) == 0o705
    assert stat.S_IMODE((a / "flows.parquet").stat().st_mode) == 0o640


def test_an_empty_read_only_folder_is_filled_and_stays_read_only(tmp_path):
    # Its mode used to be given to the temporary folder before the files were written
    # into it, so a non-root user's run failed after the simulation (root writes
    # anyway; the mode check below holds for both).
    r = fabricsim.run(LONE)
    ro = tmp_path / "ro"
    ro.mkdir()
    os.chmod(ro, 0o555)
    try:
        out = r.save(ro, plots=False)
        assert (out / "flows.parquet").exists()
        assert stat.S_IMODE(out.stat().st_mode) == 0o555
    finally:
        os.chmod(ro, 0o755)


def test_no_queue_plot_without_port_samples(tmp_path):
    # With sampling off the chart was empty.
    r = fabricsim.run(LONE.replace("[output]", "[output]\nsample_interval = \"0us\"") if "[output]" in LONE
                      else LONE + "\n[output]\nsample_interval = \"0us\"\n")
    assert len(r.ports) == 0
    out = r.save(tmp_path / "o", plots=True)
    assert (out / "fct_cdf.png").exists() and not (out / "queues.png").exists()


# --- 6. long names ------------------------------------------------------------------


def test_a_long_scenario_name_gives_a_default_folder_name_that_fits(tmp_path, monkeypatch):
    # "file name too long" after the run, which was lost.
    r = fabricsim.run(LONE.replace('name = "lone"', 'name = "' + "x" * 250 + '"'))
    monkeypatch.chdir(tmp_path)
    out = fabricsim.cli._default_out(r.summary["name"])
    assert out.parent.name == "fabricsim-out" and len(out.name) < 120 and out.name.startswith("x" * 80 + "-")
    assert (r.save(out, plots=False) / "flows.parquet").exists()


def test_save_into_a_folder_with_a_long_name(tmp_path):
    # The temporary sibling ".<name>.XXXXXXXX" of a 250-byte name was longer than a
    # file name may be.
    y = fabricsim.run(LONE).save(tmp_path / ("y" * 250), plots=False)
    assert (y / "flows.parquet").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["y" * 250]


# --- 9. the plane of a path ----------------------------------------------------------


@pytest.mark.parametrize("kind", ["udmp", "stellar", "mprdma", "mrc"])
def test_paths_name_the_plane_their_packets_were_sent_in(kind):
    # Two planes; connection c of a single-port transport is bound to NIC port c mod 2,
    # while MRC spreads every connection over both.
    r = fabricsim.run({"topology": {"kind": "multi_plane", "planes": 2, "groups": 2, "hosts_per_group": 2,
                                    "t1_per_plane": 2},
                       "fabric": {"pfc": False, "trimming": True},
                       "transport": {"kind": kind},
                       "workload": {"kind": "flows", "flows": [{"src": 0, "dst": 2, "size": "64KB"},
                                                               {"src": 1, "dst": 3, "size": "64KB"}]}})
    planes = r.paths[r.paths.packets > 0].groupby("connection").plane.unique()
    sent = r.ports.groupby("port").tx_bytes.sum()
    for conn, src in [(0, 0), (1, 1)]:
        # Hosts 0 and 1 only send their connection's data: the NIC ports that carried
        # bytes are the planes the paths table must name.
        used = {p for p in (0, 1) if sent.get(f"host[{src}].nic[{p}]", 0) > 0}
        assert used == ({0, 1} if kind == "mrc" else {conn})
        assert set(planes[conn]) == used


def test_saved_tables_read_back_in_pandas_as_the_result_gives_them(tmp_path):
    """Tables are written from Arrow, not from pandas; the files carry the metadata pandas
    itself would write, so a user's ``pd.read_parquet`` and ``fabricsim.load`` give the
    Result's frames: nullable Int64 where a value may be missing, string columns, and
    the ports' ``port`` category."""
    import pyarrow as pa

    scenario = _multipath("tables")
    scenario["workload"] = [scenario["workload"], {"kind": "all_reduce", "hosts": [0, 1, 2, 3], "size": "64KB"}]
    scenario["faults"] = [{"at": "3us", "kind": "link_flap", "link": "t1[0].down[0]", "period": "2us", "until": "9us"}]
    r = fabricsim.run(scenario)
    out = r.save(tmp_path / "o", plots=False)
    back = fabricsim.load(out)
    assert len(r.faults) and len(r.collectives) and len(r.ev_states) and r.flows.fct_ns.isna().sum() == 0
    assert str(r.flows.fct_ns.dtype) == "Int64" and str(r.faults.value.dtype) == "string"
    assert str(r.ports.port.dtype) == "category" and r.ports.port.iloc[0] == r.ports.port.cat.categories[r.ports.port_id.iloc[0]]
    for name in fabricsim.results.TABLES:
        frame = r.tables[name]
        pd.testing.assert_frame_equal(pd.read_parquet(out / f"{name}.parquet"), frame)
        pd.testing.assert_frame_equal(back.tables[name], frame)
        written = json.loads(r.tables.arrow(name).schema.metadata[b"pandas"])["columns"]
        assert written == pa.Table.from_pandas(frame, preserve_index=False).schema.pandas_metadata["columns"], name


def test_a_worker_runs_and_saves_a_point_without_importing_pandas(tmp_path):
    """A sweep's worker is a fresh interpreter; importing pandas was most of its start.
    Running a point, its row of figures and its folder need only numpy and Arrow."""
    code = ("import json, sys\n"
            "from fabricsim.point import Task, run_task\n"
            f"status, row = run_task(Task('p', json.dumps({_multipath('worker')!r}), sys.argv[1], False))\n"
            "assert status == 'ok', row\n"
            "print(json.dumps({'pandas': 'pandas' in sys.modules, 'flows': row['flows'], 'p50': row['flow_gbps_p50']}))\n")
    p = subprocess.run([sys.executable, "-c", code, str(tmp_path / "p")], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    seen = json.loads(p.stdout)
    assert seen["pandas"] is False and seen["flows"] == 2 and seen["p50"] > 0
    r = fabricsim.load(tmp_path / "p")
    gbps = (r.flows.size_bytes * 8 / r.flows.fct_ns.astype(float)).median()
    assert seen["p50"] == pytest.approx(gbps, rel=1e-12)
