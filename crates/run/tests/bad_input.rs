//! Bad scenarios are refused with a message naming the key and the allowed values.

use fabricsim_run::{Scenario, Sim};
use rstest::rstest;

const BASE: &str = r#"
[topology]
kind = "leaf_spine"
leaves = 2
spines = 2
hosts_per_leaf = 2
[workload]
kind = "incast"
senders = 2
size = "1MB"
"#;

fn error_of(toml: &str) -> String {
    match Scenario::from_toml(toml) {
        Err(e) => e.to_string(),
        Ok(sc) => match Sim::new(sc) {
            Err(e) => e.to_string(),
            Ok(_) => panic!("accepted:\n{toml}"),
        },
    }
}

#[rstest]
#[case::unknown_top_key("colour = \"red\"\n", "colour: unknown key (allowed here: name, seed, stop")]
#[case::bad_rate("", "topology.host_link: expected a positive rate")]
#[case::zero_leaves("", "topology.leaves: must be between 1 and")]
#[case::unknown_kind("", "topology.kind: unknown value \"torus\" (allowed: leaf_spine, fat_tree, multi_plane, htsim)")]
#[case::odd_k("", "topology.k: must be even, got 5")]
#[case::oversubscription("", "topology.oversubscription: must divide k/2 = 2 (allowed: 1, 2)")]
#[case::negative_size("", "workload[0].size: must not be negative, got -5")]
#[case::size_with_bad_unit("", "workload[0].size: expected a size such as \"8MB\"")]
#[case::zero_size("", "workload[0].size: must be at least 1 byte")]
#[case::fractional_size("", "workload[0].size: expected a whole number of bytes, got \"1.0005KB\" = 1000.5 bytes")]
#[case::fat_tree_too_wide(
    "",
    "topology.k: 48 pods x 24 edge switches = 1152 edge switches and 576 cores; at most 1024 switches per tier"
)]
#[case::all_reduce_smaller_than_its_ring(
    "",
    "workload[0].size: must be at least the number of hosts (4): each step moves size/N bytes, got 3"
)]
#[case::sample_interval_below_a_nanosecond("", "output.sample_interval: must be \"0us\" (off) or at least 1ns, got")]
#[case::message_too_large(
    "",
    "workload[0].size: makes messages of 3000000000 bytes; an RDMA message is at most 2^31 bytes"
)]
#[case::flow_too_large("", "workload[0].flows[1].size: makes messages of 3000000000 bytes")]
#[case::too_many_hosts(
    "",
    "topology.hosts_per_leaf: 1000 leaves x 2000 hosts per leaf = 2000000 hosts, more than the supported 1048576"
)]
#[case::too_many_hosts_per_edge(
    "",
    "topology.hosts_per_edge: k = 4: 4 pods x 2 edge switches x 300000 hosts per edge = 2400000 hosts, more than"
)]
#[case::fault_after_stop(
    "stop = \"5us\"\n",
    "faults[0].at: 100us is after the scenario's stop time (5us): the fault would never happen"
)]
#[case::too_many_planes("", "topology.planes: must be between 1 and 8, got 9")]
#[case::dcqcn_without_dcqcn("", "transport.dcqcn: applies to cc = \"dcqcn\"; this transport has cc = \"none\"")]
#[case::receiver_out_of_range("", "workload[0].receiver: host 99 does not exist (hosts are 0..3)")]
#[case::too_many_senders("", "workload[0].senders: 9 hosts requested but only 3 are available")]
#[case::unknown_transport(
    "",
    "transport.kind: unknown value \"tcp\" (allowed: roce, qp_scaling, mprdma, stellar, udmp, mrc, star, maestro)"
)]
#[case::unknown_cc("", "transport.cc: unknown value \"bbr\" (allowed: dcqcn, none)")]
#[case::unknown_workload_transport(
    "",
    "workload[0].transport.kind: unknown value \"tcp\" (allowed: roce, qp_scaling, mprdma, stellar, udmp, mrc, star, maestro)"
)]
#[case::bad_workload_transport_key("", "workload[0].transport.paths: unknown key (allowed here: kind, qps")]
#[case::transport_key_without_its_kind("", "workload[0].transport.evs: unknown key (allowed here: kind, cc, dcqcn")]
#[case::wrong_type("", "topology.mtu: expected an integer, got a string")]
#[case::mtu_range("", "topology.mtu: must be between 256 and 9000, got 100000")]
#[case::ecn_order("", "fabric.ecn.kmin: must not exceed kmax")]
#[case::pfc_type("", "fabric.pfc: expected true, false or a table")]
#[case::quoted_dotted_key("", "fabric.\"pfc.enabled\": unknown key (allowed here: pfc, ecn")]
#[case::unknown_fabric_key("", "fabric.ecmp_seed: unknown key (allowed here: pfc, ecn, trimming, routing")]
#[case::unknown_workload_key(
    "",
    "workload[0].sender: unknown key (allowed here: kind, start, transport, size, senders, receiver)"
)]
#[case::missing_topology("", "topology: is required")]
#[case::missing_workload("", "workload: is required")]
#[case::flow_to_itself("", "workload[0].flows[0].dst: a flow needs two different hosts")]
#[case::zero_stop("stop = \"0us\"\n", "stop: must be later than 0")]
#[case::endless_flap("", "faults[0].until: is required for link_flap unless the scenario has a stop time")]
#[case::flap_without_an_up_phase("", "faults[0].duty: period x duty and period x (1 - duty) must each be at least 1ns")]
#[case::too_many_flaps("", "faults[0].period: flapping every 2ns from 1us to 10ms is 4999500 cycles; at most 1000000")]
#[case::zero_stall(
    "stall_after = \"0us\"\n",
    "stall_after: expected a duration longer than 0 such as \"1s\", or \"none\""
)]
#[case::tiny_rto("", "transport.min_rto: must be at least 1us, got 500ns")]
#[case::zero_delay_target("", "transport.delay_target: must be longer than 0 (\"none\" turns the delay cut off)")]
#[case::delay_target_type("", "transport.delay_target: expected a duration such as \"20us\" or \"none\"")]
#[case::delay_target_below_the_rtt(
    "",
    "transport.delay_target: 1us is below the unloaded round trip from host 3 to host 0 (9.40us): every acknowledgement"
)]
#[case::nak_interval_type("", "transport.nak_interval: expected a duration such as \"500us\" or \"none\"")]
#[case::zero_auto_duration("", "transport.target: must be longer than 0 (leave it out for the default, auto)")]
#[case::zero_reverse_probe("", "transport.reverse_probe: must be longer than 0")]
#[case::probe_backoff_below_interval("", "transport.probe_backoff_max: must not be below probe_interval (100us)")]
#[case::probe_interval_above_backoff(
    "",
    "transport.probe_interval: must not exceed probe_backoff_max (10ms, its default)"
)]
#[case::dcqcn_floor_above_line_rate(
    "",
    "transport.dcqcn.min_rate: must not exceed the host link rate (100Gbps), got 200Gbps"
)]
#[case::no_room_for_a_packet(
    "",
    "fabric.drop_alpha: a switch would admit at most 1000 bytes into an empty queue, less than one 4096-byte packet"
)]
#[case::pfc_buffer_too_small(
    "",
    "topology.switch_buffer: 100000 bytes cannot be lossless under PFC: a switch with 4 ports needs"
)]
#[case::fault_key_of_another_kind(
    "",
    "faults[0].loss: does not apply to kind = \"link_down\" (allowed here: at, kind, link)"
)]
#[case::zero_trim_threshold("", "fabric.trimming.threshold: must be at least one packet (mtu = 4096 bytes), got 0")]
#[case::too_many_pods("", "topology.pods: must be at most k = 4 (a core switch has a port per pod), got 5")]
#[case::workload_dcqcn("", "workload[0].transport.dcqcn.g: must be between 0.000000001 and 1, got 5")]
#[case::endless_stop("stop = \"2000000s\"\n", "stop: must be at most 1000000s (about 11.6 days of simulated time)")]
#[case::bad_duration("", "transport.rto: expected a duration such as \"1us\"")]
#[case::bad_toml("", "not valid TOML")]
#[case::loss_range("", "fabric.link_loss: must be between 0 and 1, got 1.5")]
fn bad_input_is_refused_with_the_key_named(#[case] prefix: &str, #[case] expected: &str) {
    let toml = match expected.split(':').next().unwrap() {
        "topology.host_link" => BASE.replace("hosts_per_leaf = 2", "hosts_per_leaf = 2\nhost_link = \"fast\""),
        "topology.leaves" => BASE.replace("leaves = 2", "leaves = 0"),
        "topology.kind" => BASE.replace("\"leaf_spine\"", "\"torus\""),
        "topology.k" if expected.contains("pods x") => BASE
            .replace("kind = \"leaf_spine\"\nleaves = 2\nspines = 2\nhosts_per_leaf = 2", "kind = \"fat_tree\"\nk = 48"),
        "topology.k" => BASE
            .replace("kind = \"leaf_spine\"\nleaves = 2\nspines = 2\nhosts_per_leaf = 2", "kind = \"fat_tree\"\nk = 5"),
        "topology.oversubscription" => BASE.replace(
            "kind = \"leaf_spine\"\nleaves = 2\nspines = 2\nhosts_per_leaf = 2",
            "kind = \"fat_tree\"\nk = 4\noversubscription = 3",
        ),
        "workload[0].size" if expected.contains("negative") => BASE.replace("\"1MB\"", "-5"),
        "workload[0].size" if expected.contains("such as") => BASE.replace("\"1MB\"", "\"1 megabyte\""),
        "workload[0].size" if expected.contains("whole") => BASE.replace("\"1MB\"", "\"1.0005KB\""),
        "workload[0].size" if expected.contains("number of hosts") => {
            BASE.replace("kind = \"incast\"\nsenders = 2\nsize = \"1MB\"", "kind = \"all_reduce\"\nsize = 3")
        }
        "output.sample_interval" => format!("{BASE}[output]\nsample_interval = \"500ps\"\n"),
        "workload[0].size" if expected.contains("messages of") => BASE.replace("\"1MB\"", "\"3GB\""),
        "workload[0].size" => BASE.replace("\"1MB\"", "0"),
        "workload[0].flows[1].size" => BASE.replace(
            "kind = \"incast\"\nsenders = 2\nsize = \"1MB\"",
            "kind = \"flows\"\nflows = [{ src = 0, dst = 1, size = 10 }, { src = 1, dst = 2, size = \"3GB\" }]",
        ),
        "topology.hosts_per_edge" => BASE.replace(
            "kind = \"leaf_spine\"\nleaves = 2\nspines = 2\nhosts_per_leaf = 2",
            "kind = \"fat_tree\"\nk = 4\nhosts_per_edge = 300000",
        ),
        "topology.hosts_per_leaf" => BASE.replace("leaves = 2", "leaves = 1000").replace("hosts_per_leaf = 2", "hosts_per_leaf = 2000"),
        "faults[0].at" => format!("{BASE}[[faults]]\nat = \"100us\"\nkind = \"link_down\"\nlink = \"leaf[0].up[0]\"\n"),
        "workload[0].receiver" => BASE.replace("senders = 2", "senders = 2\nreceiver = 99"),
        "workload[0].senders" => BASE.replace("senders = 2", "senders = 9"),
        "transport.kind" => format!("{BASE}[transport]\nkind = \"tcp\"\n"),
        "transport.dcqcn" => format!("{BASE}[transport]\ncc = \"none\"\ndcqcn = {{ g = 0.01 }}\n"),
        "transport.cc" => format!("{BASE}[transport]\ncc = \"bbr\"\n"),
        "workload[0].transport.kind" => BASE.replace("senders = 2", "senders = 2\ntransport = { kind = \"tcp\" }"),
        "topology.planes" => BASE.replace(
            "kind = \"leaf_spine\"\nleaves = 2\nspines = 2\nhosts_per_leaf = 2",
            "kind = \"multi_plane\"\nplanes = 9\ngroups = 2\nhosts_per_group = 2\nt1_per_plane = 2",
        ),
        "workload[0].transport.evs" => BASE.replace("senders = 2", "senders = 2\ntransport = { evs = 8 }"),
        "workload[0].transport.paths" => {
            BASE.replace("senders = 2", "senders = 2\ntransport = { kind = \"qp_scaling\", paths = 4 }")
        }
        "topology.mtu" if expected.contains("integer") => {
            BASE.replace("hosts_per_leaf = 2", "hosts_per_leaf = 2\nmtu = \"4096\"")
        }
        "topology.mtu" => BASE.replace("hosts_per_leaf = 2", "hosts_per_leaf = 2\nmtu = 100000"),
        "fabric.ecn.kmin" => format!("{BASE}[fabric]\necn = {{ kmin = \"400KB\", kmax = \"100KB\" }}\n"),
        "fabric.pfc" => format!("{BASE}[fabric]\npfc = \"yes\"\n"),
        "fabric.ecmp_seed" => format!("{BASE}[fabric]\necmp_seed = 3\n"),
        // One key with a dot in its name, not pfc.enabled nested.
        "fabric.\"pfc.enabled\"" => format!("{BASE}[fabric]\n\"pfc.enabled\" = false\n"),
        "workload[0].sender" => BASE.replace("senders = 2", "senders = 2\nsender = 1"),
        "topology" => "[workload]\nkind = \"incast\"\nsenders = 2\nsize = \"1MB\"\n".into(),
        "workload" => "[topology]\nkind = \"leaf_spine\"\n".into(),
        "workload[0].flows[0].dst" => BASE.replace(
            "kind = \"incast\"\nsenders = 2\nsize = \"1MB\"",
            "kind = \"flows\"\nflows = [{ src = 1, dst = 1, size = 10 }]",
        ),
        "transport.rto" => format!("{BASE}[transport]\nrto = \"soon\"\n"),
        "topology.switch_buffer" => BASE.replace("hosts_per_leaf = 2", "hosts_per_leaf = 2\nswitch_buffer = \"100KB\""),
        "faults[0].loss" => {
            format!("{BASE}[[faults]]\nat = \"1us\"\nkind = \"link_down\"\nlink = \"leaf[0].up[0]\"\nloss = 0.5\n")
        }
        "fabric.trimming.threshold" => format!("{BASE}[fabric]\npfc = false\ntrimming = {{ threshold = 0 }}\n"),
        "topology.pods" => BASE.replace(
            "kind = \"leaf_spine\"\nleaves = 2\nspines = 2\nhosts_per_leaf = 2",
            "kind = \"fat_tree\"\nk = 4\npods = 5",
        ),
        "workload[0].transport.dcqcn.g" => {
            BASE.replace("senders = 2", "senders = 2\ntransport = { kind = \"roce\", dcqcn = { g = 5.0 } }")
        }
        "fabric.drop_alpha" => BASE.replace("hosts_per_leaf = 2", "hosts_per_leaf = 2\nswitch_buffer = \"100KB\"")
            + "[fabric]\npfc = false\ndrop_alpha = 0.01\n",
        "transport.min_rto" => format!("{BASE}[transport]\nkind = \"mrc\"\nmin_rto = \"500ns\"\n"),
        "transport.delay_target" if expected.contains("longer") => {
            format!("{BASE}[transport]\nkind = \"mrc\"\ndelay_target = \"0us\"\n")
        }
        "transport.delay_target" if expected.contains("below") => {
            format!("{BASE}[transport]\nkind = \"mrc\"\ndelay_target = \"1us\"\n")
        }
        "transport.delay_target" => format!("{BASE}[transport]\nkind = \"mrc\"\ndelay_target = 20\n"),
        "transport.nak_interval" => format!("{BASE}[transport]\nkind = \"roce\"\nnak_interval = 500\n"),
        "transport.target" => format!("{BASE}[transport]\nkind = \"stellar\"\ntarget = \"0us\"\n"),
        "transport.reverse_probe" => format!("{BASE}[transport]\nkind = \"mrc\"\nreverse_probe = \"0us\"\n"),
        "transport.probe_interval" => format!("{BASE}[transport]\nkind = \"mrc\"\nprobe_interval = \"20ms\"\n"),
        "transport.probe_backoff_max" => {
            format!("{BASE}[transport]\nkind = \"mrc\"\nprobe_backoff_max = \"1us\"\n")
        }
        "transport.dcqcn.min_rate" => format!("{BASE}[transport]\ndcqcn = {{ min_rate = \"200Gbps\" }}\n"),
        "not valid TOML" => "[topology\nkind = 1".into(),
        "fabric.link_loss" => format!("{BASE}[fabric]\nlink_loss = 1.5\n"),
        "faults[0].until" => {
            format!("{BASE}[[faults]]\nat = \"1us\"\nkind = \"link_flap\"\nlink = \"leaf[0].up[0]\"\nperiod = \"10us\"\n")
        }
        "faults[0].duty" => format!(
            "{BASE}[[faults]]\nat = \"1us\"\nkind = \"link_flap\"\nlink = \"leaf[0].up[0]\"\nperiod = \"10us\"\nduty = 1.0\nuntil = \"1ms\"\n"
        ),
        "faults[0].period" => format!(
            "stop = \"10ms\"\n{BASE}[[faults]]\nat = \"1us\"\nkind = \"link_flap\"\nlink = \"leaf[0].up[0]\"\nperiod = \"2ns\"\n"
        ),
        _ => BASE.to_string(),
    };
    let e = error_of(&format!("{prefix}{toml}"));
    assert!(e.contains(expected), "expected «{expected}» in «{e}»");
}

