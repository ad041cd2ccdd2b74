"""MRC + SRv6 (OpenAI, Microsoft, AMD, Broadcom, NVIDIA): the experiments of its
section 5.2 on a multi-plane two-tier Clos with static SRv6 routing.

Fabric settings follow the paper: PFC off, packet trimming on, ECN randomised in the
fabric but off on the last hop, SRv6 uSID source routing. Scale is set by the
arguments; the paper's clusters are 4 x 100G / 8 x 100G / 4 x 200G NICs.
"""

from __future__ import annotations

import random
from typing import Any, Dict, List, Optional

from ..api import run
from .common import flow_gbps, jain

#: Fabric of every MRC scenario.
FABRIC = {
    "pfc": False,
    "trimming": True,
    "routing": "srv6",
    "ecn": {"kmin": "20KB", "kmax": "100KB", "pmax": 0.2, "last_hop": False},
}


def multi_plane(planes: int = 4, groups: int = 4, hosts_per_group: int = 4, t1_per_plane: int = 4, rate: str = "100Gbps") -> Dict[str, Any]:
    """A multi-plane two-tier Clos: ``planes`` NIC ports of ``rate`` per host."""
    return {"kind": "multi_plane", "planes": planes, "groups": groups, "hosts_per_group": hosts_per_group,
            "t1_per_plane": t1_per_plane, "host_link": rate}


def planes_vs_tiers(design: str, workload: Dict[str, Any], fail_at_us: Optional[int] = None, seed: int = 1) -> Dict[str, Any]:
    """Section 2 / Fig. 1: the same 16 hosts, 800 Gb/s each, full bisection, built as a
    3-tier single-plane fat-tree of 800G links (``design="tiers"``: k = 4, five switches
    on the longest path) or as a 2-tier Clos of eight 100G planes (``"planes"``: 4 groups
    of 4 hosts, 4 T1 per plane, three switches). MRC with static SRv6 on both. With
    ``fail_at_us``, one uplink of the first T0 (edge) switch dies at that time: half of
    that edge's uplink capacity in the fat-tree, a quarter of one plane's uplinks of
    that T0 (1/32 of the group's) in the multi-plane Clos."""
    if design == "tiers":
        topo = {"kind": "fat_tree", "k": 4, "host_link": "800Gbps", "fabric_link": "800Gbps"}
        uplink = "edge[0].up[0]"
    elif design == "planes":
        topo = multi_plane(planes=8, groups=4, hosts_per_group=4, t1_per_plane=4)
        uplink = "t0[0].up[0]"
    else:
        raise ValueError(f"design: {design!r} (allowed: tiers, planes)")
    sc = {"name": f"mrc-{design}", "seed": seed, "topology": topo, "fabric": FABRIC, "transport": {"kind": "mrc"},
          "workload": workload, "output": {"sample_interval": "0us"}}
    if fail_at_us is not None:
        sc["faults"] = [{"at": f"{fail_at_us}us", "kind": "link_down", "link": uplink}]
    return sc


def nic_link_failures(size: str = "60MB", step_us: int = 200, **topo) -> Dict[str, Any]:
    """Fig. 9a/b: one flow between groups; the sender's NIC-T0 links fail one by one
    (the third on the receiver's side, which the sender learns from SACK port bitmaps),
    then recover in the same order."""
    t = multi_plane(**topo)
    last = t["groups"] * t["hosts_per_group"] - 1
    order = [("host[0].nic[0]"), ("host[0].nic[1]"), (f"host[{last}].nic[2]")]
    faults = [{"at": f"{step_us * (i + 1)}us", "kind": "link_down", "link": l} for i, l in enumerate(order)]
    faults += [{"at": f"{step_us * (i + 4)}us", "kind": "link_up", "link": l} for i, l in enumerate(order)]
    return {"name": "mrc-nic-link-failures", "topology": t, "fabric": FABRIC, "transport": {"kind": "mrc"},
            "workload": {"kind": "flows", "flows": [{"src": 0, "dst": last, "size": size}]},
            "faults": faults, "output": {"sample_interval": "20us"}}


