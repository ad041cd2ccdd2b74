"""Collectives and jobs through the Python API: tables, saved files, the README's
examples, bad input."""

import re
from pathlib import Path

import pandas as pd
import pytest

import fabricsim

README = Path(__file__).resolve().parent.parent / "README.md"
LEAF = {"kind": "leaf_spine", "leaves": 4, "spines": 4, "hosts_per_leaf": 8}


def _readme_block(marker: str) -> str:
    """The README's TOML example that contains ``marker``."""
    for block in re.findall(r"```toml\n(.*?)```", README.read_text(), re.S):
        if marker in block:
            return block
    raise AssertionError(f"no TOML block with {marker!r} in the README")


def test_the_readme_job_example_runs_and_reports_every_iteration():
    text = _readme_block("[[jobs]]").replace("iterations = 10", "iterations = 2").replace('"2ms"', '"200us"')
    sc = f'[topology]\nkind = "leaf_spine"\nleaves = 4\nspines = 4\nhosts_per_leaf = 8\n[output]\nplots = false\nsample_interval = "0us"\n{text}'
    r = fabricsim.run(sc)
    j = r.jobs
    assert list(j["iteration"]) == [0, 1] and (j["name"] == "llm").all()
    assert (j["step_ns"] >= j["compute_ns"]).all()
    assert (j["exposed_comm_ns"] == j["step_ns"] - j["compute_ns"]).all()
    # 8 tensor groups x 2 instances and 4 data groups x 2 buckets per iteration.
    c = r.collectives
    assert len(c) == 2 * (8 * 2 + 4 * 2)
    assert set(c["job"]) == {0} and list(c["iteration"].unique()) == [0, 1]
    assert r.summary["jobs"][0]["finished_iterations"] == 2
    assert r.summary["collectives"] == [], "a job's collectives are in its tables"


def test_the_readme_collective_examples_run():
    text = _readme_block('kind = "all_to_allv"')
    r = fabricsim.run(f'[topology]\nkind = "leaf_spine"\nleaves = 2\nspines = 2\nhosts_per_leaf = 4\n'
                      f'[output]\nplots = false\nsample_interval = "0us"\n{text}')
    c = r.collectives
    assert list(c["kind"]) == ["all_reduce", "all_to_allv"]
    assert list(c["algorithm"]) == ["tree", "direct"]
    assert c.loc[0, "channels"] == 2
    assert c["job"].isna().all()
    assert (c["busbw_gbps"] > 0).all()


def test_jobs_are_saved_as_parquet(tmp_path):
    r = fabricsim.run({"topology": LEAF, "output": {"plots": False},
                       "jobs": [{"ranks": 8, "iterations": 3, "compute": "50us",
                                 "collectives": [{"kind": "all_reduce", "size": "1MB"}]}]})
    out = r.save(tmp_path / "out")
    pd.testing.assert_frame_equal(pd.read_parquet(out / "jobs.parquet"), r.jobs)
    assert len(r.jobs) == 3 and r.jobs["comm_ns"].notna().all()


def test_an_unfinished_iteration_is_null():
    r = fabricsim.run({"topology": LEAF, "stop": "120us", "output": {"plots": False},
                       "jobs": [{"ranks": 8, "iterations": 2, "compute": "100us",
                                 "collectives": [{"kind": "all_reduce", "size": "4MB"}]}]})
    assert r.jobs["step_ns"].isna().all() and r.jobs["end_ns"].isna().all()
    # The second iteration never started: it starts where the first ends.
    assert r.jobs.loc[0, "start_ns"] == 0 and pd.isna(r.jobs.loc[1, "start_ns"])


