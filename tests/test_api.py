"""The Python API: results as DataFrames, errors as exceptions with the core's messages."""

import math
import re

import pandas as pd
import pytest

import fabricsim
import fabricsim.cli
from conftest import SMALL

FLOW_COLUMNS = ["flow_id", "src", "dst", "size_bytes", "start_ns", "finish_ns", "fct_ns", "ideal_fct_ns", "slowdown",
                "acked_ns", "sender_fct_ns", "sender_ideal_fct_ns", "sender_slowdown",
                "retransmitted_packets", "workload", "collective", "connection"]


def test_run_from_a_file_gives_dataframes_and_a_summary(small_toml):
    r = fabricsim.run(small_toml)
    assert list(r.flows.columns) == FLOW_COLUMNS
    assert isinstance(r.flows, pd.DataFrame) and isinstance(r.ports, pd.DataFrame)
    assert len(r.flows) == 8
    assert r.flows["fct_ns"].notna().all()
    assert (r.flows["fct_ns"] == r.flows["finish_ns"] - r.flows["start_ns"]).all()
    assert (r.flows["slowdown"] >= 1.0).all()
    s = r.summary
    for key in ["sim_time_ns", "events", "packet_hops", "drops", "pfc_pauses", "ecn_marks", "flows", "fct_ns", "seed", "scenario", "run"]:
        assert key in s
    assert s["flows"] == {"total": 8, "finished": 8, "unfinished": 0}
    assert s["bytes_delivered"] == s["bytes_offered"] == 8 * 200_000
    assert s["run"]["wall_seconds"] > 0
    assert set(["time_ns", "port", "port_id", "utilization", "queue_bytes", "queue_max_bytes", "ecn_marks", "drops", "pause_ns"]) <= set(r.ports.columns)
    assert r.ports["port"].str.fullmatch(r"(?:host|leaf|spine)\[\d+\]\.(?:nic|up|down)\[\d+\]").all()


def test_run_from_a_dict_equals_run_from_toml(small_toml):
    d = {
        "name": "small", "seed": 3,
        "topology": {"kind": "leaf_spine", "leaves": 2, "spines": 2, "hosts_per_leaf": 4},
        "workload": {"kind": "permutation", "size": "200KB"},
        "output": {"sample_interval": "5us"},
    }
    a = fabricsim.run(d)
    b = fabricsim.run(small_toml)
    pd.testing.assert_frame_equal(a.flows, b.flows)


def test_toml_text_is_accepted_directly():
    r = fabricsim.run(SMALL)
    assert r.summary["name"] == "small"


def test_toml_text_longer_than_a_file_name_is_accepted():
    # A one-line-per-key text beyond 255 bytes without a slash cannot be a path: asking
    # the file system whether it is a file raised ENAMETOOLONG.
    text = SMALL + "\n".join(f"# padding {i} " + "x" * 60 for i in range(6)) + "\n"
    assert len(text) > 300 and "/" not in text
    assert fabricsim.run(text).summary["name"] == "small"


def test_seed_override_changes_the_run(small_toml):
    a = fabricsim.run(small_toml)
    b = fabricsim.run(small_toml, seed=99)
    assert b.summary["seed"] == 99 and b.summary["scenario"]["seed"] == 99
    assert not a.flows[["src", "dst"]].equals(b.flows[["src", "dst"]])


def test_an_unfinished_flow_has_null_times():
    r = fabricsim.run(SMALL.replace('name = "small"', 'name = "small"\nstop = "20us"', 1))
    assert r.summary["ending"] == "stop_time"
    assert r.summary["flows"]["unfinished"] == 8
    assert r.flows["fct_ns"].isna().all() and r.flows["finish_ns"].isna().all()
    assert all(math.isnan(x) for x in r.flows["slowdown"])


@pytest.mark.parametrize("change,message", [
    (("hosts_per_leaf = 4", "hosts_per_leaf = 0"), "topology.hosts_per_leaf: must be between 1 and"),
    (('kind = "permutation"', 'kind = "gossip"'), 'workload[0].kind: unknown value "gossip" (allowed: flows, permutation, incast, all_to_all, all_reduce, all_gather, reduce_scatter, broadcast, reduce, gather, scatter, all_to_allv, barrier'),
    (('size = "200KB"', 'size = "lots"'), 'workload[0].size: expected a size such as "8MB"'),
    (("[output]", "[output]\nsparkle = true"), "output.sparkle: unknown key (allowed here: sample_interval, plots, fct_at)"),
])
def test_bad_scenarios_raise_scenario_error_with_the_key_named(change, message):
    with pytest.raises(fabricsim.ScenarioError) as e:
        fabricsim.run(SMALL.replace(*change))
    assert message in str(e.value)
    assert isinstance(e.value, ValueError)


