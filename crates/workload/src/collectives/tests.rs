use super::tree::dtree_parents;
use super::*;
use crate::{build_with, HostSet, Plan, WorkloadKind, WorkloadSpec};
use fabricsim_engine::Dur;

fn plan(op: CollectiveOp, n: u32) -> Plan {
    plan_c(op, n, 1)
}

fn plan_c(op: CollectiveOp, n: u32, auto: u32) -> Plan {
    let w = WorkloadSpec { kind: WorkloadKind::Collective { hosts: HostSet::Count(n), op }, start: Dur::ZERO };
    build_with(&[w], 256, 1, &[auto]).unwrap_or_else(|e| panic!("{e}"))
}

fn op(kind: CollectiveKind, alg: Algorithm, size: u64) -> CollectiveOp {
    CollectiveOp { algorithm: Some(alg), ..CollectiveOp::new(kind, size) }
}

fn sender(p: &Plan, m: u32) -> u32 {
    p.conns[p.messages[m as usize].conn as usize].src
}
fn receiver(p: &Plan, m: u32) -> u32 {
    p.conns[p.messages[m as usize].conn as usize].dst
}

/// Per host, the set of hosts whose data reached it (a message carries what its sender
/// had received before sending it, through its dependencies).
fn knowledge(p: &Plan, n: usize) -> Vec<Vec<bool>> {
    let mut carried: Vec<Vec<bool>> = Vec::with_capacity(p.messages.len());
    let mut at = vec![vec![false; n]; n];
    for (h, k) in at.iter_mut().enumerate() {
        k[h] = true;
    }
    for (i, m) in p.messages.iter().enumerate() {
        let mut k = vec![false; n];
        k[sender(p, i as u32) as usize] = true;
        for &d in &m.deps {
            for (x, &y) in k.iter_mut().zip(&carried[d as usize]) {
                *x |= y;
            }
        }
        let r = receiver(p, i as u32) as usize;
        for (x, &y) in at[r].iter_mut().zip(&k) {
            *x |= y;
        }
        carried.push(k);
    }
    at
}

fn sent_bytes(p: &Plan, n: usize) -> Vec<u64> {
    let mut out = vec![0; n];
    for (i, m) in p.messages.iter().enumerate() {
        out[sender(p, i as u32) as usize] += m.size;
    }
    out
}

#[test]
fn every_dependency_is_data_the_sender_received() {
    for (kind, alg) in [
        (CollectiveKind::AllReduce, Algorithm::Ring),
        (CollectiveKind::AllReduce, Algorithm::Tree),
        (CollectiveKind::AllReduce, Algorithm::HalvingDoubling),
        (CollectiveKind::AllGather, Algorithm::Ring),
        (CollectiveKind::ReduceScatter, Algorithm::HalvingDoubling),
        (CollectiveKind::AllGather, Algorithm::HalvingDoubling),
        (CollectiveKind::Broadcast, Algorithm::Ring),
        (CollectiveKind::Reduce, Algorithm::Ring),
        (CollectiveKind::Gather, Algorithm::Direct),
        (CollectiveKind::Scatter, Algorithm::Direct),
        (CollectiveKind::Barrier, Algorithm::Dissemination),
    ] {
        for n in [2u32, 3, 5, 8, 12, 16] {
            if alg == Algorithm::HalvingDoubling && kind != CollectiveKind::AllReduce && !n.is_power_of_two() {
                continue;
            }
            let o = CollectiveOp { chunk: alg.pipelined().then_some(1000), ..op(kind, alg, 48_000) };
            let p = plan_c(o, n, 2);
            for (i, m) in p.messages.iter().enumerate() {
                for &d in &m.deps {
                    assert!(d < i as u32);
                    assert_eq!(receiver(&p, d), sender(&p, i as u32), "{kind:?} {alg:?} n={n} message {i}");
                }
            }
        }
    }
}

