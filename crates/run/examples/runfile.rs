//! Runs a scenario file and prints speed figures: `cargo run --release --example
//! runfile -- SCENARIO.toml [--summary]`. For profiling the core without Python;
//! `--summary` also prints the run's whole summary and a digest of every result table
//! (to compare two builds' results).

use fabricsim_run::{run, Scenario};
use std::time::Instant;

// The same heap as the Python package, so that timings compare.
#[global_allocator]
static ALLOC: fabricsim_alloc::Heap = fabricsim_alloc::Heap;

fn main() {
    let path = std::env::args().nth(1).expect("usage: runfile SCENARIO.toml");
    let text = std::fs::read_to_string(&path).expect("readable scenario");
    let sc = Scenario::from_toml(&text).unwrap_or_else(|e| panic!("{e}"));
    let t0 = Instant::now();
    let r = run(sc, &mut |_| true).unwrap_or_else(|e| panic!("{e}"));
    let wall = t0.elapsed().as_secs_f64();
    let s = &r.summary;
    let hops = s["packet_hops"].as_u64().unwrap_or(0) as f64;
    let events = s["events"].as_u64().unwrap_or(0) as f64;
    println!(
        "wall {:.2}s  events {:.0} ({:.2} M/s)  packet-hops {:.0} ({:.2} M/s)  sim {} ns  flows {}/{}  peak pkts {}",
        wall,
        events,
        events / wall / 1e6,
        hops,
        hops / wall / 1e6,
        s["sim_time_ns"],
        s["flows"]["finished"],
        s["flows"]["total"],
        s["peak_packets_in_flight"]
    );
    if std::env::args().any(|a| a == "--summary") {
        println!("{s:#}");
        for (name, t) in r.tables() {
            // SipHash with fixed keys: the same digest for the same table in any run.
            let mut h = std::hash::DefaultHasher::new();
            std::hash::Hash::hash(&format!("{t:?}"), &mut h);
            println!("table {name}: {:016x}", std::hash::Hasher::finish(&h));
        }
    }
}
