"""``fabricsim sweep`` and ``fabricsim.sweep``: the grid, resuming, failures, the
combined table, the process pool and Ray, and bad sweep files.

The Ray test starts a local Ray (2 CPUs) and is skipped with a message where Ray is
not installed; ``scripts/test`` installs it under CI (``pip install 'fabricsim[ray]'``).
"""

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import fabricsim
from conftest import SMALL, cli, popen_interruptible
from fabricsim.grid import axes, expand_range, points
from fabricsim.point import figures

BASE = {
    "name": "sweep-test",
    "topology": {"kind": "leaf_spine", "leaves": 2, "spines": 2, "hosts_per_leaf": 4},
    "workload": {"kind": "permutation", "size": "200KB"},
    "output": {"sample_interval": "5us", "plots": False},
}
GRID = {"fabric.link_loss": [0.0, 0.01], "workload.size": ["100KB", "300KB"]}


def stat(folder: Path):
    """Each point's point.json: (inode, mtime), to tell a point left alone from one
    written again."""
    return {p.parent.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in folder.glob("points/*/point.json")}


def test_ranges_zips_and_point_order():
    assert expand_range({"from": 4, "to": 256, "times": 2}, "x") == [4, 8, 16, 32, 64, 128, 256]
    assert expand_range({"from": 0, "to": 0.03, "step": 0.01}, "x") == [0.0, 0.01, 0.02, 0.03]
    assert expand_range({"from": 12.5, "to": 400, "times": 2, "unit": "KB"}, "x") == \
        ["12.5KB", "25KB", "50KB", "100KB", "200KB", "400KB"]
    assert expand_range({"from": 1, "to": 10, "step": 4}, "x") == [1, 5, 9]
    ax = axes({"transport.kind": ["roce", "mrc"]},
              zip=[{"topology.leaves": [2, 4], "topology.spines": [2, 8]}], seeds=range(1, 4))
    pts = points(BASE, ax)
    assert len(pts) == 2 * 2 * 3
    # The first axis varies slowest, the seeds fastest; zipped keys move together.
    assert [p.params for p in pts[:4]] == [
        {"transport.kind": "roce", "topology.leaves": 2, "topology.spines": 2, "seed": s} for s in (1, 2, 3)] + [
        {"transport.kind": "roce", "topology.leaves": 4, "topology.spines": 8, "seed": 1}]
    sc = pts[4].scenario
    assert sc["transport"] == {"kind": "roce"} and sc["topology"]["leaves"] == 4 and sc["topology"]["spines"] == 8
    assert sc["seed"] == 2 and BASE["topology"]["leaves"] == 2  # the base is not changed
    assert len({p.id for p in pts}) == len(pts)
    # A list of tables is indexed; a single table is also its [0].
    two = dict(BASE, workload=[BASE["workload"], {"kind": "incast", "senders": 2, "size": "1MB"}])
    p = points(two, axes({"workload[1].size": ["2MB"], "workload[0].size": ["5KB"]}))[0]
    assert p.scenario["workload"][1]["size"] == "2MB" and p.scenario["workload"][0]["size"] == "5KB"
    assert points(BASE, axes({"workload[0].size": ["7KB"]}))[0].scenario["workload"]["size"] == "7KB"