#[test]
fn the_same_scenario_as_json_is_accepted() {
    let json = r#"{"topology": {"kind": "leaf_spine", "leaves": 2, "spines": 1, "hosts_per_leaf": 2},
                   "workload": [{"kind": "flows", "flows": [{"src": 0, "dst": 3, "size": "10KB"}]}]}"#;
    let sc = Scenario::from_json(json).unwrap();
    assert_eq!(sc.topology.hosts(), 4);
    assert!(Scenario::from_json("[1, 2]").unwrap_err().to_string().contains("expected a table"));
}

/// 186,192 MRC connections of 16,384 entropy values each need terabytes: refused with
/// the key named before anything is allocated (the allocator used to abort the process).
#[test]
fn a_scenario_too_big_for_memory_is_refused_before_it_is_built() {
    let toml = "[topology]\nkind = \"fat_tree\"\nk = 12\n[transport]\nkind = \"mrc\"\nevs = 8192\nbackup = 4096\n\
                [[workload]]\nkind = \"all_to_all\"\nsize = 4096\n";
    let e = error_of(toml);
    assert!(e.starts_with("transport.evs: the connections' and messages' state needs about"), "{e}");
    assert!(e.contains("186192 connections"), "{e}");
}

/// The audit's case: an all-to-all over the 21,296 hosts of the largest fat tree
/// (k = 44) makes 453 million connections (21,296 x 21,295). The estimate comes from the workload's
/// parameters, before any list is built (building the list first aborted the process
/// at 3.8 GB), and names the workload's key, since RoCE's state per connection is fixed.
#[test]
fn an_all_to_all_too_big_for_memory_is_refused_before_its_plan_is_built() {
    let e = error_of("[topology]\nkind = \"fat_tree\"\nk = 44\n[[workload]]\nkind = \"all_to_all\"\nsize = 4096\n");
    assert!(e.starts_with("workload[0].hosts: the connections' and messages' state needs about"), "{e}");
    assert!(e.contains("453498320 connections"), "{e}");
}

