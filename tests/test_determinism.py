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