def test_a_sweep_gives_the_runs_of_its_points_and_a_rerun_skips_them(tmp_path):
    out = tmp_path / "sw"
    sw = fabricsim.sweep(BASE, GRID, seeds=[1, 2], out=out, jobs=2)
    assert (sw.ran, sw.skipped, sw.failed) == (8, 0, 0)
    t = sw.table
    assert list(t.columns[:5]) == ["fabric.link_loss", "workload.size", "seed", "point", "status"]
    assert (t["status"] == "ok").all() and t["error"].isna().all()
    assert t["fabric.link_loss"].tolist() == [0.0] * 4 + [0.01] * 4
    assert t["seed"].tolist() == [1, 2] * 4
    # Every point's row and results are those of the same scenario run on its own.
    for p in sw.points:
        alone = fabricsim.run(dict(BASE, seed=p.params["seed"], workload=dict(BASE["workload"], size=p.params["workload.size"]),
                                   fabric={"link_loss": p.params["fabric.link_loss"]}))
        row = t.iloc[p.index]
        for col, v in figures(alone).items():
            got = row[col]
            assert (pd.isna(got) and v is None) or got == v, (p.params, col, got, v)
        saved = sw.result(p)
        for name in ("flows", "ports", "throughput", "connections"):
            pd.testing.assert_frame_equal(getattr(saved, name), getattr(alone, name))
        assert saved.summary["fct_ns"] == alone.summary["fct_ns"]
    assert t["drops"].iloc[4:].sum() > 0 and t["drops"].iloc[:4].sum() == 0
    table_bytes = (out / "sweep.parquet").read_bytes()
    before = stat(out)
    assert len(before) == 8

    again = fabricsim.sweep(BASE, GRID, seeds=[1, 2], out=out, jobs=2)
    assert (again.ran, again.skipped, again.failed) == (0, 8, 0)
    assert stat(out) == before  # no point written again
    assert (out / "sweep.parquet").read_bytes() == table_bytes

    # A larger grid over the same folder runs only the new points.
    more = fabricsim.sweep(BASE, GRID, seeds=[1, 2, 3], out=out, jobs=2)
    assert (more.ran, more.skipped) == (4, 8)
    after = stat(out)
    assert {k: v for k, v in after.items() if k in before} == before and len(after) == 12
    assert pd.read_parquet(out / "sweep.parquet").shape[0] == 12

    # A point run by another build of the core is run again.
    doc_path = out / "points" / sw.points[0].id / "point.json"
    doc = json.loads(doc_path.read_text())
    doc_path.write_text(json.dumps(dict(doc, build="0123456789abcdef")))
    rebuilt = fabricsim.sweep(BASE, GRID, seeds=[1, 2, 3], out=out, jobs=2)
    assert (rebuilt.ran, rebuilt.skipped) == (1, 11)
    assert json.loads(doc_path.read_text()) == doc


def test_the_table_is_the_same_on_any_number_of_workers(tmp_path):
    a = fabricsim.sweep(BASE, GRID, seeds=[3], out=tmp_path / "a", jobs=1)
    b = fabricsim.sweep(BASE, GRID, seeds=[3], out=tmp_path / "b", jobs=3)
    assert a.ran == b.ran == 4
    assert (tmp_path / "a" / "sweep.parquet").read_bytes() == (tmp_path / "b" / "sweep.parquet").read_bytes()


def test_a_builder_function_as_the_base(tmp_path):
    def build(hosts, size):
        return dict(BASE, topology=dict(BASE["topology"], hosts_per_leaf=hosts), workload={"kind": "permutation", "size": size})

    sw = fabricsim.sweep(build, {"hosts": [2, 3], "size": ["50KB"]}, out=tmp_path / "b", jobs=2)
    t = sw.table
    assert t["hosts"].tolist() == [2, 3] and t["flows"].tolist() == [4, 6]
    assert json.loads((tmp_path / "b" / "sweep.json").read_text())["base"]["builder"].endswith("build")
    # A grid that is not a product: its points as listed.
    listed = [{"hosts": 2, "size": "50KB"}, {"hosts": 4, "size": "20KB"}]
    sw = fabricsim.sweep(build, listed, out=tmp_path / "b", jobs=2)
    assert (sw.ran, sw.skipped) == (1, 1)  # (2 hosts, 50KB) was run above
    assert sw.table[["hosts", "size", "flows"]].values.tolist() == [[2, "50KB", 4], [4, "20KB", 8]]
    # Seeds set the built scenario's seed (build takes none).
    sw = fabricsim.sweep(build, listed, seeds=[5, 6], out=tmp_path / "b", jobs=2)
    assert sw.ran == 4 and [p.scenario["seed"] for p in sw.points] == [5, 6, 5, 6]
    assert sw.table["seed"].tolist() == [5, 6, 5, 6]
    assert sw.result(1).summary["seed"] == 6
    with pytest.raises(fabricsim.ScenarioError, match=r"grid\[1\]: every point must have the same keys"):
        fabricsim.sweep(build, [{"hosts": 2, "size": "50KB"}, {"hosts": 4}], out=tmp_path / "c")