/// Every key documented with the default "auto" or "none" accepts that word, meaning
/// the same as leaving the key out (a tool filling in keys from the catalog writes
/// them; so may a user copying the documentation).
#[test]
fn a_documented_default_word_means_the_default() {
    // (The parsed scenario, without its copy of the document as written.)
    let parse = |toml: &str| {
        let d = format!("{:?}", Scenario::from_toml(toml).unwrap_or_else(|e| panic!("{e}\n{toml}")));
        d[..d.find(", document:").expect("a document field")].to_string()
    };
    let mut checked = 0;
    for s in fabricsim_run::schema::CATALOG {
        for p in s.params.iter().filter(|p| matches!(p.default, "auto" | "none")) {
            let (with, without) = match (s.section, s.kind) {
                ("transport", Some(kind)) => {
                    let t = format!("{BASE}[transport]\nkind = \"{kind}\"\n");
                    (format!("{t}{} = \"{}\"\n", p.key, p.default), t)
                }
                ("", None) if p.key != "faults" => (format!("{} = \"{}\"\n{BASE}", p.key, p.default), BASE.to_string()),
                ("faults", _) => {
                    let f = format!("stop = \"1ms\"\n{BASE}[[faults]]\nat = \"1us\"\nkind = \"link_flap\"\nlink = \"leaf[0].up[0]\"\nperiod = \"10us\"\n");
                    (format!("{f}{} = \"{}\"\n", p.key, p.default), f)
                }
                _ => continue,
            };
            assert_eq!(parse(&with), parse(&without), "{}.{} = \"{}\"", s.section, p.key, p.default);
            checked += 1;
        }
    }
    assert!(checked >= 14, "{checked} keys checked");
}

