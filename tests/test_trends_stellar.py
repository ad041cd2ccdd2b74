"""STELLAR's multipath results at small scale (paper section 7.2): each test fails if
the mechanism behind the trend is missing. The larger versions are in
experiments/stellar/."""

import pytest

import fabricsim
from fabricsim.papers import stellar

SEEDS = (1, 2, 3)


def test_uplink_imbalance_falls_as_paths_grow():
    # Fig. 12: k=8 fat-tree (4 uplinks per ToR), 2 MB permutation. Spraying over more
    # entropy values averages out ECMP hash collisions (about 1/sqrt(paths)).
    for seed in SEEDS[:2]:
        imb = {n: stellar.imbalance(fabricsim.run(stellar.fat_tree_permutation(n, k=8, seed=seed)), uplinks=4)
               for n in (1, 4, 16, 128)}
        # Measured about 0.5 / 0.25 / 0.12 / 0.045.
        assert imb[4] < 0.8 * imb[1], (seed, imb)
        assert imb[16] < 0.7 * imb[4], (seed, imb)
        assert imb[128] < 0.6 * imb[16], (seed, imb)
        assert imb[128] < 0.35 * imb[4], (seed, imb)


@pytest.fixture(scope="module")
def drop_slowdowns():
    """Worst per-flow slowdown from loss on one leaf uplink: 4 leaves x 16 spines x 4
    hosts, 32 MB permutation; the lossy cable is the one a single-path flow has to
    itself (so the loss is not hidden behind an ECMP collision)."""
    out = {}
    for seed in SEEDS:
        probe = fabricsim.run(stellar.leaf_spine_permutation(1, seed=seed, sample_interval="50us"))
        link = stellar.solo_uplink(probe, 32e6)
        for paths in (1, 128):
            base = fabricsim.run(stellar.leaf_spine_permutation(paths, seed=seed))
            for loss in (0.01, 0.03):
                hurt = fabricsim.run(stellar.leaf_spine_permutation(paths, loss, link, seed=seed))
                assert hurt.summary["drops_by_cause"]["link"] > 0
                out[(seed, paths, loss)] = stellar.worst_slowdown(base, hurt)
    return out


def test_3_percent_drop_on_one_link_hurts_one_path_but_not_128(drop_slowdowns):
    # Fig. 11. With one path every packet of the crossing flow meets the 3 % loss and
    # each loss holds a window slot for the 250 us RTO; with 128 paths the flow sees
    # ~1/16 of it and at worst waits one RTO at its end. Measured on seeds 1-8: one
    # path x1.29-x2.9, 128 paths x1.04-x1.09.
    s = drop_slowdowns
    for seed in SEEDS:
        assert s[(seed, 128, 0.03)] < 1.15, s
        assert s[(seed, 1, 0.03)] > 1.2, s
        assert s[(seed, 1, 0.03)] - 1 > 2 * (s[(seed, 128, 0.03)] - 1), s


def test_1_percent_drop_on_one_link_costs_128_paths_little(drop_slowdowns):
    # Fig. 11: "almost no observable performance degradation" with 128 paths (measured
    # x1.00-x1.09 on seeds 1-8: one RTO at most), visibly more with one path (seeds
    # 1-3: x1.09-x1.18 against x1.00-x1.09 for 128 paths, at least twice the cost).
    s = drop_slowdowns
    for seed in SEEDS:
        assert s[(seed, 128, 0.01)] < 1.12, s
        assert s[(seed, 1, 0.01)] > 1.05, s
        assert s[(seed, 1, 0.01)] - 1 > 1.5 * (s[(seed, 128, 0.01)] - 1), s


def test_best_rtt_piles_onto_few_paths_while_spraying_finishes_sooner():
    # Fig. 9: with 128 paths BestRTT stays as congested as a single path (it keeps to
    # the few lowest-RTT paths), while OBS at 128 paths beats OBS at 4. (The paper's
    # lower mean ToR queue at 128 paths is not reproduced: see experiments/stellar.)
    for seed in SEEDS[:2]:
        runs = {(a, n): fabricsim.run(stellar.fat_tree_permutation(n, k=8, seed=seed, algo=a))
                for a, n in (("obs", 4), ("obs", 128), ("best_rtt", 128))}
        fct = {key: r.flows["fct_ns"].max() for key, r in runs.items()}
        qmax = {key: stellar.queue_depth(r)["queue_max_bytes"] for key, r in runs.items()}
        used = {key: stellar.summary_row(r)["paths_used"] for key, r in runs.items()}
        # Measured (8 seeds): 0.42-0.53, 1.9-2.3, 2.3-4.4, about 19 of 128 paths.
        assert fct[("obs", 128)] < 0.7 * fct[("obs", 4)], (seed, fct)
        assert fct[("best_rtt", 128)] > 1.5 * fct[("obs", 128)], (seed, fct)
        assert qmax[("best_rtt", 128)] > 1.8 * qmax[("obs", 128)], (seed, qmax)
        assert used[("best_rtt", 128)] < 0.3 * used[("obs", 128)], (seed, used)