def test_bad_arguments_are_scenario_errors(tmp_path):
    with pytest.raises(fabricsim.ScenarioError, match="scenario file not found"):
        fabricsim.run(tmp_path / "missing.toml")
    with pytest.raises(fabricsim.ScenarioError, match=r"is a folder; name a scenario TOML file"):
        fabricsim.run(tmp_path)
    # A name too long for the file system is still just a missing file.
    with pytest.raises(fabricsim.ScenarioError, match="scenario file not found"):
        fabricsim.run("a" * 300 + ".toml")
    with pytest.raises(fabricsim.ScenarioError, match="seed: expected an integer"):
        fabricsim.run(SMALL, seed=-1)
    for bad in (0, 9, "2", True):
        with pytest.raises(fabricsim.ScenarioError, match="partitions: expected an integer between 1 and 8"):
            fabricsim.run(SMALL, partitions=bad)
    with pytest.raises(fabricsim.ScenarioError, match="expected a file path, TOML text or a dict"):
        fabricsim.run(42)
    with pytest.raises(fabricsim.ScenarioError, match="topology: is required"):
        fabricsim.run({"workload": {"kind": "incast", "senders": 2, "size": 10}})


def test_arguments_of_the_wrong_type_are_named():
    # The core takes only exact types: these were bare TypeErrors from inside.
    for bad in (5, ["host[0]"], b"host[0]"):
        with pytest.raises(fabricsim.ScenarioError, match=r"pcap: expected a string of comma-separated port, host or switch names"):
            fabricsim.run(SMALL, pcap=bad)
    for bad in ("yes", 1, None):
        with pytest.raises(fabricsim.ScenarioError, match="progress: expected True or False"):
            fabricsim.run(SMALL, progress=bad)
    with pytest.raises(fabricsim.ScenarioError, match="scenario: empty path"):
        fabricsim.run("")


def _small_dict(**topology):
    return {"name": "small", "seed": 3,
            "topology": {"kind": "leaf_spine", "leaves": 2, "spines": 2, "hosts_per_leaf": 4, **topology},
            "workload": [{"kind": "permutation", "size": "200KB"}],
            "output": {"sample_interval": "5us"}}


def _nested(depth, make):
    x = 1
    for _ in range(depth):
        x = make(x)
    return x


@pytest.mark.parametrize("change,message", [
    (lambda d: d["topology"].update(leaves=None), "topology.leaves: expected a value, got None"),
    (lambda d: d.update(name=None), "name: expected a value, got None"),
    (lambda d: d["topology"].update(leaves=float("nan")), "topology.leaves: expected a finite number, got nan"),
    (lambda d: d["workload"][0].update(size=float("-inf")), "workload[0].size: expected a finite number, got -inf"),
    (lambda d: d["topology"].update(kind=b"fat_tree"), "topology.kind: expected a string, number, boolean, table or list, got bytes"),
    (lambda d: d["topology"].update({4: "k"}), "topology: keys must be strings, got int 4"),
    (lambda d: d.update(transport={"kind": "mprdma", "ecn_cut": "third"}),
     'transport.ecn_cut: unknown value "third" (allowed: half_packet, halve)'),
    # 5000 levels were a RecursionError from inside json.
    (lambda d: d.update(extra=_nested(5000, lambda x: {"a": x})), "extra.a.a.a.*: nested more than 64 levels deep"),
    (lambda d: d["workload"].append(_nested(5000, lambda x: [x])), r"workload\[1\]\[0\]\[0\].*: nested more than 64 levels deep"),
])
def test_bad_values_in_a_scenario_dict_name_the_key(change, message):
    d = _small_dict()
    change(d)
    with pytest.raises(fabricsim.ScenarioError) as e:
        fabricsim.validate(d)
    assert re.match(message if "*" in message else re.escape(message), str(e.value)), str(e.value)


def test_numpy_scalars_in_a_scenario_dict_are_plain_numbers():
    np = pytest.importorskip("numpy")
    d = _small_dict(leaves=np.int64(2), spines=np.int32(2), hosts_per_leaf=np.uint8(4))
    d["seed"] = np.int64(3)
    d["output"]["plots"] = np.bool_(False)
    d["workload"][0]["size"] = np.int64(200_000)
    a = fabricsim.run(d)
    b = fabricsim.run(SMALL)
    pd.testing.assert_frame_equal(a.flows, b.flows)
    # A numpy float is a float, as a Python one is: refused for an integer key, by name.
    with pytest.raises(fabricsim.ScenarioError, match="topology.mtu: expected an integer, got a float"):
        fabricsim.validate(_small_dict(mtu=np.float64(4096.0)))


def test_validate_and_catalog():
    info = fabricsim.validate(SMALL)
    assert info == {"name": "small", "hosts": 8, "connections": 8, "flows": 8, "transport": "roce"}
    cat = fabricsim.catalog()
    kinds = {(s["section"], s["kind"]) for s in cat}
    assert ("topology", "fat_tree") in kinds and ("transport", "roce") in kinds and ("workload", "all_reduce") in kinds


