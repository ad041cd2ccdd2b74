"""The fabric of a run drawn as it is built, for its report: hosts at the bottom, switches
by tier above, planes side by side, every cable coloured by its utilisation or queue in
the chosen sampling interval (a time slider), failed cables and switches marked.

The layout comes from the core (``_core.layout``: the same builder a run uses, never a
second copy of the topologies); what each cable carried comes from ``ports.parquet``,
its state from ``faults.parquet``. A large fabric starts drawn by aggregates (the hosts,
and the switches of one tier, of one pod and plane), each opened by a click.

The page draws it with a small script of its own (SVG, no library), from one JSON
document in the page.
"""

from __future__ import annotations

import html
import json
import math
from typing import Any, Dict, List, Optional, Sequence, Tuple

#: Nodes above which the view starts with every aggregate closed.
COLLAPSE_ABOVE = 64

#: Most time steps on the slider; longer runs merge neighbouring intervals.
MAX_FRAMES = 120

#: A top tier (cores, spines) of more switches than this is cut into aggregates of so many.
TOP_CHUNK = 16


def _pods(nodes: List[Tuple[str, int, int]], cables: List[Tuple[int, int]]) -> List[int]:
    """Each node's pod: the part of the fabric still connected once the top tier is
    taken away (a fat-tree's pods, a leaf with its hosts, an MRC host group with its
    T0s). Top-tier switches get -1."""
    top = max((t for _, t, _ in nodes), default=0)
    parent = list(range(len(nodes)))

    def find(a: int) -> int:
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    for a, b in cables:
        if top > 1 and (nodes[a][1] == top or nodes[b][1] == top):
            continue
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    roots: Dict[int, int] = {}
    out = []
    for i, (_, tier, _) in enumerate(nodes):
        if top > 1 and tier == top:
            out.append(-1)
        else:
            out.append(roots.setdefault(find(i), len(roots)))
    return out


_TIER_NAMES = {0: "hosts", 1: "tier 1", 2: "tier 2", 3: "tier 3"}


def _groups(nodes: List[Tuple[str, int, int]], pods: List[int], planes: int) -> Tuple[List[int], List[Any]]:
    """Aggregates: hosts per pod, switches per tier, plane and pod (the top tier in
    chunks of TOP_CHUNK). Returns each node's group and the groups as (label, tier,
    plane, members)."""
    keyed: Dict[Tuple[int, int, int], List[int]] = {}
    for i, (name, tier, plane) in enumerate(nodes):
        pod = pods[i]
        if pod < 0:
            rank = sum(1 for j in range(i) if nodes[j][1] == tier and nodes[j][2] == plane)
            pod = -1 - rank // TOP_CHUNK
        keyed.setdefault((tier, 0 if tier == 0 else plane, pod), []).append(i)
    group_of = [-1] * len(nodes)
    groups = []
    for (tier, plane, pod), members in keyed.items():
        kind = nodes[members[0]][0].split("[")[0]
        where = f"pod {pod}" if pod >= 0 else f"{len(members)} of the top tier"
        label = f"{kind} x{len(members)}, {where}" + (f", plane {plane}" if planes > 1 and tier > 0 else "")
        for m in members:
            group_of[m] = len(groups)
        groups.append([label, tier, plane, members])
    return group_of, groups


def _frames(intervals: Sequence[int]) -> List[List[int]]:
    """The slider's steps as [first, last] sampling intervals (at most MAX_FRAMES steps
    of equally many intervals)."""
    n = len(intervals)
    if n <= MAX_FRAMES:
        return [[i, i] for i in range(n)]
    per = math.ceil(n / MAX_FRAMES)
    return [[i, min(i + per, n) - 1] for i in range(0, n, per)]