@pytest.fixture(scope="module")
def fig10():
    """Foreground busbw beside background all-reduce jobs (Fig. 10), per algorithm,
    paths and background, seeds 1-2."""
    return {(seed, bg, algo, paths): stellar.foreground_busbw(
                fabricsim.run(stellar.background_jobs(paths, algo, bg, seed=seed)))
            for seed in (1, 2) for bg in ("none", "static", "bursty") for algo in ("obs", "rr") for paths in (4, 128)}


def test_128_paths_keep_an_all_reduce_fast_beside_background_jobs(fig10):
    # Fig. 10a/b: with 4 paths the jobs' flows collide on the spine links; 128 paths
    # spread them. Measured (seeds 1, 2; static / bursty): 4 paths 46-58 / 53-66 Gb/s,
    # 128 paths 64-67 / 70-71, alone 70-75.
    b = fig10
    for seed in (1, 2):
        for algo in ("obs", "rr"):
            for bg in ("static", "bursty"):
                assert b[(seed, bg, algo, 128)] > 1.05 * b[(seed, bg, algo, 4)], (seed, bg, algo, b)
            assert b[(seed, "static", algo, 128)] > 0.8 * b[(seed, "none", algo, 128)], b
            # The bursty background costs less than the static one.
            assert b[(seed, "bursty", algo, 128)] > b[(seed, "static", algo, 128)], b


@pytest.mark.xfail(strict=True, reason="OBS and RR are within 1 Gb/s of each other under bursty background "
                                       "(70.3-70.4 against 70.2-70.8 Gb/s at 128 paths, seeds 1-2): RR balances the "
                                       "uplinks better than OBS, and no packet is marked, dropped or resent, so the CC "
                                       "the paper credits never acts (see experiments/stellar/README.md)")
def test_obs_is_more_resilient_than_rr_to_bursty_background(fig10):
    b = fig10
    assert all(b[(s, "bursty", "obs", 128)] > 1.02 * b[(s, "bursty", "rr", 128)] for s in (1, 2)), b


def test_re_ranking_speeds_training_up_and_hides_the_transport():
    # Fig. 16: under random ranking the data-parallel ring crosses the oversubscribed
    # spines at most hops and STELLAR's spraying gains much; re-ranked, little is left
    # to gain. Measured (seeds 1-3): RoCE / STELLAR step 5.25 / 5.35 ms re-ranked,
    # 11.6-15.6 / 8.8-11.6 ms random: STELLAR -2 % re-ranked, +20-35 % random
    # (paper: +0.7 %, +6 % on average, up to +14 %).
    for seed in (1, 2):
        t = {(tr, p): stellar.step_time(fabricsim.run(stellar.training_job(tr, p, seed=seed)))
             for tr in ("roce", "stellar") for p in ("rerank", "random")}
        assert t[("roce", "rerank")] < 0.6 * t[("roce", "random")], (seed, t)
        assert t[("stellar", "rerank")] < 0.8 * t[("stellar", "random")], (seed, t)
        gain_rerank = t[("roce", "rerank")] / t[("stellar", "rerank")]
        gain_random = t[("roce", "random")] / t[("stellar", "random")]
        assert gain_random > 1.1 and gain_random > gain_rerank + 0.1, (seed, t)
        assert abs(gain_rerank - 1) < 0.05, (seed, t)


def test_pvdma_starts_containers_in_seconds_where_pin_all_takes_minutes():
    # Fig. 6 (the model's defaults are fitted to its 390 s and under-20 s figures).
    pv = [stellar.startup_seconds(fabricsim.run(stellar.startup(m, "pvdma"))) for m in ("16GB", "160GB", "1.6TB")]
    pa = [stellar.startup_seconds(fabricsim.run(stellar.startup(m, "pin_all"))) for m in ("16GB", "160GB", "1.6TB")]
    assert max(pv) < 20 and 10 < pv[2] - pv[0] < 13, pv
    assert 380 < pa[2] < 400 and pa[0] < pa[1] < pa[2], pa
    assert pa[2] / pv[2] > 15, (pa, pv)