def test_save_writes_every_file_atomically(tmp_path, small_toml):
    r = fabricsim.run(small_toml)
    out = r.save(tmp_path / "out")
    names = sorted(p.name for p in out.iterdir())
    tables = ["collectives", "connections", "ev_states", "faults", "flows", "jobs", "nics", "ooo", "paths", "ports", "throughput"]
    plots = ["fct_cdf.png", "queues.png", "throughput.png", "throughput_time.png"]
    assert names == sorted([f"{t}.parquet" for t in tables] + plots + ["scenario.toml", "summary.json"])
    pd.testing.assert_frame_equal(pd.read_parquet(out / "flows.parquet"), r.flows)
    with pytest.raises(FileExistsError):
        r.save(out)
    # Nothing half-written is left beside it.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "small.toml"]


def test_save_refuses_arguments_of_the_wrong_type_before_writing(tmp_path, small_toml):
    r = fabricsim.run(small_toml)
    with pytest.raises(TypeError, match="save: out must be a path"):
        r.save(5)
    with pytest.raises(TypeError, match="save: plots must be True, False or None, got 'no'"):
        r.save(tmp_path / "out", plots="no")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["small.toml"]


def test_all_reduce_reports_a_collective():
    r = fabricsim.run({
        "topology": {"kind": "leaf_spine", "leaves": 2, "spines": 2, "hosts_per_leaf": 4},
        "workload": {"kind": "all_reduce", "size": "800KB"},
    })
    assert len(r.collectives) == 1
    c = r.collectives.iloc[0]
    assert c["kind"] == "all_reduce" and c["hosts"] == 8
    assert c["duration_ns"] == r.flows["finish_ns"].max() - r.flows["start_ns"].min()
    # 14 dependent steps of 100KB: the collective takes at least 14 chunk times.
    assert c["duration_ns"] > 14 * 100_000 * 8 / 100
    assert 0 < c["busbw_gbps"] < 100


def test_scenario_dicts_take_ranges_and_pandas_series_but_not_sets():
    pd = pytest.importorskip("pandas")
    topo = {"kind": "leaf_spine", "leaves": 2, "spines": 2, "hosts_per_leaf": 4}
    plain = fabricsim.run({"topology": topo, "workload": {"kind": "all_reduce", "hosts": [0, 1, 2, 3], "size": "100KB"}})
    for hosts in (range(4), pd.Series([0, 1, 2, 3])):
        r = fabricsim.run({"topology": topo, "workload": {"kind": "all_reduce", "hosts": hosts, "size": "100KB"}})
        assert r.summary["flows"] == plain.summary["flows"], hosts
    # A set has no order (and a ring's order matters); the path is the core's, a single
    # workload table being workload[0].
    with pytest.raises(fabricsim.ScenarioError, match=r"^workload\[0\]\.hosts: expected a list, got a set"):
        fabricsim.run({"topology": topo, "workload": {"kind": "all_reduce", "hosts": {0, 1, 2}, "size": "1MB"}})
    with pytest.raises(fabricsim.ScenarioError, match=r'^workload\[0\]\."a\.b": expected a value, got None'):
        fabricsim.run({"topology": topo, "workload": {"kind": "permutation", "size": "1MB", "a.b": None}})


def test_numpy_integers_are_accepted_as_arguments():
    np = pytest.importorskip("numpy")
    tiny = {"topology": {"kind": "leaf_spine", "leaves": 2, "spines": 1, "hosts_per_leaf": 1},
            "workload": {"kind": "flows", "flows": [{"src": 0, "dst": 1, "size": "10KB"}]}}
    a = fabricsim.run(tiny, seed=np.int64(3), partitions=np.int32(1), pcap="host[0]", pcap_snap=np.uint16(64))
    b = fabricsim.run(tiny, seed=3)
    assert a.summary["seed"] == b.summary["seed"] == 3
    # As on the command line (--pcap-snap needs --pcap), a snap length without a
    # capture is refused rather than ignored.
    with pytest.raises(fabricsim.ScenarioError, match="^pcap_snap: applies to a capture; give pcap"):
        fabricsim.run(tiny, pcap_snap=64)


def test_a_one_line_string_ending_in_toml_is_a_path(tmp_path):
    # "loss=0.01.toml" contains "=", and was read as TOML text: a TOML parse error.
    for missing in ("sweeps/loss=0.01.toml", str(tmp_path / "a=b.toml")):
        with pytest.raises(fabricsim.ScenarioError, match=f"^scenario file not found: {re.escape(missing)}$"):
            fabricsim.run(missing)
    (tmp_path / "a=b.toml").write_text(SMALL)
    assert fabricsim.validate(str(tmp_path / "a=b.toml"))["name"] == "small"
    # TOML text still is TOML text.
    assert fabricsim.validate(SMALL.replace('"small"', '"small.toml"'))["name"] == "small.toml"