def link_flaps(kind: str, size: str = "120MB", at_us: int = 200, for_us: int = 400, **topo) -> Dict[str, Any]:
    """Fig. 9b/9d: one flow between groups on 8 x 100G planes while several cables go
    down together at ``at_us`` and come back ``for_us`` later. ``kind``: ``"nic"``, four
    of the sender's eight NIC links (a shared OSFP port or transceiver, Fig. 9b), or
    ``"t0_t1"``, one uplink of the sender's T0 in every plane, eight T0-T1 links at once
    (a switch transceiver flap, Fig. 9d)."""
    t = multi_plane(**{"planes": 8, "groups": 2, "hosts_per_group": 4, "t1_per_plane": 4, **topo})
    if kind == "nic":
        links = [f"host[0].nic[{i}]" for i in range(4)]
    elif kind == "t0_t1":
        links = [f"t0[{p * t['groups']}].up[0]" for p in range(t["planes"])]
    else:
        raise ValueError(f"kind: {kind!r} (allowed: nic, t0_t1)")
    last = t["groups"] * t["hosts_per_group"] - 1
    faults = [{"at": f"{at_us}us", "kind": "link_down", "link": l} for l in links]
    faults += [{"at": f"{at_us + for_us}us", "kind": "link_up", "link": l} for l in links]
    return {"name": f"mrc-flaps-{kind}", "topology": t, "fabric": FABRIC, "transport": {"kind": "mrc"},
            "workload": {"kind": "flows", "flows": [{"src": 0, "dst": last, "size": size}]},
            "faults": faults, "output": {"sample_interval": "20us"}}


def t0_uplink_failures(size: str = "60MB", step_us: int = 200, together: bool = False) -> Dict[str, Any]:
    """Appendix Fig. 19b/c: one flow between racks over a single plane, a 400G NIC and
    four 100G T0-T1 uplinks, so that the uplinks are the bottleneck. Three of the
    sender's T0 uplinks fail one by one (``together``: two at once), then recover.
    Time is compressed (``step_us`` instead of seconds), and so is the cap on the
    probe backoff of the EVs through dead links (400 us instead of 10 ms), so that
    a restored link is found again within a step as it is within seconds. Switches
    trim above 400 KB of queue: behind the 4:1 bottleneck, trimming only when the
    buffer is full lets queues reach milliseconds, and packets late by an RTO retire
    healthy paths."""
    t = multi_plane(planes=1, groups=2, hosts_per_group=2, t1_per_plane=4, rate="400Gbps")
    t["fabric_link"] = "100Gbps"
    links = ["t0[0].up[0]", "t0[0].up[1]"] if together else ["t0[0].up[0]", "t0[0].up[1]", "t0[0].up[2]"]
    if together:
        faults = [{"at": f"{step_us}us", "kind": "link_down", "link": l} for l in links]
        faults += [{"at": f"{3 * step_us}us", "kind": "link_up", "link": l} for l in links]
    else:
        faults = [{"at": f"{step_us * (i + 1)}us", "kind": "link_down", "link": l} for i, l in enumerate(links)]
        faults += [{"at": f"{step_us * (i + 4)}us", "kind": "link_up", "link": l} for i, l in enumerate(links)]
    return {"name": "mrc-t0-uplink-failures", "topology": t, "fabric": dict(FABRIC, trimming={"threshold": "400KB"}),
            "transport": {"kind": "mrc", "probe_backoff_max": "400us"},
            "workload": {"kind": "flows", "flows": [{"src": 0, "dst": 3, "size": size}]},
            "faults": faults, "output": {"sample_interval": "20us"}}


def t0_t1_failures(links_per_t0: int = 2, size: str = "20MB", at_us: int = 100, planes: int = 4, groups: int = 8,
                   hosts_per_group: int = 2, t1_per_plane: int = 8) -> Dict[str, Any]:
    """Fig. 9c/d: many T0-T1 links fail at once (``links_per_t0`` uplinks of every T0),
    under a permutation. T0s have spare uplinks, as in production (256 up for 256 down
    at 100 Gb/s there; here ``t1_per_plane`` up for ``hosts_per_group`` down)."""
    faults = [{"at": f"{at_us}us", "kind": "link_down", "link": f"t0[{p * groups + g}].up[{u}]"}
              for p in range(planes) for g in range(groups) for u in range(links_per_t0)]
    return {"name": "mrc-t0-t1-failures", "topology": multi_plane(planes, groups, hosts_per_group, t1_per_plane), "fabric": FABRIC,
            "transport": {"kind": "mrc"}, "workload": {"kind": "permutation", "size": size}, "faults": faults,
            "output": {"sample_interval": "0us"}}


def ev_drop(ev: Optional[int], loss: float = 0.2, size: str = "20MB", evs: int = 16, **topo) -> Dict[str, Any]:
    """Fig. 12/13: packets of one entropy value are dropped with probability ``loss`` on
    the sender's first link from 100 us on (``ev=None``: no fault, to learn the EVs)."""
    t = multi_plane(**topo)
    last = t["groups"] * t["hosts_per_group"] - 1
    sc = {"name": "mrc-ev-drop", "topology": t, "fabric": FABRIC, "transport": {"kind": "mrc", "evs": evs},
          "workload": {"kind": "flows", "flows": [{"src": 0, "dst": last, "size": size}]}, "output": {"sample_interval": "20us"}}
    if ev is not None:
        sc["faults"] = [{"at": "100us", "kind": "ev_loss", "link": "host[0].nic[0]", "ev": ev, "loss": loss}]
    return sc