#[test]
fn mrc_evs_must_split_equally_over_the_planes() {
    let sc = |evs: u32, own: bool| {
        let t = format!("kind = \"mrc\"\nevs = {evs}\n");
        let (top, per) = if own {
            (String::new(), format!("[workload.transport]\n{t}"))
        } else {
            (format!("[transport]\n{t}"), String::new())
        };
        format!(
            "[topology]\nkind = \"multi_plane\"\nplanes = 4\ngroups = 2\nhosts_per_group = 2\nt1_per_plane = 2\n{top}\
             [workload]\nkind = \"incast\"\nsenders = 2\nsize = \"1MB\"\n{per}"
        )
    };
    for evs in [1, 6, 130] {
        let e = error_of(&sc(evs, false));
        assert!(e.starts_with("transport.evs: must be a multiple of the 4 planes"), "{e}");
    }
    assert!(error_of(&sc(5, true)).contains("workload[0].transport.evs: must be a multiple of the 4 planes"));
    assert!(error_of(&sc(5, true)).contains("(for example 8)"));
    for evs in [4, 8, 128] {
        Sim::new(Scenario::from_toml(&sc(evs, false)).unwrap()).unwrap();
    }
    // The default (128) is rounded down to a multiple: 126 on 3 planes.
    let three = sc(4, false).replace("planes = 4", "planes = 3").replace("evs = 4\n", "");
    Sim::new(Scenario::from_toml(&three).unwrap()).unwrap();
}

