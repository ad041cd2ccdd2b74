"""The multipath metric tables against what the run must have done: out-of-order
degrees from a known delay difference, and per-path counters that add up to the
summary's totals."""

import pytest

import fabricsim
from conftest import mrc_incast
from fabricsim.papers.udmp import MULTIPATH_OVERHEAD

#: Wire time of one full data packet of a multipath transport at 100 Gb/s, in
#: microseconds.
PACKET_US = 8 * (4096 + MULTIPATH_OVERHEAD) / 100e3


def _two_paths(delay):
    """One STELLAR flow sprayed round-robin over two paths that SRv6 pins to the two
    spines of a 2 x 2 leaf-spine; ``delay`` is added to one spine's cable from t = 0."""
    s = {"topology": {"kind": "leaf_spine", "leaves": 2, "spines": 2, "hosts_per_leaf": 1,
                      "host_link": "100Gbps", "fabric_link": "100Gbps", "link_delay": "1us"},
         "fabric": {"routing": "srv6"},
         "transport": {"kind": "stellar", "paths": 2, "path_algo": "rr"},
         "workload": {"kind": "flows", "flows": [{"src": 0, "dst": 1, "size": "4MB"}]},
         "output": {"plots": False}}
    if delay:
        s["faults"] = [{"at": "0us", "kind": "delay", "link": "leaf[0].up[1]", "delay": f"{delay}us"}]
    return s


@pytest.mark.parametrize("delay_us", [0, 5, 10])
def test_out_of_order_degree_is_the_delay_difference_in_packets(delay_us):
    r = fabricsim.run(_two_paths(delay_us))
    ooo = r.summary["ooo_degree"]
    # Every placed packet is counted once: 4 MB in 4096-byte packets.
    assert ooo["packets"] == -(-4_000_000 // 4096) == r.ooo.packets.sum()
    assert ooo["max"] == r.connections.ooo_max.iloc[0] == r.ooo.degree.max()
    if delay_us == 0:
        # Equal paths: at most the one-packet skew of alternating arrivals.
        assert ooo["max"] <= 1, ooo
    else:
        # A packet on the fast path finds missing every packet sent on the slow one in
        # the last `delay`: at line rate delay / PACKET_US of them. The slow path's
        # packets arrive in order (degree 0): half of them.
        expected = delay_us / PACKET_US
        assert expected - 3 <= ooo["max"] <= expected + 2, (ooo, expected)
        assert ooo["p50"] == 0, ooo
        in_order = r.ooo.loc[r.ooo.degree == 0, "packets"].sum()
        assert abs(in_order - ooo["packets"] / 2) < 0.02 * ooo["packets"], r.ooo


@pytest.mark.parametrize("link_loss", [0.0, 0.01])
def test_per_path_counters_add_up_to_the_summary(link_loss):
    # A 6:1 MRC incast over two planes with trimming: queues trim, and with link loss
    # packets also vanish untrimmed.
    r = fabricsim.run(mrc_incast(2, link_loss=link_loss))
    s, p = r.summary, r.paths.sum(numeric_only=True)
    assert s["ending"] == "all_finished"
    assert p.packets == s["data_packets_sent"]
    assert p.retransmissions == s["retransmitted_packets"]
    assert s["trims"] > 0
    # A path's losses are packets that vanished untrimmed; each retires its EV unless
    # that EV is already out of the rotation.
    assert s["ev_retirements"] <= p.losses
    if link_loss == 0:
        # Every trimmed header reaches the receiver and its NACK the sender, which
        # charges the trim to the path the packet took; nothing is lost.
        assert p.trims == s["trims"]
        assert p.losses == 0 and s["drops"] == 0
    else:
        # Trimmed headers and NACKs can be lost too; losses are found among the drops.
        assert 0 < p.trims <= s["trims"]
        assert 0 < p.losses <= s["drops"]
    # Marks are echoed per EV only from data packets that arrived marked.
    assert p.ecn_marks <= s["ecn_marks"]