@pytest.mark.parametrize("jobs,message", [
    ([{"ranks": 64}], "jobs[0].ranks: 64 ranks but only 32 hosts"),
    ([{"ranks": 8, "collectives": [{"kind": "all_reduce", "size": "1MB", "algorithm": "rabenseifner"}]}],
     'jobs[0].collectives[0].algorithm: unknown value "rabenseifner" (allowed: ring, tree, halving_doubling)'),
    ([{"ranks": 8, "collectives": [{"kind": "broadcast", "size": "1MB", "root": 8}]}],
     "jobs[0].collectives[0].root: rank 8 does not exist"),
    ([{"ranks": 8, "collectives": [{"kind": "gather", "size": "1MB", "root": 8}]}],
     "jobs[0].collectives[0].root: rank 8 does not exist"),
    ([{"ranks": 8, "collectives": [{"kind": "reduce", "size": "1MB", "algorithm": "tree"}]}],
     'jobs[0].collectives[0].algorithm: unknown value "tree" (allowed: ring)'),
    ([{"ranks": 8, "collectives": [{"kind": "scatter", "size": "1MB", "chunk": "64KB"}]}],
     "jobs[0].collectives[0].chunk: unknown key"),
])
def test_bad_jobs_name_the_key(jobs, message):
    with pytest.raises(fabricsim.ScenarioError, match=re.escape(message)):
        fabricsim.run({"topology": LEAF, "jobs": jobs})


def test_a_job_reduces_gathers_and_scatters_with_nccl_tests_factors():
    r = fabricsim.run({"topology": LEAF, "output": {"plots": False},
                       "jobs": [{"ranks": 8, "iterations": 1, "compute": "10us",
                                 "collectives": [{"kind": "reduce", "size": "1MB", "root": 3},
                                                 {"kind": "gather", "size": "800KB"},
                                                 {"kind": "scatter", "size": "800KB", "root": 7}]}]})
    c = r.collectives
    assert list(c["kind"]) == ["reduce", "gather", "scatter"]
    assert list(c["algorithm"]) == ["ring", "direct", "direct"]
    assert list(c["size_bytes"]) == [1_000_000, 800_000, 800_000]
    assert list(c["busbw_gbps"] / c["algbw_gbps"]) == pytest.approx([1.0, 7 / 8, 7 / 8])
    # Gather: 7 parts of 100 KB into the root, rank 0; scatter: 7 out of rank 7 (packed:
    # rank r on host r).
    f = r.flows
    for k, side, host in ((1, "dst", 0), (2, "src", 7)):
        mine = f[f["collective"] == k]
        assert len(mine) == 7 and (mine[side] == host).all(), mine
        assert mine["size_bytes"].sum() == 700_000
    assert r.summary["flows"]["unfinished"] == 0


def test_trace_files_are_read_relative_to_the_scenario_file(tmp_path):
    (tmp_path / "t.cm").write_text("Nodes 2\nConnections 1\n0->1 id 1 start 2 size 50000\n")
    sc = tmp_path / "s.toml"
    sc.write_text('[topology]\nkind = "leaf_spine"\nleaves = 1\nspines = 1\nhosts_per_leaf = 2\n'
                  '[output]\nplots = false\n[[workload]]\nkind = "htsim"\nfile = "t.cm"\n')
    r = fabricsim.run(sc)
    assert list(r.flows["start_ns"]) == [2000]
    assert fabricsim.validate(str(sc))["flows"] == 1
    with pytest.raises(fabricsim.ScenarioError, match=r"workload\[0\]\.file: cannot read"):
        fabricsim.run(sc.read_text())  # as text: relative to the current directory


def test_a_traffic_mix_gives_slowdown_by_size(tmp_path):
    r = fabricsim.run({"topology": LEAF, "output": {"sample_interval": "0us"},
                       "workload": {"kind": "poisson", "cdf": "fb_hadoop", "load": 0.4, "duration": "1ms"}})
    dec = fabricsim.slowdown_by_size(r.flows)
    assert dec["flows"].sum() == len(r.flows) == r.summary["flows"]["total"]
    assert [b["flows"] for b in r.summary["slowdown_by_size"]] == list(dec["flows"])
    equal = fabricsim.slowdown_by_size(r.flows, bins=10)
    assert len(equal) == 10 and equal["flows"].max() - equal["flows"].min() <= 1
    assert (equal["min_bytes"].diff().dropna() >= 0).all()
    out = r.save(tmp_path / "out")
    assert (out / "fct_slowdown.png").exists()