#[test]
fn ecn_that_no_queue_can_reach_is_refused() {
    // At 100 Gb/s the default ECN thresholds are 400 KB - 1.6 MB; without PFC one port's
    // queue holds at most half the buffer (drop_alpha 1).
    let sc = |buffer: &str| {
        format!(
            "{}[fabric]\npfc = false\necn = true\n",
            BASE.replace("hosts_per_leaf = 2", &format!("hosts_per_leaf = 2\nswitch_buffer = \"{buffer}\""))
        )
    };
    let e = error_of(&sc("600KB"));
    assert!(e.starts_with("fabric.ecn: marks from 400000 bytes of queue on a 100Gbps port, but without PFC a port's queue holds at most 300000"), "{e}");
    Sim::new(Scenario::from_toml(&sc("1MB")).unwrap()).unwrap();
}

#[test]
fn a_transport_table_without_kind_says_it_is_roce() {
    // `transport = { evs = 8 }` under an MRC scenario meant MRC; the table is RoCE.
    let toml = BASE.replace("senders = 2", "senders = 2\ntransport = { evs = 8 }");
    let err = error_of(&format!("{toml}[transport]\nkind = \"mrc\"\n"));
    assert!(
        err.ends_with("; this table has no kind, so it is kind = \"roce\" (`evs` is a key of kind = \"mrc\")"),
        "{err}"
    );
    // With a kind given, or a key of no kind (a typo), the plain message.
    let toml = BASE.replace("senders = 2", "senders = 2\ntransport = { kind = \"roce\", evs = 8 }");
    assert!(!error_of(&toml).contains("no kind"));
    let toml = BASE.replace("senders = 2", "senders = 2\ntransport = { ccc = \"none\" }");
    assert!(!error_of(&toml).contains("no kind"), "{}", error_of(&toml));
}

