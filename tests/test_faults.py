"""Faults during a run as the fault log and the time series record them."""

import pytest

import fabricsim

BASE = """
stop = "40us"
[topology]
kind = "leaf_spine"
leaves = 2
spines = 2
hosts_per_leaf = 1
[workload]
kind = "flows"
flows = [{ src = 0, dst = 1, size = "64KB" }]
[output]
sample_interval = "1us"
"""


def flap(until: str) -> str:
    return BASE + f'[[faults]]\nat = "5us"\nkind = "link_flap"\nlink = "leaf[0].up[0]"\nperiod = "4us"\nuntil = "{until}"\n'


def test_a_flap_stops_at_until_with_the_cable_up():
    # Down 2 us, up 2 us from 5 us. Ending during a down phase, the cable comes up at
    # `until` itself; ending during an up phase, it stays up with no further row.
    r = fabricsim.run(flap("14us"))
    assert list(zip(r.faults.time_ns, r.faults.value)) == [
        (5000, "down"), (7000, "up"), (9000, "down"), (11000, "up"), (13000, "down"), (14000, "up")]
    r = fabricsim.run(flap("12us"))
    assert list(zip(r.faults.time_ns, r.faults.value)) == [(5000, "down"), (7000, "up"), (9000, "down"), (11000, "up")]
    assert set(r.faults.kind) == {"link_flap"}


def test_a_flap_must_end_after_it_starts():
    with pytest.raises(fabricsim.ScenarioError, match=r"faults\[0\]\.until: must be later than at \(5us\)"):
        fabricsim.run(flap("3us"))


def test_no_throughput_row_exceeds_the_line_rate():
    # The run ends mid-interval: its last row still covers a whole interval (a short
    # one divided a packet that took an interval to arrive by a fraction of it).
    r = fabricsim.run(BASE)
    t = r.throughput
    assert (t.gbps <= 100.0).all(), t.tail()
    assert (t.time_ns % 1000 == 0).all(), t.tail()
    assert t.bytes.sum() == 64_000