#[test]
fn all_reduce_algorithms_bring_every_rank_every_rank_s_data() {
    for alg in [Algorithm::Ring, Algorithm::Tree, Algorithm::HalvingDoubling] {
        for n in 2..=20u32 {
            let p = plan(op(CollectiveKind::AllReduce, alg, 100_000), n);
            for (h, k) in knowledge(&p, n as usize).iter().enumerate() {
                assert!(k.iter().all(|&x| x), "{alg:?} n={n}: host {h} misses data: {k:?}");
            }
        }
    }
}

#[test]
fn gathers_barriers_and_broadcasts_reach_everyone() {
    for n in [2u32, 3, 7, 8, 16] {
        for o in [
            op(CollectiveKind::AllGather, Algorithm::Ring, 100_000),
            op(CollectiveKind::ReduceScatter, Algorithm::Ring, 100_000),
            op(CollectiveKind::Barrier, Algorithm::Dissemination, 0),
        ] {
            let p = plan(o.clone(), n);
            assert!(knowledge(&p, n as usize).iter().all(|k| k.iter().all(|&x| x)), "{o:?} n={n}");
        }
        let b = CollectiveOp {
            root: n - 1,
            chunk: Some(10_000),
            ..op(CollectiveKind::Broadcast, Algorithm::Ring, 100_000)
        };
        let p = plan(b, n);
        assert!(knowledge(&p, n as usize).iter().all(|k| k[n as usize - 1]));
        assert_eq!(p.messages.len() as u32, 10 * (n - 1));
    }
}

#[test]
fn message_counts_follow_each_algorithm() {
    for n in [2u32, 4, 8, 16, 32] {
        let log = n.trailing_zeros();
        let ring = plan(op(CollectiveKind::AllReduce, Algorithm::Ring, 1 << 20), n);
        assert_eq!(ring.messages.len() as u32, n * 2 * (n - 1), "ring: 2(N-1) steps per rank");
        let hd = plan(op(CollectiveKind::AllReduce, Algorithm::HalvingDoubling, 1 << 20), n);
        assert_eq!(hd.messages.len() as u32, n * 2 * log, "halving-doubling: 2 log2 N per rank");
        let tree =
            plan(CollectiveOp { chunk: Some(1 << 18), ..op(CollectiveKind::AllReduce, Algorithm::Tree, 1 << 20) }, n);
        // Two trees of half a MiB each in two pieces, up and down every edge.
        assert_eq!(tree.messages.len() as u32, 2 * 2 * 2 * (n - 1));
        let a2a = plan(op(CollectiveKind::AllToAll, Algorithm::Direct, 1000), n);
        assert_eq!(a2a.messages.len() as u32, n * (n - 1));
        let bar = plan(op(CollectiveKind::Barrier, Algorithm::Dissemination, 0), n);
        assert_eq!(bar.messages.len() as u32, n * log);
        for (p, o) in [
            (&ring, op(CollectiveKind::AllReduce, Algorithm::Ring, 1 << 20)),
            (&hd, op(CollectiveKind::AllReduce, Algorithm::HalvingDoubling, 1 << 20)),
            (&a2a, op(CollectiveKind::AllToAll, Algorithm::Direct, 1000)),
            (&bar, op(CollectiveKind::Barrier, Algorithm::Dissemination, 0)),
        ] {
            assert_eq!(p.messages.len() as u64, o.message_count(n, 1));
        }
    }
    // Counts are known before building, for any shape.
    for n in [3u32, 6, 12, 100] {
        for o in [
            op(CollectiveKind::AllReduce, Algorithm::HalvingDoubling, 1 << 20),
            CollectiveOp { chunk: Some(100_000), ..op(CollectiveKind::AllReduce, Algorithm::Tree, 1 << 20) },
            CollectiveOp { chunk: Some(3000), ..op(CollectiveKind::AllReduce, Algorithm::Ring, 1 << 20) },
            op(CollectiveKind::Broadcast, Algorithm::Ring, 3 << 20),
            CollectiveOp { root: 2, ..op(CollectiveKind::Reduce, Algorithm::Ring, 3 << 20) },
            CollectiveOp { root: 1, ..op(CollectiveKind::Gather, Algorithm::Direct, 3 << 20) },
            op(CollectiveKind::Scatter, Algorithm::Direct, 3 << 20),
            op(CollectiveKind::Barrier, Algorithm::Dissemination, 0),
        ] {
            assert_eq!(plan_c(o.clone(), n, 3).messages.len() as u64, o.message_count(n, channels(&o, 3, n)), "{o:?}");
        }
    }
}