#[test]
fn a_name_that_names_nothing_is_answered_with_what_exists() {
    let fault = |kind: &str, key: &str, name: &str| {
        error_of(&format!("{BASE}[[faults]]\nat = \"1us\"\nkind = \"{kind}\"\n{key} = \"{name}\"\n"))
    };
    let e = fault("link_down", "link", "leaf[9].up[0]");
    assert!(
        e.starts_with(
            "faults[0].link: no port \"leaf[9].up[0]\" in this topology (there are 2 leaf nodes: leaf[0] to leaf[1];"
        ),
        "{e}"
    );
    let e = fault("link_down", "link", "leaf[0].up[7]");
    assert!(e.contains("(leaf[0] has ports down[0] to down[1], up[0] to up[1];"), "{e}");
    let e = fault("switch_down", "switch", "spine[7]");
    assert!(e.contains("(there are 2 spine nodes: spine[0] to spine[1]; for example leaf[0])"), "{e}");
    // Spaces around a name are not part of it (as with --pcap).
    assert!(error_of(&format!("{BASE}[[faults]]\nat = \"1us\"\nkind = \"link_down\"\nlink = \" leaf[0].up[0] \"\n[[faults]]\nat = \"1us\"\nkind = \"switch_down\"\nswitch = \"nope\"\n")).starts_with("faults[1].switch"));
    let e = fault("switch_down", "switch", "host[0]");
    assert!(e.contains("(host[0] is a host, not a switch;"), "{e}");
    let e = fault("link_down", "link", "host[0].nic[3]");
    assert!(e.contains("(host[0] has ports nic[0];"), "{e}");
    let e = fault("switch_down", "switch", "core[0]");
    assert!(e.contains("(its nodes are host[..], leaf[..], spine[..];"), "{e}");
}

