"""MRC's results at small scale (paper section 5.2): each test fails if the mechanism
behind the trend is missing."""

import pytest

import fabricsim
from conftest import mrc_incast
from fabricsim.papers import mrc
from fabricsim.papers.udmp import MULTIPATH_OVERHEAD


def test_nic_link_failures_track_remaining_capacity_and_recover():
    # Fig. 9a: 4 x 100G planes; ports fail at 200/400/600 us (the third at the
    # receiver), recover at 800/1000/1200 us.
    r = fabricsim.run(mrc.nic_link_failures())
    got = mrc.phases(r, [60, 200, 260, 400, 460, 600, 660, 800, 860, 1000, 1060, 1200, 1260, 1400])
    up, one, two, three = got[0], got[2], got[4], got[6]
    assert up > 360, got
    # Each phase after a short re-convergence carries what the remaining ports can.
    assert 0.68 * up < one < 0.82 * up, got
    assert 0.43 * up < two < 0.57 * up, got
    assert 0.18 * up < three < 0.32 * up, got
    # Recovery as links return.
    assert got[8] > two * 0.9 and got[12] > 0.9 * up, got
    assert r.summary["flows"]["unfinished"] == 0
    assert [f["kind"] for f in r.summary["faults"]] == ["link_down"] * 3 + ["link_up"] * 3


def test_many_t0_t1_link_failures_cost_little():
    # Fig. 9c/d: 2 of 8 uplinks of every T0 (64 links) die; static SRv6 keeps
    # sending into them until the EVs are retired.
    base = fabricsim.run(mrc.t0_t1_failures(links_per_t0=0))
    hurt = fabricsim.run(mrc.t0_t1_failures(links_per_t0=2))
    ratio = hurt.flows["fct_ns"].max() / base.flows["fct_ns"].max()
    assert ratio < 1.08, ratio
    assert hurt.summary["ev_retirements"] > 50
    assert hurt.summary["drops_by_cause"]["link"] > 0


def test_t0_uplinks_failing_and_returning_behind_a_bottleneck_track_capacity():
    # Appendix Fig. 19b/c: one flow from a 400G NIC over four 100G T0 uplinks; three
    # fail at 2, 4, 6 ms and return at 8, 10, 12 ms (c: two fail at 2 ms and return at
    # 6 ms). Throughput follows the capacity left, down and back up.
    r = fabricsim.run(mrc.t0_uplink_failures(size="600MB", step_us=2000))
    step = mrc.phases(r, [a for k in range(7) for a in (2000 * k + 300, 2000 * k + 2000)])[::2]
    print(step)
    capacity = [385, 288, 192, 96, 192, 288, 384]
    assert step[0] > 0.95 * capacity[0], step
    for got, cap in zip(step[1:4], capacity[1:4]):
        assert 0.8 * cap < got < 1.05 * cap, (step, cap)
    # Restored links carry traffic again within each 2 ms step: the EVs retired on
    # them come back through probes, and spares are drawn at random, not in the order
    # probes brought them back (which moved the active set onto one path at a time).
    for got, cap in zip(step[4:], capacity[4:]):
        assert got > 0.75 * cap, (step, cap)
    c = fabricsim.run(mrc.t0_uplink_failures(size="300MB", step_us=2000, together=True))
    both = mrc.phases(c, [300, 2000, 2300, 6000, 6300, 8000])[::2]
    assert both[1] < 0.55 * both[0] and both[2] > 0.8 * both[0], both


def test_one_ev_dropping_20_percent_is_retired_and_replaced_at_line_rate():
    # Fig. 12/13: learn the EVs, then drop 20 % of one of them.
    clean = fabricsim.run(mrc.ev_drop(None))
    paths = clean.paths[clean.paths["plane"] == 0].sort_values("ev")
    ev = int(paths.iloc[0]["ev"])
    r = fabricsim.run(mrc.ev_drop(ev))
    states = r.ev_states[r.ev_states["ev"] == ev]["state"].tolist()
    assert "retired" in states, states
    # A backup of the same plane took its place.
    promoted = r.ev_states[(r.ev_states["state"] == "active") & (r.ev_states["time_ns"] > 0) & (r.ev_states["plane"] == 0)]
    assert len(promoted) >= 1
    assert r.flows["fct_ns"].iloc[0] < 1.03 * clean.flows["fct_ns"].iloc[0]


