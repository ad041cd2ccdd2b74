//! Jobs: compute gaps released exactly, overlap, stragglers, blocking collectives,
//! placement, parallelism groups, pipeline stages, bursts, bad input.

mod common;

use common::*;
use fabricsim_run::{RunResult, Scenario};

/// 8 hosts under one leaf (no contention), RoCE at line rate, and `jobs` (TOML).
fn leaf(jobs: &str) -> String {
    format!(
        "[topology]\nkind = \"leaf_spine\"\nleaves = 2\nspines = 2\nhosts_per_leaf = 8\n\
         [transport]\nkind = \"roce\"\ncc = \"none\"\n[output]\nsample_interval = \"0us\"\n{jobs}"
    )
}

fn jobs(r: &RunResult, col: &str) -> Vec<i64> {
    col_i64_of(&r.jobs, col)
}

const US: i64 = 1000;

/// A data-parallel job of `ranks` ranks on the first leaf, compute `compute`, an
/// all-reduce of `size` at fraction `at`, `extra` appended to its table.
fn dp_job(ranks: u32, compute: &str, size: &str, at: &str, extra: &str) -> String {
    leaf(&format!(
        "[[jobs]]\nranks = {ranks}\niterations = 3\ncompute = \"{compute}\"\n{extra}\n\
         [[jobs.collectives]]\nkind = \"all_reduce\"\nsize = \"{size}\"\nat = {at}"
    ))
}

#[test]
fn a_collective_after_compute_starts_exactly_when_the_compute_ends() {
    let (_, r) = run(&dp_job(4, "100us", "1MB", "1.0", ""));
    let start = col_i64_of(&r.collectives, "start_ns");
    let finish = col_i64_of(&r.collectives, "finish_ns");
    let step = jobs(&r, "step_ns");
    assert_eq!(start[0], 100 * US, "iteration 0's all-reduce follows 100us of compute");
    for i in 0..3 {
        // Rounded to nanoseconds each.
        assert!((step[i] - (100 * US + finish[i] - start[i])).abs() <= 1, "step = compute + collective");
    }
    assert_eq!(start[1], finish[0] + 100 * US);
    let exposed = jobs(&r, "exposed_comm_ns");
    assert!((0..3).all(|i| (exposed[i] - (finish[i] - start[i])).abs() <= 1), "all of the collective is exposed");
    assert_eq!(jobs(&r, "comm_ns"), jobs(&r, "exposed_comm_ns"));
    assert_eq!(col_u64(&r.jobs, "compute_ns"), vec![100_000; 3]);
    // Marks are no flows: the flow table has the collectives' messages only.
    assert_eq!(r.flows.rows(), 3 * 4 * 6);
    assert_eq!(r.summary["flows"]["total"], 3 * 4 * 6);
}

#[test]
fn compute_hides_a_collective_that_overlaps_it() {
    let (_, r) = run(&dp_job(4, "500us", "1MB", "0.5", ""));
    // The all-reduce (about 90 us) runs from 250 us into each 500 us of compute.
    assert_eq!(jobs(&r, "step_ns"), vec![500 * US; 3]);
    assert_eq!(jobs(&r, "exposed_comm_ns"), vec![0; 3]);
    let comm = jobs(&r, "comm_ns");
    assert!(comm.iter().all(|&c| c > 50 * US && c < 250 * US), "{comm:?}");
    assert_eq!(col_i64_of(&r.collectives, "start_ns"), vec![250 * US, 750 * US, 1250 * US]);
}

#[test]
fn a_straggler_holds_every_rank_and_its_delay_is_not_communication() {
    let base = run(&dp_job(4, "100us", "1MB", "1.0", "")).1;
    let slow = run(&dp_job(4, "100us", "1MB", "1.0", "stragglers = [{ rank = 2, slowdown = 1.5 }]")).1;
    let (b, s) = (jobs(&base, "step_ns"), jobs(&slow, "step_ns"));
    let (be, se) = (jobs(&base, "exposed_comm_ns"), jobs(&slow, "exposed_comm_ns"));
    for i in 0..3 {
        // The slowest rank's extra compute, less the head start it gets when its ring
        // receipts end earlier than the other ranks' (up to 5 us: steps are measured
        // between the last rank's ends).
        assert!(s[i] - b[i] > 45 * US && s[i] - b[i] < 51 * US, "{s:?} {b:?}");
        assert!((se[i] - be[i]).abs() < 5 * US, "{se:?} {be:?}");
    }
    assert_eq!(col_u64(&slow.jobs, "compute_ns"), vec![150_000; 3]);
    // The collective waits for the straggler: its first messages go out at 100 us.
    assert_eq!(col_i64_of(&slow.collectives, "start_ns")[0], 100 * US);
}

