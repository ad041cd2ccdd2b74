//! Trace inputs: htsim connection matrices.

mod common;

use common::*;
use fabricsim_run::Scenario;
use std::path::Path;

fn data() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data"))
}

fn htsim(workload: &str) -> String {
    format!(
        "[topology]\nkind = \"leaf_spine\"\nleaves = 1\nspines = 1\nhosts_per_leaf = 4\n\
         [transport]\nkind = \"roce\"\ncc = \"none\"\n[output]\nsample_interval = \"0us\"\n[[workload]]\n{workload}"
    )
}

#[test]
fn a_triggered_chain_runs_flow_after_flow() {
    let sc = Scenario::from_toml_in(&htsim("kind = \"htsim\"\nfile = \"ring4.cm\""), data()).unwrap();
    let (_, r) = run_scenario(sc);
    let start = col_i64(&r, "start_ns");
    let finish = col_i64(&r, "finish_ns");
    let acked = col_i64(&r, "acked_ns");
    let ideal = col_u64(&r.flows, "ideal_fct_ns");
    assert_eq!(start.len(), 5);
    // Flows 1 and 2 activate send-done triggers: the next flow starts as the sender has
    // the flow acknowledged; flow 3's trigger is receive-done: flow 4 starts as it is
    // received.
    assert_eq!((start[1], start[2]), (acked[0], acked[1]));
    assert!(acked[0] > finish[0] && acked[1] > finish[1]);
    assert_eq!(start[3], finish[2]);
    assert_eq!(start[4], 5_000, "start 5 is in microseconds");
    // Uncontended, the chain takes four flows' ideal times (the small flow shares host
    // 1's and 3's links briefly) and two acknowledgements' way back (about 2 us each on
    // this fabric's 1 us links).
    let chain = finish[3] - start[0];
    let want: i64 = ideal[..4].iter().map(|&x| x as i64).sum();
    let back = (acked[0] - finish[0]) + (acked[1] - finish[1]);
    assert!(chain >= want + back && (chain as f64) < (want + back) as f64 * 1.02, "{chain} against {want} + {back}");
}