#[test]
fn a_long_value_is_quoted_cut_to_a_readable_length() {
    // A 1 MB transport.kind made a 1 MB error line (and a key, a port name, a line of
    // broken TOML the same).
    let long = "k".repeat(1 << 20);
    let cut = format!("\"{}\"... (1048576 characters)", "k".repeat(64));
    let e = error_of(&format!("{BASE}[transport]\nkind = \"{long}\"\n"));
    assert_eq!(
        e,
        format!("transport.kind: unknown value {cut} (allowed: roce, qp_scaling, mprdma, stellar, udmp, mrc, star, maestro)")
    );
    let e = error_of(&format!("{BASE}[transport]\n{long} = 1\n"));
    assert!(e.starts_with(&format!("transport.{cut}: unknown key (allowed here: kind")), "{}", &e[..200.min(e.len())]);
    let e = error_of(&format!("{BASE}[[faults]]\nat = \"1us\"\nkind = \"link_down\"\nlink = \"{long}\"\n"));
    assert!(e.starts_with(&format!("faults[0].link: no port {cut} in this topology (")), "{}", &e[..200.min(e.len())]);
    let e = error_of(&BASE.replace("size = \"1MB\"", &format!("size = \"{long}\"")));
    assert!(e.ends_with(&format!("got {cut}")), "{}", &e[..200.min(e.len())]);
    let e = error_of(&format!("{BASE}[output]\nsample_interval = \"{long}")); // unterminated
    assert!(e.starts_with("not valid TOML") && e.len() < 1000, "{}", &e[..1000.min(e.len())]);
    // Short values are quoted whole, escaped so that the message stays on one line.
    let e = error_of(&format!("{BASE}[transport]\nkind = \"ro\\nce\"\n"));
    assert!(e.starts_with("transport.kind: unknown value \"ro\\nce\" (allowed"), "{e}");
    let e = error_of(&format!("{BASE}[transport]\nkind = \"{}\"\n", "é".repeat(64)));
    assert!(e.contains(&format!("\"{}\" (allowed", "é".repeat(64))), "{e}");
}

