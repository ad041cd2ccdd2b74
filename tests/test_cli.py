"""The ``fabricsim`` command: run, validate, list, bench, and bad input."""

import errno
import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pyarrow.parquet
import pytest

import fabricsim.cli
from conftest import SMALL, cli


def test_run_writes_the_output_folder_and_prints_a_summary(tmp_path, small_toml):
    out = tmp_path / "o"
    p = cli("run", str(small_toml), "--out", str(out), "--seed", "5")
    assert p.returncode == 0, p.stderr
    assert "flows" in p.stdout and "8 finished / 8" in p.stdout
    assert (out / "flows.parquet").exists() and (out / "summary.json").exists() and (out / "fct_cdf.png").exists()
    s = json.loads((out / "summary.json").read_text())
    assert s["seed"] == 5
    # Not a terminal: no progress bar on stderr.
    assert "M events/s" not in p.stderr


def test_run_prints_a_closed_loops_rate_and_latency(tmp_path):
    sc = tmp_path / "mr.toml"
    sc.write_text('[topology]\nkind = "leaf_spine"\nleaves = 1\nspines = 1\nhosts_per_leaf = 5\n'
                  '[transport]\nkind = "star"\n[[workload]]\nkind = "message_rate"\nclients = 4\nops = 10\n')
    p = cli("run", str(sc), "--out", str(tmp_path / "o"), "--no-plots")
    assert p.returncode == 0, p.stderr
    line = next(l for l in p.stdout.splitlines() if l.strip().startswith("message_rate"))
    s = json.loads((tmp_path / "o" / "summary.json").read_text())["loops"][0]
    assert s["completed"] == s["ops"] == 40
    assert f"4 clients, {s['ops_per_s'] / 1e6:.2f} M WRITEs/s (40/40)" in line, line