def forced_collision(seed: int, size: str = "20MB", stop: Optional[str] = None) -> Dict[str, Any]:
    """Fig. 14: two flows with one active EV each between the same two leaves (two
    spines); a seed whose EVs start on the same spine forces them onto one path."""
    sc = {"name": "mrc-forced-collision", "seed": seed,
          "topology": {"kind": "leaf_spine", "leaves": 2, "spines": 2, "hosts_per_leaf": 2},
          "fabric": FABRIC, "transport": {"kind": "mrc", "evs": 1, "backup": 4},
          "workload": {"kind": "flows", "flows": [{"src": 0, "dst": 2, "size": size}, {"src": 1, "dst": 3, "size": size}]},
          "output": {"sample_interval": "20us"}}
    if stop:
        sc["stop"] = stop
    return sc


def colliding_seed(limit: int = 100) -> int:
    """The first seed whose two Fig. 14 flows start on the same spine uplink."""
    for seed in range(1, limit):
        r = run(forced_collision(seed, stop="10us"))
        up = r.ports[r.ports["port"].str.startswith("leaf[0].up")]
        if up.groupby("port", observed=True)["tx_bytes"].sum().gt(0).sum() == 1:
            return seed
    raise RuntimeError("no colliding seed found")


def incast_victim(transport: str, size: str = "8MB", buffer: str = "4MB") -> Dict[str, Any]:
    """Fig. 18/21: a 7:1 incast into host 0 beside a victim flow into host 1 in the same
    rack (4 racks x 4 hosts, 4 spines). RoCE runs on a lossless PFC fabric with DCQCN;
    MRC on the lossy trimming fabric."""
    fabric = {"pfc": True, "ecn": True} if transport == "roce" else FABRIC
    return {"name": f"incast-victim-{transport}",
            "topology": {"kind": "leaf_spine", "leaves": 4, "spines": 4, "hosts_per_leaf": 4, "switch_buffer": buffer},
            "fabric": fabric, "transport": {"kind": transport},
            "workload": [{"kind": "incast", "senders": [4, 5, 6, 7, 8, 9, 10], "receiver": 0, "size": size},
                         {"kind": "flows", "flows": [{"src": 12, "dst": 1, "size": size}]}],
            "output": {"sample_interval": "0us"}}


def victim_and_incast(r) -> Dict[str, float]:
    """Victim throughput (Gb/s) and the incast flows' Jain index."""
    f = r.flows
    victim = flow_gbps(f[f["workload"] == 1])[0]
    return {"victim_gbps": float(victim), "incast_jain": jain(flow_gbps(f[f["workload"] == 0])),
            "pfc_pauses": r.summary["pfc_pauses"]}


# Fig. 22: three DCQCN profiles for the 15:1 incast. The paper names them (the default,
# a more aggressive and the most aggressive profile recommended to customers) without
# their parameters; these are fabricsim's stand-ins: the NICs' firmware DCQCN (the
# paper's clusters run vendor NICs: preset "firmware", ConnectX's defaults) with the
# HPCC ECN thresholds, then progressively lower ECN thresholds with a faster alpha (g)
# and other rate increase steps.
DCQCN_PROFILES: Dict[str, Dict[str, Any]] = {
    "default": {"dcqcn": {"preset": "firmware"}, "ecn": True},
    "aggressive": {"dcqcn": {"preset": "firmware", "g": 1 / 64, "rate_ai": "10Mbps", "rate_hai": "100Mbps"},
                   "ecn": {"kmin": "50KB", "kmax": "200KB", "pmax": 0.5}},
    "most_aggressive": {"dcqcn": {"preset": "firmware", "g": 1 / 16, "rate_ai": "5Mbps", "rate_hai": "50Mbps"},
                        "ecn": {"kmin": "10KB", "kmax": "50KB", "pmax": 1.0}},
}


def dcqcn_incast(profile: str, senders: int = 15, gap_us: int = 50, tail_us: int = 300) -> Dict[str, Any]:
    """Fig. 22: a ``senders``:1 incast into host 0 whose flows arrive one every ``gap_us``
    (the paper: 5 s), RoCE with PFC and the DCQCN ``profile`` (see ``DCQCN_PROFILES``);
    the run stops ``tail_us`` after the last arrival. The receiver's ToR port is
    ``leaf[0].down[0]``."""
    if profile not in DCQCN_PROFILES:
        raise ValueError(f"profile: {profile!r} (allowed: {', '.join(DCQCN_PROFILES)})")
    prof = DCQCN_PROFILES[profile]
    flows = [{"src": s, "dst": 0, "size": "64MB", "start": f"{(s - 1) * gap_us}us"} for s in range(1, senders + 1)]
    return {"name": f"dcqcn-incast-{profile}", "stop": f"{senders * gap_us + tail_us}us",
            "topology": {"kind": "leaf_spine", "leaves": 4, "spines": 4, "hosts_per_leaf": 4},
            "fabric": {"pfc": True, "ecn": prof["ecn"]}, "transport": {"kind": "roce", "dcqcn": prof["dcqcn"]},
            "workload": {"kind": "flows", "flows": flows}, "output": {"sample_interval": "2us", "plots": False}}


