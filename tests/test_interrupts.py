"""The command and its process: Ctrl-C at any moment, failures while writing results,
temporary folders left by killed runs, and what the command imports."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import fabricsim.cli
from conftest import popen_interruptible

# Long enough (about 2 s of simulation) to be still running at every moment below.
LONG = """
name = "long"
[topology]
kind = "leaf_spine"
leaves = 2
spines = 2
hosts_per_leaf = 4
[workload]
kind = "permutation"
size = "1000MB"
[output]
plots = false
"""

COMMANDS = {"script": [str(Path(sys.executable).parent / "fabricsim")], "module": [sys.executable, "-m", "fabricsim"]}


def _wait_for_our_code(p: subprocess.Popen) -> None:
    """Until the process has loaded fabricsim's core (the package's first lines have
    run): before that it is Python starting, which fabricsim cannot reach."""
    maps = Path(f"/proc/{p.pid}/maps")
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and p.poll() is None:
        try:
            if "_core" in maps.read_text():
                return
        except OSError:
            pass
        time.sleep(0.0005)
    pytest.fail(f"the process did not load fabricsim's core (status {p.poll()})")


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="needs /proc (Linux)")
@pytest.mark.parametrize("how", sorted(COMMANDS))
def test_ctrl_c_at_any_early_moment_is_interrupted_and_130(tmp_path, how):
    # During the first half second (the imports of pandas and pyarrow, then the
    # simulation) a Ctrl-C printed a KeyboardInterrupt traceback.
    scenario = tmp_path / "long.toml"
    scenario.write_text(LONG)
    command = COMMANDS[how]
    if not Path(command[0]).exists():
        pytest.skip(f"no {command[0]}")
    for delay in (0, 0.002, 0.01, 0.03, 0.06, 0.1, 0.2, 0.3, 0.5):
        p = popen_interruptible([*command, "run", str(scenario), "--out", str(tmp_path / "o"), "--quiet"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            _wait_for_our_code(p)
            time.sleep(delay)
            p.send_signal(signal.SIGINT)
            out, err = p.communicate(timeout=60)
        finally:
            p.kill()
        assert "Traceback" not in err, (delay, err)
        assert (p.returncode, err) == (130, "fabricsim: interrupted\n"), (delay, p.returncode, err)
        assert not (tmp_path / "o").exists()


# --- failures while the results are made or written --------------------------------


def _raise(exc):
    def f(*args, **kwargs):
        raise exc
    return f


@pytest.mark.parametrize("where", ["parquet", "summary"])
def test_out_of_memory_while_writing_results_is_one_paragraph_and_status_1(tmp_path, small_toml, monkeypatch, capsys, where):
    # A 240 MB summary.json (a million link flaps) ended in a MemoryError traceback.
    import json

    import pyarrow.parquet as pq

    if where == "parquet":
        monkeypatch.setattr(pq, "write_table", _raise(MemoryError()))
    else:
        monkeypatch.setattr(json, "dump", _raise(MemoryError()))
    out = tmp_path / "o"
    assert fabricsim.cli.main(["run", str(small_toml), "--out", str(out), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"fabricsim: error: --out {out}: out of memory while writing the results; nothing was written"), err
    assert err.count("\n") == 1
    assert sorted(x.name for x in tmp_path.iterdir()) == ["small.toml"]


def test_out_of_memory_while_making_the_results_is_one_paragraph_and_status_1(small_toml, monkeypatch, capsys):
    from fabricsim.results import Result

    monkeypatch.setattr(Result, "from_core", _raise(MemoryError()))
    assert fabricsim.cli.main(["run", str(small_toml), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("fabricsim: error: out of memory (the run's results did not fit"), err
    assert err.count("\n") == 1


def test_an_unexpected_failure_is_one_paragraph_and_status_1(tmp_path, small_toml, monkeypatch, capsys):
    import pyarrow.parquet as pq

    monkeypatch.setattr(pq, "write_table", _raise(ValueError("bad\ncolumn " + "x" * 1000)))
    assert fabricsim.cli.main(["run", str(small_toml), "--out", str(tmp_path / "o"), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("fabricsim: error: internal error, please report it: ValueError: bad column xxx"), err
    assert err.count("\n") == 1 and len(err) < 400, err


# --- what the command imports ------------------------------------------------------

HEAVY = ("pandas", "pyarrow", "matplotlib", "numpy")


@pytest.mark.parametrize("argv", [None, ["validate", "SCENARIO"], ["list"], ["list", "--json"], ["--help"]])
def test_the_command_imports_no_pandas_pyarrow_or_matplotlib_unless_it_runs(small_toml, argv):
    # They took about 0.65 s before `fabricsim validate` or `list` did anything.
    code = ["import sys, fabricsim.cli"]
    if argv is not None:
        argv = [str(small_toml) if a == "SCENARIO" else a for a in argv]
        code.append(f"try:\n    fabricsim.cli.main({argv!r})\nexcept SystemExit:\n    pass")
    code.append(f"print(sorted(m for m in {HEAVY!r} if m in sys.modules), file=sys.stderr)")
    p = subprocess.run([sys.executable, "-c", "\n".join(code)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert p.stderr.splitlines()[-1] == "[]", p.stderr
    if argv and argv[0] == "validate":
        assert ": valid (small: 8 hosts" in p.stdout, p.stdout


def test_the_package_still_offers_result_and_plot_warning():
    import fabricsim
    from fabricsim.results import PlotWarning, Result

    assert fabricsim.Result is Result and fabricsim.PlotWarning is PlotWarning
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        fabricsim.nothing  # noqa: B018


# --- temporary folders of killed runs ----------------------------------------------

ONE_FLOW = """
[topology]
kind = "leaf_spine"
leaves = 2
spines = 1
hosts_per_leaf = 1
[workload]
kind = "flows"
flows = [{ src = 0, dst = 1, size = "10KB" }]
[output]
plots = false
"""


def _dead_pid() -> int:
    p = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    return int(p.stdout)


def _temporaries(folder: Path) -> list:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


def test_a_save_removes_the_temporary_folders_of_dead_runs_and_only_those(tmp_path):
    from fabricsim.results import _HOST

    other_host = "0" * 8 if _HOST != "0" * 8 else "1" * 8
    dead, live = _dead_pid(), os.getpid()
    made = {
        "stale": f".run-a.fabricsim-{dead}-{_HOST}-0123abcd.tmp",          # removed
        "live": f".run-b.fabricsim-{live}-{_HOST}-0123abcd.tmp",           # this process's
        "parent": f".run-c.fabricsim-{os.getppid()}-{_HOST}-0123abcd.tmp",  # a live process's
        "elsewhere": f".run-d.fabricsim-{dead}-{other_host}-0123abcd.tmp",  # another machine's
        "folders": f".run-e.fabricsim-{dead}-{_HOST}-0123abcd.tmp",         # holds a folder: not save()'s
        "foreign": ".run-f.tmp",                                           # not named as ours
    }
    for key, name in made.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "flows.parquet").write_bytes(b"x")
    (tmp_path / made["folders"] / "sub").mkdir()
    fabricsim.run(ONE_FLOW).save(tmp_path / "o")
    assert _temporaries(tmp_path) == sorted(n for k, n in made.items() if k != "stale")


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_the_temporary_folder_of_a_run_killed_while_writing_goes_with_the_next_run(tmp_path):
    # A SIGKILL while the results were written left a hidden .<name>....tmp folder in
    # fabricsim-out/ for ever.
    scenario = tmp_path / "one.toml"
    scenario.write_text(ONE_FLOW.replace("plots = false", "plots = true"))
    # A run whose save stops, once the tables are written, in a plot that never ends.
    slow = ("import sys, time, fabricsim.results\n"
            "fabricsim.results.Result._draw_plots = lambda self, folder: time.sleep(600)\n"
            "from fabricsim.cli import main\n"
            "sys.exit(main(sys.argv[1:]))\n")
    p = subprocess.Popen([sys.executable, "-c", slow, "run", str(scenario), "--quiet"], cwd=tmp_path,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out = tmp_path / "fabricsim-out"
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and p.poll() is None:
            if out.is_dir() and [t for t in out.iterdir() if (t / "summary.json").exists()]:
                break
            time.sleep(0.01)
        assert p.poll() is None, p.communicate()
        p.send_signal(signal.SIGKILL)
        p.wait()
    finally:
        p.kill()
    left = _temporaries(out)
    assert len(left) == 1 and left[0].startswith(".scenario-"), left
    # The next run writing there removes it (and writes its own folder).
    q = fabricsim.cli.main(["run", str(scenario), "--quiet", "--no-plots", "--out", str(out / "next")])
    assert q == 0
    assert sorted(x.name for x in out.iterdir()) == ["next"]
