"""Maestro's trends at small scale (Tian et al., SOSR '21) through the scenario builders
of ``fabricsim.papers.maestro``. The Rust tests in ``crates/run/tests/maestro.rs``
check every figure (8, 9, 10, 12c, 12e, 12f) with the measured numbers in their
comments; these check the Python side end to end and the comparison table.
``experiments/maestro/README.md`` compares the larger runs with the paper."""

import pytest

import fabricsim
from fabricsim.papers import maestro


def bandwidth(paths, **keys):
    return maestro.goodput_gbps(fabricsim.run(maestro.bandwidth({"kind": "maestro", "paths": paths, **keys})))


def test_fig8_bandwidth_grows_with_paths_until_the_access_link_saturates():
    bw = [bandwidth(k) for k in (1, 2, 4)]
    # Measured (seed 1): 9.7, 19.2, 38.3 Gb/s over 10 Gb/s core links, 40 Gb/s access.
    assert bw[0] < 10 and 15 < bw[1] < 20 and bw[2] > 36, bw


def test_fig8_more_paths_than_spines_hold_the_access_rate():
    # 8 QPs over 4 spines: the hash selection puts two on each (overlap counted per
    # path on a link) and max_wrs = auto keeps two chunks per QP in flight. Measured
    # (seed 1): 38.3 Gb/s as with 4 paths; before both fixes 32.9 (three QPs on one
    # spine, one on another, and one chunk per QP with max_wrs = 8).
    assert bandwidth(8) > 0.95 * bandwidth(4)


@pytest.mark.xfail(strict=True, reason="paths not a multiple of the spines: with 6 QPs over 4 spines two spines "
                   "carry two QPs and two carry one; the shared spines' queues draw ECN marks and DCQCN cuts "
                   "those QPs (32.5 Gb/s against 38.3 with 4 or 8 paths; 36.3 with cc = none); the paper's "
                   "throughput holds")
def test_fig8_paths_not_a_multiple_of_the_spines_hold_the_access_rate():
    assert bandwidth(6) > 0.95 * bandwidth(4)


def test_fig12c_proportional_load_follows_free_capacity():
    r = fabricsim.run(maestro.background("proportional"))
    rows = maestro.spine_loads(r)
    # The QP on the free spine carries most, the one beside 30 Gb/s the least: the
    # bytes per QP sorted follow 40 : 30 : 20 : 10 Gb/s of free capacity (measured
    # 1 : 0.76 : 0.43 : 0.20).
    share = sorted(rows["bytes"] / rows["bytes"].max(), reverse=True)
    assert [round(s, 1) for s in share] == [1.0, 0.8, 0.4, 0.2], share
    assert rows["bytes"].sum() == 20_000_000 and not rows["failed"].any()
    assert (rows["chunks"] > 0).all() and (rows["latency_samples"] > 0).all()


def test_maestro_beside_the_other_multipath_transports():
    # One seed of the comparison table (experiments/maestro): on a 2:1 oversubscribed
    # leaf-spine Maestro's four chunked QPs beat single-QP RoCE and QP-Scaling's even
    # split on both workloads (measured, seed 1: permutation mean 68 / 44 / 48 Gb/s).
    perm = {t: maestro.comparison_row(fabricsim.run(maestro.comparison(t, "permutation")), "permutation")
            for t in ("roce", "qp_scaling", "maestro")}
    assert perm["maestro"]["mean_gbps"] > 1.3 * perm["roce"]["mean_gbps"], perm
    assert perm["maestro"]["mean_gbps"] > 1.2 * perm["qp_scaling"]["mean_gbps"], perm
    ar = {t: maestro.comparison_row(fabricsim.run(maestro.comparison(t, "all_reduce")), "all_reduce")
          for t in ("roce", "maestro")}
    assert ar["maestro"]["duration_us"] < 0.7 * ar["roce"]["duration_us"], ar