/// Runs the connection matrix `cm` on the 4-host fabric of [`htsim`].
fn run_cm(cm: &str, tag: &str) -> fabricsim_run::RunResult {
    let dir = std::env::temp_dir().join(format!("fabricsim-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("m.cm"), cm).unwrap();
    let sc = Scenario::from_toml_in(&htsim("kind = \"htsim\"\nfile = \"m.cm\""), &dir).unwrap();
    std::fs::remove_dir_all(&dir).ok();
    run_scenario(sc).1
}

#[test]
fn a_multishot_starts_its_kth_flow_at_the_kth_completion_in_time() {
    // Three flows on disjoint links activate trigger 5 as they arrive; listed largest
    // first, they arrive smallest first. Its two flows start at the first and second
    // arrivals in time, not of the file; the third arrival starts nothing.
    let r = run_cm(
        "Nodes 4\nConnections 5\nTriggers 1\n\
         0->1 id 1 start 0 size 500000 recv_done_trigger 5\n\
         2->3 id 2 start 0 size 100000 recv_done_trigger 5\n\
         3->2 id 3 start 0 size 300000 recv_done_trigger 5\n\
         1->0 id 4 trigger 5 size 4000\n\
         1->0 id 5 trigger 5 size 8000\n\
         trigger id 5 multishot\n",
        "multishot",
    );
    let (start, finish) = (col_i64(&r, "start_ns"), col_i64(&r, "finish_ns"));
    assert_eq!(start.len(), 5);
    assert!(finish[1] < finish[2] && finish[2] < finish[0], "{finish:?}");
    assert_eq!((start[3], start[4]), (finish[1], finish[2]));
    assert!(finish.iter().all(|&f| f > 0));
}

#[test]
fn a_multishot_pool_whose_flows_reactivate_it_runs_them_one_after_another() {
    // One flow starts; each of four queued flows is started by the completion of the
    // one before (they activate the trigger too): one in flight at a time, so the
    // five take their ideal times end to end.
    let mut cm = String::from("Nodes 4\n0->1 id 1 start 0 size 200000 recv_done_trigger 9\n");
    for k in 0..4 {
        cm += &format!("{}->{} id {} trigger 9 size 200000 recv_done_trigger 9\n", k % 4, (k + 1) % 4, k + 2);
    }
    cm += "trigger id 9 multishot\n";
    let r = run_cm(&cm, "pool");
    let (start, finish) = (col_i64(&r, "start_ns"), col_i64(&r, "finish_ns"));
    let ideal = col_u64(&r.flows, "ideal_fct_ns");
    for k in 1..5 {
        assert_eq!(start[k], finish[k - 1], "flow {k} starts as the one before arrives");
    }
    let want: u64 = ideal.iter().sum();
    let took = (finish[4] - start[0]) as u64;
    assert!(took >= want && (took as f64) < want as f64 * 1.01, "{took} ns against {want}");
}

#[test]
fn an_htsim_topo_file_builds_the_fabric_it_describes() {
    // htsim's leaf_spine_tiny.topo (4 ToRs of 8 hosts, 2 spines, 4:1) and a k = 4
    // fat-tree, each against the same fabric written out in fabricsim's keys: the same
    // connection matrix gives the same flow times.
    let dir = std::env::temp_dir().join(format!("fabricsim-topo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cases = [
        (
            "Nodes 32\nTiers 2\nPodsize 32\n\nTier 0\nDownlink_speed_Gbps 100\nRadix_Down 8\nRadix_Up 2\n\
             Downlink_Latency_ns 1000\nSwitch_Latency_ns 0\nOversubscribed 4\n\nTier 1\nDownlink_speed_Gbps 100\n\
             Radix_Down 4\nDownlink_Latency_ns 1000\nSwitch_Latency_ns 0\n",
            "kind = \"leaf_spine\"\nleaves = 4\nspines = 2\nhosts_per_leaf = 8\nhost_link = \"100Gbps\"\nlink_delay = \"1us\"",
            32,
        ),
        (
            "Nodes 16\nTiers 3\nPodsize 4\nTier 0\nDownlink_speed_Gbps 40\nRadix_Down 2\nRadix_Up 2\nDownlink_Latency_ns 500\n\
             Tier 1\nDownlink_speed_Gbps 40\nRadix_Down 2\nRadix_Up 2\nDownlink_Latency_ns 500\n\
             Tier 2\nDownlink_speed_Gbps 40\nRadix_Down 4\nDownlink_Latency_ns 500\n",
            "kind = \"fat_tree\"\nk = 4\nhost_link = \"40Gbps\"\nlink_delay = \"500ns\"",
            16,
        ),
    ];
    let cm = "Nodes 16\n0->9 start 0 size 2000000\n1->9 start 0 size 2000000\n4->15 start 3 size 500000\n15->0 start 1 size 64000\n";
    std::fs::write(dir.join("m.cm"), cm).unwrap();
    for (topo, keys, hosts) in cases {
        std::fs::write(dir.join("f.topo"), topo).unwrap();
        let run = |topology: &str| {
            let toml = format!(
                "[topology]\n{topology}\n[transport]\nkind = \"roce\"\ncc = \"none\"\n[output]\nsample_interval = \"0us\"\n\
                 [[workload]]\nkind = \"htsim\"\nfile = \"m.cm\"\nhosts = [{}]",
                (0..16).map(|h| h.to_string()).collect::<Vec<_>>().join(", ")
            );
            run_scenario(Scenario::from_toml_in(&toml, &dir).unwrap()).1
        };
        let a = run("kind = \"htsim\"\nfile = \"f.topo\"");
        let b = run(keys);
        assert_eq!(a.summary["hosts"], hosts);
        assert_eq!(col_i64(&a, "finish_ns"), col_i64(&b, "finish_ns"), "{keys}");
        assert!(col_i64(&a, "finish_ns").iter().all(|&f| f > 0));
    }
    // Keys the file sets are refused beside it, and a file fabricsim cannot build names
    // its line.
    let toml = |extra: &str| {
        format!(
            "[topology]\nkind = \"htsim\"\nfile = \"f.topo\"\n{extra}\n[[workload]]\nkind = \"htsim\"\nfile = \"m.cm\""
        )
    };
    let e = Scenario::from_toml_in(&toml("link_delay = \"2us\""), &dir).unwrap_err().to_string();
    assert!(e.starts_with("topology.link_delay: is set by the .topo file"), "{e}");
    std::fs::write(
        dir.join("f.topo"),
        cases[1].0.replace("Tier 2\nDownlink_speed_Gbps 40", "Tier 2\nDownlink_speed_Gbps 100"),
    )
    .unwrap();
    let e = Scenario::from_toml_in(&toml(""), &dir).unwrap_err().to_string();
    assert_eq!(
        e,
        "topology.file: f.topo: line 15, Downlink_speed_Gbps: cores' links at 100 Gb/s, aggregation switches' at 40; fabricsim has one fabric_link rate"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn nodes_map_onto_hosts_and_failures_become_links_down() {
    let dir = std::env::temp_dir().join(format!("fabricsim-cm-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("f.cm"),
        "Nodes 2\nFailures 1\n0->1 start 0 size 100000\nfailure switch_type TOR switch_id 1 link_id 0\n",
    )
    .unwrap();
    let toml = "[topology]\nkind = \"fat_tree\"\nk = 4\n[output]\nsample_interval = \"0us\"\n\
                [[workload]]\nkind = \"htsim\"\nfile = \"f.cm\"\nhosts = [0, 15]";
    let sc = Scenario::from_toml_in(toml, &dir).unwrap();
    assert_eq!(sc.faults.len(), 1);
    let (_, r) = run_scenario(sc);
    assert_eq!(col_u32(&r.flows, "dst"), vec![15]);
    let faults = &r.summary["faults"];
    assert_eq!(faults[0]["target"], "edge[1].up[0]");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn bad_matrices_are_refused_with_the_file_line_and_field() {
    let dir = std::env::temp_dir().join(format!("fabricsim-badcm-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let err = |body: &str, extra: &str| {
        std::fs::write(dir.join("t.cm"), body).unwrap();
        let sc = Scenario::from_toml_in(&htsim(&format!("kind = \"htsim\"\nfile = \"t.cm\"\n{extra}")), &dir);
        match sc {
            Err(e) => e.to_string(),
            Ok(sc) => fabricsim_run::Sim::new(sc).err().map(|e| e.to_string()).expect("refused"),
        }
    };
    assert_eq!(
        err("Nodes 4\n0->1 start 0 size 2MB\n", ""),
        "workload[0].file: t.cm: line 2, size: expected a number of bytes, got \"2MB\""
    );
    // A host beyond the topology, found when the plan is built.
    assert_eq!(
        err("Nodes 8\n0->7 start 0 size 5\n", ""),
        "workload[0].file: t.cm: line 2, dst: host 7 does not exist (hosts are 0..3)"
    );
    // A cycle of triggers is refused before running.
    let cyc =
        "Nodes 4\n0->1 id 1 trigger 2 size 5 send_done_trigger 1\n1->2 id 2 trigger 1 size 5 send_done_trigger 2\n\
               trigger id 1 oneshot\ntrigger id 2 oneshot\n";
    let e = err(cyc, "");
    assert!(e.starts_with("workload[0].file: t.cm: the dependencies form a cycle"), "{e}");
    assert!(e.contains("line 2 waits for line 3, which waits for line 2"), "{e}");
    // A multishot with more flows than activations leaves one never started.
    let e = err(
        "Nodes 4\n0->1 id 1 start 0 size 5 send_done_trigger 3\n1->2 id 2 trigger 3 size 5\n\
         2->3 id 3 trigger 3 size 5\ntrigger id 3 multishot\n",
        "",
    );
    assert!(e.starts_with("workload[0].file: t.cm: line 4, target 2 of multishot trigger 3 (line 5)"), "{e}");
    assert!(e.contains("it would never start"), "{e}");
    assert!(err("Nodes 2\n0->1 start 0 size 5\n", "hosts = [0]")
        .starts_with("workload[0].hosts: maps 1 nodes but the file has 2"));
    assert!(err("", "").contains("no \"Nodes N\" line"));
    let missing = Scenario::from_toml_in(&htsim("kind = \"htsim\"\nfile = \"nope.cm\""), &dir).unwrap_err().to_string();
    assert!(missing.starts_with("workload[0].file: cannot read ") && missing.contains("nope.cm"), "{missing}");
    std::fs::remove_dir_all(&dir).ok();
}

mod chakra_traces {
    use super::*;
    use fabricsim_engine::Dur;
    use fabricsim_workload::traces::chakra::{self, Node, NodeKind};
    use fabricsim_workload::CollectiveKind;

    fn node(id: u64, kind: NodeKind, deps: &[u64]) -> Node {
        Node {
            id,
            name: format!("n{id}"),
            kind,
            deps: deps.to_vec(),
            duration: Dur::ZERO,
            size: 0,
            peer: 0,
            tag: 0,
            group: String::new(),
            root: None,
            record: 0,
        }
    }
    fn comp(id: u64, us: u64, deps: &[u64]) -> Node {
        Node { duration: Dur::from_us(us), ..node(id, NodeKind::Compute, deps) }
    }
    fn coll(id: u64, kind: CollectiveKind, size: u64, group: &str, deps: &[u64]) -> Node {
        Node { size, group: group.into(), ..node(id, NodeKind::Collective(kind), deps) }
    }
    fn p2p(id: u64, send: bool, peer: u32, size: u64, deps: &[u64]) -> Node {
        Node { size, peer, tag: 7, ..node(id, if send { NodeKind::Send } else { NodeKind::Recv }, deps) }
    }

    /// The committed trace (`tests/data/chakra/tiny.<rank>.et`): 4 ranks compute 100 us,
    /// all-reduce 1 MB, compute 50 us; then rank 0 sends 256 KB to rank 1 while ranks
    /// 2 and 3 all-gather 400 KB in their own process group; then 20 us of compute.
    fn tiny() -> Vec<Vec<Node>> {
        (0..4u32)
            .map(|r| {
                let fourth = match r {
                    0 => p2p(4, true, 1, 256_000, &[3]),
                    1 => p2p(4, false, 0, 256_000, &[3]),
                    _ => coll(4, CollectiveKind::AllGather, 400_000, "pair", &[3]),
                };
                vec![
                    comp(1, 100, &[]),
                    coll(2, CollectiveKind::AllReduce, 1_000_000, "", &[1]),
                    comp(3, 50, &[2]),
                    fourth,
                    comp(5, 20, &[4]),
                ]
            })
            .collect()
    }

    fn dir() -> std::path::PathBuf {
        data().join("chakra")
    }

    #[test]
    fn the_committed_trace_decodes_to_what_it_was_made_from() {
        // FABRICSIM_WRITE_TRACES=1 writes the files anew (after changing tiny()).
        for (r, nodes) in tiny().iter().enumerate() {
            let path = dir().join(format!("tiny.{r}.et"));
            let bytes = chakra::encode(nodes);
            if std::env::var_os("FABRICSIM_WRITE_TRACES").is_some() {
                std::fs::write(&path, &bytes).unwrap();
            }
            assert_eq!(std::fs::read(&path).unwrap(), bytes, "{}", path.display());
            let back = chakra::parse(&bytes).unwrap();
            for (a, b) in back.iter().zip(nodes) {
                assert_eq!(
                    (a.id, &a.kind, &a.deps, a.duration, a.size, &a.group),
                    (b.id, &b.kind, &b.deps, b.duration, b.size, &b.group)
                );
            }
        }
    }

    fn replay(extra: &str) -> fabricsim_run::RunResult {
        let sc = Scenario::from_toml_in(&htsim(&format!("kind = \"chakra\"\ntrace = \"tiny\"\n{extra}")), &dir());
        run_scenario(sc.unwrap_or_else(|e| panic!("{e}"))).1
    }

    #[test]
    fn a_trace_replays_compute_collectives_and_sends_in_dependency_order() {
        let r = replay("");
        let kind = col_str(&r.collectives, "kind");
        assert_eq!(kind, vec!["all_reduce", "all_gather"]);
        assert_eq!(col_u32(&r.collectives, "hosts"), vec![4, 2]);
        let start = col_i64_of(&r.collectives, "start_ns");
        let finish = col_i64_of(&r.collectives, "finish_ns");
        assert_eq!(start[0], 100_000, "after 100 us of compute");
        // The send and the all-gather start 50 us after each rank's all-reduce ends.
        let sizes = col_u64(&r.flows, "size_bytes");
        let send = sizes.iter().position(|&s| s == 256_000).expect("the send");
        let send_start = col_i64(&r, "start_ns")[send];
        assert!(send_start >= finish[0] - 10_000 + 50_000 && send_start <= finish[0] + 50_000, "{send_start}");
        assert!(start[1] >= finish[0] - 10_000 + 50_000 && start[1] <= finish[0] + 50_000);
        // One job row: the whole trace, ending 20 us after the last transfer.
        let end = col_i64_of(&r.jobs, "end_ns")[0];
        let last = finish[1].max(col_i64(&r, "finish_ns")[send]);
        assert_eq!(end, last + 20_000);
        assert_eq!(col_u64(&r.jobs, "compute_ns"), vec![170_000]);
    }

    #[test]
    fn ranks_per_host_replays_four_ranks_on_two_hosts() {
        let r = replay("ranks_per_host = 2\nhosts = [1, 3]");
        // The send from rank 0 to rank 1 and the all-gather between ranks 2 and 3 stay
        // on their hosts; only the all-reduce's ring crosses the network.
        let src = col_u32(&r.flows, "src");
        let dst = col_u32(&r.flows, "dst");
        assert!(src.iter().zip(&dst).all(|(s, d)| (*s, *d) == (1, 3) || (*s, *d) == (3, 1)), "{src:?} {dst:?}");
        assert_eq!(r.flows.rows(), 2 * 6, "two ring hops of 6 steps cross hosts");
        assert_eq!(col_u32(&r.collectives, "hosts"), vec![4, 2]);
    }

    /// Four ranks compute 10 us and REDUCE 1 MB over every rank; then ranks 1-3 GATHER
    /// 300 KB in their own process group while rank 0 computes 5 us; then all four
    /// SCATTER 400 KB.
    fn rooted() -> Vec<Vec<Node>> {
        (0..4u32)
            .map(|r| {
                let third = match r {
                    0 => comp(3, 5, &[2]),
                    _ => coll(3, CollectiveKind::Gather, 300_000, "three", &[2]),
                };
                vec![
                    comp(1, 10, &[]),
                    coll(2, CollectiveKind::Reduce, 1_000_000, "", &[1]),
                    third,
                    coll(4, CollectiveKind::Scatter, 400_000, "", &[3]),
                ]
            })
            .collect()
    }

    #[test]
    fn chakra_s_collective_types_are_read_by_their_number() {
        use fabricsim_workload::traces::protobuf::Writer;
        // One COMM_COLL_NODE (type 7) of each CollectiveCommType, written field by field.
        let want = [
            (0, "all_reduce"),
            (1, "reduce"),
            (2, "all_gather"),
            (3, "gather"),
            (4, "scatter"),
            (5, "broadcast"),
            (6, "all_to_all"),
            (7, "reduce_scatter"),
            (8, "reduce_scatter"),
            (9, "barrier"),
        ];
        for (t, name) in want {
            let mut w = Writer::default();
            w.varint(1, 1);
            w.varint(3, 7);
            for (attr, v) in [("comm_type", t), ("comm_size", 4096)] {
                let mut a = Writer::default();
                a.bytes(1, attr.as_bytes());
                a.varint(9, v);
                w.bytes(10, &a.buf);
            }
            let mut file = Writer::default();
            file.record(&w.buf);
            let nodes = chakra::parse(&file.buf).unwrap();
            let NodeKind::Collective(kind) = nodes[0].kind else { panic!("{:?}", nodes[0].kind) };
            assert_eq!(kind.name(), name, "comm_type {t}");
            // And the encoder writes the number back.
            if t != 8 {
                let again = chakra::encode(&nodes);
                assert_eq!(chakra::parse(&again).unwrap()[0].kind, nodes[0].kind);
            }
        }
    }

    #[test]
    fn reduce_gather_and_scatter_nodes_replay_rooted_at_their_group_s_first_rank() {
        let tmp = std::env::temp_dir().join(format!("fabricsim-chakra-rooted-{}", std::process::id()));
        std::fs::create_dir_all(&tmp).unwrap();
        for (r, nodes) in rooted().iter().enumerate() {
            std::fs::write(tmp.join(format!("rooted.{r}.et")), chakra::encode(nodes)).unwrap();
        }
        let sc = Scenario::from_toml_in(&htsim("kind = \"chakra\"\ntrace = \"rooted\""), &tmp).unwrap();
        let (_, r) = run_scenario(sc);
        std::fs::remove_dir_all(&tmp).ok();
        let c = &r.collectives;
        assert_eq!(col_str(c, "kind"), vec!["reduce", "gather", "scatter"]);
        assert_eq!(col_str(c, "algorithm"), vec!["ring", "direct", "direct"]);
        assert_eq!(col_u32(c, "hosts"), vec![4, 3, 4]);
        assert_eq!(col_u64(c, "size_bytes"), vec![1_000_000, 300_000, 400_000]);
        assert_eq!(r.summary["flows"]["unfinished"], 0);
        // Each flow by collective: (src, dst, bytes).
        let (coll, src, dst) = (col_i64(&r, "collective"), col_u32(&r.flows, "src"), col_u32(&r.flows, "dst"));
        let size = col_u64(&r.flows, "size_bytes");
        let of = |k: i64| -> Vec<(u32, u32, u64)> {
            (0..coll.len()).filter(|&i| coll[i] == k).map(|i| (src[i], dst[i], size[i])).collect()
        };
        // Reduce, rooted at rank 0: the chain 1 -> 2 -> 3 -> 0 in two 500 KB pieces
        // (the default 512 KiB chunk).
        let mut reduce = of(0);
        reduce.sort();
        assert_eq!(
            reduce,
            vec![(1, 2, 500_000), (1, 2, 500_000), (2, 3, 500_000), (2, 3, 500_000), (3, 0, 500_000), (3, 0, 500_000)]
        );
        // Gather in group "three" (ranks 1-3), rooted at its first rank, 1: 100 KB parts.
        assert_eq!(of(1), vec![(2, 1, 100_000), (3, 1, 100_000)]);
        // Scatter from rank 0: each other rank its 100 KB part.
        assert_eq!(of(2), vec![(0, 1, 100_000), (0, 2, 100_000), (0, 3, 100_000)]);
        // Order: the reduce after 10 us of compute. Ranks 1-3 leave the reduce once
        // they have forwarded their pieces, before the root has the sum, and gather
        // then (measured: reduce 10-199 us, gather from 95 us). The scatter's root, rank
        // 0, sends after its reduce and 5 us of compute.
        let (start, finish) = (col_i64_of(c, "start_ns"), col_i64_of(c, "finish_ns"));
        assert_eq!(start[0], 10_000);
        assert!(start[0] < start[1] && start[1] < finish[0], "{start:?} {finish:?}");
        assert_eq!(start[2], finish[0] + 5_000);
    }

    /// Writes `ranks` as the trace `name` in a fresh folder and runs it.
    fn replay_nodes(ranks: &[Vec<Node>], name: &str, extra: &str) -> fabricsim_run::RunResult {
        let tmp = std::env::temp_dir().join(format!("fabricsim-chakra-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&tmp).unwrap();
        for (r, nodes) in ranks.iter().enumerate() {
            std::fs::write(tmp.join(format!("{name}.{r}.et")), chakra::encode(nodes)).unwrap();
        }
        let sc = Scenario::from_toml_in(&htsim(&format!("kind = \"chakra\"\ntrace = \"{name}\"\n{extra}")), &tmp);
        std::fs::remove_dir_all(&tmp).ok();
        run_scenario(sc.unwrap()).1
    }

    #[test]
    fn a_root_the_trace_names_is_the_collective_s_root() {
        // A broadcast from rank 2 (`root`), a reduce to rank 3 (`comm_dst`, where a
        // reduce's data goes), a gather in group "three" (ranks 1-3) to rank 3
        // (`root`), and a scatter that names none (its group's lowest rank, 0).
        let ranks: Vec<Vec<Node>> = (0..4u32)
            .map(|r| {
                let third = match r {
                    0 => comp(3, 5, &[2]),
                    _ => Node { root: Some((3, "root")), ..coll(3, CollectiveKind::Gather, 300_000, "three", &[2]) },
                };
                vec![
                    Node { root: Some((2, "root")), ..coll(1, CollectiveKind::Broadcast, 400_000, "", &[]) },
                    Node { root: Some((3, "comm_dst")), ..coll(2, CollectiveKind::Reduce, 400_000, "", &[1]) },
                    third,
                    coll(4, CollectiveKind::Scatter, 300_000, "", &[3]),
                ]
            })
            .collect();
        // The attributes survive the file.
        let back = chakra::parse(&chakra::encode(&ranks[1])).unwrap();
        assert_eq!(
            back.iter().map(|n| n.root).collect::<Vec<_>>(),
            [Some((2, "root")), Some((3, "comm_dst")), Some((3, "root")), None]
        );
        let r = replay_nodes(&ranks, "roots", "");
        assert_eq!(r.summary["flows"]["unfinished"], 0);
        let (coll, src, dst) = (col_i64(&r, "collective"), col_u32(&r.flows, "src"), col_u32(&r.flows, "dst"));
        let of = |k: i64| -> Vec<(u32, u32)> {
            let mut v: Vec<_> = (0..coll.len()).filter(|&i| coll[i] == k).map(|i| (src[i], dst[i])).collect();
            v.sort();
            v
        };
        assert_eq!(of(0), vec![(0, 1), (2, 3), (3, 0)], "a chain from rank 2");
        assert_eq!(of(1), vec![(0, 1), (1, 2), (2, 3)], "a chain ending at rank 3");
        assert_eq!(of(2), vec![(1, 3), (2, 3)], "to rank 3");
        assert_eq!(of(3), vec![(0, 1), (0, 2), (0, 3)], "from the lowest rank");
    }

    /// Runs `ranks` (as trace `name`) on one 8-host switch with `extra` keys.
    fn replay8(ranks: &[Vec<Node>], name: &str, extra: &str) -> Result<fabricsim_run::RunResult, String> {
        let tmp = std::env::temp_dir().join(format!("fabricsim-chakra8-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&tmp).unwrap();
        for (r, nodes) in ranks.iter().enumerate() {
            std::fs::write(tmp.join(format!("{name}.{r}.et")), chakra::encode(nodes)).unwrap();
        }
        let toml = format!(
            "[topology]\nkind = \"leaf_spine\"\nleaves = 1\nspines = 1\nhosts_per_leaf = 8\n\
             [transport]\nkind = \"roce\"\ncc = \"none\"\n[output]\nsample_interval = \"0us\"\n\
             [[workload]]\nkind = \"chakra\"\ntrace = \"{name}\"\n{extra}"
        );
        let sc = Scenario::from_toml_in(&toml, &tmp);
        std::fs::remove_dir_all(&tmp).ok();
        let sim = fabricsim_run::Sim::new(sc.map_err(|e| e.to_string())?).map_err(|e| e.to_string())?;
        Ok(run_sim(sim).1)
    }

    #[test]
    fn a_four_rank_all_reduce_replicated_twice_is_one_all_reduce_over_eight() {
        // Data parallelism scaled out: each rank keeps its 8 MB buffer, the ring grows
        // from 4 to 8 ranks, so its time grows by (2 x 7/8) / (2 x 3/4) = 7/6 and its
        // bus bandwidth stays that of the links.
        let ranks: Vec<Vec<Node>> =
            (0..4).map(|_| vec![coll(1, CollectiveKind::AllReduce, 8_000_000, "", &[])]).collect();
        let four = replay8(&ranks, "ar", "").unwrap();
        let eight = replay8(&ranks, "ar", "replicas = 2").unwrap();
        let (c4, c8) = (&four.collectives, &eight.collectives);
        assert_eq!((col_u32(c4, "hosts"), col_u32(c8, "hosts")), (vec![4], vec![8]));
        assert_eq!(col_u64(c8, "size_bytes"), vec![8_000_000]);
        let (t4, t8) = (col_i64_of(c4, "duration_ns")[0] as f64, col_i64_of(c8, "duration_ns")[0] as f64);
        let (b4, b8) = (col_f64(c4, "busbw_gbps")[0], col_f64(c8, "busbw_gbps")[0]);
        assert!((t8 / t4 - 7.0 / 6.0).abs() < 0.02, "{t8} ns against {t4} ns: {}", t8 / t4);
        assert!((b8 / b4 - 1.0).abs() < 0.02, "busbw {b8} against {b4} Gb/s");
        assert_eq!(col_u32(&eight.jobs, "ranks"), vec![8]);
    }

    #[test]
    fn replicas_span_the_named_groups_and_copy_the_others() {
        // Tensor-parallel pairs tp0 = {0, 1}, tp1 = {2, 3} all-gather 1 MB; data-parallel
        // pairs dp0 = {0, 2}, dp1 = {1, 3} all-reduce 2 MB; rank 0 sends rank 3 100 KB.
        // Two copies with span = dp0, dp1: four tensor-parallel all-gathers of two ranks,
        // two data-parallel all-reduces of four, and the send in each copy.
        let ranks: Vec<Vec<Node>> = (0..4u32)
            .map(|r| {
                let mut v = vec![
                    coll(1, CollectiveKind::AllGather, 1_000_000, if r < 2 { "tp0" } else { "tp1" }, &[]),
                    coll(2, CollectiveKind::AllReduce, 2_000_000, if r % 2 == 0 { "dp0" } else { "dp1" }, &[1]),
                ];
                match r {
                    0 => v.push(p2p(3, true, 3, 100_000, &[2])),
                    3 => v.push(p2p(3, false, 0, 100_000, &[2])),
                    _ => {}
                }
                v
            })
            .collect();
        let r = replay8(&ranks, "tpdp", "replicas = 2\nspan = [\"dp0\", \"dp1\"]").unwrap();
        assert_eq!(r.summary["flows"]["unfinished"], 0);
        let c = &r.collectives;
        let mut got: Vec<(String, u32, u64)> = col_str(c, "kind")
            .into_iter()
            .zip(col_u32(c, "hosts"))
            .zip(col_u64(c, "size_bytes"))
            .map(|((k, h), s)| (k, h, s))
            .collect();
        got.sort();
        let ag = ("all_gather".to_string(), 2, 1_000_000);
        let ar = ("all_reduce".to_string(), 4, 2_000_000);
        assert_eq!(got, vec![ag.clone(), ag.clone(), ag.clone(), ag, ar.clone(), ar]);
        // Which hosts each all-reduce spans: its flows' ends.
        let (coll, src, dst) = (col_i64(&r, "collective"), col_u32(&r.flows, "src"), col_u32(&r.flows, "dst"));
        let kinds = col_str(c, "kind");
        let mut spans: Vec<Vec<u32>> = (0..kinds.len() as i64)
            .filter(|&k| kinds[k as usize] == "all_reduce")
            .map(|k| {
                let mut h: Vec<u32> =
                    (0..coll.len()).filter(|&i| coll[i] == k).flat_map(|i| [src[i], dst[i]]).collect();
                h.sort();
                h.dedup();
                h
            })
            .collect();
        spans.sort();
        assert_eq!(spans, vec![vec![0, 2, 4, 6], vec![1, 3, 5, 7]]);
        let sends: Vec<(u32, u32)> = (0..coll.len()).filter(|&i| coll[i] < 0).map(|i| (src[i], dst[i])).collect();
        assert_eq!(sends, vec![(0, 3), (4, 7)]);
        // The default span: only groups of every rank, none here, so every collective
        // stays within its copy.
        let r = replay8(&ranks, "tpdp", "replicas = 2").unwrap();
        assert!(col_u32(&r.collectives, "hosts").iter().all(|&h| h == 2));
        // Refused by name: a group the trace does not have, span without replicas.
        let e = replay8(&ranks, "tpdp", "replicas = 2\nspan = [\"dp\"]").err().unwrap();
        assert_eq!(
            e,
            "workload[0].span: process group \"dp\" has no collective in the trace (its groups: \"dp0\", \"dp1\", \"tp0\", \"tp1\")"
        );
        let e = replay8(&ranks, "tpdp", "span = [\"dp0\"]").err().unwrap();
        assert_eq!(e, "workload[0].span: applies only with replicas above 1");
        let e = replay8(&ranks, "tpdp", "replicas = 4").err().unwrap();
        assert_eq!(
            e,
            "workload[0].trace: tpdp.0.et (copy 2): rank 8 is placed on host 8, which does not exist (hosts are 0..7)"
        );
    }

    #[test]
    fn bad_traces_are_refused_with_the_file_record_and_field() {
        let tmp = std::env::temp_dir().join(format!("fabricsim-chakra-{}", std::process::id()));
        std::fs::create_dir_all(&tmp).unwrap();
        let err = |ranks: &[Vec<Node>], cut: usize| {
            for (r, nodes) in ranks.iter().enumerate() {
                let mut b = chakra::encode(nodes);
                if r == 0 && cut > 0 {
                    b.truncate(b.len() - cut);
                }
                std::fs::write(tmp.join(format!("t.{r}.et")), b).unwrap();
            }
            let sc = Scenario::from_toml_in(
                &htsim(&format!("kind = \"chakra\"\ntrace = \"t\"\nranks = {}", ranks.len())),
                &tmp,
            );
            match sc {
                Err(e) => e.to_string(),
                Ok(sc) => fabricsim_run::Sim::new(sc).err().map(|e| e.to_string()).expect("refused"),
            }
        };
        let e = err(&tiny(), 3);
        assert!(e.starts_with("workload[0].trace: t.0.et: record 6: "), "{e}");
        let e = err(&[vec![comp(1, 5, &[9])], vec![comp(1, 5, &[])]], 0);
        assert_eq!(e, "workload[0].trace: t.0.et, record 2 (node 1): field ctrl_deps/data_deps: node 9 is not in this rank's trace");
        let e = err(&[vec![p2p(1, false, 1, 5, &[])], vec![comp(1, 5, &[])]], 0);
        assert!(e.contains("a receive from rank 1 with tag 7 that no send matches"), "{e}");
        // Each rank waits to receive before it sends: a deadlock, refused before running.
        let dead = |me: u32| vec![p2p(1, false, 1 - me, 5, &[]), p2p(2, true, 1 - me, 5, &[1])];
        let e = err(&[dead(0), dead(1)], 0);
        assert!(e.contains("form a cycle") && e.starts_with("workload[0].trace: t.0.et, record 2 (node 1)"), "{e}");
        let cyc = vec![comp(1, 5, &[2]), comp(2, 5, &[1])];
        assert!(err(&[cyc.clone(), cyc], 0).contains("form a cycle"));
        // A root outside the process group, and members that disagree on it.
        let bcast = |root: u32, key: &'static str| Node {
            root: Some((root, key)),
            ..coll(1, CollectiveKind::Broadcast, 5, "pair", &[])
        };
        let e = err(&[vec![bcast(2, "root")], vec![bcast(2, "root")], vec![comp(1, 5, &[])]], 0);
        assert_eq!(
            e,
            "workload[0].trace: t.0.et, record 2 (node 1): field attr root: rank 2 is not in process group \"pair\" (its ranks: 0, 1)"
        );
        let e = err(&[vec![bcast(0, "comm_src")], vec![bcast(1, "comm_src")]], 0);
        assert!(
            e.starts_with("workload[0].trace: t.1.et, record 2 (node 1): field attr comm_src: collective 0 of process group \"pair\" names root rank 1 (comm_src) here and rank 0 (comm_src) on rank 0"),
            "{e}"
        );
        std::fs::remove_dir_all(&tmp).ok();
    }
}