def test_ecn_moves_one_of_two_forced_flows_away():
    # Fig. 14: two flows start on the same path; ECN echoes make one swap EVs.
    seed = mrc.colliding_seed()
    r = fabricsim.run(mrc.forced_collision(seed))
    swaps = r.ev_states[(r.ev_states["state"] == "backup") & (r.ev_states["time_ns"] > 0)]
    assert len(swaps) >= 1
    # Once apart both run at line rate: near-ideal completion for both. (Each flow's
    # own standing queue later brings ECN echoes too, and a swap can land on the other's
    # spine for a while: seen 1.11 with spares drawn at random, 1.07 in order.)
    assert (r.flows["slowdown"] < 1.15).all(), r.flows[["fct_ns", "ideal_fct_ns"]]
    # Without the ECN swap rule they would share one link the whole time.
    stuck = fabricsim.run(dict(mrc.forced_collision(seed), transport={"kind": "mrc", "evs": 1, "backup": 4, "ecn_swap": 0}))
    assert (stuck.flows["slowdown"] > 1.6).all()


def test_incast_hurts_the_victim_under_roce_pfc_but_not_under_mrc():
    # Fig. 18/21: 7:1 incast plus a victim into the same rack.
    roce = mrc.victim_and_incast(fabricsim.run(mrc.incast_victim("roce")))
    m = mrc.victim_and_incast(fabricsim.run(mrc.incast_victim("mrc")))
    assert roce["pfc_pauses"] > 0
    assert roce["victim_gbps"] < 0.75 * 96, roce
    assert m["victim_gbps"] > 0.9 * 96, m
    assert m["incast_jain"] > 0.95, m