def test_a_failing_point_is_recorded_and_the_sweep_goes_on(tmp_path):
    out = tmp_path / "f"
    # The 2 GB point (32 flows of 2 GB) runs for a minute; the limit stops it (its worker
    # is killed and replaced) and the other points finish.
    base = dict(BASE, topology=dict(BASE["topology"], hosts_per_leaf=16))
    grid = {"workload.size": ["20KB", "2GB", "30KB", "40KB"]}
    sw = fabricsim.sweep(base, grid, out=out, jobs=1, timeout=2)
    assert (sw.ran, sw.failed) == (4, 1)
    t = sw.table
    assert t["status"].tolist() == ["ok", "failed", "ok", "ok"]
    assert t["error"].iloc[1] == "timed out after 2 s (the worker was stopped)"
    assert t["fct_ns_p50"].isna().tolist() == [False, True, False, False]
    assert json.loads((out / "points" / sw.points[1].id / "point.json").read_text())["status"] == "failed"
    with pytest.raises(LookupError, match="timed out"):
        sw.result(1)
    assert not list((out / "points").glob(".*"))  # the killed worker's unfinished folder is gone
    before = stat(out)
    # A rerun tries the failed point again, and only it.
    again = fabricsim.sweep(base, grid, out=out, jobs=1, timeout=2)
    assert (again.ran, again.skipped, again.failed) == (1, 3, 1)
    after = stat(out)
    assert all(after[p.id] == before[p.id] for p in sw.points if p.index != 1)
    assert after[sw.points[1].id] != before[sw.points[1].id]


def test_the_command_exits_1_when_a_point_failed(tmp_path):
    spec = tmp_path / "s.toml"
    (tmp_path / "base.toml").write_text(SMALL.replace("hosts_per_leaf = 4", "hosts_per_leaf = 16"))
    spec.write_text('base = "base.toml"\n[grid]\n"workload.size" = ["10KB", "2GB"]\n')
    p = cli("sweep", str(spec), "--timeout", "1.5", "--jobs", "1", "--out", str(tmp_path / "o"))
    assert p.returncode == 1, p.stderr
    assert "2 points (1 run now, 0 done before, 1 failed)" in p.stdout
    assert 'point 1 (workload.size = "2GB") failed: timed out after 1.5 s' in p.stderr
    assert "Traceback" not in p.stderr


def _sweep_file(tmp_path: Path, seeds: int) -> Path:
    (tmp_path / "base.toml").write_text(SMALL.replace('size = "200KB"', 'size = "1MB"'))
    spec = tmp_path / "sweep.toml"
    spec.write_text(f'base = "base.toml"\nseeds = {{ from = 1, to = {seeds}, step = 1 }}\n'
                    f'[grid]\nfabric.link_loss = [0.0, 0.001]\n')
    return spec


