//! htsim's fat-tree topology files (`.topo`), read as the fabricsim topology they
//! describe, so a connection matrix runs on the same fabric in both simulators.
//!
//! The format, as htsim's `FatTreeTopology::load` reads it (our own parser): a header
//! of `Nodes N`, `Tiers T` (2 or 3) and `Podsize P`, then a block per tier (`Tier 0`
//! is the ToRs, `Tier 1` the aggregation or spine switches, `Tier 2` the cores) of
//! `Downlink_speed_Gbps`, `Radix_Down`, `Radix_Up` (not on the top tier),
//! `Downlink_Latency_ns`, and optionally `Switch_Latency_ns`, `Oversubscribed` and
//! `Bundle` (parallel links to the tier below); `Queue_Down` and `Queue_Up` (per-port
//! queue bytes, newer htsim) are read and ignored, since fabricsim's switches share one
//! buffer (`switch_buffer`). Keys are case-insensitive; `#` starts a comment line; an
//! unknown key is refused (htsim skips it silently).
//!
//! ```text
//! Nodes 32
//! Tiers 2
//! Podsize 32
//! Tier 0
//! Downlink_speed_Gbps 100
//! Radix_Down 8
//! Radix_Up 2
//! Downlink_Latency_ns 1000
//! Oversubscribed 4
//! Tier 1
//! Downlink_speed_Gbps 100
//! Radix_Down 4
//! Downlink_Latency_ns 1000
//! ```
//!
//! The switch counts follow htsim's `set_custom_params`: `Nodes / Radix_Down(0)` ToRs
//! (`Podsize / Radix_Down(0)` per pod), ToR uplinks `Nodes x speed(0) / (speed(1) x
//! Oversubscribed(0))` shared by `uplinks / (pods x Radix_Down(1))` aggregation switches
//! per pod, every ToR linked to every aggregation switch of its pod (of every pod with
//! two tiers), and `agg uplinks / Radix_Down(2)` cores. Two tiers become a
//! `leaf_spine`, three a `fat_tree` (`k` = twice the ToRs per pod, `hosts_per_edge` =
//! `Radix_Down(0)`, `oversubscription` from the aggregation switches' core uplinks);
//! what those cannot express is refused naming the line and key: parallel links
//! (`Bundle` above 1), per-tier link latencies that differ (fabricsim has one
//! `link_delay`), a switch latency, aggregation and core links of different speeds
//! (one `fabric_link`), and pods that are not a k-ary fat-tree's (as many ToRs as
//! aggregation switches, every core reaching every pod once). htsim numbers its
//! cores by stripe (aggregation switch `a` reaches cores `a`, `a + A`, ...) and
//! fabricsim by group (`a x u` to `a x u + u - 1`): the fabrics are the same up to the
//! cores' numbering.

use crate::topology::TopologySpec;
use fabricsim_engine::{Dur, Rate};

/// What a `.topo` file describes, as a fabricsim topology.
#[derive(Clone, Debug, PartialEq)]
pub struct HtsimTopology {
    /// The topology.
    pub spec: TopologySpec,
    /// Host links: tier 0's downlink speed.
    pub host_link: Rate,
    /// Switch-to-switch links: tier 1's downlink speed.
    pub fabric_link: Rate,
    /// Every link's delay: the tiers' `Downlink_Latency_ns`.
    pub delay: Dur,
}

/// One tier's block, each key with the line it was on.
#[derive(Clone, Copy, Default)]
struct Tier {
    line: usize,
    speed: Option<(u64, usize)>,
    radix_down: Option<(u64, usize)>,
    radix_up: Option<(u64, usize)>,
    latency: Option<(u64, usize)>,
    switch_latency: Option<(u64, usize)>,
    oversub: Option<(u64, usize)>,
    bundle: Option<(u64, usize)>,
}