@pytest.mark.parametrize("planes", [2, 4])
def test_an_incast_over_planes_splits_evenly_and_resends_almost_nothing(planes):
    # Six senders to one host over 2 or 4 planes of 100G, lossy with trimming: the
    # receiver's planes are the bottleneck, and the senders' windows, not their ports,
    # set the pace. Each plane must carry its share, or its last hop queues while
    # another's runs dry and the reordering between them looks like loss (a 60:40
    # split cost 25-35 % spurious resends and 1.45x the ideal time).
    r = fabricsim.run(mrc_incast(planes, ecn={"last_hop": False}))
    s = r.summary
    per_plane = r.paths.groupby("plane").packets.sum()
    assert len(per_plane) == planes
    assert per_plane.max() < 1.05 * per_plane.min(), per_plane
    assert s["duplicate_packets"] < 0.01 * s["data_packets_sent"], s
    # 6 MB into `planes` x 100 Gb/s, every 4096-byte payload with its headers.
    ideal_ns = 6 * -(-1_000_000 // 4096) * (4096 + MULTIPATH_OVERHEAD) * 8 / (planes * 100)
    assert s["sim_time_ns"] < 1.1 * ideal_ns, (s["sim_time_ns"], ideal_ns)


@pytest.fixture(scope="module")
def all_reduce_busbw():
    return {(t, loss): mrc.busbw(fabricsim.run(mrc.ring_all_reduce(t, loss)))
            for t in ("roce", "roce16", "mrc") for loss in (0.0, 0.001, 0.01)}


def test_mrc_all_reduce_beats_roce_with_1_and_16_qps(all_reduce_busbw):
    b = all_reduce_busbw
    assert b[("mrc", 0.0)] > b[("roce16", 0.0)] > b[("roce", 0.0)], b


def test_random_loss_degrades_roce_far_more_than_mrc(all_reduce_busbw):
    b = all_reduce_busbw
    for t in ("roce", "roce16"):
        # RoCE's go-back-N collapses at 1 % loss; MRC's selective recovery holds.
        assert b[(t, 0.01)] < 0.2 * b[(t, 0.0)], (t, b)
    assert b[("mrc", 0.01)] > 0.5 * b[("mrc", 0.0)], b
    # At 0.1 % MRC keeps 86 % of its bandwidth (85-88 % over seeds 2-4), RoCE with 16
    # QPs 49 % (38-69 %: each of them goes back N). One QP loses about as large a share
    # as MRC (74-89 %), of a bandwidth already seven times below MRC's: collisions,
    # not loss, hold it down. What it keeps stays far below MRC's.
    cost = {t: 1 - b[(t, 0.001)] / b[(t, 0.0)] for t in ("roce", "roce16", "mrc")}
    assert cost["mrc"] < 0.2, cost
    assert cost["roce16"] > 2 * cost["mrc"], cost
    assert b[("roce", 0.001)] < 0.2 * b[("mrc", 0.001)], b


def test_all_to_all_mrc_beats_roce_and_small_messages_make_roce_loss_worst():
    """Fig. 17 at 16 hosts: without loss MRC is ahead of RoCE's single QP and 16 QPs
    bring RoCE no gain for small messages; with 0.1 % loss RoCE loses most of its
    bandwidth at 256 KB per pair but far less at 4 MB (many QPs mask a stalled one),
    while MRC keeps most of its own at both sizes."""
    b = {(t, s, loss): mrc.busbw(fabricsim.run(mrc.all_to_all(t, loss, size=s)))
         for t in ("roce", "roce16", "mrc") for s in ("256KB", "4MB") for loss in (0.0, 0.001)}
    assert b[("mrc", "256KB", 0.0)] > b[("roce", "256KB", 0.0)] >= b[("roce16", "256KB", 0.0)], b
    assert b[("mrc", "4MB", 0.0)] > b[("roce", "4MB", 0.0)], b
    kept = {(t, s): b[(t, s, 0.001)] / b[(t, s, 0.0)] for t in ("roce", "mrc") for s in ("256KB", "4MB")}
    assert kept[("roce", "256KB")] < 0.3 < 0.6 < kept[("roce", "4MB")], kept
    assert kept[("mrc", "256KB")] > 2 * kept[("roce", "256KB")] and kept[("mrc", "4MB")] > 0.9, kept


def test_dcqcn_profiles_trade_pfc_for_bottleneck_throughput():
    """Fig. 22: 15:1 incast, one flow arriving every 50 us. The default DCQCN profile
    lets the ToR queue grow into PFC but keeps the bottleneck at line rate; more
    aggressive profiles keep the queue short without PAUSE but leave the link idle at
    times (the paper: ~10 % and ~20 % slower)."""
    out = {}
    for prof in mrc.DCQCN_PROFILES:
        r = fabricsim.run(mrc.dcqcn_incast(prof))
        q = mrc.tor_queue(r)
        out[prof] = (r.summary["pfc_pauses"], q[q["time_us"] > 20]["utilization"].mean(), q["queue_kb"].max())
    (p0, u0, q0), (p1, u1, q1), (p2, u2, q2) = out["default"], out["aggressive"], out["most_aggressive"]
    assert p0 > 0 and u0 > 0.98, out
    assert p1 == 0 and p2 == 0 and q2 < q1 < q0, out
    assert u2 < u1 < 0.97, out


@pytest.mark.parametrize("pfc", [False, True])
def test_a_slowed_host_link_is_congestion_not_a_broken_path(pfc):
    # A `rate` fault takes host 3's link from 100 to 1 Gb/s during a 16-host all-to-all:
    # 15 senders queue at its T0 port, far past any timeout. Nothing is lost, so MRC
    # must retire no EV and finish close to the link's own time (RoCE: x1.05).
    scenario = {
        "topology": {"kind": "fat_tree", "k": 4},
        "fabric": {"pfc": pfc, "trimming": not pfc},
        "transport": {"kind": "mrc"},
        "workload": {"kind": "all_to_all", "size": "256KB"},
        "faults": [{"at": "10us", "kind": "rate", "link": "host[3].nic[0]", "rate": "1Gbps"}],
        "stop": "500ms",
    }
    r = fabricsim.run(scenario)
    own_time_ns = 15 * 256_000 * 8  # host 3's 15 messages at 1 Gb/s (each way)
    assert r.summary["flows"]["unfinished"] == 0
    assert r.flows["fct_ns"].max() < 1.5 * own_time_ns, r.flows["fct_ns"].max() / own_time_ns
    assert r.summary["ev_retirements"] == 0
    assert r.summary["drops"] == 0


@pytest.mark.parametrize("evs", [{}, {"evs": 4, "backup": 2}])
def test_a_plane_cut_in_two_moves_its_traffic_to_the_other_plane(evs):
    # Both T1 switches of plane 0 die: between groups that plane has no path left, so
    # every EV of it fails. Its slots empty once no EV is left to try, resends that
    # time out twice move to the other plane, and probes keep testing plane 0.
    # (Before, the tail packets were retried on plane 0 for ever: a stall. With 4 EVs
    # the sets stop growing and plane 0 empties within the run: a resend drawn by its
    # port must go back to the queue for the other plane, not vanish.)
    def scenario(faults):
        return {
            "topology": {"kind": "multi_plane", "planes": 2, "groups": 2, "hosts_per_group": 2, "t1_per_plane": 2},
            "fabric": {"pfc": False, "trimming": True, "routing": "srv6"},
            "transport": {"kind": "mrc", **evs},
            "workload": {"kind": "all_to_all", "size": "4MB" if evs else "1MB"},
            "faults": [{"at": "10us", "kind": "switch_down", "switch": s} for s in faults],
        }

    healthy = fabricsim.run(scenario([]))
    cut = fabricsim.run(scenario(["t1[0]", "t1[1]"]))
    assert cut.summary["flows"]["unfinished"] == 0
    # Cross-group pairs lose half their capacity; allow for finding that out.
    assert cut.flows["fct_ns"].max() < 4 * healthy.flows["fct_ns"].max()
    assert cut.summary["ev_retirements"] > 0


def test_a_lost_packet_finds_the_one_healthy_plane_of_several():
    # Five planes, the T1 of planes 0 and 1 down: a 16 KB flow's packets on those two
    # planes are lost, and nothing is sent after them. Each timeout resends on a plane
    # that has delivered since (not back and forth between the two dead ones, which
    # never finished), so the flow ends after a few RTOs.
    r = fabricsim.run({
        "topology": {"kind": "multi_plane", "planes": 5, "groups": 2, "t1_per_plane": 1, "hosts_per_group": 1},
        "fabric": {"pfc": False, "trimming": True},
        "transport": {"kind": "mrc"},
        "workload": {"kind": "flows", "flows": [{"src": 0, "dst": 1, "size": "16KB"}]},
        "faults": [{"at": "0us", "kind": "switch_down", "switch": s} for s in ("t1[0]", "t1[1]")],
        "stop": "100ms",
    })
    assert r.summary["ending"] == "all_finished"
    assert r.flows["fct_ns"].max() < 1_000_000


def test_resends_leave_a_plane_that_lost_everything():
    # Three planes, one T1 each; plane 0's dies mid-transfer. The packets in flight on
    # it are lost, and so would be every resend there: lost packets go to planes whose
    # latest news is delivery (before, a third of each round of resends went back to
    # the dead plane: 5.6x the healthy time).
    def scenario(faults):
        return {
            "topology": {"kind": "multi_plane", "planes": 3, "groups": 2, "t1_per_plane": 1, "hosts_per_group": 1,
                         "host_link": "200Gbps"},
            "fabric": {"pfc": False, "trimming": True},
            "transport": {"kind": "mrc"},
            "workload": {"kind": "flows", "flows": [{"src": 0, "dst": 1, "size": "4MB"}]},
            "faults": faults,
        }

    healthy = fabricsim.run(scenario([]))
    cut = fabricsim.run(scenario([{"at": "50us", "kind": "switch_down", "switch": "t1[0]"}]))
    assert cut.summary["ending"] == "all_finished"
    assert cut.flows["fct_ns"].max() < 2.5 * healthy.flows["fct_ns"].max()


def test_a_multi_plane_two_tier_clos_is_shorter_and_feels_a_link_failure_less():
    # Section 2 / Fig. 1: the same 16 hosts at 800 Gb/s, full bisection. The 2-tier
    # Clos of 8 x 100G planes crosses 3 switches where the 3-tier fat-tree of 800G
    # links crosses 5 (two fewer 1 us links); losing one T0 uplink costs the fat-tree
    # half of that edge's uplink capacity, the planes 1/32 of that T0 group's.
    lone = {"kind": "flows", "flows": [{"src": 0, "dst": 15, "size": "2B"}]}
    lat = {d: fabricsim.run(mrc.planes_vs_tiers(d, lone)).flows["fct_ns"].iloc[0] for d in ("tiers", "planes")}
    assert 1800 < lat["tiers"] - lat["planes"] < 2200, lat
    perm = {"kind": "permutation", "size": "8MB"}
    slow = {}
    for d in ("tiers", "planes"):
        healthy = fabricsim.run(mrc.planes_vs_tiers(d, perm)).flows["fct_ns"].max()
        hurt = fabricsim.run(mrc.planes_vs_tiers(d, perm, fail_at_us=20)).flows["fct_ns"].max()
        slow[d] = hurt / healthy
    # (Measured 2.33 and 1.23: the planes' 23 % is mostly resending what was in
    # flight through the dead link, the capacity lost is 3 %.)
    assert slow["tiers"] > 1.8 and slow["planes"] < 1.35, slow
    with pytest.raises(ValueError, match="design"):
        mrc.planes_vs_tiers("rings", perm)


def test_tail_probes_and_timeout_copies_shorten_recovery_from_a_dead_spine_and_can_be_switched_off():
    # One of two spines dies 10 us into a 100 KB flow; ECMP keeps hashing half the EVs
    # (and half the acknowledgements) into it. Lost tail packets wait for the
    # retransmission timeout unless the tail loss probe resends them, and a timeout's
    # single resend dies half the time unless it goes on two EVs.
    def run(seed, **knobs):
        return fabricsim.run({"seed": seed, "topology": {"kind": "leaf_spine", "leaves": 4, "spines": 2, "hosts_per_leaf": 4},
                              "fabric": {"pfc": False, "trimming": True}, "transport": {"kind": "mrc", "evs": 16, **knobs},
                              "workload": {"kind": "flows", "flows": [{"src": 2, "dst": 9, "size": "100KB"}]},
                              "faults": [{"at": "10us", "kind": "switch_down", "switch": "spine[1]"}],
                              "output": {"sample_interval": "0us"}})
    seeds = range(1, 9)
    on = [run(s) for s in seeds]
    off = [run(s, tail_probe=False, timeout_copy=False) for s in seeds]
    assert sum(r.summary["tail_probes"] for r in on) > 0
    assert all(r.summary["tail_probes"] == 0 for r in off)
    mean = lambda rs: sum(r.flows["fct_ns"].iloc[0] for r in rs) / len(rs)
    no_probe = mean([run(s, tail_probe=False) for s in seeds])
    no_copy = mean([run(s, timeout_copy=False) for s in seeds])
    # (Measured 124 us with both, 173 without probes, 194 without copies, 405 without
    # either.)
    assert mean(on) < 0.85 * min(no_probe, no_copy) and max(no_probe, no_copy) < 0.6 * mean(off), \
        (mean(on), no_probe, no_copy, mean(off))