def tor_queue(r, port: str = "leaf[0].down[0]"):
    """The receiver's ToR port over time: ``time_us``, ``queue_kb``, ``utilization``."""
    p = r.ports[r.ports["port"] == port]
    return p.assign(time_us=p["time_ns"] / 1e3, queue_kb=p["queue_bytes"] / 1e3)[["time_us", "queue_kb", "utilization"]]


def _collective_setup(transport: str, loss: float):
    """Fabric and transport of the Fig. 16/17 comparison: MRC on its lossy SRv6 fabric,
    RoCE (1 QP, or QP-Scaling with 16 QPs spread over the NIC ports) with PFC and
    DCQCN; random loss ``loss`` on every link."""
    if transport == "mrc":
        return dict(FABRIC, link_loss=loss), {"kind": "mrc"}
    if transport not in ("roce", "roce16"):
        raise ValueError(f"transport: {transport!r} (allowed: roce, roce16, mrc)")
    fabric = {"pfc": True, "ecn": True, "link_loss": loss}
    # The paper's RoCE NICs recover from random loss fast enough that 0.1 % barely
    # hurts a 4 MB all-to-all; fabricsim's RoCE finds a lost last packet (or the ACK of
    # one) only by its timeout, and with the deployed 67 ms every such loss stalls the
    # collective: these runs set 1 ms, as fabricsim's default was.
    rto = {"rto": "1ms"}
    return fabric, {"kind": "roce", **rto} if transport == "roce" else {"kind": "qp_scaling", "qps": 16, **rto}


def ring_all_reduce(transport: str, loss: float, hosts: int = 16, size: str = "32MB", seed: int = 2, **topo) -> Dict[str, Any]:
    """Fig. 16: a ring all-reduce over ``hosts`` hosts in a shuffled ring order, with
    random loss ``loss`` on every link. ``transport``: ``roce`` (1 QP per neighbour),
    ``roce16`` (QP-Scaling, 16 QPs spread over the NIC ports) or ``mrc``."""
    t = multi_plane(**topo)
    order = list(range(hosts))
    random.Random(3).shuffle(order)
    fabric, tr = _collective_setup(transport, loss)
    return {"name": f"all-reduce-{transport}-{loss}", "seed": seed, "topology": t, "fabric": fabric, "transport": tr,
            "workload": {"kind": "all_reduce", "hosts": order, "size": size}, "output": {"sample_interval": "0us"}}


def all_to_all(transport: str, loss: float, hosts: int = 16, size: str = "1MB", seed: int = 2, **topo) -> Dict[str, Any]:
    """Fig. 17: an all-to-all among ``hosts`` hosts, ``size`` per ordered pair, with
    random loss ``loss`` on every link; ``transport`` as for :func:`ring_all_reduce`
    (``roce16``: 16 QPs per destination). As in the paper's Cluster C, each protocol
    gets its preferred fabric of the same capacity: MRC four 100G planes, RoCE one
    400G plane (``topo`` shapes MRC's)."""
    fabric, tr = _collective_setup(transport, loss)
    t = multi_plane(**topo)
    if transport != "mrc":
        t.update(planes=1, host_link="400Gbps", fabric_link="400Gbps")
    return {"name": f"all-to-all-{transport}-{loss}", "seed": seed, "topology": t, "fabric": fabric,
            "transport": tr, "workload": {"kind": "all_to_all", "hosts": list(range(hosts)), "size": size},
            "output": {"sample_interval": "0us"}}


def busbw(r) -> float:
    """The collective's bus bandwidth, Gb/s."""
    return float(r.collectives.iloc[0]["busbw_gbps"])


def phases(r, edges_us: List[int], connection: int = 0) -> List[float]:
    """Mean delivered Gb/s of a connection between consecutive ``edges_us``."""
    t = r.throughput[r.throughput["connection"] == connection]
    out = []
    for a, b in zip(edges_us, edges_us[1:]):
        w = t[(t["time_ns"] > a * 1000) & (t["time_ns"] <= b * 1000)]
        out.append(float(w["bytes"].sum() * 8 / ((b - a) * 1000)))
    return out