def view_data(layout: Dict[str, Any], result: Any, interval_ns: Optional[float]) -> Dict[str, Any]:
    """The JSON document the page's script draws: nodes, aggregates, cables, and per
    time step each cable's utilisation (%), queue (KB) and drops, and what was down."""
    import numpy as np

    nodes = [tuple(n) for n in layout["nodes"]]
    ports = layout["ports"]
    planes = max((n[2] for n in nodes), default=0) + 1
    cable_of = [-1] * len(ports)
    cables = []
    for p, (name, node, peer, rate, _kind) in enumerate(ports):
        if p < peer:
            cable_of[p] = cable_of[peer] = len(cables)
            cables.append([node, ports[peer][1], name, ports[peer][0], rate / 1e9, p, peer])
    pods = _pods(nodes, [(c[0], c[1]) for c in cables])
    group_of, groups = _groups(nodes, pods, planes)

    pt = result.ports
    summary = result.summary
    end = float(summary.get("sampling_stopped_ns") or summary.get("sim_time_ns") or 0)
    if len(pt):
        end = max(end, float(pt["time_ns"].max()))
    # The sampling grid: interval k covers (k * interval, (k + 1) * interval], the last
    # one ends with the run; a port without a row in an interval was idle in it.
    intervals = int(math.ceil(end / interval_ns - 1e-9)) if interval_ns and len(pt) else 0
    steps = _frames(range(intervals))
    nc = len(cables)
    # Whole run first, then each step.
    util = np.zeros((len(steps) + 1, nc))
    queue = np.zeros((len(steps) + 1, nc))
    drops = np.zeros((len(steps) + 1, nc))
    if intervals and nc:
        assert interval_ns is not None
        k = np.ceil(pt["time_ns"].to_numpy(dtype=float) / interval_ns - 1e-9).astype(np.int64) - 1
        k = np.clip(k, 0, intervals - 1)
        per = steps[0][1] - steps[0][0] + 1
        row_step = k // per + 1
        port_ids = pt["port_id"].to_numpy().astype(np.int64)
        row_cable = np.asarray(cable_of)[port_ids]
        ok = row_cable >= 0
        row_step, row_cable, port_ids = row_step[ok], row_cable[ok], port_ids[ok]
        whole = np.zeros_like(row_step)
        u = pt["utilization"].to_numpy(dtype=float)[ok]
        q = pt["queue_max_bytes"].to_numpy(dtype=float)[ok]
        d = (pt["drops"].to_numpy(dtype=float) + pt["trims"].to_numpy(dtype=float))[ok]
        # Utilisation: each direction's mean over the step's intervals, the busier
        # direction shown; queue: the deepest; drops and trims: the total.
        sums = np.zeros((len(steps) + 1, len(ports)))
        np.add.at(sums, (row_step, port_ids), u)
        np.add.at(sums, (whole, port_ids), u)
        counts = np.array([intervals] + [b - a + 1 for a, b in steps], dtype=float)
        mean = sums / counts[:, None]
        ends = np.array([[c[5], c[6]] for c in cables], dtype=np.int64)
        util = np.maximum(mean[:, ends[:, 0]], mean[:, ends[:, 1]])
        np.maximum.at(queue, (row_step, row_cable), q)
        np.maximum.at(queue, (whole, row_cable), q)
        np.add.at(drops, (row_step, row_cable), d)
        np.add.at(drops, (whole, row_cable), d)
    step_bounds = [[0.0, end]]
    for a, b in steps:
        assert interval_ns is not None
        step_bounds.append([a * interval_ns, min((b + 1) * interval_ns, end)])

    down, node_down, degraded = _states(result.faults, ports, cable_of, nodes, step_bounds)
    return {
        "nodes": [[n[0], n[1], n[2], group_of[i]] for i, n in enumerate(nodes)],
        "groups": groups,
        "cables": [c[:5] for c in cables],
        "planes": planes,
        "frames": step_bounds,
        "util": np.rint(util * 100).astype(int).tolist(),
        "queue": np.ceil(queue / 1e3).astype(int).tolist(),
        "drops": drops.astype(int).tolist() if drops.any() else None,
        "down": down,
        "nodeDown": node_down,
        "degraded": degraded,
        "collapsed": len(nodes) > COLLAPSE_ABOVE,
    }