def test_an_interrupted_sweep_resumes_where_it_stopped(tmp_path):
    spec = _sweep_file(tmp_path, 30)
    out = tmp_path / "o"
    proc = popen_interruptible([sys.executable, "-m", "fabricsim", "sweep", str(spec), "--out", str(out), "--jobs", "2"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while len(list(out.glob("points/*/point.json"))) < 4 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    done = stat(out)
    assert 4 <= len(done) < 60, "the sweep ended before it could be interrupted"
    assert f"interrupted; {len(done)} points are done in {out}" in err and "Traceback" not in err
    assert not (out / "sweep.parquet").exists()

    p = cli("sweep", str(spec), "--out", str(out), "--jobs", "2")
    assert p.returncode == 0, p.stderr
    assert f"60 points ({60 - len(done)} run now, {len(done)} done before, 0 failed)" in p.stdout
    after = stat(out)
    assert {k: after[k] for k in done} == done and len(after) == 60
    assert not [x for x in out.rglob("*") if x.name.startswith(".") and x.name != ".lock"]
    # The same table as a sweep that was never interrupted.
    p = cli("sweep", str(spec), "--out", str(tmp_path / "whole"), "--jobs", "2")
    assert p.returncode == 0, p.stderr
    assert (out / "sweep.parquet").read_bytes() == (tmp_path / "whole" / "sweep.parquet").read_bytes()


def test_the_sweep_file_and_its_output(tmp_path):
    (tmp_path / "base.toml").write_text(SMALL)
    spec = tmp_path / "s.toml"
    spec.write_text('base = "base.toml"\nout = "results"\nseeds = [1, 2]\n'
                    '[grid]\n"topology.hosts_per_leaf" = { from = 2, to = 4, step = 2 }\n')
    p = cli("sweep", str(spec))
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("sweep: 4 points (4 run now, 0 done before, 0 failed)")
    t = pd.read_parquet(tmp_path / "results" / "sweep.parquet")
    assert t["topology.hosts_per_leaf"].tolist() == [2, 2, 4, 4] and t["flows"].tolist() == [4, 4, 8, 8]
    assert t["fct_ns_p99"].dtype == np.float64 and str(t["drops"].dtype) == "Int64"


@pytest.mark.parametrize("text, needle", [
    ('[grid]\n"topology.kk" = [1, 2]',
     'grid key "topology.kk" = 1: topology.kk: unknown key (allowed here: kind, host_link'),
    ("[grid]", "nothing to vary: the grid is empty and no seeds are given"),
    ('[grid]\n"workload.size" = []', 'grid."workload.size": empty list of values'),
    ('[[zip]]\n"topology.leaves" = [2, 3]\n"topology.spines" = [2]',
     "zip[0]: zipped keys must have as many values each (topology.leaves has 2, topology.spines has 1)"),
    ('[grid]\n"transport.kind" = ["roce", "ring"]',
     'grid key "transport.kind" = "ring": transport.kind: unknown value "ring" (allowed: roce, qp_scaling'),
    ('[grid]\n"workload[2].size" = ["1MB"]', 'grid key "workload[2].size": workload is a table, not a list'),
    ('[grid]\n"topology..k" = [1]', "is not a dotted key"),
    ('[grid]\n"fabric.link_loss" = { from = 0, to = 1, stp = 0.1 }', "unknown key 'stp' in a range"),
    ('[grid]\n"fabric.link_loss" = { from = 1, to = 0, step = 0.1 }', "range to (0) is below from (1)"),
    ("seeds = [1, -2]", "seeds: expected integers between 0 and 2^63-1, got -2"),
    ("seeds = [1]\nstop = \"1ms\"", "unknown key 'stop' (allowed: base, grid, zip, seeds, out)"),
    ("seeds = [1\n", "not valid TOML"),
])
def test_bad_sweep_files_are_refused(tmp_path, text, needle):
    (tmp_path / "base.toml").write_text(SMALL)
    spec = tmp_path / "bad.toml"
    spec.write_text('base = "base.toml"\n' + text + "\n")
    p = cli("sweep", str(spec), "--out", str(tmp_path / "o"))
    assert p.returncode == 2, p.stderr
    assert p.stderr.startswith(f"fabricsim: error: {spec}: ") and p.stderr.count("\n") == 1, p.stderr
    assert needle in p.stderr, p.stderr
    assert "Traceback" not in p.stderr
    assert not (tmp_path / "o").exists()


def test_bad_flags_and_files_are_refused(tmp_path):
    (tmp_path / "base.toml").write_text(SMALL)
    spec = tmp_path / "s.toml"
    spec.write_text('base = "base.toml"\nseeds = [1]\n')
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep")
    for args, needle in [
        (["--jobs", "0"], "--jobs: expected an integer between 1 and 1024, got '0'"),
        (["--jobs", "two"], "--jobs: expected an integer between 1 and 1024, got 'two'"),
        (["--timeout", "0"], "--timeout: expected a number of seconds above 0"),
        (["--out", str(tmp_path / "mine")], f"--out {tmp_path / 'mine'}: {tmp_path / 'mine'} exists and is not a sweep folder"),
    ]:
        p = cli("sweep", str(spec), *args)
        assert p.returncode == 2 and needle in p.stderr and "Traceback" not in p.stderr, (args, p.stderr)
    assert [x.name for x in (tmp_path / "mine").iterdir()] == ["notes.txt"]
    for args, needle in [
        (["sweep", str(tmp_path / "none.toml")], f"sweep file not found: {tmp_path / 'none.toml'}"),
        (["sweep", str(tmp_path)], "is a folder; name a sweep TOML file"),
    ]:
        p = cli(*args)
        assert p.returncode == 2 and needle in p.stderr and "Traceback" not in p.stderr, (args, p.stderr)
    with pytest.raises(fabricsim.ScenarioError, match="jobs: expected an integer between 1 and 1024"):
        fabricsim.sweep(BASE, GRID, jobs=0, out=tmp_path / "x")


def _ray():
    try:
        import ray
    except ImportError:
        pytest.skip("Ray is not installed (pip install 'fabricsim[ray]'; CI installs it)")
    return ray


def test_the_same_sweep_on_a_local_ray_cluster(tmp_path):
    ray = _ray()
    pool = fabricsim.sweep(BASE, GRID, seeds=[1, 2], out=tmp_path / "pool", jobs=2)
    # The cluster this test starts: two CPUs, on this machine.
    ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR", log_to_driver=False)
    try:
        sw = fabricsim.sweep(BASE, GRID, seeds=[1, 2], out=tmp_path / "ray", ray=True)
        assert (sw.ran, sw.failed) == (8, 0)
        again = fabricsim.sweep(BASE, GRID, seeds=[1, 2], out=tmp_path / "ray", ray=True)
        assert (again.ran, again.skipped) == (0, 8)
    finally:
        ray.shutdown()
    assert (tmp_path / "ray" / "sweep.parquet").read_bytes() == (tmp_path / "pool" / "sweep.parquet").read_bytes()
    for p in pool.points:
        for name in ("flows.parquet", "ports.parquet", "scenario.toml", "point.json"):
            assert (tmp_path / "ray" / "points" / p.id / name).read_bytes() == \
                (tmp_path / "pool" / "points" / p.id / name).read_bytes()


def test_the_example_sweep_is_valid():
    from fabricsim.grid import validate_points
    from fabricsim.sweeps import load_spec

    spec = load_spec(Path(__file__).resolve().parent.parent / "examples" / "sweep" / "loss.toml")
    pts = points(spec["base"], axes(spec["grid"], spec["zip"], spec["seeds"], where=spec["where"]), spec["where"])
    assert len(pts) == 3 * 4 * 2 * 3
    validate_points(pts, spec["where"])
    assert spec["out"].name == "loss-sweep"


def test_a_script_read_from_stdin_without_a_main_guard_can_sweep(tmp_path):
    # multiprocessing's spawned workers would import the caller's main module again:
    # from stdin they could not, and an unguarded script would sweep again in each.
    script = (f"import fabricsim\n"
              f"sw = fabricsim.sweep({BASE!r}, {{'workload.size': ['10KB', '20KB']}}, out={str(tmp_path / 'o')!r}, jobs=2)\n"
              f"print(sw.ran, sw.failed)\n")
    p = subprocess.run([sys.executable, "-"], input=script, capture_output=True, text=True, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == ["2", "0"]


def test_ray_asked_for_where_it_is_not_installed(tmp_path):
    (tmp_path / "base.toml").write_text(SMALL)
    spec = tmp_path / "s.toml"
    spec.write_text('base = "base.toml"\nseeds = [1, 2]\n')
    code = ("import sys; sys.modules['ray'] = None\n"  # as if Ray were not installed
            "from fabricsim.cli import main\n"
            f"sys.exit(main(['sweep', {str(spec)!r}, '--ray', 'auto', '--out', {str(tmp_path / 'o')!r}]))\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert p.returncode == 2, p.stderr
    assert "--ray auto: Ray is not installed in this Python; install it with pip install 'fabricsim[ray]'" in p.stderr
    assert "Traceback" not in p.stderr and not (tmp_path / "o").exists()
