//! Datacenter traffic mixes: Poisson arrivals at a target load, FCT slowdown by size.

mod common;

use common::*;
use fabricsim_run::Scenario;

fn mix(cdf: &str, load: f64, extra: &str) -> String {
    format!(
        "seed = 3\n[topology]\nkind = \"leaf_spine\"\nleaves = 4\nspines = 4\nhosts_per_leaf = 4\n\
         [output]\nsample_interval = \"0us\"\n\
         [[workload]]\nkind = \"poisson\"\ncdf = \"{cdf}\"\nload = {load}\nduration = \"2ms\"\n{extra}"
    )
}

#[test]
fn a_mix_offers_its_load_and_reports_slowdown_by_size() {
    let (_, r) = run(&mix("alistorage", 0.3, ""));
    let offered = r.summary["bytes_offered"].as_u64().unwrap() as f64;
    let want = 0.3 * 16.0 * 100e9 / 8.0 * 0.002;
    // About 2900 flows of a heavy-tailed size (a coefficient of variation near 5): the
    // sum's standard deviation is about 9 % (the mix's own test checks 0.4 within 2 %
    // over ten times as many flows).
    assert!((offered / want - 1.0).abs() < 0.25, "offered {offered} against {want}");
    assert_eq!(offered as u64, col_u64(&r.flows, "size_bytes").iter().sum::<u64>());
    assert_eq!(r.summary["flows"]["unfinished"], 0);
    let buckets = r.summary["slowdown_by_size"].as_array().unwrap();
    let total: u64 = buckets.iter().map(|b| b["flows"].as_u64().unwrap()).sum();
    assert_eq!(total, r.summary["flows"]["total"].as_u64().unwrap());
    assert_eq!(buckets[0]["bucket"], "<=1KB");
    assert!(buckets.iter().any(|b| b["bucket"] == "1MB-10MB"), "alistorage reaches 2 MB");
    for b in buckets {
        assert!(b["p50"].as_f64().unwrap() >= 0.99 && b["p99"].as_f64().unwrap() >= b["p50"].as_f64().unwrap());
    }
}

#[test]
fn slowdown_grows_with_load() {
    let mean = |load: f64| {
        let (_, r) = run(&mix("websearch", load, ""));
        r.summary["slowdown"]["p99"].as_f64().unwrap()
    };
    let (low, high) = (mean(0.2), mean(0.8));
    assert!(high > 1.5 * low, "p99 slowdown {low} at 20 % load, {high} at 80 %");
}

#[test]
fn groups_keep_flows_inside_and_a_csv_can_give_the_sizes() {
    let dir = std::env::temp_dir().join(format!("fabricsim-mix-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("sizes.csv"), "bytes,percent\n0,0\n4000,50\n64000,100\n").unwrap();
    let sc = Scenario::from_toml_in(&mix("sizes.csv", 0.5, "groups = [[0, 1, 2, 3], [8, 9]]"), &dir).unwrap();
    let (_, r) = run_scenario(sc);
    let (src, dst) = (col_u32(&r.flows, "src"), col_u32(&r.flows, "dst"));
    assert!(!src.is_empty());
    for (s, d) in src.iter().zip(&dst) {
        assert_eq!(*s < 4, *d < 4, "{s} -> {d}");
        assert!(*s < 4 || (8..10).contains(s));
    }
    assert!(col_u64(&r.flows, "size_bytes").iter().all(|&b| (1..=64_000).contains(&b)));
    std::fs::write(dir.join("bad.csv"), "0 0\n100 60\n50 100\n").unwrap();
    let e = Scenario::from_toml_in(&mix("bad.csv", 0.5, ""), &dir).unwrap_err().to_string();
    assert_eq!(e, "workload[0].cdf: bad.csv: line 3: sizes and percents must both increase from one point to the next");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn bad_mixes_are_refused_with_the_key_named() {
    let err = |t: &str| Scenario::from_toml(t).unwrap_err().to_string();
    assert!(err(&mix("websurf", 0.5, "")).starts_with(
        "workload[0].cdf: unknown value \"websurf\" (allowed: websearch, fb_hadoop, alistorage, or a CSV"
    ));
    assert!(err(&mix("websearch", 1.5, "")).starts_with("workload[0].load: must be between"));
    assert!(err(&mix("websearch", 0.5, "").replace("duration = \"2ms\"\n", ""))
        .starts_with("workload[0].duration: is required"));
    let e = fabricsim_run::Sim::new(scenario(&mix("websearch", 0.5, "groups = [[0, 99]]"))).err().unwrap().to_string();
    assert!(e.starts_with("workload[0].groups[0]: host 99 does not exist"), "{e}");
}