#[test]
fn each_rank_sends_the_bytes_its_bus_factor_says() {
    // nccl-tests' busbw is algbw x factor because a perfect algorithm has every rank
    // send factor x size: check that each algorithm's messages add up to exactly that.
    let n = 16u64;
    let size = 16 * 1024 * 1024;
    for (kind, alg) in [
        (CollectiveKind::AllReduce, Algorithm::Ring),
        (CollectiveKind::AllReduce, Algorithm::HalvingDoubling),
        (CollectiveKind::AllGather, Algorithm::Ring),
        (CollectiveKind::AllGather, Algorithm::HalvingDoubling),
        (CollectiveKind::ReduceScatter, Algorithm::Ring),
        (CollectiveKind::ReduceScatter, Algorithm::HalvingDoubling),
    ] {
        let p = plan_c(op(kind, alg, size), n as u32, 4);
        let want = (size as f64 * kind.bus_factor(n as u32)) as u64;
        assert!(sent_bytes(&p, n as usize).iter().all(|&b| b == want), "{kind:?} {alg:?}: {want}");
    }
    // The double binary tree moves the same total, but unevenly: a rank inner in one
    // tree sends half the buffer up and twice half down there, and half up in the
    // other tree.
    let p = plan(op(CollectiveKind::AllReduce, Algorithm::Tree, size), n as u32);
    let sent = sent_bytes(&p, n as usize);
    assert_eq!(sent.iter().sum::<u64>(), 2 * (n - 1) * size);
    assert!(sent.iter().all(|&b| b <= 2 * size), "{sent:?}");
    assert!(sent.iter().any(|&b| b == 2 * size), "{sent:?}");
    let p = plan(op(CollectiveKind::AllToAll, Algorithm::Direct, 1000), n as u32);
    assert!(sent_bytes(&p, n as usize).iter().all(|&b| b == 1000 * (n - 1)));
    assert_eq!(p.collectives[0].size, 1000 * n, "nccl-tests' all-to-all size is the whole send buffer");
}

#[test]
fn the_double_binary_tree_is_two_trees_with_every_rank_inner_in_at_most_one() {
    for n in 2..=70usize {
        let trees = dtree_parents(n);
        for parents in &trees {
            assert_eq!(parents.iter().filter(|p| p.is_none()).count(), 1, "n={n}: one root");
            let mut children = vec![0; n];
            for (r, p) in parents.iter().enumerate() {
                if let Some(p) = p {
                    children[*p] += 1;
                }
                // Every rank reaches the root within log2 n + 1 hops.
                let (mut x, mut hops) = (r, 0);
                while let Some(p) = parents[x] {
                    x = p;
                    hops += 1;
                    assert!(hops <= 2 + n.ilog2() as usize, "n={n}: rank {r} is {hops} deep");
                }
            }
            assert!(children.iter().all(|&c| c <= 2), "n={n}: binary");
        }
        if n % 2 == 0 {
            let inner = |t: usize, r: usize| trees[t].contains(&Some(r));
            assert!((0..n).all(|r| !(inner(0, r) && inner(1, r))), "n={n}");
        }
    }
    // NCCL's first tree over 8 ranks: 0 -> 4 -> {2, 6}, 2 -> {1, 3}, 6 -> {5, 7}.
    let t = &dtree_parents(8)[0];
    assert_eq!(t, &[None, Some(2), Some(4), Some(2), Some(0), Some(6), Some(4), Some(6)]);
}