def _states(faults, ports, cable_of, nodes, bounds) -> Tuple[List[List[int]], List[List[int]], List[List[Any]]]:
    """Per time step (whole run first): the cables and switches down at any moment of
    it, and the cables degraded (loss, delay, rate) with what was done to them."""
    by_port = {p[0]: i for i, p in enumerate(ports)}
    by_node = {n[0]: i for i, n in enumerate(nodes)}
    rows = sorted(zip(faults["time_ns"].tolist(), faults["kind"].tolist(), faults["target"].tolist(),
                      faults["value"].tolist()), key=lambda r: r[0]) if len(faults) else []
    cable_down: Dict[int, bool] = {}
    node_dn: Dict[int, bool] = {}
    degraded: Dict[int, Dict[str, str]] = {}
    out_down, out_nodes, out_deg = [], [], []
    ever_down, ever_nodes, ever_deg = set(), set(), {}
    j = 0
    # Without sampling there are no steps: the whole run is the only one.
    steps = bounds[1:] or bounds[:1]
    for _, end in steps:
        now_down = {c for c, v in cable_down.items() if v}
        now_nodes = {n for n, v in node_dn.items() if v}
        while j < len(rows) and rows[j][0] <= end:
            t, kind, target, value = rows[j]
            j += 1
            if kind in ("link_down", "link_up", "link_flap") and target in by_port:
                c = cable_of[by_port[target]]
                cable_down[c] = value == "down"
                if value == "down":
                    now_down.add(c)
            elif kind in ("switch_down", "switch_up") and target in by_node:
                n = by_node[target]
                node_dn[n] = kind == "switch_down"
                if kind == "switch_down":
                    now_nodes.add(n)
            elif kind in ("link_loss", "ev_loss", "delay", "rate") and target in by_port:
                c = cable_of[by_port[target]]
                degraded.setdefault(c, {})[kind] = value
        now_down |= {c for c, v in cable_down.items() if v}
        now_nodes |= {n for n, v in node_dn.items() if v}
        now_deg = [[c, ", ".join(f"{k} {v}" for k, v in sorted(d.items()))] for c, d in sorted(degraded.items())
                   if any(v not in ("0", "0.0", "0us", "0ns") for v in d.values())]
        out_down.append(sorted(now_down))
        out_nodes.append(sorted(now_nodes))
        out_deg.append(now_deg)
        ever_down |= now_down
        ever_nodes |= now_nodes
        ever_deg.update({c: text for c, text in now_deg})
    if len(bounds) == 1:
        out_down, out_nodes, out_deg = [], [], []
    return ([sorted(ever_down)] + out_down, [sorted(ever_nodes)] + out_nodes,
            [[[c, t] for c, t in sorted(ever_deg.items())]] + out_deg)


def section(result: Any, interval_ns: Optional[float]) -> str:
    """The report's fabric section (HTML), or a note saying why it cannot be drawn."""
    from . import _core
    from ._core import ScenarioError

    text = result.scenario_text
    if not text:
        return "<p class='note'>The fabric cannot be drawn: the folder has no scenario.toml.</p>"
    try:
        layout = _core.layout(text, "toml")
    except ScenarioError as e:
        return f"<p class='note'>The fabric cannot be drawn: {html.escape(str(e))}</p>"
    data = view_data(layout, result, interval_ns)
    # "</" would end the script element early; JSON allows "<\/".
    doc = json.dumps(data, separators=(",", ":")).replace("</", "<\\/")
    return _HTML.replace("__DATA__", doc).replace("__SCRIPT__", _SCRIPT)


_HTML = """
<div class="fabric" id="fabric">
  <div class="controls">
    <label>colour by <select id="fabric-mode"><option value="util">utilisation</option>
      <option value="queue">queue (deepest in the interval)</option></select></label>
    <label>time <input type="range" id="fabric-time" min="0" max="0" value="0" step="1"></label>
    <span id="fabric-when"></span>
    <button type="button" id="fabric-open">open all</button>
    <button type="button" id="fabric-close">close all</button>
  </div>
  <div id="fabric-legend" class="legend"></div>
  <svg id="fabric-svg" xmlns="http://www.w3.org/2000/svg" width="1100" height="400" role="img"
       aria-label="the fabric, cables coloured by load"></svg>
  <p class="note">Hosts at the bottom, switches by tier above, planes side by side. A cable's colour is
  the busier direction's mean utilisation over the interval (grey: idle), or its deepest egress queue;
  dashed dark red: down at some moment of the interval (long dashes: some of an aggregate's cables);
  orange dots: degraded (loss, delay, rate). A dark red switch was down; a red outline: some of an
  aggregate's.
  Thick boxes are aggregates: click one to open it, click a switch or host of an open aggregate to
  close it again. Hover for names and figures. Position 0 of the slider is the whole run.</p>
</div>
<script type="application/json" id="fabric-data">__DATA__</script>
<script>__SCRIPT__</script>
"""