#[test]
fn a_blocking_collective_stops_the_compute() {
    let job = |blocking: bool| {
        leaf(&format!(
            "[[jobs]]\nranks = 8\ntp = 2\niterations = 2\ncompute = \"200us\"\n\
             [[jobs.collectives]]\ngroup = \"tp\"\nkind = \"all_reduce\"\nsize = \"2MB\"\nat = 0.5\nblocking = {blocking}\n\
             [[jobs.collectives]]\ngroup = \"dp\"\nkind = \"all_reduce\"\nsize = \"1MB\""
        ))
    };
    let (_, free) = run(&job(false));
    let (_, held) = run(&job(true));
    // 4 tensor groups of 2 and 2 data groups of 4 per iteration.
    assert_eq!(free.collectives.rows(), 2 * (4 + 2));
    let d = col_i64_of(&held.collectives, "duration_ns");
    let (f, h) = (jobs(&free, "step_ns"), jobs(&held, "step_ns"));
    // Held: compute, the tensor all-reduce and the data all-reduce one after the other.
    assert!(h[0] >= 200 * US + d[0] + d[4] - US, "{h:?}: 200 us + {} + {}", d[0], d[4]);
    assert!(f[0] < h[0] - 50 * US, "overlapped {f:?}, held {h:?}");
    let groups = col_u32(&free.collectives, "hosts");
    assert_eq!(&groups[..6], &[2, 2, 2, 2, 4, 4]);
}

#[test]
fn placements_pick_hosts_as_documented() {
    let hosts = |placement: &str| {
        let sc = Scenario::from_toml(&leaf(&format!(
            "[[jobs]]\nranks = 4\nhosts = [8, 9, 10, 11, 12, 13, 14, 15]\nplacement = {placement}\n\
             [[jobs.collectives]]\ngroup = \"world\"\nkind = \"barrier\""
        )))
        .unwrap();
        let sim = fabricsim_run::Sim::new(sc).unwrap();
        sim.plan.jobs[0].hosts.clone()
    };
    assert_eq!(hosts("\"packed\""), vec![8, 9, 10, 11]);
    let random = hosts("\"random\"");
    let mut sorted = random.clone();
    sorted.sort();
    assert_eq!(hosts("\"rerank\""), sorted, "re-ranking orders the same hosts by topology");
    assert!(sorted.iter().all(|h| (8..16).contains(h)));
    assert_eq!(hosts("[3, 1, 2, 0]"), vec![3, 1, 2, 0]);
}

#[test]
fn pipeline_stages_pass_microbatches_forward_and_back() {
    let (_, r) = run(&leaf(
        "[[jobs]]\nranks = 4\npp = 2\nmicrobatches = 3\nactivation = \"100KB\"\ncompute = \"90us\"\n\
         [[jobs.collectives]]\nkind = \"all_reduce\"\nsize = \"1MB\"",
    ));
    // Two pipelines (dp = 2) of 2 stages: 3 activations forward and 3 gradients back
    // each, plus one data-parallel all-reduce per stage.
    let transfers = col_u64(&r.flows, "size_bytes").iter().filter(|&&s| s == 100_000).count();
    assert_eq!(transfers, 2 * 2 * 3);
    assert_eq!(r.collectives.rows(), 2);
    // GPipe: a forward is 10 us, a backward 20 us; with transfers of ~9 us the step is
    // at least (microbatches + stages - 1) x (10 + 20) us.
    let step = jobs(&r, "step_ns")[0];
    assert!(step > 4 * 30 * US, "{step}");
    assert!(jobs(&r, "comm_ns")[0] > 0);
}

#[test]
fn on_off_bursts_start_every_period() {
    let (_, r) = run(&leaf(
        "[[jobs]]\nranks = 4\ncompute = \"20us\"\non_off = { period = \"1ms\", duty = 0.5, bursts = 3 }\n\
         [[jobs.collectives]]\nkind = \"all_reduce\"\nsize = \"400KB\"",
    ));
    let burst = col_u32(&r.jobs, "burst");
    let start = jobs(&r, "start_ns");
    let end = jobs(&r, "end_ns");
    assert!(burst.len() >= 6, "several iterations per burst: {burst:?}");
    for k in 0..3u32 {
        let rows: Vec<usize> = (0..burst.len()).filter(|&i| burst[i] == k).collect();
        assert_eq!(start[rows[0]], k as i64 * 1_000 * US, "burst {k} opens on its period");
        // It fills about half the period (estimated pace) and is off the rest.
        let on = end[*rows.last().unwrap()] - start[rows[0]];
        assert!(on > 250 * US && on < 750 * US, "burst {k} on for {on} ns");
    }
}