def test_run_without_arguments_uses_the_bundled_default_in_a_new_folder(tmp_path):
    p = cli("run", "--quiet", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert p.stdout == ""
    runs = list((tmp_path / "fabricsim-out").iterdir())
    assert len(runs) == 1 and runs[0].name.startswith("default-")
    flows = pd.read_parquet(runs[0] / "flows.parquet")
    assert len(flows) == 40 and flows["fct_ns"].notna().all()


def test_a_bad_scenario_fails_with_one_paragraph_and_no_output(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text(SMALL.replace('kind = "leaf_spine"', 'kind = "ring"'))
    out = tmp_path / "o"
    p = cli("run", str(bad), "--out", str(out))
    assert p.returncode == 2
    assert p.stderr.count("\n") == 1
    assert 'topology.kind: unknown value "ring" (allowed: leaf_spine, fat_tree, multi_plane, htsim)' in p.stderr
    assert "Traceback" not in p.stderr
    assert not out.exists()
    assert sorted(x.name for x in tmp_path.iterdir()) == ["bad.toml"]


def test_bad_flags_are_refused(tmp_path, small_toml):
    for args, needle in [
        (["run", str(small_toml), "--seed", "minus"], "--seed: expected an integer"),
        (["run", str(small_toml), "--seed", "-3"], "--seed: expected an integer"),
        (["run", str(small_toml), "--partitions", "9"], "--partitions: expected an integer between 1 and 8"),
        (["run", str(small_toml), "--partitions", "two"], "--partitions: expected an integer between 1 and 8"),
        (["run", str(tmp_path / "nope.toml")], "scenario file not found"),
        (["frobnicate"], "invalid choice"),
        (["bench", "--case", "z"], "unknown case 'z'"),
    ]:
        p = cli(*args, cwd=tmp_path)
        assert p.returncode != 0, args
        assert needle in p.stderr, (args, p.stderr)
        assert "Traceback" not in p.stderr


def test_run_refuses_a_non_empty_output_folder(tmp_path, small_toml):
    out = tmp_path / "o"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    p = cli("run", str(small_toml), "--out", str(out))
    assert p.returncode == 2 and "already exists and is not empty" in p.stderr
    assert [x.name for x in out.iterdir()] == ["keep.txt"]


def test_validate(small_toml, tmp_path):
    p = cli("validate", str(small_toml))
    assert p.returncode == 0 and "valid" in p.stdout and "8 hosts" in p.stdout
    bad = tmp_path / "b.toml"
    bad.write_text(SMALL.replace("[workload]", "[workload]\nreceiver = 77").replace("permutation", "incast").replace('size = "200KB"', 'size = "200KB"\nsenders = 2'))
    p = cli("validate", str(bad))
    assert p.returncode == 2 and "workload[0].receiver: host 77 does not exist (hosts are 0..7)" in p.stderr


def test_list_documents_every_kind_with_defaults():
    p = cli("list")
    assert p.returncode == 0
    for needle in ['kind = "leaf_spine"', 'kind = "fat_tree"', 'kind = "multi_plane"', 'kind = "roce"', 'kind = "all_reduce"',
                   "hosts_per_leaf", "100Gbps", "rto", "cnp_interval"]:
        assert needle in p.stdout, needle
    j = json.loads(cli("list", "--json").stdout)
    assert any(s["kind"] == "incast" for s in j)


def test_partitions_override_runs_the_scenario_on_two_threads(tmp_path, small_toml):
    # Same scenario, two partitions: every flow finishes, the override is recorded, and
    # repeating it gives the same flows.
    outs = []
    for name in ("a", "b"):
        out = tmp_path / name
        p = cli("run", str(small_toml), "--out", str(out), "--partitions", "2", "--no-plots")
        assert p.returncode == 0, p.stderr
        assert " on 2 threads " in p.stdout
        outs.append(out)
    s = json.loads((outs[0] / "summary.json").read_text())
    assert s["scenario"]["partitions"] == 2 and s["flows"]["unfinished"] == 0
    assert (outs[0] / "flows.parquet").read_bytes() == (outs[1] / "flows.parquet").read_bytes()


def test_an_empty_scenario_path_is_refused(tmp_path):
    # It used to run the bundled default scenario.
    out = tmp_path / "o"
    p = cli("run", "", "--out", str(out), cwd=tmp_path)
    assert p.returncode == 2 and "fabricsim: error: scenario: empty path" in p.stderr
    assert not out.exists()
    p = cli("validate", "", cwd=tmp_path)
    assert p.returncode == 2 and "fabricsim: error: scenario: empty path" in p.stderr


def test_out_that_cannot_be_created_is_named_in_words_before_the_run(tmp_path, small_toml):
    afile = tmp_path / "afile"
    afile.write_text("")
    for out, message in [(afile / "x" / "y", f"--out {afile / 'x' / 'y'}: cannot create the output folder: {afile} is not a directory"),
                         (afile, f"--out: {afile} already exists and is not a folder; choose a new folder")]:
        p = cli("run", str(small_toml), "--out", str(out), "--quiet")
        assert p.returncode == 2
        assert p.stderr == f"fabricsim: error: {message}\n"
    assert sorted(x.name for x in tmp_path.iterdir()) == ["afile", "small.toml"]


@pytest.mark.skipif(not Path("/proc/self").exists(), reason="needs Linux's /proc")
def test_out_on_a_file_system_that_takes_no_folders_is_refused_before_the_run(tmp_path, small_toml):
    # As root, /proc passes the permission check; only making a folder there tells.
    out = Path("/proc/fabricsim-test-out")
    p = cli("run", str(small_toml), "--out", str(out), "--quiet")
    assert p.returncode == 2
    assert p.stderr.startswith(f"fabricsim: error: --out {out}: cannot create the output folder: ")
    assert "/proc " in p.stderr  # as root: takes no new folder; else: permission denied
    assert not out.exists()
    # A writable place is checked the same way and keeps nothing of the check.
    p = cli("run", str(small_toml), "--out", str(tmp_path / "o"), "--quiet")
    assert p.returncode == 0, p.stderr
    assert sorted(x.name for x in tmp_path.iterdir()) == ["o", "small.toml"]


def test_a_failed_save_is_named_in_words_and_leaves_nothing(tmp_path, small_toml, monkeypatch, capsys):
    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(pyarrow.parquet, "write_table", full)
    out = tmp_path / "a" / "b" / "o"
    assert fabricsim.cli.main(["run", str(small_toml), "--out", str(out), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert err == f"fabricsim: error: --out {out}: cannot write the output folder: no space left on device\n"
    # Neither the folder, nor its temporary sibling, nor the parents made for it.
    assert sorted(x.name for x in tmp_path.iterdir()) == ["small.toml"]


def test_a_missing_scenario_path_with_an_equals_sign_is_not_found(tmp_path, capsys, monkeypatch):
    # It was read as TOML text and reported as a TOML parse error.
    monkeypatch.chdir(tmp_path)
    for command in ("run", "validate"):
        assert fabricsim.cli.main([command, "sweeps/loss=0.01.toml"]) == 2
        assert capsys.readouterr().err == ("fabricsim: error: sweeps/loss=0.01.toml: scenario file not found: "
                                           "sweeps/loss=0.01.toml\n")
    # The argument is a file even when it reads as TOML (and no such file exists).
    assert fabricsim.cli.main(["validate", "seed = 1"]) == 2
    assert "scenario file not found: seed = 1" in capsys.readouterr().err


def test_flag_errors_name_the_flag(tmp_path, small_toml, capsys):
    out = tmp_path / "o"
    # argparse-style, like --seed (was "small.toml: pcap_snap: ...").
    with pytest.raises(SystemExit) as e:
        fabricsim.cli.main(["run", str(small_toml), "--out", str(out), "--pcap", "host[0]", "--pcap-snap", "-5"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("fabricsim: error: argument --pcap-snap: expected an integer between 0 and 65535, got '-5'"), err
    assert fabricsim.cli.main(["run", str(small_toml), "--out", str(out), "--pcap", "host[99]"]) == 2
    assert capsys.readouterr().err.startswith('fabricsim: error: --pcap host[99]: no port or node "host[99]" in this topology')
    # The same with the partitions in the scenario.
    two = tmp_path / "two.toml"
    two.write_text("partitions = 2\n" + SMALL)
    assert fabricsim.cli.main(["run", str(two), "--out", str(out), "--pcap", "host[99]"]) == 2
    assert capsys.readouterr().err.startswith('fabricsim: error: --pcap host[99]: no port or node "host[99]" in this topology')
    assert not out.exists()


def test_the_saved_scenario_reruns_a_seed_override(tmp_path, small_toml):
    # scenario.toml kept the file's seed = 3, so running it again gave another run.
    a, b = tmp_path / "a", tmp_path / "b"
    assert fabricsim.cli.main(["run", str(small_toml), "--seed", "5", "--out", str(a), "--quiet", "--no-plots"]) == 0
    assert fabricsim.cli.main(["run", str(a / "scenario.toml"), "--out", str(b), "--quiet", "--no-plots"]) == 0
    assert json.loads((b / "summary.json").read_text())["seed"] == 5
    assert (a / "flows.parquet").read_bytes() == (b / "flows.parquet").read_bytes()


def test_bench_says_which_kind_of_build_it_measures():
    # Its figures depend on it (profile-guided optimisation: 12-17 % per event). The
    # test build (maturin develop) has none; an installed one says "with".
    from fabricsim import _core

    p = cli("bench", "--case", "a")
    assert p.returncode == 0, p.stderr
    kind = "with" if _core.PGO else "without"
    assert f"build: fabricsim {_core.__version__}, {kind} profile-guided optimisation" in p.stderr
    assert p.stdout.splitlines()[0].startswith("case") and p.stdout.splitlines()[1].startswith("a ")
    assert cli("bench", "--case", "a", "--quiet").stderr == ""


def test_bench_fails_a_case_whose_flows_did_not_all_finish(tmp_path, monkeypatch, capsys):
    # A stalled or stopped run did less work than the case asks for: its speed would
    # be a false win. (Case a stopped after 20 us of its 100+ us.)
    from fabricsim import bench

    stopped = tmp_path / "a.toml"
    stopped.write_text('stop = "20us"\n' + bench.case_path("a").read_text())
    monkeypatch.setattr(bench, "case_path", lambda case: stopped)
    assert bench.main(["a"], quiet=True) == 1
    out, err = capsys.readouterr()
    assert out.splitlines()[1].startswith("a "), out
    assert "fabricsim: error: case a: 0 of 128 flows finished (ending: stop_time)" in err, err


def test_out_may_be_a_symbolic_link_to_an_empty_folder(tmp_path, small_toml, capsys):
    # The results go into the folder the link names (they were lost: the rename onto
    # the link failed after the run).
    target = tmp_path / "target"
    target.mkdir()
    link = tmp_path / "link"
    link.symlink_to(target)
    assert fabricsim.cli.main(["run", str(small_toml), "--out", str(link), "--quiet", "--no-plots"]) == 0
    assert link.is_symlink() and (target / "flows.parquet").exists()
    # A link to nothing is refused before the run.
    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "missing")
    capsys.readouterr()
    assert fabricsim.cli.main(["run", str(small_toml), "--out", str(dangling), "--quiet"]) == 2
    assert capsys.readouterr().err == f"fabricsim: error: --out: {dangling} is a symbolic link to nothing; name a folder\n"
    assert not (tmp_path / "missing").exists()


def test_a_plotting_failure_keeps_the_tables_and_warns(tmp_path, small_toml):
    # matplotlib refuses an unknown backend; the run's tables are still saved.
    import os
    import subprocess
    import sys

    out = tmp_path / "out"
    env = dict(os.environ, MPLBACKEND="bogus")
    p = subprocess.run([sys.executable, "-m", "fabricsim", "run", str(small_toml), "--out", str(out), "--quiet"],
                       capture_output=True, text=True, env=env)
    assert p.returncode == 0, p.stderr
    assert p.stderr.startswith("fabricsim: warning: plots not drawn: ValueError:"), p.stderr
    assert p.stderr.rstrip().endswith("(the tables are saved)") and "Traceback" not in p.stderr
    assert (out / "flows.parquet").exists() and not list(out.glob("*.png"))


def test_pcap_snap_needs_a_capture_and_seeds_may_have_leading_zeros(tmp_path, small_toml, capsys):
    out = tmp_path / "o"
    assert fabricsim.cli.main(["run", str(small_toml), "--out", str(out), "--pcap-snap", "64"]) == 2
    assert capsys.readouterr().err == "fabricsim: error: --pcap-snap: applies to a capture; give --pcap SPEC too\n"
    assert not out.exists()
    assert fabricsim.cli.main(["run", str(small_toml), "--out", str(out), "--seed", "010", "--quiet", "--no-plots"]) == 0
    assert json.loads((out / "summary.json").read_text())["seed"] == 10


def test_a_closed_pipe_ends_the_listing_quietly():
    # `fabricsim list --json | true` printed "fabricsim: error: [Errno 32] Broken pipe"
    # and exited 1. Here the reader's end is closed before anything is written (with a
    # reader such as `head` the listing may fit in the pipe's buffer and never meet the
    # closed end).
    import os
    import subprocess
    import sys

    r, w = os.pipe()
    os.close(r)
    try:
        p = subprocess.run([sys.executable, "-m", "fabricsim", "list", "--json"], stdout=w, stderr=subprocess.PIPE,
                           text=True)
    finally:
        os.close(w)
    assert p.stderr == "" and p.returncode == 141, p


def test_a_scenario_that_is_not_a_file_is_named_as_what_it_is(tmp_path):
    # /dev/zero and a FIFO were "scenario file not found"; reading either could hang or
    # fill memory, so the type is checked before anything is read.
    import os
    import socket

    fifo = tmp_path / "fifo.toml"
    os.mkfifo(fifo)
    sock_path = tmp_path / "s.toml"
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(sock_path))
    try:
        for path, kind in ((fifo, "a named pipe (FIFO)"), (Path("/dev/zero"), "a character device"),
                           (sock_path, "a socket"), (tmp_path, "a folder")):
            if not path.exists():
                continue
            for command in ("validate", "run"):
                # A subprocess with a time limit: a read of the FIFO would wait for a writer.
                p = subprocess.run([sys.executable, "-m", "fabricsim", command, str(path)], capture_output=True,
                                   text=True, timeout=60, cwd=tmp_path)
                assert (p.returncode, p.stderr) == (
                    2, f"fabricsim: error: {path}: scenario: {path} is {kind}; name a scenario TOML file\n"), p.stderr
    finally:
        sock.close()


def test_a_scenario_file_larger_than_16_mib_is_refused_before_it_is_read(tmp_path, capsys):
    big = tmp_path / "big.toml"
    with open(big, "wb") as f:
        f.truncate(16 * 2**20 + 1)  # sparse: nothing is written
    assert fabricsim.cli.main(["validate", str(big)]) == 2
    err = capsys.readouterr().err
    assert err == (f"fabricsim: error: {big}: scenario: {big} has 16777217 bytes, more than the 16 MiB (16777216 bytes) "
                   "a scenario file may have (give a larger one as a dict)\n"), err
    # Exactly 16 MiB is read (and is not valid TOML: NUL bytes).
    with open(big, "r+b") as f:
        f.truncate(16 * 2**20)
    assert fabricsim.cli.main(["validate", str(big)]) == 2
    assert "not valid TOML" in capsys.readouterr().err