#[test]
fn channels_split_the_buffer_and_take_a_port_each() {
    let p = plan_c(op(CollectiveKind::AllReduce, Algorithm::Ring, 4_000_000), 8, 4);
    assert_eq!(p.collectives[0].channels, 4);
    assert_eq!(p.conns.len(), 4 * 8, "a ring of connections per channel");
    for c in &p.conns {
        assert!(c.port.is_some());
    }
    let per_port: Vec<u64> = (0..4)
        .map(|port| p.messages.iter().filter(|m| p.conns[m.conn as usize].port == Some(port)).map(|m| m.size).sum())
        .collect();
    assert_eq!(per_port, vec![8 * 2 * 7 * 125_000; 4]);
    // One channel leaves ports to the run, as before channels existed.
    let one = plan(op(CollectiveKind::AllReduce, Algorithm::Ring, 4_000_000), 8);
    assert!(one.conns.iter().all(|c| c.port.is_none()));
    // The default never cuts a small collective into empty channels.
    let small = plan_c(op(CollectiveKind::AllReduce, Algorithm::Ring, 20), 8, 4);
    assert_eq!(small.collectives[0].channels, 2);
}

#[test]
fn pieces_pipeline_a_ring_step_by_step() {
    let o = CollectiveOp { chunk: Some(250), ..op(CollectiveKind::AllReduce, Algorithm::Ring, 4000) };
    let p = plan(o, 4);
    // Steps of 1000 bytes in 4 pieces: piece k of step s waits for piece k of step s-1.
    assert_eq!(p.messages.len(), 4 * 6 * 4);
    assert!(p.messages.iter().all(|m| m.size == 250));
    let m = &p.messages[16 + 4 + 2]; // step 1, rank 1, piece 2
    assert_eq!(m.deps, vec![2]); // step 0, rank 0, piece 2
}

#[test]
fn bad_collectives_are_refused_with_the_key_named() {
    let bad = |o: CollectiveOp, n: u32| {
        let w = WorkloadSpec { kind: WorkloadKind::Collective { hosts: HostSet::Count(n), op: o }, start: Dur::ZERO };
        build_with(&[w], 64, 1, &[]).unwrap_err().to_string()
    };
    assert_eq!(
        bad(op(CollectiveKind::Broadcast, Algorithm::Tree, 100), 4),
        "workload[0].algorithm: broadcast cannot run \"tree\" (allowed: ring)"
    );
    assert!(bad(op(CollectiveKind::AllGather, Algorithm::HalvingDoubling, 1200), 12).contains("power-of-two"));
    assert!(bad(
        CollectiveOp { chunk: Some(10), ..op(CollectiveKind::AllReduce, Algorithm::HalvingDoubling, 1 << 20) },
        8
    )
    .starts_with("workload[0].chunk: applies to the pipelined"));
    assert!(bad(CollectiveOp { root: 9, ..op(CollectiveKind::Broadcast, Algorithm::Ring, 100) }, 4)
        .starts_with("workload[0].root: rank 9 does not exist"));
    let v = CollectiveOp { sizes: vec![0, 1, 2, 3], ..CollectiveOp::new(CollectiveKind::AllToAllV, 0) };
    assert!(bad(v.clone(), 3).contains("needs 3 rows of 3 sizes"));
    let diag = CollectiveOp { sizes: vec![0, 1, 2, 3], ..v };
    assert_eq!(bad(diag, 2), "workload[0].sizes[1][1]: must be 0: a host does not send to itself over the network");
    assert!(bad(CollectiveOp { channels: Some(99), ..op(CollectiveKind::AllReduce, Algorithm::Ring, 1 << 20) }, 4)
        .starts_with("workload[0].channels: must be between 1 and 64"));
}