/// The parser takes its defaults from the schema catalog (one source): every kind of
/// every section parses with its keys left out, and what it parses to is the catalog's
/// word for it where the scenario shows it (a few keys of each kind checked by value).
#[test]
fn every_kind_parses_with_the_catalogs_defaults() {
    use fabricsim_run::schema::{CATALOG, FAULT_KINDS, TOPOLOGY_KINDS, TRANSPORT_KINDS, WORKLOAD_KINDS};
    let workload = |kind: &str| match kind {
        "flows" => "kind = \"flows\"\nflows = [{ src = 0, dst = 1, size = 100 }]".to_string(),
        "incast" => "kind = \"incast\"\nsenders = 2\nsize = 100".to_string(),
        "all_to_allv" => "kind = \"all_to_allv\"\nhosts = 2\nsizes = [[0, 100], [100, 0]]".to_string(),
        "poisson" => "kind = \"poisson\"\ncdf = \"websearch\"\nload = 0.3\nduration = \"10us\"".to_string(),
        "barrier" => "kind = \"barrier\"".to_string(),
        "message_rate" | "rpc" => format!("kind = \"{kind}\"\nclients = 2"),
        "constant_rate" => {
            "kind = \"constant_rate\"\nsrc = 0\ndst = 1\nrate = \"1Gbps\"\nduration = \"10us\"".to_string()
        }
        other => format!("kind = \"{other}\"\nsize = 100"),
    };
    // (An htsim topology needs its file: its own tests parse one.)
    for topo in TOPOLOGY_KINDS.iter().filter(|k| **k != "htsim") {
        for transport in TRANSPORT_KINDS {
            let toml = format!(
                "[topology]\nkind = \"{topo}\"\n[transport]\nkind = \"{transport}\"\n[[workload]]\n{}\n",
                workload("flows")
            );
            let sc = Scenario::from_toml(&toml).unwrap_or_else(|e| panic!("{topo}/{transport}: {e}"));
            assert_eq!(sc.mtu, 4096);
            assert_eq!(sc.seed, 1);
        }
    }
    // (Traces need their files: their own tests parse them.)
    for kind in WORKLOAD_KINDS.iter().filter(|k| !matches!(**k, "chakra" | "htsim")) {
        let toml = format!("[topology]\nkind = \"leaf_spine\"\n[[workload]]\n{}\n", workload(kind));
        Scenario::from_toml(&toml).unwrap_or_else(|e| panic!("{kind}: {e}"));
    }
    for kind in FAULT_KINDS {
        let keys = match *kind {
            "link_flap" => "link = \"leaf[0].up[0]\"\nperiod = \"10us\"\nuntil = \"1ms\"",
            "link_loss" => "link = \"leaf[0].up[0]\"\nloss = 0.1",
            "ev_loss" => "link = \"leaf[0].up[0]\"\nloss = 0.1\nev = 3",
            "switch_down" | "switch_up" => "switch = \"spine[0]\"",
            "delay" => "link = \"leaf[0].up[0]\"\ndelay = \"2us\"",
            "rate" => "link = \"leaf[0].up[0]\"\nrate = \"10Gbps\"",
            _ => "link = \"leaf[0].up[0]\"",
        };
        let toml = format!("[topology]\nkind = \"leaf_spine\"\n[[workload]]\n{}\n[[faults]]\nat = \"1us\"\nkind = \"{kind}\"\n{keys}\n", workload("flows"));
        Scenario::from_toml(&toml).unwrap_or_else(|e| panic!("{kind}: {e}"));
    }
    // A default changed in the catalog reaches the parser: the values above agree with it.
    let default = |section: &str, key: &str| {
        CATALOG.iter().filter(|s| s.section == section).flat_map(|s| s.params).find(|p| p.key == key).unwrap().default
    };
    assert_eq!(default("topology", "mtu"), "4096");
    assert_eq!(default("", "seed"), "1");
}

/// The fabric's sub-tables read their defaults from the catalog; they are the fabric
/// crate's own (HPCC ns-3's), so that `pfc = true` and `pfc = {}` mean the same.
#[test]
fn the_pfc_and_ecn_tables_default_to_the_fabrics_defaults() {
    use fabricsim_fabric::config::{EcnConfig, PfcConfig};
    let base = "[topology]\nkind = \"leaf_spine\"\n[[workload]]\nkind = \"incast\"\nsenders = 2\nsize = 100\n";
    for fabric in ["", "[fabric]\npfc = true\necn = true\n", "[fabric]\npfc = {}\necn = {}\n"] {
        let sc = Scenario::from_toml(&format!("{base}{fabric}")).unwrap();
        assert_eq!(sc.fabric.pfc, Some(PfcConfig::default()), "{fabric}");
        assert_eq!(sc.fabric.ecn, Some(EcnConfig::hpcc()), "{fabric}");
    }
    let sc = Scenario::from_toml(&format!("{base}[fabric]\necn = {{ pmax = 0.5, last_hop = false }}\n")).unwrap();
    assert_eq!(sc.fabric.ecn, Some(EcnConfig { pmax: 0.5, last_hop: false, ..EcnConfig::hpcc() }));
}

/// A traffic mix's flows are known once the run has set the link rate its load is of:
/// the one memory check comes after that, before any flow is drawn, and names the key
/// that sets how many there are.
#[test]
fn a_traffic_mix_too_big_for_memory_is_refused_before_its_flows_are_drawn() {
    let e = error_of(
        "[topology]\nkind = \"fat_tree\"\nk = 16\n[[workload]]\nkind = \"poisson\"\ncdf = \"websearch\"\nload = 0.9\nduration = \"100s\"\n",
    );
    assert!(e.starts_with("workload[0].duration: the connections' and messages' state needs about"), "{e}");
}