/// Parses `text`. Errors give the line and key, e.g. `line 7, Radix_Down: expected a
/// number, got "eight"`.
pub fn parse(text: &str) -> Result<HtsimTopology, String> {
    let mut nodes = None;
    let mut tiers_n = None;
    let mut podsize = None;
    let mut tiers: [Option<Tier>; 3] = [None; 3];
    let mut current: Option<usize> = None;
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let toks: Vec<&str> = raw.split_whitespace().collect();
        let Some(&first) = toks.first() else { continue };
        if first.starts_with('#') {
            continue;
        }
        let value = || -> Result<u64, String> {
            let v = toks.get(1).ok_or_else(|| format!("line {line}, {first}: missing value"))?;
            v.parse().map_err(|_| format!("line {line}, {first}: expected a whole number, got \"{v}\""))
        };
        let key = first.to_ascii_lowercase();
        let set = |slot: &mut Option<(u64, usize)>, v: u64| -> Result<(), String> {
            if slot.replace((v, line)).is_some() {
                return Err(format!("line {line}, {first}: given twice for this tier"));
            }
            Ok(())
        };
        match key.as_str() {
            "nodes" => nodes = Some((value()?, line)),
            "tiers" => tiers_n = Some((value()?, line)),
            "podsize" => podsize = Some((value()?, line)),
            "tier" => {
                let t = value()?;
                if t > 2 {
                    return Err(format!("line {line}, Tier: expected 0, 1 or 2, got {t}"));
                }
                if tiers[t as usize].is_some() {
                    return Err(format!("line {line}, Tier: tier {t} is described twice"));
                }
                tiers[t as usize] = Some(Tier { line, ..Tier::default() });
                current = Some(t as usize);
            }
            _ => {
                let Some(t) = current else {
                    return Err(format!(
                        "line {line}: \"{first}\" before any \"Tier\" line (the header has Nodes, Tiers and Podsize)"
                    ));
                };
                let tier = tiers[t].as_mut().expect("current tier exists");
                const KEYS: [&str; 9] = [
                    "queue_down",
                    "queue_up",
                    "downlink_speed_gbps",
                    "radix_down",
                    "radix_up",
                    "downlink_latency_ns",
                    "switch_latency_ns",
                    "oversubscribed",
                    "bundle",
                ];
                let v = if KEYS.contains(&key.as_str()) { value()? } else { 0 };
                match key.as_str() {
                    "downlink_speed_gbps" => set(&mut tier.speed, v)?,
                    "radix_down" => set(&mut tier.radix_down, v)?,
                    "radix_up" => set(&mut tier.radix_up, v)?,
                    "downlink_latency_ns" => set(&mut tier.latency, v)?,
                    "switch_latency_ns" => set(&mut tier.switch_latency, v)?,
                    "oversubscribed" => set(&mut tier.oversub, v)?,
                    "bundle" => set(&mut tier.bundle, v)?,
                    "queue_down" | "queue_up" => {}
                    _ => {
                        return Err(format!(
                            "line {line}: unknown key \"{first}\" (allowed: Nodes, Tiers, Podsize, Tier, Downlink_speed_Gbps, Radix_Down, Radix_Up, Downlink_Latency_ns, Switch_Latency_ns, Oversubscribed, Bundle, Queue_Down, Queue_Up)"
                        ))
                    }
                }
            }
        }
    }
    let (n, _) = nodes.filter(|n| n.0 > 0).ok_or("no \"Nodes N\" line (N above 0)")?;
    let (t, tline) = tiers_n.ok_or("no \"Tiers T\" line")?;
    if !(2..=3).contains(&t) {
        return Err(format!("line {tline}, Tiers: expected 2 or 3, got {t}"));
    }
    let (pod, pline) = podsize.filter(|p| p.0 > 0).ok_or("no \"Podsize P\" line (P above 0)")?;
    let t = t as usize;
    let mut tier = [Tier::default(); 3];
    for (k, slot) in tiers.iter().enumerate().take(t) {
        tier[k] = slot.ok_or_else(|| format!("no \"Tier {k}\" block (Tiers {t})"))?;
    }
    if let Some(extra) = tiers[t..].iter().flatten().next() {
        return Err(format!("line {}, Tier: a block for a tier beyond Tiers {t}", extra.line));
    }
    // Required keys, and what fabricsim cannot express.
    let need = |k: usize, v: Option<(u64, usize)>, key: &str| -> Result<(u64, usize), String> {
        v.filter(|v| v.0 > 0).ok_or_else(|| format!("line {}, Tier {k}: no {key} (above 0)", tier[k].line))
    };
    let mut speed = [0u64; 3];
    let mut down = [0u64; 3];
    let mut latency = None;
    for k in 0..t {
        speed[k] = need(k, tier[k].speed, "Downlink_speed_Gbps")?.0;
        down[k] = need(k, tier[k].radix_down, "Radix_Down")?.0;
        let (l, lline) = need(k, tier[k].latency, "Downlink_Latency_ns")?;
        match latency {
            None => latency = Some(l),
            Some(l0) if l0 != l => {
                return Err(format!(
                    "line {lline}, Downlink_Latency_ns: {l} ns where tier 0 has {l0} ns; fabricsim has one link_delay for every link"
                ))
            }
            _ => {}
        }
        if let Some((s, sline)) = tier[k].switch_latency.filter(|s| s.0 > 0) {
            return Err(format!(
                "line {sline}, Switch_Latency_ns: {s} ns; fabricsim's switches forward in no time (give 0 or leave it out)"
            ));
        }
        if let Some((b, bline)) = tier[k].bundle.filter(|b| b.0 != 1) {
            return Err(format!(
                "line {bline}, Bundle: {b} parallel links; fabricsim joins two switches by one link (give 1)"
            ));
        }
        if k + 1 < t {
            need(k, tier[k].radix_up, "Radix_Up")?;
        } else if let Some((_, uline)) = tier[k].radix_up {
            return Err(format!("line {uline}, Radix_Up: the top tier has no uplinks"));
        }
    }
    if t == 3 && speed[2] != speed[1] {
        return Err(format!(
            "line {}, Downlink_speed_Gbps: cores' links at {} Gb/s, aggregation switches' at {}; fabricsim has one fabric_link rate",
            tier[2].speed.expect("checked").1,
            speed[2],
            speed[1]
        ));
    }
    let oversub = |k: usize| tier[k].oversub.map_or(1, |o| o.0.max(1));
    let whole = |num: u64, den: u64, what: &str, line: usize, key: &str| -> Result<u64, String> {
        if den == 0 || !num.is_multiple_of(den) {
            return Err(format!("line {line}, {key}: {what} is not a whole number ({num} / {den})"));
        }
        Ok(num / den)
    };
    let dline = tier[0].radix_down.expect("checked").1;
    if pod > n || n % pod != 0 {
        return Err(format!("line {pline}, Podsize: {pod} does not divide Nodes {n}"));
    }
    let pods = n / pod;
    let tors_per_pod = whole(pod, down[0], "ToRs per pod (Podsize / Radix_Down)", dline, "Radix_Down")?;
    let tors = tors_per_pod * pods;
    let oline = tier[0].oversub.map_or(tier[0].line, |o| o.1);
    let tor_uplinks = whole(
        n * speed[0],
        speed[1] * oversub(0),
        "ToR uplinks (Nodes x speed / (speed above x Oversubscribed))",
        oline,
        "Oversubscribed",
    )?;
    let d1line = tier[1].radix_down.expect("checked").1;
    let (tor_up, u0line) = tier[0].radix_up.expect("checked");
    let gbps = |g: u64| Rate::gbps(g);
    let fits = |v: u64, key: &str, line: usize| -> Result<u32, String> {
        u32::try_from(v).ok().filter(|&v| v <= 1 << 20).ok_or_else(|| format!("line {line}, {key}: {v} is too large"))
    };
    let spec = if t == 2 {
        // Every ToR has a link to every spine.
        let spines = whole(tor_uplinks, down[1], "spines (ToR uplinks / Radix_Down)", d1line, "Radix_Down")?;
        if down[1] != tors {
            return Err(format!(
                "line {d1line}, Radix_Down: {} downlinks per spine, but there are {tors} ToRs and each has one link to every spine",
                down[1]
            ));
        }
        if tor_up != spines {
            return Err(format!(
                "line {u0line}, Radix_Up: {} uplinks per ToR, but the file makes {spines} spines and each ToR has one link to every spine",
                tor_up
            ));
        }
        TopologySpec::LeafSpine {
            leaves: fits(tors, "Nodes", dline)?,
            spines: fits(spines, "Radix_Down", d1line)?,
            hosts_per_leaf: fits(down[0], "Radix_Down", dline)?,
        }
    } else {
        let aggs_per_pod = whole(
            tor_uplinks,
            pods * down[1],
            "aggregation switches per pod (ToR uplinks / (pods x Radix_Down))",
            d1line,
            "Radix_Down",
        )?;
        if aggs_per_pod != tors_per_pod || down[1] != tors_per_pod {
            return Err(format!(
                "line {d1line}, Radix_Down: {aggs_per_pod} aggregation switches and {tors_per_pod} ToRs per pod, {} downlinks per aggregation switch; a k-ary fat-tree has as many of each, every ToR linked to every aggregation switch of its pod",
                down[1]
            ));
        }
        if tor_up != aggs_per_pod {
            return Err(format!(
                "line {u0line}, Radix_Up: {} uplinks per ToR, but each ToR has one link to each of the {aggs_per_pod} aggregation switches of its pod",
                tor_up
            ));
        }
        let (up1, u1line) = tier[1].radix_up.expect("checked");
        let agg_uplinks = whole(
            tor_uplinks * speed[1],
            speed[2] * oversub(1),
            "aggregation uplinks",
            tier[1].oversub.map_or(tier[1].line, |o| o.1),
            "Oversubscribed",
        )?;
        let half = tors_per_pod;
        if up1 * tors != agg_uplinks || up1 == 0 || half % up1 != 0 {
            return Err(format!(
                "line {u1line}, Radix_Up: {up1} core uplinks per aggregation switch; a fat-tree's must divide the {half} aggregation switches per pod and agree with Oversubscribed ({agg_uplinks} aggregation uplinks in all)"
            ));
        }
        let d2line = tier[2].radix_down.expect("checked").1;
        if down[2] != pods || agg_uplinks != down[2] * half * up1 {
            return Err(format!(
                "line {d2line}, Radix_Down: {} downlinks per core with {pods} pods; a fat-tree's core reaches every pod once",
                down[2]
            ));
        }
        TopologySpec::FatTree {
            k: fits(2 * half, "Podsize", pline)?,
            pods: fits(pods, "Podsize", pline)?,
            hosts_per_edge: fits(down[0], "Radix_Down", dline)?,
            oversubscription: fits(half / up1, "Radix_Up", u1line)?,
        }
    };
    Ok(HtsimTopology {
        spec,
        host_link: gbps(speed[0]),
        fabric_link: gbps(speed[1]),
        delay: Dur::from_ns(latency.expect("two tiers at least")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const TINY: &str = "Nodes 32\nTiers 2\nPodsize 32\n\nTier 0\nDownlink_speed_Gbps 100\nRadix_Down 8\nRadix_Up 2\n\
        Downlink_Latency_ns 1000\nSwitch_Latency_ns 0\nOversubscribed 4\n\nTier 1\nDownlink_speed_Gbps 100\n\
        Radix_Down 4\nDownlink_Latency_ns 1000\nSwitch_Latency_ns 0\n";

    #[test]
    fn a_two_tier_file_is_a_leaf_spine() {
        let t = parse(TINY).unwrap();
        assert_eq!(t.spec, TopologySpec::LeafSpine { leaves: 4, spines: 2, hosts_per_leaf: 8 });
        assert_eq!((t.host_link, t.fabric_link, t.delay), (Rate::gbps(100), Rate::gbps(100), Dur::from_us(1)));
        // Newer htsim's per-port queue sizes are read and ignored.
        let queues = TINY.replace("Radix_Up 2\n", "Radix_Up 2\nQueue_Up 150000\nQueue_Down 150000\n");
        assert_eq!(parse(&queues).unwrap(), t);
    }

    #[test]
    fn a_three_tier_file_is_a_fat_tree() {
        // htsim's fat_tree_1024.topo: 16 pods of 8 ToRs and 8 aggregation switches, 64
        // cores: the k = 16 fat-tree.
        let t = parse(
            "# a comment\nNodes 1024\nTiers 3\nPodsize 64\n\nTier 0\nOversubscribed 1\nDownlink_speed_Gbps 100\n\
             Radix_Down 8\nRadix_Up 8\nDownlink_Latency_ns 1000\nSwitch_Latency_ns 0\n\nTier 1\nOversubscribed 1\n\
             Downlink_speed_Gbps 100\nRadix_Down 8\nRadix_Up 8\nDownlink_Latency_ns 1000\nSwitch_Latency_ns 0\nBundle 1\n\n\
             Tier 2\nDownlink_speed_Gbps 100\nRadix_Down 16\nDownlink_Latency_ns 1000\nSwitch_Latency_ns 0\nBundle 1",
        )
        .unwrap();
        assert_eq!(t.spec, TopologySpec::FatTree { k: 16, pods: 16, hosts_per_edge: 8, oversubscription: 1 });
        // Half the core uplinks: oversubscription 2 at the aggregation tier.
        let t = parse(
            "Nodes 16\nTiers 3\nPodsize 4\nTier 0\nDownlink_speed_Gbps 100\nRadix_Down 2\nRadix_Up 2\nDownlink_Latency_ns 500\n\
             Tier 1\nDownlink_speed_Gbps 100\nRadix_Down 2\nRadix_Up 1\nOversubscribed 2\nDownlink_Latency_ns 500\n\
             Tier 2\nDownlink_speed_Gbps 100\nRadix_Down 4\nDownlink_Latency_ns 500\n",
        )
        .unwrap();
        assert_eq!(t.spec, TopologySpec::FatTree { k: 4, pods: 4, hosts_per_edge: 2, oversubscription: 2 });
        assert_eq!(t.delay, Dur::from_ns(500));
    }

    #[test]
    fn what_fabricsim_cannot_build_is_refused_by_line_and_key() {
        let e = |s: &str| parse(s).unwrap_err();
        // htsim's zrs.topo: three parallel links per core and a 600 us core tier.
        let zrs = "Nodes 432\nTiers 3\nPodsize 36\n\nTier 0\nDownlink_speed_Gbps 100\nRadix_Down 6\nRadix_Up 6\n\
            Downlink_Latency_ns 1000\n\nTier 1\nDownlink_speed_Gbps 100\nRadix_Down 6\nRadix_Up 6\nDownlink_Latency_ns 1000\n\n\
            Tier 2\nDownlink_speed_Gbps 100\nRadix_Down 36\nDownlink_Latency_ns 600000\nBundle 3";
        assert_eq!(
            e(zrs),
            "line 20, Downlink_Latency_ns: 600000 ns where tier 0 has 1000 ns; fabricsim has one link_delay for every link"
        );
        assert!(e(&zrs.replace("600000", "1000")).starts_with("line 21, Bundle: 3 parallel links"));
        assert_eq!(
            e(&TINY.replace("Radix_Down 8", "Radix_Down eight")),
            "line 7, Radix_Down: expected a whole number, got \"eight\""
        );
        assert!(e(&TINY.replace("Switch_Latency_ns 0\nOversubscribed", "Switch_Latency_ns 300\nOversubscribed"))
            .starts_with("line 10, Switch_Latency_ns: 300 ns"));
        assert!(e(&TINY.replace("Radix_Up 2", "Radix_Up 3")).starts_with("line 8, Radix_Up: 3 uplinks per ToR"));
        assert!(e(&TINY.replace("Tiers 2", "Tiers 4")).starts_with("line 2, Tiers: expected 2 or 3"));
        assert!(e(&TINY.replace("Radix_Up 2", "Colour red")).starts_with("line 8: unknown key \"Colour\""));
        assert!(e("Nodes 4\n").contains("no \"Tiers T\" line"));
    }
}