#[test]
fn all_to_allv_sends_each_pair_its_own_size() {
    let sizes = vec![0, 5, 0, 7, 0, 9, 1, 2, 0];
    let p = plan(CollectiveOp { sizes: sizes.clone(), ..CollectiveOp::new(CollectiveKind::AllToAllV, 0) }, 3);
    let got: Vec<(u32, u32, u64)> =
        p.messages.iter().map(|m| (p.conns[m.conn as usize].src, p.conns[m.conn as usize].dst, m.size)).collect();
    assert_eq!(got, vec![(0, 1, 5), (1, 0, 7), (1, 2, 9), (2, 0, 1), (2, 1, 2)]);
    assert_eq!(p.collectives[0].size, 24 / 2);
}

/// Per message: (sender, receiver, bytes).
fn edges(p: &Plan) -> Vec<(u32, u32, u64)> {
    (0..p.messages.len() as u32).map(|m| (sender(p, m), receiver(p, m), p.messages[m as usize].size)).collect()
}

#[test]
fn a_reduce_is_a_pipelined_chain_that_ends_at_the_root() {
    for n in [2u32, 3, 5, 8] {
        for root in [0, n - 1, n / 2] {
            let o = CollectiveOp { root, chunk: Some(10_000), ..op(CollectiveKind::Reduce, Algorithm::Ring, 100_000) };
            let p = plan(o.clone(), n);
            let e = edges(&p);
            // 10 pieces down a chain of n-1 hops: root+1 -> root+2 -> ... -> root.
            assert_eq!(e.len() as u32, 10 * (n - 1), "n={n} root={root}");
            assert_eq!(e.len() as u64, o.message_count(n, 1));
            for (i, &(s, d, len)) in e.iter().enumerate() {
                assert_eq!(d, (s + 1) % n, "ring order");
                assert_ne!(s, root, "the root only receives");
                assert_eq!(len, 10_000);
                let hop = (s + n - root - 1) % n;
                let deps = &p.messages[i].deps;
                if hop == 0 {
                    assert!(deps.is_empty(), "the chain's first rank sends its own data at once");
                } else {
                    // Piece k of hop h waits for piece k of hop h-1 (one message earlier).
                    assert_eq!(deps, &vec![i as u32 - 1]);
                }
            }
            assert!(e.iter().all(|&(_, d, _)| d != (root + 1) % n), "the first rank receives nothing");
            // Every rank's data reaches the root; every byte arrives there once.
            assert!(knowledge(&p, n as usize)[root as usize].iter().all(|&x| x), "n={n} root={root}");
            let into_root: u64 = e.iter().filter(|x| x.1 == root).map(|x| x.2).sum();
            assert_eq!(into_root, 100_000);
            // Every rank but the root sends the whole buffer once: nccl-tests' factor 1.
            let sent = sent_bytes(&p, n as usize);
            for (r, &b) in sent.iter().enumerate() {
                assert_eq!(b, if r as u32 == root { 0 } else { 100_000 }, "n={n} root={root} rank {r}");
            }
        }
    }
}

#[test]
fn gather_and_scatter_move_each_rank_s_part_to_or_from_the_root_once() {
    for n in [2u32, 3, 7, 8] {
        for root in [0, n - 1] {
            for channels in [1u32, 3] {
                // 1000 bytes over n ranks: parts of near-equal size, the larger first.
                let parts = split(1000, n as u64);
                let at = |kind| {
                    let o = CollectiveOp { root, channels: Some(channels), ..op(kind, Algorithm::Direct, 1000) };
                    assert_eq!(o.message_count(n, channels), (channels * (n - 1)) as u64);
                    plan(o, n)
                };
                let g = at(CollectiveKind::Gather);
                let s = at(CollectiveKind::Scatter);
                assert_eq!(g.messages.len() as u32, channels * (n - 1));
                assert_eq!(s.messages.len() as u32, channels * (n - 1));
                assert!(g.messages.iter().chain(&s.messages).all(|m| m.deps.is_empty()), "all at once");
                let mut from = vec![0u64; n as usize];
                for (src, dst, len) in edges(&g) {
                    assert_eq!(dst, root, "gather: only into the root");
                    from[src as usize] += len;
                }
                let mut to = vec![0u64; n as usize];
                for (src, dst, len) in edges(&s) {
                    assert_eq!(src, root, "scatter: only out of the root");
                    to[dst as usize] += len;
                }
                let want: Vec<u64> =
                    parts.iter().enumerate().map(|(r, &b)| if r as u32 == root { 0 } else { b }).collect();
                assert_eq!(from, want, "gather n={n} root={root} channels={channels}");
                assert_eq!(to, want, "scatter n={n} root={root} channels={channels}");
                assert!(knowledge(&g, n as usize)[root as usize].iter().all(|&x| x));
                assert!(knowledge(&s, n as usize).iter().all(|k| k[root as usize]));
                // Each channel on its own connections: one per rank and channel.
                assert_eq!(g.conns.len() as u32, channels * (n - 1));
                assert_eq!(g.collectives[0].size, 1000, "nccl-tests' size: the root's whole buffer");
            }
        }
    }
}

