"""Same scenario and seed: byte-identical flows.parquet and summary (but its `run` key)."""

import json

from conftest import cli


def test_same_seed_gives_identical_files_and_another_seed_does_not(tmp_path, small_toml):
    outs = []
    for name, seed in [("a", "11"), ("b", "11"), ("c", "12")]:
        out = tmp_path / name
        p = cli("run", str(small_toml), "--seed", seed, "--out", str(out), "--quiet", "--no-plots")
        assert p.returncode == 0, p.stderr
        outs.append(out)
    a, b, c = outs
    assert (a / "flows.parquet").read_bytes() == (b / "flows.parquet").read_bytes()
    assert (a / "ports.parquet").read_bytes() == (b / "ports.parquet").read_bytes()
    sa, sb, sc = (json.loads((o / "summary.json").read_text()) for o in outs)
    for s in (sa, sb, sc):
        s.pop("run")
    assert sa == sb
    assert sa != sc
    assert (a / "flows.parquet").read_bytes() != (c / "flows.parquet").read_bytes()


def test_a_partitioned_run_writes_identical_files_every_time(tmp_path, small_toml):
    # Two partitions on two threads: thread timing must never reach the results.
    toml = tmp_path / "parts.toml"
    toml.write_text(small_toml.read_text().replace('seed = 3', 'seed = 3\npartitions = 2')
                    .replace('kind = "leaf_spine"', 'kind = "fat_tree"\nk = 4').replace("leaves = 2\nspines = 2\nhosts_per_leaf = 4\n", ""))
    outs = []
    for name in ("a", "b"):
        out = tmp_path / name
        p = cli("run", str(toml), "--out", str(out), "--quiet", "--no-plots")
        assert p.returncode == 0, p.stderr
        outs.append(out)
    a, b = outs
    tables = sorted(f.name for f in a.glob("*.parquet"))
    assert "flows.parquet" in tables and "ports.parquet" in tables
    for name in tables:
        assert (a / name).read_bytes() == (b / name).read_bytes(), name
    sa, sb = (json.loads((o / "summary.json").read_text()) for o in outs)
    sa.pop("run"), sb.pop("run")
    assert sa == sb and sa["flows"]["unfinished"] == 0
    assert sa["scenario"]["partitions"] == 2