@pytest.mark.parametrize("change,key", [
    (lambda d: d.update(seed=2**63), "seed"),
    (lambda d: d.update(seed=2**64), "seed"),
    (lambda d: d["topology"].update(leaves=-2**63 - 1), "topology.leaves"),
    (lambda d: d["workload"][0].update(size=2**64), "workload[0].size"),
])
def test_integers_beyond_64_bits_in_a_scenario_dict_name_the_key_and_the_range(change, key):
    # They were "u64 value was too large at line 1 column 192" (no key) or "expected an
    # integer, got a float".
    d = _small_dict()
    change(d)
    with pytest.raises(fabricsim.ScenarioError) as e:
        fabricsim.validate(d)
    assert str(e.value).startswith(f"{key}: integers must be between -2^63 and 2^63-1 "
                                   "(-9223372036854775808 and 9223372036854775807), got "), str(e.value)
    d = _small_dict()
    d["seed"] = 2**63 - 1
    assert fabricsim.validate(d)["hosts"] == 8


def test_a_capture_with_partitions_writes_every_partitions_frames():
    # Hosts 0 and 7 are simulated by different threads: both hosts' frames are there.
    one = fabricsim.run(SMALL, pcap="host[0],host[7]")
    two = fabricsim.run(SMALL, partitions=2, pcap="host[0],host[7]")
    assert two.summary["scenario"]["partitions"] == 2
    n1, n2 = one.summary["run"]["pcap_frames"], two.summary["run"]["pcap_frames"]
    assert n2 > 0 and two.pcap.stat().st_size > 24 + 16 * n2
    # The same traffic, up to the order of simultaneous events (as with a new seed).
    assert abs(n2 - n1) <= 0.05 * n1, (n1, n2)



def test_the_core_facts_python_uses_come_from_the_core():
    # papers/udmp.py wrote the header bytes as literals (82 + 20 + 16 + 32), api.py and
    # the command the partition bound (8).
    from fabricsim import _core
    from fabricsim.papers import udmp

    assert udmp.MULTIPATH_OVERHEAD == _core.HEADER_BYTES + _core.PREAMBLE_IFG_BYTES + _core.RETH_BYTES + _core.EXT_BYTES
    assert udmp.ACK_WIRE == _core.HEADER_BYTES + _core.PREAMBLE_IFG_BYTES + _core.EXT_BYTES
    # ... and they are what a run puts on the wire: three full packets and their ACKs.
    for kind, data, acks in (("udmp", 3 * (4096 + udmp.MULTIPATH_OVERHEAD), 3 * udmp.ACK_WIRE),
                             ("roce", 3 * (4096 + udmp.ROCE_OVERHEAD) + _core.RETH_BYTES, None)):
        r = fabricsim.run({"topology": {"kind": "leaf_spine", "leaves": 1, "spines": 1, "hosts_per_leaf": 2},
                           "transport": {"kind": kind}, "output": {"plots": False},
                           "workload": {"kind": "flows", "flows": [{"src": 0, "dst": 1, "size": 3 * 4096}]}})
        sent = r.ports.groupby("port", observed=True)["tx_bytes"].sum()
        assert sent["host[0].nic[0]"] == data, (kind, sent)
        if acks is not None:
            assert sent["host[1].nic[0]"] == acks, (kind, sent)
    top = _core.MAX_PARTITIONS
    with pytest.raises(fabricsim.ScenarioError, match=f"^partitions: expected an integer between 1 and {top}, got {top + 1}$"):
        fabricsim.run(SMALL, partitions=top + 1)
    assert fabricsim.cli._partitions(str(top)) == top
    with pytest.raises(fabricsim.cli.argparse.ArgumentTypeError, match=f"between 1 and {top}"):
        fabricsim.cli._partitions(str(top + 1))


def test_values_in_errors_are_cut_to_a_readable_length():
    # The core cuts the values it quotes (issue 23); so do the checks made here.
    with pytest.raises(fabricsim.ScenarioError) as e:
        fabricsim.run(SMALL, seed="9" * 100_000)
    assert str(e.value) == f"seed: expected an integer between 0 and 2^63-1, got '{'9' * 63}... (100002 characters)"
    with pytest.raises(fabricsim.ScenarioError) as e:
        fabricsim.run(SMALL.replace('kind = "permutation"', f'kind = "{"p" * 10**6}"'))
    # Cut to 64 characters; the list of allowed kinds that follows grows with the kinds.
    quoted = str(e.value).split(" (allowed: ")[0]
    assert len(quoted) < 150 and quoted.endswith("... (1000000 characters)"), str(e.value)[:300]