#[test]
fn jitter_is_seeded() {
    let sc = dp_job(4, "100us", "1MB", "1.0", "jitter = 0.2");
    let (_, a) = run(&sc);
    let (_, b) = run(&sc);
    assert_eq!(a.jobs, b.jobs);
    let (_, c) = run_scenario(scenario(&sc).with_seed(9));
    assert_ne!(a.jobs, c.jobs);
    let compute = col_u64(&a.jobs, "compute_ns");
    assert!(compute.iter().all(|&c| (100_000..=120_000).contains(&c)), "{compute:?}");
}

#[test]
fn a_job_runs_partitioned_with_the_same_iterations() {
    let sc = dp_job(16, "50us", "2MB", "0.5", "placement = \"random\"");
    let (_, one) = run(&sc);
    let (_, two) = run_scenario(scenario(&sc).with_partitions(2).unwrap());
    assert_eq!(two.summary["flows"]["unfinished"], 0);
    let (a, b) = (jobs(&one, "step_ns"), jobs(&two, "step_ns"));
    for i in 0..3 {
        assert!(rel(a[i] as f64, b[i] as f64) < 0.05, "{a:?} {b:?}");
    }
}

#[test]
fn bad_jobs_are_refused_with_the_key_named() {
    let err = |jobs: &str| match Scenario::from_toml(&leaf(jobs)) {
        Err(e) => e.to_string(),
        Ok(sc) => match fabricsim_run::Sim::new(sc) {
            Err(e) => e.to_string(),
            Ok(_) => panic!("accepted: {jobs}"),
        },
    };
    assert_eq!(
        err("[[jobs]]\nranks = 40"),
        "jobs[0].ranks: 40 ranks but only 16 hosts to place them on (one rank per host)"
    );
    assert_eq!(err("[[jobs]]\nranks = 6\ntp = 4"), "jobs[0].tp: tp x pp (4 x 1 = 4) must divide ranks (6)");
    assert!(err("[[jobs]]\nranks = 8\n[[jobs.collectives]]\ngroup = \"xp\"\nkind = \"all_reduce\"\nsize = 8")
        .starts_with("jobs[0].collectives[0].group: unknown value \"xp\" (allowed: world, dp, tp, pp, ep)"));
    assert!(err("[[jobs]]\nranks = 8\n[[jobs.collectives]]\nkind = \"all_reduce\"\nsize = 800\nat = 1.5")
        .starts_with("jobs[0].collectives[0].at: fractions of the compute are between 0 and 1"));
    assert!(err("[[jobs]]\nranks = 8\n[[jobs.collectives]]\ngroup = \"tp\"\nkind = \"all_reduce\"\nsize = 800")
        .contains("tp groups of this job have 1 rank"));
    assert!(
        err("[[jobs]]\nranks = 2\nplacement = [0, 1, 2]").starts_with("jobs[0].placement: lists 3 hosts for 2 ranks")
    );
    assert!(err("[[jobs]]\nranks = 2\nplacement = \"spread\"").contains("allowed: packed, random, rerank, or a list"));
    assert!(err("[[jobs]]\nranks = 4\npp = 2").starts_with("jobs[0].activation: is required with pp > 1"));
    assert!(err("[[jobs]]\nranks = 4\n[[jobs.collectives]]\nkind = \"all_reduce\"\nsize = \"1MB\"\nhosts = 3")
        .starts_with("jobs[0].collectives[0].hosts: unknown key"));
    assert!(err("[[jobs]]\nranks = 4\non_off = { duty = 0.5 }").starts_with("jobs[0].on_off.period: is required"));
    assert!(err("[[jobs]]\nranks = 4\nstragglers = [{ rank = 9, slowdown = 2 }]")
        .starts_with("jobs[0].stragglers[0].rank: rank 9 does not exist"));
    // A message over RDMA's 2^31 bytes names the job's collectives, not a workload.
    assert!(err("[[jobs]]\nranks = 2\n[[jobs.collectives]]\nkind = \"all_reduce\"\nsize = \"10GB\"\nchannels = 1")
        .starts_with("jobs[0].collectives: makes messages of 5000000000 bytes"));
}