_SCRIPT = r"""
(function () {
  "use strict";
  var D = JSON.parse(document.getElementById("fabric-data").textContent);
  var NS = "http://www.w3.org/2000/svg";
  var svg = document.getElementById("fabric-svg");
  var slider = document.getElementById("fabric-time");
  var mode = document.getElementById("fabric-mode");
  var when = document.getElementById("fabric-when");
  var legend = document.getElementById("fabric-legend");
  var W = 1100, ROW = 110, TOP = 30;
  var maxTier = 0;
  D.nodes.forEach(function (n) { if (n[1] > maxTier) maxTier = n[1]; });
  var H = TOP + maxTier * ROW + 50;
  svg.setAttribute("height", H);
  svg.setAttribute("viewBox", "0 0 " + W + " " + H);
  slider.max = D.frames.length - 1;
  var open = {};
  D.groups.forEach(function (g, i) { open[i] = !D.collapsed || g[3].length < 2; });
  var queueMax = 1;
  D.queue[0].forEach(function (q) { if (q > queueMax) queueMax = q; });
  var links = [], boxes = [];

  function itemOf(n) {
    var g = D.nodes[n][3];
    return open[g] ? "n" + n : "g" + g;
  }
  function el(name, attrs, parent) {
    var e = document.createElementNS(NS, name);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    parent.appendChild(e);
    return e;
  }
  function colour(x) {
    // grey when idle, then blue - yellow - red
    if (!(x > 0)) return "#cfcfcf";
    x = Math.min(1, x);
    var stops = [[44, 123, 182], [255, 255, 140], [215, 25, 28]];
    var s = x < 0.5 ? 0 : 1, f = x < 0.5 ? x / 0.5 : (x - 0.5) / 0.5;
    var a = stops[s], b = stops[s + 1];
    return "rgb(" + [0, 1, 2].map(function (i) { return Math.round(a[i] + (b[i] - a[i]) * f); }).join(",") + ")";
  }
  function fmtNs(ns) { return ns >= 1e6 ? (ns / 1e6).toFixed(3) + " ms" : (ns / 1e3).toFixed(1) + " us"; }

  function draw() {
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    links = []; boxes = [];
    // The items of each row: open nodes and closed aggregates, by plane, then pod order.
    var items = {}, order = [];
    D.nodes.forEach(function (n, i) {
      var id = itemOf(i);
      if (!items[id]) {
        var g = D.groups[n[3]];
        items[id] = {id: id, tier: n[1], plane: n[1] === 0 ? 0 : n[2], first: i, members: [],
                     label: id[0] === "g" ? g[0] : n[0], group: n[3]};
        order.push(items[id]);
      }
      items[id].members.push(i);
    });
    var rows = {};
    order.forEach(function (it) {
      var key = it.tier + ":" + (it.tier === 0 ? 0 : it.plane);
      (rows[key] = rows[key] || []).push(it);
    });
    Object.keys(rows).forEach(function (key) {
      var row = rows[key], tier = row[0].tier, plane = row[0].plane;
      var x0 = tier === 0 ? 0 : W * plane / D.planes, x1 = tier === 0 ? W : W * (plane + 1) / D.planes;
      var step = (x1 - x0) / row.length;
      row.forEach(function (it, k) {
        it.x = x0 + step * (k + 0.5);
        it.y = TOP + (maxTier - tier) * ROW;
        it.w = Math.max(3, Math.min(it.id[0] === "g" ? 70 : (tier === 0 ? 14 : 34), step * 0.8));
      });
    });
    if (D.planes > 1) {
      for (var p = 1; p < D.planes; p++) {
        el("line", {x1: W * p / D.planes, x2: W * p / D.planes, y1: 0, y2: H - 60, stroke: "#eee",
                    "stroke-dasharray": "4,4"}, svg);
      }
      for (var q = 0; q < D.planes; q++) {
        var t = el("text", {x: W * (q + 0.5) / D.planes, y: 12, "text-anchor": "middle", "font-size": 11,
                            fill: "#666"}, svg);
        t.textContent = "plane " + q;
      }
    }
    // One line per pair of items, standing for every cable between them.
    var pairs = {}, plist = [];
    D.cables.forEach(function (c, ci) {
      var a = itemOf(c[0]), b = itemOf(c[1]);
      var key = a < b ? a + "|" + b : b + "|" + a;
      if (!pairs[key]) { pairs[key] = {a: items[a], b: items[b], cables: []}; plist.push(pairs[key]); }
      pairs[key].cables.push(ci);
    });
    var layer = el("g", {"class": "links"}, svg);
    plist.forEach(function (pr) {
      var line = el("line", {x1: pr.a.x, y1: pr.a.y, x2: pr.b.x, y2: pr.b.y,
                             "stroke-width": Math.min(7, 2 + Math.log2(pr.cables.length)), "class": "cable"}, layer);
      el("title", {}, line);
      pr.line = line;
      links.push(pr);
    });
    var nodesLayer = el("g", {"class": "nodes"}, svg);
    order.forEach(function (it) {
      var agg = it.id[0] === "g";
      var h = agg ? 18 : (it.tier === 0 ? 10 : 14);
      var r = el("rect", {x: it.x - it.w / 2, y: it.y - h / 2, width: it.w, height: h, rx: 2,
                          "class": agg ? "agg" : (it.tier === 0 ? "host" : "switch"),
                          "data-item": it.id}, nodesLayer);
      el("title", {}, r);
      if (agg && it.w >= 40) {
        var tx = el("text", {x: it.x, y: it.y + 4, "text-anchor": "middle", "font-size": 9, "class": "agglabel"},
                    nodesLayer);
        tx.textContent = "x" + it.members.length;
      } else if (!agg && it.tier > 0 && it.w >= 30) {
        var lb = el("text", {x: it.x, y: it.y - 10, "text-anchor": "middle", "font-size": 8, fill: "#444"},
                    nodesLayer);
        lb.textContent = it.label;
      }
      r.addEventListener("click", function () {
        var g = it.group;
        if (D.groups[g][3].length < 2) return;
        open[g] = !open[g];
        draw();
      });
      it.rect = r;
      boxes.push(it);
    });
    recolour();
  }

  function recolour() {
    var f = +slider.value, byQueue = mode.value === "queue";
    var down = {}, nodeDown = {}, degraded = {};
    D.down[f].forEach(function (c) { down[c] = true; });
    D.nodeDown[f].forEach(function (n) { nodeDown[n] = true; });
    D.degraded[f].forEach(function (d) { degraded[d[0]] = d[1]; });
    links.forEach(function (pr) {
      var u = 0, q = 0, dr = 0, nd = 0, deg = [];
      pr.cables.forEach(function (c) {
        u += D.util[f][c]; if (D.queue[f][c] > q) q = D.queue[f][c];
        if (D.drops) dr += D.drops[f][c];
        var cab = D.cables[c];
        if (down[c] || nodeDown[cab[0]] || nodeDown[cab[1]]) nd++;
        if (degraded[c]) deg.push(cab[2] + ": " + degraded[c]);
      });
      u = u / pr.cables.length;
      var all = nd === pr.cables.length;
      // Every cable down: dashed dark red; some: the load of the rest, long dashes;
      // degraded and idle: orange dots.
      pr.line.setAttribute("stroke", all ? "#8b0000" : (deg.length && !(byQueue ? q : u) ? "#f28c28"
                                                         : colour(byQueue ? q / queueMax : u / 100)));
      pr.line.setAttribute("stroke-dasharray", all ? "5,3" : (nd ? "10,3" : (deg.length ? "2,2" : "")));
      pr.line.setAttribute("data-util", u.toFixed(1));
      var c0 = D.cables[pr.cables[0]];
      var what = pr.cables.length > 1 ? pr.cables.length + " cables " + pr.a.label + " - " + pr.b.label
                                      : c0[2] + " - " + c0[3] + " (" + c0[4] + " Gb/s)";
      pr.line.firstChild.textContent = what + "\nutilisation " + u.toFixed(1) + " %" +
        (pr.cables.length > 1 ? " (mean)" : "") + "\nqueue " + q + " KB" + (pr.cables.length > 1 ? " (deepest)" : "") +
        (dr ? "\ndrops and trims " + dr : "") + (nd ? "\n" + nd + " down" : "") + (deg.length ? "\n" + deg.join("\n") : "");
    });
    boxes.forEach(function (it) {
      var dn = it.members.filter(function (n) { return nodeDown[n]; }).length;
      var agg = it.id[0] === "g";
      it.rect.setAttribute("fill", dn === it.members.length ? "#8b0000" : (agg ? "#e8eef7" : (it.tier === 0 ? "#555" : "#fff")));
      it.rect.style.stroke = dn && dn < it.members.length ? "#8b0000" : "";
      it.rect.style.strokeWidth = dn && dn < it.members.length ? "3" : "";
      it.rect.firstChild.textContent = it.label + (dn ? (agg ? " (" + dn + " down)" : " (down)") : "") +
        (agg ? " (click to open)" : "");
    });
    var fr = D.frames[f];
    when.textContent = f === 0 ? "whole run (0 - " + fmtNs(fr[1]) + ")" : fmtNs(fr[0]) + " - " + fmtNs(fr[1]);
    legend.textContent = byQueue ? "queue: grey empty, blue - yellow - red up to " + queueMax + " KB (deepest of the run)"
                                 : "utilisation: grey idle, blue - yellow - red up to 100 %";
  }

  slider.addEventListener("input", recolour);
  mode.addEventListener("change", recolour);
  document.getElementById("fabric-open").addEventListener("click", function () {
    D.groups.forEach(function (g, i) { open[i] = true; }); draw();
  });
  document.getElementById("fabric-close").addEventListener("click", function () {
    D.groups.forEach(function (g, i) { open[i] = g[3].length < 2; }); draw();
  });
  draw();
})();
"""
