"""The worked examples in examples/ run and show what they claim (small sizes)."""

import importlib.util
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def load(name: str):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def t1_rows():
    return {(w["planes"], w["transport"]): w for w in load("t1_failure").compare("4MB")}


def test_a_dead_t1_switch_slows_mrc_a_little_and_stalls_roce_until_routing_converges(t1_rows):
    for planes in (4, 8):
        m, r67, r, r1 = (t1_rows[planes, t] for t in ("mrc", "roce16", "roce16-4ms", "roce16-1ms"))
        for w in (m, r67, r, r1):
            assert w["healthy"].summary["flows"]["unfinished"] == 0, w
        # MRC retires the EVs through the dead switch and finishes within a few
        # healthy collective times (measured 1.9-2.2x at 4 MB, 1.05-1.1x at 64 MB).
        assert m["slowdown"] is not None and m["slowdown"] < 4, m
        assert m["failed"].summary["failed_connections"] == 0
        # ECMP keeps hashing QPs into the dead switch until the tables are recomputed
        # (reroute_after = 10 ms): with the deployed 67 ms timeout the QPs whose
        # packets died there resend only after it...
        assert r67["failed"].collectives.iloc[0]["duration_ns"] > 67e6, r67
        assert r67["failed"].summary["failed_connections"] == 0
        # ...with a 4 ms timeout RoCE finishes only after the tables are recomputed...
        assert r["failed"].collectives.iloc[0]["duration_ns"] > 10e6, r
        assert r["failed"].collectives.iloc[0]["duration_ns"] < 67e6, r
        assert r["slowdown"] > 10 * m["slowdown"], (r, m)
        # ...and with 1 ms (7 retries: 7 ms) QPs give up first and the ring never ends.
        assert r1["failed"].summary["flows"]["unfinished"] > 0
        assert r1["failed"].summary["failed_connections"] > 0


def test_t1_failure_example_prints_its_table_and_writes_the_plot(tmp_path, capsys):
    out = tmp_path / "t1.png"
    assert load("t1_failure").main(["--size", "1MB", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "QPs gave up" in text and "mrc" in text
    assert out.stat().st_size > 10_000