/// A 4-rank job whose containers start with `startup` (TOML keys of [jobs.startup]).
fn started(startup: &str, extra: &str) -> String {
    leaf(&format!(
        "[[jobs]]\nranks = 4\niterations = 2\ncompute = \"100us\"\n{extra}\n[jobs.startup]\n{startup}\n\
         [[jobs.collectives]]\nkind = \"all_reduce\"\nsize = \"64MB\"\nchannels = 1"
    ))
}

fn startup_s(r: &RunResult) -> f64 {
    r.summary["jobs"][0]["startup_ns"].as_f64().unwrap() / 1e9
}

#[test]
fn containers_start_in_seconds_with_pvdma_and_minutes_with_pin_all() {
    // STELLAR Fig. 6: start-up against container memory.
    let mut pv = Vec::new();
    let mut all = Vec::new();
    for mem in ["16GB", "160GB", "1.6TB"] {
        let (_, p) = run(&started(&format!("pinning = \"pvdma\"\nmemory = \"{mem}\""), ""));
        let (_, a) = run(&started(&format!("pinning = \"pin_all\"\nmemory = \"{mem}\""), ""));
        // The first iteration starts once the containers are up.
        assert_eq!(col_i64_of(&p.jobs, "start_ns")[0] as f64 / 1e9, startup_s(&p));
        pv.push(startup_s(&p));
        all.push(startup_s(&a));
    }
    assert!(pv.iter().all(|&s| s < 20.0), "PVDMA under 20 s at every size: {pv:?}");
    assert!((all[2] - 390.0).abs() < 2.0, "pin-all of 1.6 TB about 390 s: {all:?}");
    // Measured 9.8, 44.3, 389.4 s: boot and hypervisor time, then pinning at 232 ms/GB.
    assert!(all[1] > 4.0 * all[0] && all[2] > 8.0 * all[1], "pin-all grows with memory: {all:?}");
    let ratio = all[2] / pv[2];
    assert!((15.0..25.0).contains(&ratio), "up to 15-20x faster: {ratio}");
    // Each rank registers its 64 MB buffers twice and NCCL's staging: a few dozen blocks.
    let (_, p) = run(&started("pinning = \"pvdma\"", ""));
    let blocks = p.summary["jobs"][0]["dma_blocks"].as_u64().unwrap();
    assert_eq!(blocks, 2 * 64_000_000u64.div_ceil(2 << 20) + 4);
}

#[test]
fn a_map_cache_too_small_repins_every_iteration() {
    let (_, fits) = run(&started("pinning = \"pvdma\"", ""));
    let (_, thrash) = run(&started("pinning = \"pvdma\"\nmap_cache = 8", ""));
    let (f, t) = (col_u64(&fits.jobs, "compute_ns"), col_u64(&thrash.jobs, "compute_ns"));
    // 66 blocks of about 0.51 ms each, every iteration.
    assert!(t[1] > f[1] + 30_000_000, "{t:?} against {f:?}");
}

#[test]
fn the_doorbell_hazard_and_device_capacity_are_refused_by_name() {
    let err = |toml: String| fabricsim_run::Sim::new(scenario(&toml)).err().expect("refused").to_string();
    let e = err(started("doorbell = \"0x100001000\"", ""));
    assert!(e.starts_with("jobs[0].startup.doorbell: the doorbell page at 0x100001000 lies in"), "{e}");
    assert!(fabricsim_run::Sim::new(scenario(&started("doorbell = \"shm\"", ""))).is_ok());
    let e = err(started("device = \"vf\"\ncontainers_per_host = 40", ""));
    assert!(e.starts_with("jobs[0].startup.device: host 0 would hold 40 containers"), "{e}");
    assert!(e.contains("at most 8 fit"), "{e}");
    // Nine ranks per host need nine VFs; vSTELLAR devices share one BDF.
    let (_, ok) = run(&started("device = \"vstellar\"\npinning = \"none\"", "ranks_per_host = 4"));
    assert_eq!(startup_s(&ok), 1.5, "a vSTELLAR device is created in 1.5 s");
    let e = err(leaf(
        "[[jobs]]\nranks = 9\nranks_per_host = 9\n[jobs.startup]\ndevice = \"vf\"\n\
         [[jobs.collectives]]\nkind = \"barrier\"",
    ));
    assert!(e.contains("host 0 would hold 9 containers"), "{e}");
}