#[test]
fn rooted_collectives_report_nccl_tests_bus_factors() {
    for n in [2u32, 4, 16] {
        let f = (n - 1) as f64 / n as f64;
        assert_eq!(CollectiveKind::Reduce.bus_factor(n), 1.0);
        assert_eq!(CollectiveKind::Gather.bus_factor(n), f);
        assert_eq!(CollectiveKind::Scatter.bus_factor(n), f);
    }
    // The factor is the share of the buffer the busiest rank moves: the root receives
    // (gather) or sends (scatter) all but its own part.
    let n = 16u32;
    let size = 16 << 20;
    for kind in [CollectiveKind::Gather, CollectiveKind::Scatter] {
        let p = plan_c(op(kind, Algorithm::Direct, size), n, 4);
        let root_bytes: u64 = edges(&p).iter().filter(|e| e.0 == 0 || e.1 == 0).map(|e| e.2).sum();
        assert_eq!(root_bytes, (size as f64 * kind.bus_factor(n)) as u64, "{kind:?}");
        assert_eq!(p.collectives[0].bus_factor, kind.bus_factor(n));
    }
}

#[test]
fn bad_rooted_collectives_are_refused_with_the_key_named() {
    let bad = |o: CollectiveOp, n: u32| {
        let w = WorkloadSpec { kind: WorkloadKind::Collective { hosts: HostSet::Count(n), op: o }, start: Dur::ZERO };
        build_with(&[w], 64, 1, &[]).unwrap_err().to_string()
    };
    for kind in [CollectiveKind::Reduce, CollectiveKind::Gather, CollectiveKind::Scatter] {
        let o = CollectiveOp { root: 4, ..CollectiveOp::new(kind, 1000) };
        assert_eq!(bad(o, 4), "workload[0].root: rank 4 does not exist (ranks are 0..3)", "{kind:?}");
    }
    assert_eq!(
        bad(op(CollectiveKind::Reduce, Algorithm::Tree, 1000), 4),
        "workload[0].algorithm: reduce cannot run \"tree\" (allowed: ring)"
    );
    assert_eq!(
        bad(op(CollectiveKind::Gather, Algorithm::Ring, 1000), 4),
        "workload[0].algorithm: gather cannot run \"ring\" (allowed: direct)"
    );
    assert_eq!(
        bad(op(CollectiveKind::Scatter, Algorithm::HalvingDoubling, 1000), 4),
        "workload[0].algorithm: scatter cannot run \"halving_doubling\" (allowed: direct)"
    );
    assert!(bad(CollectiveOp { chunk: Some(100), ..CollectiveOp::new(CollectiveKind::Scatter, 1000) }, 4)
        .starts_with("workload[0].chunk: applies to the pipelined"));
    assert_eq!(
        bad(CollectiveOp { channels: Some(2), ..CollectiveOp::new(CollectiveKind::Gather, 7) }, 4),
        "workload[0].size: must be at least hosts x channels (4 x 2): each host's part is size/N bytes, got 7"
    );
    // The default channels never leave a part empty.
    let p = plan_c(CollectiveOp::new(CollectiveKind::Gather, 8), 4, 4);
    assert_eq!(p.collectives[0].channels, 2);
}
